#include "skade/flightsql/auth.h"

#include <algorithm>
#include <vector>

#include "skade/base/base64.h"
#include "skade/base/clock.h"
#include "skade/base/auth_header.h"
#include "skade/base/random.h"

namespace skade::flightsql {

Authenticator::Authenticator(AuthOptions options) : options_(std::move(options)) {}
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

Result<std::string> Authenticator::Check(std::string_view authorization) {
  if (!enabled()) return std::string();
  if (const auto bearer = AuthCredentials(authorization, "Bearer")) {
    std::string token(*bearer);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tokens_.find(token);
    if (it == tokens_.end()) return Status::Unauthorized("invalid or expired bearer token; handshake again");
    int64_t lifetime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.token_lifetime).count();
    if (MonotonicNanos() - it->second.issued_ns > lifetime_ns) {
      tokens_.erase(it);
      return Status::Unauthorized("invalid or expired bearer token; handshake again");
    }
    return it->second.principal;
  }
  if (const auto basic = AuthCredentials(authorization, "Basic")) return CheckBasic(DecodeBase64(*basic));
  return Status::Unauthorized("authentication required: handshake with basic auth, then send the bearer token");
}

std::string Authenticator::IssueToken(const std::string& principal) {
  std::string token = RandomHex(32);
  std::lock_guard<std::mutex> lock(mu_);
  // Revoke the user's oldest tokens beyond the cap (a client that handshakes in a loop).
  std::vector<std::pair<int64_t, std::string>> mine;
  for (const auto& [t, info] : tokens_) {
    if (info.principal == principal) mine.emplace_back(info.issued_ns, t);
  }
  if (mine.size() >= options_.max_tokens_per_user) {
    std::sort(mine.begin(), mine.end());
    for (size_t i = 0; i + options_.max_tokens_per_user <= mine.size(); ++i) tokens_.erase(mine[i].second);
  }
  tokens_[token] = Token{principal, MonotonicNanos()};
  return token;
}

void Authenticator::DropExpired() {
  int64_t lifetime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.token_lifetime).count();
  int64_t now = MonotonicNanos();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(tokens_, [&](const auto& entry) { return now - entry.second.issued_ns > lifetime_ns; });
}

size_t Authenticator::token_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_.size();
}

}  // namespace skade::flightsql
