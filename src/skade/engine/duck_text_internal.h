// Internal to engine/: values as DuckDB renders them as text (footer statistics, partition
// keys, constants converted by SQL), read back into typed values exactly or not at all.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "skade/iceberg/literal.h"
#include "skade/iceberg/transform.h"
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

// ---- Partition folder names (what a partitioned COPY names its folders by)
//
// Time partitions name their folders as Iceberg's Java writers do (Transform.toHumanString):
// year "2024", month "2024-01", day "2024-01-31", hour "2024-01-31-10", and an identity date
// "2024-01-31", instead of the ordinals Iceberg stores (54, 648, 19753, …). A day or hour
// outside the years 0001–9999 keeps its ordinal (DuckDB renders no such date plainly); year and
// month texts are computed from the ordinal by integer arithmetic, any year. The folder text is
// what COPY returns as the file's partition key, so it must read back exactly (below).

// Whether partition values of `kind` over a `source` column are written as such text.
bool HasPartitionFolderText(iceberg::TransformKind kind, iceberg::TypeId source);

// SQL of the folder text of the partition value `ordinal` (an SQL expression of the integer
// Iceberg stores: years, months, days or hours since 1970; days for an identity date); NULL
// stays NULL. Only where HasPartitionFolderText.
std::string PartitionFolderTextSql(iceberg::TransformKind kind, const std::string& ordinal);

// The stored integer of a folder text that PartitionFolderTextSql made, or of an ordinal that
// it kept as it is; nullopt for any other text.
std::optional<int64_t> OrdinalFromPartitionFolderText(iceberg::TransformKind kind, std::string_view text);

}  // namespace skade::engine
