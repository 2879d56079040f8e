// OpenLineage: the events of every kind of commit validate against the OpenLineage schemas
// (ajv in Node, facet schemas resolved); an HTTP receiver on loopback gets one START and one
// COMPLETE per commit, in commit order, with the rows each added; a receiver that refuses
// connections and then answers 500s, and an emitter restarted in between, lose nothing; a
// Transform copy names its inputs and column lineage; a write that fails becomes START + FAIL.
// Issue 38: COMPLETE events carry icebergCommitReport (exact values of what was committed),
// writes that planned a scan of their table carry icebergScanReport on it, a multi-table commit
// is a parent run with a child per table, the events validate against the pinned schemas of
// tests/lineage/schemas with Python jsonschema, and loopback receivers shaped like Marquez and
// OpenMetadata get what they need of a copy.
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
#include "skade/engine/user_sql.h"
#include "skade/events/watcher.h"
#include "skade/io/routing_file_io.h"
#include "skade/lineage/emitter.h"
#include "skade/lineage/transport.h"
#include "skade/table/failed_write_spool.h"
#include "skade/table/table.h"
#include "skade/table/transform_run.h"
#include "tests/lineage/pinned_validator.h"
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

// The events as JSON lines.
std::string JsonLines(const std::vector<std::string>& events) {
  std::string out;
  for (const std::string& e : events) out += e + "\n";
  return out;
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

  // The events the emitter would send for every commit after `after_seq`, as the log records
  // them, grouped by catalog transaction as the emitter groups them.
  std::vector<std::string> EventsSince(int64_t after_seq) {
    auto entries = catalog_->CommitsSince(after_seq, 1000);
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    if (!entries.ok()) return {};
    LineageNaming naming;
    naming.warehouse = warehouse_;
    const CommitEventBuilder builder(*io_, naming);
    std::vector<std::string> out;
    for (size_t i = 0; i < entries->size();) {
      std::vector<catalog::CommitLogEntry> group = {(*entries)[i++]};
      while (i < entries->size() && !group[0].txn_id.empty() && (*entries)[i].txn_id == group[0].txn_id) {
        group.push_back((*entries)[i++]);
      }
      for (std::string& e : builder.BuildTransaction(group)) out.push_back(std::move(e));
    }
    return out;
  }

  // The parsed COMPLETE event of job `job` among `events`; null when none.
  static Json CompleteOf(const std::vector<std::string>& events, const std::string& job) {
    Json found;
    for (const std::string& line : events) {
      Json e = Json::parse(line);
      if (e["eventType"] == "COMPLETE" && e["job"]["name"] == job) found = e;
    }
    return found;
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

// An append of 3 files holding 1,000 rows: the COMPLETE event's icebergCommitReport carries
// exactly what the commit recorded (CommitOutcome and the snapshot), START carries none, and
// the events validate against the pinned OpenLineage schemas (core 2-0-2, the registry's
// Iceberg facets) with Python jsonschema.
TEST_F(LineageTest, TheCommitReportCarriesWhatTheAppendCommitted) {
  // Partitioned by region: 1,000 rows of three regions are three data files in one snapshot.
  Cli("create sales.regions --schema 'id bigint, region varchar' --partition-by 'region'");
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.regions"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto before = catalog_->LatestCommitSeq();
  ASSERT_TRUE(before.ok());
  engine::WriteSource rows;
  rows.sql = "SELECT range AS id, ['eu', 'us', 'apac'][range % 3 + 1] AS region FROM range(1000)";
  auto first = (*t)->Append(rows);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->added_files, 3) << "one data file per partition";
  ASSERT_EQ(first->added_records, 1000);
  const int64_t second_seq = Append(**t, 7);
  ASSERT_TRUE((*t)->Refresh().ok());
  const int64_t second_snapshot = *(*t)->CurrentSnapshotId();

  const std::vector<std::string> events = EventsSince(*before);
  testing::WriteFileOrDie(tmp_.Path("report.jsonl"), JsonLines(events));
  EXPECT_EQ(ValidatePinned(tmp_.Path("report.jsonl"), 4), "");

  ASSERT_EQ(events.size(), 4u);
  const Json start = Json::parse(events[0]);
  EXPECT_EQ(start["eventType"], "START");
  EXPECT_FALSE(start["outputs"][0].contains("outputFacets") &&
               start["outputs"][0]["outputFacets"].contains("icebergCommitReport"))
      << "the report is the COMPLETE event's";
  const Json complete = Json::parse(events[1]);
  ASSERT_EQ(complete["eventType"], "COMPLETE");
  const Json& report = complete["outputs"][0]["outputFacets"]["icebergCommitReport"];
  ASSERT_TRUE(report.is_object()) << complete.dump();
  EXPECT_EQ(report["_schemaURL"],
            "https://openlineage.io/spec/facets/1-0-2/IcebergCommitReportOutputDatasetFacet.json"
            "#/$defs/IcebergCommitReportOutputDatasetFacet");
  EXPECT_EQ(report["_producer"], ProducerUri());
  EXPECT_EQ(report["snapshotId"], first->snapshot_id);
  EXPECT_EQ(report["sequenceNumber"], first->sequence_number);
  EXPECT_EQ(report["operation"], "append");
  const Json& m = report["commitMetrics"];
  EXPECT_EQ(m["attempts"], 1);
  ASSERT_TRUE(m["totalDuration"].is_number()) << m.dump();
  EXPECT_GE(m["totalDuration"].get<double>(), 0.0);
  EXPECT_LT(m["totalDuration"].get<double>(), 60'000.0);
  EXPECT_EQ(m["addedDataFiles"], 3);
  EXPECT_EQ(m["removedDataFiles"], 0);
  EXPECT_EQ(m["totalDataFiles"], 3);
  EXPECT_EQ(m["addedRecords"], 1000);
  EXPECT_EQ(m["removedRecords"], 0);
  EXPECT_EQ(m["totalRecords"], 1000);
  EXPECT_EQ(m["addedFilesSizeInBytes"], first->added_bytes);
  EXPECT_GT(first->added_bytes, 0);
  EXPECT_EQ(m["totalFilesSizeInBytes"], first->added_bytes);
  EXPECT_EQ(m["addedDeleteFiles"], 0);
  EXPECT_EQ(m["addedDVs"], 0);
  EXPECT_EQ(m["totalDeleteFiles"], 0);
  // skade's summaries do not record these: left out rather than guessed.
  EXPECT_FALSE(m.contains("removedEqualityDeleteFiles"));
  EXPECT_FALSE(m.contains("removedPositionalDeleteFiles"));

  const Json next = Json::parse(events[3]);
  const Json& report2 = next["outputs"][0]["outputFacets"]["icebergCommitReport"];
  EXPECT_EQ(report2["snapshotId"], second_snapshot);
  EXPECT_EQ(report2["sequenceNumber"], first->sequence_number + 1);
  EXPECT_EQ(report2["commitMetrics"]["addedRecords"], 7);
  EXPECT_EQ(report2["commitMetrics"]["addedDataFiles"], 1);
  EXPECT_EQ(report2["commitMetrics"]["totalRecords"], 1007);
  EXPECT_EQ(report2["commitMetrics"]["totalDataFiles"], 4);
  auto entries = catalog_->CommitsSince(second_seq - 1, 1);
  ASSERT_TRUE(entries.ok() && entries->size() == 1u);
  EXPECT_EQ((*entries)[0].snapshot_id, second_snapshot);

  // A commit that adds no snapshot (a schema change) reports none: the snapshot it names is an
  // earlier commit's.
  Cli("alter sales.regions add-column qty int");
  const Json alter = CompleteOf(EventsSince(second_seq), "update:sales.regions");
  ASSERT_TRUE(alter.is_object());
  EXPECT_FALSE(alter["outputs"][0].contains("outputFacets") &&
               alter["outputs"][0]["outputFacets"].contains("icebergCommitReport"))
      << alter.dump();
}

// The validator is not a rubber stamp: a facet that breaks its registry schema, one under a
// key its schema does not give it, and an event without a runId are refused.
TEST_F(LineageTest, ThePinnedValidatorRefusesBrokenEvents) {
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok());
  auto before = catalog_->LatestCommitSeq();
  ASSERT_TRUE(before.ok());
  Append(**t, 3);
  const std::vector<std::string> events = EventsSince(*before);
  ASSERT_EQ(events.size(), 2u);
  Json good = Json::parse(events[1]);
  testing::WriteFileOrDie(tmp_.Path("good.jsonl"), good.dump() + "\n");
  ASSERT_EQ(ValidatePinned(tmp_.Path("good.jsonl")), "");

  Json wrong_type = good;
  wrong_type["outputs"][0]["outputFacets"]["icebergCommitReport"]["snapshotId"] = "not a number";
  Json wrong_key = good;
  wrong_key["outputs"][0]["outputFacets"]["iceberg_commit_report"] =
      wrong_key["outputs"][0]["outputFacets"]["icebergCommitReport"];
  Json wrong_kind = good;  // an output facet among the dataset facets
  wrong_kind["outputs"][0]["facets"]["icebergCommitReport"] =
      wrong_kind["outputs"][0]["outputFacets"]["icebergCommitReport"];
  Json no_run_id = good;
  no_run_id["run"].erase("runId");
  for (const Json& bad : {wrong_type, wrong_key, wrong_kind, no_run_id}) {
    testing::WriteFileOrDie(tmp_.Path("bad.jsonl"), bad.dump() + "\n");
    EXPECT_NE(ValidatePinned(tmp_.Path("bad.jsonl")), "") << bad.dump();
  }
}

// A copy-on-write delete plans a scan of its own table: the table is the run's input, with the
// icebergScanReport of that plan (snapshot read, filter, files kept and pruned, bytes), and the
// commit report counts the file replaced.
TEST_F(LineageTest, ACopyOnWriteDeleteReportsTheScanItPlanned) {
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok());
  engine::WriteSource low, high;
  low.sql = "SELECT range AS id, 'eu' AS region FROM range(5)";            // ids 0..4
  high.sql = "SELECT 100 + range AS id, 'us' AS region FROM range(5)";     // ids 100..104
  auto a = (*t)->Append(low);
  auto b = (*t)->Append(high);
  ASSERT_TRUE(a.ok() && b.ok());
  auto where = engine::Predicate::Parse("id = 2");
  ASSERT_TRUE(where.ok());
  auto deleted = (*t)->DeleteWhere(*where);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  ASSERT_EQ(deleted->operation, "delete");
  ASSERT_EQ(deleted->added_files, 1) << "copy-on-write rewrites the file";

  const Json complete = CompleteOf(EventsSince(b->commit_seq), "delete:sales.orders");
  ASSERT_TRUE(complete.is_object());
  testing::WriteFileOrDie(tmp_.Path("cow.jsonl"), complete.dump() + "\n");
  EXPECT_EQ(ValidatePinned(tmp_.Path("cow.jsonl")), "");
  ASSERT_EQ(complete["inputs"].size(), 1u) << complete.dump();
  const Json& input = complete["inputs"][0];
  EXPECT_EQ(input["name"], "sales.orders");
  EXPECT_EQ(input["namespace"], complete["outputs"][0]["namespace"]);
  EXPECT_EQ(input["facets"]["version"]["datasetVersion"], std::to_string(b->snapshot_id));
  const Json& scan = input["inputFacets"]["icebergScanReport"];
  EXPECT_EQ(scan["_schemaURL"],
            "https://openlineage.io/spec/facets/1-0-1/IcebergScanReportInputDatasetFacet.json"
            "#/$defs/IcebergScanReportInputDatasetFacet");
  EXPECT_EQ(scan["snapshotId"], b->snapshot_id);
  EXPECT_EQ(scan["schemaId"], 0);
  EXPECT_EQ(scan["filterDescription"], where->sql());
  EXPECT_EQ(scan["projectedFieldNames"], Json::array({"id", "region"}));
  const Json& metrics = scan["scanMetrics"];
  EXPECT_EQ(metrics["resultDataFiles"], 1) << "the file of ids 100..104 is pruned by its bounds";
  EXPECT_EQ(metrics["skippedDataFiles"], 1);
  EXPECT_EQ(metrics["totalFileSizeInBytes"], a->added_bytes);
  EXPECT_EQ(metrics["resultDeleteFiles"], 0);
  EXPECT_GE(metrics["totalPlanningDuration"].get<double>(), 0.0);

  const Json& m = complete["outputs"][0]["outputFacets"]["icebergCommitReport"]["commitMetrics"];
  EXPECT_EQ(m["removedDataFiles"], 1);
  EXPECT_EQ(m["addedDataFiles"], 1);
  EXPECT_EQ(m["addedRecords"], 4);
  EXPECT_EQ(m["totalRecords"], 9);
  EXPECT_EQ(m["totalDataFiles"], 2);
  EXPECT_EQ(m["removedFilesSizeInBytes"], a->added_bytes);
  EXPECT_EQ(m["addedFilesSizeInBytes"], deleted->added_bytes);

  // A plain append plans no scan: no input.
  const Json append = CompleteOf(EventsSince(a->commit_seq - 1), "append:sales.orders");
  ASSERT_TRUE(append.is_object());
  EXPECT_TRUE(append["inputs"].empty());

  // An upsert looks its keys up in the whole table: the table is its input, with that scan.
  engine::WriteSource changed;
  changed.sql = "SELECT 3 AS id, 'fr' AS region UNION ALL SELECT 200, 'de'";
  auto upserted = (*t)->Upsert(changed, {"id"});
  ASSERT_TRUE(upserted.ok()) << upserted.status().ToString();
  const Json upsert = CompleteOf(EventsSince(deleted->commit_seq), upserted->operation + ":sales.orders");
  ASSERT_TRUE(upsert.is_object());
  testing::WriteFileOrDie(tmp_.Path("upsert.jsonl"), upsert.dump() + "\n");
  EXPECT_EQ(ValidatePinned(tmp_.Path("upsert.jsonl")), "");
  ASSERT_EQ(upsert["inputs"].size(), 1u) << upsert.dump();
  const Json& upsert_scan = upsert["inputs"][0]["inputFacets"]["icebergScanReport"];
  EXPECT_EQ(upsert_scan["snapshotId"], deleted->snapshot_id);
  EXPECT_EQ(upsert_scan["scanMetrics"]["resultDataFiles"], 2) << "no filter: every live file";
  EXPECT_EQ(upsert_scan["scanMetrics"]["skippedDataFiles"], 0);
}

// A multi-table commit (Catalog::CommitTransaction, REST transactions/commit) is one parent run
// with a child run per table: the emitter sends the parent's START, each table's START and
// COMPLETE with a parent facet naming it, and the parent's COMPLETE; the commit after it is a
// run of its own.
TEST_F(LineageTest, AMultiTableCommitIsOneParentRunWithAChildPerTable) {
  Cli("create sales.parts --schema 'id bigint'");
  auto orders = catalog_->LoadTable(*catalog::TableIdent::Parse("sales.orders"));
  auto parts = catalog_->LoadTable(*catalog::TableIdent::Parse("sales.parts"));
  ASSERT_TRUE(orders.ok() && parts.ok());
  Receiver receiver;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  auto emitter = StartEmitter(port);
  ASSERT_NE(emitter, nullptr);
  std::vector<catalog::TableCommit> commits(2);
  commits[0].ident = *catalog::TableIdent::Parse("sales.orders");
  commits[0].requirements.push_back(iceberg::TableRequirement::AssertTableUuid(orders->metadata->table_uuid));
  commits[0].updates.push_back(iceberg::TableUpdate::SetProperties({{"owner", "finance"}}));
  commits[1].ident = *catalog::TableIdent::Parse("sales.parts");
  commits[1].requirements.push_back(iceberg::TableRequirement::AssertTableUuid(parts->metadata->table_uuid));
  commits[1].updates.push_back(iceberg::TableUpdate::SetProperties({{"owner", "finance"}}));
  auto committed = catalog_->CommitTransaction(commits);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  ASSERT_TRUE(t.ok());
  const int64_t last = Append(**t, 2);
  ASSERT_TRUE(emitter->WaitDelivered(last, 60s)) << emitter->stats().delivered_seq;
  emitter->Stop();

  std::vector<Json> events = receiver.events();
  std::string all;
  for (const Json& e : events) all += e.dump() + "\n";
  testing::WriteFileOrDie(tmp_.Path("txn.jsonl"), all);
  EXPECT_EQ(ValidatePinned(tmp_.Path("txn.jsonl")), "");
  // The two creates (replayed), then the transaction, then the append.
  ASSERT_EQ(events.size(), 4u + 6u + 2u) << all;
  const std::vector<Json> txn(events.begin() + 4, events.begin() + 10);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"START", "transaction:sales.orders,sales.parts"}, {"START", "update:sales.orders"},
      {"COMPLETE", "update:sales.orders"},              {"START", "update:sales.parts"},
      {"COMPLETE", "update:sales.parts"},               {"COMPLETE", "transaction:sales.orders,sales.parts"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(txn[i]["eventType"], expected[i].first) << i;
    EXPECT_EQ(txn[i]["job"]["name"], expected[i].second) << i;
  }
  const std::string parent_run = txn[0]["run"]["runId"];
  EXPECT_EQ(txn[5]["run"]["runId"], parent_run);
  EXPECT_EQ(txn[0]["job"]["facets"]["jobType"]["jobType"], "TRANSACTION");
  EXPECT_TRUE(txn[0]["outputs"].empty());
  for (size_t i = 1; i <= 4; ++i) {
    const Json& parent = txn[i]["run"]["facets"]["parent"];
    EXPECT_EQ(parent["run"]["runId"], parent_run) << i;
    EXPECT_EQ(parent["job"]["namespace"], "skade") << i;
    EXPECT_EQ(parent["job"]["name"], "transaction:sales.orders,sales.parts") << i;
    EXPECT_EQ(parent["root"]["run"]["runId"], parent_run) << i;
    EXPECT_NE(txn[i]["run"]["runId"], parent_run) << i;
    EXPECT_EQ(txn[i]["outputs"][0]["name"], i <= 2 ? "sales.orders" : "sales.parts") << i;
  }
  EXPECT_NE(txn[1]["run"]["runId"], txn[3]["run"]["runId"]);
  EXPECT_EQ(events[10]["job"]["name"], "append:sales.orders");
  EXPECT_FALSE(events[11]["run"]["facets"].contains("parent"));
  // The same log builds the same ids again (a resend is recognisable).
  auto rebuilt = EventsSince(0);
  ASSERT_EQ(rebuilt.size(), events.size());
  EXPECT_EQ(Json::parse(rebuilt[4])["run"]["runId"], parent_run);
}

// The scan report a write keeps in its snapshot summary round-trips; bad text is refused.
TEST(ScanReportTest, RoundTripsThroughTheSnapshotSummary) {
  table::ScanReport r;
  r.snapshot_id = 9'000'000'000'001;
  r.schema_id = 3;
  r.filter = "(id = 2)";
  r.projected_field_names = {"id", "region"};
  r.planning_duration_us = 1234;
  r.result_data_files = 2;
  r.result_delete_files = 1;
  r.skipped_data_files = 7;
  r.total_file_size_in_bytes = 4096;
  r.total_delete_file_size_in_bytes = 512;
  r.indexed_delete_files = 4;
  iceberg::Snapshot snap;
  snap.summary.emplace_back(table::kScanReportKey, table::EncodeScanReport(r));
  auto decoded = table::ScanReportOf(snap);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(decoded->has_value());
  EXPECT_EQ(**decoded, r);
  EXPECT_FALSE(table::ScanReportOf(iceberg::Snapshot{})->has_value());
  EXPECT_EQ(table::DecodeScanReport("{\"snapshot-id\": \"x\"}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table::DecodeScanReport("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table::DecodeScanReport("not json").status().code(), StatusCode::kInvalidArgument);
}

// Entries of one transaction on one table (coalesced appends) are no multi-table commit.
TEST(LineageTransactionTest, OneTableIsNoMultiTableCommit) {
  catalog::CommitLogEntry a;
  a.commit_seq = 1;
  a.table = *catalog::TableIdent::Parse("s.a");
  a.txn_id = "t1";
  a.operation = "update";
  catalog::CommitLogEntry b = a;
  b.commit_seq = 2;
  EXPECT_FALSE(IsMultiTableCommit({a, b}));
  b.table = *catalog::TableIdent::Parse("s.b");
  EXPECT_TRUE(IsMultiTableCommit({a, b}));
  b.txn_id = "t2";
  EXPECT_FALSE(IsMultiTableCommit({a, b}));
  a.txn_id = b.txn_id = "";
  EXPECT_FALSE(IsMultiTableCommit({a, b}));
}

// What Marquez (POST /api/v1/lineage) and OpenMetadata (POST /api/v1/openlineage/lineage) need
// of the events of a copy job, checked at a loopback receiver for each path: Marquez takes every
// event and links runs by job (namespace, name) and datasets by (namespace, name); OpenMetadata
// keeps only COMPLETE events with at least one input and one output and draws an edge from each
// input to each output, so the copy must arrive as such an event whose input names the same
// dataset the source table's own commits name as their output.
TEST_F(LineageTest, MarquezAndOpenMetadataReceiveACopyAsAnEdge) {
  Cli("create sales.labels --schema 'key bigint, label varchar'");
  auto orders = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.orders"));
  auto labels = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("sales.labels"));
  ASSERT_TRUE(orders.ok() && labels.ok());
  Append(**orders, 4);
  ASSERT_TRUE((*orders)->Refresh().ok());
  const int64_t read_snapshot = *(*orders)->CurrentSnapshotId();
  LabelTransform transform;
  auto copied = table::RunTransform(**orders, transform, **labels);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();

  struct Path {
    const char* path;
    bool openmetadata;
  };
  for (const Path& receiver_path : {Path{"/api/v1/lineage", false}, Path{"/api/v1/openlineage/lineage", true}}) {
    SCOPED_TRACE(receiver_path.path);
    std::mutex mu;
    std::vector<Json> kept;
    int received = 0;
    httplib::Server server;
    server.Post(receiver_path.path, [&](const httplib::Request& req, httplib::Response& res) {
      Json e = Json::parse(req.body, nullptr, false);
      std::lock_guard<std::mutex> lock(mu);
      ++received;
      // What the receiver refuses outright (400): no job or run identity.
      if (e.is_discarded() || !e["job"]["namespace"].is_string() || !e["job"]["name"].is_string() ||
          !e["run"]["runId"].is_string() || !e["eventTime"].is_string()) {
        res.status = 400;
        return;
      }
      const bool edge = e["eventType"] == "COMPLETE" && !e["inputs"].empty() && !e["outputs"].empty();
      if (!receiver_path.openmetadata || edge) kept.push_back(e);
      res.status = receiver_path.openmetadata ? 200 : 201;
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread serving([&] { server.listen_after_bind(); });
    ASSERT_TRUE(skade::testing::PollUntil([&] { return server.is_running(); }, 20s));
    HttpTransportOptions h;
    h.url = "http://127.0.0.1:" + std::to_string(port) + receiver_path.path;
    auto transport = MakeHttpTransport(h);
    ASSERT_TRUE(transport.ok());
    auto cursor = OpenCursorStore(*catalog_, std::string("receiver") + (receiver_path.openmetadata ? "-om" : "-mq"), "");
    ASSERT_TRUE(cursor.ok());
    EmitterOptions options;
    options.naming.warehouse = warehouse_;
    options.start_at_beginning = true;
    auto emitter = Emitter::Start(*catalog_, *io_, bus_, std::move(*transport), std::move(*cursor), options);
    ASSERT_TRUE(emitter.ok()) << emitter.status().ToString();
    const bool delivered = (*emitter)->WaitDelivered(copied->commit_seq, 60s);
    const EmitterStats stats = (*emitter)->stats();
    (*emitter)->Stop();
    server.stop();
    serving.join();
    ASSERT_TRUE(delivered);
    EXPECT_EQ(stats.events_refused, 0);

    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(received, 2 * 4) << "creates of orders and labels, the append, the copy";
    if (receiver_path.openmetadata) {
      ASSERT_EQ(kept.size(), 1u) << "only the copy is an edge";
    } else {
      ASSERT_EQ(kept.size(), 8u);
    }
    const Json& copy = kept.back();
    EXPECT_EQ(copy["eventType"], "COMPLETE");
    EXPECT_EQ(copy["job"]["namespace"], "skade");
    EXPECT_EQ(copy["job"]["name"], "append:sales.labels");
    ASSERT_EQ(copy["inputs"].size(), 1u);
    ASSERT_EQ(copy["outputs"].size(), 1u);
    EXPECT_EQ(copy["inputs"][0]["name"], "sales.orders");
    EXPECT_EQ(copy["outputs"][0]["name"], "sales.labels");
    EXPECT_FALSE(copy["inputs"][0]["namespace"].get<std::string>().empty());
    EXPECT_EQ(copy["inputs"][0]["namespace"], copy["outputs"][0]["namespace"]);
    EXPECT_EQ(copy["outputs"][0]["facets"]["schema"]["fields"][0]["name"], "key");
    EXPECT_EQ(copy["outputs"][0]["facets"]["columnLineage"]["fields"]["key"]["inputFields"][0]["field"], "id");
    // Both keep dataset facets as sent: the Iceberg reports show with the input and output.
    EXPECT_EQ(copy["inputs"][0]["inputFacets"]["icebergScanReport"]["snapshotId"], read_snapshot);
    EXPECT_EQ(copy["outputs"][0]["outputFacets"]["icebergCommitReport"]["snapshotId"], copied->snapshot_id);
    EXPECT_EQ(copy["outputs"][0]["outputFacets"]["icebergCommitReport"]["commitMetrics"]["addedRecords"], 4);
    if (!receiver_path.openmetadata) {
      // Marquez: the append to sales.orders wrote the very dataset the copy read.
      bool source_written = false;
      for (const Json& e : kept) {
        if (e["job"]["name"] == "append:sales.orders" && e["eventType"] == "COMPLETE") {
          source_written = e["outputs"][0]["namespace"] == copy["inputs"][0]["namespace"] &&
                           e["outputs"][0]["name"] == copy["inputs"][0]["name"];
        }
      }
      EXPECT_TRUE(source_written);
    }
  }
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
  w.lineage.inputs.push_back({*catalog::TableIdent::Parse("a.src"), 42, ""});
  w.lineage.columns["x"] = {{0, "y", {{"DIRECT", "IDENTITY", false}}}};
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
