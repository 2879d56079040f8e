// Internal to engine/: values as DuckDB renders them as text (footer statistics, partition
// keys, constants converted by SQL), read back into typed values exactly or not at all.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "skade/iceberg/literal.h"
#include "skade/iceberg/types.h"

namespace skade::engine {

// The whole of `s` as an integer of type T.
template <typename T>
std::optional<T> ParseInt(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The whole of `s` as a 128-bit integer (an optional '-', then at most 39 digits).
std::optional<__int128> ParseInt128(std::string_view s);

// Types whose values Iceberg stores as one integer (int, long, date in days, time and
// timestamps in micro- or nanoseconds): SQL can hand them over as that integer.
bool IsIntegerEncoded(iceberg::TypeId id);

// A literal of an integer-encoded `type` from the text of its integer; nullopt when the text
// is not one integer of the type's width or the type is not integer-encoded.
std::optional<iceberg::Literal> LiteralFromEncodedInteger(const iceberg::TypePtr& type, std::string_view text);

// A literal of `type` from DuckDB's text rendering of a value of the matching DuckDB type
// ("2024-01-31", "12:00:00.5", "1.50", hex for binary, …); nullopt when the text can't be read
// exactly (NaN included).
std::optional<iceberg::Literal> LiteralFromDuckText(const iceberg::TypePtr& type, const std::string& text);

}  // namespace skade::engine
