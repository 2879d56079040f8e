// OrderedParallel: produce results on a few worker threads, consume them on the calling
// thread in index order, with a bounded number waiting (so memory stays flat however many
// items there are). For pipelines such as "read and decode manifest i" → "hand its tasks on".
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "skade/base/status.h"

namespace skade {

// Runs produce(i) for every i in [0, n) on up to `threads` workers and consume(i, result) on
// the calling thread for i = 0, 1, … in order; at most `window` (≥ 1) produced results wait.
// Stops at the first error consume returns and returns it; workers finish the item in hand
// and start no other. With threads ≤ 1 or n ≤ 1 everything runs on the calling thread.
// `produce` must be safe to call concurrently.
template <typename R>
Status OrderedParallel(size_t n, int threads, size_t window, const std::function<R(size_t)>& produce,
                       const std::function<Status(size_t, R&)>& consume) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) {
      R r = produce(i);
      SKADE_RETURN_IF_ERROR(consume(i, r));
    }
    return Status::Ok();
  }
  window = std::max<size_t>(window, 1);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<R>> slots(n);
  size_t next = 0;      // the next index a worker takes
  size_t consumed = 0;  // indexes below this are consumed
  bool stop = false;
  auto work = [&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || next >= n || next < consumed + window; });
      if (stop || next >= n) return;
      const size_t i = next++;
      lock.unlock();
      R r = produce(i);
      lock.lock();
      slots[i].emplace(std::move(r));
      cv.notify_all();
    }
  };
  std::vector<std::thread> workers;
  const size_t count = std::min<size_t>(static_cast<size_t>(threads), n);
  workers.reserve(count);
  for (size_t t = 0; t < count; ++t) workers.emplace_back(work);
  Status status = Status::Ok();
  for (size_t i = 0; i < n && status.ok(); ++i) {
    std::optional<R> r;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slots[i].has_value(); });
      r = std::move(slots[i]);
      slots[i].reset();
      consumed = i + 1;
      cv.notify_all();
    }
    status = consume(i, *r);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    cv.notify_all();
  }
  for (std::thread& w : workers) w.join();
  return status;
}

}  // namespace skade
