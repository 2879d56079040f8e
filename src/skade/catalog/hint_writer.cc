#include "skade/catalog/hint_writer_internal.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "skade/base/log.h"
#include "skade/iceberg/version_hint.h"

namespace skade::catalog::internal {

HintWriter::HintWriter(io::FileIO& io, std::chrono::milliseconds min_interval)
    : io_(io), min_interval_(min_interval), thread_([this] { Run(); }) {}

HintWriter::~HintWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HintWriter::Advance(const std::string& table, const std::string& metadata_location) {
  size_t slash = metadata_location.rfind('/');
  std::string folder = slash == std::string::npos ? "" : metadata_location.substr(0, slash);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = pending_[folder];
    // Commits of one table arrive in commit order from this process; the hint itself also
    // refuses to move back (iceberg::AdvanceVersionHint), for other processes' commits.
    slot = {table, metadata_location};
  }
  cv_.notify_one();
}

void HintWriter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  ++drains_;
  cv_.notify_one();
  idle_.wait(lock, [this] { return pending_.empty() && !writing_; });
  --drains_;
}

HintWriter::Clock::time_point HintWriter::TakeDue(Clock::time_point now, bool hurry,
                                                  Pending& batch) {
  Clock::time_point next_due = Clock::time_point::max();
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto last = last_written_.find(it->first);
    const Clock::time_point due = last == last_written_.end() ? now : last->second + min_interval_;
    if (hurry || due <= now) {
      batch.insert(std::move(*it));
      it = pending_.erase(it);
    } else {
      next_due = std::min(next_due, due);
      ++it;
    }
  }
  return next_due;
}

void HintWriter::Run() {
  while (true) {
    Pending batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (true) {
        if (pending_.empty()) {
          if (stopping_) return;
          cv_.wait(lock);
          continue;
        }
        const Clock::time_point next_due = TakeDue(Clock::now(), stopping_ || drains_ > 0, batch);
        if (!batch.empty()) break;
        cv_.wait_until(lock, next_due);
      }
      writing_ = true;
    }
    for (const auto& [folder, entry] : batch) {
      // A metadata file gone since its commit (the table dropped and purged, a follower late)
      // moves no hint: writing one would bring back the purged folder.
      if (io_.Stat(entry.second).status().code() == StatusCode::kNotFound) continue;
      // A failure leaves the hint on an older committed version: folder readers then see that
      // version, never an uncommitted one.
      Status hinted = iceberg::AdvanceVersionHint(io_, entry.second);
      if (!hinted.ok()) {
        SKADE_LOG_WARN("table {}: could not update version-hint.text: {}", entry.first,
                       hinted.ToString());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Clock::time_point now = Clock::now();
      // Folders not written within min_interval_ write their next hint at once: forget them.
      std::erase_if(last_written_, [&](const auto& e) { return e.second + min_interval_ <= now; });
      for (const auto& entry : batch) last_written_[entry.first] = now;
      writing_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace skade::catalog::internal
