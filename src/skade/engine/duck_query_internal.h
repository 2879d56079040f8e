// Internal to engine/: statements run through DuckDB's C API, shared by Database (database.cc)
// and Connection / PreparedStatement (prepared_statement.cc): registered connections, streaming
// queries, their results as Arrow streams or text rows, and DuckDB errors as Status.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "duckdb.h"
#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/arrow_feed_internal.h"
#include "skade/engine/database.h"
#include "skade/engine/duck_handles_internal.h"

namespace skade::engine {

// SQL text for DuckDB's C API, which reads C strings: with an embedded NUL it would prepare
// only the text before it, so such text is refused (DESIGN §11), never cut.
Result<std::string> CText(std::string_view sql);

// A DuckDB error as a Status: DuckDB reports refusals of the lock-down (files outside the
// allowed folders, settings, extensions) as "Permission Error: …"; those are kPermissionDenied,
// everything else the caller's SQL got wrong is kInvalidArgument.
Status DuckError(const char* message, const char* fallback);

// Prepares the one statement of `sql` on `con` into `*out`, which the caller owns (RawPrepared):
// the one way SQL text becomes a statement here. Prepared, never duckdb_query: DuckDB refuses to
// prepare more than one statement, so no text can smuggle a second one in (nor hide one behind
// a NUL: CText).
Status PrepareOn(duckdb_connection con, std::string_view sql, duckdb_prepared_statement* out);

// PrepareOn for a statement that runs once, right after. DuckDB binds a statement that reads
// files (read_parquet, whose bind it cannot keep) a second time when it runs, in case the files
// changed since the prepare; run at once, that bind only repeats the first, at a sixth of a
// small read's time (bench/RESULTS.md, section as). The statement's first run keeps the
// prepare's bind instead, as a plain query binds once; DuckDB still binds again when the
// catalog changed in between. What the bind fixed is then the prepare's: now() and
// current_date are folded at the prepare, a moment before the run (its own transaction).
// Not for a statement that runs again (PreparedStatement).
Status PrepareOnce(duckdb_connection con, std::string_view sql, duckdb_prepared_statement* out);

// Executes `stmt` into `*result` (marked valid, to be destroyed with it); DuckDB's error as a
// Status.
Status ExecutePreparedInto(duckdb_prepared_statement stmt, QueryResult* result);

// RAII over the DuckDB C handles used here.
// The connections statements run on now, of one Database (what InterruptOwnStatements
// interrupts); each is registered in `all` too, which the Databases over one DuckDB share
// (WithConnectionSetup; what InterruptRunning interrupts).
class RunningConnections {
 public:
  explicit RunningConnections(std::shared_ptr<RunningConnections> all = nullptr) : all_(std::move(all)) {}
  void Add(duckdb_connection con) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.insert(con);
    }
    if (all_) all_->Add(con);
  }
  void Remove(duckdb_connection con) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(con);
    }
    if (all_) all_->Remove(con);
  }
  void InterruptAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (duckdb_connection con : running_) duckdb_interrupt(con);
  }
  const std::shared_ptr<RunningConnections>& all() const { return all_; }

 private:
  std::shared_ptr<RunningConnections> all_;
  std::mutex mu_;
  std::set<duckdb_connection> running_;  // guarded by mu_
};

struct RawConnection {
  duckdb_connection con = nullptr;
  RunningConnections* running = nullptr;  // where `con` is registered, if anywhere
  ~RawConnection() {
    if (running && con) running->Remove(con);
    if (con) duckdb_disconnect(&con);
  }
};

struct ArrowOptions {
  duckdb_arrow_options options = nullptr;
  ~ArrowOptions() {
    if (options) duckdb_destroy_arrow_options(&options);
  }
};

struct LogicalType {
  duckdb_logical_type type = nullptr;
  ~LogicalType() {
    if (type) duckdb_destroy_logical_type(&type);
  }
};

// A connection and a statement prepared on it, owned together (by a feed's stream).
struct OwnedStatement {
  RawConnection con;  // declared first: closed after the statement
  RawPrepared stmt;
};

// A running streaming query on a borrowed connection: statement and result.
struct StreamingQuery {
  RawPrepared stmt;
  QueryResult result;

  // Runs on a borrowed connection that must outlive the query.
  static Result<std::unique_ptr<StreamingQuery>> StartOn(duckdb_connection con, std::string_view sql) {
    auto q = std::make_unique<StreamingQuery>();
    SKADE_RETURN_IF_ERROR(q->Run(con, sql));
    return q;
  }

  Status Run(duckdb_connection con, std::string_view sql) {
    SKADE_RETURN_IF_ERROR(PrepareOnce(con, sql, &stmt.stmt));
    return RunPrepared(stmt.stmt);
  }

  Status RunPrepared(duckdb_prepared_statement prepared) {
    PendingResult pending;
    if (duckdb_pending_prepared_streaming(prepared, &pending.pending) != DuckDBSuccess) {
      return DuckError(duckdb_pending_error(pending.pending), "query failed");
    }
    if (duckdb_execute_pending(pending.pending, &result.result) != DuckDBSuccess) {
      result.valid = true;
      const char* err = duckdb_result_error(&result.result);
      return DuckError(err, "query failed");
    }
    result.valid = true;
    return Status::Ok();
  }

  // Next chunk, or nullptr at the end. Errors raised while streaming come back as Status.
  Result<DataChunk> Next() {
    DataChunk c;
    c.chunk = duckdb_fetch_chunk(result.result);
    if (c.chunk == nullptr) {
      const char* err = duckdb_result_error(&result.result);
      if (err != nullptr && *err != '\0') return DuckError(err, "query failed");
    }
    return c;
  }
};

// Runs one statement on `con`, discarding its result. Prepared, never duckdb_query: DuckDB
// refuses to prepare more than one statement, so no text can smuggle a second one in.
Status ExecuteOn(duckdb_connection con, std::string_view sql);

// Opens a connection of `db` into `con` and runs `setup` on it, in order; registers it in
// `running` (when given) until `con` closes.
Status OpenConnection(duckdb_database db, const std::vector<std::string>& setup, RawConnection& con,
                      RunningConnections* running = nullptr);

// The batches of `feed` as an Arrow stream that owns `owner` (the feed's connection and
// statement, when the stream owns them; may be null), released after the feed; with `checks`,
// a read error names the damaged file behind it (DataFileChecks::Explain) when `sql` reads a
// table scan.
arrow::StreamHandle FeedStreamOf(std::unique_ptr<ArrowFeed> feed, std::unique_ptr<OwnedStatement> owner,
                                 DataFileChecks* checks = nullptr, std::string_view sql = {});

// SELECTs stream with values cast to VARCHAR by DuckDB itself; other statements that return
// rows (COPY … RETURN_STATS, PRAGMAs, EXPLAIN) are materialised and rendered value by value.
Status QueryTextOn(duckdb_connection connection, std::string_view sql,
                   const std::function<void(const std::vector<ColumnType>&)>& on_header,
                   const std::function<Status(const TextRow&)>& on_row);

// What a Connection holds; here so that Database::Connect (database.cc) can make one.
struct Connection::Impl {
  duckdb_connection con = nullptr;
  std::shared_ptr<PagePool> pool;  // the Database's (ArrowFeed)
  ~Impl() {
    if (con) duckdb_disconnect(&con);
  }
};

}  // namespace skade::engine
