// LakeSql::ResolveQuery over a real SQLite catalog: the lake's listings (SHOW, DESCRIBE,
// information_schema) show every table without a query having touched it, required columns
// as NOT NULL; AT (…) reads the snapshot `skade scan` reads; unknown names get real suggestions.
#include <gtest/gtest.h>

#include "skade/iceberg/scan.h"
#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::sql {
namespace {

using TextRows = std::vector<std::vector<std::string>>;

class LakeSqlQueryTest : public testing::LakeTest {
 protected:
  LakeSqlQueryTest() : LakeTest("sales") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  // Runs `sql` as a session of `schema` runs it; the rows as text.
  TextRows Sql(const std::string& sql, const std::string& schema = "") {
    auto resolved = lake_->ResolveQuery(sql, schema);
    EXPECT_TRUE(resolved.ok()) << sql << ": " << resolved.status().ToString();
    if (!resolved.ok()) return {};
    auto setup = lake_->SessionSetup(Session{schema, ""}, *resolved);
    EXPECT_TRUE(setup.ok()) << setup.status().ToString();
    if (!setup.ok()) return {};
    return testing::QueryText(*db_->WithConnectionSetup(std::move(*setup)), *resolved);
  }

  Status Refused(const std::string& sql, const std::string& schema = "") {
    auto resolved = lake_->ResolveQuery(sql, schema);
    if (!resolved.ok()) return resolved.status();
    auto rows = db_->QueryRows(*resolved);
    return rows.ok() ? Status::Ok() : rows.status();
  }

  // sales.orders (id required, the identifier field) and "sales.eu".orders, neither queried.
  void CreateTwoNamespaces() {
    ASSERT_TRUE(CreateTable("orders", "id BIGINT NOT NULL, name VARCHAR", "", {}, {1}));
    ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("sales.eu"), {}).ok());
    catalog::CreateTableRequest req;
    auto schema = engine::SchemaFromColumnDefinitions("id BIGINT, amount DECIMAL(10,2) NOT NULL");
    ASSERT_TRUE(schema.ok());
    req.schema = *schema;
    ASSERT_TRUE(catalog_->CreateTable(*catalog::TableIdent::Parse("sales.eu.orders"), req).ok());
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(LakeSqlQueryTest, ListingsShowEveryTableOfTheLake) {
  CreateTwoNamespaces();
  EXPECT_EQ(Sql("SHOW TABLES"), (TextRows{{"sales", "orders"}, {"sales.eu", "orders"}}));
  EXPECT_EQ(Sql("SHOW TABLES", "sales.eu"), (TextRows{{"orders"}}));
  EXPECT_EQ(Sql("SELECT \"database\", schema, name, column_names, column_types, temporary FROM "
                "(SHOW ALL TABLES)"),
            (TextRows{{"skade", "sales", "orders", "[id, name]", "[BIGINT, VARCHAR]", "false"},
                      {"skade", "sales.eu", "orders", "[id, amount]", "[BIGINT, 'DECIMAL(10,2)']",
                       "false"}}));
  EXPECT_EQ(Sql("SELECT table_catalog, table_schema, table_name, table_type FROM "
                "information_schema.tables "
                "ORDER BY ALL"),
            (TextRows{{"skade", "sales", "orders", "BASE TABLE"},
                      {"skade", "sales.eu", "orders", "BASE TABLE"}}));
  EXPECT_EQ(Sql("SELECT table_schema, column_name, ordinal_position, is_nullable, data_type "
                "FROM skade.information_schema.columns WHERE table_catalog = 'skade' ORDER BY ALL"),
            (TextRows{{"sales", "id", "1", "NO", "BIGINT"},
                      {"sales", "name", "2", "YES", "VARCHAR"},
                      {"sales.eu", "amount", "2", "NO", "DECIMAL(10,2)"},
                      {"sales.eu", "id", "1", "YES", "BIGINT"}}));
  // Counting rows reads no column of the listing.
  EXPECT_EQ(Sql("SELECT count(*) FROM information_schema.tables"), (TextRows{{"2"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM (SHOW ALL TABLES)"), (TextRows{{"2"}}));
  // A listing joins and filters like any relation.
  EXPECT_EQ(
      Sql("SELECT count(*) FROM information_schema.tables t JOIN information_schema.columns c "
          "USING (table_schema, table_name) WHERE t.table_schema = 'sales.eu'"),
      (TextRows{{"2"}}));
}

TEST_F(LakeSqlQueryTest, SchemaListingsShowTheLakesNamespaces) {
  CreateTwoNamespaces();
  ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("empty"), {}).ok());
  const TextRows lake{{"empty"}, {"sales"}, {"sales.eu"}};
  EXPECT_EQ(Sql("SHOW SCHEMAS"), lake);
  EXPECT_EQ(Sql("SHOW namespaces"), lake);
  EXPECT_EQ(Sql("SELECT schema_name FROM information_schema.schemata WHERE catalog_name = 'skade' ORDER BY ALL"),
            lake);
  // DuckDB's own schemas stay listed beside the lake's, once each.
  EXPECT_EQ(Sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'information_schema'"),
            (TextRows{{"1"}}));
  // A lake table named "schemas" is what DESCRIBE schemas means.
  ASSERT_TRUE(CreateTable("schemas", "x INTEGER"));
  EXPECT_EQ(Sql("DESCRIBE schemas", "sales"), (TextRows{{"x", "INTEGER", "YES", "NULL", "NULL", "NULL"}}));
}

TEST_F(LakeSqlQueryTest, DescribeShowsRequiredColumnsAndTheKey) {
  CreateTwoNamespaces();
  EXPECT_EQ(Sql("DESCRIBE sales.orders"),
            (TextRows{{"id", "BIGINT", "NO", "PRI", "NULL", "NULL"},
                      {"name", "VARCHAR", "YES", "NULL", "NULL", "NULL"}}));
  EXPECT_EQ(Sql("DESCRIBE \"sales.eu\".orders"),
            (TextRows{{"id", "BIGINT", "YES", "NULL", "NULL", "NULL"},
                      {"amount", "DECIMAL(10,2)", "NO", "NULL", "NULL", "NULL"}}));
  EXPECT_EQ(Sql("DESCRIBE orders", "sales.eu"), Sql("DESCRIBE \"sales.eu\".orders"));
}

TEST_F(LakeSqlQueryTest, AnEmptyLakeListsNothing) {
  EXPECT_EQ(Sql("SHOW TABLES"), TextRows{});
  EXPECT_EQ(Sql("SELECT count(*) FROM information_schema.columns WHERE table_catalog = 'skade'"),
            (TextRows{{"0"}}));
}

TEST_F(LakeSqlQueryTest, AtReadsTheSnapshotScanReads) {
  auto t = CreateTable("orders", "id BIGINT, name VARCHAR");
  ASSERT_TRUE(t);
  std::vector<int64_t> snapshots;
  for (const char* rows :
       {"SELECT 1 AS id, 'a' AS name", "SELECT range + 2 AS id, 'b' AS name FROM range(3)",
        "SELECT range + 5 AS id, 'c' AS name FROM range(10)"}) {
    auto outcome = t->Append(engine::WriteSource{rows, nullptr});
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    snapshots.push_back(outcome->snapshot_id);
  }
  ASSERT_TRUE(t->Refresh().ok());
  ASSERT_TRUE(t->CreateTag("first", snapshots[0]).ok());
  ASSERT_TRUE(t->CreateBranch("dev", snapshots[1]).ok());
  ASSERT_TRUE(t->Refresh().ok());
  const std::vector<std::string> counts = {"1", "4", "14"};
  for (size_t i = 0; i < snapshots.size(); ++i) {
    const std::string id = std::to_string(snapshots[i]);
    EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders AT (VERSION => " + id + ")"),
              (TextRows{{counts[i]}}))
        << id;
    // The same rows `skade scan --snapshot` reads (the table layer's selection).
    table::ReadOptions options;
    options.snapshot.snapshot_id = snapshots[i];
    EXPECT_EQ(Sql("SELECT id, name FROM sales.orders AT (VERSION => " + id + ") ORDER BY id"),
              Rows(*t, "SELECT id, name FROM t ORDER BY id", options));
    // By the time the snapshot was committed.
    const int64_t at_ms = t->metadata().SnapshotById(snapshots[i])->timestamp_ms;
    EXPECT_EQ(
        Sql("SELECT count(*) FROM orders AT (TIMESTAMP => epoch_ms(" + std::to_string(at_ms) + "))",
            "sales"),
        (TextRows{{counts[i]}}));
  }
  EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders AT (VERSION => 'first')"), (TextRows{{"1"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders AT (VERSION => 'dev')"), (TextRows{{"4"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders"), (TextRows{{"14"}}));
  // Without pushdown the pinned snapshot lists all its files, count(*) included.
  lake_->set_pushdown(false);
  EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders AT (VERSION => 'dev')"), (TextRows{{"4"}}));
  EXPECT_EQ(Sql("SELECT max(id) FROM sales.orders AT (VERSION => 'dev') WHERE id < 4"),
            (TextRows{{"3"}}));
  lake_->set_pushdown(true);
  // A past snapshot joins the current one; aliases and qualified columns still work.
  // DuckDB's grammar puts the alias before AT.
  EXPECT_EQ(
      Sql("SELECT count(*) FROM sales.orders AS now JOIN sales.orders AS old AT (VERSION => 'dev') "
          "ON now.id = old.id WHERE old.name = 'b'"),
      (TextRows{{"3"}}));
  EXPECT_EQ(Sql("SELECT (SELECT max(id) FROM sales.orders AT (VERSION => 'first')), "
                "(WITH x AS (FROM sales.orders AT (VERSION => " +
                std::to_string(snapshots[1]) + ")) SELECT count(*) FROM x)"),
            (TextRows{{"1", "4"}}));
  // A result column named by its text keeps the text written, not the substitute's.
  auto resolved =
      lake_->ResolveQuery("SELECT (SELECT max(id) FROM sales.orders AT (VERSION => 'first'))", "");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  auto columns = db_->QueryColumns(*resolved);
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  ASSERT_EQ(columns->size(), 1u);
  EXPECT_EQ((*columns)[0].name, "(SELECT max(id) FROM sales.orders AT (VERSION => 'first'))");
  // Parameter markers survive the rendering (Flight SQL prepared statements).
  auto marked = lake_->ResolveQuery(
      "SELECT count(*) FROM sales.orders AT (VERSION => 'dev') WHERE id > ?", "");
  ASSERT_TRUE(marked.ok()) << marked.status().ToString();
  auto con = db_->Connect();
  ASSERT_TRUE(con.ok());
  auto prepared = (*con)->Prepare(*marked);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  EXPECT_EQ((*prepared)->parameter_count(), 1);
}

TEST_F(LakeSqlQueryTest, UnknownSnapshotsRefsAndTimesAreErrors) {
  auto t = CreateTable("orders", "id BIGINT");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT 1 AS id", nullptr}).ok());
  EXPECT_EQ(Refused("SELECT * FROM sales.orders AT (VERSION => 12345)").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Refused("SELECT * FROM sales.orders AT (VERSION => 'nope')").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Refused("SELECT * FROM sales.orders AT (TIMESTAMP => TIMESTAMP '2001-01-01')").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Refused("SELECT * FROM sales.orders AT (TIMESTAMP => id)").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused("SELECT * FROM sales.orders AT (VERSION => 1.5)").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused("SELECT * FROM information_schema.tables AT (VERSION => 1)").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Refused("SELECT * FROM sales.nothing AT (VERSION => 1)").code(), StatusCode::kInvalidArgument);
  // Writes never take AT: their target is the current snapshot.
  EXPECT_EQ(engine::ParseStatement("DELETE FROM sales.orders AT (VERSION => 1) WHERE id = 1")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(engine::ParseStatement("INSERT INTO sales.orders AT (VERSION => 1) VALUES (2)")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LakeSqlQueryTest, InsertFromAPastSnapshotWritesTheCurrentOne) {
  auto t = CreateTable("orders", "id BIGINT");
  ASSERT_TRUE(t);
  auto first = t->Append(engine::WriteSource{"SELECT 1 AS id", nullptr});
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT 2 AS id", nullptr}).ok());
  auto insert = engine::ParseStatement(
      "INSERT INTO sales.orders SELECT id * 10 FROM sales.orders AT (VERSION => " +
      std::to_string(first->snapshot_id) + ")");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  auto n = lake_->ExecuteWrite(*insert, "");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Sql("SELECT id FROM sales.orders ORDER BY id"), (TextRows{{"1"}, {"2"}, {"10"}}));
}

TEST_F(LakeSqlQueryTest, UnknownNamesSuggestLakeTables) {
  CreateTwoNamespaces();
  Status typo = Refused("SELECT * FROM sales.ordres");
  EXPECT_EQ(typo.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.message().find("did you mean sales.orders?"), std::string::npos)
      << typo.ToString();
  EXPECT_EQ(typo.message().find("information_schema"), std::string::npos) << typo.ToString();
  // A view DuckDB already has (from an earlier query) outside the search path changes nothing.
  EXPECT_EQ(Sql("SELECT count(*) FROM sales.orders"), (TextRows{{"0"}}));
  EXPECT_EQ(Refused("SELECT * FROM orders").code(), StatusCode::kInvalidArgument);
  Status unqualified = Refused("SELECT * FROM ordrs");
  EXPECT_EQ(unqualified.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unqualified.message().find("\"sales.eu\".orders"), std::string::npos)
      << unqualified.ToString();
  // sales.eu.orders is catalog "sales", schema "eu" to DuckDB: the hint names the quoted form.
  Status nested = Refused("SELECT * FROM sales.eu.orders");
  EXPECT_EQ(nested.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nested.message().find("write \"sales.eu\".orders"), std::string::npos)
      << nested.ToString();
  // DuckDB's own relations and WITH names are not the lake's to judge.
  EXPECT_EQ(Sql("WITH ordrs AS (SELECT 1 AS x) SELECT * FROM ordrs"), (TextRows{{"1"}}));
  EXPECT_EQ(Sql("SELECT count(*) > 0 FROM information_schema.schemata"), (TextRows{{"true"}}));
  EXPECT_EQ(Sql("SELECT count(*) > 0 FROM duckdb_types"), (TextRows{{"true"}}));
}

// A view of the catalog, `sql` in `dialect`, its columns `columns` (DuckDB definitions), its
// default namespace `home`.
Status CreateLakeView(catalog::Catalog& catalog, const std::string& name, const std::string& sql,
                      const std::string& columns, const std::vector<std::string>& home,
                      const std::string& dialect = "spark") {
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema, engine::SchemaFromColumnDefinitions(columns));
  catalog::CreateViewRequest request;
  request.schema = schema;
  request.version.representations.push_back(iceberg::ViewRepresentation{sql, dialect});
  request.version.default_namespace = home;
  SKADE_ASSIGN_OR_RETURN(auto ident, catalog::TableIdent::Parse(name));
  return catalog.CreateView(ident, request).status();
}

TEST_F(LakeSqlQueryTest, ViewsOfTheCatalogReadTheirQuery) {
  auto t = CreateTable("orders", "id BIGINT, name VARCHAR");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT range AS id, 'n' || range AS name FROM range(5)", nullptr}).ok());
  ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("reports"), {}).ok());
  // Unqualified names are the view's default namespace, not the session's.
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.big", "SELECT id, name FROM orders WHERE id >= 3",
                             "order_id BIGINT, label VARCHAR", {"sales"}).ok());
  EXPECT_EQ(Sql("SELECT order_id, label FROM reports.big ORDER BY 1"), (TextRows{{"3", "n3"}, {"4", "n4"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM big", "reports"), (TextRows{{"2"}}));
  // A view of a view, in DuckDB's dialect, joined with a table.
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.top", "SELECT max(order_id) AS m FROM big", "m BIGINT",
                             {"reports"}, "duckdb").ok());
  EXPECT_EQ(Sql("SELECT o.name FROM reports.top JOIN sales.orders o ON o.id = top.m"), (TextRows{{"n4"}}));
  // Views show in the listings beside the tables.
  EXPECT_EQ(Sql("SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY ALL"),
            (TextRows{{"reports", "big", "VIEW"}, {"reports", "top", "VIEW"}, {"sales", "orders", "BASE TABLE"}}));
  EXPECT_EQ(Sql("SHOW TABLES", "reports"), (TextRows{{"big"}, {"top"}}));
  // A commit shows in the view at once.
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT 9 AS id, 'n9' AS name", nullptr}).ok());
  EXPECT_EQ(Sql("SELECT * FROM reports.top"), (TextRows{{"9"}}));

  // Refusals name the view and say why.
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.trino_only", "SELECT 1", "x INTEGER", {"sales"}, "trino").ok());
  Status trino = Refused("SELECT * FROM reports.trino_only");
  EXPECT_EQ(trino.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(trino.message().find("has trino"), std::string::npos) << trino.ToString();
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.wide", "SELECT 1 AS a, 2 AS b", "a INTEGER", {"sales"}).ok());
  Status wide = Refused("SELECT * FROM reports.wide");
  EXPECT_NE(wide.message().find("gives 2 columns, its schema has 1"), std::string::npos) << wide.ToString();
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.self", "SELECT * FROM self", "x INTEGER", {"reports"}).ok());
  Status self = Refused("SELECT * FROM reports.self");
  EXPECT_EQ(self.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(self.message().find("nest deeper"), std::string::npos) << self.ToString();
  // A view's SQL is one query that reads no server configuration (it runs unseen by the
  // statement checks of a server).
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.settings", "SELECT value FROM duckdb_settings()", "value VARCHAR",
                             {"sales"}).ok());
  Status settings = Refused("SELECT * FROM reports.settings");
  EXPECT_EQ(settings.code(), StatusCode::kPermissionDenied) << settings.ToString();
  EXPECT_NE(settings.message().find("duckdb_settings"), std::string::npos) << settings.ToString();
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.copy", "COPY (SELECT 1) TO 'x.csv'", "x INTEGER", {"sales"}).ok());
  EXPECT_EQ(Refused("SELECT * FROM reports.copy").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.two", "SELECT 1 AS x; SELECT 2 AS x", "x INTEGER", {"sales"}).ok());
  EXPECT_EQ(Refused("SELECT * FROM reports.two").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.spark_names", "SELECT id FROM lake.sales.eu.orders", "id BIGINT",
                             {"sales"}).ok());
  Status four = Refused("SELECT * FROM reports.spark_names");
  EXPECT_EQ(four.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(four.message().find("more than three parts"), std::string::npos) << four.ToString();
  ASSERT_TRUE(CreateLakeView(*catalog_, "reports.typo", "SELECT * FROM ordrs", "x INTEGER", {"sales"}).ok());
  Status typo = Refused("SELECT * FROM reports.typo");
  EXPECT_NE(typo.message().find("did you mean"), std::string::npos) << typo.ToString();
  EXPECT_NE(typo.message().find("view reports.typo"), std::string::npos) << typo.ToString();
}

TEST_F(LakeSqlQueryTest, CreateViewMakesAViewOfTheCatalog) {
  auto t = CreateTable("orders", "id BIGINT, name VARCHAR");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT range AS id, 'n' || range AS name FROM range(4)", nullptr}).ok());
  auto run = [&](const std::string& sql, const std::string& schema = "sales") -> Status {
    auto w = engine::ParseStatement(sql);
    if (!w.ok()) return w.status();
    EXPECT_TRUE(w->is_write()) << sql;
    return lake_->ExecuteWrite(*w, schema).status();
  };
  // Unqualified names mean the session's schema, recorded as the view's default namespace.
  ASSERT_TRUE(run("CREATE VIEW recent (order_id) AS SELECT id, name FROM orders WHERE id >= 2").ok());
  auto view = catalog_->LoadView(*catalog::TableIdent::Parse("sales.recent"));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const iceberg::ViewVersion& v = *view->metadata->CurrentVersion();
  EXPECT_EQ(v.representations.at(0).dialect, "duckdb");
  EXPECT_EQ(v.default_namespace, std::vector<std::string>{"sales"});
  EXPECT_EQ(view->metadata->CurrentSchema()->fields().at(0).name, "order_id");
  EXPECT_EQ(view->metadata->CurrentSchema()->fields().at(1).name, "name");
  EXPECT_EQ(Sql("SELECT order_id, name FROM sales.recent ORDER BY 1"), (TextRows{{"2", "n2"}, {"3", "n3"}}));
  EXPECT_EQ(run("CREATE VIEW recent AS SELECT 1").code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(run("CREATE VIEW IF NOT EXISTS recent AS SELECT 1").ok());
  EXPECT_EQ(run("CREATE VIEW orders AS SELECT 1").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(run("CREATE VIEW broken AS SELECT * FROM ordrs").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->LoadView(*catalog::TableIdent::Parse("sales.broken")).status().code(), StatusCode::kNotFound);
  // OR REPLACE adds a version; the view keeps its uuid and history.
  ASSERT_TRUE(run("CREATE OR REPLACE VIEW recent AS SELECT count(*) AS n FROM orders").ok());
  auto replaced = catalog_->LoadView(*catalog::TableIdent::Parse("sales.recent"));
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->metadata->view_uuid, view->metadata->view_uuid);
  EXPECT_EQ(replaced->metadata->versions.size(), 2u);
  EXPECT_EQ(Sql("SELECT n FROM recent", "sales"), (TextRows{{"4"}}));
  // DROP VIEW; a TEMP view stays the session's own.
  ASSERT_TRUE(run("DROP VIEW recent").ok());
  EXPECT_EQ(run("DROP VIEW recent").code(), StatusCode::kNotFound);
  EXPECT_TRUE(run("DROP VIEW IF EXISTS recent").ok());
  auto temp = engine::ParseStatement("CREATE TEMP VIEW x AS SELECT 1");
  ASSERT_TRUE(temp.ok());
  EXPECT_FALSE(temp->is_write());
}

TEST_F(LakeSqlQueryTest, QueriesWithoutSubstitutionRunAsSent) {
  CreateTwoNamespaces();
  const std::string sql = "SELECT id FROM sales.orders WHERE id > 1";
  auto resolved = lake_->ResolveQuery(sql, "");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(*resolved, sql);
}

}  // namespace
}  // namespace skade::sql
