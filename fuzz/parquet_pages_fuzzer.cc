// libFuzzer target: arbitrary bytes as a Parquet file whose page checksums are checked
// (iceberg/parquet_pages.h, both scopes) and added (iceberg/parquet_checksums.h), and as one
// Thrift compact struct skipped whole. A check either passes with a consistent report or
// fails with kCorruption; a copy with checksums of a file whose every page checked out has
// every page checksummed; the compact reader never reads past its bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "skade/iceberg/parquet_checksums.h"
#include "skade/iceberg/parquet_pages.h"
#include "skade/iceberg/thrift_compact.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "parquet_pages_fuzzer: %s\n", what);
  std::abort();
}

// Whether every page of `file` was walked and found sound.
bool Check(std::string_view file, skade::iceberg::PageScope scope) {
  auto report = skade::iceberg::CheckParquetPagesInMemory(file, "fuzz.parquet", scope);
  if (!report.ok()) {
    if (report.status().code() != skade::StatusCode::kCorruption)
      Fail("a bad file is not Corruption");
    if (report.status().message().find("'fuzz.parquet'") == std::string::npos)
      Fail("an error does not name the file");
    return false;
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
  return report->all_pages && report->chunks_skipped == 0;
}

void AddChecksums(std::string_view file, bool sound) {
  std::string copy;
  auto read = [&](int64_t offset, int64_t length) -> skade::Result<std::string> {
    if (offset < 0 || length < 0 || static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > file.size())
      Fail("a read outside the file");
    return std::string(file.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
  };
  auto write = [&](std::string_view bytes) {
    copy.append(bytes);
    return skade::Status::Ok();
  };
  auto rewrite = skade::iceberg::AddParquetPageChecksums(static_cast<int64_t>(file.size()), read, write,
                                                         "fuzz.parquet");
  if (!rewrite.ok()) {
    const auto code = rewrite.status().code();
    if (code != skade::StatusCode::kInvalidArgument && code != skade::StatusCode::kCorruption)
      Fail("a file that cannot take checksums is neither InvalidArgument nor Corruption");
    return;
  }
  if (rewrite->size != static_cast<int64_t>(copy.size())) Fail("the reported size is not the copy's");
  if (!sound) return;
  auto report = skade::iceberg::CheckParquetPagesInMemory(copy, "fuzz.parquet", skade::iceberg::PageScope::kAll);
  if (!report.ok()) Fail("the checksummed copy of a sound file does not check");
  if (report->pages_with_crc != report->pages) Fail("a page of the copy carries no CRC");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes, skade::iceberg::PageScope::kWhereChecksummed);
  AddChecksums(bytes, Check(bytes, skade::iceberg::PageScope::kAll));
  skade::iceberg::thrift::CompactReader reader(bytes);
  reader.SkipField(skade::iceberg::thrift::CompactType::kStruct);
  if (reader.position() > size) Fail("the compact reader read past its bytes");
  if (!reader.ok() && reader.message().empty()) Fail("a failure without a message");
  return 0;
}
