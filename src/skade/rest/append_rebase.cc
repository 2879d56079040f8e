#include "skade/rest/append_rebase.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "skade/base/uuid.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_update.h"

namespace skade::rest {
namespace {

using iceberg::ManifestFile;
using iceberg::Snapshot;
using iceberg::TableMetadata;
using iceberg::TableRequirement;
using iceberg::TableUpdate;

// The one append snapshot of `commit` and the branches it sets to it; nullopt when the updates
// are anything else.
struct AppendShape {
  const Snapshot* snapshot = nullptr;
  std::set<std::string> branches;
};

std::optional<AppendShape> ShapeOf(const catalog::TableCommit& commit) {
  AppendShape shape;
  for (const TableUpdate& u : commit.updates) {
    if (u.kind == TableUpdate::Kind::kAddSnapshot) {
      if (shape.snapshot != nullptr) return std::nullopt;  // two snapshots: not one append
      shape.snapshot = &u.snapshot;
    } else if (u.kind == TableUpdate::Kind::kSetSnapshotRef) {
      if (u.ref.type != iceberg::RefType::kBranch) return std::nullopt;
      shape.branches.insert(u.ref_name);
    } else {
      return std::nullopt;
    }
  }
  if (shape.snapshot == nullptr || shape.branches.empty() || shape.snapshot->operation() != "append" ||
      shape.snapshot->manifest_list.empty()) {
    return std::nullopt;
  }
  for (const TableUpdate& u : commit.updates) {
    if (u.kind == TableUpdate::Kind::kSetSnapshotRef && u.ref.snapshot_id != shape.snapshot->snapshot_id) {
      return std::nullopt;  // a branch moved elsewhere
    }
  }
  return shape;
}

// Whether `ancestor` is `head` or one of its ancestors in `m`.
bool IsAncestor(const TableMetadata& m, int64_t ancestor, int64_t head) {
  std::optional<int64_t> at = head;
  for (size_t steps = 0; at && steps <= m.snapshots.size(); ++steps) {
    if (*at == ancestor) return true;
    const Snapshot* s = m.SnapshotById(*at);
    if (s == nullptr) return false;
    at = s->parent_snapshot_id;
  }
  return false;
}

// The requirements asserting the current state instead, when every failing one is the
// asserted snapshot of a branch the append sets, and that branch only moved forward since.
// nullopt otherwise. `parent` is the branch head the append goes on.
std::optional<std::vector<TableRequirement>> Reasserted(const catalog::TableCommit& commit, const AppendShape& shape,
                                                        const TableMetadata& current,
                                                        std::optional<int64_t>* asserted_parent,
                                                        std::optional<int64_t>* parent) {
  std::vector<TableRequirement> out;
  bool moved = false;
  for (const TableRequirement& r : commit.requirements) {
    if (r.Check(&current).ok()) {
      out.push_back(r);
      continue;
    }
    if (r.kind != TableRequirement::Kind::kAssertRefSnapshotId || shape.branches.count(r.ref) == 0) {
      return std::nullopt;
    }
    auto ref = current.refs.find(r.ref);
    if (ref == current.refs.end() || ref->second.type != iceberg::RefType::kBranch) return std::nullopt;
    const int64_t head = ref->second.snapshot_id;
    if (r.snapshot_id && !IsAncestor(current, *r.snapshot_id, head)) return std::nullopt;
    if (moved && *parent != head) return std::nullopt;  // two branches at different heads
    moved = true;
    *asserted_parent = r.snapshot_id;
    *parent = head;
    out.push_back(TableRequirement::AssertRefSnapshotId(r.ref, head));
  }
  if (!moved) return std::nullopt;  // nothing to rebase: the refusal was something else
  // The snapshot must have been made on the asserted parent.
  if (shape.snapshot->parent_snapshot_id != *asserted_parent) return std::nullopt;
  return out;
}

// Whether the manifest `m`, which the snapshot added, holds ADDED data entries only.
Result<bool> OnlyAdded(io::FileIO& io, const ManifestFile& m) {
  if (m.content != iceberg::ManifestContent::kData) return false;
  if (m.existing_files_count && m.deleted_files_count) {
    return *m.existing_files_count == 0 && *m.deleted_files_count == 0;
  }
  SKADE_ASSIGN_OR_RETURN(auto reader, iceberg::ManifestReader::Open(io, m.manifest_path, m));
  iceberg::ManifestEntry entry;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(bool more, reader->NextInto(&entry));
    if (!more) return true;
    if (entry.status != iceberg::ManifestEntryStatus::kAdded) return false;
  }
}

std::set<std::string> Paths(const std::vector<ManifestFile>& manifests) {
  std::set<std::string> out;
  for (const ManifestFile& m : manifests) out.insert(m.manifest_path);
  return out;
}

// The summary's totals counted again from the new parent's: total-X = parent's total-X + what
// this snapshot added − what it removed (dropped where the parent has no such total).
std::vector<std::pair<std::string, std::string>> RebasedSummary(const Snapshot& snapshot, const Snapshot* parent) {
  struct Total {
    const char* total;
    const char* added;
    const char* removed;
  };
  static constexpr Total kTotals[] = {
      {"total-records", "added-records", "deleted-records"},
      {"total-files-size", "added-files-size", "removed-files-size"},
      {"total-data-files", "added-data-files", "deleted-data-files"},
      {"total-delete-files", "added-delete-files", "removed-delete-files"},
      {"total-position-deletes", "added-position-deletes", "removed-position-deletes"},
      {"total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : snapshot.summary) {
    const Total* t = nullptr;
    for (const Total& candidate : kTotals) {
      if (key == candidate.total) t = &candidate;
    }
    if (t == nullptr) {
      out.emplace_back(key, value);
      continue;
    }
    const std::optional<int64_t> base = parent ? parent->SummaryLong(t->total) : std::optional<int64_t>(0);
    if (!base) continue;
    const int64_t total =
        *base + snapshot.SummaryLong(t->added).value_or(0) - snapshot.SummaryLong(t->removed).value_or(0);
    out.emplace_back(key, std::to_string(total));
  }
  return out;
}

std::string Folder(const std::string& location) {
  const size_t slash = location.rfind('/');
  return slash == std::string::npos ? "" : location.substr(0, slash);
}

}  // namespace

Result<std::optional<RebasedAppend>> RebaseAppend(const catalog::TableCommit& commit, const TableMetadata& current,
                                                  io::FileIO& io) {
  const std::optional<RebasedAppend> kNotSafe;
  if (current.format_version > 2) return kNotSafe;
  std::optional<AppendShape> shape = ShapeOf(commit);
  if (!shape || current.SnapshotById(shape->snapshot->snapshot_id) != nullptr) return kNotSafe;
  std::optional<int64_t> asserted_parent, parent_id;
  std::optional<std::vector<TableRequirement>> requirements =
      Reasserted(commit, *shape, current, &asserted_parent, &parent_id);
  if (!requirements) return kNotSafe;
  const Snapshot* parent = parent_id ? current.SnapshotById(*parent_id) : nullptr;
  if (parent_id && parent == nullptr) return kNotSafe;

  // The client's list: the asserted parent's manifests unchanged, plus ADDED-only data manifests.
  const Snapshot& appended = *shape->snapshot;
  SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> listed, iceberg::ReadManifestList(io, appended.manifest_list));
  std::vector<ManifestFile> added, inherited;
  for (ManifestFile& m : listed) {
    (m.added_snapshot_id == appended.snapshot_id ? added : inherited).push_back(std::move(m));
  }
  std::vector<ManifestFile> before;
  if (asserted_parent) {
    const Snapshot* old = current.SnapshotById(*asserted_parent);
    if (old == nullptr || old->manifest_list.empty()) return kNotSafe;
    SKADE_ASSIGN_OR_RETURN(before, iceberg::ReadManifestList(io, old->manifest_list));
  }
  if (Paths(inherited) != Paths(before) || inherited.size() != before.size()) return kNotSafe;
  for (const ManifestFile& m : added) {
    SKADE_ASSIGN_OR_RETURN(bool only_added, OnlyAdded(io, m));
    if (!only_added) return kNotSafe;
  }

  // The new list: the added manifests (their sequence numbers assigned anew), then the head's.
  std::vector<ManifestFile> manifests = added;
  for (ManifestFile& m : manifests) {
    m.sequence_number = -1;
    m.min_sequence_number = -1;
  }
  if (parent != nullptr) {
    if (parent->manifest_list.empty()) return kNotSafe;  // a v1 snapshot without a list
    SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> head, iceberg::ReadManifestList(io, parent->manifest_list));
    for (ManifestFile& m : head) manifests.push_back(std::move(m));
  }
  Snapshot rebased = appended;
  rebased.parent_snapshot_id = parent_id;
  rebased.sequence_number = current.format_version >= 2 ? current.last_sequence_number + 1 : 0;
  rebased.summary = RebasedSummary(appended, parent);
  if (parent != nullptr) rebased.timestamp_ms = std::max(rebased.timestamp_ms, parent->timestamp_ms);
  SKADE_ASSIGN_OR_RETURN(std::string list,
                         iceberg::WriteManifestList(current.format_version, rebased.snapshot_id, parent_id,
                                                    rebased.sequence_number, manifests));
  rebased.manifest_list = io::JoinLocation(Folder(appended.manifest_list),
                                           "snap-" + std::to_string(rebased.snapshot_id) + "-rebased-" +
                                               Uuid::NewV7().ToString() + ".avro");
  SKADE_RETURN_IF_ERROR(io.CreateExclusive(rebased.manifest_list, list));

  RebasedAppend out;
  out.manifest_list = rebased.manifest_list;
  out.commit.ident = commit.ident;
  out.commit.requirements = std::move(*requirements);
  for (const TableUpdate& u : commit.updates) {
    out.commit.updates.push_back(u.kind == TableUpdate::Kind::kAddSnapshot ? TableUpdate::AddSnapshot(rebased) : u);
  }
  return std::optional<RebasedAppend>(std::move(out));
}

}  // namespace skade::rest
