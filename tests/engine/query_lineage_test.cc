// Column lineage from DuckDB's bound plan: each result column names the input columns it derives
// from and how (OpenLineage's DIRECT / INDIRECT subtypes), through aliases, views, joins,
// aggregates, CTEs, set operations and subqueries, with names resolved as DuckDB resolves them.
#include "skade/engine/query_lineage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "skade/engine/database.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class QueryLineageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(Database::Open({})).value();
    for (const char* sql : {
             "CREATE TABLE orders (id BIGINT, customer BIGINT, amount DECIMAL(10,2), region VARCHAR)",
             "CREATE TABLE customers (id BIGINT, name VARCHAR, email VARCHAR)",
             "CREATE VIEW eu_orders AS SELECT id AS order_id, amount FROM orders WHERE region = 'eu'",
         }) {
      ASSERT_TRUE(db_->Execute(sql).ok()) << sql;
    }
  }

  // The lineage as text: per result column "table.column SUBTYPE" (plus " masked"), and the
  // dataset-wide inputs under "*".
  std::map<std::string, std::set<std::string>> Lineage(const std::string& query) {
    auto lineage = DeriveLineage(*db_, query);
    EXPECT_TRUE(lineage.ok()) << query << ": " << lineage.status().ToString();
    if (!lineage.ok()) return {};
    EXPECT_TRUE(lineage->columns_traced) << query << ": " << lineage->untraced;
    auto name = [&](const LineageOrigin& o) {
      const LineageSource& s = lineage->sources.at(o.source);
      std::string relation = s.table.empty() ? s.function : s.table.back();
      return relation + "." + o.column + " " + LineageSubtypeName(o.subtype) + (o.masking ? " masked" : "");
    };
    std::map<std::string, std::set<std::string>> out;
    for (size_t i = 0; i < lineage->columns.size(); ++i) {
      auto& fields = out[lineage->columns[i]];
      for (const LineageOrigin& o : lineage->origins[i]) fields.insert(name(o));
    }
    for (const LineageOrigin& o : lineage->dataset) out["*"].insert(name(o));
    return out;
  }

  std::unique_ptr<Database> db_;
};

TEST_F(QueryLineageTest, CopiesAreIdentityAndExpressionsTransformations) {
  auto l = Lineage("SELECT o.id AS order_id, upper(o.region) AS r, amount * 2 AS twice, 1 AS one, md5(region) AS h "
                   "FROM orders o");
  EXPECT_THAT(l["order_id"], ElementsAre("orders.id IDENTITY"));
  EXPECT_THAT(l["r"], ElementsAre("orders.region TRANSFORMATION"));
  EXPECT_THAT(l["twice"], ElementsAre("orders.amount TRANSFORMATION"));
  EXPECT_THAT(l["one"], IsEmpty());
  EXPECT_THAT(l["h"], ElementsAre("orders.region TRANSFORMATION masked"));
  EXPECT_EQ(l.count("*"), 0u);
}

TEST_F(QueryLineageTest, JoinsFiltersAndGroupsActOnTheWholeResult) {
  auto l = Lineage(
      "SELECT c.name, sum(o.amount) AS total, count(*) AS n FROM orders o JOIN customers c ON o.customer = c.id "
      "WHERE o.region = 'eu' GROUP BY c.name HAVING sum(o.amount) > 10 ORDER BY total");
  EXPECT_THAT(l["name"], ElementsAre("customers.name IDENTITY"));
  EXPECT_THAT(l["total"], ElementsAre("orders.amount AGGREGATION"));
  EXPECT_THAT(l["n"], IsEmpty());
  EXPECT_THAT(l["*"], UnorderedElementsAre("orders.customer JOIN", "customers.id JOIN", "orders.region FILTER",
                                           "customers.name GROUP_BY", "orders.amount FILTER",
                                           "orders.amount SORT"));
}

TEST_F(QueryLineageTest, ViewsCtesAndSetOperationsResolveToTheirTables) {
  auto l = Lineage(
      "WITH big AS (SELECT order_id, amount FROM eu_orders WHERE amount > 100) "
      "SELECT order_id AS id FROM big UNION ALL SELECT id FROM customers");
  EXPECT_THAT(l["id"], UnorderedElementsAre("orders.id IDENTITY", "customers.id IDENTITY"));
  EXPECT_THAT(l["*"], UnorderedElementsAre("orders.region FILTER", "orders.amount FILTER"));
}

TEST_F(QueryLineageTest, CaseConditionsAndSubqueries) {
  auto l = Lineage(
      "SELECT CASE WHEN region = 'eu' THEN amount ELSE 0 END AS eu_amount, "
      "(SELECT max(name) FROM customers c WHERE c.id = o.customer) AS customer_name "
      "FROM orders o WHERE id IN (SELECT id FROM customers)");
  EXPECT_THAT(l["eu_amount"], UnorderedElementsAre("orders.region CONDITIONAL", "orders.amount TRANSFORMATION"));
  // The scalar subquery's correlation chooses its value: it acts on that column, not on the rows.
  EXPECT_THAT(l["customer_name"],
              UnorderedElementsAre("customers.name AGGREGATION", "customers.id JOIN", "orders.customer JOIN"));
  EXPECT_THAT(l["*"], UnorderedElementsAre("orders.id FILTER", "customers.id FILTER"));
}

TEST_F(QueryLineageTest, CommaJoinsAreJoinsAndSetOperationsFilter) {
  auto l = Lineage("SELECT o.region, c.email FROM orders o, customers c WHERE o.customer = c.id AND c.name <> ''");
  EXPECT_THAT(l["region"], ElementsAre("orders.region IDENTITY"));
  EXPECT_THAT(l["email"], ElementsAre("customers.email IDENTITY"));
  EXPECT_THAT(l["*"], UnorderedElementsAre("orders.customer JOIN", "customers.id JOIN", "customers.name FILTER"));
  l = Lineage("SELECT id FROM orders EXCEPT SELECT id FROM customers");
  EXPECT_THAT(l["id"], ElementsAre("orders.id IDENTITY"));
  EXPECT_THAT(l["*"], ElementsAre("customers.id FILTER"));
  l = Lineage("SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer)");
  EXPECT_THAT(l["*"], UnorderedElementsAre("orders.customer FILTER", "customers.id FILTER"));
}

TEST_F(QueryLineageTest, WindowsAndTableFunctionsAreNamed) {
  auto l = Lineage("SELECT id, rank() OVER (PARTITION BY region ORDER BY amount) AS rk FROM orders");
  EXPECT_THAT(l["rk"], UnorderedElementsAre("orders.region WINDOW", "orders.amount WINDOW"));
  auto lineage = DeriveLineage(*db_, "SELECT range AS x FROM range(3)");
  ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
  ASSERT_EQ(lineage->sources.size(), 1u);
  EXPECT_EQ(lineage->sources[0].function, "range");
  EXPECT_THAT(lineage->origins[0], ElementsAre(LineageOrigin{0, "range", LineageSubtype::kIdentity, false}));
}

TEST_F(QueryLineageTest, ResolvesNamesAsTheSessionDoes) {
  ASSERT_TRUE(db_->Execute("CREATE SCHEMA s2").ok());
  ASSERT_TRUE(db_->Execute("CREATE TABLE s2.orders (code VARCHAR)").ok());
  auto session = db_->WithConnectionSetup({"USE memory.s2"});
  auto lineage = DeriveLineage(*session, "SELECT code FROM orders");
  ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
  ASSERT_EQ(lineage->sources.size(), 1u);
  EXPECT_THAT(lineage->sources[0].table, ElementsAre("memory", "s2", "orders"));
}

TEST_F(QueryLineageTest, RefusesWhatIsNotOneBindableQuery) {
  EXPECT_EQ(DeriveLineage(*db_, "SELECT nope FROM orders").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DeriveLineage(*db_, "DELETE FROM orders").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DeriveLineage(*db_, "SELECT 1; SELECT 2").status().code(), StatusCode::kInvalidArgument);
}

// A server's database is locked down (no file outside its folders, no setting changes): lineage
// is still derived, files inside its folders named, and those outside refused as when run.
TEST(QueryLineageLockedDownTest, DerivesLineageOnALockedDownDatabase) {
  testing::TempDir lake, outside;
  {
    auto setup = std::move(Database::Open({})).value();
    ASSERT_TRUE(setup->Execute("COPY (SELECT 1 AS a) TO '" + lake.Path("in.parquet") + "'").ok());
    ASSERT_TRUE(setup->Execute("COPY (SELECT 2 AS a) TO '" + outside.Path("out.parquet") + "'").ok());
  }
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {lake.path()};
  auto db = std::move(Database::Open(options)).value();
  auto lineage = DeriveLineage(*db, "SELECT a + 1 AS b FROM read_parquet('" + lake.Path("in.parquet") + "')");
  ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
  ASSERT_EQ(lineage->sources.size(), 1u);
  EXPECT_EQ(lineage->sources[0].function, "read_parquet");
  EXPECT_THAT(lineage->sources[0].arguments, ElementsAre(lake.Path("in.parquet")));
  EXPECT_THAT(lineage->origins[0], ElementsAre(LineageOrigin{0, "a", LineageSubtype::kTransformation, false}));
  EXPECT_FALSE(DeriveLineage(*db, "SELECT a FROM read_parquet('" + outside.Path("out.parquet") + "')").ok());
}

// SQL hidden in a string would be bound past the checks fronts make on a statement's tree: the
// function behind DeriveLineage answers skade alone.
TEST_F(QueryLineageTest, SqlCannotCallTheLineageFunction) {
  for (const char* sql : {"SELECT * FROM __skade_query_lineage('SELECT current_setting(''temp_directory'')', 'x')",
                          "SELECT * FROM __skade_query_lineage('SELECT 1', '')"}) {
    auto rows = db_->QueryRows(sql);
    ASSERT_FALSE(rows.ok()) << sql;
    EXPECT_EQ(rows.status().code(), StatusCode::kInvalidArgument) << sql;
  }
  EXPECT_FALSE(db_->QueryRows("SELECT * FROM __skade_query_lineage('SELECT 1')").ok());
}

}  // namespace
}  // namespace skade::engine
