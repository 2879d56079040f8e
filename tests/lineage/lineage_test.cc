// OpenLineage: the events of every kind of commit validate against the OpenLineage schemas
// (ajv in Node, facet schemas resolved); an HTTP receiver on loopback gets one START and one
// COMPLETE per commit, in commit order, with the rows each added; a receiver that refuses
// connections and then answers 500s, and an emitter restarted in between, lose nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "skade/catalog/open_catalog.h"
#include "skade/engine/database.h"
#include "skade/events/watcher.h"
#include "skade/io/routing_file_io.h"
#include "skade/lineage/emitter.h"
#include "skade/lineage/transport.h"
#include "skade/table/table.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::lineage {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::RunProcess;
using testing::ShellQuote;

const std::string kInteropDir = std::string(SKADE_SOURCE_DIR) + "/tests/interop";

// Runs the Node validator over a JSON-lines file; "" when every event is valid, else its report.
std::string Validate(const std::string& path) {
  auto r = RunProcess("cd " + ShellQuote(kInteropDir) + " && node openlineage_validate.mjs --fixtures " +
                      ShellQuote(std::string(SKADE_FIXTURES_DIR) + "/openlineage") + " --events " + ShellQuote(path) +
                      " --min-events 1");
  return r.exit_code == 0 ? "" : r.out + r.err;
}

// A receiver of OpenLineage events: records each event it accepts; answers 500 while `failing`.
class Receiver {
 public:
  Receiver() {
    server_.Post("/api/v1/lineage", [this](const httplib::Request& req, httplib::Response& res) {
      if (failing_ > 0) {
        --failing_;
        res.status = 500;
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(Json::parse(req.body, nullptr, false));
      auth_ = req.get_header_value("Authorization");
      res.status = 201;
    });
  }
  ~Receiver() { Stop(); }
  int Start(int port = 0) {
    port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1") : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost (and the join would wait forever).
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
    return port_;
  }
  void Stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Json> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::string auth() const {
    std::lock_guard<std::mutex> lock(mu_);
    return auth_;
  }
  std::atomic<int> failing_{0};

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<Json> events_;
  std::string auth_;
};

class LineageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    warehouse_ = tmp_.Path("lake");
    Cli("ns create sales");
    Cli("create sales.orders --schema 'id bigint, region varchar'");
    io_ = io::MakeEnvironmentFileIO();
    catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + warehouse_ + "/catalog.db";
    o.warehouse = warehouse_;
    auto c = catalog::OpenCatalog(o, *io_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    catalog_ = std::move(*c);
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok());
    db_ = std::move(*db);
    auto w = events::Watcher::Start(*catalog_, o.uri, bus_);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    watcher_ = std::move(*w);
  }

  std::string Cli(const std::string& args) {
    auto r = RunProcess(ShellQuote(SKADE_CLI_PATH) + " --warehouse " + ShellQuote(warehouse_) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.out;
  }

  // Appends `rows` one-column rows; returns the commit_seq.
  int64_t Append(table::Table& t, int rows) {
    engine::WriteSource src;
    src.sql = "SELECT range AS id, 'eu' AS region FROM range(" + std::to_string(rows) + ")";
    auto outcome = t.Append(src);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? outcome->commit_seq : 0;
  }

  std::unique_ptr<Emitter> StartEmitter(int port, const std::string& consumer = "openlineage") {
    HttpTransportOptions h;
    h.url = "http://127.0.0.1:" + std::to_string(port);
    h.api_key = "secret-token";
    h.connect_timeout = 500ms;
    auto transport = MakeHttpTransport(h);
    EXPECT_TRUE(transport.ok()) << transport.status().ToString();
    auto cursor = OpenCursorStore(*catalog_, consumer, "");
    EXPECT_TRUE(cursor.ok()) << cursor.status().ToString();
    EmitterOptions options;
    options.naming.warehouse = warehouse_;
    options.start_at_beginning = true;
    options.initial_backoff = 5ms;
    options.max_backoff = 50ms;
    auto e = Emitter::Start(*catalog_, *io_, bus_, std::move(*transport), std::move(*cursor), options);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  testing::TempDir tmp_;
  std::string warehouse_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<engine::Database> db_;
  events::Bus bus_;
  std::unique_ptr<events::Watcher> watcher_;
};

TEST_F(LineageTest, EveryKindOfCommitValidatesAgainstTheSchemas) {
  Cli("create sales.parts --schema 'id bigint, ts timestamp, tags varchar[], addr struct(city varchar, zip int)' "
      "--partition-by 'day(ts)'");
  testing::WriteFileOrDie(tmp_.Path("in.csv"), "id,region\n1,eu\n2,us\n3,us\n");
  Cli("ingest sales.orders " + ShellQuote(tmp_.Path("in.csv")));
  Cli("delete sales.orders --where 'id = 2'");
  Cli("ingest sales.orders " + ShellQuote(tmp_.Path("in.csv")) + " --mode overwrite");
  Cli("alter sales.orders add-column qty int");
  Cli("sql \"CREATE TABLE sales.us AS SELECT * FROM sales.orders WHERE region = 'us'\"");
  Cli("sql \"INSERT INTO sales.parts VALUES (1, TIMESTAMP '2026-01-01 10:00:00', ['a'], {'city': 'x', 'zip': 1})\"");
  std::string all;
  for (const char* t : {"sales.orders", "sales.parts", "sales.us"}) all += Cli(std::string("lineage show ") + t);
  testing::WriteFileOrDie(tmp_.Path("events.jsonl"), all);
  EXPECT_EQ(Validate(tmp_.Path("events.jsonl")), "");

  // One START and one COMPLETE per commit, sharing a run id that does not change between runs.
  std::map<std::string, std::vector<std::string>> by_run;
  for (const std::string& line : testing::Lines(all)) {
    Json e = Json::parse(line);
    by_run[e["run"]["runId"]].push_back(e["eventType"]);
  }
  EXPECT_EQ(by_run.size(), 9u) << all;  // 3 creates, 2 ingests, a delete, an alter, a CTAS, an insert
  for (const auto& [run, types] : by_run) EXPECT_EQ(types, (std::vector<std::string>{"START", "COMPLETE"})) << run;
  EXPECT_EQ(Cli("lineage show sales.orders"), Cli("lineage show sales.orders")) << "resends carry the same ids";

  // The append's output: the table, its snapshot, the rows and files it added.
  Json append;
  for (const std::string& line : testing::Lines(Cli("lineage show sales.orders"))) {
    Json e = Json::parse(line);
    if (e["job"]["name"] == "append:sales.orders" && e["eventType"] == "COMPLETE") append = e;
  }
  ASSERT_TRUE(append.is_object());
  const Json& out = append["outputs"][0];
  EXPECT_EQ(out["name"], "sales.orders");
  EXPECT_EQ(out["outputFacets"]["outputStatistics"]["rowCount"], 3);
  EXPECT_EQ(out["outputFacets"]["outputStatistics"]["fileCount"], 1);
  EXPECT_EQ(out["facets"]["schema"]["fields"][0]["name"], "id");
  EXPECT_EQ(out["facets"]["catalog"]["framework"], "iceberg");
  EXPECT_EQ(out["facets"]["symlinks"]["identifiers"][0]["name"], warehouse_ + "/sales/orders");
  EXPECT_TRUE(out["facets"]["version"]["datasetVersion"].is_string());
}

TEST_F(LineageTest, AReceiverGetsOneStartAndOneCompletePerCommitInOrder) {
  Receiver receiver;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto emitter = StartEmitter(port);
  ASSERT_NE(emitter, nullptr);
  constexpr int kCommits = 1000;
  std::vector<int64_t> seqs;
  for (int i = 0; i < kCommits; ++i) seqs.push_back(Append(**t, 1 + i % 3));
  ASSERT_TRUE(emitter->WaitDelivered(seqs.back(), 120s)) << emitter->stats().delivered_seq;
  const auto events = receiver.events();
  // The create (before the emitter started: replayed from the log) and every append.
  ASSERT_EQ(events.size(), 2u * (kCommits + 1));
  EXPECT_EQ(receiver.auth(), "Bearer secret-token");
  std::string last_run;
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    EXPECT_EQ(e["eventType"], i % 2 == 0 ? "START" : "COMPLETE") << i;
    if (i % 2 == 1) {
      EXPECT_EQ(e["run"]["runId"], events[i - 1]["run"]["runId"]) << i;
    }
    if (i % 2 == 0) {
      EXPECT_NE(e["run"]["runId"], last_run) << i;
      last_run = e["run"]["runId"];
    }
    if (i >= 2 && i % 2 == 1) {
      const int n = static_cast<int>(i / 2) - 1;  // the n-th append
      EXPECT_EQ(e["job"]["name"], "append:sales.orders");
      EXPECT_EQ(e["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"], 1 + n % 3) << i;
    }
  }
  emitter->Stop();
  auto stored = catalog_->LoadConsumerCursor("openlineage");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->value_or(0), seqs.back()) << "the cursor is stored in the catalog";
}

TEST_F(LineageTest, AnOutageAndARestartLoseNothing) {
  // A port that was just listened on and closed: connections are refused.
  int port;
  {
    Receiver probe;
    port = probe.Start();
    ASSERT_GT(port, 0);
  }
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok());
  auto emitter = StartEmitter(port);
  ASSERT_NE(emitter, nullptr);
  std::vector<int64_t> seqs;
  for (int i = 0; i < 10; ++i) seqs.push_back(Append(**t, 2));  // commits go on regardless
  std::this_thread::sleep_for(100ms);
  EXPECT_GT(emitter->stats().send_failures, 0);
  EXPECT_LT(emitter->stats().delivered_seq, seqs.front());
  // Restarted while the receiver is still down.
  emitter->Stop();
  emitter = StartEmitter(port);
  ASSERT_NE(emitter, nullptr);
  for (int i = 0; i < 10; ++i) seqs.push_back(Append(**t, 2));
  // Back, but answering 500 for a while.
  Receiver receiver;
  receiver.failing_ = 25;
  ASSERT_EQ(receiver.Start(port), port);
  ASSERT_TRUE(emitter->WaitDelivered(seqs.back(), 60s)) << emitter->stats().delivered_seq;
  EXPECT_EQ(receiver.failing_.load(), 0);
  std::map<std::string, std::set<std::string>> by_run;
  std::vector<std::string> first_seen;
  for (const Json& e : receiver.events()) {
    const std::string run = e["run"]["runId"];
    if (by_run.find(run) == by_run.end()) first_seen.push_back(run);
    by_run[run].insert(e["eventType"].get<std::string>());
  }
  EXPECT_EQ(by_run.size(), 21u) << "the create and 20 appends";
  for (const auto& [run, types] : by_run) EXPECT_EQ(types, (std::set<std::string>{"START", "COMPLETE"})) << run;
  // In commit order: run ids are time-ordered UUIDv7 of the commit times.
  EXPECT_TRUE(std::is_sorted(first_seen.begin(), first_seen.end()));
}

TEST(LineageTransportTest, BadConfigurationIsAClearError) {
  HttpTransportOptions bad;
  bad.url = "ftp://example/lineage";
  EXPECT_EQ(MakeHttpTransport(bad).status().code(), StatusCode::kInvalidArgument);
  bad.url = "http:///api/v1/lineage";
  EXPECT_EQ(MakeHttpTransport(bad).status().code(), StatusCode::kInvalidArgument);
  bad.url = "not a url";
  EXPECT_EQ(MakeHttpTransport(bad).status().code(), StatusCode::kInvalidArgument);
  // An unreachable endpoint is a retryable failure, named.
  HttpTransportOptions down;
  down.url = "http://127.0.0.1:1";
  down.connect_timeout = 200ms;
  auto t = MakeHttpTransport(down);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->Describe(), "http://127.0.0.1:1/api/v1/lineage");
  EXPECT_EQ((*t)->Send("{}").code(), StatusCode::kUnavailable);

  testing::TempDir tmp;
  FileTransportOptions f;
  f.path = tmp.Path("ol.jsonl");
  f.max_bytes = 64;
  f.max_files = 2;
  auto file = MakeFileTransport(f);
  ASSERT_TRUE(file.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*file)->Send("{\"n\": " + std::to_string(i) + ", \"pad\": \"xxxxxxxxxxxx\"}").ok());
  EXPECT_THAT(testing::ReadFileOrDie(f.path), ::testing::HasSubstr("\"n\": 9"));
  EXPECT_THAT(testing::ReadFileOrDie(f.path + ".1"), ::testing::HasSubstr("\"n\": "));
  f.path = tmp.Path("missing/dir/ol.jsonl");
  EXPECT_EQ(MakeFileTransport(f).status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace skade::lineage
