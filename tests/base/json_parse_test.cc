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

// Splitting an object around one member: putting the parsed value back in place of the rest's
// null gives exactly the tree of the whole text, whatever strings, escapes and nesting surround
// it; anything doubtful (the key twice, absent, escaped, text after the object, an unfinished
// value, no object) is nullopt, for the caller to parse the whole text instead.
TEST(JsonTextTest, SplitsAnObjectAroundOneTopLevelMember) {
  const std::string texts[] = {
      R"({"metadata":{"a":1}})",
      R"( { "x" : "}{\"metadata\":", "metadata" : [1, {"metadata": "]}"}, "\\"], "y": -1.5e3 } )",
      R"({"metadata-location":"s3://b/m.json","metadata":{"s":"\"{[","n":[[],[[{}]]],"t":true},"config":{"k":"v"}})",
      R"({"a":null,"metadata":17,"b":false})",
      R"({"metadata":"text"})",
  };
  for (const std::string& text : texts) {
    auto split = SplitJsonMember(text, "metadata");
    ASSERT_TRUE(split.has_value()) << text;
    auto rest = ParseOrderedJson(split->rest, "rest");
    auto value = ParseOrderedJson(split->value, "value");
    auto whole = ParseOrderedJson(text, "whole");
    ASSERT_TRUE(rest.ok() && value.ok() && whole.ok()) << text;
    ASSERT_TRUE((*rest)["metadata"].is_null()) << split->rest;
    (*rest)["metadata"] = *value;
    EXPECT_EQ(rest->dump(), whole->dump()) << text;
  }
  for (const char* doubtful : {
           R"({"metadata":1,"metadata":2})",  // twice
           R"({"other":{"metadata":1}})",     // only nested
           R"({"metad\u0061ta":1})",          // escaped: not the raw key
           R"({"metadata":1} x)",             // text after the object
           R"({"metadata":{"a":1})",          // unfinished
           R"({"metadata":"abc)",             // unfinished string
           R"({"metadata":})",                // no value
           R"({"metadata" 1})",               // no colon
           R"([{"metadata":1}])",             // no object
           R"({})",
           R"()",
       }) {
    EXPECT_FALSE(SplitJsonMember(doubtful, "metadata").has_value()) << doubtful;
  }
  // Deep nesting is followed without recursion.
  const std::string deep = R"({"metadata":)" + Nested(100000, '[', ']') + "}";
  auto split = SplitJsonMember(deep, "metadata");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->value.size(), 200000u);
  EXPECT_EQ(split->rest, R"({"metadata":null})");
}

}  // namespace
}  // namespace skade
