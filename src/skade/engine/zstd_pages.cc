#include "skade/engine/zstd_pages_internal.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace {

std::atomic<uint64_t> frames{0};

constexpr size_t Error(ZSTD_ErrorCode code) { return static_cast<size_t>(-static_cast<ptrdiff_t>(code)); }

// 0 when `src` is a sequence of zstd frames (magic 0xFD2FB528) and skippable frames; else a
// zstd error code. The system's library may also decode the legacy formats of zstd before 1.0
// (other magic numbers), which DuckDB's copy refuses: a page in one stays refused.
size_t CheckFrames(const void* src, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  size_t at = 0;
  while (at < size) {
    if (size - at < 4) return Error(ZSTD_error_srcSize_wrong);
    const uint32_t magic = static_cast<uint32_t>(bytes[at]) | static_cast<uint32_t>(bytes[at + 1]) << 8 |
                           static_cast<uint32_t>(bytes[at + 2]) << 16 | static_cast<uint32_t>(bytes[at + 3]) << 24;
    if (magic != ZSTD_MAGICNUMBER && (magic & ZSTD_MAGIC_SKIPPABLE_MASK) != ZSTD_MAGIC_SKIPPABLE_START) {
      return Error(ZSTD_error_prefix_unknown);
    }
    const size_t frame = ZSTD_findFrameCompressedSize(bytes + at, size - at);
    if (ZSTD_isError(frame)) return frame;
    at += frame;
  }
  return 0;
}

}  // namespace

// The function libduckdb.so calls (zstd_pages_internal.h). Its signature is zstd's own
// ZSTD_decompress, in DuckDB's namespace for its bundled copy.
namespace duckdb_zstd {

size_t ZSTD_decompress(void* dst, size_t dst_capacity, const void* src, size_t compressed_size);

size_t ZSTD_decompress(void* dst, size_t dst_capacity, const void* src, size_t compressed_size) {
  frames.fetch_add(1, std::memory_order_relaxed);
  if (const size_t refused = CheckFrames(src, compressed_size); refused != 0) return refused;
  return ::ZSTD_decompress(dst, dst_capacity, src, compressed_size);
}

}  // namespace duckdb_zstd

namespace skade::engine {

uint64_t ZstdFramesDecompressed() { return frames.load(std::memory_order_relaxed); }

void KeepZstdPages() {}

}  // namespace skade::engine
