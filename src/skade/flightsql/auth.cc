#include "skade/flightsql/auth.h"

#include "skade/base/base64.h"
#include "skade/base/auth_header.h"
#include "skade/base/random.h"

namespace skade::flightsql {

namespace {
constexpr std::string_view kTokenPurpose = "flightsql.bearer";
}  // namespace

Authenticator::Authenticator(AuthOptions options)
    : options_(std::move(options)), sealer_(options_.sealer ? options_.sealer : io::Sealer::Ephemeral()) {}
Authenticator::~Authenticator() = default;

Result<std::string> Authenticator::CheckBasic(std::string_view user_colon_password) const {
  size_t colon = user_colon_password.find(':');
  std::string_view user = user_colon_password.substr(0, colon);
  std::string_view password = colon == std::string_view::npos ? "" : user_colon_password.substr(colon + 1);
  auto it = options_.users.find(std::string(user));
  // Compare against something even for unknown users, so timing does not tell names apart.
  bool ok = ConstantTimeEquals(it == options_.users.end() ? std::string_view() : it->second, password);
  if (it == options_.users.end() || !ok) return Status::Unauthorized("invalid username or password");
  return it->first;
}

Result<std::string> Authenticator::Check(std::string_view authorization) const {
  if (!enabled()) return std::string();
  if (const auto bearer = AuthCredentials(authorization, "Bearer")) {
    const Status refused = Status::Unauthorized("invalid or expired bearer token; handshake again");
    std::string token;
    if (!io::DecodeBase64Url(*bearer, &token)) return refused;
    auto principal = sealer_->Open(kTokenPurpose, token);
    // A user removed from the configuration loses the tokens issued to it.
    if (!principal.ok() || !options_.users.contains(*principal)) return refused;
    return *principal;
  }
  if (const auto basic = AuthCredentials(authorization, "Basic")) return CheckBasic(DecodeBase64(*basic));
  return Status::Unauthorized("authentication required: handshake with basic auth, then send the bearer token");
}

std::string Authenticator::IssueToken(const std::string& principal) const {
  return io::EncodeBase64Url(sealer_->Seal(kTokenPurpose, principal, options_.token_lifetime));
}

}  // namespace skade::flightsql
