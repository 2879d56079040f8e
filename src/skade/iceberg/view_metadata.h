// Iceberg views (the view spec, format version 1): a view's metadata, its versions and their SQL
// representations, the REST spec's ViewUpdate and ViewRequirement, and the function that applies
// updates to produce the next metadata. JSON serde for all of them, as metadata files and the
// REST catalog exchange them. No I/O here: the catalog reads and writes the files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/schema.h"

namespace skade::iceberg {

// One way of writing a view's query: {"type": "sql", "sql": …, "dialect": …}. Only "sql" exists.
struct ViewRepresentation {
  std::string sql;
  std::string dialect;  // as written ("spark", "trino", "duckdb", …); compared case-insensitively
  bool operator==(const ViewRepresentation&) const = default;
};

struct ViewVersion {
  int version_id = 0;
  int schema_id = 0;  // in an add-view-version update, -1 means the schema last added
  int64_t timestamp_ms = 0;
  std::map<std::string, std::string> summary;  // e.g. "engine-name", "engine-version"
  std::vector<ViewRepresentation> representations;
  std::optional<std::string> default_catalog;
  std::vector<std::string> default_namespace;  // required by the spec; may be empty

  // The representation of `dialect` (case-insensitive), nullptr if none.
  const ViewRepresentation* Representation(std::string_view dialect) const;
  bool operator==(const ViewVersion&) const = default;
};

struct ViewLogEntry {
  int version_id = 0;
  int64_t timestamp_ms = 0;
  bool operator==(const ViewLogEntry&) const = default;
};

struct ViewMetadata {
  std::string view_uuid;
  int format_version = 1;
  std::string location;
  std::vector<SchemaPtr> schemas;
  int current_version_id = 0;
  std::vector<ViewVersion> versions;
  std::vector<ViewLogEntry> version_log;
  std::map<std::string, std::string> properties;

  const ViewVersion* CurrentVersion() const;  // nullptr only for metadata not yet validated
  const ViewVersion* Version(int version_id) const;
  SchemaPtr Schema(int schema_id) const;
  SchemaPtr CurrentSchema() const;  // the current version's schema
};

// Table property-like setting: how many versions a view keeps (default 10, the spec's
// "version.history.num-entries"); older versions that are not current are dropped on update.
inline constexpr const char* kViewVersionHistoryProperty = "version.history.num-entries";
inline constexpr int kViewVersionHistoryDefault = 10;

// Parses a view metadata file's JSON; kInvalidArgument naming what is wrong for anything the
// spec requires missing or mistyped, a format version other than 1, a current version or a
// version's schema that does not exist, duplicate version or schema ids, or a version with two
// representations of the same dialect.
Result<ViewMetadata> ParseViewMetadata(std::string_view json);
std::string ViewMetadataToJson(const ViewMetadata& metadata);

Result<ViewVersion> ParseViewVersionJson(std::string_view json);
std::string ViewVersionToJson(const ViewVersion& version);

struct ViewRequirement {
  std::string uuid;  // assert-view-uuid: the only view requirement of the REST spec
};

struct ViewUpdate {
  enum class Kind {
    kAssignUuid,             // uuid
    kUpgradeFormatVersion,   // format_version
    kAddSchema,              // schema (an equal schema's id is reused, else max id + 1)
    kSetLocation,            // location
    kSetProperties,          // updates
    kRemoveProperties,       // removals
    kAddViewVersion,         // version (an equal version is reused, else a new id is taken)
    kSetCurrentViewVersion,  // version_id (-1: the version last added or reused by these updates)
  };
  Kind kind = Kind::kAssignUuid;
  std::string uuid;
  int format_version = 1;
  SchemaPtr schema;
  std::string location;
  std::map<std::string, std::string> updates;
  std::vector<std::string> removals;
  ViewVersion version;
  int version_id = 0;
};

Result<ViewRequirement> ParseViewRequirement(std::string_view json);
std::string ViewRequirementToJson(const ViewRequirement& requirement);
Result<ViewUpdate> ParseViewUpdate(std::string_view json);
std::string ViewUpdateToJson(const ViewUpdate& update);

// kConflict naming the requirement when `metadata` does not meet it.
Status CheckViewRequirement(const ViewMetadata& metadata, const ViewRequirement& requirement);

// The metadata of a new view: `schema` (given id 0), `version` (id 1, schema 0, its timestamp
// `now_ms` when 0), one log entry (with the version's timestamp), a fresh uuid. kInvalidArgument
// for a missing schema, a version without representations or with two of one dialect, an empty
// location, or a "version.history.num-entries" property that is not a positive integer.
Result<ViewMetadata> NewViewMetadata(SchemaPtr schema, ViewVersion version, std::string location,
                                     std::map<std::string, std::string> properties, int64_t now_ms);

// Applies `updates` in order, as the spec's view metadata builder does: an added schema equal to
// an existing one reuses its id, otherwise takes max id + 1; an added version equal to an existing
// one apart from id and timestamp reuses its id, otherwise takes max id + 1 (or its own id when
// higher, as Java Iceberg keeps it), its schema id -1 meaning the schema last added (or reused),
// its timestamp 0 meaning `now_ms`. The version log gets one entry when the current version
// changes: the version's timestamp if these updates added it, else `now_ms`. Afterwards the
// versions beyond "version.history.num-entries" are dropped oldest first, never the current one
// nor one these updates added, with the log entries up to the last one naming a dropped version;
// the schemas no remaining version uses stay (the spec keeps them). An empty uuid gets a fresh
// one. kInvalidArgument for an update that cannot apply (unknown version, a downgrade or a format
// version above 1, a version of an unknown schema, duplicate dialects, -1 with nothing added, an
// empty location or uuid, a uuid other than the view's) or a history setting that is not a
// positive integer.
Result<ViewMetadata> ApplyViewUpdates(const ViewMetadata& base,
                                      const std::vector<ViewUpdate>& updates, int64_t now_ms);

}  // namespace skade::iceberg
