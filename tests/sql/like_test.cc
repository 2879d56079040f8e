// LIKE patterns of the Flight SQL metadata commands.
#include "skade/sql/like.h"

#include <gtest/gtest.h>

namespace skade::sql {
namespace {

TEST(LikeMatchTest, Patterns) {
  EXPECT_TRUE(LikeMatch("%", ""));
  EXPECT_TRUE(LikeMatch("a.%", "a.b"));
  EXPECT_FALSE(LikeMatch("a.%", "ab"));
  EXPECT_TRUE(LikeMatch("or_ers", "orders"));
  EXPECT_FALSE(LikeMatch("or_ers", "ordders"));
  EXPECT_TRUE(LikeMatch("%line%", "order_lines"));
  EXPECT_TRUE(LikeMatch("order\\_lines", "order_lines"));
  EXPECT_FALSE(LikeMatch("order\\_lines", "orderXlines"));
  EXPECT_FALSE(LikeMatch("orders", "Orders"));
  EXPECT_TRUE(LikeMatch("%%a%", "bab"));
}

}  // namespace
}  // namespace skade::sql
