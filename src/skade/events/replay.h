// Replay from the durable commit log and the "replay then tail" stream: every event with
// commit_seq above a cursor, in order, with no gap and no duplicate, switching from the log to
// the live Bus and back to the log whenever the bus cannot prove continuity (lag, gaps).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"
#include "skade/events/commit_event.h"

namespace skade::events {

// Events with commit_seq > after_seq from the catalog's log, ascending, at most `limit`.
// Errors as Catalog::CommitsSince.
Result<std::vector<CommitEvent>> CommitsSince(catalog::Catalog& catalog, int64_t after_seq,
                                              int64_t limit);

// Thread-compatible (one consumer thread). Borrows `catalog`, which must outlive it; holds a
// bus receiver. Memory is bounded by the replay batch plus the bus ring (shared).
class ReplayThenTail {
 public:
  struct Options {
    int64_t replay_batch = 1024;  // log rows read per query
  };

  // Starts after `after_seq` (≥ 0). The bus subscription is taken before the log is read, so
  // nothing can fall between them. Live events come from `bus`, which must be fed (Watcher).
  ReplayThenTail(catalog::Catalog& catalog, Bus& bus, int64_t after_seq, Options options);
  ReplayThenTail(catalog::Catalog& catalog, Bus& bus, int64_t after_seq)
      : ReplayThenTail(catalog, bus, after_seq, Options()) {}

  // Like the constructor; `after_seq` nullopt starts at the log's head (only commits made
  // from now on). kInvalidArgument for a negative cursor; errors of LatestCommitSeq.
  static Result<std::unique_ptr<ReplayThenTail>> Open(catalog::Catalog& catalog, Bus& bus,
                                                      std::optional<int64_t> after_seq,
                                                      Options options);

  // The event with commit_seq == cursor() + 1, or nullopt if none arrived within `timeout`
  // (a log read itself is not interrupted). kUnavailable when the bus was closed; catalog
  // errors are returned as they are (the stream stays usable: a later call retries).
  Result<std::optional<CommitEvent>> Next(std::chrono::nanoseconds timeout);

  // commit_seq of the last event returned (the starting cursor before any).
  int64_t cursor() const { return cursor_; }
  // Events read from the log and not yet returned (≤ replay_batch).
  size_t buffered() const { return buffer_.size(); }
  // How many times the stream went back to the log after live delivery (lag or gap).
  int64_t recoveries() const { return recoveries_; }
  // Whether the bus was closed (Next then returns kUnavailable for good).
  bool closed() const { return closed_; }

 private:
  catalog::Catalog& catalog_;
  Options options_;
  Receiver receiver_;
  int64_t cursor_;
  bool replaying_ = true;
  bool closed_ = false;
  int64_t recoveries_ = 0;
  std::deque<CommitEvent> buffer_;
};

}  // namespace skade::events
