// Private to skade/rest: bearer tokens of the REST catalog. OAuth2 client credentials (RFC 6749
// §4.4, the spec's /v1/oauth/tokens) issue sealed tokens (io/sealer.h: the client id under the
// deployment's shared key, with an expiry), which every server holding the key accepts and
// none keeps a table of; static tokens are accepted as they are.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/io/sealer.h"

namespace skade::rest {

// Thread-safe.
class TokenAuthority {
 public:
  // `sealer` null = a key of this process alone.
  TokenAuthority(std::map<std::string, std::string> clients, std::vector<std::string> static_tokens,
                 std::chrono::seconds lifetime, std::shared_ptr<const io::Sealer> sealer);

  // Whether requests need a token at all.
  bool enabled() const { return !clients_.empty() || !static_tokens_.empty(); }

  struct Issued {
    std::string token;
    int64_t expires_in_s = 0;
  };
  // A token for `client_id` when `secret` is its secret; kUnauthorized otherwise.
  Result<Issued> Issue(const std::string& client_id, const std::string& secret) const;
  // Checks an Authorization header ("Bearer <token>"): the principal (client id, or "static")
  // or kUnauthorized (missing, malformed, forged, expired, or of a client no longer configured).
  Result<std::string> Check(const std::string& authorization) const;

  // Who an Authorization header names, for what is counted per client and what must end with
  // the token (a Server-Sent Events stream).
  struct Identity {
    std::string principal;  // the client id, or "static"
    std::string client;     // "client:<id>", or "static:<n>" for the n-th static token
    std::optional<std::chrono::steady_clock::time_point> expires;  // none for static tokens
  };
  // Like Check, with the identity.
  Result<Identity> Authenticate(const std::string& authorization) const;

 private:
  const std::map<std::string, std::string> clients_;
  const std::vector<std::string> static_tokens_;
  const std::chrono::seconds lifetime_;
  const std::shared_ptr<const io::Sealer> sealer_;
};

}  // namespace skade::rest
