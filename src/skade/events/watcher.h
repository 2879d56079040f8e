// Watcher: feeds a Bus with every commit of a catalog, in commit_seq order, exactly once —
// this process's commits straight from the catalog's commit listener (lowest latency), other
// processes' commits discovered through a hint (SQLite: PRAGMA data_version on a short timer;
// PostgreSQL: LISTEN skade_commits) and then read from the durable log (DESIGN §4, §8).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"

namespace skade::events {

struct WatcherOptions {
  // SQLite: how often data_version is checked. PostgreSQL: notifications wake the watcher at
  // once; this is only the stop-check period there.
  std::chrono::milliseconds poll_interval{2};
  // Even without a hint the log head is checked this often (a lost notification, a catalog
  // whose hints are unavailable).
  std::chrono::milliseconds safety_interval{1000};
  // A catalog reached by another URI (rest+http://…, nessie+…, file://…): how often its log
  // head is asked for.
  std::chrono::milliseconds remote_poll_interval{250};
};

// Thread-safe. Installs itself as `catalog`'s commit listener (replacing any other) until
// destroyed; `catalog` and `bus` must outlive it. Events already in the log when the watcher
// starts are not published (subscribers replay them from the log).
class Watcher {
 public:
  // `catalog_uri` is the URI the catalog was opened with (SqlCatalogOptions::uri): a SQLite
  // path / sqlite://PATH, a postgresql:// URI, or any other catalog URI (a REST catalog serving
  // its change feed, a catalog with a polled log: its log head is polled). kInvalidArgument
  // for an empty path;
  // kUnavailable / kIoError if the hint connection cannot be opened.
  static Result<std::unique_ptr<Watcher>> Start(catalog::Catalog& catalog,
                                                const std::string& catalog_uri, Bus& bus,
                                                WatcherOptions options = {});
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // commit_seq of the last event this watcher published.
  int64_t last_published() const;
  // Catch-up passes that read the log (each after a hint showed new commits).
  int64_t log_reads() const { return log_reads_.load(); }

  struct Hint;  // the dialect's change signal (implementation detail)

 private:
  Watcher(catalog::Catalog& catalog, Bus& bus, WatcherOptions options, std::unique_ptr<Hint> hint,
          int64_t start_seq, int wake_read_fd, int wake_write_fd);
  void OnLocalCommit(const catalog::CommitLogEntry& entry);
  void Run();
  // Reads the log after last_published_ and publishes what it finds, in order.
  void CatchUp();
  void Wake();

  catalog::Catalog& catalog_;
  Bus& bus_;
  const WatcherOptions options_;
  std::unique_ptr<Hint> hint_;
  const int wake_read_fd_;
  const int wake_write_fd_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> log_reads_{0};

  // Serialises publishing between the commit listener and the watcher thread.
  mutable std::mutex publish_mu_;
  int64_t last_published_;

  std::thread thread_;
};

}  // namespace skade::events
