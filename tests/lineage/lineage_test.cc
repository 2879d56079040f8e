// OpenLineage: the events of every kind of commit validate against the OpenLineage schemas
// (ajv in Node, facet schemas resolved); an HTTP receiver on loopback gets one START and one
// COMPLETE per commit, in commit order, with the rows each added; a receiver that refuses
// connections and then answers 500s, and an emitter restarted in between, lose nothing; a
// Transform copy names its inputs and column lineage; a write that fails becomes START + FAIL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "skade/arrow/builder.h"
#include "skade/catalog/open_catalog.h"
#include "skade/engine/database.h"
#include "skade/events/watcher.h"
#include "skade/io/routing_file_io.h"
#include "skade/lineage/emitter.h"
#include "skade/lineage/transport.h"
#include "skade/table/failed_write_spool.h"
#include "skade/table/table.h"
#include "skade/table/transform_run.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::lineage {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::RunProcess;
using testing::ShellQuote;

const std::string kInteropDir = skade::testing::SourcePath("tests/interop");

// Runs the Node validator over a JSON-lines file; "" when every event is valid, else its report.
std::string Validate(const std::string& path) {
  auto r = RunProcess("cd " + ShellQuote(kInteropDir) + " && node openlineage_validate.mjs --fixtures " +
                      ShellQuote(skade::testing::FixturePath("openlineage")) + " --events " + ShellQuote(path) +
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
    if (port_ <= 0) return port_;  // (another test may have taken the port back)
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would be lost (and the join would wait forever).
    if (!skade::testing::PollUntil([&] { return server_.is_running(); }, 20s)) return -1;
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
    // The CLI processes keep their per-catalog state (the failed-write spool) here.
    ::setenv("XDG_STATE_HOME", tmp_.Path("state").c_str(), 1);
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
    auto r = RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " " + args);
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

  // The spool every front of this lake records failed writes in.
  std::string SpoolPath() {
    auto uri = catalog::DefaultCatalogUri(warehouse_);
    EXPECT_TRUE(uri.ok());
    return uri.ok() ? table::FailedWriteSpool::DefaultPath(*uri) : "";
  }

  std::unique_ptr<Emitter> StartEmitter(int port, const std::string& consumer = "openlineage",
                                        const std::string& spool = "", bool from_beginning = true) {
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
    options.start_at_beginning = from_beginning;
    options.initial_backoff = 5ms;
    options.max_backoff = 50ms;
    options.failure_spool = spool;
    options.spool_every = 20ms;
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
  SKADE_SKIP_WITHOUT_FIXTURES();
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
  // The emitter runs at a lower priority: give it time to try once.
  EXPECT_TRUE(skade::testing::PollUntil([&] { return emitter->stats().send_failures > 0; }, 20s, 10ms));
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

// An emitter that starts at the log's head and stops before its first delivery resumed at the
// head of the log on restart, skipping every commit in between; its cursor now exists from the
// moment it starts.
TEST_F(LineageTest, AnEmitterStoppedBeforeItsFirstDeliveryResumesWhereItStarted) {
  int port;
  {
    Receiver probe;
    port = probe.Start();
    ASSERT_GT(port, 0);
  }
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok());
  Append(**t, 1);  // before the emitter: not its business
  auto emitter = StartEmitter(port, "fresh", "", /*from_beginning=*/false);
  ASSERT_NE(emitter, nullptr);
  std::vector<int64_t> seqs;
  for (int i = 0; i < 5; ++i) seqs.push_back(Append(**t, 1));
  emitter->Stop();  // nothing delivered: the receiver is down
  emitter.reset();
  for (int i = 0; i < 5; ++i) seqs.push_back(Append(**t, 1));
  Receiver receiver;
  ASSERT_EQ(receiver.Start(port), port);
  emitter = StartEmitter(port, "fresh", "", /*from_beginning=*/false);
  ASSERT_NE(emitter, nullptr);
  ASSERT_TRUE(emitter->WaitDelivered(seqs.back(), 60s)) << emitter->stats().delivered_seq;
  std::set<std::string> runs;
  for (const Json& e : receiver.events()) runs.insert(e["run"]["runId"].get<std::string>());
  EXPECT_EQ(runs.size(), 10u) << "every commit after the first start, none before";
}

// A transform from sales.orders (id, region) to sales.labels (key, label): key = id,
// label = upper(region). Copies values (a test needs no zero-copy).
class LabelTransform final : public table::Transform {
 public:
  Result<arrow::SchemaHandle> OutputSchema(const ArrowSchema&) override {
    arrow::SchemaHandle schema;
    arrow::ArrayHandle empty;
    auto builder = Builder();
    SKADE_RETURN_IF_ERROR(builder.Finish(schema.get(), empty.get()));
    return schema;
  }
  Result<arrow::ArrayHandle> Apply(const ArrowSchema& input, arrow::ArrayHandle batch) override {
    int id = -1, region = -1;
    for (int64_t i = 0; i < input.n_children; ++i) {
      if (std::string(input.children[i]->name) == "id") id = static_cast<int>(i);
      if (std::string(input.children[i]->name) == "region") region = static_cast<int>(i);
    }
    if (id < 0 || region < 0) return Status::InvalidArgument("input lacks id or region");
    if (std::string(input.children[id]->format) != "l" || std::string(input.children[region]->format) != "u") {
      return Status::InvalidArgument("unexpected input formats");
    }
    const ArrowArray& ids = *batch->children[id];
    const ArrowArray& regions = *batch->children[region];
    auto builder = Builder();
    for (int64_t r = 0; r < batch->length; ++r) {
      builder.AppendStruct();
      builder.child(0).AppendInt(static_cast<const int64_t*>(ids.buffers[1])[ids.offset + r]);
      const auto* offsets = static_cast<const int32_t*>(regions.buffers[1]);
      const char* chars = static_cast<const char*>(regions.buffers[2]);
      std::string text(chars + offsets[regions.offset + r], offsets[regions.offset + r + 1] - offsets[regions.offset + r]);
      for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      builder.child(1).AppendString(text);
    }
    arrow::SchemaHandle schema;
    arrow::ArrayHandle out;
    SKADE_RETURN_IF_ERROR(builder.Finish(schema.get(), out.get()));
    return out;
  }
  std::map<std::string, std::vector<std::string>> ColumnLineage() const override { return lineage; }

  std::map<std::string, std::vector<std::string>> lineage{{"key", {"id"}}, {"label", {"region"}}};

 private:
  static arrow::ArrayBuilder Builder() {
    return arrow::ArrayBuilder("", "+s", false,
                               {arrow::ArrayBuilder("key", "l", true), arrow::ArrayBuilder("label", "u", true)});
  }
};

TEST_F(LineageTest, ATransformCopyNamesItsInputAndColumnLineage) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Cli("create sales.labels --schema 'key bigint, label varchar'");
  auto orders = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  auto labels = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.labels"));
  ASSERT_TRUE(orders.ok() && labels.ok());
  Append(**orders, 5);
  ASSERT_TRUE((*orders)->Refresh().ok());
  const int64_t read_snapshot = *(*orders)->CurrentSnapshotId();
  LabelTransform transform;
  auto outcome = table::RunTransform(**orders, transform, **labels);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->added_records, 5);
  EXPECT_TRUE((*labels)->snapshot_lineage().empty()) << "the sink's own lineage is restored";
  EXPECT_THAT(Cli("scan sales.labels --where \"label = 'EU'\" --count"), ::testing::HasSubstr("5"));

  const std::string events = Cli("lineage show sales.labels");
  testing::WriteFileOrDie(tmp_.Path("transform.jsonl"), events);
  EXPECT_EQ(Validate(tmp_.Path("transform.jsonl")), "");
  Json complete;
  for (const std::string& line : testing::Lines(events)) {
    Json e = Json::parse(line);
    if (e["job"]["name"] == "append:sales.labels" && e["eventType"] == "COMPLETE") complete = e;
  }
  ASSERT_TRUE(complete.is_object()) << events;
  ASSERT_EQ(complete["inputs"].size(), 1u);
  EXPECT_EQ(complete["inputs"][0]["name"], "sales.orders");
  EXPECT_EQ(complete["inputs"][0]["namespace"], complete["outputs"][0]["namespace"]);
  EXPECT_EQ(complete["inputs"][0]["facets"]["version"]["datasetVersion"], std::to_string(read_snapshot));
  const Json& fields = complete["outputs"][0]["facets"]["columnLineage"]["fields"];
  ASSERT_EQ(fields.size(), 2u) << fields.dump();
  EXPECT_EQ(fields["key"]["inputFields"][0]["name"], "sales.orders");
  EXPECT_EQ(fields["key"]["inputFields"][0]["field"], "id");
  EXPECT_EQ(fields["label"]["inputFields"][0]["field"], "region");

  // A lineage naming a column the source lacks is refused before anything is written.
  transform.lineage = {{"label", {"country"}}};
  const int64_t before = *(*labels)->CurrentSnapshotId();
  EXPECT_EQ(table::RunTransform(**orders, transform, **labels).status().code(), StatusCode::kInvalidArgument);
  transform.lineage = {{"nope", {"id"}}};
  EXPECT_EQ(table::RunTransform(**orders, transform, **labels).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*labels)->Refresh().ok());
  EXPECT_EQ(*(*labels)->CurrentSnapshotId(), before);
}

TEST_F(LineageTest, AFailedWriteBecomesStartAndFail) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  testing::WriteFileOrDie(tmp_.Path("bad.csv"), "id,region\nnot-a-number,eu\n");
  // Nobody follows the lake yet: a failing write leaves no spool behind.
  auto r = RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " ingest sales.orders " +
                      ShellQuote(tmp_.Path("bad.csv")));
  ASSERT_NE(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(SpoolPath()));

  Receiver receiver;
  const int port = receiver.Start();
  auto emitter = StartEmitter(port, "openlineage", SpoolPath());
  ASSERT_NE(emitter, nullptr);
  ASSERT_TRUE(std::filesystem::exists(SpoolPath())) << "the emitter enables the spool";
  // Another process's failed append, and a good one beside it.
  r = RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " ingest sales.orders " +
                 ShellQuote(tmp_.Path("bad.csv")));
  ASSERT_NE(r.exit_code, 0);
  testing::WriteFileOrDie(tmp_.Path("good.csv"), "id,region\n1,eu\n");
  Cli("ingest sales.orders " + ShellQuote(tmp_.Path("good.csv")));
  testing::PollUntil([&] { return emitter->stats().failed_writes_sent >= 1; }, 30s, 10ms);
  ASSERT_EQ(emitter->stats().failed_writes_sent, 1);
  auto latest = catalog_->LatestCommitSeq();
  ASSERT_TRUE(latest.ok());
  ASSERT_TRUE(emitter->WaitDelivered(*latest, 30s));
  emitter->Stop();

  std::map<std::string, std::vector<Json>> by_run;
  std::string all;
  for (const Json& e : receiver.events()) {
    by_run[e["run"]["runId"]].push_back(e);
    all += e.dump() + "\n";
  }
  testing::WriteFileOrDie(tmp_.Path("fail.jsonl"), all);
  EXPECT_EQ(Validate(tmp_.Path("fail.jsonl")), "");
  int failed_runs = 0;
  for (const auto& [run, events] : by_run) {
    ASSERT_EQ(events.size(), 2u) << run;
    EXPECT_EQ(events[0]["eventType"], "START");
    if (events[1]["eventType"] != "FAIL") {
      EXPECT_EQ(events[1]["eventType"], "COMPLETE");
      continue;
    }
    ++failed_runs;
    EXPECT_EQ(events[1]["job"]["name"], "append:sales.orders");
    EXPECT_EQ(events[1]["outputs"][0]["name"], "sales.orders");
    EXPECT_THAT(events[1]["run"]["facets"]["errorMessage"]["message"].get<std::string>(),
                ::testing::HasSubstr("not-a-number"));
  }
  EXPECT_EQ(failed_runs, 1) << all;
  EXPECT_EQ(by_run.size(), 3u) << "the create, the good append and the failed one";
}

TEST(FailedWriteSpoolTest, WritesStayPendingUntilMarkedSent) {
  testing::TempDir tmp;
  table::FailedWriteSpool spool(tmp.Path("state/spool.jsonl"));
  table::FailedWrite w;
  w.table = *catalog::TableIdent::Parse("a.b.t");
  w.operation = "append";
  w.started_at_us = 1'700'000'000'000'000;
  w.failed_at_us = w.started_at_us + 5;
  w.error = "Conflict: gave up";
  w.lineage.inputs.push_back({*catalog::TableIdent::Parse("a.src"), 42});
  w.lineage.columns["x"] = {{0, "y"}};
  auto decoded = table::DecodeFailedWrite(table::EncodeFailedWrite(w));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->table, w.table);
  EXPECT_EQ(decoded->error, w.error);
  EXPECT_EQ(decoded->lineage, w.lineage);
  EXPECT_FALSE(table::DecodeFailedWrite("{\"table\": 3}").ok());

  spool.OnWriteFailed(w);  // not enabled: dropped, no file
  EXPECT_FALSE(std::filesystem::exists(spool.path()));
  ASSERT_TRUE(spool.Enable().ok());
  spool.OnWriteFailed(w);
  auto first = spool.TakePending();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 1u);
  // Not marked sent (the consumer stopped): the next take returns it again, with newer ones.
  w.operation = "delete";
  spool.OnWriteFailed(w);
  auto second = spool.TakePending();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 2u);
  EXPECT_EQ((*second)[0].operation, "append");
  EXPECT_EQ((*second)[1].operation, "delete");
  ASSERT_TRUE(spool.MarkSent().ok());
  auto third = spool.TakePending();
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->empty());
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
