// Commit coalescing (table/append_queue.h): concurrent fast appends to one table in one process
// share catalog commits, yet each is its own snapshot with its own commit_seq in the log and in
// the commit stream; an append whose own requirements fail fails alone; a batch that fails
// leaves no files behind; and a process SIGKILLed while its threads append loses no
// acknowledged append and shows no append that was never made.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <signal.h>

#include "skade/base/clock.h"
#include "skade/events/bus.h"
#include "skade/events/watcher.h"
#include "skade/iceberg/scan.h"
#include "skade/io/delegating_file_io.h"
#include "skade/io/location.h"
#include "skade/table/append_queue.h"
#include "skade/table/commit_stream.h"
#include "skade/table/table.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/lake_test.h"
#include "tests/testing/poll_until.h"

namespace skade::table {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testing::PollUntil;

// Forwards to a local FileIO. It can hold the first manifest-list write until a condition holds
// (CoalesceTest::Entered: every append has entered the table's queue, so those not in the batch
// being committed wait behind it), fail the next manifest-list write or file sync, and records
// the files synced.
class GateFileIO final : public io::DelegatingFileIO {
 public:
  explicit GateFileIO(io::FileIO& base) : base_(base) {}

  void HoldFirstListUntil(std::function<bool()> ready) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_until_ = std::move(ready);
  }
  void FailNextListWrites() { fail_lists_ = true; }
  void FailNextSyncFiles() { fail_syncs_ = true; }
  int list_writes() const { return list_writes_; }
  std::set<std::string> synced_files() {
    std::lock_guard<std::mutex> lock(mu_);
    return synced_files_;
  }
  // The locations whose entries in their folders were made durable (SyncFolders).
  std::set<std::string> synced_entries() {
    std::lock_guard<std::mutex> lock(mu_);
    return synced_entries_;
  }

  Status CreateUnpublished(std::string_view l, std::string_view d) override {
    return Create(l, d, [&] { return base_.CreateUnpublished(l, d); });
  }
  Status CreateUnsynced(std::string_view l, std::string_view d) override {
    return Create(l, d, [&] { return base_.CreateUnsynced(l, d); });
  }
  Status SyncFiles(const std::vector<std::string>& l) override {
    if (fail_syncs_.exchange(false)) return Status::IoError("injected failure syncing " + l.front());
    SKADE_RETURN_IF_ERROR(base_.SyncFiles(l));
    std::lock_guard<std::mutex> lock(mu_);
    synced_files_.insert(l.begin(), l.end());
    return Status::Ok();
  }
  Status SyncFolders(const std::vector<std::string>& l) override {
    SKADE_RETURN_IF_ERROR(base_.SyncFolders(l));
    std::lock_guard<std::mutex> lock(mu_);
    synced_entries_.insert(l.begin(), l.end());
    return Status::Ok();
  }

 private:
  Result<Target> Route(std::string_view l) override { return Target{&base_, std::string(l), nullptr}; }

  Status Create(std::string_view l, std::string_view d, const std::function<Status()>& create) {
    (void)d;
    const std::string name = fs::path(std::string(l)).filename().string();
    if (name.starts_with("snap-")) {
      ++list_writes_;
      std::function<bool()> ready;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready = std::exchange(hold_until_, nullptr);
      }
      if (ready) PollUntil(ready);  // the condition is the queue's, which signals nobody
      if (fail_lists_.exchange(false)) return Status::IoError("injected failure writing " + name);
    }
    return create();
  }

  io::FileIO& base_;
  std::mutex mu_;
  std::function<bool()> hold_until_;
  std::set<std::string> synced_files_;
  std::set<std::string> synced_entries_;
  std::atomic<bool> fail_lists_{false};
  std::atomic<bool> fail_syncs_{false};
  std::atomic<int> list_writes_{0};
};

struct Appended {
  int w = 0;
  int c = 0;
  Result<CommitOutcome> outcome = Status::Internal("not run");
};

class CoalesceTest : public testing::LakeTest {
 protected:
  void SetUp() override {
    LakeTest::SetUp();
    if (HasFatalFailure()) return;
    gate_ = std::make_unique<GateFileIO>(*io_);
  }

  std::unique_ptr<Table> Load(const catalog::TableIdent& ident) {
    auto t = Table::Load(*catalog_, *gate_, *db_, ident);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // `writers` threads, each with a Table object of its own, append `each` rows (w, c).
  std::vector<Appended> AppendConcurrently(const catalog::TableIdent& ident, int writers, int each) {
    std::vector<Appended> out(static_cast<size_t>(writers * each));
    std::vector<std::unique_ptr<Table>> tables;
    for (int w = 0; w < writers; ++w) tables.push_back(Load(ident));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        for (int c = 0; c < each; ++c) {
          Appended& a = out[static_cast<size_t>(w * each + c)];
          a.w = w;
          a.c = c;
          a.outcome = tables[static_cast<size_t>(w)]->Append(
              {"SELECT " + std::to_string(w) + " AS w, " + std::to_string(c) + " AS c", nullptr});
        }
      });
    }
    for (auto& t : threads) t.join();
    return out;
  }

  // Files under the table's folder but version-hint.text (moved by a thread of its own).
  std::set<std::string> FilesOf(const Table& t) {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(io::LocalPath(t.metadata().location))) {
      if (e.is_regular_file() && e.path().filename().string().find("version-hint") == std::string::npos) {
        out.insert(e.path().string());
      }
    }
    return out;
  }

  // True once `appends` appends have entered the queue of `ident`'s table (the one the
  // fixture's Table objects share).
  std::function<bool()> Entered(const catalog::TableIdent& ident, uint64_t appends) {
    std::shared_ptr<AppendQueue> queue = AppendQueue::For(*catalog_, *gate_, ident);
    return [queue, appends] { return queue->entered() >= appends; };
  }

  // Kills writer processes appending to table "t" (the test's body below).
  void KillWhileAppending();

  std::unique_ptr<GateFileIO> gate_;
};

TEST_F(CoalesceTest, ConcurrentAppendsShareCommitsEachWithItsOwnSnapshotAndCommitSeq) {
  auto created = CreateTable("t", "w INTEGER, c INTEGER");
  ASSERT_TRUE(created);
  events::Bus bus;
  auto watcher = events::Watcher::Start(*catalog_, "sqlite://" + tmp_.Path("catalog.db"), bus);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  auto after = catalog_->LatestCommitSeq();
  ASSERT_TRUE(after.ok());
  auto stream = created->Subscribe(bus, *after);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();

  constexpr int kWriters = 8, kEach = 6, kTotal = kWriters * kEach;
  gate_->HoldFirstListUntil(Entered(Ident("t"), kWriters));  // the first batch waits until every writer has queued
  std::vector<Appended> appended = AppendConcurrently(Ident("t"), kWriters, kEach);

  std::map<int64_t, const Appended*> by_seq;
  std::set<int64_t> snapshot_ids;
  for (const Appended& a : appended) {
    ASSERT_TRUE(a.outcome.ok()) << a.w << "/" << a.c << ": " << a.outcome.status().ToString();
    EXPECT_EQ(a.outcome->added_records, 1);
    EXPECT_EQ(a.outcome->operation, "append");
    EXPECT_TRUE(snapshot_ids.insert(a.outcome->snapshot_id).second) << "snapshot id handed out twice";
    EXPECT_TRUE(by_seq.emplace(a.outcome->commit_seq, &a).second) << "commit_seq handed out twice";
  }
  ASSERT_EQ(by_seq.size(), static_cast<size_t>(kTotal));
  // Dense, right after the create.
  EXPECT_EQ(by_seq.begin()->first, *after + 1);
  EXPECT_EQ(by_seq.rbegin()->first, *after + kTotal);

  // The log: one entry per append, naming that append's snapshot; fewer metadata files than
  // appends, since batches shared them.
  auto log = catalog_->CommitsSince(*after, 1000);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->size(), static_cast<size_t>(kTotal));
  std::map<std::string, int> per_metadata_file;
  for (const catalog::CommitLogEntry& e : *log) {
    const Appended& a = *by_seq.at(e.commit_seq);
    EXPECT_EQ(e.snapshot_id.value_or(0), a.outcome->snapshot_id) << "seq " << e.commit_seq;
    EXPECT_EQ(e.operation, "append");
    EXPECT_EQ(e.added_records, 1);
    ++per_metadata_file[e.metadata_location];
  }
  int largest = 0;
  for (const auto& [file, n] : per_metadata_file) largest = std::max(largest, n);
  EXPECT_GE(largest, kWriters - 1) << per_metadata_file.size() << " catalog commits for " << kTotal << " appends";
  EXPECT_LT(per_metadata_file.size(), static_cast<size_t>(kTotal));

  // The commit stream: the same entries, one event per append, in commit_seq order.
  std::vector<events::CommitEvent> events;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (events.size() < static_cast<size_t>(kTotal) && std::chrono::steady_clock::now() < deadline) {
    auto next = (*stream)->Next(50ms);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (next->has_value()) events.push_back(**next);
  }
  ASSERT_EQ(events.size(), static_cast<size_t>(kTotal));
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].commit_seq, *after + 1 + static_cast<int64_t>(i));
    EXPECT_EQ(events[i].snapshot_id.value_or(0), by_seq.at(events[i].commit_seq)->outcome->snapshot_id);
  }

  // The table: a chain of kTotal snapshots with rising sequence numbers, each holding exactly
  // the rows acknowledged up to it; every row once.
  std::unique_ptr<Table> t = Load(Ident("t"));
  ASSERT_TRUE(t);
  const iceberg::TableMetadata& m = t->metadata();
  ASSERT_EQ(m.snapshots.size(), static_cast<size_t>(kTotal));
  std::set<std::pair<int, int>> before;
  for (const auto& [seq, a] : by_seq) {
    const iceberg::Snapshot* s = m.SnapshotById(a->outcome->snapshot_id);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->sequence_number, a->outcome->sequence_number);
    const int64_t parent = s->parent_snapshot_id.value_or(0);
    if (seq > by_seq.begin()->first) {
      EXPECT_EQ(parent, by_seq.at(seq - 1)->outcome->snapshot_id) << "snapshots follow commit_seq order";
    }
    EXPECT_EQ(s->SummaryLong("total-records").value_or(-1), static_cast<int64_t>(before.size() + 1));
    before.insert({a->w, a->c});
  }
  auto rows = Rows(*t, "SELECT w, c, count(*) FROM t GROUP BY w, c");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kTotal));
  for (const auto& r : rows) EXPECT_EQ(r[2], "1") << r[0] << "," << r[1];
  // Time travel to one snapshot in the middle of a batch: the rows up to it, no more.
  const Appended* middle = by_seq.at(*after + kTotal / 2);
  ReadOptions at;
  at.snapshot.snapshot_id = middle->outcome->snapshot_id;
  auto count = t->Count(at);
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, kTotal / 2);
  watcher->reset();
}

// Table::kSnapshotPerBatchProperty: the appends of one batch share a snapshot and a manifest
// the batch writes; each is acknowledged with that snapshot and its commit_seq but counts its
// own rows; the log and the table hold one entry and one snapshot per batch; every row is
// there once, each snapshot's reads hold the rows up to it, and nothing is left unsynced or
// unreferenced.
TEST_F(CoalesceTest, WithSnapshotPerBatchTheAppendsOfABatchShareOneSnapshotAndManifest) {
  std::unique_ptr<Table> created =
      CreateTable("t", "w INTEGER, c INTEGER", "", {{Table::kSnapshotPerBatchProperty, "true"}});
  ASSERT_TRUE(created);
  auto after = catalog_->LatestCommitSeq();
  ASSERT_TRUE(after.ok());
  constexpr int kWriters = 8, kEach = 6, kTotal = kWriters * kEach;
  // The first batch waits until every writer has queued.
  gate_->HoldFirstListUntil(Entered(Ident("t"), kWriters));
  std::vector<Appended> appended = AppendConcurrently(Ident("t"), kWriters, kEach);

  std::map<int64_t, std::vector<const Appended*>> by_snapshot;
  std::map<int64_t, int64_t> seq_of_snapshot;
  for (const Appended& a : appended) {
    ASSERT_TRUE(a.outcome.ok()) << a.w << "/" << a.c << ": " << a.outcome.status().ToString();
    EXPECT_EQ(a.outcome->added_records, 1);
    EXPECT_EQ(a.outcome->added_files, 1);
    by_snapshot[a.outcome->snapshot_id].push_back(&a);
    auto [it, fresh] = seq_of_snapshot.emplace(a.outcome->snapshot_id, a.outcome->commit_seq);
    EXPECT_EQ(it->second, a.outcome->commit_seq) << "the appends of one snapshot were told different commit_seqs";
  }
  size_t largest = 0;
  for (const auto& [id, group] : by_snapshot) largest = std::max(largest, group.size());
  EXPECT_GE(largest, static_cast<size_t>(kWriters - 1)) << "the writers queued behind the first batch share no snapshot";

  // The log: one entry per snapshot, dense, with that snapshot's rows.
  auto log = catalog_->CommitsSince(*after, 1000);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->size(), by_snapshot.size());
  std::vector<int64_t> order;  // snapshot ids in commit order
  for (size_t k = 0; k < log->size(); ++k) {
    const catalog::CommitLogEntry& e = (*log)[k];
    EXPECT_EQ(e.commit_seq, *after + 1 + static_cast<int64_t>(k));
    ASSERT_TRUE(e.snapshot_id.has_value());
    ASSERT_TRUE(seq_of_snapshot.count(*e.snapshot_id)) << "the log names a snapshot no append was told of";
    EXPECT_EQ(seq_of_snapshot.at(*e.snapshot_id), e.commit_seq);
    EXPECT_EQ(e.added_records, static_cast<int64_t>(by_snapshot.at(*e.snapshot_id).size()));
    order.push_back(*e.snapshot_id);
  }

  // The table: a chain of those snapshots; each summary counts its batch, each read at it the
  // rows up to it; its list has one manifest per snapshot holding that batch's files.
  std::unique_ptr<Table> t = Load(Ident("t"));
  ASSERT_TRUE(t);
  const iceberg::TableMetadata& m = t->metadata();
  ASSERT_EQ(m.snapshots.size(), by_snapshot.size());
  int64_t total = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const iceberg::Snapshot* s = m.SnapshotById(order[k]);
    ASSERT_NE(s, nullptr);
    if (k > 0) {
      EXPECT_EQ(s->parent_snapshot_id.value_or(0), order[k - 1]);
    }
    const int64_t n = static_cast<int64_t>(by_snapshot.at(order[k]).size());
    total += n;
    EXPECT_EQ(s->SummaryLong("added-data-files").value_or(-1), n);
    EXPECT_EQ(s->SummaryLong("total-records").value_or(-1), total);
    for (const Appended* a : by_snapshot.at(order[k])) EXPECT_EQ(a->outcome->sequence_number, s->sequence_number);
    ReadOptions at;
    at.snapshot.snapshot_id = order[k];
    auto rows_at = Rows(*t, "SELECT count(*) FROM t", at);
    ASSERT_EQ(rows_at.size(), 1u);
    EXPECT_EQ(rows_at[0][0], std::to_string(total)) << "at snapshot " << k;
  }
  EXPECT_EQ(total, kTotal);
  iceberg::ScanPlanner planner(*io_, m);
  auto manifests = planner.LoadManifests(*m.CurrentSnapshot());
  ASSERT_TRUE(manifests.ok()) << manifests.status().ToString();
  ASSERT_EQ(manifests->size(), by_snapshot.size());
  for (const iceberg::ManifestFile& mf : *manifests) {
    ASSERT_TRUE(by_snapshot.count(mf.added_snapshot_id)) << mf.manifest_path;
    EXPECT_EQ(mf.added_files_count.value_or(-1), static_cast<int>(by_snapshot.at(mf.added_snapshot_id).size()));
  }
  auto rows = Rows(*t, "SELECT w, c, count(*) FROM t GROUP BY w, c");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kTotal));
  for (const auto& r : rows) EXPECT_EQ(r[2], "1") << r[0] << "," << r[1];

  // Every data file and shared manifest was synced by its batch; nothing is left unreferenced.
  const std::set<std::string> synced = gate_->synced_files();
  int data_files = 0;
  for (const std::string& f : FilesOf(*t)) {
    if (f.find("/data/") != std::string::npos) ++data_files;
    if (f.find("/data/") != std::string::npos || f.find("-shared") != std::string::npos) {
      EXPECT_TRUE(synced.count(f)) << f << " was committed without being synced";
    }
    EXPECT_FALSE(f.ends_with("-m0.avro")) << "an append wrote a manifest of its own: " << f;
  }
  EXPECT_EQ(data_files, kTotal);
  auto orphans = t->RemoveOrphanFiles(NowMillis() + 1000, Table::OrphanMode::kDryRun);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_TRUE(orphans->orphans.empty()) << orphans->orphans.front();
}

// Appends carrying different lineage summaries never share a snapshot (each snapshot records
// one lineage); those with the same one do.
TEST_F(CoalesceTest, WithSnapshotPerBatchAppendsOfDifferentLineageKeepSnapshotsApart) {
  std::unique_ptr<Table> created =
      CreateTable("t", "w INTEGER, c INTEGER", "", {{Table::kSnapshotPerBatchProperty, "true"}});
  ASSERT_TRUE(created);
  constexpr int kWriters = 6;
  gate_->HoldFirstListUntil(Entered(Ident("t"), kWriters));
  std::vector<std::unique_ptr<Table>> tables;
  for (int w = 0; w < kWriters; ++w) {
    tables.push_back(Load(Ident("t")));
    ASSERT_TRUE(tables.back());
    // Writers 0, 2, 4 read source "a"; 1, 3, 5 source "b".
    SnapshotLineage lineage;
    lineage.inputs.push_back({Ident(w % 2 ? "b" : "a"), std::nullopt, ""});
    tables.back()->set_snapshot_lineage(lineage);
  }
  std::vector<Result<CommitOutcome>> outcomes(kWriters, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      outcomes[static_cast<size_t>(w)] =
          tables[static_cast<size_t>(w)]->Append({"SELECT " + std::to_string(w) + " AS w, 0 AS c", nullptr});
    });
  }
  for (auto& th : threads) th.join();
  std::map<int64_t, std::set<int>> writers_of;
  for (int w = 0; w < kWriters; ++w) {
    ASSERT_TRUE(outcomes[static_cast<size_t>(w)].ok()) << outcomes[static_cast<size_t>(w)].status().ToString();
    writers_of[outcomes[static_cast<size_t>(w)]->snapshot_id].insert(w);
  }
  std::unique_ptr<Table> t = Load(Ident("t"));
  ASSERT_TRUE(t);
  bool shared = false;
  for (const auto& [id, writers] : writers_of) {
    shared = shared || writers.size() > 1;
    std::set<int> parities;
    for (int w : writers) parities.insert(w % 2);
    EXPECT_EQ(parities.size(), 1u) << "appends of different lineage share snapshot " << id;
    const iceberg::Snapshot* s = t->metadata().SnapshotById(id);
    ASSERT_NE(s, nullptr);
    auto lineage = SnapshotLineageOf(*s);
    ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
    ASSERT_TRUE(lineage->has_value());
    ASSERT_EQ((*lineage)->inputs.size(), 1u);
    EXPECT_EQ((*lineage)->inputs[0].table.name, *writers.begin() % 2 ? "b" : "a");
  }
  EXPECT_TRUE(shared) << "no two appends of the same lineage shared a snapshot";
  EXPECT_EQ(Rows(*t, "SELECT count(*) FROM t"), (std::vector<std::vector<std::string>>{{std::to_string(kWriters)}}));
}

// A batch whose manifest list cannot be written fails its appends and leaves none of their
// files, the shared manifest among them.
TEST_F(CoalesceTest, WithSnapshotPerBatchAFailedBatchLeavesNoFiles) {
  std::unique_ptr<Table> t =
      CreateTable("t", "w INTEGER, c INTEGER", "", {{Table::kSnapshotPerBatchProperty, "true"}});
  ASSERT_TRUE(t);
  const std::set<std::string> files_before = FilesOf(*t);
  std::unique_ptr<Table> writer = Load(Ident("t"));
  gate_->FailNextListWrites();
  auto failed = writer->Append({"SELECT 1 AS w, 1 AS c", nullptr});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError) << failed.status().ToString();
  EXPECT_EQ(FilesOf(*t), files_before) << "a failed append left files";
  gate_->FailNextSyncFiles();
  failed = writer->Append({"SELECT 2 AS w, 2 AS c", nullptr});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(FilesOf(*t), files_before) << "an append whose sync failed left files";
  ASSERT_TRUE(writer->Append({"SELECT 3 AS w, 3 AS c", nullptr}).ok());
  std::unique_ptr<Table> reread = Load(Ident("t"));
  EXPECT_EQ(Rows(*reread, "SELECT w FROM t"), (std::vector<std::vector<std::string>>{{"3"}}));
}

TEST_F(CoalesceTest, AnAppendWrittenForAnOlderSchemaFailsAloneInItsBatch) {
  ASSERT_TRUE(CreateTable("t", "w INTEGER, c INTEGER"));
  std::unique_ptr<Table> old_schema = Load(Ident("t"));
  ASSERT_TRUE(old_schema);
  {
    std::unique_ptr<Table> evolver = Load(Ident("t"));
    SchemaChange add;
    add.kind = SchemaChange::Kind::kAddColumn;
    add.column = "note";
    add.type = "VARCHAR";
    auto changed = evolver->UpdateSchema({add});
    ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  }
  std::unique_ptr<Table> blocker = Load(Ident("t"));
  std::unique_ptr<Table> current = Load(Ident("t"));
  // The blocker's append queues first; its batch waits until the other two have queued, so they
  // queue together behind it.
  gate_->HoldFirstListUntil(Entered(Ident("t"), 3));
  Result<CommitOutcome> first = Status::Internal(""), stale = Status::Internal(""), fresh = Status::Internal("");
  std::thread a([&] { first = blocker->Append({"SELECT 1 AS w, 1 AS c, 'x' AS note", nullptr}); });
  EXPECT_TRUE(PollUntil(Entered(Ident("t"), 1))) << "the blocker's append never queued";
  std::thread b([&] { stale = old_schema->Append({"SELECT 2 AS w, 2 AS c", nullptr}); });
  std::thread c([&] { fresh = current->Append({"SELECT 3 AS w, 3 AS c, 'y' AS note", nullptr}); });
  a.join();
  b.join();
  c.join();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict) << stale.status().ToString();
  EXPECT_NE(stale.status().message().find("schema"), std::string::npos) << stale.status().ToString();
  EXPECT_EQ(fresh->commit_seq, first->commit_seq + 1);

  std::unique_ptr<Table> t = Load(Ident("t"));
  auto rows = Rows(*t, "SELECT w, c, note FROM t ORDER BY w");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"1", "1", "x"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"3", "3", "y"}));
  // The failed append's data file and manifest are gone: only what the metadata references
  // stays (RemoveOrphanFiles finds nothing).
  auto orphans = t->RemoveOrphanFiles(NowMillis() + 1000, Table::OrphanMode::kDryRun);
  ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
  EXPECT_TRUE(orphans->orphans.empty()) << orphans->orphans.front();
}

TEST_F(CoalesceTest, AFailedBatchFailsItsAppendsLeavesNoFilesAndTheNextBatchCommits) {
  std::unique_ptr<Table> t = CreateTable("t", "w INTEGER, c INTEGER");
  ASSERT_TRUE(t);
  const std::set<std::string> files_before = FilesOf(*t);
  gate_->FailNextListWrites();
  std::unique_ptr<Table> writer = Load(Ident("t"));
  auto failed = writer->Append({"SELECT 1 AS w, 1 AS c", nullptr});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError) << failed.status().ToString();
  EXPECT_EQ(FilesOf(*t), files_before) << "a failed append left files";

  auto ok = writer->Append({"SELECT 2 AS w, 2 AS c", nullptr});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  std::unique_ptr<Table> reread = Load(Ident("t"));
  EXPECT_EQ(Rows(*reread, "SELECT w FROM t"), (std::vector<std::vector<std::string>>{{"2"}}));
}

// An append's data file and manifest are made durable by its batch (beside the catalog's
// metadata write) before the pointer moves; a failed sync commits nothing and leaves no file.
TEST_F(CoalesceTest, AnAppendsFilesAreSyncedBeforeItsCommitAndAFailedSyncCommitsNothing) {
  std::unique_ptr<Table> t = CreateTable("t", "w INTEGER, c INTEGER");
  ASSERT_TRUE(t);
  std::unique_ptr<Table> writer = Load(Ident("t"));
  auto ok = writer->Append({"SELECT 1 AS w, 1 AS c", nullptr});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  std::unique_ptr<Table> reread = Load(Ident("t"));
  const std::set<std::string> synced = gate_->synced_files();
  int data_files = 0, manifests = 0;
  for (const std::string& f : FilesOf(*reread)) {
    if (f.find("/data/") != std::string::npos) {
      ++data_files;
      EXPECT_TRUE(synced.count(f)) << f << " was committed without being synced";
    } else if (f.ends_with("-m0.avro")) {
      ++manifests;
      EXPECT_TRUE(synced.count(f)) << f << " was committed without being synced";
    }
  }
  EXPECT_EQ(data_files, 1);
  EXPECT_EQ(manifests, 1);

  const std::set<std::string> files_before = FilesOf(*reread);
  const int64_t seq_before = *catalog_->LatestCommitSeq();
  gate_->FailNextSyncFiles();
  auto failed = writer->Append({"SELECT 2 AS w, 2 AS c", nullptr});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError) << failed.status().ToString();
  EXPECT_EQ(*catalog_->LatestCommitSeq(), seq_before);
  EXPECT_EQ(FilesOf(*reread), files_before) << "a failed append left files";
  ASSERT_TRUE(writer->Append({"SELECT 3 AS w, 3 AS c", nullptr}).ok());
  std::unique_ptr<Table> last = Load(Ident("t"));
  EXPECT_EQ(Rows(*last, "SELECT string_agg(w::VARCHAR, ',' ORDER BY w) FROM t"),
            (std::vector<std::vector<std::string>>{{"1,3"}}));
}

// DuckDB makes the partition folders of a partitioned append; their entries in their parents
// are made durable by the batch with the files' (the batch's durable work, which the swap waits for).
TEST_F(CoalesceTest, ThePartitionFoldersAnAppendMadeAreSyncedInTheirParentsWithItsFiles) {
  std::unique_ptr<Table> t = CreateTable("p", "k VARCHAR, n INTEGER, c INTEGER", "k, n");
  ASSERT_TRUE(t);
  std::unique_ptr<Table> writer = Load(Ident("p"));
  auto ok = writer->Append({"SELECT * FROM (VALUES ('a', 1, 1), ('a', 2, 2), ('b', 1, 3)) v(k, n, c)", nullptr});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->added_files, 3);
  const std::string data = io::JoinLocation(io::LocalPath(t->metadata().location), "data");
  const std::set<std::string> entries = gate_->synced_entries();
  std::set<std::string> data_files;
  for (const std::string& f : FilesOf(*Load(Ident("p")))) {
    if (f.starts_with(data + "/")) data_files.insert(f);
  }
  ASSERT_EQ(data_files.size(), 3u);
  for (const std::string& f : data_files) {
    EXPECT_TRUE(entries.count(f)) << f << "'s entry was not synced";
    // Every folder between data/ and the file: "data/k=a" and "data/k=a/n=1".
    const std::string below = f.substr(data.size() + 1);
    for (size_t slash = below.find('/'); slash != std::string::npos; slash = below.find('/', slash + 1)) {
      const std::string folder = data + "/" + below.substr(0, slash);
      EXPECT_TRUE(entries.count(folder)) << folder << "'s entry was not synced";
    }
    EXPECT_EQ(std::count(below.begin(), below.end(), '/'), 2) << f;
  }
  EXPECT_EQ(Rows(*Load(Ident("p")), "SELECT string_agg(c::VARCHAR, ',' ORDER BY c) FROM t"),
            (std::vector<std::vector<std::string>>{{"1,2,3"}}));
}

TEST_F(CoalesceTest, AMissingManifestListOfTheCurrentSnapshotFailsTheAppendAtOnce) {
  std::unique_ptr<Table> t = CreateTable("t", "w INTEGER, c INTEGER");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append({"SELECT 1 AS w, 1 AS c", nullptr}).ok());
  const std::string list = t->metadata().CurrentSnapshot()->manifest_list;
  ASSERT_TRUE(io_->Delete(list).ok());
  // No queue of this process has the deleted list in memory: t's goes with it, and the gate
  // FileIO's queue is new.
  t.reset();
  std::unique_ptr<Table> writer = Load(Ident("t"));
  const std::set<std::string> files_before = FilesOf(*writer);
  const auto started = std::chrono::steady_clock::now();
  auto r = writer->Append({"SELECT 2 AS w, 2 AS c", nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find(fs::path(list).filename().string()), std::string::npos) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "retried as if the table had moved on";
  EXPECT_EQ(FilesOf(*writer), files_before);
}

// A process whose threads append to one table is SIGKILLed at random moments (and once inside
// the catalog commit of a batch, by crash point): every acknowledged append is in the table
// exactly once with the snapshot and commit_seq it was acknowledged with, and the only rows
// not acknowledged are the one append each thread had in flight.
TEST_F(CoalesceTest, KilledWhileAppendingLosesNoAcknowledgedAppendAndInventsNone) {
  ASSERT_TRUE(CreateTable("t", "w INTEGER, c INTEGER"));
  KillWhileAppending();
}

// The same with the appends of a batch sharing one snapshot.
TEST_F(CoalesceTest, WithSnapshotPerBatchKilledWhileAppendingLosesNoAcknowledgedAppendAndInventsNone) {
  ASSERT_TRUE(CreateTable("t", "w INTEGER, c INTEGER", "", {{Table::kSnapshotPerBatchProperty, "true"}}));
  KillWhileAppending();
}

void CoalesceTest::KillWhileAppending() {
  constexpr int kThreads = 8;
  std::mt19937 rng(std::random_device{}());
  std::map<int, int> acked_upto;                          // writer → acknowledged appends (0..n-1)
  std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> acked;  // (w, c) → snapshot, commit_seq
  const std::vector<std::string> crash_points = {"", "commit.after_metadata_write", "", ""};
  for (size_t round = 0; round < crash_points.size(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " " + crash_points[round]);
    const int first_writer = static_cast<int>(round) * 100;
    const std::string ack_path = tmp_.Path("acks-" + std::to_string(round));
    std::vector<std::string> argv = {skade::testing::AppendWriterPath(), tmp_.Path("catalog.db"), tmp_.Path("warehouse"),
                                     "db.t", std::to_string(kThreads), std::to_string(first_writer), ack_path};
    if (!crash_points[round].empty()) argv.push_back(crash_points[round]);
    auto child = testing::ChildProcess::Start(argv, tmp_.Path("writer-" + std::to_string(round) + ".err"));
    ASSERT_TRUE(child);
    if (crash_points[round].empty()) {
      // Kill after 20–80 acknowledgements, wherever the batches are.
      const size_t target = std::uniform_int_distribution<size_t>(20, 80)(rng);
      auto deadline = std::chrono::steady_clock::now() + 60s;
      while (std::chrono::steady_clock::now() < deadline) {
        std::ifstream in(ack_path);
        size_t lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
        if (lines >= target) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 7)(rng)));
      }
      EXPECT_EQ(child->Stop(SIGKILL, 20s), -1);
    } else {
      // It kills itself in its first catalog commit.
      EXPECT_EQ(child->Stop(0, 60s), -1) << "the writer did not reach its crash point";
    }
    std::ifstream in(ack_path);
    int w = 0, c = 0;
    int64_t snapshot = 0, seq = 0;
    while (in >> w >> c >> snapshot >> seq) {
      EXPECT_EQ(c, acked_upto[w]) << "writer " << w << " acknowledged out of order";
      acked_upto[w] = c + 1;
      acked[{w, c}] = {snapshot, seq};
    }
    if (!crash_points[round].empty()) {
      for (int t = 0; t < kThreads; ++t) EXPECT_EQ(acked_upto.count(first_writer + t), 0u) << "acknowledged past the crash";
    }
  }
  ASSERT_GT(acked.size(), 20u);

  std::unique_ptr<Table> t = Load(Ident("t"));
  ASSERT_TRUE(t);
  auto rows = Rows(*t, "SELECT w, c, count(*) FROM t GROUP BY w, c");
  std::set<std::pair<int, int>> present;
  for (const auto& r : rows) {
    const std::pair<int, int> key{std::stoi(r[0]), std::stoi(r[1])};
    EXPECT_EQ(r[2], "1") << "row " << r[0] << "," << r[1] << " appears " << r[2] << " times";
    present.insert(key);
    if (!acked.count(key)) {
      // Committed but killed before its acknowledgement: only the append in flight.
      EXPECT_EQ(key.second, acked_upto[key.first]) << "row " << r[0] << "," << r[1] << " was never appended";
    }
  }
  auto log = catalog_->CommitsSince(0, 100000);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::map<int64_t, int64_t> snapshot_of_seq;
  for (size_t k = 0; k < log->size(); ++k) {
    EXPECT_EQ((*log)[k].commit_seq, static_cast<int64_t>(k + 1)) << "the log is dense";
    snapshot_of_seq[(*log)[k].commit_seq] = (*log)[k].snapshot_id.value_or(0);
  }
  for (const auto& [key, ids] : acked) {
    EXPECT_TRUE(present.count(key)) << "acknowledged append " << key.first << "," << key.second << " is lost";
    EXPECT_EQ(snapshot_of_seq[ids.second], ids.first) << "commit_seq " << ids.second;
    EXPECT_NE(t->metadata().SnapshotById(ids.first), nullptr);
  }
}

}  // namespace
}  // namespace skade::table
