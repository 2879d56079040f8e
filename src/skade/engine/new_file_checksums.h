// Page checksums for the Parquet files skade writes. DuckDB's writer leaves them out, so each
// new data or delete file is copied once with a CRC-32 in every page header
// (iceberg/parquet_checksums.h) before any commit names it; readers then verify every page
// (data_file_checks.h), so a flipped byte in skade's own files is an error, not a wrong value.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "skade/base/status.h"
#include "skade/io/file_io.h"

namespace skade::engine {

struct ChecksummedFile {
  int64_t size = 0;  // bytes of the file now
  // Bytes each leaf column's chunks grew by, by field id (for a DataFile's column_sizes).
  std::map<int, int64_t> growth_by_field_id;
};

// Replaces the new, uncommitted Parquet file at `location` by a copy with page checksums.
// Local files: the copy streams (one column chunk in memory) into a temporary file beside it
// that is renamed over it; nothing is fsynced (the writer syncs the file and its folder before
// a commit names it, engine::SyncFiles / FileIO::SyncFiles and SyncFolders). Object-store
// files: read and written again whole through `object_store` (a PUT replaces the object), which
// must then be given. On an error the file may be the original or the copy (both hold the same
// rows) and no temporary file is left. kInvalidArgument for a file that is not plain Parquet.
Result<ChecksummedFile> AddPageChecksumsToNewFile(const std::string& location, io::FileIO* object_store);

}  // namespace skade::engine
