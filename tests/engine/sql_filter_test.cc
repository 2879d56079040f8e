// SQL predicates become Iceberg expressions for pruning; what can't be expressed stays out.
#include "skade/engine/sql_filter.h"

#include <gtest/gtest.h>

#include <limits>

#include "skade/iceberg/table_metadata.h"
#include "tests/testing/query_rows.h"

namespace skade::engine {
namespace {

using iceberg::Operation;

class SqlFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(Database::Open({})).value();
    auto s = iceberg::ParseSchemaJson(R"json({"type":"struct","fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"n","required":false,"type":"int"},
      {"id":3,"name":"name","required":false,"type":"string"},
      {"id":4,"name":"d","required":false,"type":"date"},
      {"id":5,"name":"ts","required":false,"type":"timestamptz"},
      {"id":6,"name":"price","required":false,"type":"decimal(9,2)"},
      {"id":7,"name":"x","required":false,"type":"double"},
      {"id":8,"name":"u","required":false,"type":"uuid"},
      {"id":9,"name":"s","required":false,"type":{"type":"struct","fields":[{"id":10,"name":"a","required":false,"type":"int"}]}}]})json");
    schema_ = std::move(s).value();
  }
  std::string Convert(const std::string& sql) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    EXPECT_TRUE(e.ok()) << sql << ": " << e.status().ToString();
    if (!e.ok()) return "<error>";
    // Always check the result binds to the schema.
    auto bound = iceberg::Bind(*e, *schema_);
    EXPECT_TRUE(bound.ok()) << sql << ": " << bound.status().ToString();
    return (*e)->ToString();
  }
  std::unique_ptr<Database> db_;
  iceberg::SchemaPtr schema_;
};

TEST_F(SqlFilterTest, ConvertsComparisonsOfEveryType) {
  auto lit = [&](const std::string& sql) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    EXPECT_TRUE(e.ok());
    return *e;
  };
  auto e = lit("id > 5");
  EXPECT_EQ(e->op(), Operation::kGt);
  EXPECT_EQ(e->column(), "id");
  EXPECT_EQ(e->literals()[0].as_long(), 5);
  e = lit("5 < ID");  // flipped, case-insensitive column
  EXPECT_EQ(e->op(), Operation::kGt);
  EXPECT_EQ(e->column(), "id");
  e = lit("d >= DATE '2020-01-02'");
  EXPECT_EQ(e->literals()[0].as_int(), 18263);
  e = lit("ts < TIMESTAMPTZ '2020-01-01 09:00:00+00'");
  EXPECT_EQ(e->literals()[0].as_long(), 1577869200000000);
  e = lit("price = 12.5");
  EXPECT_EQ(e->literals()[0].as_decimal(), 1250);
  e = lit("u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'");
  EXPECT_EQ(e->literals()[0].as_bytes().size(), 16u);
  e = lit("x <= 1.5");
  EXPECT_EQ(e->literals()[0].as_double(), 1.5);
  e = lit("name = 'it''s'");
  EXPECT_EQ(e->literals()[0].as_bytes(), "it's");
}

// Integers into int and long columns and strings into string columns are taken from the parsed
// constant itself; these are the values DuckDB's exact conversion gives (every other constant).
TEST_F(SqlFilterTest, PlainConstantsKeepTheirExactValuesAtTheTypesEdges) {
  auto lit = [&](const std::string& sql) -> iceberg::Literal {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    EXPECT_TRUE(e.ok()) << sql;
    EXPECT_EQ((*e)->literals().size(), 1u) << sql << " -> " << (*e)->ToString();
    return (*e)->literals().empty() ? iceberg::Literal::Boolean(false) : (*e)->literals()[0];
  };
  EXPECT_EQ(lit("n = 2147483647").as_int(), 2147483647);
  EXPECT_EQ(lit("n = -2147483648").as_int(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(lit("id = 9223372036854775807").as_long(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(lit("id = -9223372036854775808").as_long(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(lit("id < 100000").as_long(), 100000);
  EXPECT_EQ(lit("id = 7::SMALLINT").as_long(), 7);  // a cast of a constant: DuckDB converts it
  EXPECT_EQ(lit("name = ''").as_bytes(), "");
  EXPECT_EQ(lit("name = 'zürich ✓'").as_bytes(), "zürich ✓");
  EXPECT_EQ(lit("name = E'a\\nb'").as_bytes(), "a\nb");
  EXPECT_EQ(lit("n = '12'").as_int(), 12);  // a string into an int column: DuckDB converts it
  EXPECT_EQ(lit("id = 2.0").as_long(), 2);  // a decimal constant: DuckDB's exact conversion
  auto in = SqlToIcebergFilter(*db_, testing::Where("id IN (1, 9223372036854775807, -3)"), *schema_);
  ASSERT_TRUE(in.ok());
  ASSERT_EQ((*in)->literals().size(), 3u);
  EXPECT_EQ((*in)->literals()[1].as_long(), std::numeric_limits<int64_t>::max());
  // Out of the column's range, or not of its kind: no literal, so no pruning on it.
  for (const char* sql : {"n = 2147483648", "id = 9223372036854775808", "name = 5", "n = 'x'"}) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    ASSERT_TRUE(e.ok()) << sql;
    EXPECT_EQ((*e)->op(), Operation::kTrue) << sql << " -> " << (*e)->ToString();
  }
}

TEST_F(SqlFilterTest, ConvertsConnectivesAndSpecialForms) {
  auto e = SqlToIcebergFilter(*db_, testing::Where("n BETWEEN 1 AND 3 AND name IN ('a', 'b') AND name LIKE 'pre%'"), *schema_);
  ASSERT_TRUE(e.ok());
  std::string s = (*e)->ToString();
  EXPECT_NE(s.find(">="), std::string::npos) << s;
  EXPECT_NE(s.find("<="), std::string::npos) << s;
  EXPECT_NE(s.find("in"), std::string::npos) << s;
  EXPECT_NE(s.find("pre"), std::string::npos) << s;
  auto null = SqlToIcebergFilter(*db_, testing::Where("name IS NULL OR n IS NOT NULL"), *schema_);
  ASSERT_TRUE(null.ok());
  EXPECT_EQ((*null)->op(), Operation::kOr);
  auto nan = SqlToIcebergFilter(*db_, testing::Where("isnan(x)"), *schema_);
  ASSERT_TRUE(nan.ok());
  EXPECT_EQ((*nan)->op(), Operation::kIsNan);
  auto neg = SqlToIcebergFilter(*db_, testing::Where("NOT (n = 3)"), *schema_);
  ASSERT_TRUE(neg.ok());
  // Not() of a predicate folds into its negation.
  EXPECT_EQ((*neg)->op(), Operation::kNotEq);
  Convert("NOT (n BETWEEN 1 AND 3) AND name NOT IN ('a') AND name NOT LIKE 'x%'");
}

// DuckDB would cast a WHERE clause to BOOLEAN; a filter must be a condition.
TEST_F(SqlFilterTest, RefusesPredicatesThatAreNotBoolean) {
  for (const char* sql : {"n", "1", "'yes'", "name", "n + 1", "NULL"}) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << sql;
  }
  for (const char* sql : {"n > 1", "name IS NULL", "starts_with(name, 'a')", "NOT (n = 1)", "true"}) {
    EXPECT_TRUE(SqlToIcebergFilter(*db_, testing::Where(sql), *schema_).ok()) << sql;
  }
}

TEST_F(SqlFilterTest, LeavesOutWhatItCannotExpress) {
  auto expect_true = [&](const std::string& sql) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), *schema_);
    ASSERT_TRUE(e.ok()) << sql;
    EXPECT_EQ((*e)->op(), Operation::kTrue) << sql << " -> " << (*e)->ToString();
  };
  expect_true("n + 1 > 5");                  // expression on the column
  expect_true("n > 10.5");                   // not exactly an int: no lossy rounding
  expect_true("upper(name) = 'A'");          // function of the column
  expect_true("name LIKE '%x'");             // not a prefix
  expect_true("name LIKE 'a_b%'");           // wildcard inside
  expect_true("n > 3 OR upper(name) = 'A'"); // one unknown branch makes the OR unknown
  expect_true("s.a = 1");                    // nested columns are not pruned on yet
  expect_true("n > 3000000000");             // out of the int range
  expect_true("nope = 1");                   // unknown column: DuckDB reports it when run
  // An AND keeps its convertible part.
  auto e = SqlToIcebergFilter(*db_, testing::Where("n > 3 AND upper(name) = 'A'"), *schema_);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->op(), Operation::kGt);
}


// A two-part name may be a struct's field: `s.x` must not prune on a top-level column x. A
// function named in a schema is not DuckDB's own.
TEST_F(SqlFilterTest, PrunesOnlyOnBareColumnsAndDuckDBsOwnFunctions) {
  auto s = iceberg::ParseSchemaJson(R"json({"type":"struct","fields":[
    {"id":1,"name":"x","required":false,"type":"int"},
    {"id":2,"name":"d","required":false,"type":"double"},
    {"id":3,"name":"s","required":false,"type":{"type":"struct","fields":[{"id":4,"name":"x","required":false,"type":"int"}]}}]})json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto convert = [&](const std::string& sql) {
    auto e = SqlToIcebergFilter(*db_, testing::Where(sql), **s);
    EXPECT_TRUE(e.ok()) << sql << ": " << e.status().ToString();
    return e.ok() ? (*e)->op() : Operation::kFalse;
  };
  EXPECT_EQ(convert("x = 5"), Operation::kEq);
  EXPECT_EQ(convert("s.x = 5"), Operation::kTrue);
  EXPECT_EQ(convert("isnan(d)"), Operation::kIsNan);
  EXPECT_EQ(convert("main.isnan(d)"), Operation::kTrue);
}


}  // namespace
}  // namespace skade::engine
