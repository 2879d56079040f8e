// Secrets: random bytes from the kernel's CSPRNG (getrandom), for bearer tokens and handles
// that must be unguessable (a UUIDv7 carries a timestamp and a seeded PRNG's output), and their
// comparison in constant time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace skade {

// `bytes` random bytes as lower-case hex (2 * bytes characters). Blocks only until the kernel's
// pool is initialised at boot; aborts if the kernel refuses (no fallback to a weaker source).
std::string RandomHex(size_t bytes);

// Whether two secrets are equal, in time that depends on their lengths only (never on where
// they first differ).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace skade
