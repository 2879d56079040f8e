#include "skade/base/uuid.h"

#include <sys/wait.h>
#include <unistd.h>

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

TEST(UuidTest, ForkedChildrenDoNotRepeatTheParent) {
  (void)Uuid::NewV7();  // make sure the generator state exists before forking
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Uuid child = Uuid::NewV7();
    ssize_t n = ::write(fds[1], child.bytes.data(), child.bytes.size());
    ::_exit(n == 16 ? 0 : 1);
  }
  Uuid parent = Uuid::NewV7();
  Uuid child;
  ASSERT_EQ(::read(fds[0], child.bytes.data(), 16), 16);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  // Same millisecond is likely; the random bits must still differ.
  EXPECT_NE(std::vector<uint8_t>(parent.bytes.begin() + 8, parent.bytes.end()),
            std::vector<uint8_t>(child.bytes.begin() + 8, child.bytes.end()));
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
