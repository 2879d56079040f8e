// Commit requirements and metadata updates: the checks and the rules for applying them come
// from the REST spec (components TableRequirement / TableUpdate) and the table spec ("Table
// Metadata", "Snapshots", "Snapshot References", "Sequence Numbers", "Row Lineage").
#include "skade/iceberg/table_update.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "skade/base/ascii.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/json_internal.h"
#include "skade/base/json_parse_internal.h"

namespace skade::iceberg {

using namespace json_internal;  // NOLINT: the shared serde helpers of this folder

namespace {

constexpr int kMaxFormatVersion = 3;
constexpr int kDefaultPreviousVersionsMax = 100;
constexpr std::string_view kMainBranch = "main";
constexpr std::string_view kPreviousVersionsMaxProperty = "write.metadata.previous-versions-max";

std::string OptionalIdText(const std::optional<int64_t>& id) {
  return id ? std::to_string(*id) : "null";
}

// ---- requirement names ----

struct RequirementInfo {
  TableRequirement::Kind kind;
  std::string_view type;
  std::string_view value_key;  // the integer member for the value-carrying kinds
};

constexpr RequirementInfo kRequirements[] = {
    {TableRequirement::Kind::kAssertCreate, "assert-create", ""},
    {TableRequirement::Kind::kAssertTableUuid, "assert-table-uuid", ""},
    {TableRequirement::Kind::kAssertRefSnapshotId, "assert-ref-snapshot-id", ""},
    {TableRequirement::Kind::kAssertLastAssignedFieldId, "assert-last-assigned-field-id",
     "last-assigned-field-id"},
    {TableRequirement::Kind::kAssertCurrentSchemaId, "assert-current-schema-id",
     "current-schema-id"},
    {TableRequirement::Kind::kAssertLastAssignedPartitionId, "assert-last-assigned-partition-id",
     "last-assigned-partition-id"},
    {TableRequirement::Kind::kAssertDefaultSpecId, "assert-default-spec-id", "default-spec-id"},
    {TableRequirement::Kind::kAssertDefaultSortOrderId, "assert-default-sort-order-id",
     "default-sort-order-id"},
};

const RequirementInfo& InfoOf(TableRequirement::Kind kind) {
  for (const RequirementInfo& info : kRequirements) {
    if (info.kind == kind) return info;
  }
  SKADE_CHECK(false);
  return kRequirements[0];
}

TableRequirement ValueRequirement(TableRequirement::Kind kind, int64_t value) {
  TableRequirement r;
  r.kind = kind;
  r.value = value;
  return r;
}

// ---- update names ----

struct UpdateInfo {
  TableUpdate::Kind kind;
  std::string_view action;
};

constexpr UpdateInfo kUpdates[] = {
    {TableUpdate::Kind::kAssignUuid, "assign-uuid"},
    {TableUpdate::Kind::kUpgradeFormatVersion, "upgrade-format-version"},
    {TableUpdate::Kind::kAddSchema, "add-schema"},
    {TableUpdate::Kind::kSetCurrentSchema, "set-current-schema"},
    {TableUpdate::Kind::kAddSpec, "add-spec"},
    {TableUpdate::Kind::kSetDefaultSpec, "set-default-spec"},
    {TableUpdate::Kind::kAddSortOrder, "add-sort-order"},
    {TableUpdate::Kind::kSetDefaultSortOrder, "set-default-sort-order"},
    {TableUpdate::Kind::kAddSnapshot, "add-snapshot"},
    {TableUpdate::Kind::kSetSnapshotRef, "set-snapshot-ref"},
    {TableUpdate::Kind::kRemoveSnapshots, "remove-snapshots"},
    {TableUpdate::Kind::kRemoveSnapshotRef, "remove-snapshot-ref"},
    {TableUpdate::Kind::kSetLocation, "set-location"},
    {TableUpdate::Kind::kSetProperties, "set-properties"},
    {TableUpdate::Kind::kRemoveProperties, "remove-properties"},
    {TableUpdate::Kind::kSetStatistics, "set-statistics"},
    {TableUpdate::Kind::kRemoveStatistics, "remove-statistics"},
    {TableUpdate::Kind::kSetPartitionStatistics, "set-partition-statistics"},
    {TableUpdate::Kind::kRemovePartitionStatistics, "remove-partition-statistics"},
    {TableUpdate::Kind::kRemoveSchemas, "remove-schemas"},
    {TableUpdate::Kind::kRemovePartitionSpecs, "remove-partition-specs"},
};

// Table updates the REST spec defines but skade does not apply yet.
constexpr std::string_view kUnsupportedTableActions[] = {
    "add-encryption-key", "remove-encryption-key",
};

std::string_view ActionOf(TableUpdate::Kind kind) {
  for (const UpdateInfo& info : kUpdates) {
    if (info.kind == kind) return info.action;
  }
  SKADE_CHECK(false);
  return "";
}

TableUpdate UpdateOf(TableUpdate::Kind kind) {
  TableUpdate u;
  u.kind = kind;
  return u;
}

// ---- applying updates ----

// Identity of spec objects ignoring their ids: two schemas (specs, orders) are the same when
// their JSON without the id is equal. Used to reuse an existing id, as Iceberg does.
std::string SchemaShape(const Schema& s) {
  Json j = SchemaJson(s);
  j.erase("schema-id");
  return Dump(j);
}

std::string SpecShape(const PartitionSpec& s) { return Dump(PartitionFieldsJson(s)); }

std::string OrderShape(const SortOrder& o) { return Dump(SortOrderJson(o)["fields"]); }

bool SameRef(const SnapshotRef& a, const SnapshotRef& b) {
  return a.snapshot_id == b.snapshot_id && a.type == b.type &&
         a.min_snapshots_to_keep == b.min_snapshots_to_keep &&
         a.max_snapshot_age_ms == b.max_snapshot_age_ms && a.max_ref_age_ms == b.max_ref_age_ms;
}

// A raw statistics / partition-statistics array as JSON (empty array when absent).
Result<Json> StatisticsArray(const std::string& raw, std::string_view what) {
  if (raw.empty()) return Json::array();
  SKADE_ASSIGN_OR_RETURN(Json arr, ParseJson(raw, what));
  if (!arr.is_array()) return Bad(std::string(what) + " is not an array");
  return arr;
}

std::optional<int64_t> StatisticsSnapshotId(const Json& entry) {
  if (!entry.is_object()) return std::nullopt;
  const Json* id = Find(entry, "snapshot-id");
  if (id == nullptr || !id->is_number_integer()) return std::nullopt;
  return id->get<int64_t>();
}

// Drops the entries of a raw statistics array whose snapshot-id is in `ids`; returns whether
// any was dropped.
Result<bool> DropStatistics(std::string& raw, const std::set<int64_t>& ids, std::string_view what) {
  if (raw.empty()) return false;
  SKADE_ASSIGN_OR_RETURN(Json arr, StatisticsArray(raw, what));
  Json kept = Json::array();
  bool dropped = false;
  for (const Json& entry : arr) {
    std::optional<int64_t> id = StatisticsSnapshotId(entry);
    if (id && ids.count(*id)) {
      dropped = true;
    } else {
      kept.push_back(entry);
    }
  }
  if (dropped) raw = Dump(kept);
  return dropped;
}

// The metadata being built plus what this commit added, for the "-1 = last added" ids and
// the snapshot-log timestamps.
struct Builder {
  TableMetadata m;
  int64_t now_ms = 0;
  std::optional<int> last_added_schema_id;
  std::optional<int> last_added_spec_id;
  std::optional<int> last_added_order_id;
  std::set<int64_t> added_snapshot_ids;
};

Status CheckSourceColumn(const TableMetadata& m, int source_id, std::string_view what) {
  SchemaPtr schema = m.CurrentSchema();
  if (schema != nullptr && schema->FindField(source_id) == nullptr) {
    return Bad(std::string(what) + ": source column " + std::to_string(source_id) +
               " is not in the current schema " + std::to_string(schema->schema_id()));
  }
  return Status::Ok();
}

Status AddSchema(Builder& b, const TableUpdate& u) {
  if (u.schema == nullptr) return Bad("add-schema: no schema");
  SKADE_RETURN_IF_ERROR(u.schema->Validate().WithContext("add-schema"));
  // last-column-id only grows (spec "Table Metadata Fields": the highest assigned column id).
  b.m.last_column_id = std::max({b.m.last_column_id, u.schema->HighestFieldId(),
                                 u.last_column_id.value_or(b.m.last_column_id)});
  const std::string shape = SchemaShape(*u.schema);
  int next_id = 0;
  for (const SchemaPtr& s : b.m.schemas) {
    if (SchemaShape(*s) == shape) {
      b.last_added_schema_id = s->schema_id();
      return Status::Ok();
    }
    next_id = std::max(next_id, s->schema_id() + 1);
  }
  int id = u.schema->schema_id();
  SchemaPtr schema = u.schema;
  if (id < 0 || b.m.SchemaById(id) != nullptr) {
    id = next_id;
    schema =
        std::make_shared<const Schema>(id, u.schema->fields(), u.schema->identifier_field_ids());
  }
  b.m.schemas.push_back(std::move(schema));
  b.last_added_schema_id = id;
  return Status::Ok();
}

Result<int> ResolveLastAdded(int id, const std::optional<int>& last_added, std::string_view what) {
  if (id != -1) return id;
  if (!last_added) {
    return Bad(std::string(what) + ": -1 (last added) but nothing was added in this commit");
  }
  return *last_added;
}

Status SetCurrentSchema(Builder& b, const TableUpdate& u) {
  SKADE_ASSIGN_OR_RETURN(
      int id, ResolveLastAdded(u.schema_id, b.last_added_schema_id, "set-current-schema"));
  if (b.m.SchemaById(id) == nullptr) {
    return Bad("set-current-schema: no schema with id " + std::to_string(id));
  }
  b.m.current_schema_id = id;
  return Status::Ok();
}

Status AddSpec(Builder& b, const TableUpdate& u) {
  if (u.spec == nullptr) return Bad("add-spec: no spec");
  for (const PartitionField& f : u.spec->fields()) {
    // A void transform may keep a dropped source column (spec "Partition Evolution").
    if (f.transform.kind() == TransformKind::kVoid) continue;
    SKADE_RETURN_IF_ERROR(CheckSourceColumn(b.m, f.source_id, "add-spec field '" + f.name + "'"));
  }
  b.m.last_partition_id = std::max(b.m.last_partition_id, u.spec->last_assigned_field_id());
  const std::string shape = SpecShape(*u.spec);
  int next_id = 0;
  for (const PartitionSpecPtr& s : b.m.partition_specs) {
    if (SpecShape(*s) == shape) {
      b.last_added_spec_id = s->spec_id();
      return Status::Ok();
    }
    next_id = std::max(next_id, s->spec_id() + 1);
  }
  int id = u.spec->spec_id();
  PartitionSpecPtr spec = u.spec;
  if (id < 0 || b.m.SpecById(id) != nullptr) {
    id = next_id;
    spec = std::make_shared<const PartitionSpec>(id, u.spec->fields());
  }
  b.m.partition_specs.push_back(std::move(spec));
  b.last_added_spec_id = id;
  return Status::Ok();
}

Status SetDefaultSpec(Builder& b, const TableUpdate& u) {
  SKADE_ASSIGN_OR_RETURN(int id,
                         ResolveLastAdded(u.spec_id, b.last_added_spec_id, "set-default-spec"));
  if (b.m.SpecById(id) == nullptr) {
    return Bad("set-default-spec: no partition spec with id " + std::to_string(id));
  }
  b.m.default_spec_id = id;
  return Status::Ok();
}

Status AddSortOrder(Builder& b, const TableUpdate& u) {
  SortOrder order = u.sort_order;
  for (const SortField& f : order.fields) {
    SKADE_RETURN_IF_ERROR(CheckSourceColumn(b.m, f.source_id, "add-sort-order"));
  }
  // Order id 0 is reserved for the unsorted order (spec "Sorting").
  if (order.fields.empty()) order.order_id = 0;
  const std::string shape = OrderShape(order);
  int next_id = 1;
  for (const SortOrder& o : b.m.sort_orders) {
    if (OrderShape(o) == shape) {
      b.last_added_order_id = o.order_id;
      return Status::Ok();
    }
    next_id = std::max(next_id, o.order_id + 1);
  }
  if (!order.fields.empty() &&
      (order.order_id < 1 || b.m.SortOrderById(order.order_id) != nullptr)) {
    order.order_id = next_id;
  }
  b.last_added_order_id = order.order_id;
  b.m.sort_orders.push_back(std::move(order));
  return Status::Ok();
}

Status SetDefaultSortOrder(Builder& b, const TableUpdate& u) {
  SKADE_ASSIGN_OR_RETURN(
      int id, ResolveLastAdded(u.sort_order_id, b.last_added_order_id, "set-default-sort-order"));
  if (b.m.SortOrderById(id) == nullptr) {
    return Bad("set-default-sort-order: no sort order with id " + std::to_string(id));
  }
  b.m.default_sort_order_id = id;
  return Status::Ok();
}

Status AddSnapshot(Builder& b, const TableUpdate& u) {
  const Snapshot& s = u.snapshot;
  const std::string ctx = "add-snapshot " + std::to_string(s.snapshot_id);
  if (b.m.SnapshotById(s.snapshot_id) != nullptr) return Bad(ctx + ": snapshot already exists");
  if (s.parent_snapshot_id && b.m.SnapshotById(*s.parent_snapshot_id) == nullptr) {
    return Bad(ctx + ": parent snapshot " + std::to_string(*s.parent_snapshot_id) +
               " does not exist");
  }
  if (s.schema_id && b.m.SchemaById(*s.schema_id) == nullptr) {
    return Bad(ctx + ": schema " + std::to_string(*s.schema_id) + " does not exist");
  }
  if (b.m.format_version >= 2) {
    // Spec "Sequence Numbers": each new snapshot gets a sequence number higher than the
    // table's last-sequence-number, which then becomes it. A snapshot without a parent starts
    // a new history (a replace transaction: REPLACE TABLE, CREATE OR REPLACE): it was numbered
    // against the table the replace began from, and keeps no file of the commits that landed
    // since, so it is exempt, as in Java's TableMetadata.Builder.addSnapshot, PyIceberg and
    // iceberg-rust. last-sequence-number never goes back.
    if (s.parent_snapshot_id && s.sequence_number <= b.m.last_sequence_number) {
      return Bad(ctx + ": sequence number " + std::to_string(s.sequence_number) +
                 " is not above last-sequence-number " + std::to_string(b.m.last_sequence_number));
    }
    b.m.last_sequence_number = std::max(b.m.last_sequence_number, s.sequence_number);
  }
  if (b.m.format_version >= 3 && s.first_row_id) {
    // Spec "Row Lineage": a snapshot's first-row-id starts at the table's next-row-id, which
    // then advances by the snapshot's added-rows.
    int64_t next_row_id = b.m.next_row_id.value_or(0);
    if (*s.first_row_id < next_row_id) {
      return Bad(ctx + ": first-row-id " + std::to_string(*s.first_row_id) +
                 " is behind next-row-id " + std::to_string(next_row_id));
    }
    b.m.next_row_id = next_row_id + s.added_rows.value_or(0);
  }
  b.m.snapshots.push_back(s);
  b.added_snapshot_ids.insert(s.snapshot_id);
  return Status::Ok();
}

Status SetSnapshotRef(Builder& b, const TableUpdate& u) {
  const std::string ctx = "set-snapshot-ref '" + u.ref_name + "'";
  if (u.ref_name.empty()) return Bad("set-snapshot-ref: empty ref name");
  const Snapshot* snapshot = b.m.SnapshotById(u.ref.snapshot_id);
  if (snapshot == nullptr) {
    return Bad(ctx + ": snapshot " + std::to_string(u.ref.snapshot_id) + " does not exist");
  }
  if (u.ref_name == kMainBranch && u.ref.type != RefType::kBranch) {
    return Bad(ctx + ": main must be a branch");
  }
  auto it = b.m.refs.find(u.ref_name);
  if (it != b.m.refs.end() && SameRef(it->second, u.ref)) return Status::Ok();
  b.m.refs[u.ref_name] = u.ref;
  if (u.ref_name == kMainBranch) {
    // Spec "Table Metadata Fields", snapshot-log: an entry each time the current snapshot
    // changes. A snapshot added by this commit became current when it was written; moving main
    // to an older snapshot (rollback) happens now.
    int64_t timestamp_ms =
        b.added_snapshot_ids.count(snapshot->snapshot_id) ? snapshot->timestamp_ms : b.now_ms;
    b.m.current_snapshot_id = u.ref.snapshot_id;
    b.m.snapshot_log.push_back({timestamp_ms, u.ref.snapshot_id});
  }
  return Status::Ok();
}

Status RemoveSnapshots(Builder& b, const TableUpdate& u) {
  const std::set<int64_t> ids(u.snapshot_ids.begin(), u.snapshot_ids.end());
  b.m.snapshots.EraseIf([&](const Snapshot& s) { return ids.count(s.snapshot_id) > 0; });
  // A ref cannot outlive its snapshot.
  for (auto it = b.m.refs.begin(); it != b.m.refs.end();) {
    if (ids.count(it->second.snapshot_id)) {
      it = b.m.refs.erase(it);
    } else {
      ++it;
    }
  }
  if (b.m.current_snapshot_id && ids.count(*b.m.current_snapshot_id)) {
    b.m.current_snapshot_id.reset();
  }
  // Spec "Table Metadata Fields", snapshot-log: "When snapshots are expired from the list of
  // valid snapshots, all entries before a snapshot that has expired should be removed."
  auto& log = b.m.snapshot_log;
  auto last_expired = log.end();
  for (auto it = log.begin(); it != log.end(); ++it) {
    if (b.m.SnapshotById(it->snapshot_id) == nullptr) last_expired = it;
  }
  if (last_expired != log.end()) log.erase(log.begin(), last_expired + 1);
  SKADE_RETURN_IF_ERROR(DropStatistics(b.m.statistics_json, ids, "statistics"));
  SKADE_RETURN_IF_ERROR(DropStatistics(b.m.partition_statistics_json, ids, "partition-statistics"));
  return Status::Ok();
}

Status RemoveSnapshotRef(Builder& b, const TableUpdate& u) {
  b.m.refs.erase(u.ref_name);
  if (u.ref_name == kMainBranch) b.m.current_snapshot_id.reset();
  return Status::Ok();
}

// REST spec RemoveSchemasUpdate / RemovePartitionSpecsUpdate (what a client's "remove unused"
// found): ids the table does not have are ignored; the current schema and the default spec stay.
Status RemoveSchemas(Builder& b, const TableUpdate& u) {
  const std::set<int> ids(u.ids.begin(), u.ids.end());
  if (ids.count(b.m.current_schema_id) != 0) {
    return Bad("remove-schemas: cannot remove the current schema " + std::to_string(b.m.current_schema_id));
  }
  std::erase_if(b.m.schemas, [&](const SchemaPtr& s) { return ids.count(s->schema_id()) != 0; });
  if (b.last_added_schema_id && ids.count(*b.last_added_schema_id) != 0) b.last_added_schema_id.reset();
  return Status::Ok();
}

Status RemovePartitionSpecs(Builder& b, const TableUpdate& u) {
  const std::set<int> ids(u.ids.begin(), u.ids.end());
  if (ids.count(b.m.default_spec_id) != 0) {
    return Bad("remove-partition-specs: cannot remove the default partition spec " + std::to_string(b.m.default_spec_id));
  }
  std::erase_if(b.m.partition_specs, [&](const PartitionSpecPtr& s) { return ids.count(s->spec_id()) != 0; });
  if (b.last_added_spec_id && ids.count(*b.last_added_spec_id) != 0) b.last_added_spec_id.reset();
  return Status::Ok();
}

Status AssignUuid(Builder& b, const TableUpdate& u) {
  if (u.uuid.empty()) return Bad("assign-uuid: empty uuid");
  // The REST spec: re-assigning the UUID of a table that has one is not safe.
  if (!b.m.table_uuid.empty() && !EqualsIgnoreAsciiCase(b.m.table_uuid, u.uuid)) {
    return Bad("assign-uuid: the table already has uuid " + b.m.table_uuid + ", not " + u.uuid);
  }
  b.m.table_uuid = u.uuid;
  return Status::Ok();
}

Status UpgradeFormatVersion(Builder& b, const TableUpdate& u) {
  if (u.format_version < b.m.format_version) {
    return Bad("upgrade-format-version: cannot downgrade from v" +
               std::to_string(b.m.format_version) + " to v" + std::to_string(u.format_version));
  }
  if (u.format_version > kMaxFormatVersion) {
    return Bad("upgrade-format-version: unsupported format version " +
               std::to_string(u.format_version));
  }
  b.m.format_version = u.format_version;
  // Spec "Row Lineage": v3 tables track next-row-id, starting at 0 on upgrade.
  if (b.m.format_version >= 3 && !b.m.next_row_id) b.m.next_row_id = 0;
  return Status::Ok();
}

// Spec "Table Statistics" and "Partition Statistics": one file per snapshot in the list `raw`
// (statistics or partition-statistics), a new one replacing that of the same snapshot.
Status ReplaceStatisticsFile(std::string& raw, Json stats, int64_t snapshot_id, std::string_view what) {
  SKADE_ASSIGN_OR_RETURN(Json arr, StatisticsArray(raw, what));
  Json out = Json::array();
  for (const Json& entry : arr) {
    if (StatisticsSnapshotId(entry) != snapshot_id) out.push_back(entry);
  }
  out.push_back(std::move(stats));
  raw = Dump(out);
  return Status::Ok();
}

Status SetPartitionStatistics(Builder& b, const TableUpdate& u) {
  SKADE_ASSIGN_OR_RETURN(Json stats, ParseJson(u.raw_json, "set-partition-statistics partition-statistics"));
  if (!stats.is_object()) return Bad("set-partition-statistics: partition-statistics is not an object");
  const std::optional<int64_t> snapshot_id = StatisticsSnapshotId(stats);
  if (!snapshot_id) return Bad("set-partition-statistics: partition-statistics has no snapshot-id");
  return ReplaceStatisticsFile(b.m.partition_statistics_json, std::move(stats), *snapshot_id, "partition-statistics");
}

Status SetStatistics(Builder& b, const TableUpdate& u) {
  SKADE_ASSIGN_OR_RETURN(Json stats, ParseJson(u.raw_json, "set-statistics statistics"));
  if (!stats.is_object()) return Bad("set-statistics: statistics is not an object");
  // The statistics file names its snapshot; the update's own snapshot-id is the deprecated
  // duplicate (REST spec SetStatisticsUpdate).
  int64_t snapshot_id = StatisticsSnapshotId(stats).value_or(u.snapshot_id);
  if (Find(stats, "snapshot-id") == nullptr) stats["snapshot-id"] = snapshot_id;
  return ReplaceStatisticsFile(b.m.statistics_json, std::move(stats), snapshot_id, "statistics");
}

Status Apply(Builder& b, const TableUpdate& u) {
  switch (u.kind) {
    case TableUpdate::Kind::kAssignUuid:
      return AssignUuid(b, u);
    case TableUpdate::Kind::kUpgradeFormatVersion:
      return UpgradeFormatVersion(b, u);
    case TableUpdate::Kind::kAddSchema:
      return AddSchema(b, u);
    case TableUpdate::Kind::kSetCurrentSchema:
      return SetCurrentSchema(b, u);
    case TableUpdate::Kind::kAddSpec:
      return AddSpec(b, u);
    case TableUpdate::Kind::kSetDefaultSpec:
      return SetDefaultSpec(b, u);
    case TableUpdate::Kind::kAddSortOrder:
      return AddSortOrder(b, u);
    case TableUpdate::Kind::kSetDefaultSortOrder:
      return SetDefaultSortOrder(b, u);
    case TableUpdate::Kind::kAddSnapshot:
      return AddSnapshot(b, u);
    case TableUpdate::Kind::kSetSnapshotRef:
      return SetSnapshotRef(b, u);
    case TableUpdate::Kind::kRemoveSnapshots:
      return RemoveSnapshots(b, u);
    case TableUpdate::Kind::kRemoveSnapshotRef:
      return RemoveSnapshotRef(b, u);
    case TableUpdate::Kind::kSetLocation:
      if (u.location.empty()) return Bad("set-location: empty location");
      b.m.location = u.location;
      return Status::Ok();
    case TableUpdate::Kind::kSetProperties:
      for (const auto& [k, v] : u.updates) b.m.properties[k] = v;
      return Status::Ok();
    case TableUpdate::Kind::kRemoveProperties:
      for (const std::string& k : u.removals) b.m.properties.erase(k);
      return Status::Ok();
    case TableUpdate::Kind::kSetStatistics:
      return SetStatistics(b, u);
    case TableUpdate::Kind::kRemoveStatistics:
      return DropStatistics(b.m.statistics_json, {u.snapshot_id}, "statistics").status();
    case TableUpdate::Kind::kSetPartitionStatistics:
      return SetPartitionStatistics(b, u);
    case TableUpdate::Kind::kRemovePartitionStatistics:
      return DropStatistics(b.m.partition_statistics_json, {u.snapshot_id}, "partition-statistics").status();
    case TableUpdate::Kind::kRemoveSchemas:
      return RemoveSchemas(b, u);
    case TableUpdate::Kind::kRemovePartitionSpecs:
      return RemovePartitionSpecs(b, u);
  }
  return Bad("unknown table update kind");
}

// The invariants a metadata file must hold (spec "Table Metadata Fields").
Status ValidateMetadata(const TableMetadata& m) {
  if (m.CurrentSchema() == nullptr) {
    return Bad("current-schema-id " + std::to_string(m.current_schema_id) + " is not a schema");
  }
  if (m.DefaultSpec() == nullptr) {
    return Bad("default-spec-id " + std::to_string(m.default_spec_id) + " is not a partition spec");
  }
  if (m.SortOrderById(m.default_sort_order_id) == nullptr) {
    return Bad("default-sort-order-id " + std::to_string(m.default_sort_order_id) +
               " is not a sort order");
  }
  if (m.current_snapshot_id && m.CurrentSnapshot() == nullptr) {
    return Bad("current-snapshot-id " + std::to_string(*m.current_snapshot_id) +
               " is not a snapshot");
  }
  for (const auto& [name, ref] : m.refs) {
    if (m.SnapshotById(ref.snapshot_id) == nullptr) {
      return Bad("ref '" + name + "' points at missing snapshot " +
                 std::to_string(ref.snapshot_id));
    }
  }
  return Status::Ok();
}

int PreviousVersionsMax(const TableMetadata& m) {
  std::string text = m.Property(kPreviousVersionsMaxProperty);
  int value = kDefaultPreviousVersionsMax;
  if (!text.empty()) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) value = kDefaultPreviousVersionsMax;
  }
  // At least the file this version replaces is kept, as Iceberg does.
  return std::max(1, value);
}

// Leading decimal digits of `text` as a version, if any.
std::optional<int64_t> LeadingVersion(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && std::isdigit(static_cast<unsigned char>(text[n]))) ++n;
  if (n == 0) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, v);
  if (ec != std::errc()) return std::nullopt;
  return v;
}

// ---- JSON ----

Result<std::vector<int64_t>> GetLongArray(const Json& j, std::string_view key,
                                          std::string_view ctx) {
  SKADE_ASSIGN_OR_RETURN(const Json* arr, GetArray(j, key, ctx, true));
  std::vector<int64_t> out;
  for (const Json& v : *arr) {
    if (!v.is_number_integer())
      return Bad(std::string(ctx) + ": '" + std::string(key) + "' must hold integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

const Json* GetObject(const Json& j, std::string_view key) {
  const Json* v = Find(j, key);
  return v != nullptr && v->is_object() ? v : nullptr;
}

Result<PartitionSpecPtr> ParseSpecObject(const Json& j, std::string_view ctx) {
  if (!j.is_object()) return Bad(std::string(ctx) + ": spec is not an object");
  // spec-id is read-only in the REST spec: -1 asks ApplyUpdates to assign one.
  int spec_id = -1;
  if (Find(j, "spec-id") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(spec_id, GetInt(j, "spec-id", ctx));
  }
  SKADE_ASSIGN_OR_RETURN(const Json* fields, GetArray(j, "fields", ctx, true));
  SKADE_ASSIGN_OR_RETURN(auto pfields, ParsePartitionFields(*fields, ctx));
  return PartitionSpecPtr(std::make_shared<const PartitionSpec>(spec_id, std::move(pfields)));
}

Result<TableUpdate> ParseUpdateObject(const Json& j) {
  if (!j.is_object()) return Bad("table update is not a JSON object");
  SKADE_ASSIGN_OR_RETURN(std::string action, GetString(j, "action", "table update"));
  const UpdateInfo* info = nullptr;
  for (const UpdateInfo& i : kUpdates) {
    if (i.action == action) info = &i;
  }
  if (info == nullptr) {
    for (std::string_view a : kUnsupportedTableActions) {
      if (a == action)
        return Status::NotImplemented("table update '" + action + "' is not supported");
    }
    return Bad("unknown table update action '" + action + "'");
  }
  const std::string ctx = action;
  TableUpdate u = UpdateOf(info->kind);
  switch (u.kind) {
    case TableUpdate::Kind::kAssignUuid: {
      SKADE_ASSIGN_OR_RETURN(u.uuid, GetString(j, "uuid", ctx));
      break;
    }
    case TableUpdate::Kind::kUpgradeFormatVersion: {
      SKADE_ASSIGN_OR_RETURN(u.format_version, GetInt(j, "format-version", ctx));
      break;
    }
    case TableUpdate::Kind::kAddSchema: {
      const Json* s = Find(j, "schema");
      if (s == nullptr) return Bad(ctx + ": missing 'schema'");
      // schema-id is read-only in the REST spec: -1 asks ApplyUpdates to assign one.
      SKADE_ASSIGN_OR_RETURN(u.schema, ParseSchema(*s, ctx, -1));
      SKADE_ASSIGN_OR_RETURN(auto last, GetOptLong(j, "last-column-id", ctx));
      if (last) {
        if (*last < 0 || *last > INT32_MAX) return Bad(ctx + ": 'last-column-id' out of range");
        u.last_column_id = static_cast<int>(*last);
      }
      break;
    }
    case TableUpdate::Kind::kSetCurrentSchema: {
      SKADE_ASSIGN_OR_RETURN(u.schema_id, GetInt(j, "schema-id", ctx));
      break;
    }
    case TableUpdate::Kind::kAddSpec: {
      const Json* s = Find(j, "spec");
      if (s == nullptr) return Bad(ctx + ": missing 'spec'");
      SKADE_ASSIGN_OR_RETURN(u.spec, ParseSpecObject(*s, ctx));
      break;
    }
    case TableUpdate::Kind::kSetDefaultSpec: {
      SKADE_ASSIGN_OR_RETURN(u.spec_id, GetInt(j, "spec-id", ctx));
      break;
    }
    case TableUpdate::Kind::kAddSortOrder: {
      const Json* o = Find(j, "sort-order");
      if (o == nullptr) return Bad(ctx + ": missing 'sort-order'");
      SKADE_ASSIGN_OR_RETURN(u.sort_order, ParseSortOrder(*o));
      break;
    }
    case TableUpdate::Kind::kSetDefaultSortOrder: {
      SKADE_ASSIGN_OR_RETURN(u.sort_order_id, GetInt(j, "sort-order-id", ctx));
      break;
    }
    case TableUpdate::Kind::kAddSnapshot: {
      const Json* s = Find(j, "snapshot");
      if (s == nullptr) return Bad(ctx + ": missing 'snapshot'");
      SKADE_ASSIGN_OR_RETURN(u.snapshot, ParseSnapshot(*s));
      break;
    }
    case TableUpdate::Kind::kSetSnapshotRef: {
      // The ref's fields sit beside ref-name (SetSnapshotRefUpdate is allOf SnapshotReference).
      SKADE_ASSIGN_OR_RETURN(u.ref_name, GetString(j, "ref-name", ctx));
      SKADE_ASSIGN_OR_RETURN(u.ref, ParseRef(j, u.ref_name));
      break;
    }
    case TableUpdate::Kind::kRemoveSnapshots: {
      SKADE_ASSIGN_OR_RETURN(u.snapshot_ids, GetLongArray(j, "snapshot-ids", ctx));
      break;
    }
    case TableUpdate::Kind::kRemoveSnapshotRef: {
      SKADE_ASSIGN_OR_RETURN(u.ref_name, GetString(j, "ref-name", ctx));
      break;
    }
    case TableUpdate::Kind::kSetLocation: {
      SKADE_ASSIGN_OR_RETURN(u.location, GetString(j, "location", ctx));
      break;
    }
    case TableUpdate::Kind::kSetProperties: {
      const Json* updates = Find(j, "updates");
      if (updates == nullptr) return Bad(ctx + ": missing 'updates'");
      if (!updates->is_object()) return Bad(ctx + ": 'updates' is not an object");
      for (auto it = updates->begin(); it != updates->end(); ++it) {
        if (!it->is_string()) return Bad(ctx + ": property '" + it.key() + "' is not a string");
        u.updates[it.key()] = it->get<std::string>();
      }
      break;
    }
    case TableUpdate::Kind::kRemoveProperties: {
      SKADE_ASSIGN_OR_RETURN(const Json* removals, GetArray(j, "removals", ctx, true));
      for (const Json& v : *removals) {
        if (!v.is_string()) return Bad(ctx + ": 'removals' must hold strings");
        u.removals.push_back(v.get<std::string>());
      }
      break;
    }
    case TableUpdate::Kind::kSetStatistics: {
      const Json* stats = GetObject(j, "statistics");
      if (stats == nullptr) return Bad(ctx + ": missing or non-object 'statistics'");
      SKADE_ASSIGN_OR_RETURN(auto own_id, GetOptLong(*stats, "snapshot-id", ctx + " statistics"));
      SKADE_ASSIGN_OR_RETURN(auto update_id, GetOptLong(j, "snapshot-id", ctx));
      if (!own_id && !update_id) return Bad(ctx + ": missing 'snapshot-id'");
      if (own_id && update_id && *own_id != *update_id) {
        return Bad(ctx + ": snapshot-id " + std::to_string(*update_id) +
                   " differs from the statistics' " + std::to_string(*own_id));
      }
      u.snapshot_id = own_id ? *own_id : *update_id;
      u.raw_json = Dump(*stats);
      break;
    }
    case TableUpdate::Kind::kRemoveStatistics: {
      SKADE_ASSIGN_OR_RETURN(u.snapshot_id, GetLong(j, "snapshot-id", ctx));
      break;
    }
    case TableUpdate::Kind::kSetPartitionStatistics: {
      const Json* stats = GetObject(j, "partition-statistics");
      if (stats == nullptr) return Bad(ctx + ": missing or non-object 'partition-statistics'");
      SKADE_ASSIGN_OR_RETURN(u.snapshot_id, GetLong(*stats, "snapshot-id", ctx + " partition-statistics"));
      SKADE_RETURN_IF_ERROR(GetString(*stats, "statistics-path", ctx + " partition-statistics").status());
      u.raw_json = Dump(*stats);
      break;
    }
    case TableUpdate::Kind::kRemovePartitionStatistics: {
      SKADE_ASSIGN_OR_RETURN(u.snapshot_id, GetLong(j, "snapshot-id", ctx));
      break;
    }
    case TableUpdate::Kind::kRemoveSchemas:
    case TableUpdate::Kind::kRemovePartitionSpecs: {
      const char* key = u.kind == TableUpdate::Kind::kRemoveSchemas ? "schema-ids" : "spec-ids";
      SKADE_ASSIGN_OR_RETURN(std::vector<int64_t> ids, GetLongArray(j, key, ctx));
      for (int64_t id : ids) {
        if (id < 0 || id > INT32_MAX) return Bad(ctx + ": id " + std::to_string(id) + " out of range");
        u.ids.push_back(static_cast<int>(id));
      }
      break;
    }
  }
  return u;
}

}  // namespace

// ---- TableRequirement ----

TableRequirement TableRequirement::AssertCreate() { return TableRequirement{}; }

TableRequirement TableRequirement::AssertTableUuid(std::string uuid) {
  TableRequirement r;
  r.kind = Kind::kAssertTableUuid;
  r.uuid = std::move(uuid);
  return r;
}

TableRequirement TableRequirement::AssertRefSnapshotId(std::string ref,
                                                       std::optional<int64_t> snapshot_id) {
  TableRequirement r;
  r.kind = Kind::kAssertRefSnapshotId;
  r.ref = std::move(ref);
  r.snapshot_id = snapshot_id;
  return r;
}

TableRequirement TableRequirement::AssertCurrentSchemaId(int schema_id) {
  return ValueRequirement(Kind::kAssertCurrentSchemaId, schema_id);
}

TableRequirement TableRequirement::AssertLastAssignedFieldId(int field_id) {
  return ValueRequirement(Kind::kAssertLastAssignedFieldId, field_id);
}

TableRequirement TableRequirement::AssertDefaultSpecId(int spec_id) {
  return ValueRequirement(Kind::kAssertDefaultSpecId, spec_id);
}

TableRequirement TableRequirement::AssertLastAssignedPartitionId(int partition_id) {
  return ValueRequirement(Kind::kAssertLastAssignedPartitionId, partition_id);
}

TableRequirement TableRequirement::AssertDefaultSortOrderId(int order_id) {
  return ValueRequirement(Kind::kAssertDefaultSortOrderId, order_id);
}

Status TableRequirement::Check(const TableMetadata* current) const {
  const RequirementInfo& info = InfoOf(kind);
  const std::string name(info.type);
  if (kind == Kind::kAssertCreate) {
    if (current != nullptr) return Status::Conflict(name + " failed: the table already exists");
    return Status::Ok();
  }
  if (current == nullptr) return Status::NotFound(name + " failed: the table does not exist");
  int64_t actual = 0;
  switch (kind) {
    case Kind::kAssertCreate:
      return Status::Ok();
    case Kind::kAssertTableUuid:
      // UUIDs compare case-insensitively (their hex text may be written in either case).
      if (!EqualsIgnoreAsciiCase(uuid, current->table_uuid)) {
        return Status::Conflict(name + " failed: expected uuid " + uuid + ", table has " +
                                (current->table_uuid.empty() ? "none" : current->table_uuid));
      }
      return Status::Ok();
    case Kind::kAssertRefSnapshotId: {
      // REST spec AssertRefSnapshotId: the ref must point at snapshot-id; a null snapshot-id
      // means the ref must not exist.
      auto it = current->refs.find(ref);
      std::optional<int64_t> found;
      if (it != current->refs.end()) found = it->second.snapshot_id;
      if (found != snapshot_id) {
        return Status::Conflict(name + " failed for ref '" + ref + "': expected snapshot-id " +
                                OptionalIdText(snapshot_id) + ", table has " +
                                OptionalIdText(found));
      }
      return Status::Ok();
    }
    case Kind::kAssertLastAssignedFieldId:
      actual = current->last_column_id;
      break;
    case Kind::kAssertCurrentSchemaId:
      actual = current->current_schema_id;
      break;
    case Kind::kAssertLastAssignedPartitionId:
      actual = current->last_partition_id;
      break;
    case Kind::kAssertDefaultSpecId:
      actual = current->default_spec_id;
      break;
    case Kind::kAssertDefaultSortOrderId:
      actual = current->default_sort_order_id;
      break;
  }
  if (actual != value) {
    return Status::Conflict(name + " failed: expected " + std::string(info.value_key) + " " +
                            std::to_string(value) + ", table has " + std::to_string(actual));
  }
  return Status::Ok();
}

// ---- TableUpdate factories ----

TableUpdate TableUpdate::AddSnapshot(Snapshot snapshot) {
  TableUpdate u = UpdateOf(Kind::kAddSnapshot);
  u.snapshot = std::move(snapshot);
  return u;
}

TableUpdate TableUpdate::SetBranch(std::string name, int64_t snapshot_id) {
  TableUpdate u = UpdateOf(Kind::kSetSnapshotRef);
  u.ref_name = std::move(name);
  u.ref.snapshot_id = snapshot_id;
  u.ref.type = RefType::kBranch;
  return u;
}

TableUpdate TableUpdate::SetTag(std::string name, int64_t snapshot_id) {
  TableUpdate u = UpdateOf(Kind::kSetSnapshotRef);
  u.ref_name = std::move(name);
  u.ref.snapshot_id = snapshot_id;
  u.ref.type = RefType::kTag;
  return u;
}

TableUpdate TableUpdate::RemoveRef(std::string name) {
  TableUpdate u = UpdateOf(Kind::kRemoveSnapshotRef);
  u.ref_name = std::move(name);
  return u;
}

TableUpdate TableUpdate::RemoveSnapshots(std::vector<int64_t> ids) {
  TableUpdate u = UpdateOf(Kind::kRemoveSnapshots);
  u.snapshot_ids = std::move(ids);
  return u;
}

TableUpdate TableUpdate::AddSchema(SchemaPtr schema) {
  TableUpdate u = UpdateOf(Kind::kAddSchema);
  u.schema = std::move(schema);
  return u;
}

TableUpdate TableUpdate::SetCurrentSchema(int schema_id) {
  TableUpdate u = UpdateOf(Kind::kSetCurrentSchema);
  u.schema_id = schema_id;
  return u;
}

TableUpdate TableUpdate::AddSpec(PartitionSpecPtr spec) {
  TableUpdate u = UpdateOf(Kind::kAddSpec);
  u.spec = std::move(spec);
  return u;
}

TableUpdate TableUpdate::SetDefaultSpec(int spec_id) {
  TableUpdate u = UpdateOf(Kind::kSetDefaultSpec);
  u.spec_id = spec_id;
  return u;
}

TableUpdate TableUpdate::AddSortOrder(SortOrder order) {
  TableUpdate u = UpdateOf(Kind::kAddSortOrder);
  u.sort_order = std::move(order);
  return u;
}

TableUpdate TableUpdate::SetDefaultSortOrder(int order_id) {
  TableUpdate u = UpdateOf(Kind::kSetDefaultSortOrder);
  u.sort_order_id = order_id;
  return u;
}

TableUpdate TableUpdate::SetProperties(std::map<std::string, std::string> updates) {
  TableUpdate u = UpdateOf(Kind::kSetProperties);
  u.updates = std::move(updates);
  return u;
}

TableUpdate TableUpdate::RemoveProperties(std::vector<std::string> removals) {
  TableUpdate u = UpdateOf(Kind::kRemoveProperties);
  u.removals = std::move(removals);
  return u;
}

TableUpdate TableUpdate::SetLocation(std::string location) {
  TableUpdate u = UpdateOf(Kind::kSetLocation);
  u.location = std::move(location);
  return u;
}

TableUpdate TableUpdate::AssignUuid(std::string uuid) {
  TableUpdate u = UpdateOf(Kind::kAssignUuid);
  u.uuid = std::move(uuid);
  return u;
}

TableUpdate TableUpdate::UpgradeFormatVersion(int version) {
  TableUpdate u = UpdateOf(Kind::kUpgradeFormatVersion);
  u.format_version = version;
  return u;
}

TableUpdate TableUpdate::SetStatistics(int64_t snapshot_id, std::string statistics_json) {
  TableUpdate u = UpdateOf(Kind::kSetStatistics);
  u.snapshot_id = snapshot_id;
  u.raw_json = std::move(statistics_json);
  return u;
}

TableUpdate TableUpdate::RemoveStatistics(int64_t snapshot_id) {
  TableUpdate u = UpdateOf(Kind::kRemoveStatistics);
  u.snapshot_id = snapshot_id;
  return u;
}

// ---- applying ----

Result<TableMetadata> ApplyUpdates(const TableMetadata& base, std::string_view base_location,
                                   const std::vector<TableUpdate>& updates, int64_t now_ms) {
  Builder b;
  b.m = base;
  b.now_ms = now_ms;
  for (size_t i = 0; i < updates.size(); ++i) {
    SKADE_RETURN_IF_ERROR(Apply(b, updates[i])
                              .WithContext("update " + std::to_string(i) + " (" +
                                           std::string(ActionOf(updates[i].kind)) + ")"));
  }
  TableMetadata& m = b.m;
  // Spec "Table Metadata Fields", metadata-log: the file this version replaces, trimmed to
  // write.metadata.previous-versions-max entries (spec "Table Properties").
  if (!base_location.empty()) {
    m.metadata_log.push_back({base.last_updated_ms, std::string(base_location)});
  }
  const size_t keep = static_cast<size_t>(PreviousVersionsMax(m));
  if (m.metadata_log.size() > keep) {
    m.metadata_log.erase(m.metadata_log.begin(),
                         m.metadata_log.end() - static_cast<std::ptrdiff_t>(keep));
  }
  m.last_updated_ms = now_ms;
  SKADE_RETURN_IF_ERROR(ValidateMetadata(m).WithContext("updated table metadata"));
  return std::move(b.m);
}

Result<TableMetadata> NewTableMetadata(SchemaPtr schema, PartitionSpecPtr spec, SortOrder order,
                                       std::string location,
                                       std::map<std::string, std::string> properties,
                                       int64_t now_ms) {
  if (schema == nullptr) return Bad("new table: no schema");
  if (location.empty()) return Bad("new table: empty location");
  SKADE_RETURN_IF_ERROR(schema->Validate().WithContext("new table schema"));
  TableMetadata m;
  // The reserved table property format-version picks the version and is not stored (spec
  // "Reserved table properties").
  m.format_version = 2;
  if (auto it = properties.find("format-version"); it != properties.end()) {
    int version = 0;
    const std::string& text = it->second;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (ec != std::errc() || ptr != text.data() + text.size() || version < 1 ||
        version > kMaxFormatVersion) {
      return Bad("new table: unsupported format-version property '" + text + "'");
    }
    m.format_version = version;
    properties.erase(it);
  }
  m.table_uuid = Uuid::NewV7().ToString();
  m.location = std::move(location);
  m.last_sequence_number = 0;
  m.last_updated_ms = now_ms;
  m.last_column_id = schema->HighestFieldId();
  m.schemas.push_back(
      schema->schema_id() == 0
          ? schema
          : std::make_shared<const Schema>(0, schema->fields(), schema->identifier_field_ids()));
  m.current_schema_id = 0;
  std::vector<PartitionField> fields;
  if (spec != nullptr) fields = spec->fields();
  for (const PartitionField& f : fields) {
    if (f.transform.kind() != TransformKind::kVoid && schema->FindField(f.source_id) == nullptr) {
      return Bad("new table: partition field '" + f.name + "' has unknown source column " +
                 std::to_string(f.source_id));
    }
  }
  auto new_spec = std::make_shared<const PartitionSpec>(0, std::move(fields));
  m.last_partition_id = new_spec->last_assigned_field_id();
  m.partition_specs.push_back(std::move(new_spec));
  m.default_spec_id = 0;
  for (const SortField& f : order.fields) {
    if (schema->FindField(f.source_id) == nullptr) {
      return Bad("new table: sort field has unknown source column " + std::to_string(f.source_id));
    }
  }
  // Order id 0 is reserved for the unsorted order (spec "Sorting").
  if (order.fields.empty()) {
    order.order_id = 0;
  } else if (order.order_id == 0) {
    order.order_id = 1;
  }
  m.default_sort_order_id = order.order_id;
  m.sort_orders.push_back(std::move(order));
  m.properties = std::move(properties);
  if (m.format_version >= 3) m.next_row_id = 0;
  return m;
}

std::string NextMetadataFileName(std::string_view previous_location) {
  std::string_view name = previous_location;
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) {
    name = name.substr(slash + 1);
  }
  // "NNNNN-<uuid>.metadata.json" (Iceberg's naming) or "vN.metadata.json" (Hadoop tables).
  int64_t next = 0;
  if (!name.empty()) {
    std::optional<int64_t> version;
    if (name.front() == 'v') {
      version = LeadingVersion(name.substr(1));
    } else {
      size_t dash = name.find('-');
      if (dash != std::string_view::npos && dash > 0) {
        std::optional<int64_t> v = LeadingVersion(name);
        if (v && std::to_string(*v).size() <= dash) version = v;
      }
    }
    if (version) next = *version + 1;
  }
  std::string digits = std::to_string(next);
  if (digits.size() < 5) digits.insert(0, 5 - digits.size(), '0');
  return digits + "-" + Uuid::NewV7().ToString() + ".metadata.json";
}

// ---- JSON serde ----

Result<TableRequirement> ParseTableRequirement(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "table requirement"));
  if (!j.is_object()) return Bad("table requirement is not a JSON object");
  SKADE_ASSIGN_OR_RETURN(std::string type, GetString(j, "type", "table requirement"));
  const RequirementInfo* info = nullptr;
  for (const RequirementInfo& i : kRequirements) {
    if (i.type == type) info = &i;
  }
  if (info == nullptr) return Bad("unknown table requirement type '" + type + "'");
  TableRequirement r;
  r.kind = info->kind;
  switch (r.kind) {
    case TableRequirement::Kind::kAssertCreate:
      break;
    case TableRequirement::Kind::kAssertTableUuid: {
      SKADE_ASSIGN_OR_RETURN(r.uuid, GetString(j, "uuid", type));
      break;
    }
    case TableRequirement::Kind::kAssertRefSnapshotId: {
      SKADE_ASSIGN_OR_RETURN(r.ref, GetString(j, "ref", type));
      // snapshot-id is required but nullable; absent is read as null, as Iceberg does.
      SKADE_ASSIGN_OR_RETURN(r.snapshot_id, GetOptLong(j, "snapshot-id", type));
      break;
    }
    default: {
      SKADE_ASSIGN_OR_RETURN(r.value, GetInt(j, info->value_key, type));
      break;
    }
  }
  return r;
}

std::string TableRequirementToJson(const TableRequirement& requirement) {
  const RequirementInfo& info = InfoOf(requirement.kind);
  Json j = Json::object();
  j["type"] = std::string(info.type);
  switch (requirement.kind) {
    case TableRequirement::Kind::kAssertCreate:
      break;
    case TableRequirement::Kind::kAssertTableUuid:
      j["uuid"] = requirement.uuid;
      break;
    case TableRequirement::Kind::kAssertRefSnapshotId:
      j["ref"] = requirement.ref;
      if (requirement.snapshot_id) {
        j["snapshot-id"] = *requirement.snapshot_id;
      } else {
        j["snapshot-id"] = nullptr;
      }
      break;
    default:
      j[std::string(info.value_key)] = requirement.value;
      break;
  }
  return Dump(j);
}

Result<TableUpdate> ParseTableUpdate(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "table update"));
  return ParseUpdateObject(j);
}

std::string TableUpdateToJson(const TableUpdate& u) {
  Json j = Json::object();
  j["action"] = std::string(ActionOf(u.kind));
  switch (u.kind) {
    case TableUpdate::Kind::kAssignUuid:
      j["uuid"] = u.uuid;
      break;
    case TableUpdate::Kind::kUpgradeFormatVersion:
      j["format-version"] = u.format_version;
      break;
    case TableUpdate::Kind::kAddSchema:
      if (u.schema != nullptr) j["schema"] = SchemaJson(*u.schema);
      if (u.last_column_id) j["last-column-id"] = *u.last_column_id;
      break;
    case TableUpdate::Kind::kSetCurrentSchema:
      j["schema-id"] = u.schema_id;
      break;
    case TableUpdate::Kind::kAddSpec:
      if (u.spec != nullptr) j["spec"] = SpecJson(*u.spec);
      break;
    case TableUpdate::Kind::kSetDefaultSpec:
      j["spec-id"] = u.spec_id;
      break;
    case TableUpdate::Kind::kAddSortOrder:
      j["sort-order"] = SortOrderJson(u.sort_order);
      break;
    case TableUpdate::Kind::kSetDefaultSortOrder:
      j["sort-order-id"] = u.sort_order_id;
      break;
    case TableUpdate::Kind::kAddSnapshot:
      // The update does not know the table's format version; the sequence number is always
      // written (0 for v1 snapshots, which readers ignore).
      j["snapshot"] = SnapshotJson(u.snapshot, 2);
      break;
    case TableUpdate::Kind::kSetSnapshotRef: {
      j["ref-name"] = u.ref_name;
      Json ref = RefJson(u.ref);
      for (auto it = ref.begin(); it != ref.end(); ++it) j[it.key()] = *it;
      break;
    }
    case TableUpdate::Kind::kRemoveSnapshots:
      j["snapshot-ids"] = u.snapshot_ids;
      break;
    case TableUpdate::Kind::kRemoveSnapshotRef:
      j["ref-name"] = u.ref_name;
      break;
    case TableUpdate::Kind::kSetLocation:
      j["location"] = u.location;
      break;
    case TableUpdate::Kind::kSetProperties: {
      Json updates = Json::object();
      for (const auto& [k, v] : u.updates) updates[k] = v;
      j["updates"] = updates;
      break;
    }
    case TableUpdate::Kind::kRemoveProperties:
      j["removals"] = u.removals;
      break;
    case TableUpdate::Kind::kSetStatistics: {
      // snapshot-id is deprecated but still written for servers that require it.
      j["snapshot-id"] = u.snapshot_id;
      Json stats = ParseOrderedJson(u.raw_json, "statistics").ValueOr(Json());
      if (!stats.is_object()) stats = Json::object();
      if (Find(stats, "snapshot-id") == nullptr) stats["snapshot-id"] = u.snapshot_id;
      j["statistics"] = std::move(stats);
      break;
    }
    case TableUpdate::Kind::kRemoveStatistics:
    case TableUpdate::Kind::kRemovePartitionStatistics:
      j["snapshot-id"] = u.snapshot_id;
      break;
    case TableUpdate::Kind::kSetPartitionStatistics:
      j["partition-statistics"] = ParseOrderedJson(u.raw_json, "partition statistics").ValueOr(Json::object());
      break;
    case TableUpdate::Kind::kRemoveSchemas:
      j["schema-ids"] = u.ids;
      break;
    case TableUpdate::Kind::kRemovePartitionSpecs:
      j["spec-ids"] = u.ids;
      break;
  }
  return Dump(j);
}

}  // namespace skade::iceberg
