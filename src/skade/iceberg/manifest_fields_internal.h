// The field readers of the manifest entry decoder (manifest_reader.cc): Avro values read
// straight from a block's bytes into what a ManifestEntry holds, and the column metric maps,
// read or stepped over. Internal to skade_iceberg.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"

namespace skade::iceberg::manifest_fields {

using avro::AvroKind;
using avro::AvroNode;

// A metric map written the way Iceberg writers do: an array of {key: int, value: long|bytes}
// records with no unions inside. Decoded by a tight loop instead of the general one.
struct MapLayout {
  const AvroNode* array = nullptr;  // the array node (the union's branch if optional)
  bool key_first = true;
  bool bytes_value = false;
  size_t item_size = 0;
};

// The common layout of a metric map's type (an optional union unwrapped), if it has it.
std::optional<MapLayout> SimpleMapLayout(const AvroNode& field_type);

// A zig-zag varint decoded inline (up to 9 bytes, 63 bits; longer ones, and malformed input,
// go through avro::ReadLong); false (and *error set) when malformed.
[[gnu::always_inline]] inline bool Varint(std::string_view* in, int64_t* out, Status* error) {
  const size_t n = std::min<size_t>(in->size(), 9);
  uint64_t raw = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<uint8_t>((*in)[i]);
    raw |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *out = static_cast<int64_t>(raw >> 1) ^ -static_cast<int64_t>(raw & 1);
      in->remove_prefix(i + 1);
      return true;
    }
  }
  auto v = avro::ReadLong(in);
  if (!v.ok()) {
    *error = v.status();
    return false;
  }
  *out = *v;
  return true;
}

// Branch (below) for a multi-byte or bad index.
Result<const AvroNode*> BranchSlow(const AvroNode& node, std::string_view* in);

// The branch a value of `node` takes (itself unless a union); nullptr for null. Inline for the
// one-byte index every optional field has; the rest (and errors) go the long way.
[[gnu::always_inline]] inline Result<const AvroNode*> Branch(const AvroNode& node, std::string_view* in) {
  if (node.kind != AvroKind::kUnion) return node.kind == AvroKind::kNull ? nullptr : &node;
  if (!in->empty()) {
    const auto byte = static_cast<uint8_t>((*in)[0]);
    const size_t index = byte >> 1;  // zig-zag of a non-negative one-byte varint
    if (byte < 0x80 && (byte & 1) == 0 && index < node.branches.size()) {
      in->remove_prefix(1);
      const AvroNode* b = node.branches[index].get();
      return b->kind == AvroKind::kNull ? nullptr : b;
    }
  }
  return BranchSlow(node, in);
}

// An int or long value of `node` (nullopt for null).
inline Result<std::optional<int64_t>> ReadInteger(const AvroNode& node, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(node, in));
  if (b == nullptr) return std::optional<int64_t>();
  if (b->kind != AvroKind::kLong && b->kind != AvroKind::kInt) return Status::Corruption("expected an integer");
  int64_t v = 0;
  Status error = Status::Ok();
  if (!Varint(in, &v, &error)) return error;
  if (b->kind == AvroKind::kInt && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
    return Status::Corruption("int value out of 32-bit range");
  }
  return std::optional<int64_t>(v);
}

inline Result<std::optional<int>> ReadInt32(const AvroNode& node, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(node, in));
  if (!v) return std::optional<int>();
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
    return Status::Corruption("value out of int range");
  }
  return std::optional<int>(static_cast<int>(*v));
}

// A bytes, string or fixed value of `node` as a view into the input (nullopt for null).
inline Result<std::optional<std::string_view>> ReadByteString(const AvroNode& node, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(node, in));
  if (b == nullptr) return std::optional<std::string_view>();
  if (b->kind == AvroKind::kFixed) {
    const auto size = static_cast<size_t>(b->size);
    if (in->size() < size) return Status::Corruption("truncated input reading a fixed");
    std::string_view v = in->substr(0, size);
    in->remove_prefix(size);
    return std::optional<std::string_view>(v);
  }
  if (b->kind != AvroKind::kBytes && b->kind != AvroKind::kString) return Status::Corruption("expected bytes");
  SKADE_ASSIGN_OR_RETURN(std::string_view v, avro::ReadBytes(in));
  return std::optional<std::string_view>(v);
}

// Which metrics to keep: all, or a sorted list of field ids.
class IdFilter {
 public:
  explicit IdFilter(const std::optional<std::vector<int>>& ids) : all_(!ids) {
    if (ids) {
      ids_ = *ids;
      std::sort(ids_.begin(), ids_.end());
    }
  }
  // `id` is within int range (checked by the caller).
  bool Wants(int64_t id) const {
    if (all_) return true;
    if (ids_.empty()) return false;
    return std::binary_search(ids_.begin(), ids_.end(), static_cast<int>(id));
  }
  bool none() const { return !all_ && ids_.empty(); }

 private:
  bool all_;
  std::vector<int> ids_;
};

// A map<int, long|bytes> written as an array of {key, value} records (logicalType "map"), or
// as an Avro map with decimal string keys; only the ids `filter` wants are stored.
Status ReadMetricMap(const AvroNode& node, std::string_view* in, const IdFilter& filter, std::map<int, int64_t>* out);
Status ReadMetricMap(const AvroNode& node, std::string_view* in, const IdFilter& filter,
                     std::map<int, std::string>* out);

// A metric map in the common layout (see MapLayout), `*in` just past the union branch; maps
// no id of which is wanted are stepped over without decoding their entries.
Status ReadSimpleMap(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, int64_t>* out);
Status ReadSimpleMap(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, std::string>* out);

// An array of ints or longs.
Status ReadIntegerList(const AvroNode& node, std::string_view* in, std::vector<int64_t>* out);
Status ReadIntegerList(const AvroNode& node, std::string_view* in, std::vector<int>* out);

}  // namespace skade::iceberg::manifest_fields
