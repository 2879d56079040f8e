#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "skade/engine/object_store_fs_internal.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

using duckdb::FileHandle;
using duckdb::FileOpener;
using duckdb::FileOpenFlags;
using duckdb::idx_t;
using duckdb::optional_ptr;

// A FileIO error as the exception DuckDB expects from a file system. The message is skade's
// (location, S3's Code and Message), which never carries credentials. An unreachable store is
// a connection error, so that the statement's error says "unavailable" (Database maps it back
// to kUnavailable) rather than a problem of the request.
[[noreturn]] void ThrowIo(const Status& status) {
  if (status.code() == StatusCode::kUnavailable) throw duckdb::ConnectionException(status.message());
  throw duckdb::IOException(status.message());
}

// ---- glob matching ------------------------------------------------------------------------

// Matches `text` against a DuckDB-style glob: '*' any run of characters within one path
// component, '**' any run across components ("a/**/b" also matches "a/b"), '?' one character
// other than '/', "[abc]", "[a-z]" and "[!a]" one character of (or not of) a class; anything else
// matches itself. Memoised over (pattern position, text position), so patterns with many
// stars cost O(pattern × text²) at worst, never exponential time.
class GlobMatcher {
 public:
  GlobMatcher(std::string_view pattern, std::string_view text)
      : p_(pattern), s_(text), memo_((pattern.size() + 1) * (text.size() + 1), kUnknown) {}

  bool Matches() { return Match(0, 0); }

 private:
  static constexpr signed char kUnknown = -1;

  bool Match(size_t pi, size_t si) {
    signed char& slot = memo_[pi * (s_.size() + 1) + si];
    if (slot == kUnknown) slot = Compute(pi, si) ? 1 : 0;
    return slot == 1;
  }

  bool Compute(size_t pi, size_t si) {
    if (pi == p_.size()) return si == s_.size();
    if (p_.compare(pi, 2, "**") == 0) {
      if (pi + 2 < p_.size() && p_[pi + 2] == '/') {
        // "**/": no folder at all, or any run ending in '/'.
        if (Match(pi + 3, si)) return true;
        for (size_t j = si; j < s_.size(); ++j) {
          if (s_[j] == '/' && Match(pi + 3, j + 1)) return true;
        }
        return false;
      }
      for (size_t j = si; j <= s_.size(); ++j) {
        if (Match(pi + 2, j)) return true;
      }
      return false;
    }
    const char c = p_[pi];
    if (c == '*') {
      for (size_t j = si; j <= s_.size(); ++j) {
        if (Match(pi + 1, j)) return true;
        if (j < s_.size() && s_[j] == '/') break;
      }
      return false;
    }
    if (si == s_.size()) return false;
    if (c == '?') return s_[si] != '/' && Match(pi + 1, si + 1);
    if (c == '[') {
      size_t end = pi + 1;
      if (end < p_.size() && (p_[end] == '!' || p_[end] == '^')) ++end;
      if (end < p_.size() && p_[end] == ']') ++end;  // a leading ']' is a member
      end = p_.find(']', end);
      if (end != std::string_view::npos) {
        return InClass(p_.substr(pi + 1, end - pi - 1), s_[si]) && Match(end + 1, si + 1);
      }
      // No closing ']': the '[' is an ordinary character.
    }
    return s_[si] == c && Match(pi + 1, si + 1);
  }

  static bool InClass(std::string_view cls, char ch) {
    bool negate = !cls.empty() && (cls[0] == '!' || cls[0] == '^');
    if (negate) cls.remove_prefix(1);
    bool found = false;
    for (size_t i = 0; i < cls.size(); ++i) {
      if (i + 2 < cls.size() && cls[i + 1] == '-') {
        found = found || (ch >= cls[i] && ch <= cls[i + 2]);
        i += 2;
      } else {
        found = found || ch == cls[i];
      }
    }
    return ch != '/' && found != negate;
  }

  std::string_view p_;
  std::string_view s_;
  std::vector<signed char> memo_;
};

// ---- handles ------------------------------------------------------------------------------

// An object opened for reading: its size and modification time from one Stat, and the position
// of sequential reads. Positional reads (the ones DuckDB issues from several threads at once)
// touch no state.
class ReadHandle final : public FileHandle {
 public:
  ReadHandle(duckdb::FileSystem& fs, const std::string& path, FileOpenFlags flags,
             io::FileInfo info)
      : FileHandle(fs, path, flags), info_(std::move(info)) {}
  void Close() override {}

  const io::FileInfo& info() const { return info_; }
  idx_t position = 0;  // sequential reads only; DuckDB does not share them between threads

 private:
  const io::FileInfo info_;
};

// An object being written: DuckDB's sequential writes go to an unlinked temporary file, which
// Close uploads with CreateExclusive. A handle destroyed without Close (DuckDB gave up on the
// write) uploads nothing. Used by one thread at a time.
class WriteHandle final : public FileHandle {
 public:
  WriteHandle(duckdb::FileSystem& fs, const std::string& path, FileOpenFlags flags, io::FileIO& io,
              int fd)
      : FileHandle(fs, path, flags), io_(io), fd_(fd) {}
  ~WriteHandle() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void Write(const void* buffer, int64_t length, idx_t location) {
    const char* data = static_cast<const char*>(buffer);
    int64_t done = 0;
    while (done < length) {
      ssize_t n = ::pwrite(fd_, data + done, static_cast<size_t>(length - done),
                           static_cast<off_t>(location) + done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw duckdb::IOException("cannot buffer '" + path +
                                  "' for upload: " + std::strerror(errno));
      }
      done += n;
    }
    size_ = std::max<int64_t>(size_, static_cast<int64_t>(location) + length);
  }

  void Close() override {
    if (closed_) return;
    closed_ = true;
    Status uploaded = Upload();
    ::close(fd_);
    fd_ = -1;
    if (!uploaded.ok()) ThrowIo(uploaded);
  }

  int64_t size() const { return size_; }
  idx_t position = 0;

 private:
  Status Upload() {
    if (size_ == 0) return io_.CreateExclusive(path, "");
    // Mapped, not read: the bytes stay in the page cache of the temporary file instead of
    // taking a second copy on the heap.
    void* mapped = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd_, 0);
    if (mapped == MAP_FAILED) {
      return Status::IoError("cannot map the buffered '" + path +
                             "' for upload: " + std::strerror(errno));
    }
    Status status = io_.CreateExclusive(
        path, std::string_view(static_cast<const char*>(mapped), static_cast<size_t>(size_)));
    ::munmap(mapped, static_cast<size_t>(size_));
    return status;
  }

  io::FileIO& io_;
  int fd_;
  int64_t size_ = 0;
  bool closed_ = false;
};

ReadHandle& AsRead(FileHandle& handle) {
  auto* h = dynamic_cast<ReadHandle*>(&handle);
  if (h == nullptr) {
    throw duckdb::IOException("'" + handle.path + "' is open for writing, not for reading");
  }
  return *h;
}

WriteHandle& AsWrite(FileHandle& handle) {
  auto* h = dynamic_cast<WriteHandle*>(&handle);
  if (h == nullptr) {
    throw duckdb::IOException("'" + handle.path + "' is open for reading, not for writing");
  }
  return *h;
}

// ---- the file system ------------------------------------------------------------------------

// Serves object-store locations through a skade FileIO. Thread-safe: it holds no mutable state
// of its own, and the FileIO is thread-safe.
class ObjectStoreFileSystem final : public duckdb::FileSystem {
 public:
  ObjectStoreFileSystem(io::FileIO& io, std::string temp_directory)
      : io_(io), temp_directory_(std::move(temp_directory)) {}

  using duckdb::FileSystem::ListFiles;
  using duckdb::FileSystem::OpenFile;

  std::string GetName() const override { return "SkadeObjectStoreFileSystem"; }
  bool CanHandleFile(const std::string& path) override { return io::IsObjectStoreLocation(path); }
  bool CanSeek() override { return true; }
  // Not on disk: DuckDB then reads large coalesced ranges instead of many small ones.
  bool OnDiskFile(FileHandle&) override { return false; }

  duckdb::unique_ptr<FileHandle> OpenFile(const std::string& path, FileOpenFlags flags,
                                          optional_ptr<FileOpener>) override {
    if (flags.OpenForWriting()) {
      if (flags.OpenForReading() || flags.OpenForAppending()) {
        throw duckdb::NotImplementedException(
            "'%s': objects in an object store can be written only as a whole new object", path);
      }
      // Refused here already when the object exists, before DuckDB writes it all; Close's
      // CreateExclusive still decides a race with another writer.
      Result<io::FileInfo> existing = io_.Stat(path);
      if (existing.ok()) {
        if (flags.ReturnNullIfExists()) return nullptr;
        throw duckdb::IOException("'" + path + "' already exists; objects are never replaced");
      }
      if (existing.status().code() != StatusCode::kNotFound) ThrowIo(existing.status());
      return duckdb::make_uniq<WriteHandle>(*this, path, flags, io_, OpenTemporaryFile(path));
    }
    Result<io::FileInfo> info = io_.Stat(path);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound && flags.ReturnNullIfNotExists()) {
        return nullptr;
      }
      ThrowIo(Explained(path, info.status()));
    }
    return duckdb::make_uniq<ReadHandle>(*this, path, flags, std::move(info).value());
  }

  // Files found by Glob carry the size and time the listing (or Stat) returned, so opening them
  // for reading needs no second request.
  bool SupportsOpenFileExtended() const override { return true; }
  duckdb::unique_ptr<FileHandle> OpenFileExtended(const duckdb::OpenFileInfo& file,
                                                  FileOpenFlags flags,
                                                  optional_ptr<FileOpener> opener) override {
    if (!flags.OpenForWriting() && file.extended_info != nullptr) {
      const auto& options = file.extended_info->options;
      auto size = options.find(kSizeOption);
      auto modified = options.find(kModifiedOption);
      if (size != options.end() && modified != options.end()) {
        io::FileInfo info{file.path, size->second.GetValue<int64_t>(),
                          modified->second.GetValue<int64_t>()};
        return duckdb::make_uniq<ReadHandle>(*this, file.path, flags, std::move(info));
      }
    }
    return OpenFile(file.path, flags, opener);
  }

  void Read(FileHandle& handle, void* buffer, int64_t nr_bytes, idx_t location) override {
    auto& h = AsRead(handle);
    if (nr_bytes <= 0) return;
    Result<std::string> bytes = io_.ReadRange(h.path, static_cast<int64_t>(location), nr_bytes);
    if (!bytes.ok()) ThrowIo(bytes.status());
    if (static_cast<int64_t>(bytes->size()) != nr_bytes) {
      throw duckdb::IOException("short read of '" + h.path + "': " + std::to_string(bytes->size()) +
                                " of " + std::to_string(nr_bytes) + " bytes at offset " +
                                std::to_string(location) + " (the object has " +
                                std::to_string(h.info().size) + " bytes)");
    }
    std::memcpy(buffer, bytes->data(), bytes->size());
  }

  int64_t Read(FileHandle& handle, void* buffer, int64_t nr_bytes) override {
    auto& h = AsRead(handle);
    const int64_t left = h.info().size - static_cast<int64_t>(h.position);
    const int64_t n = std::max<int64_t>(0, std::min(nr_bytes, left));
    if (n == 0) return 0;
    Read(handle, buffer, n, h.position);
    h.position += static_cast<idx_t>(n);
    return n;
  }

  void Write(FileHandle& handle, void* buffer, int64_t nr_bytes, idx_t location) override {
    AsWrite(handle).Write(buffer, nr_bytes, location);
  }

  int64_t Write(FileHandle& handle, void* buffer, int64_t nr_bytes) override {
    auto& h = AsWrite(handle);
    h.Write(buffer, nr_bytes, h.position);
    h.position += static_cast<idx_t>(nr_bytes);
    return nr_bytes;
  }

  // The bytes reach the store in Close; there is nothing to sync before.
  void FileSync(FileHandle&) override {}

  int64_t GetFileSize(FileHandle& handle) override {
    if (auto* w = dynamic_cast<WriteHandle*>(&handle)) return w->size();
    return AsRead(handle).info().size;
  }

  // DuckDB's external file cache keys cached ranges on path + this time.
  duckdb::timestamp_t GetLastModifiedTime(FileHandle& handle) override {
    if (dynamic_cast<WriteHandle*>(&handle) != nullptr) {
      return duckdb::Timestamp::GetCurrentTimestamp();
    }
    return duckdb::Timestamp::FromEpochMs(AsRead(handle).info().modified_ms);
  }

  duckdb::FileType GetFileType(FileHandle&) override { return duckdb::FileType::FILE_TYPE_REGULAR; }

  void Seek(FileHandle& handle, idx_t location) override {
    if (auto* w = dynamic_cast<WriteHandle*>(&handle)) {
      w->position = location;
    } else {
      AsRead(handle).position = location;
    }
  }
  void Reset(FileHandle& handle) override { Seek(handle, 0); }
  idx_t SeekPosition(FileHandle& handle) override {
    if (auto* w = dynamic_cast<WriteHandle*>(&handle)) return w->position;
    return AsRead(handle).position;
  }

  bool FileExists(const std::string& filename, optional_ptr<FileOpener>) override {
    Result<io::FileInfo> info = io_.Stat(filename);
    if (info.ok()) return true;
    if (info.status().code() == StatusCode::kNotFound) return false;
    ThrowIo(info.status());
  }

  void RemoveFile(const std::string& filename, optional_ptr<FileOpener>) override {
    Status deleted = io_.Delete(filename);
    if (!deleted.ok()) ThrowIo(deleted);
  }

  bool TryRemoveFile(const std::string& filename, optional_ptr<FileOpener> opener) override {
    if (!FileExists(filename, opener)) return false;
    RemoveFile(filename, opener);
    return true;
  }

  // An object store has no folders, only key prefixes: none "exists" on its own, creating one
  // is nothing (the objects written below it make it), and a write never replaces an object
  // (CreateExclusive), whatever DuckDB decided about the folder.
  bool DirectoryExists(const std::string&, optional_ptr<FileOpener>) override { return false; }
  void CreateDirectory(const std::string&, optional_ptr<FileOpener>) override {}

  // The direct children of `directory`: objects as files, deeper key prefixes as folders.
  bool ListFiles(const std::string& directory,
                 const std::function<void(const std::string&, bool)>& callback,
                 FileOpener*) override {
    Result<std::vector<io::FileInfo>> listed = io_.List(directory);
    if (!listed.ok()) ThrowIo(listed.status());
    std::string prefix = directory;
    if (prefix.empty() || prefix.back() != '/') prefix += '/';
    std::vector<std::string> folders;
    for (const io::FileInfo& f : *listed) {
      if (f.location.compare(0, prefix.size(), prefix) != 0) continue;
      std::string rest = f.location.substr(prefix.size());
      size_t slash = rest.find('/');
      if (slash == std::string::npos) {
        callback(rest, false);
      } else {
        folders.push_back(rest.substr(0, slash));
      }
    }
    std::sort(folders.begin(), folders.end());
    folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
    for (const std::string& folder : folders) callback(folder, true);
    return !listed->empty();
  }

  // A literal path is itself once its object exists (a missing one fails with the store's
  // message, e.g. which bucket or key is missing); a pattern lists the key prefix before its
  // first wildcard and keeps the matching objects, in key order.
  duckdb::vector<duckdb::OpenFileInfo> Glob(const std::string& path, FileOpener*) override {
    const size_t wildcard = path.find_first_of("*?[");
    if (wildcard == std::string::npos) {
      Result<io::FileInfo> info = io_.Stat(path);
      if (!info.ok()) ThrowIo(Explained(path, info.status()));
      return {Found(path, *info)};
    }
    const size_t slash = path.rfind('/', wildcard);
    const size_t authority = path.find("://");
    if (slash == std::string::npos || authority == std::string::npos || slash < authority + 3 ||
        path.find('/', authority + 3) > wildcard) {
      throw duckdb::IOException("'" + path +
                                "': the bucket of an object-store glob must be spelled out");
    }
    Result<std::vector<io::FileInfo>> listed = io_.List(path.substr(0, slash));
    if (!listed.ok()) ThrowIo(listed.status());
    duckdb::vector<duckdb::OpenFileInfo> out;
    for (const io::FileInfo& f : *listed) {
      if (GlobMatcher(path, f.location).Matches()) out.push_back(Found(f.location, f));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  // A HEAD answer has no body, so a missing object's Stat cannot say whether the key or the
  // whole bucket is missing; a one-byte GET returns S3's error document (NoSuchKey,
  // NoSuchBucket), which is what the user needs to read. Only on this error path.
  Status Explained(const std::string& path, const Status& stat_error) {
    if (stat_error.code() != StatusCode::kNotFound) return stat_error;
    Result<std::string> probe = io_.ReadRange(path, 0, 1);
    return probe.ok() ? stat_error : probe.status();
  }

  static constexpr const char* kSizeOption = "skade_object_size";
  static constexpr const char* kModifiedOption = "skade_object_modified_ms";

  static duckdb::OpenFileInfo Found(const std::string& path, const io::FileInfo& info) {
    duckdb::OpenFileInfo out(path);
    out.extended_info = duckdb::make_shared_ptr<duckdb::ExtendedOpenFileInfo>();
    out.extended_info->options[kSizeOption] = duckdb::Value::BIGINT(info.size);
    out.extended_info->options[kModifiedOption] = duckdb::Value::BIGINT(info.modified_ms);
    return out;
  }

  // A temporary file that is already unlinked: nothing stays behind, whatever happens.
  int OpenTemporaryFile(const std::string& path) const {
    std::string dir = temp_directory_;
    if (dir.empty()) {
      const char* env = std::getenv("TMPDIR");
      dir = env != nullptr && *env != '\0' ? env : "/tmp";
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);  // DuckDB creates its temp_directory lazily too
    std::string name = dir + "/skade-upload-XXXXXX";
    int fd = ::mkstemp(name.data());
    if (fd < 0) {
      throw duckdb::IOException("cannot create a temporary file in '" + dir + "' to buffer '" +
                                path + "': " + std::strerror(errno));
    }
    ::unlink(name.c_str());
    return fd;
  }

  io::FileIO& io_;
  const std::string temp_directory_;
};

}  // namespace

Status RegisterObjectStoreFileSystem(duckdb_database db, io::FileIO& io,
                                     std::string temp_directory) {
  try {
    // The C API's database handle is a DatabaseWrapper (duckdb/main/capi/capi_internal.hpp).
    auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
    duckdb::DatabaseInstance& instance = *wrapper->database->instance;
    instance.GetFileSystem().RegisterSubSystem(
        duckdb::make_uniq<ObjectStoreFileSystem>(io, std::move(temp_directory)));
  } catch (const std::exception& e) {
    return Status::Internal("cannot register the object-store file system: " +
                            duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

}  // namespace skade::engine
