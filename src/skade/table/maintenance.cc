// Snapshot management and cleanup: metadata-only commits (rollback, set-current, branches and
// tags), snapshot expiry with deletion of the files only expired snapshots reached, and removal
// of orphan files under the table location.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/catalog/deletion_guard.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/references.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_update.h"
#include "skade/io/location.h"
#include "skade/table/commit_internal.h"
#include "skade/table/table.h"

namespace skade::table {
namespace {

using iceberg::ManifestFile;
using iceberg::Snapshot;
using iceberg::TableMetadata;
using iceberg::TableRequirement;
using iceberg::TableUpdate;

constexpr int64_t kDefaultMaxSnapshotAgeMs = 5LL * 24 * 3600 * 1000;  // Iceberg's 5 days
constexpr char kMain[] = "main";
// A local write renames its temporary file into place within seconds; one older than this
// was left by a process that died.
constexpr int64_t kTemporaryWriteLifetimeMs = 3600LL * 1000;

// A comparable form of a location (file: URIs and plain paths name the same file).
std::string Key(std::string_view location) { return io::NormalizeLocation(location); }

std::optional<int64_t> LongProperty(const TableMetadata& m, std::string_view key) {
  std::string text = m.Property(key);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

// Snapshot ids from `head` back through parents (present in the metadata), newest first.
std::vector<const Snapshot*> Ancestry(const TableMetadata& m, int64_t head) {
  std::vector<const Snapshot*> out;
  std::set<int64_t> seen;
  const Snapshot* s = m.SnapshotById(head);
  while (s != nullptr && seen.insert(s->snapshot_id).second) {
    out.push_back(s);
    s = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr;
  }
  return out;
}

// The "statistics-path" of each statistics / partition-statistics entry, per snapshot id.
struct ExpirePlan {
  std::set<int64_t> expired;
  std::vector<std::string> expired_refs;  // refs past their max-ref-age-ms
  bool empty() const { return expired.empty() && expired_refs.empty(); }
};

// Spec "Snapshot Retention Policy": a snapshot stays if a ref points at it, if it is one of the
// min-snapshots-to-keep newest ancestors of a branch, or if it is younger than the branch's
// max-snapshot-age-ms; snapshots outside every branch stay while younger than the default
// age. Refs other than main expire after max-ref-age-ms.
ExpirePlan PlanExpiry(const TableMetadata& m, const ExpireOptions& options, int64_t now_ms) {
  const int64_t default_cutoff = options.older_than_ms.value_or(
      now_ms -
      LongProperty(m, "history.expire.max-snapshot-age-ms").value_or(kDefaultMaxSnapshotAgeMs));
  const int default_min_keep = options.retain_last.value_or(static_cast<int>(
      std::max<int64_t>(1, LongProperty(m, "history.expire.min-snapshots-to-keep").value_or(1))));
  const std::optional<int64_t> default_max_ref_age =
      LongProperty(m, "history.expire.max-ref-age-ms");

  ExpirePlan plan;
  std::set<int64_t> retained;
  // Old v1 metadata may carry current-snapshot-id without a main ref: treat it as main.
  std::map<std::string, iceberg::SnapshotRef> refs = m.refs;
  if (!refs.count(kMain) && m.current_snapshot_id) {
    iceberg::SnapshotRef main_ref;
    main_ref.snapshot_id = *m.current_snapshot_id;
    refs.emplace(kMain, main_ref);
  }
  for (const auto& [name, ref] : refs) {
    const Snapshot* head = m.SnapshotById(ref.snapshot_id);
    if (head == nullptr) continue;
    std::optional<int64_t> max_ref_age =
        ref.max_ref_age_ms ? ref.max_ref_age_ms : default_max_ref_age;
    if (name != kMain && max_ref_age && now_ms - head->timestamp_ms > *max_ref_age) {
      plan.expired_refs.push_back(name);
      continue;
    }
    retained.insert(ref.snapshot_id);
    if (ref.type != iceberg::RefType::kBranch) continue;
    int min_keep = ref.min_snapshots_to_keep.value_or(default_min_keep);
    int64_t cutoff = ref.max_snapshot_age_ms ? now_ms - *ref.max_snapshot_age_ms : default_cutoff;
    int kept = 0;
    for (const Snapshot* s : Ancestry(m, ref.snapshot_id)) {
      if (kept < min_keep || s->timestamp_ms >= cutoff) retained.insert(s->snapshot_id);
      ++kept;
    }
  }
  // Snapshots on no branch's history (e.g. left behind by a rollback) go by the default age.
  std::set<int64_t> on_branches;
  for (const auto& [name, ref] : refs) {
    if (ref.type != iceberg::RefType::kBranch) continue;
    for (const Snapshot* s : Ancestry(m, ref.snapshot_id)) on_branches.insert(s->snapshot_id);
  }
  for (const Snapshot& s : m.snapshots) {
    if (retained.count(s.snapshot_id)) continue;
    if (!on_branches.count(s.snapshot_id) && s.timestamp_ms >= default_cutoff) continue;
    plan.expired.insert(s.snapshot_id);
  }
  return plan;
}

struct FilesToDelete {
  std::vector<std::string> data_files;
  std::vector<std::string> delete_files;
  std::vector<std::string> manifests;
  std::vector<std::string> manifest_lists;
  std::vector<std::string> statistics_files;
};

}  // namespace

Result<CommitOutcome> Table::CommitMetadata(const std::string& operation,
                                            const MetadataCommitBuilder& build) {
  // Validate against the newest metadata, not whatever this object loaded earlier.
  SKADE_RETURN_IF_ERROR(Refresh());
  const int max_attempts = MaxCommitAttempts(metadata().properties);
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (attempt > 1) {
      BackOff(attempt);
      SKADE_RETURN_IF_ERROR(Refresh());
    }
    const TableMetadata& base = metadata();
    SKADE_ASSIGN_OR_RETURN(MetadataCommit change, build(base));
    CommitOutcome outcome;
    outcome.operation = operation;
    outcome.attempts = attempt;
    if (change.updates.empty()) {
      // Nothing to change: no commit, no new metadata file.
      if (const Snapshot* s = base.CurrentSnapshot()) outcome.snapshot_id = s->snapshot_id;
      return outcome;
    }
    catalog::TableCommit commit;
    commit.ident = state_.ident;
    if (!base.table_uuid.empty())
      commit.requirements.push_back(TableRequirement::AssertTableUuid(base.table_uuid));
    for (auto& r : change.requirements) commit.requirements.push_back(std::move(r));
    commit.updates = std::move(change.updates);
    auto result = catalog_.CommitTable(commit);
    if (result.ok()) {
      state_ = result->table;
      if (const Snapshot* s = metadata().CurrentSnapshot()) {
        outcome.snapshot_id = s->snapshot_id;
        outcome.sequence_number = s->sequence_number;
      }
      outcome.commit_seq = result->commit_seq;
      return outcome;
    }
    if (result.status().code() != StatusCode::kConflict) return result.status();
    SKADE_LOG_INFO("{} on {} conflicted (attempt {}); recomputing on fresh metadata", operation,
                   state_.ident.ToString(), attempt);
  }
  return Status::Conflict("gave up on " + operation + " of " + state_.ident.ToString() + " after " +
                          std::to_string(max_attempts) + " conflicting attempts");
}

Result<CommitOutcome> Table::Rollback(int64_t snapshot_id) {
  return CommitMetadata("rollback", [&](const TableMetadata& base) -> Result<MetadataCommit> {
    if (base.SnapshotById(snapshot_id) == nullptr) {
      return Status::NotFound("snapshot " + std::to_string(snapshot_id) + " does not exist");
    }
    const Snapshot* current = base.CurrentSnapshot();
    bool ancestor = false;
    if (current != nullptr) {
      for (const Snapshot* s : Ancestry(base, current->snapshot_id))
        ancestor = ancestor || s->snapshot_id == snapshot_id;
    }
    if (!ancestor) {
      return Status::InvalidArgument(
          "snapshot " + std::to_string(snapshot_id) +
          " is not an ancestor of the current snapshot; use set-current");
    }
    MetadataCommit mc;
    mc.requirements.push_back(TableRequirement::AssertRefSnapshotId(kMain, current->snapshot_id));
    if (current->snapshot_id != snapshot_id)
      mc.updates.push_back(TableUpdate::SetBranch(kMain, snapshot_id));
    return mc;
  });
}

Result<CommitOutcome> Table::SetCurrentSnapshot(int64_t snapshot_id) {
  return CommitMetadata(
      "set-current-snapshot", [&](const TableMetadata& base) -> Result<MetadataCommit> {
        if (base.SnapshotById(snapshot_id) == nullptr) {
          return Status::NotFound("snapshot " + std::to_string(snapshot_id) + " does not exist");
        }
        MetadataCommit mc;
        std::optional<int64_t> current;
        if (auto it = base.refs.find(kMain); it != base.refs.end())
          current = it->second.snapshot_id;
        mc.requirements.push_back(TableRequirement::AssertRefSnapshotId(kMain, current));
        if (current != snapshot_id)
          mc.updates.push_back(TableUpdate::SetBranch(kMain, snapshot_id));
        return mc;
      });
}

namespace {

// Shared by CreateBranch / CreateTag: the ref must be new and its snapshot must exist.
Result<int64_t> NewRefTarget(const TableMetadata& base, const std::string& name,
                             std::optional<int64_t> snapshot_id) {
  if (name.empty()) return Status::InvalidArgument("empty ref name");
  if (base.refs.count(name)) return Status::AlreadyExists("ref '" + name + "' already exists");
  if (!snapshot_id) {
    const Snapshot* current = base.CurrentSnapshot();
    if (current == nullptr)
      return Status::NotFound("the table has no current snapshot to point '" + name + "' at");
    return current->snapshot_id;
  }
  if (base.SnapshotById(*snapshot_id) == nullptr) {
    return Status::NotFound("snapshot " + std::to_string(*snapshot_id) + " does not exist");
  }
  return *snapshot_id;
}

}  // namespace

Result<CommitOutcome> Table::CreateBranch(const std::string& name,
                                          std::optional<int64_t> snapshot_id) {
  return CommitMetadata("create-branch", [&](const TableMetadata& base) -> Result<MetadataCommit> {
    SKADE_ASSIGN_OR_RETURN(int64_t target, NewRefTarget(base, name, snapshot_id));
    MetadataCommit mc;
    mc.requirements.push_back(TableRequirement::AssertRefSnapshotId(name, std::nullopt));
    mc.updates.push_back(TableUpdate::SetBranch(name, target));
    return mc;
  });
}

Result<CommitOutcome> Table::CreateTag(const std::string& name,
                                       std::optional<int64_t> snapshot_id) {
  return CommitMetadata("create-tag", [&](const TableMetadata& base) -> Result<MetadataCommit> {
    if (name == kMain)
      return Status::InvalidArgument("'main' is the main branch; it can't be a tag");
    SKADE_ASSIGN_OR_RETURN(int64_t target, NewRefTarget(base, name, snapshot_id));
    MetadataCommit mc;
    mc.requirements.push_back(TableRequirement::AssertRefSnapshotId(name, std::nullopt));
    mc.updates.push_back(TableUpdate::SetTag(name, target));
    return mc;
  });
}

Result<CommitOutcome> Table::DropRef(const std::string& name) {
  if (name == kMain) return Status::InvalidArgument("the main branch can't be dropped");
  return CommitMetadata("drop-ref", [&](const TableMetadata& base) -> Result<MetadataCommit> {
    auto it = base.refs.find(name);
    if (it == base.refs.end()) return Status::NotFound("ref '" + name + "' does not exist");
    MetadataCommit mc;
    mc.requirements.push_back(TableRequirement::AssertRefSnapshotId(name, it->second.snapshot_id));
    mc.updates.push_back(TableUpdate::RemoveRef(name));
    return mc;
  });
}

Result<ExpireResult> Table::ExpireSnapshots(const ExpireOptions& options) {
  if (options.retain_last && *options.retain_last < 1) {
    return Status::InvalidArgument("retain_last must be at least 1");
  }
  // Which files only expired snapshots reach: everything (any entry status) in manifests that
  // no retained snapshot lists, minus the live files of every retained manifest.
  auto files_to_delete = [&](const TableMetadata& before,
                             const std::set<int64_t>& expired) -> Result<FilesToDelete> {
    FilesToDelete out;
    iceberg::ScanPlanner planner(io_, before);
    std::unordered_set<std::string> retained_lists, retained_manifest_keys;
    std::vector<ManifestFile> retained_manifests;
    for (const Snapshot& s : before.snapshots) {
      if (expired.count(s.snapshot_id)) continue;
      if (!s.manifest_list.empty()) retained_lists.insert(Key(s.manifest_list));
      SKADE_ASSIGN_OR_RETURN(auto manifests, planner.LoadManifests(s));
      for (ManifestFile& mf : manifests) {
        if (retained_manifest_keys.insert(Key(mf.manifest_path)).second)
          retained_manifests.push_back(std::move(mf));
      }
    }
    std::unordered_set<std::string> candidate_keys;
    std::vector<ManifestFile> candidates;
    for (const Snapshot& s : before.snapshots) {
      if (!expired.count(s.snapshot_id)) continue;
      if (!s.manifest_list.empty() && !retained_lists.count(Key(s.manifest_list))) {
        out.manifest_lists.push_back(s.manifest_list);
      }
      SKADE_ASSIGN_OR_RETURN(auto manifests, planner.LoadManifests(s));
      for (ManifestFile& mf : manifests) {
        std::string key = Key(mf.manifest_path);
        if (retained_manifest_keys.count(key) || !candidate_keys.insert(key).second) continue;
        candidates.push_back(std::move(mf));
      }
    }
    if (!candidates.empty()) {
      std::unordered_set<std::string> live;
      for (const ManifestFile& mf : retained_manifests) {
        SKADE_RETURN_IF_ERROR(iceberg::ForEachLiveEntry(io_, mf, [&](iceberg::ManifestEntry& entry) {
          live.insert(Key(entry.data_file.file_path));
          return Status::Ok();
        }));
      }
      std::unordered_set<std::string> seen;
      for (const ManifestFile& mf : candidates) {
        SKADE_ASSIGN_OR_RETURN(auto reader,
                               iceberg::ManifestReader::Open(io_, mf.manifest_path, mf));
        while (true) {
          SKADE_ASSIGN_OR_RETURN(auto entry, reader->Next());
          if (!entry) break;
          const iceberg::DataFile& f = entry->data_file;
          std::string key = Key(f.file_path);
          if (live.count(key) || !seen.insert(key).second) continue;
          (f.content == iceberg::DataFileContent::kData ? out.data_files : out.delete_files)
              .push_back(f.file_path);
        }
        out.manifests.push_back(mf.manifest_path);
      }
    }
    // Statistics files of expired snapshots, unless a retained snapshot's entry names them too.
    std::unordered_set<std::string> kept_stats;
    auto stats = iceberg::StatisticsFiles(before);
    for (const auto& [id, path] : stats) {
      if (!expired.count(id)) kept_stats.insert(Key(path));
    }
    for (const auto& [id, path] : stats) {
      if (expired.count(id) && kept_stats.insert(Key(path)).second)
        out.statistics_files.push_back(path);
    }
    return out;
  };

  ExpireResult result;
  const int64_t now_ms = NowMillis();
  SKADE_RETURN_IF_ERROR(Refresh());
  std::optional<TableMetadata> before;
  ExpirePlan committed;
  if (options.dry_run) {
    committed = PlanExpiry(metadata(), options, now_ms);
    before = metadata();
  } else {
    SKADE_ASSIGN_OR_RETURN(
        CommitOutcome outcome,
        CommitMetadata(
            "expire-snapshots", [&](const TableMetadata& base) -> Result<MetadataCommit> {
              ExpirePlan plan = PlanExpiry(base, options, now_ms);
              MetadataCommit mc;
              // Retention was decided from these refs: any ref moving means deciding again.
              for (const auto& [name, ref] : base.refs) {
                mc.requirements.push_back(
                    TableRequirement::AssertRefSnapshotId(name, ref.snapshot_id));
              }
              for (const std::string& name : plan.expired_refs)
                mc.updates.push_back(TableUpdate::RemoveRef(name));
              if (!plan.expired.empty()) {
                mc.updates.push_back(
                    TableUpdate::RemoveSnapshots({plan.expired.begin(), plan.expired.end()}));
              }
              committed = plan;
              before = base;
              return mc;
            }));
    result.commit_seq = outcome.commit_seq;
  }
  result.expired_snapshot_ids.assign(committed.expired.begin(), committed.expired.end());
  if (!options.delete_files || committed.expired.empty() || !before) return result;

  auto files = files_to_delete(*before, committed.expired);
  if (!files.ok()) {
    // The commit stands; the files stay until an orphan sweep (never delete on partial knowledge).
    if (options.dry_run) return files.status();
    SKADE_LOG_WARN("expired snapshots of {} but could not work out their files: {}",
                   state_.ident.ToString(), files.status().ToString());
    return result;
  }
  // Only files of this table that no other table references may go (DeletionGuard).
  auto guard = catalog::DeletionGuard::Open(catalog_, io_, state_.ident, before->location);
  if (!guard.ok()) {
    if (options.dry_run) return guard.status();
    SKADE_LOG_WARN("expired snapshots of {} but cannot check other tables; files stay: {}", state_.ident.ToString(),
                   guard.status().ToString());
    return result;
  }
  for (std::vector<std::string>* list : {&files->data_files, &files->delete_files, &files->statistics_files,
                                         &files->manifests, &files->manifest_lists}) {
    auto allowed = (*guard)->Filter(*list);
    if (!allowed.ok()) {
      if (options.dry_run) return allowed.status();
      SKADE_LOG_WARN("expired snapshots of {} but cannot check other tables; files stay: {}",
                     state_.ident.ToString(), allowed.status().ToString());
      return result;
    }
    *list = std::move(allowed).value();
  }
  // Data and delete files first, then manifests, then manifest lists: a crash part-way leaves
  // only unreferenced files behind.
  auto remove = [&](const std::vector<std::string>& paths, int64_t* counter) {
    for (const std::string& p : paths) {
      if (!options.dry_run) {
        Status st = io_.Delete(p);
        if (!st.ok()) {
          SKADE_LOG_WARN("could not delete {}: {}", p, st.ToString());
          continue;
        }
      }
      ++*counter;
      result.deleted_files.push_back(p);
    }
  };
  remove(files->data_files, &result.deleted_data_files);
  remove(files->delete_files, &result.deleted_delete_files);
  remove(files->statistics_files, &result.deleted_statistics_files);
  remove(files->manifests, &result.deleted_manifests);
  remove(files->manifest_lists, &result.deleted_manifest_lists);
  return result;
}

Result<OrphanResult> Table::RemoveOrphanFiles(int64_t older_than_ms, OrphanMode mode, OrphanScope scope) {
  SKADE_RETURN_IF_ERROR(Refresh());
  // Held, not referenced through metadata(): the retries below refresh the table, which
  // replaces (and frees) the metadata it had.
  std::shared_ptr<const TableMetadata> m = state_.metadata;
  if (m->location.empty()) return Status::InvalidArgument("table has no location");
  const std::string& warehouse = catalog_.warehouse();
  if (scope == OrphanScope::kWarehouse && (warehouse.empty() || !io::IsWithin(m->location, warehouse))) {
    return Status::PermissionDenied("table " + state_.ident.ToString() + " lives at " + m->location +
                                    ", outside the warehouse " + warehouse +
                                    ": removing its unreferenced files needs --force");
  }
  // Everything the metadata references, at any snapshot; a read failure aborts the sweep so
  // nothing referenced can be mistaken for an orphan. A file that vanished belonged to a
  // snapshot a concurrent expiry removed: the walk starts again on the new metadata.
  auto referenced = iceberg::ReferencedFiles(io_, state_.metadata_location, *m);
  for (int attempt = 1; !referenced.ok() && referenced.status().code() == StatusCode::kNotFound && attempt < 5;
       ++attempt) {
    SKADE_RETURN_IF_ERROR(Refresh());
    m = state_.metadata;
    referenced = iceberg::ReferencedFiles(io_, state_.metadata_location, *m);
  }
  SKADE_RETURN_IF_ERROR(referenced);
  SKADE_ASSIGN_OR_RETURN(auto listing, io_.List(io::JoinLocation(m->location, "")));
  std::vector<std::string> candidates;
  const int64_t now_ms = NowMillis();
  for (const io::FileInfo& f : listing) {
    // Young files may belong to a commit in flight.
    if (f.modified_ms >= older_than_ms) continue;
    // A temporary file is a write in flight until it is renamed, whatever cutoff was asked
    // for; one left by a crash goes once it is surely dead.
    if (io::IsTemporaryWrite(f.location) && f.modified_ms >= now_ms - kTemporaryWriteLifetimeMs) continue;
    if (referenced->count(Key(f.location))) continue;
    candidates.push_back(f.location);
  }
  OrphanResult result;
  // Never a file inside another table's folder or one another table references.
  if (!candidates.empty()) {
    SKADE_ASSIGN_OR_RETURN(auto guard, catalog::DeletionGuard::Open(catalog_, io_, state_.ident, m->location));
    SKADE_ASSIGN_OR_RETURN(result.orphans, guard->Filter(candidates));
  }
  std::sort(result.orphans.begin(), result.orphans.end());
  if (mode == OrphanMode::kDelete) {
    for (const std::string& p : result.orphans) {
      SKADE_RETURN_IF_ERROR(io_.Delete(p).WithContext("remove orphan"));
    }
    result.deleted = true;
  }
  return result;
}

}  // namespace skade::table
