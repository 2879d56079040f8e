// Deletion vectors for reads (spec v3): loaded once per blob into a process-wide cache bounded
// in memory, checked against their Puffin footer and manifest entries when a scan is built, and
// applied inside the Parquet scan by skade_read_parquet (delete_scan_internal.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/manifest.h"
#include "skade/io/file_io.h"

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

// The blob at `offset` of the Puffin file `puffin` (from the cache when it holds it), without
// the footer check LoadDeletionVectors makes on first sight: for a blob that check passed.
Result<DeletionVectorPtr> ReadDeletionVector(const std::string& puffin, int64_t offset, int64_t length,
                                             io::FileIO* object_store);

}  // namespace skade::engine
