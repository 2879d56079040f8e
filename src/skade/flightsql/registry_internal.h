// What the Flight SQL server remembers between calls, and whose it is.
//
// Nothing a client holds depends on the server instance that issued it: session cookies,
// statement tickets and prepared-statement handles are sealed tokens (io/sealer.h) carrying
// their principal and what is needed to serve them (the statement, the schema its names resolve
// in, a write's changed-row count, small bound parameters), under a key that every server of a
// deployment shares. A server that receives a token another one issued opens it and adopts it;
// the local tables below are caches of opened tokens plus what happens on this instance only
// (a running statement).
//
// What cannot travel in a token is kept in the catalog's database when the catalog keeps server
// state (Catalog::KeepsServerState: SqlCatalog on SQLite or PostgreSQL), so that every server
// sharing that database sees it: bound parameters too large for a handle (under a random key
// the new handle carries, scoped to the principal, until the handle expires; bounded per binding
// and per principal), and the closes of prepared statements and sessions and the cancels of
// tickets (until the tokens they concern expire). A catalog without such state (REST, Nessie,
// file catalogs, a read-only SqlCatalog, so `serve --read-only`) leaves all of it in this
// process: large parameters, closes and cancels then hold on the instance that received them
// only. A read-only server is meant to write nothing to the catalog database (it may run under a
// SELECT-only role, on a standby, or over a foreign database without skade's tables), so it
// keeps no shared state by design; `skade serve` says so when it starts. With shared state every
// lookup of a handle, ticket or cookie reads the database once (an indexed row): when it cannot,
// the call fails (kUnavailable) rather than serve a handle that may have been closed.
//
// Sessions hold options (the default schema) and exist only for clients that ask for them: a
// client's SetSessionOptions creates one and sets the arrow_flight_session_id cookie (a new
// cookie each time its options change); calls that send the cookie back use it. Calls without a
// cookie run without a session.
//
// Statement handles do not belong to a session: each is a capability of the principal that
// created it (cookie or not) until it expires (tickets: the idle lifetime after they were
// issued; prepared statements: prepared_lifetime). Session cookies expire when unused for the
// idle lifetime (calls refresh them). Closing a prepared statement (any of its handles: one
// more each time parameters are bound) or a session (any of its cookies), or cancelling a ticket,
// is recorded on the instance that receives it and in the shared state (a tombstone until the
// tokens expire), which every lookup of a handle or cookie consults. Cancelling a prepared
// statement's handle interrupts its runs in progress on every instance: the cancel is a shared
// record holding a fresh random value, which each instance running the handle reads when the run
// starts and then polls (a changed value means a cancel came since).
//
// Limits are per principal (sessions, pending tickets, prepared statements) and bound the local
// caches: past a limit the principal's least recently used entry is forgotten, and adopted again
// from its token if the client uses it.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/flightsql/limits_internal.h"
#include "skade/io/sealer.h"
#include "skade/sql/lake_sql.h"

namespace skade::flightsql {

struct Session {
  std::string id;         // the cookie value it was created or adopted with
  std::string principal;
  std::string key;        // random, the same in every cookie of the session: what a close names

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

// Parameters as they travel in a prepared-statement handle: an Arrow IPC stream (the schema
// and the batches; Encode → "" when they are larger than max_bytes).
std::string EncodeParams(const ParamSet& params, size_t max_bytes);
Result<std::shared_ptr<const ParamSet>> DecodeParams(std::string_view ipc);

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
  // Handles are sealed with the first key of this ring and opened with any; null = a key of
  // this process alone (handles then work on this instance only).
  std::shared_ptr<const io::Sealer> sealer;
  // How long a prepared-statement handle stays valid after it was issued (tickets and session
  // cookies: idle_lifetime).
  std::chrono::seconds prepared_lifetime{86400};
  // Bound parameters up to this size travel in the handle DoPut answers; larger ones go to
  // `shared_state`, or stay on the instance that received them when there is none.
  size_t max_sealed_params_bytes = 64 * 1024;
  // Where what every instance must see is kept (bound parameters too large for a handle, closes,
  // cancels): borrowed, outliving the registry. Null, or a catalog that keeps no server state,
  // keeps it in this process only.
  catalog::Catalog* shared_state = nullptr;
  // One binding's parameters (Arrow IPC) larger than this are refused (kInvalidArgument), and
  // a principal's kept parameters larger than this in all (kResourceExhausted) until some
  // expire or their statements close: in `shared_state`, or on this instance without it (a
  // read-only server's, each binding counted once).
  size_t max_shared_params_bytes = size_t{16} << 20;
  int64_t max_shared_params_bytes_per_principal = int64_t{256} << 20;
};

// Re-creates a prepared statement from what its handle carries (principal, sql, schema): the
// statement's classification and parameter count, as CreatePreparedStatement made them.
using Reprepare = std::function<Result<std::shared_ptr<const PreparedStatement>>(const PreparedStatement&)>;

// kCancelling: recorded in the shared state for runs on other instances, none running here.
enum class CancelOutcome { kCancelled, kCancelling, kNotCancellable };

// Thread-safe.
class Registry {
 public:
  explicit Registry(RegistryLimits limits);
  ~Registry();
  // Set once, before the server serves: how a prepared handle issued elsewhere is re-created.
  void set_reprepare(Reprepare reprepare);

  // ---- sessions (a session's id is its cookie value, text)
  // A new session of `principal`.
  std::shared_ptr<Session> CreateSession(const std::string& principal);
  // The session cookie `id` names: kNotFound when closed, expired or not a cookie of this
  // deployment (the client should drop its cookie), kUnauthorized when it is another
  // principal's.
  Result<std::shared_ptr<Session>> FindSession(const std::string& id, const std::string& principal);
  // After a session's options changed: a new cookie value carrying them (the session answers
  // to both).
  std::string Reseal(const std::shared_ptr<Session>& session);
  // A session cookie lives idle_lifetime: once half of it has passed, a call with it gets a
  // fresh one (the server sets it), so a session closes only when unused that long.
  std::optional<std::string> Refresh(const std::string& id);
  // Closes `session` and every cookie of it, here and (shared state) on every instance; the
  // shared state's error if it cannot record the close.
  Status CloseSession(const std::shared_ptr<Session>& session);

  // ---- statement handles (unknown, closed and another principal's handles are all kNotFound)
  std::string AddQuery(PendingQuery query);
  Result<PendingQuery> FindQuery(const std::string& handle, const std::string& principal);
  void MarkFetched(const std::string& handle);
  std::string AddPrepared(std::shared_ptr<const PreparedStatement> prepared);
  Result<std::shared_ptr<const PreparedStatement>> FindPrepared(const std::string& handle,
                                                                const std::string& principal);
  // The parameters last bound to a prepared statement (null when none): bound on this instance,
  // carried by the handle, or kept in the shared state under the key the handle carries.
  std::shared_ptr<const ParamSet> Params(const std::string& handle);
  // Binds `params` to the statement and returns the handle the client should use from now on:
  // a new one carrying the parameters when they are small enough, or else the key they are kept
  // under in the shared state (the old handle's key, if it had one: its row is replaced); `handle` itself
  // when there is no shared state (the parameters then stay on this instance). With shared
  // state: kInvalidArgument past max_shared_params_bytes, kResourceExhausted past the
  // principal's limit, or the store's error.
  Result<std::string> BindParams(const std::string& handle, const std::string& principal,
                                 std::shared_ptr<const ParamSet> params);
  // Closes the prepared statement of `handle` (every handle of it), here and (shared state) on
  // every instance; kNotFound when unknown, closed or another's.
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
    // For a write (LakeSql::ExecuteWrite's Session::interrupt): a cancel or timeout interrupts
    // it, and interrupts it again at every Reap until the run ends. Valid while the Run lives.
    sql::WriteInterrupt* write_interrupt();

   private:
    friend class Registry;
    struct Entry;
    Run(Registry* registry, std::shared_ptr<Entry> entry) : registry_(registry), entry_(std::move(entry)) {}
    Registry* registry_;
    std::shared_ptr<Entry> entry_;
  };
  std::unique_ptr<Run> StartRun(const std::string& handle, const std::string& principal);
  // The mark of the cancels of prepared statement `handle` recorded so far in the shared state
  // ("" for none, and without shared state): read before its run starts (StartRun), then given
  // to WatchCancels. Its error if the shared state cannot be read.
  Result<std::string> CancelMark(const std::string& handle, const std::string& principal);
  // For the run of a prepared statement, once its handle is known valid: a cancel of that
  // handle recorded on another instance after `mark` was read (CancelMark, before StartRun)
  // interrupts it within about a second (Reap); one recorded before does not. So no cancel
  // recorded once the run has started is missed. Without shared state nothing to do.
  void WatchCancels(Run& run, std::string mark);
  // Interrupts the runs of `handle` and marks its ticket cancelled if not fetched (a DoGet of
  // it then fails with kCancelled); kNotCancellable when the statement is finished (fetched,
  // not running), unknown or another principal's. A cancelled ticket is recorded in the shared
  // state too (its error if it cannot be): a DoGet of it on any instance answers kCancelled, and
  // one running on another instance is interrupted there within about a second (Reap). A
  // prepared statement's handle is not consumed by running it: its cancel stops the runs in
  // progress only, here and (recorded in the shared state) on every instance watching it
  // (WatchCancels), and answers kCancelling when none ran here.
  Result<CancelOutcome> Cancel(const std::string& handle, const std::string& principal);
  void InterruptAll();

  // Interrupts runs older than `query_timeout` (0 = none) and closes idle sessions and handles;
  // with shared state, about once a second interrupts running tickets cancelled on another
  // instance, and about once a minute purges its expired rows.
  void Reap(std::chrono::seconds query_timeout);

  size_t session_count() const;

 private:
  // Reap's part that reads and writes the shared state (outside the lock).
  void ReapShared();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::flightsql
