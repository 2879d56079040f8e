// What an Arrow consumer (arrow-rs, Arrow C++, DuckDB's Arrow scan) reads from an exported
// array, per the Arrow columnar format's physical layouts and the C Data Interface.
#include "fuzz/c_data_consumer.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace skade::fuzz {
namespace {

[[noreturn]] void Fail(const char* what, std::string_view format) {
  std::fprintf(stderr, "c_data_consumer: %s (format '%.*s')\n", what, static_cast<int>(format.size()),
               format.data());
  std::abort();
}

// Reads `size` bytes so AddressSanitizer sees every one of them.
void Touch(const void* data, int64_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint8_t acc = 0;
  for (int64_t i = 0; i < size; ++i) acc = static_cast<uint8_t>(acc ^ p[i]);
  volatile uint8_t sink = acc;
  (void)sink;
}

bool ParseInt(std::string_view text, int64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

// Bit width of a fixed-width format, 0 if the format is not fixed width.
int64_t FixedBits(std::string_view f) {
  if (f == "b") return 1;
  if (f == "c" || f == "C") return 8;
  if (f == "s" || f == "S" || f == "e") return 16;
  if (f == "i" || f == "I" || f == "f" || f == "tdD" || f == "tts" || f == "ttm" || f == "tiM") return 32;
  if (f == "l" || f == "L" || f == "g" || f == "tdm" || f == "ttu" || f == "ttn" || f == "tiD") return 64;
  if (f == "tin") return 128;
  if (f.size() >= 3 && (f.substr(0, 2) == "ts" || f.substr(0, 2) == "tD")) return 64;
  if (f.substr(0, 2) == "w:") {
    int64_t n = 0;
    if (!ParseInt(f.substr(2), n) || n < 0) Fail("bad fixed-size binary width", f);
    return n * 8;
  }
  if (f.substr(0, 2) == "d:") {
    size_t last = f.rfind(',');
    int64_t w = 128;
    if (f.find(',') != last && !ParseInt(f.substr(last + 1), w)) Fail("bad decimal", f);
    return w;
  }
  return 0;
}

bool Valid(const uint8_t* validity, int64_t i) {
  return validity == nullptr || ((validity[i >> 3] >> (i & 7)) & 1) != 0;
}

template <typename T>
void CheckOffsets(const void* buffer, int64_t start, int64_t end, int64_t limit, std::string_view f) {
  if (buffer == nullptr) Fail("no offsets buffer", f);
  const auto* o = static_cast<const T*>(buffer);
  Touch(o, (end + 1) * static_cast<int64_t>(sizeof(T)));
  if (o[start] < 0) Fail("negative offset", f);
  for (int64_t i = start; i < end; ++i) {
    if (o[i + 1] < o[i]) Fail("decreasing offsets", f);
  }
  if (o[end] > limit) Fail("offset past the values", f);
}

int64_t Index(const uint8_t* data, std::string_view f, int64_t i) {
  switch (f[0]) {
    case 'c': return reinterpret_cast<const int8_t*>(data)[i];
    case 'C': return data[i];
    case 's': return reinterpret_cast<const int16_t*>(data)[i];
    case 'S': return reinterpret_cast<const uint16_t*>(data)[i];
    case 'i': return reinterpret_cast<const int32_t*>(data)[i];
    case 'I': return reinterpret_cast<const uint32_t*>(data)[i];
    case 'l': return reinterpret_cast<const int64_t*>(data)[i];
    default: {
      uint64_t u = reinterpret_cast<const uint64_t*>(data)[i];
      return u > INT64_MAX ? -1 : static_cast<int64_t>(u);
    }
  }
}

void Consume(const ArrowSchema& s, const ArrowArray& a, int depth) {
  if (s.release == nullptr || a.release == nullptr) Fail("released struct", "");
  std::string_view f = s.format != nullptr ? s.format : "";
  if (depth > 64) Fail("nested too deep", f);
  if (a.length < 0 || a.offset < 0 || a.null_count < -1 || a.null_count > a.length) Fail("bad length", f);
  if (a.n_children != s.n_children || (a.n_children > 0 && a.children == nullptr)) Fail("children", f);
  if ((s.dictionary == nullptr) != (a.dictionary == nullptr)) Fail("dictionary presence", f);
  if (a.n_buffers < 0 || (a.n_buffers > 0 && a.buffers == nullptr)) Fail("buffers", f);
  const int64_t start = a.offset, end = a.offset + a.length;
  auto buffer = [&](int64_t i) {
    if (i >= a.n_buffers) Fail("too few buffers", f);
    return static_cast<const uint8_t*>(a.buffers[i]);
  };
  if (f == "n") {
    if (a.n_buffers != 0) Fail("null array with buffers", f);
    return;
  }
  const uint8_t* validity = buffer(0);
  if (validity != nullptr) {
    Touch(validity, (end + 7) / 8);
  } else if (a.null_count > 0) {
    Fail("nulls without a validity bitmap", f);
  }

  if (s.dictionary != nullptr) {
    if (f.size() != 1 || std::string_view("cCsSiIlL").find(f) == std::string_view::npos) {
      Fail("dictionary index type", f);
    }
    const uint8_t* data = buffer(1);
    if (a.length > 0 && data == nullptr) Fail("no index buffer", f);
    Touch(data, end * (FixedBits(f) / 8));
    const ArrowArray& dict = *a.dictionary;
    for (int64_t i = start; i < end; ++i) {
      if (!Valid(validity, i)) continue;
      int64_t v = Index(data, f, i);
      if (v < 0 || v >= dict.length) Fail("dictionary index out of range", f);
    }
    Consume(*s.dictionary, dict, depth + 1);
    return;
  }
  if (int64_t bits = FixedBits(f); bits > 0 || f.substr(0, 2) == "w:") {
    if (a.n_buffers != 2) Fail("fixed-width buffer count", f);
    const uint8_t* data = buffer(1);
    int64_t need = (end * bits + 7) / 8;
    if (need > 0 && data == nullptr) Fail("no values buffer", f);
    Touch(data, need);
    return;
  }
  if (f == "u" || f == "z" || f == "U" || f == "Z") {
    if (a.n_buffers != 3) Fail("binary buffer count", f);
    const uint8_t* values = buffer(2);
    bool wide = f == "U" || f == "Z";
    int64_t first, last;
    if (wide) {
      CheckOffsets<int64_t>(buffer(1), start, end, INT64_MAX, f);
      first = reinterpret_cast<const int64_t*>(buffer(1))[start];
      last = reinterpret_cast<const int64_t*>(buffer(1))[end];
    } else {
      CheckOffsets<int32_t>(buffer(1), start, end, INT32_MAX, f);
      first = reinterpret_cast<const int32_t*>(buffer(1))[start];
      last = reinterpret_cast<const int32_t*>(buffer(1))[end];
    }
    if (last > first && values == nullptr) Fail("no values buffer", f);
    if (last > first) Touch(values + first, last - first);
    return;
  }
  if (f == "vu" || f == "vz") {
    if (a.n_buffers < 3) Fail("view buffer count", f);
    const int64_t n_data = a.n_buffers - 3;
    const auto* sizes = reinterpret_cast<const int64_t*>(buffer(a.n_buffers - 1));
    if (sizes == nullptr) Fail("no variadic sizes", f);
    Touch(sizes, n_data * 8);
    const uint8_t* views = buffer(1);
    if (a.length > 0 && views == nullptr) Fail("no views buffer", f);
    Touch(views, end * 16);
    for (int64_t i = start; i < end; ++i) {
      int32_t size, index, offset;
      std::memcpy(&size, views + i * 16, 4);
      if (size < 0) Fail("negative view size", f);
      if (size <= 12) continue;
      std::memcpy(&index, views + i * 16 + 8, 4);
      std::memcpy(&offset, views + i * 16 + 12, 4);
      if (index < 0 || index >= n_data || offset < 0 || int64_t{offset} + size > sizes[index]) {
        Fail("view outside its data buffer", f);
      }
      Touch(buffer(2 + index) + offset, size);
    }
    return;
  }
  if (f == "+l" || f == "+L" || f == "+m") {
    if (a.n_buffers != 2 || a.n_children != 1) Fail("list layout", f);
    const ArrowArray& child = *a.children[0];
    if (f == "+L") {
      CheckOffsets<int64_t>(buffer(1), start, end, child.length, f);
    } else {
      CheckOffsets<int32_t>(buffer(1), start, end, child.length, f);
    }
    if (f == "+m" && (std::string_view(s.children[0]->format) != "+s" || s.children[0]->n_children != 2)) {
      Fail("map entries", f);
    }
    Consume(*s.children[0], child, depth + 1);
    return;
  }
  if (f == "+s") {
    if (a.n_buffers != 1) Fail("struct buffer count", f);
    for (int64_t i = 0; i < a.n_children; ++i) {
      if (a.children[i]->length < end) Fail("struct child too short", f);
      Consume(*s.children[i], *a.children[i], depth + 1);
    }
    return;
  }
  if (f.substr(0, 3) == "+w:") {
    int64_t n = 0;
    if (!ParseInt(f.substr(3), n) || n < 0) Fail("bad list size", f);
    if (a.n_buffers != 1 || a.n_children != 1) Fail("fixed-size list layout", f);
    if (n > 0 && a.children[0]->length / n < end) Fail("fixed-size list child too short", f);
    Consume(*s.children[0], *a.children[0], depth + 1);
    return;
  }
  Fail("format the decoder should not produce", f);
}

}  // namespace

void ConsumeArray(const ArrowSchema& schema, const ArrowArray& array) { Consume(schema, array, 0); }

}  // namespace skade::fuzz
