// The web console's HTTP side: its pages and assets (web/, bundled at build time and embedded
// in the binary), answered under one mount path (/ui) with a strict Content-Security-Policy.
// The files are public and hold no secrets; every piece of data the pages show comes from the
// REST catalog's routes and the data preview (preview.h), with the catalog's authentication.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skade::console {

// One embedded file: its path below the mount ("index.html", "assets/app-3F2K1Q.js") and bytes.
struct Asset {
  std::string_view path;
  std::string_view bytes;
};

// The files built from web/ into this binary (generated at build time; empty when the front end
// was not built, and then every page answers 404 saying so).
std::span<const Asset> EmbeddedAssets();

// The Content-Security-Policy of every answer: scripts, styles and fetches from the console's
// own origin only, no inline code, no frames, no forms, no plugins.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct StaticResponse {
  int status = 200;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// The Content-Type of a file name by its extension (application/octet-stream when unknown).
std::string_view ContentTypeOf(std::string_view path);

// Serves a set of files under a mount path. Immutable after construction, so thread-safe; the
// assets are borrowed and must outlive it (the embedded ones live for the program).
class StaticFiles {
 public:
  explicit StaticFiles(std::span<const Asset> assets, std::string mount = "/ui");

  // The answer to `method` on the percent-decoded `path`, or nullopt when `path` is not the
  // mount or below it (another route's). The mount itself and "mount/" are index.html; a path
  // with an empty, "." or ".." segment, a backslash or NUL, or naming no file is 404 (the files
  // are looked up by exact name, never on disk); a method other than GET and HEAD is 405.
  // Files under assets/ carry a content hash in their names and are cached as immutable; the
  // rest must be revalidated.
  std::optional<StaticResponse> Serve(std::string_view method, std::string_view path) const;

  const std::string& mount() const { return mount_; }

 private:
  std::span<const Asset> assets_;
  std::string mount_;
};

}  // namespace skade::console
