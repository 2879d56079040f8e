// Private to skade/catalog: reading and writing the JSON bodies of the HTTP catalog connectors
// (REST, Nessie).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace skade::catalog::internal {

using Json = nlohmann::ordered_json;

// Member `key` of the object `j`; null when `j` is not an object, the member is absent or null.
inline const Json* Member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A string member, or "" when absent or not a string.
inline std::string StringMember(const Json& j, const char* key) {
  const Json* m = Member(j, key);
  return m && m->is_string() ? m->get<std::string>() : std::string();
}

// Compact JSON text; invalid UTF-8 is replaced, never thrown on.
inline std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace skade::catalog::internal
