#include "skade/engine/file_guard_internal.h"

#include <string>

#include "duckdb.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
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

}  // namespace

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
