// A SQLite catalog for the benchmark programs: created in a folder of their own with the
// namespace "bench" and a local FileIO.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/io/file_io.h"

namespace skade::bench {

struct BenchCatalog {
  std::unique_ptr<io::FileIO> io;
  std::unique_ptr<catalog::Catalog> catalog;
};

// A SQLite catalog in `dir` (created; catalog.db, warehouse/) with namespace "bench".
// `group_commit`: catalog::SqlCatalogOptions::group_commit.
inline Result<BenchCatalog> OpenBenchCatalog(const std::string& dir, bool group_commit = true) {
  BenchCatalog c;
  c.io = io::MakeLocalFileIO();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  catalog::SqlCatalogOptions o;
  o.uri = "sqlite://" + dir + "/catalog.db";
  o.warehouse = dir + "/warehouse";
  o.group_commit = group_commit;
  SKADE_ASSIGN_OR_RETURN(c.catalog, catalog::OpenSqlCatalog(o, *c.io));
  SKADE_RETURN_IF_ERROR(c.catalog->CreateNamespace(*catalog::Namespace::Parse("bench"), {}));
  return c;
}

}  // namespace skade::bench
