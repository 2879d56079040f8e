#include "skade/base/auth_header.h"

namespace skade {

std::optional<std::string_view> AuthCredentials(std::string_view header, std::string_view scheme) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  if (header.size() <= scheme.size() || header[scheme.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(header[i]) != lower(scheme[i])) return std::nullopt;
  }
  std::string_view rest = header.substr(scheme.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;
  return rest;
}

}  // namespace skade
