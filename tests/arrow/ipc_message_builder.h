// Arrow IPC Message flatbuffers built slot by slot (field order from
// src/skade/arrow/format/{Message,Schema}.fbs), so malformed-input tests can leave out,
// misplace or corrupt what a real writer always sets; plus body layout and stream framing.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skade::arrow::ipc::test_messages {

// Type union codes (Schema.fbs `union Type`).
enum class TypeCode : uint8_t {
  kNone = 0,
  kNull = 1,
  kInt = 2,
  kFloatingPoint = 3,
  kBinary = 4,
  kUtf8 = 5,
  kBool = 6,
  kDecimal = 7,
  kDate = 8,
  kTime = 9,
  kTimestamp = 10,
  kInterval = 11,
  kList = 12,
  kStruct = 13,
  kUnion = 14,
  kFixedSizeBinary = 15,
  kFixedSizeList = 16,
  kMap = 17,
  kDuration = 18,
  kLargeBinary = 19,
  kLargeUtf8 = 20,
  kLargeList = 21,
  kRunEndEncoded = 22,
  kBinaryView = 23,
  kUtf8View = 24,
};

// MessageHeader union codes (Message.fbs).
enum class HeaderCode : uint8_t { kNone = 0, kSchema = 1, kDictionaryBatch = 2, kRecordBatch = 3 };

struct NodeSpec {
  int64_t length = 0;
  int64_t null_count = 0;
};

struct BufferSpec {
  int64_t offset = 0;
  int64_t length = 0;
};

// Where the elements of a vector of structs / int64 land relative to the buffer start.
enum class Placement { kAligned, kMisaligned };

// Builds one Message flatbuffer. Tables are written bottom-up: build children first and pass
// their references (0 = leave the field out) to the parent. Not thread-safe.
class MessageBuilder {
 public:
  using Ref = flatbuffers::uoffset_t;

  // The voffset of a table's n-th field (slot order of the .fbs declaration; a union takes
  // two slots, its type code then the table).
  static constexpr flatbuffers::voffset_t Slot(int n) {
    return static_cast<flatbuffers::voffset_t>(4 + 2 * n);
  }

  Ref Empty() { return b_.EndTable(b_.StartTable()); }

  Ref Int(int32_t bit_width, bool is_signed) {
    auto t = b_.StartTable();
    b_.AddElement<int32_t>(Slot(0), bit_width, 0);
    b_.AddElement<uint8_t>(Slot(1), is_signed ? 1 : 0, 0);
    return b_.EndTable(t);
  }

  Ref FixedSizeBinary(int32_t byte_width) { return OneInt32(byte_width); }
  Ref FixedSizeList(int32_t list_size) { return OneInt32(list_size); }

  Ref Decimal(int32_t precision, int32_t scale, int32_t bit_width) {
    auto t = b_.StartTable();
    b_.AddElement<int32_t>(Slot(0), precision, 0);
    b_.AddElement<int32_t>(Slot(1), scale, 0);
    b_.AddElement<int32_t>(Slot(2), bit_width, 128);
    return b_.EndTable(t);
  }

  // Union { mode: short; typeIds: [int] } (type_ids absent when nullopt).
  Ref Union(int16_t mode, const std::optional<std::vector<int32_t>>& type_ids) {
    Ref ids = type_ids ? b_.CreateVector(*type_ids).o : 0;
    auto t = b_.StartTable();
    b_.AddElement<int16_t>(Slot(0), mode, 0);
    if (ids != 0) b_.AddOffset(Slot(1), flatbuffers::Offset<void>(ids));
    return b_.EndTable(t);
  }

  // DictionaryEncoding { id, indexType, isOrdered, dictionaryKind }.
  Ref DictionaryEncoding(int64_t id, Ref index_type) {
    auto t = b_.StartTable();
    b_.AddElement<int64_t>(Slot(0), id, 0);
    if (index_type != 0) b_.AddOffset(Slot(1), flatbuffers::Offset<void>(index_type));
    return b_.EndTable(t);
  }

  // Field { name, nullable, type (union), dictionary, children, custom_metadata }.
  // `children` nullopt leaves the vector out; `type` 0 leaves the table out.
  Ref Field(TypeCode type_code, Ref type, const std::optional<std::vector<Ref>>& children = {},
            Ref dictionary = 0, std::string_view name = "f") {
    Ref kids = children ? OffsetVector(*children) : 0;
    Ref n = b_.CreateString(name.data(), name.size()).o;
    auto t = b_.StartTable();
    b_.AddOffset(Slot(0), flatbuffers::Offset<void>(n));
    b_.AddElement<uint8_t>(Slot(1), 1, 0);
    b_.AddElement<uint8_t>(Slot(2), static_cast<uint8_t>(type_code), 0);
    if (type != 0) b_.AddOffset(Slot(3), flatbuffers::Offset<void>(type));
    if (dictionary != 0) b_.AddOffset(Slot(4), flatbuffers::Offset<void>(dictionary));
    if (kids != 0) b_.AddOffset(Slot(5), flatbuffers::Offset<void>(kids));
    return b_.EndTable(t);
  }

  // Schema { endianness, fields, custom_metadata, features }.
  Ref Schema(const std::optional<std::vector<Ref>>& fields) {
    Ref f = fields ? OffsetVector(*fields) : 0;
    auto t = b_.StartTable();
    if (f != 0) b_.AddOffset(Slot(1), flatbuffers::Offset<void>(f));
    return b_.EndTable(t);
  }

  // BodyCompression { codec: byte, method: byte }.
  Ref Compression(int8_t codec) {
    auto t = b_.StartTable();
    b_.AddElement<int8_t>(Slot(0), codec, -1);
    return b_.EndTable(t);
  }

  // RecordBatch { length, nodes, buffers, compression, variadicBufferCounts }; nullopt
  // vectors are left out. `placement` puts the 8-byte elements of the three vectors at 4 mod
  // 8 (the verifier only checks their 4-byte length prefix).
  Ref RecordBatch(int64_t length, const std::optional<std::vector<NodeSpec>>& nodes,
                  const std::optional<std::vector<BufferSpec>>& buffers, Ref compression = 0,
                  const std::optional<std::vector<int64_t>>& variadic_counts = {},
                  Placement placement = Placement::kAligned) {
    Ref v = 0, bufs = 0, ns = 0;
    if (variadic_counts) v = Int64Vector(*variadic_counts, placement);
    if (buffers) {
      std::vector<int64_t> flat;
      for (const BufferSpec& s : *buffers) flat.insert(flat.end(), {s.offset, s.length});
      bufs = Int64Vector(flat, placement, buffers->size());
    }
    if (nodes) {
      std::vector<int64_t> flat;
      for (const NodeSpec& s : *nodes) flat.insert(flat.end(), {s.length, s.null_count});
      ns = Int64Vector(flat, placement, nodes->size());
    }
    auto t = b_.StartTable();
    b_.AddElement<int64_t>(Slot(0), length, 0);
    if (nodes) b_.AddOffset(Slot(1), flatbuffers::Offset<void>(ns));
    if (buffers) b_.AddOffset(Slot(2), flatbuffers::Offset<void>(bufs));
    if (compression != 0) b_.AddOffset(Slot(3), flatbuffers::Offset<void>(compression));
    if (variadic_counts) b_.AddOffset(Slot(4), flatbuffers::Offset<void>(v));
    return b_.EndTable(t);
  }

  // DictionaryBatch { id, data, isDelta }.
  Ref DictionaryBatch(int64_t id, Ref data, bool is_delta) {
    auto t = b_.StartTable();
    b_.AddElement<int64_t>(Slot(0), id, 0);
    if (data != 0) b_.AddOffset(Slot(1), flatbuffers::Offset<void>(data));
    b_.AddElement<uint8_t>(Slot(2), is_delta ? 1 : 0, 0);
    return b_.EndTable(t);
  }

  // Message { version = V5, header (union), bodyLength } as finished flatbuffer bytes.
  std::string Finish(HeaderCode header_code, Ref header, int64_t body_length) {
    auto t = b_.StartTable();
    b_.AddElement<int16_t>(Slot(0), 4, 0);  // MetadataVersion.V5
    b_.AddElement<uint8_t>(Slot(1), static_cast<uint8_t>(header_code), 0);
    if (header != 0) b_.AddOffset(Slot(2), flatbuffers::Offset<void>(header));
    b_.AddElement<int64_t>(Slot(3), body_length, 0);
    b_.Finish(flatbuffers::Offset<void>(b_.EndTable(t)));
    return std::string(reinterpret_cast<const char*>(b_.GetBufferPointer()), b_.GetSize());
  }

 private:
  Ref OneInt32(int32_t v) {
    auto t = b_.StartTable();
    b_.AddElement<int32_t>(Slot(0), v, 0);
    return b_.EndTable(t);
  }

  Ref OffsetVector(const std::vector<Ref>& refs) {
    std::vector<flatbuffers::Offset<void>> offsets(refs.begin(), refs.end());
    return b_.CreateVector(offsets).o;
  }

  // A vector of `count` elements whose bytes are `values` (int64s). kAligned puts the
  // elements at an 8-byte boundary; kMisaligned at 4 mod 8.
  Ref Int64Vector(const std::vector<int64_t>& values, Placement placement, size_t count = 0) {
    if (count == 0) count = values.size();
    size_t bytes = values.size() * 8;
    b_.StartVector(0, 1);
    b_.PreAlign(bytes + (placement == Placement::kMisaligned ? 4 : 0), 8);
    b_.PushBytes(reinterpret_cast<const uint8_t*>(values.data()), bytes);
    return b_.EndVector(count);
  }

  flatbuffers::FlatBufferBuilder b_;
};

// A message body: buffers laid out back to back, each padded to 8 bytes.
struct Body {
  std::string bytes;
  std::vector<BufferSpec> buffers;

  Body& Add(std::string_view data) {
    buffers.push_back({static_cast<int64_t>(bytes.size()), static_cast<int64_t>(data.size())});
    bytes.append(data);
    bytes.append((8 - bytes.size() % 8) % 8, '\0');
    return *this;
  }
  Body& AddEmpty() { return Add(""); }
  template <typename T>
  Body& AddValues(const std::vector<T>& values) {
    return Add(
        std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  }
};

// The encapsulated message: continuation, padded metadata length, flatbuffer, padding, body.
inline std::string Frame(std::string_view flatbuffer, std::string_view body) {
  std::string out;
  uint32_t marker = 0xFFFFFFFFu;
  auto padded = static_cast<int32_t>((flatbuffer.size() + 7) / 8 * 8);
  out.append(reinterpret_cast<const char*>(&marker), 4);
  out.append(reinterpret_cast<const char*>(&padded), 4);
  out.append(flatbuffer);
  out.append(padded - flatbuffer.size(), '\0');
  out.append(body);
  return out;
}

}  // namespace skade::arrow::ipc::test_messages
