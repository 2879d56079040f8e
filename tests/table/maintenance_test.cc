// Snapshot management and cleanup on a real SQLite catalog: rollback and set-current, branches
// and tags read through SnapshotSelector, snapshot expiry deleting exactly the files only
// expired snapshots used, orphan-file removal, and refusals that commit nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/schema_convert.h"
#include "skade/io/delegating_file_io.h"
#include "skade/table/table.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class TableMaintenanceTest : public testing::LakeTest {
 protected:
  std::unique_ptr<Table> Create(const std::string& name) { return CreateTable(name, "id BIGINT NOT NULL, v VARCHAR"); }

  // Appends ids [from, to) with value `v`; returns the new snapshot id.
  int64_t Append(Table& t, int from, int to, const std::string& v) {
    auto r = t.Append({Rows(from, to, v), nullptr});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->snapshot_id : 0;
  }
  int64_t Overwrite(Table& t, int from, int to, const std::string& v) {
    auto r = t.OverwriteAll({Rows(from, to, v), nullptr});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->snapshot_id : 0;
  }
  static std::string Rows(int from, int to, const std::string& v) {
    return "SELECT range AS id, '" + v + "' AS v FROM range(" + std::to_string(from) + ", " +
           std::to_string(to) + ")";
  }

  // "count sum(id) min(v) max(v)" of a read.
  std::vector<std::string> Summary(Table& t, ReadOptions options = {}) {
    auto sql = t.ReadSql(options);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    if (!sql.ok()) return {};
    auto rows =
        db_->QueryRows("WITH t AS (" + *sql + ") SELECT count(*), sum(id), min(v), max(v) FROM t");
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (!rows.ok()) return {};
    std::vector<std::string> out;
    for (const auto& v : (*rows)[0]) out.push_back(v.value_or("NULL"));
    return out;
  }

  static ReadOptions At(int64_t snapshot_id) {
    ReadOptions o;
    o.snapshot.snapshot_id = snapshot_id;
    return o;
  }
  static ReadOptions AtRef(const std::string& ref) {
    ReadOptions o;
    o.snapshot.ref = ref;
    return o;
  }

  // Data files a snapshot reads.
  std::vector<std::string> DataFiles(Table& t, int64_t snapshot_id) {
    auto plan = t.PlanRead(At(snapshot_id));
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    std::vector<std::string> out;
    if (plan.ok()) {
      for (const auto& task : plan->tasks) out.push_back(task.file.file_path);
    }
    return out;
  }

  // Every file under the table location.
  // The table's files, without temporary ones (a version-hint.text replacement in flight).
  std::set<std::string> FilesOnDisk(const Table& t) {
    std::set<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(io::LocalPath(t.metadata().location))) {
      if (e.is_regular_file() && !io::IsTemporaryWrite(e.path().string())) out.insert(e.path().string());
    }
    return out;
  }

  static bool Exists(const std::string& p) { return fs::exists(io::LocalPath(p)); }

  int64_t LatestSeq() { return *catalog_->LatestCommitSeq(); }
};

TEST_F(TableMaintenanceTest, RollbackAndSetCurrent) {
  auto t = Create("rb");
  int64_t s1 = Append(*t, 0, 10, "a");
  int64_t s2 = Append(*t, 10, 20, "b");
  int64_t s3 = Append(*t, 20, 30, "c");
  auto o = t->Rollback(s1);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->operation, "rollback");
  EXPECT_EQ(o->snapshot_id, s1);
  EXPECT_GT(o->commit_seq, 0);
  EXPECT_EQ(*t->metadata().current_snapshot_id, s1);
  EXPECT_THAT(Summary(*t), ElementsAre("10", "45", "a", "a"));
  // A fresh object sees the same.
  auto fresh = Table::Load(*catalog_, *io_, *db_, t->ident());
  ASSERT_TRUE(fresh.ok());
  EXPECT_THAT(Summary(**fresh), ElementsAre("10", "45", "a", "a"));
  // s3 is no longer an ancestor of main: rollback refuses, set-current works.
  int64_t seq = LatestSeq();
  EXPECT_EQ(t->Rollback(s3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Rollback(12345).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t->SetCurrentSnapshot(12345).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LatestSeq(), seq);
  ASSERT_TRUE(t->SetCurrentSnapshot(s3).ok());
  EXPECT_THAT(Summary(*t), ElementsAre("30", "435", "a", "c"));
  ASSERT_TRUE(t->Rollback(s2).ok());
  EXPECT_THAT(Summary(*t), ElementsAre("20", "190", "a", "b"));
  // Appending after a rollback continues from the rolled-back snapshot.
  int64_t s4 = Append(*t, 100, 101, "d");
  EXPECT_EQ(t->metadata().SnapshotById(s4)->parent_snapshot_id, s2);
  EXPECT_THAT(Summary(*t), ElementsAre("21", "290", "a", "d"));
}

TEST_F(TableMaintenanceTest, BranchesAndTags) {
  auto t = Create("refs");
  int64_t s1 = Append(*t, 0, 5, "a");
  int64_t s2 = Append(*t, 5, 10, "b");
  ASSERT_TRUE(t->CreateTag("v1", s1).ok());
  auto b = t->CreateBranch("dev", std::nullopt);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->operation, "create-branch");
  EXPECT_EQ(t->metadata().refs.at("dev").snapshot_id, s2);
  EXPECT_EQ(t->metadata().refs.at("dev").type, iceberg::RefType::kBranch);
  EXPECT_EQ(t->metadata().refs.at("v1").type, iceberg::RefType::kTag);
  EXPECT_THAT(Summary(*t, AtRef("v1")), ElementsAre("5", "10", "a", "a"));
  EXPECT_THAT(Summary(*t, AtRef("dev")), ElementsAre("10", "45", "a", "b"));
  Append(*t, 10, 11, "c");
  EXPECT_THAT(Summary(*t, AtRef("dev")), ElementsAre("10", "45", "a", "b"));  // branch did not move
  EXPECT_THAT(Summary(*t), ElementsAre("11", "55", "a", "c"));

  int64_t seq = LatestSeq();
  EXPECT_EQ(t->CreateBranch("dev", s1).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(t->CreateTag("v1", std::nullopt).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(t->CreateTag("dev", std::nullopt).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(t->CreateBranch("x", 999).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t->DropRef("main").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->DropRef("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LatestSeq(), seq);

  ASSERT_TRUE(t->DropRef("dev").ok());
  EXPECT_EQ(t->metadata().refs.count("dev"), 0u);
  EXPECT_EQ(t->Read(AtRef("dev")).status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Summary(*t, AtRef("v1")), ElementsAre("5", "10", "a", "a"));
}

TEST_F(TableMaintenanceTest, ExpireDeletesOnlyFilesNoRetainedSnapshotUses) {
  auto t = Create("exp");
  int64_t s1 = Append(*t, 0, 10, "a");        // file A
  int64_t s2 = Overwrite(*t, 100, 103, "b");  // file B replaces A
  int64_t s3 = Append(*t, 200, 201, "c");     // file C
  ASSERT_TRUE(t->CreateTag("keep", s2).ok());
  int64_t s4 = Overwrite(*t, 300, 305, "d");  // file D replaces B and C
  auto files_a = DataFiles(*t, s1), files_b = DataFiles(*t, s2), files_d = DataFiles(*t, s4);
  std::vector<std::string> files_c;
  for (const auto& f : DataFiles(*t, s3)) {
    if (std::find(files_b.begin(), files_b.end(), f) == files_b.end()) files_c.push_back(f);
  }
  ASSERT_EQ(files_a.size(), 1u);
  ASSERT_EQ(files_b.size(), 1u);
  ASSERT_EQ(files_c.size(), 1u);
  std::string list1 = t->metadata().SnapshotById(s1)->manifest_list;
  std::string list2 = t->metadata().SnapshotById(s2)->manifest_list;

  // Defaults (older than 5 days) expire nothing in a new table.
  auto none = t->ExpireSnapshots({});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->expired_snapshot_ids.empty());
  EXPECT_EQ(none->commit_seq, 0);

  ExpireOptions options;
  options.older_than_ms = NowMillis() + 60000;
  options.retain_last = 1;
  // A dry run reports and changes nothing.
  options.dry_run = true;
  int64_t seq = LatestSeq();
  auto dry = t->ExpireSnapshots(options);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_THAT(dry->expired_snapshot_ids, UnorderedElementsAre(s1, s3));
  EXPECT_EQ(dry->deleted_data_files, 2);
  EXPECT_EQ(LatestSeq(), seq);
  EXPECT_TRUE(Exists(files_a[0]));
  EXPECT_EQ(t->metadata().snapshots.size(), 4u);

  options.dry_run = false;
  auto r = t->ExpireSnapshots(options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->expired_snapshot_ids, UnorderedElementsAre(s1, s3));
  EXPECT_EQ(r->commit_seq, seq + 1);
  EXPECT_EQ(r->deleted_data_files, 2);
  EXPECT_EQ(r->deleted_manifest_lists, 2);
  EXPECT_EQ(r->deleted_manifests, 2);  // A's and C's manifests (B's is still used by s2)
  EXPECT_EQ(r->deleted_delete_files, 0);
  std::vector<int64_t> left;
  for (const auto& s : t->metadata().snapshots) left.push_back(s.snapshot_id);
  EXPECT_THAT(left, UnorderedElementsAre(s2, s4));
  // Exclusively owned files are gone; everything still referenced stays.
  EXPECT_FALSE(Exists(files_a[0]));
  EXPECT_FALSE(Exists(files_c[0]));
  EXPECT_FALSE(Exists(list1));
  EXPECT_TRUE(Exists(files_b[0]));
  EXPECT_TRUE(Exists(files_d[0]));
  EXPECT_TRUE(Exists(list2));
  for (const std::string& f : r->deleted_files) EXPECT_FALSE(Exists(f)) << f;
  // Current data and the tagged snapshot read exactly.
  EXPECT_THAT(Summary(*t), ElementsAre("5", "1510", "d", "d"));
  EXPECT_THAT(Summary(*t, AtRef("keep")), ElementsAre("3", "303", "b", "b"));
  auto fresh = Table::Load(*catalog_, *io_, *db_, t->ident());
  ASSERT_TRUE(fresh.ok());
  EXPECT_THAT(Summary(**fresh), ElementsAre("5", "1510", "d", "d"));
  // Nothing is left to orphan-collect: expiry left no unreferenced file behind except old
  // metadata files, which the metadata log still lists.
  auto orphans = t->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDryRun);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_THAT(orphans->orphans, ElementsAre());
}

// A file store whose first read of a manifest list says it is gone, as when an expiry
// removed the snapshot between the sweep's reading of the metadata and its walk.
class ListGoneOnceFileIO final : public io::DelegatingFileIO {
 public:
  // `meanwhile` runs when the read fails (another writer's commit).
  ListGoneOnceFileIO(io::FileIO& base, std::function<void()> meanwhile) : base_(base), meanwhile_(std::move(meanwhile)) {}
  bool failed() const { return failed_; }
  Result<std::string> Read(std::string_view l) override {
    if (!failed_ && l.find("/metadata/snap-") != std::string_view::npos) {
      failed_ = true;
      meanwhile_();
      return Status::NotFound("gone: " + std::string(l));
    }
    return base_.Read(l);
  }

 private:
  Result<Target> Route(std::string_view l) override { return Target{&base_, std::string(l), nullptr}; }

  io::FileIO& base_;
  std::function<void()> meanwhile_;
  bool failed_ = false;
};

// The sweep walks again on fresh metadata when a file it walks vanished, and still finds
// exactly the unreferenced files (none here). Refreshing the table replaces the metadata the
// sweep started from; the sweep used to keep a reference into the table's state, freed when
// no one else held that metadata (ASan caught it in the race test below; here the catalog's
// metadata cache keeps the old version alive, so this test checks the restart, not the
// lifetime).
TEST_F(TableMaintenanceTest, AnOrphanSweepThatWalksAgainKeepsTheMetadataItUses) {
  auto t = Create("gone");
  Append(*t, 0, 3, "a");
  Append(*t, 3, 6, "b");
  // Meanwhile another writer commits: the sweep's refresh loads new metadata and the table
  // lets go of the old.
  ListGoneOnceFileIO gone(*io_, [&] { Append(*t, 6, 7, "c"); });
  auto sweeping = Table::Load(*catalog_, gone, *db_, t->ident());
  ASSERT_TRUE(sweeping.ok()) << sweeping.status().ToString();
  auto orphans = (*sweeping)->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDryRun);
  EXPECT_TRUE(gone.failed()) << "the walk never read a manifest list";
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_THAT(orphans->orphans, ElementsAre());
}

TEST_F(TableMaintenanceTest, ExpireHonoursRetainLastAndTableProperties) {
  auto t = Create("keep");
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Append(*t, i * 10, i * 10 + 10, "x"));
  ASSERT_TRUE(t->UpdateProperties({{"history.expire.min-snapshots-to-keep", "3"},
                                   {"history.expire.max-snapshot-age-ms", "0"}},
                                  {})
                  .ok());
  // No options: the table's properties (age 0 → everything is old enough; keep 3).
  auto r = t->ExpireSnapshots({});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->expired_snapshot_ids, UnorderedElementsAre(ids[0], ids[1]));
  // Appends share manifests, so only the lists of expired snapshots go.
  EXPECT_EQ(r->deleted_data_files, 0);
  EXPECT_EQ(r->deleted_manifests, 0);
  EXPECT_EQ(r->deleted_manifest_lists, 2);
  EXPECT_THAT(Summary(*t), ElementsAre("50", "1225", "x", "x"));
  // An explicit retain_last overrides the property.
  ExpireOptions o;
  o.retain_last = 1;
  r = t->ExpireSnapshots(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->expired_snapshot_ids, UnorderedElementsAre(ids[2], ids[3]));
  EXPECT_EQ(t->metadata().snapshots.size(), 1u);
  EXPECT_THAT(Summary(*t), ElementsAre("50", "1225", "x", "x"));
  ExpireOptions bad;
  bad.retain_last = 0;
  EXPECT_EQ(t->ExpireSnapshots(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TableMaintenanceTest, RemovesOnlyOldOrphans) {
  auto t = Create("gc");
  Append(*t, 0, 10, "a");
  Overwrite(*t, 10, 20, "b");
  std::set<std::string> referenced = FilesOnDisk(*t);
  std::string root = io::LocalPath(t->metadata().location);
  std::string old_data = root + "/data/stray-old.parquet";
  std::string old_meta = root + "/metadata/stray-old.avro";
  std::string young = root + "/data/stray-young.parquet";
  testing::WriteFileOrDie(old_data, "x");
  testing::WriteFileOrDie(old_meta, "x");
  testing::WriteFileOrDie(young, "x");
  // Every real file counts as old for this cutoff; only the young stray is newer.
  const int64_t cutoff = NowMillis() + 3600 * 1000;
  fs::last_write_time(young, fs::file_time_type::clock::now() + std::chrono::hours(2));

  auto dry = t->RemoveOrphanFiles(cutoff, Table::OrphanMode::kDryRun);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_THAT(dry->orphans, ElementsAre(old_data, old_meta));
  EXPECT_FALSE(dry->deleted);
  EXPECT_TRUE(fs::exists(old_data));

  auto r = t->RemoveOrphanFiles(cutoff, Table::OrphanMode::kDelete);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->orphans, ElementsAre(old_data, old_meta));
  EXPECT_TRUE(r->deleted);
  EXPECT_FALSE(fs::exists(old_data));
  EXPECT_FALSE(fs::exists(old_meta));
  EXPECT_TRUE(fs::exists(young));
  for (const std::string& f : referenced) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_THAT(Summary(*t), ElementsAre("10", "145", "b", "b"));
  ReadOptions first = At(t->metadata().snapshots.front().snapshot_id);
  EXPECT_THAT(Summary(*t, first), ElementsAre("10", "45", "a", "a"));
}

// A temporary file of a local write is a write in flight: kept whatever the cutoff until it
// is an hour old (then a crash left it, and it goes).
TEST_F(TableMaintenanceTest, TemporaryWritesAreOrphansOnlyOnceDead) {
  auto t = Create("tmpfiles");
  Append(*t, 0, 5, "a");
  std::string root = io::LocalPath(t->metadata().location);
  std::string live = io::TemporaryWriteName(root + "/metadata/00009-x.metadata.json", "live");
  std::string dead = io::TemporaryWriteName(root + "/data/part.parquet", "dead");
  testing::WriteFileOrDie(live, "{");
  testing::WriteFileOrDie(dead, "PAR1");
  fs::last_write_time(dead, fs::file_time_type::clock::now() - std::chrono::hours(2));
  auto r = t->RemoveOrphanFiles(NowMillis() + 3600 * 1000, Table::OrphanMode::kDelete);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->orphans, ElementsAre(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_THAT(Summary(*t), ElementsAre("5", "10", "a", "a"));
}

// A file of this table that another table's metadata references (as Spark's snapshot
// procedure or add_files make) is never deleted: not by expiry, not by orphan removal.
TEST_F(TableMaintenanceTest, NeverDeletesFilesAnotherTableReferences) {
  auto a = Create("source");
  Append(*a, 0, 10, "a");
  const iceberg::Snapshot first = *a->metadata().CurrentSnapshot();
  // Table `copy` adopts the source's first snapshot: its manifest list, manifests and data
  // files all live in the source's folder.
  auto copy = Create("copy");
  ASSERT_TRUE(copy);
  catalog::TableCommit commit;
  commit.ident = Ident("copy");
  iceberg::Snapshot adopted = first;
  adopted.parent_snapshot_id.reset();
  commit.updates.push_back(iceberg::TableUpdate::AddSnapshot(adopted));
  commit.updates.push_back(iceberg::TableUpdate::SetBranch("main", adopted.snapshot_id));
  ASSERT_TRUE(catalog_->CommitTable(commit).ok());
  ASSERT_TRUE(copy->Refresh().ok());
  EXPECT_THAT(Summary(*copy), ElementsAre("10", "45", "a", "a"));

  // The source replaces its rows and expires the first snapshot: only this table used those
  // files, as far as its own metadata knows.
  Overwrite(*a, 100, 105, "b");
  ExpireOptions expire;
  expire.older_than_ms = NowMillis() + 1000;
  expire.retain_last = 1;
  auto expired = a->ExpireSnapshots(expire);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_THAT(expired->expired_snapshot_ids, ElementsAre(first.snapshot_id));
  EXPECT_TRUE(expired->deleted_files.empty()) << expired->deleted_files.front();
  auto orphans = a->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDelete);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_TRUE(orphans->orphans.empty()) << orphans->orphans.front();
  EXPECT_THAT(Summary(*copy), ElementsAre("10", "45", "a", "a"));
  EXPECT_THAT(Summary(*a), ElementsAre("5", "510", "b", "b"));

  // Once the other table is dropped, the files are the source's orphans.
  ASSERT_TRUE(catalog_->DropTable(Ident("copy"), catalog::DropMode::kKeepFiles).ok());
  orphans = a->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDelete);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_FALSE(orphans->orphans.empty());
  EXPECT_THAT(Summary(*a), ElementsAre("5", "510", "b", "b"));
}

// A table whose location is outside the warehouse is read, but orphan removal there needs
// OrphanScope::kAnywhere (skade gc --force).
TEST_F(TableMaintenanceTest, OrphanRemovalOutsideTheWarehouseNeedsForce) {
  catalog::CreateTableRequest req;
  req.schema = engine::SchemaFromColumnDefinitions("id BIGINT NOT NULL, v VARCHAR").value();
  req.location = tmp_.Path("elsewhere/t");
  ASSERT_TRUE(catalog_->CreateTable(Ident("outside"), req).ok());
  auto t = LoadTable(Ident("outside"));
  ASSERT_TRUE(t);
  Append(*t, 0, 3, "x");
  std::string stray = tmp_.Path("elsewhere/t/data/stray.parquet");
  testing::WriteFileOrDie(stray, "x");
  auto refused = t->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDelete);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(fs::exists(stray));
  auto forced = t->RemoveOrphanFiles(NowMillis() + 60000, Table::OrphanMode::kDelete, Table::OrphanScope::kAnywhere);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_THAT(forced->orphans, ElementsAre(stray));
  EXPECT_FALSE(fs::exists(stray));
  EXPECT_THAT(Summary(*t), ElementsAre("3", "3", "x", "x"));
}

// Expiry looping beside appenders, compaction and orphan sweeps: every operation whose base
// was expired underneath it reloads and goes again; none fails, no row is lost.
TEST_F(TableMaintenanceTest, MaintenanceBesideWritersAndExpiryNeverFails) {
  auto t = Create("busy");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->UpdateProperties({{"commit.retry.num-retries", "200"}}, {}).ok());
  constexpr int kAppends = 40;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  auto record = [&](const std::string& what, const Status& st) {
    if (st.ok()) return;
    ++failures;
    std::lock_guard<std::mutex> lock(errors_mu);
    if (errors.size() < 5) errors.push_back(what + ": " + st.ToString());
  };
  auto worker = [&](const std::string& what, const std::function<Status(Table&)>& op) {
    return std::thread([&, what, op] {
      auto mine = LoadTable(Ident("busy"));
      if (!mine) {
        ++failures;
        return;
      }
      int runs = 0;
      while (!done.load() || runs < 3) {
        record(what, op(*mine));
        ++runs;
      }
    });
  };
  std::thread expirer = worker("expire", [](Table& x) -> Status {
    ExpireOptions o;
    o.older_than_ms = NowMillis() + 60000;
    o.retain_last = 1;
    return x.ExpireSnapshots(o).status();
  });
  std::thread compactor = worker("compact", [](Table& x) -> Status {
    Table::CompactOptions o;
    o.small_file_bytes = 1 << 30;
    return x.Compact(o).status();
  });
  std::thread sweeper = worker("gc", [](Table& x) -> Status {
    return x.RemoveOrphanFiles(NowMillis() - 600000, Table::OrphanMode::kDelete).status();
  });
  for (int i = 0; i < kAppends; ++i) {
    auto r = t->Append({Rows(i * 10, i * 10 + 10, "v"), nullptr});
    record("append", r.status());
  }
  done = true;
  expirer.join();
  compactor.join();
  sweeper.join();
  EXPECT_EQ(failures.load(), 0) << (errors.empty() ? "" : errors.front());
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_THAT(Summary(*t), ElementsAre(std::to_string(kAppends * 10), std::to_string(kAppends * 10 * (kAppends * 10 - 1) / 2), "v", "v"));
}

// Deterministically what the test above races for: an operation planned on metadata whose
// snapshot a concurrent expiry removed (with its manifest list) reloads instead of failing.
TEST_F(TableMaintenanceTest, OperationsOnAnExpiredBaseReloadAndSucceed) {
  auto writer = Create("stale");
  ASSERT_TRUE(writer);
  Append(*writer, 0, 10, "a");
  auto stale_compact = LoadTable(Ident("stale"));
  auto stale_delete = LoadTable(Ident("stale"));
  auto stale_sweep = LoadTable(Ident("stale"));
  ASSERT_TRUE(stale_compact && stale_delete && stale_sweep);
  Append(*writer, 10, 20, "b");
  ExpireOptions o;
  o.older_than_ms = NowMillis() + 60000;
  o.retain_last = 1;
  auto expired = writer->ExpireSnapshots(o);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  ASSERT_EQ(expired->deleted_manifest_lists, 1);  // the stale objects' current manifest list
  Table::CompactOptions c;
  c.small_file_bytes = 1 << 30;
  auto compacted = stale_compact->Compact(c);
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  auto deleted = stale_delete->DeleteWhere(testing::Where("id < 5"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  auto swept = stale_sweep->RemoveOrphanFiles(NowMillis() - 600000, Table::OrphanMode::kDelete);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  ASSERT_TRUE(writer->Refresh().ok());
  EXPECT_THAT(Summary(*writer), ElementsAre("15", "180", "a", "b"));
}

}  // namespace
}  // namespace skade::table
