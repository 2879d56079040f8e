// The OpenLineage emitter: one more subscriber of the commit events (DESIGN §8, §9). It
// follows the commit log from a durable cursor, turns each commit into its START and COMPLETE
// events and delivers them, in commit order, through a Transport; it never slows a commit and
// never drops an event. Delivery is at least once: the cursor moves only after a commit's
// events were delivered, so a restart resends at most the commits after the last stored cursor
// (with the same run ids).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"
#include "skade/events/replay.h"
#include "skade/io/file_io.h"
#include "skade/table/failed_write_spool.h"
#include "skade/lineage/run_event.h"
#include "skade/lineage/transport.h"

namespace skade::lineage {

// Where the emitter keeps its cursor: in the catalog (Catalog::StoreConsumerCursor), or in a
// local file for catalogs that keep none.
class CursorStore {
 public:
  virtual ~CursorStore() = default;
  virtual Result<std::optional<int64_t>> Load() = 0;
  virtual Status Store(int64_t commit_seq) = 0;
  virtual std::string Describe() const = 0;
};

// The catalog's cursor for `consumer` when the catalog keeps cursors, else a file at
// `fallback_path` (written atomically). `catalog` must outlive the store.
Result<std::unique_ptr<CursorStore>> OpenCursorStore(catalog::Catalog& catalog, const std::string& consumer,
                                                     const std::string& fallback_path);

struct EmitterOptions {
  LineageNaming naming;
  // Where to start when no cursor was stored: the log's head (commits from now on) or its
  // beginning (every commit the log holds).
  bool start_at_beginning = false;
  // Waits between delivery attempts of one event: exponential from initial to max, each
  // uniformly random in [b/2, b] (jitter), so a recovering receiver is not hit in step.
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30'000};
  // The cursor is stored after this many delivered commits or this much time, whichever first
  // (and on Stop): a restart resends at most that many.
  int64_t store_every_commits = 64;
  std::chrono::milliseconds store_every{250};
  // The failure spool to drain (table::FailedWriteSpool; enabled on start), checked at this interval:
  // every failed write it holds is sent as a START and a FAIL event. Empty: none.
  std::string failure_spool;
  std::chrono::milliseconds spool_every{500};
};

struct EmitterStats {
  int64_t delivered_seq = 0;      // commit_seq of the last commit whose events were delivered
  int64_t stored_seq = 0;         // the cursor as last stored
  int64_t head_seq = 0;           // the newest commit_seq the bus has published (the log's head)
  int64_t events_sent = 0;
  int64_t send_failures = 0;      // attempts that failed (each retried)
  int64_t events_refused = 0;     // refused by the receiver as invalid (logged, skipped)
  int64_t failed_writes_sent = 0; // failed writes from the spool whose events were delivered
  int64_t failing_attempts = 0;   // failed attempts in a row at the event in flight (0 once one is delivered)
  int64_t last_sent_at_us = 0;    // when an event was last delivered (Unix microseconds; 0 = never)
  // The last failed or refused delivery: the transport's message (URLs redacted) and when.
  std::string last_error;
  int64_t last_error_at_us = 0;   // 0 = none since the start

  // Commits in the log whose events are not delivered yet.
  int64_t pending_commits() const { return head_seq > delivered_seq ? head_seq - delivered_seq : 0; }
};

// Thread-safe. Borrows catalog, io and bus, which must outlive it; the bus must be fed
// (events::Watcher): the emitter replays the log up to the head, then follows the bus.
class Emitter {
 public:
  static Result<std::unique_ptr<Emitter>> Start(catalog::Catalog& catalog, io::FileIO& io, events::Bus& bus,
                                                std::unique_ptr<Transport> transport,
                                                std::unique_ptr<CursorStore> cursor, EmitterOptions options);
  ~Emitter();  // Stop()
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;

  // Stops after the event in flight (a delivery being retried is abandoned: it is resent on
  // the next start) and stores the cursor. Idempotent.
  void Stop();
  EmitterStats stats() const;
  // Waits until every commit up to `commit_seq` was delivered; false on timeout.
  bool WaitDelivered(int64_t commit_seq, std::chrono::milliseconds timeout) const;

 private:
  Emitter(catalog::Catalog& catalog, io::FileIO& io, events::Bus& bus, std::unique_ptr<Transport> transport,
          std::unique_ptr<CursorStore> cursor, EmitterOptions options, int64_t start_seq);
  void Run();
  // Delivers one event until it is delivered or refused, or the emitter stops (false). `what`
  // names its source in log lines ("commit 12").
  bool Deliver(const std::string& event, const std::string& what);
  // `first` and the log entries after it of the same catalog transaction (a multi-table commit
  // logs one entry per table, consecutively), taken from `stream`; an entry of the next
  // transaction taken on the way is kept in ahead_.
  std::vector<catalog::CommitLogEntry> TransactionOf(catalog::CommitLogEntry first, events::ReplayThenTail& stream);
  // Sends the failed writes the spool holds; false when stopping.
  bool DrainSpool(table::FailedWriteSpool& spool);
  void StoreCursor();
  // Sleeps up to `d`; false when stopping.
  bool Sleep(std::chrono::milliseconds d);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  events::Bus& bus_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<CursorStore> cursor_;
  std::unique_ptr<table::FailedWriteSpool> spool_;
  const EmitterOptions options_;
  const int64_t start_seq_;
  std::mt19937_64 rng_;  // backoff jitter; used by the emitter thread only
  std::optional<catalog::CommitLogEntry> ahead_;  // read ahead of delivery; emitter thread only

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopping_ = false;
  EmitterStats stats_;
  std::thread thread_;
};

// The emitter's health in the Prometheus text exposition format (HELP and TYPE lines, then the
// samples), for the REST server's /metrics: whether an emitter runs
// (skade_lineage_emitter_configured), and for a running one its counters (events sent, failed
// attempts, refused events, failed writes reported), the commits pending, the delivered and
// stored commit_seq, the failed attempts in a row, when it last sent and its last error (the
// message as a label of skade_lineage_last_error_info). Null `emitter`: the first line only.
// Reads stats(), so it never waits for a delivery.
std::string EmitterMetricsText(const Emitter* emitter);

}  // namespace skade::lineage
