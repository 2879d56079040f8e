// A query's chunks taken in runs by many threads at once (ChunkFeed, behind skade_scan): every
// row once and in the query's order, the bound on waiting chunks, errors, interrupts, and a
// feed dropped halfway.
#include "skade/engine/chunk_feed_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "duckdb.hpp"

namespace skade::engine {
namespace {

constexpr int64_t kRows = 1'000'000;  // 9 row groups: morsels DuckDB's threads share

class ChunkFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    duckdb::DBConfig config;
    config.options.maximum_threads = 2;  // one worker thread besides the takers
    db_ = std::make_unique<duckdb::DuckDB>(nullptr, &config);
    con_ = std::make_unique<duckdb::Connection>(*db_);
    auto made = con_->Query("CREATE TABLE t AS SELECT range::BIGINT AS i FROM range(" + std::to_string(kRows) + ")");
    ASSERT_FALSE(made->HasError()) << made->GetError();
  }

  // What `takers` threads took from `feed` until its end (or an error), each growing its runs
  // from 1 to 60 chunks: the rows of each run by its sequence number.
  struct Taken {
    std::map<int64_t, std::vector<int64_t>> runs;
    int64_t end_sequence = -1;  // the end's count of runs (-1: none seen)
    std::vector<Status> errors;
  };
  static Taken TakeAll(ChunkFeed& feed, int takers, const std::atomic<bool>& interrupted) {
    Taken taken;
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < takers; ++t) {
      threads.emplace_back([&] {
        size_t want = 1;
        while (true) {
          Result<ChunkRun> run = feed.Take(want, size_t{16} << 20, interrupted);
          want = std::min<size_t>(want * 2, 60);
          std::lock_guard<std::mutex> lock(mu);
          if (!run.ok()) {
            taken.errors.push_back(run.status());
            return;
          }
          if (run->chunks.empty()) {
            if (taken.end_sequence >= 0 && taken.end_sequence != run->sequence) taken.end_sequence = -2;
            else taken.end_sequence = run->sequence;
            return;
          }
          std::vector<int64_t>& rows = taken.runs[run->sequence];
          EXPECT_TRUE(rows.empty()) << "sequence " << run->sequence << " given twice";
          for (const auto& chunk : run->chunks) {
            chunk->Flatten();
            const auto* data = duckdb::FlatVector::GetData<int64_t>(chunk->data[0]);
            rows.insert(rows.end(), data, data + chunk->size());
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    return taken;
  }

  static std::vector<int64_t> Joined(const Taken& taken) {
    std::vector<int64_t> all;
    for (const auto& [sequence, rows] : taken.runs) all.insert(all.end(), rows.begin(), rows.end());
    return all;
  }

  static std::vector<int64_t> Iota(int64_t n) {
    std::vector<int64_t> out(static_cast<size_t>(n));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }

  std::unique_ptr<duckdb::DuckDB> db_;
  std::unique_ptr<duckdb::Connection> con_;
  std::atomic<bool> not_interrupted_{false};
};

TEST_F(ChunkFeedTest, ManyTakersGetEveryRowOnceInTheQuerysOrder) {
  for (int takers : {1, 4}) {
    auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t", int64_t{32} << 20);
    ASSERT_TRUE(feed.ok()) << feed.status().ToString();
    Taken taken = TakeAll(**feed, takers, not_interrupted_);
    ASSERT_TRUE(taken.errors.empty()) << taken.errors[0].ToString();
    EXPECT_EQ(Joined(taken), Iota(kRows)) << takers << " takers";
    // Runs are numbered 0..n-1 with no gap, and every taker saw the same end.
    ASSERT_FALSE(taken.runs.empty());
    EXPECT_EQ(taken.runs.begin()->first, 0);
    EXPECT_EQ(taken.runs.rbegin()->first + 1, static_cast<int64_t>(taken.runs.size()));
    EXPECT_EQ(taken.end_sequence, static_cast<int64_t>(taken.runs.size()));
    // The first run is one chunk (first rows at once); later runs grow past one.
    EXPECT_EQ(taken.runs.at(0).size(), size_t{STANDARD_VECTOR_SIZE});
    size_t longest = 0;
    for (const auto& [sequence, rows] : taken.runs) longest = std::max(longest, rows.size());
    EXPECT_GT(longest, size_t{STANDARD_VECTOR_SIZE});
  }
}

TEST_F(ChunkFeedTest, AFilterAndARoomOfOneByteStillGiveEveryRowInOrder) {
  // Room for nothing: every thread but the one the takers wait for stops after each chunk.
  auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t WHERE i % 3 = 1", 1);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  Taken taken = TakeAll(**feed, 3, not_interrupted_);
  ASSERT_TRUE(taken.errors.empty()) << taken.errors[0].ToString();
  std::vector<int64_t> want;
  for (int64_t i = 1; i < kRows; i += 3) want.push_back(i);
  EXPECT_EQ(Joined(taken), want);
}

TEST_F(ChunkFeedTest, NoRowIsAnEndAtOnce) {
  auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t WHERE i < 0", int64_t{32} << 20);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  Result<ChunkRun> run = (*feed)->Take(1, 1, not_interrupted_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->chunks.empty());
  EXPECT_EQ(run->sequence, 0);
}

TEST_F(ChunkFeedTest, AnErrorOfTheQueryReachesEveryTakerAndStays) {
  auto feed = ChunkFeed::Start(
      *con_, "SELECT CASE WHEN i = 700000 THEN error('broken row 700000') ELSE i END AS i FROM t", int64_t{32} << 20);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  Taken taken = TakeAll(**feed, 3, not_interrupted_);
  ASSERT_EQ(taken.errors.size(), 3u) << "every taker ends on the error";
  for (const Status& error : taken.errors) {
    EXPECT_NE(error.message().find("broken row 700000"), std::string::npos) << error.ToString();
  }
  EXPECT_LT(Joined(taken).size(), static_cast<size_t>(kRows));
  Result<ChunkRun> again = (*feed)->Take(1, 1, not_interrupted_);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("broken row 700000"), std::string::npos);
}

TEST_F(ChunkFeedTest, WithNoWorkerThreadTheTakersRunTheQueryAndAnInterruptEndsTheirWait) {
  auto one = con_->Query("SET threads = 1");  // DuckDB runs no thread of its own
  ASSERT_FALSE(one->HasError()) << one->GetError();
  auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t", int64_t{1} << 20);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  // Nothing has run: an interrupted taker stops waiting instead of running the query.
  std::atomic<bool> interrupted{true};
  Result<ChunkRun> run = (*feed)->Take(60, size_t{16} << 20, interrupted);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kCancelled) << run.status().ToString();
  // The takers alone run it to its end.
  Taken taken = TakeAll(**feed, 2, not_interrupted_);
  ASSERT_TRUE(taken.errors.empty()) << taken.errors[0].ToString();
  EXPECT_EQ(Joined(taken), Iota(kRows));
}

TEST_F(ChunkFeedTest, AFeedDroppedHalfwayLeavesTheConnectionReady) {
  {
    auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t", int64_t{1} << 20);
    ASSERT_TRUE(feed.ok()) << feed.status().ToString();
    for (int k = 0; k < 3; ++k) {
      Result<ChunkRun> run = (*feed)->Take(4, size_t{16} << 20, not_interrupted_);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      ASSERT_FALSE(run->chunks.empty());
    }
  }  // stopped with most of the table unread
  auto count = con_->Query("SELECT count(*) FROM t");
  ASSERT_FALSE(count->HasError()) << count->GetError();
  EXPECT_EQ(count->GetValue(0, 0).GetValue<int64_t>(), kRows);
  auto feed = ChunkFeed::Start(*con_, "SELECT i FROM t", int64_t{32} << 20);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  EXPECT_EQ(Joined(TakeAll(**feed, 2, not_interrupted_)), Iota(kRows));
}

TEST_F(ChunkFeedTest, AQueryThatDoesNotPlanFailsToStart) {
  auto feed = ChunkFeed::Start(*con_, "SELECT no_such_column FROM t", int64_t{32} << 20);
  ASSERT_FALSE(feed.ok());
  EXPECT_NE(feed.status().message().find("no_such_column"), std::string::npos) << feed.status().ToString();
}

}  // namespace
}  // namespace skade::engine
