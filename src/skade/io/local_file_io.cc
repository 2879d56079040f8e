#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "skade/base/fd.h"
#include "skade/base/uuid.h"
#include "skade/io/file_io.h"
#include "skade/io/local_folders.h"
#include "skade/io/reserved_files.h"

namespace skade::io {
namespace {

namespace fs = std::filesystem;

Status ErrnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " '" + path + "': " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(std::move(msg));
  if (err == EEXIST) return Status::AlreadyExists(std::move(msg));
  return Status::IoError(std::move(msg));
}


Status EnsureParent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  return CreateFoldersDurably(parent.string());
}

// Writes `data` to a unique temporary file beside `path`, fsyncs it and returns its name.
Result<std::string> WriteTemp(const std::string& path, std::string_view data) {
  SKADE_RETURN_IF_ERROR(EnsureParent(path));
  std::string tmp = TemporaryWriteName(path, Uuid::NewV7().ToString());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus("create", tmp, errno);
  Status st = WriteAll(fd.get(), data, "write '" + tmp + "'");
  if (st.ok() && ::fsync(fd.get()) != 0) st = ErrnoStatus("fsync", tmp, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return tmp;
}

// Every location a LocalFileIO call opens passes here: a NUL would cut the path short at the
// system call (another file than the one named), and the catalog's own files are its alone.
Status Admit(std::string_view location, std::string_view what) {
  if (location.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument(std::string(what) + " a location with a NUL byte");
  }
  return CheckNotReserved(location, what);
}

// Best effort: the file is already in place under its name.
void SyncParent(const std::string& path) { (void)SyncFolderEntries({path}); }

class LocalFileIO final : public FileIO {
 public:
  Result<std::string> Read(std::string_view location) override {
    SKADE_RETURN_IF_ERROR(Admit(location, "read of"));
    std::string path = LocalPath(location);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus("open", path, errno);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path, errno);
    if (S_ISDIR(st.st_mode)) return Status::InvalidArgument("'" + path + "' is a folder");
    return ReadAt(fd.get(), path, 0, st.st_size);
  }

  Result<std::string> ReadRange(std::string_view location, int64_t offset,
                                int64_t length) override {
    if (offset < 0 || length < 0) return Status::InvalidArgument("negative read range");
    SKADE_RETURN_IF_ERROR(Admit(location, "read of"));
    std::string path = LocalPath(location);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus("open", path, errno);
    return ReadAt(fd.get(), path, offset, length);
  }

  Result<FileInfo> Stat(std::string_view location) override {
    if (location.find('\0') != std::string_view::npos) return Status::InvalidArgument("stat of a location with a NUL byte");
    std::string path = LocalPath(location);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    return FileInfo{std::string(location), static_cast<int64_t>(st.st_size),
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000};
  }

  Status CreateExclusive(std::string_view location, std::string_view data) override {
    SKADE_RETURN_IF_ERROR(Admit(location, "write of"));
    std::string path = LocalPath(location);
    SKADE_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(path, data));
    // link(2) fails with EEXIST if the target exists: an atomic create-if-absent that also
    // never exposes a partially written file.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ErrnoStatus("create", path, err);
    }
    ::unlink(tmp.c_str());
    SyncParent(path);
    return Status::Ok();
  }

  Status CreateUnpublished(std::string_view location, std::string_view data) override {
    return CreateNew(location, data, /*sync=*/true);
  }

  Status CreateUnsynced(std::string_view location, std::string_view data) override {
    return CreateNew(location, data, /*sync=*/false);
  }

  std::string ResolvedLocation(std::string_view location) override { return LocalPath(location); }

  Status SyncFiles(const std::vector<std::string>& locations) override {
    for (const std::string& location : locations) {
      SKADE_RETURN_IF_ERROR(Admit(location, "sync of"));
      const std::string path = LocalPath(location);
      // fsync(2) flushes the file's data whichever descriptor asks; a write-back error not yet
      // reported to anyone is reported to a descriptor opened after it (Linux ≥ 4.16).
      Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() < 0) return ErrnoStatus("open to sync", path, errno);
      if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync", path, errno);
    }
    return Status::Ok();
  }

  Status SyncFolders(const std::vector<std::string>& locations) override { return SyncFolderEntries(locations); }

  Status Overwrite(std::string_view location, std::string_view data) override {
    SKADE_RETURN_IF_ERROR(Admit(location, "write of"));
    std::string path = LocalPath(location);
    SKADE_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(path, data));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ErrnoStatus("rename", path, err);
    }
    SyncParent(path);
    return Status::Ok();
  }

  Status Update(std::string_view location, const Change& change) override {
    SKADE_RETURN_IF_ERROR(Admit(location, "write of"));
    std::string path = LocalPath(location);
    SKADE_RETURN_IF_ERROR(EnsureParent(path));
    // flock(2) on the parent folder serialises updaters across processes and is released by
    // the kernel if the holder dies, so a crash never leaves a lock behind.
    fs::path parent = fs::path(path).parent_path();
    Fd dir(::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) return ErrnoStatus("open folder", parent.string(), errno);
    while (::flock(dir.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return ErrnoStatus("lock folder", parent.string(), errno);
    }
    Result<std::string> current = Read(location);
    if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
    std::optional<std::string> next = change(current.ok() ? std::optional<std::string>(*current) : std::nullopt);
    if (!next) return Status::Ok();
    // The new content is synced before the rename, so the file is never seen empty or torn;
    // the folder is not synced: after a power loss the rename may be undone, leaving the
    // previous content (an update is a hint, never the only record of anything).
    SKADE_ASSIGN_OR_RETURN(std::string tmp, WriteTemp(path, *next));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ErrnoStatus("rename", path, err);
    }
    return Status::Ok();  // the lock goes with `dir`
  }

  Result<std::vector<FileInfo>> List(std::string_view prefix) override {
    if (prefix.find('\0') != std::string_view::npos) return Status::InvalidArgument("list of a location with a NUL byte");
    std::string path = LocalPath(prefix);
    std::vector<FileInfo> out;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return out;
      return ErrnoStatus("list", path, errno);
    }
    if (!S_ISDIR(st.st_mode)) return out;
    SKADE_RETURN_IF_ERROR(ListFolder(path, &out));
    return out;
  }

  Status Delete(std::string_view location) override {
    SKADE_RETURN_IF_ERROR(Admit(location, "delete of"));
    std::string path = LocalPath(location);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("delete", path, errno);
    return Status::Ok();
  }

 private:
  // A new file at `location` (O_EXCL: kAlreadyExists if there is one), its bytes fsynced when
  // `sync`; a failed write leaves nothing behind (the name was ours alone).
  static Status CreateNew(std::string_view location, std::string_view data, bool sync) {
    SKADE_RETURN_IF_ERROR(Admit(location, "write of"));
    std::string path = LocalPath(location);
    SKADE_RETURN_IF_ERROR(EnsureParent(path));
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) return ErrnoStatus("create", path, errno);
    Status st = WriteAll(fd.get(), data, "write '" + path + "'");
    if (st.ok() && sync && ::fsync(fd.get()) != 0) st = ErrnoStatus("fsync", path, errno);
    if (!st.ok()) ::unlink(path.c_str());
    return st;
  }

  // Appends the regular files below `folder`. An entry that vanishes between readdir and
  // stat/opendir (a concurrent delete or rename) is skipped: the listing is of what exists.
  static Status ListFolder(const std::string& folder, std::vector<FileInfo>* out) {
    DIR* raw = ::opendir(folder.c_str());
    if (raw == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();
      return ErrnoStatus("list", folder, errno);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, ::closedir);
    std::vector<std::string> subfolders;
    while (true) {
      errno = 0;
      struct dirent* entry = ::readdir(dir.get());
      if (entry == nullptr) {
        if (errno != 0) return ErrnoStatus("list", folder, errno);
        break;
      }
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      std::string child = folder + (folder.empty() || folder.back() == '/' ? "" : "/") + std::string(name);
      struct stat st;
      if (::lstat(child.c_str(), &st) != 0) {
        if (errno == ENOENT) continue;
        return ErrnoStatus("stat", child, errno);
      }
      if (S_ISDIR(st.st_mode)) {
        subfolders.push_back(std::move(child));
      } else if (S_ISREG(st.st_mode)) {
        out->push_back({std::move(child), static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000});
      }
    }
    dir.reset();
    for (const std::string& sub : subfolders) SKADE_RETURN_IF_ERROR(ListFolder(sub, out));
    return Status::Ok();
  }

  static Result<std::string> ReadAt(int fd, const std::string& path, int64_t offset,
                                    int64_t length) {
    std::string out(static_cast<size_t>(length), '\0');
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::pread(fd, out.data() + done, out.size() - done,
                          static_cast<off_t>(offset + static_cast<int64_t>(done)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("read", path, errno);
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    out.resize(done);
    return out;
  }
};

}  // namespace

namespace {
constexpr std::string_view kTemporaryMark = ".tmp-";
}

std::string TemporaryWriteName(std::string_view location, std::string_view unique) {
  return std::string(location) + std::string(kTemporaryMark) + std::string(unique);
}

bool IsTemporaryWrite(std::string_view location) {
  size_t slash = location.rfind('/');
  std::string_view name = slash == std::string_view::npos ? location : location.substr(slash + 1);
  size_t mark = name.rfind(kTemporaryMark);
  return mark != std::string_view::npos && mark > 0 && mark + kTemporaryMark.size() < name.size();
}

std::string LocalPath(std::string_view location) {
  if (location.rfind("file://", 0) == 0) return std::string(location.substr(7));
  if (location.rfind("file:", 0) == 0) return std::string(location.substr(5));
  return std::string(location);
}

std::string JoinLocation(std::string_view base, std::string_view name) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  std::string out(base);
  out += '/';
  out += name;
  return out;
}

std::unique_ptr<FileIO> MakeLocalFileIO() { return std::make_unique<LocalFileIO>(); }

}  // namespace skade::io
