#include "skade/table/failed_write_spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "skade/base/fd.h"
#include "skade/base/log.h"
#include "skade/catalog/polled_log.h"
#include "skade/io/local_folders.h"
#include "skade/base/json_parse_internal.h"

namespace skade::table {
namespace {

using Json = nlohmann::json;

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(what + " '" + path + "': " + std::strerror(errno));
}

Result<std::string> ReadAll(int fd, const std::string& path) {
  std::string out;
  char buf[65536];
  if (::lseek(fd, 0, SEEK_SET) < 0) return Errno("seek", path);
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read", path);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

Status LockExclusive(int fd, const std::string& path) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return Errno("lock", path);
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeFailedWrite(const FailedWrite& write) {
  Json j{{"table", write.table.ToString()},
         {"operation", write.operation},
         {"started-at-us", write.started_at_us},
         {"failed-at-us", write.failed_at_us},
         {"error", write.error}};
  if (!write.lineage.empty()) j["lineage"] = EncodeSnapshotLineage(write.lineage);
  return j.dump();
}

Result<FailedWrite> DecodeFailedWrite(const std::string& line) {
  SKADE_ASSIGN_OR_RETURN(const Json j, ParseJson(line, "a spool line"));
  const auto is = [&](const char* key, bool (Json::*check)() const noexcept) {
    return j.contains(key) && (j[key].*check)();
  };
  if (!j.is_object() || !is("table", &Json::is_string) || !is("operation", &Json::is_string) ||
      !is("started-at-us", &Json::is_number_integer) || !is("failed-at-us", &Json::is_number_integer) ||
      !is("error", &Json::is_string)) {
    return Status::Corruption("not a failed-write record");
  }
  FailedWrite write;
  SKADE_ASSIGN_OR_RETURN(write.table, catalog::TableIdent::Parse(j["table"].get<std::string>()));
  write.operation = j["operation"].get<std::string>();
  write.started_at_us = j["started-at-us"].get<int64_t>();
  write.failed_at_us = j["failed-at-us"].get<int64_t>();
  write.error = j["error"].get<std::string>();
  if (j.contains("lineage")) {
    if (!j["lineage"].is_string()) return Status::Corruption("failed-write lineage is not a string");
    SKADE_ASSIGN_OR_RETURN(write.lineage, DecodeSnapshotLineage(j["lineage"].get<std::string>()));
  }
  return write;
}

std::string FailedWriteSpool::DefaultPath(const std::string& catalog_uri) {
  return catalog::DefaultStatePath(catalog_uri, "failed-writes", ".jsonl");
}

void FailedWriteSpool::OnWriteFailed(const FailedWrite& write) {
  Fd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno != ENOENT) SKADE_LOG_WARN("failed write to {} not recorded: open '{}': {}",
                                        write.table.ToString(), path_, std::strerror(errno));
    return;  // ENOENT: no consumer follows this catalog
  }
  Status st = LockExclusive(fd.get(), path_);
  struct stat info {};
  if (st.ok() && ::fstat(fd.get(), &info) != 0) st = Errno("stat", path_);
  if (st.ok() && info.st_size >= kMaxBytes) {
    st = Status::ResourceExhausted("spool '" + path_ + "' is full (no consumer drains it)");
  }
  if (st.ok()) st = WriteAll(fd.get(), EncodeFailedWrite(write) + "\n", "write '" + path_ + "'");
  if (st.ok() && ::fdatasync(fd.get()) != 0) st = Errno("sync", path_);
  if (!st.ok()) {
    SKADE_LOG_WARN("failed write to {} not recorded: {}", write.table.ToString(), st.ToString());
  }
  // Closing releases the lock.
}

Status FailedWriteSpool::Enable() {
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) SKADE_RETURN_IF_ERROR(io::CreateFoldersDurably(parent.string()));
  Fd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.ok()) return Errno("create", path_);
  // A record is synced with fdatasync, which does not sync the file's entry.
  return io::SyncFolderEntries({path_});
}

Result<std::vector<FailedWrite>> FailedWriteSpool::TakePending() {
  const std::string sending = path_ + ".sending";
  {
    Fd spool(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
    if (!spool.ok() && errno != ENOENT) return Errno("open", path_);
    if (spool.ok()) {
      SKADE_RETURN_IF_ERROR(LockExclusive(spool.get(), path_));
      SKADE_ASSIGN_OR_RETURN(std::string taken, ReadAll(spool.get(), path_));
      if (!taken.empty()) {
        // Into the sending file first (synced), then the spool is emptied: a crash between
        // the two sends those writes twice, never not at all.
        Fd out(::open(sending.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
        if (!out.ok()) return Errno("open", sending);
        SKADE_RETURN_IF_ERROR(WriteAll(out.get(), taken, "write '" + sending + "'"));
        if (::fdatasync(out.get()) != 0) return Errno("sync", sending);
        SKADE_RETURN_IF_ERROR(io::SyncFolderEntries({sending}));
        if (::ftruncate(spool.get(), 0) != 0) return Errno("truncate", path_);
      }
    }
  }
  std::vector<FailedWrite> out;
  Fd in(::open(sending.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.ok()) {
    if (errno == ENOENT) return out;
    return Errno("open", sending);
  }
  SKADE_ASSIGN_OR_RETURN(std::string text, ReadAll(in.get(), sending));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto write = DecodeFailedWrite(line);
    if (!write.ok()) {
      SKADE_LOG_WARN("skipped a failed-write record in '{}': {}", sending, write.status().ToString());
      continue;
    }
    out.push_back(std::move(*write));
  }
  return out;
}

Status FailedWriteSpool::MarkSent() {
  const std::string sending = path_ + ".sending";
  if (::unlink(sending.c_str()) != 0 && errno != ENOENT) return Errno("remove", sending);
  return Status::Ok();
}

}  // namespace skade::table
