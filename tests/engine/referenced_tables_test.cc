// The base tables a statement names (Database::ReferencedTables), read from DuckDB's parse tree
// for a SELECT: every place a table can hide in one, the same names DuckDB's binder extracts,
// and the binder's own answer for other statements.
#include "skade/engine/referenced_tables_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "skade/engine/database.h"

namespace skade::engine {
namespace {

using Tables = std::vector<std::vector<std::string>>;

Tables Sorted(Tables tables) {
  std::sort(tables.begin(), tables.end());
  tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
  return tables;
}

TEST(ReferencedTablesTest, EveryPlaceOfASelectIsWalked) {
  struct Case {
    std::string sql;
    Tables want;
  };
  const std::vector<Case> cases = {
      {"SELECT * FROM a", {{"a"}}},
      {"SELECT * FROM s.a JOIN c.s2.b USING (k), d", {{"c", "s2", "b"}, {"d"}, {"s", "a"}}},
      {"SELECT * FROM a WHERE k IN (SELECT k FROM b WHERE EXISTS (SELECT 1 FROM c))", {{"a"}, {"b"}, {"c"}}},
      {"SELECT (SELECT max(k) FROM b) + 1 AS m", {{"b"}}},
      {"WITH x AS (SELECT * FROM inner_t) SELECT * FROM x JOIN y ON true", {{"inner_t"}, {"x"}, {"y"}}},
      {"SELECT k FROM a UNION ALL SELECT k FROM (SELECT k FROM b) AS sub", {{"a"}, {"b"}}},
      {"SELECT * FROM range((SELECT count(*) FROM b))", {{"b"}}},
      {"SELECT * FROM \"we.ird\".\"t.x\" AT (VERSION => 3)", {{"we.ird", "t.x"}}},
      {"SELECT k, sum(v) FROM a GROUP BY k HAVING sum(v) > (SELECT 1 FROM b) ORDER BY (SELECT 2 FROM c)",
       {{"a"}, {"b"}, {"c"}}},
      {"SELECT * FROM (VALUES ((SELECT 1 FROM b)), (2)) v(x)", {{"b"}}},
      {"SELECT 1", {}},
  };
  for (const Case& c : cases) {
    auto tables = SelectBaseTables(c.sql);
    ASSERT_TRUE(tables.has_value()) << c.sql;
    EXPECT_EQ(Sorted(*tables), Sorted(c.want)) << c.sql;
  }
  // Not one SELECT: the caller asks the binder.
  // Not one SELECT, or a form the walk leaves to DuckDB.
  for (const char* sql : {"INSERT INTO a SELECT * FROM b", "SELECT 1; SELECT 2", "SELECT FROM WHERE", "",
                          "SELECT * FROM (DESCRIBE s.a)", "DESCRIBE s.a", "PIVOT a ON k USING sum(v)"}) {
    EXPECT_FALSE(SelectBaseTables(sql).has_value()) << sql;
  }
}

TEST(ReferencedTablesTest, TheDatabaseAnswersFromTheParseForQueriesAndFromTheBinderOtherwise) {
  auto db = Database::Open({});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto query = (*db)->ReferencedTables("SELECT * FROM s.a WHERE k IN (SELECT k FROM b)");
  ASSERT_TRUE(query.ok()) << query.status().ToString();
  EXPECT_EQ(Sorted(*query), (Tables{{"b"}, {"s", "a"}}));
  // Not a query: DuckDB's binder extracts the names, and here knows none of the tables.
  auto insert = (*db)->ReferencedTables("INSERT INTO t SELECT * FROM s.u");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  EXPECT_EQ(*insert, Tables{});
  // A form the walk leaves to DuckDB's rendering of the tree.
  auto described = (*db)->ReferencedTables("SELECT column_name FROM (DESCRIBE s.\"a\")");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  EXPECT_EQ(*described, (Tables{{"s", "a"}}));
  EXPECT_EQ((*db)->ReferencedTables("SELECT FROM WHERE").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::engine
