// The DuckDB FileSystem that keeps queries away from the files only their owner may open
// (io/reserved_files.h: the SQLite catalog and its -wal/-shm/-journal), whatever the spelling
// of the path (symlinks, hard links, "..", globs, file: forms).
#pragma once

#include "duckdb.h"
#include "skade/base/status.h"

namespace skade::engine {

// Registers the guard in `db` before any query runs: every DuckDB operation on a reserved file
// (open, glob, exists, remove, move) fails with a permission error. kInternal if DuckDB refuses.
Status RegisterReservedFileGuard(duckdb_database db);

}  // namespace skade::engine
