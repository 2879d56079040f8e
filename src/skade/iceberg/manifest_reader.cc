// The manifest entry decoder (spec "Manifests": manifest_entry and data_file with their field
// ids; "Sequence Number Inheritance", "Snapshot ID Inheritance", "First Row ID Inheritance").
// The file's own Avro schema is compiled once into a list of steps, one per field in the
// writer's order, each naming the ManifestEntry member it fills (or none: the value is
// stepped over). Records are then decoded straight from the block bytes, with no generic
// Avro value in between: column metrics the caller did not ask for are never built.

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/manifest_internal.h"

namespace skade::iceberg {
namespace {

using avro::AvroKind;
using avro::AvroNode;
using manifest_internal::FindField;
using manifest_internal::ParseFileFormat;
using manifest_internal::ParseFormatVersion;
using manifest_internal::PartitionFieldType;
using manifest_internal::PartitionLiteral;
using manifest_internal::RequireRecord;
using manifest_internal::UnwrapOptional;

// The ManifestEntry member a field of the writer's schema fills.
enum class Target : uint8_t {
  kSkip,
  // manifest_entry
  kStatus, kSnapshotId, kSequenceNumber, kFileSequenceNumber, kDataFile,
  // data_file
  kContent, kFilePath, kFileFormat, kPartition, kRecordCount, kFileSize,
  kColumnSizes, kValueCounts, kNullValueCounts, kNanValueCounts, kLowerBounds, kUpperBounds,
  kKeyMetadata, kSplitOffsets, kEqualityIds, kSortOrderId, kFirstRowId, kReferencedDataFile,
  kContentOffset, kContentSize,
};

// A metric map written the way Iceberg writers do: an array of {key: int, value: long|bytes}
// records with no unions inside. Decoded by a tight loop instead of the general one.
struct MapLayout {
  const AvroNode* array = nullptr;  // the array node (the union's branch if optional)
  bool key_first = true;
  bool bytes_value = false;
  size_t item_size = 0;
};

struct Step {
  Target target = Target::kSkip;
  const AvroNode* type = nullptr;  // the field's type as written
  const std::string* name = nullptr;
  std::optional<MapLayout> map_layout;  // metric maps in the common layout
};


std::optional<MapLayout> SimpleMapLayout(const AvroNode& field_type) {
  const AvroNode* array = UnwrapOptional(field_type);
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

// Marks an error as being about one field.
Status FieldError(const Step& step, std::string_view what) {
  return Status::Corruption("field '" + *step.name + "': " + std::string(what));
}

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
Result<std::optional<int64_t>> ReadInteger(const AvroNode& node, std::string_view* in) {
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

Result<std::optional<int>> ReadInt32(const AvroNode& node, std::string_view* in) {
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(node, in));
  if (!v) return std::optional<int>();
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
    return Status::Corruption("value out of int range");
  }
  return std::optional<int>(static_cast<int>(*v));
}

// A bytes, string or fixed value of `node` as a view into the input (nullopt for null).
Result<std::optional<std::string_view>> ReadByteString(const AvroNode& node, std::string_view* in) {
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

// A map<int, long|bytes> written as an array of {key, value} records (logicalType "map"), or
// as an Avro map with decimal string keys; only the ids `filter` wants are stored.
template <typename V>
Status ReadMetricMap(const AvroNode& node, std::string_view* in, const IdFilter& filter, std::map<int, V>* out) {
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

// A metric map in the common layout (see MapLayout), `*in` just past the union branch.
template <typename V>
Status ReadSimpleMap(const MapLayout& l, std::string_view* in, const IdFilter& filter, std::map<int, V>* out) {
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

// An array of ints or longs.
template <typename T>
Status ReadIntegerList(const AvroNode& node, std::string_view* in, std::vector<T>* out) {
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

struct ManifestReader::Impl {
  std::string name;
  std::unique_ptr<avro::FileReader> file;
  ManifestFile manifest;
  int format_version = 1;
  TypePtr partition_type;
  const AvroNode* data_file_schema = nullptr;
  const AvroNode* partition_schema = nullptr;
  std::vector<Step> entry_steps;      // one per manifest_entry field, in the writer's order
  std::vector<Step> data_file_steps;  // one per data_file field
  IdFilter metrics{std::nullopt};
  bool split_offsets = true;
  // First Row ID Inheritance: the next id handed to a data file with a null first_row_id.
  std::optional<int64_t> next_row_id;
  // The current block.
  std::string_view* cursor = nullptr;
  int64_t left = 0;
  Status failed;

  Status Init();
  template <typename V>
  Status ReadMetrics(const Step& step, std::string_view* in, std::map<int, V>* out);
  // The required values an entry had.
  struct Present {
    bool data_file = false, path = false, format = false, count = false, size = false;
  };
  Status DecodeDataFile(std::string_view* in, DataFile* f, Present* present);
  // Overwrites `*out` with the entry at `*in`.
  Status Decode(std::string_view* in, ManifestEntry* out);
};

namespace {

// Steps for `record`: each field found by (names, id) gets its target; the rest are skipped.
struct Wanted {
  Target target;
  std::initializer_list<std::string_view> names;
  int field_id;
};

std::vector<Step> Compile(const AvroNode& record, std::initializer_list<Wanted> wanted, std::vector<int>* found) {
  std::vector<Step> steps(record.fields.size());
  for (size_t i = 0; i < record.fields.size(); ++i) {
    steps[i].type = record.fields[i].type.get();
    steps[i].name = &record.fields[i].name;
  }
  for (const Wanted& w : wanted) {
    const int i = FindField(record, w.names, w.field_id);
    found->push_back(i);
    if (i >= 0) steps[static_cast<size_t>(i)].target = w.target;
  }
  return steps;
}

}  // namespace

Status ManifestReader::Impl::Init() {
  const AvroNode& schema = *file->schema();
  SKADE_RETURN_IF_ERROR(RequireRecord(name, schema, "manifest entry"));
  std::vector<int> entry_found;
  entry_steps = Compile(schema,
                        {{Target::kStatus, {"status"}, 0},
                         {Target::kSnapshotId, {"snapshot_id"}, 1},
                         {Target::kSequenceNumber, {"sequence_number"}, 3},
                         {Target::kFileSequenceNumber, {"file_sequence_number"}, 4},
                         {Target::kDataFile, {"data_file"}, 2}},
                        &entry_found);
  const int status = entry_found[0], sequence_number = entry_found[2], data_file = entry_found[4];
  if (status < 0 || data_file < 0) return Status::Corruption(name + ": manifest entry schema lacks status/data_file");
  data_file_schema = UnwrapOptional(*schema.fields[static_cast<size_t>(data_file)].type);
  SKADE_RETURN_IF_ERROR(RequireRecord(name, *data_file_schema, "data_file"));
  const AvroNode& df = *data_file_schema;
  std::vector<int> df_found;
  data_file_steps = Compile(df,
                            {{Target::kContent, {"content"}, 134},
                             {Target::kFilePath, {"file_path"}, 100},
                             {Target::kFileFormat, {"file_format"}, 101},
                             {Target::kPartition, {"partition"}, 102},
                             {Target::kRecordCount, {"record_count"}, 103},
                             {Target::kFileSize, {"file_size_in_bytes"}, 104},
                             {Target::kColumnSizes, {"column_sizes"}, 108},
                             {Target::kValueCounts, {"value_counts"}, 109},
                             {Target::kNullValueCounts, {"null_value_counts"}, 110},
                             {Target::kNanValueCounts, {"nan_value_counts"}, 137},
                             {Target::kLowerBounds, {"lower_bounds"}, 125},
                             {Target::kUpperBounds, {"upper_bounds"}, 128},
                             {Target::kKeyMetadata, {"key_metadata"}, 131},
                             {Target::kSplitOffsets, {"split_offsets"}, 132},
                             {Target::kEqualityIds, {"equality_ids"}, 135},
                             {Target::kSortOrderId, {"sort_order_id"}, 140},
                             {Target::kFirstRowId, {"first_row_id"}, 142},
                             {Target::kReferencedDataFile, {"referenced_data_file"}, 143},
                             {Target::kContentOffset, {"content_offset"}, 144},
                             {Target::kContentSize, {"content_size_in_bytes"}, 145}},
                            &df_found);
  const int content = df_found[0], file_path = df_found[1], partition = df_found[3], record_count = df_found[4];
  for (Step& step : data_file_steps) {
    if (step.target < Target::kColumnSizes || step.target > Target::kUpperBounds) continue;
    step.map_layout = SimpleMapLayout(*step.type);
  }
  if (file_path < 0 || record_count < 0) {
    return Status::Corruption(name + ": data_file schema lacks file_path/record_count");
  }

  // Format version: the header key, else inferred from the layout (v1 has no sequence
  // numbers and no content column).
  if (auto v = ParseFormatVersion(file->Metadata("format-version"))) {
    format_version = *v;
  } else {
    format_version = (sequence_number >= 0 || content >= 0) ? 2 : 1;
  }

  std::vector<NestedField> fields;
  if (partition >= 0) {
    partition_schema = UnwrapOptional(*df.fields[static_cast<size_t>(partition)].type);
    SKADE_RETURN_IF_ERROR(RequireRecord(name, *partition_schema, "partition"));
    for (size_t i = 0; i < partition_schema->fields.size(); ++i) {
      const avro::AvroField& f = partition_schema->fields[i];
      auto type = PartitionFieldType(*UnwrapOptional(*f.type));
      if (!type.ok()) {
        return Status::Corruption(name + ": partition field '" + f.name + "': " + type.status().message());
      }
      NestedField nf;
      // v1 writers assigned partition field ids from 1000 when they were not tracked.
      nf.id = f.field_id.value_or(1000 + static_cast<int>(i));
      nf.name = f.name;
      nf.required = false;
      nf.type = std::move(type).value();
      fields.push_back(std::move(nf));
    }
  }
  partition_type = Type::Struct(std::move(fields));
  if (manifest.first_row_id && manifest.content == ManifestContent::kData) next_row_id = manifest.first_row_id;
  return Status::Ok();
}

template <typename V>
Status ManifestReader::Impl::ReadMetrics(const Step& step, std::string_view* in, std::map<int, V>* out) {
  if (step.map_layout) {
    const MapLayout& layout = *step.map_layout;
    std::string_view after_branch = *in;
    SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, &after_branch));
    if (b == nullptr || b == layout.array) {
      *in = after_branch;
      return b == nullptr ? Status::Ok() : ReadSimpleMap(layout, in, metrics, out);
    }
  }
  return ReadMetricMap(*step.type, in, metrics, out);
}

Status ManifestReader::Impl::DecodeDataFile(std::string_view* in, DataFile* f, Present* present) {
  for (const Step& step : data_file_steps) {
    auto run = [&]() -> Status {
      switch (step.target) {
        case Target::kSkip:
          return avro::SkipValue(*step.type, in);
        case Target::kContent: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int> code, ReadInt32(*step.type, in));
          if (code && (*code < 0 || *code > 2)) return Status::Corruption("unknown content type");
          f->content = static_cast<DataFileContent>(code.value_or(0));
          return Status::Ok();
        }
        case Target::kFilePath: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (v) f->file_path.assign(*v);
          present->path = v.has_value();
          return Status::Ok();
        }
        case Target::kFileFormat: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (!v) return Status::Ok();
          SKADE_ASSIGN_OR_RETURN(f->file_format, ParseFileFormat(*v));
          present->format = true;
          return Status::Ok();
        }
        case Target::kPartition: {
          SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, in));
          if (b == nullptr) return Status::Ok();
          if (b != partition_schema) return Status::Corruption("partition tuple does not match its schema");
          const auto& types = partition_type->fields();
          f->partition.reserve(types.size());
          for (size_t i = 0; i < types.size(); ++i) {
            SKADE_ASSIGN_OR_RETURN(avro::AvroValue value, avro::DecodeValue(*b->fields[i].type, in));
            auto lit = PartitionLiteral(types[i].type, value);
            if (!lit.ok()) return Status::Corruption(types[i].name + ": " + lit.status().message());
            f->partition.push_back(std::move(lit).value());
          }
          return Status::Ok();
        }
        case Target::kRecordCount: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(*step.type, in));
          f->record_count = v.value_or(0);
          present->count = v.has_value();
          return Status::Ok();
        }
        case Target::kFileSize: {
          SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, ReadInteger(*step.type, in));
          f->file_size_in_bytes = v.value_or(0);
          present->size = v.has_value();
          return Status::Ok();
        }
        case Target::kColumnSizes:
          return ReadMetrics(step, in, &f->column_sizes);
        case Target::kValueCounts:
          return ReadMetrics(step, in, &f->value_counts);
        case Target::kNullValueCounts:
          return ReadMetrics(step, in, &f->null_value_counts);
        case Target::kNanValueCounts:
          return ReadMetrics(step, in, &f->nan_value_counts);
        case Target::kLowerBounds:
          return ReadMetrics(step, in, &f->lower_bounds);
        case Target::kUpperBounds:
          return ReadMetrics(step, in, &f->upper_bounds);
        case Target::kKeyMetadata:
        case Target::kReferencedDataFile: {
          SKADE_ASSIGN_OR_RETURN(std::optional<std::string_view> v, ReadByteString(*step.type, in));
          if (v) (step.target == Target::kKeyMetadata ? f->key_metadata : f->referenced_data_file) = std::string(*v);
          return Status::Ok();
        }
        case Target::kSplitOffsets:
          if (!split_offsets) return avro::SkipValue(*step.type, in);
          return ReadIntegerList(*step.type, in, &f->split_offsets);
        case Target::kEqualityIds:
          return ReadIntegerList(*step.type, in, &f->equality_ids);
        case Target::kSortOrderId: {
          SKADE_ASSIGN_OR_RETURN(f->sort_order_id, ReadInt32(*step.type, in));
          return Status::Ok();
        }
        case Target::kFirstRowId: {
          SKADE_ASSIGN_OR_RETURN(f->first_row_id, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kContentOffset: {
          SKADE_ASSIGN_OR_RETURN(f->content_offset, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kContentSize: {
          SKADE_ASSIGN_OR_RETURN(f->content_size_in_bytes, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        default:
          return Status::Internal("manifest entry target in a data_file");
      }
    };
    Status st = run();
    if (!st.ok()) return step.target == Target::kSkip ? st : FieldError(step, st.message());
  }
  return Status::Ok();
}

Status ManifestReader::Impl::Decode(std::string_view* in, ManifestEntry* out) {
  ManifestEntry& entry = *out;
  entry = ManifestEntry();
  std::optional<int> status;
  Present present;
  for (const Step& step : entry_steps) {
    auto run = [&]() -> Status {
      switch (step.target) {
        case Target::kSkip:
          return avro::SkipValue(*step.type, in);
        case Target::kStatus: {
          SKADE_ASSIGN_OR_RETURN(status, ReadInt32(*step.type, in));
          return Status::Ok();
        }
        case Target::kSnapshotId: {
          SKADE_ASSIGN_OR_RETURN(entry.snapshot_id, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kSequenceNumber: {
          SKADE_ASSIGN_OR_RETURN(entry.sequence_number, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kFileSequenceNumber: {
          SKADE_ASSIGN_OR_RETURN(entry.file_sequence_number, ReadInteger(*step.type, in));
          return Status::Ok();
        }
        case Target::kDataFile: {
          SKADE_ASSIGN_OR_RETURN(const AvroNode* b, Branch(*step.type, in));
          if (b == nullptr) return Status::Ok();
          if (b != data_file_schema) return Status::Corruption("data_file is not a record");
          present.data_file = true;
          return DecodeDataFile(in, &entry.data_file, &present);
        }
        default:
          return Status::Internal("data_file target in a manifest entry");
      }
    };
    Status st = run();
    if (!st.ok()) {
      if (step.target == Target::kSkip || step.target == Target::kDataFile) return st;
      return FieldError(step, st.message());
    }
  }
  auto missing = [&](Target target, const char* what) {
    for (const auto* steps : {&entry_steps, &data_file_steps}) {
      for (const Step& s : *steps) {
        if (s.target == target) return FieldError(s, what);
      }
    }
    return Status::Corruption(what);
  };
  if (!status) return missing(Target::kStatus, "required value is missing");
  if (*status < 0 || *status > 2) return missing(Target::kStatus, "unknown entry status");
  if (!present.data_file) return missing(Target::kDataFile, "missing data_file");
  if (!present.path) return missing(Target::kFilePath, "required value is missing");
  if (!present.format) return missing(Target::kFileFormat, "required value is missing");
  if (!present.count) return missing(Target::kRecordCount, "required value is missing");
  if (!present.size) return missing(Target::kFileSize, "required value is missing");
  entry.status = static_cast<ManifestEntryStatus>(*status);
  entry.data_file.spec_id = manifest.partition_spec_id;

  // Spec "Sequence Number Inheritance" / "Snapshot ID Inheritance".
  if (!entry.snapshot_id) entry.snapshot_id = manifest.added_snapshot_id;
  if (format_version == 1) {
    entry.sequence_number = 0;
    entry.file_sequence_number = 0;
  } else {
    // A manifest listed with sequence number 0 was written before sequence numbers existed;
    // everything in it inherits 0.
    const bool inherit = entry.status == ManifestEntryStatus::kAdded || manifest.sequence_number == 0;
    if (!entry.sequence_number) {
      if (!inherit) return missing(Target::kSequenceNumber, "null sequence number on a non-ADDED entry");
      entry.sequence_number = manifest.sequence_number;
    }
    if (!entry.file_sequence_number) {
      if (!inherit) return missing(Target::kFileSequenceNumber, "null file sequence number on a non-ADDED entry");
      entry.file_sequence_number = manifest.sequence_number;
    }
  }
  // Spec "First Row ID Inheritance": null ids of live data files follow the manifest's
  // first_row_id (a manifest list reserves added + existing rows for them; DELETED entries
  // take none, or the live ones after them would pass the reserved range).
  DataFile& f = entry.data_file;
  if (next_row_id && f.content == DataFileContent::kData && !f.first_row_id &&
      entry.status != ManifestEntryStatus::kDeleted) {
    f.first_row_id = *next_row_id;
    *next_row_id += f.record_count;
  }
  return Status::Ok();
}

ManifestReader::ManifestReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ManifestReader::~ManifestReader() = default;

Result<std::unique_ptr<ManifestReader>> ManifestReader::Open(io::FileIO& io, std::string_view location,
                                                             const ManifestFile& manifest,
                                                             ManifestReadOptions options) {
  SKADE_ASSIGN_OR_RETURN(std::string data, io.Read(location));
  return FromBytes(std::move(data), std::string(location), manifest, std::move(options));
}

Result<std::unique_ptr<ManifestReader>> ManifestReader::FromBytes(std::string data, std::string name,
                                                                  const ManifestFile& manifest,
                                                                  ManifestReadOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->manifest = manifest;
  impl->metrics = IdFilter(options.metric_field_ids);
  impl->split_offsets = options.split_offsets;
  SKADE_ASSIGN_OR_RETURN(impl->file, avro::FileReader::Open(std::move(data), std::move(name)));
  SKADE_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<ManifestReader>(new ManifestReader(std::move(impl)));
}

std::optional<std::string> ManifestReader::Metadata(std::string_view key) const { return impl_->file->Metadata(key); }

int ManifestReader::format_version() const { return impl_->format_version; }

const TypePtr& ManifestReader::partition_type() const { return impl_->partition_type; }

Result<bool> ManifestReader::NextInto(ManifestEntry* entry) {
  Impl& r = *impl_;
  if (!r.failed.ok()) return r.failed;
  if (r.left == 0) {
    auto count = r.file->NextBlock(&r.cursor);
    if (!count.ok()) {
      r.failed = count.status();
      return r.failed;
    }
    if (*count == 0) return false;
    r.left = *count;
  }
  Status decoded = r.Decode(r.cursor, entry);
  if (!decoded.ok()) {
    r.failed = Status::Corruption(r.name + ": " + decoded.message());
    return r.failed;
  }
  --r.left;
  return true;
}

Result<std::optional<ManifestEntry>> ManifestReader::Next() {
  std::optional<ManifestEntry> entry(std::in_place);
  SKADE_ASSIGN_OR_RETURN(bool more, NextInto(&*entry));
  if (!more) entry.reset();
  return entry;
}

Status ForEachLiveEntry(io::FileIO& io, const ManifestFile& manifest,
                        const std::function<Status(ManifestEntry&)>& fn, const ManifestReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(io, manifest.manifest_path, manifest, options));
  ManifestEntry entry;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(bool more, reader->NextInto(&entry));
    if (!more) return Status::Ok();
    if (entry.status == ManifestEntryStatus::kDeleted) continue;
    SKADE_RETURN_IF_ERROR(fn(entry));
  }
}

}  // namespace skade::iceberg
