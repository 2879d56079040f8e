// One way to open a catalog from a URI, shared by every front (CLI, C API, servers):
//   sqlite:///path/catalog.db, a path to a .db file, postgresql://…  skade's SQL catalog
//   (also databases written by Java's JdbcCatalog or PyIceberg's SqlCatalog);
//   rest+http(s)://host:port/path?…                                 any Iceberg REST catalog;
//   nessie+http(s)://host:port/api/v2?ref=…                         a Nessie server (read-only);
//   file:///folder, s3://bucket/prefix                               a folder of tables in the
//                                                                    file-system layout (read-only).
// A catalog that keeps no commit log gets a polled one (polled_log.h) when asked.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/catalog/polled_log.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/io/file_io.h"

namespace skade::catalog {

enum class CatalogKind { kSql, kRest, kNessie, kFile };

// Whether skade writes to such a catalog (SQL and REST catalogs take commits; Nessie and folders
// of tables are read-only here).
bool CatalogTakesWrites(CatalogKind kind);

// The kind of catalog a URI names. kInvalidArgument for an unknown scheme (naming the ones
// known).
Result<CatalogKind> CatalogKindOf(std::string_view uri);

// The catalog a warehouse has when none is named: "sqlite://WAREHOUSE/catalog.db" (the
// warehouse in io::NormalizeLocation form). kInvalidArgument for a warehouse on object
// storage: a SQLite database cannot live in a bucket, so its catalog must be named (a local
// SQLite file or PostgreSQL).
Result<std::string> DefaultCatalogUri(std::string_view warehouse);

// Opens the catalog `sql.uri` names. For SQL catalogs `sql` is used as it is; a REST catalog
// takes its settings from the URI (ParseRestCatalogUri), its name from sql.catalog_name, hands
// the storage settings tables vend to `io` (RestCatalogOptions::storage), and
// is read-only when sql.access is kReadOnly (every change is then kPermissionDenied here,
// before any request). A Nessie catalog takes its settings from the URI
// (ParseNessieCatalogUri), its name from sql.catalog_name and its warehouse from sql.warehouse
// unless the URI names them, and is always read-only; so is a folder of tables. With `poll`, a
// catalog whose LatestCommitSeq is kNotImplemented (Nessie, folders, a REST server without a
// change feed, a foreign SQL database opened read-only) gets a polled commit log kept at
// poll->state_path. `io` must outlive the catalog.
Result<std::unique_ptr<Catalog>> OpenCatalog(const SqlCatalogOptions& sql, io::FileIO& io,
                                             const PolledLogOptions* poll = nullptr);

// `inner` with every change refused (kPermissionDenied naming the operation); reads, the
// commit log and the listener pass through.
std::unique_ptr<Catalog> MakeReadOnlyCatalog(std::unique_ptr<Catalog> inner);

}  // namespace skade::catalog
