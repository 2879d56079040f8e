// The Iceberg REST catalog of `skade serve` checked by independent clients (Node.js, pinned in
// tests/interop/package-lock.json): rest_client.mjs drives it with iceberg-js, and what
// iceberg-js sees is compared with skade's own view — the library over the same catalog, the
// CLI run against the same warehouse while the server runs, the commit log and a commit-stream
// subscriber (`skade watch --server`); rest_validate.mjs runs a scripted session with fetch and
// validates every response against the REST OpenAPI document with ajv. The server runs with a
// bearer token, on 127.0.0.1 port 0, over a fresh lake per test. node and node_modules are
// required (the setup script installs them), so a missing one fails.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/data_writer.h"
#include "skade/engine/database.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/table/table.h"
#include "tests/testing/append_commit.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

extern char** environ;

namespace skade {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::Lines;
using testing::ProcessResult;
using testing::RunProcess;
using testing::ShellQuote;

const std::string kInteropDir = skade::testing::SourcePath("tests/interop");
const std::string kSpec =
    skade::testing::FixturePath("openapi/iceberg-rest-catalog-open-api.yaml");
constexpr const char* kToken = "interop-token-7f3a";

using Child = skade::testing::ChildProcess;

// The JSON lines a script printed, by their "event" (the last one of a name wins).
std::map<std::string, Json> Events(const std::string& out) {
  std::map<std::string, Json> events;
  for (const std::string& line : Lines(out)) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("event")) events[j["event"].get<std::string>()] = j;
  }
  return events;
}

class RestInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every test here checks responses against the Iceberg REST OpenAPI document (fixtures).
    SKADE_SKIP_WITHOUT_FIXTURES();
    ProcessResult node = RunProcess("node --version");
    ASSERT_EQ(node.exit_code, 0) << "node is required (scripts/setup.sh installs it): " << node.err;
    for (const char* pkg : {"iceberg-js", "yaml", "ajv", "ajv-formats"}) {
      ASSERT_TRUE(fs::exists(kInteropDir + "/node_modules/" + pkg + "/package.json"))
          << pkg << " is missing from " << kInteropDir << "/node_modules (run scripts/setup.sh)";
    }
    ASSERT_TRUE(fs::exists(kSpec)) << kSpec;
    warehouse_ = tmp_.Path("lake");
    testing::WriteFileOrDie(tmp_.Path("tokens"), std::string(kToken) + "\n");
  }

  void TearDown() override {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop(SIGTERM, 10s), 0) << "skade serve did not exit cleanly\n"
                                                << ServerLog();
      server_.reset();
    }
  }

  std::string ServerLog() const {
    std::error_code ec;
    return fs::exists(tmp_.Path("serve.err"), ec) ? testing::ReadFileOrDie(tmp_.Path("serve.err"))
                                                  : "";
  }

  // `skade serve` with Flight SQL and the REST catalog on port 0; fills the two ports.
  void StartServer() {
    server_ = Child::Start({skade::testing::CliPath(), "--warehouse", warehouse_, "serve", "--flight-port",
                            "0", "--rest-port", "0", "--rest-auth", "bearer", "--rest-tokens-file",
                            tmp_.Path("tokens"), "--rest-threads", "4", "--query-memory", "1GB",
                            // Small plans page and large ones go to the background, so the
                            // validated run sees plan tasks and fetchPlanningResult.
                            "--rest-plan-page-tasks", "1", "--rest-plan-async-manifests", "2"},
                           tmp_.Path("serve.err"));
    ASSERT_NE(server_, nullptr);
    const std::string flight_prefix = "flight sql listening on 127.0.0.1:";
    const std::string rest_prefix = "rest catalog listening on http://127.0.0.1:";
    for (int i = 0; i < 5 && rest_port_ == 0; ++i) {
      std::string line = server_->ReadLine(20s);
      ASSERT_FALSE(line.empty()) << "skade serve printed no address\n" << ServerLog();
      if (line.rfind(flight_prefix, 0) == 0)
        flight_port_ = std::atoi(line.c_str() + flight_prefix.size());
      if (line.rfind(rest_prefix, 0) == 0)
        rest_port_ = std::atoi(line.c_str() + rest_prefix.size());
    }
    ASSERT_GT(flight_port_, 0);
    ASSERT_GT(rest_port_, 0);
  }

  std::string Uri() const { return "http://127.0.0.1:" + std::to_string(rest_port_); }

  ProcessResult Skade(const std::string& args) {
    return RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " " +
                      args);
  }
  void SkadeOk(const std::string& args) {
    ProcessResult r = Skade(args);
    ASSERT_EQ(r.exit_code, 0) << "skade " << args << "\n" << r.out << r.err;
  }
  // A CLI command's JSON output.
  Json SkadeJson(const std::string& args) {
    ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 0) << "skade " << args << "\n" << r.out << r.err;
    Json j = Json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "skade " << args << " printed no JSON:\n" << r.out;
    return j;
  }

  // rest_client.mjs at `step`; its events (it must end with "done").
  std::map<std::string, Json> IcebergJs(const std::string& step, const std::string& extra = "") {
    const std::string cmd = "node " + ShellQuote(kInteropDir + "/rest_client.mjs") + " --uri " +
                            ShellQuote(Uri()) + " --token " + kToken + " --step " + step + extra;
    ProcessResult r = RunProcess(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out << "\n" << r.err;
    std::map<std::string, Json> events = Events(r.out);
    EXPECT_TRUE(events.count("done")) << "rest_client.mjs " << step << " did not finish:\n"
                                      << r.out << "\n"
                                      << r.err;
    return events;
  }

  // The lake as skade's library sees it: the catalog read-only, as the CLI opens it for queries.
  void OpenLibrary() {
    io_ = io::MakeLocalFileIO();
    catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + warehouse_ + "/catalog.db";
    o.warehouse = warehouse_;
    o.access = catalog::SqlCatalogOptions::Access::kReadOnly;
    auto cat = catalog::OpenSqlCatalog(o, *io_);
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
    engine::DatabaseOptions db_options;
    db_options.threads = 1;
    db_options.memory_limit = "1GB";
    auto db = engine::Database::Open(db_options);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }

  catalog::TableState LoadState(const std::string& name) {
    auto state = catalog_->LoadTable(*catalog::TableIdent::Parse(name));
    EXPECT_TRUE(state.ok()) << name << ": " << state.status().ToString();
    return state.ok() ? *state : catalog::TableState{};
  }

  // `query` over the current snapshot of `name`, visible as `t`, read by skade's library.
  std::vector<std::vector<std::string>> LibraryRows(const std::string& name,
                                                    const std::string& query) {
    auto t = table::Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse(name));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return {};
    auto sql = (*t)->ReadSql({});
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    if (!sql.ok()) return {};
    return testing::QueryText(*db_, "WITH t AS (" + *sql + ") " + query);
  }

  struct Append {
    Json request;  // CommitTableRequest body
    int64_t snapshot_id = 0;
    int64_t rows = 0;
  };

  // An append written by skade's library on top of `base` (Parquet data files through
  // engine::WriteDataFiles, a manifest and a manifest list), as a CommitTableRequest:
  // add-snapshot + set-snapshot-ref, required: main still at base's current snapshot
  // (assert-ref-snapshot-id; null for a table without one). The snapshot id is below 2^53:
  // the request goes through iceberg-js, whose JSON numbers are doubles.
  Append MakeAppend(const iceberg::TableMetadata& base, int64_t first_id, int64_t rows,
                    const std::string& tag) {
    Append out;
    out.rows = rows;
    const std::string sql =
        "SELECT range AS id, CASE WHEN range % 4 = 0 THEN 'us' ELSE 'eu' END AS region, "
        "range * 0.5 AS amount FROM range(" +
        std::to_string(first_id) + ", " + std::to_string(first_id + rows) + ")";
    std::mt19937_64 rng(static_cast<uint64_t>(NowMicros()) ^ std::hash<std::string>{}(tag));
    out.snapshot_id = static_cast<int64_t>((rng() >> 11) | 1);  // 1 ≤ id < 2^53
    auto commit = testing::WriteAppendCommit(*db_, *io_, base, sql, tag, out.snapshot_id);
    EXPECT_TRUE(commit.ok()) << commit.status().ToString();
    if (commit.ok()) out.request = Json::parse(commit->request_json);
    return out;
  }

  static Json PropertiesJson(const std::map<std::string, std::string>& properties) {
    Json j = Json::object();
    for (const auto& [k, v] : properties) j[k] = v;
    return j;
  }
  static Json FieldNames(const iceberg::TableMetadata& m) {
    Json names = Json::array();
    for (const auto& f : m.CurrentSchema()->fields()) names.push_back(f.name);
    return names;
  }

  testing::TempDir tmp_;
  std::string warehouse_;
  std::unique_ptr<Child> server_;
  int flight_port_ = 0;
  int rest_port_ = 0;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<engine::Database> db_;
};

TEST_F(RestInteropTest, IcebergJsAgreesWithTheLibraryTheCliAndTheCommitStream) {
  ASSERT_NO_FATAL_FAILURE(StartServer());

  // ---- iceberg-js: namespaces, tables, a property commit with a requirement.
  auto setup = IcebergJs("setup");
  ASSERT_TRUE(setup.count("done"));
  EXPECT_EQ(setup["unauthorized"]["status"], 401) << "no bearer token";
  EXPECT_EQ(setup["unauthorized"]["type"], "NotAuthorizedException");
  EXPECT_EQ(setup["namespace-again"]["status"], 409);
  EXPECT_EQ(setup["namespace-again"]["type"], "AlreadyExistsException");
  EXPECT_EQ(setup["namespaces"]["top"], Json::parse(R"([["rest"]])"));
  EXPECT_EQ(setup["namespaces"]["children"], Json::parse(R"([["rest","nested"]])"));
  EXPECT_EQ(setup["namespace"]["properties"], Json::parse(R"({"purpose":"interop"})"));
  EXPECT_EQ(setup["properties-updated"]["updated"], Json::parse(R"(["tier"])"));
  EXPECT_EQ(setup["properties-updated"]["removed"], Json::parse(R"(["owner"])"));
  EXPECT_EQ(setup["properties-updated"]["missing"], Json::parse(R"(["absent"])"));
  EXPECT_EQ(setup["properties-updated"]["after"], Json::parse(R"({"tier":"gold"})"));
  EXPECT_EQ(setup["namespace-exists"],
            Json::parse(R"({"event":"namespace-exists","nested":true,"missing":false})"));
  EXPECT_EQ(setup["table-again"]["status"], 409);
  EXPECT_EQ(
      setup["tables"]["identifiers"],
      Json::parse(
          R"([{"namespace":["rest","nested"],"name":"scratch"},{"namespace":["rest","nested"],"name":"t"}])"));
  EXPECT_TRUE(setup["not-modified"]["is_null"]) << "If-None-Match with the current ETag: 304";
  EXPECT_FALSE(setup["modified"]["is_null"]) << "the ETag changes with the commit";
  EXPECT_EQ(setup["conflict"]["status"], 409);
  EXPECT_EQ(setup["conflict"]["type"], "CommitFailedException");

  // skade's library over the same catalog agrees with what iceberg-js saw.
  ASSERT_NO_FATAL_FAILURE(OpenLibrary());
  auto rest_props = catalog_->LoadNamespaceProperties(*catalog::Namespace::Parse("rest"));
  ASSERT_TRUE(rest_props.ok()) << rest_props.status().ToString();
  EXPECT_EQ(rest_props->count("owner"), 0u);
  EXPECT_EQ((*rest_props)["tier"], "gold");
  catalog::TableState t = LoadState("rest.nested.t");
  ASSERT_NE(t.metadata, nullptr);
  const iceberg::TableMetadata& created = *t.metadata;
  EXPECT_EQ(setup["created"]["uuid"], created.table_uuid);
  EXPECT_EQ(setup["committed"]["uuid"], created.table_uuid);
  EXPECT_EQ(setup["created"]["fields"], FieldNames(created));
  EXPECT_EQ(setup["created"]["fields"], Json::parse(R"(["id","region","amount"])"));
  EXPECT_EQ(setup["created"]["field_types"], Json::parse(R"(["long","string","double"])"));
  EXPECT_EQ(setup["created"]["spec"],
            Json::parse(R"([{"name":"region","transform":"identity","source_id":2}])"));
  ASSERT_EQ(created.DefaultSpec()->fields().size(), 1u);
  EXPECT_EQ(created.DefaultSpec()->fields()[0].name, "region");
  EXPECT_EQ(setup["committed"]["metadata_location"], t.metadata_location);
  EXPECT_EQ(setup["committed"]["properties"], PropertiesJson(created.properties));
  EXPECT_EQ(created.properties.at("owner"), "iceberg-js");
  EXPECT_TRUE(setup["committed"]["current_snapshot_id"].is_null());
  EXPECT_FALSE(created.current_snapshot_id.has_value());

  // ---- an append made by skade's library, committed through iceberg-js.
  Append append = MakeAppend(created, 0, 12, "js-append");
  ASSERT_NE(append.snapshot_id, 0);
  const std::string commit_file = tmp_.Path("append-commit.json");
  testing::WriteFileOrDie(commit_file, append.request.dump());

  // A commit-stream subscriber from here on: it replays what follows the first create (commit 1)
  // and then gets the rest live.
  std::unique_ptr<Child> watch =
      Child::Start({skade::testing::CliPath(), "--warehouse", warehouse_, "watch", "--server",
                    "127.0.0.1:" + std::to_string(flight_port_), "--after", "1", "--json"},
                   tmp_.Path("watch.err"));
  ASSERT_NE(watch, nullptr);

  auto after = IcebergJs("append", " --commit " + ShellQuote(commit_file));
  ASSERT_TRUE(after.count("done"));
  EXPECT_EQ(after["appended"]["current_snapshot_id"], append.snapshot_id);
  EXPECT_EQ(after["appended"]["main"], append.snapshot_id);
  EXPECT_EQ(after["appended"]["snapshots"], 1);
  EXPECT_EQ(after["loaded"]["current_snapshot_id"], append.snapshot_id);
  EXPECT_EQ(after["loaded"]["snapshot"]["id"], append.snapshot_id);
  EXPECT_TRUE(after["loaded"]["snapshot"]["parent"].is_null());
  EXPECT_EQ(after["loaded"]["snapshot"]["sequence_number"], 1);
  EXPECT_EQ(after["loaded"]["last_sequence_number"], 1);
  EXPECT_EQ(after["loaded-refs"]["snapshots"], Json::array({append.snapshot_id}));
  EXPECT_EQ(after["stale"]["status"], 409) << "main moved: the same append is stale";
  EXPECT_EQ(after["stale"]["type"], "CommitFailedException");
  EXPECT_FALSE(after["renamed"]["old_exists"]);
  EXPECT_TRUE(after["renamed"]["new_exists"]);
  EXPECT_EQ(after["renamed"]["current_snapshot_id"], append.snapshot_id);
  EXPECT_EQ(after["renamed"]["uuid"], created.table_uuid);
  EXPECT_EQ(after["load-old-name"]["status"], 404);
  EXPECT_EQ(after["load-old-name"]["type"], "NoSuchTableException");
  EXPECT_FALSE(after["dropped"]["exists"]);
  EXPECT_EQ(after["dropped"]["load"]["status"], 404);
  EXPECT_EQ(after["drop-again"]["status"], 404);
  EXPECT_EQ(after["tables"]["identifiers"],
            Json::parse(R"([{"namespace":["rest","nested"],"name":"events"}])"));

  // skade's library: the renamed table holds the append iceberg-js committed, rows and all.
  catalog::TableState events = LoadState("rest.nested.events");
  ASSERT_NE(events.metadata, nullptr);
  const iceberg::TableMetadata& m = *events.metadata;
  EXPECT_EQ(m.table_uuid, created.table_uuid);
  ASSERT_TRUE(m.current_snapshot_id.has_value());
  EXPECT_EQ(*m.current_snapshot_id, append.snapshot_id);
  EXPECT_EQ(after["appended"]["metadata_location"], events.metadata_location)
      << "rename keeps the metadata file";
  EXPECT_EQ(after["renamed"]["properties"], PropertiesJson(m.properties));
  EXPECT_EQ(after["renamed"]["fields"], FieldNames(m));
  const iceberg::Snapshot* current = m.CurrentSnapshot();
  ASSERT_NE(current, nullptr);
  Json summary = Json::object();
  for (const auto& [k, v] : current->summary) summary[k] = v;
  EXPECT_EQ(after["loaded"]["snapshot"]["summary"], summary);
  EXPECT_EQ(after["loaded"]["snapshot"]["manifest_list"], current->manifest_list);
  EXPECT_EQ(current->SummaryValue("added-records"), "12");
  EXPECT_FALSE(catalog_->LoadTable(*catalog::TableIdent::Parse("rest.nested.t")).ok());
  EXPECT_FALSE(catalog_->LoadTable(*catalog::TableIdent::Parse("rest.nested.scratch")).ok());
  using Rows = std::vector<std::vector<std::string>>;
  EXPECT_EQ(LibraryRows("rest.nested.events", "SELECT count(*), sum(id), sum(amount) FROM t"),
            (Rows{{"12", "66", "33.0"}}));
  EXPECT_EQ(LibraryRows("rest.nested.events",
                        "SELECT region, count(*) FROM t GROUP BY region ORDER BY region"),
            (Rows{{"eu", "9"}, {"us", "3"}}));

  // The CLI, run against the same warehouse while the server runs.
  EXPECT_EQ(SkadeJson("tables --json"),
            Json::parse(R"([{"namespace":["rest","nested"],"name":"events"}])"));
  EXPECT_EQ(SkadeJson("sql --format json " +
                      ShellQuote(
                          "SELECT count(*) AS n, count(DISTINCT region) AS regions, max(id) AS top "
                          "FROM \"rest.nested\".events")),
            Json::parse(R"([{"n":12,"regions":2,"top":11}])"));
  Json snapshots = SkadeJson("snapshots rest.nested.events --json");
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_EQ(snapshots[0]["snapshot_id"], append.snapshot_id);
  EXPECT_EQ(snapshots[0]["current"], true);

  // The commit log holds the REST commits in order; the failed and stale ones left no entry.
  Json log = SkadeJson("log --json");
  struct Want {
    const char* table;
    const char* operation;
  };
  const std::vector<Want> want = {
      {"rest.nested.t", "create"},      {"rest.nested.scratch", "create"},
      {"rest.nested.t", "update"},      {"rest.nested.t", "append"},
      {"rest.nested.events", "rename"}, {"rest.nested.scratch", "drop"}};
  ASSERT_EQ(log.size(), want.size()) << log.dump(1);
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(log[i]["commit_seq"], static_cast<int64_t>(i) + 1);
    EXPECT_EQ(log[i]["table"], want[i].table);
    EXPECT_EQ(log[i]["operation"], want[i].operation);
  }
  EXPECT_EQ(log[2]["metadata_location"], setup["committed"]["metadata_location"]);
  EXPECT_EQ(log[3]["snapshot_id"], append.snapshot_id);
  EXPECT_EQ(log[3]["added_records"], 12);
  EXPECT_EQ(log[3]["metadata_location"], after["appended"]["metadata_location"]);
  EXPECT_EQ(log[4]["metadata_location"], after["appended"]["metadata_location"])
      << "a rename keeps the metadata";
  EXPECT_EQ(log[5]["previous_metadata_location"], log[1]["metadata_location"])
      << "nothing else touched scratch";
  EXPECT_EQ(log[0]["metadata_location"], setup["created"]["metadata_location"]);

  // The subscriber got commits 2..6 — the first two replayed, the rest as they landed — each as
  // the log has it.
  std::vector<Json> seen;
  while (seen.size() < log.size() - 1) {
    std::string line = watch->ReadLine(10s);
    if (line.empty()) break;
    seen.push_back(Json::parse(line, nullptr, false));
  }
  ASSERT_EQ(seen.size(), log.size() - 1) << testing::ReadFileOrDie(tmp_.Path("watch.err"));
  for (size_t i = 0; i < seen.size(); ++i) {
    SCOPED_TRACE(i);
    const Json& entry = log[i + 1];
    EXPECT_EQ(seen[i]["commit_seq"], entry["commit_seq"]);
    EXPECT_EQ(seen[i]["table"], entry["table"]);
    EXPECT_EQ(seen[i]["operation"], entry["operation"]);
    EXPECT_EQ(seen[i]["added_records"], entry["added_records"]);
    // A dropped table has no metadata now: the stream names its last one.
    EXPECT_EQ(seen[i]["metadata_location"], entry["metadata_location"] == ""
                                                ? entry["previous_metadata_location"]
                                                : entry["metadata_location"]);
    EXPECT_EQ(seen[i]["snapshot_id"],
              entry.contains("snapshot_id") ? entry["snapshot_id"] : Json(nullptr));
  }
  EXPECT_EQ(watch->Stop(SIGINT, 10s), 0);
}

TEST_F(RestInteropTest, EveryResponseOfAScriptedSessionMatchesTheOpenApiSpec) {
  // A table with two snapshots made by the CLI (64-bit snapshot ids), for loads and commits on
  // real snapshots.
  ASSERT_NO_FATAL_FAILURE(SkadeOk("ns create lake"));
  ASSERT_NO_FATAL_FAILURE(SkadeOk(
      "create lake.facts --schema 'id BIGINT NOT NULL, region VARCHAR' --partition-by region"));
  for (int i = 0; i < 2; ++i) {
    ASSERT_NO_FATAL_FAILURE(
        SkadeOk("ingest lake.facts --sql " +
                ShellQuote("SELECT range AS id, 'r' || (range % 2) AS region FROM range(5)")));
  }
  ASSERT_NO_FATAL_FAILURE(StartServer());

  const std::string cmd = "node " + ShellQuote(kInteropDir + "/rest_validate.mjs") + " --uri " +
                          ShellQuote(Uri()) + " --spec " + ShellQuote(kSpec) + " --token " +
                          kToken + " --table lake.facts";
  ProcessResult r = RunProcess(cmd);
  int ok = 0;
  Json summary;
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind("ok ", 0) == 0) ++ok;
    if (line.rfind("FAIL", 0) == 0) ADD_FAILURE() << line;
    if (line.rfind("summary: ", 0) == 0) summary = Json::parse(line.substr(9), nullptr, false);
  }
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out << "\n" << r.err;
  ASSERT_TRUE(summary.is_object()) << "no summary line:\n" << r.out << "\n" << r.err;
  EXPECT_EQ(summary["failed"], 0);
  EXPECT_GE(summary["validated"].get<int>(), 40) << "response bodies checked against the spec";
  EXPECT_GE(ok, 55);
  // Each kind of answer the session asks for was seen.
  for (const char* status : {"200", "204", "304", "400", "401", "404", "409", "422"}) {
    EXPECT_GE(summary["statuses"].value(status, 0), 1) << status;
  }

  // What the session left, as skade sees it.
  ASSERT_NO_FATAL_FAILURE(OpenLibrary());
  catalog::TableState events = LoadState("spec.inner.events");
  ASSERT_NE(events.metadata, nullptr);
  EXPECT_EQ(PropertiesJson(events.metadata->properties),
            Json::parse(R"({"owner":"validator","txn":"2"})"));
  catalog::TableState facts = LoadState("lake.facts");
  ASSERT_NE(facts.metadata, nullptr);
  EXPECT_EQ(facts.metadata->properties.count("validated"), 1u)
      << "the commit on the exact 64-bit snapshot id";
  EXPECT_EQ(facts.metadata->snapshots.size(), 2u);
  EXPECT_EQ(SkadeJson("tables spec.inner --json"),
            Json::parse(R"([{"namespace":["spec","inner"],"name":"events"}])"));
  EXPECT_EQ(SkadeJson("tables spec --json"), Json::array());
  Json log = SkadeJson("log --after 3 --json");  // after the CLI's create and two appends
  std::vector<std::string> got;
  for (const Json& e : log)
    got.push_back(e["operation"].get<std::string>() + " " + e["table"].get<std::string>());
  const std::vector<std::string> want = {
      "create spec.inner.events",   "create spec.inner.other", "update spec.inner.events",
      "register spec.inner.staged", "rename spec.renamed",     "update spec.inner.events",
      "update spec.renamed",        "drop spec.renamed",       "register spec.registered",
      "drop spec.registered",       "drop spec.inner.staged",  "update lake.facts"};
  EXPECT_EQ(got, want) << log.dump(1);
  // The transaction's two commits share one transaction id; the single commits have their own.
  ASSERT_EQ(log.size(), want.size());
  EXPECT_EQ(log[5]["txn_id"], log[6]["txn_id"]);
  EXPECT_NE(log[4]["txn_id"], log[5]["txn_id"]);
}

// The REST catalog as the catalog of other skade processes: the CLI creates, ingests, lists
// and scans through it (rest+http://…), and a second `skade serve --catalog rest+http://…`
// answers Flight SQL (the Node.js client) and streams the first server's commits.
TEST_F(RestInteropTest, OtherSkadeProcessesUseTheLakeThroughTheRestCatalog) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const std::string remote = "rest+" + Uri() + "?token=" + kToken;
  auto cli = [&](const std::string& args) {
    return RunProcess(ShellQuote(skade::testing::CliPath()) + " --catalog " + ShellQuote(remote) + " " + args);
  };
  for (const std::string& args : {std::string("ns create remote"),
                                  std::string("create remote.t --schema 'id BIGINT NOT NULL, region VARCHAR'"),
                                  std::string("ingest remote.t --sql \"SELECT range AS id, 'eu' AS region FROM range(25)\""),
                                  std::string("ingest remote.t --sql \"SELECT 100 + range AS id, 'us' AS region FROM range(5)\"")}) {
    ProcessResult r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
  }
  ProcessResult tables = cli("tables remote");
  ASSERT_EQ(tables.exit_code, 0) << tables.err;
  EXPECT_THAT(tables.out, ::testing::HasSubstr("remote.t"));
  ProcessResult count = cli("scan remote.t --count");
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(Lines(count.out).back(), "30");
  // The first server's own catalog has the table and both appends.
  ASSERT_NO_FATAL_FAILURE(OpenLibrary());
  catalog::TableState state = LoadState("remote.t");
  ASSERT_NE(state.metadata, nullptr);
  EXPECT_EQ(state.metadata->snapshots.size(), 2u);
  // A bad token is refused with the server's answer.
  ProcessResult refused = RunProcess(ShellQuote(skade::testing::CliPath()) + " --catalog " +
                                     ShellQuote("rest+" + Uri() + "?token=nope") + " tables");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("401"));

  // A second server over the REST catalog.
  std::unique_ptr<Child> second = Child::Start(
      {skade::testing::CliPath(), "--catalog", remote, "serve", "--flight-port", "0", "--query-memory", "512MB"},
      tmp_.Path("second.err"));
  ASSERT_NE(second, nullptr);
  int port = 0;
  const std::string flight_prefix = "flight sql listening on 127.0.0.1:";
  for (int i = 0; i < 5 && port == 0; ++i) {
    std::string line = second->ReadLine(20s);
    ASSERT_FALSE(line.empty()) << "the second serve printed no address\n" << testing::ReadFileOrDie(tmp_.Path("second.err"));
    if (line.rfind(flight_prefix, 0) == 0) port = std::atoi(line.c_str() + flight_prefix.size());
  }
  ASSERT_GT(port, 0);
  auto query = [&](const std::string& sql) {
    ProcessResult r = RunProcess("node " + ShellQuote(kInteropDir + "/flightsql_query.mjs") + " --address 127.0.0.1:" +
                                 std::to_string(port) + " --proto-dir " +
                                 ShellQuote(skade::testing::SourcePath("src/skade/flightsql")) + " --sql " +
                                 ShellQuote(sql));
    EXPECT_EQ(r.exit_code, 0) << sql << "\n" << r.err << testing::ReadFileOrDie(tmp_.Path("second.err"));
    return Json::parse(r.out, nullptr, false);
  };
  EXPECT_EQ(query("SELECT region, count(*) AS n FROM remote.t GROUP BY region ORDER BY region"),
            Json::parse(R"([["eu","25"],["us","5"]])"));
  // The second server's commit stream follows commits made on the first. The watch starts at
  // the log's head as it is now (its commit_seq is the REST catalog's), not "from now": a watch
  // that connected after the server had seen the ingest would wait for it forever.
  ProcessResult log = cli("log --json");
  ASSERT_EQ(log.exit_code, 0) << log.err;
  Json entries = Json::parse(log.out, nullptr, false);
  ASSERT_TRUE(entries.is_array() && !entries.empty()) << log.out;
  const int64_t head = entries.back()["commit_seq"].get<int64_t>();
  std::unique_ptr<Child> watch = Child::Start(
      {skade::testing::CliPath(), "watch", "--server", "127.0.0.1:" + std::to_string(port), "--json", "--after",
       std::to_string(head)},
      tmp_.Path("watch2.err"));
  ASSERT_NE(watch, nullptr);
  ProcessResult more = cli("ingest remote.t --sql \"SELECT 200 AS id, 'ap' AS region\"");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  Json event = Json::parse(watch->ReadLine(20s), nullptr, false);
  EXPECT_EQ(event["table"], "remote.t") << testing::ReadFileOrDie(tmp_.Path("watch2.err"));
  EXPECT_EQ(event["added_records"], 1);
  EXPECT_EQ(watch->Stop(SIGINT, 10s), 0);
  EXPECT_EQ(query("SELECT count(*) FROM remote.t"), Json::parse(R"([["31"]])")) << "the new snapshot is read";
  EXPECT_EQ(second->Stop(SIGTERM, 10s), 0) << testing::ReadFileOrDie(tmp_.Path("second.err"));
}

}  // namespace
}  // namespace skade
