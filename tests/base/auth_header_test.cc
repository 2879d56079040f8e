#include "skade/base/auth_header.h"

#include <gtest/gtest.h>

namespace skade {
namespace {

// RFC 7235 §2.1: the scheme is case-insensitive and followed by one or more spaces.
TEST(AuthHeaderTest, SchemesCompareWithoutCase) {
  for (const char* header : {"Bearer abc", "bearer abc", "BEARER abc", "BeArEr   abc ", " Bearer abc"}) {
    auto c = AuthCredentials(header, "Bearer");
    ASSERT_TRUE(c.has_value()) << header;
    EXPECT_EQ(*c, "abc") << header;
  }
  for (const char* header : {"Bearerabc", "Bearer", "Bearer   ", "Basic abc", "", "Bear abc", "Bearers abc"}) {
    EXPECT_FALSE(AuthCredentials(header, "Bearer").has_value()) << header;
  }
  EXPECT_EQ(*AuthCredentials("basic dXNlcjpwdw==", "Basic"), "dXNlcjpwdw==");
}

}  // namespace
}  // namespace skade
