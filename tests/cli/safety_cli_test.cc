// The CLI as a hostile user drives it: names that would escape their folder, predicates and
// column definitions that would smuggle SQL, statements that are not allowed. Each is refused
// (changing nothing) or does exactly what it says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "skade/events/bus.h"
#include "skade/events/watcher.h"
#include "skade/io/file_io.h"
#include "tests/cli/lake_cli_fixture.h"
#include "tests/testing/build_paths.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
using testing::ShellQuote;

class SafetyCliTest : public LakeCliTest {
 protected:
  std::string Count() { return Lines(SkadeOk("scan demo.t --count")).back(); }
};

TEST_F(SafetyCliTest, NamesThatAreNotOnePathComponentAreRefused) {
  SkadeOk("ns create demo");
  for (const std::string& ns : {std::string("a/b"), std::string("a\\b"), std::string("a\tb"), std::string("a\nb"),
                                std::string("x.") , std::string(".."), std::string(300, 'n'),
                                std::string("a\x01" "b"), std::string("bad\xff" "utf8")}) {
    ExpectRefused("ns create " + ShellQuote(ns), "InvalidArgument");
  }
  for (const std::string& table : {std::string("demo.a/b"), std::string("demo./x"), std::string("demo.a\\b"),
                                   std::string("demo.a\nb"), std::string("demo.."), std::string("demo.") + std::string(256, 't'),
                                   std::string("demo.x\x7f")}) {
    ExpectRefused("create " + ShellQuote(table) + " --schema 'id BIGINT'", "InvalidArgument");
  }
  // SQL sees quoted names; the same rule refuses them there.
  ExpectRefused("sql " + ShellQuote("CREATE TABLE demo.\"../x\" (id BIGINT)"), "InvalidArgument");
  ExpectRefused("sql " + ShellQuote("CREATE TABLE demo.\"a/b\" (id BIGINT)"), "InvalidArgument");
  ExpectRefused("sql " + ShellQuote("CREATE SCHEMA \"x/y\""), "InvalidArgument");
  EXPECT_THAT(Lines(SkadeOk("ns list")), ::testing::ElementsAre("demo"));
}

TEST_F(SafetyCliTest, PredicatesCannotWidenOrBreakOutOfTheirStatement) {
  CreateDemoRows();
  const std::string widen = ShellQuote("id=-1) OR (1=1");
  ExpectRefused("delete demo.t --where " + widen, "InvalidArgument");
  ExpectRefused("delete demo.t --where " + ShellQuote("id = 5 /*"), "InvalidArgument");
  ExpectRefused("delete demo.t --where " + ShellQuote("id = 5; DELETE FROM demo.t"), "InvalidArgument");
  ExpectRefused("delete demo.t --where " + ShellQuote("id IN (SELECT id FROM demo.t)"), "InvalidArgument");
  ExpectRefused("scan demo.t --count --where " + widen, "InvalidArgument");
  ExpectRefused("ingest demo.t --mode overwrite --where " + widen + " --sql " +
                    ShellQuote("SELECT 100 AS id, 'x' AS s, 1.0 AS amount, DATE '2024-01-01' AS day"),
                "InvalidArgument");
  EXPECT_EQ(Count(), "10");
  // A trailing comment is only a comment: exactly the rows the predicate denotes go.
  SkadeOk("delete demo.t --where " + ShellQuote("id < 3 -- ) OR (true"));
  EXPECT_EQ(Count(), "7");
  SkadeOk("delete demo.t --where " + ShellQuote("s = $$s3$$ OR s = 's' || '4'"));
  EXPECT_EQ(Count(), "5");
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count --where " + ShellQuote("s = 'it''s' OR id >= 8"))).back(), "2");
}

TEST_F(SafetyCliTest, ColumnDefinitionsCannotRunStatements) {
  SkadeOk("ns create demo");
  std::string pwned = tmp_.Path("pwned.csv");
  ExpectRefused("create demo.t --schema " +
                    ShellQuote("id BIGINT); COPY (SELECT 42) TO '" + pwned + "'; CREATE TABLE y (a INT"),
                "InvalidArgument");
  ExpectRefused("create demo.t --schema " +
                    ShellQuote("a VARCHAR DEFAULT E'\\''); COPY (SELECT 42) TO '" + pwned +
                               "'; CREATE TABLE z (b VARCHAR DEFAULT E'\\''"),
                "InvalidArgument");
  ExpectRefused("create demo.t --schema " + ShellQuote("a INT DEFAULT 1"), "InvalidArgument", "DEFAULT");
  ExpectRefused("create demo.t --schema " + ShellQuote("a INT CHECK (a > 0)"), "InvalidArgument");
  EXPECT_FALSE(std::filesystem::exists(pwned));
  // PRIMARY KEY becomes the identifier fields.
  SkadeOk("create demo.k --schema " + ShellQuote("id BIGINT, region VARCHAR, PRIMARY KEY (id)"));
  Json inspect = SkadeJson("inspect demo.k --json");
  EXPECT_EQ(inspect["metadata"]["schemas"][0]["identifier-field-ids"], Json::parse("[1]"));
}

TEST_F(SafetyCliTest, SqlRunsOneStatementOfAnAllowedKind) {
  CreateDemoRows();
  std::string pwned = tmp_.Path("pwned.csv");
  ExpectRefused("sql " + ShellQuote("SELECT 1; COPY (SELECT 42) TO '" + pwned + "'"), "InvalidArgument");
  ExpectRefused("sql " + ShellQuote("ATTACH '" + tmp_.Path("x.db") + "' AS x"), "InvalidArgument", "ATTACH");
  ExpectRefused("sql " + ShellQuote("CREATE MACRO m(x) AS x"), "InvalidArgument");
  ExpectRefused("sql " + ShellQuote("SET threads = 1"), "InvalidArgument");
  EXPECT_FALSE(std::filesystem::exists(pwned));
  // Writes commit through the Iceberg write path, with exact counts.
  EXPECT_THAT(SkadeOk("sql " + ShellQuote("INSERT INTO demo.t VALUES (10, 'ten', 15.0, DATE '2024-02-01')")),
              HasSubstr("INSERT 1"));
  EXPECT_THAT(SkadeOk("sql " + ShellQuote("DELETE FROM demo.t WHERE id >= 8")), HasSubstr("DELETE 3"));
  EXPECT_EQ(Count(), "8");
  Json log = Log();
  EXPECT_EQ(log.back()["operation"], "delete");
  // COPY … TO exports a query.
  std::string out = tmp_.Path("out.csv");
  SkadeOk("sql " + ShellQuote("COPY (SELECT id FROM demo.t ORDER BY id) TO '" + out + "' (HEADER false)"));
  EXPECT_EQ(testing::ReadFileOrDie(out), "0\n1\n2\n3\n4\n5\n6\n7\n");
}

// A writer killed after writing its metadata file but before the catalog commit leaves a file
// nobody acknowledged: readers of the table folder (version-hint.text) and of the catalog must
// both keep showing the committed table, round after round; gc then removes the leftovers.
TEST_F(SafetyCliTest, KilledCommitIsInvisibleToFolderAndCatalogReaders) {
  CreateDemoRows();
  const std::string folder = warehouse_ + "/demo/t";
  const std::string insert =
      "ingest demo.t --sql " + ShellQuote("SELECT 100 AS id, 'x' AS s, 1.0 AS amount, DATE '2024-01-01' AS day");
  auto metadata_files = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(folder + "/metadata")) {
      std::string name = e.path().filename().string();
      n += name.size() > 14 && name.substr(name.size() - 14) == ".metadata.json";
    }
    return n;
  };
  const int committed_files = metadata_files();
  // 100 rounds; the sanitizer run (much slower processes) sets SKADE_CRASH_ROUNDS lower.
  int kRounds = 100;
  if (const char* r = std::getenv("SKADE_CRASH_ROUNDS")) kRounds = std::max(10, std::atoi(r));
  for (int round = 0; round < kRounds; ++round) {
    testing::ProcessResult killed = testing::RunProcess(
        "SKADE_CRASH_POINT=commit.after_metadata_write " + std::string(skade::testing::CliPath()) + " --warehouse " +
        ShellQuote(warehouse_) + " " + insert);
    ASSERT_NE(killed.exit_code, 0) << "round " << round << ": the crash point did not fire\n" << killed.out;
    // The folder reader follows the hint to the committed version, never the newest file.
    ASSERT_EQ(Lines(SkadeOk("scan " + ShellQuote(folder) + " --count")).back(), "10") << "round " << round;
    if (round % 10 == 0) {
      ASSERT_EQ(Count(), "10") << "round " << round;
    }
  }
  EXPECT_EQ(metadata_files(), committed_files + kRounds);
  EXPECT_EQ(Log().size(), 2u);  // create + the first ingest
  // gc removes what the killed writers left (data, manifests, the unacknowledged metadata).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every file strictly older than now
  SkadeOk("gc demo.t --older-than " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                         std::chrono::system_clock::now().time_since_epoch())
                                                         .count()));
  EXPECT_EQ(metadata_files(), committed_files);
  EXPECT_EQ(Count(), "10");
  // A commit after all that moves both readers.
  SkadeOk(insert);
  EXPECT_EQ(Lines(SkadeOk("scan " + ShellQuote(folder) + " --count")).back(), "11");
  EXPECT_EQ(Count(), "11");
}

// A writer killed after its commit but before it moved version-hint.text leaves folder readers
// one version behind; a running follower of the log (`serve`'s commit watcher) moves the hint.
TEST_F(SafetyCliTest, AFollowerMovesTheHintAWriterKilledAfterItsCommitLeftBehind) {
  CreateDemoRows();
  const std::string folder = warehouse_ + "/demo/t";
  const std::string hint = folder + "/metadata/version-hint.text";
  auto killed_insert = [&](int id) {
    testing::ProcessResult killed = testing::RunProcess(
        "SKADE_CRASH_POINT=commit.after_log " + std::string(skade::testing::CliPath()) + " --warehouse " +
        ShellQuote(warehouse_) + " ingest demo.t --sql " +
        ShellQuote("SELECT " + std::to_string(id) + " AS id, 'x' AS s, 1.0 AS amount, DATE '2024-01-01' AS day"));
    ASSERT_NE(killed.exit_code, 0) << "the crash point did not fire\n" << killed.out;
  };
  // Alone, the killed writer's commit is in the catalog but not in the hint.
  const std::string before = testing::ReadFileOrDie(hint);
  ASSERT_NO_FATAL_FAILURE(killed_insert(100));
  EXPECT_EQ(Count(), "11");
  EXPECT_EQ(testing::ReadFileOrDie(hint), before) << "the crash point fired after the hint";
  EXPECT_EQ(Lines(SkadeOk("scan " + ShellQuote(folder) + " --count")).back(), "10");

  // With a follower: the next killed writer's commit reaches the hint.
  std::unique_ptr<io::FileIO> io = io::MakeLocalFileIO();
  catalog::SqlCatalogOptions options;
  options.uri = warehouse_ + "/catalog.db";
  options.warehouse = warehouse_;
  auto cat = catalog::OpenSqlCatalog(options, *io);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  events::Bus bus;
  auto watcher = events::Watcher::Start(**cat, options.uri, bus);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  ASSERT_NO_FATAL_FAILURE(killed_insert(101));
  auto current = (*cat)->LoadTable(*catalog::TableIdent::Parse("demo.t"));
  ASSERT_TRUE(current.ok());
  // The hint names the file by its stem (version-hint.h).
  std::string name = current->metadata_location.substr(current->metadata_location.rfind('/') + 1);
  name = name.substr(0, name.find(".metadata.json"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (testing::ReadFileOrDie(hint).find(name) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_THAT(testing::ReadFileOrDie(hint), HasSubstr(name));
  EXPECT_EQ(Lines(SkadeOk("scan " + ShellQuote(folder) + " --count")).back(), "12");
}

// Folder reads while another process commits never fail and never go backwards.
TEST_F(SafetyCliTest, FolderReadsDuringCommitsNeverFail) {
  CreateDemoRows();
  const std::string folder = warehouse_ + "/demo/t";
  std::string loop;
  for (int i = 0; i < 15; ++i) {
    loop += std::string(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " ingest demo.t --sql " +
            ShellQuote("SELECT " + std::to_string(100 + i) + " AS id, 'x' AS s, 1.0 AS amount, DATE '2024-01-01' AS day") +
            "; ";
  }
  std::string done = tmp_.Path("writer.done");
  testing::RunProcess("(" + loop + "touch " + ShellQuote(done) + ") >/dev/null 2>&1 &");
  int64_t last = 10;
  int reads = 0;
  while (!fs::exists(done) || reads < 3) {
    testing::ProcessResult r = Skade("scan " + ShellQuote(folder) + " --count");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int64_t n = std::stoll(Lines(r.out).back());
    EXPECT_GE(n, last);
    EXPECT_LE(n, 25);
    last = n;
    ++reads;
    ASSERT_LT(reads, 2000) << "the writer did not finish";
  }
  EXPECT_EQ(Lines(SkadeOk("scan " + ShellQuote(folder) + " --count")).back(), "25");
}

// Names that map to one folder (a table and a namespace of one name, tables named like a
// table's own folders, names differing in case) get disjoint locations on every front the CLI
// has (create, SQL CREATE TABLE, ingest into them), and gc on each table leaves every other
// table's rows exactly as they were.
TEST_F(SafetyCliTest, OverlappingNamesGetDisjointLocationsAndGcKeepsOtherTablesWhole) {
  SkadeOk("ns create sales");
  SkadeOk("create sales.eu --schema 'id BIGINT, v VARCHAR'");
  SkadeOk("ns create sales.eu");
  SkadeOk("create sales.eu.data --schema 'id BIGINT, v VARCHAR'");
  SkadeOk("sql " + ShellQuote("CREATE TABLE \"sales.eu\".metadata (id BIGINT, v VARCHAR)"));
  SkadeOk("sql " + ShellQuote("CREATE TABLE sales.\"EU\" (id BIGINT, v VARCHAR)"));
  SkadeOk("ns create sales.eu.t");
  SkadeOk("create sales.eu.t.x --schema 'id BIGINT, v VARCHAR'");
  const std::vector<std::string> tables = {"sales.eu", "sales.eu.data", "sales.eu.metadata", "sales.EU",
                                           "sales.eu.t.x"};
  std::vector<std::string> locations;
  for (size_t i = 0; i < tables.size(); ++i) {
    SkadeOk("ingest " + ShellQuote(tables[i]) + " --sql " +
            ShellQuote("SELECT range AS id, '" + tables[i] + "' || range AS v FROM range(" + std::to_string(5 * (i + 1)) + ")"));
    Json inspect = SkadeJson("inspect " + ShellQuote(tables[i]) + " --json");
    locations.push_back(inspect["metadata"]["location"].get<std::string>());
  }
  for (size_t i = 0; i < locations.size(); ++i) {
    for (size_t j = 0; j < locations.size(); ++j) {
      if (i == j) continue;
      std::string a = locations[i] + "/", b = locations[j] + "/";
      for (auto& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_NE(a.rfind(b, 0), 0u) << tables[i] << " at " << locations[i] << " lies in " << tables[j] << " at "
                                   << locations[j];
    }
  }
  // "a.b.t" in SQL: the namespace is one quoted schema name.
  auto sql_name = [](const std::string& t) {
    size_t dot = t.rfind('.');
    return "\"" + t.substr(0, dot) + "\".\"" + t.substr(dot + 1) + "\"";
  };
  auto hashes = [&] {
    std::vector<std::string> out;
    for (const std::string& t : tables) {
      out.push_back(Lines(SkadeOk("sql " + ShellQuote("SELECT count(*) || ':' || sum(hash(id, v)) FROM " + sql_name(t)) +
                                  " --format csv"))
                        .back());
    }
    return out;
  };
  const std::vector<std::string> before = hashes();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every file strictly older than now
  const int64_t later = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  for (const std::string& t : tables) SkadeOk("gc " + ShellQuote(t) + " --older-than " + std::to_string(later));
  EXPECT_EQ(hashes(), before);
  for (size_t i = 0; i < tables.size(); ++i) EXPECT_EQ(Lines(SkadeOk("scan " + ShellQuote(tables[i]) + " --count")).back(), std::to_string(5 * (i + 1)));
}

// A filter that forgot its comparison ("amount" for "amount < 0") matched every row DuckDB
// casts to true, and a delete lost the table. Filters must be conditions, on every command.
TEST_F(SafetyCliTest, FiltersThatAreNotConditionsAreRefused) {
  CreateDemoRows();
  for (const char* where : {"amount", "id", "1", "'yes'", "s", "day", "NULL", "id + 1"}) {
    SCOPED_TRACE(where);
    ExpectRefused("delete demo.t --where " + ShellQuote(where), "InvalidArgument", "not BOOLEAN");
    ExpectRefused("scan demo.t --count --where " + ShellQuote(where), "InvalidArgument", "not BOOLEAN");
    ExpectRefused("sql " + ShellQuote(std::string("DELETE FROM demo.t WHERE ") + where), "InvalidArgument", "not BOOLEAN");
  }
  ExpectRefused("sql " + ShellQuote("UPDATE demo.t SET amount = 0 WHERE 0"), "InvalidArgument", "not BOOLEAN");
  EXPECT_EQ(Count(), "10");
  // Conditions still work, including ones DuckDB types as BOOLEAN through functions.
  SkadeOk("delete demo.t --where " + ShellQuote("amount < 3 AND starts_with(s, 's')"));
  EXPECT_EQ(Count(), "8");
  SkadeOk("delete demo.t --where " + ShellQuote("coalesce(id = 9, false)"));
  EXPECT_EQ(Count(), "7");
}

// A maintenance command with nothing to do says so and names no commit (no "commit_seq 0").
TEST_F(SafetyCliTest, MaintenanceWithNothingToDoReportsNoCommit) {
  CreateDemoRows();
  SkadeOk("compact demo.t --small-file-bytes 1000000000");  // one file: nothing to merge after this
  const std::string log_before = SkadeOk("log --json");
  const std::string text = SkadeOk("compact demo.t --small-file-bytes 1000000000");
  EXPECT_THAT(text, HasSubstr("nothing to commit on demo.t"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("commit 0")));
  Json j = Json::parse(SkadeOk("compact demo.t --small-file-bytes 1000000000 --json"));
  EXPECT_EQ(j["committed"], false);
  EXPECT_TRUE(j["commit_seq"].is_null());
  Json expired = Json::parse(SkadeOk("expire demo.t --retain-last 100 --json"));
  EXPECT_TRUE(expired["commit_seq"].is_null()) << expired.dump();
  EXPECT_EQ(SkadeOk("log --json"), log_before);
}

}  // namespace
}  // namespace skade::cli
