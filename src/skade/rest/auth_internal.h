// Private to skade/rest: bearer tokens of the REST catalog. OAuth2 client credentials (RFC 6749
// §4.4, the spec's /v1/oauth/tokens) issue tokens of 256 random bits that expire; static
// tokens are accepted as they are. The issued-token table is bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "skade/base/status.h"

namespace skade::rest {

// Thread-safe.
class TokenAuthority {
 public:
  TokenAuthority(std::map<std::string, std::string> clients, std::vector<std::string> static_tokens,
                 std::chrono::seconds lifetime);

  // Whether requests need a token at all.
  bool enabled() const { return !clients_.empty() || !static_tokens_.empty(); }

  struct Issued {
    std::string token;
    int64_t expires_in_s = 0;
  };
  // A token for `client_id` when `secret` is its secret; kUnauthorized otherwise.
  Result<Issued> Issue(const std::string& client_id, const std::string& secret);
  // Checks an Authorization header ("Bearer <token>"): the principal (client id, or "static")
  // or kUnauthorized (missing, malformed, unknown or expired).
  Result<std::string> Check(const std::string& authorization);

  // Who an Authorization header names, for what is counted per client and what must end with
  // the token (a Server-Sent Events stream).
  struct Identity {
    std::string principal;  // the client id, or "static"
    std::string client;     // "client:<id>", or "static:<n>" for the n-th static token
    std::optional<std::chrono::steady_clock::time_point> expires;  // none for static tokens
  };
  // Like Check, with the identity.
  Result<Identity> Authenticate(const std::string& authorization);

  static constexpr size_t kMaxTokens = 100000;

 private:
  struct Entry {
    std::string client;
    std::chrono::steady_clock::time_point expires;
  };
  void DropExpiredLocked(std::chrono::steady_clock::time_point now);

  const std::map<std::string, std::string> clients_;
  const std::vector<std::string> static_tokens_;
  const std::chrono::seconds lifetime_;
  std::mutex mu_;
  std::map<std::string, Entry> tokens_;
};

}  // namespace skade::rest
