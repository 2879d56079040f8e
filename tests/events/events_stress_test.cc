// Issue #4's headline at full scale: 100,000 catalog commits from several writer threads and a
// second process on one SQLite catalog, followed by a slow subscriber through ReplayThenTail,
// which must end with exactly commit_seq 1..N in order.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "skade/events/bus.h"
#include "skade/events/replay.h"
#include "skade/events/watcher.h"
#include "tests/events/events_test_util.h"
#include "tests/testing/temp_dir.h"

namespace skade::events {
namespace {

using namespace std::chrono_literals;

constexpr const char* kChildUriEnv = "SKADE_EVENTS_STRESS_CHILD_URI";
constexpr const char* kChildCountEnv = "SKADE_EVENTS_STRESS_CHILD_COUNT";
constexpr const char* kChildTable = "child";

// Metadata files kept in memory. The events machinery only reads the catalog's commit log, so
// the test keeps commits cheap by skipping the metadata files' fsyncs (two per commit on disk)
// while the SQLite catalog, its compare-and-swap and its log stay real. Thread-safe.
class MemoryFileIO final : public io::FileIO {
 public:
  Result<std::string> Read(std::string_view location) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(std::string(location));
    if (it == files_.end()) return Status::NotFound(std::string(location));
    return it->second;
  }
  Result<std::string> ReadRange(std::string_view location, int64_t offset,
                                int64_t length) override {
    SKADE_ASSIGN_OR_RETURN(std::string data, Read(location));
    if (offset < 0 || length < 0) return Status::InvalidArgument("negative read range");
    if (offset >= static_cast<int64_t>(data.size())) return std::string();
    return data.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }
  Result<io::FileInfo> Stat(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(std::string data, Read(location));
    return io::FileInfo{std::string(location), static_cast<int64_t>(data.size()), 0};
  }
  Status CreateExclusive(std::string_view location, std::string_view data) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!files_.emplace(std::string(location), std::string(data)).second) {
      return Status::AlreadyExists(std::string(location));
    }
    return Status::Ok();
  }
  Status Overwrite(std::string_view location, std::string_view data) override {
    std::lock_guard<std::mutex> lock(mu_);
    files_[std::string(location)] = std::string(data);
    return Status::Ok();
  }
  Status Update(std::string_view location, const Change& change) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(std::string(location));
    std::optional<std::string> next =
        change(it == files_.end() ? std::nullopt : std::optional<std::string>(it->second));
    if (next) files_[std::string(location)] = std::move(*next);
    return Status::Ok();
  }
  Result<std::vector<io::FileInfo>> List(std::string_view prefix) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<io::FileInfo> out;
    for (auto it = files_.lower_bound(std::string(prefix));
         it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      out.push_back(io::FileInfo{it->first, static_cast<int64_t>(it->second.size()), 0});
    }
    return out;
  }
  Status Delete(std::string_view location) override {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(std::string(location));
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> files_;
};

Result<std::unique_ptr<catalog::Catalog>> OpenCatalog(const std::string& uri,
                                                      const std::string& warehouse,
                                                      io::FileIO& io) {
  catalog::SqlCatalogOptions options;
  options.uri = uri;
  options.warehouse = warehouse;
  return catalog::OpenSqlCatalog(options, io);
}

// Table db.<name> whose metadata files stay small: a property commit rewrites the whole file,
// and the metadata log would otherwise grow to 100 entries.
Status CreateSmallTable(catalog::Catalog& catalog, const std::string& name) {
  iceberg::NestedField id;
  id.id = 1;
  id.name = "id";
  id.required = true;
  id.type = iceberg::Type::Primitive(iceberg::TypeId::kLong);
  catalog::CreateTableRequest request;
  request.schema =
      std::make_shared<const iceberg::Schema>(0, std::vector<iceberg::NestedField>{id});
  request.properties["write.metadata.previous-versions-max"] = "1";
  return catalog.CreateTable(catalog::TableIdent{catalog::Namespace{{"db"}}, name}, request)
      .status();
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::atoll(value);
}

// Index of the first position where `seqs` differs from first, first+1, …, last (or the shorter
// length); -1 when `seqs` is exactly that range.
int64_t FirstMismatch(const std::vector<int64_t>& seqs, int64_t first, int64_t last) {
  int64_t expected_size = last - first + 1;
  int64_t n = std::min<int64_t>(static_cast<int64_t>(seqs.size()), expected_size);
  for (int64_t i = 0; i < n; ++i) {
    if (seqs[static_cast<size_t>(i)] != first + i) return i;
  }
  return static_cast<int64_t>(seqs.size()) == expected_size ? -1 : n;
}

// The second process: creates db.child and makes SKADE_EVENTS_STRESS_CHILD_COUNT property
// commits on it through its own catalog connection. A no-op (pass) unless spawned.
TEST(EventsStressChild, CommitsWhenSpawned) {
  const char* uri = std::getenv(kChildUriEnv);
  if (uri == nullptr) return;
  int64_t count = EnvInt(kChildCountEnv, 0);
  MemoryFileIO io;
  Result<std::unique_ptr<catalog::Catalog>> catalog = OpenCatalog(uri, "/memory/child", io);
  if (!catalog.ok()) ::_exit(10);
  if (!CreateSmallTable(**catalog, kChildTable).ok()) ::_exit(11);
  for (int64_t i = 0; i < count; ++i) {
    Result<int64_t> seq = testing::PropertyCommit(**catalog, kChildTable, std::to_string(i));
    if (!seq.ok()) {
      std::fprintf(stderr, "child commit failed: %s\n", seq.status().ToString().c_str());
      ::_exit(12);
    }
  }
  ::_exit(0);
}

// N = SKADE_EVENTS_STRESS_COMMITS (default 100,000) commit-log entries: table creations, the
// child's commits and this process's writer threads' commits, counted exactly. The subscriber
// sleeps after every event and, every quarter of the run while the writers are busy, stops
// reading until the bus has run more than its ring ahead, so it must recover from lag by
// replaying the log.
TEST(EventsStressTest, SlowSubscriberGetsEveryCommitOfThreadsAndAnotherProcessOnce) {
  const int64_t total = EnvInt("SKADE_EVENTS_STRESS_COMMITS", 100000);
  constexpr int kWriters = 6;
  const int64_t child_commits = total / 10;
  ASSERT_GT(total, kWriters + 1 + child_commits);

  skade::testing::TempDir dir;
  const std::string uri = "sqlite://" + dir.Path("catalog.db");
  MemoryFileIO io;
  Result<std::unique_ptr<catalog::Catalog>> opened = OpenCatalog(uri, "/memory/parent", io);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  catalog::Catalog& catalog = **opened;
  ASSERT_TRUE(catalog.CreateNamespace(catalog::Namespace{{"db"}}, {}).ok());

  constexpr size_t kRing = 256;
  Bus bus(kRing);
  Result<std::unique_ptr<Watcher>> watcher = Watcher::Start(catalog, uri, bus);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();

  // Set up before any thread starts, so a failed assertion cannot leave one running.
  for (int w = 0; w < kWriters; ++w) {
    ASSERT_TRUE(CreateSmallTable(catalog, "w" + std::to_string(w)).ok());
  }
  auto start = std::chrono::steady_clock::now();
  pid_t child =
      testing::SpawnThisBinary("EventsStressChild.CommitsWhenSpawned",
                               {std::string(kChildUriEnv) + "=" + uri,
                                std::string(kChildCountEnv) + "=" + std::to_string(child_commits)});
  ASSERT_GT(child, 0);

  std::atomic<bool> writers_done{false};
  std::atomic<int64_t> target{-1};  // the final head, once every writer finished
  std::vector<int64_t> seqs;
  seqs.reserve(static_cast<size_t>(total));
  std::map<std::string, int64_t> per_table;
  int64_t first_child_seq = 0, last_child_seq = 0, first_writer_seq = 0, last_writer_seq = 0;
  int64_t recoveries = 0;
  int64_t stalls = 0;
  Status subscriber_error;
  std::thread subscriber([&] {
    Result<std::unique_ptr<ReplayThenTail>> stream = ReplayThenTail::Open(catalog, bus, 0, {});
    if (!stream.ok()) {
      subscriber_error = stream.status();
      return;
    }
    auto deadline = std::chrono::steady_clock::now() + 240s;
    int64_t next_stall = total / 5;
    while (std::chrono::steady_clock::now() < deadline) {
      int64_t t = target.load();
      if (t >= 0 && (*stream)->cursor() >= t) break;
      Result<std::optional<CommitEvent>> next = (*stream)->Next(20ms);
      if (!next.ok()) {
        subscriber_error = next.status();
        return;
      }
      if (!next->has_value()) continue;
      const CommitEvent& event = **next;
      seqs.push_back(event.commit_seq);
      ++per_table[event.table_name()];
      bool from_child = event.table().name == kChildTable;
      int64_t& first = from_child ? first_child_seq : first_writer_seq;
      if (first == 0) first = event.commit_seq;
      (from_child ? last_child_seq : last_writer_seq) = event.commit_seq;
      std::this_thread::sleep_for(1us);  // slow: at least a timer wake-up per event
      if (event.commit_seq >= next_stall && !writers_done.load()) {
        // Fall more than the ring behind while commits keep landing.
        next_stall += total / 4;
        auto stall_deadline = std::chrono::steady_clock::now() + 30s;
        while (bus.last_seq() <= event.commit_seq + static_cast<int64_t>(kRing) + 16 &&
               !writers_done.load() && std::chrono::steady_clock::now() < stall_deadline) {
          std::this_thread::sleep_for(1ms);
        }
        if (bus.last_seq() > event.commit_seq + static_cast<int64_t>(kRing)) ++stalls;
      }
    }
    recoveries = (*stream)->recoveries();
  });

  std::atomic<int64_t> remaining{total - kWriters - 1 - child_commits};
  std::vector<std::thread> writers;
  std::atomic<int> writer_failures{0};
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      const std::string table = "w" + std::to_string(w);
      for (int64_t i = 0; remaining.fetch_sub(1) > 0; ++i) {
        Result<int64_t> seq = testing::PropertyCommit(catalog, table, std::to_string(i));
        if (!seq.ok()) {
          std::fprintf(stderr, "writer %d: %s\n", w, seq.status().ToString().c_str());
          writer_failures.fetch_add(1);
          return;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();
  int child_exit = testing::WaitChild(child, 180);
  writers_done = true;
  double commit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Result<int64_t> head = catalog.LatestCommitSeq();
  target = head.ok() ? *head : 0;  // 0 ends the subscriber at once
  subscriber.join();
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[ stress ] N = %lld commits (%lld by the child process, seq %lld..%lld) in %.1f s "
      "(%.0f/s); subscriber done after %.1f s, %lld stalls, %lld lag recoveries\n",
      static_cast<long long>(*head), static_cast<long long>(child_commits),
      static_cast<long long>(first_child_seq), static_cast<long long>(last_child_seq),
      commit_seconds, static_cast<double>(*head) / commit_seconds, total_seconds,
      static_cast<long long>(stalls), static_cast<long long>(recoveries));

  EXPECT_EQ(writer_failures.load(), 0);
  EXPECT_EQ(child_exit, 0);
  ASSERT_TRUE(subscriber_error.ok()) << subscriber_error.ToString();
  // Every commit is in the log exactly once: N is the planned count.
  EXPECT_EQ(*head, total);
  int64_t mismatch = FirstMismatch(seqs, 1, *head);
  EXPECT_EQ(mismatch, -1) << "received " << seqs.size() << " events; first wrong position "
                          << mismatch << " holds "
                          << (mismatch >= 0 && mismatch < static_cast<int64_t>(seqs.size())
                                  ? seqs[static_cast<size_t>(mismatch)]
                                  : -1);
  // The other process's commits (its create + child_commits) arrived through the log, and
  // they interleaved with this process's.
  EXPECT_EQ(per_table["db.child"], child_commits + 1);
  EXPECT_LT(first_child_seq, last_writer_seq);
  EXPECT_GT(last_child_seq, first_writer_seq);
  // The subscriber fell more than the ring behind (during a stall, or while replaying) and
  // came back through the log at least once.
  EXPECT_GE(recoveries, 1);
  watcher->reset();
}

}  // namespace
}  // namespace skade::events
