// Scan planning on real tables: snapshot selection, partition and metrics pruning, and delete
// files attached by sequence number and partition (spec "Scan Planning").
#include "skade/iceberg/scan.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "skade/io/location_map.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

struct Fixture {
  TableMetadata metadata;
  std::unique_ptr<io::FileIO> local = io::MakeLocalFileIO();
  std::unique_ptr<io::FileIO> io;
};

// Loads a table from `dir` (default: the fixture folder).
std::unique_ptr<Fixture> Load(const std::string& table, const std::string& stored_prefix,
                              const std::string& file, std::string dir = "") {
  auto f = std::make_unique<Fixture>();
  if (dir.empty()) dir = testing::FixturePath("iceberg/" + table);
  auto m = ParseTableMetadata(testing::ReadFileOrDie(dir + "/metadata/" + file));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  f->metadata = std::move(m).value();
  io::LocationMap map;
  map.Add(stored_prefix, dir);
  f->io = io::MakeRelocatingFileIO(*f->local, map);
  return f;
}

TEST(ScanPlannerTest, AttachesEqualityDeletesBySequenceNumber) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("equality_deletes_mytable", "data/persistent/equality_deletes/warehouse/mydb/mytable",
                "v7.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  auto tasks = planner.PlanAll(*f->metadata.CurrentSnapshot(), *f->metadata.CurrentSchema(), nullptr);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->size(), 2u);
  std::map<int64_t, std::vector<int64_t>> deletes_by_data_seq;
  for (const auto& t : *tasks) {
    for (const auto& d : t.deletes) {
      EXPECT_EQ(d->file.content, DataFileContent::kEqualityDeletes);
      EXPECT_GT(d->sequence_number, t.sequence_number);
      deletes_by_data_seq[t.sequence_number].push_back(d->sequence_number);
    }
  }
  for (auto& [seq, v] : deletes_by_data_seq) std::sort(v.begin(), v.end());
  // Data at seq 1 is hit by the deletes of seq 2, 3, 4 and 6; data at seq 5 only by seq 6.
  EXPECT_EQ(deletes_by_data_seq[1], (std::vector<int64_t>{2, 3, 4, 6}));
  EXPECT_EQ(deletes_by_data_seq[5], (std::vector<int64_t>{6}));
  EXPECT_EQ(planner.stats().delete_files, 4);
}

TEST(ScanPlannerTest, AttachesPositionDeletes) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("generated_spec2_0_001/pyspark_iceberg_table",
                "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table", "v9.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  auto tasks = planner.PlanAll(*f->metadata.CurrentSnapshot(), *f->metadata.CurrentSchema(), nullptr);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  int64_t records = 0;
  int with_deletes = 0;
  for (const auto& t : *tasks) {
    records += t.file.record_count;
    for (const auto& d : t.deletes) {
      EXPECT_EQ(d->file.content, DataFileContent::kPositionDeletes);
      EXPECT_GE(d->sequence_number, t.sequence_number);
    }
    with_deletes += !t.deletes.empty();
  }
  EXPECT_EQ(records, 18044);  // physical rows; 11452 of them are position-deleted
  EXPECT_GT(with_deletes, 0);
  EXPECT_EQ(planner.stats().record_count, 18044);
}

TEST(ScanPlannerTest, PrunesBucketPartitions) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("partition_bucket_test", "data/persistent/partition_bucket_test", "v2.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  const Snapshot& snap = *f->metadata.CurrentSnapshot();
  const Schema& schema = *f->metadata.CurrentSchema();
  auto all = planner.PlanAll(snap, schema, nullptr);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 6u);
  // partition_0 hashes to bucket 2, shared with partition_1: one file.
  auto one = planner.PlanAll(
      snap, schema, Predicate(Operation::kEq, "partition_col", {Literal::String("partition_0")}));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().file.partition[0]->as_int(), 2);
  EXPECT_EQ(planner.stats().data_files_skipped, 5);
  // A column that doesn't exist is a bind error.
  auto bad = planner.PlanAll(snap, schema, Predicate(Operation::kEq, "nope", {Literal::Int(1)}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ScanPlannerTest, PrunesHourPartitionsAndByMetrics) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("iceberg_partitioned", "/test-warehouse/iceberg_test/iceberg_partitioned", "v2.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  const Snapshot& snap = *f->metadata.CurrentSnapshot();
  const Schema& schema = *f->metadata.CurrentSchema();
  // 2020-01-01T09:00:00Z in µs: hour partitions 438296 (08h) and 438297 (09h) can't match
  // event_time > 09:00:00 except through the 09h partition's bounds.
  int64_t nine = 1577869200000000;
  auto tasks = planner.PlanAll(snap, schema,
                               Predicate(Operation::kGt, "event_time", {Literal::TimestampTz(nine)}));
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  for (const auto& t : *tasks) EXPECT_GE(t.file.partition[0]->as_int(), 438297);
  EXPECT_EQ(tasks->size(), 6u);  // only the 10h download files have event_time > 09:00
  auto ids = planner.PlanAll(snap, schema, Predicate(Operation::kGt, "id", {Literal::Int(10)}));
  ASSERT_TRUE(ids.ok());
  int64_t rows = 0;
  for (const auto& t : *ids) rows += t.file.record_count;
  EXPECT_EQ(rows, 10);  // one row per file: metrics prune exactly
}

TEST(ScanPlannerTest, CountsFromManifestsWithoutDataFiles) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("lineitem_iceberg", "lineitem_iceberg", "v2.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  auto counts = planner.CountFromManifests(*f->metadata.CurrentSnapshot());
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->record_count, 51793);
  EXPECT_EQ(counts->data_files, 1);
  EXPECT_EQ(counts->delete_files, 0);
  auto old = planner.CountFromManifests(*f->metadata.SnapshotById(7817332053627255703));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->record_count, 60175);
}

TEST(ScanPlannerTest, SelectsSnapshotsAndSchemas) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("generated_spec2_0_001/pyspark_iceberg_table",
                "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table", "v9.metadata.json");
  const TableMetadata& m = f->metadata;
  auto current = SelectSnapshot(m, {});
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->snapshot->snapshot_id, 4786266686210019019);
  EXPECT_EQ(current->schema->schema_id(), m.current_schema_id);
  SnapshotSelector old;
  old.snapshot_id = 764624380497366583;
  auto first = SelectSnapshot(m, old);
  ASSERT_TRUE(first.ok());
  // Time travel reads a snapshot with the schema it was written with (no added column).
  EXPECT_EQ(first->schema->FindFieldByName("schema_evol_added_col_1"), nullptr);
  SnapshotSelector both;
  both.snapshot_id = 1;
  both.ref = "main";
  EXPECT_EQ(SelectSnapshot(m, both).status().code(), StatusCode::kInvalidArgument);
  SnapshotSelector missing;
  missing.snapshot_id = 1;
  EXPECT_EQ(SelectSnapshot(m, missing).status().code(), StatusCode::kNotFound);
}

TEST(ScanPlannerTest, MissingManifestListIsNamed) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto f = Load("equality_deletes_mytable", "data/persistent/equality_deletes/warehouse/mydb/mytable",
                "v7.metadata.json");
  ScanPlanner planner(*f->io, f->metadata);
  // This real table's snapshot 7342794868382145167 references a manifest list that was never
  // committed to the repository (fixtures/README.md): planning names it.
  auto tasks = planner.PlanAll(*f->metadata.SnapshotById(7342794868382145167),
                               *f->metadata.CurrentSchema(), nullptr);
  ASSERT_FALSE(tasks.ok());
  EXPECT_EQ(tasks.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tasks.status().message().find("snap-7342794868382145167-1-34f7dec7"), std::string::npos);
}

TEST(ScanPlannerTest, ParallelManifestReadsKeepTheOrderAndReportTheFirstError) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "generated_spec2_0_001/pyspark_iceberg_table";
  const std::string prefix = "data/iceberg/" + table;
  auto f = Load(table, prefix, "v9.metadata.json");
  const Snapshot& snapshot = *f->metadata.CurrentSnapshot();
  auto plan = [&](Fixture& fx, int threads) -> Result<std::vector<std::string>> {
    ScanPlanner planner(*fx.io, fx.metadata);
    planner.set_threads(threads);
    std::vector<std::string> out;
    SKADE_RETURN_IF_ERROR(planner.PlanFiles(snapshot, *fx.metadata.CurrentSchema(), nullptr, [&](FileScanTask t) {
      out.push_back(t.file.file_path + " seq " + std::to_string(t.sequence_number) + " deletes " +
                    std::to_string(t.deletes.size()));
      return Status::Ok();
    }));
    return out;
  };
  auto one = plan(*f, 1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_GE(one->size(), 3u);
  for (int threads : {2, 4, 8}) {
    auto many = plan(*f, threads);
    ASSERT_TRUE(many.ok()) << many.status().ToString();
    EXPECT_EQ(*many, *one) << threads << " threads";
  }

  // Two data manifests gone: every thread count reports the first of them in list order.
  ScanPlanner lister(*f->io, f->metadata);
  auto manifests = lister.LoadManifests(snapshot);
  ASSERT_TRUE(manifests.ok());
  std::vector<std::string> data_manifests;
  for (const ManifestFile& m : *manifests) {
    if (m.content == ManifestContent::kData) data_manifests.push_back(m.manifest_path.substr(m.manifest_path.rfind('/') + 1));
  }
  ASSERT_GE(data_manifests.size(), 3u);
  testing::TempDir tmp;
  std::filesystem::copy(testing::FixturePath("iceberg/" + table), tmp.Path("t"), std::filesystem::copy_options::recursive);
  std::filesystem::remove(tmp.Path("t/metadata/" + data_manifests[1]));
  std::filesystem::remove(tmp.Path("t/metadata/" + data_manifests.back()));
  auto broken = Load(table, prefix, "v9.metadata.json", tmp.Path("t"));
  for (int threads : {1, 4}) {
    auto r = plan(*broken, threads);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
    EXPECT_NE(r.status().message().find(data_manifests[1]), std::string::npos) << r.status().ToString();
  }
}

TEST(ScanPlannerTest, PlanAllHoldsWhatPlanFilesStreamsInItsOrderWithTheSameStats) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "generated_spec2_0_001/pyspark_iceberg_table";
  auto f = Load(table, "data/iceberg/" + table, "v9.metadata.json");
  const Snapshot& snapshot = *f->metadata.CurrentSnapshot();
  const Schema& schema = *f->metadata.CurrentSchema();
  auto describe = [](const FileScanTask& t) {
    std::string d = t.file.file_path + " seq " + std::to_string(t.sequence_number) + " rows " +
                    std::to_string(t.file.record_count) + " partition " + std::to_string(t.file.partition.size());
    for (const DeleteFileTaskPtr& del : t.deletes) d += " delete " + del->file.file_path;
    return d;
  };
  auto stats = [](const PlanStats& s) {
    return std::vector<int64_t>{s.manifests_total, s.manifests_skipped, s.data_files_total,
                                s.data_files_skipped, s.delete_files, s.record_count};
  };
  bool some_deletes = false;
  for (const ExprPtr& filter : {ExprPtr(), Predicate(Operation::kNotNull, "l_suppkey_long", {})}) {
    for (int threads : {1, 4}) {
      ScanPlanner streaming(*f->io, f->metadata);
      streaming.set_threads(threads);
      std::vector<std::string> streamed;
      Status planned = streaming.PlanFiles(snapshot, schema, filter, [&](FileScanTask t) {
        streamed.push_back(describe(t));
        return Status::Ok();
      });
      ASSERT_TRUE(planned.ok()) << planned.ToString();
      ScanPlanner all(*f->io, f->metadata);
      all.set_threads(threads);
      auto tasks = all.PlanAll(snapshot, schema, filter);
      ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
      std::vector<std::string> held;
      for (const FileScanTask& t : *tasks) {
        held.push_back(describe(t));
        some_deletes = some_deletes || !t.deletes.empty();
      }
      ASSERT_GE(held.size(), 3u);
      EXPECT_EQ(held, streamed) << threads << " threads";
      EXPECT_EQ(stats(all.stats()), stats(streaming.stats())) << threads << " threads";
      EXPECT_EQ(all.stats().data_files_total - all.stats().data_files_skipped, static_cast<int64_t>(held.size()));
    }
  }
  EXPECT_TRUE(some_deletes) << "the table is meant to have tasks with delete files";
}

}  // namespace
}  // namespace skade::iceberg
