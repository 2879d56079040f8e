// Sealed tokens: state a server hands to its client instead of keeping it (Flight SQL tickets,
// prepared-statement handles, session cookies, bearer tokens), so that any server holding the
// same keys accepts what another one issued and no call needs to land where the last one did.
//
// A token is AES-256-GCM over its payload, with the purpose ("flightsql.ticket", …) and the
// token's header (format, key id, expiry) as associated data: it cannot be read, changed,
// extended or used for another purpose without the key. Keys form a ring: the first seals,
// every key opens, so a key is rotated without downtime by adding the new key second on every
// server, then moving it first, then removing the old one once tokens sealed by it expired.
//
// Wire format (bytes): 'S' 1 | key id 4 (the first bytes of SHA-256 of the key) | expiry 8
// (Unix milliseconds, big endian) | nonce 12 | ciphertext | tag 16.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::io {

class Sealer {
 public:
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kOverheadBytes = 1 + 4 + 8 + 12 + 16;

  // A ring of raw 32-byte keys, the sealing one first. kInvalidArgument for none, a key of
  // another length or the same key twice.
  static Result<std::shared_ptr<const Sealer>> FromKeys(std::vector<std::string> keys);
  // Keys as text: one key a line, 64 hex digits; blank lines and lines starting with '#' are
  // skipped (a key file, or an environment variable with keys separated by ',' or newlines).
  // The error names the line, never the key.
  static Result<std::shared_ptr<const Sealer>> FromText(std::string_view text);
  // One random key: tokens open only in this process (a single server without a shared key).
  static std::shared_ptr<const Sealer> Ephemeral();

  // A token for `payload` under the first key, opened by Open until `lifetime` has passed.
  std::string Seal(std::string_view purpose, std::string_view payload, std::chrono::seconds lifetime) const;
  // The payload of a token sealed for `purpose` by a key of the ring and not expired. kNotFound
  // for anything else (malformed, forged, another purpose, an unknown key, expired): the
  // message says which of expired or not valid, nothing more.
  // `expires_at_ms` (optional) receives the token's expiry (Unix milliseconds) once the token
  // is authenticated, also when it has expired: a failure with it set is an expired token.
  Result<std::string> Open(std::string_view purpose, std::string_view token, int64_t* expires_at_ms = nullptr) const;

  // Whether a token looks like one of this format (cheap; says nothing about validity).
  static bool LooksSealed(std::string_view token);

  ~Sealer();
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;

 private:
  struct Key {
    std::string bytes;
    std::string id;  // 4 bytes
  };
  explicit Sealer(std::vector<Key> keys) : keys_(std::move(keys)) {}
  std::vector<Key> keys_;
};

// Base64url without padding (RFC 4648 §5): tokens where text is needed (cookies, URLs, JSON).
std::string EncodeBase64Url(std::string_view bytes);
// nullopt-like failure: an empty string for input that is not base64url.
bool DecodeBase64Url(std::string_view text, std::string* out);

}  // namespace skade::io
