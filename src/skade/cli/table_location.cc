#include "skade/cli/table_location.h"

#include "skade/iceberg/relocation.h"
#include "skade/io/location.h"
#include "skade/iceberg/version_hint.h"

#include <filesystem>

namespace skade::cli {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<LoadedTable> LoadTable(io::FileIO& io, std::string_view path,
                              const std::vector<std::pair<std::string, std::string>>& relocate) {
  LoadedTable t;
  std::error_code ec;
  std::string local = io::LocalPath(path);
  if (io::IsObjectStoreLocation(path)) {
    // An object store has no folders to tell apart: a .json key is a metadata file, anything
    // else a table location.
    std::string root(path);
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    if (EndsWith(root, ".json")) {
      t.metadata_file = root;
      t.table_dir = iceberg::TableDirOfMetadataFile(root);
    } else {
      SKADE_ASSIGN_OR_RETURN(t.metadata_file, iceberg::ResolveMetadataFile(io, root));
      t.table_dir = root;
    }
  } else if (fs::is_directory(local, ec)) {
    SKADE_ASSIGN_OR_RETURN(t.metadata_file, iceberg::ResolveMetadataFile(io, local));
    t.table_dir = fs::absolute(local, ec).lexically_normal().string();
  } else if (EndsWith(local, ".json")) {
    t.metadata_file = local;
    t.table_dir = iceberg::TableDirOfMetadataFile(fs::absolute(local, ec).string());
  } else if (!fs::exists(local, ec)) {
    return Status::NotFound("table '" + local + "' not found");
  } else {
    return Status::InvalidArgument("'" + local + "' is neither a table folder nor a metadata JSON file");
  }
  while (t.table_dir.size() > 1 && t.table_dir.back() == '/') t.table_dir.pop_back();
  SKADE_ASSIGN_OR_RETURN(std::string json, io.Read(t.metadata_file));
  SKADE_ASSIGN_OR_RETURN(t.metadata, iceberg::ParseTableMetadataFile(json).WithContext(t.metadata_file));

  iceberg::Relocation relocation = iceberg::DetectRelocation(t.metadata, t.table_dir, relocate);
  t.locations = std::move(relocation.map);
  t.notes = std::move(relocation.notes);
  return t;
}

}  // namespace skade::cli
