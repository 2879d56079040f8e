// A query's rows as DuckDB chunks, taken in runs by the threads of another statement: the
// source of skade_scan (pushdown_scan.cc), whose view statement reads them.
// - Parallel. The query's last operator is a collector that copies what reaches it, in the
//   threads that run the query: a Parquet scan decodes its row groups on every thread. A thread
//   that takes while no chunk is ready runs the query's tasks itself (DuckDB's scheduler may
//   have no thread left over: the taking statement's threads are its threads), and comes back
//   as soon as a chunk is ready.
//   A streaming result (what this replaces) decodes in the one thread that fetches, while the
//   statement's other threads wait for it: a view read ran at about one core.
// - Order. Runs come in the query's order (its ORDER BY's, else its sources' order: DuckDB's
//   preserve_insertion_order), numbered 0, 1, 2, … as they are taken (morsel_order_internal.h).
// - Memory. At most `max_waiting_bytes` of chunks wait (plus those one chunk makes per thread);
//   a thread that would pass that stops until a run is taken, except the thread of the earliest
//   morsel while nothing is ready.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "duckdb.hpp"
#include "skade/base/status.h"

namespace skade::engine {

// Rows of the query, in its order.
struct ChunkRun {
  std::vector<duckdb::unique_ptr<duckdb::DataChunk>> chunks;  // empty: the query is over
  // Runs are numbered 0, 1, 2, … in the query's order as they are taken; the empty run at the
  // end carries how many there were.
  int64_t sequence = 0;
};

// Thread-safe: any number of threads take at once.
class ChunkFeed {
 public:
  // Starts `sql` (one statement of skade's making) on `connection`, which outlives the feed
  // and runs nothing else until the feed ends: Take returned the end (the feed no longer
  // touches the connection after that) or the feed is destroyed. A failure to plan it fails
  // here. Query errors are InvalidArgument with DuckDB's whole message.
  static Result<std::unique_ptr<ChunkFeed>> Start(duckdb::Connection& connection, const std::string& sql,
                                                  int64_t max_waiting_bytes);
  // Stops the query if it still runs (its connection is interrupted), after every Take ended.
  ~ChunkFeed();
  ChunkFeed(const ChunkFeed&) = delete;
  ChunkFeed& operator=(const ChunkFeed&) = delete;

  // The next run: the ready chunks, at most `max_chunks` (at least 1) or about `max_bytes`. The
  // calling thread runs the query's tasks while none is ready. A query error is returned again
  // by every later call; `interrupted` becoming true ends the wait with Cancelled.
  Result<ChunkRun> Take(size_t max_chunks, size_t max_bytes, const std::atomic<bool>& interrupted);

  struct State;  // chunk_feed.cc
  explicit ChunkFeed(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace skade::engine
