// skade_read_parquet: DuckDB's read_parquet — every overload, option and pushdown of it — that
// also drops deleted rows inside the scan. Each data file's bitmap (delete_bitmaps_internal.h)
// becomes the Parquet reader's deletion filter, so a deleted row is never produced: no
// filename/position columns to carry, no probe or join above the scan. Its named parameters
// beyond read_parquet's, all optional, are the two requests of delete_bitmaps_internal.h:
//
//   position_delete_files VARCHAR[], position_data_paths VARCHAR[],
//   position_data_locations VARCHAR[], position_data_deletes BIGINT[][]  (PositionDeleteRequest)
//   vector_puffins VARCHAR[], vector_offsets BIGINT[], vector_lengths BIGINT[],
//   vector_data_paths VARCHAR[], vector_row_counts BIGINT[]             (VectorRequest)
//
// The delete files are read (or found in their caches) when the query binds: a damaged or
// refused one fails the bind with its loader's message. A data file named by both kinds reads
// without the rows of either.
#pragma once

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"

namespace skade::engine {

// Registers skade_read_parquet on `db`, after DuckDB's read_parquet it wraps.
Status RegisterDeleteScanFunction(duckdb_database db, const DatabaseOptions& options);

}  // namespace skade::engine
