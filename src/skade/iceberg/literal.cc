#include "skade/iceberg/literal.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "skade/base/hex.h"
#include "skade/base/json_parse_internal.h"

namespace skade::iceberg {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;
constexpr int64_t kMicrosPerDay = kSecondsPerDay * kMicrosPerSecond;
constexpr int64_t kNanosPerDay = kSecondsPerDay * kNanosPerSecond;

// Units per second of the temporal types, as a count of fraction digits (6 = µs, 9 = ns).
int FractionDigits(TypeId id) {
  return (id == TypeId::kTimestampNs || id == TypeId::kTimestampTzNs) ? 9 : 6;
}

int64_t Pow10(int n) {
  int64_t v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

bool Int128Pow10(int n, __int128* out) {
  if (n < 0 || n > 38) return false;
  __int128 v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  *out = v;
  return true;
}

// Whether |v| fits in `precision` decimal digits.
bool FitsPrecision(__int128 v, int precision) {
  __int128 limit = 0;
  if (!Int128Pow10(precision, &limit)) return false;
  return v < limit && v > -limit;
}

void PutLittleEndian(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(std::string_view b) {
  uint64_t v = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
  }
  return v;
}

// Spec Appendix D: the unscaled value as big-endian two's complement in the fewest bytes
// that still carry the sign (a leading 0x00/0xff is dropped while the next byte has the
// same sign bit). Also the byte form Appendix B hashes.
std::string MinimalBigEndian(__int128 v) {
  unsigned __int128 u = static_cast<unsigned __int128>(v);
  std::string full(16, '\0');
  for (int i = 15; i >= 0; --i) {
    full[i] = static_cast<char>(static_cast<unsigned char>(u & 0xff));
    u >>= 8;
  }
  size_t start = 0;
  while (start < 15) {
    unsigned char b = static_cast<unsigned char>(full[start]);
    unsigned char next = static_cast<unsigned char>(full[start + 1]);
    if ((b == 0x00 && (next & 0x80) == 0) || (b == 0xff && (next & 0x80) != 0)) {
      ++start;
    } else {
      break;
    }
  }
  return full.substr(start);
}

__int128 FromBigEndian(std::string_view b) {
  // Sign-extend from the first byte, then shift the rest in.
  unsigned __int128 u =
      (static_cast<unsigned char>(b[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : b) u = (u << 8) | static_cast<unsigned char>(c);
  return static_cast<__int128>(u);
}

std::string Int128ToString(__int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  unsigned __int128 u =
      negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string digits;
  while (u > 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (negative) digits.push_back('-');
  return std::string(digits.rbegin(), digits.rend());
}

// "14.20" for unscaled 1420 at scale 2.
std::string FormatDecimal(__int128 unscaled, int scale) {
  std::string text = Int128ToString(unscaled);
  if (scale <= 0) return text;
  bool negative = !text.empty() && text[0] == '-';
  std::string digits = negative ? text.substr(1) : text;
  if (digits.size() <= static_cast<size_t>(scale)) {
    digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
  }
  digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  return negative ? "-" + digits : digits;
}

enum class ScaleRule { kExact, kPadOrTrimZeros };

// Parses "[-+]digits[.digits]" into an unscaled value at `scale`. With kExact the text must
// carry exactly `scale` fraction digits (the JSON form); otherwise fewer digits are padded
// and extra digits are accepted only if they are zeros (no rounding).
Result<__int128> ParseDecimal(std::string_view text, int precision, int scale, ScaleRule rule) {
  auto bad = [&]() {
    return Status::InvalidArgument("invalid decimal(" + std::to_string(precision) + "," +
                                   std::to_string(scale) + ") value '" + std::string(text) + "'");
  };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  std::string_view int_part, frac_part;
  size_t dot = text.find('.', i);
  if (dot == std::string_view::npos) {
    int_part = text.substr(i);
  } else {
    int_part = text.substr(i, dot - i);
    frac_part = text.substr(dot + 1);
  }
  if (int_part.empty() && frac_part.empty()) return bad();
  if (dot != std::string_view::npos && frac_part.empty() && rule == ScaleRule::kExact) return bad();
  for (char c : int_part) {
    if (c < '0' || c > '9') return bad();
  }
  for (char c : frac_part) {
    if (c < '0' || c > '9') return bad();
  }
  if (rule == ScaleRule::kExact && frac_part.size() != static_cast<size_t>(scale)) return bad();
  while (frac_part.size() > static_cast<size_t>(scale)) {
    if (frac_part.back() != '0') return bad();
    frac_part.remove_suffix(1);
  }
  __int128 v = 0;
  int digits = 0;
  auto push = [&](char c) {
    if (v != 0 || c != '0') ++digits;
    v = v * 10 + (c - '0');
    return digits <= 38;
  };
  for (char c : int_part) {
    if (!push(c)) return bad();
  }
  for (char c : frac_part) {
    if (!push(c)) return bad();
  }
  for (size_t k = frac_part.size(); k < static_cast<size_t>(scale); ++k) {
    if (!push('0')) return bad();
  }
  if (negative) v = -v;
  if (!FitsPrecision(v, precision)) return bad();
  return v;
}

std::string TwoDigits(int64_t v) {
  std::string s = std::to_string(v);
  return s.size() < 2 ? "0" + s : s;
}

std::string FormatDate(int64_t days) {
  int year = 0;
  unsigned month = 0, day = 0;
  CivilFromDays(days, &year, &month, &day);
  std::string y = std::to_string(year < 0 ? -static_cast<int64_t>(year) : year);
  if (y.size() < 4) y.insert(0, 4 - y.size(), '0');
  if (year < 0) y = "-" + y;
  return y + "-" + TwoDigits(month) + "-" + TwoDigits(day);
}

// "HH:MM:SS.ffffff" for a time of day given in 10^-digits second units.
std::string FormatTimeOfDay(int64_t units, int digits) {
  int64_t per_second = Pow10(digits);
  int64_t seconds = units / per_second;
  int64_t fraction = units % per_second;
  std::string frac = std::to_string(fraction);
  frac.insert(0, static_cast<size_t>(digits) - frac.size(), '0');
  return TwoDigits(seconds / 3600) + ":" + TwoDigits((seconds / 60) % 60) + ":" +
         TwoDigits(seconds % 60) + "." + frac;
}

std::string FormatTimestamp(int64_t v, int digits) {
  int64_t per_day = kSecondsPerDay * Pow10(digits);
  int64_t days = FloorDiv(v, per_day);
  int64_t in_day = v - days * per_day;
  return FormatDate(days) + "T" + FormatTimeOfDay(in_day, digits);
}

bool ParseDigits(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// ISO-8601 calendar date "[+-]YYYY-MM-DD" → days since epoch.
bool ParseDateText(std::string_view s, int64_t* days) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t dash = s.find('-');
  if (dash == std::string_view::npos || dash < 4 || s.size() != dash + 6 || s[dash + 3] != '-') {
    return false;
  }
  int64_t year = 0, month = 0, day = 0;
  if (!ParseDigits(s.substr(0, dash), &year) || year > 999'999 ||
      !ParseDigits(s.substr(dash + 1, 2), &month) || !ParseDigits(s.substr(dash + 4, 2), &day)) {
    return false;
  }
  if (negative) year = -year;
  if (month < 1 || month > 12 || day < 1) return false;
  static constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  int64_t max_day = kDaysInMonth[month - 1] + (month == 2 && leap ? 1 : 0);
  if (day > max_day) return false;
  *days = DaysFromCivil(static_cast<int>(year), static_cast<unsigned>(month),
                        static_cast<unsigned>(day));
  return true;
}

// "HH:MM[:SS[.fraction]]" → units of 10^-digits seconds. A fraction finer than the unit
// must be zero (no silent rounding).
bool ParseTimeText(std::string_view s, int digits, int64_t* units) {
  if (s.size() < 5 || s[2] != ':') return false;
  int64_t h = 0, m = 0, sec = 0, frac = 0;
  if (!ParseDigits(s.substr(0, 2), &h) || !ParseDigits(s.substr(3, 2), &m)) return false;
  std::string_view rest = s.substr(5);
  if (!rest.empty()) {
    if (rest.size() < 3 || rest[0] != ':' || !ParseDigits(rest.substr(1, 2), &sec)) return false;
    rest.remove_prefix(3);
    if (!rest.empty()) {
      if (rest[0] != '.' || rest.size() < 2 || rest.size() > 10) return false;
      std::string_view f = rest.substr(1);
      for (char c : f) {
        if (c < '0' || c > '9') return false;
      }
      std::string padded(f);
      while (padded.size() > static_cast<size_t>(digits)) {
        if (padded.back() != '0') return false;
        padded.pop_back();
      }
      padded.append(static_cast<size_t>(digits) - padded.size(), '0');
      if (!ParseDigits(padded, &frac)) return false;
    }
  }
  if (h > 23 || m > 59 || sec > 59) return false;
  *units = ((h * 60 + m) * 60 + sec) * Pow10(digits) + frac;
  return true;
}

enum class ZoneRule { kForbidden, kRequired, kOptional };

// "date'T'time[offset]" → units since epoch (UTC when an offset is given). Offsets are "Z"
// or "±HH:MM".
bool ParseTimestampText(std::string_view s, int digits, ZoneRule zone, int64_t* out) {
  size_t t = s.find('T');
  if (t == std::string_view::npos) return false;
  std::string_view date = s.substr(0, t);
  std::string_view rest = s.substr(t + 1);
  int64_t offset_seconds = 0;
  bool has_offset = false;
  if (!rest.empty() && (rest.back() == 'Z' || rest.back() == 'z')) {
    has_offset = true;
    rest.remove_suffix(1);
  } else if (rest.size() > 6 && (rest[rest.size() - 6] == '+' || rest[rest.size() - 6] == '-') &&
             rest[rest.size() - 3] == ':') {
    std::string_view off = rest.substr(rest.size() - 6);
    int64_t oh = 0, om = 0;
    if (!ParseDigits(off.substr(1, 2), &oh) || !ParseDigits(off.substr(4, 2), &om) || oh > 18 ||
        om > 59) {
      return false;
    }
    offset_seconds = (oh * 60 + om) * 60 * (off[0] == '-' ? -1 : 1);
    has_offset = true;
    rest.remove_suffix(6);
  }
  if (has_offset && zone == ZoneRule::kForbidden) return false;
  if (!has_offset && zone == ZoneRule::kRequired) return false;
  int64_t days = 0, units = 0;
  if (!ParseDateText(date, &days) || !ParseTimeText(rest, digits, &units)) return false;
  int64_t per_second = Pow10(digits);
  __int128 total = static_cast<__int128>(days) * kSecondsPerDay * per_second + units -
                   static_cast<__int128>(offset_seconds) * per_second;
  if (total > std::numeric_limits<int64_t>::max() || total < std::numeric_limits<int64_t>::min()) {
    return false;
  }
  *out = static_cast<int64_t>(total);
  return true;
}


std::string UuidToString(std::string_view raw) {
  std::string hex = HexEncode(raw);
  if (hex.size() != 32) return hex;
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

bool ParseUuidText(std::string_view s, std::string* raw) {
  if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return false;
  std::string hex;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;
    hex.push_back(s[i]);
  }
  auto bytes = HexDecode(hex);
  if (!bytes) return false;
  *raw = std::move(*bytes);
  return true;
}

// Shortest text that reads back to the same value, "1.0" style for integral values.
template <typename F>
std::string FormatFloating(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

Literal Make(TypeId id, Literal::Value v) { return Literal(Type::Primitive(id), std::move(v)); }

Status NotRepresentable(const Literal& v, const Type& target) {
  return Status::InvalidArgument("cannot convert " + v.type()->ToString() + " value " +
                                 v.ToString() + " to " + target.ToString());
}

// Converts a decimal unscaled value between scales, exactly or not at all.
bool Rescale(__int128 v, int from_scale, int to_scale, __int128* out) {
  if (to_scale == from_scale) {
    *out = v;
    return true;
  }
  __int128 factor = 0;
  if (to_scale > from_scale) {
    if (!Int128Pow10(to_scale - from_scale, &factor)) return false;
    return !__builtin_mul_overflow(v, factor, out);
  }
  if (!Int128Pow10(from_scale - to_scale, &factor)) return false;
  if (v % factor != 0) return false;
  *out = v / factor;
  return true;
}

// Floating → decimal only when the value's shortest decimal text fits the scale exactly.
template <typename F>
Result<Literal> FloatingToDecimal(const Literal& lit, F v, const TypePtr& target) {
  if (!std::isfinite(v)) return NotRepresentable(lit, *target);
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  if (res.ec != std::errc()) return NotRepresentable(lit, *target);
  auto parsed = ParseDecimal(std::string_view(buf, static_cast<size_t>(res.ptr - buf)),
                             target->precision(), target->scale(), ScaleRule::kPadOrTrimZeros);
  if (!parsed.ok()) return NotRepresentable(lit, *target);
  return Literal(target, *parsed);
}

Result<Literal> IntegerToDecimal(const Literal& lit, int64_t v, const TypePtr& target) {
  __int128 unscaled = 0;
  if (!Rescale(v, 0, target->scale(), &unscaled) || !FitsPrecision(unscaled, target->precision())) {
    return NotRepresentable(lit, *target);
  }
  return Literal(target, unscaled);
}

bool IsTimestamp(TypeId id) {
  return id == TypeId::kTimestamp || id == TypeId::kTimestampTz || id == TypeId::kTimestampNs ||
         id == TypeId::kTimestampTzNs;
}

// Parses a value's text form for `target` (the CastTo string rules and the JSON string
// payloads share this).
Result<Literal> ParseText(std::string_view s, const TypePtr& target, ScaleRule decimal_rule,
                          ZoneRule tz_rule) {
  auto bad = [&]() {
    return Status::InvalidArgument("cannot read '" + std::string(s) + "' as " + target->ToString());
  };
  switch (target->id()) {
    case TypeId::kString:
      return Literal(target, std::string(s));
    case TypeId::kDate: {
      int64_t days = 0;
      if (!ParseDateText(s, &days) || days > std::numeric_limits<int32_t>::max() ||
          days < std::numeric_limits<int32_t>::min()) {
        return bad();
      }
      return Literal(target, static_cast<int32_t>(days));
    }
    case TypeId::kTime: {
      int64_t micros = 0;
      if (!ParseTimeText(s, 6, &micros)) return bad();
      return Literal(target, micros);
    }
    case TypeId::kTimestamp:
    case TypeId::kTimestampNs: {
      int64_t v = 0;
      if (!ParseTimestampText(s, FractionDigits(target->id()), ZoneRule::kForbidden, &v)) {
        return bad();
      }
      return Literal(target, v);
    }
    case TypeId::kTimestampTz:
    case TypeId::kTimestampTzNs: {
      int64_t v = 0;
      if (!ParseTimestampText(s, FractionDigits(target->id()), tz_rule, &v)) return bad();
      return Literal(target, v);
    }
    case TypeId::kUuid: {
      std::string raw;
      if (!ParseUuidText(s, &raw)) return bad();
      return Literal(target, std::move(raw));
    }
    case TypeId::kDecimal: {
      auto v = ParseDecimal(s, target->precision(), target->scale(), decimal_rule);
      if (!v.ok()) return v.status();
      return Literal(target, *v);
    }
    case TypeId::kFixed:
    case TypeId::kBinary: {
      auto decoded = HexDecode(s);
      if (!decoded) return bad();
      std::string raw = std::move(*decoded);
      if (target->id() == TypeId::kFixed && raw.size() != static_cast<size_t>(target->length())) {
        return bad();
      }
      return Literal(target, std::move(raw));
    }
    default:
      return bad();
  }
}

}  // namespace

Literal Literal::Boolean(bool v) { return Make(TypeId::kBoolean, v); }
Literal Literal::Int(int32_t v) { return Make(TypeId::kInt, v); }
Literal Literal::Long(int64_t v) { return Make(TypeId::kLong, v); }
Literal Literal::Float(float v) { return Make(TypeId::kFloat, v); }
Literal Literal::Double(double v) { return Make(TypeId::kDouble, v); }
Literal Literal::Decimal(__int128 unscaled, int precision, int scale) {
  return Literal(Type::Decimal(precision, scale), unscaled);
}
Literal Literal::Date(int32_t days) { return Make(TypeId::kDate, days); }
Literal Literal::Time(int64_t micros) { return Make(TypeId::kTime, micros); }
Literal Literal::Timestamp(int64_t micros) { return Make(TypeId::kTimestamp, micros); }
Literal Literal::TimestampTz(int64_t micros) { return Make(TypeId::kTimestampTz, micros); }
Literal Literal::TimestampNs(int64_t nanos) { return Make(TypeId::kTimestampNs, nanos); }
Literal Literal::TimestampTzNs(int64_t nanos) { return Make(TypeId::kTimestampTzNs, nanos); }
Literal Literal::String(std::string v) { return Make(TypeId::kString, std::move(v)); }
Literal Literal::Uuid(std::string raw16) { return Make(TypeId::kUuid, std::move(raw16)); }
Literal Literal::Fixed(std::string raw) {
  int length = static_cast<int>(raw.size());
  return Literal(Type::Fixed(length), std::move(raw));
}
Literal Literal::Binary(std::string raw) { return Make(TypeId::kBinary, std::move(raw)); }

bool Literal::IsNaN() const {
  if (std::holds_alternative<float>(value_)) return std::isnan(std::get<float>(value_));
  if (std::holds_alternative<double>(value_)) return std::isnan(std::get<double>(value_));
  return false;
}

std::string Literal::ToBinary() const {
  std::string out;
  switch (type_id()) {
    case TypeId::kBoolean:
      out.push_back(as_bool() ? '\x01' : '\x00');
      break;
    case TypeId::kInt:
    case TypeId::kDate:
      PutLittleEndian(&out, static_cast<uint32_t>(as_int()), 4);
      break;
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      PutLittleEndian(&out, static_cast<uint64_t>(as_long()), 8);
      break;
    case TypeId::kFloat: {
      uint32_t bits = 0;
      float f = as_float();
      std::memcpy(&bits, &f, sizeof(bits));
      PutLittleEndian(&out, bits, 4);
      break;
    }
    case TypeId::kDouble: {
      uint64_t bits = 0;
      double d = as_double();
      std::memcpy(&bits, &d, sizeof(bits));
      PutLittleEndian(&out, bits, 8);
      break;
    }
    case TypeId::kDecimal:
      out = MinimalBigEndian(as_decimal());
      break;
    default:
      if (std::holds_alternative<std::string>(value_)) out = as_bytes();
      break;
  }
  return out;
}

Result<Literal> Literal::FromBinary(const TypePtr& type, std::string_view bytes) {
  auto wrong_length = [&]() {
    return Status::Corruption("a " + type->ToString() + " value can't be " +
                              std::to_string(bytes.size()) + " bytes");
  };
  switch (type->id()) {
    case TypeId::kBoolean:
      if (bytes.size() != 1) return wrong_length();
      return Literal(type, bytes[0] != 0);
    case TypeId::kInt:
    case TypeId::kDate:
      if (bytes.size() != 4) return wrong_length();
      return Literal(type, static_cast<int32_t>(static_cast<uint32_t>(GetLittleEndian(bytes))));
    case TypeId::kLong:
      // A 4-byte bound was written while the column was still an int (spec "Schema
      // Evolution": int → long promotion keeps old files and their bounds).
      if (bytes.size() == 4) {
        return Literal(type, static_cast<int64_t>(static_cast<int32_t>(
                                 static_cast<uint32_t>(GetLittleEndian(bytes)))));
      }
      if (bytes.size() != 8) return wrong_length();
      return Literal(type, static_cast<int64_t>(GetLittleEndian(bytes)));
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      if (bytes.size() != 8) return wrong_length();
      return Literal(type, static_cast<int64_t>(GetLittleEndian(bytes)));
    case TypeId::kFloat: {
      if (bytes.size() != 4) return wrong_length();
      uint32_t bits = static_cast<uint32_t>(GetLittleEndian(bytes));
      float f = 0;
      std::memcpy(&f, &bits, sizeof(f));
      return Literal(type, f);
    }
    case TypeId::kDouble: {
      if (bytes.size() == 4) {  // written as float before float → double promotion
        uint32_t bits = static_cast<uint32_t>(GetLittleEndian(bytes));
        float f = 0;
        std::memcpy(&f, &bits, sizeof(f));
        return Literal(type, static_cast<double>(f));
      }
      if (bytes.size() != 8) return wrong_length();
      uint64_t bits = GetLittleEndian(bytes);
      double d = 0;
      std::memcpy(&d, &bits, sizeof(d));
      return Literal(type, d);
    }
    case TypeId::kDecimal:
      if (bytes.empty() || bytes.size() > 16) return wrong_length();
      return Literal(type, FromBigEndian(bytes));
    case TypeId::kUuid:
      if (bytes.size() != 16) return wrong_length();
      return Literal(type, std::string(bytes));
    case TypeId::kFixed:
      if (bytes.size() != static_cast<size_t>(type->length())) return wrong_length();
      return Literal(type, std::string(bytes));
    case TypeId::kString:
    case TypeId::kBinary:
      return Literal(type, std::string(bytes));
    default:
      return Status::NotImplemented("no single-value binary form for " + type->ToString());
  }
}

std::string Literal::ToJson() const {
  switch (type_id()) {
    case TypeId::kBoolean:
      return as_bool() ? "true" : "false";
    case TypeId::kInt:
      return std::to_string(as_int());
    case TypeId::kLong:
      return std::to_string(as_long());
    case TypeId::kFloat:
      return FormatFloating(as_float());
    case TypeId::kDouble:
      return FormatFloating(as_double());
    case TypeId::kString:
      return nlohmann::json(as_bytes())
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    default:
      // Every other type is a JSON string of its text form (Appendix D), which never needs
      // escaping.
      return "\"" + ToString() + "\"";
  }
}

Result<Literal> Literal::FromJson(const TypePtr& type, std::string_view json_text) {
  auto bad = [&]() {
    return Status::InvalidArgument("invalid JSON " + type->ToString() +
                                   " value: " + std::string(json_text));
  };
  std::string_view trimmed = json_text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
    trimmed.remove_prefix(1);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back())))
    trimmed.remove_suffix(1);
  if (type->id() == TypeId::kFloat || type->id() == TypeId::kDouble) {
    // Non-finite values are written as bare tokens (JSON has no number for them).
    double special = 0;
    bool is_special = true;
    if (trimmed == "NaN") {
      special = std::numeric_limits<double>::quiet_NaN();
    } else if (trimmed == "Infinity") {
      special = std::numeric_limits<double>::infinity();
    } else if (trimmed == "-Infinity") {
      special = -std::numeric_limits<double>::infinity();
    } else {
      is_special = false;
    }
    if (is_special) {
      if (type->id() == TypeId::kFloat) return Literal(type, static_cast<float>(special));
      return Literal(type, special);
    }
  }
  auto tree = ParseJson(trimmed, "a value");
  if (!tree.ok()) return bad();
  nlohmann::json j = std::move(tree).value();
  switch (type->id()) {
    case TypeId::kBoolean:
      if (!j.is_boolean()) return bad();
      return Literal(type, j.get<bool>());
    case TypeId::kInt: {
      if (!j.is_number_integer()) return bad();
      if (j.is_number_unsigned() &&
          j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        return bad();
      }
      int64_t v = j.get<int64_t>();
      if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
        return bad();
      }
      return Literal(type, static_cast<int32_t>(v));
    }
    case TypeId::kLong:
      if (!j.is_number_integer()) return bad();
      if (j.is_number_unsigned() &&
          j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return bad();
      }
      return Literal(type, j.get<int64_t>());
    case TypeId::kFloat:
      if (!j.is_number()) return bad();
      return Literal(type, static_cast<float>(j.get<double>()));
    case TypeId::kDouble:
      if (!j.is_number()) return bad();
      return Literal(type, j.get<double>());
    default:
      break;
  }
  if (!j.is_string()) return bad();
  const std::string& s = j.get_ref<const std::string&>();
  auto parsed = ParseText(s, type, ScaleRule::kExact, ZoneRule::kRequired);
  if (!parsed.ok()) return bad();
  return parsed;
}

std::string Literal::ToString() const {
  switch (type_id()) {
    case TypeId::kBoolean:
      return as_bool() ? "true" : "false";
    case TypeId::kInt:
      return std::to_string(as_int());
    case TypeId::kLong:
      return std::to_string(as_long());
    case TypeId::kFloat:
      return FormatFloating(as_float());
    case TypeId::kDouble:
      return FormatFloating(as_double());
    case TypeId::kDecimal:
      return FormatDecimal(as_decimal(), type_->scale());
    case TypeId::kDate:
      return FormatDate(as_int());
    case TypeId::kTime:
      return FormatTimeOfDay(as_long(), 6);
    case TypeId::kTimestamp:
    case TypeId::kTimestampNs:
      return FormatTimestamp(as_long(), FractionDigits(type_id()));
    case TypeId::kTimestampTz:
    case TypeId::kTimestampTzNs:
      return FormatTimestamp(as_long(), FractionDigits(type_id())) + "+00:00";
    case TypeId::kString:
      return as_bytes();
    case TypeId::kUuid:
      return UuidToString(as_bytes());
    case TypeId::kFixed:
    case TypeId::kBinary:
      return HexEncode(as_bytes());
    default:
      return "?";
  }
}

Result<Literal> Literal::CastTo(const TypePtr& target) const {
  if (TypeEquals(*type_, *target)) return Literal(target, value_);
  const TypeId to = target->id();
  switch (type_id()) {
    case TypeId::kInt: {
      int32_t v = as_int();
      switch (to) {
        case TypeId::kLong:
          return Literal(target, static_cast<int64_t>(v));
        case TypeId::kFloat:
          return Literal(target, static_cast<float>(v));
        case TypeId::kDouble:
          return Literal(target, static_cast<double>(v));
        case TypeId::kDate:
          return Literal(target, v);
        case TypeId::kDecimal:
          return IntegerToDecimal(*this, v, target);
        default:
          break;
      }
      break;
    }
    case TypeId::kLong: {
      int64_t v = as_long();
      switch (to) {
        case TypeId::kInt:
        case TypeId::kDate:
          if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
            return NotRepresentable(*this, *target);
          }
          return Literal(target, static_cast<int32_t>(v));
        case TypeId::kFloat:
          return Literal(target, static_cast<float>(v));
        case TypeId::kDouble:
          return Literal(target, static_cast<double>(v));
        case TypeId::kTime:
        case TypeId::kTimestamp:
        case TypeId::kTimestampTz:
        case TypeId::kTimestampNs:
        case TypeId::kTimestampTzNs:
          return Literal(target, v);
        case TypeId::kDecimal:
          return IntegerToDecimal(*this, v, target);
        default:
          break;
      }
      break;
    }
    case TypeId::kFloat: {
      float v = as_float();
      if (to == TypeId::kDouble) return Literal(target, static_cast<double>(v));
      if (to == TypeId::kDecimal) return FloatingToDecimal(*this, v, target);
      break;
    }
    case TypeId::kDouble: {
      double v = as_double();
      if (to == TypeId::kFloat) {
        // Like a SQL cast: values in float range narrow; others are not representable.
        if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max()) {
          return NotRepresentable(*this, *target);
        }
        return Literal(target, static_cast<float>(v));
      }
      if (to == TypeId::kDecimal) return FloatingToDecimal(*this, v, target);
      break;
    }
    case TypeId::kDecimal: {
      if (to != TypeId::kDecimal) break;
      __int128 out = 0;
      if (!Rescale(as_decimal(), type_->scale(), target->scale(), &out) ||
          !FitsPrecision(out, target->precision())) {
        return NotRepresentable(*this, *target);
      }
      return Literal(target, out);
    }
    case TypeId::kDate: {
      int64_t days = as_int();
      if (to == TypeId::kTimestamp || to == TypeId::kTimestampTz) {
        return Literal(target, days * kMicrosPerDay);
      }
      if (to == TypeId::kTimestampNs || to == TypeId::kTimestampTzNs) {
        int64_t nanos = 0;
        if (__builtin_mul_overflow(days, kNanosPerDay, &nanos))
          return NotRepresentable(*this, *target);
        return Literal(target, nanos);
      }
      break;
    }
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs: {
      int64_t v = as_long();
      int from_digits = FractionDigits(type_id());
      if (IsTimestamp(to)) {
        int to_digits = FractionDigits(to);
        if (to_digits == from_digits) return Literal(target, v);
        if (to_digits > from_digits) {
          int64_t out = 0;
          if (__builtin_mul_overflow(v, int64_t{1000}, &out))
            return NotRepresentable(*this, *target);
          return Literal(target, out);
        }
        if (v % 1000 != 0) return NotRepresentable(*this, *target);
        return Literal(target, v / 1000);
      }
      if (to == TypeId::kDate) {
        // Only midnight converts: a date column compared with a mid-day instant has no
        // equivalent date literal.
        int64_t per_day = from_digits == 9 ? kNanosPerDay : kMicrosPerDay;
        if (v % per_day != 0) return NotRepresentable(*this, *target);
        return Literal(target, static_cast<int32_t>(v / per_day));
      }
      break;
    }
    case TypeId::kString: {
      if (to == TypeId::kFixed || to == TypeId::kBinary) break;
      auto parsed = ParseText(as_bytes(), target, ScaleRule::kPadOrTrimZeros, ZoneRule::kOptional);
      if (!parsed.ok()) return NotRepresentable(*this, *target);
      return parsed;
    }
    case TypeId::kFixed:
      if (to == TypeId::kBinary) return Literal(target, as_bytes());
      if (to == TypeId::kFixed && static_cast<int>(as_bytes().size()) == target->length()) {
        return Literal(target, as_bytes());
      }
      break;
    case TypeId::kBinary:
      if (to == TypeId::kFixed && static_cast<int>(as_bytes().size()) == target->length()) {
        return Literal(target, as_bytes());
      }
      break;
    default:
      break;
  }
  return NotRepresentable(*this, *target);
}

bool operator==(const Literal& a, const Literal& b) {
  return TypeEquals(*a.type(), *b.type()) && CompareLiterals(a, b) == 0;
}

namespace {

template <typename F>
int CompareFloating(F a, F b) {
  bool a_nan = std::isnan(a), b_nan = std::isnan(b);
  if (a_nan || b_nan) return static_cast<int>(a_nan) - static_cast<int>(b_nan);
  return a < b ? -1 : (a > b ? 1 : 0);
}

int CompareBytes(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

int CompareDecimals(__int128 a, int a_scale, __int128 b, int b_scale) {
  if (a_scale != b_scale) {
    // Bring both to the larger scale; an overflow means that side's magnitude is beyond
    // anything the other can hold, so its sign decides.
    __int128 scaled = 0;
    if (a_scale < b_scale) {
      if (!Rescale(a, a_scale, b_scale, &scaled)) return a < 0 ? -1 : 1;
      a = scaled;
    } else {
      if (!Rescale(b, b_scale, a_scale, &scaled)) return b < 0 ? 1 : -1;
      b = scaled;
    }
  }
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace

int CompareLiterals(const Literal& a, const Literal& b) {
  const Literal::Value& x = a.value();
  const Literal::Value& y = b.value();
  if (x.index() != y.index()) return x.index() < y.index() ? -1 : 1;  // a caller bug
  switch (x.index()) {
    case 0:
      return static_cast<int>(a.as_bool()) - static_cast<int>(b.as_bool());
    case 1:
      return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    case 2:
      return a.as_long() < b.as_long() ? -1 : (a.as_long() > b.as_long() ? 1 : 0);
    case 3:
      return CompareFloating(a.as_float(), b.as_float());
    case 4:
      return CompareFloating(a.as_double(), b.as_double());
    case 5:
      return CompareDecimals(a.as_decimal(), a.type()->scale(), b.as_decimal(), b.type()->scale());
    default:
      return CompareBytes(a.as_bytes(), b.as_bytes());
  }
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Proleptic Gregorian conversions. Counting years from March 1st puts the leap day at the
// end of the year, so a day-of-year maps to a month with one linear formula; 400-year eras
// (146097 days) make the arithmetic exact for negative day numbers too.
void CivilFromDays(int64_t days, int* year, unsigned* month, unsigned* day) {
  constexpr int64_t kDaysPerEra = 146'097;
  constexpr int64_t kEpochFromMarch0000 = 719'468;  // 0000-03-01 to 1970-01-01
  int64_t shifted = days + kEpochFromMarch0000;
  int64_t era = FloorDiv(shifted, kDaysPerEra);
  int64_t day_of_era = shifted - era * kDaysPerEra;  // [0, 146096]
  int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  int64_t month_from_march = (5 * day_of_year + 2) / 153;  // 0 = March … 11 = February
  *day = static_cast<unsigned>(day_of_year - (153 * month_from_march + 2) / 5 + 1);
  *month =
      static_cast<unsigned>(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
  *year = static_cast<int>(year_of_era + era * 400 + (*month <= 2 ? 1 : 0));
}

int64_t DaysFromCivil(int year, unsigned month, unsigned day) {
  int64_t y = static_cast<int64_t>(year) - (month <= 2 ? 1 : 0);
  int64_t era = FloorDiv(y, 400);
  int64_t year_of_era = y - era * 400;
  int64_t month_from_march = month > 2 ? month - 3 : month + 9;
  int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
  int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146'097 + day_of_era - 719'468;
}

}  // namespace skade::iceberg
