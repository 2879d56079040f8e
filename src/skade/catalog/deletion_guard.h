// DeletionGuard: the one rule for what maintenance may delete (DESIGN §11): only files inside
// the table's own location and outside every other table's location, and never a file that
// another table's metadata references. Orphan removal, expiry, compaction and purge all ask it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::catalog {

// Not thread-safe. Borrows the catalog and FileIO, which must outlive it.
class DeletionGuard {
 public:
  // Reads every other table's location from `catalog`; `self` is the table whose files are to
  // be deleted and `location` the location its metadata records.
  static Result<std::unique_ptr<DeletionGuard>> Open(Catalog& catalog, io::FileIO& io, const TableIdent& self,
                                                     std::string location);

  // The candidates that may be deleted, in their order. The others are left out with one log
  // line per reason. Reading another table's metadata fails the call: nothing is deleted on
  // partial knowledge.
  Result<std::vector<std::string>> Filter(const std::vector<std::string>& candidates);

 private:
  DeletionGuard(Catalog& catalog, io::FileIO& io, TableIdent self, std::string location,
                std::vector<TableLocation> others)
      : catalog_(catalog), io_(io), self_(std::move(self)), location_(std::move(location)),
        others_(std::move(others)) {}

  Catalog& catalog_;
  io::FileIO& io_;
  TableIdent self_;
  std::string location_;
  std::vector<TableLocation> others_;
};

}  // namespace skade::catalog
