// A query's rows streamed as Arrow batches that the threads running the query build as they go
// (Database::QueryArrow, PreparedStatement::ExecuteArrow). DuckDB's own streaming result copies
// each chunk into a buffer, and the reader's thread then converts chunk after chunk alone: on a
// 10M-row, 10-column scan the reader's thread was the bound (bench/RESULTS.md, section ar).
// Here the query's last operator is a collector that converts in DuckDB's worker threads, in
// parallel, into a bounded queue the reader takes batches from:
// - Order. Rows come in the order DuckDB's own result would give them: an ORDER BY's, else the
//   order of the sources (DuckDB's preserve_insertion_order). Each source morsel (DuckDB's
//   "batch index": a row group of a Parquet file) is converted by one thread, and its batches
//   are handed out once every earlier morsel's have been; a source without batch indexes is
//   converted by one worker thread. A reader that promises nothing of the order
//   (FeedOptions::any_order) gets batches as they are made, unless an ORDER BY fixes one.
// - Memory. At most `max_waiting` batches or `max_waiting_bytes` wait for the reader (plus the
//   ones the threads are building, and those one chunk makes); a thread that would pass that
//   stops until the reader takes one, except, while no batch is ready, the thread of the
//   earliest morsel, which the reader then waits for.
// - Latency. The reader's thread runs the query's tasks too while no batch is ready for it,
//   and leaves them as soon as one is.
#pragma once

#include <cstdint>
#include <memory>

#include "duckdb.h"
#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/page_pool_internal.h"

namespace skade::engine {

struct FeedOptions {
  // How each thread cuts its batches (ArrowBatching: first_rows 0 is up to 2,048 rows each).
  ArrowBatching batching;
  // The reader promises nothing of the row order (an Iceberg scan): batches come as they are
  // made, in no particular order, unless an ORDER BY fixes one.
  bool any_order = false;
  // Batches made and not yet taken by the reader before the threads wait (at least 1 each):
  // a count, and their bytes (Arrow's for growing batches, DuckDB's size of their chunks for
  // the others). The bytes must leave room for about a morsel per thread, or the order of the
  // morsels holds threads back: a Parquet row group is 122,880 rows, ~10 MB for 10 columns.
  int64_t max_waiting = 4096;
  int64_t max_waiting_bytes = int64_t{64} << 20;
  // Pages for growing batches of flat columns (arrow_flat_batch_internal.h); none, or
  // batching.first_rows 0: DuckDB's appender builds every batch.
  std::shared_ptr<PagePool> pool;
};

// Thread-compatible: one reader at a time (any thread); the query's threads are DuckDB's.
class ArrowFeed {
 public:
  // Starts `prepared` (a statement of the C API, every parameter bound) and runs it until its
  // first batch is ready or it ends, so errors found that early fail the call (DuckDB's
  // message as DuckError gives it). The statement and its connection must outlive the feed, and
  // the connection runs nothing else meanwhile.
  static Result<std::unique_ptr<ArrowFeed>> Start(duckdb_prepared_statement prepared, FeedOptions options);
  // Stops the query if it still runs: its connection is interrupted (every pipeline's tasks
  // stop at their next chunk; the flag clears when the connection's next statement starts).
  ~ArrowFeed();
  ArrowFeed(const ArrowFeed&) = delete;
  ArrowFeed& operator=(const ArrowFeed&) = delete;

  // The result's columns as an Arrow struct schema (as DuckDB's Arrow conversion types them).
  Result<arrow::SchemaHandle> Schema() const;
  // The next batch into `out` (a struct array of Schema()); out->release is null at the end.
  // A query error (DuckError; "Interrupted" when the connection was interrupted) is returned
  // again by every later call.
  Status Next(ArrowArray* out);
  // Batches made and not yet taken by the reader, now (for tests and diagnostics).
  int64_t Waiting() const;
  int64_t WaitingBytes() const;

  struct State;  // arrow_feed.cc
  explicit ArrowFeed(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace skade::engine
