// The Thrift compact protocol (Apache Thrift, doc/specs/thrift-compact-protocol.md) as Parquet
// uses it for its footer and page headers: a bounded reader for untrusted bytes, and a writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace skade::iceberg::thrift {

// Type codes of the compact protocol. In a struct field header 1 and 2 are the boolean value
// itself; as a list, set or map element type either means "bool" (one byte per element).
enum class CompactType : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kI8 = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
  kUuid = 13,
};

// Why a CompactReader stopped.
enum class ReadError {
  kNone,
  kTruncated,  // the bytes ended inside a value
  kMalformed,  // bytes no encoder writes (unknown type code, overlong varint, bad size, …)
  kTooDeep,    // structs, lists and maps nested deeper than CompactReader::kMaxDepth
};

// A field header: kStop (id 0) at the end of a struct, or when the reader has failed.
struct FieldHeader {
  CompactType type = CompactType::kStop;
  int16_t id = 0;
};

// A list or set header: the element type and the number of elements.
struct ListHeader {
  CompactType element = CompactType::kStop;
  int64_t size = 0;
};

// Reads compact-protocol values from one byte range and never past it. Sizes read from the
// bytes are checked against the bytes left (every element takes at least one byte) before
// anything is done with them, and nothing is allocated from them. The first failure sticks:
// later reads return zero values, and error()/message() say what went wrong and where.
// Thread-compatible.
class CompactReader {
 public:
  // Nesting limit for structs, lists, sets and maps (Parquet's deepest is about 6).
  static constexpr int kMaxDepth = 32;

  explicit CompactReader(std::string_view bytes) : bytes_(bytes) {}

  // Enters a struct (false past kMaxDepth); NextField then reads its fields up to the stop
  // byte, after which EndStruct returns to the enclosing struct.
  bool BeginStruct();
  FieldHeader NextField();
  void EndStruct();

  // The value of a boolean field (carried by its header's type).
  static bool FieldBool(const FieldHeader& field) { return field.type == CompactType::kTrue; }

  int8_t ReadI8();
  int16_t ReadI16();
  int32_t ReadI32();
  int64_t ReadI64();
  double ReadDouble();
  // A binary or string value; the view points into the reader's bytes.
  std::string_view ReadBinary();
  // A list or set header; its size is at most the bytes left.
  ListHeader ReadListHeader();
  // A boolean list element.
  bool ReadElementBool();

  // Skips one field value of `type` (nested values included) or one element of that type.
  void SkipField(CompactType type) { Skip(type, /*element=*/false); }
  void SkipElement(CompactType type) { Skip(type, /*element=*/true); }

  bool ok() const { return error_ == ReadError::kNone; }
  ReadError error() const { return error_; }
  // What went wrong and at which byte ("" when ok).
  std::string message() const;
  // Bytes consumed so far.
  size_t position() const { return pos_; }

 private:
  void Fail(ReadError error, const char* what);
  uint64_t ReadVarint(int max_bytes);
  bool Take(size_t n, std::string_view* out);
  void Skip(CompactType type, bool element);
  bool Enter();
  void Leave() { --depth_; }

  std::string_view bytes_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<int16_t> last_ids_;  // per open struct: the id of its previous field
  ReadError error_ = ReadError::kNone;
  const char* what_ = "";
  size_t error_at_ = 0;
};

// Appends compact-protocol values to a byte string. Thread-compatible.
class CompactWriter {
 public:
  void BeginStruct() { last_ids_.push_back(0); }
  // Writes the stop byte of the innermost open struct.
  void EndStruct();
  // A field header (short form when the id is 1..15 above the previous field's).
  void WriteFieldHeader(CompactType type, int16_t id);
  void WriteBoolField(int16_t id, bool value);

  void WriteI8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void WriteI16(int16_t v) { WriteI64(v); }
  void WriteI32(int32_t v) { WriteI64(v); }
  void WriteI64(int64_t v);
  void WriteDouble(double v);
  void WriteBinary(std::string_view v);
  void WriteListHeader(CompactType element, int64_t size);
  void WriteElementBool(bool v) { out_.push_back(v ? 1 : 0); }
  // Bytes copied as they are (an already encoded value).
  void WriteRaw(std::string_view bytes) { out_.append(bytes); }

  const std::string& bytes() const { return out_; }

 private:
  void WriteVarint(uint64_t v);

  std::string out_;
  std::vector<int16_t> last_ids_;
};

}  // namespace skade::iceberg::thrift
