// The REST catalog operations (iceberg-rest-catalog-open-api.yaml, paths /v1/...): request
// bodies parsed and checked, the catalog called, responses in the spec's shapes.
#include "skade/rest/api_internal.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "skade/base/clock.h"
#include "skade/base/hash.h"
#include "skade/base/hex.h"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/catalog/placement.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/references.h"
#include "skade/io/location.h"
#include "skade/rest/commit_rebase.h"
#include "skade/rest/idempotency_internal.h"
#include "skade/base/json_parse_internal.h"

namespace skade::rest {

// ---- request bodies (api_internal.h)

Result<Json> ParseBody(const Request& r) {
  if (r.body.empty()) return Status::InvalidArgument("the request needs a JSON body");
  SKADE_RETURN_IF_ERROR(CheckJsonHasNoNul(r.body, "the request body"));
  SKADE_ASSIGN_OR_RETURN(Json j, ParseOrderedJson(r.body, "the request body"));
  if (!j.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
  return j;
}

Result<std::optional<std::string>> OptString(const Json& j, const char* key) {
  const Json* v = Member(j, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Status::InvalidArgument(std::string("'") + key + "' must be a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::string> RequiredString(const Json& j, const char* key) {
  SKADE_ASSIGN_OR_RETURN(auto v, OptString(j, key));
  if (!v) return Status::InvalidArgument(std::string("'") + key + "' is required");
  return *v;
}

Result<bool> OptBool(const Json& j, const char* key) {
  const Json* v = Member(j, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) return Status::InvalidArgument(std::string("'") + key + "' must be a boolean");
  return v->get<bool>();
}

Result<std::map<std::string, std::string>> StringMap(const Json& j, const char* key) {
  std::map<std::string, std::string> out;
  const Json* v = Member(j, key);
  if (v == nullptr) return out;
  if (!v->is_object()) return Status::InvalidArgument(std::string("'") + key + "' must be an object of strings");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_string()) {
      return Status::InvalidArgument(std::string("'") + key + "." + it.key() + "' must be a string");
    }
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

Result<std::vector<std::string>> StringArray(const Json& j, const char* key) {
  std::vector<std::string> out;
  const Json* v = Member(j, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Status::InvalidArgument(std::string("'") + key + "' must be an array of strings");
  for (const Json& e : *v) {
    if (!e.is_string()) return Status::InvalidArgument(std::string("'") + key + "' must be an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// A namespace as the spec sends it: an array of levels, each checked by the one name rule.
Result<catalog::Namespace> NamespaceOf(const Json& levels) {
  if (!levels.is_array() || levels.empty()) {
    return Status::InvalidArgument("a namespace is a non-empty array of strings");
  }
  catalog::Namespace ns;
  for (const Json& l : levels) {
    if (!l.is_string()) return Status::InvalidArgument("a namespace is a non-empty array of strings");
    ns.levels.push_back(l.get<std::string>());
  }
  SKADE_RETURN_IF_ERROR(ns.Validate());
  return ns;
}

namespace {

// ---- metrics reports (spec ReportMetricsRequest: anyOf ScanReport, CommitReport)

bool IsString(const Json& v) { return v.is_string(); }
// "type: integer, format: int64".
bool IsLong(const Json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}
// "type: integer" without a format, read as Java's parsers read it (an int).
bool IsInt(const Json& v) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
  const int64_t i = v.get<int64_t>();
  return i >= std::numeric_limits<int32_t>::min() && i <= std::numeric_limits<int32_t>::max();
}
bool IsIntArray(const Json& v) { return v.is_array() && std::all_of(v.begin(), v.end(), IsInt); }
bool IsStringArray(const Json& v) { return v.is_array() && std::all_of(v.begin(), v.end(), IsString); }
bool IsStringMap(const Json& v) {
  return v.is_object() && std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_string(); });
}
// A Predicate: a boolean, or an expression object named by its "type".
bool IsPredicate(const Json& v) {
  const Json* type = v.is_object() ? Member(v, "type") : nullptr;
  return v.is_boolean() || (type != nullptr && type->is_string());
}
// Metrics: an object of MetricResult, each a CounterResult {unit, value} or a TimerResult
// {time-unit, count, total-duration}.
bool IsMetrics(const Json& v) {
  auto has = [](const Json& m, const char* key, bool (*valid)(const Json&)) {
    const Json* e = Member(m, key);
    return e != nullptr && valid(*e);
  };
  return v.is_object() && std::all_of(v.begin(), v.end(), [&](const Json& m) {
           if (!m.is_object()) return false;
           const bool counter = has(m, "unit", IsString) && has(m, "value", IsLong);
           const bool timer =
               has(m, "time-unit", IsString) && has(m, "count", IsLong) && has(m, "total-duration", IsLong);
           return counter || timer;
         });
}

struct ReportField {
  const char* key;
  bool (*valid)(const Json&);
  const char* type;
};
constexpr ReportField kScanReport[] = {
    {"table-name", IsString, "a string"},
    {"snapshot-id", IsLong, "an int64"},
    {"filter", IsPredicate, "a predicate (a boolean or an expression object)"},
    {"schema-id", IsInt, "an integer"},
    {"projected-field-ids", IsIntArray, "an array of integers"},
    {"projected-field-names", IsStringArray, "an array of strings"},
    {"metrics", IsMetrics, "an object of counter and timer results"},
};
constexpr ReportField kCommitReport[] = {
    {"table-name", IsString, "a string"},
    {"snapshot-id", IsLong, "an int64"},
    {"sequence-number", IsLong, "an int64"},
    {"operation", IsString, "a string"},
    {"metrics", IsMetrics, "an object of counter and timer results"},
};

// kInvalidArgument naming the first required member of `fields` that `report` lacks or has of
// another type, or a `metadata` that is not an object of strings.
Status CheckReport(const Json& report, std::span<const ReportField> fields, const std::string& what) {
  for (const ReportField& f : fields) {
    const Json* v = Member(report, f.key);
    if (v == nullptr) return Status::InvalidArgument(what + ": '" + f.key + "' is required");
    if (!f.valid(*v)) return Status::InvalidArgument(what + ": '" + f.key + "' must be " + f.type);
  }
  if (const Json* metadata = Member(report, "metadata"); metadata != nullptr && !IsStringMap(*metadata)) {
    return Status::InvalidArgument(what + ": 'metadata' must be an object of strings");
  }
  return Status::Ok();
}

// A ReportMetricsRequest checked against the schema: report-type a string, and the required
// members of a ScanReport ("scan-report") or a CommitReport ("commit-report"). The schema does
// not tie other report types to a shape, so such a report is accepted when it has either one's.
Status CheckMetricsReport(const Json& body) {
  const Json* type = Member(body, "report-type");
  if (type == nullptr) return Status::InvalidArgument("'report-type' is required");
  if (!type->is_string()) return Status::InvalidArgument("'report-type' must be a string");
  if (*type == "scan-report") return CheckReport(body, kScanReport, "a scan report");
  if (*type == "commit-report") return CheckReport(body, kCommitReport, "a commit report");
  if (CheckReport(body, kScanReport, "").ok() || CheckReport(body, kCommitReport, "").ok()) return Status::Ok();
  return Status::InvalidArgument("a report of type '" + type->get<std::string>() +
                                 "' must have the required members of a scan report or a commit report");
}

}  // namespace

Result<catalog::TableIdent> IdentOf(const Json& j, const char* what) {
  if (!j.is_object()) return Status::InvalidArgument(std::string(what) + " must be a table identifier object");
  const Json* ns = Member(j, "namespace");
  if (ns == nullptr) return Status::InvalidArgument(std::string(what) + ".namespace is required");
  catalog::TableIdent ident;
  SKADE_ASSIGN_OR_RETURN(ident.ns, NamespaceOf(*ns));
  SKADE_ASSIGN_OR_RETURN(ident.name, RequiredString(j, "name"));
  SKADE_RETURN_IF_ERROR(ident.Validate());
  return ident;
}

Json LevelsJson(const catalog::Namespace& ns) {
  Json levels = Json::array();
  for (const auto& l : ns.levels) levels.push_back(l);
  return levels;
}

Json IdentJson(const catalog::TableIdent& ident) {
  return Json{{"namespace", LevelsJson(ident.ns)}, {"name", ident.name}};
}

namespace {

// The JDBC catalog's marker row of a namespace ("exists" = "true"): storage, not a property
// clients set or see.
constexpr const char* kExistsMarker = "exists";

Json PropertiesJson(const std::map<std::string, std::string>& properties) {
  Json out = Json::object();
  for (const auto& [k, v] : properties) {
    if (k != kExistsMarker) out[k] = v;
  }
  return out;
}

// ---- table results

// FNV-1a: a stable tag of the metadata file a response describes (ETag). The basis is the one
// ETags were always made with (it lacks a digit of the standard one; kept so tags stay the same).
std::string EtagOf(std::string_view text) {
  uint64_t h = Fnv1a64(text, 1469598103934665603ULL);
  std::string out(16, '0');
  static const char* kHex = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = kHex[h & 15];
  return "\"" + out + "\"";
}

// The metadata as a REST response carries it. A v2+ metadata file says "no current snapshot" as
// "current-snapshot-id": null, but the REST spec's TableMetadata schema types the member as an
// integer (not nullable), so responses leave it out instead (it is optional).
std::string ResponseMetadataJson(const iceberg::TableMetadata& m) {
  std::string text = iceberg::TableMetadataToJson(m);
  if (m.current_snapshot_id) return text;
  Json j = ParseOrderedJson(text, "metadata").ValueOr(Json());
  if (!j.is_object()) return text;
  if (auto it = j.find("current-snapshot-id"); it != j.end() && it->is_null()) j.erase(it);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A LoadTableResult / CommitTableResponse body; `config` the members after "metadata" of a
// LoadTableResult (CatalogApi::ConfigMembers), null for a CommitTableResponse.
std::string TableResultBody(const std::optional<std::string>& metadata_location, const iceberg::TableMetadata& m,
                            const std::string* config) {
  std::string body = "{";
  if (metadata_location) body += "\"metadata-location\":" + Json(*metadata_location).dump() + ",";
  body += "\"metadata\":" + ResponseMetadataJson(m);
  if (config != nullptr) body += *config;
  return body + "}";
}

Response TableResponse(const catalog::TableState& state, const std::string& snapshots, const std::string* config) {
  const iceberg::TableMetadata* m = state.metadata.get();
  iceberg::TableMetadata filtered;
  if (snapshots == "refs") {
    // Spec loadTable: "refs" returns only the snapshots referenced by branches and tags.
    filtered = *m;
    std::set<int64_t> referenced;
    for (const auto& [name, ref] : filtered.refs) referenced.insert(ref.snapshot_id);
    filtered.snapshots.EraseIf([&](const iceberg::Snapshot& s) { return !referenced.count(s.snapshot_id); });
    m = &filtered;
  }
  Response r;
  r.body = TableResultBody(state.metadata_location, *m, config);
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("ETag", EtagOf(state.metadata_location + "|" + snapshots));
  return r;
}

// A CommitTableResponse for the metadata file at `metadata_location`.
Response CommitResponse(const std::string& metadata_location, const iceberg::TableMetadata& m) {
  Response r;
  r.body = TableResultBody(metadata_location, m, nullptr);
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("ETag", EtagOf(metadata_location + "|all"));
  return r;
}

// Spec dropTable: purgeRequested is a boolean, false by default; only a purge deletes files.
// Its spelling is any case ("True" from Python clients), as Java reads it (Boolean.parseBoolean);
// anything else is refused rather than guessed at.
Result<bool> PurgeRequested(const Request& r) {
  if (!r.has("purgeRequested")) return false;
  std::string value = r.query.at("purgeRequested");
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  if (value != "true" && value != "false") return Status::InvalidArgument("purgeRequested must be true or false");
  return value == "true";
}

// ---- new tables

// The column ids of a table created through the REST catalog are the catalog's choice, not the
// request's, as in the reference implementations (Java's TableMetadata.newTableMetadata,
// PyIceberg's new_table_metadata, iceberg-rust): columns are numbered from 1, a struct's own
// fields before their children, a list's element and a map's key and value as they come.
// Clients take the ids from the response; a schema a client already numbered so (Spark,
// PyIceberg, skade) comes back unchanged. One per request; not thread-safe.
class FreshIds {
 public:
  iceberg::TypePtr Renumber(const iceberg::TypePtr& type) {
    switch (type->id()) {
      case iceberg::TypeId::kStruct: {
        std::vector<iceberg::NestedField> fields = type->fields();
        for (iceberg::NestedField& f : fields) f.id = Assign(f.id);
        for (iceberg::NestedField& f : fields) f.type = Renumber(f.type);
        return iceberg::Type::Struct(std::move(fields));
      }
      case iceberg::TypeId::kList: {
        const iceberg::NestedField& element = type->element();
        const int id = Assign(element.id);
        return iceberg::Type::List(id, Renumber(element.type), element.required);
      }
      case iceberg::TypeId::kMap: {
        const int key = Assign(type->key().id);
        const int value = Assign(type->value().id);
        iceberg::TypePtr key_type = Renumber(type->key().type);
        iceberg::TypePtr value_type = Renumber(type->value().type);
        return iceberg::Type::Map(key, std::move(key_type), value, std::move(value_type),
                                  type->value().required);
      }
      default:
        return type;
    }
  }

  // The new id of a column of the renumbered schema; kInvalidArgument for an id it lacks.
  Result<int> Of(int old_id, const std::string& what) const {
    auto it = ids_.find(old_id);
    if (it == ids_.end()) {
      return Status::InvalidArgument(what + " names column " + std::to_string(old_id) +
                                     ", which the schema lacks");
    }
    return it->second;
  }

 private:
  int Assign(int old_id) {
    ids_[old_id] = next_;
    return next_++;
  }

  std::map<int, int> ids_;  // request id -> new id
  int next_ = 1;
};

// `req` with fresh column ids; the partition spec and sort order follow their columns, and
// partition fields are numbered from 1000 (spec "Partitioning": the reference implementation
// assigns partition field ids from 1000). kInvalidArgument for an invalid schema, or a spec or
// order that names a column the schema lacks.
Result<catalog::CreateTableRequest> WithFreshIds(catalog::CreateTableRequest req) {
  SKADE_RETURN_IF_ERROR(req.schema->Validate().WithContext("schema"));
  FreshIds ids;
  iceberg::TypePtr renumbered = ids.Renumber(req.schema->as_struct());
  std::vector<int> identifier_field_ids;
  for (int id : req.schema->identifier_field_ids()) {
    SKADE_ASSIGN_OR_RETURN(int fresh, ids.Of(id, "identifier-field-ids"));
    identifier_field_ids.push_back(fresh);
  }
  req.schema = std::make_shared<const iceberg::Schema>(0, renumbered->fields(),
                                                       std::move(identifier_field_ids));
  if (req.spec != nullptr) {
    std::vector<iceberg::PartitionField> fields = req.spec->fields();
    int field_id = 1000;
    for (iceberg::PartitionField& f : fields) {
      const std::string what = "partition field '" + f.name + "'";
      SKADE_ASSIGN_OR_RETURN(f.source_id, ids.Of(f.source_id, what));
      for (int& source : f.source_ids) {
        SKADE_ASSIGN_OR_RETURN(source, ids.Of(source, what));
      }
      f.field_id = field_id++;
    }
    req.spec = std::make_shared<const iceberg::PartitionSpec>(0, std::move(fields));
  }
  for (iceberg::SortField& f : req.sort_order.fields) {
    SKADE_ASSIGN_OR_RETURN(f.source_id, ids.Of(f.source_id, "a sort field"));
  }
  return req;
}

constexpr const char* kEndpoints[] = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
    "POST /v1/{prefix}/tables/rename",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/transactions/commit",
    "POST /v1/{prefix}/events",
};

}  // namespace

std::optional<std::string> BodyCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bodies_.find(key);
  if (it == bodies_.end()) return std::nullopt;
  return it->second;
}

void BodyCache::Put(const std::string& key, const std::string& body) {
  if (body.size() > kMaxBytes / 16) return;  // one table's history must not flush everything
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + body.size() > kMaxBytes) {
    bodies_.clear();
    bytes_ = 0;
  }
  if (bodies_.emplace(key, body).second) bytes_ += key.size() + body.size();
}

const Json* Member(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Result<catalog::TableIdent> IdentFromPath(const std::string& ns, const std::string& table) {
  catalog::TableIdent ident;
  SKADE_ASSIGN_OR_RETURN(ident.ns, NamespaceFromPath(ns));
  ident.name = table;
  SKADE_RETURN_IF_ERROR(ident.Validate());
  return ident;
}

Result<catalog::Namespace> NamespaceFromPath(const std::string& segment) {
  catalog::Namespace ns;
  size_t start = 0;
  while (true) {
    size_t sep = segment.find('\x1f', start);
    ns.levels.push_back(segment.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (sep == std::string::npos) break;
    start = sep + 1;
  }
  SKADE_RETURN_IF_ERROR(ns.Validate());
  return ns;
}

CatalogApi::CatalogApi(catalog::Catalog& catalog, io::FileIO& io, const RestOptions& options)
    : catalog_(catalog),
      io_(io),
      options_(options),
      manifests_(options.plan_manifest_cache_bytes),
      sealer_(options.sealer ? options.sealer : io::Sealer::Ephemeral()),
      plans_(PlanStoreOptions{options.plan_ttl}) {}

std::string CatalogApi::SealJson(std::string_view purpose, const Json& payload, std::chrono::seconds lifetime) const {
  return io::EncodeBase64Url(
      sealer_->Seal(purpose, payload.dump(-1, ' ', false, Json::error_handler_t::replace), lifetime));
}

std::optional<Json> CatalogApi::OpenSealedJson(std::string_view purpose, const std::string& token) const {
  std::string sealed;
  if (!io::DecodeBase64Url(token, &sealed) || !io::Sealer::LooksSealed(sealed)) return std::nullopt;
  auto payload = sealer_->Open(purpose, sealed);
  if (!payload.ok()) return std::nullopt;
  auto parsed = ParseOrderedJson(*payload, "a sealed token");
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  return std::move(parsed).value();
}

RestStats CatalogApi::stats() const {
  RestStats s;
  s.commits = commits_;
  s.conflicts = conflicts_;
  s.rebased = rebased_;
  return s;
}

Status CatalogApi::CheckLocation(std::string_view location, std::string_view what) const {
  if (io::IsWithin(location, catalog_.warehouse())) return Status::Ok();
  for (const std::string& dir : options_.allowed_directories) {
    if (io::IsWithin(location, dir)) return Status::Ok();
  }
  return Status::InvalidArgument(std::string(what) + " '" + std::string(location) +
                                 "' is outside the catalog's warehouse and allowed directories");
}

Status CatalogApi::CheckSnapshotLocations(const iceberg::Snapshot& s, bool added) const {
  const std::string what = "snapshot " + std::to_string(s.snapshot_id);
  for (const std::string& m : s.manifests) SKADE_RETURN_IF_ERROR(CheckLocation(m, what + ": manifest"));
  if (s.manifest_list.empty()) return Status::Ok();
  SKADE_RETURN_IF_ERROR(CheckLocation(s.manifest_list, what + ": manifest-list"));
  // The manifests the list names enter with it: checked now, not first when a reader opens them.
  Result<std::vector<iceberg::ManifestFile>> listed = iceberg::ReadManifestList(io_, s.manifest_list);
  if (!listed.ok()) {
    if (listed.status().code() == StatusCode::kUnavailable) return listed.status();
    // A registered table's history may have lost an old list; only its reads of it fail.
    if (!added && listed.status().code() == StatusCode::kNotFound) return Status::Ok();
    return Status::InvalidArgument(what + ": manifest-list '" + s.manifest_list +
                                   "' cannot be read: " + listed.status().message());
  }
  for (const iceberg::ManifestFile& m : *listed) {
    SKADE_RETURN_IF_ERROR(CheckLocation(m.manifest_path, what + ": manifest"));
  }
  return Status::Ok();
}

Status CatalogApi::CheckMetadataLocations(const iceberg::TableMetadata& m) const {
  // The paths as recorded: REST clients (Spark, Trino, PyIceberg) read and write where the
  // metadata says, and a purge deletes below the recorded location, so a copied table whose
  // metadata still names another place is refused here (skade's own readers can relocate such
  // a table: `skade register` from the CLI). The metadata log is history, never read.
  SKADE_RETURN_IF_ERROR(CheckLocation(m.location, "the metadata's location"));
  for (const iceberg::Snapshot& s : m.snapshots) SKADE_RETURN_IF_ERROR(CheckSnapshotLocations(s, false));
  for (const auto& [id, path] : iceberg::StatisticsFiles(m)) {
    SKADE_RETURN_IF_ERROR(CheckLocation(path, "statistics of snapshot " + std::to_string(id)));
  }
  return Status::Ok();
}

Status CatalogApi::CheckRegisteredMetadata(const std::string& location) const {
  SKADE_RETURN_IF_ERROR(CheckLocation(location, "metadata-location"));
  // What the file names must lie within the same bounds as the file itself: a registered table
  // is read, and may be purged, where its metadata says.
  auto bytes = io_.Read(location);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return Status::InvalidArgument(bytes.status().message());
    return bytes.status();
  }
  auto metadata = iceberg::ParseTableMetadataFile(*bytes);
  if (!metadata.ok()) return Status::InvalidArgument(metadata.status().message());
  return CheckMetadataLocations(*metadata);
}

Status CatalogApi::CheckCommitLocations(const catalog::TableCommit& commit) const {
  for (const auto& u : commit.updates) {
    switch (u.kind) {
      case iceberg::TableUpdate::Kind::kSetLocation:
        SKADE_RETURN_IF_ERROR(CheckLocation(u.location, "location"));
        break;
      case iceberg::TableUpdate::Kind::kAddSnapshot:
        SKADE_RETURN_IF_ERROR(CheckSnapshotLocations(u.snapshot, true));
        break;
      case iceberg::TableUpdate::Kind::kSetStatistics:
      case iceberg::TableUpdate::Kind::kSetPartitionStatistics: {
        iceberg::TableMetadata probe;
        probe.statistics_json = "[" + u.raw_json + "]";
        for (const auto& [id, path] : iceberg::StatisticsFiles(probe)) {
          SKADE_RETURN_IF_ERROR(CheckLocation(path, "statistics of snapshot " + std::to_string(id)));
        }
        break;
      }
      default:
        break;
    }
  }
  return Status::Ok();
}

Response CatalogApi::Refused() const {
  return ErrorResponse(403, "ForbiddenException", "the catalog is read-only");
}

Status CatalogApi::RequireNamespace(const catalog::Namespace& ns) {
  SKADE_ASSIGN_OR_RETURN(bool exists, catalog_.NamespaceExists(ns));
  if (!exists) return Status::NotFound("namespace " + ns.ToString() + " does not exist");
  return Status::Ok();
}

Response CatalogApi::CommitFailure(const Status& st) {
  if (st.code() == StatusCode::kConflict) ++conflicts_;
  return ErrorResponse(st, "NoSuchTableException", "CommitFailedException");
}

// ---- config

Response CatalogApi::Config(const Request&) {
  Json body;
  body["defaults"] = Json::object();
  body["overrides"] = Json::object();
  if (!options_.prefix.empty()) body["overrides"]["prefix"] = options_.prefix;
  // Where this server places tables (a client's own warehouse setting cannot move them).
  body["overrides"]["warehouse"] = catalog_.warehouse();
  body["endpoints"] = Json::array();
  for (const char* e : kEndpoints) {
    // The view routes only where the catalog keeps views.
    if (!catalog_.SupportsViews() && std::string_view(e).find("view") != std::string_view::npos) continue;
    body["endpoints"].push_back(e);
  }
  if (options_.remote_signing) body["endpoints"].push_back("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign");
  // Spec CatalogConfig: "Presence of this field indicates the server supports Idempotency-Key
  // semantics for mutation endpoints."
  if (options_.idempotency_key_lifetime.count() > 0) {
    body["idempotency-key-lifetime"] = IsoDuration(options_.idempotency_key_lifetime);
  }
  return JsonResponse(body);
}

// ---- namespaces

Response CatalogApi::ListNamespaces(const Request& r) {
  catalog::Namespace parent;
  if (r.has("parent") && !r.query.at("parent").empty()) {
    SKADE_ASSIGN_OR_RESPOND(parent, NamespaceFromPath(r.query.at("parent")));
  }
  SKADE_ASSIGN_OR_RESPOND(auto children, catalog_.ListNamespaces(parent), "NoSuchNamespaceException");
  if (!parent.empty() && children.empty()) {
    SKADE_RESPOND_IF_ERROR(RequireNamespace(parent), "NoSuchNamespaceException");
  }
  SKADE_ASSIGN_OR_RESPOND(Page page, PageOf(r, children, [](const catalog::Namespace& ns) { return ns.ToString(); }));
  Json body;
  body["namespaces"] = Json::array();
  for (size_t i = page.begin; i < page.end; ++i) body["namespaces"].push_back(LevelsJson(children[i]));
  AddPageToken(body, page);
  return JsonResponse(body);
}

Response CatalogApi::CreateNamespace(const Request& r) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  const Json* levels = Member(body, "namespace");
  if (levels == nullptr) return ErrorResponse(400, "BadRequestException", "'namespace' is required");
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceOf(*levels));
  SKADE_ASSIGN_OR_RESPOND(auto properties, StringMap(body, "properties"));
  if (properties.count(kExistsMarker)) {
    return ErrorResponse(400, "BadRequestException", "'exists' is reserved by the catalog");
  }
  SKADE_ASSIGN_OR_RESPOND(bool exists, catalog_.NamespaceExists(ns));
  if (exists) return ErrorResponse(409, "AlreadyExistsException", "namespace " + ns.ToString() + " already exists");
  SKADE_RESPOND_IF_ERROR(catalog_.CreateNamespace(ns, properties), "NoSuchNamespaceException");
  auto stored = catalog_.LoadNamespaceProperties(ns);
  return JsonResponse(
      Json{{"namespace", LevelsJson(ns)}, {"properties", PropertiesJson(stored.ok() ? *stored : properties)}});
}

Response CatalogApi::LoadNamespace(const Request& r, const std::string& segment) {
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  // Not RequireNamespace: an error of the lookup itself keeps the default exception types.
  SKADE_ASSIGN_OR_RESPOND(bool exists, catalog_.NamespaceExists(ns));
  if (!exists) return ErrorResponse(404, "NoSuchNamespaceException", "namespace " + ns.ToString() + " does not exist");
  if (r.method == "HEAD") return Response{204, "", {}};
  SKADE_ASSIGN_OR_RESPOND(auto properties, catalog_.LoadNamespaceProperties(ns), "NoSuchNamespaceException");
  return JsonResponse(Json{{"namespace", LevelsJson(ns)}, {"properties", PropertiesJson(properties)}});
}

Response CatalogApi::DropNamespace(const Request&, const std::string& segment) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  SKADE_RESPOND_IF_ERROR(catalog_.DropNamespace(ns), "NoSuchNamespaceException", "NamespaceNotEmptyException");
  return Response{204, "", {}};
}

Response CatalogApi::UpdateNamespaceProperties(const Request& r, const std::string& segment) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  SKADE_ASSIGN_OR_RESPOND(auto removals, StringArray(body, "removals"));
  SKADE_ASSIGN_OR_RESPOND(auto updates, StringMap(body, "updates"));
  for (const auto& key : removals) {
    if (updates.count(key)) {
      return ErrorResponse(422, "UnprocessableEntityException", "property '" + key + "' is both removed and updated");
    }
  }
  if (updates.count(kExistsMarker)) {
    return ErrorResponse(400, "BadRequestException", "'exists' is reserved by the catalog");
  }
  SKADE_ASSIGN_OR_RESPOND(auto current, catalog_.LoadNamespaceProperties(ns), "NoSuchNamespaceException");
  current.erase(kExistsMarker);
  std::erase(removals, std::string(kExistsMarker));  // the marker stays
  SKADE_RESPOND_IF_ERROR(catalog_.UpdateNamespaceProperties(ns, updates, removals), "NoSuchNamespaceException");
  Json out{{"updated", Json::array()}, {"removed", Json::array()}, {"missing", Json::array()}};
  for (const auto& [k, v] : updates) out["updated"].push_back(k);
  for (const auto& k : removals) out[current.count(k) ? "removed" : "missing"].push_back(k);
  return JsonResponse(out);
}

// ---- tables

Response CatalogApi::ListTables(const Request& r, const std::string& segment) {
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  SKADE_ASSIGN_OR_RESPOND(bool exists, catalog_.NamespaceExists(ns));
  SKADE_ASSIGN_OR_RESPOND(auto tables, catalog_.ListTables(ns), "NoSuchNamespaceException");
  if (!exists && tables.empty()) {
    return ErrorResponse(404, "NoSuchNamespaceException", "namespace " + ns.ToString() + " does not exist");
  }
  std::sort(tables.begin(), tables.end());
  SKADE_ASSIGN_OR_RESPOND(Page page, PageOf(r, tables, [](const catalog::TableIdent& t) { return t.name; }));
  Json body;
  body["identifiers"] = Json::array();
  for (size_t i = page.begin; i < page.end; ++i) body["identifiers"].push_back(IdentJson(tables[i]));
  AddPageToken(body, page);
  return JsonResponse(body);
}

Result<std::string> CatalogApi::DefaultLocation(const catalog::TableIdent& ident) {
  catalog::PlacementInputs inputs;
  inputs.warehouse = catalog_.warehouse();
  SKADE_ASSIGN_OR_RETURN(inputs.tables, catalog_.ListTableLocations());
  SKADE_ASSIGN_OR_RETURN(inputs.namespaces, catalog::ListNamespacesBelow(catalog_, catalog::Namespace{}));
  return catalog::PlaceTable(inputs, ident, [this](const std::string& location) -> Result<bool> {
    SKADE_ASSIGN_OR_RETURN(auto files, io_.List(location));
    return !files.empty();
  });
}

Response CatalogApi::CreateTable(const Request& r, const std::string& segment) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  SKADE_ASSIGN_OR_RESPOND(std::string name, RequiredString(body, "name"));
  catalog::TableIdent ident{ns, std::move(name)};
  SKADE_RESPOND_IF_ERROR(ident.Validate());
  const Json* schema = Member(body, "schema");
  if (schema == nullptr) return ErrorResponse(400, "BadRequestException", "'schema' is required");
  catalog::CreateTableRequest req;
  SKADE_ASSIGN_OR_RESPOND(req.schema, iceberg::ParseSchemaJson(schema->dump()));
  if (const Json* spec = Member(body, "partition-spec")) {
    SKADE_ASSIGN_OR_RESPOND(req.spec, iceberg::ParsePartitionSpecJson(spec->dump()));
  }
  if (const Json* order = Member(body, "write-order")) {
    SKADE_ASSIGN_OR_RESPOND(req.sort_order, iceberg::ParseSortOrderJson(order->dump()));
  }
  SKADE_ASSIGN_OR_RESPOND(req.properties, StringMap(body, "properties"));
  SKADE_ASSIGN_OR_RESPOND(req.location, OptString(body, "location"));
  SKADE_ASSIGN_OR_RESPOND(bool staged, OptBool(body, "stage-create"));

  SKADE_RESPOND_IF_ERROR(RequireNamespace(ns), "NoSuchNamespaceException");
  SKADE_ASSIGN_OR_RESPOND(req, WithFreshIds(std::move(req)));
  if (req.location) {
    SKADE_RESPOND_IF_ERROR(CheckLocation(*req.location, "location"));
  }
  if (staged) return StageCreate(r, ident, req);
  SKADE_ASSIGN_OR_RESPOND(auto created, catalog_.CreateTable(ident, req), "NoSuchNamespaceException");
  const std::string config = ConfigMembers(ident, *created.table.metadata);
  return TableResponse(created.table, "all", &config);
}

Response CatalogApi::StageCreate(const Request& r, const catalog::TableIdent& ident,
                                 const catalog::CreateTableRequest& req) {
  // Spec createTable, stage-create: the metadata the table will start from, nothing
  // committed; the client commits it later with an assert-create requirement.
  if (catalog_.LoadTable(ident).ok()) {
    return ErrorResponse(409, "AlreadyExistsException", "table " + ident.ToString() + " already exists");
  }
  std::string where;
  if (req.location) {
    where = *req.location;
  } else {
    SKADE_ASSIGN_OR_RESPOND(where, DefaultLocation(ident));
  }
  SKADE_ASSIGN_OR_RESPOND(auto m, iceberg::NewTableMetadata(req.schema, req.spec, req.sort_order, where,
                                                             req.properties, NowMicros() / 1000));
  Response out;
  const std::string config = ConfigMembers(ident, m, &r.principal);
  out.body = TableResultBody(std::nullopt, m, &config);
  out.headers.emplace_back("Content-Type", "application/json");
  return out;
}

Response CatalogApi::RegisterTable(const Request& r, const std::string& segment) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::Namespace ns, NamespaceFromPath(segment));
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  SKADE_ASSIGN_OR_RESPOND(std::string name, RequiredString(body, "name"));
  SKADE_ASSIGN_OR_RESPOND(std::string location, RequiredString(body, "metadata-location"));
  SKADE_ASSIGN_OR_RESPOND(bool overwrite, OptBool(body, "overwrite"));
  catalog::TableIdent ident{ns, std::move(name)};
  SKADE_RESPOND_IF_ERROR(ident.Validate());
  SKADE_RESPOND_IF_ERROR(RequireNamespace(ns), "NoSuchNamespaceException");
  SKADE_RESPOND_IF_ERROR(CheckRegisteredMetadata(location));
  if (overwrite && catalog_.LoadTable(ident).ok()) {
    // Replacing a registered table's pointer would have to be one atomic step; it is not yet.
    // A 400 (registerTable documents no 406): the request asks for what this server refuses.
    return ErrorResponse(400, "BadRequestException",
                         "register with overwrite of an existing table is not supported; drop it first");
  }
  SKADE_ASSIGN_OR_RESPOND(auto registered, catalog_.RegisterTable(ident, location), "NoSuchNamespaceException");
  const std::string config = ConfigMembers(ident, *registered.table.metadata);
  return TableResponse(registered.table, "all", &config);
}

Response CatalogApi::LoadTable(const Request& r, const std::string& segment, const std::string& table) {
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  std::string snapshots = r.has("snapshots") ? r.query.at("snapshots") : "all";
  if (snapshots != "all" && snapshots != "refs") {
    return ErrorResponse(400, "BadRequestException", "snapshots must be 'all' or 'refs'");
  }
  SKADE_ASSIGN_OR_RESPOND(catalog::TableState state, catalog_.LoadTable(ident));
  if (r.method == "HEAD") return Response{204, "", {}};
  const std::string etag = EtagOf(state.metadata_location + "|" + snapshots);
  const std::string if_none_match = r.header("if-none-match");
  if (!if_none_match.empty() && (if_none_match == etag || if_none_match == "*")) {
    return Response{304, "", {{"ETag", etag}}};
  }
  // The config names the table (its signer endpoint), and one metadata file may be registered
  // under two names.
  std::string key = state.metadata_location + "|" + snapshots;
  for (const std::string& level : ident.ns.levels) key += "\x1f" + level;
  key += "\x1e" + ident.name;
  if (auto body = bodies_.Find(key)) {
    return Response{200, std::move(*body), {{"Content-Type", "application/json"}, {"ETag", etag}}};
  }
  const std::string config = ConfigMembers(ident, *state.metadata);
  Response out = TableResponse(state, snapshots, &config);
  bodies_.Put(key, out.body);
  return out;
}

Result<catalog::TableCommit> CatalogApi::ParseCommit(const Json& body, const catalog::TableIdent& ident) {
  catalog::TableCommit commit;
  commit.ident = ident;
  const Json* requirements = Member(body, "requirements");
  const Json* updates = Member(body, "updates");
  if (requirements == nullptr || !requirements->is_array()) {
    return Status::InvalidArgument("'requirements' must be an array");
  }
  if (updates == nullptr || !updates->is_array()) return Status::InvalidArgument("'updates' must be an array");
  for (size_t i = 0; i < requirements->size(); ++i) {
    SKADE_ASSIGN_OR_RETURN(auto req, iceberg::ParseTableRequirement((*requirements)[i].dump())
                                         .WithContext("requirements[" + std::to_string(i) + "]"));
    commit.requirements.push_back(std::move(req));
  }
  for (size_t i = 0; i < updates->size(); ++i) {
    SKADE_ASSIGN_OR_RETURN(auto update, iceberg::ParseTableUpdate((*updates)[i].dump())
                                            .WithContext("updates[" + std::to_string(i) + "]"));
    commit.updates.push_back(std::move(update));
  }
  return commit;
}

Result<catalog::CommitResult> CatalogApi::CreateFromCommit(const catalog::TableCommit& commit) {
  if (catalog_.LoadTable(commit.ident).ok()) {
    return Status::Conflict("requirement failed: table " + commit.ident.ToString() + " already exists");
  }
  iceberg::TableMetadata base;
  // An upgrade-format-version update names the version the table starts at.
  for (const auto& u : commit.updates) {
    if (u.kind == iceberg::TableUpdate::Kind::kUpgradeFormatVersion) base.format_version = std::min(base.format_version, u.format_version);
  }
  base.last_column_id = 0;
  SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadata m, iceberg::ApplyUpdates(base, "", commit.updates, NowMicros() / 1000));
  if (m.table_uuid.empty()) m.table_uuid = Uuid::NewV7().ToString();
  if (m.location.empty()) {
    SKADE_ASSIGN_OR_RETURN(m.location, DefaultLocation(commit.ident));
  }
  const std::string path =
      io::JoinLocation(io::JoinLocation(m.location, "metadata"), iceberg::NextMetadataFileName(""));
  SKADE_RETURN_IF_ERROR(io_.CreateExclusive(path, iceberg::TableMetadataToJson(m)));
  auto registered = catalog_.RegisterTable(commit.ident, path);
  if (!registered.ok()) {
    (void)io_.Delete(path);  // nothing else refers to it
    if (registered.status().code() == StatusCode::kAlreadyExists) {
      return Status::Conflict("requirement failed: table " + commit.ident.ToString() + " already exists");
    }
  }
  return registered;
}

Response CatalogApi::CommitTable(const Request& r, const std::string& segment, const std::string& table) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  if (const Json* given = Member(body, "identifier")) {
    SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent named, IdentOf(*given, "identifier"));
    if (!(named == ident)) {
      return ErrorResponse(400, "BadRequestException", "the body's identifier " + named.ToString() +
                                                           " is not the table of the path " + ident.ToString());
    }
  }
  SKADE_ASSIGN_OR_RESPOND(catalog::TableCommit commit, ParseCommit(body, ident));
  SKADE_RESPOND_IF_ERROR(CheckCommitLocations(commit));
  bool create = false;
  for (const auto& req : commit.requirements) {
    create = create || req.kind == iceberg::TableRequirement::Kind::kAssertCreate;
  }
  // A key on a catalog that keeps records lands with the commit (a staged create's commit
  // registers a table instead: its record is stored after the answer, like other mutations').
  catalog::IdempotencyRecord record;
  const bool keyed = !create && r.idempotency != nullptr && r.idempotency->durable;
  if (keyed) {
    record = r.idempotency->record;
    record.status = 200;
  }
  auto result = create ? CreateFromCommit(commit) : CommitTableRebasing(commit, keyed ? &record : nullptr);
  if (!result.ok()) return CommitFailure(result.status());
  if (keyed) r.idempotency->stored = true;
  ++commits_;
  return CommitResponse(result->table.metadata_location, *result->table.metadata);
}

Response CatalogApi::CommittedTable(const std::string& metadata_location, const std::string& segment,
                                    const std::string& table) {
  auto bytes = io_.Read(metadata_location);
  if (bytes.ok()) {
    auto metadata = iceberg::ParseTableMetadataFile(*bytes);
    if (metadata.ok()) return CommitResponse(metadata_location, *metadata);
  }
  SKADE_LOG_WARN("rest: the committed metadata {} cannot be read again; answering the table's current state",
                 metadata_location);
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  SKADE_ASSIGN_OR_RESPOND(catalog::TableState state, catalog_.LoadTable(ident));
  return TableResponse(state, "all", nullptr);
}

Result<iceberg::TableMetadata> CatalogApi::ReadMetadataFile(const std::string& location, std::string_view what) {
  SKADE_RETURN_IF_ERROR(CheckLocation(location, what));
  SKADE_ASSIGN_OR_RETURN(std::string bytes, io_.Read(location));
  return iceberg::ParseTableMetadataFile(bytes).WithContext(location);
}

Result<std::vector<catalog::CommitResult>> CatalogApi::CommitRebasing(const std::vector<catalog::TableCommit>& commits,
                                                                      const CommitFn& once) {
  // Each round re-bases on newer heads; past this many, others land faster than the server can
  // re-base, and the client hears the 409 (and retries itself).
  constexpr int kMaxRebases = 64;
  Result<std::vector<catalog::CommitResult>> first = once(commits);
  if (first.ok() || !options_.rebase_commits || first.status().code() != StatusCode::kConflict) return first;
  const MetadataReader reader = [this](const std::string& location) {
    return ReadMetadataFile(location, "a metadata file of the metadata log");
  };
  for (int round = 0; round < kMaxRebases; ++round) {
    std::vector<catalog::TableCommit> attempt;
    std::vector<std::string> lists;  // named by nothing unless the attempt lands
    int64_t rebased = 0;
    auto forget = [this, &lists] {
      for (const std::string& list : lists) (void)io_.Delete(list);
    };
    for (const catalog::TableCommit& commit : commits) {
      auto state = catalog_.LoadTable(commit.ident);
      if (!state.ok()) {
        forget();
        return first;
      }
      const bool holds = std::all_of(commit.requirements.begin(), commit.requirements.end(),
                                     [&](const iceberg::TableRequirement& r) { return r.Check(state->metadata.get()).ok(); });
      if (holds) {  // refused by a race: its requirements hold now
        attempt.push_back(commit);
        continue;
      }
      auto again = RebaseCommit(commit, *state->metadata, io_, reader);
      if (!again.ok()) {
        SKADE_LOG_WARN("rest: commit to {} not re-based: {}", commit.ident.ToString(), again.status().ToString());
      }
      if (!again.ok() || !again->has_value()) {
        forget();
        return first;
      }
      if (!(*again)->manifest_list.empty()) lists.push_back((*again)->manifest_list);
      attempt.push_back(std::move((*again)->commit));
      ++rebased;
    }
    Result<std::vector<catalog::CommitResult>> result = once(attempt);
    if (result.ok()) {
      rebased_ += rebased;
      return result;
    }
    if (result.status().code() != StatusCode::kCommitUnknown) forget();  // unknown: it may have landed
    if (result.status().code() != StatusCode::kConflict) return result;
  }
  return first;
}

Result<catalog::CommitResult> CatalogApi::CommitTableRebasing(const catalog::TableCommit& commit,
                                                              const catalog::IdempotencyRecord* record) {
  auto once = [this, record](const std::vector<catalog::TableCommit>& one) -> Result<std::vector<catalog::CommitResult>> {
    if (record != nullptr) return catalog_.CommitTransactionWithRecord(one, *record);
    SKADE_ASSIGN_OR_RETURN(catalog::CommitResult result, catalog_.CommitTable(one.at(0)));
    std::vector<catalog::CommitResult> out;
    out.push_back(std::move(result));
    return out;
  };
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::CommitResult> results, CommitRebasing({commit}, once));
  return std::move(results.at(0));
}

Response CatalogApi::DropTable(const Request& r, const std::string& segment, const std::string& table) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  SKADE_ASSIGN_OR_RESPOND(bool purge, PurgeRequested(r));
  SKADE_RESPOND_IF_ERROR(catalog_.DropTable(ident, purge ? catalog::DropMode::kPurge : catalog::DropMode::kKeepFiles));
  return Response{204, "", {}};
}

Response CatalogApi::UnregisterTable(const Request&, const std::string& segment, const std::string& table) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  // Spec unregisterTable: "This table metadata must include all commits that happened before the
  // unregister operation." The row goes only while it names the metadata read here; a commit in
  // between (kConflict) is read again. Commits after it find no table (404).
  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    SKADE_ASSIGN_OR_RESPOND(catalog::TableState state, catalog_.LoadTable(ident));
    Status st = catalog_.UnregisterTable(ident, state.metadata_location);
    if (st.code() == StatusCode::kConflict) continue;
    if (!st.ok()) return ErrorResponse(st);
    Response out;
    out.body = TableResultBody(state.metadata_location, *state.metadata, nullptr);
    out.headers.emplace_back("Content-Type", "application/json");
    return out;
  }
  return ErrorResponse(503, "ServiceUnavailableException",
                       "table " + ident.ToString() + " kept changing while it was unregistered; retry");
}

Response CatalogApi::ReportMetrics(const Request& r, const std::string& segment, const std::string& table) {
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent ident, IdentFromPath(segment, table));
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  SKADE_RESPOND_IF_ERROR(CheckMetricsReport(body));
  // The table's own 404 (spec reportMetrics lists only NoSuchTableException, also for a
  // namespace that does not exist).
  SKADE_RESPOND_IF_ERROR(catalog_.LoadTable(ident));
  // Accepted and logged: skade keeps no metrics store.
  SKADE_LOG_DEBUG("rest: {} for {}", body["report-type"].get<std::string>(), ident.ToString());
  return Response{204, "", {}};
}

Response CatalogApi::RenameTable(const Request& r) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  const Json* source = Member(body, "source");
  const Json* destination = Member(body, "destination");
  if (source == nullptr || destination == nullptr) {
    return ErrorResponse(400, "BadRequestException", "'source' and 'destination' are required");
  }
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent from, IdentOf(*source, "source"));
  SKADE_ASSIGN_OR_RESPOND(catalog::TableIdent to, IdentOf(*destination, "destination"));
  // Spec renameTable: NoSuchNamespaceException for the destination's namespace, asked before the
  // source (a missing source namespace is the source table missing: NoSuchTableException).
  SKADE_RESPOND_IF_ERROR(RequireNamespace(to.ns), "NoSuchNamespaceException");
  SKADE_RESPOND_IF_ERROR(catalog_.RenameTable(from, to));
  return Response{204, "", {}};
}

Result<std::vector<catalog::TableCommit>> CatalogApi::ParseTableChanges(const Json& body) {
  const Json* changes = Member(body, "table-changes");
  if (changes == nullptr || !changes->is_array() || changes->empty()) {
    return Status::InvalidArgument("'table-changes' must be a non-empty array");
  }
  std::vector<catalog::TableCommit> commits;
  std::set<catalog::TableIdent> seen;
  for (size_t i = 0; i < changes->size(); ++i) {
    const Json& change = (*changes)[i];
    const std::string where = "table-changes[" + std::to_string(i) + "]";
    const Json* identifier = change.is_object() ? Member(change, "identifier") : nullptr;
    if (identifier == nullptr) return Status::InvalidArgument(where + ": an identifier is required");
    SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, IdentOf(*identifier, "identifier").WithContext(where));
    if (!seen.insert(ident).second) {
      return Status::InvalidArgument(where + ": table " + ident.ToString() + " appears twice");
    }
    SKADE_ASSIGN_OR_RETURN(catalog::TableCommit commit, ParseCommit(change, ident).WithContext(where));
    SKADE_RETURN_IF_ERROR(CheckCommitLocations(commit).WithContext(where));
    for (const auto& req : commit.requirements) {
      if (req.kind == iceberg::TableRequirement::Kind::kAssertCreate) {
        return Status::NotImplemented(where + ": creating a table inside a multi-table commit is not supported");
      }
    }
    commits.push_back(std::move(commit));
  }
  return commits;
}

Response CatalogApi::CommitTransaction(const Request& r) {
  if (options_.read_only) return Refused();
  SKADE_ASSIGN_OR_RESPOND(Json body, ParseBody(r));
  SKADE_ASSIGN_OR_RESPOND(auto commits, ParseTableChanges(body));
  // A key on a catalog that keeps records lands in the transaction's own catalog transaction.
  const bool keyed = r.idempotency != nullptr && r.idempotency->durable;
  catalog::IdempotencyRecord record;
  if (keyed) {
    record = r.idempotency->record;
    record.status = 204;
  }
  auto results = CommitRebasing(commits, [this, keyed, &record](const std::vector<catalog::TableCommit>& attempt) {
    return keyed ? catalog_.CommitTransactionWithRecord(attempt, record) : catalog_.CommitTransaction(attempt);
  });
  if (!results.ok()) return CommitFailure(results.status());
  if (keyed) r.idempotency->stored = true;
  commits_ += static_cast<int64_t>(results->size());
  return Response{204, "", {}};
}

}  // namespace skade::rest
