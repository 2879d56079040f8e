#include "skade/rest/commit_rebase.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
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

using Json = nlohmann::json;

// What a commit changes: at most one append and the branches it sets, and blind metadata
// updates (their property keys and statistics snapshots); nullopt for any other update.
struct Shape {
  const Snapshot* snapshot = nullptr;
  std::set<std::string> branches;
  std::set<std::string> property_keys;
  std::set<int64_t> statistics;
  std::set<int64_t> partition_statistics;
};

// The snapshot a (partition-)statistics file object names; nullopt when it names none.
std::optional<int64_t> StatisticsSnapshot(const std::string& raw) {
  Json j = Json::parse(raw, nullptr, false);
  if (!j.is_object() || !j.contains("snapshot-id") || !j["snapshot-id"].is_number_integer()) return std::nullopt;
  return j["snapshot-id"].get<int64_t>();
}

std::optional<Shape> ShapeOf(const catalog::TableCommit& commit) {
  Shape shape;
  for (const TableUpdate& u : commit.updates) {
    switch (u.kind) {
      case TableUpdate::Kind::kAddSnapshot:
        if (shape.snapshot != nullptr) return std::nullopt;  // two snapshots: not one append
        shape.snapshot = &u.snapshot;
        break;
      case TableUpdate::Kind::kSetSnapshotRef:
        if (u.ref.type != iceberg::RefType::kBranch) return std::nullopt;
        shape.branches.insert(u.ref_name);
        break;
      case TableUpdate::Kind::kSetProperties:
        for (const auto& [key, value] : u.updates) shape.property_keys.insert(key);
        break;
      case TableUpdate::Kind::kRemoveProperties:
        shape.property_keys.insert(u.removals.begin(), u.removals.end());
        break;
      case TableUpdate::Kind::kSetStatistics:
        // As the update applies it: the file's own snapshot-id, else the update's.
        shape.statistics.insert(StatisticsSnapshot(u.raw_json).value_or(u.snapshot_id));
        break;
      case TableUpdate::Kind::kRemoveStatistics:
        shape.statistics.insert(u.snapshot_id);
        break;
      case TableUpdate::Kind::kSetPartitionStatistics: {
        const std::optional<int64_t> id = StatisticsSnapshot(u.raw_json);
        if (!id) return std::nullopt;  // refused when applied anyway
        shape.partition_statistics.insert(*id);
        break;
      }
      case TableUpdate::Kind::kRemovePartitionStatistics:
        shape.partition_statistics.insert(u.snapshot_id);
        break;
      default:
        return std::nullopt;
    }
  }
  if (shape.snapshot == nullptr) {
    // Moving a branch without an append of its own is no blind update.
    if (!shape.branches.empty()) return std::nullopt;
    const bool changes = !shape.property_keys.empty() || !shape.statistics.empty() || !shape.partition_statistics.empty();
    return changes ? std::optional<Shape>(std::move(shape)) : std::nullopt;
  }
  if (shape.branches.empty() || shape.snapshot->operation() != "append" || shape.snapshot->manifest_list.empty()) {
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
// asserted snapshot of a branch that only moved forward since (for an append, a branch it sets,
// all at one head); nullopt otherwise. `refused` gets each such branch and its asserted
// snapshot; for an append, `parent` the head it goes on and `asserted_parent` the one it was
// made on.
std::optional<std::vector<TableRequirement>> Reasserted(const catalog::TableCommit& commit, const Shape& shape,
                                                        const TableMetadata& current,
                                                        std::map<std::string, std::optional<int64_t>>* refused,
                                                        std::optional<int64_t>* asserted_parent,
                                                        std::optional<int64_t>* parent) {
  std::vector<TableRequirement> out;
  for (const TableRequirement& r : commit.requirements) {
    if (r.Check(&current).ok()) {
      out.push_back(r);
      continue;
    }
    if (r.kind != TableRequirement::Kind::kAssertRefSnapshotId) return std::nullopt;
    if (shape.snapshot != nullptr && shape.branches.count(r.ref) == 0) return std::nullopt;
    auto ref = current.refs.find(r.ref);
    if (ref == current.refs.end() || ref->second.type != iceberg::RefType::kBranch) return std::nullopt;
    const int64_t head = ref->second.snapshot_id;
    if (r.snapshot_id && !IsAncestor(current, *r.snapshot_id, head)) return std::nullopt;
    if (shape.snapshot != nullptr) {
      if (!refused->empty() && *parent != head) return std::nullopt;  // two branches at different heads
      *asserted_parent = r.snapshot_id;
      *parent = head;
    }
    (*refused)[r.ref] = r.snapshot_id;
    out.push_back(TableRequirement::AssertRefSnapshotId(r.ref, head));
  }
  if (refused->empty()) return std::nullopt;  // nothing to rebase: the refusal was something else
  // An append must have been made on the asserted parent.
  if (shape.snapshot != nullptr && shape.snapshot->parent_snapshot_id != *asserted_parent) return std::nullopt;
  return out;
}

// Whether every refused branch of `m` stands at its asserted snapshot (absent where asserted
// absent): `m` could be the version the client made its commit on.
bool CouldBeBase(const TableMetadata& m, const std::map<std::string, std::optional<int64_t>>& refused) {
  for (const auto& [name, asserted] : refused) {
    auto ref = m.refs.find(name);
    const std::optional<int64_t> at = ref == m.refs.end() ? std::nullopt : std::optional<int64_t>(ref->second.snapshot_id);
    if (at != asserted) return false;
  }
  return true;
}

// Whether `m` and every older version predate the client's base: some refused branch was
// asserted at a snapshot `m` does not hold yet.
bool PredatesBase(const TableMetadata& m, const std::map<std::string, std::optional<int64_t>>& refused) {
  for (const auto& [name, asserted] : refused) {
    if (asserted && m.SnapshotById(*asserted) == nullptr) return true;
  }
  return false;
}

// The (partition-)statistics file objects of a metadata's raw list, by snapshot.
std::map<int64_t, std::string> StatisticsBySnapshot(const std::string& raw) {
  std::map<int64_t, std::string> out;
  Json arr = Json::parse(raw.empty() ? "[]" : raw, nullptr, false);
  if (!arr.is_array()) return out;
  for (const Json& entry : arr) {
    if (entry.is_object() && entry.contains("snapshot-id") && entry["snapshot-id"].is_number_integer()) {
      out[entry["snapshot-id"].get<int64_t>()] = entry.dump();
    }
  }
  return out;
}

// What a metadata version holds of the keys a commit's blind updates set or remove: the
// properties' values and the statistics files' objects (nullopt where absent).
using Projection = std::vector<std::optional<std::string>>;

Projection ProjectionOf(const Shape& shape, const TableMetadata& m) {
  Projection out;
  for (const std::string& key : shape.property_keys) {
    auto it = m.properties.find(key);
    out.push_back(it == m.properties.end() ? std::nullopt : std::optional<std::string>(it->second));
  }
  auto add = [&out](const std::set<int64_t>& ids, const std::string& raw) {
    if (ids.empty()) return;
    const std::map<int64_t, std::string> files = StatisticsBySnapshot(raw);
    for (int64_t id : ids) {
      auto it = files.find(id);
      out.push_back(it == files.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
  };
  add(shape.statistics, m.statistics_json);
  add(shape.partition_statistics, m.partition_statistics_json);
  return out;
}

// Whether no commit since the client's base changed what the commit's blind updates set or
// remove, not even for a while. The base is taken as the oldest version that could be it: the
// versions of the log are read back from the newest until one predates it; false where the log
// cannot tell (trimmed, or longer than is looked through).
Result<bool> BlindUpdatesStillApply(const Shape& shape, const TableMetadata& current,
                                    const std::map<std::string, std::optional<int64_t>>& refused,
                                    const MetadataReader& read_metadata) {
  if (shape.property_keys.empty() && shape.statistics.empty() && shape.partition_statistics.empty()) return true;
  // A conflict window is a few versions; a base further back than this is not looked for.
  constexpr size_t kMaxVersions = 128;
  std::vector<Projection> newer{ProjectionOf(shape, current)};  // newest first
  std::optional<size_t> base;  // into `newer`
  bool found = false;
  const auto& log = current.metadata_log;
  for (size_t i = log.size(), read = 0; i-- > 0 && read < kMaxVersions; ++read) {
    SKADE_ASSIGN_OR_RETURN(TableMetadata version, read_metadata(log[i].metadata_file));
    if (PredatesBase(version, refused)) {
      found = true;
      break;
    }
    newer.push_back(ProjectionOf(shape, version));
    if (CouldBeBase(version, refused)) base = newer.size() - 1;
    if (version.metadata_log.empty()) {  // the table's first version
      found = true;
      break;
    }
  }
  if (!found || !base) return false;
  for (size_t v = 0; v < *base; ++v) {
    if (newer[v] != newer[*base]) return false;
  }
  return true;
}

// Whether the manifest `m`, which the snapshot added, holds ADDED data entries only, and in a
// v3 table none with a first_row_id of its own (row ids are handed out again on the new head).
Result<bool> OnlyAdded(io::FileIO& io, const ManifestFile& m, int format_version) {
  if (m.content != iceberg::ManifestContent::kData) return false;
  if (m.existing_files_count && m.deleted_files_count && (*m.existing_files_count != 0 || *m.deleted_files_count != 0)) {
    return false;
  }
  if (format_version < 3 && m.existing_files_count && m.deleted_files_count) return true;
  ManifestFile raw = m;
  raw.first_row_id.reset();  // entries then show only the ids they carry themselves
  SKADE_ASSIGN_OR_RETURN(auto reader, iceberg::ManifestReader::Open(io, raw.manifest_path, raw));
  iceberg::ManifestEntry entry;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(bool more, reader->NextInto(&entry));
    if (!more) return true;
    if (entry.status != iceberg::ManifestEntryStatus::kAdded || entry.data_file.first_row_id) return false;
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

// The append of `commit` (shape.snapshot) re-based on `parent_id`, its manifest list written
// through `io`; nullopt when it is not provably an append of new files only.
Result<std::optional<Snapshot>> RebasedAppend(const Snapshot& appended, std::optional<int64_t> asserted_parent,
                                              std::optional<int64_t> parent_id, const TableMetadata& current,
                                              io::FileIO& io) {
  const std::optional<Snapshot> kNotSafe;
  if (current.SnapshotById(appended.snapshot_id) != nullptr) return kNotSafe;
  const Snapshot* parent = parent_id ? current.SnapshotById(*parent_id) : nullptr;
  if (parent_id && parent == nullptr) return kNotSafe;

  // The client's list: the asserted parent's manifests unchanged, plus ADDED-only data manifests.
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
    SKADE_ASSIGN_OR_RETURN(bool only_added, OnlyAdded(io, m, current.format_version));
    if (!only_added) return kNotSafe;
  }

  // The new list: the added manifests (sequence numbers and row ids assigned anew), then the head's.
  std::vector<ManifestFile> manifests = added;
  for (ManifestFile& m : manifests) {
    m.sequence_number = -1;
    m.min_sequence_number = -1;
    m.first_row_id.reset();
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
  if (current.format_version >= 3) {
    // Spec "Row Lineage": the snapshot's rows take ids from the table's next-row-id on.
    const int64_t next_row_id = current.next_row_id.value_or(0);
    SKADE_ASSIGN_OR_RETURN(int64_t assigned, iceberg::AssignFirstRowIds(manifests, next_row_id));
    rebased.first_row_id = next_row_id;
    rebased.added_rows = assigned;
  }
  SKADE_ASSIGN_OR_RETURN(std::string list,
                         iceberg::WriteManifestList(current.format_version, rebased.snapshot_id, parent_id,
                                                    rebased.sequence_number, manifests));
  rebased.manifest_list = io::JoinLocation(Folder(appended.manifest_list),
                                           "snap-" + std::to_string(rebased.snapshot_id) + "-rebased-" +
                                               Uuid::NewV7().ToString() + ".avro");
  SKADE_RETURN_IF_ERROR(io.CreateExclusive(rebased.manifest_list, list));
  return std::optional<Snapshot>(std::move(rebased));
}

}  // namespace

Result<std::optional<RebasedCommit>> RebaseCommit(const catalog::TableCommit& commit, const TableMetadata& current,
                                                  io::FileIO& io, const MetadataReader& read_metadata) {
  const std::optional<RebasedCommit> kNotSafe;
  if (current.format_version > 3) return kNotSafe;
  std::optional<Shape> shape = ShapeOf(commit);
  if (!shape) return kNotSafe;
  std::map<std::string, std::optional<int64_t>> refused;
  std::optional<int64_t> asserted_parent, parent_id;
  std::optional<std::vector<TableRequirement>> requirements =
      Reasserted(commit, *shape, current, &refused, &asserted_parent, &parent_id);
  if (!requirements) return kNotSafe;
  SKADE_ASSIGN_OR_RETURN(bool still_apply, BlindUpdatesStillApply(*shape, current, refused, read_metadata));
  if (!still_apply) return kNotSafe;

  RebasedCommit out;
  out.commit.ident = commit.ident;
  out.commit.requirements = std::move(*requirements);
  out.commit.updates = commit.updates;
  if (shape->snapshot != nullptr) {
    SKADE_ASSIGN_OR_RETURN(std::optional<Snapshot> rebased,
                           RebasedAppend(*shape->snapshot, asserted_parent, parent_id, current, io));
    if (!rebased) return kNotSafe;
    out.manifest_list = rebased->manifest_list;
    for (TableUpdate& u : out.commit.updates) {
      if (u.kind == TableUpdate::Kind::kAddSnapshot) u = TableUpdate::AddSnapshot(*rebased);
    }
  }
  return std::optional<RebasedCommit>(std::move(out));
}

}  // namespace skade::rest
