// `skade sql` finds every table of the lake (SHOW TABLES, SHOW ALL TABLES, DESCRIBE,
// information_schema) and reads past snapshots with AT (…) exactly as `skade scan` does.
#include <string>
#include <vector>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using testing::ShellQuote;

class SqlLakeCliTest : public LakeCliTest {
 protected:
  Json SqlJson(const std::string& sql) {
    return SkadeJson("sql " + ShellQuote(sql) + " --format json");
  }

  // demo.t (id NOT NULL) and "sales.eu".orders (amount NOT NULL), neither queried yet.
  void CreateTwoTables() {
    CreateDemo();
    SkadeOk("ns create sales");
    SkadeOk("ns create sales.eu");
    SkadeOk("create sales.eu.orders --schema 'id BIGINT, amount DOUBLE NOT NULL'");
  }

  std::string ScanCount(const std::string& selector) {
    std::string out = SkadeOk("scan demo.t --count " + selector);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
};

TEST_F(SqlLakeCliTest, ListsEveryTableOfTheLake) {
  CreateTwoTables();
  EXPECT_EQ(SqlJson("SHOW TABLES"),
            Json::parse(
                R"([{"schema": "demo", "name": "t"}, {"schema": "sales.eu", "name": "orders"}])"));
  EXPECT_EQ(
      SqlJson("SELECT schema, name, column_names FROM (SHOW ALL TABLES)"),
      Json::parse(R"([{"schema": "demo", "name": "t", "column_names": ["id", "s", "amount", "day"]},
                            {"schema": "sales.eu", "name": "orders", "column_names": ["id", "amount"]}])"));
  EXPECT_EQ(SqlJson("SELECT table_schema, table_name, table_type FROM information_schema.tables "
                    "ORDER BY ALL"),
            Json::parse(R"([{"table_schema": "demo", "table_name": "t", "table_type": "BASE TABLE"},
                            {"table_schema": "sales.eu", "table_name": "orders", "table_type": "BASE TABLE"}])"));
  EXPECT_EQ(SqlJson("SELECT column_name, is_nullable, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'sales.eu' ORDER BY ordinal_position"),
            Json::parse(R"([{"column_name": "id", "is_nullable": "YES", "data_type": "BIGINT"},
                            {"column_name": "amount", "is_nullable": "NO", "data_type": "DOUBLE"}])"));
  EXPECT_EQ(
      SqlJson("DESCRIBE demo.t"),
      Json::parse(
          R"([{"column_name": "id", "column_type": "BIGINT", "null": "NO", "key": null, "default": null, "extra": null},
                            {"column_name": "s", "column_type": "VARCHAR", "null": "YES", "key": null, "default": null, "extra": null},
                            {"column_name": "amount", "column_type": "DOUBLE", "null": "YES", "key": null, "default": null, "extra": null},
                            {"column_name": "day", "column_type": "DATE", "null": "YES", "key": null, "default": null, "extra": null}])"));
  Json nested = SqlJson("DESCRIBE \"sales.eu\".orders");
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[1]["column_name"], "amount");
  EXPECT_EQ(nested[1]["null"], "NO");
}

TEST_F(SqlLakeCliTest, UnknownNamesSuggestRealTablesAndTheQuotedNestedForm) {
  CreateTwoTables();
  // A typo names the lake's table, not one of DuckDB's system views.
  ExpectRefused("sql " + ShellQuote("SELECT * FROM \"sales.eu\".ordres"), "InvalidArgument",
                "did you mean \"sales.eu\".orders?");
  ExpectRefused("sql " + ShellQuote("SELECT * FROM orders"), "InvalidArgument",
                "did you mean \"sales.eu\".orders?");
  ExpectRefused("sql " + ShellQuote("SELECT * FROM demo.tt"), "InvalidArgument", "did you mean demo.t?");
  testing::ProcessResult suggested = Skade("sql " + ShellQuote("SELECT * FROM orders"));
  EXPECT_THAT(suggested.err, ::testing::Not(::testing::HasSubstr("information_schema")));
  // DuckDB reads sales.eu.orders as catalog sales, schema eu.
  ExpectRefused("sql " + ShellQuote("SELECT * FROM sales.eu.orders"), "InvalidArgument",
                "write \"sales.eu\".orders");
}

TEST_F(SqlLakeCliTest, AtReadsTheSnapshotsScanReads) {
  CreateDemo();
  for (const char* rows : {"SELECT 1 AS id", "SELECT range + 2 AS id FROM range(3)",
                           "SELECT range + 5 AS id FROM range(10)"}) {
    SkadeOk("ingest demo.t --sql " + ShellQuote(rows));
  }
  SkadeOk("delete demo.t --where 'id >= 10'");
  Json snapshots = SkadeJson("snapshots demo.t --json");
  ASSERT_EQ(snapshots.size(), 4u);
  const std::vector<std::string> counts = {"1", "4", "14", "9"};
  for (size_t i = 0; i < snapshots.size(); ++i) {
    const std::string id = std::to_string(snapshots[i]["snapshot_id"].get<int64_t>());
    const std::string ms = std::to_string(snapshots[i]["timestamp_ms"].get<int64_t>());
    EXPECT_EQ(ScanCount("--snapshot " + id), counts[i]);
    EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.t AT (VERSION => " + id + ")"),
              Json::parse("[{\"n\": " + counts[i] + "}]"))
        << id;
    EXPECT_EQ(ScanCount("--as-of " + ms), counts[i]);
    EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.t AT (TIMESTAMP => epoch_ms(" + ms + "))"),
              Json::parse("[{\"n\": " + counts[i] + "}]"))
        << ms;
  }
  const std::string second = std::to_string(snapshots[1]["snapshot_id"].get<int64_t>());
  SkadeOk("tag demo.t before_big --snapshot " + second);
  SkadeOk("branch demo.t dev --snapshot " +
          std::to_string(snapshots[2]["snapshot_id"].get<int64_t>()));
  EXPECT_EQ(ScanCount("--ref before_big"), "4");
  EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.t AT (VERSION => 'before_big')"),
            Json::parse(R"([{"n": 4}])"));
  EXPECT_EQ(ScanCount("--ref dev"), "14");
  EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.t AT (VERSION => 'dev')"),
            Json::parse(R"([{"n": 14}])"));
  EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.t AT (TIMESTAMP => '2999-01-01 00:00:00')"),
            Json::parse(R"([{"n": 9}])"));
  // The rows themselves, not only their number.
  EXPECT_EQ(SqlJson("SELECT id FROM demo.t AT (VERSION => " + second + ") ORDER BY id"),
            Json::parse(R"([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}])"));

  // Never the current snapshot instead of a missing one.
  ExpectRefused("sql " + ShellQuote("SELECT count(*) FROM demo.t AT (VERSION => 12345)"),
                "NotFound", "snapshot 12345 not found");
  ExpectRefused("sql " + ShellQuote("SELECT count(*) FROM demo.t AT (VERSION => 'nope')"),
                "NotFound", "nope");
  ExpectRefused(
      "sql " + ShellQuote("SELECT count(*) FROM demo.t AT (TIMESTAMP => TIMESTAMP '2001-01-01')"),
      "NotFound");
  // Time travel reads; a write's target is always the current snapshot.
  ExpectRefused(
      "sql " + ShellQuote("DELETE FROM demo.t AT (VERSION => " + second + ") WHERE id = 1"),
      "InvalidArgument", "time travel is for reading");
  ExpectRefused("sql " + ShellQuote("UPDATE demo.t AT (VERSION => 'dev') SET s = 'x'"),
                "InvalidArgument", "time travel is for reading");

  // An ingest's --sql source reads the past as skade sql does: a table restored from a tag.
  SkadeOk("ingest demo.restored --create --sql " +
          ShellQuote("SELECT * FROM demo.t AT (VERSION => 'before_big') WHERE id > 1"));
  EXPECT_EQ(SqlJson("SELECT id FROM demo.restored ORDER BY id"),
            Json::parse(R"([{"id": 2}, {"id": 3}, {"id": 4}])"));
  ExpectRefused("ingest demo.restored --sql " + ShellQuote("SELECT * FROM demo.t AT (VERSION => 12345)"),
                "NotFound", "snapshot 12345 not found");
  EXPECT_EQ(SqlJson("SELECT count(*) AS n FROM demo.restored"), Json::parse(R"([{"n": 3}])"));
}

}  // namespace
}  // namespace skade::cli
