// `skade serve` over the same lake reached through different catalog connectors — skade's SQL
// catalog, the Iceberg REST catalog of another `skade serve`, the folder of tables itself
// (file://, with a polled commit log) and a copy of it on an S3 API server (s3rver, as a folder of
// tables at s3://, every location spelled s3://…) — answers the same query suite with the same rows to an
// independent Flight SQL client (Node.js: grpc-js, apache-arrow); a connector skade does not
// write is served read-only, and commits made beside it still arrive as commit events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/uuid.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/database.h"
#include "skade/io/s3_file_io.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/foreign_table.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/run_process.h"
#include "tests/testing/s3rver.h"
#include "tests/testing/temp_dir.h"

namespace skade {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;
using testing::ProcessResult;
using testing::RunProcess;
using testing::ShellQuote;
using Child = testing::ChildProcess;

const std::string kInteropDir = skade::testing::SourcePath("tests/interop");

class ConnectorsInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(RunProcess("node --version").exit_code, 0) << "node is required (scripts/setup.sh installs it)";
    ASSERT_TRUE(fs::exists(kInteropDir + "/node_modules/apache-arrow/package.json")) << "run scripts/setup.sh";
    warehouse_ = tmp_.Path("lake");
  }
  void TearDown() override {
    for (auto& [name, child] : servers_) EXPECT_EQ(child->Stop(SIGTERM, 10s), 0) << name << "\n" << Log(name);
  }

  std::string Log(const std::string& name) const {
    std::error_code ec;
    return fs::exists(tmp_.Path(name + ".err"), ec) ? testing::ReadFileOrDie(tmp_.Path(name + ".err")) : "";
  }

  // The last commit_seq of a polled commit log (its SQLite state file), -1 if unreadable.
  static int64_t PolledHead(const std::string& state) {
    sqlite3* db = nullptr;
    int64_t head = -1;
    if (sqlite3_open_v2(state.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 10000);
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT COALESCE(MAX(commit_seq), 0) FROM polled_log", -1, &stmt, nullptr) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW) {
        head = sqlite3_column_int64(stmt, 0);
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return head;
  }

  // The lake's own CLI (the SQLite catalog in the warehouse).
  void Lake(const std::string& args) {
    ProcessResult r = RunProcess(ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " " + args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
  }

  // Copies every table of the lake to s3rver under a fresh prefix, each location spelled
  // s3://bucket/prefix/<namespace levels>/<table>/…; returns the prefix ("" on failure).
  std::string CopyLakeToS3() {
    auto& server = testing::S3rver::Shared();
    EXPECT_GT(server.port(), 0) << server.error();
    if (server.port() == 0) return "";
    io::S3Options o;
    o.endpoint = server.endpoint();
    o.access_key_id = testing::kS3rverAccessKey;
    o.secret_access_key = testing::kS3rverSecretKey;
    auto s3 = io::S3FileIO::Open(o);
    auto local = io::MakeLocalFileIO();
    catalog::SqlCatalogOptions co;
    co.uri = "sqlite://" + warehouse_ + "/catalog.db";
    co.warehouse = warehouse_;
    co.access = catalog::SqlCatalogOptions::Access::kReadOnly;
    auto cat = catalog::OpenSqlCatalog(co, *local);
    auto db = engine::Database::Open({});
    EXPECT_TRUE(s3.ok() && cat.ok() && db.ok());
    if (!s3.ok() || !cat.ok() || !db.ok()) return "";
    const std::string prefix = std::string("s3://") + testing::kS3rverBucket + "/lake-" + Uuid::NewV7().ToString();
    auto namespaces = catalog::ListNamespacesBelow(**cat, catalog::Namespace{});
    EXPECT_TRUE(namespaces.ok());
    int copied = 0;
    for (const auto& ns : *namespaces) {
      for (const auto& ident : (*cat)->ListTables(ns).value()) {
        auto state = (*cat)->LoadTable(ident);
        EXPECT_TRUE(state.ok());
        std::string root = prefix;
        for (const auto& level : ident.ns.levels) root += "/" + level;
        root += "/" + ident.name;
        auto uploaded = testing::UploadForeignCopy(*state->metadata, *local, **db,
                                                   tmp_.Path("s3copy/" + ident.ToString()), root, **s3);
        EXPECT_TRUE(uploaded.ok()) << uploaded.status().ToString();
        ++copied;
      }
    }
    EXPECT_EQ(copied, 2);
    // The S3 server's client settings, for the `skade serve` started next.
    ::setenv("AWS_ENDPOINT_URL", server.endpoint().c_str(), 1);
    ::setenv("AWS_ACCESS_KEY_ID", testing::kS3rverAccessKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", testing::kS3rverSecretKey, 1);
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::setenv("AWS_CONFIG_FILE", "/dev/null", 1);
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null", 1);
    return prefix;
  }

  // Starts `skade <args> serve …` and returns {flight port, rest port (0 if none)}.
  std::pair<int, int> Serve(const std::string& name, std::vector<std::string> args, bool rest) {
    std::vector<std::string> argv = {skade::testing::CliPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* a : {"serve", "--flight-port", "0", "--query-memory", "512MB"}) argv.push_back(a);
    if (rest) {
      argv.push_back("--rest-port");
      argv.push_back("0");
    }
    auto child = Child::Start(argv, tmp_.Path(name + ".err"));
    EXPECT_NE(child, nullptr);
    if (!child) return {0, 0};
    int flight = 0, rest_port = 0;
    const std::string fp = "flight sql listening on 127.0.0.1:", rp = "rest catalog listening on http://127.0.0.1:";
    for (int i = 0; i < 6 && (flight == 0 || (rest && rest_port == 0)); ++i) {
      std::string line = child->ReadLine(20s);
      if (line.empty()) break;
      if (line.rfind(fp, 0) == 0) {
        flight = std::atoi(line.c_str() + fp.size());
        read_only_[name] = line.find("read-only") != std::string::npos;
      }
      if (line.rfind(rp, 0) == 0) rest_port = std::atoi(line.c_str() + rp.size());
    }
    EXPECT_GT(flight, 0) << name << " printed no address\n" << Log(name);
    servers_.emplace_back(name, std::move(child));
    return {flight, rest_port};
  }

  // Runs `sql` on a Flight SQL server with the Node.js client: rows as strings, or the error.
  Json Query(int port, const std::string& sql, bool expect_ok = true, bool update = false) {
    ProcessResult r = RunProcess("node " + ShellQuote(kInteropDir + "/flightsql_query.mjs") + " --address 127.0.0.1:" +
                                 std::to_string(port) + " --proto-dir " +
                                 ShellQuote(skade::testing::SourcePath("src/skade/flightsql")) + " --sql " +
                                 ShellQuote(sql) + (update ? " --update 1" : ""));
    if (!expect_ok) return Json(r.exit_code == 0 ? "succeeded" : r.err);
    EXPECT_EQ(r.exit_code, 0) << sql << "\n" << r.err;
    return Json::parse(r.out, nullptr, false);
  }

  testing::TempDir tmp_;
  std::string warehouse_;
  std::vector<std::pair<std::string, std::unique_ptr<Child>>> servers_;
  std::map<std::string, bool> read_only_;
};

TEST_F(ConnectorsInteropTest, EveryConnectorServesTheSameRowsAndCommitEvents) {
  ASSERT_NO_FATAL_FAILURE(Lake("ns create sales.eu"));
  Lake("create sales.eu.orders --schema 'id BIGINT NOT NULL, amount DOUBLE, region VARCHAR' --partition-by region");
  Lake("ingest sales.eu.orders --sql \"SELECT range AS id, range * 1.5 AS amount, CASE WHEN range % 3 = 0 THEN 'north' "
       "ELSE 'south' END AS region FROM range(60)\"");
  Lake("ns create ops");
  Lake("create ops.events --schema 'ts TIMESTAMPTZ, kind VARCHAR'");
  Lake("ingest ops.events --sql \"SELECT TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_hours(range) AS ts, 'k' || (range % 4) "
       "AS kind FROM range(24)\"");
  Lake("delete sales.eu.orders --where 'id < 5'");

  const auto sql_server = Serve("sql", {"--warehouse", warehouse_}, /*rest=*/true);
  ASSERT_GT(sql_server.second, 0);
  const auto rest_server = Serve("rest", {"--catalog", "rest+http://127.0.0.1:" + std::to_string(sql_server.second)}, false);
  const auto file_server = Serve("file", {"--catalog", "file://" + warehouse_, "--poll-interval", "0.1", "--poll-state",
                                          tmp_.Path("file-poll.db")},
                                 false);
  const std::string s3_prefix = CopyLakeToS3();
  ASSERT_FALSE(s3_prefix.empty());
  const auto s3_server = Serve("s3", {"--catalog", s3_prefix, "--poll-interval", "60", "--poll-state",
                                      tmp_.Path("s3-poll.db")},
                               false);
  ASSERT_GT(rest_server.first, 0);
  ASSERT_GT(file_server.first, 0);
  ASSERT_GT(s3_server.first, 0);
  EXPECT_TRUE(read_only_["s3"]);
  EXPECT_FALSE(read_only_["rest"]) << "a REST catalog takes commits";
  EXPECT_TRUE(read_only_["file"]) << "a folder of tables is served read-only";

  const std::vector<std::string> suite = {
      "SELECT count(*), sum(amount) FROM \"sales.eu\".orders",
      "SELECT region, count(*) FROM \"sales.eu\".orders GROUP BY region ORDER BY region",
      "SELECT id FROM \"sales.eu\".orders WHERE id BETWEEN 4 AND 8 ORDER BY id",
      "SELECT kind, count(*), min(ts) FROM ops.events GROUP BY kind ORDER BY kind",
      "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema IN ('ops', 'sales.eu') "
      "ORDER BY ALL",
  };
  for (const std::string& q : suite) {
    SCOPED_TRACE(q);
    Json expected = Query(sql_server.first, q);
    ASSERT_TRUE(expected.is_array() && !expected.empty()) << expected.dump();
    EXPECT_EQ(Query(rest_server.first, q), expected) << "through the REST connector";
    EXPECT_EQ(Query(file_server.first, q), expected) << "through the folder of tables";
    EXPECT_EQ(Query(s3_server.first, q), expected) << "through the copy on S3";
  }
  EXPECT_EQ(Query(sql_server.first, suite[0])[0][0], "55");

  // Writes: the folder's server refuses them; the REST connector's server commits through REST.
  EXPECT_THAT(Query(file_server.first, "INSERT INTO ops.events VALUES (now(), 'x')", false, true).get<std::string>(),
              ::testing::HasSubstr("read-only"));
  EXPECT_EQ(Query(rest_server.first, "INSERT INTO ops.events VALUES (TIMESTAMPTZ '2026-02-01 00:00:00+00', 'rest')", true, true),
            Json::parse(R"([["1"]])"));

  // Commit events over the folder: a commit made beside it (the lake's CLI) is polled and
  // streamed by the file server. Its polled log starts from what it first saw, so the REST
  // insert above is its first entry; the watch replays after it (a watch "from now" could
  // connect after the poll saw the ingest) and follows only the table ingested.
  int64_t head = 0;
  ASSERT_TRUE(skade::testing::PollUntil([&] { return (head = PolledHead(tmp_.Path("file-poll.db"))) >= 1; },
                                        20s, 20ms))
      << "the file server never polled the REST insert: head " << head;
  std::unique_ptr<Child> watch = Child::Start(
      {skade::testing::CliPath(), "watch", "--server", "127.0.0.1:" + std::to_string(file_server.first), "--json",
       "--count", "1", "--after", std::to_string(head), "--table", "sales.eu.orders"},
      tmp_.Path("watch.err"));
  ASSERT_NE(watch, nullptr);
  Lake("ingest sales.eu.orders --sql \"SELECT 1000 + range AS id, 0.0 AS amount, 'west' AS region FROM range(3)\"");
  Json event = Json::parse(watch->ReadLine(20s), nullptr, false);
  ASSERT_TRUE(event.is_object()) << testing::ReadFileOrDie(tmp_.Path("watch.err")) << Log("file");
  EXPECT_EQ(event["table"], "sales.eu.orders");
  EXPECT_EQ(event["operation"], "append");
  EXPECT_EQ(event["added_records"], 3);
  EXPECT_EQ(watch->Stop(0, 10s), 0);
  EXPECT_EQ(Query(file_server.first, suite[0])[0][0], "58") << "the folder's server reads the new snapshot";
}

}  // namespace
}  // namespace skade
