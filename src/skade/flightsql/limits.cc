#include "skade/flightsql/limits_internal.h"

#include <algorithm>
#include <atomic>

#include "skade/base/clock.h"
#include "skade/base/log.h"

namespace skade::flightsql {

// ---- MemoryBudget

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
  }
  return *this;
}

void MemoryBudget::Reservation::Release() {
  if (budget_ != nullptr) budget_->Give(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

Result<MemoryBudget::Reservation> MemoryBudget::Reserve(int64_t bytes, std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes < 0 || bytes > limit_ - used_) {
    return Status(StatusCode::kResourceExhausted,
                  std::string(what) + " needs " + std::to_string(bytes) + " bytes; the server's client buffer budget (" +
                      std::to_string(limit_) + " bytes) has " + std::to_string(std::max<int64_t>(0, limit_ - used_)) +
                      " left");
  }
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return Reservation(this, bytes);
}

MemoryBudget::Reservation MemoryBudget::ReserveAnyway(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ += std::max<int64_t>(0, bytes);
  peak_ = std::max(peak_, used_);
  return Reservation(this, std::max<int64_t>(0, bytes));
}

void MemoryBudget::Give(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= bytes;
}

int64_t MemoryBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

int64_t MemoryBudget::available() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::max<int64_t>(0, limit_ - used_);
}

int64_t MemoryBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

// ---- ActiveStream

struct ActiveStream::State {
  std::string owner;
  grpc::ServerContext* context;          // valid while registered (guarded by the monitor's mu_)
  std::atomic<int64_t> waiting_since{0};  // monotonic ns; 0 = not waiting for the client
  std::atomic<StreamEnd> ended{StreamEnd::kNone};
  std::mutex callbacks_mu;  // held while callbacks run
  std::map<uint64_t, std::function<void()>> callbacks;
  uint64_t next_id = 1;
};

ActiveStream::~ActiveStream() { monitor_->Remove(state_); }

ActiveStream::ClientWait ActiveStream::WaitForClient() {
  state_->waiting_since = std::max<int64_t>(1, MonotonicNanos());
  return ClientWait(this);
}

ActiveStream::ClientWait::~ClientWait() { stream_->state_->waiting_since = 0; }

std::unique_ptr<ActiveStream::Watch> ActiveStream::OnEnd(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(state_->callbacks_mu);
  if (state_->ended != StreamEnd::kNone) {
    fn();
    return std::unique_ptr<Watch>(new Watch(this, 0));
  }
  uint64_t id = state_->next_id++;
  state_->callbacks.emplace(id, std::move(fn));
  return std::unique_ptr<Watch>(new Watch(this, id));
}

ActiveStream::Watch::~Watch() {
  std::lock_guard<std::mutex> lock(stream_->state_->callbacks_mu);
  stream_->state_->callbacks.erase(id_);
}

StreamEnd ActiveStream::ended() const { return state_->ended; }

// ---- StreamMonitor

StreamMonitor::StreamMonitor(StreamLimits limits) : limits_(limits) {}
StreamMonitor::~StreamMonitor() = default;

Result<std::unique_ptr<ActiveStream>> StreamMonitor::Admit(const std::string& owner, grpc::ServerContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  int& mine = per_owner_[owner];
  if (mine >= limits_.max_streams_per_owner) {
    return Status(StatusCode::kResourceExhausted,
                  "too many concurrent streams for this client (" + std::to_string(limits_.max_streams_per_owner) +
                      "); finish or cancel one first");
  }
  if (static_cast<int>(streams_.size()) >= limits_.max_streams) {
    if (mine == 0) per_owner_.erase(owner);
    return Status(StatusCode::kResourceExhausted,
                  "the server is serving its limit of " + std::to_string(limits_.max_streams) + " streams; retry later");
  }
  ++mine;
  auto state = std::make_shared<ActiveStream::State>();
  state->owner = owner;
  state->context = context;
  streams_.push_back(state);
  return std::unique_ptr<ActiveStream>(new ActiveStream(this, std::move(state)));
}

void StreamMonitor::Remove(const std::shared_ptr<ActiveStream::State>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(streams_.begin(), streams_.end(), state);
  if (it == streams_.end()) return;
  streams_.erase(it);
  auto owner = per_owner_.find(state->owner);
  if (owner != per_owner_.end() && --owner->second <= 0) per_owner_.erase(owner);
  state->context = nullptr;
}

void StreamMonitor::End(ActiveStream::State& state, StreamEnd why) {
  StreamEnd none = StreamEnd::kNone;
  if (!state.ended.compare_exchange_strong(none, why)) return;
  std::lock_guard<std::mutex> lock(state.callbacks_mu);
  for (auto& [id, fn] : state.callbacks) fn();
  state.callbacks.clear();
}

void StreamMonitor::Check() {
  const int64_t now = MonotonicNanos();
  const int64_t stall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.stall_timeout).count();
  std::vector<std::pair<std::shared_ptr<ActiveStream::State>, StreamEnd>> ending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : streams_) {
      if (s->ended != StreamEnd::kNone || s->context == nullptr) continue;
      const int64_t since = s->waiting_since;
      if (s->context->IsCancelled()) {
        ending.emplace_back(s, StreamEnd::kClientGone);
      } else if (stall_ns > 0 && since != 0 && now - since > stall_ns) {
        // Unblocks the handler's Write or Read (gRPC allows TryCancel from any thread).
        s->context->TryCancel();
        SKADE_LOG_INFO("flight sql: a stream of '{}' waited {} ms for its client; ended it", s->owner,
                       (now - since) / 1000000);
        ending.emplace_back(s, StreamEnd::kStalled);
      }
    }
  }
  // Callbacks run outside mu_: they interrupt DuckDB queries, which take other locks.
  for (auto& [state, why] : ending) End(*state, why);
}

void StreamMonitor::EndAll() {
  std::vector<std::shared_ptr<ActiveStream::State>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : streams_) {
      if (s->context != nullptr) s->context->TryCancel();
      all.push_back(s);
    }
  }
  for (auto& s : all) End(*s, StreamEnd::kShutdown);
}

size_t StreamMonitor::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace skade::flightsql
