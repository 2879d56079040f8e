// The console's files are answered from memory by exact name: nothing here touches the disk, so
// no path can reach outside them; odd paths are refused anyway, so that a request like
// /ui/../v1/… is visibly not a page (and never falls through to a catalog route unauthenticated).
#include "skade/console/static_files.h"

#include <algorithm>
#include <array>

namespace skade::console {
namespace {

// The security headers of every answer under the mount, errors included.
void AddSecurityHeaders(StaticResponse& r) {
  r.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  r.headers.emplace_back("Cross-Origin-Resource-Policy", "same-origin");
}

StaticResponse Refusal(int status, std::string message) {
  StaticResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(message);
  r.body += "\n";
  r.headers.emplace_back("Cache-Control", "no-store");
  AddSecurityHeaders(r);
  return r;
}

// Whether every segment of the relative path `rest` is a plain file or folder name.
bool PlainPath(std::string_view rest) {
  constexpr auto kEnd = std::string_view::npos;
  if (rest.find('\0') != kEnd || rest.find('\\') != kEnd) return false;
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20; };
  size_t pos = 0;
  while (true) {
    const size_t slash = rest.find('/', pos);
    const std::string_view segment = rest.substr(pos, slash == kEnd ? kEnd : slash - pos);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (std::any_of(segment.begin(), segment.end(), control)) return false;
    if (slash == kEnd) return true;
    pos = slash + 1;
  }
}

}  // namespace

std::string_view ContentTypeOf(std::string_view path) {
  struct Type {
    std::string_view extension;
    std::string_view content_type;
  };
  static constexpr std::array<Type, 10> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
  }};
  for (const Type& t : kTypes) {
    const size_t n = t.extension.size();
    if (path.size() > n && path.substr(path.size() - n) == t.extension) return t.content_type;
  }
  return "application/octet-stream";
}

StaticFiles::StaticFiles(std::span<const Asset> assets, std::string mount)
    : assets_(assets), mount_(std::move(mount)) {}

std::optional<StaticResponse> StaticFiles::Serve(std::string_view method,
                                                 std::string_view path) const {
  if (path.substr(0, mount_.size()) != mount_) return std::nullopt;
  std::string_view rest = path.substr(mount_.size());
  if (!rest.empty() && rest[0] != '/') return std::nullopt;  // "/uix" is not under "/ui"
  if (method != "GET" && method != "HEAD") {
    StaticResponse refused = Refusal(405, "the web console's files are read with GET");
    refused.headers.emplace_back("Allow", "GET, HEAD");
    return refused;
  }
  if (!rest.empty()) rest.remove_prefix(1);
  if (rest.empty()) rest = "index.html";
  if (!PlainPath(rest)) return Refusal(404, "no such file of the web console");
  const auto found =
      std::find_if(assets_.begin(), assets_.end(), [&](const Asset& a) { return a.path == rest; });
  if (found == assets_.end()) {
    return Refusal(404, assets_.empty()
                            ? "the web console was not built into this skade (run scripts/setup.sh)"
                            : "no such file of the web console");
  }
  StaticResponse r;
  r.content_type = std::string(ContentTypeOf(found->path));
  // Hashed names change whenever their bytes do; index.html names them, so it is revalidated.
  const bool hashed = found->path.substr(0, 7) == "assets/";
  r.headers.emplace_back("Cache-Control",
                         hashed ? "public, max-age=31536000, immutable" : "no-cache");
  AddSecurityHeaders(r);
  // For HEAD too: the transport sends no body to HEAD but takes Content-Length from it.
  r.body = std::string(found->bytes);
  return r;
}

}  // namespace skade::console
