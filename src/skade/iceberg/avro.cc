#include "skade/iceberg/avro.h"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>

#include "skade/base/status.h"
#include "skade/base/json_parse_internal.h"

// Avro 1.11 specification: "Schema Declaration", "Binary Encoding" and "Object Container
// Files". Every read goes through a bounds-checked cursor so that garbled input yields
// kCorruption instead of reading out of bounds.

namespace skade::iceberg::avro {
namespace {

using Json = nlohmann::json;

constexpr char kMagic[4] = {'O', 'b', 'j', '\x01'};
constexpr size_t kSyncSize = 16;
// Flush a block once this many encoded bytes are buffered.
constexpr size_t kBlockTargetBytes = 64 * 1024;
// The deflate level of written blocks (zlib's default).
constexpr int kDeflateLevel = 6;

// Upper bound for one inflated block (a guard against decompression bombs).
constexpr size_t kMaxBlockBytes = size_t{1} << 30;
constexpr int kMaxSchemaDepth = 128;

// ---------------------------------------------------------------------------------------------
// Schema parsing

std::string KindName(AvroKind kind) {
  switch (kind) {
    case AvroKind::kNull:
      return "null";
    case AvroKind::kBoolean:
      return "boolean";
    case AvroKind::kInt:
      return "int";
    case AvroKind::kLong:
      return "long";
    case AvroKind::kFloat:
      return "float";
    case AvroKind::kDouble:
      return "double";
    case AvroKind::kBytes:
      return "bytes";
    case AvroKind::kString:
      return "string";
    case AvroKind::kRecord:
      return "record";
    case AvroKind::kEnum:
      return "enum";
    case AvroKind::kArray:
      return "array";
    case AvroKind::kMap:
      return "map";
    case AvroKind::kUnion:
      return "union";
    case AvroKind::kFixed:
      return "fixed";
  }
  return "?";
}

std::optional<AvroKind> PrimitiveKind(std::string_view name) {
  if (name == "null") return AvroKind::kNull;
  if (name == "boolean") return AvroKind::kBoolean;
  if (name == "int") return AvroKind::kInt;
  if (name == "long") return AvroKind::kLong;
  if (name == "float") return AvroKind::kFloat;
  if (name == "double") return AvroKind::kDouble;
  if (name == "bytes") return AvroKind::kBytes;
  if (name == "string") return AvroKind::kString;
  return std::nullopt;
}

// Reads an integer attribute; Iceberg writes ids as JSON numbers, some writers as strings.
Result<std::optional<int>> IntAttribute(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<int>();
  if (it->is_number_integer()) {
    int64_t v = it->get<int64_t>();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      return Status::InvalidArgument(std::string("avro schema: \"") + key + "\" out of range");
    }
    return std::optional<int>(static_cast<int>(v));
  }
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > 10) {
      return Status::InvalidArgument(std::string("avro schema: bad \"") + key + "\"");
    }
    int64_t v = 0;
    size_t i = (s[0] == '-') ? 1 : 0;
    if (i == s.size())
      return Status::InvalidArgument(std::string("avro schema: bad \"") + key + "\"");
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') {
        return Status::InvalidArgument(std::string("avro schema: bad \"") + key + "\"");
      }
      v = v * 10 + (s[i] - '0');
    }
    if (s[0] == '-') v = -v;
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      return Status::InvalidArgument(std::string("avro schema: \"") + key + "\" out of range");
    }
    return std::optional<int>(static_cast<int>(v));
  }
  return Status::InvalidArgument(std::string("avro schema: \"") + key + "\" is not an integer");
}

Result<std::vector<std::string>> StringList(const Json& object, const char* key) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return Status::InvalidArgument(std::string("avro schema: \"") + key + "\" is not an array");
  }
  for (const Json& item : *it) {
    if (!item.is_string()) {
      return Status::InvalidArgument(std::string("avro schema: \"") + key +
                                     "\" holds a non-string");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

class SchemaParser {
 public:
  Result<AvroNodePtr> Parse(const Json& json, const std::string& enclosing_namespace, int depth);

 private:
  Result<AvroNodePtr> ParseObject(const Json& json, const std::string& enclosing_namespace,
                                  int depth);
  Result<AvroNodePtr> ResolveName(const std::string& name, const std::string& enclosing_namespace);
  // Computes the full name and namespace of a named type declaration.
  Result<std::pair<std::string, std::string>> FullName(const Json& json,
                                                       const std::string& enclosing_namespace);
  Status Register(const std::string& full_name, AvroNodePtr node);

  std::map<std::string, AvroNodePtr> named_;
  std::map<std::string, bool> in_progress_;
};

Result<AvroNodePtr> SchemaParser::Parse(const Json& json, const std::string& enclosing_namespace,
                                        int depth) {
  if (depth > kMaxSchemaDepth) return Status::InvalidArgument("avro schema: nested too deeply");
  if (json.is_string()) {
    const std::string& name = json.get_ref<const std::string&>();
    if (auto kind = PrimitiveKind(name)) {
      auto node = std::make_shared<AvroNode>();
      node->kind = *kind;
      return AvroNodePtr(std::move(node));
    }
    return ResolveName(name, enclosing_namespace);
  }
  if (json.is_array()) {
    auto node = std::make_shared<AvroNode>();
    node->kind = AvroKind::kUnion;
    for (const Json& branch : json) {
      SKADE_ASSIGN_OR_RETURN(AvroNodePtr b, Parse(branch, enclosing_namespace, depth + 1));
      if (b->kind == AvroKind::kUnion) {
        return Status::InvalidArgument("avro schema: a union may not directly contain a union");
      }
      node->branches.push_back(std::move(b));
    }
    if (node->branches.empty()) return Status::InvalidArgument("avro schema: empty union");
    return AvroNodePtr(std::move(node));
  }
  if (json.is_object()) return ParseObject(json, enclosing_namespace, depth);
  return Status::InvalidArgument("avro schema: a type must be a string, array or object");
}

Result<AvroNodePtr> SchemaParser::ResolveName(const std::string& name,
                                              const std::string& enclosing_namespace) {
  std::vector<std::string> candidates;
  if (name.find('.') == std::string::npos && !enclosing_namespace.empty()) {
    candidates.push_back(enclosing_namespace + "." + name);
  }
  candidates.push_back(name);
  for (const std::string& candidate : candidates) {
    if (in_progress_.count(candidate) != 0) {
      return Status::NotImplemented("avro schema: recursive type '" + candidate +
                                    "' is not supported");
    }
    auto it = named_.find(candidate);
    if (it != named_.end()) return it->second;
  }
  return Status::InvalidArgument("avro schema: unknown type '" + name + "'");
}

Result<std::pair<std::string, std::string>> SchemaParser::FullName(
    const Json& json, const std::string& enclosing_namespace) {
  auto name_it = json.find("name");
  if (name_it == json.end() || !name_it->is_string() ||
      name_it->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("avro schema: a named type needs a \"name\"");
  }
  std::string name = name_it->get<std::string>();
  std::string space = enclosing_namespace;
  auto ns_it = json.find("namespace");
  if (ns_it != json.end() && ns_it->is_string()) space = ns_it->get<std::string>();
  size_t dot = name.rfind('.');
  if (dot != std::string::npos) return std::make_pair(name, name.substr(0, dot));
  return std::make_pair(space.empty() ? name : space + "." + name, space);
}

Status SchemaParser::Register(const std::string& full_name, AvroNodePtr node) {
  if (named_.count(full_name) != 0) {
    return Status::InvalidArgument("avro schema: type '" + full_name + "' is defined twice");
  }
  named_[full_name] = std::move(node);
  return Status::Ok();
}

Result<AvroNodePtr> SchemaParser::ParseObject(const Json& json,
                                              const std::string& enclosing_namespace, int depth) {
  auto type_it = json.find("type");
  if (type_it == json.end()) return Status::InvalidArgument("avro schema: object without \"type\"");
  if (!type_it->is_string()) {
    // Lenient: {"type": {...}} or {"type": [...]} wraps another schema.
    return Parse(*type_it, enclosing_namespace, depth + 1);
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  auto node = std::make_shared<AvroNode>();

  // Attributes common to every kind.
  std::vector<std::string> known = {"type", "logicalType", "precision", "scale", "adjust-to-utc"};
  if (auto it = json.find("logicalType"); it != json.end() && it->is_string()) {
    node->logical_type = it->get<std::string>();
  }
  SKADE_ASSIGN_OR_RETURN(std::optional<int> precision, IntAttribute(json, "precision"));
  SKADE_ASSIGN_OR_RETURN(std::optional<int> scale, IntAttribute(json, "scale"));
  node->precision = precision.value_or(0);
  node->scale = scale.value_or(0);
  if (auto it = json.find("adjust-to-utc"); it != json.end()) {
    if (it->is_boolean()) {
      node->adjust_to_utc = it->get<bool>();
    } else if (it->is_string()) {
      node->adjust_to_utc = it->get<std::string>() == "true";
    }
  }

  std::string full_name;
  std::string inner_namespace = enclosing_namespace;
  if (auto kind = PrimitiveKind(type)) {
    node->kind = *kind;
  } else if (type == "record" || type == "error") {
    node->kind = AvroKind::kRecord;
    known.insert(known.end(), {"name", "namespace", "fields", "aliases", "doc"});
    SKADE_ASSIGN_OR_RETURN(auto names, FullName(json, enclosing_namespace));
    full_name = names.first;
    inner_namespace = names.second;
    node->name = full_name;
    SKADE_ASSIGN_OR_RETURN(node->aliases, StringList(json, "aliases"));
    auto fields_it = json.find("fields");
    if (fields_it == json.end() || !fields_it->is_array()) {
      return Status::InvalidArgument("avro schema: record '" + full_name + "' needs \"fields\"");
    }
    in_progress_[full_name] = true;
    for (const Json& f : *fields_it) {
      if (!f.is_object()) return Status::InvalidArgument("avro schema: a field must be an object");
      AvroField field;
      auto fname = f.find("name");
      if (fname == f.end() || !fname->is_string()) {
        return Status::InvalidArgument("avro schema: a field of '" + full_name + "' has no name");
      }
      field.name = fname->get<std::string>();
      auto ftype = f.find("type");
      if (ftype == f.end()) {
        return Status::InvalidArgument("avro schema: field '" + field.name + "' has no type");
      }
      SKADE_ASSIGN_OR_RETURN(field.type, Parse(*ftype, inner_namespace, depth + 1));
      SKADE_ASSIGN_OR_RETURN(field.field_id, IntAttribute(f, "field-id"));
      field.has_default = f.contains("default");
      SKADE_ASSIGN_OR_RETURN(field.aliases, StringList(f, "aliases"));
      if (auto doc = f.find("doc"); doc != f.end() && doc->is_string()) {
        field.doc = doc->get<std::string>();
      }
      for (auto it = f.begin(); it != f.end(); ++it) {
        const std::string& key = it.key();
        if (key == "name" || key == "type" || key == "field-id" || key == "aliases" ||
            key == "doc") {
          continue;
        }
        field.attributes.emplace_back(key, it->dump());
      }
      for (const AvroField& other : node->fields) {
        if (other.name == field.name) {
          return Status::InvalidArgument("avro schema: duplicate field '" + field.name + "'");
        }
      }
      node->fields.push_back(std::move(field));
    }
    in_progress_.erase(full_name);
  } else if (type == "enum") {
    node->kind = AvroKind::kEnum;
    known.insert(known.end(), {"name", "namespace", "symbols", "aliases", "doc"});
    SKADE_ASSIGN_OR_RETURN(auto names, FullName(json, enclosing_namespace));
    full_name = names.first;
    node->name = full_name;
    SKADE_ASSIGN_OR_RETURN(node->aliases, StringList(json, "aliases"));
    SKADE_ASSIGN_OR_RETURN(node->symbols, StringList(json, "symbols"));
    if (node->symbols.empty()) {
      return Status::InvalidArgument("avro schema: enum '" + full_name + "' has no symbols");
    }
  } else if (type == "fixed") {
    node->kind = AvroKind::kFixed;
    known.insert(known.end(), {"name", "namespace", "size", "aliases", "doc"});
    SKADE_ASSIGN_OR_RETURN(auto names, FullName(json, enclosing_namespace));
    full_name = names.first;
    node->name = full_name;
    SKADE_ASSIGN_OR_RETURN(node->aliases, StringList(json, "aliases"));
    SKADE_ASSIGN_OR_RETURN(std::optional<int> size, IntAttribute(json, "size"));
    if (!size || *size < 0) {
      return Status::InvalidArgument("avro schema: fixed '" + full_name + "' needs a size");
    }
    node->size = *size;
  } else if (type == "array") {
    node->kind = AvroKind::kArray;
    known.insert(known.end(), {"items", "element-id", "key-id", "value-id"});
    auto items = json.find("items");
    if (items == json.end()) return Status::InvalidArgument("avro schema: array without items");
    SKADE_ASSIGN_OR_RETURN(node->items, Parse(*items, enclosing_namespace, depth + 1));
    SKADE_ASSIGN_OR_RETURN(node->element_id, IntAttribute(json, "element-id"));
    SKADE_ASSIGN_OR_RETURN(node->key_id, IntAttribute(json, "key-id"));
    SKADE_ASSIGN_OR_RETURN(node->value_id, IntAttribute(json, "value-id"));
  } else if (type == "map") {
    node->kind = AvroKind::kMap;
    known.insert(known.end(), {"values", "key-id", "value-id"});
    auto values = json.find("values");
    if (values == json.end()) return Status::InvalidArgument("avro schema: map without values");
    SKADE_ASSIGN_OR_RETURN(node->values, Parse(*values, enclosing_namespace, depth + 1));
    SKADE_ASSIGN_OR_RETURN(node->key_id, IntAttribute(json, "key-id"));
    SKADE_ASSIGN_OR_RETURN(node->value_id, IntAttribute(json, "value-id"));
  } else {
    // A reference to a named type written in object form is not valid Avro, but a bare name
    // is: {"type": "my.Record"}.
    return ResolveName(type, enclosing_namespace);
  }

  for (auto it = json.begin(); it != json.end(); ++it) {
    bool is_known = false;
    for (const std::string& k : known) is_known = is_known || k == it.key();
    if (!is_known) node->attributes.emplace_back(it.key(), it->dump());
  }
  AvroNodePtr result = std::move(node);
  if (!full_name.empty()) SKADE_RETURN_IF_ERROR(Register(full_name, result));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Binary encoding

void WriteLong(int64_t v, std::string* out) {
  uint64_t zz = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (zz >= 0x80) {
    out->push_back(static_cast<char>((zz & 0x7f) | 0x80));
    zz >>= 7;
  }
  out->push_back(static_cast<char>(zz));
}

void WriteBytes(std::string_view bytes, std::string* out) {
  WriteLong(static_cast<int64_t>(bytes.size()), out);
  out->append(bytes);
}

Status Mismatch(const AvroNode& schema, const AvroValue& value) {
  return Status::InvalidArgument("value of tag " + std::to_string(static_cast<int>(value.tag)) +
                                 " does not match avro type " + KindName(schema.kind));
}

bool BranchMatches(const AvroNode& branch, const AvroValue& value) {
  switch (value.tag) {
    case AvroValue::Tag::kNull:
      return branch.kind == AvroKind::kNull;
    case AvroValue::Tag::kBool:
      return branch.kind == AvroKind::kBoolean;
    case AvroValue::Tag::kLong:
      return branch.kind == AvroKind::kInt || branch.kind == AvroKind::kLong ||
             branch.kind == AvroKind::kEnum;
    case AvroValue::Tag::kFloat:
    case AvroValue::Tag::kDouble:
      return branch.kind == AvroKind::kFloat || branch.kind == AvroKind::kDouble;
    case AvroValue::Tag::kBytes:
      return branch.kind == AvroKind::kBytes || branch.kind == AvroKind::kString ||
             (branch.kind == AvroKind::kFixed &&
              value.bytes.size() == static_cast<size_t>(branch.size));
    case AvroValue::Tag::kList:
      return (branch.kind == AvroKind::kRecord && branch.fields.size() == value.items.size()) ||
             branch.kind == AvroKind::kArray;
    case AvroValue::Tag::kMap:
      return branch.kind == AvroKind::kMap;
  }
  return false;
}

Status Encode(const AvroNode& schema, const AvroValue& value, std::string* out) {
  switch (schema.kind) {
    case AvroKind::kNull:
      if (!value.is_null()) return Mismatch(schema, value);
      return Status::Ok();
    case AvroKind::kBoolean:
      if (value.tag != AvroValue::Tag::kBool) return Mismatch(schema, value);
      out->push_back(value.bool_value ? '\x01' : '\x00');
      return Status::Ok();
    case AvroKind::kInt:
      if (value.tag != AvroValue::Tag::kLong) return Mismatch(schema, value);
      if (value.long_value < std::numeric_limits<int32_t>::min() ||
          value.long_value > std::numeric_limits<int32_t>::max()) {
        return Status::InvalidArgument("value " + std::to_string(value.long_value) +
                                       " does not fit an avro int");
      }
      WriteLong(value.long_value, out);
      return Status::Ok();
    case AvroKind::kLong:
      if (value.tag != AvroValue::Tag::kLong) return Mismatch(schema, value);
      WriteLong(value.long_value, out);
      return Status::Ok();
    case AvroKind::kFloat: {
      float f = 0;
      if (value.tag == AvroValue::Tag::kFloat) {
        f = value.float_value;
      } else if (value.tag == AvroValue::Tag::kDouble) {
        f = static_cast<float>(value.double_value);
      } else {
        return Mismatch(schema, value);
      }
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
      return Status::Ok();
    }
    case AvroKind::kDouble: {
      double d = 0;
      if (value.tag == AvroValue::Tag::kDouble) {
        d = value.double_value;
      } else if (value.tag == AvroValue::Tag::kFloat) {
        d = value.float_value;
      } else {
        return Mismatch(schema, value);
      }
      uint64_t bits = 0;
      std::memcpy(&bits, &d, 8);
      for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
      return Status::Ok();
    }
    case AvroKind::kBytes:
    case AvroKind::kString:
      if (value.tag != AvroValue::Tag::kBytes) return Mismatch(schema, value);
      WriteBytes(value.bytes, out);
      return Status::Ok();
    case AvroKind::kFixed:
      if (value.tag != AvroValue::Tag::kBytes) return Mismatch(schema, value);
      if (value.bytes.size() != static_cast<size_t>(schema.size)) {
        return Status::InvalidArgument("fixed '" + schema.name + "' needs " +
                                       std::to_string(schema.size) + " bytes, got " +
                                       std::to_string(value.bytes.size()));
      }
      out->append(value.bytes);
      return Status::Ok();
    case AvroKind::kEnum:
      if (value.tag != AvroValue::Tag::kLong) return Mismatch(schema, value);
      if (value.long_value < 0 ||
          static_cast<uint64_t>(value.long_value) >= schema.symbols.size()) {
        return Status::InvalidArgument("enum index out of range");
      }
      WriteLong(value.long_value, out);
      return Status::Ok();
    case AvroKind::kRecord:
      if (value.tag != AvroValue::Tag::kList) return Mismatch(schema, value);
      if (value.items.size() != schema.fields.size()) {
        return Status::InvalidArgument("record '" + schema.name + "' has " +
                                       std::to_string(schema.fields.size()) +
                                       " fields, value has " + std::to_string(value.items.size()));
      }
      for (size_t i = 0; i < schema.fields.size(); ++i) {
        SKADE_RETURN_IF_ERROR(Encode(*schema.fields[i].type, value.items[i], out)
                                  .WithContext("field " + schema.fields[i].name));
      }
      return Status::Ok();
    case AvroKind::kArray:
      if (value.tag != AvroValue::Tag::kList) return Mismatch(schema, value);
      if (!value.items.empty()) {
        WriteLong(static_cast<int64_t>(value.items.size()), out);
        for (const AvroValue& item : value.items) {
          SKADE_RETURN_IF_ERROR(Encode(*schema.items, item, out));
        }
      }
      WriteLong(0, out);
      return Status::Ok();
    case AvroKind::kMap:
      if (value.tag != AvroValue::Tag::kMap) return Mismatch(schema, value);
      if (!value.entries.empty()) {
        WriteLong(static_cast<int64_t>(value.entries.size()), out);
        for (const auto& [key, v] : value.entries) {
          WriteBytes(key, out);
          SKADE_RETURN_IF_ERROR(Encode(*schema.values, v, out));
        }
      }
      WriteLong(0, out);
      return Status::Ok();
    case AvroKind::kUnion: {
      int index = value.branch;
      if (index >= static_cast<int>(schema.branches.size())) {
        return Status::InvalidArgument("union branch " + std::to_string(index) + " out of range");
      }
      if (index < 0) {
        for (size_t i = 0; i < schema.branches.size(); ++i) {
          if (BranchMatches(*schema.branches[i], value)) {
            index = static_cast<int>(i);
            break;
          }
        }
      }
      if (index < 0) return Status::InvalidArgument("no union branch matches the value");
      WriteLong(index, out);
      return Encode(*schema.branches[static_cast<size_t>(index)], value, out);
    }
  }
  return Status::Internal("unknown avro kind");
}

// ---------------------------------------------------------------------------------------------
// Codecs

// Inflating goes through libdeflate (whole blocks at once, about twice zlib's speed; planning
// a large table spent a third of its time inflating manifests). One decompressor per thread.
struct Decompressor {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  ~Decompressor() {
    if (d != nullptr) libdeflate_free_decompressor(d);
  }
};

// Inflates raw deflate data into `*out` (`*capacity` bytes, kept as room between calls: it only
// grows, and is never cleared first since inflating overwrites it); returns the number of
// bytes produced.
Result<size_t> Inflate(std::string_view compressed, std::unique_ptr<char[]>* out, size_t* capacity) {
  thread_local Decompressor decompressor;
  if (decompressor.d == nullptr) return Status::ResourceExhausted("cannot allocate a deflate decompressor");
  auto grow = [&](size_t size) {
    *out = std::make_unique_for_overwrite<char[]>(size);
    *capacity = size;
  };
  if (*capacity < std::max<size_t>(compressed.size() * 4, 1024)) grow(std::max<size_t>(compressed.size() * 4, 1024));
  while (true) {
    size_t produced = 0;
    const libdeflate_result rc = libdeflate_deflate_decompress(decompressor.d, compressed.data(), compressed.size(),
                                                               out->get(), *capacity, &produced);
    if (rc == LIBDEFLATE_SUCCESS) return produced;
    if (rc != LIBDEFLATE_INSUFFICIENT_SPACE) return Status::Corruption("invalid or truncated deflate data");
    if (*capacity >= kMaxBlockBytes) return Status::Corruption("deflate block inflates beyond the size limit");
    grow(std::min(*capacity * 2, kMaxBlockBytes));
  }
}

// Deflating goes through libdeflate too, with one compressor per thread kept for its next
// block: zlib's deflateInit allocated and cleared its state for every block, which cost more
// than compressing a manifest list.
struct Compressor {
  libdeflate_compressor* c = libdeflate_alloc_compressor(kDeflateLevel);
  ~Compressor() {
    if (c != nullptr) libdeflate_free_compressor(c);
  }
};

Result<std::string> Deflate(std::string_view raw) {
  thread_local Compressor compressor;
  if (compressor.c == nullptr) return Status::ResourceExhausted("cannot allocate a deflate compressor");
  std::string out(libdeflate_deflate_compress_bound(compressor.c, raw.size()), '\0');
  const size_t n = libdeflate_deflate_compress(compressor.c, raw.data(), raw.size(), out.data(), out.size());
  if (n == 0) return Status::Internal("deflate failed");
  out.resize(n);
  return out;
}

// A file's sync marker: 16 bytes unlikely to occur in its blocks (the spec asks no more; a
// std::random_device per file cost as much as encoding a manifest entry).
std::string RandomSync() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string sync(kSyncSize, '\0');
  for (size_t i = 0; i < kSyncSize; i += 8) {
    const uint64_t r = rng();
    std::memcpy(&sync[i], &r, 8);
  }
  return sync;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Parsed schemas of the files read, by their text: a table's manifests are written by one
// writer with one schema, and parsing it took as long as decoding a hundred entries. Parsed
// schemas are immutable, so readers share them. Bounded: cleared when full.

constexpr size_t kSchemaCacheEntries = 64;

Result<AvroNodePtr> ParseSchemaCached(const std::string& json) {
  static std::mutex mu;
  static std::unordered_map<std::string, AvroNodePtr> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(json); it != cache.end()) return it->second;
  }
  SKADE_ASSIGN_OR_RETURN(AvroNodePtr schema, ParseSchema(json));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kSchemaCacheEntries) cache.clear();
  cache.emplace(json, schema);
  return schema;
}

// ---------------------------------------------------------------------------------------------
// Public API

int AvroNode::FieldIndex(std::string_view field_name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == field_name) return static_cast<int>(i);
  }
  return -1;
}

int AvroNode::NonNullBranch() const {
  for (size_t i = 0; i < branches.size(); ++i) {
    if (branches[i]->kind != AvroKind::kNull) return static_cast<int>(i);
  }
  return -1;
}

Result<AvroNodePtr> ParseSchema(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(Json doc, ParseJson(json, "avro schema"));
  SchemaParser parser;
  return parser.Parse(doc, "", 0);
}

AvroValue AvroValue::Bool(bool v) {
  AvroValue out;
  out.tag = Tag::kBool;
  out.bool_value = v;
  return out;
}

AvroValue AvroValue::Long(int64_t v) {
  AvroValue out;
  out.tag = Tag::kLong;
  out.long_value = v;
  return out;
}

AvroValue AvroValue::Float(float v) {
  AvroValue out;
  out.tag = Tag::kFloat;
  out.float_value = v;
  return out;
}

AvroValue AvroValue::Double(double v) {
  AvroValue out;
  out.tag = Tag::kDouble;
  out.double_value = v;
  return out;
}

AvroValue AvroValue::Bytes(std::string v) {
  AvroValue out;
  out.tag = Tag::kBytes;
  out.bytes = std::move(v);
  return out;
}

AvroValue AvroValue::List(std::vector<AvroValue> items) {
  AvroValue out;
  out.tag = Tag::kList;
  out.items = std::move(items);
  return out;
}

AvroValue AvroValue::Map(std::vector<std::pair<std::string, AvroValue>> entries) {
  AvroValue out;
  out.tag = Tag::kMap;
  out.entries = std::move(entries);
  return out;
}


Status EncodeValue(const AvroNode& schema, const AvroValue& value, std::string* out) {
  size_t mark = out->size();
  Status st = Encode(schema, value, out);
  if (!st.ok()) out->resize(mark);
  return st;
}

Result<std::unique_ptr<FileReader>> FileReader::Open(std::string data, std::string name) {
  std::unique_ptr<FileReader> reader(new FileReader());
  reader->name_ = std::move(name);
  reader->data_ = std::move(data);
  const std::string& file = reader->name_;
  auto corrupt = [&file](const std::string& what) {
    return Status::Corruption(file + ": " + what);
  };

  std::string_view in = reader->data_;
  if (in.size() < sizeof(kMagic) || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("bad magic (not an Avro object container file)");
  }
  in.remove_prefix(sizeof(kMagic));

  // The header's metadata is an Avro map<bytes>.
  AvroNode bytes_node;
  bytes_node.kind = AvroKind::kBytes;
  AvroNode map_node;
  map_node.kind = AvroKind::kMap;
  map_node.values = std::make_shared<AvroNode>(bytes_node);
  auto meta = DecodeValue(map_node, &in);
  if (!meta.ok()) return corrupt("bad header metadata: " + meta.status().message());
  for (auto& [key, value] : meta->entries) {
    reader->metadata_[key] = std::move(value.bytes);
  }
  if (in.size() < kSyncSize) return corrupt("truncated header (no sync marker)");
  reader->sync_.assign(in.data(), kSyncSize);
  in.remove_prefix(kSyncSize);
  reader->pos_ = reader->data_.size() - in.size();

  auto codec = reader->Metadata("avro.codec");
  if (!codec || codec->empty() || *codec == "null") {
    reader->codec_ = Codec::kNull;
  } else if (*codec == "deflate") {
    reader->codec_ = Codec::kDeflate;
  } else {
    return Status::NotImplemented(file + ": unsupported avro codec '" + *codec + "'");
  }
  auto schema_json = reader->Metadata("avro.schema");
  if (!schema_json) return corrupt("header has no avro.schema");
  auto schema = ParseSchemaCached(*schema_json);
  if (!schema.ok()) return corrupt("bad avro.schema: " + schema.status().message());
  reader->schema_json_ = *schema_json;
  reader->schema_ = std::move(schema).value();
  return reader;
}

std::optional<std::string> FileReader::Metadata(std::string_view key) const {
  auto it = metadata_.find(std::string(key));
  if (it == metadata_.end()) return std::nullopt;
  return it->second;
}

Status FileReader::LoadBlock() {
  std::string_view in(data_);
  in.remove_prefix(pos_);
  size_t block_start = pos_;
  auto corrupt = [this, block_start](const std::string& what) {
    return Status::Corruption(name_ + ": " + what + " (block at offset " +
                              std::to_string(block_start) + ")");
  };
  auto count = ReadLong(&in);
  if (!count.ok()) return corrupt("truncated block header");
  auto size = ReadLong(&in);
  if (!size.ok()) return corrupt("truncated block header");
  if (*count < 0) return corrupt("negative block record count");
  if (*size < 0) return corrupt("negative block size");
  if (static_cast<uint64_t>(*size) > in.size()) return corrupt("truncated block");
  std::string_view payload = in.substr(0, static_cast<size_t>(*size));
  in.remove_prefix(static_cast<size_t>(*size));
  if (in.size() < kSyncSize) return corrupt("truncated block (missing sync marker)");
  if (in.substr(0, kSyncSize) != sync_) return corrupt("bad sync marker");
  in.remove_prefix(kSyncSize);

  if (codec_ == Codec::kDeflate) {
    auto inflated = Inflate(payload, &block_, &block_capacity_);
    if (!inflated.ok()) return corrupt(inflated.status().message());
    block_rest_ = std::string_view(block_.get(), *inflated);
  } else {
    block_rest_ = payload;
  }
  size_t min_size = MinEncodedSize(*schema_);
  if (min_size > 0 ? static_cast<uint64_t>(*count) > block_rest_.size() / min_size
                   : *count > kMaxZeroSizeItems) {
    return corrupt("block record count " + std::to_string(*count) + " exceeds the block size");
  }
  block_remaining_ = *count;
  pos_ = data_.size() - in.size();
  return Status::Ok();
}

Status FileReader::CheckBlockEnd() const {
  if (block_rest_.empty()) return Status::Ok();
  return Status::Corruption(name_ + ": " + std::to_string(block_rest_.size()) +
                            " trailing bytes after the last record of a block");
}

Result<std::optional<AvroValue>> FileReader::Next() {
  while (block_remaining_ == 0) {
    SKADE_RETURN_IF_ERROR(CheckBlockEnd());
    if (pos_ >= data_.size()) return std::optional<AvroValue>();
    SKADE_RETURN_IF_ERROR(LoadBlock());
  }
  auto value = DecodeValue(*schema_, &block_rest_);
  if (!value.ok()) {
    block_remaining_ = 0;
    block_rest_ = {};
    pos_ = data_.size();
    return Status::Corruption(name_ + ": bad record: " + value.status().message());
  }
  --block_remaining_;
  return std::optional<AvroValue>(std::move(value).value());
}

Result<int64_t> FileReader::NextBlock(std::string_view** records) {
  SKADE_RETURN_IF_ERROR(CheckBlockEnd());
  block_remaining_ = 0;
  // Empty blocks are legal; skip them.
  while (block_remaining_ == 0) {
    if (pos_ >= data_.size()) return 0;
    SKADE_RETURN_IF_ERROR(LoadBlock());
    if (block_remaining_ == 0) SKADE_RETURN_IF_ERROR(CheckBlockEnd());
  }
  const int64_t count = block_remaining_;
  block_remaining_ = 0;  // handed to the caller
  *records = &block_rest_;
  return count;
}

Result<std::unique_ptr<FileWriter>> FileWriter::Create(
    std::string schema_json, std::vector<std::pair<std::string, std::string>> metadata,
    Codec codec) {
  SKADE_ASSIGN_OR_RETURN(AvroNodePtr schema, ParseSchemaCached(schema_json));
  std::unique_ptr<FileWriter> writer(new FileWriter());
  writer->schema_ = std::move(schema);
  writer->codec_ = codec;
  writer->sync_ = RandomSync();

  std::string& out = writer->out_;
  out.append(kMagic, sizeof(kMagic));
  for (const auto& [key, value] : metadata) {
    if (key == "avro.schema" || key == "avro.codec") {
      return Status::InvalidArgument("metadata key '" + key + "' is reserved");
    }
  }
  WriteLong(static_cast<int64_t>(metadata.size() + 2), &out);
  WriteBytes("avro.schema", &out);
  WriteBytes(schema_json, &out);
  WriteBytes("avro.codec", &out);
  WriteBytes(codec == Codec::kDeflate ? "deflate" : "null", &out);
  for (const auto& [key, value] : metadata) {
    WriteBytes(key, &out);
    WriteBytes(value, &out);
  }
  WriteLong(0, &out);
  out.append(writer->sync_);
  return writer;
}

Status FileWriter::Append(const AvroValue& record) {
  if (finished_) return Status::InvalidArgument("avro writer already finished");
  SKADE_RETURN_IF_ERROR(EncodeValue(*schema_, record, &block_));
  ++block_count_;
  if (block_.size() >= kBlockTargetBytes) SKADE_RETURN_IF_ERROR(FlushBlock());
  return Status::Ok();
}

Status FileWriter::FlushBlock() {
  if (block_count_ == 0) return Status::Ok();
  std::string payload;
  if (codec_ == Codec::kDeflate) {
    SKADE_ASSIGN_OR_RETURN(payload, Deflate(block_));
  } else {
    payload = std::move(block_);
  }
  WriteLong(block_count_, &out_);
  WriteLong(static_cast<int64_t>(payload.size()), &out_);
  out_.append(payload);
  out_.append(sync_);
  block_.clear();
  block_count_ = 0;
  return Status::Ok();
}

Result<std::string> FileWriter::Finish() {
  if (finished_) return Status::InvalidArgument("avro writer already finished");
  SKADE_RETURN_IF_ERROR(FlushBlock());
  finished_ = true;
  return std::move(out_);
}

}  // namespace skade::iceberg::avro
