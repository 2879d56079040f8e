// Secrets: random bytes from the kernel's CSPRNG (getrandom), for bearer tokens and handles
// that must be unguessable (a UUIDv7 carries a timestamp and a seeded PRNG's output).
#pragma once

#include <cstddef>
#include <string>

namespace skade {

// `bytes` random bytes as lower-case hex (2 * bytes characters). Blocks only until the kernel's
// pool is initialised at boot; aborts if the kernel refuses (no fallback to a weaker source).
std::string RandomHex(size_t bytes);

}  // namespace skade
