// The X-Forwarded-For rule: only a trusted proxy's header counts, and it names the nearest
// untrusted hop; anything malformed leaves the peer.
#include "skade/base/forwarded.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skade {
namespace {

TEST(ForwardedTest, CanonicalIpAddresses) {
  EXPECT_EQ(CanonicalIpAddress("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(CanonicalIpAddress("0:0:0:0:0:0:0:1"), "::1");
  EXPECT_EQ(CanonicalIpAddress("2001:DB8::A"), "2001:db8::a");
  EXPECT_EQ(CanonicalIpAddress("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
  for (const char* bad : {"", "localhost", "10.0.0.1:80", "10.0.0.0/8", "[::1]", "10.0.0", " 10.0.0.1", "1.2.3.4\n"}) {
    EXPECT_EQ(CanonicalIpAddress(bad), std::nullopt) << bad;
  }
}

TEST(ForwardedTest, OnlyATrustedProxysHeaderNamesTheClient) {
  const std::vector<std::string> trusted = {"127.0.0.1", "10.0.0.2"};
  // Another peer: its header is ignored (a client cannot pose as another).
  EXPECT_EQ(ClientBehindProxies("192.0.2.7", "198.51.100.1", trusted), "192.0.2.7");
  // The balancer: the nearest untrusted hop, spaces allowed.
  EXPECT_EQ(ClientBehindProxies("127.0.0.1", "198.51.100.1", trusted), "198.51.100.1");
  EXPECT_EQ(ClientBehindProxies("127.0.0.1", "203.0.113.9, 198.51.100.1", trusted), "198.51.100.1");
  // A chain of trusted proxies is walked; what a client wrote first (before them) does not count.
  EXPECT_EQ(ClientBehindProxies("127.0.0.1", "203.0.113.9, 198.51.100.1,10.0.0.2", trusted), "198.51.100.1");
  EXPECT_EQ(ClientBehindProxies("127.0.0.1", "2001:DB8::1", trusted), "2001:db8::1");
  // Nothing usable: the peer.
  for (const char* header : {"", "unknown", "198.51.100.1, not-an-ip", "10.0.0.2", "198.51.100.1:5000"}) {
    EXPECT_EQ(ClientBehindProxies("127.0.0.1", header, trusted), "127.0.0.1") << header;
  }
  EXPECT_EQ(ClientBehindProxies("127.0.0.1", "198.51.100.1", {}), "127.0.0.1");
}

}  // namespace
}  // namespace skade
