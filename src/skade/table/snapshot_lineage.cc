#include "skade/table/snapshot_lineage.h"
#include "skade/base/json_parse_internal.h"

#include <nlohmann/json.hpp>

namespace skade::table {

using Json = nlohmann::json;

std::string EncodeSnapshotLineage(const SnapshotLineage& lineage) {
  Json inputs = Json::array();
  for (const LineageInput& in : lineage.inputs) {
    Json i{{"table", in.table.ToString()}};
    if (in.snapshot_id) i["snapshot-id"] = *in.snapshot_id;
    inputs.push_back(std::move(i));
  }
  Json columns = Json::object();
  for (const auto& [out, fields] : lineage.columns) {
    Json list = Json::array();
    for (const LineageField& f : fields) list.push_back(Json::array({f.input, f.field}));
    columns[out] = std::move(list);
  }
  return Json{{"inputs", std::move(inputs)}, {"columns", std::move(columns)}}.dump();
}

Result<SnapshotLineage> DecodeSnapshotLineage(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(const Json doc, ParseJson(json, "snapshot lineage"));
  auto bad = [](const std::string& why) { return Status::InvalidArgument("snapshot lineage: " + why); };
  if (!doc.is_object() || !doc.contains("inputs") || !doc["inputs"].is_array()) return bad("not a lineage object");
  SnapshotLineage out;
  for (const Json& i : doc["inputs"]) {
    if (!i.is_object() || !i.contains("table") || !i["table"].is_string()) return bad("an input names no table");
    LineageInput in;
    SKADE_ASSIGN_OR_RETURN(in.table, catalog::TableIdent::Parse(i["table"].get<std::string>()));
    SKADE_RETURN_IF_ERROR(in.table.Validate());
    if (i.contains("snapshot-id")) {
      if (!i["snapshot-id"].is_number_integer()) return bad("snapshot-id is not an integer");
      in.snapshot_id = i["snapshot-id"].get<int64_t>();
    }
    out.inputs.push_back(std::move(in));
  }
  if (doc.contains("columns")) {
    if (!doc["columns"].is_object()) return bad("columns is not an object");
    for (const auto& [name, list] : doc["columns"].items()) {
      if (!list.is_array()) return bad("column '" + name + "' has no field list");
      std::vector<LineageField>& fields = out.columns[name];
      for (const Json& f : list) {
        if (!f.is_array() || f.size() != 2 || !f[0].is_number_unsigned() || !f[1].is_string() ||
            f[0].get<size_t>() >= out.inputs.size()) {
          return bad("column '" + name + "' names a field of no input");
        }
        fields.push_back({f[0].get<size_t>(), f[1].get<std::string>()});
      }
    }
  }
  return out;
}

Result<std::optional<SnapshotLineage>> SnapshotLineageOf(const iceberg::Snapshot& snapshot) {
  auto text = snapshot.SummaryValue(kSnapshotLineageKey);
  if (!text) return std::optional<SnapshotLineage>();
  SKADE_ASSIGN_OR_RETURN(SnapshotLineage lineage, DecodeSnapshotLineage(*text));
  return std::optional<SnapshotLineage>(std::move(lineage));
}

}  // namespace skade::table
