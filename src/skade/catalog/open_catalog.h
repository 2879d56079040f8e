// One way to open a catalog from a URI, shared by every front (CLI, C API, servers):
//   sqlite:///path/catalog.db, a path to a .db file, postgresql://…  skade's SQL catalog
//   (also databases written by Java's JdbcCatalog or PyIceberg's SqlCatalog);
//   rest+http(s)://host:port/path?…                                 any Iceberg REST catalog.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/io/file_io.h"

namespace skade::catalog {

enum class CatalogKind { kSql, kRest };

// The kind of catalog a URI names. kInvalidArgument for an unknown scheme (naming the ones
// known).
Result<CatalogKind> CatalogKindOf(std::string_view uri);

// Opens the catalog `sql.uri` names. For SQL catalogs `sql` is used as it is; a REST catalog
// takes its settings from the URI (ParseRestCatalogUri), its name from sql.catalog_name, and
// is read-only when sql.access is kReadOnly (every change is then kPermissionDenied here,
// before any request). `io` must outlive the catalog.
Result<std::unique_ptr<Catalog>> OpenCatalog(const SqlCatalogOptions& sql, io::FileIO& io);

// `inner` with every change refused (kPermissionDenied naming the operation); reads, the
// commit log and the listener pass through.
std::unique_ptr<Catalog> MakeReadOnlyCatalog(std::unique_ptr<Catalog> inner);

}  // namespace skade::catalog
