#include "skade/io/location.h"

#include <cctype>
#include <filesystem>
#include <vector>

#include "skade/base/ascii.h"

namespace skade::io {
namespace {

// "a//b/./c/../d/" → "a/b/d" (".." never climbs above the start; absolute keeps its '/').
std::string CollapsePath(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(i, slash - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = slash + 1;
  }
  std::string out = absolute ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) out += '/';
    out += parts[k];
  }
  return out;
}

bool WithinNormal(std::string_view location, std::string_view root) {
  if (location.size() < root.size() || location.compare(0, root.size(), root) != 0) return false;
  if (location.size() == root.size()) return true;
  return root.empty() || root.back() == '/' || location[root.size()] == '/';
}

}  // namespace

std::string NormalizeLocation(std::string_view location) {
  std::string_view rest = location;
  if (rest.rfind("file:", 0) == 0) {
    rest.remove_prefix(5);
    // file://host/path: only an empty or "localhost" authority names this machine.
    if (rest.rfind("//", 0) == 0) {
      rest.remove_prefix(2);
      if (rest.rfind("localhost/", 0) == 0) rest.remove_prefix(9);
    }
  }
  size_t scheme_end = rest.find("://");
  bool has_scheme = scheme_end != std::string_view::npos && scheme_end > 0 &&
                    rest.substr(0, scheme_end).find('/') == std::string_view::npos;
  if (!has_scheme) {
    std::string path(rest);
    if (path.empty() || path.front() != '/') {
      std::error_code ec;
      auto abs = std::filesystem::absolute(path.empty() ? "." : path, ec);
      if (!ec) path = abs.string();
    }
    std::string out = CollapsePath(path);
    return out.empty() ? "/" : out;
  }
  std::string scheme = AsciiLower(rest.substr(0, scheme_end));
  if (scheme == "s3a" || scheme == "s3n") scheme = "s3";
  std::string_view after = rest.substr(scheme_end + 3);
  size_t slash = after.find('/');
  std::string_view authority = after.substr(0, slash);
  std::string path = slash == std::string_view::npos ? "" : CollapsePath(after.substr(slash));
  return scheme + "://" + std::string(authority) + path;
}

std::string ComparableLocation(std::string_view location) {
  std::string normal = NormalizeLocation(location);
  size_t scheme_end = normal.find("://");
  if (scheme_end == std::string::npos) return normal;
  std::string_view scheme = std::string_view(normal).substr(0, scheme_end);
  if (scheme != "hdfs" && scheme != "viewfs" && scheme != "webhdfs" && scheme != "file") return normal;
  size_t path = normal.find('/', scheme_end + 3);
  return path == std::string::npos ? "/" : normal.substr(path);
}

bool IsWithin(std::string_view location, std::string_view root) {
  return WithinNormal(NormalizeLocation(location), NormalizeLocation(root));
}

bool IsWithinIgnoringCase(std::string_view location, std::string_view root) {
  return WithinNormal(AsciiLower(NormalizeLocation(location)), AsciiLower(NormalizeLocation(root)));
}

std::string LocationScheme(std::string_view location) {
  if (AsciiLower(location.substr(0, 5)) == "file:") return "file";
  size_t end = location.find("://");
  if (end == std::string_view::npos || end == 0) return "";
  std::string_view scheme = location.substr(0, end);
  // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ); anything else is part of a path.
  if (!std::isalpha(static_cast<unsigned char>(scheme.front()))) return "";
  for (char c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return "";
  }
  return AsciiLower(scheme);
}

bool IsObjectStoreLocation(std::string_view location) {
  std::string scheme = LocationScheme(location);
  return scheme == "s3" || scheme == "s3a" || scheme == "s3n";
}

bool Overlaps(std::string_view a, std::string_view b) {
  std::string x = AsciiLower(NormalizeLocation(a));
  std::string y = AsciiLower(NormalizeLocation(b));
  return WithinNormal(x, y) || WithinNormal(y, x);
}

}  // namespace skade::io
