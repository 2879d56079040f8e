// Iceberg views: the rules come from the view spec ("View Metadata", "Versions",
// "Representations", "Version log") and the REST spec (components ViewMetadata, ViewVersion,
// ViewUpdate, ViewRequirement); the member order of the JSON is the one Java Iceberg writes, so
// that files and REST bodies compare equal with what other engines produce.
#include "skade/iceberg/view_metadata.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <memory>
#include <set>
#include <utility>

#include "skade/base/ascii.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/json_internal.h"

namespace skade::iceberg {

using namespace json_internal;  // NOLINT: the shared serde helpers of this folder

namespace {

// View spec "View Metadata": format-version "must be 1".
constexpr int kViewFormatVersion = 1;
constexpr int kLastAdded = -1;
constexpr std::string_view kSqlType = "sql";
constexpr std::string_view kAssertViewUuid = "assert-view-uuid";

std::string VersionContext(int version_id) { return "view version " + std::to_string(version_id); }

// View spec "SQL representation": "only one SQL representation per dialect". Dialect names are
// compared ignoring case, as Java Iceberg does ("Spark" and "spark" are one dialect).
Status CheckDialects(const ViewVersion& version, std::string_view ctx) {
  std::set<std::string> dialects;
  for (const ViewRepresentation& r : version.representations) {
    if (!dialects.insert(AsciiLower(r.dialect)).second) {
      return Bad(std::string(ctx) + ": two representations of dialect '" + r.dialect + "'");
    }
  }
  return Status::Ok();
}

// The invariants every view metadata file holds (view spec "View Metadata" and "Versions").
Status ValidateViewMetadata(const ViewMetadata& m) {
  if (m.format_version != kViewFormatVersion) {
    return Bad("unsupported view format-version " + std::to_string(m.format_version));
  }
  std::set<int> schema_ids;
  for (const SchemaPtr& s : m.schemas) {
    if (s == nullptr) return Bad("view metadata holds a null schema");
    if (!schema_ids.insert(s->schema_id()).second) {
      return Bad("duplicate schema id " + std::to_string(s->schema_id()));
    }
  }
  std::set<int> version_ids;
  for (const ViewVersion& v : m.versions) {
    const std::string ctx = VersionContext(v.version_id);
    if (!version_ids.insert(v.version_id).second) return Bad("duplicate " + ctx + " id");
    if (schema_ids.count(v.schema_id) == 0) {
      return Bad(ctx + ": schema " + std::to_string(v.schema_id) + " does not exist");
    }
    SKADE_RETURN_IF_ERROR(CheckDialects(v, ctx));
  }
  if (version_ids.count(m.current_version_id) == 0) {
    return Bad("current-version-id " + std::to_string(m.current_version_id) +
               " is not among the versions");
  }
  return Status::Ok();
}

// version.history.num-entries (view spec "View Metadata", note 1). Java Iceberg refuses to write
// metadata when it is not a positive integer; so does skade rather than guess.
Result<int> VersionHistorySize(const ViewMetadata& m) {
  auto it = m.properties.find(kViewVersionHistoryProperty);
  if (it == m.properties.end()) return kViewVersionHistoryDefault;
  const std::string& text = it->second;
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 1) {
    return Bad(std::string(kViewVersionHistoryProperty) + " must be a positive integer, not '" +
               text + "'");
  }
  return value;
}

// ---- JSON readers ----

Result<std::map<std::string, std::string>> GetStringMap(const Json& obj, std::string_view key,
                                                        std::string_view ctx, bool required) {
  std::map<std::string, std::string> out;
  const Json* v = Find(obj, key);
  if (v == nullptr) {
    if (required) return Bad(std::string(ctx) + ": missing '" + std::string(key) + "'");
    return out;
  }
  if (!v->is_object()) {
    return Bad(std::string(ctx) + ": '" + std::string(key) + "' is not an object");
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it->is_string()) {
      return Bad(std::string(ctx) + ": '" + std::string(key) + "' value of '" + it.key() +
                 "' is not a string");
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

Result<std::vector<std::string>> GetStringArray(const Json& obj, std::string_view key,
                                                std::string_view ctx) {
  SKADE_ASSIGN_OR_RETURN(const Json* arr, GetArray(obj, key, ctx, true));
  std::vector<std::string> out;
  for (const Json& v : *arr) {
    if (!v.is_string()) {
      return Bad(std::string(ctx) + ": '" + std::string(key) + "' must hold strings");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

const Json* FindObject(const Json& obj, std::string_view key) {
  const Json* v = Find(obj, key);
  return v != nullptr && v->is_object() ? v : nullptr;
}

// ---- serde of the spec objects ----

Result<ViewRepresentation> ParseRepresentation(const Json& j, std::string_view ctx) {
  if (!j.is_object()) return Bad(std::string(ctx) + ": representation is not an object");
  SKADE_ASSIGN_OR_RETURN(std::string type, GetString(j, "type", ctx));
  // View spec "Representations": "sql" is the only type. Another one is refused rather than
  // dropped, since writing the metadata back would lose it.
  if (!EqualsIgnoreAsciiCase(type, kSqlType)) {
    return Bad(std::string(ctx) + ": unsupported representation type '" + type + "'");
  }
  ViewRepresentation r;
  SKADE_ASSIGN_OR_RETURN(r.sql, GetString(j, "sql", ctx));
  SKADE_ASSIGN_OR_RETURN(r.dialect, GetString(j, "dialect", ctx));
  return r;
}

Json RepresentationJson(const ViewRepresentation& r) {
  Json j = Json::object();
  j["type"] = std::string(kSqlType);
  j["sql"] = r.sql;
  j["dialect"] = r.dialect;
  return j;
}

Json StringMapJson(const std::map<std::string, std::string>& map) {
  Json j = Json::object();
  for (const auto& [k, v] : map) j[k] = v;
  return j;
}

// View spec "Versions". schema-id is not checked here: in an add-view-version update it may be
// -1, and a metadata file's versions are checked against its schemas by ValidateViewMetadata.
Result<ViewVersion> ParseVersion(const Json& j, std::string_view ctx) {
  if (!j.is_object()) return Bad(std::string(ctx) + ": view version is not an object");
  ViewVersion v;
  SKADE_ASSIGN_OR_RETURN(v.version_id, GetInt(j, "version-id", ctx));
  const std::string vctx = std::string(ctx) + " " + std::to_string(v.version_id);
  SKADE_ASSIGN_OR_RETURN(v.timestamp_ms, GetLong(j, "timestamp-ms", vctx));
  SKADE_ASSIGN_OR_RETURN(v.schema_id, GetInt(j, "schema-id", vctx));
  SKADE_ASSIGN_OR_RETURN(v.summary, GetStringMap(j, "summary", vctx, true));
  SKADE_ASSIGN_OR_RETURN(const Json* reps, GetArray(j, "representations", vctx, true));
  for (const Json& r : *reps) {
    SKADE_ASSIGN_OR_RETURN(ViewRepresentation rep, ParseRepresentation(r, vctx));
    v.representations.push_back(std::move(rep));
  }
  // default-catalog is optional and may be null: the view's own catalog (view spec "Versions").
  if (Find(j, "default-catalog") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(std::string catalog, GetString(j, "default-catalog", vctx));
    v.default_catalog = std::move(catalog);
  }
  SKADE_ASSIGN_OR_RETURN(v.default_namespace, GetStringArray(j, "default-namespace", vctx));
  SKADE_RETURN_IF_ERROR(CheckDialects(v, vctx));
  return v;
}

Json VersionJson(const ViewVersion& v) {
  Json j = Json::object();
  j["version-id"] = v.version_id;
  j["timestamp-ms"] = v.timestamp_ms;
  j["schema-id"] = v.schema_id;
  j["summary"] = StringMapJson(v.summary);
  if (v.default_catalog) j["default-catalog"] = *v.default_catalog;
  j["default-namespace"] = v.default_namespace;
  j["representations"] = Json::array();
  for (const ViewRepresentation& r : v.representations) {
    j["representations"].push_back(RepresentationJson(r));
  }
  return j;
}

Result<ViewMetadata> ParseMetadataObject(const Json& j) {
  const std::string ctx = "view metadata";
  if (!j.is_object()) return Bad(ctx + " is not a JSON object");
  ViewMetadata m;
  SKADE_ASSIGN_OR_RETURN(m.view_uuid, GetString(j, "view-uuid", ctx));
  SKADE_ASSIGN_OR_RETURN(m.format_version, GetInt(j, "format-version", ctx));
  if (m.format_version != kViewFormatVersion) {
    return Bad(ctx + ": unsupported format-version " + std::to_string(m.format_version));
  }
  SKADE_ASSIGN_OR_RETURN(m.location, GetString(j, "location", ctx));
  SKADE_ASSIGN_OR_RETURN(m.properties, GetStringMap(j, "properties", ctx, false));
  SKADE_ASSIGN_OR_RETURN(const Json* schemas, GetArray(j, "schemas", ctx, true));
  for (const Json& s : *schemas) {
    SKADE_ASSIGN_OR_RETURN(SchemaPtr schema, ParseSchema(s, ctx + " schema", 0));
    m.schemas.push_back(std::move(schema));
  }
  SKADE_ASSIGN_OR_RETURN(m.current_version_id, GetInt(j, "current-version-id", ctx));
  SKADE_ASSIGN_OR_RETURN(const Json* versions, GetArray(j, "versions", ctx, true));
  for (const Json& v : *versions) {
    SKADE_ASSIGN_OR_RETURN(ViewVersion version, ParseVersion(v, "view version"));
    m.versions.push_back(std::move(version));
  }
  SKADE_ASSIGN_OR_RETURN(const Json* log, GetArray(j, "version-log", ctx, true));
  for (const Json& e : *log) {
    if (!e.is_object()) return Bad("version-log: entry is not an object");
    ViewLogEntry entry;
    SKADE_ASSIGN_OR_RETURN(entry.timestamp_ms, GetLong(e, "timestamp-ms", "version-log"));
    SKADE_ASSIGN_OR_RETURN(entry.version_id, GetInt(e, "version-id", "version-log"));
    m.version_log.push_back(entry);
  }
  SKADE_RETURN_IF_ERROR(ValidateViewMetadata(m).WithContext(ctx));
  return m;
}

// ---- update names ----

struct UpdateInfo {
  ViewUpdate::Kind kind;
  std::string_view action;
};

// REST spec ViewUpdate: the table updates that apply to views, plus the two of views.
constexpr UpdateInfo kUpdates[] = {
    {ViewUpdate::Kind::kAssignUuid, "assign-uuid"},
    {ViewUpdate::Kind::kUpgradeFormatVersion, "upgrade-format-version"},
    {ViewUpdate::Kind::kAddSchema, "add-schema"},
    {ViewUpdate::Kind::kSetLocation, "set-location"},
    {ViewUpdate::Kind::kSetProperties, "set-properties"},
    {ViewUpdate::Kind::kRemoveProperties, "remove-properties"},
    {ViewUpdate::Kind::kAddViewVersion, "add-view-version"},
    {ViewUpdate::Kind::kSetCurrentViewVersion, "set-current-view-version"},
};

std::string_view ActionOf(ViewUpdate::Kind kind) {
  for (const UpdateInfo& info : kUpdates) {
    if (info.kind == kind) return info.action;
  }
  SKADE_CHECK(false);
  return "";
}

// ---- applying updates ----

// The metadata being built plus what these updates added, for the "-1 = last added" ids, the
// version-log timestamps and the versions the history limit must keep.
struct Builder {
  ViewMetadata m;
  int64_t now_ms = 0;
  std::optional<int> last_added_schema_id;
  std::optional<int> last_added_version_id;
  std::set<int> added_version_ids;
};

// A schema's identity without its id: an equal schema is reused, as Java Iceberg's view
// metadata builder does.
std::string SchemaShape(const Schema& s) {
  Json j = SchemaJson(s);
  j.erase("schema-id");
  return Dump(j);
}

// Two versions define the same view when all but their id and timestamp agree.
bool SameVersion(const ViewVersion& a, const ViewVersion& b) {
  return a.schema_id == b.schema_id && a.summary == b.summary &&
         a.representations == b.representations && a.default_catalog == b.default_catalog &&
         a.default_namespace == b.default_namespace;
}

Status AssignUuid(Builder& b, const ViewUpdate& u) {
  if (u.uuid.empty()) return Bad("empty uuid");
  // As for tables (REST spec AssignUUIDUpdate): a view's UUID never changes once assigned.
  if (!b.m.view_uuid.empty() && !EqualsIgnoreAsciiCase(b.m.view_uuid, u.uuid)) {
    return Bad("the view already has uuid " + b.m.view_uuid + ", not " + u.uuid);
  }
  b.m.view_uuid = u.uuid;
  return Status::Ok();
}

Status UpgradeFormatVersion(Builder& b, const ViewUpdate& u) {
  if (u.format_version < b.m.format_version) {
    return Bad("cannot downgrade from v" + std::to_string(b.m.format_version) + " to v" +
               std::to_string(u.format_version));
  }
  if (u.format_version > kViewFormatVersion) {
    return Bad("unsupported view format version " + std::to_string(u.format_version));
  }
  b.m.format_version = u.format_version;
  return Status::Ok();
}

Status AddSchema(Builder& b, const ViewUpdate& u) {
  if (u.schema == nullptr) return Bad("no schema");
  SKADE_RETURN_IF_ERROR(u.schema->Validate());
  const std::string shape = SchemaShape(*u.schema);
  int next_id = 0;
  for (const SchemaPtr& s : b.m.schemas) {
    if (SchemaShape(*s) == shape) {
      b.last_added_schema_id = s->schema_id();
      return Status::Ok();
    }
    next_id = std::max(next_id, s->schema_id() + 1);
  }
  // A new schema always takes the next id, whatever id it came with (the REST spec makes the
  // schema-id of AddSchemaUpdate read-only).
  SchemaPtr schema = u.schema;
  if (schema->schema_id() != next_id) {
    schema = std::make_shared<const Schema>(next_id, u.schema->fields(),
                                            u.schema->identifier_field_ids());
  }
  b.m.schemas.push_back(std::move(schema));
  b.last_added_schema_id = next_id;
  return Status::Ok();
}

Status AddViewVersion(Builder& b, const ViewUpdate& u) {
  ViewVersion v = u.version;
  if (v.schema_id == kLastAdded) {
    if (!b.last_added_schema_id) return Bad("schema-id -1 (last added) but no schema was added");
    v.schema_id = *b.last_added_schema_id;
  }
  if (b.m.Schema(v.schema_id) == nullptr) {
    return Bad("schema " + std::to_string(v.schema_id) + " does not exist");
  }
  SKADE_RETURN_IF_ERROR(CheckDialects(v, "view-version"));
  if (v.timestamp_ms == 0) v.timestamp_ms = b.now_ms;
  // View versions are immutable (view spec "Representations"): a version that defines the view
  // as an existing one does is that version, and keeps its id.
  int max_id = 0;
  for (const ViewVersion& existing : b.m.versions) {
    if (SameVersion(existing, v)) {
      b.last_added_version_id = existing.version_id;
      return Status::Ok();
    }
    max_id = std::max(max_id, existing.version_id);
  }
  // Ids only grow: the given id is kept when above every existing one (as Java Iceberg does),
  // otherwise the next id is taken.
  v.version_id = std::max(v.version_id, max_id + 1);
  b.last_added_version_id = v.version_id;
  b.added_version_ids.insert(v.version_id);
  b.m.versions.push_back(std::move(v));
  return Status::Ok();
}

Status SetCurrentViewVersion(Builder& b, const ViewUpdate& u) {
  int id = u.version_id;
  if (id == kLastAdded) {
    if (!b.last_added_version_id) {
      return Bad("view-version-id -1 (last added) but no version was added");
    }
    id = *b.last_added_version_id;
  }
  if (b.m.Version(id) == nullptr) return Bad(VersionContext(id) + " does not exist");
  b.m.current_version_id = id;
  return Status::Ok();
}

Status Apply(Builder& b, const ViewUpdate& u) {
  switch (u.kind) {
    case ViewUpdate::Kind::kAssignUuid:
      return AssignUuid(b, u);
    case ViewUpdate::Kind::kUpgradeFormatVersion:
      return UpgradeFormatVersion(b, u);
    case ViewUpdate::Kind::kAddSchema:
      return AddSchema(b, u);
    case ViewUpdate::Kind::kSetLocation:
      if (u.location.empty()) return Bad("empty location");
      b.m.location = u.location;
      return Status::Ok();
    case ViewUpdate::Kind::kSetProperties:
      for (const auto& [k, v] : u.updates) b.m.properties[k] = v;
      return Status::Ok();
    case ViewUpdate::Kind::kRemoveProperties:
      for (const std::string& k : u.removals) b.m.properties.erase(k);
      return Status::Ok();
    case ViewUpdate::Kind::kAddViewVersion:
      return AddViewVersion(b, u);
    case ViewUpdate::Kind::kSetCurrentViewVersion:
      return SetCurrentViewVersion(b, u);
  }
  return Bad("unknown view update kind");
}

// View spec "View Metadata", note 1: version.history.num-entries versions are kept. The oldest
// (lowest ids: ids only grow) go first; the current version and the versions these updates added
// always stay, as in Java Iceberg.
Status ExpireVersions(Builder& b) {
  SKADE_ASSIGN_OR_RETURN(int history_size, VersionHistorySize(b.m));
  std::set<int> kept = b.added_version_ids;
  kept.insert(b.m.current_version_id);
  const size_t keep = std::max(static_cast<size_t>(history_size), kept.size());
  std::vector<ViewVersion>& versions = b.m.versions;
  if (versions.size() <= keep) return Status::Ok();
  std::vector<int> ids;
  for (const ViewVersion& v : versions) ids.push_back(v.version_id);
  std::sort(ids.begin(), ids.end());
  std::set<int> dropped;
  size_t excess = versions.size() - keep;
  for (int id : ids) {
    if (excess == 0) break;
    if (kept.count(id) != 0) continue;
    dropped.insert(id);
    --excess;
  }
  std::erase_if(versions, [&](const ViewVersion& v) { return dropped.count(v.version_id) != 0; });
  // The log cannot reach back past a version that is gone: everything up to its last entry for a
  // dropped version goes too (as Java Iceberg trims it).
  std::vector<ViewLogEntry>& log = b.m.version_log;
  auto last_dropped = log.end();
  for (auto it = log.begin(); it != log.end(); ++it) {
    if (dropped.count(it->version_id) != 0) last_dropped = it;
  }
  if (last_dropped != log.end()) log.erase(log.begin(), last_dropped + 1);
  return Status::Ok();
}

}  // namespace

// ---- accessors ----

const ViewRepresentation* ViewVersion::Representation(std::string_view dialect) const {
  for (const ViewRepresentation& r : representations) {
    if (EqualsIgnoreAsciiCase(r.dialect, dialect)) return &r;
  }
  return nullptr;
}

const ViewVersion* ViewMetadata::CurrentVersion() const { return Version(current_version_id); }

const ViewVersion* ViewMetadata::Version(int version_id) const {
  for (const ViewVersion& v : versions) {
    if (v.version_id == version_id) return &v;
  }
  return nullptr;
}

SchemaPtr ViewMetadata::Schema(int schema_id) const {
  for (const SchemaPtr& s : schemas) {
    if (s != nullptr && s->schema_id() == schema_id) return s;
  }
  return nullptr;
}

SchemaPtr ViewMetadata::CurrentSchema() const {
  const ViewVersion* version = CurrentVersion();
  return version == nullptr ? nullptr : Schema(version->schema_id);
}

// ---- metadata and version serde ----

Result<ViewMetadata> ParseViewMetadata(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "view metadata"));
  return ParseMetadataObject(j);
}

std::string ViewMetadataToJson(const ViewMetadata& metadata) {
  // Java Iceberg's ViewMetadataParser order, compact; properties only when there are some.
  Json j = Json::object();
  j["view-uuid"] = metadata.view_uuid;
  j["format-version"] = metadata.format_version;
  j["location"] = metadata.location;
  if (!metadata.properties.empty()) j["properties"] = StringMapJson(metadata.properties);
  j["schemas"] = Json::array();
  for (const SchemaPtr& s : metadata.schemas) {
    if (s != nullptr) j["schemas"].push_back(SchemaJson(*s));
  }
  j["current-version-id"] = metadata.current_version_id;
  j["versions"] = Json::array();
  for (const ViewVersion& v : metadata.versions) j["versions"].push_back(VersionJson(v));
  j["version-log"] = Json::array();
  for (const ViewLogEntry& e : metadata.version_log) {
    Json entry = Json::object();
    entry["timestamp-ms"] = e.timestamp_ms;
    entry["version-id"] = e.version_id;
    j["version-log"].push_back(std::move(entry));
  }
  return Dump(j);
}

Result<ViewVersion> ParseViewVersionJson(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "view version"));
  return ParseVersion(j, "view version");
}

std::string ViewVersionToJson(const ViewVersion& version) { return Dump(VersionJson(version)); }

// ---- requirements and updates ----

Result<ViewRequirement> ParseViewRequirement(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "view requirement"));
  if (!j.is_object()) return Bad("view requirement is not a JSON object");
  SKADE_ASSIGN_OR_RETURN(std::string type, GetString(j, "type", "view requirement"));
  if (type != kAssertViewUuid) return Bad("unknown view requirement type '" + type + "'");
  ViewRequirement r;
  SKADE_ASSIGN_OR_RETURN(r.uuid, GetString(j, "uuid", type));
  return r;
}

std::string ViewRequirementToJson(const ViewRequirement& requirement) {
  Json j = Json::object();
  j["type"] = std::string(kAssertViewUuid);
  j["uuid"] = requirement.uuid;
  return Dump(j);
}

Status CheckViewRequirement(const ViewMetadata& metadata, const ViewRequirement& requirement) {
  // REST spec AssertViewUUID. UUIDs compare case-insensitively (hex in either case).
  if (!EqualsIgnoreAsciiCase(metadata.view_uuid, requirement.uuid)) {
    return Status::Conflict(std::string(kAssertViewUuid) + " failed: expected uuid " +
                            requirement.uuid + ", view has " +
                            (metadata.view_uuid.empty() ? "none" : metadata.view_uuid));
  }
  return Status::Ok();
}

Result<ViewUpdate> ParseViewUpdate(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "view update"));
  if (!j.is_object()) return Bad("view update is not a JSON object");
  SKADE_ASSIGN_OR_RETURN(std::string action, GetString(j, "action", "view update"));
  const UpdateInfo* info = nullptr;
  for (const UpdateInfo& i : kUpdates) {
    if (i.action == action) info = &i;
  }
  if (info == nullptr) return Bad("unknown view update action '" + action + "'");
  const std::string& ctx = action;
  ViewUpdate u;
  u.kind = info->kind;
  switch (u.kind) {
    case ViewUpdate::Kind::kAssignUuid: {
      SKADE_ASSIGN_OR_RETURN(u.uuid, GetString(j, "uuid", ctx));
      break;
    }
    case ViewUpdate::Kind::kUpgradeFormatVersion: {
      SKADE_ASSIGN_OR_RETURN(u.format_version, GetInt(j, "format-version", ctx));
      break;
    }
    case ViewUpdate::Kind::kAddSchema: {
      const Json* s = Find(j, "schema");
      if (s == nullptr) return Bad(ctx + ": missing 'schema'");
      // The deprecated last-column-id is ignored: views assign no column ids.
      SKADE_ASSIGN_OR_RETURN(u.schema, ParseSchema(*s, ctx, -1));
      break;
    }
    case ViewUpdate::Kind::kSetLocation: {
      SKADE_ASSIGN_OR_RETURN(u.location, GetString(j, "location", ctx));
      break;
    }
    case ViewUpdate::Kind::kSetProperties: {
      SKADE_ASSIGN_OR_RETURN(u.updates, GetStringMap(j, "updates", ctx, true));
      break;
    }
    case ViewUpdate::Kind::kRemoveProperties: {
      SKADE_ASSIGN_OR_RETURN(u.removals, GetStringArray(j, "removals", ctx));
      break;
    }
    case ViewUpdate::Kind::kAddViewVersion: {
      const Json* v = FindObject(j, "view-version");
      if (v == nullptr) return Bad(ctx + ": missing 'view-version' object");
      SKADE_ASSIGN_OR_RETURN(u.version, ParseVersion(*v, ctx + " view-version"));
      break;
    }
    case ViewUpdate::Kind::kSetCurrentViewVersion: {
      SKADE_ASSIGN_OR_RETURN(u.version_id, GetInt(j, "view-version-id", ctx));
      break;
    }
  }
  return u;
}

std::string ViewUpdateToJson(const ViewUpdate& update) {
  Json j = Json::object();
  j["action"] = std::string(ActionOf(update.kind));
  switch (update.kind) {
    case ViewUpdate::Kind::kAssignUuid:
      j["uuid"] = update.uuid;
      break;
    case ViewUpdate::Kind::kUpgradeFormatVersion:
      j["format-version"] = update.format_version;
      break;
    case ViewUpdate::Kind::kAddSchema:
      if (update.schema != nullptr) j["schema"] = SchemaJson(*update.schema);
      break;
    case ViewUpdate::Kind::kSetLocation:
      j["location"] = update.location;
      break;
    case ViewUpdate::Kind::kSetProperties:
      j["updates"] = StringMapJson(update.updates);
      break;
    case ViewUpdate::Kind::kRemoveProperties:
      j["removals"] = update.removals;
      break;
    case ViewUpdate::Kind::kAddViewVersion:
      j["view-version"] = VersionJson(update.version);
      break;
    case ViewUpdate::Kind::kSetCurrentViewVersion:
      j["view-version-id"] = update.version_id;
      break;
  }
  return Dump(j);
}

// ---- new metadata and updates ----

Result<ViewMetadata> NewViewMetadata(SchemaPtr schema, ViewVersion version, std::string location,
                                     std::map<std::string, std::string> properties,
                                     int64_t now_ms) {
  if (schema == nullptr) return Bad("new view: no schema");
  if (location.empty()) return Bad("new view: empty location");
  SKADE_RETURN_IF_ERROR(schema->Validate().WithContext("new view schema"));
  if (version.representations.empty()) return Bad("new view: the version has no representations");
  SKADE_RETURN_IF_ERROR(CheckDialects(version, "new view version"));
  ViewMetadata m;
  m.view_uuid = Uuid::NewV7().ToString();
  m.format_version = kViewFormatVersion;
  m.location = std::move(location);
  if (schema->schema_id() != 0) {
    schema = std::make_shared<const Schema>(0, schema->fields(), schema->identifier_field_ids());
  }
  m.schemas.push_back(std::move(schema));
  version.version_id = 1;
  version.schema_id = 0;
  if (version.timestamp_ms == 0) version.timestamp_ms = now_ms;
  m.current_version_id = 1;
  // The version became current when it was written (view spec Appendix A: the first log entry
  // carries the version's timestamp).
  m.version_log.push_back({version.version_id, version.timestamp_ms});
  m.versions.push_back(std::move(version));
  m.properties = std::move(properties);
  SKADE_RETURN_IF_ERROR(VersionHistorySize(m).status().WithContext("new view"));
  SKADE_RETURN_IF_ERROR(ValidateViewMetadata(m).WithContext("new view"));
  return m;
}

Result<ViewMetadata> ApplyViewUpdates(const ViewMetadata& base,
                                      const std::vector<ViewUpdate>& updates, int64_t now_ms) {
  Builder b;
  b.m = base;
  b.now_ms = now_ms;
  for (size_t i = 0; i < updates.size(); ++i) {
    SKADE_RETURN_IF_ERROR(Apply(b, updates[i])
                              .WithContext("update " + std::to_string(i) + " (" +
                                           std::string(ActionOf(updates[i].kind)) + ")"));
  }
  ViewMetadata& m = b.m;
  // View spec "Version log": one entry for each change of current-version-id. A commit makes one
  // change at most (its final current version); a version added by it became current when it
  // was written, one set back (a rollback) becomes current now.
  const bool base_had_current = base.CurrentVersion() != nullptr;
  if (m.current_version_id != base.current_version_id || !base_had_current) {
    const ViewVersion* current = m.CurrentVersion();
    if (current != nullptr) {
      const int64_t timestamp_ms =
          b.added_version_ids.count(current->version_id) != 0 ? current->timestamp_ms : now_ms;
      m.version_log.push_back({current->version_id, timestamp_ms});
    }
  }
  SKADE_RETURN_IF_ERROR(ExpireVersions(b).WithContext("updated view metadata"));
  // A view built from nothing by updates (REST create) without assign-uuid gets a fresh UUID.
  if (m.view_uuid.empty()) m.view_uuid = Uuid::NewV7().ToString();
  SKADE_RETURN_IF_ERROR(ValidateViewMetadata(m).WithContext("updated view metadata"));
  return std::move(b.m);
}

}  // namespace skade::iceberg
