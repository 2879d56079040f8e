// User SQL is parsed once and re-rendered: hostile predicates, column definitions and
// statements are refused or mean exactly what DuckDB parses them to mean.
#include "skade/engine/user_sql.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "tests/testing/query_rows.h"

namespace skade::engine {
namespace {

using Kind = Statement::Kind;

class PredicateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(Database::Open({})).value();
    ASSERT_TRUE(db_->Execute("CREATE TABLE t AS SELECT range::INTEGER AS id, CASE WHEN range % 3 = 0 THEN 'a''b' "
                             "WHEN range % 3 = 1 THEN 'x' ELSE NULL END AS s FROM range(20)")
                    .ok());
  }

  // The ids a WHERE clause selects from t, sorted.
  std::vector<std::string> Ids(const std::string& where) {
    std::vector<std::string> ids;
    for (const auto& row : testing::QueryText(*db_, "SELECT id FROM t WHERE " + where)) ids.push_back(row.at(0));
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  std::unique_ptr<Database> db_;
};

TEST_F(PredicateTest, HostilePredicatesAreRefused) {
  for (const char* text : {
           "id=-1) OR (1=1",                  // closes the caller's parenthesis
           "(id = 1",                         // unbalanced
           "id = 1)) OR ((true",              // unbalanced twice
           "id < 5 /*",                       // comment that would swallow the rest
           "id = 1; DELETE FROM t",           // stacked statement
           "true UNION SELECT 1",             // set operation
           "true) UNION SELECT (1",           // set operation behind a parenthesis
           "true ORDER BY 1",                 // clauses after the expression
           "true LIMIT 1",
           "true GROUP BY id",
           "true QUALIFY true",
           "true) TO 'x.csv' (FORMAT csv); SELECT (1",  // COPY smuggling
           "id IN (SELECT 1)",                // subquery (not allowed in a filter)
           "EXISTS (SELECT * FROM t)",
           "id = ?",                          // parameter marker
           "id = $1",
           "",                                // empty
           "   ",
           "s = E'\\'') OR (1=1",             // escaped quote leaves a parenthesis dangling
       }) {
    auto p = Predicate::Parse(text);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << "[" << text << "] -> " << (p.ok() ? p->sql() : "");
  }
}

TEST_F(PredicateTest, AcceptedPredicatesDenoteExactlyTheirRows) {
  // Each is one boolean expression; its rendering selects exactly the rows DuckDB selects for
  // the text itself, and running it inside parentheses changes nothing.
  for (const char* text : {
           "id < 5 --",                              // a trailing comment is a comment
           "id < 5 -- ) OR (true",                   // everything after -- is ignored
           "id = 1 /* ) OR (true */ OR id = 2",      // a closed comment
           "s = 'a''b'",                             // doubled quote
           "s = E'a\\'b'",                           // escape string with an escaped quote
           "s = E'\\'' OR (1=1)",                    // an OR the text really contains
           "s = $$a'b$$",                            // dollar quote
           "s = $tag$x') OR (1=1$tag$",              // dollar quote holding would-be SQL
           "s IS NULL OR id BETWEEN 3 AND 6",
           "NOT (id % 2 = 0) AND s LIKE 'x%'",
           "id IN (1, 2, 3);",                       // one trailing semicolon is fine
           "id = 1; -- and a comment after it",
           "id > 1e1 AND id < 1.5e1",                // doubles whose rendering needs a cast
           "upper(s) = 'X' AND length(s) = 1",
       }) {
    auto p = Predicate::Parse(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().ToString();
    EXPECT_EQ(p->sql().front(), '(');
    std::string original(text);
    if (size_t semicolon = original.find(';'); semicolon != std::string::npos) original.resize(semicolon);
    EXPECT_EQ(Ids(p->sql()), Ids(original + "\n")) << text << " rendered as " << p->sql();
    EXPECT_EQ(Ids("NOT " + p->sql()).size() + Ids(p->sql()).size() + Ids(p->sql() + " IS NULL").size(), 20u)
        << text;
  }
  EXPECT_EQ(Ids(Predicate::Parse("id < 5 -- ) OR (true")->sql()).size(), 5u);
  EXPECT_EQ(Ids(Predicate::Parse("s = $tag$x') OR (1=1$tag$")->sql()).size(), 0u);
}

TEST_F(PredicateTest, SubqueriesOnlyWhenAllowed) {
  EXPECT_FALSE(Predicate::Parse("id IN (SELECT 1)").ok());
  auto p = Predicate::Parse("id IN (SELECT 1)", Predicate::Subqueries::kAllow);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(Ids(p->sql()), (std::vector<std::string>{"1"}));
}

TEST(QueryTest, OnlyOneQuery) {
  for (const char* text : {"SELECT 1; COPY (SELECT 1) TO 'x.csv'", "COPY (SELECT 1) TO 'x.csv'", "ATTACH 'x.db'",
                           "CREATE MACRO m() AS 1", "SELECT 1) TO 'x' (FORMAT csv); SELECT (1", "SELECT ?", ""}) {
    EXPECT_EQ(Query::Parse(text).status().code(), StatusCode::kInvalidArgument) << text;
  }
  for (const char* text : {"SELECT 1 AS a", "VALUES (1, 'a'), (2, 'b')", "FROM range(3)",
                           "WITH a AS (SELECT 1 AS x) SELECT * FROM a UNION ALL SELECT 2 ORDER BY 1 LIMIT 5",
                           "SELECT 'it''s' AS \"we\"\"ird\" -- comment",
                           "SELECT * FROM (VALUES (1::BIGINT, 'a'), (2, NULL)) t(id, label) JOIN (VALUES (1)) u(id) USING (id)"}) {
    auto q = Query::Parse(text);
    ASSERT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    // The rendering is one statement that can be wrapped as a subquery.
    auto again = ParseStatement("SELECT * FROM (" + q->sql() + ")");
    ASSERT_TRUE(again.ok()) << q->sql();
    EXPECT_EQ(again->kind, Kind::kQuery);
  }
  EXPECT_EQ(Query::Parse("VALUES (1, 'a'), (2, 'b')")->sql(), "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS valueslist");
}

TEST(TableDefinitionTest, ColumnsAndKeys) {
  auto d = ParseTableDefinition(
      "id BIGINT NOT NULL, ts TIMESTAMPTZ, amount DECIMAL(10,2), tags VARCHAR[], "
      "st STRUCT(\"x y\" INT, m MAP(VARCHAR, DOUBLE[])), k INT8, PRIMARY KEY (id, k)");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->columns.size(), 6u);
  EXPECT_EQ(d->columns[0], (ColumnDefinition{"id", "BIGINT", true}));
  EXPECT_EQ(d->columns[1], (ColumnDefinition{"ts", "TIMESTAMP WITH TIME ZONE", false}));
  EXPECT_EQ(d->columns[2].type, "DECIMAL(10,2)");
  EXPECT_EQ(d->columns[5], (ColumnDefinition{"k", "BIGINT", true}));  // key columns are required
  EXPECT_EQ(d->primary_key, (std::vector<std::string>{"id", "k"}));
  auto schema = SchemaFromDefinition(*d);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ((*schema)->identifier_field_ids(), (std::vector<int>{1, 6}));
}

TEST(TableDefinitionTest, HostileOrUnsupportedDefinitionsAreRefused) {
  for (const char* text : {
           "id BIGINT); COPY (SELECT 1) TO '/tmp/x.csv'; CREATE TABLE y (a INT",
           "a INT DEFAULT E'\\''); COPY (SELECT 1) TO 'x'; CREATE TABLE z (b INT DEFAULT E'\\''",
           "a INT DEFAULT 1",
           "a INT) AS SELECT 1 --",
           "a INT GENERATED ALWAYS AS (1)",
           "a INT CHECK (a > 0)",
           "a INT UNIQUE",
           "a VARCHAR COLLATE nocase",
           "a mytype",
           "a STRUCT(b unknown_type)",
           "",
       }) {
    auto d = ParseTableDefinition(text);
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << text;
  }
}

TEST(StatementTest, WritesCarryRenderedParts) {
  auto ins = ParseStatement("insert into skade.\"a.b\".orders VALUES (1, 'x'), (2, E'\\'');");
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  EXPECT_EQ(ins->kind, Kind::kInsert);
  EXPECT_EQ(ins->target, (std::vector<std::string>{"skade", "a.b", "orders"}));
  EXPECT_EQ(ins->query->sql(), "SELECT * FROM (VALUES (1, 'x'), (2, '''')) AS valueslist");

  auto cols = ParseStatement("INSERT INTO t (a, \"B c\") SELECT x, y FROM u WHERE z");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->columns, (std::vector<std::string>{"a", "B c"}));

  auto del = ParseStatement("DELETE FROM ns.t WHERE t.id IN (1, 2) -- gone\n");
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->kind, Kind::kDelete);
  EXPECT_EQ(del->target, (std::vector<std::string>{"ns", "t"}));
  EXPECT_EQ(del->where->sql(), "((id IN (1, 2)))");  // the target's qualifier is dropped
  auto all = ParseStatement("DELETE FROM ns.t");
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->where.has_value());

  auto upd = ParseStatement("UPDATE ns.t AS x SET a = coalesce(x.b, 1), \"c d\" = (y = 2) WHERE k = 'a,b'");
  ASSERT_TRUE(upd.ok()) << upd.status().ToString();
  EXPECT_EQ(upd->kind, Kind::kUpdate);
  ASSERT_EQ(upd->assignments.size(), 2u);
  EXPECT_EQ(upd->assignments[0], (std::pair<std::string, std::string>{"a", "(COALESCE(b, 1))"}));
  EXPECT_EQ(upd->assignments[1].first, "c d");
  EXPECT_EQ(upd->where->sql(), "((k = 'a,b'))");
}

TEST(StatementTest, Ddl) {
  auto c = ParseStatement("CREATE TABLE IF NOT EXISTS ns.t (id BIGINT NOT NULL, d DECIMAL(10, 2))");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Kind::kCreateTable);
  EXPECT_TRUE(c->if_not_exists);
  EXPECT_EQ(c->definition.columns.size(), 2u);
  auto ctas = ParseStatement("create or replace table ns.t as select * from ns.s");
  ASSERT_TRUE(ctas.ok());
  EXPECT_TRUE(ctas->or_replace);
  EXPECT_EQ(ctas->query->sql(), "SELECT * FROM ns.s");
  auto drop = ParseStatement("DROP TABLE IF EXISTS \"x.y\".t");
  ASSERT_TRUE(drop.ok());
  EXPECT_EQ(drop->kind, Kind::kDropTable);
  EXPECT_TRUE(drop->if_exists);
  EXPECT_EQ(drop->target, (std::vector<std::string>{"x.y", "t"}));
  auto schema = ParseStatement("CREATE SCHEMA skade.\"a.b\"");
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema->kind, Kind::kCreateSchema);
  EXPECT_EQ(schema->target, (std::vector<std::string>{"skade", "a.b"}));
  auto drop_schema = ParseStatement("DROP SCHEMA IF EXISTS a");
  ASSERT_TRUE(drop_schema.ok());
  EXPECT_EQ(drop_schema->kind, Kind::kDropSchema);
  EXPECT_EQ(drop_schema->target, (std::vector<std::string>{"a"}));
}

TEST(StatementTest, DropTablePurgeIsSparksClauseOnADropTable) {
  // DuckDB's grammar has no PURGE: the statement before the word is parsed as written.
  for (const char* sql : {"DROP TABLE ns.t PURGE", "drop table if exists ns.t purge;", "DROP TABLE ns.t Purge -- why\n",
                          "DROP TABLE ns.t PURGE /* all of it */ ;"}) {
    auto drop = ParseStatement(sql);
    ASSERT_TRUE(drop.ok()) << sql << ": " << drop.status().ToString();
    EXPECT_EQ(drop->kind, Kind::kDropTable) << sql;
    EXPECT_TRUE(drop->purge) << sql;
    EXPECT_EQ(drop->target, (std::vector<std::string>{"ns", "t"})) << sql;
  }
  EXPECT_TRUE(ParseStatement("DROP TABLE IF EXISTS ns.t PURGE")->if_exists);
  EXPECT_FALSE(ParseStatement("DROP TABLE ns.t")->purge);
  // A table named purge is a name, quoted or not where DuckDB reads one.
  auto named = ParseStatement("DROP TABLE ns.purge");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_FALSE(named->purge);
  EXPECT_EQ(named->target, (std::vector<std::string>{"ns", "purge"}));
  auto quoted = ParseStatement("DROP TABLE ns.t \"PURGE\"");
  EXPECT_EQ(quoted.status().code(), StatusCode::kInvalidArgument);
  // PURGE ends a DROP TABLE, nothing else; the first error stands.
  for (const char* sql : {"DROP SCHEMA s PURGE", "DROP VIEW v PURGE", "PURGE", "DROP TABLE t PURGE PURGE",
                          "DROP TABLE t PURGE; DROP TABLE u PURGE", "INSERT INTO t VALUES (1); DROP TABLE t PURGE",
                          "DROP TABLE t; PURGE", "DROP TABLE t; /* and */ purge;"}) {
    auto s = ParseStatement(sql);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << sql;
  }
  auto cascade = ParseStatement("DROP TABLE t CASCADE PURGE");
  ASSERT_TRUE(cascade.ok());
  EXPECT_NE(cascade->unsupported, "");
}

// USE is DuckDB's SET schema: the name comes back unquoted and dotted, for the session to use.
TEST(StatementTest, UseNamesTheSchemaItChooses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"USE sales", "sales"},           {"use sales.eu;", "sales.eu"},      {"USE \"Sales\"", "Sales"},
      {"USE \"sales.eu\"", "sales.eu"}, {"USE \"my-ns\".t2", "my-ns.t2"}, {"SET schema = 'x.y'", "x.y"},
      {"SET SESSION schema = 'x'", "x"}};
  for (const auto& [sql, schema] : cases) {
    auto use = ParseStatement(sql);
    ASSERT_TRUE(use.ok()) << sql << ": " << use.status().ToString();
    EXPECT_EQ(use->kind, Kind::kOther) << sql;
    ASSERT_TRUE(use->use_schema.has_value()) << sql;
    EXPECT_EQ(*use->use_schema, schema) << sql;
  }
  for (const char* sql : {"SET threads = 4", "SET GLOBAL schema = 'x'", "RESET schema", "SELECT 1"}) {
    auto other = ParseStatement(sql);
    ASSERT_TRUE(other.ok()) << sql << ": " << other.status().ToString();
    EXPECT_FALSE(other->use_schema.has_value()) << sql;
  }
}

TEST(StatementTest, ViewsOfTheCatalogAreWrites) {
  auto created = ParseStatement("CREATE OR REPLACE VIEW s.v (a, b) AS SELECT x, y FROM t WHERE x > 1");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->kind, Kind::kCreateView);
  EXPECT_TRUE(created->is_write());
  EXPECT_TRUE(created->or_replace);
  EXPECT_EQ(created->target, (std::vector<std::string>{"s", "v"}));
  EXPECT_EQ(created->columns, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(created->query);
  EXPECT_NE(created->query->sql().find("x > 1"), std::string::npos) << created->query->sql();
  EXPECT_TRUE(ParseStatement("CREATE VIEW IF NOT EXISTS v AS SELECT 1")->if_not_exists);
  auto dropped = ParseStatement("DROP VIEW IF EXISTS s.v");
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(dropped->kind, Kind::kDropView);
  EXPECT_TRUE(dropped->if_exists);
  EXPECT_EQ(dropped->target, (std::vector<std::string>{"s", "v"}));
  EXPECT_FALSE(ParseStatement("DROP VIEW v CASCADE")->unsupported.empty());
}

TEST(StatementTest, OtherStatementsAreClassifiedNotRun) {
  for (const char* sql : {"CREATE TEMP VIEW v AS SELECT 1", "COPY t FROM 'f'", "ATTACH 'x' AS y", "SET threads = 1",
                          "CREATE MACRO m(x) AS x", "DETACH skade", "PRAGMA show_tables", "INSTALL httpfs",
                          "EXPORT DATABASE 'x'", "CALL pragma_version()"}) {
    auto s = ParseStatement(sql);
    ASSERT_TRUE(s.ok()) << sql << ": " << s.status().ToString();
    EXPECT_EQ(s->kind, Kind::kOther) << sql;
    EXPECT_FALSE(s->is_write()) << sql;
  }
  EXPECT_EQ(ParseStatement("SELECT 1")->kind, Kind::kQuery);
  EXPECT_EQ(ParseStatement("DESCRIBE SELECT 1")->kind, Kind::kQuery);
  EXPECT_EQ(ParseStatement("EXPLAIN SELECT 1")->kind, Kind::kExplain);
  EXPECT_EQ(ParseStatement("EXPLAIN COPY t TO 'x'")->kind, Kind::kOther);
  EXPECT_EQ(ParseStatement("COPY (SELECT 1) TO 'x.parquet'")->kind, Kind::kExport);
  EXPECT_FALSE(ParseStatement("COPY (SELECT 1) TO 'x.parquet'")->is_write());
}

TEST(StatementTest, MalformedOrStackedStatementsAreErrors) {
  for (const char* sql : {"INSERT t VALUES (1)", "INSERT INTO t", "DELETE t", "DELETE FROM t WHERE",
                          "INSERT INTO t VALUES (1); DROP TABLE t", "UPDATE t SET", "UPDATE t SET a WHERE b",
                          "CREATE TABLE t (a INT", "DELETE FROM t WHERE a = 'x", "",
                          // The smuggling from the field: a DEFAULT escape then statements.
                          "CREATE TABLE s.t (a VARCHAR DEFAULT E'\\''); COPY (SELECT 1) TO 'catalog.db'; "
                          "ATTACH 'x' AS y; DETACH skade; CREATE TABLE s.u (b VARCHAR DEFAULT E'\\'')",
                          "CREATE TABLE s.t (a INT DEFAULT 1)"}) {
    auto s = ParseStatement(sql);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << sql;
  }
  for (const char* sql : {"INSERT INTO t SELECT 1 RETURNING *", "INSERT INTO t BY NAME SELECT 1 AS a",
                          "INSERT INTO t DEFAULT VALUES", "INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING",
                          "UPDATE t SET a = 1 FROM u RETURNING *", "DELETE FROM t USING u", "CREATE TEMP TABLE t (a INT)",
                          "MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN ERROR",
                          "MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN UPDATE SET * ",
                          "MERGE INTO t USING u ON t.k = u.k WHEN NOT MATCHED THEN INSERT *",
                          "MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN DELETE RETURNING *",
                          "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "DROP SCHEMA s CASCADE"}) {
    auto s = ParseStatement(sql);
    ASSERT_TRUE(s.ok()) << sql << ": " << s.status().ToString();
    EXPECT_TRUE(s->is_write()) << sql;
    EXPECT_NE(s->unsupported, "") << sql;
    EXPECT_FALSE(s->query.has_value()) << sql;
  }
}

TEST(StatementTest, UpdateFromAndMergeCarryTheirRelationsAndClauses) {
  auto u = ParseStatement("UPDATE s.t AS x SET a = y.b + 1 FROM s.u y, (SELECT 1 AS k) z WHERE x.k = y.k AND z.k = 1");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->kind, Kind::kUpdate);
  EXPECT_EQ(u->unsupported, "");
  EXPECT_EQ(u->target_alias, "x");
  EXPECT_EQ(u->from, "s.u AS y , (SELECT 1 AS k) AS z");  // DuckDB's rendering of a cross product
  ASSERT_EQ(u->assignments.size(), 1u);
  EXPECT_EQ(u->assignments[0].second, "((y.b + 1))");  // qualifiers kept: it runs over x and y
  ASSERT_TRUE(u->where.has_value());
  EXPECT_EQ(u->where->sql(), "(((x.k = y.k) AND (z.k = 1)))");

  auto m = ParseStatement(
      "MERGE INTO s.t USING (SELECT * FROM s.u) AS n ON t.k = n.k "
      "WHEN MATCHED AND n.gone THEN DELETE WHEN MATCHED THEN UPDATE SET v = n.v "
      "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (n.k, n.v) WHEN NOT MATCHED BY SOURCE THEN DO NOTHING");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->kind, Kind::kMerge);
  EXPECT_TRUE(m->is_write());
  EXPECT_EQ(m->unsupported, "");
  EXPECT_EQ(m->target, (std::vector<std::string>{"s", "t"}));
  EXPECT_EQ(m->target_alias, "t");
  EXPECT_EQ(m->from, "(SELECT * FROM s.u) AS n");
  ASSERT_TRUE(m->on.has_value());
  EXPECT_EQ(m->on->sql(), "((t.k = n.k))");
  ASSERT_EQ(m->merge_actions.size(), 4u);
  using When = MergeAction::When;
  using Do = MergeAction::Do;
  EXPECT_EQ(m->merge_actions[0].when, When::kMatched);
  EXPECT_EQ(m->merge_actions[0].action, Do::kDelete);
  EXPECT_EQ(m->merge_actions[0].condition->sql(), "(n.gone)");
  EXPECT_EQ(m->merge_actions[1].action, Do::kUpdate);
  EXPECT_EQ(m->merge_actions[1].assignments, (std::vector<std::pair<std::string, std::string>>{{"v", "(n.v)"}}));
  EXPECT_EQ(m->merge_actions[2].when, When::kNotMatchedBySource);
  EXPECT_EQ(m->merge_actions[2].action, Do::kNothing);
  EXPECT_EQ(m->merge_actions[3].when, When::kNotMatchedByTarget);
  EXPECT_EQ(m->merge_actions[3].columns, (std::vector<std::string>{"k", "v"}));
  EXPECT_EQ(m->merge_actions[3].values, (std::vector<std::string>{"(n.k)", "(n.v)"}));

  // USING (columns) is spelled out on both names; a marker leaves a MERGE unbound until bound.
  auto using_columns = ParseStatement("MERGE INTO t USING u USING (k) WHEN MATCHED THEN DELETE");
  ASSERT_TRUE(using_columns.ok()) << using_columns.status().ToString();
  EXPECT_EQ(using_columns->on->sql(), "((t.k = u.k))");
  auto marked = ParseStatement("MERGE INTO t USING u ON t.k = u.k WHEN MATCHED AND u.v > ? THEN DELETE");
  ASSERT_TRUE(marked.ok());
  EXPECT_TRUE(marked->unbound);
  EXPECT_TRUE(marked->merge_actions.empty());
  const std::string one = "1";
  auto bound = ParseStatement("MERGE INTO t USING u ON t.k = u.k WHEN MATCHED AND u.v > ? THEN DELETE", {&one, 1});
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_EQ(bound->merge_actions[0].condition->sql(), "((u.v > 1))");
  // Clauses that cannot apply are mistakes.
  EXPECT_EQ(ParseStatement("MERGE INTO t USING u ON t.k = u.k WHEN NOT MATCHED THEN DELETE").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStatement("MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN INSERT VALUES (1)").status().code(),
            StatusCode::kInvalidArgument);
}

// DuckDB reads C strings: text after a NUL would vanish and the rest would run.
TEST(StatementTest, TextWithANulByteIsRefusedEverywhere) {
  const std::string nul = std::string("DELETE FROM t WHERE id = 1") + '\0' + " AND id = 2";
  EXPECT_EQ(ParseStatement(nul).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Predicate::Parse(std::string("id = 1") + '\0' + " AND id = 2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Query::Parse(std::string("SELECT 1") + '\0' + " WHERE false").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTableDefinition(std::string("a INT") + '\0' + ", b INT").status().code(), StatusCode::kInvalidArgument);
  auto db = std::move(Database::Open({})).value();
  EXPECT_EQ(db->QueryRows(std::string("SELECT 1") + '\0' + " WHERE false").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db->Execute(std::string("SELECT 1") + '\0').code(), StatusCode::kInvalidArgument);
}

TEST(StatementTest, ParameterMarkersBindInTheTree) {
  const std::string sql = "INSERT INTO t VALUES (?, '?', \"?\", ?) -- ?";
  auto unbound = ParseStatement(sql);
  ASSERT_TRUE(unbound.ok()) << unbound.status().ToString();
  EXPECT_EQ(unbound->parameter_count, 2);
  EXPECT_TRUE(unbound->unbound);
  EXPECT_FALSE(unbound->query.has_value());

  std::vector<std::string> values = {"1", "CAST('a''b'')--' AS VARCHAR)"};
  auto bound = ParseStatement(sql, values);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_FALSE(bound->unbound);
  EXPECT_EQ(bound->query->sql(), "SELECT * FROM (VALUES (1, '?', \"?\", CAST('a''b'')--' AS VARCHAR))) AS valueslist");

  std::vector<std::string> one = {"1"};
  EXPECT_EQ(ParseStatement(sql, one).status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> three = {"1", "2", "3"};
  EXPECT_EQ(ParseStatement(sql, three).status().code(), StatusCode::kInvalidArgument);
  // A "literal" that is an expression (or more) is refused.
  std::vector<std::string> sneaky = {"1", "(SELECT 2)"};
  EXPECT_EQ(ParseStatement(sql, sneaky).status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> stacked = {"1", "2); DROP TABLE t; SELECT (3"};
  EXPECT_EQ(ParseStatement(sql, stacked).status().code(), StatusCode::kInvalidArgument);

  std::vector<std::string> two = {"'x'", "7"};
  auto upd = ParseStatement("UPDATE s.t SET a = ? WHERE b = $2", two);
  ASSERT_TRUE(upd.ok()) << upd.status().ToString();
  EXPECT_EQ(upd->assignments[0].second, "('x')");
  EXPECT_EQ(upd->where->sql(), "((b = 7))");
}

// A write with markers rendered against a stand-in table: its own checked parts, markers kept
// (as "$n", numbered as in the statement), so that DuckDB types them as the write uses them.
TEST(StatementTest, AParameterProbeRendersTheWritesPartsAgainstAStandIn) {
  auto db = std::move(Database::Open({})).value();
  ASSERT_TRUE(db->Execute("CREATE TABLE x (k INTEGER, v VARCHAR, d DATE)").ok());
  auto types = [&](const std::string& probe) {
    std::vector<std::string> out;
    auto con = db->Connect();
    EXPECT_TRUE(con.ok());
    auto stmt = (*con)->Prepare(probe);
    EXPECT_TRUE(stmt.ok()) << probe << ": " << stmt.status().ToString();
    if (!stmt.ok()) return out;
    auto schema = (*stmt)->ParameterSchema();
    EXPECT_TRUE(schema.ok());
    for (int64_t i = 0; i < (*schema)->n_children; ++i) out.emplace_back((*schema)->children[i]->format);
    return out;
  };
  auto insert = RenderParameterProbe("INSERT INTO s.t (v, k) VALUES (?, ?), ('?', 1e9)", "x");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  EXPECT_EQ(insert->statement,
            "INSERT INTO x (\"v\", \"k\") VALUES ($1, $2), ('?', CAST('1000000000.0' AS DOUBLE))");
  EXPECT_EQ(types(insert->statement), (std::vector<std::string>{"u", "i"}));
  auto update = RenderParameterProbe("UPDATE s.t AS a SET d = ? WHERE a.k = ? -- ;DROP TABLE x", "x");
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  EXPECT_EQ(update->statement, "UPDATE x SET \"d\" = ($1) WHERE ((k = $2))");
  EXPECT_EQ(types(update->statement), (std::vector<std::string>{"tdD", "i"}));
  // The tables the statement reads are the ones its `reads` query names, beside the stand-in.
  auto remove = RenderParameterProbe("DELETE FROM t WHERE v IN (SELECT v FROM s.u WHERE k > $1)", "x");
  ASSERT_TRUE(remove.ok()) << remove.status().ToString();
  auto tables = db->ReferencedTables(remove->reads);
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  std::sort(tables->begin(), tables->end());  // (a set: no order is promised)
  EXPECT_EQ(*tables, (std::vector<std::vector<std::string>>{{"s", "u"}, {"x"}}));
  auto selected = RenderParameterProbe("INSERT INTO t SELECT ?, ?, NULL", "x");
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_EQ(types(selected->statement), (std::vector<std::string>{"n", "n"}));

  for (const char* sql : {"SELECT ?", "CREATE TABLE t AS SELECT ? AS a", "INSERT INTO t VALUES (?); DROP TABLE x",
                          "DELETE FROM t WHERE"}) {
    EXPECT_EQ(RenderParameterProbe(sql, "x").status().code(), StatusCode::kInvalidArgument) << sql;
  }
  EXPECT_EQ(RenderParameterProbe("DELETE FROM t WHERE k = ? RETURNING *", "x").status().code(),
            StatusCode::kNotImplemented);
}

// Parses each statement of `marked` and of `unmarked`: `field` (a Statement's mark, the name of
// what set it) is set on the first ones and empty on the others.
void ExpectMarks(std::string Statement::*field, std::initializer_list<const char*> marked,
                 std::initializer_list<const char*> unmarked) {
  for (const char* sql : marked) {
    auto st = ParseStatement(sql);
    ASSERT_TRUE(st.ok()) << sql << ": " << st.status().ToString();
    EXPECT_FALSE(((*st).*field).empty()) << sql;
  }
  for (const char* sql : unmarked) {
    auto st = ParseStatement(sql);
    ASSERT_TRUE(st.ok()) << sql;
    EXPECT_TRUE(((*st).*field).empty()) << sql << ": " << (*st).*field;
  }
}

// Settings name the server's folders (allowed_directories): a statement that reads them (or
// secrets, files, attached databases) anywhere — FROM, a subquery, a CTE, EXPLAIN, qualified,
// inside a write — is marked, so that a server for untrusted clients can refuse it.
TEST(StatementTest, ReadsOfTheServersConfigurationAreMarkedWhereverTheyHide) {
  ExpectMarks(&Statement::reads_configuration,
              {"SELECT * FROM duckdb_settings()", "SELECT current_setting('allowed_directories')",
               "SELECT name FROM system.main.duckdb_settings()",
               "WITH s AS (SELECT * FROM duckdb_settings()) SELECT * FROM s",
               "SELECT (SELECT value FROM duckdb_settings() LIMIT 1)",
               "EXPLAIN SELECT * FROM DuckDB_Databases()",
               "SELECT 1 WHERE EXISTS (SELECT * FROM duckdb_secrets())",
               "SELECT * FROM t JOIN duckdb_extensions() e ON true",
               "INSERT INTO s.t SELECT value FROM duckdb_settings()",
               "SELECT x FROM (SELECT getvariable('v') AS x) UNION ALL SELECT 1",
               "SELECT memory_limit FROM pragma_database_size()",
               // Relations whose parts DuckDB's iterator leaves out.
               "SUMMARIZE SELECT current_setting('allowed_directories') AS d",
               "DESCRIBE SELECT current_setting('allowed_directories') AS d",
               "SELECT * FROM (SUMMARIZE SELECT value FROM duckdb_settings())",
               "SELECT * FROM (SELECT 1 AS a, 'x' AS b) PIVOT (sum(a) FOR concat(b, current_setting('x')) IN ('y'))",
               "SELECT * FROM (SELECT 1 AS a, 2 AS c) UNPIVOT (v FOR n IN (a, (c + length(current_setting('x')))))"},
              {"SELECT count(*) FROM t", "SELECT settings FROM t", "SELECT lower(name) FROM duckdb_tables()"});
}

// SQL handed to a function as a value (query('…'), query_table('t'), a serialized statement)
// runs without being parsed here, so no check reaches it: such statements are marked wherever
// the call hides, and a server for untrusted clients refuses them.
TEST(StatementTest, SqlRunAsAValueIsMarkedWhereverItHides) {
  ExpectMarks(&Statement::runs_sql_text,
              {"SELECT * FROM query('SELECT current_setting(''allowed_directories'')')",
               "SELECT * FROM QUERY_TABLE('t')",
               "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
               "SELECT * FROM t WHERE id IN (SELECT 1 FROM query('SELECT 1'))",
               "WITH q AS (SELECT * FROM query('SELECT 1')) SELECT * FROM q",
               "SUMMARIZE SELECT * FROM query('SELECT 1')",
               "INSERT INTO s.t SELECT * FROM query('SELECT 1')"},
              {"SELECT 'query' AS query FROM t AS query", "SELECT json_serialize_sql('SELECT 1')",
               "SELECT * FROM read_parquet('x.parquet')"});
}

// SubstituteRelations hands over every relation with its AT clause and replaces exactly those
// it is told to, keeping aliases; nothing substituted leaves the statement to run as sent.
TEST(SubstituteRelationsTest, SeesEveryRelationAndReplacesOnlyThoseAnswered) {
  std::vector<std::string> seen;
  auto record = [&](const RelationReference& r) -> Result<std::optional<std::string>> {
    std::string name;
    for (const std::string& p : r.name) name += (name.empty() ? "" : ".") + p;
    if (r.kind == RelationReference::Kind::kShowTables) name = "SHOW TABLES";
    if (r.kind == RelationReference::Kind::kDescribe) name = "DESCRIBE " + name;
    if (r.cte) name += " (cte)";
    if (r.at && r.at->snapshot_id) name += " @" + std::to_string(*r.at->snapshot_id);
    if (r.at && r.at->ref) name += " @'" + *r.at->ref + "'";
    if (r.at && !r.at->timestamp_sql.empty()) name += " @" + r.at->timestamp_sql;
    seen.push_back(name);
    if (!r.at && r.kind == RelationReference::Kind::kTable) return std::optional<std::string>();
    return std::optional<std::string>("SELECT * FROM range(3)");
  };
  auto plain = SubstituteRelations("WITH w AS (SELECT * FROM a.t) SELECT * FROM w JOIN b ON true "
                                   "WHERE x IN (SELECT y FROM c.d.e)",
                                   record);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->has_value());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a.t", "b", "c.d.e", "w (cte)"}));

  seen.clear();
  auto at = SubstituteRelations(
      "SELECT o.x FROM s.t AS o AT (VERSION => 42) JOIN s.t AT (VERSION => 'dev') ON true, "
      "s.t AT (TIMESTAMP => TIMESTAMP '2024-01-01') AS q",
      record);
  // The alias goes before AT in DuckDB's grammar; after it, the text does not parse.
  EXPECT_EQ(at.status().code(), StatusCode::kInvalidArgument);
  at = SubstituteRelations(
      "SELECT o.x FROM s.t AS o AT (VERSION => 42) JOIN s.t AT (VERSION => 'dev') ON true, "
      "s.t AS q AT (TIMESTAMP => TIMESTAMP '2024-01-01')",
      record);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  ASSERT_TRUE(at->has_value());
  EXPECT_EQ(**at,
            "SELECT o.x FROM \"range\"(3) AS o INNER JOIN \"range\"(3) AS t ON (CAST('t' AS BOOLEAN)) , "
            "\"range\"(3) AS q");
  EXPECT_EQ(seen, (std::vector<std::string>{"s.t @42", "s.t @'dev'", "s.t @CAST('2024-01-01' AS TIMESTAMP)"}));

  seen.clear();
  auto show = SubstituteRelations("SHOW TABLES", record);
  ASSERT_TRUE(show.ok() && show->has_value()) << show.status().ToString();
  EXPECT_EQ(**show, "SELECT * FROM \"range\"(3)");
  auto describe = SubstituteRelations("DESCRIBE \"a.b\".t", record);
  ASSERT_TRUE(describe.ok() && describe->has_value()) << describe.status().ToString();
  EXPECT_EQ(seen, (std::vector<std::string>{"SHOW TABLES", "DESCRIBE a.b.t"}));
}

TEST(SubstituteRelationsTest, RefusesAtClausesItCannotHonour) {
  auto keep = [](const RelationReference&) -> Result<std::optional<std::string>> { return std::optional<std::string>(); };
  for (const char* sql : {"SELECT * FROM t AT (VERSION => 1)",           // not substituted: no versions
                          "SELECT * FROM t AT (VERSION => 1.5)",         // neither an id nor a name
                          "SELECT * FROM t AT (VERSION => x)",           // a column
                          "SELECT * FROM t AT (TIMESTAMP => x + 1)",     // a column
                          "SELECT * FROM t AT (TIMESTAMP => (SELECT 1))",  // a subquery
                          "SELECT * FROM t AT (TIMESTAMP => getenv('HOME'))"}) {
    EXPECT_EQ(SubstituteRelations(sql, keep).status().code(), StatusCode::kInvalidArgument) << sql;
  }
  EXPECT_EQ(ParseStatement("UPDATE t AT (VERSION => 1) SET a = 1").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::engine
