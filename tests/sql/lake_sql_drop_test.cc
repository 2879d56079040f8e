// DROP TABLE [… PURGE] and CREATE OR REPLACE TABLE through LakeSql: a purge deletes the table's
// files and nothing outside its location or another table's; a replace keeps one table, one
// folder and its history.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "skade/base/clock.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_update.h"
#include "skade/io/location.h"
#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::sql {
namespace {

namespace fs = std::filesystem;
using TextRows = std::vector<std::vector<std::string>>;

class LakeSqlDropTest : public testing::LakeTest {
 protected:
  LakeSqlDropTest() : LakeTest("a.b") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  Result<LakeSql::WriteReport> Run(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(engine::Statement w, engine::ParseStatement(sql));
    if (!w.is_write()) return Status::InvalidArgument(sql + " is no write");
    return lake_->ExecuteWriteReporting(w, Session{"a.b", ""});
  }

  LakeSql::WriteReport RunOk(const std::string& sql) {
    auto r = Run(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : LakeSql::WriteReport{-1, ""};
  }

  // A query as skade sql and Flight SQL run it (AT (…) included).
  TextRows Sql(const std::string& query) {
    Result<std::string> resolved = lake_->ResolveQuery(query, "a.b");
    EXPECT_TRUE(resolved.ok()) << resolved.status().ToString();
    return resolved.ok() ? testing::QueryText(*db_, *resolved) : TextRows{};
  }

  // Every regular file below `dir`, relative to it, but version-hint.text and its temporary
  // replacements (the catalog moves hints on a thread of its own, after commits).
  static std::set<std::string> FilesUnder(const std::string& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().filename().string().find("version-hint") != std::string::npos) continue;
      out.insert(fs::path(e.path()).lexically_relative(dir).string());
    }
    return out;
  }

  std::string Warehouse() const { return tmp_.Path("warehouse"); }

  std::string LocationOf(const std::string& name) {
    auto state = catalog_->LoadTable(Ident(name));
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? state->metadata->location : "";
  }

  // The live data files of a table's current snapshot.
  std::vector<iceberg::DataFile> DataFiles(const std::string& name) {
    auto state = catalog_->LoadTable(Ident(name));
    EXPECT_TRUE(state.ok());
    const iceberg::TableMetadata& m = *state->metadata;
    iceberg::ScanPlanner planner(*io_, m);
    auto tasks = planner.PlanAll(*m.CurrentSnapshot(), *m.CurrentSchema(), nullptr);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    std::vector<iceberg::DataFile> out;
    if (tasks.ok()) {
      for (const auto& t : *tasks) out.push_back(t.file);
    }
    return out;
  }

  // Commits to `name` a snapshot whose new manifest lists `file` as its own (as add_files does
  // with a file of another table): its metadata then names a path outside its location.
  void AddForeignDataFile(const std::string& name, const iceberg::DataFile& file) {
    auto state = catalog_->LoadTable(Ident(name));
    ASSERT_TRUE(state.ok());
    const iceberg::TableMetadata& m = *state->metadata;
    const int64_t id = table::NewSnapshotId();
    iceberg::ManifestWriterOptions mo;
    mo.format_version = 2;
    mo.snapshot_id = id;
    mo.content = iceberg::ManifestContent::kData;
    auto writer = iceberg::ManifestWriter::Create(m.CurrentSchema(), m.DefaultSpec(), mo);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    iceberg::ManifestEntry e;
    e.status = iceberg::ManifestEntryStatus::kAdded;
    e.snapshot_id = id;
    e.data_file = file;
    ASSERT_TRUE((*writer)->Add(e).ok());
    const std::string manifest_path = m.location + "/metadata/foreign-" + std::to_string(id) + "-m0.avro";
    auto out = (*writer)->Finish(manifest_path);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_TRUE(io_->CreateExclusive(manifest_path, out->bytes).ok());
    iceberg::ScanPlanner planner(*io_, m);
    auto manifests = planner.LoadManifests(*m.CurrentSnapshot());
    ASSERT_TRUE(manifests.ok());
    manifests->push_back(out->manifest);
    iceberg::Snapshot s;
    s.snapshot_id = id;
    s.parent_snapshot_id = m.current_snapshot_id;
    s.sequence_number = m.last_sequence_number + 1;
    s.timestamp_ms = NowMillis();
    s.schema_id = m.current_schema_id;
    s.summary = {{"operation", "append"}};
    auto list = iceberg::WriteManifestList(2, id, s.parent_snapshot_id, s.sequence_number, *manifests);
    ASSERT_TRUE(list.ok());
    s.manifest_list = m.location + "/metadata/snap-foreign-" + std::to_string(id) + ".avro";
    ASSERT_TRUE(io_->CreateExclusive(s.manifest_list, *list).ok());
    catalog::TableCommit commit;
    commit.ident = Ident(name);
    commit.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(m.table_uuid));
    commit.updates.push_back(iceberg::TableUpdate::AddSnapshot(s));
    commit.updates.push_back(iceberg::TableUpdate::SetBranch("main", id));
    auto committed = catalog_->CommitTable(commit);
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  }

  // Records a statistics file at `path` for the current snapshot of `name`.
  void AddStatisticsFile(const std::string& name, const std::string& path) {
    auto state = catalog_->LoadTable(Ident(name));
    ASSERT_TRUE(state.ok());
    const int64_t snapshot = *state->metadata->current_snapshot_id;
    catalog::TableCommit commit;
    commit.ident = Ident(name);
    commit.updates.push_back(iceberg::TableUpdate::SetStatistics(
        snapshot, "{\"snapshot-id\": " + std::to_string(snapshot) + ", \"statistics-path\": \"" + path +
                      "\", \"file-size-in-bytes\": 4, \"file-footer-size-in-bytes\": 4, \"blob-metadata\": []}"));
    auto committed = catalog_->CommitTable(commit);
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(LakeSqlDropTest, PurgeRemovesTheTablesFilesAndNothingOutsideItsLocation) {
  RunOk("CREATE TABLE t AS SELECT range AS id FROM range(10)");
  RunOk("INSERT INTO t SELECT 100 + range FROM range(5)");
  RunOk("CREATE TABLE other AS SELECT 1000 + range AS id FROM range(3)");
  const std::string t = LocationOf("t");
  const std::string other = LocationOf("other");
  // t's metadata names a data file of `other` (a manifest entry into another table's folder)
  // and a statistics file outside the warehouse; `other` names a data file inside t's folder.
  const iceberg::DataFile others_file = DataFiles("other").at(0);
  AddForeignDataFile("t", others_file);
  const std::string outside = tmp_.Path("elsewhere/stats.puffin");
  fs::create_directories(fs::path(outside).parent_path());
  testing::WriteFileOrDie(outside, "PFA1");
  AddStatisticsFile("t", outside);
  const iceberg::DataFile shared = DataFiles("t").at(0);
  ASSERT_TRUE(io::IsWithin(shared.file_path, t));
  AddForeignDataFile("other", shared);
  // A file under t's folder that nothing references (a crashed write's) goes too.
  testing::WriteFileOrDie(t + "/data/orphan.parquet", "x");
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".t"), (TextRows{{"18"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".other"), (TextRows{{std::to_string(3 + shared.record_count)}}));
  const std::set<std::string> others_before = FilesUnder(other);

  LakeSql::WriteReport r = RunOk("DROP TABLE t PURGE");
  EXPECT_EQ(catalog_->LoadTable(Ident("t")).status().code(), StatusCode::kNotFound);
  // Only the file `other` references stays under t's folder; the rest, and the folders it
  // leaves empty, are gone.
  const std::string shared_relative = fs::path(shared.file_path).lexically_relative(t).string();
  EXPECT_EQ(FilesUnder(t), (std::set<std::string>{shared_relative}));
  EXPECT_FALSE(fs::exists(t + "/metadata"));
  EXPECT_EQ(FilesUnder(other), others_before);
  EXPECT_TRUE(fs::exists(outside));
  EXPECT_TRUE(fs::exists(others_file.file_path));
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".other"), (TextRows{{std::to_string(3 + shared.record_count)}}));
  EXPECT_NE(r.note.find("purged its files: removed "), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("kept 1 file"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("left 2 files its metadata names outside"), std::string::npos) << r.note;

  // The folder t leaves behind holds only `other`'s file; the natural place is free again
  // for a new t once that is gone, and a new t does not reuse it meanwhile.
  RunOk("CREATE TABLE t AS SELECT 7 AS id");
  EXPECT_NE(LocationOf("t"), t);
  EXPECT_EQ(Sql("SELECT * FROM skade.\"a.b\".t"), (TextRows{{"7"}}));
}

TEST_F(LakeSqlDropTest, DropWithoutPurgeKeepsEveryFile) {
  RunOk("CREATE TABLE t AS SELECT range AS id FROM range(10)");
  const std::string t = LocationOf("t");
  const std::set<std::string> before = FilesUnder(Warehouse());
  LakeSql::WriteReport r = RunOk("DROP TABLE t");
  EXPECT_EQ(catalog_->LoadTable(Ident("t")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FilesUnder(Warehouse()), before);
  EXPECT_NE(r.note.find("stay at " + t), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("from the catalog; its "), std::string::npos) << r.note;
  // ExecuteWrite (Flight SQL's path) drops alike.
  RunOk("CREATE TABLE u AS SELECT 1 AS id");
  const std::set<std::string> with_u = FilesUnder(Warehouse());
  auto drop = engine::ParseStatement("DROP TABLE u");
  ASSERT_TRUE(drop.ok());
  EXPECT_EQ(lake_->ExecuteWrite(*drop, "a.b").value(), 0);
  EXPECT_EQ(FilesUnder(Warehouse()), with_u);
}

TEST_F(LakeSqlDropTest, PurgeOfAMissingTableIsNotFoundAndChangesNothing) {
  RunOk("CREATE TABLE t AS SELECT range AS id FROM range(3)");
  const std::set<std::string> before = FilesUnder(Warehouse());
  const int64_t seq = catalog_->LatestCommitSeq().value();
  EXPECT_EQ(Run("DROP TABLE missing PURGE").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Run("DROP TABLE nope.missing PURGE").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RunOk("DROP TABLE IF EXISTS missing PURGE").rows, 0);
  EXPECT_EQ(FilesUnder(Warehouse()), before);
  EXPECT_EQ(catalog_->LatestCommitSeq().value(), seq);
  EXPECT_TRUE(catalog_->LoadTable(Ident("t")).ok());
}

TEST_F(LakeSqlDropTest, PurgeOutsideTheWarehouseIsRefusedBeforeAnythingChanges) {
  // A table whose location is outside the warehouse: registered from elsewhere.
  catalog::CreateTableRequest req;
  req.schema = *engine::SchemaFromColumnDefinitions("id BIGINT");
  req.location = tmp_.Path("outside/ext");
  ASSERT_TRUE(catalog_->CreateTable(Ident("ext"), req).ok());
  const std::set<std::string> files = FilesUnder(tmp_.Path("outside"));
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(Run("DROP TABLE ext PURGE").status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(catalog_->LoadTable(Ident("ext")).ok());
  EXPECT_EQ(FilesUnder(tmp_.Path("outside")), files);
  // table::DropTable with Scope::kAnywhere (skade drop --purge --force) purges it.
  table::DropOptions anywhere;
  anywhere.mode = catalog::DropMode::kPurge;
  anywhere.scope = table::DropOptions::Scope::kAnywhere;
  auto dropped = table::DropTable(*catalog_, *io_, Ident("ext"), anywhere);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_GE(dropped->removed_files, static_cast<int64_t>(files.size()));
  EXPECT_EQ(dropped->removed_files, dropped->files_before);
  EXPECT_TRUE(dropped->left_files.empty());
  EXPECT_FALSE(fs::exists(tmp_.Path("outside/ext")));
  EXPECT_TRUE(fs::exists(tmp_.Path("outside")));
}

TEST_F(LakeSqlDropTest, CreateOrReplaceReplacesTheSameTableAndLeavesNoFolderBehind) {
  RunOk("CREATE TABLE r AS SELECT range AS id, 'a' AS s FROM range(4)");
  auto first = catalog_->LoadTable(Ident("r"));
  ASSERT_TRUE(first.ok());
  const std::string location = first->metadata->location;
  const std::string uuid = first->metadata->table_uuid;
  const int id_field = first->metadata->CurrentSchema()->FindFieldByName("id")->id;
  const int s_field = first->metadata->CurrentSchema()->FindFieldByName("s")->id;

  EXPECT_EQ(RunOk("CREATE OR REPLACE TABLE r AS SELECT range AS id, range * 2 AS s FROM range(6)").rows, 6);
  EXPECT_EQ(Sql("SELECT count(*), sum(s) FROM skade.\"a.b\".r"), (TextRows{{"6", "30"}}));
  {
    // A column of the same name and type keeps its id; "s" changed type and got a new one.
    auto replaced = catalog_->LoadTable(Ident("r"));
    ASSERT_TRUE(replaced.ok());
    const iceberg::Schema& schema = *replaced->metadata->CurrentSchema();
    EXPECT_EQ(schema.FindFieldByName("id")->id, id_field);
    EXPECT_NE(schema.FindFieldByName("s")->id, s_field);
    EXPECT_GT(schema.FindFieldByName("s")->id, s_field);
    EXPECT_FALSE(replaced->metadata->CurrentSnapshot()->parent_snapshot_id.has_value());
    // The old rows stay readable at their snapshot, with their schema.
    const int64_t old_snapshot = *first->metadata->current_snapshot_id;
    EXPECT_EQ(Sql("SELECT count(*), min(s) FROM skade.\"a.b\".r AT (VERSION => " + std::to_string(old_snapshot) + ")"),
              (TextRows{{"4", "a"}}));
  }
  EXPECT_EQ(RunOk("CREATE OR REPLACE TABLE r AS SELECT 'x' || range AS name FROM range(3)").rows, 3);
  EXPECT_EQ(Sql("SELECT name FROM skade.\"a.b\".r ORDER BY name"), (TextRows{{"x0"}, {"x1"}, {"x2"}}));
  EXPECT_EQ(RunOk("CREATE OR REPLACE TABLE r (id BIGINT NOT NULL, v DOUBLE)").rows, 0);
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".r"), (TextRows{{"0"}}));
  EXPECT_EQ(RunOk("INSERT INTO r VALUES (1, 0.5)").rows, 1);

  auto now = catalog_->LoadTable(Ident("r"));
  ASSERT_TRUE(now.ok());
  const iceberg::TableMetadata& m = *now->metadata;
  // One table: same uuid and location, its history in the metadata log and snapshots.
  EXPECT_EQ(m.table_uuid, uuid);
  EXPECT_EQ(m.location, location);
  EXPECT_EQ(m.snapshots.size(), 4u);
  EXPECT_GE(m.metadata_log.size(), 5u);
  // Every column ever numbered has an id of its own.
  EXPECT_TRUE(m.CurrentSchema()->FindFieldByName("id")->required);
  std::set<int> ids;
  for (const auto& s : m.schemas) {
    for (const auto& f : s->fields()) ids.insert(f.id);
  }
  EXPECT_EQ(static_cast<int>(ids.size()), m.last_column_id);
  // One folder in the namespace, no other beside it.
  std::set<std::string> folders;
  for (const auto& e : fs::directory_iterator(fs::path(location).parent_path())) folders.insert(e.path().string());
  EXPECT_EQ(folders, (std::set<std::string>{location}));
  // The old snapshots expire as any do, and then nothing under the folder is unreferenced.
  auto t = LoadTable(Ident("r"));
  ASSERT_TRUE(t);
  table::ExpireOptions expire;
  expire.older_than_ms = NowMillis() + 1;
  auto expired = t->ExpireSnapshots(expire);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(expired->expired_snapshot_ids.size(), 3u);
  EXPECT_GT(expired->deleted_data_files, 0);
  auto orphans = t->RemoveOrphanFiles(NowMillis() + 1000, table::Table::OrphanMode::kDryRun);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_TRUE(orphans->orphans.empty()) << orphans->orphans.front();
  EXPECT_EQ(Sql("SELECT id, v FROM skade.\"a.b\".r"), (TextRows{{"1", "0.5"}}));
}

TEST_F(LakeSqlDropTest, AFailedReplaceLeavesTheTableAsItWas) {
  RunOk("CREATE TABLE r AS SELECT range AS id FROM range(4)");
  auto before = catalog_->LoadTable(Ident("r"));
  ASSERT_TRUE(before.ok());
  const std::set<std::string> files = FilesUnder(Warehouse());
  auto failed = Run("CREATE OR REPLACE TABLE r AS SELECT CAST(error('boom') AS BIGINT) AS id FROM range(3)");
  EXPECT_FALSE(failed.ok());
  auto after = catalog_->LoadTable(Ident("r"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->metadata_location, before->metadata_location);
  EXPECT_EQ(FilesUnder(Warehouse()), files);
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".r"), (TextRows{{"4"}}));
  // The replaced table may be read by its own replacement's query.
  EXPECT_EQ(RunOk("CREATE OR REPLACE TABLE r AS SELECT id * 10 AS id FROM r").rows, 4);
  EXPECT_EQ(Sql("SELECT sum(id) FROM skade.\"a.b\".r"), (TextRows{{"60"}}));
}

}  // namespace
}  // namespace skade::sql
