#include "skade/iceberg/transform.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "skade/base/ascii.h"

namespace skade::iceberg {
namespace {

constexpr int64_t kMicrosPerHour = 3'600'000'000;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;
constexpr int64_t kNanosPerHour = kMicrosPerHour * 1000;
constexpr int64_t kNanosPerDay = kMicrosPerDay * 1000;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsTimestamp(TypeId id) {
  return id == TypeId::kTimestamp || id == TypeId::kTimestampTz || id == TypeId::kTimestampNs ||
         id == TypeId::kTimestampTzNs;
}

bool IsNanoTimestamp(TypeId id) {
  return id == TypeId::kTimestampNs || id == TypeId::kTimestampTzNs;
}

uint32_t RotateLeft(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Murmur3's per-block mixing of one 32-bit little-endian word.
uint32_t MixWord(uint32_t k) {
  k *= 0xcc9e2d51u;
  k = RotateLeft(k, 15);
  k *= 0x1b873593u;
  return k;
}

int32_t HashLong(int64_t v) {
  char bytes[8];
  uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  return Murmur3Hash32(std::string_view(bytes, 8));
}

// Appendix B note 5: IEEE bits of the value as a double, NaN and -0.0 canonicalised.
int32_t HashDouble(double d) {
  uint64_t bits = 0;
  if (std::isnan(d)) {
    bits = 0x7ff8000000000000ull;
  } else {
    if (d == 0.0) d = 0.0;
    std::memcpy(&bits, &d, sizeof(bits));
  }
  return HashLong(static_cast<int64_t>(bits));
}

// Keeps the first `n` Unicode code points of UTF-8 text (spec "Truncate Transform Details":
// strings truncate by code points, never splitting a character).
std::string TruncateUtf8(const std::string& s, int n) {
  int seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) {
      if (seen == n) return s.substr(0, i);
      ++seen;
    }
  }
  return s;
}

// v - (v mod W) with a non-negative remainder (spec "Truncate Transform Details", note 1).
// Computed in two's-complement wrapping arithmetic, like the reference implementation, so
// values within W of the type's minimum wrap instead of overflowing.
template <typename T, typename U>
T TruncateInteger(T v, T w) {
  T remainder = v % w;
  if (remainder < 0) remainder += w;
  return static_cast<T>(static_cast<U>(v) - static_cast<U>(remainder));
}

Status Unsupported(const Transform& t, const Type& source) {
  return Status::InvalidArgument("transform " + t.ToString() + " does not apply to " +
                                 source.ToString());
}

}  // namespace

Result<Transform> Transform::Parse(std::string_view raw) {
  std::string_view text = Trim(raw);
  std::string lower = AsciiLower(text);
  if (lower == "identity") return Identity();
  if (lower == "year") return Year();
  if (lower == "month") return Month();
  if (lower == "day") return Day();
  if (lower == "hour") return Hour();
  if (lower == "void") return Void();
  for (TransformKind kind : {TransformKind::kBucket, TransformKind::kTruncate}) {
    std::string name = kind == TransformKind::kBucket ? "bucket" : "truncate";
    if (lower.rfind(name, 0) != 0) continue;
    std::string_view rest = std::string_view(lower).substr(name.size());
    if (rest.size() < 3 || rest.front() != '[' || rest.back() != ']') {
      return Status::InvalidArgument("malformed transform '" + std::string(text) + "'");
    }
    std::string_view digits = rest.substr(1, rest.size() - 2);
    int64_t n = 0;
    bool ok = !digits.empty() && digits.size() <= 10;
    for (char c : digits) {
      ok = ok && c >= '0' && c <= '9';
      if (ok) n = n * 10 + (c - '0');
    }
    if (!ok || n <= 0 || n > std::numeric_limits<int32_t>::max()) {
      return Status::InvalidArgument("invalid parameter in transform '" + std::string(text) + "'");
    }
    return Transform(kind, static_cast<int>(n));
  }
  Transform unknown(TransformKind::kUnknown, 0);
  unknown.unknown_text_ = std::string(text);
  return unknown;
}

namespace {

// A date "YYYY-MM-DD" for days since 1970-01-01.
std::string DateText(int64_t days) {
  int y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", y, m, d);
  return buf;
}

// The ordinal a time transform produced: an int, or (a day partition some writers type as
// date) a date's days.
std::optional<int64_t> Ordinal(const Literal& value) {
  if (const auto* i = std::get_if<int32_t>(&value.value())) return *i;
  if (const auto* l = std::get_if<int64_t>(&value.value())) return *l;
  return std::nullopt;
}

}  // namespace

std::string Transform::HumanString(const std::optional<Literal>& value) const {
  if (!value) return "null";
  const std::optional<int64_t> n = Ordinal(*value);
  if (!n || kind_ == TransformKind::kIdentity || kind_ == TransformKind::kTruncate) return value->ToString();
  char buf[64];
  switch (kind_) {
    case TransformKind::kYear:
      std::snprintf(buf, sizeof buf, "%04lld", static_cast<long long>(1970 + *n));
      return buf;
    case TransformKind::kMonth:
      std::snprintf(buf, sizeof buf, "%04lld-%02lld", static_cast<long long>(1970 + FloorDiv(*n, 12)),
                    static_cast<long long>(*n - FloorDiv(*n, 12) * 12 + 1));
      return buf;
    case TransformKind::kDay:
      return DateText(*n);
    case TransformKind::kHour:
      std::snprintf(buf, sizeof buf, "-%02lld", static_cast<long long>(*n - FloorDiv(*n, 24) * 24));
      return DateText(FloorDiv(*n, 24)) + buf;
    default:
      return value->ToString();
  }
}

std::string Transform::ToString() const {
  switch (kind_) {
    case TransformKind::kIdentity:
      return "identity";
    case TransformKind::kBucket:
      return "bucket[" + std::to_string(param_) + "]";
    case TransformKind::kTruncate:
      return "truncate[" + std::to_string(param_) + "]";
    case TransformKind::kYear:
      return "year";
    case TransformKind::kMonth:
      return "month";
    case TransformKind::kDay:
      return "day";
    case TransformKind::kHour:
      return "hour";
    case TransformKind::kVoid:
      return "void";
    case TransformKind::kUnknown:
      return unknown_text_;
  }
  return unknown_text_;
}

// Source types per transform: spec "Partition Transforms" table.
bool Transform::CanTransform(const Type& source) const {
  const TypeId id = source.id();
  switch (kind_) {
    case TransformKind::kIdentity:
      return source.is_primitive() && id != TypeId::kVariant && id != TypeId::kGeometry &&
             id != TypeId::kGeography;
    case TransformKind::kBucket:
      switch (id) {
        case TypeId::kInt:
        case TypeId::kLong:
        case TypeId::kDecimal:
        case TypeId::kDate:
        case TypeId::kTime:
        case TypeId::kTimestamp:
        case TypeId::kTimestampTz:
        case TypeId::kTimestampNs:
        case TypeId::kTimestampTzNs:
        case TypeId::kString:
        case TypeId::kUuid:
        case TypeId::kFixed:
        case TypeId::kBinary:
          return true;
        default:
          return false;
      }
    case TransformKind::kTruncate:
      return id == TypeId::kInt || id == TypeId::kLong || id == TypeId::kDecimal ||
             id == TypeId::kString || id == TypeId::kBinary;
    case TransformKind::kYear:
    case TransformKind::kMonth:
    case TransformKind::kDay:
      return id == TypeId::kDate || IsTimestamp(id);
    case TransformKind::kHour:
      return IsTimestamp(id);
    case TransformKind::kVoid:
      return true;
    case TransformKind::kUnknown:
      return false;
  }
  return false;
}

Result<TypePtr> Transform::ResultType(const TypePtr& source) const {
  if (!CanTransform(*source)) return Unsupported(*this, *source);
  switch (kind_) {
    case TransformKind::kIdentity:
    case TransformKind::kTruncate:
    case TransformKind::kVoid:
      return source;
    default:
      return Type::Primitive(TypeId::kInt);
  }
}

Result<std::optional<Literal>> Transform::Apply(const std::optional<Literal>& value) const {
  if (kind_ == TransformKind::kVoid || !value.has_value()) return std::optional<Literal>();
  const Literal& v = *value;
  if (!CanTransform(*v.type())) return Unsupported(*this, *v.type());
  const TypeId id = v.type_id();
  switch (kind_) {
    case TransformKind::kIdentity:
      return std::optional<Literal>(v);
    case TransformKind::kBucket:
      return std::optional<Literal>(Literal::Int(BucketOf(v, param_)));
    case TransformKind::kTruncate:
      switch (id) {
        case TypeId::kInt:
          return std::optional<Literal>(Literal::Int(
              TruncateInteger<int32_t, uint32_t>(v.as_int(), static_cast<int32_t>(param_))));
        case TypeId::kLong:
          return std::optional<Literal>(
              Literal::Long(TruncateInteger<int64_t, uint64_t>(v.as_long(), param_)));
        case TypeId::kDecimal:
          // The width applies to the unscaled value (scaled_W = decimal(W, scale(v))).
          return std::optional<Literal>(Literal(
              v.type(), TruncateInteger<__int128, unsigned __int128>(v.as_decimal(), param_)));
        case TypeId::kString:
          return std::optional<Literal>(Literal(v.type(), TruncateUtf8(v.as_bytes(), param_)));
        default:  // binary: the first W bytes
          return std::optional<Literal>(
              Literal(v.type(), v.as_bytes().substr(0, static_cast<size_t>(param_))));
      }
    case TransformKind::kYear:
    case TransformKind::kMonth:
    case TransformKind::kDay:
    case TransformKind::kHour: {
      // Whole units since 1970-01-01 00:00, rounding toward negative infinity so pre-epoch
      // values land in the unit that contains them.
      int64_t days = 0;
      int64_t hours = 0;
      if (id == TypeId::kDate) {
        days = v.as_int();
      } else {
        bool nanos = IsNanoTimestamp(id);
        days = FloorDiv(v.as_long(), nanos ? kNanosPerDay : kMicrosPerDay);
        hours = FloorDiv(v.as_long(), nanos ? kNanosPerHour : kMicrosPerHour);
      }
      int64_t result = 0;
      if (kind_ == TransformKind::kHour) {
        result = hours;
      } else if (kind_ == TransformKind::kDay) {
        result = days;
      } else {
        int year = 0;
        unsigned month = 0, day = 0;
        CivilFromDays(days, &year, &month, &day);
        result = kind_ == TransformKind::kYear
                     ? int64_t{year} - 1970
                     : (int64_t{year} - 1970) * 12 + static_cast<int64_t>(month) - 1;
      }
      return std::optional<Literal>(Literal::Int(static_cast<int32_t>(result)));
    }
    default:
      return Status::NotImplemented("transform '" + ToString() + "' can't be applied");
  }
}

bool Transform::PreservesOrder() const {
  switch (kind_) {
    case TransformKind::kIdentity:
    case TransformKind::kTruncate:
    case TransformKind::kYear:
    case TransformKind::kMonth:
    case TransformKind::kDay:
    case TransformKind::kHour:
      return true;
    default:
      return false;
  }
}

// Murmur3 x86 32-bit with seed 0 (spec Appendix B).
int32_t Murmur3Hash32(std::string_view bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  uint32_t h = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t k = static_cast<uint32_t>(data[i]) | (static_cast<uint32_t>(data[i + 1]) << 8) |
                 (static_cast<uint32_t>(data[i + 2]) << 16) |
                 (static_cast<uint32_t>(data[i + 3]) << 24);
    h ^= MixWord(k);
    h = RotateLeft(h, 13);
    h = h * 5 + 0xe6546b64u;
  }
  uint32_t tail = 0;
  for (size_t j = n - i; j > 0; --j)
    tail |= static_cast<uint32_t>(data[i + j - 1]) << (8 * (j - 1));
  if (n - i > 0) h ^= MixWord(tail);
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return static_cast<int32_t>(h);
}

// Spec Appendix B: ints hash as longs so int → long promotion keeps buckets; nanosecond
// timestamps hash as their (floored) microseconds so both precisions agree.
int32_t BucketHash(const Literal& value) {
  switch (value.type_id()) {
    case TypeId::kBoolean:
      return HashLong(value.as_bool() ? 1 : 0);
    case TypeId::kInt:
    case TypeId::kDate:
      return HashLong(value.as_int());
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
      return HashLong(value.as_long());
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return HashLong(FloorDiv(value.as_long(), 1000));
    case TypeId::kFloat:
      return HashDouble(static_cast<double>(value.as_float()));
    case TypeId::kDouble:
      return HashDouble(value.as_double());
    default:
      // Decimal (minimal big-endian unscaled bytes), string (UTF-8), uuid (16 big-endian
      // bytes), fixed and binary: exactly the single-value binary form.
      return Murmur3Hash32(value.ToBinary());
  }
}

int32_t BucketOf(const Literal& value, int n) {
  return (BucketHash(value) & std::numeric_limits<int32_t>::max()) % n;
}

}  // namespace skade::iceberg
