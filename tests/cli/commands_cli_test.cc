// The command line as a new user meets it (issue 33, items 5, 6 and 8): --version, unknown
// commands with a suggestion, options that take one value, errors without skade's internal
// SQL, semantics that match the help text (delete-keys, watch --after 0, log, snapshots,
// changes, lineage show, watch errors), and the small ones (partition values, watch times,
// namespace properties, CSV delimiter, folders and globs as input, repeated files).
#include <chrono>
#include <csignal>
#include <filesystem>
#include <regex>
#include <string>

#include "skade/cli/messages.h"
#include "tests/cli/lake_cli_fixture.h"
#include "tests/testing/child_process.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

class CommandsCliTest : public LakeCliTest {
 protected:
  // Runs skade without --warehouse (for commands that need no lake).
  static testing::ProcessResult Bare(const std::string& args) {
    return testing::RunProcess(std::string(skade::testing::CliPath()) + " " + args);
  }

  // Runs skade on this test's warehouse, killed after `seconds` (a watch that would wait forever
  // fails the test instead of hanging it).
  testing::ProcessResult SkadeWithin(int seconds, const std::string& args) {
    return testing::RunProcess("timeout " + std::to_string(seconds) + " " + std::string(skade::testing::CliPath()) +
                               " --warehouse " + testing::ShellQuote(warehouse_) + " " + args);
  }

  // `skade events-serve` on this test's warehouse (a free port); `*address` gets its
  // 127.0.0.1:PORT. Null (the test failed) if it does not say where it listens.
  std::unique_ptr<testing::ChildProcess> StartCommitServer(std::string* address) {
    auto server = testing::ChildProcess::Start(
        {skade::testing::CliPath(), "--warehouse", warehouse_, "events-serve", "--port", "0"});
    if (server == nullptr) return nullptr;
    const std::string listening = server->ReadLine(std::chrono::seconds(20));
    EXPECT_THAT(listening, HasSubstr("listening on 127.0.0.1:"));
    if (listening.find("127.0.0.1:") == std::string::npos) return nullptr;
    *address = listening.substr(listening.find("127.0.0.1:"));
    return server;
  }

  // The data lines of a listing (the lines after its header).
  static std::vector<std::string> Rows(const std::string& listing) {
    std::vector<std::string> lines = testing::Lines(listing);
    if (!lines.empty()) lines.erase(lines.begin());
    return lines;
  }

  static constexpr const char* kInternal = "__skade";
};

// ---- item 5: commands and options ----

TEST_F(CommandsCliTest, VersionPrintsTheProjectVersion) {
  testing::ProcessResult r = Bare("--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("skade [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(CommandsCliTest, AnUnknownCommandIsNamedWithTheNearestOne) {
  testing::ProcessResult r = Skade("tabels");
  EXPECT_EQ(r.exit_code, 109);
  EXPECT_EQ(r.err, "skade: unknown command 'tabels'; did you mean 'tables'?\n");
  EXPECT_EQ(r.out, "");

  // Global options with values before it are skipped; nested commands are checked too.
  r = Bare("--log-level warn --warehouse /nonexistent snapshot demo.t");
  EXPECT_EQ(r.exit_code, 109);
  EXPECT_EQ(r.err, "skade: unknown command 'snapshot'; did you mean 'snapshots'?\n");
  r = Skade("lineage shwo demo.t");
  EXPECT_EQ(r.exit_code, 109);
  EXPECT_EQ(r.err, "skade: unknown command 'shwo' of 'lineage'; did you mean 'show'?\n");
  r = Skade("frobnicate");
  EXPECT_EQ(r.exit_code, 109);
  EXPECT_EQ(r.err, "skade: unknown command 'frobnicate'; run with --help for the commands\n");
  EXPECT_FALSE(fs::exists(warehouse_)) << "a refused command created a lake";
  // Flags take no value: the word after one is the command, wherever the flag stands.
  for (const std::string& args : {std::string("-q ns create a"), std::string("--quiet ns create b"),
                                  std::string("ns create c -q")}) {
    r = Skade(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
  }
  r = Bare("-q --warehouse " + testing::ShellQuote(warehouse_) + " ns list");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("a"));
}

TEST_F(CommandsCliTest, NearestNameCountsASwapAsOneEdit) {
  EXPECT_EQ(EditDistance("tabels", "tables"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(NearestName("tabels", {"scan", "tables", "tags"}), "tables");
  EXPECT_EQ(NearestName("zzzzzz", {"scan", "tables"}), std::nullopt);
}

TEST_F(CommandsCliTest, AnUnknownLogLevelIsAnErrorListingTheLevels) {
  CreateDemo();
  testing::ProcessResult r = Skade("--log-level foo tables");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--log-level: foo not in {debug,info,warn,warning,error,off}"));
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(SkadeOk("--log-level error tables"), "demo.t\n");
}

TEST_F(CommandsCliTest, KeyTakesOneValueAndLeavesTheFilesAlone) {
  CreateDemoRows();
  SkadeOk("alter demo.t identifier-fields id");
  std::string csv = File("up.csv", "id,s\n3,three\n11,eleven\n");
  std::string out = SkadeOk("ingest demo.t --mode upsert --key id " + testing::ShellQuote(csv));
  EXPECT_THAT(out, HasSubstr("overwrite demo.t: +2 records"));
  // A comma list and repeated --key both give several columns.
  out = SkadeOk("ingest demo.t --mode upsert --key id,s " + testing::ShellQuote(csv));
  EXPECT_THAT(out, HasSubstr("+2 records"));
  out = SkadeOk("ingest demo.t --mode upsert --key id --key s " + testing::ShellQuote(csv));
  EXPECT_THAT(out, HasSubstr("+2 records"));
  EXPECT_EQ(SkadeOk("scan demo.t --count"), "11\n");
}

TEST_F(CommandsCliTest, ALossyValueHintsLenientCastsOnlyWhereTheOptionExists) {
  CreateDemo();
  testing::ProcessResult ingest = Skade("ingest demo.t --sql 'SELECT 1.5 AS id'");
  EXPECT_EQ(ingest.exit_code, 1);
  EXPECT_THAT(ingest.err, HasSubstr("value 1.5 is not exactly representable as BIGINT"));
  EXPECT_THAT(ingest.err, HasSubstr("--cast lenient"));
  EXPECT_THAT(SkadeOk("ingest demo.t --cast lenient --sql 'SELECT 1.5 AS id'"), HasSubstr("+1 records"));

  testing::ProcessResult sql = Skade("sql 'INSERT INTO demo.t (id) VALUES (2.5)'");
  EXPECT_EQ(sql.exit_code, 1);
  EXPECT_THAT(sql.err, HasSubstr("value 2.5 is not exactly representable as BIGINT (cast it in the query)"));
  EXPECT_THAT(sql.err, Not(HasSubstr("--cast")));
}

TEST_F(CommandsCliTest, WhereErrorsNameTheUsersPredicateNotSkadesSql) {
  CreateDemoRows();
  for (const std::string& args : {std::string("delete demo.t --where 'nope = 1'"),
                                  std::string("ingest demo.t --mode overwrite --where 'nope = 1' "
                                              "--sql 'SELECT 1 AS id'"),
                                  std::string("scan demo.t --where 'nope = 1'"),
                                  std::string("delete demo.t --where \"s + 1 = 2\"")}) {
    testing::ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_THAT(r.err, Not(HasSubstr(kInternal))) << args << "\n" << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("skade-scan"))) << args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("Binder Error")) << args;
  }
  testing::ProcessResult r = Skade("delete demo.t --where 'nope = 1'");
  EXPECT_THAT(r.err, HasSubstr("--where 'nope = 1': Binder Error: Referenced column \"nope\" not found"));
  EXPECT_THAT(r.err, HasSubstr("the table's columns: id, s, amount, day"));
  EXPECT_EQ(SkadeOk("scan demo.t --count"), "10\n") << "nothing was deleted";
}

TEST_F(CommandsCliTest, PublicMessageDropsSkadesSqlAndKeepsTheUsersWords) {
  const std::string duck =
      "Binder Error: Referenced column \"nope\" not found in FROM clause!\n"
      "Candidate bindings: \"__skade_pos\", \"amount\"\n\n"
      "LINE 1: SELECT __skade_file, count(*) FILTER (WHERE (((nope = 1)))) FROM (/*skade-scan:1*/ SELECT ...\n"
      "                                                    ^";
  EXPECT_EQ(PublicMessage(duck),
            "Binder Error: Referenced column \"nope\" not found in FROM clause!\n"
            "Candidate bindings: \"amount\"");
  EXPECT_EQ(PublicMessage("Conversion Error: could not convert __skade_src.id"),
            "Conversion Error: could not convert id");
  EXPECT_EQ(PublicMessage("plain text LINE 1: x"), "plain text LINE 1: x");
}

// ---- item 6: semantics that match the words ----

TEST_F(CommandsCliTest, DeleteKeysDefaultsToTheIdentifierFields) {
  CreateDemoRows();
  testing::ProcessResult r = Skade("ingest demo.t --mode delete-keys --sql 'SELECT 4 AS id'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--mode delete-keys needs key columns: give --key"));
  EXPECT_THAT(r.err, HasSubstr("skade alter demo.t identifier-fields"));
  SkadeOk("alter demo.t identifier-fields id");
  std::string out = SkadeOk("ingest demo.t --mode delete-keys --sql 'SELECT 4 AS id UNION ALL SELECT 5'");
  EXPECT_THAT(out, HasSubstr("-2 rows by delete files"));
  EXPECT_EQ(SkadeOk("scan demo.t --count"), "8\n");
}

TEST_F(CommandsCliTest, WatchAfterZeroReplaysFromTheFirstCommit) {
  CreateDemoRows();  // create = commit 1, append = commit 2 (ns create commits nothing)
  testing::ProcessResult r = SkadeWithin(60, "watch --after 0 --count 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = testing::Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(Json::parse(lines[0])["commit_seq"], 1);
  EXPECT_EQ(Json::parse(lines[1])["commit_seq"], 2);
  EXPECT_EQ(Log()[0]["commit_seq"], 1) << "log --after 0 starts at the same commit";

  // Over the commit stream the same.
  std::string address;
  std::unique_ptr<testing::ChildProcess> server = StartCommitServer(&address);
  ASSERT_NE(server, nullptr);
  r = SkadeWithin(60, "watch --server " + address + " --after 0 --count 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = testing::Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 14), "1 demo.t creat");
  EXPECT_EQ(lines[1].substr(0, 15), "2 demo.t append");
  EXPECT_EQ(server->Stop(SIGTERM, 10s), 0);
}

TEST_F(CommandsCliTest, WatchTimesAreUtcInstants) {
  CreateDemoRows();
  testing::ProcessResult r = SkadeWithin(60, "watch --after 1 --count 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex instant(" at=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z ");
  EXPECT_TRUE(std::regex_search(r.out, instant))
      << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("at_us=")));
  Json event = Json::parse(SkadeOk("watch --after 1 --count 1 --json"));
  EXPECT_TRUE(std::regex_match(event["committed_at"].get<std::string>(),
                               std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z")))
      << event.dump();
}

TEST_F(CommandsCliTest, WatchSaysWhenItCannotReachTheServerOrTheTable) {
  CreateDemo();
  // A port nothing listens on: an error at once, not a wait.
  const auto start = std::chrono::steady_clock::now();
  testing::ProcessResult r = SkadeWithin(60, "watch --server 127.0.0.1:1 --count 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("skade: Unavailable: cannot reach the commit stream at 127.0.0.1:1"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  r = SkadeWithin(60, "watch --table demo.nope --count 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--table demo.nope: no such table"));
  // The same through a server: the first call asks that the table exist.
  std::string address;
  std::unique_ptr<testing::ChildProcess> server = StartCommitServer(&address);
  ASSERT_NE(server, nullptr);
  const auto asked = std::chrono::steady_clock::now();
  r = SkadeWithin(60, "watch --server " + address + " --table demo.nope --count 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("table demo.nope does not exist at " + address));
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 30s);
  EXPECT_EQ(server->Stop(SIGTERM, 10s), 0);
}

TEST_F(CommandsCliTest, LogShowsTheNewestEntriesAndFiltersByTable) {
  CreateDemoRows();  // demo.t: commits 1, 2
  SkadeOk("create demo.u --schema 'id BIGINT'");  // 3
  SkadeOk("ingest demo.u --sql 'SELECT 1 AS id'");  // 4
  SkadeOk("ingest demo.t --sql 'SELECT 100 AS id'");  // 5
  Json newest = SkadeJson("log --limit 2 --json");
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0]["commit_seq"], 4);
  EXPECT_EQ(newest[1]["commit_seq"], 5);
  Json table = SkadeJson("log demo.t --json");
  ASSERT_EQ(table.size(), 3u);
  for (const Json& e : table) EXPECT_EQ(e["table"], "demo.t");
  Json table_newest = SkadeJson("log demo.t --limit 1 --json");
  ASSERT_EQ(table_newest.size(), 1u);
  EXPECT_EQ(table_newest[0]["commit_seq"], 5);
  EXPECT_EQ(Rows(SkadeOk("log demo.u --after 3")).size(), 1u);
  // With --after, --limit pages forward from the cursor.
  Json page = SkadeJson("log --after 1 --limit 2 --json");
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0]["commit_seq"], 2);
  EXPECT_EQ(page[1]["commit_seq"], 3);
  EXPECT_EQ(SkadeJson("log demo.t --after 1 --limit 1 --json")[0]["commit_seq"], 2);
}

TEST_F(CommandsCliTest, SnapshotsSayTheirCountsArePhysicalRecords) {
  CreateDemoRows();
  SkadeOk("props demo.t --set write.delete.mode=merge-on-read");
  SkadeOk("delete demo.t --where 'id < 3'");
  std::string out = SkadeOk("snapshots demo.t");
  std::vector<std::string> lines = testing::Lines(out);
  ASSERT_GE(lines.size(), 3u) << out;
  EXPECT_THAT(lines[0], HasSubstr("added_records  deleted_records  total_records  delete_records"));
  EXPECT_THAT(lines.back(), HasSubstr("records are physical rows in data files"));
  EXPECT_THAT(lines.back(), HasSubstr("`skade scan demo.t --count` counts the live rows"));
  EXPECT_EQ(SkadeOk("scan demo.t --count"), "7\n");
  // The commit summary says the same: rows gone by delete files, records added.
  EXPECT_THAT(SkadeOk("delete demo.t --where 'id = 5'"), HasSubstr("+0 records in 0 files"));
}

TEST_F(CommandsCliTest, ChangesOverANonAppendPointsToChangelog) {
  CreateDemoRows();
  const int64_t first = Log()[1]["snapshot_id"].get<int64_t>();
  SkadeOk("delete demo.t --where 'id = 1'");
  testing::ProcessResult r = Skade("changes demo.t --from " + std::to_string(first));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("is a delete, not an append"));
  EXPECT_THAT(r.err, HasSubstr("add --changelog"));
  EXPECT_EQ(r.out, "");
  SkadeOk("changes demo.t --changelog --from " + std::to_string(first));
}

TEST_F(CommandsCliTest, LineageShowOfAnUnknownTableIsAnError) {
  CreateDemoRows();
  testing::ProcessResult r = Skade("lineage show demo.nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("skade: NotFound: table demo.nope does not exist"));
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(SkadeOk("lineage show demo.t").empty());
}

// ---- item 8: small ones ----

TEST_F(CommandsCliTest, InspectShowsTimePartitionsInHumanForm) {
  SkadeOk("ns create demo");
  SkadeOk("create demo.p --schema 'a TIMESTAMP, b TIMESTAMP, c DATE, d DATE' "
          "--partition-by 'day(a), hour(b), month(c), year(d)'");
  SkadeOk("ingest demo.p --sql \"SELECT TIMESTAMP '2024-01-01 10:30:00' AS a, TIMESTAMP '2024-01-01 10:30:00' AS b, "
          "DATE '2024-02-03' AS c, DATE '2023-12-31' AS d\"");
  std::string out = SkadeOk("inspect demo.p --no-page-check");
  EXPECT_THAT(out, HasSubstr("a_day=2024-01-01, b_hour=2024-01-01-10, c_month=2024-02, d_year=2023")) << out;
  EXPECT_THAT(out, Not(HasSubstr("bytes  a_day=19723"))) << "the listing shows the ordinal";
  Json j = SkadeJson("inspect demo.p --json --no-page-check");
  EXPECT_THAT(j.dump(), HasSubstr("\"a_day\":\"2024-01-01\""));
}

// Identifier fields are what Flight SQL answers as a table's primary key; inspect names them.
TEST_F(CommandsCliTest, InspectNamesTheIdentifierFields) {
  CreateDemo();
  EXPECT_THAT(SkadeOk("inspect demo.t --no-page-check"), Not(HasSubstr("identifier fields")));
  SkadeOk("alter demo.t identifier-fields id");
  std::string out = SkadeOk("inspect demo.t --no-page-check");
  EXPECT_THAT(out, HasSubstr("(current) identifier fields: id\n")) << out;
  Json j = SkadeJson("inspect demo.t --json --no-page-check");
  EXPECT_EQ(j["metadata"]["schemas"].back()["identifier-field-ids"], Json::parse("[1]"));
}

TEST_F(CommandsCliTest, NamespacePropertiesHideTheCatalogsMarker) {
  SkadeOk("ns create demo --set owner=ana");
  EXPECT_EQ(SkadeOk("ns props demo"), "owner=ana\n");
  SkadeOk("ns create empty");
  EXPECT_EQ(SkadeOk("ns props empty"), "");
  EXPECT_EQ(SkadeJson("ns props demo --json"), Json::parse(R"({"owner":"ana"})"));
  ExpectRefused("ns props demo --set exists=false", "InvalidArgument", "not a property");
}

TEST_F(CommandsCliTest, CsvDelimiterOption) {
  CreateDemo();
  std::string semi = File("semi.csv", "id;s\n1;a,b\n2;c\n");
  EXPECT_THAT(SkadeOk("ingest demo.t --delimiter ';' " + testing::ShellQuote(semi)), HasSubstr("+2 records"));
  std::string tabs = File("tabs.csv", "id\ts\n3\tx\n");
  EXPECT_THAT(SkadeOk("ingest demo.t --delimiter '\\t' " + testing::ShellQuote(tabs)), HasSubstr("+1 records"));
  EXPECT_EQ(SkadeJson("scan demo.t --where 'id = 1' --columns s --format json"), Json::parse(R"([{"s":"a,b"}])"));
  ExpectRefused("ingest demo.t --delimiter ';;' " + testing::ShellQuote(semi), "InvalidArgument", "one character");
  ExpectRefused("ingest demo.t --delimiter ';' --sql 'SELECT 1 AS id'", "InvalidArgument", "not --sql");
}

TEST_F(CommandsCliTest, AFolderOrAGlobIsExpandedAndARepeatedFileIngestedOnce) {
  CreateDemo();
  fs::create_directories(tmp_.Path("in/sub"));
  File("in/b.csv", "id\n2\n");
  File("in/a.csv", "id\n1\n");
  File("in/notes.txt", "not data\n");
  File("in/sub/c.csv", "id\n3\n");
  std::string out = SkadeOk("ingest demo.t " + testing::ShellQuote(tmp_.Path("in")));
  EXPECT_THAT(out, HasSubstr("+2 records"));  // a.csv and b.csv; not notes.txt, not sub/
  out = SkadeOk("ingest demo.t " + testing::ShellQuote(tmp_.Path("in") + "/*.csv"));  // quoted: skade expands
  EXPECT_THAT(out, HasSubstr("+2 records"));
  ExpectRefused("ingest demo.t " + testing::ShellQuote(tmp_.Path("in") + "/*.parquet"), "NotFound", "no file matches");
  fs::create_directories(tmp_.Path("empty"));
  ExpectRefused("ingest demo.t " + testing::ShellQuote(tmp_.Path("empty")), "NotFound", "has no files to ingest");

  const std::string a = testing::ShellQuote(tmp_.Path("in/a.csv"));
  testing::ProcessResult r = Skade("ingest demo.t " + a + " " + a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("+1 records"));
  EXPECT_THAT(r.err, HasSubstr("skade: warning: '" + tmp_.Path("in/a.csv") +
                               "' is given more than once; it is ingested once"));
  EXPECT_EQ(SkadeOk("scan demo.t --count"), "5\n");
}

}  // namespace
}  // namespace skade::cli
