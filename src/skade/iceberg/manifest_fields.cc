#include "skade/iceberg/manifest_fields_internal.h"

#include <type_traits>

#include "skade/iceberg/manifest_internal.h"

namespace skade::iceberg::manifest_fields {
namespace {

// Stores one metric value; `value_type` is its Avro type.
Status StoreMetric(const AvroNode& value_type, std::string_view* in, int64_t key, bool keep,
                   std::map<int, int64_t>* out) {
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(value_type, in));
  if (!v) return Status::Corruption("map value is not a long");
  if (keep) (*out)[static_cast<int>(key)] = *v;
  return Status::Ok();
}
Status StoreMetric(const AvroNode& value_type, std::string_view* in, int64_t key, bool keep,
                   std::map<int, std::string>* out) {
  SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(value_type, in));
  if (!v) return Status::Corruption("map value is not bytes");
  if (keep) (*out)[static_cast<int>(key)].assign(*v);
  return Status::Ok();
}

// Metric map keys are field ids: ints.
bool IntKey(int64_t key) { return key >= std::numeric_limits<int>::min() && key <= std::numeric_limits<int>::max(); }

Status CheckKey(int64_t key) { return IntKey(key) ? Status::Ok() : Status::Corruption("map key out of int range"); }

template <typename V>
Status MetricMapOf(const AvroNode& node, std::string_view* in, const IdFilter& filter, std::map<int, V>* out) {
  SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(node, in));
  if (b == nullptr) return Status::Ok();
  const bool map = b->kind == AvroKind::kMap;
  if (!map && (b->kind != AvroKind::kArray || b->items->kind != AvroKind::kRecord)) {
    return Status::Corruption(b->kind == AvroKind::kArray ? "map entries must be {key: int, value} records"
                                                          : "expected a map");
  }
  const AvroNode& item = map ? *b->values : *b->items;
  int key_field = -1, value_field = -1;
  if (!map) {
    key_field = item.FieldIndex("key");
    value_field = item.FieldIndex("value");
    if (item.fields.size() == 2 && key_field < 0 && value_field < 0) key_field = 0, value_field = 1;
    if (key_field < 0 || value_field < 0) return Status::Corruption("map entries must be {key: int, value} records");
  }
  const size_t item_size = map ? 1 + avro::MinEncodedSize(item) : avro::MinEncodedSize(item);
  int64_t total = 0;
  while (true) {
    int64_t byte_size = -1;
    SKADE_ASSIGN_OR_RETURN(int64_t count, avro::ReadBlockCount(item_size, in, &total, &byte_size));
    if (count == 0) return Status::Ok();
    if (byte_size >= 0 && filter.none()) {
      in->remove_prefix(static_cast<size_t>(byte_size));  // checked by ReadBlockCount
      continue;
    }
    for (int64_t i = 0; i < count; ++i) {
      if (map) {
        SKADE_ASSIGN_OR_RETURN(std::string_view text, avro::ReadBytes(in));
        int64_t key = 0;
        bool negative = !text.empty() && text[0] == '-';
        size_t digits = negative ? 1 : 0;
        if (text.size() == digits || text.size() - digits > 10) return Status::Corruption("non-numeric map key");
        for (size_t k = digits; k < text.size(); ++k) {
          if (text[k] < '0' || text[k] > '9') return Status::Corruption("non-numeric map key");
          key = key * 10 + (text[k] - '0');
        }
        if (negative) key = -key;
        SKADE_RETURN_IF_ERROR(CheckKey(key));
        SKADE_RETURN_IF_ERROR(StoreMetric(item, in, key, filter.Wants(key), out));
        continue;
      }
      // The key may follow the value in the writer's order: read the value first as a view.
      std::optional<int64_t> key;
      std::string_view value_at;
      for (size_t f = 0; f < item.fields.size(); ++f) {
        const AvroNode& type = *item.fields[f].type;
        if (static_cast<int>(f) == key_field) {
          SKADE_ASSIGN_OR_RETURN(key, ReadInteger(type, in));
          if (!key) return Status::Corruption("map entries must be {key: int, value} records");
          SKADE_RETURN_IF_ERROR(CheckKey(*key));
        } else if (static_cast<int>(f) == value_field) {
          value_at = *in;
          SKADE_RETURN_IF_ERROR(avro::SkipValue(type, in));
        } else {
          SKADE_RETURN_IF_ERROR(avro::SkipValue(type, in));
        }
      }
      SKADE_RETURN_IF_ERROR(StoreMetric(*item.fields[static_cast<size_t>(value_field)].type, &value_at, *key,
                                        filter.Wants(*key), out));
    }
  }
}

// Steps over `count` entries of a metric map in the common layout whose values are longs:
// 2 * count varints, found by their last bytes (below 0x80) without decoding them. A varint
// longer than 10 bytes or input that ends first is corruption.
Status SkipVarints(int64_t varints, std::string_view* in) {
  const auto* p = reinterpret_cast<const uint8_t*>(in->data());
  const size_t n = in->size();
  size_t run = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x80) {
      if (++run >= 10) return Status::Corruption("varint longer than 10 bytes");
      continue;
    }
    run = 0;
    if (--varints == 0) {
      in->remove_prefix(i + 1);
      return Status::Ok();
    }
  }
  return Status::Corruption("truncated map entry");
}

// Steps over `count` entries of a metric map in the common layout (none is wanted).
Status SkipSimpleMapEntries(const MapLayout& l, int64_t count, std::string_view* in) {
  if (!l.bytes_value) return SkipVarints(2 * count, in);
  Status error = Status::Ok();
  for (int64_t i = 0; i < count; ++i) {
    int64_t length = 0;
    if (l.key_first && !Varint(in, &length, &error)) return error;  // the key, not kept
    if (!Varint(in, &length, &error)) return error;
    if (length < 0 || static_cast<uint64_t>(length) > in->size()) return Status::Corruption("truncated map entry");
    in->remove_prefix(static_cast<size_t>(length));
    if (!l.key_first && !Varint(in, &length, &error)) return error;  // the key, not kept
  }
  return Status::Ok();
}

template <typename V>
Status SimpleMapOf(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, V>* out) {
  int64_t total = 0;
  Status error = Status::Ok();
  auto bad = [&](const char* what) { return error.ok() ? Status::Corruption(what) : error; };
  while (true) {
    int64_t byte_size = -1;
    SKADE_ASSIGN_OR_RETURN(int64_t count, avro::ReadBlockCount(l.item_size, in, &total, &byte_size));
    if (count == 0) return Status::Ok();
    // The value type is the layout's, the same for every entry (the general path checks it
    // entry by entry, wanted or not).
    if (l.bytes_value != std::is_same_v<V, std::string>) {
      return Status::Corruption(l.bytes_value ? "map value is not a long" : "map value is not bytes");
    }
    if (filter.none()) {
      if (byte_size >= 0) {
        in->remove_prefix(static_cast<size_t>(byte_size));  // checked by ReadBlockCount
      } else {
        SKADE_RETURN_IF_ERROR(SkipSimpleMapEntries(l, count, in));
      }
      continue;
    }
    for (int64_t i = 0; i < count; ++i) {
      int64_t key = 0, number = 0, length = 0;
      std::string_view bytes;
      auto value = [&]() -> bool {
        if (!l.bytes_value) return Varint(in, &number, &error);
        if (!Varint(in, &length, &error)) return false;
        if (length < 0 || static_cast<uint64_t>(length) > in->size()) return false;
        bytes = in->substr(0, static_cast<size_t>(length));
        in->remove_prefix(static_cast<size_t>(length));
        return true;
      };
      if (l.key_first) {
        if (!Varint(in, &key, &error) || !value()) return bad("truncated map entry");
      } else {
        if (!value() || !Varint(in, &key, &error)) return bad("truncated map entry");
      }
      if (!IntKey(key)) return Status::Corruption("map key out of int range");
      if (!filter.Wants(key)) continue;
      if constexpr (std::is_same_v<V, int64_t>) {
        (*out)[static_cast<int>(key)] = number;
      } else {
        (*out)[static_cast<int>(key)].assign(bytes);
      }
    }
  }
}

template <typename T>
Status IntegerListOf(const AvroNode& node, std::string_view* in, std::vector<T>* out) {
  SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(node, in));
  if (b == nullptr) return Status::Ok();
  if (b->kind != AvroKind::kArray) return Status::Corruption("expected a list");
  int64_t total = 0;
  const size_t item_size = avro::MinEncodedSize(*b->items);
  while (true) {
    SKADE_ASSIGN_OR_RETURN(int64_t count, avro::ReadBlockCount(item_size, in, &total));
    if (count == 0) return Status::Ok();
    for (int64_t i = 0; i < count; ++i) {
      auto v = ReadInteger(*b->items, in);
      if (!v.ok() || !*v) return Status::Corruption("list element is not an integer");
      if (**v < std::numeric_limits<T>::min() || **v > std::numeric_limits<T>::max()) {
        return Status::Corruption("list element out of range");
      }
      out->push_back(static_cast<T>(**v));
    }
  }
}

}  // namespace

std::optional<MapLayout> SimpleMapLayout(const AvroNode& field_type) {
  const AvroNode* array = manifest_internal::UnwrapOptional(field_type);
  if (array->kind != AvroKind::kArray || array->items->kind != AvroKind::kRecord) return std::nullopt;
  const AvroNode& item = *array->items;
  if (item.fields.size() != 2) return std::nullopt;
  const int key = item.FieldIndex("key"), value = item.FieldIndex("value");
  if (key < 0 || value < 0) return std::nullopt;
  const AvroKind key_kind = item.fields[static_cast<size_t>(key)].type->kind;
  const AvroKind value_kind = item.fields[static_cast<size_t>(value)].type->kind;
  if (key_kind != AvroKind::kInt && key_kind != AvroKind::kLong) return std::nullopt;
  MapLayout l;
  l.array = array;
  l.key_first = key == 0;
  if (value_kind == AvroKind::kBytes || value_kind == AvroKind::kString) {
    l.bytes_value = true;
  } else if (value_kind != AvroKind::kInt && value_kind != AvroKind::kLong) {
    return std::nullopt;
  }
  l.item_size = avro::MinEncodedSize(item);
  return l;
}

Result<const AvroNode*> BranchSlow(const AvroNode& node, std::string_view* in) {
  int64_t index = 0;
  Status error = Status::Ok();
  if (!Varint(in, &index, &error)) return error;
  if (index < 0 || static_cast<uint64_t>(index) >= node.branches.size()) {
    return Status::Corruption("union branch " + std::to_string(index) + " out of range");
  }
  const AvroNode* b = node.branches[static_cast<size_t>(index)].get();
  return b->kind == AvroKind::kNull ? nullptr : b;
}

Status ReadMetricMap(const AvroNode& node, std::string_view* in, const IdFilter& filter, std::map<int, int64_t>* out) {
  return MetricMapOf(node, in, filter, out);
}
Status ReadMetricMap(const AvroNode& node, std::string_view* in, const IdFilter& filter,
                     std::map<int, std::string>* out) {
  return MetricMapOf(node, in, filter, out);
}
Status ReadSimpleMap(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, int64_t>* out) {
  return SimpleMapOf(l, in, filter, out);
}
Status ReadSimpleMap(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, std::string>* out) {
  return SimpleMapOf(l, in, filter, out);
}
Status ReadIntegerList(const AvroNode& node, std::string_view* in, std::vector<int64_t>* out) {
  return IntegerListOf(node, in, out);
}
Status ReadIntegerList(const AvroNode& node, std::string_view* in, std::vector<int>* out) {
  return IntegerListOf(node, in, out);
}

}  // namespace skade::iceberg::manifest_fields
