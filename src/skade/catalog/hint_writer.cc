#include "skade/catalog/hint_writer_internal.h"

#include <utility>
#include <vector>

#include "skade/base/log.h"
#include "skade/iceberg/version_hint.h"

namespace skade::catalog::internal {

HintWriter::HintWriter(io::FileIO& io) : io_(io), thread_([this] { Run(); }) {}

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
  idle_.wait(lock, [this] { return pending_.empty() && !writing_; });
}

void HintWriter::Run() {
  while (true) {
    std::map<std::string, std::pair<std::string, std::string>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty() && stopping_) return;
      batch.swap(pending_);
      writing_ = true;
    }
    for (const auto& [folder, entry] : batch) {
      // A failure leaves the hint on an older committed version: folder readers then see that
      // version, never an uncommitted one.
      Status hinted = iceberg::AdvanceVersionHint(io_, entry.second);
      if (!hinted.ok()) {
        SKADE_LOG_WARN("table {}: could not update version-hint.text: {}", entry.first, hinted.ToString());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace skade::catalog::internal
