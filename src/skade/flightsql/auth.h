// Who is calling, for every service on the Flight SQL port (Flight SQL and the commit stream):
// basic credentials (at Handshake, or on any call) and the bearer tokens Handshake issues.
// Tokens are sealed (io/sealer.h: the principal under a key, with an expiry): any server given
// the same key accepts the tokens of the others, and no server keeps a table of them.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/io/sealer.h"

namespace skade::flightsql {

struct AuthOptions {
  std::map<std::string, std::string> users;  // name → password; empty = no authentication
  std::chrono::seconds token_lifetime{3600};  // a bearer token is refused after this; renew by handshaking again
  std::shared_ptr<const io::Sealer> sealer;    // null = a key of this process alone
};

// Thread-safe. Principals are user names; "" is the one principal of an unauthenticated server.
class Authenticator {
 public:
  explicit Authenticator(AuthOptions options);
  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  bool enabled() const { return !options_.users.empty(); }

  // The principal an `authorization` header value ("Bearer <token>" or "Basic <base64>") names.
  // "" without authentication; kUnauthorized for a missing, forged or expired credential, and
  // for the token of a user no longer configured.
  Result<std::string> Check(std::string_view authorization) const;
  // The user that `user:password` names (compared in constant time); kUnauthorized otherwise.
  Result<std::string> CheckBasic(std::string_view user_colon_password) const;
  // A new bearer token for `principal`, valid for token_lifetime (base64url text).
  std::string IssueToken(const std::string& principal) const;

 private:
  AuthOptions options_;
  std::shared_ptr<const io::Sealer> sealer_;
};

}  // namespace skade::flightsql
