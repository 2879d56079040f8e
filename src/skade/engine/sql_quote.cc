// QuoteIdentifier and QuoteString (database.h), on their own so that the parser's code
// (user_sql.cc, which its fuzz target links without the rest of the engine) can use them.
#include <string>
#include <string_view>

#include "skade/engine/database.h"

namespace skade::engine {

std::string QuoteIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string QuoteString(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace skade::engine
