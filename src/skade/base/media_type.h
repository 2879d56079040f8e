// Content-Type header values (RFC 9110 §8.3): a media type, then parameters after ';'.
#pragma once

#include <string_view>

#include "skade/base/ascii.h"

namespace skade {

// Whether `content_type` names JSON: its media type, without parameters or the blanks around
// it, is application/json in any letter case ("Application/JSON; charset=utf-8" is).
inline bool IsJsonContentType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  return EqualsIgnoreAsciiCase(type, "application/json");
}

}  // namespace skade
