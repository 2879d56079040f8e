#include "skade/events/bus.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace skade::events {

namespace internal {

// The ring: slot i % capacity holds the event with ring index i, for the last `capacity`
// indices below `end`. One short mutex guards it; a publisher holds it for one slot copy.
struct BusState {
  explicit BusState(size_t capacity) : slots(capacity), mask(capacity - 1) {}

  std::mutex mu;
  std::condition_variable cv;
  std::vector<CommitEvent> slots;
  const uint64_t mask;
  uint64_t end = 0;  // ring index the next event gets
  int64_t last_seq = 0;
  int waiters = 0;  // receivers blocked in Next; publish notifies only when some wait
  bool closed = false;
  // The notifier thread waits on notifier_cv for wake_pending and then wakes the receivers.
  std::condition_variable notifier_cv;
  bool wake_pending = false;
  bool notifier_stop = false;
  std::atomic<int64_t> subscribers{0};
};

}  // namespace internal

namespace {

size_t RoundUpPowerOfTwo(size_t n) {
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

Receiver::Receiver(std::shared_ptr<internal::BusState> state, uint64_t position)
    : state_(std::move(state)), position_(position) {
  if (state_) state_->subscribers.fetch_add(1, std::memory_order_relaxed);
}

Receiver::~Receiver() {
  if (state_) state_->subscribers.fetch_sub(1, std::memory_order_relaxed);
}

Receiver::Receiver(Receiver&& other) noexcept
    : state_(std::move(other.state_)), position_(other.position_) {}

Receiver& Receiver::operator=(Receiver&& other) noexcept {
  if (this != &other) {
    if (state_) state_->subscribers.fetch_sub(1, std::memory_order_relaxed);
    state_ = std::move(other.state_);
    position_ = other.position_;
  }
  return *this;
}

Received Receiver::Next(std::chrono::nanoseconds timeout) {
  Received out;
  if (!state_) {
    out.kind = Received::Kind::kClosed;
    return out;
  }
  internal::BusState& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (position_ == s.end && !s.closed) {
    ++s.waiters;
    s.cv.wait_for(lock, timeout, [&] { return position_ != s.end || s.closed; });
    --s.waiters;
  }
  if (position_ == s.end) {
    out.kind = s.closed ? Received::Kind::kClosed : Received::Kind::kTimeout;
    return out;
  }
  const uint64_t capacity = s.mask + 1;
  if (s.end - position_ > capacity) {
    uint64_t oldest = s.end - capacity;
    out.kind = Received::Kind::kLagged;
    out.missed = static_cast<int64_t>(oldest - position_);
    position_ = oldest;
    return out;
  }
  out.kind = Received::Kind::kEvent;
  out.event = s.slots[position_ & s.mask];
  ++position_;
  return out;
}

Bus::Bus(size_t capacity, int64_t initial_seq)
    : state_(std::make_shared<internal::BusState>(RoundUpPowerOfTwo(capacity))) {
  state_->last_seq = initial_seq;
  notifier_ = std::thread([s = state_] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (true) {
      s->notifier_cv.wait(lock, [&] { return s->wake_pending || s->notifier_stop; });
      if (s->notifier_stop) return;
      s->wake_pending = false;
      lock.unlock();
      s->cv.notify_all();
      lock.lock();
    }
  });
}

Bus::~Bus() {
  Close();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->notifier_stop = true;
  }
  state_->notifier_cv.notify_one();
  notifier_.join();
}

bool Bus::Publish(CommitEvent event) {
  internal::BusState& s = *state_;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.closed || event.commit_seq <= s.last_seq) return false;
    s.last_seq = event.commit_seq;
    if (s.subscribers.load(std::memory_order_relaxed) == 0) {
      // Nobody can read this slot: a later subscriber starts at `end`. Skip the copy.
      ++s.end;
      return true;
    }
    s.slots[s.end & s.mask] = std::move(event);
    ++s.end;
    wake = s.waiters > 0 && !s.wake_pending;
    if (wake) s.wake_pending = true;
  }
  if (wake) s.notifier_cv.notify_one();
  return true;
}

Subscription Bus::Subscribe() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return Subscription{state_->last_seq, Receiver(state_, state_->end)};
}

void Bus::SkipTo(int64_t seq) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (seq > state_->last_seq) state_->last_seq = seq;
}

void Bus::Close() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->closed = true;
  }
  state_->cv.notify_all();
}

int64_t Bus::last_seq() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->last_seq;
}

size_t Bus::capacity() const { return state_->mask + 1; }

int64_t Bus::subscriber_count() const {
  return state_->subscribers.load(std::memory_order_relaxed);
}

}  // namespace skade::events
