// The scalar functions through which reads apply row-position deletes: each answers whether row
// `pos` of data file `path` is deleted, from bitmaps loaded once when the query binds (their
// lists are constants), so every row costs one bitmap probe and no join.
//
//   skade_deletion_vector_deletes(path VARCHAR, pos BIGINT, puffin_paths VARCHAR[],
//                                 offsets BIGINT[], lengths BIGINT[], data_paths VARCHAR[],
//                                 data_row_counts BIGINT[]) → BOOLEAN
// by the deletion vector of data_paths[i] in the blob at offsets[i] of puffin_paths[i] (each
// position below data_row_counts[i], checked; deletion_vectors_internal.h).
//
//   skade_position_deletes(path VARCHAR, pos BIGINT, delete_files VARCHAR[], data_paths VARCHAR[],
//                          data_locations VARCHAR[], data_deletes BIGINT[][]) → BOOLEAN
// by the position delete files delete_files[k] for k in data_deletes[i] (those the scan planned
// for the data file data_paths[i]), each file's rows for data_locations[i] (the data file's path
// as its manifest spells it, compared through io::ComparableLocation)
// (position_deletes_internal.h).
//
// A locked-down database lets both read only below DatabaseOptions::allowed_directories, as
// DuckDB's own readers.
#pragma once

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"

namespace skade::engine {

// Registers both functions on `db` through `con`, a connection of it.
Status RegisterDeleteProbeFunctions(duckdb_database db, duckdb_connection con, const DatabaseOptions& options);

}  // namespace skade::engine
