// Small non-cryptographic hashes for stable names and tags (file names, ETags, ids): never for
// anything an attacker must not be able to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace skade {

// 64-bit FNV-1a of `text`, starting from `basis` (the standard offset basis by default; another
// basis gives an independent hash of the same text).
constexpr uint64_t kFnv1aBasis = 14695981039346656037ULL;
inline uint64_t Fnv1a64(std::string_view text, uint64_t basis = kFnv1aBasis) {
  uint64_t h = basis;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace skade
