#include "skade/base/ordered_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace skade {
namespace {

TEST(OrderedParallelTest, ConsumesInOrderWhateverOrderWorkersFinishIn) {
  for (int threads : {1, 2, 4}) {
    std::vector<size_t> seen;
    std::function<size_t(size_t)> produce = [](size_t i) {
      // Earlier items take longer, so later ones finish first.
      std::this_thread::sleep_for(std::chrono::microseconds(200 * (i % 4 == 0 ? 5 : 1)));
      return i * 10;
    };
    std::function<Status(size_t, size_t&)> consume = [&](size_t i, size_t& r) {
      EXPECT_EQ(r, i * 10);
      seen.push_back(i);
      return Status::Ok();
    };
    ASSERT_TRUE(OrderedParallel<size_t>(50, threads, 3, produce, consume).ok());
    ASSERT_EQ(seen.size(), 50u) << threads;
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  }
}

TEST(OrderedParallelTest, AtMostTheWindowWaitsAhead) {
  std::atomic<size_t> consumed{0};
  std::atomic<size_t> worst{0};
  std::function<int(size_t)> produce = [&](size_t i) {
    const size_t ahead = i - std::min(i, consumed.load());
    size_t w = worst.load();
    while (ahead > w && !worst.compare_exchange_weak(w, ahead)) {
    }
    return 0;
  };
  std::function<Status(size_t, int&)> consume = [&](size_t i, int&) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // a slow consumer
    consumed = i + 1;
    return Status::Ok();
  };
  ASSERT_TRUE(OrderedParallel<int>(40, 4, 2, produce, consume).ok());
  // An item is started only while fewer than `window` (2) produced ones wait: at most 2 past
  // the one being consumed.
  EXPECT_LE(worst.load(), 2u);
}

TEST(OrderedParallelTest, StopsAtTheFirstErrorOfTheConsumer) {
  std::atomic<int> produced{0};
  std::function<int(size_t)> produce = [&](size_t i) {
    ++produced;
    return static_cast<int>(i);
  };
  std::vector<int> seen;
  std::function<Status(size_t, int&)> consume = [&](size_t, int& r) {
    seen.push_back(r);
    return r == 5 ? Status::Corruption("item 5") : Status::Ok();
  };
  Status st = OrderedParallel<int>(1000, 2, 2, produce, consume);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_LT(produced.load(), 20) << "workers stop instead of running through every item";
}

}  // namespace
}  // namespace skade
