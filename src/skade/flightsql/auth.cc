#include "skade/flightsql/auth.h"

#include <algorithm>
#include <vector>

#include "skade/base/clock.h"
#include "skade/base/random.h"

namespace skade::flightsql {

namespace {

// Equal strings, in time that depends on the lengths only.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

std::string DecodeBase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    char c = in[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else return "";
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < in.size(); ++i) {
    if (in[i] != '=') return "";
  }
  return out;
}

std::string EncodeBase64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                 static_cast<uint8_t>(in[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

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
  if (authorization.starts_with("Bearer ")) {
    std::string token(authorization.substr(7));
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
  if (authorization.starts_with("Basic ")) return CheckBasic(DecodeBase64(authorization.substr(6)));
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
