#include <algorithm>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "skade/cli/commands.h"
#include "skade/cli/output.h"
#include "skade/cli/lake.h"
#include "skade/cli/table_location.h"
#include "skade/base/ordered_parallel.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/parquet_pages.h"
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


// A file's partition values by field name, as people read them (day(ts) as "2024-01-01", not
// its ordinal 19723).
Json PartitionJson(const iceberg::DataFile& f, const iceberg::PartitionSpec* spec) {
  Json p = Json::object();
  for (size_t i = 0; i < f.partition.size(); ++i) {
    const iceberg::PartitionField* field = spec && i < spec->fields().size() ? &spec->fields()[i] : nullptr;
    std::string name = field ? field->name : std::to_string(i);
    if (!f.partition[i]) {
      p[name] = nullptr;
    } else {
      p[name] = field ? field->transform.HumanString(f.partition[i]) : f.partition[i]->ToString();
    }
  }
  return p;
}

// "ts_day=2024-01-01, region=eu" for the text listing.
std::string PartitionText(const Json& partition) {
  std::string text;
  for (const auto& [name, value] : partition.items()) {
    text += (text.empty() ? "" : ", ") + name + "=" + (value.is_null() ? "null" : value.get<std::string>());
  }
  return text;
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

// What the page checks of the listed files found (issue 31: files without checksums are
// said to have none, never passed over in silence).
struct PageCheckSummary {
  int64_t files = 0;         // live Parquet files checked
  int64_t checksummed = 0;   // of those, files whose pages carry CRCs (every page checked)
  int64_t without = 0;       // files whose pages carry none
  int64_t failed = 0;        // damaged or unreadable
  int64_t pages_with_crc = 0;
  std::vector<std::string> errors;  // one line per failed file
};

// Checks the pages of every live Parquet file in `manifests` (a few at once, as a scan would:
// iceberg/parquet_pages.h, PageScope::kWhereChecksummed) and records each result in its
// file's JSON as "page_checksums": "verified" (with "pages_with_crc"), "none", "damaged" or
// "unreadable" (with "error").
PageCheckSummary CheckPages(io::FileIO& io, Json& manifests) {
  PageCheckSummary summary;
  std::vector<Json*> files;
  for (Json& mj : manifests) {
    for (Json& fj : mj["files"]) {
      if (fj["status"] == "deleted" || fj["file_format"] != "PARQUET") continue;
      files.push_back(&fj);
    }
  }
  const int threads = static_cast<int>(std::min<size_t>(files.size(), 8));
  Status done = OrderedParallel<Result<iceberg::ParquetPageReport>>(
      files.size(), threads, static_cast<size_t>(2 * std::max(threads, 1)),
      [&](size_t i) {
        return iceberg::CheckParquetPages(io, (*files[i])["file_path"].get<std::string>(),
                                          iceberg::PageScope::kWhereChecksummed);
      },
      [&](size_t i, Result<iceberg::ParquetPageReport>& report) {
        Json& fj = *files[i];
        ++summary.files;
        if (!report.ok()) {
          ++summary.failed;
          fj["page_checksums"] = report.status().code() == StatusCode::kCorruption ? "damaged" : "unreadable";
          fj["error"] = report.status().ToString();
          summary.errors.push_back(report.status().ToString());
        } else if (report->checksummed()) {
          ++summary.checksummed;
          summary.pages_with_crc += report->pages_with_crc;
          fj["page_checksums"] = "verified";
          fj["pages_with_crc"] = report->pages_with_crc;
        } else {
          ++summary.without;
          fj["page_checksums"] = "none";
        }
        return Status::Ok();
      });
  (void)done;  // every result is recorded above; consume never fails
  return summary;
}

std::string PageNote(const Json& fj) {
  if (!fj.contains("page_checksums")) return "";
  const std::string state = fj["page_checksums"].get<std::string>();
  if (state == "verified") return "  pages: " + std::to_string(fj["pages_with_crc"].get<int64_t>()) + " CRCs verified";
  if (state == "none") return "  pages: no checksums";
  return state == "damaged" ? "  pages: DAMAGED" : "  pages: UNREADABLE";
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
  std::optional<PageCheckSummary> pages;
  if (args.check_pages && snapshot != nullptr && manifests.status.ok()) {
    pages = CheckPages(*table_io, manifests.json);
  }
  const bool pages_failed = pages && pages->failed > 0;

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
    if (pages) {
      j["page_checksums"] = {{"files", pages->files},           {"checksummed", pages->checksummed},
                             {"without_checksums", pages->without}, {"failed", pages->failed},
                             {"pages_with_crc", pages->pages_with_crc}};
    }
    out << Dump(j, 2) << "\n";
    if (!manifests.status.ok()) {
      err << "skade: " << manifests.status.ToString() << "\n";
      return 1;
    }
    if (pages_failed) {
      for (const std::string& e : pages->errors) err << "skade: " << e << "\n";
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
        if (!fj["partition"].empty()) out << "  " << PartitionText(fj["partition"]);
        out << PageNote(fj) << "\n";
      }
    }
  }
  if (pages) {
    out << "\nPage checksums\n  " << pages->files << " live Parquet file(s): " << pages->checksummed
        << " carry page CRCs";
    if (pages->checksummed > 0) out << ", all verified (" << pages->pages_with_crc << " pages)";
    out << "; " << pages->without << " carry none (their pages cannot be verified)";
    if (pages->failed > 0) out << "; " << pages->failed << " FAILED";
    out << "\n";
  }
  if (!manifests.status.ok()) {
    err << "skade: " << manifests.status.ToString() << "\n";
    return 1;
  }
  if (pages_failed) {
    for (const std::string& e : pages->errors) err << "skade: " << e << "\n";
    return 1;
  }
  return 0;
}

}  // namespace skade::cli
