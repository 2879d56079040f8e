// Private to skade/iceberg: the no-throw JSON helpers and the spec-object serde (schemas,
// partition specs, sort orders, snapshots, refs) shared by table_metadata_json.cc and
// table_update.cc. Defined in table_metadata_json.cc.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/table_metadata.h"

namespace skade::iceberg::json_internal {

using Json = nlohmann::ordered_json;

// Serialises without throwing: invalid UTF-8 is replaced rather than rejected.
std::string Dump(const Json& j, int indent = -1);
// kInvalidArgument with `what` as the message.
Status Bad(std::string_view what);
// Parses without throwing; kInvalidArgument naming `what` when the text is not JSON.
Result<Json> ParseJson(std::string_view text, std::string_view what);

// Member `key` of `obj`, or nullptr when absent or null. `obj` must be an object.
const Json* Find(const Json& obj, std::string_view key);
// Typed members; kInvalidArgument naming `ctx` and the key when missing or mistyped.
Result<int64_t> GetLong(const Json& obj, std::string_view key, std::string_view ctx);
Result<std::optional<int64_t>> GetOptLong(const Json& obj, std::string_view key,
                                          std::string_view ctx);
Result<int> GetInt(const Json& obj, std::string_view key, std::string_view ctx);
Result<std::string> GetString(const Json& obj, std::string_view key, std::string_view ctx);
Result<bool> GetBool(const Json& obj, std::string_view key, std::string_view ctx, bool fallback);
// The array member, or nullptr when absent and not `required`.
Result<const Json*> GetArray(const Json& obj, std::string_view key, std::string_view ctx,
                             bool required);

// Spec objects (spec Appendix C). A schema without "schema-id" gets `default_id`.
Result<TypePtr> ParseType(const Json& j, std::string_view ctx);
Json TypeJson(const Type& t);
Result<SchemaPtr> ParseSchema(const Json& j, std::string_view ctx, int default_id);
Json SchemaJson(const Schema& s);
// A partition spec's "fields" array (field ids default to 1000, 1001, … as in v1).
Result<std::vector<PartitionField>> ParsePartitionFields(const Json& arr, std::string_view ctx);
Json PartitionFieldsJson(const PartitionSpec& spec);
Json SpecJson(const PartitionSpec& spec);
Result<SortOrder> ParseSortOrder(const Json& j);
Json SortOrderJson(const SortOrder& o);
Result<Snapshot> ParseSnapshot(const Json& j);
// Writes "sequence-number" only for `format_version` ≥ 2.
Json SnapshotJson(const Snapshot& s, int format_version);
Result<SnapshotRef> ParseRef(const Json& j, const std::string& name);
Json RefJson(const SnapshotRef& r);

}  // namespace skade::iceberg::json_internal
