// Test helper: waiting for a condition that nothing signals (a counter of another thread, a
// server's stats), with a deadline instead of a fixed sleep.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace skade::testing {

// Checks `ready` every `interval` until it holds or `timeout` has passed; returns whether it
// held. A test asserts on the result (or on the condition itself) so that a wait that runs out
// fails instead of passing through.
inline bool PollUntil(const std::function<bool()>& ready,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20),
                      std::chrono::milliseconds interval = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
  return true;
}

}  // namespace skade::testing
