// ASCII case folding, for what compares without case: SQL identifiers as DuckDB resolves them,
// Iceberg UUIDs and SQL dialect names, URI schemes, keywords and file suffixes. Only A-Z fold
// (the C locale); other bytes, UTF-8 included, compare as they are.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace skade {

inline char AsciiLower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

inline std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

inline bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return AsciiLower(x) == AsciiLower(y); });
}

}  // namespace skade
