#include "skade/base/forwarded.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

namespace skade {

std::optional<std::string> CanonicalIpAddress(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  char out[INET6_ADDRSTRLEN];
  in_addr v4;
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1 && inet_ntop(AF_INET, &v4, out, sizeof(out)) != nullptr) {
    return std::string(out);
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1 && inet_ntop(AF_INET6, &v6, out, sizeof(out)) != nullptr) {
    return std::string(out);
  }
  return std::nullopt;
}

std::string ClientBehindProxies(std::string_view peer, std::string_view forwarded_for,
                                std::span<const std::string> trusted) {
  auto is_trusted = [&](const std::string& address) {
    return std::find(trusted.begin(), trusted.end(), address) != trusted.end();
  };
  const std::optional<std::string> canonical_peer = CanonicalIpAddress(peer);
  if (!canonical_peer || !is_trusted(*canonical_peer)) return std::string(peer);
  // Every hop must be an address; the nearest untrusted one is the client.
  std::vector<std::string> hops;
  size_t pos = 0;
  while (pos <= forwarded_for.size()) {
    const size_t comma = forwarded_for.find(',', pos);
    std::string_view hop = forwarded_for.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!hop.empty() && (hop.front() == ' ' || hop.front() == '\t')) hop.remove_prefix(1);
    while (!hop.empty() && (hop.back() == ' ' || hop.back() == '\t')) hop.remove_suffix(1);
    std::optional<std::string> address = CanonicalIpAddress(hop);
    if (!address) return std::string(peer);
    hops.push_back(std::move(*address));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    if (!is_trusted(*it)) return *it;
  }
  return std::string(peer);
}

}  // namespace skade
