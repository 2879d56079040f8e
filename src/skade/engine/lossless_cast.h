// Lossless conversion of written values (DESIGN §11): a value converts to its column's type
// only if that type represents it exactly (1.7 does not become the BIGINT 2, 99.999 not the
// DECIMAL(5,2) 100.00, 'yes' not true); otherwise the write fails naming the column and the
// value. Lenient casting (DuckDB's own) is an explicit opt-in.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace skade::engine {

enum class CastPolicy { kStrict, kLenient };

// The words the error of a refused value contains (for callers that add the row number).
inline constexpr std::string_view kLossyConversion = "is not exactly representable as";

// How one column converts.
struct LosslessCast {
  std::string sql;  // the converting expression; it raises the error for a lossy value
  // Set when values are checked: the condition under which a non-null value converts exactly
  // (to find the first offending row of an input that failed).
  std::optional<std::string> exact;
};

// SQL converting `column_sql`, of DuckDB type `source`, to the DuckDB type `target`:
//  - a plain CAST when every value of `source` fits `target` (the same type, integer and
//    floating widening, wider decimals, DATE to TIMESTAMP, TIMESTAMP to TIMESTAMPTZ) or the
//    policy is lenient;
//  - else an expression that raises an error naming `column_name`, the value (at most 100
//    characters of it) and `target` for any value the conversion would change: values of a
//    non-text type must round-trip (target and back compare equal); text must spell a value
//    of the target exactly, with no space around it (an integer in decimal digits for integer
//    types, at most `scale` fraction digits for decimals, true/false/t/f/1/0 for booleans, a
//    date without a time for DATE, a timestamp without a zone for TIMESTAMP); a JSON value
//    (`source` JSON) must be of the target's kind (a string for text, dates, times, UUIDs and
//    binary; a number for numbers, or a string for decimals; a boolean for BOOLEAN; an object
//    or array for nested types)
//    and then convert as its text would. TIMESTAMPTZ never converts to TIMESTAMP silently (an
//    instant is not a wall-clock time).
LosslessCast LosslessCastSql(const std::string& column_sql, std::string_view source, std::string_view target,
                             std::string_view column_name, CastPolicy policy);

}  // namespace skade::engine
