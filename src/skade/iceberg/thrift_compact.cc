#include "skade/iceberg/thrift_compact.h"

#include <cstring>
#include <limits>

namespace skade::iceberg::thrift {
namespace {

constexpr uint8_t kLastType = static_cast<uint8_t>(CompactType::kUuid);

int64_t ZigZagDecode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

}  // namespace

// ---- reader ---------------------------------------------------------------------------------

void CompactReader::Fail(ReadError error, const char* what) {
  if (error_ != ReadError::kNone) return;
  error_ = error;
  what_ = what;
  error_at_ = pos_;
}

std::string CompactReader::message() const {
  switch (error_) {
    case ReadError::kNone:
      return "";
    case ReadError::kTruncated:
      return std::string("truncated at byte ") + std::to_string(error_at_) + ": " + what_;
    case ReadError::kMalformed:
      return std::string("malformed at byte ") + std::to_string(error_at_) + ": " + what_;
    case ReadError::kTooDeep:
      return "nested deeper than " + std::to_string(kMaxDepth) + " levels at byte " +
             std::to_string(error_at_);
  }
  return "";
}

bool CompactReader::Take(size_t n, std::string_view* out) {
  if (!ok()) return false;
  if (n > bytes_.size() - pos_) {
    Fail(ReadError::kTruncated, "the bytes end inside a value");
    return false;
  }
  if (out != nullptr) *out = bytes_.substr(pos_, n);
  pos_ += n;
  return true;
}

// Unsigned LEB128 of at most `max_bytes` bytes (5 for 32-bit values, 10 for 64-bit ones).
uint64_t CompactReader::ReadVarint(int max_bytes) {
  uint64_t value = 0;
  for (int i = 0; ok(); ++i) {
    if (i == max_bytes) {
      Fail(ReadError::kMalformed, "a varint is too long");
      return 0;
    }
    if (pos_ >= bytes_.size()) {
      Fail(ReadError::kTruncated, "the bytes end inside a varint");
      return 0;
    }
    const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
    // The tenth byte of a 64-bit varint carries only bit 63.
    if (i == 9 && b > 1) {
      Fail(ReadError::kMalformed, "a varint overflows 64 bits");
      return 0;
    }
    value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  return 0;
}

int8_t CompactReader::ReadI8() {
  std::string_view b;
  return Take(1, &b) ? static_cast<int8_t>(b[0]) : 0;
}

int16_t CompactReader::ReadI16() {
  const uint64_t raw = ReadVarint(3);
  if (raw > 0xFFFF) {
    Fail(ReadError::kMalformed, "an i16 is out of range");
    return 0;
  }
  return ok() ? static_cast<int16_t>(ZigZagDecode(raw)) : 0;
}

int32_t CompactReader::ReadI32() {
  const uint64_t raw = ReadVarint(5);
  if (raw > 0xFFFFFFFFu) {
    Fail(ReadError::kMalformed, "an i32 is out of range");
    return 0;
  }
  return ok() ? static_cast<int32_t>(ZigZagDecode(raw)) : 0;
}

int64_t CompactReader::ReadI64() {
  const uint64_t raw = ReadVarint(10);
  return ok() ? ZigZagDecode(raw) : 0;
}

double CompactReader::ReadDouble() {
  std::string_view b;
  if (!Take(8, &b)) return 0;
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string_view CompactReader::ReadBinary() {
  const uint64_t n = ReadVarint(5);
  if (n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    Fail(ReadError::kMalformed, "a binary length is out of range");
    return {};
  }
  std::string_view out;
  return Take(static_cast<size_t>(n), &out) ? out : std::string_view();
}

ListHeader CompactReader::ReadListHeader() {
  std::string_view b;
  if (!Take(1, &b)) return {};
  const uint8_t head = static_cast<uint8_t>(b[0]);
  const uint8_t element = head & 0x0F;
  uint64_t size = head >> 4;
  if (size == 15) {
    size = ReadVarint(5);
    if (!ok()) return {};
    if (size > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      Fail(ReadError::kMalformed, "a list size is out of range");
      return {};
    }
  }
  if (size > 0 && (element == 0 || element > kLastType)) {
    Fail(ReadError::kMalformed, "a list has an unknown element type");
    return {};
  }
  // Every element takes at least one byte: a larger size cannot be satisfied by these bytes.
  if (size > bytes_.size() - pos_) {
    Fail(ReadError::kTruncated, "a list has more elements than bytes left");
    return {};
  }
  return {static_cast<CompactType>(element), static_cast<int64_t>(size)};
}

bool CompactReader::ReadElementBool() {
  std::string_view b;
  if (!Take(1, &b)) return false;
  // Writers put 1 for true, and 0 (the spec) or 2 (Java's writer) for false.
  const uint8_t v = static_cast<uint8_t>(b[0]);
  if (v > 2) Fail(ReadError::kMalformed, "a bool element is neither 0, 1 nor 2");
  return v == 1;
}

bool CompactReader::Enter() {
  if (!ok()) return false;
  if (depth_ >= kMaxDepth) {
    Fail(ReadError::kTooDeep, "");
    return false;
  }
  ++depth_;
  return true;
}

bool CompactReader::BeginStruct() {
  if (!Enter()) return false;
  last_ids_.push_back(0);
  return true;
}

void CompactReader::EndStruct() {
  if (!last_ids_.empty()) last_ids_.pop_back();
  Leave();
}

FieldHeader CompactReader::NextField() {
  std::string_view b;
  if (last_ids_.empty()) {
    Fail(ReadError::kMalformed, "a field outside a struct");
    return {};
  }
  if (!Take(1, &b)) return {};
  const uint8_t head = static_cast<uint8_t>(b[0]);
  if (head == 0) return {};
  const uint8_t type = head & 0x0F;
  const int delta = head >> 4;
  if (type == 0 || type > kLastType) {
    Fail(ReadError::kMalformed, "a field has an unknown type");
    return {};
  }
  int id = delta != 0 ? last_ids_.back() + delta : ReadI16();
  if (!ok()) return {};
  if (id > std::numeric_limits<int16_t>::max()) {
    Fail(ReadError::kMalformed, "a field id is out of range");
    return {};
  }
  last_ids_.back() = static_cast<int16_t>(id);
  return {static_cast<CompactType>(type), static_cast<int16_t>(id)};
}

void CompactReader::Skip(CompactType type, bool element) {
  if (!ok()) return;
  switch (type) {
    case CompactType::kTrue:
    case CompactType::kFalse:
      if (element) ReadElementBool();
      return;
    case CompactType::kI8:
      ReadI8();
      return;
    case CompactType::kI16:
      ReadI16();
      return;
    case CompactType::kI32:
      ReadI32();
      return;
    case CompactType::kI64:
      ReadI64();
      return;
    case CompactType::kDouble:
      Take(8, nullptr);
      return;
    case CompactType::kBinary:
      ReadBinary();
      return;
    case CompactType::kUuid:
      Take(16, nullptr);
      return;
    case CompactType::kList:
    case CompactType::kSet: {
      if (!Enter()) return;
      const ListHeader list = ReadListHeader();
      for (int64_t i = 0; i < list.size && ok(); ++i) Skip(list.element, true);
      Leave();
      return;
    }
    case CompactType::kMap: {
      if (!Enter()) return;
      const uint64_t size = ReadVarint(5);
      if (ok() && size > 0) {
        std::string_view kv;
        if (Take(1, &kv)) {
          const uint8_t key = static_cast<uint8_t>(kv[0]) >> 4,
                        value = static_cast<uint8_t>(kv[0]) & 0x0F;
          if (key == 0 || key > kLastType || value == 0 || value > kLastType) {
            Fail(ReadError::kMalformed, "a map has an unknown key or value type");
          } else if (size > (bytes_.size() - pos_) / 2) {
            Fail(ReadError::kTruncated, "a map has more entries than bytes left");
          }
          for (uint64_t i = 0; i < size && ok(); ++i) {
            Skip(static_cast<CompactType>(key), true);
            Skip(static_cast<CompactType>(value), true);
          }
        }
      }
      Leave();
      return;
    }
    case CompactType::kStruct: {
      if (!BeginStruct()) return;
      for (FieldHeader f = NextField(); f.type != CompactType::kStop; f = NextField())
        SkipField(f.type);
      EndStruct();
      return;
    }
    case CompactType::kStop:
      break;
  }
  Fail(ReadError::kMalformed, "a value has an unknown type");
}

// ---- writer ---------------------------------------------------------------------------------

void CompactWriter::EndStruct() {
  out_.push_back(0);
  if (!last_ids_.empty()) last_ids_.pop_back();
}

void CompactWriter::WriteFieldHeader(CompactType type, int16_t id) {
  const int16_t last = last_ids_.empty() ? 0 : last_ids_.back();
  const int delta = id - last;
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_.push_back(static_cast<char>(type));
    WriteI16(id);
  }
  if (!last_ids_.empty()) last_ids_.back() = id;
}

void CompactWriter::WriteBoolField(int16_t id, bool value) {
  WriteFieldHeader(value ? CompactType::kTrue : CompactType::kFalse, id);
}

void CompactWriter::WriteVarint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void CompactWriter::WriteI64(int64_t v) { WriteVarint(ZigZagEncode(v)); }

void CompactWriter::WriteDouble(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void CompactWriter::WriteBinary(std::string_view v) {
  WriteVarint(v.size());
  out_.append(v);
}

void CompactWriter::WriteListHeader(CompactType element, int64_t size) {
  if (size < 15) {
    out_.push_back(static_cast<char>((size << 4) | static_cast<int>(element)));
  } else {
    out_.push_back(static_cast<char>(0xF0 | static_cast<int>(element)));
    WriteVarint(static_cast<uint64_t>(size));
  }
}

}  // namespace skade::iceberg::thrift
