// The write-statement recogniser, parameter markers and LIKE patterns.
#include "skade/sql/write_statement.h"

#include <gtest/gtest.h>

#include "skade/sql/like.h"

namespace skade::sql {
namespace {

using Kind = WriteStatement::Kind;

WriteStatement Parse(const std::string& sql) {
  auto w = ParseWriteStatement(sql);
  EXPECT_TRUE(w.ok()) << sql << ": " << w.status().ToString();
  EXPECT_TRUE(w.ok() && w->has_value()) << sql << " is not recognised as a write statement";
  return w.ok() && w->has_value() ? **w : WriteStatement{};
}

TEST(WriteStatementTest, Insert) {
  WriteStatement w = Parse("insert into skade.\"a.b\".orders VALUES (1, 'x'), (2, 'y');");
  EXPECT_EQ(w.kind, Kind::kInsert);
  EXPECT_EQ(w.target, (std::vector<std::string>{"skade", "a.b", "orders"}));
  EXPECT_TRUE(w.columns.empty());
  EXPECT_EQ(w.query, "VALUES (1, 'x'), (2, 'y')");

  w = Parse("INSERT INTO t (id, \"Name\") SELECT a, b FROM s WHERE c = ';'");
  EXPECT_EQ(w.target, (std::vector<std::string>{"t"}));
  EXPECT_EQ(w.columns, (std::vector<std::string>{"id", "Name"}));
  EXPECT_EQ(w.query, "SELECT a, b FROM s WHERE c = ';'");

  // A parenthesised query is the source, not a column list.
  w = Parse("INSERT INTO ns.t (SELECT 1)");
  EXPECT_TRUE(w.columns.empty());
  EXPECT_EQ(w.query, "(SELECT 1)");
}

TEST(WriteStatementTest, DeleteAndUpdate) {
  WriteStatement d = Parse("DELETE FROM ns.t WHERE id IN (1, 2) -- gone\n");
  EXPECT_EQ(d.kind, Kind::kDelete);
  EXPECT_EQ(d.where, "id IN (1, 2) -- gone");
  EXPECT_EQ(Parse("delete from ns.t").where, "");

  WriteStatement u = Parse("UPDATE ns.t SET a = coalesce(b, 1), \"c d\" = (x = 2) WHERE k = 'a,b'");
  EXPECT_EQ(u.kind, Kind::kUpdate);
  ASSERT_EQ(u.assignments.size(), 2u);
  EXPECT_EQ(u.assignments[0], (std::pair<std::string, std::string>{"a", "coalesce(b, 1)"}));
  EXPECT_EQ(u.assignments[1], (std::pair<std::string, std::string>{"c d", "(x = 2)"}));
  EXPECT_EQ(u.where, "k = 'a,b'");
}

TEST(WriteStatementTest, Ddl) {
  WriteStatement c = Parse("CREATE TABLE IF NOT EXISTS ns.t (id BIGINT NOT NULL, d DECIMAL(10, 2))");
  EXPECT_EQ(c.kind, Kind::kCreateTable);
  EXPECT_TRUE(c.if_not_exists);
  EXPECT_EQ(c.column_definitions, "id BIGINT NOT NULL, d DECIMAL(10, 2)");

  WriteStatement ctas = Parse("create or replace table ns.t as select * from ns.s");
  EXPECT_TRUE(ctas.or_replace);
  EXPECT_EQ(ctas.query, "select * from ns.s");

  WriteStatement drop = Parse("DROP TABLE IF EXISTS \"x.y\".t");
  EXPECT_EQ(drop.kind, Kind::kDropTable);
  EXPECT_TRUE(drop.if_exists);
  EXPECT_EQ(drop.target, (std::vector<std::string>{"x.y", "t"}));

  EXPECT_EQ(Parse("CREATE SCHEMA skade.\"a.b\"").kind, Kind::kCreateSchema);
  EXPECT_EQ(Parse("DROP SCHEMA IF EXISTS a").kind, Kind::kDropSchema);
}

TEST(WriteStatementTest, OtherStatementsAreNotWrites) {
  for (const char* sql : {"SELECT 1", "WITH x AS (SELECT 1) SELECT * FROM x", "CREATE VIEW v AS SELECT 1",
                          "COPY t TO 'f'", "ATTACH 'x' AS y", "SET threads = 1", "  "}) {
    auto w = ParseWriteStatement(sql);
    ASSERT_TRUE(w.ok()) << sql;
    EXPECT_FALSE(w->has_value()) << sql;
  }
}

TEST(WriteStatementTest, MalformedWritesAreErrors) {
  for (const char* sql : {"INSERT t VALUES (1)", "INSERT INTO t", "DELETE t", "DELETE FROM t WHERE",
                          "INSERT INTO t VALUES (1); DROP TABLE t", "UPDATE t SET", "UPDATE t SET a WHERE b",
                          "CREATE TABLE t (a INT", "INSERT INTO a.b.c.d VALUES (1)", "DELETE FROM t WHERE a = 'x"}) {
    auto w = ParseWriteStatement(sql);
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << sql;
  }
}

TEST(WriteStatementTest, ParameterMarkers) {
  const std::string sql = "INSERT INTO t VALUES (?, '?', \"?\", ?) -- ?";
  EXPECT_EQ(*CountParameters(sql), 2);
  auto bound = BindParameters(sql, {"1", "'a''b'"});
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(*bound, "INSERT INTO t VALUES (1, '?', \"?\", 'a''b') -- ?");
  EXPECT_EQ(BindParameters(sql, {"1"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindParameters(sql, {"1", "2", "3"}).status().code(), StatusCode::kInvalidArgument);
}

TEST(LikeMatchTest, Patterns) {
  EXPECT_TRUE(LikeMatch("%", ""));
  EXPECT_TRUE(LikeMatch("a.%", "a.b"));
  EXPECT_FALSE(LikeMatch("a.%", "ab"));
  EXPECT_TRUE(LikeMatch("or_ers", "orders"));
  EXPECT_FALSE(LikeMatch("or_ers", "ordders"));
  EXPECT_TRUE(LikeMatch("%line%", "order_lines"));
  EXPECT_TRUE(LikeMatch("order\\_lines", "order_lines"));
  EXPECT_FALSE(LikeMatch("order\\_lines", "orderXlines"));
  EXPECT_FALSE(LikeMatch("orders", "Orders"));
  EXPECT_TRUE(LikeMatch("%%a%", "bab"));
}

}  // namespace
}  // namespace skade::sql
