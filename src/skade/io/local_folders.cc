#include "skade/io/local_folders.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
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
  // Levels this call made whose entries are not known durable yet: removed again when a sync
  // fails, deepest first, so that the next call makes (and syncs) them again instead of
  // finding them and syncing nothing.
  std::vector<std::string> made;
  auto undo = [&](Status failed) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) ::rmdir(it->c_str());  // fails if no longer empty
    return failed;
  };
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    // 0777: the umask decides, as for any folder a program makes.
    if (::mkdir(it->c_str(), 0777) == 0) {
      made.push_back(*it);
    } else {
      const int err = errno;
      // Made by a concurrent writer, which may not have synced its entry yet: sync it here too.
      if (err != EEXIST || FolderState(*it) != 1) return undo(FolderError("create folder", *it, err));
    }
    Status synced = sync_folder(ParentOf(*it));
    if (!synced.ok()) return undo(std::move(synced));
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
  // Compared after one normalisation: "a//b", "./a" and "a/" name the folders they mean.
  fs::path base = fs::path(LocalPath(root)).lexically_normal();
  if (!base.has_filename() && base != base.root_path()) base = base.parent_path();  // "a/" is "a"
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    const fs::path relative = fs::path(LocalPath(file)).lexically_normal().lexically_relative(base);
    if (relative.empty() || *relative.begin() == ".." || *relative.begin() == ".") continue;
    fs::path folder = base;
    for (const fs::path& part : relative.parent_path()) {
      folder /= part;
      if (seen.insert(folder.string()).second) out.push_back(folder.string());
    }
  }
  return out;
}

namespace {

// Removes the empty folders below the open folder `dir` (`shown` names it in errors), each
// reached by a name relative to its parent's descriptor and opened without following a link,
// so a folder swapped for a symbolic link meanwhile is never entered; adds what it removed to
// `*removed`. Returns whether `dir` holds nothing any more.
Result<bool> RemoveEmptyBelow(int dir, const std::string& shown, int64_t* removed) {
  const int listing = ::dup(dir);
  if (listing < 0) return FolderError("list folder", shown, errno);
  DIR* raw = ::fdopendir(listing);
  if (raw == nullptr) {
    const int err = errno;
    ::close(listing);
    return FolderError("list folder", shown, err);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> entries(raw, ::closedir);
  std::vector<std::string> subfolders;
  bool others = false;  // a file, a link or anything else that keeps the folder
  while (true) {
    errno = 0;
    struct dirent* entry = ::readdir(entries.get());
    if (entry == nullptr) {
      if (errno != 0) return FolderError("list folder", shown, errno);
      break;
    }
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return FolderError("stat", shown + "/" + name, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      subfolders.push_back(name);
    } else {
      others = true;
    }
  }
  entries.reset();
  bool all_gone = true;
  for (const std::string& name : subfolders) {
    const std::string path = shown + "/" + name;
    const int sub = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      if (errno == ENOENT) continue;  // gone meanwhile
      if (errno == ELOOP || errno == ENOTDIR) {
        all_gone = false;  // replaced by a link or a file: it stays
        continue;
      }
      return FolderError("open folder", path, errno);
    }
    Fd sub_fd(sub);
    SKADE_ASSIGN_OR_RETURN(bool empty, RemoveEmptyBelow(sub_fd.get(), path, removed));
    if (!empty) {
      all_gone = false;
      continue;
    }
    // Removes only an empty folder (one a concurrent writer just filled stays), and never
    // follows a link: a name now naming one fails with ENOTDIR.
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0) {
      ++*removed;
    } else if (errno != ENOENT) {
      if (errno != ENOTEMPTY && errno != EEXIST && errno != ENOTDIR) return FolderError("remove folder", path, errno);
      all_gone = false;
    }
  }
  return !others && all_gone;
}

}  // namespace

Result<int64_t> RemoveEmptyFolders(const std::string& root) {
  const std::string folder = WithoutTrailingSlashes(LocalPath(root));
  if (folder.empty() || folder == "/") return Status::InvalidArgument("remove empty folders: no folder named");
  struct stat st;
  if (::lstat(folder.c_str(), &st) != 0) {
    if (errno == ENOENT) return int64_t{0};
    return FolderError("stat", folder, errno);
  }
  if (!S_ISDIR(st.st_mode)) return int64_t{0};  // a link or a file: not a folder to clear
  const int opened = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (opened < 0) {
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) return int64_t{0};
    return FolderError("open folder", folder, errno);
  }
  Fd root_fd(opened);
  int64_t removed = 0;
  SKADE_ASSIGN_OR_RETURN(bool empty, RemoveEmptyBelow(root_fd.get(), folder, &removed));
  // rmdir does not follow a link that replaced the folder meanwhile (ENOTDIR), and removes only
  // an empty folder.
  if (empty && ::rmdir(folder.c_str()) == 0) ++removed;
  return removed;
}

}  // namespace skade::io
