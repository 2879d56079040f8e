#include "skade/base/json_parse_internal.h"

#include <string>

#include <gtest/gtest.h>

#include "skade/base/json_text.h"

namespace skade {
namespace {

std::string Nested(size_t depth, char open, char close) {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonParseTest, KeepsDocumentOrderAndTheLastValueOfARepeatedKey) {
  auto j = ParseOrderedJson(R"({"z":1,"a":[true,null,"s",1.5,-2,18446744073709551615],"z":3,"m":{}})", "t");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->dump(), R"({"z":3,"a":[true,null,"s",1.5,-2,18446744073709551615],"m":{}})");
  auto sorted = ParseJson(R"({"z":1,"a":2,"z":3})", "t");
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->dump(), R"({"a":2,"z":3})");
}

TEST(JsonParseTest, RepeatedKeysInLargeObjectsUseTheIndex) {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  text += "\"k7\":700,\"k70\":7000,\"new\":1}";
  auto j = ParseOrderedJson(text, "t");
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(j->size(), 101u);
  EXPECT_EQ((*j)["k7"], 700);
  EXPECT_EQ((*j)["k70"], 7000);
  EXPECT_EQ(j->begin().key(), "k0");
  std::string last;
  for (auto it = j->begin(); it != j->end(); ++it) last = it.key();
  EXPECT_EQ(last, "new");
}

TEST(JsonParseTest, ManyMembersParse) {
  // 300,000 members: quadratic insertion took minutes; the builder is linear.
  std::string text = "{";
  for (int i = 0; i < 300000; ++i) text += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":\"v\"";
  text += "}";
  auto j = ParseOrderedJson(text, "t");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->size(), 300000u);
}

TEST(JsonParseTest, RefusesNestingPastTheLimit) {
  EXPECT_TRUE(ParseOrderedJson(Nested(kMaxJsonNesting, '[', ']'), "t").ok());
  for (char open : {'[', '{'}) {
    std::string deep = open == '[' ? Nested(100000, '[', ']') : std::string();
    if (open == '{') {
      for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
      deep += "1" + std::string(100000, '}');
    }
    auto j = ParseOrderedJson(deep, "the body");
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(j.status().message().find("deeper than 256"), std::string::npos) << j.status().message();
    EXPECT_FALSE(ParseJson(deep, "t").ok());
  }
  EXPECT_FALSE(ParseJson(Nested(3, '[', ']'), "t", 2).ok());
}

TEST(JsonParseTest, RefusesMalformedTextNamingWhatAndWhere) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "1 2", "nul", "\"\x01\"", "[1]x"}) {
    auto j = ParseOrderedJson(bad, "the body");
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(j.status().message().rfind("the body: ", 0), 0u) << j.status().message();
  }
  EXPECT_TRUE(ParseOrderedJson(" \n[1] \t", "t").ok());
}

TEST(JsonTextTest, FindsNulCharactersOnlyWhereTheyAre) {
  EXPECT_TRUE(CheckJsonHasNoNul(R"({"a":"b\\u0000"})", "t").ok());  // a backslash, then "u0000"
  EXPECT_TRUE(CheckJsonHasNoNul(R"({"a":"\u0001"})", "t").ok());
  EXPECT_EQ(CheckJsonHasNoNul(R"({"a":"b\u0000c"})", "t").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckJsonHasNoNul(R"({"\u0000":1})", "t").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckJsonHasNoNul(std::string("{\"a\":\"\0\"}", 9), "t").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade
