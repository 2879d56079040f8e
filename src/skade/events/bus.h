// Bus: the in-process broadcast of commit events (DESIGN §8). A fixed ring shared by all
// subscribers: publishing never waits for a subscriber and allocates nothing per subscriber; a
// subscriber that falls more than the ring's capacity behind is told how many events it missed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "skade/events/commit_event.h"

namespace skade::events {

namespace internal {
struct BusState;
}

// What Receiver::Next returns.
struct Received {
  enum class Kind {
    kEvent,    // `event` is the next event
    kLagged,   // the receiver fell behind the ring: `missed` events were overwritten; the next
               // call returns the oldest event still held
    kTimeout,  // nothing arrived in time
    kClosed,   // the bus was closed and everything before the close was received
  };
  Kind kind = Kind::kTimeout;
  CommitEvent event;
  int64_t missed = 0;
};

// One subscriber's position in the ring. Thread-compatible: one thread calls Next at a time.
// May outlive the Bus (it then reports kClosed).
class Receiver {
 public:
  explicit Receiver(std::shared_ptr<internal::BusState> state, uint64_t position);
  ~Receiver();
  Receiver(Receiver&&) noexcept;
  Receiver& operator=(Receiver&&) noexcept;
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // Waits up to `timeout` for the next event.
  Received Next(std::chrono::nanoseconds timeout);

 private:
  std::shared_ptr<internal::BusState> state_;
  uint64_t position_;  // ring index of the next event to read
};

struct Subscription {
  int64_t cursor = 0;  // commit_seq of the last event published before subscribing
  Receiver receiver;   // receives every event published after `cursor`
};

// Thread-safe. Events must be published in increasing commit_seq order; Publish drops an event
// whose commit_seq is not above the last published one (so two delivery paths can race).
class Bus {
 public:
  // `capacity` events are kept for slow subscribers (rounded up to a power of two, ≥ 2).
  // `initial_seq` is the commit_seq considered already published.
  explicit Bus(size_t capacity = 4096, int64_t initial_seq = 0);
  ~Bus();  // closes the bus
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;

  // Publishes `event` to every subscriber; false (and nothing happens) if its commit_seq is
  // not above last_seq() or the bus is closed. Never blocks on subscribers, and never wakes
  // them itself: one notifier thread does (a single notify_one here).
  bool Publish(CommitEvent event);
  // Marks everything up to `seq` as published without events (a feed starting at the log's
  // head); no-op if last_seq() is already ≥ seq.
  void SkipTo(int64_t seq);
  // Subscribes at the current end of the ring.
  Subscription Subscribe();
  // Ends every receiver's stream (after it read what was published before).
  void Close();

  int64_t last_seq() const;
  size_t capacity() const;
  int64_t subscriber_count() const;

 private:
  std::shared_ptr<internal::BusState> state_;
  // Wakes blocked receivers for the publisher, so a commit never pays for waking them.
  std::thread notifier_;
};

}  // namespace skade::events
