// The CLI as a hostile user drives it: names that would escape their folder, predicates and
// column definitions that would smuggle SQL, statements that are not allowed. Each is refused
// (changing nothing) or does exactly what it says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
using testing::ShellQuote;

class SafetyCliTest : public LakeCliTest {
 protected:
  // demo.t with ids 0..9.
  void CreateDemoRows() {
    CreateDemo();
    SkadeOk("ingest demo.t --sql " +
            ShellQuote("SELECT range AS id, 's' || range AS s, range * 1.5 AS amount, "
                       "DATE '2024-01-01' + CAST(range AS INTEGER) AS day FROM range(10)"));
  }
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

}  // namespace
}  // namespace skade::cli
