#include <ostream>

#include <nlohmann/json.hpp>

#include "skade/cli/commands.h"
#include "skade/cli/output.h"
#include "skade/cli/lake.h"
#include "skade/cli/table_location.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location_map.h"
#include "skade/io/routing_file_io.h"
#include "skade/base/json_parse_internal.h"

namespace skade::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json ParseRaw(const std::string& text) { return ParseOrderedJson(text, "JSON").ValueOr(Json()); }

std::string ContentName(iceberg::DataFileContent c) {
  switch (c) {
    case iceberg::DataFileContent::kData: return "data";
    case iceberg::DataFileContent::kPositionDeletes: return "position_deletes";
    case iceberg::DataFileContent::kEqualityDeletes: return "equality_deletes";
  }
  return "?";
}


Json PartitionJson(const iceberg::DataFile& f, const iceberg::PartitionSpec* spec) {
  Json p = Json::object();
  for (size_t i = 0; i < f.partition.size(); ++i) {
    std::string name = spec && i < spec->fields().size() ? spec->fields()[i].name : std::to_string(i);
    if (f.partition[i]) {
      p[name] = f.partition[i]->ToString();
    } else {
      p[name] = nullptr;
    }
  }
  return p;
}

struct ManifestListing {
  Json json = Json::array();
  Status status;
};

ManifestListing ListManifests(io::FileIO& io, const iceberg::TableMetadata& m,
                              const iceberg::Snapshot& snapshot) {
  ManifestListing out;
  iceberg::ScanPlanner planner(io, m);
  auto manifests = planner.LoadManifests(snapshot);
  if (!manifests.ok()) {
    out.status = manifests.status();
    return out;
  }
  for (const auto& mf : *manifests) {
    Json mj = Json::object();
    mj["path"] = mf.manifest_path;
    mj["length"] = mf.manifest_length;
    mj["content"] = mf.content == iceberg::ManifestContent::kData ? "data" : "deletes";
    mj["partition_spec_id"] = mf.partition_spec_id;
    mj["sequence_number"] = mf.sequence_number;
    mj["added_snapshot_id"] = mf.added_snapshot_id;
    if (mf.added_files_count) mj["added_files_count"] = *mf.added_files_count;
    if (mf.existing_files_count) mj["existing_files_count"] = *mf.existing_files_count;
    if (mf.deleted_files_count) mj["deleted_files_count"] = *mf.deleted_files_count;
    Json files = Json::array();
    auto reader = iceberg::ManifestReader::Open(io, mf.manifest_path, mf);
    if (!reader.ok()) {
      out.status = reader.status();
      return out;
    }
    const iceberg::PartitionSpec* spec = m.SpecById(mf.partition_spec_id).get();
    while (true) {
      auto entry = (*reader)->Next();
      if (!entry.ok()) {
        out.status = entry.status();
        return out;
      }
      if (!*entry) break;
      const auto& e = **entry;
      Json fj = Json::object();
      fj["status"] = e.status == iceberg::ManifestEntryStatus::kAdded
                         ? "added"
                         : (e.status == iceberg::ManifestEntryStatus::kExisting ? "existing" : "deleted");
      fj["content"] = ContentName(e.data_file.content);
      fj["file_path"] = e.data_file.file_path;
      fj["file_format"] = std::string(iceberg::FileFormatName(e.data_file.file_format));
      fj["record_count"] = e.data_file.record_count;
      fj["file_size_in_bytes"] = e.data_file.file_size_in_bytes;
      if (e.sequence_number) fj["sequence_number"] = *e.sequence_number;
      fj["partition"] = PartitionJson(e.data_file, spec);
      if (!e.data_file.equality_ids.empty()) fj["equality_ids"] = e.data_file.equality_ids;
      files.push_back(fj);
    }
    mj["files"] = files;
    out.json.push_back(mj);
  }
  return out;
}

}  // namespace

int RunInspect(const InspectArgs& args, std::ostream& out, std::ostream& err) {
  std::shared_ptr<io::FileIO> local_io = io::MakeEnvironmentFileIO();
  auto path = ResolveTableArgument(args.lake, args.table, local_io);
  if (!path.ok()) {
    err << "skade: " << path.status().ToString() << "\n";
    return 1;
  }
  auto loaded = LoadTable(*local_io, *path, args.relocate);
  if (!loaded.ok()) {
    err << "skade: " << loaded.status().ToString() << "\n";
    return 1;
  }
  const LoadedTable& t = *loaded;
  for (const std::string& note : t.notes) err << "skade: note: " << note << "\n";
  const iceberg::TableMetadata& m = t.metadata;
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);

  // Everything as JSON first; the text view is rendered from the same values.
  Json full = ParseRaw(iceberg::TableMetadataToJson(m));
  const iceberg::Snapshot* snapshot =
      args.snapshot_id ? m.SnapshotById(*args.snapshot_id) : m.CurrentSnapshot();
  if (args.snapshot_id && snapshot == nullptr) {
    err << "skade: NotFound: snapshot " << *args.snapshot_id << " not found\n";
    return 1;
  }
  ManifestListing manifests;
  if (snapshot != nullptr) manifests = ListManifests(*table_io, m, *snapshot);

  if (args.json) {
    Json j = Json::object();
    j["metadata_file"] = t.metadata_file;
    j["table_dir"] = t.table_dir;
    j["metadata"] = full;
    if (snapshot != nullptr) {
      j["manifests_snapshot_id"] = snapshot->snapshot_id;
      j["manifests"] = manifests.json;
    }
    if (!manifests.status.ok()) j["manifests_error"] = manifests.status.ToString();
    out << Dump(j, 2) << "\n";
    if (!manifests.status.ok()) {
      err << "skade: " << manifests.status.ToString() << "\n";
      return 1;
    }
    return 0;
  }

  out << "Table        " << t.table_dir << "\n";
  out << "Metadata     " << t.metadata_file << "\n";
  out << "Format       v" << m.format_version << "\n";
  out << "UUID         " << m.table_uuid << "\n";
  out << "Location     " << m.location << "\n";
  out << "Updated      " << FormatMillis(m.last_updated_ms) << "\n";
  out << "Current      "
      << (m.current_snapshot_id ? std::to_string(*m.current_snapshot_id) : std::string("(none)")) << "\n";
  out << "\nSchemas\n";
  for (const auto& s : m.schemas) {
    out << "  schema " << s->schema_id() << (s->schema_id() == m.current_schema_id ? " (current)" : "");
    if (!s->identifier_field_ids().empty()) {
      out << " identifier fields:";
      for (int id : s->identifier_field_ids()) out << " " << s->FindColumnName(id);
    }
    out << "\n";
    for (const auto& f : s->fields()) {
      out << "    " << f.id << ": " << f.name << " " << (f.required ? "required " : "optional ")
          << f.type->ToString() << (f.doc.empty() ? "" : "  -- " + f.doc) << "\n";
    }
  }
  out << "\nPartition specs\n";
  for (const auto& spec : m.partition_specs) {
    out << "  spec " << spec->spec_id() << (spec->spec_id() == m.default_spec_id ? " (default)" : "")
        << (spec->fields().empty() ? ": unpartitioned" : ":") << "\n";
    auto schema = m.CurrentSchema();
    for (const auto& f : spec->fields()) {
      std::string source = schema ? schema->FindColumnName(f.source_id) : "";
      out << "    " << f.field_id << ": " << f.name << " = " << f.transform.ToString() << "("
          << (source.empty() ? "#" + std::to_string(f.source_id) : source) << ")\n";
    }
  }
  out << "\nSort orders\n";
  for (const auto& o : m.sort_orders) {
    out << "  order " << o.order_id << (o.order_id == m.default_sort_order_id ? " (default)" : "")
        << (o.fields.empty() ? ": unsorted" : ":") << "\n";
    auto schema = m.CurrentSchema();
    for (const auto& f : o.fields) {
      out << "    " << f.transform.ToString() << "("
          << (schema ? schema->FindColumnName(f.source_id) : std::to_string(f.source_id)) << ") "
          << (f.direction == iceberg::SortDirection::kAsc ? "asc" : "desc") << " "
          << (f.null_order == iceberg::NullOrder::kNullsFirst ? "nulls first" : "nulls last") << "\n";
    }
  }
  out << "\nSnapshots\n";
  for (const auto& s : m.snapshots) {
    out << "  " << s.snapshot_id << "  seq " << s.sequence_number << "  " << FormatMillis(s.timestamp_ms)
        << "  " << (s.operation().empty() ? "-" : s.operation());
    if (s.parent_snapshot_id) out << "  parent " << *s.parent_snapshot_id;
    if (s.schema_id) out << "  schema " << *s.schema_id;
    out << "\n";
    std::string summary;
    for (const auto& [k, v] : s.summary) {
      if (k == "operation") continue;
      summary += (summary.empty() ? "" : ", ") + k + "=" + v;
    }
    if (!summary.empty()) out << "      " << summary << "\n";
  }
  out << "\nRefs\n";
  for (const auto& [name, ref] : m.refs) {
    out << "  " << name << " -> " << (ref.type == iceberg::RefType::kBranch ? "branch " : "tag ")
        << ref.snapshot_id << "\n";
  }
  if (snapshot != nullptr) {
    out << "\nManifests of snapshot " << snapshot->snapshot_id << "\n";
    for (const auto& mj : manifests.json) {
      out << "  " << mj["path"].get<std::string>() << "  " << mj["content"].get<std::string>()
          << "  spec " << mj["partition_spec_id"].get<int>() << "  seq "
          << mj["sequence_number"].get<int64_t>() << "\n";
      for (const auto& fj : mj["files"]) {
        out << "    " << fj["status"].get<std::string>() << " " << fj["content"].get<std::string>()
            << " " << fj["file_path"].get<std::string>() << "  " << fj["record_count"].get<int64_t>()
            << " rows, " << fj["file_size_in_bytes"].get<int64_t>() << " bytes";
        if (!fj["partition"].empty()) out << "  " << Dump(fj["partition"], -1);
        out << "\n";
      }
    }
  }
  if (!manifests.status.ok()) {
    err << "skade: " << manifests.status.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace skade::cli
