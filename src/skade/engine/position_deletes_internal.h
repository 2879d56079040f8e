// Position delete files (spec "Position Delete Files") for reads: each file is read once by
// DuckDB's Parquet reader (on a connection of its own) into one bitmap per data file it names —
// the iceberg::DeletionVector deletion vectors decode to — and kept in a process-wide cache
// bounded in memory, keyed by the file's path, size and modification time. Reads then drop the
// rows the bitmaps hold inside the Parquet scan (skade_read_parquet, delete_scan_internal.h)
// instead of joining on (file name, position).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/io/file_io.h"

namespace skade::engine {

struct PositionDeletes {
  // io::ComparableLocation of each file_path the file names → the positions it deletes there
  // (writers spell one data file their own ways: matched through one normal form only).
  std::unordered_map<std::string, iceberg::DeletionVector> by_location;
  int64_t rows = 0;  // the file's rows
};
using PositionDeletesPtr = std::shared_ptr<const PositionDeletes>;

// Each of `paths` (local paths or object-store locations, as DuckDB reads them) decoded, in
// order: its `file_path` and `pos` columns, by the spec's reserved field ids (by name for a file
// without ids). kCorruption, naming the file, for a row whose file_path or pos is null or whose
// pos is negative (it would delete nothing while meaning to); kNotFound for a missing file;
// DuckDB's refusal (a path outside a locked-down database's directories) as kInvalidArgument.
// Statistics of object-store files go through `object_store`.
Result<std::vector<PositionDeletesPtr>> LoadPositionDeletes(duckdb_database db, const std::vector<std::string>& paths,
                                                            io::FileIO* object_store);

}  // namespace skade::engine
