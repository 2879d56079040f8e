// Metadata requirements and updates (the Iceberg REST spec's TableRequirement and TableUpdate):
// what a commit asserts about the current metadata, what it changes, and the function that
// applies changes to produce the next metadata (spec "Table Metadata" rules: logs, sequence
// numbers, refs). JSON serde for both, as the REST catalog exchanges them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/table_metadata.h"

namespace skade::iceberg {

struct TableRequirement {
  enum class Kind {
    kAssertCreate,                   // the table must not exist
    kAssertTableUuid,                // uuid
    kAssertRefSnapshotId,            // ref + snapshot_id (nullopt: the ref must not exist)
    kAssertLastAssignedFieldId,      // value
    kAssertCurrentSchemaId,          // value
    kAssertLastAssignedPartitionId,  // value
    kAssertDefaultSpecId,            // value
    kAssertDefaultSortOrderId,       // value
  };
  Kind kind = Kind::kAssertCreate;
  std::string uuid;
  std::string ref;
  std::optional<int64_t> snapshot_id;
  int64_t value = 0;

  static TableRequirement AssertCreate();
  static TableRequirement AssertTableUuid(std::string uuid);
  static TableRequirement AssertRefSnapshotId(std::string ref, std::optional<int64_t> snapshot_id);
  static TableRequirement AssertCurrentSchemaId(int schema_id);
  static TableRequirement AssertLastAssignedFieldId(int field_id);
  static TableRequirement AssertDefaultSpecId(int spec_id);
  static TableRequirement AssertLastAssignedPartitionId(int partition_id);
  static TableRequirement AssertDefaultSortOrderId(int order_id);

  // Checks against `current` (nullptr when the table does not exist). kConflict naming the
  // requirement and both values when it fails (kNotFound if the table is missing and the
  // requirement is not assert-create).
  Status Check(const TableMetadata* current) const;
};

struct TableUpdate {
  enum class Kind {
    kAssignUuid,            // uuid
    kUpgradeFormatVersion,  // format_version
    kAddSchema,             // schema (+ last_column_id, optional)
    kSetCurrentSchema,      // schema_id (-1 = the schema added last in this commit)
    kAddSpec,               // spec
    kSetDefaultSpec,        // spec_id (-1 = last added)
    kAddSortOrder,          // sort_order
    kSetDefaultSortOrder,   // sort_order_id (-1 = last added)
    kAddSnapshot,           // snapshot
    kSetSnapshotRef,        // ref_name + ref
    kRemoveSnapshots,       // snapshot_ids
    kRemoveSnapshotRef,     // ref_name
    kSetLocation,           // location
    kSetProperties,         // updates
    kRemoveProperties,      // removals
    kSetStatistics,         // snapshot_id + raw_json (a statistics-file object)
    kRemoveStatistics,      // snapshot_id
    kSetPartitionStatistics,     // snapshot_id + raw_json (a partition-statistics-file object)
    kRemovePartitionStatistics,  // snapshot_id
    kRemoveSchemas,         // ids (schema ids; never the current one)
    kRemovePartitionSpecs,  // ids (spec ids; never the default one)
  };
  Kind kind = Kind::kSetProperties;
  std::string uuid;
  int format_version = 0;
  SchemaPtr schema;
  std::optional<int> last_column_id;
  int schema_id = -1;
  PartitionSpecPtr spec;
  int spec_id = -1;
  SortOrder sort_order;
  int sort_order_id = -1;
  Snapshot snapshot;
  std::string ref_name;
  SnapshotRef ref;
  std::vector<int64_t> snapshot_ids;
  std::vector<int> ids;
  int64_t snapshot_id = 0;
  std::string location;
  std::map<std::string, std::string> updates;
  std::vector<std::string> removals;
  std::string raw_json;

  static TableUpdate AddSnapshot(Snapshot snapshot);
  static TableUpdate SetBranch(std::string name, int64_t snapshot_id);
  static TableUpdate SetTag(std::string name, int64_t snapshot_id);
  static TableUpdate RemoveRef(std::string name);
  static TableUpdate RemoveSnapshots(std::vector<int64_t> ids);
  static TableUpdate AddSchema(SchemaPtr schema);
  static TableUpdate SetCurrentSchema(int schema_id);
  static TableUpdate AddSpec(PartitionSpecPtr spec);
  static TableUpdate SetDefaultSpec(int spec_id);
  static TableUpdate AddSortOrder(SortOrder order);
  static TableUpdate SetDefaultSortOrder(int order_id);
  static TableUpdate SetProperties(std::map<std::string, std::string> updates);
  static TableUpdate RemoveProperties(std::vector<std::string> removals);
  static TableUpdate SetLocation(std::string location);
  static TableUpdate AssignUuid(std::string uuid);
  static TableUpdate UpgradeFormatVersion(int version);
  // `statistics_json` is a statistics-file object (REST spec StatisticsFile).
  static TableUpdate SetStatistics(int64_t snapshot_id, std::string statistics_json);
  static TableUpdate RemoveStatistics(int64_t snapshot_id);
};

// Applies `updates` in order to `base` and returns the new metadata. `base_location` is the
// metadata file `base` was read from (added to the metadata log; empty for a new table).
// last-updated-ms becomes `now_ms`; a new snapshot must carry the next sequence number
// (v2+), a snapshot log entry is added when main moves, and history is trimmed to
// `write.metadata.previous-versions-max` (default 100). kInvalidArgument for an update that
// does not apply (unknown schema id, snapshot without schema, ref to a missing snapshot…).
Result<TableMetadata> ApplyUpdates(const TableMetadata& base, std::string_view base_location,
                                   const std::vector<TableUpdate>& updates, int64_t now_ms);

// Metadata for a new table: format v2 (or the reserved property "format-version", 1–3, which
// is not stored), fresh UUID, the given schema/spec as id 0 (null spec: unpartitioned), the
// order (unsorted: id 0; a sorted order keeps its id, 0 becoming 1) and the properties.
// Field ids in `schema` and source ids in `spec` are kept as given. kInvalidArgument for a
// missing schema, an empty location, or a spec/order column not in the schema.
Result<TableMetadata> NewTableMetadata(SchemaPtr schema, PartitionSpecPtr spec, SortOrder order,
                                       std::string location,
                                       std::map<std::string, std::string> properties,
                                       int64_t now_ms);

// The next metadata file name after `location` ("…/00003-<uuid>.metadata.json" →
// "00004-<new uuid>.metadata.json"; "v3.metadata.json" → "00004-…"; empty → "00000-…").
std::string NextMetadataFileName(std::string_view previous_location);

// JSON serde (REST spec shapes: {"type": "assert-ref-snapshot-id", …}, {"action": "add-snapshot", …}).
Result<TableRequirement> ParseTableRequirement(std::string_view json);
std::string TableRequirementToJson(const TableRequirement& requirement);
Result<TableUpdate> ParseTableUpdate(std::string_view json);
std::string TableUpdateToJson(const TableUpdate& update);

}  // namespace skade::iceberg
