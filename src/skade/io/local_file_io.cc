#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "skade/base/uuid.h"
#include "skade/io/file_io.h"

namespace skade::io {
namespace {

namespace fs = std::filesystem;

Status ErrnoStatus(std::string_view what, const std::string& path, int err) {
  std::string msg = std::string(what) + " '" + path + "': " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(std::move(msg));
  if (err == EEXIST) return Status::AlreadyExists(std::move(msg));
  return Status::IoError(std::move(msg));
}

// RAII file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path, errno);
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status EnsureParent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::IoError("create folder '" + parent.string() + "': " + ec.message());
  return Status::Ok();
}

// Writes `data` to a unique temporary file beside `path`, fsyncs it and returns its name.
Result<std::string> WriteTemp(const std::string& path, std::string_view data) {
  SKADE_RETURN_IF_ERROR(EnsureParent(path));
  std::string tmp = path + ".tmp-" + Uuid::NewV7().ToString();
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus("create", tmp, errno);
  Status st = WriteAll(fd.get(), data, tmp);
  if (st.ok() && ::fsync(fd.get()) != 0) st = ErrnoStatus("fsync", tmp, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return tmp;
}

void SyncParent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  Fd dir(::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

class LocalFileIO final : public FileIO {
 public:
  Result<std::string> Read(std::string_view location) override {
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
    std::string path = LocalPath(location);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus("open", path, errno);
    return ReadAt(fd.get(), path, offset, length);
  }

  Result<FileInfo> Stat(std::string_view location) override {
    std::string path = LocalPath(location);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    return FileInfo{std::string(location), static_cast<int64_t>(st.st_size),
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000};
  }

  Status CreateExclusive(std::string_view location, std::string_view data) override {
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

  Status Overwrite(std::string_view location, std::string_view data) override {
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

  Result<std::vector<FileInfo>> List(std::string_view prefix) override {
    std::string path = LocalPath(prefix);
    std::vector<FileInfo> out;
    std::error_code ec;
    if (!fs::exists(path, ec)) return out;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      auto size = it->file_size(ec);
      if (ec) break;
      auto mtime = fs::last_write_time(it->path(), ec);
      if (ec) break;
      auto sys = std::chrono::file_clock::to_sys(mtime);
      out.push_back({it->path().string(), static_cast<int64_t>(size),
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         sys.time_since_epoch())
                         .count()});
    }
    if (ec) return Status::IoError("list '" + path + "': " + ec.message());
    return out;
  }

  Status Delete(std::string_view location) override {
    std::string path = LocalPath(location);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("delete", path, errno);
    return Status::Ok();
  }

 private:
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
