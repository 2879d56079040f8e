#include "skade/iceberg/types.h"

#include <cctype>
#include <string>

namespace skade::iceberg {
namespace {

struct PrimitiveName {
  TypeId id;
  const char* name;
};

constexpr PrimitiveName kPrimitiveNames[] = {
    {TypeId::kBoolean, "boolean"},       {TypeId::kInt, "int"},
    {TypeId::kLong, "long"},             {TypeId::kFloat, "float"},
    {TypeId::kDouble, "double"},         {TypeId::kDate, "date"},
    {TypeId::kTime, "time"},             {TypeId::kTimestamp, "timestamp"},
    {TypeId::kTimestampTz, "timestamptz"}, {TypeId::kTimestampNs, "timestamp_ns"},
    {TypeId::kTimestampTzNs, "timestamptz_ns"}, {TypeId::kString, "string"},
    {TypeId::kUuid, "uuid"},             {TypeId::kBinary, "binary"},
    {TypeId::kUnknown, "unknown"},       {TypeId::kVariant, "variant"},
    {TypeId::kGeometry, "geometry"},     {TypeId::kGeography, "geography"},
};

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool ParseInt(std::string_view s, int* out) {
  std::string t = Trim(s);
  if (t.empty() || t.size() > 9) return false;
  int v = 0;
  for (char c : t) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Type::Type(TypeId id, int precision, int scale, int length, std::string text,
           std::vector<NestedField> fields)
    : id_(id), precision_(precision), scale_(scale), length_(length), text_(std::move(text)),
      fields_(std::move(fields)) {}

TypePtr Type::Primitive(TypeId id) {
  return std::make_shared<const Type>(id, 0, 0, 0, std::string(), std::vector<NestedField>{});
}

TypePtr Type::Decimal(int precision, int scale) {
  return std::make_shared<const Type>(TypeId::kDecimal, precision, scale, 0, std::string(),
                                      std::vector<NestedField>{});
}

TypePtr Type::Fixed(int length) {
  return std::make_shared<const Type>(TypeId::kFixed, 0, 0, length, std::string(),
                                      std::vector<NestedField>{});
}

TypePtr Type::ParameterizedV3(TypeId id, std::string spec_text) {
  return std::make_shared<const Type>(id, 0, 0, 0, std::move(spec_text),
                                      std::vector<NestedField>{});
}

TypePtr Type::Struct(std::vector<NestedField> fields) {
  return std::make_shared<const Type>(TypeId::kStruct, 0, 0, 0, std::string(), std::move(fields));
}

TypePtr Type::List(int element_id, TypePtr element, bool element_required) {
  NestedField f;
  f.id = element_id;
  f.name = "element";
  f.required = element_required;
  f.type = std::move(element);
  return std::make_shared<const Type>(TypeId::kList, 0, 0, 0, std::string(),
                                      std::vector<NestedField>{std::move(f)});
}

TypePtr Type::Map(int key_id, TypePtr key, int value_id, TypePtr value, bool value_required) {
  NestedField k;
  k.id = key_id;
  k.name = "key";
  k.required = true;
  k.type = std::move(key);
  NestedField v;
  v.id = value_id;
  v.name = "value";
  v.required = value_required;
  v.type = std::move(value);
  return std::make_shared<const Type>(TypeId::kMap, 0, 0, 0, std::string(),
                                      std::vector<NestedField>{std::move(k), std::move(v)});
}

Result<TypePtr> Type::ParsePrimitive(std::string_view raw) {
  std::string text = Trim(raw);
  for (const auto& p : kPrimitiveNames) {
    if (text == p.name) return Primitive(p.id);
  }
  auto bad = [&]() { return Status::InvalidArgument("unknown Iceberg type '" + text + "'"); };
  if (text.rfind("decimal(", 0) == 0 && text.back() == ')') {
    std::string_view inner = std::string_view(text).substr(8, text.size() - 9);
    size_t comma = inner.find(',');
    int p = 0, s = 0;
    if (comma == std::string_view::npos || !ParseInt(inner.substr(0, comma), &p) ||
        !ParseInt(inner.substr(comma + 1), &s)) {
      return bad();
    }
    if (p < 1 || p > 38 || s > p) {
      return Status::InvalidArgument("invalid decimal precision/scale in '" + text + "'");
    }
    return Decimal(p, s);
  }
  if (text.rfind("fixed[", 0) == 0 && text.back() == ']') {
    int len = 0;
    if (!ParseInt(std::string_view(text).substr(6, text.size() - 7), &len) || len < 1) {
      return bad();
    }
    return Fixed(len);
  }
  if ((text.rfind("geometry(", 0) == 0 || text.rfind("geography(", 0) == 0) &&
      text.back() == ')') {
    return ParameterizedV3(text[3] == 'm' ? TypeId::kGeometry : TypeId::kGeography, text);
  }
  return bad();
}

std::string Type::ToString() const {
  switch (id_) {
    case TypeId::kDecimal:
      return "decimal(" + std::to_string(precision_) + "," + std::to_string(scale_) + ")";
    case TypeId::kFixed:
      return "fixed[" + std::to_string(length_) + "]";
    case TypeId::kStruct: {
      std::string s = "struct<";
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(fields_[i].id) + ": " + fields_[i].name + ": " +
             (fields_[i].required ? "required " : "optional ") + fields_[i].type->ToString();
      }
      return s + ">";
    }
    case TypeId::kList:
      return "list<" + element().type->ToString() + ">";
    case TypeId::kMap:
      return "map<" + key().type->ToString() + ", " + value().type->ToString() + ">";
    default:
      break;
  }
  if (!text_.empty()) return text_;
  for (const auto& p : kPrimitiveNames) {
    if (p.id == id_) return p.name;
  }
  return "?";
}

bool TypeEquals(const Type& a, const Type& b) {
  if (a.id() != b.id() || a.precision() != b.precision() || a.scale() != b.scale() ||
      a.length() != b.length() || a.fields().size() != b.fields().size()) {
    return false;
  }
  if (a.is_primitive()) return a.ToString() == b.ToString();
  for (size_t i = 0; i < a.fields().size(); ++i) {
    const NestedField& x = a.fields()[i];
    const NestedField& y = b.fields()[i];
    if (x.id != y.id || x.name != y.name || x.required != y.required ||
        !TypeEquals(*x.type, *y.type)) {
      return false;
    }
  }
  return true;
}

bool CanPromote(const Type& from, const Type& to) {
  if (TypeEquals(from, to)) return true;
  switch (from.id()) {
    case TypeId::kInt:
      return to.id() == TypeId::kLong;
    case TypeId::kFloat:
      return to.id() == TypeId::kDouble;
    case TypeId::kDecimal:
      return to.id() == TypeId::kDecimal && to.scale() == from.scale() &&
             to.precision() >= from.precision();
    case TypeId::kDate:
      return to.id() == TypeId::kTimestamp || to.id() == TypeId::kTimestampNs;
    default:
      return false;
  }
}

}  // namespace skade::iceberg
