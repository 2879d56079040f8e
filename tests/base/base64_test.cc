// Base64 as HTTP Basic credentials use it: round trips, known values, refusals.
#include "skade/base/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "skade/base/random.h"

namespace skade {
namespace {

TEST(Base64Test, RoundTripsAndRefusesCharactersOutsideTheAlphabet) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", "user:pa:ss", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(DecodeBase64(EncodeBase64(s)), s) << EncodeBase64(s);
  }
  EXPECT_EQ(EncodeBase64("alice:s3cret"), "YWxpY2U6czNjcmV0");
  EXPECT_EQ(DecodeBase64("YWxpY2U6czNjcmV0"), "alice:s3cret");
  EXPECT_EQ(DecodeBase64("YWxp Y2U="), "");  // a character outside the alphabet
  EXPECT_EQ(DecodeBase64("YQ==x"), "");      // data after padding
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("s3cret", "s3cret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3cre"));
  EXPECT_FALSE(ConstantTimeEquals("s3cre", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3creT"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0", 2), "a"));
}

}  // namespace
}  // namespace skade
