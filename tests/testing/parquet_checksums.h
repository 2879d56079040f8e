// Test helper: Parquet files with page checksums, which DuckDB's writer never produces. A file
// DuckDB wrote is re-encoded with a CRC-32 in every page header (parquet.thrift PageHeader.crc)
// and its footer's offsets and sizes moved to match; its pages' bytes stay as they were.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::testing {

// A page of a Parquet file: where its header starts, where its bytes (what the CRC covers)
// start, how many there are, and its parquet.thrift PageType.
struct ParquetPageSpan {
  int64_t header_offset = 0;
  int64_t data_offset = 0;
  int64_t data_size = 0;
  int32_t type = 0;
};

struct ChecksummedParquet {
  std::string bytes;
  std::vector<ParquetPageSpan> pages;  // in file order
};

// `file` with a CRC in every page header. Offsets and sizes in the footer follow the longer
// headers (column chunk, row group, dictionary, data, index and Bloom filter offsets); page
// index references are dropped (their page locations would be stale). kInvalidArgument for a
// file this helper cannot parse.
Result<ChecksummedParquet> AddPageChecksums(std::string_view file);

}  // namespace skade::testing
