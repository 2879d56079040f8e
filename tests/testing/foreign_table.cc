#include "tests/testing/foreign_table.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location.h"

namespace skade::testing {
namespace {

// Spec "Reserved Field IDs": the columns of a position delete file.
constexpr int kDeleteFilePathId = 2147483546;
constexpr int kDeletePosId = 2147483545;

// The path of `location` below the table root `root`. Writers spell one root several ways
// ("./t" in the metadata, "t/data/f" in manifests), so both sides are compared in their
// comparable forms.
Result<std::string> RelativeTo(std::string_view root, std::string_view location) {
  const std::string r = io::ComparableLocation(root);
  const std::string l = io::ComparableLocation(location);
  if (l.size() > r.size() + 1 && l.compare(0, r.size(), r) == 0 && l[r.size()] == '/') {
    return l.substr(r.size() + 1);
  }
  return Status::InvalidArgument("'" + std::string(location) +
                                 "' is not below the table location '" + std::string(root) + "'");
}

// Copies and rewrites the files of one snapshot, each file once.
class Copier {
 public:
  Copier(const iceberg::TableMetadata& metadata, io::FileIO& io, engine::Database& db,
         std::string dir, const LocationSpelling& spelling)
      : metadata_(metadata),
        io_(io),
        db_(db),
        dir_(std::move(dir)),
        spelling_(spelling),
        local_(io::MakeLocalFileIO()) {}

  Result<std::string> Run();

 private:
  struct RewrittenDeletes {
    int64_t size = 0;
    std::optional<std::string> lower;  // of the rewritten file_path values
    std::optional<std::string> upper;
  };

  std::string Local(const std::string& relative) const { return dir_ + "/" + relative; }
  // The spelling of the stored location `stored` in `role`.
  Result<std::string> Respell(LocationRole role, std::string_view stored) {
    SKADE_ASSIGN_OR_RETURN(std::string relative, RelativeTo(metadata_.location, stored));
    return spelling_(role, relative);
  }
  // Copies the file at `stored` byte for byte (once).
  Status CopyFile(const std::string& stored);
  // Rewrites the position delete file at `stored` (once).
  Result<RewrittenDeletes> RewritePositionDeletes(const std::string& stored);
  Status RewriteDataFile(iceberg::DataFile& f);
  Result<iceberg::ManifestFile> RewriteManifest(const iceberg::ManifestFile& m);

  const iceberg::TableMetadata& metadata_;
  io::FileIO& io_;
  engine::Database& db_;
  std::string dir_;
  const LocationSpelling& spelling_;
  std::unique_ptr<io::FileIO> local_;
  std::set<std::string> copied_;
  std::map<std::string, RewrittenDeletes> rewritten_;
};

Status Copier::CopyFile(const std::string& stored) {
  if (!copied_.insert(stored).second) return Status::Ok();
  SKADE_ASSIGN_OR_RETURN(std::string relative, RelativeTo(metadata_.location, stored));
  SKADE_ASSIGN_OR_RETURN(std::string bytes, io_.Read(stored));
  return local_->CreateExclusive(Local(relative), bytes);
}

Result<Copier::RewrittenDeletes> Copier::RewritePositionDeletes(const std::string& stored) {
  if (auto it = rewritten_.find(stored); it != rewritten_.end()) return it->second;
  SKADE_ASSIGN_OR_RETURN(std::string relative, RelativeTo(metadata_.location, stored));
  const std::string target = Local(relative);
  // DuckDB reads local files only: the original goes beside its copy while it is rewritten.
  const std::string source = target + ".source";
  SKADE_ASSIGN_OR_RETURN(std::string bytes, io_.Read(stored));
  SKADE_RETURN_IF_ERROR(local_->CreateExclusive(source, bytes));
  const std::string read = "read_parquet(" + engine::QuoteString(source) + ")";
  SKADE_ASSIGN_OR_RETURN(auto names, db_.QueryRows("SELECT DISTINCT file_path FROM " + read));
  RewrittenDeletes out;
  std::string cases;
  for (const auto& row : names) {
    if (!row[0])
      return Status::Corruption("position delete file '" + stored + "' has a null file_path");
    SKADE_ASSIGN_OR_RETURN(std::string spelled, Respell(LocationRole::kDeleteTarget, *row[0]));
    cases += " WHEN " + engine::QuoteString(*row[0]) + " THEN " + engine::QuoteString(spelled);
    if (!out.lower || spelled < *out.lower) out.lower = spelled;
    if (!out.upper || spelled > *out.upper) out.upper = spelled;
  }
  const std::string file_path = cases.empty() ? "file_path" : "CASE file_path" + cases + " END";
  // Spec "Position Delete Files": rows sorted by file_path, then pos; the reserved field ids.
  SKADE_RETURN_IF_ERROR(
      db_.Execute("COPY (SELECT " + file_path + " AS file_path, pos FROM " + read +
                  " ORDER BY 1, 2) TO " + engine::QuoteString(target) +
                  " (FORMAT parquet, FIELD_IDS {file_path: " + std::to_string(kDeleteFilePathId) +
                  ", pos: " + std::to_string(kDeletePosId) + "})")
          .WithContext("rewriting '" + stored + "'"));
  SKADE_RETURN_IF_ERROR(local_->Delete(source));
  SKADE_ASSIGN_OR_RETURN(io::FileInfo info, local_->Stat(target));
  out.size = info.size;
  rewritten_[stored] = out;
  return out;
}

Status Copier::RewriteDataFile(iceberg::DataFile& f) {
  const std::string stored = f.file_path;
  if (f.content != iceberg::DataFileContent::kPositionDeletes) {
    SKADE_RETURN_IF_ERROR(CopyFile(stored));
    const bool data = f.content == iceberg::DataFileContent::kData;
    SKADE_ASSIGN_OR_RETURN(
        f.file_path, Respell(data ? LocationRole::kDataFile : LocationRole::kDeleteFile, stored));
    return Status::Ok();
  }
  if (f.referenced_data_file) {
    SKADE_ASSIGN_OR_RETURN(f.referenced_data_file,
                           Respell(LocationRole::kDeleteTarget, *f.referenced_data_file));
  }
  if (f.file_format == iceberg::FileFormat::kPuffin) {
    // A deletion vector's blob names no location the reader matches by (the manifest's
    // referenced_data_file does): the file is copied as it is.
    SKADE_RETURN_IF_ERROR(CopyFile(stored));
  } else {
    SKADE_ASSIGN_OR_RETURN(RewrittenDeletes r, RewritePositionDeletes(stored));
    f.file_size_in_bytes = r.size;
    // The file_path bounds (Appendix D: a string's UTF-8 bytes) describe the rewritten values.
    if (f.lower_bounds.count(kDeleteFilePathId)) {
      if (r.lower)
        f.lower_bounds[kDeleteFilePathId] = *r.lower;
      else
        f.lower_bounds.erase(kDeleteFilePathId);
    }
    if (f.upper_bounds.count(kDeleteFilePathId)) {
      if (r.upper)
        f.upper_bounds[kDeleteFilePathId] = *r.upper;
      else
        f.upper_bounds.erase(kDeleteFilePathId);
    }
  }
  SKADE_ASSIGN_OR_RETURN(f.file_path, Respell(LocationRole::kDeleteFile, stored));
  return Status::Ok();
}

Result<iceberg::ManifestFile> Copier::RewriteManifest(const iceberg::ManifestFile& m) {
  iceberg::PartitionSpecPtr spec = metadata_.SpecById(m.partition_spec_id);
  if (!spec) {
    return Status::Corruption("manifest '" + m.manifest_path + "' has unknown partition spec " +
                              std::to_string(m.partition_spec_id));
  }
  iceberg::ManifestWriterOptions options;
  options.format_version = metadata_.format_version;
  options.content = m.content;
  options.snapshot_id = m.added_snapshot_id;
  if (metadata_.format_version >= 2) options.sequence_number = m.sequence_number;
  // The partition type needs a schema holding the spec's source columns: the current one, else
  // the newest that does.
  std::unique_ptr<iceberg::ManifestWriter> writer;
  std::vector<iceberg::SchemaPtr> schemas = {metadata_.CurrentSchema()};
  for (auto it = metadata_.schemas.rbegin(); it != metadata_.schemas.rend(); ++it)
    schemas.push_back(*it);
  Status last = Status::Internal("no schema");
  for (const auto& schema : schemas) {
    if (!schema) continue;
    auto created = iceberg::ManifestWriter::Create(schema, spec, options);
    if (created.ok()) {
      writer = std::move(created).value();
      break;
    }
    last = created.status();
  }
  if (!writer) return last.WithContext("manifest '" + m.manifest_path + "'");

  SKADE_ASSIGN_OR_RETURN(auto reader, iceberg::ManifestReader::Open(io_, m.manifest_path, m));
  while (true) {
    SKADE_ASSIGN_OR_RETURN(auto entry, reader->Next());
    if (!entry) break;
    // Read entries carry their inherited sequence numbers; written as explicit values they
    // need a status other than ADDED (spec "Sequence Number Inheritance").
    if (entry->status != iceberg::ManifestEntryStatus::kDeleted)
      entry->status = iceberg::ManifestEntryStatus::kExisting;
    if (!entry->snapshot_id) entry->snapshot_id = m.added_snapshot_id;
    SKADE_RETURN_IF_ERROR(
        RewriteDataFile(entry->data_file).WithContext("manifest '" + m.manifest_path + "'"));
    SKADE_RETURN_IF_ERROR(writer->Add(*entry).WithContext("manifest '" + m.manifest_path + "'"));
  }
  SKADE_ASSIGN_OR_RETURN(std::string relative, RelativeTo(metadata_.location, m.manifest_path));
  SKADE_ASSIGN_OR_RETURN(auto out, writer->Finish(spelling_(LocationRole::kManifest, relative)));
  SKADE_RETURN_IF_ERROR(local_->CreateExclusive(Local(relative), out.bytes));
  out.manifest.added_snapshot_id = m.added_snapshot_id;
  out.manifest.key_metadata = m.key_metadata;
  out.manifest.first_row_id = m.first_row_id;
  if (metadata_.format_version >= 2) {
    out.manifest.sequence_number = m.sequence_number;
    out.manifest.min_sequence_number = m.min_sequence_number;
  }
  return out.manifest;
}

Result<std::string> Copier::Run() {
  const iceberg::Snapshot* snapshot = metadata_.CurrentSnapshot();
  if (snapshot == nullptr) return Status::InvalidArgument("table has no current snapshot to copy");
  iceberg::ScanPlanner planner(io_, metadata_);
  SKADE_ASSIGN_OR_RETURN(std::vector<iceberg::ManifestFile> manifests,
                         planner.LoadManifests(*snapshot));
  std::vector<iceberg::ManifestFile> rows;
  for (const auto& m : manifests) {
    SKADE_ASSIGN_OR_RETURN(iceberg::ManifestFile row, RewriteManifest(m));
    rows.push_back(std::move(row));
  }
  std::string list_relative =
      "metadata/snap-" + std::to_string(snapshot->snapshot_id) + "-foreign.avro";
  if (!snapshot->manifest_list.empty()) {
    SKADE_ASSIGN_OR_RETURN(list_relative, RelativeTo(metadata_.location, snapshot->manifest_list));
  }
  SKADE_ASSIGN_OR_RETURN(
      std::string list,
      iceberg::WriteManifestList(metadata_.format_version, snapshot->snapshot_id,
                                 snapshot->parent_snapshot_id, snapshot->sequence_number, rows));
  SKADE_RETURN_IF_ERROR(local_->CreateExclusive(Local(list_relative), list));

  iceberg::TableMetadata copy = metadata_;
  copy.location = spelling_(LocationRole::kTableLocation, "");
  iceberg::Snapshot s = *snapshot;
  s.manifest_list = spelling_(LocationRole::kManifestList, list_relative);
  s.manifests.clear();
  copy.snapshots = {s};
  copy.refs.clear();
  iceberg::SnapshotRef main;
  main.snapshot_id = s.snapshot_id;
  copy.refs["main"] = main;
  copy.snapshot_log.clear();
  copy.metadata_log.clear();
  // Statistics files name locations of their own and are not copied.
  copy.statistics_json.clear();
  copy.partition_statistics_json.clear();
  const std::string metadata_file = Local("metadata/v1.metadata.json");
  SKADE_RETURN_IF_ERROR(local_->CreateExclusive(metadata_file, iceberg::TableMetadataToJson(copy)));
  SKADE_RETURN_IF_ERROR(local_->CreateExclusive(Local("metadata/version-hint.text"), "1"));
  return metadata_file;
}

}  // namespace

LocationSpelling PrefixSpelling(std::map<LocationRole, std::string> prefixes) {
  return [prefixes = std::move(prefixes)](LocationRole role, std::string_view relative) {
    auto it = prefixes.find(role);
    SKADE_CHECK(it != prefixes.end());
    return relative.empty() ? it->second : it->second + "/" + std::string(relative);
  };
}

Result<std::string> WriteForeignCopy(const iceberg::TableMetadata& metadata, io::FileIO& io,
                                     engine::Database& db, const std::string& dir,
                                     const LocationSpelling& spelling) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create '" + dir + "': " + ec.message());
  std::string root = std::filesystem::absolute(dir, ec).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return Copier(metadata, io, db, root, spelling).Run();
}

Result<int> UploadForeignCopy(const iceberg::TableMetadata& metadata, io::FileIO& io, engine::Database& db,
                              const std::string& dir, const std::string& root, io::FileIO& store) {
  std::map<LocationRole, std::string> prefixes;
  for (LocationRole role : {LocationRole::kTableLocation, LocationRole::kManifestList, LocationRole::kManifest,
                            LocationRole::kDataFile, LocationRole::kDeleteFile, LocationRole::kDeleteTarget}) {
    prefixes[role] = root;
  }
  SKADE_RETURN_IF_ERROR(WriteForeignCopy(metadata, io, db, dir, PrefixSpelling(std::move(prefixes))).status());
  int written = 0;
  auto local = io::MakeLocalFileIO();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    SKADE_ASSIGN_OR_RETURN(std::string bytes, local->Read(entry.path().string()));
    const std::string relative = std::filesystem::relative(entry.path(), dir).string();
    SKADE_RETURN_IF_ERROR(store.CreateExclusive(root + "/" + relative, bytes));
    ++written;
  }
  return written;
}

}  // namespace skade::testing
