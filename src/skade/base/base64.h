// Base64 (RFC 4648, standard alphabet), as HTTP Basic credentials carry them.
#pragma once

#include <string>
#include <string_view>

namespace skade {

// Padding optional. A character outside the alphabet, or data after the padding, gives "" (an
// invalid credential, never a partly decoded one).
std::string DecodeBase64(std::string_view in);
std::string EncodeBase64(std::string_view in);  // padded

}  // namespace skade
