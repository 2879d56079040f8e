// Schema conversions for the Arrow IPC format: C Data Interface format strings and metadata
// (Arrow "C Data Interface" spec) to and from the Schema.fbs Field/Type tables.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>

#include "skade/arrow/builder.h"
#include "skade/arrow/ipc_internal.h"

namespace skade::arrow::ipc::internal {
namespace {

bool ParseInt(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "d:P,S[,W]" -> precision, scale, bit width.
bool ParseDecimal(std::string_view format, int64_t& precision, int64_t& scale, int64_t& width) {
  std::string_view rest = format.substr(2);
  size_t c1 = rest.find(',');
  if (c1 == std::string_view::npos) return false;
  size_t c2 = rest.find(',', c1 + 1);
  width = 128;
  if (!ParseInt(rest.substr(0, c1), precision)) return false;
  if (c2 == std::string_view::npos) return ParseInt(rest.substr(c1 + 1), scale);
  return ParseInt(rest.substr(c1 + 1, c2 - c1 - 1), scale) && ParseInt(rest.substr(c2 + 1), width);
}

int64_t FixedWidthOfPrimitive(std::string_view f) {
  if (f == "b") return 1;
  if (f == "c" || f == "C") return 8;
  if (f == "s" || f == "S" || f == "e") return 16;
  if (f == "i" || f == "I" || f == "f" || f == "tdD" || f == "tts" || f == "ttm" || f == "tiM")
    return 32;
  if (f == "l" || f == "L" || f == "g" || f == "tdm" || f == "ttu" || f == "ttn" || f == "tiD")
    return 64;
  if (f == "tin") return 128;
  if (f.size() >= 4 && (f.substr(0, 2) == "ts" || f.substr(0, 2) == "tD") &&
      std::string_view("smun").find(f[2]) != std::string_view::npos) {
    if (f[1] == 's' && f[3] == ':') return 64;
    if (f[1] == 'D' && f.size() == 3) return 64;
  }
  if (f.size() == 3 && f.substr(0, 2) == "tD" && std::string_view("smun").find(f[2]) != std::string_view::npos)
    return 64;
  return 0;
}

}  // namespace

Layout MakeLayout(std::vector<BufferKind> buffers, int64_t bit_width, int64_t list_size, bool variadic) {
  Layout l;
  l.buffers = std::move(buffers);
  l.bit_width = bit_width;
  l.list_size = list_size;
  l.variadic = variadic;
  return l;
}

Result<Layout> LayoutOf(std::string_view f) {
  Layout l;
  using K = BufferKind;
  if (f == "n") return l;
  if (int64_t w = FixedWidthOfPrimitive(f); w > 0) {
    l.buffers = {K::kValidity, K::kFixed};
    l.bit_width = w;
    return l;
  }
  if (f == "u" || f == "z") return MakeLayout({K::kValidity, K::kOffset32, K::kValues}, 0, 0, false);
  if (f == "U" || f == "Z") return MakeLayout({K::kValidity, K::kOffset64, K::kValues}, 0, 0, false);
  if (f == "vu" || f == "vz") return MakeLayout({K::kValidity, K::kViews}, 128, 0, true);
  if (f == "+l" || f == "+m") return MakeLayout({K::kValidity, K::kOffset32}, 0, 0, false);
  if (f == "+L") return MakeLayout({K::kValidity, K::kOffset64}, 0, 0, false);
  if (f == "+s") return MakeLayout({K::kValidity}, 0, 0, false);
  if (f.substr(0, 3) == "+w:") {
    int64_t n = 0;
    if (!ParseInt(f.substr(3), n) || n < 0) return Status::InvalidArgument("bad format " + std::string(f));
    return MakeLayout({K::kValidity}, 0, n, false);
  }
  if (f.substr(0, 2) == "w:") {
    int64_t n = 0;
    if (!ParseInt(f.substr(2), n) || n < 0 || n > (int64_t{1} << 31))
      return Status::InvalidArgument("bad format " + std::string(f));
    return MakeLayout({K::kValidity, K::kFixed}, n * 8, 0, false);
  }
  if (f.size() >= 4 && f.substr(0, 2) == "+u" && (f[2] == 'd' || f[2] == 's') && f[3] == ':') {
    l.is_union = true;
    l.dense = f[2] == 'd';
    std::string_view codes = f.substr(4);
    while (!codes.empty()) {
      size_t comma = codes.find(',');
      int64_t code = 0;
      if (!ParseInt(codes.substr(0, comma), code) || code < 0 || code > 127) {
        return Status::InvalidArgument("bad format " + std::string(f));
      }
      l.type_ids.push_back(static_cast<int32_t>(code));
      if (comma == std::string_view::npos) break;
      codes = codes.substr(comma + 1);
    }
    l.buffers = l.dense ? std::vector<BufferKind>{K::kFixed, K::kOffset32} : std::vector<BufferKind>{K::kFixed};
    l.bit_width = 8;
    return l;
  }
  if (f.substr(0, 2) == "d:") {
    int64_t p = 0, s = 0, w = 0;
    if (!ParseDecimal(f, p, s, w) || (w != 32 && w != 64 && w != 128 && w != 256))
      return Status::InvalidArgument("bad format " + std::string(f));
    return MakeLayout({K::kValidity, K::kFixed}, w, 0, false);
  }
  return Status::NotImplemented("Arrow IPC: unsupported format '" + std::string(f) + "'");
}

// ---------------------------------------------------------------- C schemas

namespace {


// Owns everything an exported ArrowSchema points to.
struct SchemaPrivate {
  std::string format;
  std::string name;
  std::string metadata;
  std::vector<std::unique_ptr<ArrowSchema>> children;
  std::vector<ArrowSchema*> child_pointers;
  std::unique_ptr<ArrowSchema> dictionary;
};

void ReleaseSchema(ArrowSchema* schema) {
  auto* priv = static_cast<SchemaPrivate*>(schema->private_data);
  for (auto& child : priv->children) {
    if (child->release != nullptr) child->release(child.get());
  }
  if (priv->dictionary && priv->dictionary->release != nullptr) {
    priv->dictionary->release(priv->dictionary.get());
  }
  std::unique_ptr<SchemaPrivate> owned(priv);
  schema->release = nullptr;
}

}  // namespace

Result<FieldInfo> FromArrowSchema(const ArrowSchema& schema, int64_t& next_dictionary_id) {
  if (schema.release == nullptr || schema.format == nullptr) {
    return Status::InvalidArgument("released or incomplete ArrowSchema");
  }
  FieldInfo field;
  field.name = schema.name != nullptr ? schema.name : "";
  field.format = schema.format;
  field.flags = schema.flags;
  SKADE_ASSIGN_OR_RETURN(field.metadata, DecodeMetadata(schema.metadata));
  if (schema.n_children < 0 || (schema.n_children > 0 && schema.children == nullptr)) {
    return Status::InvalidArgument("bad ArrowSchema children");
  }
  if (schema.dictionary != nullptr) {
    field.dictionary_id = next_dictionary_id++;
    SKADE_ASSIGN_OR_RETURN(FieldInfo value, FromArrowSchema(*schema.dictionary, next_dictionary_id));
    if (!value.dictionary.empty()) {
      return Status::NotImplemented("Arrow IPC: dictionary of dictionary-encoded values");
    }
    field.dictionary.push_back(std::move(value));
    const std::string& f = field.format;
    if (f != "c" && f != "C" && f != "s" && f != "S" && f != "i" && f != "I" && f != "l" &&
        f != "L") {
      return Status::InvalidArgument("dictionary index type must be an integer, got " + f);
    }
  }
  SKADE_RETURN_IF_ERROR(LayoutOf(field.format));  // rejects unsupported formats early
  for (int64_t i = 0; i < schema.n_children; ++i) {
    SKADE_ASSIGN_OR_RETURN(FieldInfo child, FromArrowSchema(*schema.children[i], next_dictionary_id));
    field.children.push_back(std::move(child));
  }
  const std::string& f = field.format;
  size_t want = (f == "+l" || f == "+L" || f == "+m" || f.rfind("+w:", 0) == 0) ? 1 : 0;
  if (f == "+s" || f.rfind("+u", 0) == 0) want = field.children.size();
  if (field.children.size() != want) {
    return Status::InvalidArgument("wrong number of children for format " + f);
  }
  if (f == "+m" && field.children[0].children.size() != 2) {
    return Status::InvalidArgument("map entries must be a struct of key and value");
  }
  return field;
}

void ExportField(const FieldInfo& field, ArrowSchema* out) {
  auto priv = std::make_unique<SchemaPrivate>();
  const FieldInfo& stored = field;
  priv->format = stored.format;
  priv->name = stored.name;
  if (!stored.metadata.empty()) priv->metadata = EncodeMetadata(stored.metadata);
  for (const FieldInfo& child : stored.children) {
    auto c = std::make_unique<ArrowSchema>();
    ExportField(child, c.get());
    priv->child_pointers.push_back(c.get());
    priv->children.push_back(std::move(c));
  }
  if (!stored.dictionary.empty()) {
    priv->dictionary = std::make_unique<ArrowSchema>();
    ExportField(stored.dictionary[0], priv->dictionary.get());
  }
  out->format = priv->format.c_str();
  out->name = priv->name.c_str();
  out->metadata = stored.metadata.empty() ? nullptr : priv->metadata.data();
  out->flags = stored.flags;
  out->n_children = static_cast<int64_t>(priv->children.size());
  out->children = priv->child_pointers.empty() ? nullptr : priv->child_pointers.data();
  out->dictionary = priv->dictionary.get();
  out->release = &ReleaseSchema;
  out->private_data = priv.release();
}

// ---------------------------------------------------------------- flatbuffers

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

fb::TimeUnit TimeUnitOf(char c) {
  switch (c) {
    case 's': return fb::TimeUnit::SECOND;
    case 'm': return fb::TimeUnit::MILLISECOND;
    case 'u': return fb::TimeUnit::MICROSECOND;
    default: return fb::TimeUnit::NANOSECOND;
  }
}

char TimeUnitChar(fb::TimeUnit unit) {
  switch (unit) {
    case fb::TimeUnit::SECOND: return 's';
    case fb::TimeUnit::MILLISECOND: return 'm';
    case fb::TimeUnit::MICROSECOND: return 'u';
    default: return 'n';
  }
}

Offset<fb::Int> WriteInt(FlatBufferBuilder& b, std::string_view f) {
  int width = (f == "c" || f == "C") ? 8 : (f == "s" || f == "S") ? 16 : (f == "i" || f == "I") ? 32 : 64;
  bool is_signed = f == "c" || f == "s" || f == "i" || f == "l";
  return fb::CreateInt(b, width, is_signed);
}

// The Type union member for a (non-dictionary) format string. LayoutOf has accepted it.
std::pair<fb::Type, Offset<void>> WriteType(FlatBufferBuilder& b, const FieldInfo& field) {
  std::string_view f = field.format;
  if (f == "n") return {fb::Type::Null, fb::CreateNull(b).Union()};
  if (f == "b") return {fb::Type::Bool, fb::CreateBool(b).Union()};
  if (f.size() == 1 && std::string_view("cCsSiIlL").find(f[0]) != std::string_view::npos) {
    return {fb::Type::Int, WriteInt(b, f).Union()};
  }
  if (f == "e" || f == "f" || f == "g") {
    auto p = f == "e" ? fb::Precision::HALF : f == "f" ? fb::Precision::SINGLE : fb::Precision::DOUBLE;
    return {fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, p).Union()};
  }
  if (f == "u") return {fb::Type::Utf8, fb::CreateUtf8(b).Union()};
  if (f == "z") return {fb::Type::Binary, fb::CreateBinary(b).Union()};
  if (f == "U") return {fb::Type::LargeUtf8, fb::CreateLargeUtf8(b).Union()};
  if (f == "Z") return {fb::Type::LargeBinary, fb::CreateLargeBinary(b).Union()};
  if (f == "vu") return {fb::Type::Utf8View, fb::CreateUtf8View(b).Union()};
  if (f == "vz") return {fb::Type::BinaryView, fb::CreateBinaryView(b).Union()};
  if (f == "tdD") return {fb::Type::Date, fb::CreateDate(b, fb::DateUnit::DAY).Union()};
  if (f == "tdm") return {fb::Type::Date, fb::CreateDate(b, fb::DateUnit::MILLISECOND).Union()};
  if (f.size() == 3 && f.substr(0, 2) == "tt") {
    int width = (f[2] == 's' || f[2] == 'm') ? 32 : 64;
    return {fb::Type::Time, fb::CreateTime(b, TimeUnitOf(f[2]), width).Union()};
  }
  if (f.substr(0, 2) == "ts") {
    auto tz = f.size() > 4 ? b.CreateString(f.substr(4)) : Offset<flatbuffers::String>();
    return {fb::Type::Timestamp, fb::CreateTimestamp(b, TimeUnitOf(f[2]), tz).Union()};
  }
  if (f.substr(0, 2) == "tD") return {fb::Type::Duration, fb::CreateDuration(b, TimeUnitOf(f[2])).Union()};
  if (f == "tiM") return {fb::Type::Interval, fb::CreateInterval(b, fb::IntervalUnit::YEAR_MONTH).Union()};
  if (f == "tiD") return {fb::Type::Interval, fb::CreateInterval(b, fb::IntervalUnit::DAY_TIME).Union()};
  if (f == "tin") {
    return {fb::Type::Interval, fb::CreateInterval(b, fb::IntervalUnit::MONTH_DAY_NANO).Union()};
  }
  if (f == "+l") return {fb::Type::List, fb::CreateList(b).Union()};
  if (f == "+L") return {fb::Type::LargeList, fb::CreateLargeList(b).Union()};
  if (f == "+s") return {fb::Type::Struct_, fb::CreateStruct_(b).Union()};
  if (f == "+m") {
    bool sorted = (field.flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;
    return {fb::Type::Map, fb::CreateMap(b, sorted).Union()};
  }
  if (f.substr(0, 2) == "+u") {
    auto layout = LayoutOf(f);  // accepted by the caller already
    auto ids = b.CreateVector(layout->type_ids);
    auto mode = layout->dense ? fb::UnionMode::Dense : fb::UnionMode::Sparse;
    return {fb::Type::Union, fb::CreateUnion(b, mode, ids).Union()};
  }
  int64_t n = 0;
  if (f.substr(0, 3) == "+w:") {
    ParseInt(f.substr(3), n);
    return {fb::Type::FixedSizeList, fb::CreateFixedSizeList(b, static_cast<int32_t>(n)).Union()};
  }
  if (f.substr(0, 2) == "w:") {
    ParseInt(f.substr(2), n);
    return {fb::Type::FixedSizeBinary, fb::CreateFixedSizeBinary(b, static_cast<int32_t>(n)).Union()};
  }
  int64_t p = 0, s = 0, w = 128;
  ParseDecimal(f, p, s, w);
  return {fb::Type::Decimal, fb::CreateDecimal(b, static_cast<int32_t>(p), static_cast<int32_t>(s),
                                               static_cast<int32_t>(w)).Union()};
}

Offset<flatbuffers::Vector<Offset<fb::KeyValue>>> WriteMetadata(
    FlatBufferBuilder& b, const std::vector<std::pair<std::string, std::string>>& kv) {
  if (kv.empty()) return 0;
  std::vector<Offset<fb::KeyValue>> items;
  for (const auto& [k, v] : kv) items.push_back(fb::CreateKeyValueDirect(b, k.c_str(), v.c_str()));
  return b.CreateVector(items);
}

Offset<fb::Field> WriteField(FlatBufferBuilder& b, const FieldInfo& field) {
  const FieldInfo& value = field.dictionary.empty() ? field : field.dictionary[0];
  std::vector<Offset<fb::Field>> children;
  for (const FieldInfo& child : value.children) children.push_back(WriteField(b, child));
  auto children_vec = b.CreateVector(children);
  auto name = b.CreateString(field.name);
  auto [type_type, type] = WriteType(b, value);
  Offset<fb::DictionaryEncoding> dict = 0;
  if (!field.dictionary.empty()) {
    auto index = WriteInt(b, field.format);
    bool ordered = (field.flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0;
    dict = fb::CreateDictionaryEncoding(b, field.dictionary_id, index, ordered);
  }
  auto metadata = WriteMetadata(b, field.metadata);
  return fb::CreateField(b, name, field.nullable(), type_type, type, dict, children_vec, metadata);
}

std::vector<std::pair<std::string, std::string>> ReadMetadata(
    const flatbuffers::Vector<Offset<fb::KeyValue>>* kv) {
  std::vector<std::pair<std::string, std::string>> out;
  if (kv == nullptr) return out;
  for (const fb::KeyValue* item : *kv) {
    if (item == nullptr) continue;
    out.emplace_back(item->key() ? item->key()->str() : "", item->value() ? item->value()->str() : "");
  }
  return out;
}

Status Corrupt(std::string what) { return Status::Corruption("Arrow IPC schema: " + std::move(what)); }

Result<std::string> ReadIntFormat(const fb::Int* t) {
  if (t == nullptr) return Corrupt("missing Int type");
  switch (t->bitWidth()) {
    case 8: return std::string(t->is_signed() ? "c" : "C");
    case 16: return std::string(t->is_signed() ? "s" : "S");
    case 32: return std::string(t->is_signed() ? "i" : "I");
    case 64: return std::string(t->is_signed() ? "l" : "L");
    default: return Corrupt("bad integer bit width");
  }
}

Result<std::string> ReadFormat(const fb::Field& field, int64_t& flags) {
  switch (field.type_type()) {
    case fb::Type::Null: return std::string("n");
    case fb::Type::Int: return ReadIntFormat(field.type_as_Int());
    case fb::Type::FloatingPoint: {
      auto* t = field.type_as_FloatingPoint();
      if (t == nullptr) return Corrupt("missing type");
      switch (t->precision()) {
        case fb::Precision::HALF: return std::string("e");
        case fb::Precision::SINGLE: return std::string("f");
        case fb::Precision::DOUBLE: return std::string("g");
        default: return Corrupt("bad float precision");
      }
    }
    case fb::Type::Binary: return std::string("z");
    case fb::Type::Utf8: return std::string("u");
    case fb::Type::LargeBinary: return std::string("Z");
    case fb::Type::LargeUtf8: return std::string("U");
    case fb::Type::BinaryView: return std::string("vz");
    case fb::Type::Utf8View: return std::string("vu");
    case fb::Type::Bool: return std::string("b");
    case fb::Type::Decimal: {
      auto* t = field.type_as_Decimal();
      if (t == nullptr) return Corrupt("missing type");
      int w = t->bitWidth();
      if (w != 32 && w != 64 && w != 128 && w != 256) return Corrupt("bad decimal bit width");
      // Spec (Schema.fbs, Decimal): at least 1 and at most 9, 18, 38 or 76 digits for 32, 64,
      // 128 and 256 bits; consumers size their arithmetic by it.
      int max_precision = w == 32 ? 9 : w == 64 ? 18 : w == 128 ? 38 : 76;
      if (t->precision() < 1 || t->precision() > max_precision) {
        return Corrupt("bad decimal precision");
      }
      std::string f = "d:" + std::to_string(t->precision()) + "," + std::to_string(t->scale());
      if (w != 128) f += "," + std::to_string(w);
      return f;
    }
    case fb::Type::Date: {
      auto* t = field.type_as_Date();
      if (t == nullptr) return Corrupt("missing type");
      return std::string(t->unit() == fb::DateUnit::DAY ? "tdD" : "tdm");
    }
    case fb::Type::Time: {
      auto* t = field.type_as_Time();
      if (t == nullptr) return Corrupt("missing type");
      char u = TimeUnitChar(t->unit());
      int want = (u == 's' || u == 'm') ? 32 : 64;
      if (t->bitWidth() != want) return Corrupt("bad time bit width");
      return std::string("tt") + u;
    }
    case fb::Type::Timestamp: {
      auto* t = field.type_as_Timestamp();
      if (t == nullptr) return Corrupt("missing type");
      return std::string("ts") + TimeUnitChar(t->unit()) + ":" +
             (t->timezone() != nullptr ? t->timezone()->str() : "");
    }
    case fb::Type::Duration: {
      auto* t = field.type_as_Duration();
      if (t == nullptr) return Corrupt("missing type");
      return std::string("tD") + TimeUnitChar(t->unit());
    }
    case fb::Type::Interval: {
      auto* t = field.type_as_Interval();
      if (t == nullptr) return Corrupt("missing type");
      switch (t->unit()) {
        case fb::IntervalUnit::YEAR_MONTH: return std::string("tiM");
        case fb::IntervalUnit::DAY_TIME: return std::string("tiD");
        case fb::IntervalUnit::MONTH_DAY_NANO: return std::string("tin");
        default: return Corrupt("bad interval unit");
      }
    }
    case fb::Type::List: return std::string("+l");
    case fb::Type::LargeList: return std::string("+L");
    case fb::Type::Struct_: return std::string("+s");
    case fb::Type::Map: {
      auto* t = field.type_as_Map();
      if (t != nullptr && t->keysSorted()) flags |= ARROW_FLAG_MAP_KEYS_SORTED;
      return std::string("+m");
    }
    case fb::Type::FixedSizeList: {
      auto* t = field.type_as_FixedSizeList();
      if (t == nullptr || t->listSize() < 0) return Corrupt("bad fixed-size list");
      return "+w:" + std::to_string(t->listSize());
    }
    case fb::Type::FixedSizeBinary: {
      auto* t = field.type_as_FixedSizeBinary();
      if (t == nullptr || t->byteWidth() < 0) return Corrupt("bad fixed-size binary");
      return "w:" + std::to_string(t->byteWidth());
    }
    case fb::Type::NONE: return Corrupt("field without a type");
    default:
      return Status::NotImplemented("Arrow IPC: unsupported type " +
                                    std::string(fb::EnumNameType(field.type_type())));
  }
}

Result<FieldInfo> ReadField(const fb::Field* field, int depth) {
  if (field == nullptr) return Corrupt("null field");
  if (depth > 48) return Corrupt("nesting too deep");
  FieldInfo value;
  value.flags = 0;
  SKADE_ASSIGN_OR_RETURN(value.format, ReadFormat(*field, value.flags));
  if (field->children() != nullptr) {
    for (const fb::Field* child : *field->children()) {
      SKADE_ASSIGN_OR_RETURN(FieldInfo c, ReadField(child, depth + 1));
      value.children.push_back(std::move(c));
    }
  }
  const std::string& f = value.format;
  size_t want = (f == "+l" || f == "+L" || f == "+m" || f.rfind("+w:", 0) == 0) ? 1 : 0;
  if (f == "+s") want = value.children.size();
  if (value.children.size() != want) return Corrupt("wrong number of children for " + f);
  if (f == "+m" && (value.children[0].format != "+s" || value.children[0].children.size() != 2)) {
    return Corrupt("map entries must be a struct of two fields");
  }
  FieldInfo out;
  out.name = field->name() != nullptr ? field->name()->str() : "";
  out.metadata = ReadMetadata(field->custom_metadata());
  int64_t nullable = field->nullable() ? ARROW_FLAG_NULLABLE : 0;
  if (const fb::DictionaryEncoding* dict = field->dictionary()) {
    if (dict->indexType() == nullptr) return Corrupt("dictionary without index type");
    SKADE_ASSIGN_OR_RETURN(out.format, ReadIntFormat(dict->indexType()));
    out.flags = nullable | (dict->isOrdered() ? ARROW_FLAG_DICTIONARY_ORDERED : 0);
    out.dictionary_id = dict->id();
    value.flags |= ARROW_FLAG_NULLABLE;
    out.dictionary.push_back(std::move(value));
  } else {
    out.format = std::move(value.format);
    out.flags = nullable | value.flags;
    out.children = std::move(value.children);
  }
  return out;
}

// The type of a field's stored values with names, nullability and metadata left out: two
// fields may share a dictionary id only if their value types agree, since the dictionary is
// exported under both.
std::string TypeSignature(const FieldInfo& field) {
  std::string out = field.format;
  if (!field.dictionary.empty()) out += "{" + TypeSignature(field.dictionary[0]) + "}";
  if (!field.children.empty()) {
    out += "(";
    for (const FieldInfo& c : field.children) out += TypeSignature(c) + ";";
    out += ")";
  }
  return out;
}

// Spec (IPC, dictionary messages): a DictionaryBatch is looked up by id alone, so every field
// using one id must have the same value type. A dictionary whose values use its own id would
// be its own value.
Status CheckDictionaryIds(const FieldInfo& field, std::map<int64_t, std::string>& seen,
                          const std::vector<int64_t>& enclosing) {
  std::vector<int64_t> inner = enclosing;
  if (!field.dictionary.empty()) {
    if (std::find(enclosing.begin(), enclosing.end(), field.dictionary_id) != enclosing.end()) {
      return Corrupt("dictionary id used inside its own dictionary");
    }
    std::string signature = TypeSignature(field.dictionary[0]);
    auto [it, inserted] = seen.emplace(field.dictionary_id, signature);
    if (!inserted && it->second != signature) {
      return Corrupt("dictionary id shared by different types");
    }
    inner.push_back(field.dictionary_id);
    SKADE_RETURN_IF_ERROR(CheckDictionaryIds(field.dictionary[0], seen, inner));
  }
  for (const FieldInfo& c : field.children) {
    SKADE_RETURN_IF_ERROR(CheckDictionaryIds(c, seen, inner));
  }
  return Status::Ok();
}

}  // namespace

flatbuffers::Offset<fb::Schema> WriteSchema(FlatBufferBuilder& b, const std::vector<FieldInfo>& fields) {
  std::vector<Offset<fb::Field>> offsets;
  for (const FieldInfo& f : fields) offsets.push_back(WriteField(b, f));
  auto vec = b.CreateVector(offsets);
  return fb::CreateSchema(b, fb::Endianness::Little, vec);
}

Result<std::vector<FieldInfo>> ReadSchema(const fb::Schema& schema) {
  if (schema.endianness() != fb::Endianness::Little) {
    return Status::NotImplemented("Arrow IPC: big-endian streams");
  }
  std::vector<FieldInfo> fields;
  if (schema.fields() != nullptr) {
    for (const fb::Field* f : *schema.fields()) {
      SKADE_ASSIGN_OR_RETURN(FieldInfo field, ReadField(f, 0));
      fields.push_back(std::move(field));
    }
  }
  std::map<int64_t, std::string> seen;
  for (const FieldInfo& f : fields) SKADE_RETURN_IF_ERROR(CheckDictionaryIds(f, seen, {}));
  return fields;
}

}  // namespace skade::arrow::ipc::internal
