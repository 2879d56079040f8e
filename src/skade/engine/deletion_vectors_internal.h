// Deletion vectors for reads (spec v3): loaded once per blob into a process-wide cache bounded
// in memory, checked against their Puffin footer and manifest entries when a scan is built,
// and served to DuckDB by the scalar function
//   skade_deletion_vector_deletes(path VARCHAR, pos BIGINT, puffin_paths VARCHAR[],
//                                 offsets BIGINT[], lengths BIGINT[], data_paths VARCHAR[],
//                                 data_row_counts BIGINT[]) → BOOLEAN
// whether row `pos` of data file `path` is deleted, by the vector of data_paths[i] in the blob at
// offsets[i] of puffin_paths[i] (each position below data_row_counts[i], checked); the lists
// are constants read once when the query binds, then each row is one bitmap probe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/manifest.h"

namespace skade::engine {

using DeletionVectorPtr = std::shared_ptr<const iceberg::DeletionVector>;

struct DeletionVectorRequest {
  std::string puffin;               // the Puffin file (a local path or an object-store location)
  const iceberg::DataFile* vector;  // its manifest entry (offset, size, cardinality)
  const iceberg::DataFile* data;    // the data file it applies to
};

// The vectors the requests name, in order. Each blob is read (footer checked once per file: a
// deletion-vector-v1 blob, uncompressed, of the manifest's size at the manifest's offset),
// decoded and checked against its manifest entry (cardinality = record_count) and its data
// file (every position below the file's record count). kCorruption naming the Puffin file;
// kNotFound when it is absent. Object-store locations are read through `object_store`
// (kInvalidArgument when it is null).
Result<std::vector<DeletionVectorPtr>> LoadDeletionVectors(const std::vector<DeletionVectorRequest>& requests,
                                                           io::FileIO* object_store);

// Registers skade_deletion_vector_deletes on the database of `con`. A locked-down database lets
// it read only below `options.allowed_directories`, as DuckDB's own readers.
Status RegisterDeletionVectorFunction(duckdb_connection con, const DatabaseOptions& options);

}  // namespace skade::engine
