// The credentials of an HTTP Authorization header (RFC 7235 §2.1: `scheme 1*SP credentials`,
// the scheme compared without case), one rule for the REST catalog, Flight SQL and the commit
// stream.
#pragma once

#include <optional>
#include <string_view>

namespace skade {

// The credentials after `scheme` ("Bearer", "Basic") in `header`, without surrounding spaces;
// nullopt when the header names another scheme or carries no credentials.
std::optional<std::string_view> AuthCredentials(std::string_view header, std::string_view scheme);

}  // namespace skade
