// Private to skade/catalog: moves tables' metadata/version-hint.text forward after commits, on
// a thread of its own, so the hint's file work (a lock, a write, an fsync, a rename) is not on
// any commit's path. Only the newest committed metadata of a table is written; the destructor
// writes what is pending before it returns.
#pragma once

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
  explicit HintWriter(io::FileIO& io);
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

  io::FileIO& io_;
  std::mutex mu_;
  std::condition_variable cv_;
  // metadata folder → (table, newest committed metadata location); guarded by mu_
  std::map<std::string, std::pair<std::string, std::string>> pending_;
  bool writing_ = false;   // a batch is being written; guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::condition_variable idle_;
  std::thread thread_;
};

}  // namespace skade::catalog::internal
