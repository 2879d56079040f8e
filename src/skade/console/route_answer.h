// The answer of one of the web console's JSON routes (preview.h, query.h, table_pages.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace skade::console {

struct RouteAnswer {
  int status = 200;
  std::string body;  // JSON: the answer, or {"error": {"message", "type", "code"}}
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type (e.g. Allow)
};

}  // namespace skade::console
