#include "skade/io/local_folders.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "skade/base/fd.h"
#include "skade/io/file_io.h"

namespace skade::io {
namespace {

namespace fs = std::filesystem;

std::string ParentOf(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// 1 for a folder, 0 for nothing there, -1 for something else (errno set for a failed stat).
int FolderState(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? 0 : -1;
  if (S_ISDIR(st.st_mode)) return 1;
  errno = ENOTDIR;
  return -1;
}

Status FolderError(std::string_view what, const std::string& path, int err) {
  return Status::IoError(std::string(what) + " '" + path + "': " + std::strerror(err));
}

}  // namespace

Status SyncFolder(const std::string& folder) {
  Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    const int err = errno;
    std::string msg = "open folder '" + folder + "': " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(std::move(msg)) : Status::IoError(std::move(msg));
  }
  if (::fsync(dir.get()) != 0) return FolderError("fsync folder", folder, errno);
  return Status::Ok();
}

Status CreateFoldersDurably(const std::string& folder,
                            const std::function<Status(const std::string&)>& sync_folder) {
  const std::string target = WithoutTrailingSlashes(LocalPath(folder));
  if (target.empty()) return Status::Ok();
  // The missing levels, deepest first.
  std::vector<std::string> missing;
  for (std::string level = target;; level = ParentOf(level)) {
    const int state = FolderState(level);
    if (state == 1) break;
    if (state < 0) return FolderError("create folder", level, errno);
    missing.push_back(level);
    if (level == "/" || level == "." || ParentOf(level) == level) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0) {
      const int err = errno;
      // Made by a concurrent writer, which may not have synced its entry yet: sync it here too.
      if (err != EEXIST || FolderState(*it) != 1) return FolderError("create folder", *it, err);
    }
    SKADE_RETURN_IF_ERROR(sync_folder(ParentOf(*it)));
  }
  return Status::Ok();
}

Status SyncFolderEntries(const std::vector<std::string>& locations) {
  std::set<std::string> parents;
  for (const std::string& location : locations) parents.insert(ParentOf(WithoutTrailingSlashes(LocalPath(location))));
  for (const std::string& parent : parents) SKADE_RETURN_IF_ERROR(SyncFolder(parent));
  return Status::Ok();
}

std::vector<std::string> FoldersBetween(std::string_view root, const std::vector<std::string>& files) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (const std::string& file : files) {
    if (file.size() <= root.size() + 1 || file.compare(0, root.size(), root) != 0 || file[root.size()] != '/') continue;
    for (size_t slash = file.find('/', root.size() + 1); slash != std::string::npos; slash = file.find('/', slash + 1)) {
      std::string_view folder = std::string_view(file).substr(0, slash);
      if (folder.back() == '/' || seen.count(folder)) continue;  // "a//b": one folder
      seen.emplace(folder);
      out.emplace_back(folder);
    }
  }
  return out;
}

}  // namespace skade::io
