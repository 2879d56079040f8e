#include "skade/engine/duck_text_internal.h"

#include <algorithm>
#include <cstdlib>

#include "skade/base/hex.h"
#include "skade/base/uuid.h"

namespace skade::engine {
namespace {

using iceberg::Literal;
using iceberg::TypeId;

// "123.45" at `scale` → unscaled 12345; nullopt if the digits after the point exceed the scale.
std::optional<__int128> ParseDecimal(std::string_view s, int scale) {
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  size_t dot = s.find('.');
  std::string digits(s.substr(0, dot));
  std::string frac = dot == std::string_view::npos ? "" : std::string(s.substr(dot + 1));
  if (static_cast<int>(frac.size()) > scale) return std::nullopt;
  frac.append(static_cast<size_t>(scale) - frac.size(), '0');
  auto v = ParseInt128(digits + frac);
  if (!v) return std::nullopt;
  return neg ? -*v : *v;
}

// Parses "YYYY-MM-DD" into days since the epoch.
std::optional<int64_t> ParseDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  auto y = ParseInt<int>(s.substr(0, 4));
  auto m = ParseInt<unsigned>(s.substr(5, 2));
  auto d = ParseInt<unsigned>(s.substr(8, 2));
  if (!y || !m || !d || *m < 1 || *m > 12 || *d < 1 || *d > 31) return std::nullopt;
  return iceberg::DaysFromCivil(*y, *m, *d);
}

// Parses "HH:MM:SS[.fffffffff]" into units of 10^-digits seconds (digits = 6 or 9).
std::optional<int64_t> ParseTime(std::string_view s, int digits) {
  if (s.size() < 8 || s[2] != ':' || s[5] != ':') return std::nullopt;
  auto h = ParseInt<int64_t>(s.substr(0, 2));
  auto m = ParseInt<int64_t>(s.substr(3, 2));
  auto sec = ParseInt<int64_t>(s.substr(6, 2));
  if (!h || !m || !sec) return std::nullopt;
  int64_t frac = 0;
  if (s.size() > 8) {
    if (s[8] != '.') return std::nullopt;
    std::string f(s.substr(9));
    if (f.empty() || static_cast<int>(f.size()) > digits) return std::nullopt;
    f.append(static_cast<size_t>(digits) - f.size(), '0');
    auto fv = ParseInt<int64_t>(f);
    if (!fv) return std::nullopt;
    frac = *fv;
  }
  int64_t unit = digits == 9 ? 1000000000 : 1000000;
  return ((*h * 60 + *m) * 60 + *sec) * unit + frac;
}

// Parses DuckDB's rendering of timestamps: "YYYY-MM-DD HH:MM:SS[.f][+00]".
std::optional<int64_t> ParseTimestamp(std::string_view s, int digits) {
  if (s.ends_with("+00")) s.remove_suffix(3);
  if (s.size() < 19 || (s[10] != ' ' && s[10] != 'T')) return std::nullopt;
  auto days = ParseDate(s.substr(0, 10));
  auto t = ParseTime(s.substr(11), digits);
  if (!days || !t) return std::nullopt;
  int64_t per_day = 86400LL * (digits == 9 ? 1000000000 : 1000000);
  return *days * per_day + *t;
}

}  // namespace

std::optional<__int128> ParseInt128(std::string_view s) {
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  if (s.empty() || s.size() > 39) return std::nullopt;
  __int128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return neg ? -v : v;
}

bool IsIntegerEncoded(TypeId id) {
  switch (id) {
    case TypeId::kInt:
    case TypeId::kDate:
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return true;
    default:
      return false;
  }
}

std::optional<Literal> LiteralFromEncodedInteger(const iceberg::TypePtr& type, std::string_view text) {
  switch (type->id()) {
    case TypeId::kInt:
    case TypeId::kDate: {
      auto v = ParseInt<int32_t>(text);
      if (!v) return std::nullopt;
      return type->id() == TypeId::kInt ? Literal::Int(*v) : Literal::Date(*v);
    }
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs: {
      auto v = ParseInt<int64_t>(text);
      if (!v) return std::nullopt;
      switch (type->id()) {
        case TypeId::kLong: return Literal::Long(*v);
        case TypeId::kTime: return Literal::Time(*v);
        case TypeId::kTimestamp: return Literal::Timestamp(*v);
        case TypeId::kTimestampTz: return Literal::TimestampTz(*v);
        case TypeId::kTimestampNs: return Literal::TimestampNs(*v);
        default: return Literal::TimestampTzNs(*v);
      }
    }
    default:
      return std::nullopt;
  }
}

std::optional<Literal> LiteralFromDuckText(const iceberg::TypePtr& type, const std::string& text) {
  switch (type->id()) {
    case TypeId::kBoolean:
      if (text == "true" || text == "false") return Literal::Boolean(text == "true");
      return std::nullopt;
    case TypeId::kInt:
    case TypeId::kLong:
      return LiteralFromEncodedInteger(type, text);
    case TypeId::kFloat:
    case TypeId::kDouble: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || v != v) return std::nullopt;
      return type->id() == TypeId::kFloat ? Literal::Float(static_cast<float>(v)) : Literal::Double(v);
    }
    case TypeId::kDecimal: {
      auto v = ParseDecimal(text, type->scale());
      if (!v) return std::nullopt;
      return Literal::Decimal(*v, type->precision(), type->scale());
    }
    case TypeId::kDate: {
      auto v = ParseDate(text);
      return v ? std::optional<Literal>(Literal::Date(static_cast<int32_t>(*v))) : std::nullopt;
    }
    case TypeId::kTime: {
      auto v = ParseTime(text, 6);
      return v ? std::optional<Literal>(Literal::Time(*v)) : std::nullopt;
    }
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: {
      auto v = ParseTimestamp(text, 6);
      if (!v) return std::nullopt;
      return type->id() == TypeId::kTimestamp ? Literal::Timestamp(*v) : Literal::TimestampTz(*v);
    }
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs: {
      auto v = ParseTimestamp(text, 9);
      if (!v) return std::nullopt;
      return type->id() == TypeId::kTimestampNs ? Literal::TimestampNs(*v) : Literal::TimestampTzNs(*v);
    }
    case TypeId::kString:
      return Literal::String(text);
    case TypeId::kUuid: {
      auto u = Uuid::Parse(text);
      if (!u.ok()) return std::nullopt;
      return Literal::Uuid(std::string(u->bytes.begin(), u->bytes.end()));
    }
    case TypeId::kBinary:
    case TypeId::kFixed: {
      auto raw = HexDecode(text);
      if (!raw) return std::nullopt;
      return type->id() == TypeId::kBinary ? Literal::Binary(*raw) : Literal::Fixed(*raw);
    }
    default:
      return std::nullopt;
  }
}


namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The days of the month `m` (1–12) of year `y`.
int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// Splits "[-]Y…[-MM[-DD[-HH]]]" into `parts` numbers (the year's digits with its sign, then
// two-digit fields); false unless the whole text has that form.
bool SplitDateText(std::string_view text, size_t parts, int64_t* out) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  for (size_t i = 0; i < parts; ++i) {
    const size_t dash = i + 1 < parts ? text.find('-') : text.size();
    if (dash == std::string_view::npos) return false;
    const std::string_view field = text.substr(0, dash);
    if (field.empty() || (i > 0 && field.size() != 2) ||
        field.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    auto v = ParseInt<int64_t>(field);
    if (!v || (i == 0 && *v > 100000000)) return false;
    out[i] = *v;
    text.remove_prefix(std::min(text.size(), dash + 1));
  }
  if (negative) out[0] = -out[0];
  return true;
}

// The first and last day ordinals DuckDB renders as plain "YYYY-MM-DD": 0001-01-01, 9999-12-31.
constexpr int64_t kFirstPlainDay = -719162;
constexpr int64_t kLastPlainDay = 2932896;

}  // namespace

bool HasPartitionFolderText(iceberg::TransformKind kind, iceberg::TypeId source) {
  using iceberg::TransformKind;
  switch (kind) {
    case TransformKind::kYear:
    case TransformKind::kMonth:
    case TransformKind::kDay:
    case TransformKind::kHour: return true;
    case TransformKind::kIdentity: return source == iceberg::TypeId::kDate;
    default: return false;
  }
}

std::string PartitionFolderTextSql(iceberg::TransformKind kind, const std::string& o) {
  using iceberg::TransformKind;
  const std::string first = std::to_string(kFirstPlainDay);
  const std::string last = std::to_string(kLastPlainDay);
  switch (kind) {
    case TransformKind::kYear: return "printf('%04d', " + o + " + 1970)";
    case TransformKind::kMonth:
      return "printf('%04d-%02d', (" + o + " - ((" + o + " % 12 + 12) % 12)) // 12 + 1970, (" + o +
             " % 12 + 12) % 12 + 1)";
    case TransformKind::kHour:
      return "CASE WHEN " + o + " BETWEEN " + first + " * 24 AND " + last + " * 24 + 23 THEN strftime(TIMESTAMP " +
             "'1970-01-01' + to_hours(CAST(" + o + " AS BIGINT)), '%Y-%m-%d-%H') ELSE CAST(" + o +
             " AS VARCHAR) END";
    default:  // a day, or an identity date's days
      return "CASE WHEN " + o + " BETWEEN " + first + " AND " + last + " THEN strftime(DATE '1970-01-01' + CAST(" +
             o + " AS INTEGER), '%Y-%m-%d') ELSE CAST(" + o + " AS VARCHAR) END";
  }
}

std::optional<int64_t> OrdinalFromPartitionFolderText(iceberg::TransformKind kind, std::string_view text) {
  using iceberg::TransformKind;
  int64_t f[4] = {0, 0, 0, 0};
  switch (kind) {
    case TransformKind::kYear:
      if (!SplitDateText(text, 1, f)) return std::nullopt;
      return f[0] - 1970;
    case TransformKind::kMonth:
      if (!SplitDateText(text, 2, f) || f[1] < 1 || f[1] > 12) return std::nullopt;
      return (f[0] - 1970) * 12 + f[1] - 1;
    case TransformKind::kHour: {
      if (SplitDateText(text, 4, f)) {
        if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > DaysInMonth(f[0], f[1]) || f[3] > 23) return std::nullopt;
        const int64_t day = DaysFromCivil(f[0], f[1], f[2]);
        if (day < kFirstPlainDay || day > kLastPlainDay) return std::nullopt;
        return day * 24 + f[3];
      }
      auto ordinal = ParseInt<int64_t>(text);
      if (!ordinal || (*ordinal >= kFirstPlainDay * 24 && *ordinal <= kLastPlainDay * 24 + 23)) return std::nullopt;
      return ordinal;
    }
    default: {
      if (SplitDateText(text, 3, f)) {
        if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > DaysInMonth(f[0], f[1])) return std::nullopt;
        const int64_t day = DaysFromCivil(f[0], f[1], f[2]);
        if (day < kFirstPlainDay || day > kLastPlainDay) return std::nullopt;
        return day;
      }
      // Kept as an ordinal only outside the plain range: a plain-range ordinal here is not ours.
      auto ordinal = ParseInt<int64_t>(text);
      if (!ordinal || (*ordinal >= kFirstPlainDay && *ordinal <= kLastPlainDay)) return std::nullopt;
      return ordinal;
    }
  }
}

}  // namespace skade::engine
