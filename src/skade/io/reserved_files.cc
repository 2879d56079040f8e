#include "skade/io/reserved_files.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "skade/io/location.h"

namespace skade::io {
namespace {

// The registry is process-wide because what it protects is: record locks are held by the
// process, whichever object opened the file.
struct Registry {
  std::mutex mu;
  std::vector<std::string> paths;  // the normal form, with the folder's real path
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: checked until exit
  return *registry;
}

// The folder's real path (symlinks resolved) joined with the file's name, when the folder
// exists; the lexical normal form otherwise.
std::string CanonicalName(std::string_view location) {
  const std::string normal = NormalizeLocation(location);
  const size_t slash = normal.rfind('/');
  if (slash == std::string::npos) return normal;
  const std::string folder = slash == 0 ? "/" : normal.substr(0, slash);
  char buf[PATH_MAX];
  if (::realpath(folder.c_str(), buf) == nullptr) return normal;
  std::string out = buf;
  if (out.back() != '/') out += '/';
  return out + normal.substr(slash + 1);
}

bool IsLocal(std::string_view location) {
  const std::string scheme = LocationScheme(location);
  return scheme.empty() || scheme == "file";
}

}  // namespace

void ReserveFile(std::string_view path) {
  std::string name = CanonicalName(path);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const std::string& p : r.paths) {
    if (p == name) return;
  }
  r.paths.push_back(std::move(name));
}

void ReserveSqliteDatabase(std::string_view path) {
  const std::string base(path);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ReserveFile(base + suffix);
}

bool IsReservedFile(std::string_view location) {
  if (location.empty() || !IsLocal(location)) return false;
  std::vector<std::string> reserved;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.paths.empty()) return false;
    reserved = r.paths;
  }
  const std::string normal = NormalizeLocation(location);
  struct stat target;
  if (::stat(normal.c_str(), &target) == 0) {
    for (const std::string& p : reserved) {
      struct stat st;
      if (::stat(p.c_str(), &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino) return true;
    }
    return false;
  }
  // Not there (yet): a create under another spelling of a reserved name is refused too.
  const std::string name = CanonicalName(location);
  for (const std::string& p : reserved) {
    if (p == name) return true;
  }
  return false;
}

Status CheckNotReserved(std::string_view location, std::string_view what) {
  if (!IsReservedFile(location)) return Status::Ok();
  return Status::PermissionDenied(std::string(what) + " '" + std::string(location) +
                                  "' is the catalog's own file: only the catalog opens it");
}

}  // namespace skade::io
