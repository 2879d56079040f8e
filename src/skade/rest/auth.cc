#include "skade/rest/auth_internal.h"

#include "skade/base/auth_header.h"
#include "skade/base/clock.h"
#include "skade/base/random.h"

namespace skade::rest {
namespace {
constexpr std::string_view kTokenPurpose = "rest.oauth";
}  // namespace

TokenAuthority::TokenAuthority(std::map<std::string, std::string> clients, std::vector<std::string> static_tokens,
                               std::chrono::seconds lifetime, std::shared_ptr<const io::Sealer> sealer)
    : clients_(std::move(clients)),
      static_tokens_(std::move(static_tokens)),
      lifetime_(lifetime),
      sealer_(sealer ? std::move(sealer) : io::Sealer::Ephemeral()) {}

Result<TokenAuthority::Issued> TokenAuthority::Issue(const std::string& client_id, const std::string& secret) const {
  auto it = clients_.find(client_id);
  if (it == clients_.end() || !ConstantTimeEquals(it->second, secret)) {
    return Status::Unauthorized("unknown client or wrong secret");
  }
  return Issued{io::EncodeBase64Url(sealer_->Seal(kTokenPurpose, client_id, lifetime_)), lifetime_.count()};
}

Result<std::string> TokenAuthority::Check(const std::string& authorization) const {
  SKADE_ASSIGN_OR_RETURN(Identity who, Authenticate(authorization));
  return who.principal;
}

Result<TokenAuthority::Identity> TokenAuthority::Authenticate(const std::string& authorization) const {
  const std::optional<std::string_view> credentials = AuthCredentials(authorization, "Bearer");
  if (!credentials) return Status::Unauthorized("a bearer token is required (Authorization: Bearer …)");
  const std::string token(*credentials);
  for (size_t i = 0; i < static_tokens_.size(); ++i) {
    if (ConstantTimeEquals(static_tokens_[i], token)) {
      return Identity{"static", "static:" + std::to_string(i), std::nullopt};
    }
  }
  std::string sealed;
  if (!io::DecodeBase64Url(token, &sealed)) return Status::Unauthorized("unknown or expired token");
  int64_t expiry = 0;
  auto client = sealer_->Open(kTokenPurpose, sealed, &expiry);
  if (!client.ok()) {
    // The expiry is set once the token is authenticated: a genuine token that ran out.
    if (expiry != 0) return Status::Unauthorized("the token expired; request a new one");
    return Status::Unauthorized("unknown or expired token");
  }
  // A client removed from the configuration loses the tokens issued to it.
  if (!clients_.contains(*client)) return Status::Unauthorized("unknown or expired token");
  const auto expires = std::chrono::steady_clock::now() + std::chrono::milliseconds(expiry - NowMillis());
  return Identity{*client, "client:" + *client, expires};
}

}  // namespace skade::rest
