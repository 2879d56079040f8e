// Private to skade/catalog: moves tables' metadata/version-hint.text forward after commits, on
// a thread of its own, so the hint's file work (a lock, a write, an fsync, a rename) is not on
// any commit's path. Only the newest committed metadata of a table is written, and while a
// table's commits keep coming its hint is written at most once per `min_interval` (the first
// commit after a quiet spell at once): a stream of small commits no longer pays a hint file
// each. Drain and the destructor write what is pending without waiting.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "skade/io/file_io.h"

namespace skade::catalog::internal {

// Thread-safe. Borrows `io`, which must outlive it.
class HintWriter {
 public:
  static constexpr std::chrono::milliseconds kDefaultMinInterval{100};

  explicit HintWriter(io::FileIO& io, std::chrono::milliseconds min_interval = kDefaultMinInterval);
  ~HintWriter();
  HintWriter(const HintWriter&) = delete;
  HintWriter& operator=(const HintWriter&) = delete;

  // `metadata_location` was committed for `table` (a display name for log lines).
  void Advance(const std::string& table, const std::string& metadata_location);
  // Returns once every hint asked for before the call is written (or failed), e.g. before a
  // purge deletes the table's folder, which a late hint would otherwise bring back.
  void Drain();

 private:
  void Run();

  using Clock = std::chrono::steady_clock;
  using Pending = std::map<std::string, std::pair<std::string, std::string>>;

  // Moves the entries of pending_ that are due (or all, when hurried) into `batch`; returns when
  // the next one falls due (Clock::time_point::max() if none is left). Requires mu_.
  Clock::time_point TakeDue(Clock::time_point now, bool hurry, Pending& batch);

  io::FileIO& io_;
  const Clock::duration min_interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  // metadata folder → (table, newest committed metadata location); guarded by mu_
  Pending pending_;
  // metadata folder → when its hint was last written, for the folders written within the last
  // min_interval_; guarded by mu_
  std::map<std::string, Clock::time_point> last_written_;
  int drains_ = 0;         // Drain calls waiting; guarded by mu_
  bool writing_ = false;   // a batch is being written; guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::condition_variable idle_;
  std::thread thread_;
};

}  // namespace skade::catalog::internal
