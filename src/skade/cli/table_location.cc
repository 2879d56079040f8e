#include "skade/cli/table_location.h"

#include "skade/iceberg/relocation.h"

#include <charconv>
#include <filesystem>

namespace skade::cli {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && s[b] == ' ') ++b;
  return s.substr(b);
}

// Version number of a metadata file name: "v12.metadata.json" → 12,
// "00012-<uuid>.metadata.json" → 12; -1 if neither.
int64_t MetadataVersion(std::string_view name) {
  if (!EndsWith(name, ".metadata.json")) return -1;
  std::string_view stem = name.substr(0, name.size() - 14);
  if (EndsWith(stem, ".gz")) stem.remove_suffix(3);
  if (!stem.empty() && stem[0] == 'v') stem.remove_prefix(1);
  size_t dash = stem.find('-');
  if (dash != std::string_view::npos) stem = stem.substr(0, dash);
  int64_t v = -1;
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), v);
  if (ec != std::errc() || p != stem.data() + stem.size()) return -1;
  return v;
}

}  // namespace

Result<std::string> ResolveMetadataFile(io::FileIO& io, std::string_view table_path) {
  std::string dir = io::JoinLocation(table_path, "metadata");
  // Hadoop-table layout: version-hint.text holds the current version number (some writers
  // store a file name instead).
  auto hint = io.Read(io::JoinLocation(dir, "version-hint.text"));
  if (hint.ok()) {
    std::string text = Trim(*hint);
    std::vector<std::string> candidates;
    if (EndsWith(text, ".metadata.json")) {
      candidates.push_back(text.find('/') == std::string::npos ? io::JoinLocation(dir, text) : text);
    } else {
      candidates.push_back(io::JoinLocation(dir, "v" + text + ".metadata.json"));
      candidates.push_back(io::JoinLocation(dir, "v" + text + ".gz.metadata.json"));
    }
    for (const std::string& c : candidates) {
      if (io.Stat(c).ok()) return c;
    }
  }
  SKADE_ASSIGN_OR_RETURN(auto files, io.List(dir));
  std::string best;
  int64_t best_version = -1;
  for (const auto& f : files) {
    std::string name = fs::path(f.location).filename().string();
    int64_t v = MetadataVersion(name);
    if (v > best_version) {
      best_version = v;
      best = f.location;
    }
  }
  if (best.empty()) {
    return Status::NotFound("no Iceberg metadata found in '" + dir + "'");
  }
  return best;
}

Result<LoadedTable> LoadTable(io::FileIO& io, std::string_view path,
                              const std::vector<std::pair<std::string, std::string>>& relocate) {
  LoadedTable t;
  std::error_code ec;
  std::string local = io::LocalPath(path);
  if (fs::is_directory(local, ec)) {
    SKADE_ASSIGN_OR_RETURN(t.metadata_file, ResolveMetadataFile(io, local));
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
