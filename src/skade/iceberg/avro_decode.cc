// Avro binary decoding (Avro 1.11 specification, "Binary Encoding"): the primitives over a
// bounds-checked cursor, generic values, and skipping a value without building it. Every read
// checks the cursor, so garbled input yields kCorruption instead of reading out of bounds.

#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"

namespace skade::iceberg::avro {
namespace {

Status Truncated(const char* what) { return Status::Corruption(std::string("truncated input reading ") + what); }

Status Take(size_t n, const char* what, std::string_view* in) {
  if (in->size() < n) return Truncated(what);
  in->remove_prefix(n);
  return Status::Ok();
}

uint64_t LittleEndian(std::string_view in, int bytes) {
  uint64_t bits = 0;
  for (int i = bytes - 1; i >= 0; --i) bits = (bits << 8) | static_cast<uint8_t>(in[static_cast<size_t>(i)]);
  return bits;
}

Result<int64_t> ReadUnionBranch(const AvroNode& schema, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(int64_t index, ReadLong(in));
  if (index < 0 || static_cast<uint64_t>(index) >= schema.branches.size()) {
    return Status::Corruption("union branch " + std::to_string(index) + " out of range");
  }
  return index;
}

// A map entry is at least its key's length byte plus its value.
size_t MapEntryMinSize(const AvroNode& map) { return 1 + MinEncodedSize(*map.values); }

Status DecodeInto(const AvroNode& schema, std::string_view* in, AvroValue* out) {
  switch (schema.kind) {
    case AvroKind::kNull:
      out->tag = AvroValue::Tag::kNull;
      return Status::Ok();
    case AvroKind::kBoolean: {
      if (in->empty()) return Truncated("a boolean");
      uint8_t b = static_cast<uint8_t>((*in)[0]);
      if (b > 1) return Status::Corruption("invalid boolean byte");
      in->remove_prefix(1);
      out->tag = AvroValue::Tag::kBool;
      out->bool_value = b == 1;
      return Status::Ok();
    }
    case AvroKind::kInt: {
      SKADE_ASSIGN_OR_RETURN(int32_t v, ReadInt(in));
      out->tag = AvroValue::Tag::kLong;
      out->long_value = v;
      return Status::Ok();
    }
    case AvroKind::kLong: {
      SKADE_ASSIGN_OR_RETURN(int64_t v, ReadLong(in));
      out->tag = AvroValue::Tag::kLong;
      out->long_value = v;
      return Status::Ok();
    }
    case AvroKind::kFloat: {
      if (in->size() < 4) return Truncated("a float");
      const auto bits = static_cast<uint32_t>(LittleEndian(*in, 4));
      in->remove_prefix(4);
      out->tag = AvroValue::Tag::kFloat;
      std::memcpy(&out->float_value, &bits, 4);
      return Status::Ok();
    }
    case AvroKind::kDouble: {
      if (in->size() < 8) return Truncated("a double");
      const uint64_t bits = LittleEndian(*in, 8);
      in->remove_prefix(8);
      out->tag = AvroValue::Tag::kDouble;
      std::memcpy(&out->double_value, &bits, 8);
      return Status::Ok();
    }
    case AvroKind::kBytes:
    case AvroKind::kString: {
      SKADE_ASSIGN_OR_RETURN(std::string_view bytes, ReadBytes(in));
      out->bytes.assign(bytes);
      out->tag = AvroValue::Tag::kBytes;
      return Status::Ok();
    }
    case AvroKind::kFixed: {
      const auto size = static_cast<size_t>(schema.size);
      if (in->size() < size) return Truncated("a fixed");
      out->bytes.assign(in->data(), size);
      in->remove_prefix(size);
      out->tag = AvroValue::Tag::kBytes;
      return Status::Ok();
    }
    case AvroKind::kEnum: {
      SKADE_ASSIGN_OR_RETURN(int32_t index, ReadInt(in));
      if (index < 0 || static_cast<size_t>(index) >= schema.symbols.size()) {
        return Status::Corruption("enum index " + std::to_string(index) + " out of range");
      }
      out->tag = AvroValue::Tag::kLong;
      out->long_value = index;
      return Status::Ok();
    }
    case AvroKind::kRecord: {
      out->tag = AvroValue::Tag::kList;
      out->items.resize(schema.fields.size());
      for (size_t i = 0; i < schema.fields.size(); ++i) {
        SKADE_RETURN_IF_ERROR(DecodeInto(*schema.fields[i].type, in, &out->items[i]));
      }
      return Status::Ok();
    }
    case AvroKind::kArray: {
      out->tag = AvroValue::Tag::kList;
      int64_t total = 0;
      const size_t item_size = MinEncodedSize(*schema.items);
      while (true) {
        SKADE_ASSIGN_OR_RETURN(int64_t count, ReadBlockCount(item_size, in, &total));
        if (count == 0) break;
        for (int64_t i = 0; i < count; ++i) {
          out->items.emplace_back();
          SKADE_RETURN_IF_ERROR(DecodeInto(*schema.items, in, &out->items.back()));
        }
      }
      return Status::Ok();
    }
    case AvroKind::kMap: {
      out->tag = AvroValue::Tag::kMap;
      int64_t total = 0;
      const size_t entry_size = MapEntryMinSize(schema);
      while (true) {
        SKADE_ASSIGN_OR_RETURN(int64_t count, ReadBlockCount(entry_size, in, &total));
        if (count == 0) break;
        for (int64_t i = 0; i < count; ++i) {
          SKADE_ASSIGN_OR_RETURN(std::string_view key, ReadBytes(in));
          out->entries.emplace_back(std::string(key), AvroValue());
          SKADE_RETURN_IF_ERROR(DecodeInto(*schema.values, in, &out->entries.back().second));
        }
      }
      return Status::Ok();
    }
    case AvroKind::kUnion: {
      SKADE_ASSIGN_OR_RETURN(int64_t index, ReadUnionBranch(schema, in));
      out->branch = static_cast<int>(index);
      return DecodeInto(*schema.branches[static_cast<size_t>(index)], in, out);
    }
  }
  return Status::Internal("unknown avro kind");
}

}  // namespace

size_t MinEncodedSize(const AvroNode& node) {
  switch (node.kind) {
    case AvroKind::kNull:
      return 0;
    case AvroKind::kFloat:
      return 4;
    case AvroKind::kDouble:
      return 8;
    case AvroKind::kFixed:
      return static_cast<size_t>(node.size);
    case AvroKind::kRecord: {
      size_t total = 0;
      for (const AvroField& f : node.fields) total += MinEncodedSize(*f.type);
      return total;
    }
    default:
      return 1;
  }
}

Result<int64_t> ReadLong(std::string_view* in) {
  uint64_t raw = 0;
  int shift = 0;
  size_t i = 0;
  while (true) {
    if (i >= in->size()) return Truncated("a varint");
    const auto byte = static_cast<uint8_t>((*in)[i++]);
    if (shift == 63 && (byte & 0x7e) != 0) return Status::Corruption("varint overflows 64 bits");
    raw |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
    shift += 7;
    if (shift > 63) return Status::Corruption("varint longer than 10 bytes");
  }
  in->remove_prefix(i);
  // Zig-zag: (n >> 1) ^ -(n & 1).
  return static_cast<int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

Result<int32_t> ReadInt(std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(int64_t v, ReadLong(in));
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return Status::Corruption("int value out of 32-bit range");
  }
  return static_cast<int32_t>(v);
}

Result<std::string_view> ReadBytes(std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(int64_t len, ReadLong(in));
  if (len < 0) return Status::Corruption("negative byte length");
  if (static_cast<uint64_t>(len) > in->size()) return Truncated("bytes");
  std::string_view out = in->substr(0, static_cast<size_t>(len));
  in->remove_prefix(static_cast<size_t>(len));
  return out;
}

Result<int64_t> ReadBlockCount(size_t min_item_size, std::string_view* in, int64_t* total, int64_t* byte_size) {
  SKADE_ASSIGN_OR_RETURN(int64_t count, ReadLong(in));
  if (byte_size != nullptr) *byte_size = -1;
  if (count < 0) {
    if (count == std::numeric_limits<int64_t>::min()) return Status::Corruption("invalid block count");
    count = -count;
    SKADE_ASSIGN_OR_RETURN(int64_t size, ReadLong(in));
    if (size < 0 || static_cast<uint64_t>(size) > in->size()) {
      return Status::Corruption("invalid block byte size");
    }
    if (byte_size != nullptr) *byte_size = size;
  }
  if (min_item_size > 0) {
    if (static_cast<uint64_t>(count) > in->size() / min_item_size) {
      return Status::Corruption("block item count " + std::to_string(count) + " exceeds the remaining input");
    }
  } else if (count > kMaxZeroSizeItems || *total + count > kMaxZeroSizeItems) {
    return Status::Corruption("block item count " + std::to_string(count) + " is too large");
  }
  *total += count;
  return count;
}

Status SkipValue(const AvroNode& schema, std::string_view* in) {
  switch (schema.kind) {
    case AvroKind::kNull:
      return Status::Ok();
    case AvroKind::kBoolean:
      return Take(1, "a boolean", in);
    case AvroKind::kInt:
    case AvroKind::kEnum:
      return ReadInt(in).status();
    case AvroKind::kLong:
      return ReadLong(in).status();
    case AvroKind::kFloat:
      return Take(4, "a float", in);
    case AvroKind::kDouble:
      return Take(8, "a double", in);
    case AvroKind::kBytes:
    case AvroKind::kString:
      return ReadBytes(in).status();
    case AvroKind::kFixed:
      return Take(static_cast<size_t>(schema.size), "a fixed", in);
    case AvroKind::kRecord:
      for (const AvroField& f : schema.fields) SKADE_RETURN_IF_ERROR(SkipValue(*f.type, in));
      return Status::Ok();
    case AvroKind::kArray:
    case AvroKind::kMap: {
      const bool map = schema.kind == AvroKind::kMap;
      const AvroNode& item = map ? *schema.values : *schema.items;
      const size_t item_size = map ? MapEntryMinSize(schema) : MinEncodedSize(item);
      int64_t total = 0;
      while (true) {
        int64_t byte_size = -1;
        SKADE_ASSIGN_OR_RETURN(int64_t count, ReadBlockCount(item_size, in, &total, &byte_size));
        if (count == 0) return Status::Ok();
        if (byte_size >= 0) {
          in->remove_prefix(static_cast<size_t>(byte_size));  // checked by ReadBlockCount
          continue;
        }
        for (int64_t i = 0; i < count; ++i) {
          if (map) SKADE_RETURN_IF_ERROR(ReadBytes(in).status());
          SKADE_RETURN_IF_ERROR(SkipValue(item, in));
        }
      }
    }
    case AvroKind::kUnion: {
      SKADE_ASSIGN_OR_RETURN(int64_t index, ReadUnionBranch(schema, in));
      return SkipValue(*schema.branches[static_cast<size_t>(index)], in);
    }
  }
  return Status::Internal("unknown avro kind");
}

Result<AvroValue> DecodeValue(const AvroNode& schema, std::string_view* input) {
  AvroValue value;
  std::string_view cursor = *input;
  SKADE_RETURN_IF_ERROR(DecodeInto(schema, &cursor, &value));
  *input = cursor;
  return value;
}

}  // namespace skade::iceberg::avro
