#include "skade/iceberg/relocation.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <vector>

#include "skade/io/location.h"

namespace skade::iceberg {
namespace {

std::string Normalize(std::string_view location) {
  std::string s = io::LocalPath(location);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  if (s.rfind("./", 0) == 0) s = s.substr(2);
  return s;
}

// The stored table root implied by a metadata path ("<root>/metadata/<file>").
std::string_view RootOf(std::string_view stored_path) {
  size_t pos = stored_path.rfind("/metadata/");
  if (pos == std::string_view::npos) return "";
  return stored_path.substr(0, pos);
}

}  // namespace

std::string TableDirOfMetadataFile(std::string_view metadata_file) {
  if (io::IsObjectStoreLocation(metadata_file)) {
    // Keys, not paths: the scheme's "//" must survive, and there is nothing to normalise.
    std::string_view dir = metadata_file.substr(0, metadata_file.rfind('/'));
    if (dir.size() > 9 && dir.substr(dir.size() - 9) == "/metadata") dir.remove_suffix(9);
    return std::string(dir);
  }
  std::filesystem::path parent = std::filesystem::path(io::LocalPath(metadata_file)).parent_path();
  std::string dir = (parent.filename() == "metadata" ? parent.parent_path() : parent).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

Relocation DetectRelocation(const TableMetadata& metadata, const std::string& table_dir,
                            const std::vector<std::pair<std::string, std::string>>& explicit_rules) {
  Relocation r;
  for (const auto& [from, to] : explicit_rules) r.map.Add(from, to);
  struct Root {
    std::string recorded;  // as the metadata spells it, for the note
    std::string normal;
  };
  std::vector<Root> roots = {{metadata.location, Normalize(metadata.location)}};
  // Writers spell one root several ways (hdfs://nn:8020/w/t in the metadata, /w/t in the
  // manifest list; s3a:// and s3://): one rule per root in its comparable form covers them all
  // (LocationMap::Apply), so such variants add no rule and no note of their own.
  auto known = [&](const std::string& normal) {
    for (const Root& root : roots) {
      if (io::ComparableLocation(root.normal) == io::ComparableLocation(normal)) return true;
    }
    return false;
  };
  // Spellings of roots already found among `roots`: a table's snapshots nearly all spell theirs
  // alike, so each snapshot after the first costs one comparison, not a normalisation (this runs
  // at every load of the table, over its whole history).
  std::vector<std::string> known_spellings;
  for (const auto& s : metadata.snapshots) {
    const std::string& first = s.manifest_list.empty() ? (s.manifests.empty() ? "" : s.manifests[0]) : s.manifest_list;
    const std::string_view recorded = RootOf(first);
    if (std::find(known_spellings.begin(), known_spellings.end(), recorded) != known_spellings.end()) continue;
    std::string root = Normalize(recorded);
    if (root.empty()) continue;
    if (known(root)) {
      known_spellings.emplace_back(recorded);
      continue;
    }
    // A snapshot whose files are where it says (another table's folder, as Spark's snapshot
    // procedure or add_files make) is read from there; only missing roots are relocated.
    std::error_code ec;
    if (std::filesystem::exists(io::LocalPath(first), ec)) continue;
    roots.push_back({std::string(recorded), root});
    known_spellings.emplace_back(recorded);
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    const Root& root = roots[i];
    if (root.normal.empty() || root.normal == table_dir) continue;
    bool explicit_rule = false;
    for (const auto& [from, to] : explicit_rules) {
      explicit_rule = explicit_rule || io::ComparableLocation(Normalize(from)) == io::ComparableLocation(root.normal);
    }
    if (explicit_rule) continue;
    r.map.Add(root.normal, table_dir);
    // Stored paths relative to the working directory of their writer ("./t/…", "t/…").
    if (i > 0) {
      r.map.Add("./" + root.normal, table_dir);
    } else if (metadata.location.rfind("./", 0) == 0) {
      r.map.Add(metadata.location, table_dir);
    }
    r.notes.push_back("table location '" + root.recorded + "' recorded in metadata differs from '" + table_dir +
                      "'; reading files from '" + table_dir + "'");
  }
  return r;
}

}  // namespace skade::iceberg
