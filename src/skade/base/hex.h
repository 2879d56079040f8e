// Hexadecimal text for byte strings (lower-case out; either case in).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace skade {

std::string HexEncode(std::string_view bytes);
// nullopt for odd lengths or non-hex characters.
std::optional<std::string> HexDecode(std::string_view hex);
// The value of one hex digit (either case), or -1.
int HexDigitValue(char c);

}  // namespace skade
