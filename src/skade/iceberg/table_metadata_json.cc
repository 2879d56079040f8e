// JSON serde for table metadata (spec "Table Metadata Fields", Appendix C "JSON
// serialization"). Parsing never throws: every member is type-checked before use, and
// problems come back as kInvalidArgument naming the member.
#include <algorithm>
#include <charconv>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "skade/iceberg/json_internal.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/base/json_parse_internal.h"

namespace skade::iceberg {
namespace json_internal {

// Serialises without throwing: invalid UTF-8 is replaced rather than rejected.
std::string Dump(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Status Bad(std::string_view what) { return Status::InvalidArgument(std::string(what)); }

Result<Json> ParseJson(std::string_view text, std::string_view what) {
  return ParseOrderedJson(text, what);
}

const Json* Find(const Json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<int64_t> GetLong(const Json& obj, std::string_view key, std::string_view ctx) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Bad(std::string(ctx) + ": missing '" + std::string(key) + "'");
  if (!v->is_number_integer()) {
    return Bad(std::string(ctx) + ": '" + std::string(key) + "' is not an integer");
  }
  return v->get<int64_t>();
}

Result<std::optional<int64_t>> GetOptLong(const Json& obj, std::string_view key,
                                          std::string_view ctx) {
  if (Find(obj, key) == nullptr) return std::optional<int64_t>();
  SKADE_ASSIGN_OR_RETURN(int64_t v, GetLong(obj, key, ctx));
  return std::optional<int64_t>(v);
}

Result<int> GetInt(const Json& obj, std::string_view key, std::string_view ctx) {
  SKADE_ASSIGN_OR_RETURN(int64_t v, GetLong(obj, key, ctx));
  if (v < INT32_MIN || v > INT32_MAX) {
    return Bad(std::string(ctx) + ": '" + std::string(key) + "' out of range");
  }
  return static_cast<int>(v);
}

Result<std::string> GetString(const Json& obj, std::string_view key, std::string_view ctx) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Bad(std::string(ctx) + ": missing '" + std::string(key) + "'");
  if (!v->is_string()) return Bad(std::string(ctx) + ": '" + std::string(key) + "' is not a string");
  return v->get<std::string>();
}

Result<bool> GetBool(const Json& obj, std::string_view key, std::string_view ctx, bool fallback) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return Bad(std::string(ctx) + ": '" + std::string(key) + "' is not a boolean");
  return v->get<bool>();
}

Result<const Json*> GetArray(const Json& obj, std::string_view key, std::string_view ctx,
                             bool required) {
  const Json* v = Find(obj, key);
  if (v == nullptr) {
    if (required) return Bad(std::string(ctx) + ": missing '" + std::string(key) + "'");
    return static_cast<const Json*>(nullptr);
  }
  if (!v->is_array()) return Bad(std::string(ctx) + ": '" + std::string(key) + "' is not an array");
  return v;
}

// ---- types and schemas ----

Result<TypePtr> ParseType(const Json& j, std::string_view ctx);

Result<NestedField> ParseField(const Json& j, std::string_view ctx) {
  if (!j.is_object()) return Bad(std::string(ctx) + ": field is not an object");
  NestedField f;
  SKADE_ASSIGN_OR_RETURN(f.id, GetInt(j, "id", ctx));
  SKADE_ASSIGN_OR_RETURN(f.name, GetString(j, "name", ctx));
  std::string fctx = std::string(ctx) + " field '" + f.name + "'";
  SKADE_ASSIGN_OR_RETURN(f.required, GetBool(j, "required", fctx, false));
  const Json* t = Find(j, "type");
  if (t == nullptr) return Bad(fctx + ": missing 'type'");
  SKADE_ASSIGN_OR_RETURN(f.type, ParseType(*t, fctx));
  if (const Json* d = Find(j, "doc"); d != nullptr && d->is_string()) f.doc = d->get<std::string>();
  if (auto it = j.find("initial-default"); it != j.end()) f.initial_default_json = Dump(*it);
  if (auto it = j.find("write-default"); it != j.end()) f.write_default_json = Dump(*it);
  return f;
}

Result<std::vector<NestedField>> ParseFields(const Json& j, std::string_view ctx) {
  SKADE_ASSIGN_OR_RETURN(const Json* arr, GetArray(j, "fields", ctx, true));
  std::vector<NestedField> out;
  for (const Json& f : *arr) {
    SKADE_ASSIGN_OR_RETURN(NestedField field, ParseField(f, ctx));
    out.push_back(std::move(field));
  }
  return out;
}

Result<TypePtr> ParseType(const Json& j, std::string_view ctx) {
  if (j.is_string()) return Type::ParsePrimitive(j.get<std::string>()).WithContext(ctx);
  if (!j.is_object()) return Bad(std::string(ctx) + ": type is neither a string nor an object");
  SKADE_ASSIGN_OR_RETURN(std::string kind, GetString(j, "type", ctx));
  if (kind == "struct") {
    SKADE_ASSIGN_OR_RETURN(auto fields, ParseFields(j, ctx));
    return Type::Struct(std::move(fields));
  }
  if (kind == "list") {
    SKADE_ASSIGN_OR_RETURN(int element_id, GetInt(j, "element-id", ctx));
    const Json* e = Find(j, "element");
    if (e == nullptr) return Bad(std::string(ctx) + ": list without 'element'");
    SKADE_ASSIGN_OR_RETURN(TypePtr element, ParseType(*e, ctx));
    SKADE_ASSIGN_OR_RETURN(bool required, GetBool(j, "element-required", ctx, false));
    return Type::List(element_id, std::move(element), required);
  }
  if (kind == "map") {
    SKADE_ASSIGN_OR_RETURN(int key_id, GetInt(j, "key-id", ctx));
    SKADE_ASSIGN_OR_RETURN(int value_id, GetInt(j, "value-id", ctx));
    const Json* k = Find(j, "key");
    const Json* v = Find(j, "value");
    if (k == nullptr || v == nullptr) return Bad(std::string(ctx) + ": map without key or value");
    SKADE_ASSIGN_OR_RETURN(TypePtr key, ParseType(*k, ctx));
    SKADE_ASSIGN_OR_RETURN(TypePtr value, ParseType(*v, ctx));
    SKADE_ASSIGN_OR_RETURN(bool required, GetBool(j, "value-required", ctx, false));
    return Type::Map(key_id, std::move(key), value_id, std::move(value), required);
  }
  return Bad(std::string(ctx) + ": unknown nested type '" + kind + "'");
}

Json TypeJson(const Type& t);

Json FieldJson(const NestedField& f) {
  Json j = Json::object();
  j["id"] = f.id;
  j["name"] = f.name;
  j["required"] = f.required;
  j["type"] = TypeJson(*f.type);
  if (!f.doc.empty()) j["doc"] = f.doc;
  if (f.initial_default_json) j["initial-default"] = ParseOrderedJson(*f.initial_default_json, "stored JSON").ValueOr(Json());
  if (f.write_default_json) j["write-default"] = ParseOrderedJson(*f.write_default_json, "stored JSON").ValueOr(Json());
  return j;
}

Json TypeJson(const Type& t) {
  switch (t.id()) {
    case TypeId::kStruct: {
      Json j = Json::object();
      j["type"] = "struct";
      j["fields"] = Json::array();
      for (const NestedField& f : t.fields()) j["fields"].push_back(FieldJson(f));
      return j;
    }
    case TypeId::kList: {
      Json j = Json::object();
      j["type"] = "list";
      j["element-id"] = t.element().id;
      j["element"] = TypeJson(*t.element().type);
      j["element-required"] = t.element().required;
      return j;
    }
    case TypeId::kMap: {
      Json j = Json::object();
      j["type"] = "map";
      j["key-id"] = t.key().id;
      j["key"] = TypeJson(*t.key().type);
      j["value-id"] = t.value().id;
      j["value"] = TypeJson(*t.value().type);
      j["value-required"] = t.value().required;
      return j;
    }
    default:
      return t.ToString();
  }
}

Result<SchemaPtr> ParseSchema(const Json& j, std::string_view ctx, int default_id) {
  if (!j.is_object()) return Bad(std::string(ctx) + ": schema is not an object");
  SKADE_ASSIGN_OR_RETURN(auto fields, ParseFields(j, ctx));
  int schema_id = default_id;
  if (Find(j, "schema-id") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(schema_id, GetInt(j, "schema-id", ctx));
  }
  std::vector<int> ids;
  SKADE_ASSIGN_OR_RETURN(const Json* idarr, GetArray(j, "identifier-field-ids", ctx, false));
  if (idarr != nullptr) {
    for (const Json& v : *idarr) {
      if (!v.is_number_integer()) return Bad(std::string(ctx) + ": identifier-field-ids must be integers");
      ids.push_back(v.get<int>());
    }
  }
  auto schema = std::make_shared<const Schema>(schema_id, std::move(fields), std::move(ids));
  SKADE_RETURN_IF_ERROR(schema->Validate().WithContext(ctx));
  return SchemaPtr(schema);
}

Json SchemaJson(const Schema& s) {
  Json j = Json::object();
  j["type"] = "struct";
  j["schema-id"] = s.schema_id();
  if (!s.identifier_field_ids().empty()) j["identifier-field-ids"] = s.identifier_field_ids();
  j["fields"] = Json::array();
  for (const NestedField& f : s.fields()) j["fields"].push_back(FieldJson(f));
  return j;
}

// ---- partition specs and sort orders ----

Result<std::vector<PartitionField>> ParsePartitionFields(const Json& arr, std::string_view ctx) {
  std::vector<PartitionField> out;
  int next_id = 1000;  // v1 specs may omit field ids; the spec assigns them from 1000
  for (const Json& f : arr) {
    if (!f.is_object()) return Bad(std::string(ctx) + ": partition field is not an object");
    PartitionField pf;
    if (const Json* ids = Find(f, "source-ids"); ids != nullptr && ids->is_array()) {
      for (const Json& v : *ids) {
        if (!v.is_number_integer()) return Bad(std::string(ctx) + ": source-ids must be integers");
        pf.source_ids.push_back(v.get<int>());
      }
      if (!pf.source_ids.empty()) pf.source_id = pf.source_ids.front();
    }
    if (Find(f, "source-id") != nullptr || pf.source_ids.empty()) {
      SKADE_ASSIGN_OR_RETURN(pf.source_id, GetInt(f, "source-id", ctx));
    }
    if (Find(f, "field-id") != nullptr) {
      SKADE_ASSIGN_OR_RETURN(pf.field_id, GetInt(f, "field-id", ctx));
    } else {
      pf.field_id = next_id;
    }
    next_id = pf.field_id + 1;
    SKADE_ASSIGN_OR_RETURN(pf.name, GetString(f, "name", ctx));
    SKADE_ASSIGN_OR_RETURN(std::string transform, GetString(f, "transform", ctx));
    SKADE_ASSIGN_OR_RETURN(pf.transform,
                           Transform::Parse(transform).WithContext(std::string(ctx) + " field '" +
                                                                   pf.name + "'"));
    out.push_back(std::move(pf));
  }
  return out;
}

Json PartitionFieldsJson(const PartitionSpec& spec) {
  Json arr = Json::array();
  for (const PartitionField& f : spec.fields()) {
    Json j = Json::object();
    j["name"] = f.name;
    j["transform"] = f.transform.ToString();
    j["source-id"] = f.source_id;
    if (f.source_ids.size() > 1) j["source-ids"] = f.source_ids;
    j["field-id"] = f.field_id;
    arr.push_back(j);
  }
  return arr;
}

Json SpecJson(const PartitionSpec& spec) {
  Json j = Json::object();
  j["spec-id"] = spec.spec_id();
  j["fields"] = PartitionFieldsJson(spec);
  return j;
}

Result<SortOrder> ParseSortOrder(const Json& j) {
  const char* ctx = "sort-orders";
  if (!j.is_object()) return Bad("sort order is not an object");
  SortOrder order;
  SKADE_ASSIGN_OR_RETURN(order.order_id, GetInt(j, "order-id", ctx));
  SKADE_ASSIGN_OR_RETURN(const Json* arr, GetArray(j, "fields", ctx, true));
  for (const Json& f : *arr) {
    if (!f.is_object()) return Bad("sort field is not an object");
    SortField sf;
    SKADE_ASSIGN_OR_RETURN(std::string transform, GetString(f, "transform", ctx));
    SKADE_ASSIGN_OR_RETURN(sf.transform, Transform::Parse(transform));
    SKADE_ASSIGN_OR_RETURN(sf.source_id, GetInt(f, "source-id", ctx));
    SKADE_ASSIGN_OR_RETURN(std::string dir, GetString(f, "direction", ctx));
    if (dir != "asc" && dir != "desc") return Bad("sort direction must be asc or desc");
    sf.direction = dir == "asc" ? SortDirection::kAsc : SortDirection::kDesc;
    SKADE_ASSIGN_OR_RETURN(std::string nulls, GetString(f, "null-order", ctx));
    if (nulls != "nulls-first" && nulls != "nulls-last") {
      return Bad("null-order must be nulls-first or nulls-last");
    }
    sf.null_order = nulls == "nulls-first" ? NullOrder::kNullsFirst : NullOrder::kNullsLast;
    order.fields.push_back(sf);
  }
  return order;
}

Json SortOrderJson(const SortOrder& o) {
  Json j = Json::object();
  j["order-id"] = o.order_id;
  j["fields"] = Json::array();
  for (const SortField& f : o.fields) {
    Json fj = Json::object();
    fj["transform"] = f.transform.ToString();
    fj["source-id"] = f.source_id;
    fj["direction"] = f.direction == SortDirection::kAsc ? "asc" : "desc";
    fj["null-order"] = f.null_order == NullOrder::kNullsFirst ? "nulls-first" : "nulls-last";
    j["fields"].push_back(fj);
  }
  return j;
}

// ---- snapshots ----

const std::set<std::string>& KnownSnapshotKeys() {
  static const std::set<std::string> keys = {
      "snapshot-id", "parent-snapshot-id", "sequence-number", "timestamp-ms", "manifest-list",
      "manifests", "summary", "schema-id", "first-row-id", "added-rows", "key-id"};
  return keys;
}

Result<Snapshot> ParseSnapshot(const Json& j) {
  const char* ctx = "snapshot";
  if (!j.is_object()) return Bad("snapshot is not an object");
  Snapshot s;
  SKADE_ASSIGN_OR_RETURN(s.snapshot_id, GetLong(j, "snapshot-id", ctx));
  std::string sctx = "snapshot " + std::to_string(s.snapshot_id);
  SKADE_ASSIGN_OR_RETURN(s.parent_snapshot_id, GetOptLong(j, "parent-snapshot-id", sctx));
  SKADE_ASSIGN_OR_RETURN(auto seq, GetOptLong(j, "sequence-number", sctx));
  s.sequence_number = seq.value_or(0);
  SKADE_ASSIGN_OR_RETURN(s.timestamp_ms, GetLong(j, "timestamp-ms", sctx));
  if (Find(j, "manifest-list") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(s.manifest_list, GetString(j, "manifest-list", sctx));
  } else {
    SKADE_ASSIGN_OR_RETURN(const Json* m, GetArray(j, "manifests", sctx, false));
    if (m == nullptr) return Bad(sctx + ": neither 'manifest-list' nor 'manifests'");
    for (const Json& v : *m) {
      if (!v.is_string()) return Bad(sctx + ": manifests must be strings");
      s.manifests.push_back(v.get<std::string>());
    }
  }
  if (const Json* sum = Find(j, "summary")) {
    if (!sum->is_object()) return Bad(sctx + ": summary is not an object");
    for (auto it = sum->begin(); it != sum->end(); ++it) {
      std::string v = it->is_string() ? it->get<std::string>() : Dump(*it);
      if (it.key() == "operation") {
        s.summary.insert(s.summary.begin(), {it.key(), v});
      } else {
        s.summary.emplace_back(it.key(), v);
      }
    }
  }
  SKADE_ASSIGN_OR_RETURN(auto schema_id, GetOptLong(j, "schema-id", sctx));
  if (schema_id) s.schema_id = static_cast<int>(*schema_id);
  SKADE_ASSIGN_OR_RETURN(s.first_row_id, GetOptLong(j, "first-row-id", sctx));
  SKADE_ASSIGN_OR_RETURN(s.added_rows, GetOptLong(j, "added-rows", sctx));
  if (Find(j, "key-id") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(std::string key_id, GetString(j, "key-id", sctx));
    s.key_id = key_id;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!KnownSnapshotKeys().count(it.key())) s.unknown.emplace_back(it.key(), Dump(*it));
  }
  return s;
}

Json SnapshotJson(const Snapshot& s, int format_version) {
  Json j = Json::object();
  if (format_version >= 2) j["sequence-number"] = s.sequence_number;
  j["snapshot-id"] = s.snapshot_id;
  if (s.parent_snapshot_id) j["parent-snapshot-id"] = *s.parent_snapshot_id;
  j["timestamp-ms"] = s.timestamp_ms;
  Json summary = Json::object();
  for (const auto& [k, v] : s.summary) summary[k] = v;
  j["summary"] = summary;
  if (!s.manifest_list.empty()) {
    j["manifest-list"] = s.manifest_list;
  } else {
    j["manifests"] = s.manifests;
  }
  if (s.schema_id) j["schema-id"] = *s.schema_id;
  if (s.first_row_id) j["first-row-id"] = *s.first_row_id;
  if (s.added_rows) j["added-rows"] = *s.added_rows;
  if (s.key_id) j["key-id"] = *s.key_id;
  for (const auto& [k, raw] : s.unknown) j[k] = ParseOrderedJson(raw, "stored JSON").ValueOr(Json());
  return j;
}

Result<SnapshotRef> ParseRef(const Json& j, const std::string& name) {
  std::string ctx = "ref '" + name + "'";
  if (!j.is_object()) return Bad(ctx + " is not an object");
  SnapshotRef r;
  SKADE_ASSIGN_OR_RETURN(r.snapshot_id, GetLong(j, "snapshot-id", ctx));
  SKADE_ASSIGN_OR_RETURN(std::string type, GetString(j, "type", ctx));
  if (type == "branch") {
    r.type = RefType::kBranch;
  } else if (type == "tag") {
    r.type = RefType::kTag;
  } else {
    return Bad(ctx + ": type must be branch or tag");
  }
  SKADE_ASSIGN_OR_RETURN(auto min_keep, GetOptLong(j, "min-snapshots-to-keep", ctx));
  if (min_keep) r.min_snapshots_to_keep = static_cast<int>(*min_keep);
  SKADE_ASSIGN_OR_RETURN(r.max_snapshot_age_ms, GetOptLong(j, "max-snapshot-age-ms", ctx));
  SKADE_ASSIGN_OR_RETURN(r.max_ref_age_ms, GetOptLong(j, "max-ref-age-ms", ctx));
  return r;
}

Json RefJson(const SnapshotRef& r) {
  Json j = Json::object();
  j["snapshot-id"] = r.snapshot_id;
  j["type"] = r.type == RefType::kBranch ? "branch" : "tag";
  if (r.min_snapshots_to_keep) j["min-snapshots-to-keep"] = *r.min_snapshots_to_keep;
  if (r.max_snapshot_age_ms) j["max-snapshot-age-ms"] = *r.max_snapshot_age_ms;
  if (r.max_ref_age_ms) j["max-ref-age-ms"] = *r.max_ref_age_ms;
  return j;
}

}  // namespace json_internal

using namespace json_internal;  // NOLINT: this file defines them

namespace {

const std::set<std::string>& KnownMetadataKeys() {
  static const std::set<std::string> keys = {
      "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
      "last-column-id", "schema", "schemas", "current-schema-id", "partition-spec",
      "partition-specs", "default-spec-id", "last-partition-id", "properties",
      "current-snapshot-id", "snapshots", "snapshot-log", "metadata-log", "sort-orders",
      "default-sort-order-id", "refs", "statistics", "partition-statistics", "next-row-id",
      "encryption-keys"};
  return keys;
}

Result<TableMetadata> ParseMetadataObject(const Json& j) {
  const char* ctx = "table metadata";
  if (!j.is_object()) return Bad("table metadata is not a JSON object");
  TableMetadata m;
  SKADE_ASSIGN_OR_RETURN(m.format_version, GetInt(j, "format-version", ctx));
  if (m.format_version < 1) return Bad("invalid format-version " + std::to_string(m.format_version));
  if (m.format_version > 3) {
    return Status::NotImplemented("cannot read unsupported format-version " +
                                  std::to_string(m.format_version) + " (skade reads 1, 2 and 3)");
  }
  const bool v1 = m.format_version == 1;
  if (Find(j, "table-uuid") != nullptr || !v1) {
    SKADE_ASSIGN_OR_RETURN(m.table_uuid, GetString(j, "table-uuid", ctx));
  }
  SKADE_ASSIGN_OR_RETURN(m.location, GetString(j, "location", ctx));
  if (!v1 || Find(j, "last-sequence-number") != nullptr) {
    SKADE_ASSIGN_OR_RETURN(m.last_sequence_number, GetLong(j, "last-sequence-number", ctx));
  }
  SKADE_ASSIGN_OR_RETURN(m.last_updated_ms, GetLong(j, "last-updated-ms", ctx));
  SKADE_ASSIGN_OR_RETURN(m.last_column_id, GetInt(j, "last-column-id", ctx));

  // Schemas: v2 requires `schemas` + `current-schema-id`; v1 may have only `schema`.
  SKADE_ASSIGN_OR_RETURN(const Json* schemas, GetArray(j, "schemas", ctx, false));
  if (schemas != nullptr) {
    for (const Json& s : *schemas) {
      SKADE_ASSIGN_OR_RETURN(SchemaPtr schema, ParseSchema(s, "schemas", 0));
      m.schemas.push_back(std::move(schema));
    }
    SKADE_ASSIGN_OR_RETURN(auto current, GetOptLong(j, "current-schema-id", ctx));
    if (!current && !v1) return Bad("table metadata: missing 'current-schema-id'");
    m.current_schema_id = current ? static_cast<int>(*current)
                                  : (m.schemas.empty() ? 0 : m.schemas.front()->schema_id());
  } else if (!v1) {
    return Bad("table metadata: schemas must exist in format v2");
  } else {
    const Json* s = Find(j, "schema");
    if (s == nullptr) return Bad("table metadata: missing 'schema' and 'schemas'");
    SKADE_ASSIGN_OR_RETURN(SchemaPtr schema, ParseSchema(*s, "schema", 0));
    m.current_schema_id = schema->schema_id();
    m.schemas.push_back(std::move(schema));
  }
  if (m.SchemaById(m.current_schema_id) == nullptr) {
    return Bad("table metadata: cannot find schema with current-schema-id=" +
               std::to_string(m.current_schema_id) + " from schemas");
  }

  // Partition specs.
  SKADE_ASSIGN_OR_RETURN(const Json* specs, GetArray(j, "partition-specs", ctx, false));
  if (specs != nullptr) {
    for (const Json& s : *specs) {
      if (!s.is_object()) return Bad("partition-specs: entry is not an object");
      SKADE_ASSIGN_OR_RETURN(int spec_id, GetInt(s, "spec-id", "partition-specs"));
      SKADE_ASSIGN_OR_RETURN(const Json* fields, GetArray(s, "fields", "partition-specs", true));
      SKADE_ASSIGN_OR_RETURN(auto pfields, ParsePartitionFields(*fields, "partition-specs"));
      m.partition_specs.push_back(std::make_shared<const PartitionSpec>(spec_id, std::move(pfields)));
    }
    SKADE_ASSIGN_OR_RETURN(auto def, GetOptLong(j, "default-spec-id", ctx));
    if (!def && !v1) return Bad("table metadata: missing 'default-spec-id'");
    m.default_spec_id = def ? static_cast<int>(*def) : m.partition_specs.front()->spec_id();
  } else if (!v1) {
    return Bad("table metadata: partition-specs must exist in format v2");
  } else {
    SKADE_ASSIGN_OR_RETURN(const Json* fields, GetArray(j, "partition-spec", ctx, true));
    SKADE_ASSIGN_OR_RETURN(auto pfields, ParsePartitionFields(*fields, "partition-spec"));
    m.partition_specs.push_back(std::make_shared<const PartitionSpec>(0, std::move(pfields)));
    m.default_spec_id = 0;
  }
  if (m.SpecById(m.default_spec_id) == nullptr) {
    return Bad("table metadata: default-spec-id " + std::to_string(m.default_spec_id) +
               " is not among partition-specs");
  }
  SKADE_ASSIGN_OR_RETURN(auto last_pid, GetOptLong(j, "last-partition-id", ctx));
  if (!last_pid && !v1) return Bad("table metadata: missing 'last-partition-id'");
  if (last_pid) {
    m.last_partition_id = static_cast<int>(*last_pid);
  } else {
    m.last_partition_id = 999;
    for (const auto& s : m.partition_specs) {
      m.last_partition_id = std::max(m.last_partition_id, s->last_assigned_field_id());
    }
  }

  if (const Json* props = Find(j, "properties")) {
    if (!props->is_object()) return Bad("table metadata: 'properties' is not an object");
    for (auto it = props->begin(); it != props->end(); ++it) {
      m.properties[it.key()] = it->is_string() ? it->get<std::string>() : Dump(*it);
    }
  }

  SKADE_ASSIGN_OR_RETURN(auto current_snapshot, GetOptLong(j, "current-snapshot-id", ctx));
  if (current_snapshot && *current_snapshot != -1) m.current_snapshot_id = current_snapshot;

  SKADE_ASSIGN_OR_RETURN(const Json* snaps, GetArray(j, "snapshots", ctx, false));
  if (snaps != nullptr) {
    for (const Json& s : *snaps) {
      SKADE_ASSIGN_OR_RETURN(Snapshot snap, ParseSnapshot(s));
      m.snapshots.push_back(std::move(snap));
    }
  }
  if (m.current_snapshot_id && m.CurrentSnapshot() == nullptr) {
    return Bad("table metadata: current-snapshot-id " + std::to_string(*m.current_snapshot_id) +
               " is not among snapshots");
  }

  SKADE_ASSIGN_OR_RETURN(const Json* slog, GetArray(j, "snapshot-log", ctx, false));
  if (slog != nullptr) {
    for (const Json& e : *slog) {
      if (!e.is_object()) return Bad("snapshot-log: entry is not an object");
      SnapshotLogEntry entry;
      SKADE_ASSIGN_OR_RETURN(entry.timestamp_ms, GetLong(e, "timestamp-ms", "snapshot-log"));
      SKADE_ASSIGN_OR_RETURN(entry.snapshot_id, GetLong(e, "snapshot-id", "snapshot-log"));
      m.snapshot_log.push_back(entry);
    }
  }
  SKADE_ASSIGN_OR_RETURN(const Json* mlog, GetArray(j, "metadata-log", ctx, false));
  if (mlog != nullptr) {
    for (const Json& e : *mlog) {
      if (!e.is_object()) return Bad("metadata-log: entry is not an object");
      MetadataLogEntry entry;
      SKADE_ASSIGN_OR_RETURN(entry.timestamp_ms, GetLong(e, "timestamp-ms", "metadata-log"));
      SKADE_ASSIGN_OR_RETURN(entry.metadata_file, GetString(e, "metadata-file", "metadata-log"));
      m.metadata_log.push_back(std::move(entry));
    }
  }

  SKADE_ASSIGN_OR_RETURN(const Json* orders, GetArray(j, "sort-orders", ctx, !v1));
  if (orders != nullptr) {
    for (const Json& o : *orders) {
      SKADE_ASSIGN_OR_RETURN(SortOrder order, ParseSortOrder(o));
      m.sort_orders.push_back(std::move(order));
    }
    SKADE_ASSIGN_OR_RETURN(auto def, GetOptLong(j, "default-sort-order-id", ctx));
    if (!def && !v1) return Bad("table metadata: missing 'default-sort-order-id'");
    m.default_sort_order_id = def ? static_cast<int>(*def) : 0;
  } else {
    m.sort_orders.push_back(SortOrder{});
  }

  if (const Json* refs = Find(j, "refs")) {
    if (!refs->is_object()) return Bad("table metadata: 'refs' is not an object");
    for (auto it = refs->begin(); it != refs->end(); ++it) {
      SKADE_ASSIGN_OR_RETURN(SnapshotRef ref, ParseRef(*it, it.key()));
      m.refs[it.key()] = ref;
    }
  } else if (m.current_snapshot_id) {
    // Spec: without refs, the current snapshot id implies the main branch.
    m.refs["main"] = SnapshotRef{*m.current_snapshot_id, RefType::kBranch, {}, {}, {}};
  }

  SKADE_ASSIGN_OR_RETURN(m.next_row_id, GetOptLong(j, "next-row-id", ctx));
  if (const Json* v = Find(j, "statistics")) m.statistics_json = Dump(*v);
  if (const Json* v = Find(j, "partition-statistics")) m.partition_statistics_json = Dump(*v);
  if (const Json* v = Find(j, "encryption-keys")) m.encryption_keys_json = Dump(*v);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!KnownMetadataKeys().count(it.key())) m.unknown.emplace_back(it.key(), Dump(*it));
  }
  return m;
}

}  // namespace

Result<TableMetadata> ParseTableMetadata(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "table metadata"));
  return ParseMetadataObject(j);
}

Result<TableMetadata> ParseTableMetadataFile(std::string_view bytes) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return ParseTableMetadata(bytes);
  }
  // Iceberg's write.metadata.compression-codec=gzip: the whole JSON document, gzip-framed.
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Status::Internal("cannot start zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > (1u << 30)) rc = Z_MEM_ERROR;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::Corruption("broken gzip metadata file");
  return ParseTableMetadata(out);
}

namespace {

// Appends `text` as a JSON string, exactly as Dump would write it.
void AppendString(std::string* out, std::string_view text) {
  // Without an early exit, so that the compiler vectorises the scan (the strings are short).
  bool special = false;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    special |= (u < 0x20) | (u >= 0x80) | (c == '"') | (c == '\\');
  }
  if (special) {
    // Escapes and UTF-8 (invalid sequences replaced) as nlohmann does it.
    *out += Dump(Json(std::string(text)));
    return;
  }
  out->reserve(out->size() + text.size() + 2);
  *out += '"';
  *out += text;
  *out += '"';
}

// A compact JSON object written member by member into a string, in the order the members come.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string* out) : out_(*out) {}
  void Member(std::string_view key, const Json& value) { Raw(key, Dump(value)); }
  void Member(std::string_view key, int64_t value) {
    // Snapshot ids have 19 digits: std::to_string would allocate for each.
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
    (void)ec;  // 24 bytes hold every int64_t
    Raw(key, std::string_view(digits, static_cast<size_t>(end - digits)));
  }
  void String(std::string_view key, std::string_view value) {
    Key(key);
    AppendString(&out_, value);
  }
  void Raw(std::string_view key, std::string_view json) {
    Key(key);
    out_ += json;
  }
  // Starts a member whose value the caller appends.
  void Key(std::string_view key) {
    out_ += first_ ? '{' : ',';
    first_ = false;
    AppendString(&out_, key);
    out_ += ':';
  }
  void Finish() { out_ += first_ ? "{}" : "}"; }

 private:
  std::string& out_;
  bool first_ = true;
};

// Spec Appendix C, written straight to text (a table holds thousands of snapshots, and each
// commit writes them all): the same bytes as Dump(SnapshotJson(s, format_version)).
void AppendSnapshot(std::string* out, const Snapshot& s, int format_version) {
  ObjectWriter w(out);
  if (format_version >= 2) w.Member("sequence-number", s.sequence_number);
  w.Member("snapshot-id", s.snapshot_id);
  if (s.parent_snapshot_id) w.Member("parent-snapshot-id", *s.parent_snapshot_id);
  w.Member("timestamp-ms", s.timestamp_ms);
  // A key given twice keeps its first place and its last value, as the JSON object does.
  bool repeated = false;
  if (s.summary.size() <= 64) {
    // Without allocating: this runs for every snapshot of every commit.
    for (size_t i = 1; i < s.summary.size() && !repeated; ++i) {
      for (size_t j = 0; j < i && !repeated; ++j) repeated = s.summary[i].first == s.summary[j].first;
    }
  } else {
    std::set<std::string_view> keys;
    for (const auto& [k, v] : s.summary) repeated = repeated || !keys.insert(k).second;
  }
  if (repeated) {
    Json summary = Json::object();
    for (const auto& [k, v] : s.summary) summary[k] = v;
    w.Member("summary", summary);
  } else {
    w.Key("summary");
    ObjectWriter summary(out);
    for (const auto& [k, v] : s.summary) summary.String(k, v);
    summary.Finish();
  }
  if (!s.manifest_list.empty()) {
    w.String("manifest-list", s.manifest_list);
  } else {
    w.Member("manifests", Json(s.manifests));
  }
  if (s.schema_id) w.Member("schema-id", *s.schema_id);
  if (s.first_row_id) w.Member("first-row-id", *s.first_row_id);
  if (s.added_rows) w.Member("added-rows", *s.added_rows);
  if (s.key_id) w.String("key-id", *s.key_id);
  for (const auto& [k, raw] : s.unknown) w.Member(k, ParseOrderedJson(raw, "stored JSON").ValueOr(Json()));
  w.Finish();
}

// An array of `items`, each appended by `append`.
template <typename T, typename F>
void AppendArray(std::string* out, const std::vector<T>& items, F append) {
  *out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) *out += ',';
    append(items[i]);
  }
  *out += ']';
}

}  // namespace

std::string TableMetadataToJson(const TableMetadata& m) {
  // Written member by member, the snapshots and their log straight to text, compact as Java
  // Iceberg writes it (a third fewer bytes to write and fsync).
  // Sized up front: with a long history this is megabytes, and growing it would copy them.
  size_t snapshot_bytes = 0;
  for (size_t i = 0; i < m.snapshots.size(); ++i) snapshot_bytes += m.snapshots.Json(i, m.format_version).size() + 1;
  std::string out;
  out.reserve(4096 + snapshot_bytes + m.snapshot_log.size() * 64 + m.metadata_log.size() * 256);
  ObjectWriter w(&out);
  w.Member("format-version", m.format_version);
  if (!m.table_uuid.empty()) w.String("table-uuid", m.table_uuid);
  w.String("location", m.location);
  if (m.format_version >= 2) w.Member("last-sequence-number", m.last_sequence_number);
  w.Member("last-updated-ms", m.last_updated_ms);
  w.Member("last-column-id", m.last_column_id);
  if (m.format_version == 1) {
    if (SchemaPtr s = m.CurrentSchema()) w.Member("schema", SchemaJson(*s));
  }
  w.Member("current-schema-id", m.current_schema_id);
  Json schemas = Json::array();
  for (const SchemaPtr& s : m.schemas) schemas.push_back(SchemaJson(*s));
  w.Member("schemas", schemas);
  if (m.format_version == 1) {
    if (PartitionSpecPtr s = m.DefaultSpec()) w.Member("partition-spec", PartitionFieldsJson(*s));
  }
  w.Member("default-spec-id", m.default_spec_id);
  Json specs = Json::array();
  for (const PartitionSpecPtr& s : m.partition_specs) specs.push_back(SpecJson(*s));
  w.Member("partition-specs", specs);
  w.Member("last-partition-id", m.last_partition_id);
  w.Member("default-sort-order-id", m.default_sort_order_id);
  Json orders = Json::array();
  for (const SortOrder& o : m.sort_orders) orders.push_back(SortOrderJson(o));
  w.Member("sort-orders", orders);
  w.Key("properties");
  ObjectWriter props(&out);
  for (const auto& [k, v] : m.properties) props.String(k, v);
  props.Finish();
  if (m.current_snapshot_id) {
    w.Member("current-snapshot-id", *m.current_snapshot_id);
  } else {
    w.Raw("current-snapshot-id", m.format_version == 1 ? "-1" : "null");
  }
  Json refs = Json::object();
  for (const auto& [name, ref] : m.refs) refs[name] = RefJson(ref);
  w.Member("refs", refs);
  w.Key("snapshots");
  // Each snapshot's text is rendered once and shared by the metadata versions that keep it.
  out += '[';
  for (size_t i = 0; i < m.snapshots.size(); ++i) {
    if (i > 0) out += ',';
    out += m.snapshots.Json(i, m.format_version);
  }
  out += ']';
  if (!m.statistics_json.empty()) w.Member("statistics", ParseOrderedJson(m.statistics_json, "stored JSON").ValueOr(Json()));
  if (!m.partition_statistics_json.empty()) {
    w.Member("partition-statistics", ParseOrderedJson(m.partition_statistics_json, "stored JSON").ValueOr(Json()));
  }
  w.Key("snapshot-log");
  AppendArray(&out, m.snapshot_log, [&](const SnapshotLogEntry& e) {
    ObjectWriter entry(&out);
    entry.Member("timestamp-ms", e.timestamp_ms);
    entry.Member("snapshot-id", e.snapshot_id);
    entry.Finish();
  });
  w.Key("metadata-log");
  AppendArray(&out, m.metadata_log, [&](const MetadataLogEntry& e) {
    ObjectWriter entry(&out);
    entry.Member("timestamp-ms", e.timestamp_ms);
    entry.String("metadata-file", e.metadata_file);
    entry.Finish();
  });
  if (m.next_row_id) w.Member("next-row-id", *m.next_row_id);
  if (!m.encryption_keys_json.empty()) {
    w.Member("encryption-keys", ParseOrderedJson(m.encryption_keys_json, "stored JSON").ValueOr(Json()));
  }
  for (const auto& [k, raw] : m.unknown) w.Member(k, ParseOrderedJson(raw, "stored JSON").ValueOr(Json()));
  w.Finish();
  return out;
}

Result<SchemaPtr> ParseSchemaJson(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "schema"));
  return ParseSchema(j, "schema", 0);
}

std::string SchemaToJson(const Schema& schema) { return Dump(SchemaJson(schema)); }

Result<PartitionSpecPtr> ParsePartitionSpecJson(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "partition-spec"));
  if (!j.is_object()) return Bad("partition-spec: not an object");
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> id, GetOptLong(j, "spec-id", "partition-spec"));
  SKADE_ASSIGN_OR_RETURN(const Json* fields, GetArray(j, "fields", "partition-spec", false));
  std::vector<PartitionField> parsed;
  if (fields != nullptr) {
    SKADE_ASSIGN_OR_RETURN(parsed, ParsePartitionFields(*fields, "partition-spec"));
  }
  return std::make_shared<const PartitionSpec>(static_cast<int>(id.value_or(0)), std::move(parsed));
}

std::string PartitionSpecToJson(const PartitionSpec& spec) { return Dump(SpecJson(spec)); }

Result<SortOrder> ParseSortOrderJson(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "write-order"));
  if (!j.is_object()) return Bad("write-order: not an object");
  return ParseSortOrder(j);
}

std::string SortOrderToJson(const SortOrder& order) { return Dump(SortOrderJson(order)); }

SnapshotList::SnapshotList(std::initializer_list<Snapshot> snapshots) {
  nodes_.reserve(snapshots.size());
  for (const Snapshot& s : snapshots) push_back(s);
}

void SnapshotList::push_back(Snapshot snapshot) { nodes_.push_back(std::make_shared<const Node>(std::move(snapshot))); }

std::string_view SnapshotList::Json(size_t i, int format_version) const {
  const Node& node = *nodes_.at(i);
  const int version = std::clamp(format_version, 1, 3);
  const size_t v = static_cast<size_t>(version - 1);
  std::call_once(node.rendered[v], [&] {
    std::string text;  // published whole: a throw leaves the flag unset and the slot empty
    AppendSnapshot(&text, node.snapshot, version);
    node.json[v] = std::move(text);
  });
  return node.json[v];
}

std::string SnapshotToJson(const Snapshot& snapshot, int format_version) {
  std::string out;
  AppendSnapshot(&out, snapshot, format_version);
  return out;
}

Result<TypePtr> ParseTypeJson(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json j, ParseJson(json, "type"));
  return ParseType(j, "type");
}

std::string TypeToJson(const Type& type) { return Dump(TypeJson(type)); }

}  // namespace skade::iceberg
