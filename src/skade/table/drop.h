// Dropping a table: the catalog entry, and with a purge the table's files, with a report of what
// became of them. What SQL's DROP TABLE [… PURGE] and `skade drop [--purge]` run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::table {

struct DropOptions {
  catalog::DropMode mode = catalog::DropMode::kKeepFiles;
  // Where a purge may delete: kWarehouse refuses (kPermissionDenied, nothing dropped) a table
  // whose location lies outside the catalog's warehouse — a registered table elsewhere may be
  // another system's — unless kAnywhere. A catalog that names no warehouse (a REST server's
  // named one) decides on its side.
  enum class Scope { kWarehouse, kAnywhere };
  Scope scope = Scope::kWarehouse;
  // Whether a drop without purge lists the location to tell how many files stay (listing a
  // large table on an object store takes a while). A purge always lists.
  enum class Count { kFiles, kNothing };
  Count count = Count::kFiles;
};

// What a drop did to the table's files.
struct DropReport {
  catalog::TableIdent table;
  catalog::DropMode mode = catalog::DropMode::kKeepFiles;
  std::string location;  // the location the table's metadata records
  // Whether this process could list the location (false e.g. for storage only a remote
  // catalog reaches); the counts below are 0 when it could not.
  bool listed = false;
  int64_t files_before = 0;  // files under the location before the drop
  int64_t bytes_before = 0;
  // A purge: the files gone from under the location, and those still there afterwards (inside
  // another table's location, referenced by another table, or not deletable: the log says
  // which), sorted.
  int64_t removed_files = 0;
  int64_t removed_bytes = 0;
  std::vector<std::string> left_files;
  // A purge: files the metadata names outside its location (never deleted); nullopt when the
  // metadata could not be walked to tell.
  std::optional<int64_t> outside_files = 0;
  int64_t removed_folders = 0;  // empty local folders removed at and below the location
};

// Drops `ident` from `catalog`. kKeepFiles leaves every file. kPurge then deletes every file
// under the table's location that no other table owns or references (catalog::DeletionGuard,
// run by the catalog: the drop commits first, the deletion after is best effort and reported),
// never a file outside the location, whatever the metadata names, and removes the folders the
// purge left empty. Refused before anything changes: kNotFound for a missing table;
// kPermissionDenied for a purge outside the warehouse without Scope::kAnywhere;
// kInvalidArgument for a purge of a table whose files are read away from the location its
// metadata records (a registered copy: the purge would delete under the recorded location).
Result<DropReport> DropTable(catalog::Catalog& catalog, io::FileIO& io, const catalog::TableIdent& ident,
                             const DropOptions& options);

// The report in words, one or more lines without a final newline: what went and what stayed
// where ("dropped table a.t from the catalog; its 12 files (3.4 MB) stay at /w/a/t …").
std::string DescribeDrop(const DropReport& report);

}  // namespace skade::table
