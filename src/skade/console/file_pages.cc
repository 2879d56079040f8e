// A page of files is read from the snapshot's manifest list and then manifest by manifest,
// starting where the page before stopped: the manifest's position in the list and how many of its
// live entries (ADDED or EXISTING; spec "Manifests": DELETED entries are no longer in the
// snapshot) came before. The page reads one entry past its end to know whether there is a next
// page, so the last page says so exactly. That position travels to the browser sealed
// (io::Sealer), together with the table, snapshot and content it belongs to and a hash of the
// manifest's path; a token that does not open, or opens to a position of something else, is
// refused as a bad request.
#include "skade/console/file_pages.h"

#include <charconv>
#include <chrono>

#include <nlohmann/json.hpp>

#include "skade/base/hash.h"
#include "skade/console/answers_internal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/relocation.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/location_map.h"
#include "skade/sql/client_query.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using internal::Error;
using internal::Number;

constexpr std::string_view kTokenPurpose = "skade.console.files-page";
// A token outlives any scrolling through a list; a page kept open longer starts again.
constexpr std::chrono::seconds kTokenLifetime{24 * 3600};

RouteAnswer BadToken(const std::string& why) {
  return Error(400, "BadRequestException",
               "'page-token' " + why + ": ask for the first page again (without page-token)");
}

std::string_view ContentName(iceberg::DataFileContent content) {
  switch (content) {
    case iceberg::DataFileContent::kData: return "data";
    case iceberg::DataFileContent::kPositionDeletes: return "position-deletes";
    case iceberg::DataFileContent::kEqualityDeletes: return "equality-deletes";
  }
  return "unknown";
}

// Where a page starts: the manifest (its index in the manifest list) and the live entries of it
// that earlier pages showed.
struct Position {
  size_t manifest = 0;
  int64_t skip = 0;
};

std::string PathHash(const iceberg::ManifestFile& m) { return std::to_string(Fnv1a64(m.manifest_path)); }

Json FileJson(const iceberg::DataFile& f, const iceberg::TableMetadata& metadata) {
  Json partition = Json::object();
  iceberg::PartitionSpecPtr spec = metadata.SpecById(f.spec_id);
  for (size_t i = 0; i < f.partition.size(); i++) {
    std::string name = spec && i < spec->fields().size() ? spec->fields()[i].name : std::to_string(i);
    partition[name] = f.partition[i] ? Json(f.partition[i]->ToString()) : Json(nullptr);
  }
  Json file{{"file-path", f.file_path},
            {"content", ContentName(f.content)},
            {"file-format", iceberg::FileFormatName(f.file_format)},
            {"record-count", f.record_count},
            {"file-size-in-bytes", f.file_size_in_bytes},
            {"spec-id", f.spec_id},
            {"partition", std::move(partition)}};
  if (f.referenced_data_file) file["referenced-data-file"] = *f.referenced_data_file;
  if (f.content_offset) file["content-offset"] = *f.content_offset;
  return file;
}

}  // namespace

FilePages::FilePages(catalog::Catalog& catalog, io::FileIO& io, std::shared_ptr<const io::Sealer> sealer,
                     std::vector<std::pair<std::string, std::string>> private_paths)
    : catalog_(catalog),
      io_(io),
      sealer_(sealer ? std::move(sealer) : io::Sealer::Ephemeral()),
      private_paths_(std::move(private_paths)) {}

std::optional<RouteAnswer> FilePages::Serve(std::string_view method, std::string_view path,
                                              const std::map<std::string, std::string>& query) const {
  if (path != kFilesPath) return std::nullopt;
  if (method != "GET") return internal::OnlyGet("the file list");
  auto failed = [&](const Status& st) {
    return Error(Status(st.code(), sql::RedactPaths(st.message(), private_paths_)));
  };
  auto ident = internal::TableParam(query);
  if (!ident.ok()) return failed(ident.status());
  const std::optional<int64_t> page_size = Number(query, "page-size", kDefaultPageSize, kMaxPageSize);
  if (!page_size || *page_size == 0) {
    return Error(400, "BadRequestException", "'page-size' must be 1…" + std::to_string(kMaxPageSize));
  }
  iceberg::ManifestContent content = iceberg::ManifestContent::kData;
  if (auto c = query.find("content"); c != query.end()) {
    if (c->second == "deletes") {
      content = iceberg::ManifestContent::kDeletes;
    } else if (c->second != "data") {
      return Error(400, "BadRequestException", "'content' must be data or deletes");
    }
  }
  const std::string content_text = content == iceberg::ManifestContent::kData ? "data" : "deletes";
  auto snapshot_param = internal::SnapshotIdParam(query);
  if (!snapshot_param.ok()) return Error(snapshot_param.status());
  const std::optional<int64_t> snapshot_id = *snapshot_param;

  auto loaded = catalog_.LoadTable(*ident);
  if (!loaded.ok()) return failed(loaded.status());
  const iceberg::TableMetadata& metadata = *loaded->metadata;
  const iceberg::Snapshot* snapshot =
      snapshot_id ? metadata.SnapshotById(*snapshot_id) : metadata.CurrentSnapshot();
  if (snapshot_id && snapshot == nullptr) {
    return Error(404, "NoSuchSnapshotException",
                 "table " + ident->ToString() + " has no snapshot " + std::to_string(*snapshot_id));
  }
  Json head{{"table", ident->ToString()},
            {"snapshot-id", snapshot ? Json(snapshot->snapshot_id) : Json(nullptr)},
            {"content", content_text}};

  // The position the token names, checked against this request before any manifest is read (and
  // its manifest's path hash after the list is).
  Position start;
  std::optional<std::string> start_hash;
  if (auto t = query.find("page-token"); t != query.end()) {
    if (snapshot == nullptr) return BadToken("is not valid for a table without snapshots");
    std::string sealed;
    // Only the token's one spelling: a changed last character whose bits base64url does not use
    // would otherwise decode to the same bytes.
    if (!io::DecodeBase64Url(t->second, &sealed) || io::EncodeBase64Url(sealed) != t->second ||
        !io::Sealer::LooksSealed(sealed)) {
      return BadToken("is not a page token");
    }
    int64_t expires_at_ms = 0;
    auto payload = sealer_->Open(kTokenPurpose, sealed, &expires_at_ms);
    if (!payload.ok()) {
      return BadToken(expires_at_ms != 0 ? "has expired"
                                         : "is not valid (altered, or sealed by another server's key)");
    }
    Json p = Json::parse(*payload, nullptr, false);
    if (!p.is_object() || !p["t"].is_string() || !p["s"].is_number_integer() || !p["c"].is_string() ||
        !p["m"].is_number_unsigned() || !p["e"].is_number_unsigned() || !p["h"].is_string()) {
      return BadToken("is not a page token");
    }
    if (p["t"].get<std::string>() != ident->ToString() || p["s"].get<int64_t>() != snapshot->snapshot_id ||
        p["c"].get<std::string>() != content_text) {
      return BadToken("belongs to another table, snapshot or content");
    }
    start.manifest = p["m"].get<size_t>();
    start.skip = p["e"].get<int64_t>();
    start_hash = p["h"].get<std::string>();
  }

  if (snapshot == nullptr) {
    head["total"] = 0;
    head["files"] = Json::array();
    head["next-page-token"] = nullptr;
    return RouteAnswer{200, head.dump(-1, ' ', false, Json::error_handler_t::replace), {}};
  }

  // A table registered away from where it was written is read from where its files are (as
  // table::Table reads it); object stores are read as recorded.
  std::unique_ptr<io::FileIO> relocated;
  const std::string& file = loaded->metadata_location;
  if (file.find("://") == std::string::npos || file.rfind("file:", 0) == 0) {
    iceberg::Relocation r = iceberg::DetectRelocation(metadata, iceberg::TableDirOfMetadataFile(file));
    if (!r.map.empty()) relocated = io::MakeRelocatingFileIO(io_, std::move(r.map));
  }
  io::FileIO& read_io = relocated ? *relocated : io_;
  iceberg::ScanPlanner planner(read_io, metadata);
  auto manifests = planner.LoadManifests(*snapshot);
  if (!manifests.ok()) return failed(manifests.status());

  if (start_hash && (start.manifest >= manifests->size() || (*manifests)[start.manifest].content != content ||
                     PathHash((*manifests)[start.manifest]) != *start_hash)) {
    return BadToken("names no manifest of this snapshot");
  }

  // The total from the manifest list's counts, when every manifest of the content has them.
  std::optional<int64_t> total = 0;
  for (const iceberg::ManifestFile& m : *manifests) {
    if (m.content != content) continue;
    if (!m.added_files_count || !m.existing_files_count) {
      total.reset();
      break;
    }
    *total += *m.added_files_count + *m.existing_files_count;
  }

  Json files = Json::array();
  std::optional<Position> next;
  iceberg::ManifestReadOptions options;
  options.metric_field_ids = std::vector<int>{};  // sizes and partitions only: no column metrics
  options.split_offsets = false;
  iceberg::ManifestEntry entry;
  for (size_t i = start.manifest; i < manifests->size() && !next; i++) {
    const iceberg::ManifestFile& m = (*manifests)[i];
    if (m.content != content) continue;
    auto reader = iceberg::ManifestReader::Open(read_io, m.manifest_path, m, options);
    if (!reader.ok()) return failed(reader.status());
    int64_t live = 0;
    while (true) {
      auto more = (*reader)->NextInto(&entry);
      if (!more.ok()) return failed(more.status());
      if (!*more) break;
      if (entry.status == iceberg::ManifestEntryStatus::kDeleted) continue;
      if (i == start.manifest && live < start.skip) {
        live++;
        continue;
      }
      if (static_cast<int64_t>(files.size()) == *page_size) {
        next = Position{i, live};
        break;
      }
      files.push_back(FileJson(entry.data_file, metadata));
      live++;
    }
    if (i == start.manifest && live < start.skip) return BadToken("points past the end of its manifest");
  }

  head["total"] = total ? Json(*total) : Json(nullptr);
  head["files"] = std::move(files);
  if (next) {
    Json payload{{"t", ident->ToString()},
                 {"s", snapshot->snapshot_id},
                 {"c", content_text},
                 {"m", next->manifest},
                 {"e", next->skip},
                 {"h", PathHash((*manifests)[next->manifest])}};
    const std::string text = payload.dump(-1, ' ', false, Json::error_handler_t::replace);
    head["next-page-token"] = io::EncodeBase64Url(sealer_->Seal(kTokenPurpose, text, kTokenLifetime));
  } else {
    head["next-page-token"] = nullptr;
  }
  return RouteAnswer{200, head.dump(-1, ' ', false, Json::error_handler_t::replace), {}};
}

}  // namespace skade::console
