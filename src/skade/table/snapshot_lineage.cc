#include "skade/table/snapshot_lineage.h"
#include "skade/base/json_parse_internal.h"

#include <nlohmann/json.hpp>

namespace skade::table {

using Json = nlohmann::json;

namespace {

Json EncodeField(const LineageField& f) {
  Json field = Json::array({f.input, f.field});
  if (!f.transformations.empty()) {
    Json list = Json::array();
    for (const LineageTransformation& t : f.transformations) {
      Json one = Json::array({t.type, t.subtype});
      if (t.masking) one.push_back(true);
      list.push_back(std::move(one));
    }
    field.push_back(std::move(list));
  }
  return field;
}

Result<LineageField> DecodeField(const Json& f, size_t inputs, const std::string& where) {
  auto bad = [&] { return Status::InvalidArgument("snapshot lineage: " + where + " names a field of no input"); };
  if (!f.is_array() || (f.size() != 2 && f.size() != 3) || !f[0].is_number_unsigned() || !f[1].is_string() ||
      f[0].get<size_t>() >= inputs) {
    return bad();
  }
  LineageField out{f[0].get<size_t>(), f[1].get<std::string>(), {}};
  if (f.size() == 3) {
    if (!f[2].is_array()) return bad();
    for (const Json& t : f[2]) {
      if (!t.is_array() || (t.size() != 2 && t.size() != 3) || !t[0].is_string() || !t[1].is_string() ||
          (t.size() == 3 && !t[2].is_boolean())) {
        return Status::InvalidArgument("snapshot lineage: " + where + " has a malformed transformation");
      }
      const std::string type = t[0].get<std::string>();
      if (type != "DIRECT" && type != "INDIRECT") {
        return Status::InvalidArgument("snapshot lineage: " + where + ": transformation type '" + type +
                                       "' is neither DIRECT nor INDIRECT");
      }
      out.transformations.push_back({type, t[1].get<std::string>(), t.size() == 3 && t[2].get<bool>()});
    }
  }
  return out;
}

}  // namespace

std::string EncodeSnapshotLineage(const SnapshotLineage& lineage) {
  Json inputs = Json::array();
  for (const LineageInput& in : lineage.inputs) {
    Json i = in.location.empty() ? Json{{"table", in.table.ToString()}} : Json{{"location", in.location}};
    if (in.snapshot_id) i["snapshot-id"] = *in.snapshot_id;
    inputs.push_back(std::move(i));
  }
  Json columns = Json::object();
  for (const auto& [out, fields] : lineage.columns) {
    Json list = Json::array();
    for (const LineageField& f : fields) list.push_back(EncodeField(f));
    columns[out] = std::move(list);
  }
  Json doc{{"inputs", std::move(inputs)}, {"columns", std::move(columns)}};
  if (!lineage.dataset.empty()) {
    Json list = Json::array();
    for (const LineageField& f : lineage.dataset) list.push_back(EncodeField(f));
    doc["dataset"] = std::move(list);
  }
  return doc.dump();
}

Result<SnapshotLineage> DecodeSnapshotLineage(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(const Json doc, ParseJson(json, "snapshot lineage"));
  auto bad = [](const std::string& why) { return Status::InvalidArgument("snapshot lineage: " + why); };
  if (!doc.is_object() || !doc.contains("inputs") || !doc["inputs"].is_array()) return bad("not a lineage object");
  SnapshotLineage out;
  for (const Json& i : doc["inputs"]) {
    LineageInput in;
    if (i.is_object() && i.contains("location") && i["location"].is_string() && !i.contains("table")) {
      in.location = i["location"].get<std::string>();
      if (in.location.empty()) return bad("an input names an empty location");
    } else {
      if (!i.is_object() || !i.contains("table") || !i["table"].is_string()) return bad("an input names no table");
      SKADE_ASSIGN_OR_RETURN(in.table, catalog::TableIdent::Parse(i["table"].get<std::string>()));
      SKADE_RETURN_IF_ERROR(in.table.Validate());
    }
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
        SKADE_ASSIGN_OR_RETURN(LineageField field, DecodeField(f, out.inputs.size(), "column '" + name + "'"));
        fields.push_back(std::move(field));
      }
    }
  }
  if (doc.contains("dataset")) {
    if (!doc["dataset"].is_array()) return bad("dataset is not a list");
    for (const Json& f : doc["dataset"]) {
      SKADE_ASSIGN_OR_RETURN(LineageField field, DecodeField(f, out.inputs.size(), "the dataset lineage"));
      out.dataset.push_back(std::move(field));
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

namespace {

// The report's counts, by their summary-style keys.
struct ScanCount {
  const char* key;
  int64_t ScanReport::*field;
};
constexpr ScanCount kScanCounts[] = {
    {"planning-duration-us", &ScanReport::planning_duration_us},
    {"result-data-files", &ScanReport::result_data_files},
    {"result-delete-files", &ScanReport::result_delete_files},
    {"skipped-data-files", &ScanReport::skipped_data_files},
    {"total-file-size-in-bytes", &ScanReport::total_file_size_in_bytes},
    {"total-delete-file-size-in-bytes", &ScanReport::total_delete_file_size_in_bytes},
    {"indexed-delete-files", &ScanReport::indexed_delete_files},
};

}  // namespace

std::string EncodeScanReport(const ScanReport& report) {
  Json doc{{"snapshot-id", report.snapshot_id}, {"schema-id", report.schema_id}};
  if (!report.filter.empty()) doc["filter"] = report.filter;
  doc["projected-field-names"] = report.projected_field_names;
  for (const ScanCount& c : kScanCounts) doc[c.key] = report.*c.field;
  return doc.dump();
}

Result<ScanReport> DecodeScanReport(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(const Json doc, ParseJson(json, "scan report"));
  auto bad = [](const std::string& why) { return Status::InvalidArgument("scan report: " + why); };
  if (!doc.is_object()) return bad("not an object");
  ScanReport out;
  auto integer = [&](const char* key, int64_t* value) -> Status {
    if (!doc.contains(key) || !doc[key].is_number_integer()) return bad(std::string(key) + " is not an integer");
    *value = doc[key].get<int64_t>();
    return Status::Ok();
  };
  SKADE_RETURN_IF_ERROR(integer("snapshot-id", &out.snapshot_id));
  int64_t schema_id = 0;
  SKADE_RETURN_IF_ERROR(integer("schema-id", &schema_id));
  out.schema_id = static_cast<int>(schema_id);
  for (const ScanCount& c : kScanCounts) SKADE_RETURN_IF_ERROR(integer(c.key, &(out.*c.field)));
  if (doc.contains("filter")) {
    if (!doc["filter"].is_string()) return bad("filter is not text");
    out.filter = doc["filter"].get<std::string>();
  }
  if (doc.contains("projected-field-names")) {
    const Json& names = doc["projected-field-names"];
    if (!names.is_array()) return bad("projected-field-names is not a list");
    for (const Json& n : names) {
      if (!n.is_string()) return bad("a projected field name is not text");
      out.projected_field_names.push_back(n.get<std::string>());
    }
  }
  return out;
}

Result<std::optional<ScanReport>> ScanReportOf(const iceberg::Snapshot& snapshot) {
  auto text = snapshot.SummaryValue(kScanReportKey);
  if (!text) return std::optional<ScanReport>();
  SKADE_ASSIGN_OR_RETURN(ScanReport report, DecodeScanReport(*text));
  return std::optional<ScanReport>(std::move(report));
}

}  // namespace skade::table
