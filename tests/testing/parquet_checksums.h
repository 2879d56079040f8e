// Test helper: Parquet files with page checksums in memory (iceberg/parquet_checksums.h over a
// whole file's bytes), with where each page lies, for tests that damage a page on purpose.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/parquet_checksums.h"

namespace skade::testing {

using iceberg::ParquetPageSpan;

struct ChecksummedParquet {
  std::string bytes;
  std::vector<ParquetPageSpan> pages;  // in file order
};

// `file` with a CRC in every page header (AddParquetPageChecksums).
Result<ChecksummedParquet> AddPageChecksums(std::string_view file);

}  // namespace skade::testing
