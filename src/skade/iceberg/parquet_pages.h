// Page checksums of Parquet files (parquet.thrift, PageHeader.crc): the footer's column chunks
// are walked page by page and every page that carries a CRC-32 is checked against its bytes as
// stored. DuckDB, which reads the data files, neither checks these checksums nor writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

// Which pages CheckParquetPages reads.
enum class PageScope {
  // The first pages of the file (its first column chunk's dictionary page and first data
  // page). When one of them carries a CRC, every page of the file is read and checked; when
  // neither does, the file is taken to have no checksums (writers checksum every page or
  // none) and nothing more is read: a few small reads per file.
  kWhereChecksummed,
  // Every page of every column chunk, whether the file carries checksums or not.
  kAll,
};

// One element of a Parquet footer's schema (parquet.thrift SchemaElement): the fields that tell
// a column's name, nesting and Iceberg field id.
struct ParquetSchemaElement {
  std::string name;
  int32_t num_children = 0;  // 0 for a leaf column
  std::optional<int32_t> field_id;

  bool operator==(const ParquetSchemaElement&) const = default;
};

// What a check read and found. Every page read has its header checked against its column
// chunk (the pages fill the chunk exactly; their values add up to the chunk's count) and its
// CRC, when it carries one, checked against its bytes.
struct ParquetPageReport {
  int64_t row_groups = 0;
  int64_t column_chunks = 0;
  int64_t pages = 0;           // page headers read
  int64_t pages_with_crc = 0;  // pages whose CRC was checked (and matched)
  bool all_pages = false;      // every page of every column chunk was read
  // Column chunks not read: encrypted (their headers are ciphertext) or stored in another file.
  int64_t chunks_skipped = 0;
  // The footer's schema, in its order: depth first, the root first. Empty for a file whose
  // footer is encrypted, or whose schema has more than 100,000 elements.
  std::vector<ParquetSchemaElement> schema;

  // Whether the file carries page checksums (as far as the pages read tell).
  bool checksummed() const { return pages_with_crc > 0; }
};

// The standard CRC-32 (polynomial 0x04C11DB7, as gzip and zlib), which Parquet pages carry.
uint32_t ParquetCrc32(std::string_view bytes);

// Reads and checks the Parquet file at `location` through `io`, in reads of at most 4 MiB (or
// of a page header that does not fit one, up to 64 MiB).
// kCorruption naming the file — and the row group, column and page offset where there is one —
// for a CRC mismatch, a damaged footer or page header, or pages that do not fill their column
// chunk; kNotFound when the file is absent; other FileIO errors as they come. A file with an
// encrypted footer is not read (a report with no pages). Memory: the footer and one read.
// Several checks may run at once: FileIO implementations are thread-safe.
Result<ParquetPageReport> CheckParquetPages(io::FileIO& io, std::string_view location,
                                            PageScope scope);

// The same over a whole file's bytes; `name` is the file's name in messages.
Result<ParquetPageReport> CheckParquetPagesInMemory(std::string_view file, std::string_view name,
                                                    PageScope scope);

}  // namespace skade::iceberg
