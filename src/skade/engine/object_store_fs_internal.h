// The DuckDB FileSystem that serves s3://, s3a:// and s3n:// locations through a skade FileIO,
// so read_parquet, globs and COPY … TO reach object stores without DuckDB's httpfs.
#pragma once

#include <string>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/io/file_io.h"

namespace skade::engine {

// Registers the file system in `db` (before any query runs). `io` is borrowed and must outlive
// the database; it is called from DuckDB's threads concurrently. Written files are buffered in an
// unlinked temporary file under `temp_directory` (empty: $TMPDIR or /tmp) and uploaded with
// FileIO::CreateExclusive when DuckDB closes them. kInternal if DuckDB refuses.
Status RegisterObjectStoreFileSystem(duckdb_database db, io::FileIO& io,
                                     std::string temp_directory);

}  // namespace skade::engine
