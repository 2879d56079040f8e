#include "skade/engine/zstd_pages_internal.h"

#include <zstd.h>

#include <atomic>
#include <cstddef>

namespace {

std::atomic<uint64_t> pages{0};

}  // namespace

// The function libduckdb.so calls for each ZSTD page (zstd_pages_internal.h). Its signature is
// zstd's own ZSTD_decompress, in DuckDB's namespace for its bundled copy.
namespace duckdb_zstd {

size_t ZSTD_decompress(void* dst, size_t dst_capacity, const void* src, size_t compressed_size);

size_t ZSTD_decompress(void* dst, size_t dst_capacity, const void* src, size_t compressed_size) {
  pages.fetch_add(1, std::memory_order_relaxed);
  return ::ZSTD_decompress(dst, dst_capacity, src, compressed_size);
}

}  // namespace duckdb_zstd

namespace skade::engine {

uint64_t ZstdPagesDecompressed() { return pages.load(std::memory_order_relaxed); }

void KeepZstdPages() {}

}  // namespace skade::engine
