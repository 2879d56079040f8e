// libFuzzer target: arbitrary bytes as a Parquet file whose page checksums are checked
// (iceberg/parquet_pages.h, both scopes), and as one Thrift compact struct skipped whole.
// A check either passes with a consistent report or fails with kCorruption; the compact
// reader never reads past its bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "skade/iceberg/parquet_pages.h"
#include "skade/iceberg/thrift_compact.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "parquet_pages_fuzzer: %s\n", what);
  std::abort();
}

void Check(std::string_view file, skade::iceberg::PageScope scope) {
  auto report = skade::iceberg::CheckParquetPagesInMemory(file, "fuzz.parquet", scope);
  if (!report.ok()) {
    if (report.status().code() != skade::StatusCode::kCorruption)
      Fail("a bad file is not Corruption");
    if (report.status().message().find("'fuzz.parquet'") == std::string::npos)
      Fail("an error does not name the file");
    return;
  }
  if (report->pages_with_crc > report->pages) Fail("more checked CRCs than pages");
  if (report->pages < 0 || report->row_groups < 0 ||
      report->chunks_skipped > report->column_chunks) {
    Fail("inconsistent counts");
  }
  if (scope == skade::iceberg::PageScope::kAll && report->pages > 0 && !report->all_pages &&
      report->chunks_skipped == 0) {
    Fail("a full walk that read pages did not read them all");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes, skade::iceberg::PageScope::kWhereChecksummed);
  Check(bytes, skade::iceberg::PageScope::kAll);
  skade::iceberg::thrift::CompactReader reader(bytes);
  reader.SkipField(skade::iceberg::thrift::CompactType::kStruct);
  if (reader.position() > size) Fail("the compact reader read past its bytes");
  if (!reader.ok() && reader.message().empty()) Fail("a failure without a message");
  return 0;
}
