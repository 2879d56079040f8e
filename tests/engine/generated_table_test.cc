// Writes tables with the benchmark generator (bench/table_generator.h) and reads them back
// through the planner and the DuckDB scan: counts, sums, pruning by column bounds and
// partitions, every column's values and types, and the manifests' metrics and bounds against
// what DuckDB computes from the Parquet files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/table_generator.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/temp_dir.h"

namespace skade::bench {
namespace {

constexpr int64_t kRows = 20'000;
constexpr int kFiles = 4;
constexpr int kManifests = 2;

class GeneratedTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    io_ = io::MakeLocalFileIO();
  }

  // Generates a table into the temp dir and loads its metadata.
  void Generate(GeneratorOptions options) {
    options.out_dir = dir_.Path("table");
    auto table = GenerateTable(*db_, options);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    table_ = *table;
    auto md = iceberg::ParseTableMetadata(testing::ReadFileOrDie(table_.metadata_file));
    ASSERT_TRUE(md.ok()) << md.status().ToString();
    metadata_ = std::move(md).value();
    columns_ = GeneratedColumns(options.columns, RowsPerFile(options.rows, options.files));
  }

  void GeneratePartitioned() {
    GeneratorOptions options;
    options.rows = kRows;
    options.files = kFiles;
    options.manifests = kManifests;
    options.partition = PartitionMode::kDay;
    Generate(options);
  }

  // Plans the current snapshot with `where` (may be empty) and returns the table relation SQL.
  std::string PlanSql(const std::string& where, iceberg::PlanStats* stats = nullptr) {
    const iceberg::Snapshot* snapshot = metadata_.CurrentSnapshot();
    EXPECT_NE(snapshot, nullptr);
    if (snapshot == nullptr) return "SELECT 1 WHERE false";
    engine::IcebergScan scan;
    scan.schema = metadata_.CurrentSchema();
    iceberg::ExprPtr filter;
    if (!where.empty()) {
      auto f = engine::SqlToIcebergFilter(*db_, testing::Where(where), *scan.schema);
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      if (f.ok()) filter = *f;
    }
    iceberg::ScanPlanner planner(*io_, metadata_);
    auto tasks = planner.PlanAll(*snapshot, *scan.schema, filter);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    if (tasks.ok()) scan.tasks = std::move(tasks).value();
    if (stats != nullptr) *stats = planner.stats();
    auto sql = engine::BuildTableSql(*db_, scan);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  }

  std::vector<std::vector<std::string>> Query(const std::string& sql) { return testing::QueryText(*db_, sql); }

  std::string One(const std::string& sql) {
    auto rows = Query(sql);
    return rows.size() == 1 && rows[0].size() == 1 ? rows[0][0] : "<no single value>";
  }

  std::string OnTable(const std::string& table_sql, const std::string& query) {
    return One("WITH t AS (" + table_sql + ") " + query);
  }

  testing::TempDir dir_;
  std::unique_ptr<engine::Database> db_;
  std::unique_ptr<io::FileIO> io_;
  GeneratedTable table_;
  iceberg::TableMetadata metadata_;
  std::vector<GeneratedColumn> columns_;
};

TEST_F(GeneratedTableTest, CountsSumsAndSnapshotSummary) {
  GeneratePartitioned();
  EXPECT_EQ(table_.data_files, kFiles);
  ASSERT_EQ(metadata_.snapshots.size(), 1u);
  const iceberg::Snapshot& s = metadata_.snapshots[0];
  EXPECT_EQ(s.operation(), "append");
  EXPECT_EQ(s.SummaryValue("added-data-files"), "4");
  EXPECT_EQ(s.SummaryValue("added-records"), "20000");
  EXPECT_EQ(s.SummaryValue("total-records"), "20000");
  EXPECT_EQ(s.SummaryValue("total-data-files"), "4");
  EXPECT_EQ(s.SummaryValue("changed-partition-count"), "4");
  EXPECT_EQ(s.SummaryValue("total-files-size"), std::to_string(table_.data_bytes));

  iceberg::ScanPlanner planner(*io_, metadata_);
  auto counts = planner.CountFromManifests(*metadata_.CurrentSnapshot());
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->record_count, kRows);
  EXPECT_EQ(counts->data_files, kFiles);

  std::string sql = PlanSql("");
  EXPECT_EQ(OnTable(sql, "SELECT count(*) FROM t"), "20000");
  EXPECT_EQ(OnTable(sql, "SELECT sum(id) FROM t"), std::to_string(kRows * (kRows - 1) / 2));
  // DuckDB alone on the same files agrees.
  std::string files = "[";
  for (const std::string& p : table_.data_paths)
    files += (files.size() > 1 ? ", " : "") + engine::QuoteString(p);
  EXPECT_EQ(One("SELECT count(*) FROM read_parquet(" + files + "])"), "20000");
}

TEST_F(GeneratedTableTest, PrunesByColumnBoundsAndPartition) {
  GeneratePartitioned();
  iceberg::PlanStats stats;
  std::string by_id = PlanSql("id < 100", &stats);
  EXPECT_EQ(stats.data_files_total, kFiles);
  EXPECT_EQ(stats.data_files_skipped, kFiles - 1);
  EXPECT_EQ(OnTable(by_id, "SELECT count(*) FROM t WHERE id < 100"), "100");

  // Days 2 and 3 live in the second manifest: the first is skipped by its partition summary.
  std::string where = "ts >= TIMESTAMPTZ '2020-01-03 00:00:00+00'";
  std::string by_day = PlanSql(where, &stats);
  EXPECT_EQ(stats.manifests_total, kManifests);
  EXPECT_EQ(stats.manifests_skipped, 1);
  EXPECT_EQ(OnTable(by_day, "SELECT count(*) FROM t WHERE " + where), "10000");

  std::string by_amount = PlanSql("price > 1e9", &stats);
  EXPECT_EQ(stats.data_files_skipped, kFiles);
  EXPECT_EQ(OnTable(by_amount, "SELECT count(*) FROM t"), "0");
}

TEST_F(GeneratedTableTest, EveryColumnRoundTrips) {
  GeneratePartitioned();
  std::string table_sql = PlanSql("");
  std::string expected = GeneratedRowsSql(columns_, 0, kRows);
  // Types as DuckDB reads them through the Iceberg schema.
  for (const GeneratedColumn& c : columns_) {
    EXPECT_EQ(OnTable(table_sql, "SELECT typeof(" + engine::QuoteIdentifier(c.field.name) +
                                     ") FROM t LIMIT 1"),
              c.duck_type)
        << c.field.name;
  }
  // Same multiset of rows (NULLs compare equal in set operations).
  EXPECT_EQ(One("WITH t AS (" + table_sql + "), g AS (" + expected +
                ") SELECT count(*) FROM ((SELECT * FROM t EXCEPT ALL SELECT * FROM g) UNION ALL "
                "(SELECT * FROM g EXCEPT ALL SELECT * FROM t))"),
            "0");
  // Nulls were generated and survive.
  EXPECT_EQ(OnTable(table_sql, "SELECT count(*) - count(customer) FROM t"),
            One("SELECT count(*) FROM range(20000) r(i) WHERE i % 13 = 0"));
  // The Parquet files carry the schema's field ids.
  for (const GeneratedColumn& c : columns_) {
    EXPECT_EQ(One("SELECT count(DISTINCT field_id) || ':' || min(field_id) FROM parquet_schema(" +
                  engine::QuoteString(table_.data_paths[0]) +
                  ") WHERE name = " + engine::QuoteString(c.field.name)),
              "1:" + std::to_string(c.field.id));
  }
}

// SQL for a bound: the literal's text cast to the column's DuckDB type.
std::string BoundSql(const iceberg::Literal& lit, const GeneratedColumn& c) {
  return "CAST(" + engine::QuoteString(lit.ToString()) + " AS " + c.duck_type + ")";
}

TEST_F(GeneratedTableTest, ManifestsHoldTheWrittenMetrics) {
  GeneratePartitioned();
  auto list = iceberg::ReadManifestList(*io_, metadata_.CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), static_cast<size_t>(kManifests));
  int64_t file_index = 0;
  auto schema = metadata_.CurrentSchema();
  for (const iceberg::ManifestFile& m : *list) {
    EXPECT_EQ(m.added_files_count, 2);
    EXPECT_EQ(m.added_rows_count, 10000);
    EXPECT_EQ(m.sequence_number, 1);
    ASSERT_EQ(m.partitions.size(), 1u);
    auto reader = iceberg::ManifestReader::Open(*io_, m.manifest_path, m);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    while (true) {
      auto entry = (*reader)->Next();
      ASSERT_TRUE(entry.ok()) << entry.status().ToString();
      if (!entry->has_value()) break;
      const iceberg::DataFile& f = (*entry)->data_file;
      EXPECT_EQ(f.file_path, table_.data_paths[static_cast<size_t>(file_index)]);
      EXPECT_EQ(f.record_count, 5000);
      EXPECT_EQ(f.file_size_in_bytes,
                static_cast<int64_t>(std::filesystem::file_size(f.file_path)));
      ASSERT_EQ(f.partition.size(), 1u);
      ASSERT_TRUE(f.partition[0].has_value());
      EXPECT_EQ(f.partition[0]->ToString(), std::to_string(18262 + file_index));
      std::string path = engine::QuoteString(f.file_path);
      for (const GeneratedColumn& c : columns_) {
        int id = c.field.id;
        std::string col = engine::QuoteIdentifier(c.field.name);
        SCOPED_TRACE(c.field.name + " in file " + std::to_string(file_index));
        EXPECT_EQ(f.value_counts.at(id), 5000);
        EXPECT_GT(f.column_sizes.at(id), 0);
        EXPECT_EQ(std::to_string(f.null_value_counts.at(id)),
                  One("SELECT count(*) - count(" + col + ") FROM read_parquet(" + path + ")"));
        if (c.field.type->id() == iceberg::TypeId::kBoolean) {
          // DuckDB's RETURN_STATS has no min/max for booleans; bounds are optional.
          EXPECT_FALSE(f.lower_bounds.count(id) || f.upper_bounds.count(id));
          continue;
        }
        ASSERT_TRUE(f.lower_bounds.count(id) && f.upper_bounds.count(id));
        auto lo = iceberg::Literal::FromBinary(c.field.type, f.lower_bounds.at(id));
        auto hi = iceberg::Literal::FromBinary(c.field.type, f.upper_bounds.at(id));
        ASSERT_TRUE(lo.ok() && hi.ok());
        EXPECT_EQ(One("SELECT min(" + col + ") = " + BoundSql(*lo, c) + " AND max(" + col +
                      ") = " + BoundSql(*hi, c) + " FROM read_parquet(" + path + ")"),
                  "true")
            << lo->ToString() << " .. " << hi->ToString();
      }
      ++file_index;
    }
  }
  EXPECT_EQ(file_index, kFiles);
}

TEST_F(GeneratedTableTest, SnapshotsAndIdentityPartitions) {
  GeneratorOptions options;
  options.rows = 6000;
  options.files = 6;
  options.manifests = 3;
  options.snapshots = 3;
  options.columns = 7;
  options.partition = PartitionMode::kIdentity;
  Generate(options);
  ASSERT_EQ(metadata_.snapshots.size(), 3u);
  EXPECT_EQ(metadata_.last_sequence_number, 3);
  EXPECT_EQ(metadata_.snapshots[2].parent_snapshot_id, metadata_.snapshots[1].snapshot_id);
  EXPECT_EQ(metadata_.snapshots[2].SummaryValue("added-records"), "2000");
  EXPECT_EQ(metadata_.snapshots[2].SummaryValue("total-records"), "6000");
  iceberg::PlanStats stats;
  std::string sql = PlanSql("event_date = DATE '2020-01-02'", &stats);
  EXPECT_EQ(stats.data_files_total - stats.data_files_skipped, 1);
  EXPECT_EQ(OnTable(sql, "SELECT count(*) FROM t WHERE event_date = DATE '2020-01-02'"), "1000");
  EXPECT_EQ(OnTable(PlanSql(""), "SELECT count(*) || ',' || count(DISTINCT event_date) FROM t"),
            "6000,6");
}

TEST_F(GeneratedTableTest, FakeDataFilesPlanWithoutOpeningFiles) {
  GeneratorOptions options;
  options.rows = 1'000'000;
  options.files = 100;
  options.manifests = 10;
  options.fake_data_files = true;
  Generate(options);
  for (const std::string& p : table_.data_paths) ASSERT_FALSE(std::filesystem::exists(p));
  iceberg::ScanPlanner planner(*io_, metadata_);
  auto counts = planner.CountFromManifests(*metadata_.CurrentSnapshot());
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->record_count, 1'000'000);
  EXPECT_EQ(counts->data_files, 100);

  auto filter =
      engine::SqlToIcebergFilter(*db_, testing::Where("id BETWEEN 25000 AND 25100"), *metadata_.CurrentSchema());
  ASSERT_TRUE(filter.ok());
  auto tasks = planner.PlanAll(*metadata_.CurrentSnapshot(), *metadata_.CurrentSchema(), *filter);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].file.file_path, table_.data_paths[2]);
  EXPECT_EQ(planner.stats().data_files_skipped, 99);
}

TEST_F(GeneratedTableTest, RejectsBadOptions) {
  GeneratorOptions options;
  options.out_dir = dir_.Path("bad");
  options.rows = 10;
  options.files = 20;
  EXPECT_EQ(GenerateTable(*db_, options).status().code(), StatusCode::kInvalidArgument);
  options.files = 2;
  options.manifests = 3;
  EXPECT_EQ(GenerateTable(*db_, options).status().code(), StatusCode::kInvalidArgument);
  options.manifests = 1;
  options.columns = 3;
  options.partition = PartitionMode::kDay;
  EXPECT_EQ(GenerateTable(*db_, options).status().code(), StatusCode::kInvalidArgument);
  options.partition = PartitionMode::kNone;
  ASSERT_TRUE(GenerateTable(*db_, options).ok());
  EXPECT_EQ(GenerateTable(*db_, options).status().code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace skade::bench
