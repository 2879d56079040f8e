#include "skade/iceberg/manifest.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>

#include "skade/base/status.h"
#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest_internal.h"
#include "skade/iceberg/table_metadata.h"

// Iceberg table spec: "Manifests" (manifest_entry / data_file with their field ids),
// "Manifest Lists" (manifest_file / field_summary), "Sequence Number Inheritance",
// "First Row ID Inheritance" and Appendix A (Avro type mappings and field-id attributes).

namespace skade::iceberg {

using avro::AvroKind;
using avro::AvroNode;
using avro::AvroNodePtr;
using avro::AvroValue;
using Json = nlohmann::ordered_json;

namespace {

// Parses the 36-character textual form of a UUID into 16 bytes.
std::optional<std::string> ParseUuidText(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  std::string out;
  int high = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return std::nullopt;
      continue;
    }
    int nibble = (c >= '0' && c <= '9')   ? c - '0'
                 : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                 : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                          : -1;
    if (nibble < 0) return std::nullopt;
    if (high < 0) {
      high = nibble;
    } else {
      out.push_back(static_cast<char>((high << 4) | nibble));
      high = -1;
    }
  }
  return out;
}

// Big-endian two's-complement bytes → unscaled decimal.
std::optional<__int128> DecimalFromBytes(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > 16) return std::nullopt;
  unsigned __int128 v =
      (static_cast<uint8_t>(bytes[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : bytes) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<__int128>(v);
}

}  // namespace

namespace manifest_internal {

// Looks up a record field by any of `names`, then by field id. -1 when absent.
int FindField(const AvroNode& record, std::initializer_list<std::string_view> names, int field_id) {
  for (std::string_view name : names) {
    int i = record.FieldIndex(name);
    if (i >= 0) return i;
  }
  for (size_t i = 0; i < record.fields.size(); ++i) {
    if (record.fields[i].field_id == field_id) return static_cast<int>(i);
  }
  return -1;
}

// The node of a field with a ["null", T] union unwrapped to T.
const AvroNode* UnwrapOptional(const AvroNode& node) {
  if (node.kind != AvroKind::kUnion) return &node;
  int b = node.NonNullBranch();
  return b < 0 ? &node : node.branches[static_cast<size_t>(b)].get();
}

Status RequireRecord(const std::string& file, const AvroNode& node, std::string_view what) {
  if (node.kind != AvroKind::kRecord) {
    return Status::Corruption(file + ": " + std::string(what) + " schema is not a record");
  }
  return Status::Ok();
}

std::optional<int> ParseFormatVersion(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() > 3) return std::nullopt;
  int v = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The Iceberg type of a partition field from its Avro type (Appendix A, read direction).
Result<TypePtr> PartitionFieldType(const AvroNode& node) {
  const std::string& lt = node.logical_type;
  switch (node.kind) {
    case AvroKind::kBoolean:
      return Type::Primitive(TypeId::kBoolean);
    case AvroKind::kInt:
      return Type::Primitive(lt == "date" ? TypeId::kDate : TypeId::kInt);
    case AvroKind::kLong: {
      bool utc = node.adjust_to_utc.value_or(false);
      if (lt == "time-micros") return Type::Primitive(TypeId::kTime);
      if (lt == "timestamp-micros") {
        return Type::Primitive(utc ? TypeId::kTimestampTz : TypeId::kTimestamp);
      }
      if (lt == "timestamp-nanos") {
        return Type::Primitive(utc ? TypeId::kTimestampTzNs : TypeId::kTimestampNs);
      }
      return Type::Primitive(TypeId::kLong);
    }
    case AvroKind::kFloat:
      return Type::Primitive(TypeId::kFloat);
    case AvroKind::kDouble:
      return Type::Primitive(TypeId::kDouble);
    case AvroKind::kString:
      return Type::Primitive(lt == "uuid" ? TypeId::kUuid : TypeId::kString);
    case AvroKind::kBytes:
      if (lt == "decimal") return Type::Decimal(node.precision, node.scale);
      return Type::Primitive(TypeId::kBinary);
    case AvroKind::kFixed:
      if (lt == "decimal") return Type::Decimal(node.precision, node.scale);
      if (lt == "uuid" && node.size == 16) return Type::Primitive(TypeId::kUuid);
      return Type::Fixed(node.size);
    case AvroKind::kNull:
      return Type::Primitive(TypeId::kUnknown);
    default:
      return Status::Corruption("unsupported avro type for a partition field");
  }
}

// Decodes one partition value as a Literal of `type`.
Result<std::optional<Literal>> PartitionLiteral(const TypePtr& type, const AvroValue& value) {
  using Tag = AvroValue::Tag;
  if (value.is_null()) return std::optional<Literal>();
  auto bad = [&]() {
    return Status::Corruption("partition value does not match type " + type->ToString());
  };
  switch (type->id()) {
    case TypeId::kBoolean:
      if (value.tag != Tag::kBool) return bad();
      return std::optional<Literal>(Literal(type, value.bool_value));
    case TypeId::kInt:
    case TypeId::kDate:
      if (value.tag != Tag::kLong || value.long_value < std::numeric_limits<int32_t>::min() ||
          value.long_value > std::numeric_limits<int32_t>::max()) {
        return bad();
      }
      return std::optional<Literal>(Literal(type, static_cast<int32_t>(value.long_value)));
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      if (value.tag != Tag::kLong) return bad();
      return std::optional<Literal>(Literal(type, static_cast<int64_t>(value.long_value)));
    case TypeId::kFloat:
      if (value.tag == Tag::kFloat) return std::optional<Literal>(Literal(type, value.float_value));
      return bad();
    case TypeId::kDouble:
      if (value.tag == Tag::kDouble) {
        return std::optional<Literal>(Literal(type, value.double_value));
      }
      if (value.tag == Tag::kFloat) {
        return std::optional<Literal>(Literal(type, static_cast<double>(value.float_value)));
      }
      return bad();
    case TypeId::kDecimal: {
      if (value.tag != Tag::kBytes) return bad();
      auto unscaled = DecimalFromBytes(value.bytes);
      if (!unscaled) return bad();
      return std::optional<Literal>(Literal(type, *unscaled));
    }
    case TypeId::kUuid: {
      if (value.tag != Tag::kBytes) return bad();
      if (value.bytes.size() == 16) return std::optional<Literal>(Literal(type, value.bytes));
      auto raw = ParseUuidText(value.bytes);
      if (!raw) return bad();
      return std::optional<Literal>(Literal(type, std::move(*raw)));
    }
    case TypeId::kString:
    case TypeId::kFixed:
    case TypeId::kBinary:
      if (value.tag != Tag::kBytes) return bad();
      return std::optional<Literal>(Literal(type, value.bytes));
    case TypeId::kUnknown:
      return std::optional<Literal>();
    default:
      return bad();
  }
}

Result<FileFormat> ParseFileFormat(std::string_view text) {
  auto is = [&](std::string_view name) {
    return text.size() == name.size() && std::equal(text.begin(), text.end(), name.begin(), [](char a, char b) {
             return std::toupper(static_cast<unsigned char>(a)) == b;
           });
  };
  if (is("PARQUET")) return FileFormat::kParquet;
  if (is("AVRO")) return FileFormat::kAvro;
  if (is("ORC")) return FileFormat::kOrc;
  if (is("PUFFIN")) return FileFormat::kPuffin;
  return Status::Corruption("unknown file format '" + std::string(text) + "'");
}

}  // namespace manifest_internal

using namespace manifest_internal;  // NOLINT: the helpers shared with manifest_reader.cc

namespace {

// A manifest-list row whose sequence number is not known yet (a manifest written before the
// commit). WriteManifestList replaces it with the snapshot's sequence number.
constexpr int64_t kUnassignedSequenceNumber = -1;
// v1 data_file.block_size_in_bytes is deprecated but required; the spec says to always write
// a default (64 MiB, the value the reference implementation writes).
constexpr int64_t kDefaultBlockSize = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Reading helpers (manifest lists)

// Reads fields out of a decoded record, producing kCorruption naming the file and field.
class RecordView {
 public:
  RecordView(const std::string* file, const AvroNode* schema, const AvroValue* value)
      : file_(file), schema_(schema), value_(value) {}

  const AvroValue* Get(int index) const {
    if (index < 0 || static_cast<size_t>(index) >= value_->items.size()) return nullptr;
    const AvroValue* v = &value_->items[static_cast<size_t>(index)];
    return v->is_null() ? nullptr : v;
  }
  std::string FieldName(int index) const {
    return index < 0 ? std::string("?") : schema_->fields[static_cast<size_t>(index)].name;
  }
  Status Bad(int index, std::string_view what) const {
    return Status::Corruption(*file_ + ": field '" + FieldName(index) + "': " + std::string(what));
  }

  Result<std::optional<int64_t>> OptLong(int index) const {
    const AvroValue* v = Get(index);
    if (v == nullptr) return std::optional<int64_t>();
    if (v->tag != AvroValue::Tag::kLong) return Bad(index, "expected an integer");
    return std::optional<int64_t>(v->long_value);
  }
  Result<std::optional<int>> OptInt(int index) const {
    SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptLong(index));
    if (!v) return std::optional<int>();
    if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
      return Bad(index, "value out of int range");
    }
    return std::optional<int>(static_cast<int>(*v));
  }
  Result<int64_t> ReqLong(int index) const {
    SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptLong(index));
    if (!v) return Bad(index, "required value is missing");
    return *v;
  }
  Result<int> ReqInt(int index) const {
    SKADE_ASSIGN_OR_RETURN(std::optional<int> v, OptInt(index));
    if (!v) return Bad(index, "required value is missing");
    return *v;
  }
  Result<std::optional<std::string>> OptBytes(int index) const {
    const AvroValue* v = Get(index);
    if (v == nullptr) return std::optional<std::string>();
    if (v->tag != AvroValue::Tag::kBytes) return Bad(index, "expected bytes");
    return std::optional<std::string>(v->bytes);
  }
  Result<std::string> ReqBytes(int index) const {
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> v, OptBytes(index));
    if (!v) return Bad(index, "required value is missing");
    return std::move(*v);
  }
  Result<std::optional<bool>> OptBool(int index) const {
    const AvroValue* v = Get(index);
    if (v == nullptr) return std::optional<bool>();
    if (v->tag != AvroValue::Tag::kBool) return Bad(index, "expected a boolean");
    return std::optional<bool>(v->bool_value);
  }
  // A map<int, long|bytes> stored as an array of {key, value} records (logicalType "map"), or
  // as an Avro map with decimal string keys.
  template <typename V>
  Status IntKeyedMap(int index, std::map<int, V>* out) const {
    const AvroValue* v = Get(index);
    if (v == nullptr) return Status::Ok();
    auto store = [&](int64_t key, const AvroValue& value) -> Status {
      if (key < std::numeric_limits<int>::min() || key > std::numeric_limits<int>::max()) {
        return Bad(index, "map key out of int range");
      }
      if constexpr (std::is_same_v<V, int64_t>) {
        if (value.tag != AvroValue::Tag::kLong) return Bad(index, "map value is not a long");
        (*out)[static_cast<int>(key)] = value.long_value;
      } else {
        if (value.tag != AvroValue::Tag::kBytes) return Bad(index, "map value is not bytes");
        (*out)[static_cast<int>(key)] = value.bytes;
      }
      return Status::Ok();
    };
    if (v->tag == AvroValue::Tag::kList) {
      for (const AvroValue& kv : v->items) {
        if (kv.tag != AvroValue::Tag::kList || kv.items.size() != 2 ||
            kv.items[0].tag != AvroValue::Tag::kLong) {
          return Bad(index, "map entries must be {key: int, value} records");
        }
        SKADE_RETURN_IF_ERROR(store(kv.items[0].long_value, kv.items[1]));
      }
      return Status::Ok();
    }
    if (v->tag == AvroValue::Tag::kMap) {
      for (const auto& [key, value] : v->entries) {
        char* end = nullptr;
        long long k = std::strtoll(key.c_str(), &end, 10);
        if (key.empty() || end != key.c_str() + key.size())
          return Bad(index, "non-numeric map key");
        SKADE_RETURN_IF_ERROR(store(k, value));
      }
      return Status::Ok();
    }
    return Bad(index, "expected a map");
  }
  template <typename T>
  Status IntList(int index, std::vector<T>* out) const {
    const AvroValue* v = Get(index);
    if (v == nullptr) return Status::Ok();
    if (v->tag != AvroValue::Tag::kList) return Bad(index, "expected a list");
    for (const AvroValue& item : v->items) {
      if (item.tag != AvroValue::Tag::kLong) return Bad(index, "list element is not an integer");
      if (item.long_value < std::numeric_limits<T>::min() ||
          item.long_value > std::numeric_limits<T>::max()) {
        return Bad(index, "list element out of range");
      }
      out->push_back(static_cast<T>(item.long_value));
    }
    return Status::Ok();
  }

 private:
  const std::string* file_;
  const AvroNode* schema_;
  const AvroValue* value_;
};








// ---------------------------------------------------------------------------------------------
// Writing helpers

// Minimum bytes of a two's-complement integer able to hold any decimal of `precision` digits.
int DecimalBytes(int precision) {
  unsigned __int128 limit = 1;
  for (int i = 0; i < precision && i < 38; ++i) limit *= 10;
  for (int n = 1; n < 16; ++n) {
    unsigned __int128 max_positive = (static_cast<unsigned __int128>(1) << (8 * n - 1));
    if (limit <= max_positive) return n;
  }
  return 16;
}

std::string DecimalToFixed(__int128 unscaled, int size) {
  std::string out(static_cast<size_t>(size), '\0');
  unsigned __int128 v = static_cast<unsigned __int128>(unscaled);
  for (int i = size - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint8_t>(v & 0xff));
    v >>= 8;
  }
  return out;
}

// Avro names must match [A-Za-z_][A-Za-z0-9_]*; other characters are escaped as _xHH.
std::string AvroName(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (letter || (digit && i > 0)) {
      out.push_back(static_cast<char>(c));
    } else if (digit) {
      out.push_back('_');
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789ABCDEF";
      out += "_x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out.empty()) out = "_";
  return out;
}

// The Avro type of an Iceberg primitive partition type (Appendix A, write direction).
// `unique` names fixed types so that two fields never define the same name twice.
Result<Json> AvroTypeFor(const Type& type, const std::string& unique) {
  switch (type.id()) {
    case TypeId::kBoolean:
      return Json("boolean");
    case TypeId::kInt:
      return Json("int");
    case TypeId::kLong:
      return Json("long");
    case TypeId::kFloat:
      return Json("float");
    case TypeId::kDouble:
      return Json("double");
    case TypeId::kString:
      return Json("string");
    case TypeId::kBinary:
      return Json("bytes");
    case TypeId::kDate:
      return Json{{"type", "int"}, {"logicalType", "date"}};
    case TypeId::kTime:
      return Json{{"type", "long"}, {"logicalType", "time-micros"}};
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
      return Json{{"type", "long"},
                  {"logicalType", "timestamp-micros"},
                  {"adjust-to-utc", type.id() == TypeId::kTimestampTz}};
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return Json{{"type", "long"},
                  {"logicalType", "timestamp-nanos"},
                  {"adjust-to-utc", type.id() == TypeId::kTimestampTzNs}};
    case TypeId::kUuid:
      return Json{
          {"type", "fixed"}, {"name", "uuid_" + unique}, {"size", 16}, {"logicalType", "uuid"}};
    case TypeId::kFixed:
      return Json{{"type", "fixed"}, {"name", "fixed_" + unique}, {"size", type.length()}};
    case TypeId::kDecimal:
      return Json{{"type", "fixed"},
                  {"name", "decimal_" + unique},
                  {"size", DecimalBytes(type.precision())},
                  {"logicalType", "decimal"},
                  {"precision", type.precision()},
                  {"scale", type.scale()}};
    default:
      return Status::NotImplemented("partition type " + type.ToString() +
                                    " cannot be written to a manifest");
  }
}

Result<AvroValue> PartitionAvroValue(const Type& type, const std::optional<Literal>& literal) {
  if (!literal) return AvroValue::Null();
  const Literal& v = *literal;
  // The day transform's result is days from 1970-01-01: the spec types it int, Java and
  // PyIceberg write it as Avro int with logicalType date. Both are the same value, so a
  // manifest written either way is rewritten as the spec being written says.
  const auto days = [](TypeId id) { return id == TypeId::kInt || id == TypeId::kDate; };
  if (v.type_id() != type.id() && !(days(v.type_id()) && days(type.id()))) {
    return Status::InvalidArgument("partition value of type " + v.type()->ToString() +
                                   " for a field of type " + type.ToString());
  }
  switch (type.id()) {
    case TypeId::kBoolean:
      return AvroValue::Bool(v.as_bool());
    case TypeId::kInt:
    case TypeId::kDate:
      return AvroValue::Long(v.as_int());
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return AvroValue::Long(v.as_long());
    case TypeId::kFloat:
      return AvroValue::Float(v.as_float());
    case TypeId::kDouble:
      return AvroValue::Double(v.as_double());
    case TypeId::kDecimal:
      return AvroValue::Bytes(DecimalToFixed(v.as_decimal(), DecimalBytes(type.precision())));
    case TypeId::kString:
    case TypeId::kUuid:
    case TypeId::kFixed:
    case TypeId::kBinary:
      return AvroValue::Bytes(v.as_bytes());
    default:
      return Status::NotImplemented("partition type " + type.ToString() +
                                    " cannot be written to a manifest");
  }
}

Json Optional(Json type) { return Json::array({"null", std::move(type)}); }

Json Field(std::string name, Json type, int field_id, bool optional) {
  Json f;
  f["name"] = std::move(name);
  if (optional) {
    f["type"] = Optional(std::move(type));
    f["default"] = nullptr;
  } else {
    f["type"] = std::move(type);
  }
  f["field-id"] = field_id;
  return f;
}

// map<int, long|bytes> as an array of key/value records with logical type "map".
Json IntMapType(int key_id, int value_id, const char* value_type) {
  Json record;
  record["type"] = "record";
  record["name"] = "k" + std::to_string(key_id) + "_v" + std::to_string(value_id);
  record["fields"] = Json::array(
      {Field("key", "int", key_id, false), Field("value", value_type, value_id, false)});
  Json array;
  array["type"] = "array";
  array["items"] = std::move(record);
  array["logicalType"] = "map";
  return array;
}

Json ListType(const char* element, int element_id) {
  Json array;
  array["type"] = "array";
  array["items"] = element;
  array["element-id"] = element_id;
  return array;
}

template <typename V>
AvroValue IntMapValue(const std::map<int, V>& map) {
  if (map.empty()) return AvroValue::Null();
  std::vector<AvroValue> items;
  items.reserve(map.size());
  for (const auto& [key, value] : map) {
    AvroValue v;
    if constexpr (std::is_same_v<V, int64_t>) {
      v = AvroValue::Long(value);
    } else {
      v = AvroValue::Bytes(value);
    }
    items.push_back(AvroValue::List({AvroValue::Long(key), std::move(v)}));
  }
  return AvroValue::List(std::move(items));
}

template <typename T>
AvroValue OptLongValue(const std::optional<T>& v) {
  return v ? AvroValue::Long(static_cast<int64_t>(*v)) : AvroValue::Null();
}

AvroValue OptBytesValue(const std::optional<std::string>& v) {
  return v ? AvroValue::Bytes(*v) : AvroValue::Null();
}

template <typename T>
AvroValue LongListValue(const std::vector<T>& v, bool empty_as_null) {
  if (v.empty() && empty_as_null) return AvroValue::Null();
  std::vector<AvroValue> items;
  for (T x : v) items.push_back(AvroValue::Long(static_cast<int64_t>(x)));
  return AvroValue::List(std::move(items));
}

// Builds a record value from named field values in the order of a record schema; absent
// names become null.
class RecordBuilder {
 public:
  void Set(const std::string& name, AvroValue value) { values_[name] = std::move(value); }
  AvroValue Build(const Json& record_schema) {
    std::vector<AvroValue> items;
    for (const Json& f : record_schema["fields"]) {
      auto it = values_.find(f["name"].get<std::string>());
      items.push_back(it == values_.end() ? AvroValue::Null() : std::move(it->second));
    }
    return AvroValue::List(std::move(items));
  }

 private:
  std::map<std::string, AvroValue> values_;
};

std::string PartitionSpecFieldsJson(const PartitionSpec& spec) {
  Json fields = Json::array();
  for (const PartitionField& f : spec.fields()) {
    Json j;
    j["name"] = f.name;
    j["transform"] = f.transform.ToString();
    if (f.source_ids.empty()) {
      j["source-id"] = f.source_id;
    } else {
      j["source-ids"] = f.source_ids;
    }
    j["field-id"] = f.field_id;
    fields.push_back(std::move(j));
  }
  return fields.dump();
}

}  // namespace

std::string_view FileFormatName(FileFormat format) {
  switch (format) {
    case FileFormat::kParquet:
      return "PARQUET";
    case FileFormat::kAvro:
      return "AVRO";
    case FileFormat::kOrc:
      return "ORC";
    case FileFormat::kPuffin:
      return "PUFFIN";
  }
  return "PARQUET";
}

// ---------------------------------------------------------------------------------------------
// Manifest lists

Result<std::vector<ManifestFile>> ReadManifestList(io::FileIO& io, std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(std::string data, io.Read(location));
  return ParseManifestList(std::move(data), location);
}

Result<std::vector<ManifestFile>> ParseManifestList(std::string data, std::string_view name) {
  const std::string file(name);
  SKADE_ASSIGN_OR_RETURN(auto reader, avro::FileReader::Open(std::move(data), file));
  const AvroNode& schema = *reader->schema();
  SKADE_RETURN_IF_ERROR(RequireRecord(file, schema, "manifest list"));

  // Field lookups by name; Iceberg 1.4 named the counts added_data_files_count etc.
  const int path = FindField(schema, {"manifest_path"}, 500);
  const int length = FindField(schema, {"manifest_length"}, 501);
  const int spec_id = FindField(schema, {"partition_spec_id"}, 502);
  const int content = FindField(schema, {"content"}, 517);
  const int seq = FindField(schema, {"sequence_number"}, 515);
  const int min_seq = FindField(schema, {"min_sequence_number"}, 516);
  const int snapshot = FindField(schema, {"added_snapshot_id"}, 503);
  const int added_files = FindField(schema, {"added_files_count", "added_data_files_count"}, 504);
  const int existing_files =
      FindField(schema, {"existing_files_count", "existing_data_files_count"}, 505);
  const int deleted_files =
      FindField(schema, {"deleted_files_count", "deleted_data_files_count"}, 506);
  const int added_rows = FindField(schema, {"added_rows_count"}, 512);
  const int existing_rows = FindField(schema, {"existing_rows_count"}, 513);
  const int deleted_rows = FindField(schema, {"deleted_rows_count"}, 514);
  const int partitions = FindField(schema, {"partitions"}, 507);
  const int key_metadata = FindField(schema, {"key_metadata"}, 519);
  const int first_row_id = FindField(schema, {"first_row_id"}, 520);
  if (path < 0 || length < 0) {
    return Status::Corruption(file + ": manifest list schema lacks manifest_path/manifest_length");
  }
  // Field summary layout.
  int contains_null = -1, contains_nan = -1, lower = -1, upper = -1;
  const AvroNode* summary_schema = nullptr;
  if (partitions >= 0) {
    const AvroNode* list = UnwrapOptional(*schema.fields[static_cast<size_t>(partitions)].type);
    if (list->kind != AvroKind::kArray || list->items->kind != AvroKind::kRecord) {
      return Status::Corruption(file + ": manifest list 'partitions' is not a list of records");
    }
    summary_schema = list->items.get();
    contains_null = FindField(*summary_schema, {"contains_null"}, 509);
    contains_nan = FindField(*summary_schema, {"contains_nan"}, 518);
    lower = FindField(*summary_schema, {"lower_bound"}, 510);
    upper = FindField(*summary_schema, {"upper_bound"}, 511);
  }

  std::vector<ManifestFile> out;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(std::optional<AvroValue> row, reader->Next());
    if (!row) break;
    RecordView r(&file, &schema, &*row);
    ManifestFile m;
    SKADE_ASSIGN_OR_RETURN(m.manifest_path, r.ReqBytes(path));
    SKADE_ASSIGN_OR_RETURN(m.manifest_length, r.ReqLong(length));
    SKADE_ASSIGN_OR_RETURN(std::optional<int> spec, r.OptInt(spec_id));
    m.partition_spec_id = spec.value_or(0);
    // v1 lists have no content or sequence numbers: data, 0, 0 (spec "Manifest Lists").
    SKADE_ASSIGN_OR_RETURN(std::optional<int> c, r.OptInt(content));
    if (c && *c != 0 && *c != 1) return r.Bad(content, "unknown manifest content");
    m.content = static_cast<ManifestContent>(c.value_or(0));
    SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptLong(seq));
    m.sequence_number = s.value_or(0);
    SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> ms, r.OptLong(min_seq));
    m.min_sequence_number = ms.value_or(0);
    SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> snap, r.OptLong(snapshot));
    m.added_snapshot_id = snap.value_or(0);
    SKADE_ASSIGN_OR_RETURN(m.added_files_count, r.OptInt(added_files));
    SKADE_ASSIGN_OR_RETURN(m.existing_files_count, r.OptInt(existing_files));
    SKADE_ASSIGN_OR_RETURN(m.deleted_files_count, r.OptInt(deleted_files));
    SKADE_ASSIGN_OR_RETURN(m.added_rows_count, r.OptLong(added_rows));
    SKADE_ASSIGN_OR_RETURN(m.existing_rows_count, r.OptLong(existing_rows));
    SKADE_ASSIGN_OR_RETURN(m.deleted_rows_count, r.OptLong(deleted_rows));
    SKADE_ASSIGN_OR_RETURN(m.key_metadata, r.OptBytes(key_metadata));
    SKADE_ASSIGN_OR_RETURN(m.first_row_id, r.OptLong(first_row_id));
    if (const AvroValue* list = r.Get(partitions)) {
      for (const AvroValue& item : list->items) {
        RecordView sv(&file, summary_schema, &item);
        FieldSummary fs;
        SKADE_ASSIGN_OR_RETURN(std::optional<bool> cn, sv.OptBool(contains_null));
        fs.contains_null = cn.value_or(false);
        SKADE_ASSIGN_OR_RETURN(fs.contains_nan, sv.OptBool(contains_nan));
        SKADE_ASSIGN_OR_RETURN(fs.lower_bound, sv.OptBytes(lower));
        SKADE_ASSIGN_OR_RETURN(fs.upper_bound, sv.OptBytes(upper));
        m.partitions.push_back(std::move(fs));
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<int64_t> AssignFirstRowIds(std::vector<ManifestFile>& manifests, int64_t next_row_id) {
  int64_t assigned = 0;
  for (ManifestFile& m : manifests) {
    if (m.content != ManifestContent::kData || m.first_row_id) continue;
    if (!m.added_rows_count || !m.existing_rows_count) {
      return Status::InvalidArgument("data manifest '" + m.manifest_path + "' has no row counts to assign row ids by");
    }
    m.first_row_id = next_row_id + assigned;
    assigned += *m.added_rows_count + *m.existing_rows_count;
  }
  return assigned;
}

namespace {

// The manifest list's Avro schema in `format_version`, field layout from the spec's "Manifest
// Lists" tables.
Json ManifestListSchema(int format_version) {
  const bool v1 = format_version == 1;
  Json summary;
  summary["type"] = "record";
  summary["name"] = "r508";
  summary["fields"] = Json::array(
      {Field("contains_null", "boolean", 509, false), Field("contains_nan", "boolean", 518, true),
       Field("lower_bound", "bytes", 510, true), Field("upper_bound", "bytes", 511, true)});
  Json partitions_type;
  partitions_type["type"] = "array";
  partitions_type["items"] = summary;
  partitions_type["element-id"] = 508;

  Json fields = Json::array();
  fields.push_back(Field("manifest_path", "string", 500, false));
  fields.push_back(Field("manifest_length", "long", 501, false));
  fields.push_back(Field("partition_spec_id", "int", 502, false));
  if (!v1) {
    fields.push_back(Field("content", "int", 517, false));
    fields.push_back(Field("sequence_number", "long", 515, false));
    fields.push_back(Field("min_sequence_number", "long", 516, false));
  }
  fields.push_back(Field("added_snapshot_id", "long", 503, false));
  fields.push_back(Field("added_files_count", "int", 504, v1));
  fields.push_back(Field("existing_files_count", "int", 505, v1));
  fields.push_back(Field("deleted_files_count", "int", 506, v1));
  fields.push_back(Field("added_rows_count", "long", 512, v1));
  fields.push_back(Field("existing_rows_count", "long", 513, v1));
  fields.push_back(Field("deleted_rows_count", "long", 514, v1));
  fields.push_back(Field("partitions", partitions_type, 507, true));
  fields.push_back(Field("key_metadata", "bytes", 519, true));
  if (format_version >= 3) fields.push_back(Field("first_row_id", "long", 520, true));
  Json schema;
  schema["type"] = "record";
  schema["name"] = "manifest_file";
  schema["fields"] = fields;
  return schema;
}

}  // namespace

Result<std::string> WriteManifestList(int format_version, int64_t snapshot_id,
                                      std::optional<int64_t> parent_snapshot_id,
                                      int64_t sequence_number,
                                      const std::vector<ManifestFile>& manifests) {
  if (format_version < 1 || format_version > 3) {
    return Status::NotImplemented("manifest list format version " + std::to_string(format_version));
  }
  const bool v1 = format_version == 1;
  // The schema text of each version, built once (a list is written for every commit).
  static const std::array<std::string, 4> kSchemas = [] {
    std::array<std::string, 4> out;
    for (int v = 1; v <= 3; ++v) out[static_cast<size_t>(v)] = ManifestListSchema(v).dump();
    return out;
  }();

  std::vector<std::pair<std::string, std::string>> metadata;
  metadata.emplace_back("snapshot-id", std::to_string(snapshot_id));
  metadata.emplace_back("parent-snapshot-id",
                        parent_snapshot_id ? std::to_string(*parent_snapshot_id) : "null");
  if (!v1) metadata.emplace_back("sequence-number", std::to_string(sequence_number));
  metadata.emplace_back("format-version", std::to_string(format_version));
  SKADE_ASSIGN_OR_RETURN(auto writer, avro::FileWriter::Create(kSchemas[static_cast<size_t>(format_version)],
                                                               std::move(metadata), avro::Codec::kDeflate));
  for (const ManifestFile& m : manifests) {
    // The record's fields in the schema's order.
    std::vector<AvroValue> f;
    f.reserve(18);
    f.push_back(AvroValue::Bytes(m.manifest_path));
    f.push_back(AvroValue::Long(m.manifest_length));
    f.push_back(AvroValue::Long(m.partition_spec_id));
    if (!v1) {
      // New manifests carry an unassigned sequence number until the list is written
      // (spec "Sequence Number Inheritance").
      int64_t seq =
          m.sequence_number == kUnassignedSequenceNumber ? sequence_number : m.sequence_number;
      int64_t min_seq = m.min_sequence_number == kUnassignedSequenceNumber ? sequence_number
                                                                           : m.min_sequence_number;
      if (!m.added_files_count || !m.existing_files_count || !m.deleted_files_count ||
          !m.added_rows_count || !m.existing_rows_count || !m.deleted_rows_count) {
        return Status::InvalidArgument("manifest " + m.manifest_path +
                                       ": file and row counts are required in v" +
                                       std::to_string(format_version));
      }
      f.push_back(AvroValue::Long(static_cast<int64_t>(m.content)));
      f.push_back(AvroValue::Long(seq));
      f.push_back(AvroValue::Long(min_seq));
    } else if (m.content != ManifestContent::kData) {
      return Status::InvalidArgument("v1 manifest lists cannot hold delete manifests");
    }
    f.push_back(AvroValue::Long(m.added_snapshot_id));
    f.push_back(OptLongValue(m.added_files_count));
    f.push_back(OptLongValue(m.existing_files_count));
    f.push_back(OptLongValue(m.deleted_files_count));
    f.push_back(OptLongValue(m.added_rows_count));
    f.push_back(OptLongValue(m.existing_rows_count));
    f.push_back(OptLongValue(m.deleted_rows_count));
    std::vector<AvroValue> summaries;
    summaries.reserve(m.partitions.size());
    for (const FieldSummary& fs : m.partitions) {
      summaries.push_back(AvroValue::List({AvroValue::Bool(fs.contains_null),
                                           fs.contains_nan ? AvroValue::Bool(*fs.contains_nan) : AvroValue(),
                                           OptBytesValue(fs.lower_bound), OptBytesValue(fs.upper_bound)}));
    }
    f.push_back(AvroValue::List(std::move(summaries)));
    f.push_back(OptBytesValue(m.key_metadata));
    if (format_version >= 3) f.push_back(OptLongValue(m.first_row_id));
    SKADE_RETURN_IF_ERROR(writer->Append(AvroValue::List(std::move(f))).WithContext("manifest list"));
  }
  return writer->Finish();
}

// ---------------------------------------------------------------------------------------------
// ManifestWriter

namespace {

// Running per-partition-field summary (spec "Manifest Lists", field_summary).
struct SummaryAccumulator {
  bool contains_null = false;
  bool contains_nan = false;
  std::optional<Literal> lower;
  std::optional<Literal> upper;

  void Update(const std::optional<Literal>& v) {
    if (!v) {
      contains_null = true;
      return;
    }
    if (v->IsNaN()) {
      contains_nan = true;
      return;
    }
    if (!lower || CompareLiterals(*v, *lower) < 0) lower = *v;
    if (!upper || CompareLiterals(*v, *upper) > 0) upper = *v;
  }
  FieldSummary ToSummary() const {
    FieldSummary s;
    s.contains_null = contains_null;
    s.contains_nan = contains_nan;
    if (lower) s.lower_bound = lower->ToBinary();
    if (upper) s.upper_bound = upper->ToBinary();
    return s;
  }
};

}  // namespace

namespace {

// The Avro schemas of a manifest's entries, their data_file and partition records.
struct EntrySchemas {
  Json entry;
  Json data_file;
  Json partition;
  std::string entry_text;  // entry, as written into the file header
};

}  // namespace

struct ManifestWriter::Impl {
  SchemaPtr schema;
  PartitionSpecPtr spec;
  ManifestWriterOptions options;
  TypePtr partition_type;
  std::shared_ptr<const EntrySchemas> schemas;
  std::unique_ptr<avro::FileWriter> file;
  std::vector<SummaryAccumulator> summaries;
  int added_files = 0, existing_files = 0, deleted_files = 0;
  int64_t added_rows = 0, existing_rows = 0, deleted_rows = 0;
  std::optional<int64_t> min_explicit_sequence_number;
  bool finished = false;
};

namespace {

Result<std::shared_ptr<const EntrySchemas>> BuildEntrySchemas(int v, const Type& partition_type) {
  auto out = std::make_shared<EntrySchemas>();
  Json& partition_schema = out->partition;
  Json& data_file_schema = out->data_file;
  Json& entry_schema = out->entry;
  partition_schema["type"] = "record";
  partition_schema["name"] = "r102";
  Json pfields = Json::array();
  for (const NestedField& pf : partition_type.fields()) {
    SKADE_ASSIGN_OR_RETURN(Json t, AvroTypeFor(*pf.type, std::to_string(pf.id)));
    pfields.push_back(Field(AvroName(pf.name), std::move(t), pf.id, true));
  }
  partition_schema["fields"] = std::move(pfields);

  // data_file per the spec's "Manifests" tables for v1 / v2 (v3 adds row lineage and DVs).
  Json df = Json::array();
  if (v >= 2) df.push_back(Field("content", "int", 134, false));
  df.push_back(Field("file_path", "string", 100, false));
  df.push_back(Field("file_format", "string", 101, false));
  df.push_back(Field("partition", partition_schema, 102, false));
  df.push_back(Field("record_count", "long", 103, false));
  df.push_back(Field("file_size_in_bytes", "long", 104, false));
  if (v == 1) df.push_back(Field("block_size_in_bytes", "long", 105, false));
  df.push_back(Field("column_sizes", IntMapType(117, 118, "long"), 108, true));
  df.push_back(Field("value_counts", IntMapType(119, 120, "long"), 109, true));
  df.push_back(Field("null_value_counts", IntMapType(121, 122, "long"), 110, true));
  df.push_back(Field("nan_value_counts", IntMapType(138, 139, "long"), 137, true));
  df.push_back(Field("lower_bounds", IntMapType(126, 127, "bytes"), 125, true));
  df.push_back(Field("upper_bounds", IntMapType(129, 130, "bytes"), 128, true));
  df.push_back(Field("key_metadata", "bytes", 131, true));
  df.push_back(Field("split_offsets", ListType("long", 133), 132, true));
  if (v >= 2) df.push_back(Field("equality_ids", ListType("int", 136), 135, true));
  df.push_back(Field("sort_order_id", "int", 140, true));
  if (v >= 3) df.push_back(Field("first_row_id", "long", 142, true));
  if (v >= 2) df.push_back(Field("referenced_data_file", "string", 143, true));
  if (v >= 3) {
    df.push_back(Field("content_offset", "long", 144, true));
    df.push_back(Field("content_size_in_bytes", "long", 145, true));
  }
  data_file_schema["type"] = "record";
  data_file_schema["name"] = "r2";
  data_file_schema["fields"] = std::move(df);

  Json fields = Json::array();
  fields.push_back(Field("status", "int", 0, false));
  // v1 declares snapshot_id required; v2 makes it optional (inherited when null).
  fields.push_back(Field("snapshot_id", "long", 1, v >= 2));
  if (v >= 2) {
    fields.push_back(Field("sequence_number", "long", 3, true));
    fields.push_back(Field("file_sequence_number", "long", 4, true));
  }
  fields.push_back(Field("data_file", data_file_schema, 2, false));
  entry_schema["type"] = "record";
  entry_schema["name"] = "manifest_entry";
  entry_schema["fields"] = std::move(fields);
  out->entry_text = entry_schema.dump();
  return std::shared_ptr<const EntrySchemas>(std::move(out));
}

// The entry schemas by format version and partition type, built once each: a table writes its
// manifests with a handful of them, and building one cost as much as a small manifest. Bounded:
// cleared when full.
Result<std::shared_ptr<const EntrySchemas>> EntrySchemasFor(int v, const Type& partition_type) {
  constexpr size_t kEntries = 64;
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const EntrySchemas>> cache;
  const std::string key = std::to_string(v) + "|" + partition_type.ToString();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<const EntrySchemas> built, BuildEntrySchemas(v, partition_type));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kEntries) cache.clear();
  cache.emplace(key, built);
  return built;
}

}  // namespace

ManifestWriter::ManifestWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ManifestWriter::~ManifestWriter() = default;

Result<std::unique_ptr<ManifestWriter>> ManifestWriter::Create(SchemaPtr schema,
                                                               PartitionSpecPtr spec,
                                                               ManifestWriterOptions options) {
  if (schema == nullptr || spec == nullptr) {
    return Status::InvalidArgument("manifest writer needs a schema and a partition spec");
  }
  if (options.format_version < 1 || options.format_version > 3) {
    return Status::NotImplemented("manifest format version " +
                                  std::to_string(options.format_version));
  }
  if (options.format_version == 1 && options.content != ManifestContent::kData) {
    return Status::InvalidArgument("v1 manifests can only hold data files");
  }
  auto impl = std::make_unique<Impl>();
  impl->schema = std::move(schema);
  impl->spec = std::move(spec);
  impl->options = options;
  SKADE_ASSIGN_OR_RETURN(impl->partition_type, impl->spec->PartitionType(*impl->schema));
  SKADE_ASSIGN_OR_RETURN(impl->schemas, EntrySchemasFor(options.format_version, *impl->partition_type));
  impl->summaries.resize(impl->partition_type->fields().size());

  // Manifest metadata keys (spec "Manifests").
  const int v = options.format_version;
  std::vector<std::pair<std::string, std::string>> metadata;
  metadata.emplace_back("schema", SchemaToJson(*impl->schema));
  metadata.emplace_back("schema-id", std::to_string(impl->schema->schema_id()));
  metadata.emplace_back("partition-spec", PartitionSpecFieldsJson(*impl->spec));
  metadata.emplace_back("partition-spec-id", std::to_string(impl->spec->spec_id()));
  metadata.emplace_back("format-version", std::to_string(v));
  if (v >= 2) {
    metadata.emplace_back("content",
                          options.content == ManifestContent::kData ? "data" : "deletes");
  }
  SKADE_ASSIGN_OR_RETURN(impl->file,
                         avro::FileWriter::Create(impl->schemas->entry_text, std::move(metadata),
                                                  avro::Codec::kDeflate));
  return std::unique_ptr<ManifestWriter>(new ManifestWriter(std::move(impl)));
}

Status ManifestWriter::Add(const ManifestEntry& entry) {
  Impl& w = *impl_;
  if (w.finished) return Status::InvalidArgument("manifest writer already finished");
  const int v = w.options.format_version;
  const DataFile& f = entry.data_file;
  const auto& pfields = w.partition_type->fields();
  if (f.partition.size() != pfields.size()) {
    return Status::InvalidArgument(f.file_path + ": partition has " +
                                   std::to_string(f.partition.size()) + " values, spec has " +
                                   std::to_string(pfields.size()) + " fields");
  }
  const bool data_manifest = w.options.content == ManifestContent::kData;
  if (data_manifest != (f.content == DataFileContent::kData)) {
    return Status::InvalidArgument(f.file_path + ": file content does not match the manifest");
  }
  if (v >= 2 && entry.status != ManifestEntryStatus::kAdded &&
      (!entry.sequence_number || !entry.file_sequence_number)) {
    // Spec "Sequence Number Inheritance": existing/deleted entries keep explicit values.
    return Status::InvalidArgument(f.file_path +
                                   ": EXISTING/DELETED entries need explicit sequence numbers");
  }

  std::vector<AvroValue> partition_values;
  for (size_t i = 0; i < pfields.size(); ++i) {
    SKADE_ASSIGN_OR_RETURN(AvroValue pv, PartitionAvroValue(*pfields[i].type, f.partition[i]));
    partition_values.push_back(std::move(pv));
  }

  RecordBuilder df;
  df.Set("content", AvroValue::Long(static_cast<int64_t>(f.content)));
  df.Set("file_path", AvroValue::Bytes(f.file_path));
  df.Set("file_format", AvroValue::Bytes(std::string(FileFormatName(f.file_format))));
  df.Set("partition", AvroValue::List(std::move(partition_values)));
  df.Set("record_count", AvroValue::Long(f.record_count));
  df.Set("file_size_in_bytes", AvroValue::Long(f.file_size_in_bytes));
  df.Set("block_size_in_bytes", AvroValue::Long(kDefaultBlockSize));
  df.Set("column_sizes", IntMapValue(f.column_sizes));
  df.Set("value_counts", IntMapValue(f.value_counts));
  df.Set("null_value_counts", IntMapValue(f.null_value_counts));
  df.Set("nan_value_counts", IntMapValue(f.nan_value_counts));
  df.Set("lower_bounds", IntMapValue(f.lower_bounds));
  df.Set("upper_bounds", IntMapValue(f.upper_bounds));
  df.Set("key_metadata", OptBytesValue(f.key_metadata));
  df.Set("split_offsets", LongListValue(f.split_offsets, true));
  df.Set("equality_ids", f.content == DataFileContent::kEqualityDeletes
                             ? LongListValue(f.equality_ids, false)
                             : LongListValue(f.equality_ids, true));
  df.Set("sort_order_id", OptLongValue(f.sort_order_id));
  df.Set("first_row_id", OptLongValue(f.first_row_id));
  df.Set("referenced_data_file", OptBytesValue(f.referenced_data_file));
  df.Set("content_offset", OptLongValue(f.content_offset));
  df.Set("content_size_in_bytes", OptLongValue(f.content_size_in_bytes));

  RecordBuilder e;
  e.Set("status", AvroValue::Long(static_cast<int64_t>(entry.status)));
  e.Set("snapshot_id", AvroValue::Long(entry.snapshot_id.value_or(w.options.snapshot_id)));
  e.Set("sequence_number", OptLongValue(entry.sequence_number));
  e.Set("file_sequence_number", OptLongValue(entry.file_sequence_number));
  e.Set("data_file", df.Build(w.schemas->data_file));
  SKADE_RETURN_IF_ERROR(w.file->Append(e.Build(w.schemas->entry)).WithContext(f.file_path));

  for (size_t i = 0; i < pfields.size(); ++i) w.summaries[i].Update(f.partition[i]);
  switch (entry.status) {
    case ManifestEntryStatus::kAdded:
      ++w.added_files;
      w.added_rows += f.record_count;
      break;
    case ManifestEntryStatus::kExisting:
      ++w.existing_files;
      w.existing_rows += f.record_count;
      break;
    case ManifestEntryStatus::kDeleted:
      ++w.deleted_files;
      w.deleted_rows += f.record_count;
      break;
  }
  if (entry.status != ManifestEntryStatus::kDeleted) {
    std::optional<int64_t> seq = entry.sequence_number;
    if (!seq && w.options.sequence_number) seq = w.options.sequence_number;
    if (seq && (!w.min_explicit_sequence_number || *seq < *w.min_explicit_sequence_number)) {
      w.min_explicit_sequence_number = seq;
    }
  }
  return Status::Ok();
}

Result<ManifestWriter::Output> ManifestWriter::Finish(std::string manifest_path) {
  Impl& w = *impl_;
  if (w.finished) return Status::InvalidArgument("manifest writer already finished");
  w.finished = true;
  Output out;
  SKADE_ASSIGN_OR_RETURN(out.bytes, w.file->Finish());
  ManifestFile& m = out.manifest;
  m.manifest_path = std::move(manifest_path);
  m.manifest_length = static_cast<int64_t>(out.bytes.size());
  m.partition_spec_id = w.spec->spec_id();
  m.content = w.options.content;
  if (w.options.format_version == 1) {
    m.sequence_number = 0;
    m.min_sequence_number = 0;
  } else {
    // Without a known sequence number the row is completed by WriteManifestList. Inherited
    // sequence numbers are never below explicit ones, so the explicit minimum stands.
    m.sequence_number = w.options.sequence_number.value_or(kUnassignedSequenceNumber);
    m.min_sequence_number = w.min_explicit_sequence_number.value_or(m.sequence_number);
  }
  m.added_snapshot_id = w.options.snapshot_id;
  m.added_files_count = w.added_files;
  m.existing_files_count = w.existing_files;
  m.deleted_files_count = w.deleted_files;
  m.added_rows_count = w.added_rows;
  m.existing_rows_count = w.existing_rows;
  m.deleted_rows_count = w.deleted_rows;
  for (const SummaryAccumulator& s : w.summaries) m.partitions.push_back(s.ToSummary());
  return out;
}


}  // namespace skade::iceberg
