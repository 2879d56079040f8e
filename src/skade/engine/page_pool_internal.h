// Anonymous memory for the Arrow buffers skade builds itself, kept for reuse: a batch released
// by its consumer gives its pages back to the pool that made them, and the next batch takes them
// without the kernel zeroing and mapping every page again. A 10M-row, 10-column read fills
// ~740 MB of fresh pages otherwise: 190,000 page faults, a quarter of its CPU (RESULTS aq).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "skade/base/status.h"

namespace skade::engine {

class PagePool;

// One mapping from a PagePool: at least the bytes asked, page aligned, contents unspecified
// (zeros or what a previous user left). Move-only; destruction gives it back to its pool, which
// the run keeps alive. Any thread may destroy it.
class PageRun {
 public:
  PageRun() = default;
  ~PageRun();
  PageRun(PageRun&& other) noexcept;
  PageRun& operator=(PageRun&& other) noexcept;
  PageRun(const PageRun&) = delete;
  PageRun& operator=(const PageRun&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Grows the run to at least `bytes`, keeping its contents; the address may change.
  // kResourceExhausted when the system has no memory for it (the run is unchanged then).
  Status Grow(size_t bytes);

 private:
  friend class PagePool;
  PageRun(std::shared_ptr<PagePool> pool, uint8_t* data, size_t size)
      : pool_(std::move(pool)), data_(data), size_(size) {}
  void Reset();

  std::shared_ptr<PagePool> pool_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct PagePoolStats {
  size_t kept_bytes = 0;   // released runs held for reuse
  uint64_t mapped = 0;     // runs made by a new mapping
  uint64_t reused = 0;     // runs served from kept ones
};

// Thread-safe. Keeps released runs up to `max_kept_bytes`, handing each to the kernel as free
// to reclaim under memory pressure (MADV_FREE: reused at once unless reclaimed meanwhile; the
// pages still count in the process's RSS until then). Beyond the bound the runs released
// longest ago are unmapped, and a thread of the pool, running only while it keeps runs,
// unmaps those unused for `max_idle_ms` (within half that again). A new run reuses the
// smallest kept one that holds it and is at most twice its size.
class PagePool : public std::enable_shared_from_this<PagePool> {
 public:
  static constexpr size_t kDefaultMaxKeptBytes = size_t{1} << 30;
  static constexpr int64_t kDefaultMaxIdleMs = 10'000;

  static std::shared_ptr<PagePool> Make(size_t max_kept_bytes = kDefaultMaxKeptBytes,
                                        int64_t max_idle_ms = kDefaultMaxIdleMs);
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // A run of at least `bytes` (> 0). kResourceExhausted when the system maps no more memory.
  Result<PageRun> Acquire(size_t bytes);
  PagePoolStats stats() const;

 private:
  friend class PageRun;
  PagePool(size_t max_kept_bytes, int64_t max_idle_ms);
  void Give(uint8_t* data, size_t size);
  void Reap();

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace skade::engine
