// SqlCatalog: the Catalog over SQLite (WAL; the default, one file in the warehouse) or
// PostgreSQL (libpq), with the Iceberg JDBC catalog tables (iceberg_tables,
// iceberg_namespace_properties) so Java JdbcCatalog and PyIceberg SqlCatalog can open the same
// database, plus skade_commit_log and skade_meta (DESIGN §4). Commits of one process are
// grouped into shared database transactions (group commit); commit_seq is dense and in commit
// order in both dialects.
#pragma once

#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::catalog {

struct SqlCatalogOptions {
  // "sqlite:///abs/path/catalog.db", a plain path to a .db file, or
  // "postgresql://user@host:port/db" (any libpq connection URI). Other schemes are refused.
  std::string uri;
  std::string warehouse;          // root folder (or URI) for table locations
  std::string catalog_name = "skade";
  bool group_commit = true;       // share transactions between concurrent committers
  // kReadOnly never writes: no schema set-up and no write lock (a stuck writer does not block
  // it), SQLite opened read-only (a lake on a read-only file system or owned by another user
  // reads fine), PostgreSQL sessions read-only; every change is kPermissionDenied.
  enum class Access { kReadWrite, kReadOnly };
  Access access = Access::kReadWrite;
  // Whether a missing SQLite database file may be created (never its folder).
  enum class IfMissing { kCreate, kFail };
  IfMissing if_missing = IfMissing::kCreate;
};

// Opens a catalog, creating its tables if missing (read-write). `io` writes metadata files and
// must outlive the catalog. kInvalidArgument for an unknown URI scheme, kNotFound for a missing
// SQLite database (read-only or kFail) or folder, kUnavailable if the database can't be
// reached, kCorruption if its skade_meta schema version is newer than this build understands.
Result<std::unique_ptr<Catalog>> OpenSqlCatalog(const SqlCatalogOptions& options, io::FileIO& io);

}  // namespace skade::catalog
