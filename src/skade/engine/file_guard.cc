#include "skade/engine/file_guard_internal.h"

#include <string>

#include "duckdb.hpp"
#include "duckdb/common/file_opener.hpp"
#include "duckdb/common/local_file_system.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "skade/io/location.h"
#include "skade/io/reserved_files.h"

namespace skade::engine {
namespace {

using duckdb::FileOpener;
using duckdb::FileOpenFlags;
using duckdb::optional_ptr;

[[noreturn]] void Refuse(const std::string& path) {
  throw duckdb::PermissionException("'%s' is the catalog's own file: queries read only tables", path);
}

// DuckDB asks each registered file system whether it handles a path before falling back to the
// local one; this one claims exactly the reserved files, and refuses everything on them.
// Thread-safe (no state; io::IsReservedFile is).
class ReservedFileGuard final : public duckdb::FileSystem {
 public:
  using duckdb::FileSystem::OpenFile;

  std::string GetName() const override { return "SkadeReservedFileGuard"; }
  bool CanHandleFile(const std::string& path) override { return io::IsReservedFile(path); }

  duckdb::unique_ptr<duckdb::FileHandle> OpenFile(const std::string& path, FileOpenFlags,
                                                  optional_ptr<FileOpener>) override {
    Refuse(path);
  }
  duckdb::vector<duckdb::OpenFileInfo> Glob(const std::string& path, FileOpener*) override { Refuse(path); }
  bool FileExists(const std::string& path, optional_ptr<FileOpener>) override { Refuse(path); }
  bool IsPipe(const std::string& path, optional_ptr<FileOpener>) override { Refuse(path); }
  void RemoveFile(const std::string& path, optional_ptr<FileOpener>) override { Refuse(path); }
  bool TryRemoveFile(const std::string& path, optional_ptr<FileOpener>) override { Refuse(path); }
  void MoveFile(const std::string& source, const std::string&, optional_ptr<FileOpener>) override { Refuse(source); }
  bool DirectoryExists(const std::string& path, optional_ptr<FileOpener>) override { Refuse(path); }
};

// Claims the paths inside DuckDB's spill folder. DuckDB's own operations there (the buffer
// manager's) go to the local file system; a query's (whose file opener carries its client
// context) are refused. Thread-safe (the local file system is).
class SpillFolderGuard final : public duckdb::FileSystem {
 public:
  explicit SpillFolderGuard(std::string folder) : folder_(std::move(folder)) {}

  std::string GetName() const override { return "SkadeSpillFolderGuard"; }
  bool CanHandleFile(const std::string& path) override { return io::IsWithin(path, folder_); }

  duckdb::unique_ptr<duckdb::FileHandle> OpenFile(const std::string& path, FileOpenFlags flags,
                                                  optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    return local_.OpenFile(path, flags);
  }
  duckdb::vector<duckdb::OpenFileInfo> Glob(const std::string& path, FileOpener* opener) override {
    Own(path, opener);
    return local_.Glob(path);
  }
  bool FileExists(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    return local_.FileExists(path);
  }
  bool IsPipe(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    return local_.IsPipe(path);
  }
  void RemoveFile(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    local_.RemoveFile(path);
  }
  bool TryRemoveFile(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    return local_.TryRemoveFile(path);
  }
  void MoveFile(const std::string& source, const std::string& target, optional_ptr<FileOpener> opener) override {
    Own(source, opener.get());
    Own(target, opener.get());
    local_.MoveFile(source, target);
  }
  bool DirectoryExists(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    return local_.DirectoryExists(path);
  }
  void CreateDirectory(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    local_.CreateDirectory(path);
  }
  void RemoveDirectory(const std::string& path, optional_ptr<FileOpener> opener) override {
    Own(path, opener.get());
    local_.RemoveDirectory(path);
  }
  bool ListFiles(const std::string& path, const std::function<void(const std::string&, bool)>& callback,
                 FileOpener* opener) override {
    Own(path, opener);
    return local_.ListFiles(path, callback);
  }

 private:
  // Refuses an operation a query asked for: one whose opener carries a client context.
  // (Measured on DuckDB 1.4.4: the buffer manager's creates, opens and removes come with the
  // database's opener, which has none.)
  void Own(const std::string& path, FileOpener* opener) const {
    if (FileOpener::TryGetClientContext(opener) != nullptr) {
      throw duckdb::PermissionException("'%s' is inside DuckDB's spill folder: queries read only tables", path);
    }
  }

  const std::string folder_;
  duckdb::LocalFileSystem local_;
};

}  // namespace

Status RegisterSpillFolderGuard(duckdb_database db, const std::string& folder) {
  const std::string normal = io::NormalizeLocation(folder);
  if (normal.empty() || io::IsObjectStoreLocation(normal)) {
    return Status::InvalidArgument("spill folder '" + folder + "' is not a local folder");
  }
  try {
    auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
    wrapper->database->instance->GetFileSystem().RegisterSubSystem(duckdb::make_uniq<SpillFolderGuard>(normal));
  } catch (const std::exception& e) {
    return Status::Internal("cannot register the spill folder guard: " + duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

Status RegisterReservedFileGuard(duckdb_database db) {
  try {
    // The C API's database handle is a DatabaseWrapper (duckdb/main/capi/capi_internal.hpp).
    auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
    wrapper->database->instance->GetFileSystem().RegisterSubSystem(duckdb::make_uniq<ReservedFileGuard>());
  } catch (const std::exception& e) {
    return Status::Internal("cannot register the reserved-file guard: " + duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

}  // namespace skade::engine
