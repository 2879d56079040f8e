#include "skade/base/url.h"

#include <gtest/gtest.h>

namespace skade {
namespace {

TEST(UrlTest, PercentDecodesAndKeepsMalformedEscapes) {
  EXPECT_EQ(PercentDecode("a%20b+c"), "a b c");
  EXPECT_EQ(PercentDecode("a+b", /*plus_is_space=*/false), "a+b");
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
  EXPECT_EQ(PercentDecode("%1F%3a"), std::string("\x1f:"));
}

TEST(UrlTest, ParsesQueryStringsInOrder) {
  auto q = ParseQueryString("a=1&&b=x%20y&c&=v");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>{"b", "x y"}));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>{"c", ""}));
  EXPECT_EQ(q[3], (std::pair<std::string, std::string>{"", "v"}));
  EXPECT_TRUE(ParseQueryString("").empty());
}

}  // namespace
}  // namespace skade
