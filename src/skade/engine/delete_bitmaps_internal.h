// Row-position deletes of a read as one bitmap per data file, from the two kinds of files that
// carry them: position delete files (spec "Position Delete Files") and deletion vectors (spec
// v3 "Deletion Vectors"). skade_read_parquet (delete_scan_internal.h) applies them inside the
// Parquet scan.
//
// Paths are checked against the database's rule before anything is read: a locked-down
// database reads delete files only below DatabaseOptions::allowed_directories, as DuckDB's own
// readers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/deletion_vectors_internal.h"
#include "skade/io/file_io.h"

namespace skade::engine {

// What a database lets its delete loaders read, fixed when the database opens.
struct DeleteAccess {
  duckdb_database db = nullptr;                // where position delete files are read
  bool lock_down = false;
  std::vector<std::filesystem::path> allowed;  // canonical
  std::vector<std::string> allowed_objects;    // object-store prefixes
  io::FileIO* object_store = nullptr;          // DatabaseOptions::object_store

  static DeleteAccess From(duckdb_database db, const DatabaseOptions& options);
  // Whether `path` may be read: a local path or file: URI, or an object-store location when
  // the database has an object store; when locked down, a local path whose canonical form (the
  // file actually opened: file: forms stripped, symlinks and '..' resolved) lies inside an
  // allowed directory, an object whose normal form (io::IsWithin) lies inside an allowed prefix.
  bool Allows(const std::string& path) const;
};

// Position delete files for some data files of a read: files[k] for k in data_deletes[i]
// (those the scan planned for the data file data_paths[i]), each file's rows for
// data_locations[i] (the data file's path as its manifest spells it, compared through
// io::ComparableLocation).
struct PositionDeleteRequest {
  std::vector<std::string> files;
  std::vector<std::string> data_paths;
  std::vector<std::string> data_locations;
  std::vector<std::vector<int64_t>> data_deletes;
};

// Deletion vectors: the blob at offsets[i] (lengths[i] bytes) of puffins[i] deletes rows of
// data_paths[i], whose row_counts[i] rows bound its positions (checked).
struct VectorRequest {
  std::vector<std::string> puffins;
  std::vector<int64_t> offsets;
  std::vector<int64_t> lengths;
  std::vector<std::string> data_paths;
  std::vector<int64_t> row_counts;
};

// One bitmap per data file (by the path DuckDB reads it by), sharing ownership of what they
// were decoded into. A data file with several delete files gets their union.
struct DeleteBitmaps {
  std::vector<std::string> data_paths;
  std::vector<DeletionVectorPtr> vectors;
};

// One bitmap of every position of `vectors` (not empty): the one vector itself when alone.
DeletionVectorPtr UnionOf(const std::vector<DeletionVectorPtr>& vectors);

// kInvalidArgument for lists of unequal lengths or an index out of range, kPermissionDenied
// for a path the access does not allow, else the loaders' errors (position_deletes_internal.h,
// deletion_vectors_internal.h); `caller` names the function in messages.
Result<DeleteBitmaps> LoadPositionBitmaps(const DeleteAccess& access, const PositionDeleteRequest& request,
                                          const char* caller);
Result<DeleteBitmaps> LoadVectorBitmaps(const DeleteAccess& access, const VectorRequest& request, const char* caller);

}  // namespace skade::engine
