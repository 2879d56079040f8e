#include "skade/base/json_text.h"

#include <string>

namespace skade {

Status CheckJsonHasNoNul(std::string_view text, std::string_view what) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\0') return Status::InvalidArgument(std::string(what) + " contains a NUL byte");
    if (text[i] != '\\' || i + 1 >= text.size()) continue;
    if (text[i + 1] == 'u' && text.substr(i + 2, 4) == "0000") {
      return Status::InvalidArgument(std::string(what) + " contains a NUL character (\\u0000)");
    }
    ++i;  // the escaped character: "\\u0000" is a backslash and "u0000"
  }
  return Status::Ok();
}

}  // namespace skade
