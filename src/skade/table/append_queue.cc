#include "skade/table/append_queue.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/ordered_parallel.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location.h"
#include "skade/table/commit_internal.h"
#include "skade/table/snapshot_lineage.h"

namespace skade::table {
namespace {

using Key = std::tuple<const catalog::Catalog*, const io::FileIO*, catalog::TableIdent>;

std::mutex registry_mu;
std::map<Key, std::weak_ptr<AppendQueue>>& Registry() {
  static auto* registry = new std::map<Key, std::weak_ptr<AppendQueue>>();
  return *registry;
}

// Files of one batch written or synced at once: each waits on its own fsync.
constexpr int kSyncThreads = 8;

// One snapshot of the batch being built: one append's, or those of appends sharing it.
struct Planned {
  std::vector<QueuedAppend*> appends;
  iceberg::Snapshot snapshot;
  std::string list_path;
  std::string list_bytes;
  Changes changes;
};

// The appends of `pending` grouped by snapshot: the appends without a manifest of their own and
// with the same extra summary share one, wherever they are in the batch (concurrent callers have
// no order among them, so interleaved lineages still share); every other append has its own.
// Groups keep the order of their first append.
std::vector<std::vector<QueuedAppend*>> SnapshotsOf(const std::vector<QueuedAppend*>& pending) {
  std::vector<std::vector<QueuedAppend*>> groups;
  auto shares = [](const QueuedAppend* a) { return a->manifest.manifest_path.empty(); };
  for (QueuedAppend* a : pending) {
    auto same = groups.end();
    if (shares(a)) {
      same = std::find_if(groups.begin(), groups.end(), [&](const std::vector<QueuedAppend*>& g) {
        return shares(g.front()) && g.front()->extra_summary == a->extra_summary;
      });
    }
    if (same != groups.end()) {
      same->push_back(a);
    } else {
      groups.push_back({a});
    }
  }
  return groups;
}

}  // namespace

Result<iceberg::ManifestFile> AppendQueue::WriteSharedManifest(const iceberg::TableMetadata& base, int format,
                                                              int64_t snapshot_id,
                                                              const std::vector<QueuedAppend*>& appends,
                                                              const std::string& path) {
  iceberg::SchemaPtr schema = base.CurrentSchema();
  iceberg::PartitionSpecPtr spec = base.DefaultSpec();
  if (!schema || !spec) return Status::Corruption("table metadata has no current schema or spec");
  std::vector<const iceberg::DataFile*> files;
  for (const QueuedAppend* a : appends) {
    for (const iceberg::DataFile& f : a->files) files.push_back(&f);
  }
  // Made durable by the batch with the appends' data files (unsynced like them).
  return WriteAppendManifest(io_, schema, spec, format, snapshot_id, files, path);
}

std::shared_ptr<AppendQueue> AppendQueue::For(catalog::Catalog& catalog, io::FileIO& io,
                                              const catalog::TableIdent& ident) {
  std::lock_guard<std::mutex> lock(registry_mu);
  auto& registry = Registry();
  Key key{&catalog, &io, ident};
  if (auto it = registry.find(key); it != registry.end()) {
    if (auto queue = it->second.lock()) return queue;
  }
  // Queues nobody holds any more go when a new one comes.
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  std::shared_ptr<AppendQueue> queue(new AppendQueue(catalog, io, ident));
  registry[key] = queue;
  return queue;
}

Result<CommitOutcome> AppendQueue::Commit(QueuedAppend& append) {
  std::unique_lock<std::mutex> lock(mu_);
  waiting_.push_back(&append);
  entered_.fetch_add(1);
  while (!append.done) {
    if (committing_) {
      cv_.wait(lock);
      continue;
    }
    // No batch is running: this caller commits every append waiting, its own among them.
    committing_ = true;
    std::vector<QueuedAppend*> batch;
    while (!waiting_.empty() && batch.size() < kMaxBatch) {
      batch.push_back(waiting_.front());
      waiting_.pop_front();
    }
    lock.unlock();
    CommitBatch(batch);
    lock.lock();
    for (QueuedAppend* a : batch) a->done = true;
    committing_ = false;
    cv_.notify_all();
  }
  return std::move(*append.outcome);
}

Result<std::vector<iceberg::ManifestFile>> AppendQueue::ManifestsOf(const iceberg::TableMetadata& base,
                                                                    const iceberg::Snapshot& snapshot) {
  if (!last_list_.empty() && snapshot.manifest_list == last_list_) return last_manifests_;
  iceberg::ScanPlanner planner(io_, base);
  return planner.LoadManifests(snapshot);
}

void AppendQueue::CommitBatch(const std::vector<QueuedAppend*>& batch) {
  std::vector<QueuedAppend*> pending = batch;
  auto fail_pending = [&](const Status& st) {
    for (QueuedAppend* a : pending) a->outcome = Result<CommitOutcome>(st);
  };
  const std::string write_id = Uuid::NewV7().ToString();
  const int64_t started_at_us = NowMicros();  // the commit report's duration starts here
  int max_attempts = Table::kMaxAttempts;
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (attempt > 1) BackOff(attempt);
    auto loaded = catalog_.LoadTable(ident_);
    if (!loaded.ok()) return fail_pending(loaded.status());
    const iceberg::TableMetadata& base = *loaded->metadata;
    if (attempt == 1) max_attempts = MaxCommitAttempts(base.properties);

    // Each append's own requirements: the files were written for the current schema and spec.
    const int format = std::max(2, base.format_version);
    std::vector<QueuedAppend*> still;
    for (QueuedAppend* a : pending) {
      std::string why;
      if (a->schema_id != base.current_schema_id) {
        why = "schema " + std::to_string(a->schema_id) + " is no longer current (now " +
              std::to_string(base.current_schema_id) + ")";
      } else if (a->spec_id != base.default_spec_id) {
        why = "partition spec " + std::to_string(a->spec_id) + " is no longer the default (now " +
              std::to_string(base.default_spec_id) + ")";
      } else if (a->format_version != format) {
        why = "the table's format version changed to " + std::to_string(base.format_version);
      }
      if (why.empty()) {
        still.push_back(a);
      } else {
        a->outcome = Result<CommitOutcome>(Status::Conflict(
            "append to " + ident_.ToString() + ": its files were written for an older table: " + why));
      }
    }
    pending = std::move(still);
    if (pending.empty()) return;

    // The snapshots, back to back on the current one.
    const iceberg::Snapshot* head = base.CurrentSnapshot();
    std::vector<iceberg::ManifestFile> manifests;
    if (head != nullptr) {
      auto m = ManifestsOf(base, *head);
      if (!m.ok()) {
        // A list that vanished because a concurrent expiry moved the table on: go again. One
        // missing from the current metadata is an error of the table.
        if (m.status().code() == StatusCode::kNotFound) {
          auto now = catalog_.LoadTable(ident_);
          if (now.ok() && now->metadata_location != loaded->metadata_location) continue;
        }
        return fail_pending(m.status());
      }
      manifests = std::move(m).value();
    }
    const std::string metadata_dir = MetadataFolder(base);
    std::vector<Planned> planned;
    planned.reserve(pending.size());
    const iceberg::Snapshot* parent = head;
    int64_t sequence = base.last_sequence_number;
    int64_t timestamp = std::max(NowMillis(), base.last_updated_ms);
    int64_t next_row_id = base.next_row_id.value_or(0);
    std::vector<std::string> attempt_files;  // manifests this attempt wrote (merged or shared)
    std::vector<std::string> shared_manifests;  // those of shared snapshots, synced by the batch
    std::vector<std::string> merged_away;      // new manifests no list names
    int written_manifests = 0;
    auto manifest_path = [&](const char* what) {
      return io::JoinLocation(metadata_dir, write_id + "-a" + std::to_string(attempt) + "-" + what +
                                                std::to_string(written_manifests++) + ".avro");
    };
    Status built;
    for (std::vector<QueuedAppend*>& appends : SnapshotsOf(pending)) {
      Planned p;
      p.appends = std::move(appends);
      const QueuedAppend& first = *p.appends.front();
      for (const QueuedAppend* a : p.appends) {
        for (const iceberg::DataFile& f : a->files) p.changes.Add(f);
      }
      iceberg::Snapshot& snap = p.snapshot;
      snap.snapshot_id = first.snapshot_id;
      if (parent) snap.parent_snapshot_id = parent->snapshot_id;
      snap.sequence_number = ++sequence;
      snap.timestamp_ms = timestamp;
      snap.schema_id = base.current_schema_id;
      snap.summary = Summary("append", p.changes, std::nullopt, parent);
      for (const auto& kv : first.extra_summary) snap.summary.push_back(kv);
      snap.summary.emplace_back(kCommitAttemptKey, std::to_string(attempt));
      snap.summary.emplace_back(kCommitStartedAtKey, std::to_string(started_at_us));
      iceberg::ManifestFile manifest = first.manifest;
      if (manifest.manifest_path.empty()) {
        auto written = WriteSharedManifest(base, format, snap.snapshot_id, p.appends, manifest_path("shared"));
        if (!written.ok()) {
          built = written.status();
          break;
        }
        manifest = std::move(written).value();
        attempt_files.push_back(manifest.manifest_path);
        shared_manifests.push_back(manifest.manifest_path);
      }
      // The new manifest first, then everything the parent had, small manifests merged as the
      // table's commit.manifest-merge.* properties ask.
      const std::string new_manifest = manifest.manifest_path;
      manifests.insert(manifests.begin(), std::move(manifest));
      auto merged = MergeManifestsForCommit(io_, base, format, snap.snapshot_id, manifests,
                                            [&] { return manifest_path("merged"); }, &attempt_files);
      if (!merged.ok()) {
        built = merged.status();
        break;
      }
      manifests = std::move(merged).value();
      for (std::string& path : MergedAway({new_manifest}, manifests)) merged_away.push_back(std::move(path));
      auto assigned = AssignRowLineage(format, next_row_id, manifests, &snap);
      if (!assigned.ok()) {
        built = assigned.status();
        break;
      }
      next_row_id += *assigned;
      auto list = iceberg::WriteManifestList(format, snap.snapshot_id, snap.parent_snapshot_id,
                                             snap.sequence_number, manifests);
      if (!list.ok()) {
        built = list.status();
        break;
      }
      // As the list records them: manifests written for this snapshot (its new one, or the one
      // it was merged into) carry its sequence number.
      for (iceberg::ManifestFile& m : manifests) {
        if (m.sequence_number < 0) m.sequence_number = snap.sequence_number;
        if (m.min_sequence_number < 0) m.min_sequence_number = snap.sequence_number;
      }
      p.list_bytes = std::move(list).value();
      p.list_path = ManifestListPath(metadata_dir, snap.snapshot_id, attempt, write_id);
      snap.manifest_list = p.list_path;
      planned.push_back(std::move(p));
      parent = &planned.back().snapshot;
    }
    auto discard_attempt = [&] {
      for (const std::string& f : attempt_files) (void)io_.Delete(f);
    };
    if (!built.ok()) {
      discard_attempt();
      return fail_pending(built);
    }

    // While the catalog writes the metadata, a thread of the batch writes the lists and makes
    // every file of the batch durable — the lists, the appends' data files and manifests, side
    // by side since each fsync waits on the disk, not the CPU — then their folders once. The
    // pointer moves only after that (TableCommit::before_swap).
    std::vector<std::string> unsynced = shared_manifests;
    for (const QueuedAppend* a : pending) unsynced.insert(unsynced.end(), a->unsynced.begin(), a->unsynced.end());
    std::vector<std::string> written;  // the lists written; the work's own until it ended
    BackgroundWork durable([&]() -> Status {
      const size_t lists = planned.size();
      const size_t items = lists + unsynced.size();
      // A few fsyncs in a row still end before the catalog's metadata write does: threads
      // only for larger batches.
      const int threads = static_cast<int>(std::min<size_t>(kSyncThreads, items / 4 + 1));
      Status failed;
      Status ran = OrderedParallel<Status>(
          items, threads, static_cast<size_t>(threads),
          [&](size_t i) {
            return i < lists ? io_.CreateUnpublished(planned[i].list_path, planned[i].list_bytes)
                             : io_.SyncFiles({unsynced[i - lists]});
          },
          [&](size_t i, Status& st) -> Status {
            if (st.ok()) {
              if (i < lists) written.push_back(planned[i].list_path);
            } else if (failed.ok()) {
              failed = st;
            }
            return Status::Ok();
          });
      if (failed.ok()) failed = ran;
      if (!failed.ok()) return failed;
      std::vector<std::string> created = written;
      created.insert(created.end(), unsynced.begin(), unsynced.end());
      created.insert(created.end(), attempt_files.begin(), attempt_files.end());
      for (const QueuedAppend* a : pending) created.insert(created.end(), a->folders.begin(), a->folders.end());
      return io_.SyncFolders(created);
    });
    auto discard = [&] {
      for (const std::string& f : written) (void)io_.Delete(f);
      discard_attempt();
    };
    std::vector<const iceberg::Snapshot*> snapshots;
    for (const Planned& p : planned) snapshots.push_back(&p.snapshot);
    auto result = CommitWhenDurable(catalog_, MainBranchCommit(ident_, base, snapshots), durable);
    if (result.ok()) {
      DeleteMergedAway(io_, merged_away);
      last_list_ = planned.back().list_path;
      last_manifests_ = std::move(manifests);
      // One log entry per snapshot, consecutive (catalog.h); a catalog that logged the commit
      // once gives every append that entry.
      const int64_t n = static_cast<int64_t>(planned.size());
      const bool per_snapshot = result->first_commit_seq > 0 && result->commit_seq - result->first_commit_seq + 1 == n;
      for (int64_t k = 0; k < n; ++k) {
        const Planned& p = planned[static_cast<size_t>(k)];
        const int64_t commit_seq = per_snapshot ? result->first_commit_seq + k : result->commit_seq;
        for (QueuedAppend* a : p.appends) {
          // An append sharing a snapshot is told of its own rows and files.
          Changes own;
          for (const iceberg::DataFile& f : a->files) own.Add(f);
          a->table = result->table;
          a->outcome = OutcomeOf(p.snapshot, "append", p.appends.size() == 1 ? p.changes : own, commit_seq, attempt);
        }
      }
      return;
    }
    const Status& st = result.status();
    if (st.code() == StatusCode::kCommitUnknown) return fail_pending(st);  // its files stay
    discard();
    if (st.code() != StatusCode::kConflict) return fail_pending(st);
    SKADE_LOG_INFO("coalesced commit of {} appends to {} conflicted (attempt {}); retrying", pending.size(),
                   ident_.ToString(), attempt);
  }
  fail_pending(Status::Conflict("gave up committing to " + ident_.ToString() + " after " +
                                std::to_string(max_attempts) + " conflicting attempts"));
}

}  // namespace skade::table
