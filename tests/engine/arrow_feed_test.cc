// Streams whose batches DuckDB's worker threads build as they run the query (ArrowFeed, behind
// Database::QueryArrow and PreparedStatement::ExecuteArrow): the order of the sources across
// threads and morsels, the bound on waiting batches, early release, errors and interrupts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "duckdb.h"
#include "skade/engine/arrow_feed_internal.h"
#include "skade/engine/database.h"
#include "tests/engine/arrow_drain.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

constexpr int64_t kFileRows = 300'000;

// Two Parquet files of 300,000 BIGINT rows each (i = 0..599,999 across them), in row groups of
// 16,384 rows: 38 morsels that DuckDB's two threads share.
class ArrowFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatabaseOptions options;
    options.threads = 2;
    auto db = Database::Open(options);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    for (int f = 0; f < 2; ++f) {
      const std::string path = dir_.path() + "/part" + std::to_string(f) + ".parquet";
      ASSERT_TRUE(db_->Execute("COPY (SELECT (i + " + std::to_string(f * kFileRows) + ")::BIGINT AS i FROM range(" +
                               std::to_string(kFileRows) + ") t(i) ORDER BY i) TO '" + path +
                               "' (FORMAT parquet, ROW_GROUP_SIZE 16384)")
                      .ok());
      files_ += (f ? ", '" : "'") + path + "'";
    }
  }

  std::string Source() const { return "read_parquet([" + files_ + "])"; }

  testing::TempDir dir_;
  std::unique_ptr<Database> db_;
  std::string files_;
};

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), 0);
  return out;
}

TEST_F(ArrowFeedTest, KeepsTheSourcesOrderAcrossThreadsMorselsAndFilters) {
  auto stream = db_->QueryArrow("SELECT i FROM " + Source());
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Drained all = Drain(std::move(*stream));
  ASSERT_EQ(all.error, "");
  EXPECT_EQ(all.first_column, Iota(2 * kFileRows));
  for (int64_t n : all.lengths) EXPECT_LE(n, 2048);

  // A filter leaves ~16 rows of each morsel's 16,384: the chunks it leaves short are joined,
  // so there are far fewer batches than chunks (293), and the order holds.
  stream = db_->QueryArrow("SELECT i FROM " + Source() + " WHERE i % 1000 = 7");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Drained few = Drain(std::move(*stream));
  ASSERT_EQ(few.error, "");
  std::vector<int64_t> want;
  for (int64_t i = 7; i < 2 * kFileRows; i += 1000) want.push_back(i);
  EXPECT_EQ(few.first_column, want);
  EXPECT_LE(few.lengths.size(), 40u);

  // Growing batches (a network reader's), from a prepared statement.
  auto con = db_->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare("SELECT i FROM " + Source());
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  auto growing = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 1000, .max_rows = 50'000, .max_bytes = 1 << 20});
  ASSERT_TRUE(growing.ok()) << growing.status().ToString();
  Drained grown = Drain(std::move(*growing));
  ASSERT_EQ(grown.error, "");
  EXPECT_EQ(grown.first_column, Iota(2 * kFileRows));
  ASSERT_FALSE(grown.lengths.empty());
  EXPECT_EQ(grown.lengths[0], 1000);
  EXPECT_GT(*std::max_element(grown.lengths.begin(), grown.lengths.end()), 2048);
  for (int64_t n : grown.lengths) EXPECT_LE(n, 50'000);
}

// A feed started on a statement of DuckDB's C API (on the test's own DuckDB, two threads),
// after `setup`.
class RawFeed {
 public:
  explicit RawFeed(const std::string& sql, const std::vector<std::string>& setup = {}) {
    EXPECT_EQ(duckdb_open(nullptr, &db_), DuckDBSuccess);
    EXPECT_EQ(duckdb_connect(db_, &con_), DuckDBSuccess);
    std::vector<std::string> statements = {"SET threads = 2"};
    statements.insert(statements.end(), setup.begin(), setup.end());
    for (const std::string& statement : statements) {
      duckdb_result r;
      EXPECT_EQ(duckdb_query(con_, statement.c_str(), &r), DuckDBSuccess) << duckdb_result_error(&r);
      duckdb_destroy_result(&r);
    }
    EXPECT_EQ(duckdb_prepare(con_, sql.c_str(), &stmt_), DuckDBSuccess) << duckdb_prepare_error(stmt_);
  }
  ~RawFeed() {
    feed.reset();
    duckdb_destroy_prepare(&stmt_);
    duckdb_disconnect(&con_);
    duckdb_close(&db_);
  }
  Status Start(FeedOptions options) {
    auto started = ArrowFeed::Start(stmt_, std::move(options));
    if (!started.ok()) return started.status();
    feed = std::move(*started);
    return Status::Ok();
  }
  // Every value of the first column (BIGINT) to the end.
  std::vector<int64_t> Values() {
    std::vector<int64_t> out;
    while (true) {
      arrow::ArrayHandle batch;
      Status next = feed->Next(batch.get());
      EXPECT_TRUE(next.ok()) << next.ToString();
      if (!next.ok() || !batch.valid()) return out;
      const ArrowArray& column = *batch->children[0];
      const auto* values = static_cast<const int64_t*>(column.buffers[1]) + column.offset;
      out.insert(out.end(), values, values + batch->length);
    }
  }

  std::unique_ptr<ArrowFeed> feed;

 private:
  duckdb_database db_ = nullptr;
  duckdb_connection con_ = nullptr;
  duckdb_prepared_statement stmt_ = nullptr;
};

FeedOptions AnyOrder() {
  FeedOptions options;
  options.any_order = true;
  return options;
}

FeedOptions Room(int64_t max_waiting) {
  FeedOptions options;
  options.max_waiting = max_waiting;
  return options;
}

FeedOptions RoomBytes(int64_t max_waiting_bytes) {
  FeedOptions options;
  options.max_waiting_bytes = max_waiting_bytes;
  return options;
}

TEST(ArrowFeedAnyOrderTest, HandsOutEveryRowOnceAndKeepsAnOrderBy) {
  {
    RawFeed raw("SELECT i FROM range(1000000) t(i)");
    ASSERT_TRUE(raw.Start(AnyOrder()).ok());
    std::vector<int64_t> values = raw.Values();
    std::sort(values.begin(), values.end());
    EXPECT_EQ(values, Iota(1'000'000));
  }
  {
    RawFeed raw("SELECT i FROM range(1000000) t(i) ORDER BY i DESC");
    ASSERT_TRUE(raw.Start(AnyOrder()).ok());
    std::vector<int64_t> values = raw.Values();
    std::vector<int64_t> want = Iota(1'000'000);
    std::reverse(want.begin(), want.end());
    EXPECT_EQ(values, want);
  }
}

// The statements writing `files` Parquet files of `rows` BIGINT rows each below `dir` (i runs
// on across them), in row groups of 16,384 rows; `*source` is their read_parquet call.
std::vector<std::string> WriteParts(const std::string& dir, int files, int64_t rows, std::string* source) {
  std::vector<std::string> statements;
  std::string list;
  for (int f = 0; f < files; ++f) {
    const std::string path = dir + "/part" + std::to_string(f) + ".parquet";
    statements.push_back("COPY (SELECT (i + " + std::to_string(f * rows) + ")::BIGINT AS i FROM range(" +
                         std::to_string(rows) + ") t(i) ORDER BY i) TO '" + path +
                         "' (FORMAT parquet, ROW_GROUP_SIZE 16384)");
    list += (f ? ", '" : "'") + path + "'";
  }
  *source = "read_parquet([" + list + "])";
  return statements;
}

// Polls `measure` (what waits in a feed) until it reaches `want` (30 s at most), then lets the
// feed settle; what waits then.
int64_t Settled(const std::function<int64_t()>& measure, int64_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (measure() < want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return measure();
}

// The threads stop once `max_waiting` batches wait for a reader that does not read (each may
// finish the chunk it holds: at most two batches more per thread), and go on when it reads:
// on a source of one task, and on Parquet files whose morsels two threads share (the thread
// of the earliest morsel stops too once batches are ready).
TEST(ArrowFeedBoundTest, AReaderThatDoesNotReadHoldsTheQueryBack) {
  testing::TempDir dir;
  std::string parquet;
  const std::vector<std::string> setup = WriteParts(dir.path(), 4, 500'000, &parquet);
  struct Case {
    std::string source;
    FeedOptions room;
    bool in_bytes;  // the bound checked: bytes, else batches
    int64_t rows;
  };
  // In bytes: 1 MiB, about 60 batches of 2,048 BIGINTs (each thread may finish the chunk it
  // holds: two batches of ~17 KB more per thread).
  for (const Case& c : {Case{parquet, Room(3), false, 2'000'000}, Case{parquet, RoomBytes(1 << 20), true, 2'000'000},
                        Case{"range(5000000) t(i)", Room(3), false, 5'000'000}}) {
    SCOPED_TRACE(c.source + (c.in_bytes ? " (bytes)" : " (batches)"));
    RawFeed raw("SELECT i FROM " + c.source, c.source == parquet ? setup : std::vector<std::string>{});
    ASSERT_TRUE(raw.Start(c.room).ok());
    ArrowFeed& feed = *raw.feed;
    auto measure = [&] { return c.in_bytes ? feed.WaitingBytes() : feed.Waiting(); };
    const int64_t bound = c.in_bytes ? c.room.max_waiting_bytes : c.room.max_waiting;
    const int64_t waiting = Settled(measure, bound);
    EXPECT_GE(waiting, bound);
    EXPECT_LE(waiting, bound + 2 * 2 * (c.in_bytes ? 20'000 : 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(measure(), waiting);  // nothing moved meanwhile
    EXPECT_EQ(raw.Values(), Iota(c.rows));
  }
}

TEST(ArrowFeedBoundTest, RefusesNoRoom) {
  RawFeed raw("SELECT 1");
  Status started = raw.Start(Room(0));
  EXPECT_EQ(started.code(), StatusCode::kInvalidArgument) << started.ToString();
}

// Released after one batch, a stream of a query that would run for minutes stops it: the
// release returns, and the Database runs the next query.
TEST_F(ArrowFeedTest, ReleasingTheStreamEarlyStopsTheQuery) {
  const auto start = std::chrono::steady_clock::now();
  {
    auto stream = db_->QueryArrow("SELECT i FROM range(100000000000) t(i)");
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    arrow::ArrayHandle batch;
    ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
    ASSERT_TRUE(batch.valid());
  }
  auto again = db_->QueryArrow("SELECT 42::BIGINT AS v");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Drained d = Drain(std::move(*again));
  EXPECT_EQ(d.first_column, std::vector<int64_t>{42});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

// A query that fails mid-stream fails the stream; every later call returns the same error.
TEST_F(ArrowFeedTest, AnErrorMidStreamIsReturnedByEveryLaterCall) {
  auto stream = db_->QueryArrow("SELECT CASE WHEN i = 500000 THEN error('boom mid-stream') ELSE i END AS v FROM " +
                                Source());
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  int64_t rows = 0;
  int code = 0;
  while (true) {
    arrow::ArrayHandle batch;
    code = (*stream)->get_next(stream->get(), batch.get());
    if (code != 0 || !batch.valid()) break;
    rows += batch->length;
  }
  ASSERT_NE(code, 0);
  EXPECT_LT(rows, 2 * kFileRows);
  const std::string first = (*stream)->get_last_error(stream->get());
  EXPECT_NE(first.find("boom mid-stream"), std::string::npos) << first;
  arrow::ArrayHandle batch;
  EXPECT_NE((*stream)->get_next(stream->get(), batch.get()), 0);
  EXPECT_EQ(std::string((*stream)->get_last_error(stream->get())), first);
}

// InterruptRunning, from another thread, fails a stream being read.
TEST_F(ArrowFeedTest, InterruptRunningFailsAStreamBeingRead) {
  auto stream = db_->QueryArrow("SELECT i FROM range(100000000000) t(i)");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    db_->InterruptRunning();
  });
  int code = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (code == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the interrupt did not stop the stream";
    arrow::ArrayHandle batch;
    code = (*stream)->get_next(stream->get(), batch.get());
    if (code == 0) {
      ASSERT_TRUE(batch.valid()) << "the stream ended instead of failing";
    }
  }
  interrupter.join();
  const std::string error = (*stream)->get_last_error(stream->get());
  EXPECT_NE(error.find("nterrupt"), std::string::npos) << error;
}

// Morsels a filter leaves empty, a slow reader and room for one batch: the rows still come
// once each, in order (the reader waits for threads whose morsels hold nothing).
TEST(ArrowFeedBoundTest, EmptyMorselsAndASlowReaderKeepOrderWithRoomForOne) {
  testing::TempDir dir;
  std::string source;
  std::vector<std::string> setup = WriteParts(dir.path(), 2, 300'000, &source);
  RawFeed raw("SELECT i FROM " + source + " WHERE i < 5000 OR i > 590000", setup);
  ASSERT_TRUE(raw.Start(Room(1)).ok());
  std::vector<int64_t> values;
  while (true) {
    arrow::ArrayHandle batch;
    ASSERT_TRUE(raw.feed->Next(batch.get()).ok());
    if (!batch.valid()) break;
    const auto* v = static_cast<const int64_t*>(batch->children[0]->buffers[1]) + batch->children[0]->offset;
    values.insert(values.end(), v, v + batch->length);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<int64_t> want = Iota(5000);
  for (int64_t i = 590001; i < 600'000; ++i) want.push_back(i);
  EXPECT_EQ(values, want);
}

// Batches closed at a byte bound below two chunks (the path where a chunk starts the next
// batch), and a UNION ALL of two scans: every row once, in the sources' order.
TEST_F(ArrowFeedTest, ByteBoundsAndUnionsKeepEveryRowInOrder) {
  auto con = db_->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare("SELECT i FROM " + Source());
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  // A chunk of 2,048 BIGINTs is ~16.6 KB of Arrow: two do not fit in 20,000 bytes.
  auto bounded = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 4096, .max_rows = 65536, .max_bytes = 20'000});
  ASSERT_TRUE(bounded.ok()) << bounded.status().ToString();
  Drained d = Drain(std::move(*bounded));
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.first_column, Iota(2 * kFileRows));
  for (int64_t n : d.lengths) EXPECT_LE(n, 2048);

  const std::string a = dir_.path() + "/part0.parquet", b = dir_.path() + "/part1.parquet";
  auto unioned = db_->QueryArrow("SELECT i FROM read_parquet('" + a + "') UNION ALL SELECT i FROM read_parquet('" +
                                 b + "')");
  ASSERT_TRUE(unioned.ok()) << unioned.status().ToString();
  Drained u = Drain(std::move(*unioned));
  ASSERT_EQ(u.error, "");
  EXPECT_EQ(u.first_column, Iota(2 * kFileRows));
}

// A stream of a sorted query released after its first batch, while threads wait for room,
// stops the query; its prepared statement then runs again to the whole result.
TEST_F(ArrowFeedTest, AStatementReleasedEarlyRunsAgain) {
  auto con = db_->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare("SELECT i FROM " + Source() + " ORDER BY i DESC");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  {
    auto stream = (*stmt)->ExecuteArrow();
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    arrow::ArrayHandle batch;
    ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
    ASSERT_TRUE(batch.valid());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto again = (*stmt)->ExecuteArrow();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Drained d = Drain(std::move(*again));
  ASSERT_EQ(d.error, "");
  std::vector<int64_t> want = Iota(2 * kFileRows);
  std::reverse(want.begin(), want.end());
  EXPECT_EQ(d.first_column, want);
}

}  // namespace
}  // namespace skade::engine
