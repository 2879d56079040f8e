// The DuckDB FileSystems that keep queries away from the files only their owner may open
// (io/reserved_files.h: the SQLite catalog and its -wal/-shm/-journal), whatever the spelling
// of the path (symlinks, hard links, "..", globs, file: forms), and away from DuckDB's own
// spill folder (other sessions' intermediate rows).
#pragma once

#include <string>

#include "duckdb.h"
#include "skade/base/status.h"

namespace skade::engine {

// Registers the guard in `db` before any query runs: every DuckDB operation on a reserved file
// (open, glob, exists, remove, move) fails with a permission error. kInternal if DuckDB refuses.
Status RegisterReservedFileGuard(duckdb_database db);

// Registers the guard of DuckDB's spill folder `folder` (its temp_directory, which DuckDB lets
// every query reach whatever allowed_directories say): DuckDB's buffer manager creates, reads,
// lists and removes its files there as before, while every operation a query asks for (one
// that comes with a client context) on a path inside it fails with a permission error.
// The folder must lie outside every allowed directory, so that no glob spelled from above it
// reaches inside. kInternal if DuckDB refuses.
Status RegisterSpillFolderGuard(duckdb_database db, const std::string& folder);

}  // namespace skade::engine
