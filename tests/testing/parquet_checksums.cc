#include "tests/testing/parquet_checksums.h"

namespace skade::testing {

Result<ChecksummedParquet> AddPageChecksums(std::string_view file) {
  ChecksummedParquet out;
  auto read = [&](int64_t offset, int64_t length) -> Result<std::string> {
    return std::string(file.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
  };
  auto write = [&](std::string_view bytes) {
    out.bytes.append(bytes);
    return Status::Ok();
  };
  SKADE_ASSIGN_OR_RETURN(iceberg::PageChecksumRewrite rewrite,
                         iceberg::AddParquetPageChecksums(static_cast<int64_t>(file.size()), read, write, "test file",
                                                          /*keep_spans=*/true));
  out.pages = std::move(rewrite.spans);
  return out;
}

}  // namespace skade::testing
