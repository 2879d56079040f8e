// The skade.v1.Commits gRPC service over loopback: a C++ client for bad input, bounded memory
// and shutdown; a Node.js client (@grpc/grpc-js + @grpc/proto-loader, skade's .proto) that
// follows a `skade events-serve` process across a restart while `skade ingest` processes commit.
#include "skade/events/commit_service.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "skade/events/commit_client.h"
#include "skade/events/watcher.h"
#include "tests/events/events_test_util.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace skade::events {
namespace {

using namespace std::chrono_literals;
using testing::CreateTable;
using testing::PropertyCommit;

class CommitServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    uri_ = "sqlite://" + dir_.Path("catalog.db");
    catalog::SqlCatalogOptions options;
    options.uri = uri_;
    options.warehouse = dir_.Path("warehouse");
    Result<std::unique_ptr<catalog::Catalog>> opened = catalog::OpenSqlCatalog(options, *io_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    catalog_ = std::move(opened).value();
    ASSERT_TRUE(CreateTable(*catalog_, "t").ok());      // seq 1
    ASSERT_TRUE(CreateTable(*catalog_, "other").ok());  // seq 2
    Result<std::unique_ptr<Watcher>> watcher = Watcher::Start(*catalog_, uri_, bus_);
    ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
    watcher_ = std::move(watcher).value();
    Result<std::unique_ptr<CommitServer>> server =
        CommitServer::Start(*catalog_, bus_, "127.0.0.1", 0);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    Result<std::unique_ptr<CommitClient>> client =
        CommitClient::Connect("127.0.0.1:" + std::to_string(server_->port()));
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
    watcher_.reset();
  }

  std::unique_ptr<CommitClientStream> Subscribe(int64_t after, std::vector<std::string> tables,
                                                std::chrono::milliseconds deadline = 10s,
                                                bool existing_tables_only = false) {
    Result<std::unique_ptr<CommitClientStream>> stream =
        client_->Subscribe(after, tables, deadline, existing_tables_only);
    EXPECT_TRUE(stream.ok());
    return stream.ok() ? std::move(stream).value() : nullptr;
  }

  skade::testing::TempDir dir_;
  std::unique_ptr<io::FileIO> io_;
  std::string uri_;
  std::unique_ptr<catalog::Catalog> catalog_;
  Bus bus_;
  std::unique_ptr<Watcher> watcher_;
  std::unique_ptr<CommitServer> server_;
  std::unique_ptr<CommitClient> client_;
};

TEST_F(CommitServiceTest, ReplaysThenTailsWithTableFilter) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(PropertyCommit(*catalog_, "t", std::to_string(i)).ok());      // 3, 5, 7
    ASSERT_TRUE(PropertyCommit(*catalog_, "other", std::to_string(i)).ok());  // 4, 6, 8
  }
  Result<int64_t> latest = client_->Latest(5000ms);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, 8);
  auto stream = Subscribe(2, {"db.t"});
  ASSERT_NE(stream, nullptr);
  std::vector<int64_t> seqs;
  for (int i = 0; i < 3; ++i) {
    auto next = stream->Next();
    ASSERT_TRUE(next.ok() && next->has_value()) << next.status().ToString();
    seqs.push_back((*next)->commit_seq);
    EXPECT_EQ((*next)->table_name(), "db.t");
  }
  EXPECT_EQ(seqs, (std::vector<int64_t>{3, 5, 7}));
  ASSERT_TRUE(PropertyCommit(*catalog_, "other", "x").ok());  // 9, filtered out
  ASSERT_TRUE(PropertyCommit(*catalog_, "t", "x").ok());      // 10, live
  auto live = stream->Next();
  ASSERT_TRUE(live.ok() && live->has_value());
  EXPECT_EQ((*live)->commit_seq, 10);
  EXPECT_EQ((*live)->operation(), "update");
}

TEST_F(CommitServiceTest, RejectsNegativeCursor) {
  auto stream = Subscribe(-5, {});
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->Next().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CommitServiceTest, RejectsTableFilterWithoutNamespace) {
  auto stream = Subscribe(0, {"just_a_name"});
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->Next().status().code(), StatusCode::kInvalidArgument);
}

// Decision (commits.proto): an unknown table is not an error — it may be created later — so
// the stream stays open and empty.
TEST_F(CommitServiceTest, UnknownTableFilterGivesEmptyStream) {
  auto stream = Subscribe(0 + 1, {"db.does_not_exist"}, 800ms);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(PropertyCommit(*catalog_, "t", "x").ok());
  auto next = stream->Next();
  EXPECT_EQ(next.status().code(), StatusCode::kUnavailable);  // the deadline, no event
}

// Asked for (what `skade watch --server --table` sends first), an unknown table is NOT_FOUND at
// once, naming it; a table that exists streams as without the flag.
TEST_F(CommitServiceTest, ExistingTablesOnlyRefusesAnUnknownTable) {
  auto refused = Subscribe(0, {"db.t", "db.does_not_exist"}, 10s, true);
  ASSERT_NE(refused, nullptr);
  auto next = refused->Next();
  EXPECT_EQ(next.status().code(), StatusCode::kNotFound);
  EXPECT_NE(next.status().message().find("table db.does_not_exist does not exist"), std::string::npos)
      << next.status().ToString();
  auto missing_ns = Subscribe(0, {"nope.t"}, 10s, true);
  ASSERT_NE(missing_ns, nullptr);
  EXPECT_EQ(missing_ns->Next().status().code(), StatusCode::kNotFound);
  auto stream = Subscribe(0, {"db.t"}, 10s, true);
  ASSERT_NE(stream, nullptr);
  auto first = stream->Next();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
  EXPECT_EQ((*first)->table_name(), "db.t");
}

TEST_F(CommitServiceTest, CursorBeyondHeadWaitsForIt) {
  auto waiting = Subscribe(5, {}, 600ms);  // head is 2
  ASSERT_NE(waiting, nullptr);
  ASSERT_TRUE(PropertyCommit(*catalog_, "t", "a").ok());  // 3
  EXPECT_EQ(waiting->Next().status().code(), StatusCode::kUnavailable);  // deadline
  auto stream = Subscribe(5, {}, 10s);
  ASSERT_NE(stream, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(PropertyCommit(*catalog_, "t", std::to_string(i)).ok());
  auto next = stream->Next();  // 4, 5 are not above the cursor; 6 is
  ASSERT_TRUE(next.ok() && next->has_value()) << next.status().ToString();
  EXPECT_EQ((*next)->commit_seq, 6);
}

TEST_F(CommitServiceTest, ClientThatNeverReadsKeepsServerMemoryBounded) {
  constexpr int kCommits = 2000;
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kCommits / 3; ++i) {
        ASSERT_TRUE(PropertyCommit(*catalog_, w == 0 ? "t" : "other", std::to_string(w * 100000 + i)).ok());
      }
    });
  }
  for (std::thread& t : writers) t.join();
  // A client with gRPC's default 64 KiB stream window and no adaptive growth: the window holds
  // a few hundred events, the rest must wait on the server without piling up there.
  Result<std::unique_ptr<CommitClient>> small_window = CommitClient::Connect(
      "127.0.0.1:" + std::to_string(server_->port()), {.fixed_window_bytes = 65536, .authorization = ""});
  ASSERT_TRUE(small_window.ok());
  Result<std::unique_ptr<CommitClientStream>> opened = (*small_window)->Subscribe(1, {}, 30s, false);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<CommitClientStream> stream = std::move(opened).value();  // never read
  ASSERT_TRUE(skade::testing::PollUntil([&] {
    CommitServiceStats s = server_->service().stats();
    return s.active_streams == 1 && s.events_sent > 0;
  }, 20s, 10ms));
  std::this_thread::sleep_for(1000ms);  // time to fill the client's window, and no more
  CommitServiceStats stats = server_->service().stats();
  std::printf("[ bounded ] sent=%lld buffered=%lld streams=%lld\n",
              static_cast<long long>(stats.events_sent), static_cast<long long>(stats.buffered_events),
              static_cast<long long>(stats.active_streams));
  EXPECT_EQ(stats.active_streams, 1);
  EXPECT_LE(stats.buffered_events, 1024);  // one replay batch
  EXPECT_LT(stats.events_sent, kCommits / 2);  // flow control holds the writer back (~440 here)
  // Disconnecting frees the stream.
  stream.reset();
  skade::testing::PollUntil([&] { return server_->service().stats().active_streams == 0; }, 20s, 20ms);
  EXPECT_EQ(server_->service().stats().active_streams, 0);
  EXPECT_EQ(server_->service().stats().buffered_events, 0);
}

TEST_F(CommitServiceTest, ShutdownEndsStreamsWithUnavailable) {
  // From seq 2 (not "from now", which would race the server registering the stream).
  auto stream = Subscribe(2, {}, 20s);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(PropertyCommit(*catalog_, "t", "a").ok());  // seq 3
  auto first = stream->Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->commit_seq, 3);
  auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // its deadline is 2 s; the stream's 20 s
  EXPECT_EQ(stream->Next().status().code(), StatusCode::kUnavailable);
}

// ---- processes: `skade events-serve`, `skade ingest`, node ----

using Child = skade::testing::ChildProcess;

std::string Skade(const std::string& warehouse, const std::string& args) {
  return skade::testing::ShellQuote(skade::testing::CliPath()) + " --warehouse " +
         skade::testing::ShellQuote(warehouse) + " " + args;
}

// Which process serves the Commits stream: `skade events-serve` alone, or `skade serve` next to
// Flight SQL on one port.
enum class Host { kEventsServe, kServe };

// Starts the server on port 0 and returns it with its port (0 on failure).
std::unique_ptr<Child> StartServer(const std::string& warehouse, int* port, Host host = Host::kEventsServe) {
  auto server = host == Host::kEventsServe
                    ? Child::Start({skade::testing::CliPath(), "--warehouse", warehouse, "events-serve", "--port", "0"})
                    : Child::Start({skade::testing::CliPath(), "--warehouse", warehouse, "serve", "--flight-port", "0"});
  *port = 0;
  if (!server) return nullptr;
  std::string line = server->ReadLine(15s);
  const std::string prefix = host == Host::kEventsServe ? "listening on 127.0.0.1:" : "flight sql listening on 127.0.0.1:";
  if (line.rfind(prefix, 0) == 0) *port = std::atoi(line.c_str() + prefix.size());
  return server;
}

void WritePortFile(const std::string& path, int port) {
  skade::testing::WriteFileOrDie(path + ".tmp", "127.0.0.1:" + std::to_string(port) + "\n");
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);
}

void FollowIngestAcrossServerRestart(Host host) {
  skade::testing::TempDir dir;
  std::string warehouse = dir.Path("lake");
  skade::testing::WriteFileOrDie(dir.Path("rows.csv"), "id\n1\n2\n3\n");
  for (const std::string& setup : {std::string("ns create db"),
                                   std::string("create db.t --schema 'id BIGINT'")}) {
    auto r = skade::testing::RunProcess(Skade(warehouse, setup));
    ASSERT_EQ(r.exit_code, 0) << setup << ": " << r.err;
  }
  // Head is now 1 (the create). The client starts from it and must get 4 appends: two before
  // and two after a server restart, each exactly once.
  int port = 0;
  auto server = StartServer(warehouse, &port, host);
  ASSERT_NE(port, 0);
  std::string port_file = dir.Path("server.addr");
  WritePortFile(port_file, port);
  std::string proto = skade::testing::SourcePath("src/skade/events/commits.proto");
  std::string node_dir = skade::testing::SourcePath("tests/interop");
  auto client = Child::Start({"node", node_dir + "/commits_client.mjs", "--proto", proto,
                              "--port-file", port_file, "--after", "1", "--count", "4",
                              "--table", "db.t", "--timeout-ms", "35000"});
  ASSERT_NE(client, nullptr);
  auto ingest = [&] {
    auto r = skade::testing::RunProcess(
        Skade(warehouse, "ingest db.t " + skade::testing::ShellQuote(dir.Path("rows.csv"))));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  std::vector<nlohmann::json> events;
  auto read_events = [&](size_t want) {
    while (events.size() < want) {
      std::string line = client->ReadLine(20s);
      ASSERT_FALSE(line.empty()) << "node client stopped after " << events.size() << " events";
      nlohmann::json j = nlohmann::json::parse(line);
      ASSERT_FALSE(j.contains("end")) << line;
      events.push_back(j);
    }
  };
  ingest();
  ingest();
  read_events(2);
  // Restart the server on a new port; commits land while it is down.
  EXPECT_EQ(server->Stop(SIGINT, 10s), 0);
  ingest();
  server = StartServer(warehouse, &port, host);
  ASSERT_NE(port, 0);
  WritePortFile(port_file, port);
  ingest();
  read_events(4);
  std::string end = client->ReadLine(10s);
  EXPECT_NE(end.find("\"count\""), std::string::npos) << end;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["commit_seq"].get<int64_t>(), static_cast<int64_t>(i) + 2);
    EXPECT_EQ(events[i]["table_name"], "db.t");
    EXPECT_EQ(events[i]["operation"], "append");
    EXPECT_EQ(events[i]["added_records"], 3);
  }
  EXPECT_EQ(server->Stop(SIGINT, 10s), 0);
}

TEST(CommitStreamProcessTest, NodeClientFollowsIngestAcrossServerRestart) {
  FollowIngestAcrossServerRestart(Host::kEventsServe);
}

// `skade serve` hosts the same stream on its Flight SQL port.
TEST(CommitStreamProcessTest, NodeClientFollowsIngestOnTheFlightSqlPort) {
  FollowIngestAcrossServerRestart(Host::kServe);
}

TEST(CommitStreamProcessTest, WatchPrintsReplayAndCrossProcessCommits) {
  skade::testing::TempDir dir;
  std::string warehouse = dir.Path("lake");
  skade::testing::WriteFileOrDie(dir.Path("rows.csv"), "id\n1\n2\n");
  for (const std::string& setup : {std::string("ns create db"),
                                   std::string("create db.t --schema 'id BIGINT'"),
                                   "ingest db.t " + skade::testing::ShellQuote(dir.Path("rows.csv"))}) {
    auto r = skade::testing::RunProcess(Skade(warehouse, setup));
    ASSERT_EQ(r.exit_code, 0) << setup << ": " << r.err;
  }
  auto watch = Child::Start({skade::testing::CliPath(), "--warehouse", warehouse, "watch", "--after", "1",
                             "--json", "--count", "3"});
  ASSERT_NE(watch, nullptr);
  std::string first = watch->ReadLine(15s);  // replayed: the ingest above (seq 2)
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(nlohmann::json::parse(first)["commit_seq"], 2);
  for (int i = 0; i < 2; ++i) {
    auto r = skade::testing::RunProcess(
        Skade(warehouse, "ingest db.t " + skade::testing::ShellQuote(dir.Path("rows.csv"))));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (int64_t seq = 3; seq <= 4; ++seq) {
    std::string line = watch->ReadLine(15s);
    ASSERT_FALSE(line.empty());
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["commit_seq"], seq);
    EXPECT_EQ(j["table"], "db.t");
    EXPECT_EQ(j["operation"], "append");
  }
  EXPECT_EQ(watch->Stop(0, 10s), 0);  // exits by itself after --count 3
}

}  // namespace
}  // namespace skade::events
