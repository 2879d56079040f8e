// Reads the real Iceberg tables in ../shared/fixtures/iceberg (written by Spark, PySpark,
// Impala's test setup and the Iceberg Java API) through the planner and the DuckDB scan, and
// checks the counts and values their sources quote (fixtures/README.md).
#include "skade/engine/iceberg_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/puffin.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"
#include "skade/io/location_map.h"
#include "skade/io/reserved_files.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

using ::testing::ElementsAre;

struct FixtureTable {
  std::string dir;
  iceberg::TableMetadata metadata;
  io::LocationMap locations;
};

// Loads `metadata/<file>` of a fixture table whose metadata records `stored_prefix`.
FixtureTable Load(const std::string& table, const std::string& stored_prefix,
                  const std::string& metadata_file) {
  FixtureTable t;
  t.dir = testing::FixturePath("iceberg/" + table);
  auto parsed = iceberg::ParseTableMetadata(
      testing::ReadFileOrDie(t.dir + "/metadata/" + metadata_file));
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  t.metadata = std::move(parsed).value();
  t.locations.Add(stored_prefix, t.dir);
  return t;
}

class IcebergScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }

  // The SQL of the table relation at a snapshot, with an optional pruning filter.
  std::string TableSql(const FixtureTable& t, iceberg::SnapshotSelector selector = {},
                       const std::string& where = "") {
    auto local_io = io::MakeLocalFileIO();
    auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);
    auto selected = iceberg::SelectSnapshot(t.metadata, selector);
    EXPECT_TRUE(selected.ok()) << selected.status().ToString();
    IcebergScan scan;
    scan.schema = selected->schema;
    scan.locations = t.locations;
    scan.name_mapping = t.metadata.DefaultNameMapping();
    iceberg::ExprPtr filter;
    if (!where.empty()) {
      auto f = SqlToIcebergFilter(*db_, testing::Where(where), *selected->schema);
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      filter = *f;
    }
    if (selected->snapshot != nullptr) {
      iceberg::ScanPlanner planner(*table_io, t.metadata);
      auto tasks = planner.PlanAll(*selected->snapshot, *selected->schema, filter);
      EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
      scan.tasks = std::move(tasks).value();
    }
    auto sql = BuildTableSql(*db_, scan);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  }

  // Runs `query` with the table relation available as `t`; returns rows as text.
  std::vector<std::vector<std::string>> Query(const std::string& table_sql, const std::string& query) {
    return testing::QueryText(*db_, "WITH t AS (" + table_sql + ") " + query);
  }

  std::string One(const std::string& table_sql, const std::string& query) {
    auto rows = Query(table_sql, query);
    return rows.size() == 1 && rows[0].size() == 1 ? rows[0][0] : "<no single value>";
  }

  std::unique_ptr<Database> db_;
};

TEST_F(IcebergScanTest, LineitemCurrentAndOlderSnapshot) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  FixtureTable t = Load("lineitem_iceberg", "lineitem_iceberg", "v2.metadata.json");
  std::string current = TableSql(t);
  EXPECT_EQ(One(current, "SELECT count(*) FROM t"), "51793");
  // The copy-on-write DELETE removed every row below 10000.
  EXPECT_EQ(One(current, "SELECT count(*) FROM t WHERE l_extendedprice < 10000"), "0");
  // TPC-H Q6 on the current snapshot.
  EXPECT_EQ(One(current,
                "SELECT sum(l_extendedprice * l_discount) FROM t WHERE l_shipdate >= DATE "
                "'1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND "
                "0.07 AND l_quantity < 24"),
            "1077536.9101");
  iceberg::SnapshotSelector first;
  first.snapshot_id = 7817332053627255703;
  std::string older = TableSql(t, first);
  EXPECT_EQ(One(older, "SELECT count(*) FROM t"), "60175");
  EXPECT_EQ(One(older, "SELECT count(*) FROM t WHERE l_extendedprice < 10000"), "8382");
}

TEST_F(IcebergScanTest, ImpalaHourAndIdentityPartitionsV1) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  FixtureTable t = Load("iceberg_partitioned", "/test-warehouse/iceberg_test/iceberg_partitioned",
                        "v2.metadata.json");
  EXPECT_EQ(t.metadata.format_version, 1);
  std::string sql = TableSql(t);
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t"), "20");
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t WHERE id > 10"), "10");
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t WHERE action <> 'click'"), "14");
  EXPECT_THAT(Query(sql, "SELECT count(DISTINCT id), count(DISTINCT action) FROM t"),
              ElementsAre(ElementsAre("20", "3")));
  std::string where = "event_time > TIMESTAMPTZ '2020-01-01 09:00:00+00'";
  std::string pruned = TableSql(t, {}, where);
  EXPECT_THAT(Query(pruned, "SELECT id, \"user\", action, event_time FROM t WHERE " + where +
                                " ORDER BY id"),
              ElementsAre(ElementsAre("2", "Lisa", "download", "2020-01-01 10:00:00+00"),
                          ElementsAre("5", "Lisa", "download", "2020-01-01 10:00:00+00"),
                          ElementsAre("7", "Lisa", "download", "2020-01-01 10:00:00+00"),
                          ElementsAre("8", "Lisa", "download", "2020-01-01 10:00:00+00"),
                          ElementsAre("14", "Lisa", "download", "2020-01-01 10:00:00+00"),
                          ElementsAre("16", "Lisa", "download", "2020-01-01 10:00:00+00")));
  EXPECT_THAT(Query(sql, "SELECT action, count(*) FROM t GROUP BY action ORDER BY action"),
              ElementsAre(ElementsAre("click", "6"), ElementsAre("download", "6"),
                          ElementsAre("view", "8")));
}

TEST_F(IcebergScanTest, BucketPartitionedTable) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  FixtureTable t = Load("partition_bucket_test", "data/persistent/partition_bucket_test",
                        "v2.metadata.json");
  std::string sql = TableSql(t);
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t"), "100");
  for (const auto& [where, expected] : std::vector<std::pair<std::string, std::string>>{
           {"partition_col = 'partition_0'", "10"},
           {"partition_col IN ('partition_0', 'partition_1', 'partition_2')", "30"},
           {"partition_col >= 'partition_3' AND partition_col <= 'partition_7'", "50"},
           {"partition_col IS NULL", "0"}}) {
    std::string pruned = TableSql(t, {}, where);
    EXPECT_EQ(One(pruned, "SELECT count(*) FROM t WHERE " + where), expected) << where;
  }
  auto groups = Query(sql, "SELECT partition_col, count(*) FROM t GROUP BY 1 ORDER BY 1");
  ASSERT_EQ(groups.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_THAT(groups[i], ElementsAre("partition_" + std::to_string(i), "10"));
  }
  EXPECT_EQ(One(TableSql(t, {}, "partition_col = 'partition_5'"),
                "SELECT string_agg(id::VARCHAR || ':' || name, ',' ORDER BY id) FROM t "
                "WHERE partition_col = 'partition_5'"),
            "5:user_5,15:user_15,25:user_25,35:user_35,45:user_45,55:user_55,65:user_65,"
            "75:user_75,85:user_85,95:user_95");
}

TEST_F(IcebergScanTest, PositionDeletesAndSchemaEvolutionMatchSpark) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string prefix = "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table";
  FixtureTable t = Load("generated_spec2_0_001/pyspark_iceberg_table", prefix, "v9.metadata.json");
  std::string sql = TableSql(t);
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t"), "6592");
  // The complete expected content, written by Spark from the same session.
  std::string expected = "read_parquet('" +
                         testing::FixturePath("iceberg/generated_spec2_0_001/expected_results/last/data/") +
                         "*.parquet')";
  EXPECT_EQ(One(sql, "SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM " + expected + ")"), "0");
  EXPECT_EQ(One(sql, "SELECT count(*) FROM (SELECT * FROM " + expected + " EXCEPT ALL SELECT * FROM t)"), "0");
  // Spark did not apply the DEFAULT 42 (no initial-default): nobody may invent it.
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t WHERE schema_evol_added_col_1 = 42"), "0");
  EXPECT_EQ(One(sql, "SELECT count(schema_evol_added_col_1) FROM t"), "685");
  EXPECT_EQ(One(sql, "SELECT typeof(schema_evol_added_col_1) FROM t LIMIT 1"), "BIGINT");

  FixtureTable v8 = Load("generated_spec2_0_001/pyspark_iceberg_table", prefix, "v8.metadata.json");
  EXPECT_EQ(One(TableSql(v8), "SELECT typeof(schema_evol_added_col_1) FROM t LIMIT 1"), "INTEGER");
  FixtureTable v6 = Load("generated_spec2_0_001/pyspark_iceberg_table", prefix, "v6.metadata.json");
  auto absent = db_->QueryRows("WITH t AS (" + TableSql(v6) + ") SELECT schema_evol_added_col_1 FROM t");
  EXPECT_FALSE(absent.ok());

  // Logical row count at every snapshot (sequence numbers 1..7).
  const std::vector<std::pair<int64_t, std::string>> per_snapshot = {
      {764624380497366583, "6005"},  {4037069315291880534, "6005"}, {6287117141668015642, "7690"},
      {6585012225877417653, "7690"}, {4440319347650982524, "6592"}, {3119545726281138740, "6592"},
      {4786266686210019019, "6592"}};
  for (const auto& [id, count] : per_snapshot) {
    iceberg::SnapshotSelector s;
    s.snapshot_id = id;
    EXPECT_EQ(One(TableSql(t, s), "SELECT count(*) FROM t"), count) << "snapshot " << id;
  }
}

TEST_F(IcebergScanTest, EqualityDeletesRespectSequenceNumbers) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  FixtureTable t = Load("equality_deletes_mytable", "data/persistent/equality_deletes/warehouse/mydb/mytable",
                        "v7.metadata.json");
  std::string sql = TableSql(t);
  EXPECT_THAT(Query(sql, "SELECT * FROM t ORDER BY ALL"),
              ElementsAre(ElementsAre("4", "d", "2025-01-04"), ElementsAre("5", "e", "2025-01-05")));
  EXPECT_EQ(One(sql, "SELECT count(*) FROM t"), "2");
  EXPECT_EQ(One(TableSql(t, {}, "bir >= DATE '2025-01-01'"),
                "SELECT count(*) FROM t WHERE bir >= DATE '2025-01-01'"),
            "2");
  EXPECT_EQ(One(TableSql(t, {}, "id = 4"), "SELECT bir FROM t WHERE id = 4"), "2025-01-04");
  // History: after seq 4 only (4,d) was left; seq 5 added (5,e),(6,f).
  iceberg::SnapshotSelector s4;
  s4.snapshot_id = 842401149381792626;
  EXPECT_THAT(Query(TableSql(t, s4), "SELECT id, name FROM t ORDER BY ALL"),
              ElementsAre(ElementsAre("4", "d")));
  iceberg::SnapshotSelector s5;
  s5.snapshot_id = 3340507003387467420;
  EXPECT_THAT(Query(TableSql(t, s5), "SELECT id, name FROM t ORDER BY ALL"),
              ElementsAre(ElementsAre("4", "d"), ElementsAre("5", "e"), ElementsAre("6", "f")));
}

TEST_F(IcebergScanTest, ScanStreamsArrowBatches) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  FixtureTable t = Load("lineitem_iceberg", "lineitem_iceberg", "v2.metadata.json");
  auto local_io = io::MakeLocalFileIO();
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);
  iceberg::ScanPlanner planner(*table_io, t.metadata);
  IcebergScan scan;
  scan.schema = t.metadata.CurrentSchema();
  scan.locations = t.locations;
  auto tasks = planner.PlanAll(*t.metadata.CurrentSnapshot(), *scan.schema, nullptr);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  scan.tasks = *tasks;
  ScanQuery q;
  q.columns = {"l_orderkey", "l_extendedprice"};
  auto stream = ScanToArrow(*db_, scan, q);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  arrow::SchemaHandle schema;
  ASSERT_EQ((*stream)->get_schema(stream->get(), schema.get()), 0);
  ASSERT_EQ(schema->n_children, 2);
  EXPECT_STREQ(schema->children[0]->name, "l_orderkey");
  EXPECT_STREQ(schema->children[0]->format, "l");  // int64
  // decimal128(15, 2), with or without the explicit bit width.
  EXPECT_EQ(std::string(schema->children[1]->format).rfind("d:15,2", 0), 0u);
  int64_t rows = 0, batches = 0;
  while (true) {
    arrow::ArrayHandle batch;
    ASSERT_EQ((*stream)->get_next(stream->get(), batch.get()), 0);
    if (!batch.valid()) break;
    ASSERT_EQ(batch->n_children, 2);
    EXPECT_LE(batch->length, 2048);
    rows += batch->length;
    ++batches;
  }
  EXPECT_EQ(rows, 51793);
  EXPECT_GT(batches, 1);
}

TEST_F(IcebergScanTest, MissingDataFileIsNamed) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  testing::TempDir tmp;
  FixtureTable t = Load("partition_bucket_test", "data/persistent/partition_bucket_test",
                        "v2.metadata.json");
  // Point data at an empty folder: metadata is found, data files are not.
  io::LocationMap broken;
  broken.Add("data/persistent/partition_bucket_test/metadata", t.dir + "/metadata");
  broken.Add("data/persistent/partition_bucket_test/data", tmp.path());
  auto local_io = io::MakeLocalFileIO();
  auto table_io = io::MakeRelocatingFileIO(*local_io, broken);
  iceberg::ScanPlanner planner(*table_io, t.metadata);
  IcebergScan scan;
  scan.schema = t.metadata.CurrentSchema();
  scan.locations = broken;
  auto tasks = planner.PlanAll(*t.metadata.CurrentSnapshot(), *scan.schema, nullptr);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  scan.tasks = *tasks;
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_FALSE(sql.ok());
  EXPECT_EQ(sql.status().code(), StatusCode::kNotFound);
  EXPECT_NE(sql.status().message().find(".parquet"), std::string::npos);
}

// The Arrow schema made without a query equals DuckDB's export of the same empty relation, field
// by field (format, name, nullability, metadata, children), for every type it claims to know; the
// ones it does not know (UUID, unknown, a map with nested keys) are left to DuckDB.
void ExpectSameArrowField(const ArrowSchema& direct, const ArrowSchema& duck, const std::string& path) {
  EXPECT_STREQ(direct.format, duck.format) << path;
  EXPECT_STREQ(direct.name ? direct.name : "", duck.name ? duck.name : "") << path;
  EXPECT_EQ(direct.flags, duck.flags) << path;
  EXPECT_EQ(direct.metadata == nullptr, duck.metadata == nullptr) << path;
  EXPECT_EQ(direct.dictionary == nullptr, duck.dictionary == nullptr) << path;
  ASSERT_EQ(direct.n_children, duck.n_children) << path;
  for (int64_t i = 0; i < direct.n_children; ++i) {
    ExpectSameArrowField(*direct.children[i], *duck.children[i], path + "/" + (duck.children[i]->name ? duck.children[i]->name : "?"));
  }
}

TEST_F(IcebergScanTest, ArrowSchemasMadeWithoutAQueryAreDuckDBsOwn) {
  using iceberg::NestedField;
  using iceberg::Type;
  using iceberg::TypeId;
  int id = 100;
  auto field = [](int field_id, const std::string& name, iceberg::TypePtr type, bool required) {
    NestedField out;
    out.id = field_id;
    out.name = name;
    out.required = required;
    out.type = std::move(type);
    return out;
  };
  auto f = [&](const std::string& name, iceberg::TypePtr type, bool required = false) {
    return field(id++, name, std::move(type), required);
  };
  std::vector<NestedField> fields;
  for (TypeId t : {TypeId::kBoolean, TypeId::kInt, TypeId::kLong, TypeId::kFloat, TypeId::kDouble, TypeId::kDate,
                   TypeId::kTime, TypeId::kTimestamp, TypeId::kTimestampTz, TypeId::kTimestampNs,
                   TypeId::kTimestampTzNs, TypeId::kString, TypeId::kBinary}) {
    fields.push_back(f("c" + std::to_string(static_cast<int>(t)), Type::Primitive(t), fields.size() % 2 == 0));
  }
  fields.push_back(f("dec", Type::Decimal(9, 2)));
  fields.push_back(f("dec38", Type::Decimal(38, 10), true));
  fields.push_back(f("fixed", Type::Fixed(16)));
  fields.push_back(f("list", Type::List(id++, Type::Primitive(TypeId::kString), false)));
  fields.push_back(f("list_required", Type::List(id++, Type::Primitive(TypeId::kLong), true), true));
  const int key_id = id++, value_id = id++;
  fields.push_back(f("map", Type::Map(key_id, Type::Primitive(TypeId::kString), value_id, Type::Primitive(TypeId::kDouble), false)));
  fields.push_back(f("nested", Type::Struct({f("a", Type::Primitive(TypeId::kInt), true),
                                             f("b", Type::List(id++, Type::Struct({f("x", Type::Decimal(18, 3))}), false)),
                                             f("m", Type::Map(key_id + 100, Type::Primitive(TypeId::kLong), value_id + 100,
                                                              Type::List(value_id + 101, Type::Primitive(TypeId::kDate), false),
                                                              true))})));
  fields.push_back(f("Mixed Case \"name\"", Type::Primitive(TypeId::kInt)));
  auto schema = std::make_shared<iceberg::Schema>(0, fields);
  auto direct = DirectArrowSchema(*schema);
  ASSERT_TRUE(direct.has_value());
  IcebergScan empty;
  empty.schema = schema;
  auto sql = BuildTableSql(*db_, empty);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  auto stream = db_->QueryArrow(*sql);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  arrow::SchemaHandle duck;
  ASSERT_EQ((*stream)->get_schema(stream->get(), duck.get()), 0);
  ExpectSameArrowField(*direct->get(), *duck.get(), "");

  // Left to DuckDB: the query's schema comes back whole.
  for (iceberg::TypePtr t : {Type::Primitive(TypeId::kUuid), Type::Primitive(TypeId::kUnknown),
                             Type::Map(1, Type::Struct({field(2, "k", Type::Primitive(TypeId::kInt), true)}), 3,
                                       Type::Primitive(TypeId::kInt), false)}) {
    auto other = std::make_shared<iceberg::Schema>(0, std::vector<NestedField>{field(9, "c", t, false)});
    EXPECT_FALSE(DirectArrowSchema(*other).has_value()) << t->ToString();
    auto relation = RelationArrowSchema(*db_, other);
    ASSERT_TRUE(relation.ok()) << relation.status().ToString();
    EXPECT_EQ(relation->get()->n_children, 1);
  }
}

TEST_F(IcebergScanTest, DuckTypeNamesCoverEveryPrimitive) {
  using iceberg::Type;
  using iceberg::TypeId;
  EXPECT_EQ(*DuckTypeName(*Type::Decimal(38, 10)), "DECIMAL(38,10)");
  EXPECT_EQ(*DuckTypeName(*Type::Primitive(TypeId::kTimestampTz)), "TIMESTAMP WITH TIME ZONE");
  EXPECT_EQ(*DuckTypeName(*Type::Primitive(TypeId::kUuid)), "UUID");
  EXPECT_EQ(*DuckTypeName(*Type::Fixed(16)), "BLOB");
  EXPECT_EQ(*DuckTypeName(*Type::List(2, Type::Primitive(TypeId::kInt), false)), "INTEGER[]");
  EXPECT_EQ(*DuckTypeName(*Type::Map(2, Type::Primitive(TypeId::kString), 3,
                                     Type::Primitive(TypeId::kLong), false)),
            "MAP(VARCHAR, BIGINT)");
  EXPECT_EQ(DuckTypeName(*Type::Primitive(TypeId::kVariant)).status().code(),
            StatusCode::kNotImplemented);
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// Data files written without Parquet field ids (e.g. tables migrated from Hive) are read
// through the table's name mapping instead of silently returning NULL columns.
class NameMappingScanTest : public IcebergScanTest {
 protected:
  iceberg::FileScanTask Task(const std::string& path, int64_t rows) {
    iceberg::FileScanTask t;
    t.file.file_path = path;
    t.file.record_count = rows;
    t.sequence_number = 1;
    return t;
  }
  iceberg::SchemaPtr Schema() {
    auto s = iceberg::ParseSchemaJson(R"json({"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"name","required":false,"type":"string"},
      {"id":3,"name":"added","required":false,"type":"int"}]})json");
    EXPECT_TRUE(s.ok());
    return *s;
  }
};

TEST_F(NameMappingScanTest, ReadsFilesWithoutFieldIdsThroughTheMapping) {
  testing::TempDir tmp;
  std::string noids = tmp.Path("noids.parquet");
  std::string withids = tmp.Path("withids.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range AS id, 'old' || range AS old_name FROM range(5)) TO " +
                           QuoteString(noids) + " (FORMAT parquet)")
                  .ok());
  ASSERT_TRUE(db_->Execute("COPY (SELECT range + 100 AS id, 'new' || range AS name, 7 AS added "
                           "FROM range(3)) TO " + QuoteString(withids) +
                           " (FORMAT parquet, FIELD_IDS {id: 1, name: 2, added: 3})")
                  .ok());
  // Confirm the premise: the first file really has no field ids.
  EXPECT_EQ(One("SELECT 1", "SELECT count(field_id) FROM parquet_schema(" + QuoteString(noids) + ")"), "0");

  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {Task(noids, 5), Task(withids, 3)};
  auto mapping = iceberg::NameMapping::Parse(
      R"([{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name", "old_name"]},
          {"field-id": 3, "names": ["added"]}])");
  ASSERT_TRUE(mapping.ok());
  scan.name_mapping = *mapping;
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_THAT(Query(*sql, "SELECT id, name, added FROM t ORDER BY id"),
              ElementsAre(ElementsAre("0", "old0", "NULL"), ElementsAre("1", "old1", "NULL"),
                          ElementsAre("2", "old2", "NULL"), ElementsAre("3", "old3", "NULL"),
                          ElementsAre("4", "old4", "NULL"), ElementsAre("100", "new0", "7"),
                          ElementsAre("101", "new1", "7"), ElementsAre("102", "new2", "7")));

  // Without a mapping the current names are used (with a warning): `old_name` can't be found.
  scan.name_mapping.reset();
  auto fallback = BuildTableSql(*db_, scan);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ(One(*fallback, "SELECT count(*) FROM t WHERE name IS NULL"), "5");
  EXPECT_EQ(One(*fallback, "SELECT sum(id) FROM t"), "313");
}

// How each file stores its columns (names, field ids) comes from the footer the page check read,
// remembered with the file: a second scan reads no footer, and a file replaced in place (new
// size and modification time) is read by its new shape.
TEST_F(NameMappingScanTest, FileShapesAreRememberedWithTheFileAndFollowAReplacedOne) {
  testing::TempDir tmp;
  const std::string file = tmp.Path("f.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range AS id, 'old' || range AS old_name FROM range(5)) TO " +
                           QuoteString(file) + " (FORMAT parquet)")
                  .ok());
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {Task(file, 5)};
  auto mapping = iceberg::NameMapping::Parse(R"([{"field-id": 1, "names": ["id"]},
                                                 {"field-id": 2, "names": ["name", "old_name"]}])");
  ASSERT_TRUE(mapping.ok());
  scan.name_mapping = *mapping;
  const auto before = db_->data_file_checks().counters();
  for (int round = 0; round < 2; ++round) {
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_TRUE(sql.ok()) << sql.status().ToString();
    EXPECT_THAT(Query(*sql, "SELECT id, name, added FROM t WHERE id < 2 ORDER BY id"),
                ElementsAre(ElementsAre("0", "old0", "NULL"), ElementsAre("1", "old1", "NULL")))
        << "round " << round;
  }
  auto after = db_->data_file_checks().counters();
  EXPECT_EQ(after.files_checked - before.files_checked, 1);
  EXPECT_EQ(after.files_remembered - before.files_remembered, 1);

  // The same path, now with field ids and names the mapping does not know.
  ASSERT_TRUE(db_->Execute("COPY (SELECT range + 100 AS key, 'new' || range AS label, 7 AS extra FROM range(4)) TO " +
                           QuoteString(file) + " (FORMAT parquet, FIELD_IDS {key: 1, label: 2, extra: 3})")
                  .ok());
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_THAT(Query(*sql, "SELECT id, name, added FROM t ORDER BY id"),
              ElementsAre(ElementsAre("100", "new0", "7"), ElementsAre("101", "new1", "7"),
                          ElementsAre("102", "new2", "7"), ElementsAre("103", "new3", "7")));
  EXPECT_EQ(db_->data_file_checks().counters().files_checked - after.files_checked, 1);
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// Spec (v3) "Default values": a column added with an initial-default reads that value from data
// files written before it existed.
TEST_F(NameMappingScanTest, MissingColumnsReadTheirInitialDefault) {
  testing::TempDir tmp;
  std::string file = tmp.Path("old.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range AS id FROM range(3)) TO " + QuoteString(file) +
                           " (FORMAT parquet, FIELD_IDS {id: 1})")
                  .ok());
  auto schema = iceberg::ParseSchemaJson(R"json({"type":"struct","schema-id":1,"fields":[
    {"id":1,"name":"id","required":true,"type":"long"},
    {"id":2,"name":"n","required":false,"type":"int","initial-default":42},
    {"id":3,"name":"d","required":false,"type":"date","initial-default":"2024-01-02"},
    {"id":4,"name":"s","required":false,"type":"string","initial-default":"it's"},
    {"id":5,"name":"p","required":false,"type":"decimal(9,2)","initial-default":"14.20"},
    {"id":6,"name":"none","required":false,"type":"double"}]})json");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  IcebergScan scan;
  scan.schema = *schema;
  scan.tasks = {Task(file, 3)};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_THAT(Query(*sql, "SELECT * FROM t ORDER BY id"),
              ElementsAre(ElementsAre("0", "42", "2024-01-02", "it's", "14.20", "NULL"),
                          ElementsAre("1", "42", "2024-01-02", "it's", "14.20", "NULL"),
                          ElementsAre("2", "42", "2024-01-02", "it's", "14.20", "NULL")));
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// Spec "Column Projection": a field id absent from a data file takes the file's identity
// partition value from the manifest. DuckDB, Impala, Hive migrations and add_files write
// identity-partitioned columns only into the manifest.
class IdentityPartitionScanTest : public NameMappingScanTest {
 protected:
  // A data file holding only `id` (field id 1), values [from, from + n).
  std::string IdOnlyFile(testing::TempDir& tmp, const std::string& name, int from, int n) {
    std::string path = tmp.Path(name);
    EXPECT_TRUE(db_->Execute("COPY (SELECT range AS id FROM range(" + std::to_string(from) + ", " +
                             std::to_string(from + n) + ")) TO " + QuoteString(path) +
                             " (FORMAT parquet, FIELD_IDS {id: 1})")
                    .ok());
    return path;
  }
};

TEST_F(IdentityPartitionScanTest, EveryIdentityTypeReadsItsPartitionValue) {
  auto schema = iceberg::ParseSchemaJson(R"json({"type":"struct","schema-id":0,"fields":[
    {"id":1,"name":"id","required":true,"type":"long"},
    {"id":2,"name":"i","required":false,"type":"int"},
    {"id":3,"name":"l","required":false,"type":"long"},
    {"id":4,"name":"b","required":false,"type":"boolean"},
    {"id":5,"name":"f","required":false,"type":"float"},
    {"id":6,"name":"d","required":false,"type":"double"},
    {"id":7,"name":"dec4","required":false,"type":"decimal(4,2)"},
    {"id":8,"name":"dec18","required":false,"type":"decimal(18,3)"},
    {"id":9,"name":"dec38","required":false,"type":"decimal(38,10)"},
    {"id":10,"name":"dt","required":false,"type":"date"},
    {"id":11,"name":"tm","required":false,"type":"time"},
    {"id":12,"name":"ts","required":false,"type":"timestamp"},
    {"id":13,"name":"tstz","required":false,"type":"timestamptz"},
    {"id":14,"name":"s","required":false,"type":"string"},
    {"id":15,"name":"bin","required":false,"type":"binary"},
    {"id":16,"name":"fx","required":false,"type":"fixed[3]"},
    {"id":17,"name":"u","required":false,"type":"uuid"}]})json");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  auto spec = iceberg::ParsePartitionSpec("i, l, b, f, d, dec4, dec18, dec38, dt, tm, ts, tstz, s, bin, fx, u",
                                          **schema, 0);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // JSON single values (spec Appendix D) of each partition column, and the SQL that equals it.
  const std::vector<std::pair<std::string, std::string>> values = {
      {"42", "42"},
      {"9000000000", "9000000000"},
      {"true", "true"},
      {"1.5", "1.5::FLOAT"},
      {"2.25", "2.25::DOUBLE"},
      {"\"12.34\"", "12.34::DECIMAL(4,2)"},
      {"\"123456789012345.678\"", "123456789012345.678::DECIMAL(18,3)"},
      {"\"1234567890123456789012345678.0123456789\"", "'1234567890123456789012345678.0123456789'::DECIMAL(38,10)"},
      {"\"2024-02-29\"", "DATE '2024-02-29'"},
      {"\"01:02:03.000004\"", "TIME '01:02:03.000004'"},
      {"\"2024-01-02T03:04:05.000006\"", "TIMESTAMP '2024-01-02 03:04:05.000006'"},
      {"\"2024-01-02T03:04:05.000006+00:00\"", "TIMESTAMPTZ '2024-01-02 03:04:05.000006+00'"},
      {"\"it's\"", "'it''s'"},
      {"\"0A0B\"", "'\\x0A\\x0B'::BLOB"},
      {"\"010203\"", "'\\x01\\x02\\x03'::BLOB"},
      {"\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"", "'f79c3e09-677c-4bbd-a479-3f349cb785e7'::UUID"},
  };
  testing::TempDir tmp;
  auto task = Task(IdOnlyFile(tmp, "a.parquet", 0, 4), 4);
  auto null_task = Task(IdOnlyFile(tmp, "b.parquet", 100, 2), 2);
  for (size_t c = 0; c < values.size(); ++c) {
    const auto& field = (*schema)->fields()[c + 1];
    auto lit = iceberg::Literal::FromJson(field.type, values[c].first);
    ASSERT_TRUE(lit.ok()) << field.name << ": " << lit.status().ToString();
    task.file.partition.push_back(*lit);
    null_task.file.partition.push_back(std::nullopt);  // a null partition value reads as null
  }
  IcebergScan scan;
  scan.schema = *schema;
  scan.specs = {*spec};
  scan.tasks = {task, null_task};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  for (size_t c = 0; c < values.size(); ++c) {
    const std::string& name = (*schema)->fields()[c + 1].name;
    SCOPED_TRACE(name);
    EXPECT_EQ(One(*sql, "SELECT count(*) FROM t WHERE " + name + " = " + values[c].second), "4");
    EXPECT_EQ(One(*sql, "SELECT count(*) FROM t WHERE " + name + " IS NULL"), "2");
    EXPECT_EQ(One(*sql, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE " + name + " = " +
                            values[c].second),
              "0,1,2,3");
  }
}

TEST_F(IdentityPartitionScanTest, EachFileUsesTheSpecItWasWrittenWith) {
  auto schema = iceberg::ParseSchemaJson(R"json({"type":"struct","schema-id":0,"fields":[
    {"id":1,"name":"id","required":true,"type":"long"},
    {"id":2,"name":"region","required":false,"type":"string"},
    {"id":3,"name":"day","required":false,"type":"date"}]})json");
  ASSERT_TRUE(schema.ok());
  auto by_region = iceberg::ParsePartitionSpec("region", **schema, 0);
  auto by_day = iceberg::ParsePartitionSpec("day", **schema, 1, 1000);
  ASSERT_TRUE(by_region.ok() && by_day.ok());
  testing::TempDir tmp;
  // Spec 0 file: region only in the manifest, no day at all (null).
  auto old_file = Task(IdOnlyFile(tmp, "old.parquet", 0, 3), 3);
  old_file.file.spec_id = 0;
  old_file.file.partition = {*iceberg::Literal::FromJson(iceberg::Type::Primitive(iceberg::TypeId::kString), "\"eu\"")};
  // Spec 1 file: stores region itself (its own values win), day only in the manifest.
  std::string new_path = tmp.Path("new.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range + 10 AS id, 'us' AS region FROM range(2)) TO " + QuoteString(new_path) +
                           " (FORMAT parquet, FIELD_IDS {id: 1, region: 2})")
                  .ok());
  auto new_file = Task(new_path, 2);
  new_file.file.spec_id = 1;
  new_file.file.partition = {*iceberg::Literal::FromJson(iceberg::Type::Primitive(iceberg::TypeId::kDate),
                                                          "\"2024-05-06\"")};
  IcebergScan scan;
  scan.schema = *schema;
  scan.specs = {*by_region, *by_day};
  scan.tasks = {old_file, new_file};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_THAT(Query(*sql, "SELECT id, region, day FROM t ORDER BY id"),
              ElementsAre(ElementsAre("0", "eu", "NULL"), ElementsAre("1", "eu", "NULL"),
                          ElementsAre("2", "eu", "NULL"), ElementsAre("10", "us", "2024-05-06"),
                          ElementsAre("11", "us", "2024-05-06")));
  EXPECT_EQ(One(*sql, "SELECT count(*) FROM t WHERE region = 'eu'"), "3");
  EXPECT_EQ(One(*sql, "SELECT count(*) FROM t WHERE day = DATE '2024-05-06'"), "2");
}

TEST_F(IdentityPartitionScanTest, FilesOfOtherFormatsAreNamedNotSentToTheParquetReader) {
  testing::TempDir tmp;
  IcebergScan scan;
  scan.schema = Schema();
  auto orc = Task(tmp.Path("part-0.orc"), 1);
  orc.file.file_format = iceberg::FileFormat::kOrc;
  scan.tasks = {orc};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_EQ(sql.status().code(), StatusCode::kNotImplemented);
  EXPECT_THAT(sql.status().message(), ::testing::HasSubstr("part-0.orc"));
  EXPECT_THAT(sql.status().message(), ::testing::HasSubstr("ORC"));
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// Position delete files name data files the way their writer saw them (Impala/Hive/Spark on
// HDFS: hdfs://namenode:8020/…, file:/… forms) while manifests may say /…: the deletes apply
// through one normal form, and rows naming no file of the read are reported.
TEST_F(IdentityPartitionScanTest, PositionDeletesMatchDataFilesWhateverTheirPathForm) {
  testing::TempDir tmp;
  auto data = Task(IdOnlyFile(tmp, "d.parquet", 0, 6), 6);
  const std::string path = data.file.file_path;
  std::string deletes = tmp.Path("pos-deletes.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT * FROM (VALUES ('hdfs://namenode:8020' || " + QuoteString(path) +
                           ", 1::BIGINT), ('file://' || " + QuoteString(path) + ", 3::BIGINT), ('file:' || " +
                           QuoteString(path) + ", 4::BIGINT), ('/elsewhere/other.parquet', 0::BIGINT)) t(file_path, pos)) TO " +
                           QuoteString(deletes) +
                           " (FORMAT parquet, FIELD_IDS {file_path: 2147483546, pos: 2147483545})")
                  .ok());
  auto d = std::make_shared<iceberg::DeleteFileTask>();
  d->file.content = iceberg::DataFileContent::kPositionDeletes;
  d->file.file_path = deletes;
  d->file.record_count = 4;
  d->sequence_number = 2;
  data.deletes.push_back(d);
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {data};
  std::vector<std::string> notes;
  scan.note = [&](const std::string& m) { notes.push_back(m); };
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_EQ(One(*sql, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"), "0,2,5");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], ::testing::HasSubstr("1 position delete row(s) name no data file"));
}

// Position delete files become one bitmap per data file (as deletion vectors): several files for
// one data file are merged, each file is read again once it changes, other files are untouched.
class PositionDeleteBitmapTest : public IdentityPartitionScanTest {
 protected:
  // A position delete file of (file_path, pos) rows in that order, with the spec's field ids.
  void WriteDeletes(const std::string& path, const std::vector<std::pair<std::string, std::string>>& rows) {
    std::string values;
    for (const auto& [file, pos] : rows) {
      values += std::string(values.empty() ? "" : ", ") + "(" + file + "::VARCHAR, " + pos + "::BIGINT)";
    }
    ASSERT_TRUE(db_->Execute("COPY (SELECT * FROM (VALUES " + values + ") t(file_path, pos)) TO " + QuoteString(path) +
                             " (FORMAT parquet, FIELD_IDS {file_path: 2147483546, pos: 2147483545})")
                    .ok());
  }
  std::shared_ptr<iceberg::DeleteFileTask> Deletes(const std::string& path, int64_t rows) {
    auto d = std::make_shared<iceberg::DeleteFileTask>();
    d->file.content = iceberg::DataFileContent::kPositionDeletes;
    d->file.file_path = path;
    d->file.record_count = rows;
    d->sequence_number = 2;
    return d;
  }
  std::string Ids(const IcebergScan& scan) {
    auto sql = BuildTableSql(*db_, scan);
    if (!sql.ok()) return sql.status().ToString();
    return One(*sql, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t");
  }
};

TEST_F(PositionDeleteBitmapTest, FilesOfOneDataFileAreMergedAndReadAgainWhenTheyChange) {
  testing::TempDir tmp;
  auto data = Task(IdOnlyFile(tmp, "d.parquet", 0, 10), 10);
  auto other = Task(IdOnlyFile(tmp, "e.parquet", 100, 3), 3);
  const std::string d = QuoteString(data.file.file_path), e = QuoteString(other.file.file_path);
  const std::string a = tmp.Path("a-deletes.parquet"), b = tmp.Path("b-deletes.parquet");
  WriteDeletes(a, {{d, "1"}, {d, "3"}, {e, "0"}});
  WriteDeletes(b, {{d, "3"}, {d, "7"}, {d, "70000"}});  // a position past the file deletes nothing
  data.deletes = {Deletes(a, 3), Deletes(b, 3)};
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {data, other};  // `e` was given no delete file by the planner: its row in `a` is not applied
  EXPECT_EQ(Ids(scan), "0,2,4,5,6,8,9,100,101,102");

  // Rewritten in place (another size): read again, not served from the cache.
  WriteDeletes(a, {{d, "2"}, {"'/elsewhere/f.parquet'", "0"}, {d, "9"}});
  EXPECT_EQ(Ids(scan), "0,1,4,5,6,8,100,101,102");
  scan.tasks[1].deletes = {Deletes(a, 3)};
  EXPECT_EQ(Ids(scan), "0,1,4,5,6,8,100,101,102");  // `a` now names no row of `e`
  WriteDeletes(a, {{e, "1"}});
  EXPECT_EQ(Ids(scan), "0,1,2,4,5,6,8,9,100,102");
}

// The rows are dropped inside the Parquet scan, which reads row groups on several threads: each
// run of rows is matched to its own positions (every 7th row of 30 row groups deleted, and one
// whole row group).
TEST_F(PositionDeleteBitmapTest, RowsOfManyRowGroupsReadInParallelKeepTheirPositions) {
  testing::TempDir tmp;
  const std::string path = tmp.Path("big.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range AS id FROM range(300000)) TO " + QuoteString(path) +
                           " (FORMAT parquet, FIELD_IDS {id: 1}, ROW_GROUP_SIZE 10000)")
                  .ok());
  auto data = Task(path, 300000);
  const std::string deletes = tmp.Path("deletes.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT " + QuoteString(path) + " AS file_path, pos FROM (SELECT range AS pos FROM "
                           "range(0, 300000, 7) UNION SELECT range FROM range(150000, 160000)) ORDER BY pos) TO " +
                           QuoteString(deletes) + " (FORMAT parquet, FIELD_IDS {file_path: 2147483546, pos: 2147483545})")
                  .ok());
  data.deletes = {Deletes(deletes, 0)};
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {data};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  // Kept: ids not divisible by 7 outside [150000, 160000).
  int64_t count = 0, sum = 0;
  for (int64_t id = 0; id < 300000; ++id) {
    if (id % 7 != 0 && (id < 150000 || id >= 160000)) {
      ++count;
      sum += id;
    }
  }
  EXPECT_EQ(One(*sql, "SELECT count(*)::VARCHAR || ',' || sum(id)::VARCHAR || ',' || count(*) FILTER (id % 7 = 0 OR "
                      "id BETWEEN 150000 AND 159999)::VARCHAR FROM t"),
            std::to_string(count) + "," + std::to_string(sum) + ",0");
}

// Files with and without field ids are read by separate reads (the second through the name
// mapping): each read is given its own files' deletes, and both apply.
TEST_F(PositionDeleteBitmapTest, ReadsOfFilesWithAndWithoutFieldIdsEachApplyTheirOwnDeletes) {
  testing::TempDir tmp;
  const std::string noids = tmp.Path("noids.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range + 50 AS id FROM range(5)) TO " + QuoteString(noids) + " (FORMAT parquet)")
                  .ok());
  auto plain = Task(noids, 5);
  auto with_ids = Task(IdOnlyFile(tmp, "ids.parquet", 0, 5), 5);
  const std::string a = tmp.Path("a-deletes.parquet"), b = tmp.Path("b-deletes.parquet");
  WriteDeletes(a, {{QuoteString(noids), "1"}, {QuoteString(noids), "4"}});
  WriteDeletes(b, {{QuoteString(with_ids.file.file_path), "0"}});
  plain.deletes = {Deletes(a, 2)};
  with_ids.deletes = {Deletes(b, 1)};
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {plain, with_ids};
  auto mapping = iceberg::NameMapping::Parse(R"([{"field-id": 1, "names": ["id"]}])");
  ASSERT_TRUE(mapping.ok());
  scan.name_mapping = *mapping;
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  // Each read names only its own file's deletes: each delete file once in the SQL.
  auto occurrences = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = sql->find(needle); at != std::string::npos; at = sql->find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences("a-deletes.parquet"), 1u);
  EXPECT_EQ(occurrences("b-deletes.parquet"), 1u);
  EXPECT_EQ(Ids(scan), "1,2,3,4,50,52,53");
}

TEST_F(PositionDeleteBitmapTest, RowsWithoutAPathOrWithANegativePositionAreCorruption) {
  testing::TempDir tmp;
  auto data = Task(IdOnlyFile(tmp, "d.parquet", 0, 4), 4);
  const std::string d = QuoteString(data.file.file_path);
  for (const auto& [name, rows] : std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>{
           {"null-pos.parquet", {{d, "1"}, {d, "NULL"}}},
           {"null-path.parquet", {{d, "1"}, {"NULL", "2"}}},
           {"negative.parquet", {{d, "-1"}}}}) {
    const std::string path = tmp.Path(name);
    WriteDeletes(path, rows);
    auto task = data;
    task.deletes = {Deletes(path, static_cast<int64_t>(rows.size()))};
    IcebergScan scan;
    scan.schema = Schema();
    scan.tasks = {task};
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_EQ(sql.status().code(), StatusCode::kCorruption) << name << ": " << sql.status().ToString();
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr(name));
  }
}

TEST_F(PositionDeleteBitmapTest, LockedDownDatabaseReadsThemOnlyInsideItsDirectories) {
  testing::TempDir inside, outside;
  const std::string data = IdOnlyFile(inside, "d.parquet", 0, 3);
  const std::string in_file = inside.Path("in.parquet"), out_file = outside.Path("out.parquet"),
                    reserved = inside.Path("catalog.parquet");
  WriteDeletes(in_file, {{QuoteString(data), "1"}});
  WriteDeletes(out_file, {{QuoteString(data), "1"}});
  WriteDeletes(reserved, {{QuoteString(data), "1"}});
  io::ReserveFile(reserved);
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {inside.path()};
  auto db = Database::Open(options);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  // skade_read_parquet of the data file without the rows the delete file names.
  auto call = [&](const std::string& file, const std::string& uses = "[[0]]") {
    return (*db)->QueryRows("SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM skade_read_parquet(" +
                            QuoteString(data) + ", position_delete_files = [" + QuoteString(file) +
                            "], position_data_paths = [" + QuoteString(data) + "], position_data_locations = [" +
                            QuoteString(data) + "], position_data_deletes = " + uses + ")");
  };
  auto ok = call(in_file);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*(*ok)[0][0], "0,2");
  for (const std::string& escape : {out_file, "file://" + out_file, "file:" + out_file,
                                    inside.path() + "/../" + outside.path().substr(outside.path().rfind('/') + 1) + "/out.parquet"}) {
    auto refused = call(escape);
    ASSERT_FALSE(refused.ok()) << escape;
    EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("outside the allowed directories"));
  }
  // The catalog's own files stay closed to it as to every reader (io/reserved_files.h).
  auto closed = call(reserved);
  ASSERT_FALSE(closed.ok());
  // Lists that do not line up, or name a file the list does not hold, are refused.
  auto bad = call(in_file, "[[1]]");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("names delete file 1 of 1"));
  auto uneven = call(in_file, "[[0], [0]]");
  ASSERT_FALSE(uneven.ok());
  EXPECT_THAT(uneven.status().message(), ::testing::HasSubstr("must have the same length"));
  // Deletes for a data file spelt otherwise than the file read would apply to nothing: refused.
  auto elsewhere = (*db)->QueryRows("SELECT count(*) FROM skade_read_parquet(" + QuoteString(data) +
                                    ", position_delete_files = [" + QuoteString(in_file) + "], position_data_paths = [" +
                                    QuoteString(inside.path() + "/./d.parquet") + "], position_data_locations = [" +
                                    QuoteString(data) + "], position_data_deletes = [[0]])");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_THAT(elsewhere.status().message(), ::testing::HasSubstr("not one of the files read"));
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// v3 deletion vectors: blobs in Puffin files, several per file, one per data file, applied by
// (file, offset); damaged ones are Corruption naming the file.
class DeletionVectorScanTest : public IdentityPartitionScanTest {
 protected:
  // The ids skade_read_parquet reads from `data` without the rows of the vector at `offset`.
  static std::string VectorRead(const std::string& data, const std::string& puffin, int64_t offset, size_t length,
                                int64_t rows) {
    return "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM skade_read_parquet(" + QuoteString(data) +
           ", vector_puffins = [" + QuoteString(puffin) + "], vector_offsets = [" + std::to_string(offset) +
           "], vector_lengths = [" + std::to_string(length) + "], vector_data_paths = [" + QuoteString(data) +
           "], vector_row_counts = [" + std::to_string(rows) + "])";
  }
  struct Blob {
    std::string type = std::string(iceberg::kDeletionVectorBlob);
    std::string bytes;
  };
  // Writes a Puffin file of `blobs`; returns the offsets.
  std::vector<int64_t> WritePuffin(const std::string& path, const std::vector<Blob>& blobs) {
    iceberg::PuffinWriter writer;
    std::vector<int64_t> offsets;
    for (const Blob& b : blobs) {
      offsets.push_back(writer.Add(iceberg::PuffinBlob{b.type, {}, 1, 1, 0, 0, std::nullopt, {}}, b.bytes).offset);
    }
    auto io = io::MakeLocalFileIO();
    EXPECT_TRUE(io->Overwrite(path, writer.Finish({})).ok());
    return offsets;
  }
  std::shared_ptr<iceberg::DeleteFileTask> Vector(const std::string& puffin, int64_t offset, const std::string& bytes,
                                    const iceberg::FileScanTask& data, int64_t cardinality) {
    auto d = std::make_shared<iceberg::DeleteFileTask>();
    d->file.content = iceberg::DataFileContent::kPositionDeletes;
    d->file.file_format = iceberg::FileFormat::kPuffin;
    d->file.file_path = puffin;
    d->file.content_offset = offset;
    d->file.content_size_in_bytes = static_cast<int64_t>(bytes.size());
    d->file.referenced_data_file = data.file.file_path;
    d->file.record_count = cardinality;
    d->sequence_number = 2;
    return d;
  }
  static std::string Dv(std::vector<int64_t> positions) {
    return iceberg::DeletionVector::FromPositions(std::move(positions)).Serialize();
  }
};

TEST_F(DeletionVectorScanTest, TwoBlobsOfOnePuffinFileDeleteExactlyTheirRows) {
  testing::TempDir tmp;
  auto a = Task(IdOnlyFile(tmp, "a.parquet", 0, 10), 10);
  auto b = Task(IdOnlyFile(tmp, "b.parquet", 100, 10), 10);
  auto c = Task(IdOnlyFile(tmp, "c.parquet", 200, 3), 3);  // no deletes
  const std::string puffin = tmp.Path("deletes.puffin");
  const std::string dv_a = Dv({1, 3}), dv_b = Dv({0, 9, 4});
  // A statistics blob first, so neither vector starts right after the magic.
  auto offsets = WritePuffin(puffin, {{"apache-datasketches-theta-v1", "sketch"}, {.bytes = dv_a}, {.bytes = dv_b}});
  a.deletes.push_back(Vector(puffin, offsets[1], dv_a, a, 2));
  b.deletes.push_back(Vector(puffin, offsets[2], dv_b, b, 3));
  IcebergScan scan;
  scan.schema = Schema();
  scan.tasks = {a, b, c};
  auto sql = BuildTableSql(*db_, scan);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_EQ(One(*sql, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"),
            "0,2,4,5,6,7,8,9,101,102,103,105,106,107,108,200,201,202");
  EXPECT_EQ(One(*sql, "SELECT count(*) FROM t WHERE id >= 100 AND id < 200"), "7");
  // The same blobs again (decoded ones come from the cache) give the same rows.
  auto again = BuildTableSql(*db_, scan);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(One(*again, "SELECT count(*) FROM t"), "18");
}

TEST_F(DeletionVectorScanTest, DamagedVectorsAreCorruptionNamingTheFile) {
  testing::TempDir tmp;
  auto data = Task(IdOnlyFile(tmp, "a.parquet", 0, 10), 10);
  const std::string dv = Dv({2, 5});
  int n = 0;
  // Builds a scan whose one vector has had `damage` done, then expects a Corruption saying `says`.
  auto expect = [&](const std::function<void(std::string& file, iceberg::DataFile& entry)>& damage,
                    const std::string& says) {
    const std::string puffin = tmp.Path("v" + std::to_string(n++) + ".puffin");
    auto offsets = WritePuffin(puffin, {{.bytes = dv}});
    auto task = data;
    auto vector = Vector(puffin, offsets[0], dv, data, 2);
    std::string file = testing::ReadFileOrDie(puffin);
    damage(file, vector->file);
    task.deletes = {vector};
    auto io = io::MakeLocalFileIO();
    ASSERT_TRUE(io->Overwrite(puffin, file).ok());
    IcebergScan scan;
    scan.schema = Schema();
    scan.tasks = {task};
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_EQ(sql.status().code(), StatusCode::kCorruption) << says << ": " << sql.status().ToString();
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr(puffin));
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr(says));
  };
  expect([](std::string& f, iceberg::DataFile&) { f[4 + 14] = static_cast<char>(f[4 + 14] ^ 1); }, "CRC");
  expect([](std::string& f, iceberg::DataFile&) { f[4 + 5] = 0; }, "magic");
  expect([](std::string& f, iceberg::DataFile&) { f.replace(0, 4, "PAR1"); }, "Puffin magic");
  expect([](std::string&, iceberg::DataFile& e) { e.content_offset = 5; }, "no blob at offset 5");
  expect([](std::string&, iceberg::DataFile& e) { *e.content_size_in_bytes += 1; }, "the manifest");
  expect([](std::string&, iceberg::DataFile& e) { e.record_count = 3; }, "its manifest entry says 3");
  expect([](std::string&, iceberg::DataFile& e) { e.referenced_data_file = "/elsewhere/b.parquet"; }, "is for");
  expect([](std::string&, iceberg::DataFile& e) { e.referenced_data_file.reset(); }, "has no referenced_data_file");
  expect([&](std::string& f, iceberg::DataFile&) {
    // The footer moves the blob past the end of the blob area.
    const std::string entry = "\"offset\":4";
    f.replace(f.find(entry), entry.size(), "\"offset\":8");
  }, "outside the blob area");
  // Positions past the data file's rows, an unknown blob type at the offset, two vectors.
  {
    const std::string far = Dv({2, 10});
    const std::string puffin = tmp.Path("far.puffin");
    auto offsets = WritePuffin(puffin, {{.bytes = far}});
    auto task = data;
    task.deletes = {Vector(puffin, offsets[0], far, data, 2)};
    IcebergScan scan;
    scan.schema = Schema();
    scan.tasks = {task};
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_EQ(sql.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr("deletes position 10, past the data file's 10 rows"));
  }
  {
    const std::string puffin = tmp.Path("theta.puffin");
    auto offsets = WritePuffin(puffin, {{"apache-datasketches-theta-v1", dv}});
    auto task = data;
    task.deletes = {Vector(puffin, offsets[0], dv, data, 2)};
    IcebergScan scan;
    scan.schema = Schema();
    scan.tasks = {task};
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_EQ(sql.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr("'apache-datasketches-theta-v1' blob"));
  }
  {
    const std::string puffin = tmp.Path("two.puffin");
    auto offsets = WritePuffin(puffin, {{.bytes = dv}, {.bytes = dv}});
    auto task = data;
    task.deletes = {Vector(puffin, offsets[0], dv, data, 2), Vector(puffin, offsets[1], dv, data, 2)};
    IcebergScan scan;
    scan.schema = Schema();
    scan.tasks = {task};
    auto sql = BuildTableSql(*db_, scan);
    ASSERT_EQ(sql.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(sql.status().message(), ::testing::HasSubstr("two deletion vectors"));
  }
}

TEST_F(DeletionVectorScanTest, LockedDownDatabaseReadsVectorsOnlyInsideItsDirectories) {
  testing::TempDir inside, outside;
  const std::string dv = Dv({1});
  const std::string in_file = inside.Path("in.puffin"), out_file = outside.Path("out.puffin");
  auto in_offsets = WritePuffin(in_file, {{.bytes = dv}});
  WritePuffin(out_file, {{.bytes = dv}});
  const std::string data = IdOnlyFile(inside, "d.parquet", 0, 3);
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {inside.path()};
  auto db = Database::Open(options);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto call = [&](const std::string& file) {
    return (*db)->QueryRows(VectorRead(data, file, in_offsets[0], dv.size(), 3));
  };
  auto ok = call(in_file);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*(*ok)[0][0], "0,2");  // the vector deletes position 1
  for (const std::string& escape : {out_file, "file://" + out_file, "file:" + out_file,
                                    inside.path() + "/../" + outside.path().substr(outside.path().rfind('/') + 1) + "/out.puffin"}) {
    auto refused = call(escape);
    ASSERT_FALSE(refused.ok()) << escape;
    EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("outside the allowed directories"));
  }
}

// Serves files kept in memory under object-store locations, resolving '.' and '..' in them the
// way an HTTP client resolves them in a request path (so "s3://b/in/../out/f" reads out/f).
class InMemoryObjectStore final : public io::FileIO {
 public:
  void Put(const std::string& location, std::string bytes) { files_[io::NormalizeLocation(location)] = std::move(bytes); }
  Result<std::string> Read(std::string_view l) override { return Find(l); }
  Result<std::string> ReadRange(std::string_view l, int64_t offset, int64_t length) override {
    SKADE_ASSIGN_OR_RETURN(std::string all, Find(l));
    return all.substr(static_cast<size_t>(std::min<int64_t>(offset, all.size())), static_cast<size_t>(length));
  }
  Result<io::FileInfo> Stat(std::string_view l) override {
    SKADE_ASSIGN_OR_RETURN(std::string all, Find(l));
    return io::FileInfo{std::string(l), static_cast<int64_t>(all.size()), 1};
  }
  Status CreateExclusive(std::string_view, std::string_view) override { return Status::NotImplemented("read-only"); }
  Status Overwrite(std::string_view, std::string_view) override { return Status::NotImplemented("read-only"); }
  Status Update(std::string_view, const Change&) override { return Status::NotImplemented("read-only"); }
  Result<std::vector<io::FileInfo>> List(std::string_view) override { return std::vector<io::FileInfo>{}; }
  Status Delete(std::string_view) override { return Status::NotImplemented("read-only"); }

 private:
  Result<std::string> Find(std::string_view l) const {
    auto it = files_.find(io::NormalizeLocation(l));
    if (it == files_.end()) return Status::NotFound(std::string(l) + " does not exist");
    return it->second;
  }
  std::map<std::string, std::string> files_;
};

TEST_F(DeletionVectorScanTest, LockedDownDatabaseReadsObjectStoreVectorsOnlyInsideItsPrefixes) {
  testing::TempDir tmp;
  const std::string dv = Dv({1});
  const std::string staged = tmp.Path("v.puffin");
  auto offsets = WritePuffin(staged, {{.bytes = dv}});
  InMemoryObjectStore store;
  for (const char* key : {"s3://b/inside/in.puffin", "s3://b/outside/out.puffin", "s3://b/insider/out.puffin"}) {
    store.Put(key, testing::ReadFileOrDie(staged));
  }
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {tmp.path(), "s3://b/inside"};
  options.object_store = &store;
  auto db = Database::Open(options);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const std::string data = IdOnlyFile(tmp, "d.parquet", 0, 3);
  auto call = [&](const std::string& file) {
    return (*db)->QueryRows(VectorRead(data, file, offsets[0], dv.size(), 3));
  };
  auto ok = call("s3://b/inside/in.puffin");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*(*ok)[0][0], "0,2");
  for (const std::string escape : {"s3://b/outside/out.puffin", "s3://b/insider/out.puffin",
                                   "s3://b/inside/../outside/out.puffin", "s3://b/inside/./../outside/out.puffin"}) {
    auto refused = call(escape);
    ASSERT_FALSE(refused.ok()) << escape;
    EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("outside the allowed directories")) << escape;
  }
}

// Spec v3 "Row Lineage": _row_id and _last_updated_sequence_number read what a file stores
// (rows a compaction rewrote) and otherwise inherit first_row_id + position and the file's data
// sequence number; deleted rows leave the others' ids alone.
TEST_F(DeletionVectorScanTest, RowLineageColumnsFollowTheSpecsInheritance) {
  testing::TempDir tmp;
  auto fresh = Task(IdOnlyFile(tmp, "fresh.parquet", 0, 4), 4);
  fresh.file.first_row_id = 100;
  fresh.sequence_number = 3;
  const std::string kept_path = tmp.Path("rewritten.parquet");
  ASSERT_TRUE(db_->Execute("COPY (SELECT * FROM (VALUES (10, 7, 1), (11, NULL, NULL), (12, 9, 2)) t(id, _row_id, "
                           "_last_updated_sequence_number)) TO " + QuoteString(kept_path) +
                           " (FORMAT parquet, FIELD_IDS {id: 1, _row_id: 2147483540, "
                           "_last_updated_sequence_number: 2147483539})")
                  .ok());
  auto kept = Task(kept_path, 3);
  kept.file.first_row_id = 50;
  kept.sequence_number = 5;
  const std::string puffin = tmp.Path("dv.puffin");
  const std::string dv = Dv({1});
  auto offsets = WritePuffin(puffin, {{.bytes = dv}});
  fresh.deletes.push_back(Vector(puffin, offsets[0], dv, fresh, 1));
  IcebergScan scan;
  scan.schema = Schema();
  scan.format_version = 3;
  scan.tasks = {fresh, kept};
  ScanQuery query;
  query.columns = {"id", std::string(kRowIdColumn), std::string(kLastUpdatedSequenceNumberColumn)};
  auto sql = BuildScanSql(*db_, scan, query);
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_THAT(testing::QueryText(*db_, *sql + " ORDER BY id"),
              ElementsAre(ElementsAre("0", "100", "3"), ElementsAre("2", "102", "3"), ElementsAre("3", "103", "3"),
                          ElementsAre("10", "7", "1"), ElementsAre("11", "51", "5"), ElementsAre("12", "9", "2")));
  // Filters see the same values, and a relation built with lineage carries both columns.
  scan.row_lineage = RowLineage::kIncluded;
  auto table = BuildTableSql(*db_, scan);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(One(*table, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE _row_id > 50"), "0,2,3,11");
  // An empty read still has the columns.
  IcebergScan empty = scan;
  empty.tasks.clear();
  auto none = BuildTableSql(*db_, empty);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(One(*none, "SELECT count(_row_id) + count(_last_updated_sequence_number) FROM t"), "0");
  // Before v3 there is no row lineage to read.
  scan.format_version = 2;
  scan.row_lineage = RowLineage::kOmitted;
  EXPECT_EQ(BuildScanSql(*db_, scan, query).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::engine

namespace skade::io {
namespace {

TEST(ComparableLocationTest, FileSystemAuthoritiesGoObjectStoreBucketsStay) {
  EXPECT_EQ(ComparableLocation("hdfs://namenode:8020/w/t/f.parquet"), "/w/t/f.parquet");
  EXPECT_EQ(ComparableLocation("viewfs://cluster/w/f"), "/w/f");
  EXPECT_EQ(ComparableLocation("file:///w/f"), "/w/f");
  EXPECT_EQ(ComparableLocation("file:/w//f"), "/w/f");
  EXPECT_EQ(ComparableLocation("/w/./f"), "/w/f");
  EXPECT_EQ(ComparableLocation("s3a://bucket/w/f"), "s3://bucket/w/f");
  EXPECT_EQ(ComparableLocation("s3://bucket/w/f"), "s3://bucket/w/f");
  EXPECT_NE(ComparableLocation("s3://one/w/f"), ComparableLocation("s3://two/w/f"));
}

}  // namespace
}  // namespace skade::io
