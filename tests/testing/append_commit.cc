#include "tests/testing/append_commit.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "skade/base/clock.h"
#include "skade/engine/data_writer.h"
#include "skade/iceberg/manifest.h"

namespace skade::testing {

Result<AppendCommit> WriteAppendCommit(engine::Database& db, io::FileIO& io, const iceberg::TableMetadata& base,
                                       const std::string& rows_sql, const std::string& tag, int64_t snapshot_id) {
  using Json = nlohmann::json;
  engine::WriteOptions wo = engine::WriteOptionsFromProperties(base.properties, base.location + "/data");
  wo.file_prefix = tag + "-";
  SKADE_ASSIGN_OR_RETURN(engine::WriteResult written,
                         engine::WriteDataFiles(db, {rows_sql, nullptr}, *base.CurrentSchema(), *base.DefaultSpec(), wo));
  const int64_t seq = base.last_sequence_number + 1;
  iceberg::ManifestWriterOptions mo;
  mo.format_version = std::max(2, base.format_version);
  mo.snapshot_id = snapshot_id;
  SKADE_ASSIGN_OR_RETURN(auto writer, iceberg::ManifestWriter::Create(base.CurrentSchema(), base.DefaultSpec(), mo));
  for (const auto& f : written.files) {
    iceberg::ManifestEntry e;
    e.snapshot_id = snapshot_id;
    e.data_file = f;
    SKADE_RETURN_IF_ERROR(writer->Add(e));
  }
  SKADE_ASSIGN_OR_RETURN(auto manifest, writer->Finish(base.location + "/metadata/" + tag + "-m0.avro"));
  SKADE_RETURN_IF_ERROR(io.CreateExclusive(manifest.manifest.manifest_path, manifest.bytes));
  std::vector<iceberg::ManifestFile> manifests;
  std::optional<int64_t> parent;
  if (const iceberg::Snapshot* current = base.CurrentSnapshot()) {
    parent = current->snapshot_id;
    SKADE_ASSIGN_OR_RETURN(manifests, iceberg::ReadManifestList(io, current->manifest_list));
  }
  manifests.push_back(manifest.manifest);
  // v3 (spec "Row Lineage"): the list hands row ids from the table's next-row-id to manifests
  // without, the snapshot records where they start and how many it took.
  std::optional<int64_t> first_row_id, added_rows;
  if (base.format_version >= 3) {
    first_row_id = base.next_row_id.value_or(0);
    SKADE_ASSIGN_OR_RETURN(added_rows, iceberg::AssignFirstRowIds(manifests, *first_row_id));
  }
  SKADE_ASSIGN_OR_RETURN(std::string list, iceberg::WriteManifestList(std::max(2, base.format_version), snapshot_id,
                                                                       parent, seq, manifests));
  const std::string list_path = base.location + "/metadata/snap-" + tag + ".avro";
  SKADE_RETURN_IF_ERROR(io.CreateExclusive(list_path, list));

  AppendCommit out;
  out.records = written.records;
  out.data_files = static_cast<int64_t>(written.files.size());
  Json snapshot{{"snapshot-id", snapshot_id},
                {"sequence-number", seq},
                {"timestamp-ms", NowMicros() / 1000},
                {"manifest-list", list_path},
                {"summary",
                 {{"operation", "append"},
                  {"added-records", std::to_string(out.records)},
                  {"added-data-files", std::to_string(out.data_files)}}},
                {"schema-id", base.current_schema_id}};
  if (parent) snapshot["parent-snapshot-id"] = *parent;
  if (first_row_id) {
    snapshot["first-row-id"] = *first_row_id;
    snapshot["added-rows"] = *added_rows;
  }
  Json requirement{{"type", "assert-ref-snapshot-id"}, {"ref", "main"}};
  requirement["snapshot-id"] = parent ? Json(*parent) : Json(nullptr);
  out.request_json =
      Json{{"requirements", Json::array({requirement})},
           {"updates", Json::array({Json{{"action", "add-snapshot"}, {"snapshot", snapshot}},
                                    Json{{"action", "set-snapshot-ref"},
                                         {"ref-name", "main"},
                                         {"type", "branch"},
                                         {"snapshot-id", snapshot_id}}})}}
          .dump();
  return out;
}

}  // namespace skade::testing
