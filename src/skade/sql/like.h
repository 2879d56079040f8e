// SQL LIKE pattern matching (as Flight SQL's metadata filters use it).
#pragma once

#include <string_view>

namespace skade::sql {

// Whether `text` matches `pattern`: '%' matches any run, '_' one character, '\\' makes the next
// character literal. Case-sensitive.
bool LikeMatch(std::string_view pattern, std::string_view text);

}  // namespace skade::sql
