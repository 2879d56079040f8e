#include "skade/rest/auth_internal.h"

#include "skade/base/auth_header.h"
#include "skade/base/random.h"

namespace skade::rest {
TokenAuthority::TokenAuthority(std::map<std::string, std::string> clients, std::vector<std::string> static_tokens,
                               std::chrono::seconds lifetime)
    : clients_(std::move(clients)),
      static_tokens_(std::move(static_tokens)),
      lifetime_(lifetime) {}

void TokenAuthority::DropExpiredLocked(std::chrono::steady_clock::time_point now) {
  std::erase_if(tokens_, [&](const auto& e) { return e.second.expires <= now; });
}

Result<TokenAuthority::Issued> TokenAuthority::Issue(const std::string& client_id, const std::string& secret) {
  auto it = clients_.find(client_id);
  if (it == clients_.end() || !ConstantTimeEquals(it->second, secret)) {
    return Status::Unauthorized("unknown client or wrong secret");
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (tokens_.size() >= kMaxTokens) DropExpiredLocked(now);
  if (tokens_.size() >= kMaxTokens) {
    // Every token still valid: the oldest to expire goes first (tokens are renewable).
    auto oldest = tokens_.begin();
    for (auto t = tokens_.begin(); t != tokens_.end(); ++t) {
      if (t->second.expires < oldest->second.expires) oldest = t;
    }
    tokens_.erase(oldest);
  }
  Issued out{RandomHex(32), lifetime_.count()};
  tokens_[out.token] = Entry{client_id, now + lifetime_};
  return out;
}

Result<std::string> TokenAuthority::Check(const std::string& authorization) {
  SKADE_ASSIGN_OR_RETURN(Identity who, Authenticate(authorization));
  return who.principal;
}

Result<TokenAuthority::Identity> TokenAuthority::Authenticate(const std::string& authorization) {
  const std::optional<std::string_view> credentials = AuthCredentials(authorization, "Bearer");
  if (!credentials) return Status::Unauthorized("a bearer token is required (Authorization: Bearer …)");
  const std::string token(*credentials);
  for (size_t i = 0; i < static_tokens_.size(); ++i) {
    if (ConstantTimeEquals(static_tokens_[i], token)) {
      return Identity{"static", "static:" + std::to_string(i), std::nullopt};
    }
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return Status::Unauthorized("unknown or expired token");
  if (it->second.expires <= now) {
    tokens_.erase(it);
    return Status::Unauthorized("the token expired; request a new one");
  }
  return Identity{it->second.client, "client:" + it->second.client, it->second.expires};
}

}  // namespace skade::rest
