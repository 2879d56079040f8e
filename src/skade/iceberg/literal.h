// Literal: one value of an Iceberg primitive type, with the spec's orderings, its single-value
// binary serialisation (Appendix D, used for bounds and partition summaries), its single-value
// JSON serialisation, and conversions between types for expression binding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "skade/base/status.h"
#include "skade/iceberg/types.h"

namespace skade::iceberg {

// Value representation by type:
//   boolean: bool; int, date: int32_t (days); long, time (µs), timestamp[tz] (µs),
//   timestamp[tz]_ns (ns): int64_t; float; double; decimal: __int128 unscaled value (the
//   scale is the type's); string: UTF-8 std::string; uuid: 16 raw big-endian bytes;
//   fixed, binary: raw bytes (std::string).
class Literal {
 public:
  using Value = std::variant<bool, int32_t, int64_t, float, double, __int128, std::string>;

  Literal(TypePtr type, Value value) : type_(std::move(type)), value_(std::move(value)) {}

  static Literal Boolean(bool v);
  static Literal Int(int32_t v);
  static Literal Long(int64_t v);
  static Literal Float(float v);
  static Literal Double(double v);
  static Literal Decimal(__int128 unscaled, int precision, int scale);
  static Literal Date(int32_t days);
  static Literal Time(int64_t micros);
  static Literal Timestamp(int64_t micros);
  static Literal TimestampTz(int64_t micros);
  static Literal TimestampNs(int64_t nanos);
  static Literal TimestampTzNs(int64_t nanos);
  static Literal String(std::string v);
  static Literal Uuid(std::string raw16);
  static Literal Fixed(std::string raw);
  static Literal Binary(std::string raw);

  const TypePtr& type() const { return type_; }
  TypeId type_id() const { return type_->id(); }
  const Value& value() const { return value_; }

  bool as_bool() const { return std::get<bool>(value_); }
  int32_t as_int() const { return std::get<int32_t>(value_); }
  int64_t as_long() const { return std::get<int64_t>(value_); }
  float as_float() const { return std::get<float>(value_); }
  double as_double() const { return std::get<double>(value_); }
  __int128 as_decimal() const { return std::get<__int128>(value_); }
  const std::string& as_bytes() const { return std::get<std::string>(value_); }

  // Whether a float/double value is NaN.
  bool IsNaN() const;

  // Spec Appendix D single-value binary serialisation (little-endian numbers, big-endian
  // minimal two's-complement decimals, UTF-8 strings, 16-byte uuids).
  std::string ToBinary() const;
  // Parses that serialisation for `type`; kCorruption on a wrong length.
  static Result<Literal> FromBinary(const TypePtr& type, std::string_view bytes);

  // Spec Appendix D single-value JSON serialisation, as JSON text ("1", "\"2024-01-02\"",
  // "\"14.20\"", "\"0a0b\"" hex for binary/fixed).
  std::string ToJson() const;
  static Result<Literal> FromJson(const TypePtr& type, std::string_view json_text);

  // A human-readable rendering (dates/timestamps ISO-8601, decimals with the scale).
  std::string ToString() const;

  // This value converted to `target` for binding (int→long, long→int within range,
  // string→date/timestamp/uuid/decimal, decimal rescale without loss, …). kInvalidArgument
  // when not representable.
  Result<Literal> CastTo(const TypePtr& target) const;

  friend bool operator==(const Literal& a, const Literal& b);

 private:
  TypePtr type_;
  Value value_;
};

// Orders two literals of the same type id (spec ordering: signed numbers, unsigned
// byte-wise for strings/binary/fixed/uuid). NaN sorts above all other floats.
// Returns <0, 0, >0.
int CompareLiterals(const Literal& a, const Literal& b);

// Converts days since epoch to (year, month, day) and back; ISO text helpers used by
// literals and transforms.
void CivilFromDays(int64_t days, int* year, unsigned* month, unsigned* day);
int64_t DaysFromCivil(int year, unsigned month, unsigned day);
// Floor division that rounds toward negative infinity.
int64_t FloorDiv(int64_t a, int64_t b);

}  // namespace skade::iceberg
