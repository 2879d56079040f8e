// Page checksums written into Parquet files whose writer leaves them out (DuckDB 1.4 writes
// none): the file is copied with a CRC-32 in every page header (parquet.thrift PageHeader.crc,
// over the page's bytes as stored) and its footer's offsets and sizes moved to match the
// longer headers. The pages' bytes are copied as they are, so the values are unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::iceberg {

// A page of a rewritten file: where its header starts, where its bytes (what the CRC covers)
// start, how many there are, and its parquet.thrift PageType.
struct ParquetPageSpan {
  int64_t header_offset = 0;
  int64_t data_offset = 0;
  int64_t data_size = 0;
  int32_t type = 0;
};

struct PageChecksumRewrite {
  int64_t size = 0;   // bytes of the new file
  int64_t pages = 0;  // page headers written with a CRC
  // Bytes the column chunks of each leaf column grew by (summed over row groups), by the
  // column's field id in the file's schema (columns without one are left out): for the
  // column_sizes metric of an Iceberg data file.
  std::map<int, int64_t> growth_by_field_id;
  std::vector<ParquetPageSpan> spans;  // every page, in file order (when asked for)
};

// Reads `length` bytes at `offset` of the original file. Offsets grow from call to call.
using ParquetRangeReader = std::function<Result<std::string>(int64_t offset, int64_t length)>;
// Takes the next bytes of the new file, in order.
using ParquetByteSink = std::function<Status(std::string_view bytes)>;

// Copies the Parquet file of `size` bytes that `read` reads into `write`, every page header
// with a CRC-32 of its page. A page that already carries one keeps it when it matches
// (kCorruption otherwise: the copy never blesses damage). Offsets in the footer follow the
// longer headers (column chunk, row group, dictionary, data, index and Bloom filter offsets);
// page index references are dropped (their page locations would be stale; their bytes stay,
// unreferenced). Memory: the footer and one column chunk at a time.
// kInvalidArgument naming `name` for a file this cannot parse (not Parquet, an encrypted
// footer, column chunks that overlap or leave the file, a page header without sizes); errors
// of `read` and `write` as they come.
Result<PageChecksumRewrite> AddParquetPageChecksums(int64_t size, const ParquetRangeReader& read,
                                                    const ParquetByteSink& write, std::string_view name,
                                                    bool keep_spans = false);

}  // namespace skade::iceberg
