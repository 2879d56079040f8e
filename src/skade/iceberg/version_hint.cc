#include "skade/iceberg/version_hint.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace skade::iceberg {
namespace {

constexpr std::string_view kSuffix = ".metadata.json";
constexpr std::string_view kHintFile = "version-hint.text";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view FileName(std::string_view location) {
  size_t slash = location.rfind('/');
  return slash == std::string_view::npos ? location : location.substr(slash + 1);
}

std::string_view Folder(std::string_view location) {
  size_t slash = location.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : location.substr(0, slash);
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return std::string(s);
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

int64_t MetadataVersion(std::string_view name) {
  std::string_view stem = name;
  if (EndsWith(stem, kSuffix)) stem.remove_suffix(kSuffix.size());
  if (EndsWith(stem, ".gz")) stem.remove_suffix(3);
  if (!stem.empty() && stem[0] == 'v') stem.remove_prefix(1);
  size_t dash = stem.find('-');
  if (dash != std::string_view::npos) stem = stem.substr(0, dash);
  if (!AllDigits(stem)) return -1;
  int64_t v = -1;
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), v);
  if (ec != std::errc() || p != stem.data() + stem.size()) return -1;
  return v;
}

std::string VersionHintText(std::string_view metadata_file) {
  std::string_view name = FileName(metadata_file);
  std::string_view stem = EndsWith(name, kSuffix) ? name.substr(0, name.size() - kSuffix.size()) : name;
  if (stem.size() > 1 && stem[0] == 'v' && AllDigits(stem.substr(1))) return std::string(stem.substr(1));
  return std::string(stem);
}

Status AdvanceVersionHint(io::FileIO& io, std::string_view metadata_location) {
  const std::string hint_location = io::JoinLocation(Folder(metadata_location), kHintFile);
  const std::string text = VersionHintText(metadata_location);
  const int64_t version = MetadataVersion(text);
  return io.Update(hint_location, [&](const std::optional<std::string>& current) -> std::optional<std::string> {
    if (current && MetadataVersion(Trim(*current)) >= version && version >= 0) return std::nullopt;
    return text + "\n";
  });
}

Result<std::string> ResolveMetadataFile(io::FileIO& io, std::string_view table_path) {
  std::string dir = io::JoinLocation(table_path, "metadata");
  auto hint = io.Read(io::JoinLocation(dir, kHintFile));
  // A hint with control characters (NUL bytes from a torn write, say) is no hint: the folder
  // listing decides, as for a missing one.
  const bool printable = hint.ok() && std::all_of(hint->begin(), hint->end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\r';
  });
  if (hint.ok() && printable) {
    std::string text = Trim(*hint);
    std::vector<std::string> candidates;
    if (EndsWith(text, kSuffix)) {
      candidates.push_back(text.find('/') == std::string::npos ? io::JoinLocation(dir, text) : text);
    } else if (AllDigits(text)) {  // Hadoop tables: a version number
      candidates.push_back(io::JoinLocation(dir, "v" + text + std::string(kSuffix)));
      candidates.push_back(io::JoinLocation(dir, "v" + text + ".gz" + std::string(kSuffix)));
    } else if (!text.empty() && text.find('/') == std::string::npos) {  // a file name stem
      candidates.push_back(io::JoinLocation(dir, text + std::string(kSuffix)));
    }
    for (const std::string& c : candidates) {
      if (io.Stat(c).ok()) return c;
    }
  }
  // No usable hint (a table written elsewhere): the highest version. Files vanishing while
  // the folder is listed are left out by FileIO::List.
  SKADE_ASSIGN_OR_RETURN(auto files, io.List(dir));
  std::string best;
  int64_t best_version = -1;
  for (const auto& f : files) {
    std::string_view name = FileName(f.location);
    if (!EndsWith(name, kSuffix)) continue;
    int64_t v = MetadataVersion(name);
    if (v > best_version) {
      best_version = v;
      best = f.location;
    }
  }
  if (best.empty()) return Status::NotFound("no Iceberg metadata found in '" + dir + "'");
  return best;
}

}  // namespace skade::iceberg
