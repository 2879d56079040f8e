#include "skade/arrow/array_bytes.h"

#include <cstring>
#include <string_view>

namespace skade::arrow {
namespace {

// Bits of one value of a fixed-width format; -1 when the format is not fixed-width.
int64_t FixedBits(std::string_view f) {
  if (f.size() == 1) {
    switch (f[0]) {
      case 'b': return 1;
      case 'c': case 'C': return 8;
      case 's': case 'S': case 'e': return 16;
      case 'i': case 'I': case 'f': return 32;
      case 'l': case 'L': case 'g': return 64;
      default: return -1;
    }
  }
  if (f.starts_with("d:")) {  // decimal: d:precision,scale[,bitwidth]
    const size_t first = f.find(',');
    const size_t second = first == std::string_view::npos ? first : f.find(',', first + 1);
    if (second == std::string_view::npos) return 128;
    int64_t bits = 0;
    for (char c : f.substr(second + 1)) bits = c >= '0' && c <= '9' ? bits * 10 + (c - '0') : bits;
    return bits;
  }
  if (f.starts_with("w:")) {  // fixed-size binary of N bytes
    int64_t bytes = 0;
    for (char c : f.substr(2)) bytes = c >= '0' && c <= '9' ? bytes * 10 + (c - '0') : bytes;
    return bytes * 8;
  }
  if (f == "tdD" || f == "tts" || f == "ttm" || f == "tiM") return 32;
  if (f == "tdm" || f == "ttu" || f == "ttn" || f == "tiD" || f.starts_with("ts") || f.starts_with("tD")) return 64;
  if (f == "tin") return 128;
  return -1;
}

int64_t Offset(const void* buffer, bool large, int64_t i) {
  if (buffer == nullptr) return 0;
  return large ? static_cast<const int64_t*>(buffer)[i] : static_cast<const int32_t*>(buffer)[i];
}

}  // namespace

int64_t ArrayBufferBytes(const ArrowSchema& schema, const ArrowArray& array) {
  if (schema.format == nullptr) return 0;
  const std::string_view f(schema.format);
  const int64_t n = array.length, off = array.offset;
  int64_t bytes = 0;
  auto buffer = [&](int64_t i) -> const void* { return i < array.n_buffers && array.buffers ? array.buffers[i] : nullptr; };
  auto children = [&] {
    int64_t sum = 0;
    for (int64_t i = 0; i < schema.n_children && i < array.n_children; ++i) {
      if (schema.children[i] != nullptr && array.children[i] != nullptr) {
        sum += ArrayBufferBytes(*schema.children[i], *array.children[i]);
      }
    }
    return sum;
  };
  const bool has_validity = f != "n" && !f.starts_with("+u") && !f.starts_with("+r");
  if (has_validity && array.null_count != 0 && buffer(0) != nullptr) bytes += (n + 7) / 8;
  if (schema.dictionary != nullptr && array.dictionary != nullptr) {
    bytes += ArrayBufferBytes(*schema.dictionary, *array.dictionary);
  }
  if (const int64_t bits = FixedBits(f); bits > 0) return bytes + (n * bits + 7) / 8;
  if (f == "u" || f == "z" || f == "U" || f == "Z") {
    const bool large = f == "U" || f == "Z";
    const int64_t width = large ? 8 : 4;
    return bytes + (n + 1) * width + (Offset(buffer(1), large, off + n) - Offset(buffer(1), large, off));
  }
  if (f == "vu" || f == "vz") return bytes + 16 * n;
  if (f == "+l" || f == "+m") return bytes + (n + 1) * 4 + children();
  if (f == "+L") return bytes + (n + 1) * 8 + children();
  if (f.starts_with("+ud:")) return bytes + n * 5 + children();
  if (f.starts_with("+us:")) return bytes + n + children();
  if (f.starts_with("+")) return bytes + children();  // struct, fixed-size list, run-end, list views
  return bytes;
}

}  // namespace skade::arrow
