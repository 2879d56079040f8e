#include "skade/engine/new_file_checksums.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "skade/base/fd.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/parquet_checksums.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

constexpr size_t kWriteBuffer = size_t{1} << 20;

Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::IoError(what + " '" + path + "': " + std::strerror(err));
}

Result<ChecksummedFile> RewriteLocal(const std::string& path) {
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return Errno("open", path, errno);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return Errno("stat", path, errno);
  auto read = [&](int64_t offset, int64_t length) -> Result<std::string> {
    std::string bytes(static_cast<size_t>(length), '\0');
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pread(in.get(), bytes.data() + done, bytes.size() - done, offset + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("read", path, errno);
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
    return bytes;
  };

  const std::string tmp = io::TemporaryWriteName(path, Uuid::NewV7().ToString());
  Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (out.get() < 0) return Errno("create", tmp, errno);
  std::string buffer;
  auto write = [&](std::string_view bytes) -> Status {
    if (buffer.size() + bytes.size() < kWriteBuffer) {
      buffer.append(bytes);
      return Status::Ok();
    }
    SKADE_RETURN_IF_ERROR(WriteAll(out.get(), buffer, "write '" + tmp + "'"));
    buffer.clear();
    return WriteAll(out.get(), bytes, "write '" + tmp + "'");
  };
  auto finish = [&]() -> Result<ChecksummedFile> {
    SKADE_ASSIGN_OR_RETURN(iceberg::PageChecksumRewrite rewrite,
                           iceberg::AddParquetPageChecksums(st.st_size, read, write, path));
    SKADE_RETURN_IF_ERROR(WriteAll(out.get(), buffer, "write '" + tmp + "'"));
    if (::close(out.Release()) != 0) return Errno("close", tmp, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename", tmp, errno);
    return ChecksummedFile{rewrite.size, std::move(rewrite.growth_by_field_id)};
  };
  Result<ChecksummedFile> done = finish();
  if (!done.ok()) ::unlink(tmp.c_str());
  return done;
}

Result<ChecksummedFile> RewriteObject(const std::string& location, io::FileIO& io) {
  SKADE_ASSIGN_OR_RETURN(std::string original, io.Read(location));
  std::string copy;
  copy.reserve(original.size() + original.size() / 64 + 1024);
  auto read = [&](int64_t offset, int64_t length) -> Result<std::string> {
    return original.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  };
  auto write = [&](std::string_view bytes) {
    copy.append(bytes);
    return Status::Ok();
  };
  SKADE_ASSIGN_OR_RETURN(iceberg::PageChecksumRewrite rewrite,
                         iceberg::AddParquetPageChecksums(static_cast<int64_t>(original.size()), read, write,
                                                          location));
  original.clear();
  original.shrink_to_fit();
  SKADE_RETURN_IF_ERROR(io.Overwrite(location, copy));
  return ChecksummedFile{rewrite.size, std::move(rewrite.growth_by_field_id)};
}

}  // namespace

Result<ChecksummedFile> AddPageChecksumsToNewFile(const std::string& location, io::FileIO* object_store) {
  if (!io::IsObjectStoreLocation(location)) return RewriteLocal(io::LocalPath(location));
  if (object_store == nullptr) {
    return Status::Internal("no FileIO to add page checksums to '" + location + "'");
  }
  return RewriteObject(location, *object_store);
}

}  // namespace skade::engine
