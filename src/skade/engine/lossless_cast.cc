#include "skade/engine/lossless_cast.h"

#include <cctype>
#include <charconv>
#include <map>
#include <optional>

#include "skade/engine/database.h"

namespace skade::engine {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// DuckDB spells some types two ways.
std::string Canonical(std::string_view type) {
  std::string t = Upper(type);
  if (t == "TIMESTAMPTZ") return "TIMESTAMP WITH TIME ZONE";
  if (t == "INT" || t == "INT4") return "INTEGER";
  if (t == "INT8" || t == "LONG") return "BIGINT";
  if (t == "REAL" || t == "FLOAT4") return "FLOAT";
  if (t == "FLOAT8") return "DOUBLE";
  if (t == "STRING" || t == "TEXT") return "VARCHAR";
  if (t == "BOOL") return "BOOLEAN";
  return t;
}

// Decimal digits an integer type always fits (for integer → DECIMAL widening), or nullopt.
std::optional<int> IntegerDigits(const std::string& t) {
  static const std::map<std::string, int> kDigits = {{"TINYINT", 3},   {"SMALLINT", 5},  {"INTEGER", 10},
                                                     {"BIGINT", 19},   {"UTINYINT", 3},  {"USMALLINT", 5},
                                                     {"UINTEGER", 10}, {"UBIGINT", 20},  {"HUGEINT", 39}};
  auto it = kDigits.find(t);
  return it == kDigits.end() ? std::nullopt : std::optional<int>(it->second);
}

// Bits of mantissa-exact integers: which integer types a float type holds exactly.
bool IntegerFitsFloat(const std::string& integer, const std::string& floating) {
  static const std::map<std::string, int> kBits = {{"TINYINT", 8},    {"SMALLINT", 16}, {"INTEGER", 32},
                                                   {"BIGINT", 64},    {"UTINYINT", 8},  {"USMALLINT", 16},
                                                   {"UINTEGER", 32},  {"UBIGINT", 64},  {"HUGEINT", 128}};
  auto it = kBits.find(integer);
  if (it == kBits.end()) return false;
  return it->second <= (floating == "DOUBLE" ? 53 : 24);
}

struct Decimal {
  int precision = 0;
  int scale = 0;
};

std::optional<Decimal> ParseDecimal(const std::string& t) {
  if (t.rfind("DECIMAL(", 0) != 0 || t.back() != ')') return std::nullopt;
  size_t comma = t.find(',');
  if (comma == std::string::npos) return std::nullopt;
  Decimal d;
  std::string p = t.substr(8, comma - 8), s = t.substr(comma + 1, t.size() - comma - 2);
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  if (std::from_chars(p.data(), p.data() + p.size(), d.precision).ec != std::errc() ||
      std::from_chars(s.data(), s.data() + s.size(), d.scale).ec != std::errc()) {
    return std::nullopt;
  }
  return d;
}

int IntegerRank(const std::string& t) {
  static const std::map<std::string, int> kRank = {{"TINYINT", 1}, {"SMALLINT", 2}, {"INTEGER", 3},
                                                   {"BIGINT", 4},  {"HUGEINT", 5}};
  auto it = kRank.find(t);
  return it == kRank.end() ? 0 : it->second;
}

// Whether every value of `source` converts exactly to `target`.
bool AlwaysExact(const std::string& source, const std::string& target) {
  if (source == target) return true;
  const int rs = IntegerRank(source), rt = IntegerRank(target);
  if (rs > 0 && rt > 0) return rs <= rt;
  if ((target == "DOUBLE" || target == "FLOAT") && IntegerFitsFloat(source, target)) return true;
  if (source == "FLOAT" && target == "DOUBLE") return true;
  auto ds = ParseDecimal(source), dt = ParseDecimal(target);
  if (ds && dt) return dt->scale >= ds->scale && dt->precision - dt->scale >= ds->precision - ds->scale;
  if (dt && IntegerDigits(source)) return dt->precision - dt->scale >= *IntegerDigits(source);
  if (source == "DATE" && (target == "TIMESTAMP" || target == "TIMESTAMP WITH TIME ZONE" || target == "TIMESTAMP_NS")) {
    return true;
  }
  // A wall-clock time is stored as that time in UTC (the session's time zone is UTC).
  if (source == "TIMESTAMP" && (target == "TIMESTAMP WITH TIME ZONE" || target == "TIMESTAMP_NS")) return true;
  if (source == "TIMESTAMP_S" || source == "TIMESTAMP_MS") {
    return target == "TIMESTAMP" || target == "TIMESTAMP_NS" || target == "TIMESTAMP WITH TIME ZONE";
  }
  return false;
}

bool IsText(const std::string& t) { return t == "VARCHAR" || t.rfind("VARCHAR(", 0) == 0; }

bool IsNumber(const std::string& t) {
  return IntegerRank(t) > 0 || IntegerDigits(t) || ParseDecimal(t) || t == "DOUBLE" || t == "FLOAT";
}

bool IsNested(const std::string& t) {
  return t.rfind("STRUCT(", 0) == 0 || t.rfind("MAP(", 0) == 0 || t.rfind("UNION(", 0) == 0 ||
         (!t.empty() && t.back() == ']');
}

// The condition under which the (non-null) text `text` spells a value of `target` exactly:
// nothing around it (no space a cast would skip), an integer for integer types, at most the
// scale's fraction digits for decimals, no overflow to infinity, true/false/t/f/1/0 for
// booleans, a date without a time, a timestamp without a zone.
std::string ExactText(const std::string& text, const std::string& target, const std::string& try_cast) {
  const std::string unpadded = "NOT regexp_matches(" + text + ", '^\\s|\\s$')";
  if (IntegerRank(target) > 0 || IntegerDigits(target)) {
    return unpadded + " AND " + try_cast + " IS NOT NULL AND regexp_full_match(" + text + ", '[+-]?[0-9]+(\\.0*)?')";
  }
  if (auto d = ParseDecimal(target)) {
    // At most `scale` fraction digits once trailing zeros are dropped.
    return unpadded + " AND " + try_cast + " IS NOT NULL AND regexp_full_match(" + text +
           ", '[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)') AND " + "length(regexp_extract(" + text +
           ", '\\.([0-9]*[1-9])?0*$', 1)) <= " + std::to_string(d->scale);
  }
  if (target == "DOUBLE" || target == "FLOAT") {
    // Decimal text has no exact binary value; what must not happen is overflow to infinity,
    // or a spelling that is not a number (hexadecimal, say).
    return unpadded + " AND " + try_cast + " IS NOT NULL AND ((regexp_full_match(" + text +
           ", '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?') AND isfinite(" + try_cast +
           ")) OR regexp_full_match(lower(" + text + "), '[+-]?(inf|infinity|nan)'))";
  }
  if (target == "BOOLEAN") return "lower(" + text + ") IN ('true', 'false', 't', 'f', '1', '0')";
  if (target == "DATE") {
    return unpadded + " AND " + try_cast + " IS NOT NULL AND (TRY_CAST(" + text + " AS TIMESTAMP) IS NULL OR TRY_CAST(" +
           text + " AS TIMESTAMP) = CAST(" + try_cast + " AS TIMESTAMP))";
  }
  if (target == "TIMESTAMP" || target == "TIMESTAMP_NS") {
    // A zone offset in the text would be dropped: the text must name the same instant read
    // as a wall-clock time in UTC and as an instant.
    return unpadded + " AND " + try_cast + " IS NOT NULL AND (TRY_CAST(" + text +
           " AS TIMESTAMP WITH TIME ZONE) IS NULL OR TRY_CAST(" + text + " AS TIMESTAMP WITH TIME ZONE) = CAST(" +
           try_cast + " AS TIMESTAMP WITH TIME ZONE))";
  }
  if (IsText(target) || IsNested(target) || target == "BLOB") return try_cast + " IS NOT NULL";
  return unpadded + " AND " + try_cast + " IS NOT NULL";
}

// The JSON kinds (json_type) a value may have to convert to `target`: a string only to text
// and to types JSON spells as strings (dates, times, UUIDs, binary, and decimals, which writers
// put in strings to keep their digits), a number only to numbers, a boolean only to BOOLEAN, an
// object or array only to nested types.
std::string JsonKinds(const std::string& target) {
  if (ParseDecimal(target)) return "'BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR'";
  if (IsNumber(target)) return "'BIGINT', 'UBIGINT', 'DOUBLE'";
  if (target == "BOOLEAN") return "'BOOLEAN'";
  if (IsNested(target)) return "'OBJECT', 'ARRAY'";
  return "'VARCHAR'";
}

}  // namespace

LosslessCast LosslessCastSql(const std::string& column_sql, std::string_view source_type, std::string_view target_type,
                             std::string_view column_name, CastPolicy policy) {
  const std::string source = Canonical(source_type);
  const std::string target = Canonical(target_type);
  const std::string target_sql(target_type);
  // A JSON value converts from its text: a string's contents, a number's digits.
  std::string from = column_sql;
  if (source == "JSON") from = IsNested(target) ? column_sql : "json_extract_string(" + column_sql + ", '$')";
  const std::string cast = "CAST(" + from + " AS " + target_sql + ")";
  if (policy == CastPolicy::kLenient || (source != "JSON" && AlwaysExact(source, target))) {
    return LosslessCast{cast, std::nullopt};
  }
  const std::string try_cast = "TRY_CAST(" + from + " AS " + target_sql + ")";
  // The condition under which a (non-null) value converts exactly.
  std::string exact;
  if (source == "JSON") {
    exact = "json_type(" + column_sql + ") IN (" + JsonKinds(target) + ") AND " + ExactText(from, target, try_cast);
  } else if (source == "TIMESTAMP WITH TIME ZONE" && (target == "TIMESTAMP" || target == "TIMESTAMP_NS")) {
    exact = "false";
  } else if (IsText(source)) {
    exact = ExactText(column_sql, target, try_cast);
  } else {
    // Any other type: the value must come back unchanged from the target type.
    exact = try_cast + " IS NOT NULL AND TRY_CAST(" + try_cast + " AS " + std::string(source_type) +
            ") IS NOT DISTINCT FROM " + column_sql;
  }
  std::string why;
  if (source == "TIMESTAMP WITH TIME ZONE") why = " (a point in time is not a wall-clock time)";
  if (source == "JSON") why = " (a JSON value converts only to a column of its kind: a string to text, a number to a number)";
  const std::string message = QuoteString("column '" + std::string(column_name) + "': value ") + " || " +
                              "left(CAST(" + column_sql + " AS VARCHAR), 100) || " +
                              QuoteString(" " + std::string(kLossyConversion) + " " + target_sql + why +
                                          " (cast it in the query)");
  return LosslessCast{
      "CASE WHEN " + column_sql + " IS NULL THEN NULL WHEN " + exact + " THEN " + cast + " ELSE error(" + message + ") END",
      exact};
}

}  // namespace skade::engine
