// The lake commands of the `skade` binary end to end, in a fresh warehouse per test:
// namespaces, create, ingest (files and SQL, append and overwrite), sql, tables, snapshots,
// log, scan/inspect by name, and bad input that must fail cleanly and commit nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Lines;
using testing::ProcessResult;
using testing::ShellQuote;


TEST_F(LakeCliTest, NamespacesAtOneTwoAndThreeLevels) {
  EXPECT_THAT(SkadeOk("ns create sales --set owner=ana --set team=bi"), HasSubstr("sales"));
  SkadeOk("ns create sales.eu");
  SkadeOk("ns create sales.eu.nordics");
  SkadeOk("ns create ops");
  EXPECT_THAT(Lines(SkadeOk("ns list")),
              ElementsAre("ops", "sales", "sales.eu", "sales.eu.nordics"));
  // Listing below a namespace shows its descendants only.
  EXPECT_THAT(Lines(SkadeOk("ns list sales.eu")), ElementsAre("sales.eu.nordics"));
  Json listed = SkadeJson("ns list --json");
  EXPECT_EQ(listed,
            Json::parse(R"([["ops"], ["sales"], ["sales", "eu"], ["sales", "eu", "nordics"]])"));

  // Properties: set at create, then changed and removed.
  Json props = SkadeJson("ns props sales --json");
  EXPECT_EQ(props.value("owner", ""), "ana");
  EXPECT_EQ(props.value("team", ""), "bi");
  SkadeOk("ns props sales --set owner=bo --unset team");
  props = SkadeJson("ns props sales --json");
  EXPECT_EQ(props.value("owner", ""), "bo");
  EXPECT_FALSE(props.contains("team"));
  EXPECT_THAT(SkadeOk("ns props sales"), HasSubstr("owner=bo"));

  // A namespace with a child or a table is not dropped.
  ExpectRefused("ns drop sales", "Conflict", "not empty");
  SkadeOk("create sales.eu.nordics.orders --schema 'id BIGINT NOT NULL'");
  ExpectRefused("ns drop sales.eu.nordics", "Conflict", "not empty");
  ExpectRefused("ns create sales.eu", "AlreadyExists");
  ExpectRefused("ns drop nowhere", "NotFound");
  SkadeOk("ns drop ops");
  EXPECT_THAT(Lines(SkadeOk("ns list")), ElementsAre("sales", "sales.eu", "sales.eu.nordics"));
  // Namespace operations are not table commits: only the table's creation is logged.
  Json log = Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["operation"], "create");
  EXPECT_EQ(log[0]["table"], "sales.eu.nordics.orders");
  EXPECT_EQ(log[0]["namespace"], Json::parse(R"(["sales", "eu", "nordics"])"));
}

TEST_F(LakeCliTest, RefusesEmptyNamespaceLevelsAndMissingNames) {
  ExpectRefused("ns create 'a..b'", "InvalidArgument", "empty level");
  ExpectRefused("ns create .a", "InvalidArgument", "empty level");
  ExpectRefused("ns create a.", "InvalidArgument", "empty level");
  ExpectRefused("ns create", "InvalidArgument");
  ExpectRefused("ns create ''", "InvalidArgument");
  SkadeOk("ns create a");
  ExpectRefused("create a..t --schema 'id BIGINT'", "InvalidArgument", "empty level");
  ExpectRefused("create a. --schema 'id BIGINT'", "InvalidArgument", "empty table name");
  ExpectRefused("create t --schema 'id BIGINT'", "InvalidArgument", "no namespace");
  ExpectRefused("create missing.t --schema 'id BIGINT'", "NotFound");
  EXPECT_THAT(Lines(SkadeOk("ns list")), ElementsAre("a"));
  EXPECT_TRUE(Log().empty());
}

TEST_F(LakeCliTest, CreatesFromSchemaAndFromLikeFiles) {
  SkadeOk("ns create demo");
  EXPECT_THAT(
      SkadeOk("create demo.typed --schema 'id BIGINT NOT NULL, name VARCHAR, price DECIMAL(9, 2), "
              "ts TIMESTAMPTZ, tags VARCHAR[]' --partition-by 'day(ts), bucket(4, id)' --prop "
              "owner=ana"),
      HasSubstr("demo.typed"));
  Json inspect = SkadeJson("inspect demo.typed --json");
  const Json& m = inspect["metadata"];
  ASSERT_EQ(m["schemas"].size(), 1u);
  const Json& fields = m["schemas"][0]["fields"];
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[0]["name"], "id");
  EXPECT_EQ(fields[0]["type"], "long");
  EXPECT_EQ(fields[0]["required"], true);
  EXPECT_EQ(fields[1]["type"], "string");
  EXPECT_EQ(fields[1]["required"], false);
  std::string decimal = fields[2]["type"];
  decimal.erase(std::remove(decimal.begin(), decimal.end(), ' '), decimal.end());
  EXPECT_EQ(decimal, "decimal(9,2)");
  EXPECT_EQ(fields[3]["type"], "timestamptz");
  EXPECT_EQ(fields[4]["type"]["type"], "list");
  ASSERT_EQ(m["partition-specs"].size(), 1u);
  const Json& spec = m["partition-specs"][0]["fields"];
  ASSERT_EQ(spec.size(), 2u);
  EXPECT_EQ(spec[0]["transform"], "day");
  EXPECT_EQ(spec[0]["name"], "ts_day");
  EXPECT_EQ(spec[1]["transform"], "bucket[4]");
  EXPECT_EQ(m["properties"].value("owner", ""), "ana");

  // --like takes the schema from a file's columns (all optional).
  std::string csv = File("like.csv", "id,city,temp\n1,Oslo,-3.5\n2,Rome,14.25\n");
  SkadeOk("create demo.from_csv --like " + ShellQuote(csv));
  inspect = SkadeJson("inspect demo.from_csv --json");
  const Json& csv_fields = inspect["metadata"]["schemas"][0]["fields"];
  ASSERT_EQ(csv_fields.size(), 3u);
  EXPECT_EQ(csv_fields[0]["name"], "id");
  EXPECT_EQ(csv_fields[0]["type"], "long");
  EXPECT_EQ(csv_fields[1]["name"], "city");
  EXPECT_EQ(csv_fields[1]["type"], "string");
  EXPECT_EQ(csv_fields[2]["type"], "double");
  // --like does not ingest the file's rows.
  EXPECT_EQ(Lines(SkadeOk("scan demo.from_csv --count")).back(), "0");

  std::string ndjson =
      File("like.ndjson",
           "{\"k\": 1, \"v\": \"x\", \"ok\": true}\n{\"k\": 2, \"v\": \"y\", \"ok\": false}\n");
  SkadeOk("create demo.from_json --like " + ShellQuote(ndjson));
  inspect = SkadeJson("inspect demo.from_json --json");
  const Json& json_fields = inspect["metadata"]["schemas"][0]["fields"];
  ASSERT_EQ(json_fields.size(), 3u);
  EXPECT_EQ(json_fields[2]["name"], "ok");
  EXPECT_EQ(json_fields[2]["type"], "boolean");

  ExpectRefused("create demo.both --schema 'id BIGINT' --like " + ShellQuote(csv),
                "InvalidArgument");
  ExpectRefused("create demo.neither", "InvalidArgument");
  ExpectRefused("create demo.bad_like --like " + ShellQuote(tmp_.Path("absent.csv")), "NotFound",
                "absent.csv");
  Json log = Log();
  ASSERT_EQ(log.size(), 3u);
  for (const Json& e : log) EXPECT_EQ(e["operation"], "create");
}

TEST_F(LakeCliTest, IngestsParquetCsvNdjsonAndSql) {
  CreateDemo();
  // A Parquet file written by DuckDB through `skade sql` (a COPY), then read back by ingest.
  std::string parquet = tmp_.Path("in.parquet");
  SkadeOk("sql " +
          ShellQuote("COPY (SELECT range AS id, 'pq-' || range AS s, range * 0.5 AS amount, "
                     "DATE '2024-01-01' + CAST(range AS INTEGER) AS day FROM range(10)) TO '" +
                     parquet + "' (FORMAT parquet)"));
  ASSERT_TRUE(fs::exists(parquet));
  std::string csv = File(
      "in.csv", "id,s,amount,day\n100,csv-a,1.25,2024-02-01\n101,\"csv, quoted\",,2024-02-02\n");
  std::string ndjson = File("in.ndjson",
                            "{\"id\": 200, \"s\": \"js-a\", \"amount\": 2.5}\n"
                            "{\"id\": 201, \"day\": \"2024-03-01\"}\n");

  Json r = SkadeJson("ingest demo.t " + ShellQuote(parquet) + " --json");
  EXPECT_EQ(r["added_records"], 10);
  EXPECT_EQ(r["operation"], "append");
  EXPECT_EQ(r["table"], "demo.t");
  EXPECT_EQ(r["commit_seq"], 2);
  EXPECT_GE(r["added_files"].get<int>(), 1);
  EXPECT_THAT(SkadeOk("ingest demo.t " + ShellQuote(csv)), HasSubstr("+2 records"));
  r = SkadeJson("ingest demo.t " + ShellQuote(ndjson) + " --json");
  EXPECT_EQ(r["added_records"], 2);
  r = SkadeJson("ingest demo.t --json --sql " +
                ShellQuote("SELECT id + 1000 AS id, s FROM demo.t WHERE id < 3"));
  EXPECT_EQ(r["added_records"], 3);

  ProcessResult out = Skade(
      "sql " + ShellQuote("SELECT id, s, amount, day FROM demo.t ORDER BY id") + " --format csv");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = Lines(out.out);
  ASSERT_EQ(lines.size(), 1u + 17u) << out.out;
  EXPECT_EQ(lines[0], "id,s,amount,day");
  EXPECT_EQ(lines[1], "0,pq-0,0.0,2024-01-01");
  EXPECT_EQ(lines[10], "9,pq-9,4.5,2024-01-10");
  EXPECT_EQ(lines[11], "100,csv-a,1.25,2024-02-01");
  EXPECT_EQ(lines[12], "101,\"csv, quoted\",,2024-02-02");
  EXPECT_EQ(lines[13], "200,js-a,2.5,");
  EXPECT_EQ(lines[14], "201,,,2024-03-01");
  EXPECT_EQ(lines[15], "1000,pq-0,,");
  EXPECT_EQ(lines[17], "1002,pq-2,,");

  Json log = Log();
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[4]["added_records"], 3);
}

TEST_F(LakeCliTest, OverwriteReplacesAllRows) {
  CreateDemo();
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT range AS id FROM range(5)"));
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT range + 5 AS id FROM range(5)"));
  Json r = SkadeJson("ingest demo.t --mode overwrite --json --sql " +
                     ShellQuote("SELECT 42 AS id, 'only' AS s"));
  EXPECT_EQ(r["operation"], "overwrite");
  EXPECT_EQ(r["added_records"], 1);
  EXPECT_EQ(r["deleted_records"], 10);
  Json rows = SkadeJson("sql " + ShellQuote("SELECT id, s FROM demo.t") + " --format json");
  EXPECT_EQ(rows, Json::parse(R"([{"id": 42, "s": "only"}])"));
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count")).back(), "1");
  // The overwrite may read the table it replaces.
  SkadeOk("ingest demo.t --mode overwrite --sql " +
          ShellQuote("SELECT id + 1 AS id, s FROM demo.t"));
  rows = SkadeJson("sql " + ShellQuote("SELECT id, s FROM demo.t") + " --format json");
  EXPECT_EQ(rows, Json::parse(R"([{"id": 43, "s": "only"}])"));
}

TEST_F(LakeCliTest, SqlNamesTablesWithNestedNamespacesAndFormats) {
  SkadeOk("ns create a");
  SkadeOk("ns create a.b");
  SkadeOk("create a.b.t --schema 'id BIGINT NOT NULL, s VARCHAR'");
  SkadeOk("create a.u --schema 'id BIGINT NOT NULL, w DOUBLE'");
  SkadeOk("ingest a.b.t --sql " +
          ShellQuote("SELECT * FROM (VALUES (1, 'x'), (2, 'y, \"z\"')) v(id, s)"));
  SkadeOk("ingest a.u --sql " + ShellQuote("SELECT 2 AS id, 0.5 AS w"));

  // A nested namespace is quoted as one name: "a.b".t.
  std::string join =
      "SELECT t.id, t.s, u.w FROM \"a.b\".t AS t LEFT JOIN a.u AS u ON t.id = u.id ORDER BY t.id";
  Json rows = SkadeJson("sql " + ShellQuote(join) + " --format json");
  EXPECT_EQ(rows, Json::parse(
                      R"([{"id": 1, "s": "x", "w": null}, {"id": 2, "s": "y, \"z\"", "w": 0.5}])"));
  rows =
      SkadeJson("sql " + ShellQuote("SELECT count(*) AS n FROM \"a.b\".\"t\"") + " --format json");
  EXPECT_EQ(rows, Json::parse(R"([{"n": 2}])"));

  ProcessResult csv = Skade("sql " + ShellQuote(join) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(Lines(csv.out), ElementsAre("id,s,w", "1,x,", "2,\"y, \"\"z\"\"\",0.5"));
  ProcessResult table = Skade("sql " + ShellQuote(join));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("│   id   │"));
  EXPECT_THAT(table.out, HasSubstr("│ bigint │"));
  EXPECT_THAT(table.out, HasSubstr("2 rows"));
  // An empty result is an empty JSON array.
  rows = SkadeJson("sql " + ShellQuote("SELECT * FROM a.u WHERE id < 0") + " --format json");
  EXPECT_EQ(rows, Json::array());

  ExpectRefused("sql " + ShellQuote("SELECT * FROM a.nope"), "", "nope");
  ExpectRefused("sql " + ShellQuote("SELEC 1"), "");

  // Sorted by namespace, then name.
  EXPECT_THAT(Lines(SkadeOk("tables")), ElementsAre("a.u", "a.b.t"));
  EXPECT_THAT(Lines(SkadeOk("tables a.b")), ElementsAre("a.b.t"));
  Json tables = SkadeJson("tables --json");
  EXPECT_EQ(tables,
            Json::parse(
                R"([{"namespace": ["a"], "name": "u"}, {"namespace": ["a", "b"], "name": "t"}])"));
  // Views are listed after the tables, marked as views.
  SkadeOk("sql " + ShellQuote("CREATE VIEW a.v AS SELECT id FROM a.u"));
  EXPECT_THAT(Lines(SkadeOk("tables")), ElementsAre("a.u", "a.b.t", "a.v (view)"));
  EXPECT_THAT(Lines(SkadeOk("tables a.b")), ElementsAre("a.b.t"));
  EXPECT_EQ(SkadeJson("tables --json").back(), Json::parse(R"({"namespace": ["a"], "name": "v", "type": "view"})"));
}

// A query that fails prints nothing on stdout, in every format: a script reading
// `--format json` must not get half a JSON document.
TEST_F(LakeCliTest, FailedQueryPrintsNothingOnStdout) {
  SkadeOk("ns create a");
  for (const char* format : {"table", "csv", "json"}) {
    ProcessResult failed =
        Skade("sql " + ShellQuote("SELECT * FROM a.nope") + " --format " + format);
    EXPECT_EQ(failed.exit_code, 1) << "--format " << format;
    EXPECT_THAT(failed.err, HasSubstr("nope")) << "--format " << format;
    EXPECT_EQ(failed.out, "") << "--format " << format;
  }
}

TEST_F(LakeCliTest, SnapshotsAndLogRecordEveryCommit) {
  CreateDemo();
  SkadeOk("ns create other");
  SkadeOk("create other.t --schema 'id BIGINT NOT NULL'");
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT range AS id FROM range(3)"));
  SkadeOk("ingest other.t --sql " + ShellQuote("SELECT 1 AS id"));
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT 10 AS id"));
  SkadeOk("ingest demo.t --mode overwrite --sql " +
          ShellQuote("SELECT 20 AS id UNION ALL SELECT 21"));

  Json snaps = SkadeJson("snapshots demo.t --json");
  ASSERT_EQ(snaps.size(), 3u);
  EXPECT_EQ(snaps[0]["operation"], "append");
  EXPECT_EQ(snaps[1]["operation"], "append");
  EXPECT_EQ(snaps[2]["operation"], "overwrite");
  EXPECT_FALSE(snaps[0].contains("parent_snapshot_id"));
  EXPECT_EQ(snaps[1]["parent_snapshot_id"], snaps[0]["snapshot_id"]);
  EXPECT_EQ(snaps[2]["parent_snapshot_id"], snaps[1]["snapshot_id"]);
  for (size_t i = 0; i < snaps.size(); ++i) {
    EXPECT_EQ(snaps[i]["sequence_number"], static_cast<int64_t>(i + 1));
    EXPECT_EQ(snaps[i]["current"], i == 2);
  }
  EXPECT_EQ(snaps[0]["summary"].value("added-records", ""), "3");
  EXPECT_EQ(snaps[1]["summary"].value("total-records", ""), "4");
  EXPECT_EQ(snaps[2]["summary"].value("deleted-records", ""), "4");
  EXPECT_EQ(snaps[2]["summary"].value("total-records", ""), "2");
  std::string text = SkadeOk("snapshots demo.t");
  EXPECT_THAT(text, HasSubstr("overwrite"));
  EXPECT_THAT(text, HasSubstr(std::to_string(snaps[2]["snapshot_id"].get<int64_t>()) + " *"));

  Json log = Log();
  ASSERT_EQ(log.size(), 6u);
  const char* ops[] = {"create", "create", "append", "append", "append", "overwrite"};
  const char* tables[] = {"demo.t", "other.t", "demo.t", "other.t", "demo.t", "demo.t"};
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i]["commit_seq"], static_cast<int64_t>(i + 1)) << log[i].dump();
    EXPECT_EQ(log[i]["operation"], ops[i]) << log[i].dump();
    EXPECT_EQ(log[i]["table"], tables[i]) << log[i].dump();
    EXPECT_TRUE(fs::exists(log[i]["metadata_location"].get<std::string>())) << log[i].dump();
    if (i > 0) {
      EXPECT_GE(log[i]["committed_at_us"], log[i - 1]["committed_at_us"]);
    }
  }
  EXPECT_FALSE(log[0].contains("snapshot_id"));
  EXPECT_EQ(log[2]["snapshot_id"], snaps[0]["snapshot_id"]);
  EXPECT_EQ(log[5]["snapshot_id"], snaps[2]["snapshot_id"]);
  EXPECT_EQ(log[5]["added_records"], 2);
  EXPECT_EQ(log[5]["deleted_records"], 4);
  EXPECT_EQ(log[4]["metadata_location"], log[5]["previous_metadata_location"]);
  // --after and --limit page through the log.
  Json page = SkadeJson("log --json --after 2 --limit 2");
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0]["commit_seq"], 3);
  EXPECT_EQ(page[1]["commit_seq"], 4);
  EXPECT_THAT(SkadeOk("log"), HasSubstr("overwrite"));
}

TEST_F(LakeCliTest, ScansAndInspectsByTableName) {
  CreateDemo();
  SkadeOk(
      "ingest demo.t --sql " +
      ShellQuote("SELECT range AS id, 'r' || range AS s, range * 1.5 AS amount FROM range(20)"));
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count")).back(), "20");
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count --where 'id >= 15'")).back(), "5");
  ProcessResult csv = Skade("scan demo.t --columns id,s --where 'id < 3' --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> lines = Lines(csv.out);
  ASSERT_EQ(lines.size(), 4u) << csv.out;
  EXPECT_EQ(lines[0], "id,s");
  std::sort(lines.begin() + 1, lines.end());
  EXPECT_THAT(lines, ElementsAre("id,s", "0,r0", "1,r1", "2,r2"));
  // A table in the catalog is found where it is: no relocation note.
  EXPECT_THAT(csv.err, Not(HasSubstr("differs")));

  Json inspect = SkadeJson("inspect demo.t --json");
  EXPECT_TRUE(fs::exists(inspect["metadata_file"].get<std::string>()));
  EXPECT_EQ(inspect["metadata"]["format-version"], 2);
  ASSERT_TRUE(inspect.contains("manifests"));
  int64_t rows = 0;
  for (const Json& m : inspect["manifests"]) {
    for (const Json& f : m["files"]) rows += f["record_count"].get<int64_t>();
  }
  EXPECT_EQ(rows, 20);
  Json log = Log();
  EXPECT_EQ(inspect["metadata_file"], log.back()["metadata_location"]);
  EXPECT_THAT(SkadeOk("inspect demo.t"), HasSubstr(".parquet"));

  ProcessResult missing = Skade("scan demo.nope --count");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NotFound"));
  missing = Skade("inspect nope.t");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NotFound"));
}

TEST_F(LakeCliTest, BadInputFailsCleanlyAndCommitsNothing) {
  CreateDemo();
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT 1 AS id, 'one' AS s"));
  std::string txt = File("rows.txt", "id,s\n2,two\n");
  ExpectRefused("ingest demo.t " + ShellQuote(txt), "InvalidArgument", "rows.txt");
  ExpectRefused("ingest demo.t " + ShellQuote(tmp_.Path("absent.parquet")), "NotFound",
                "absent.parquet");
  ExpectRefused("ingest demo.t", "InvalidArgument");
  std::string mixed_csv = File("mixed.csv", "id,s\n3,x\n");
  std::string mixed_json = File("mixed.ndjson", "{\"id\": 4}\n");
  ExpectRefused("ingest demo.t " + ShellQuote(mixed_csv) + " " + ShellQuote(mixed_json),
                "InvalidArgument", "mix");
  // Wrong column types: text where a number is due, in SQL and in a CSV file.
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT 'abc' AS id"), "", "abc");
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT 5 AS id, 'not a day' AS day"), "",
                "not a day");
  std::string bad_csv = File("bad.csv", "id,amount\n6,1.5\n7,lots\n");
  ExpectRefused("ingest demo.t " + ShellQuote(bad_csv), "", "lots");
  // Required column missing, or null.
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT 'x' AS s"), "InvalidArgument", "'id'");
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT * FROM (VALUES (8), (NULL)) v(id)"), "",
                "null value in required column 'id'");
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT 9 AS id, 1 AS extra"),
                "InvalidArgument", "extra");
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT 10 AS id, 1 AS ID"), "InvalidArgument");
  // Unknown tables and namespaces.
  ExpectRefused("ingest demo.nope --sql " + ShellQuote("SELECT 1 AS id"), "NotFound", "demo.nope");
  ExpectRefused("ingest nope.t --sql " + ShellQuote("SELECT 1 AS id"), "NotFound");
  ExpectRefused("ingest demo.t --sql " + ShellQuote("SELECT id FROM demo.nope"), "", "nope");
  ExpectRefused("snapshots demo.nope", "NotFound");
  // Creating what exists, or with a bad schema or partition spec.
  ExpectRefused("create demo.t --schema 'id BIGINT'", "AlreadyExists", "demo.t");
  ExpectRefused("create demo.p --schema 'id BIGINT, ts TIMESTAMPTZ' --partition-by 'nope(x)'",
                "InvalidArgument");
  ExpectRefused("create demo.p --schema 'id BIGINT, ts TIMESTAMPTZ' --partition-by 'nope(ts)'",
                "InvalidArgument", "nope");
  ExpectRefused("create demo.p --schema 'id BIGINT' --partition-by 'day(missing)'",
                "InvalidArgument", "missing");
  ExpectRefused("create demo.p --schema 'id BIGINT, s VARCHAR' --partition-by 'day(s)'",
                "InvalidArgument");
  ExpectRefused("create demo.p --schema 'id BIGINT' --partition-by 'bucket(0, id)'",
                "InvalidArgument");
  ExpectRefused("create demo.p --schema 'id BIGINT, id BIGINT'", "InvalidArgument");
  ExpectRefused("create demo.p --schema 'id NOSUCHTYPE'", "InvalidArgument");
  ExpectRefused("create demo.p --schema 'id BIGINT' --prop novalue", "InvalidArgument", "novalue");

  // After all that: the table holds what it held, and the log has the two good commits.
  Json rows = SkadeJson("sql " + ShellQuote("SELECT id, s FROM demo.t") + " --format json");
  EXPECT_EQ(rows, Json::parse(R"([{"id": 1, "s": "one"}])"));
  Json log = Log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1]["commit_seq"], 2);
  EXPECT_THAT(Lines(SkadeOk("tables")), ElementsAre("demo.t"));
}

}  // namespace
}  // namespace skade::cli
