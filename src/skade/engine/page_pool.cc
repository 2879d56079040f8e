#include "skade/engine/page_pool_internal.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace skade::engine {
namespace {

// Runs come in multiples of 64 KiB, so the runs of equal batches match exactly.
constexpr size_t kGranule = size_t{64} << 10;

size_t RoundUp(size_t bytes) { return (bytes + kGranule - 1) / kGranule * kGranule; }

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Mapping {
  uint8_t* data;
  size_t size;
};

void Unmap(const std::vector<Mapping>& mappings) {
  for (const Mapping& m : mappings) munmap(m.data, m.size);
}

}  // namespace

struct PagePool::State {
  struct Kept {
    uint8_t* data;
    size_t size;
    int64_t released_ms;
    std::multimap<size_t, std::list<Kept>::iterator>::iterator by_size;
  };
  size_t max_kept_bytes;
  int64_t max_idle_ms;
  mutable std::mutex mu;
  // The kept runs in the order they were released (the oldest first), and by size. Every
  // step on them is O(log n) or O(1) per run: a stream of small batches keeps thousands.
  std::list<Kept> kept;
  std::multimap<size_t, std::list<Kept>::iterator> by_size;
  size_t kept_bytes = 0;
  uint64_t mapped = 0;
  uint64_t reused = 0;
  // Unmaps expired runs while any are kept, so that a pool nobody uses any more gives its
  // memory back; it ends when nothing is kept, and a later release starts it again.
  std::thread reaper;
  bool reaping = false;
  bool stopping = false;
  std::condition_variable wake;

  void Keep(uint8_t* data, size_t size, int64_t now_ms) {
    auto it = kept.insert(kept.end(), Kept{data, size, now_ms, {}});
    it->by_size = by_size.emplace(size, it);
    kept_bytes += size;
  }

  // Takes `it` out of the pool, for the caller to reuse or unmap.
  Mapping Take(std::list<Kept>::iterator it) {
    const Mapping taken{it->data, it->size};
    by_size.erase(it->by_size);
    kept_bytes -= it->size;
    kept.erase(it);
    return taken;
  }

  // Takes the kept runs idle for too long out of the pool, for the caller to unmap unlocked.
  void Expire(int64_t now_ms, std::vector<Mapping>& out) {
    while (!kept.empty() && now_ms - kept.front().released_ms > max_idle_ms) out.push_back(Take(kept.begin()));
  }
};

PageRun::~PageRun() { Reset(); }

PageRun::PageRun(PageRun&& other) noexcept
    : pool_(std::move(other.pool_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PageRun& PageRun::operator=(PageRun&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = std::move(other.pool_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PageRun::Reset() {
  if (data_ != nullptr) pool_->Give(data_, size_);
  pool_.reset();
  data_ = nullptr;
  size_ = 0;
}

Status PageRun::Grow(size_t bytes) {
  if (data_ == nullptr) return Status::Internal("growing an empty page run");
  if (bytes <= size_) return Status::Ok();
  const size_t size = RoundUp(bytes);
  void* moved = mremap(data_, size_, size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) {
    return Status::ResourceExhausted("cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
  }
  data_ = static_cast<uint8_t*>(moved);
  size_ = size;
  return Status::Ok();
}

std::shared_ptr<PagePool> PagePool::Make(size_t max_kept_bytes, int64_t max_idle_ms) {
  return std::shared_ptr<PagePool>(new PagePool(max_kept_bytes, max_idle_ms));
}

PagePool::PagePool(size_t max_kept_bytes, int64_t max_idle_ms) : state_(std::make_unique<State>()) {
  state_->max_kept_bytes = max_kept_bytes;
  state_->max_idle_ms = max_idle_ms;
}

void PagePool::Reap() {
  std::unique_lock<std::mutex> lock(state_->mu);
  const auto period = std::chrono::milliseconds(std::max<int64_t>(state_->max_idle_ms / 2, 10));
  while (!state_->stopping && !state_->kept.empty()) {
    state_->wake.wait_for(lock, period);
    std::vector<Mapping> expired;
    state_->Expire(NowMs(), expired);
    lock.unlock();
    Unmap(expired);
    lock.lock();
  }
  state_->reaping = false;
}

PagePool::~PagePool() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
    state_->wake.notify_all();
  }
  if (state_->reaper.joinable()) state_->reaper.join();
  std::vector<Mapping> gone;
  for (const State::Kept& kept : state_->kept) gone.push_back({kept.data, kept.size});
  Unmap(gone);
}

Result<PageRun> PagePool::Acquire(size_t bytes) {
  if (bytes == 0) return Status::Internal("a page run of no bytes");
  const size_t size = RoundUp(bytes);
  std::vector<Mapping> expired;
  Mapping reused{nullptr, 0};
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->Expire(NowMs(), expired);
    auto it = state_->by_size.lower_bound(size);
    if (it != state_->by_size.end() && it->first / 2 <= size) {
      reused = state_->Take(it->second);
      ++state_->reused;
    }
  }
  Unmap(expired);
  if (reused.data != nullptr) return PageRun(shared_from_this(), reused.data, reused.size);
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    return Status::ResourceExhausted("cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->mapped;
  }
  return PageRun(shared_from_this(), static_cast<uint8_t*>(data), size);
}

void PagePool::Give(uint8_t* data, size_t size) {
  std::vector<Mapping> gone;
  // The pages stay mapped, but the kernel may take them back whenever it needs memory (then
  // they read as zeros); written again before that, they were never given up. Without
  // MADV_FREE (before Linux 4.5) the run is not kept.
  bool keep = size <= state_->max_kept_bytes;
#ifdef MADV_FREE
  if (keep && madvise(data, size, MADV_FREE) != 0) keep = false;
#else
  keep = false;
#endif
  if (!keep) {
    munmap(data, size);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    const int64_t now = NowMs();
    state_->Expire(now, gone);
    // Over the bound, the runs released longest ago go first.
    while (state_->kept_bytes + size > state_->max_kept_bytes && !state_->kept.empty()) {
      gone.push_back(state_->Take(state_->kept.begin()));
    }
    state_->Keep(data, size, now);
    if (!state_->reaping && !state_->stopping) {
      // The previous reaper has set `reaping` false and touches nothing after: joining it here
      // waits at most for its return.
      if (state_->reaper.joinable()) state_->reaper.join();
      state_->reaping = true;
      state_->reaper = std::thread([this] { Reap(); });
    }
  }
  Unmap(gone);
}

PagePoolStats PagePool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return PagePoolStats{state_->kept_bytes, state_->mapped, state_->reused};
}

}  // namespace skade::engine
