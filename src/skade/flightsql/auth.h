// Who is calling, for every service on the Flight SQL port (Flight SQL and the commit stream):
// basic credentials (at Handshake, or on any call) and the bearer tokens Handshake issues.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "skade/base/status.h"

namespace skade::flightsql {

struct AuthOptions {
  std::map<std::string, std::string> users;  // name → password; empty = no authentication
  std::chrono::seconds token_lifetime{3600};  // a bearer token is refused after this; renew by handshaking again
  size_t max_tokens_per_user = 256;           // beyond, a user's oldest token is revoked
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
  // "" without authentication; kUnauthorized for a missing, unknown or expired credential.
  Result<std::string> Check(std::string_view authorization);
  // The user that `user:password` names (compared in constant time); kUnauthorized otherwise.
  Result<std::string> CheckBasic(std::string_view user_colon_password) const;
  // A new bearer token (256 random bits) for `principal`, valid for token_lifetime.
  std::string IssueToken(const std::string& principal);
  // Forgets expired tokens; the server calls it periodically (Check refuses them anyway).
  void DropExpired();
  size_t token_count() const;

 private:
  struct Token {
    std::string principal;
    int64_t issued_ns;
  };
  AuthOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Token> tokens_;
};

}  // namespace skade::flightsql
