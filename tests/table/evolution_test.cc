// Schema, partition-spec, sort-order and property evolution on a real SQLite catalog: each
// change is committed, then old and new data files are read back with exact rows (columns are
// matched by field id), and bad changes are refused with nothing committed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "skade/catalog/sql_catalog.h"
#include "skade/engine/schema_convert.h"
#include "skade/table/table.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using ::testing::ElementsAre;
using Kind = SchemaChange::Kind;

class TableEvolutionTest : public testing::LakeTest {
 protected:
  std::unique_ptr<Table> Create(const std::string& name, const std::string& columns,
                                const std::string& partition_by,
                                std::map<std::string, std::string> properties = {}) {
    return CreateTable(name, columns, partition_by, std::move(properties));
  }

  void Append(Table& t, const std::string& sql) {
    auto r = t.Append({sql, nullptr});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  static SchemaChange Change(Kind kind, std::string column, std::string arg = "") {
    SchemaChange c;
    c.kind = kind;
    c.column = std::move(column);
    if (kind == Kind::kAddColumn || kind == Kind::kUpdateType) c.type = arg;
    if (kind == Kind::kRenameColumn) c.new_name = arg;
    if (kind == Kind::kMoveBefore || kind == Kind::kMoveAfter) c.reference = arg;
    return c;
  }

  static std::vector<std::string> ColumnNames(const Table& t) {
    std::vector<std::string> out;
    for (const auto& f : t.metadata().CurrentSchema()->fields()) out.push_back(f.name);
    return out;
  }

  int64_t LatestSeq() { return *catalog_->LatestCommitSeq(); }
};

TEST_F(TableEvolutionTest, AddedColumnReadsNullInOldFiles) {
  auto t = Create("add", "id BIGINT NOT NULL, name VARCHAR", "");
  Append(*t, "SELECT range AS id, 'n' || range AS name FROM range(3)");
  auto o = t->UpdateSchema({Change(Kind::kAddColumn, "score", "DOUBLE")});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->operation, "update-schema");
  EXPECT_GT(o->commit_seq, 0);
  EXPECT_EQ(o->snapshot_id, t->metadata().CurrentSnapshot()->snapshot_id);
  EXPECT_EQ(t->metadata().current_schema_id, 1);
  EXPECT_EQ(t->metadata().last_column_id, 3);
  EXPECT_EQ(t->metadata().CurrentSchema()->FindFieldByName("score")->id, 3);
  Append(*t, "SELECT 10 AS id, 'x' AS name, 1.5 AS score");
  EXPECT_THAT(Rows(*t, "SELECT id, name, score FROM t ORDER BY id"),
              ElementsAre(ElementsAre("0", "n0", "NULL"), ElementsAre("1", "n1", "NULL"),
                          ElementsAre("2", "n2", "NULL"), ElementsAre("10", "x", "1.5")));
  // Nested type: field ids continue after last-column-id (column first, then its fields).
  auto nested =
      t->UpdateSchema({Change(Kind::kAddColumn, "loc", "STRUCT(lat DOUBLE, lon DOUBLE)")});
  ASSERT_TRUE(nested.ok()) << nested.status().ToString();
  const auto* loc = t->metadata().CurrentSchema()->FindFieldByName("loc");
  ASSERT_NE(loc, nullptr);
  EXPECT_EQ(loc->id, 4);
  EXPECT_EQ(loc->type->fields()[0].id, 5);
  EXPECT_EQ(loc->type->fields()[1].id, 6);
  EXPECT_EQ(t->metadata().last_column_id, 6);
  EXPECT_THAT(Rows(*t, "SELECT count(*) FROM t WHERE loc IS NULL"), ElementsAre(ElementsAre("4")));
}

TEST_F(TableEvolutionTest, AddedColumnWithDefaultReadsTheDefaultInV3) {
  auto t = Create("defaults", "id BIGINT NOT NULL", "", {{"format-version", "3"}});
  ASSERT_EQ(t->metadata().format_version, 3);
  Append(*t, "SELECT range AS id FROM range(2)");
  SchemaChange flag = Change(Kind::kAddColumn, "flag", "INTEGER");
  flag.default_json = "7";
  SchemaChange req = Change(Kind::kAddColumn, "region", "VARCHAR NOT NULL");
  req.default_json = "\"eu\"";
  auto o = t->UpdateSchema({flag, req});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const auto* region = t->metadata().CurrentSchema()->FindFieldByName("region");
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(region->required);
  EXPECT_EQ(region->initial_default_json, "\"eu\"");
  Append(*t, "SELECT 5 AS id, 1 AS flag, 'us' AS region");
  EXPECT_THAT(Rows(*t, "SELECT id, flag, region FROM t ORDER BY id"),
              ElementsAre(ElementsAre("0", "7", "eu"), ElementsAre("1", "7", "eu"),
                          ElementsAre("5", "1", "us")));
}

TEST_F(TableEvolutionTest, RequiredColumnNeedsADefaultAndV3) {
  auto t = Create("req", "id BIGINT NOT NULL", "");
  int64_t seq = LatestSeq();
  auto plain = t->UpdateSchema({Change(Kind::kAddColumn, "r", "BIGINT NOT NULL")});
  EXPECT_EQ(plain.status().code(), StatusCode::kInvalidArgument);
  SchemaChange with_default = Change(Kind::kAddColumn, "r", "BIGINT NOT NULL");
  with_default.default_json = "1";
  EXPECT_EQ(t->UpdateSchema({with_default}).status().code(), StatusCode::kInvalidArgument);  // v2
  SchemaChange bad_default = Change(Kind::kAddColumn, "r", "BIGINT");
  bad_default.default_json = "\"not a number\"";
  EXPECT_EQ(t->UpdateSchema({bad_default}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LatestSeq(), seq);
}

TEST_F(TableEvolutionTest, RenamedColumnReadsOldFilesByFieldId) {
  auto t = Create("ren", "id BIGINT NOT NULL, name VARCHAR", "");
  Append(*t, "SELECT 1 AS id, 'old' AS name");
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kRenameColumn, "name", "customer")}).ok());
  EXPECT_THAT(ColumnNames(*t), ElementsAre("id", "customer"));
  Append(*t, "SELECT 2 AS id, 'new' AS customer");
  EXPECT_THAT(Rows(*t, "SELECT id, customer FROM t ORDER BY id"),
              ElementsAre(ElementsAre("1", "old"), ElementsAre("2", "new")));
  // Reading the first snapshot uses that snapshot's schema: the old name.
  ReadOptions first;
  first.snapshot.snapshot_id = t->metadata().snapshots.front().snapshot_id;
  EXPECT_THAT(Rows(*t, "SELECT id, name FROM t", first), ElementsAre(ElementsAre("1", "old")));
}

TEST_F(TableEvolutionTest, DroppedColumnIsGoneAndANewOneOfTheSameNameStartsEmpty) {
  auto t = Create("drop", "id BIGINT NOT NULL, name VARCHAR, v INTEGER", "");
  Append(*t, "SELECT 1 AS id, 'a' AS name, 10 AS v");
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kDropColumn, "name")}).ok());
  EXPECT_THAT(ColumnNames(*t), ElementsAre("id", "v"));
  EXPECT_THAT(Rows(*t, "SELECT * FROM t"), ElementsAre(ElementsAre("1", "10")));
  // Same name, new field id (4): the old file's values for field 2 are not resurrected.
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kAddColumn, "name", "VARCHAR")}).ok());
  EXPECT_EQ(t->metadata().CurrentSchema()->FindFieldByName("name")->id, 4);
  Append(*t, "SELECT 2 AS id, 20 AS v, 'b' AS name");
  EXPECT_THAT(Rows(*t, "SELECT id, name, v FROM t ORDER BY id"),
              ElementsAre(ElementsAre("1", "NULL", "10"), ElementsAre("2", "b", "20")));
}

TEST_F(TableEvolutionTest, PromotedTypesReadOldFiles) {
  auto t = Create("promote", "i INTEGER, f FLOAT, d DECIMAL(9,2)", "");
  Append(*t, "SELECT 7 AS i, 1.5::FLOAT AS f, 12.25::DECIMAL(9,2) AS d");
  auto o = t->UpdateSchema({Change(Kind::kUpdateType, "i", "BIGINT"),
                            Change(Kind::kUpdateType, "f", "DOUBLE"),
                            Change(Kind::kUpdateType, "d", "DECIMAL(18,2)")});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const auto& schema = *t->metadata().CurrentSchema();
  EXPECT_EQ(schema.FindFieldByName("i")->type->id(), iceberg::TypeId::kLong);
  EXPECT_EQ(schema.FindFieldByName("f")->type->id(), iceberg::TypeId::kDouble);
  EXPECT_EQ(schema.FindFieldByName("d")->type->precision(), 18);
  Append(*t, "SELECT 5000000000 AS i, 2.25::DOUBLE AS f, 1234567890123.45::DECIMAL(18,2) AS d");
  EXPECT_THAT(
      Rows(*t, "SELECT i, f, d, typeof(i), typeof(f) FROM t ORDER BY i"),
      ElementsAre(ElementsAre("7", "1.5", "12.25", "BIGINT", "DOUBLE"),
                  ElementsAre("5000000000", "2.25", "1234567890123.45", "BIGINT", "DOUBLE")));
}

TEST_F(TableEvolutionTest, NestedStructFieldsAreAddedAndRenamed) {
  auto t = Create(
      "nested", "id BIGINT, info STRUCT(city VARCHAR, zip INTEGER), items STRUCT(a INTEGER)[]", "");
  Append(*t, "SELECT 1 AS id, {'city': 'Oslo', 'zip': 150} AS info, [{'a': 1}] AS items");
  int last = t->metadata().last_column_id;
  int city_id = t->metadata().CurrentSchema()->FindFieldByName("info.city")->id;
  auto o = t->UpdateSchema({Change(Kind::kAddColumn, "info.country", "VARCHAR"),
                            Change(Kind::kRenameColumn, "info.city", "town"),
                            Change(Kind::kAddColumn, "items.element.b", "VARCHAR")});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const auto& schema = *t->metadata().CurrentSchema();
  const auto* town = schema.FindFieldByName("info.town");
  ASSERT_NE(town, nullptr);
  EXPECT_EQ(town->id, city_id);
  EXPECT_EQ(schema.FindFieldByName("info.city"), nullptr);
  ASSERT_NE(schema.FindFieldByName("info.country"), nullptr);
  EXPECT_EQ(schema.FindFieldByName("info.country")->id, last + 1);
  ASSERT_NE(schema.FindFieldByName("items.element.b"), nullptr);
  EXPECT_EQ(schema.FindFieldByName("items.element.b")->id, last + 2);
  EXPECT_EQ(t->metadata().last_column_id, last + 2);
  Append(*t,
         "SELECT 2 AS id, {'town': 'Bergen', 'zip': 5003, 'country': 'NO'} AS info, [{'a': 2, 'b': "
         "'x'}] AS items");
  // Added nested fields read NULL from the old file; fields that kept their names read as before.
  EXPECT_THAT(
      Rows(*t, "SELECT id, info.zip, info.country, items[1].a, items[1].b FROM t ORDER BY id"),
      ElementsAre(ElementsAre("1", "150", "NULL", "1", "NULL"),
                  ElementsAre("2", "5003", "NO", "2", "x")));
  EXPECT_THAT(Rows(*t, "SELECT info.town FROM t WHERE id = 2"), ElementsAre(ElementsAre("Bergen")));
}

// Old files keep the old nested names; the scan rebuilds their structs by field id.
TEST_F(TableEvolutionTest, RenamedNestedFieldReadsOldFilesByFieldId) {
  auto t = Create("nested_rename",
                  "id BIGINT, info STRUCT(city VARCHAR, zip INTEGER), "
                  "items STRUCT(a INTEGER, b VARCHAR)[], m MAP(VARCHAR, STRUCT(p INTEGER))",
                  "");
  Append(*t,
         "SELECT 1 AS id, {'city': 'Oslo', 'zip': 150} AS info, [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}] AS items, "
         "MAP {'k': {'p': 7}} AS m UNION ALL SELECT 2, NULL, NULL, NULL");
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kRenameColumn, "info.city", "town"),
                               Change(Kind::kRenameColumn, "items.element.b", "label"),
                               Change(Kind::kRenameColumn, "m.value.p", "q")})
                  .ok());
  // A new field takes the old name: old files must not fill it from the renamed field.
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kAddColumn, "info.city", "VARCHAR")}).ok());
  Append(*t,
         "SELECT 3 AS id, {'town': 'Bergen', 'zip': 5000, 'city': 'new'} AS info, [{'a': 3, 'label': 'z'}] AS items, "
         "MAP {'j': {'q': 8}} AS m");
  EXPECT_THAT(Rows(*t, "SELECT id, info.town, info.zip, info.city, items[1].label, items[2].label, m['k'].q, "
                      "m['j'].q, info IS NULL FROM t ORDER BY id"),
              ElementsAre(ElementsAre("1", "Oslo", "150", "NULL", "x", "y", "7", "NULL", "false"),
                          ElementsAre("2", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "true"),
                          ElementsAre("3", "Bergen", "5000", "new", "z", "NULL", "NULL", "8", "false")));
}

TEST_F(TableEvolutionTest, ReordersColumns) {
  auto t = Create("order", "a INTEGER, b INTEGER, c INTEGER, s STRUCT(x INTEGER, y INTEGER)", "");
  Append(*t, "SELECT 1 AS a, 2 AS b, 3 AS c, {'x': 4, 'y': 5} AS s");
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kMoveFirst, "c")}).ok());
  EXPECT_THAT(ColumnNames(*t), ElementsAre("c", "a", "b", "s"));
  ASSERT_TRUE(
      t->UpdateSchema({Change(Kind::kMoveAfter, "c", "b"), Change(Kind::kMoveBefore, "s", "a"),
                       Change(Kind::kMoveFirst, "s.y")})
          .ok());
  EXPECT_THAT(ColumnNames(*t), ElementsAre("s", "a", "b", "c"));
  EXPECT_EQ(t->metadata().CurrentSchema()->FindFieldByName("s")->type->fields()[0].name, "y");
  EXPECT_THAT(Rows(*t, "SELECT * FROM t"),
              ElementsAre(ElementsAre("{'y': 5, 'x': 4}", "1", "2", "3")));
  EXPECT_EQ(t->UpdateSchema({Change(Kind::kMoveAfter, "a", "a")}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateSchema({Change(Kind::kMoveAfter, "s.x", "a")}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(TableEvolutionTest, IdentifierFieldsAndOptionality) {
  auto t =
      Create("ident", "id BIGINT NOT NULL, k VARCHAR NOT NULL, f DOUBLE NOT NULL, o INTEGER", "");
  SchemaChange ids;
  ids.kind = Kind::kSetIdentifierFields;
  ids.identifier_fields = {"id", "k"};
  ASSERT_TRUE(t->UpdateSchema({ids}).ok());
  EXPECT_THAT(t->metadata().CurrentSchema()->identifier_field_ids(), ElementsAre(1, 2));
  int64_t seq = LatestSeq();
  ids.identifier_fields = {"f"};  // floating point
  EXPECT_EQ(t->UpdateSchema({ids}).status().code(), StatusCode::kInvalidArgument);
  ids.identifier_fields = {"o"};  // optional
  EXPECT_EQ(t->UpdateSchema({ids}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateSchema({Change(Kind::kDropColumn, "id")}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateSchema({Change(Kind::kMakeOptional, "k")}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LatestSeq(), seq);
  ASSERT_TRUE(t->UpdateSchema({Change(Kind::kMakeOptional, "f")}).ok());
  EXPECT_FALSE(t->metadata().CurrentSchema()->FindFieldByName("f")->required);
}

TEST_F(TableEvolutionTest, BadSchemaChangesCommitNothing) {
  auto t = Create("bad", "id BIGINT NOT NULL, i INTEGER, s VARCHAR, l BIGINT, ts TIMESTAMPTZ",
                  "day(ts)");
  Append(*t,
         "SELECT 1 AS id, 2 AS i, 'x' AS s, 3 AS l, TIMESTAMPTZ '2024-01-01 00:00:00+00' AS ts");
  int64_t seq = LatestSeq();
  int schema_id = t->metadata().current_schema_id;
  struct Case {
    std::vector<SchemaChange> changes;
    const char* what;
  } cases[] = {
      {{Change(Kind::kDropColumn, "nope")}, "unknown column"},
      {{Change(Kind::kRenameColumn, "nope", "x")}, "unknown column (rename)"},
      {{Change(Kind::kUpdateType, "l", "INTEGER")}, "long to int"},
      {{Change(Kind::kUpdateType, "s", "INTEGER")}, "string to int"},
      {{Change(Kind::kUpdateType, "i", "VARCHAR")}, "int to string"},
      {{Change(Kind::kUpdateType, "i", "DOUBLE")}, "int to double"},
      {{Change(Kind::kRenameColumn, "i", "s")}, "rename clash"},
      {{Change(Kind::kAddColumn, "s", "VARCHAR")}, "add existing"},
      {{Change(Kind::kAddColumn, "x", "NOT A TYPE")}, "bad type"},
      {{Change(Kind::kAddColumn, "i.x", "INTEGER")}, "add into a primitive"},
      {{Change(Kind::kDropColumn, "ts")}, "partition source"},
      {{Change(Kind::kAddColumn, "ok", "INTEGER"), Change(Kind::kDropColumn, "nope")},
       "second change fails"},
  };
  for (const auto& c : cases) {
    auto r = t->UpdateSchema(c.changes);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
        << c.what << ": " << r.status().ToString();
  }
  EXPECT_EQ(LatestSeq(), seq);
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_EQ(t->metadata().current_schema_id, schema_id);
  EXPECT_THAT(Rows(*t, "SELECT id, i, s FROM t"), ElementsAre(ElementsAre("1", "2", "x")));
}

TEST_F(TableEvolutionTest, PartitionSpecEvolutionReadsAndPrunesFilesOfBothSpecs) {
  auto t = Create("parts", "id BIGINT NOT NULL, ts TIMESTAMPTZ", "day(ts)");
  // Spec 0: 4 days, 10 rows each.
  Append(
      *t,
      "SELECT range AS id, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_hours(range * 24 // 10) AS ts "
      "FROM range(40)");
  auto o = t->UpdatePartitionSpec("day(ts), bucket(4, id)");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->operation, "update-partition-spec");
  const auto& spec = *t->metadata().DefaultSpec();
  EXPECT_EQ(spec.spec_id(), 1);
  ASSERT_EQ(spec.fields().size(), 2u);
  EXPECT_EQ(spec.fields()[0].field_id, 1000);  // kept
  EXPECT_EQ(spec.fields()[0].name, "ts_day");
  EXPECT_EQ(spec.fields()[1].field_id, 1001);  // new
  EXPECT_EQ(spec.fields()[1].name, "id_bucket");
  EXPECT_EQ(t->metadata().last_partition_id, 1001);
  // Spec 1: ids 100..139 on the same days.
  Append(*t,
         "SELECT range + 100 AS id, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_hours((range) * 24 "
         "// 10) AS ts "
         "FROM range(40)");
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id), count(DISTINCT id) FROM t"),
              ElementsAre(ElementsAre("80", std::to_string(780 + 4000 + 780), "80")));
  // Files of both specs are planned and pruned: day pruning on both, bucket only on spec 1.
  ReadOptions day;
  day.where = testing::Where("ts >= TIMESTAMPTZ '2024-01-04 00:00:00+00'");
  auto plan = t->PlanRead(day);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  int spec0 = 0, spec1 = 0;
  for (const auto& task : plan->tasks) (task.file.spec_id == 0 ? spec0 : spec1)++;
  EXPECT_EQ(spec0, 1);  // one day-file of spec 0
  EXPECT_GE(spec1, 1);  // that day's bucket files of spec 1
  EXPECT_LE(spec1, 4);
  EXPECT_EQ(*t->Count(day), 20);
  ReadOptions one;
  one.where = testing::Where("id = 105");
  plan = t->PlanRead(one);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*t->Count(one), 1);
  EXPECT_THAT(Rows(*t, "SELECT id FROM t", one), ElementsAre(ElementsAre("105")));
  // Going back to day(ts) reuses spec 0; unpartitioned is a new spec.
  ASSERT_TRUE(t->UpdatePartitionSpec("day(ts)").ok());
  EXPECT_EQ(t->metadata().default_spec_id, 0);
  EXPECT_EQ(t->metadata().partition_specs.size(), 2u);
  ASSERT_TRUE(t->UpdatePartitionSpec("").ok());
  EXPECT_EQ(t->metadata().default_spec_id, 2);
  EXPECT_TRUE(t->metadata().DefaultSpec()->fields().empty());
  Append(*t, "SELECT 1000 AS id, TIMESTAMPTZ '2024-02-01 00:00:00+00' AS ts");
  EXPECT_EQ(*t->Count({}), 81);
  // A field that existed before gets its old id back.
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(4, id)").ok());
  ASSERT_EQ(t->metadata().DefaultSpec()->fields().size(), 1u);
  EXPECT_EQ(t->metadata().DefaultSpec()->fields()[0].field_id, 1001);
  int64_t seq = LatestSeq();
  EXPECT_EQ(t->UpdatePartitionSpec("day(nope)").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdatePartitionSpec("frobnicate(id)").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LatestSeq(), seq);
}

// A new field of another width on the same column is another field id: it needs a name of its
// own across all specs, or Spark's `files` table (all specs' fields by id) refuses the table.
TEST_F(TableEvolutionTest, NewPartitionFieldsGetNamesNoOtherFieldIdHad) {
  auto t = Create("named", "id BIGINT, s VARCHAR", "bucket(16, id), truncate(4, s)");
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(4, id), truncate(2, s)").ok());
  const auto& evolved = t->metadata().DefaultSpec()->fields();
  ASSERT_EQ(evolved.size(), 2u);
  EXPECT_EQ(evolved[0].name, "id_bucket_4");
  EXPECT_EQ(evolved[1].name, "s_trunc_2");
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(8, id)").ok());
  EXPECT_EQ(t->metadata().DefaultSpec()->fields()[0].name, "id_bucket_8");
  // Back to an earlier field: its id and name return.
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(16, id)").ok());
  EXPECT_EQ(t->metadata().DefaultSpec()->fields()[0].name, "id_bucket");
  EXPECT_EQ(t->metadata().DefaultSpec()->fields()[0].field_id, 1000);
  std::map<std::string, int> id_of_name;
  for (const auto& spec : t->metadata().partition_specs) {
    for (const auto& f : spec->fields()) {
      auto [it, added] = id_of_name.emplace(f.name, f.field_id);
      EXPECT_EQ(it->second, f.field_id) << f.name << " names two field ids";
    }
  }
}

TEST_F(TableEvolutionTest, SortOrders) {
  auto t = Create("sorted", "id BIGINT, ts TIMESTAMPTZ, name VARCHAR", "");
  auto o = t->UpdateSortOrder("id DESC, day(ts), bucket(8, name) ASC NULLS LAST");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const iceberg::SortOrder* order =
      t->metadata().SortOrderById(t->metadata().default_sort_order_id);
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->order_id, 1);
  ASSERT_EQ(order->fields.size(), 3u);
  EXPECT_EQ(order->fields[0].source_id, 1);
  EXPECT_EQ(order->fields[0].direction, iceberg::SortDirection::kDesc);
  EXPECT_EQ(order->fields[0].null_order, iceberg::NullOrder::kNullsLast);
  EXPECT_EQ(order->fields[1].transform, iceberg::Transform::Day());
  EXPECT_EQ(order->fields[1].direction, iceberg::SortDirection::kAsc);
  EXPECT_EQ(order->fields[1].null_order, iceberg::NullOrder::kNullsFirst);
  EXPECT_EQ(order->fields[2].transform, iceberg::Transform::Bucket(8));
  EXPECT_EQ(order->fields[2].null_order, iceberg::NullOrder::kNullsLast);
  ASSERT_TRUE(t->UpdateSortOrder("").ok());
  EXPECT_EQ(t->metadata().default_sort_order_id, 0);
  int64_t seq = LatestSeq();
  EXPECT_EQ(t->UpdateSortOrder("nope").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateSortOrder("id SIDEWAYS").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateSortOrder("id, id DESC").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LatestSeq(), seq);
  // A sort column can't be dropped while the order uses it.
  ASSERT_TRUE(t->UpdateSortOrder("name").ok());
  EXPECT_EQ(t->UpdateSchema({Change(Kind::kDropColumn, "name")}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(TableEvolutionTest, Properties) {
  auto t = Create("props", "id BIGINT", "");
  ASSERT_TRUE(t->UpdateProperties({{"a", "1"}, {"b", "2"}}, {}).ok());
  ASSERT_TRUE(t->UpdateProperties({{"a", "3"}}, {"b"}).ok());
  EXPECT_EQ(t->metadata().Property("a"), "3");
  EXPECT_EQ(t->metadata().properties.count("b"), 0u);
  int64_t seq = LatestSeq();
  EXPECT_EQ(t->UpdateProperties({{"a", "1"}}, {"a"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->UpdateProperties({{"format-version", "3"}}, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LatestSeq(), seq);
}

TEST_F(TableEvolutionTest, StaleTableObjectEvolvesTheNewestSchema) {
  auto t1 = Create("race", "id BIGINT", "");
  auto t2 = Table::Load(*catalog_, *io_, *db_, *catalog::TableIdent::Parse("db.race"));
  ASSERT_TRUE(t2.ok());
  // t1 evolves the schema; t2 still holds the old metadata and adds another column.
  ASSERT_TRUE(t1->UpdateSchema({Change(Kind::kAddColumn, "a", "INTEGER")}).ok());
  auto o = (*t2)->UpdateSchema({Change(Kind::kAddColumn, "b", "INTEGER")});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_THAT(ColumnNames(**t2), ElementsAre("id", "a", "b"));
  EXPECT_EQ((*t2)->metadata().CurrentSchema()->FindFieldByName("b")->id, 3);
}

TEST_F(TableEvolutionTest, ConcurrentSchemaChangesAreRecomputedOnConflict) {
  auto t = Create("hot", "id BIGINT", "");
  constexpr int kWriters = 6;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0}, retried{0};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto mine = Table::Load(*catalog_, *io_, *db_, t->ident());
      if (!mine.ok()) {
        ++failures;
        return;
      }
      auto r =
          (*mine)->UpdateSchema({Change(Kind::kAddColumn, "c" + std::to_string(w), "INTEGER")});
      if (!r.ok()) {
        ++failures;
        ADD_FAILURE() << r.status().ToString();
      } else if (r->attempts > 1) {
        ++retried;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  RecordProperty("retried_writers", retried.load());
  ASSERT_TRUE(t->Refresh().ok());
  // Every column made it, each with its own id (2..7): no change was lost or overwritten.
  const auto& fields = t->metadata().CurrentSchema()->fields();
  ASSERT_EQ(fields.size(), static_cast<size_t>(kWriters + 1));
  std::set<int> ids;
  for (const auto& f : fields) ids.insert(f.id);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kWriters + 1));
  EXPECT_EQ(*ids.rbegin(), kWriters + 1);
  EXPECT_EQ(t->metadata().last_column_id, kWriters + 1);
}

}  // namespace
}  // namespace skade::table
