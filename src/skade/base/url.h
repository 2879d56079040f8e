// Pieces of URLs (RFC 3986) and form bodies (application/x-www-form-urlencoded) that several
// modules parse: percent-decoding and query strings.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skade {

// Decodes %XX escapes (a malformed escape is kept as it is); with `plus_is_space`, '+' is a
// space (form bodies and query strings).
std::string PercentDecode(std::string_view s, bool plus_is_space = true);

// "a=1&b=x%20y&c" → {("a","1"), ("b","x y"), ("c","")}, in order; empty pairs are skipped.
std::vector<std::pair<std::string, std::string>> ParseQueryString(std::string_view query);

}  // namespace skade
