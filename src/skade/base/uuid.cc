#include "skade/base/uuid.h"

#include <unistd.h>

#include <mutex>
#include <random>

#include "skade/base/clock.h"
#include "skade/base/hex.h"

namespace skade {
Uuid Uuid::NewV7() {
  // RFC 9562 §6.2 method 1: a 12-bit counter in rand_a keeps values monotonic within one
  // millisecond; if it overflows, the timestamp is advanced by one.
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  static int64_t last_ms = 0;
  static uint16_t counter = 0;
  static pid_t seeded_pid = ::getpid();

  Uuid u;
  int64_t ms = NowMillis();
  uint64_t rand_b;
  {
    std::lock_guard<std::mutex> lock(mu);
    // A forked child inherits the generator's state: reseed so parent and child differ.
    if (pid_t pid = ::getpid(); pid != seeded_pid) {
      seeded_pid = pid;
      rng.seed(std::random_device{}() ^ static_cast<uint64_t>(pid));
    }
    if (ms <= last_ms) {
      ms = last_ms;
      if (++counter > 0x0FFF) {
        counter = 0;
        ms = ++last_ms;
      }
    } else {
      last_ms = ms;
      counter = static_cast<uint16_t>(rng() & 0x03FF);  // leave headroom for increments
    }
    rand_b = rng();
  }
  for (int i = 0; i < 6; ++i) u.bytes[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  u.bytes[6] = static_cast<uint8_t>(0x70 | ((counter >> 8) & 0x0F));
  u.bytes[7] = static_cast<uint8_t>(counter & 0xFF);
  for (int i = 8; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(rand_b >> (8 * (15 - i)));
  u.bytes[8] = static_cast<uint8_t>(0x80 | (u.bytes[8] & 0x3F));
  return u;
}

Result<Uuid> Uuid::Parse(std::string_view text) {
  auto bad = [&]() { return Status::InvalidArgument("not a UUID: '" + std::string(text) + "'"); };
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-') {
    return bad();
  }
  std::string hex;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i != 8 && i != 13 && i != 18 && i != 23) hex.push_back(text[i]);
  }
  auto raw = HexDecode(hex);
  if (!raw) return bad();
  return FromBytes(*raw);
}

Result<Uuid> Uuid::FromBytes(std::string_view raw) {
  if (raw.size() != 16) return Status::InvalidArgument("a UUID needs 16 bytes");
  Uuid u;
  for (size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(raw[i]);
  return u;
}

std::string Uuid::ToString() const {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[bytes[i] >> 4]);
    s.push_back(kHex[bytes[i] & 0xF]);
  }
  return s;
}

}  // namespace skade
