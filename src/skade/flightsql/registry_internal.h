// What the Flight SQL server remembers between calls, and whose it is.
//
// Sessions hold options (the default schema) and exist only for clients that ask for them: a
// client's SetSessionOptions creates one and sets the arrow_flight_session_id cookie; calls
// that send the cookie back use it. Calls without a cookie run without a session.
//
// Statement handles (the ticket of a CommandStatementQuery, a prepared statement) do not belong
// to a session: each is a capability of 128 random bits, usable by any call of the principal
// that created it (cookie or not) until it is closed or idle for the handle lifetime. A handle
// carries the schema its statement resolves names in (the session's when it was made).
//
// Limits are per principal (sessions, pending tickets, prepared statements): past a limit the
// principal's least recently used entry is dropped, so no client can lock another out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/flightsql/limits_internal.h"

namespace skade::flightsql {

struct Session {
  std::string id;
  std::string principal;

  std::string schema() const;
  void set_schema(std::string schema);

 private:
  mutable std::mutex mu_;
  std::string schema_;
};

// Parameter rows bound to a prepared statement (DoPut), immutable once stored.
struct ParamSet {
  arrow::SchemaHandle schema;
  std::vector<arrow::ArrayHandle> batches;  // non-empty batches only
  std::vector<MemoryBudget::Reservation> held;  // the batches' bytes, in the buffer budget
  int64_t rows() const;
};

struct PreparedStatement {
  std::string principal;
  std::string sql;
  std::string schema;                      // names resolve here
  std::optional<engine::Statement> write;  // set for update statements
  int64_t parameter_count = 0;
};

// A query the client may fetch with DoGet (ticket) — from CommandStatementQuery.
struct PendingQuery {
  std::string principal;
  std::string sql;
  std::string schema;
  bool fetched = false;  // a DoGet streamed its whole result (cancelling it then does nothing)
  bool cancelled = false;  // cancelled before its result was fetched: a DoGet now answers CANCELLED
  // Set for a write statement sent as a query, which ran (and committed) when its FlightInfo
  // was made: the rows it changed. A DoGet of the ticket, a retried one included, streams this
  // count and runs nothing; there is nothing left to cancel.
  std::optional<int64_t> changed_rows = std::nullopt;
};

struct RegistryLimits {
  int max_sessions = 256;          // per principal
  int max_pending_queries = 1024;  // per principal
  int max_prepared = 4096;         // per principal
  std::chrono::seconds idle_lifetime{900};  // sessions and handles unused this long are closed
};

enum class CancelOutcome { kCancelled, kNotCancellable };

// Thread-safe.
class Registry {
 public:
  explicit Registry(RegistryLimits limits);
  ~Registry();

  // ---- sessions
  // A new session of `principal`.
  std::shared_ptr<Session> CreateSession(const std::string& principal);
  // The live session `id`: kNotFound when closed or unknown (the client should drop its cookie),
  // kUnauthorized when it is another principal's.
  Result<std::shared_ptr<Session>> FindSession(const std::string& id, const std::string& principal);
  void CloseSession(const std::string& id);

  // ---- statement handles (unknown, closed and another principal's handles are all kNotFound)
  std::string AddQuery(PendingQuery query);
  Result<PendingQuery> FindQuery(const std::string& handle, const std::string& principal);
  void MarkFetched(const std::string& handle);
  std::string AddPrepared(std::shared_ptr<const PreparedStatement> prepared);
  Result<std::shared_ptr<const PreparedStatement>> FindPrepared(const std::string& handle,
                                                                const std::string& principal);
  // The parameters last bound to a prepared statement (null when none).
  std::shared_ptr<const ParamSet> Params(const std::string& handle);
  Status BindParams(const std::string& handle, const std::string& principal, std::shared_ptr<const ParamSet> params);
  Status ClosePrepared(const std::string& handle, const std::string& principal);

  // ---- running statements
  // The statement `handle` running until the object dies. It is registered before its ticket
  // is looked up and its connection opened, so a cancel arriving meanwhile is recorded (and
  // Attach reports it) instead of being lost.
  class Run {
   public:
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    // Why the run was interrupted, if it was: the failure it then reports is this, whatever
    // DuckDB's message says.
    enum class Stop { kNone, kTimedOut, kCancelled };
    Stop stop() const;
    // Gives the run the connection that executes it (interrupted from now on by a cancel or
    // a timeout); returns why the run was stopped before, kNone if it was not: then execute.
    Stop Attach(engine::Connection* connection);
    // Interrupts the run as cancelled (its client went away).
    void Cancel();

   private:
    friend class Registry;
    struct Entry;
    Run(Registry* registry, std::shared_ptr<Entry> entry) : registry_(registry), entry_(std::move(entry)) {}
    Registry* registry_;
    std::shared_ptr<Entry> entry_;
  };
  std::unique_ptr<Run> StartRun(const std::string& handle, const std::string& principal);
  // Interrupts the runs of `handle` and marks its ticket cancelled if not fetched (a DoGet of
  // it then fails with kCancelled); kNotCancellable when the statement is finished (fetched,
  // not running), unknown or another principal's.
  CancelOutcome Cancel(const std::string& handle, const std::string& principal);
  void InterruptAll();

  // Interrupts runs older than `query_timeout` (0 = none) and closes idle sessions and handles.
  void Reap(std::chrono::seconds query_timeout);

  size_t session_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::flightsql
