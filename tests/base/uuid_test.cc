#include "skade/base/uuid.h"

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "skade/base/clock.h"

namespace skade {
namespace {

TEST(UuidTest, V7IsTimeOrderedAndWellFormed) {
  int64_t before = NowMillis();
  Uuid prev = Uuid::NewV7();
  int64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = (ms << 8) | prev.bytes[i];
  EXPECT_GE(ms, before);
  EXPECT_LE(ms, NowMillis());
  EXPECT_EQ(prev.version(), 7);
  EXPECT_EQ(prev.bytes[8] & 0xC0, 0x80);  // RFC 9562 variant
  for (int i = 0; i < 20000; ++i) {
    Uuid next = Uuid::NewV7();
    ASSERT_LT(prev, next);
    prev = next;
  }
}

TEST(UuidTest, UniqueAcrossThreads) {
  std::vector<std::vector<Uuid>> per(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&per, t] {
      for (int i = 0; i < 5000; ++i) per[t].push_back(Uuid::NewV7());
    });
  }
  for (auto& th : threads) th.join();
  std::set<Uuid> all;
  for (const auto& v : per) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 20000u);
}

TEST(UuidTest, ParsesAndFormats) {
  auto u = Uuid::Parse("F79C3E09-677C-4BBD-A479-3F349CB785E7");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->ToString(), "f79c3e09-677c-4bbd-a479-3f349cb785e7");
  EXPECT_EQ(u->bytes[0], 0xf7);
  EXPECT_EQ(u->version(), 4);
  for (const char* bad : {"", "f79c3e09677c4bbda4793f349cb785e7", "g79c3e09-677c-4bbd-a479-3f349cb785e7",
                          "f79c3e09-677c-4bbd-a479-3f349cb785e"}) {
    EXPECT_EQ(Uuid::Parse(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(Uuid::FromBytes("short").ok());
}

}  // namespace
}  // namespace skade
