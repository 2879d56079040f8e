// Clients behind load balancers: the one X-Forwarded-For rule of every server front (REST and
// Flight SQL). A proxy the operator trusts reports the address it received a request from; any
// other peer's header is ignored, so that no client can pose as another.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace skade {

// The canonical text of an IPv4 or IPv6 address ("::ffff:10.0.0.1" and "10.0.0.1" stay
// distinct; "0:0::1" → "::1"); nullopt for anything else (host names, ports, CIDR ranges).
std::optional<std::string> CanonicalIpAddress(std::string_view text);

// Who sent a request that arrived from `peer` (an IP address): `peer` itself unless it is one of
// `trusted` (canonical addresses); from a trusted proxy, the nearest address of `forwarded_for`
// (the X-Forwarded-For value, comma-separated, nearest last) that is not trusted. A header that
// is empty, holds anything but IP addresses, or names only trusted proxies leaves `peer`.
std::string ClientBehindProxies(std::string_view peer, std::string_view forwarded_for,
                                std::span<const std::string> trusted);

}  // namespace skade
