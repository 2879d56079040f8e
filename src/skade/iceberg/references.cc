#include "skade/iceberg/references.h"

#include <nlohmann/json.hpp>

#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location.h"
#include "skade/base/json_parse_internal.h"

namespace skade::iceberg {

std::vector<std::pair<int64_t, std::string>> StatisticsFiles(const TableMetadata& metadata) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string* raw : {&metadata.statistics_json, &metadata.partition_statistics_json}) {
    if (raw->empty()) continue;
    nlohmann::json arr = ParseJson(*raw, "statistics").ValueOr(nlohmann::json());
    if (!arr.is_array()) continue;
    for (const auto& e : arr) {
      if (!e.is_object()) continue;
      auto id = e.find("snapshot-id");
      auto path = e.find("statistics-path");
      if (id == e.end() || path == e.end() || !id->is_number_integer() || !path->is_string()) continue;
      out.emplace_back(id->get<int64_t>(), path->get<std::string>());
    }
  }
  return out;
}

Result<std::unordered_set<std::string>> ReferencedFiles(io::FileIO& io, std::string_view metadata_location,
                                                        const TableMetadata& metadata) {
  std::unordered_set<std::string> out;
  auto add = [&](std::string_view location) { out.insert(io::NormalizeLocation(location)); };
  add(metadata_location);
  for (const auto& entry : metadata.metadata_log) add(entry.metadata_file);
  if (!metadata.location.empty()) add(io::JoinLocation(metadata.location, "metadata/version-hint.text"));
  for (const auto& [id, path] : StatisticsFiles(metadata)) add(path);
  ScanPlanner planner(io, metadata);
  std::unordered_set<std::string> manifests_read;
  for (const Snapshot& s : metadata.snapshots) {
    if (!s.manifest_list.empty()) add(s.manifest_list);
    for (const std::string& p : s.manifests) add(p);  // v1 snapshots may list manifests inline
    SKADE_ASSIGN_OR_RETURN(auto manifests, planner.LoadManifests(s));
    for (const ManifestFile& mf : manifests) {
      std::string key = io::NormalizeLocation(mf.manifest_path);
      out.insert(key);
      if (!manifests_read.insert(key).second) continue;
      SKADE_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(io, mf.manifest_path, mf));
      while (true) {
        SKADE_ASSIGN_OR_RETURN(auto entry, reader->Next());
        if (!entry) break;
        add(entry->data_file.file_path);
      }
    }
  }
  return out;
}

}  // namespace skade::iceberg
