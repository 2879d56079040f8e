// Iceberg data types (spec "Schemas and Data Types"): primitives incl. decimal(P,S), fixed[L],
// uuid, nano timestamps and the v3 types, and the nested struct/list/map with field ids.
// Types are immutable values shared as TypePtr.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::iceberg {

enum class TypeId {
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kDecimal,
  kDate,
  kTime,
  kTimestamp,
  kTimestampTz,
  kTimestampNs,
  kTimestampTzNs,
  kString,
  kUuid,
  kFixed,
  kBinary,
  kUnknown,    // v3 "unknown" (always null)
  kVariant,    // v3, carried through; not readable by skade yet
  kGeometry,   // v3, carried through with its parameters in the type string
  kGeography,  // v3, idem
  kStruct,
  kList,
  kMap,
};

class Type;
using TypePtr = std::shared_ptr<const Type>;

// A field of a struct, or the element of a list, or the key/value of a map.
struct NestedField {
  int id = 0;
  std::string name;
  bool required = false;
  TypePtr type;
  std::string doc;  // empty when absent
  // Single-value JSON text of the spec's initial-default / write-default (v3), if present.
  std::optional<std::string> initial_default_json;
  std::optional<std::string> write_default_json;
};

class Type {
 public:
  static TypePtr Primitive(TypeId id);  // any id without parameters
  static TypePtr Decimal(int precision, int scale);
  static TypePtr Fixed(int length);
  // Geometry/geography keep their spec parameter text, e.g. "geometry(srid:4326)".
  static TypePtr ParameterizedV3(TypeId id, std::string spec_text);
  static TypePtr Struct(std::vector<NestedField> fields);
  static TypePtr List(int element_id, TypePtr element, bool element_required);
  static TypePtr Map(int key_id, TypePtr key, int value_id, TypePtr value, bool value_required);

  // Parses a primitive type string of the spec ("long", "decimal(9, 2)", "fixed[16]").
  static Result<TypePtr> ParsePrimitive(std::string_view text);

  TypeId id() const { return id_; }
  bool is_primitive() const { return id_ < TypeId::kStruct; }
  bool is_nested() const { return !is_primitive(); }
  int precision() const { return precision_; }  // decimal
  int scale() const { return scale_; }          // decimal
  int length() const { return length_; }        // fixed
  // Struct fields; for a list [element]; for a map [key, value].
  const std::vector<NestedField>& fields() const { return fields_; }
  const NestedField& element() const { return fields_.at(0); }  // list
  const NestedField& key() const { return fields_.at(0); }      // map
  const NestedField& value() const { return fields_.at(1); }    // map

  // The spec's string for primitives ("decimal(9,2)", "fixed[16]", "timestamptz");
  // "struct<1: a: required int, …>"-like text for nested types (display only).
  std::string ToString() const;

  Type(TypeId id, int precision, int scale, int length, std::string text,
       std::vector<NestedField> fields);

 private:
  TypeId id_;
  int precision_ = 0;
  int scale_ = 0;
  int length_ = 0;
  std::string text_;  // v3 parameterised types
  std::vector<NestedField> fields_;
};

bool TypeEquals(const Type& a, const Type& b);

// Whether the spec allows promoting `from` to `to` (int→long, float→double,
// decimal(P,S)→decimal(P',S) with P' ≥ P, date→timestamp[_ns] in v3), or they are equal.
bool CanPromote(const Type& from, const Type& to);

}  // namespace skade::iceberg
