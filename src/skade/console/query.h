// The web console's SQL page, server side: read queries through the same locked-down path as
// Flight SQL's statements (sql/client_query.h: one statement classified from DuckDB's parse
// tree, no writes, no COPY/ATTACH/PRAGMA/SET, no configuration reads, the lake's tables
// resolved, only what DuckDB prepares as a query runs) on the server's locked-down database,
// with a statement timeout, a row and a byte bound on the answer, and cancellation by the
// caller alone. Served by `skade serve` on the REST port with the catalog's authentication.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/console/preview.h"
#include "skade/engine/database.h"
#include "skade/sql/lake_sql.h"

namespace skade::console {

// The routes: POST kQueryPath runs a query, DELETE kQueryPath/{id} cancels one.
inline constexpr std::string_view kQueryPath = "/console/v1/query";

// The statements the console runs now, each on its own connection: a statement running longer
// than the timeout is interrupted, and so is a query its own principal cancels. Thread-safe; a
// helper thread watches the deadlines and interrupts a stopped statement again until it ends
// (DuckDB forgets an interrupt that comes before a statement starts).
class RunningQueries {
 public:
  struct Limits {
    std::chrono::milliseconds timeout{60'000};
    int per_principal = 4;  // queries with an id running at once, per principal
    int total = 4;          // and in all (each holds one of the REST server's worker threads)
  };
  explicit RunningQueries(Limits limits);
  ~RunningQueries();
  RunningQueries(const RunningQueries&) = delete;
  RunningQueries& operator=(const RunningQueries&) = delete;

  enum class Stop { kNone, kCancelled, kTimedOut };

  // One registered statement; ends its registration when destroyed (before its connection is).
  class Run {
   public:
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    Stop stop() const;

   private:
    friend class RunningQueries;
    Run(RunningQueries& owner, uint64_t serial) : owner_(owner), serial_(serial) {}
    RunningQueries& owner_;
    uint64_t serial_;
  };

  // Registers a statement about to run on `con` (borrowed until the Run is destroyed) for
  // `principal` under `id`. A query with an id counts against the limits and can be cancelled;
  // an empty id is a statement of the console's own (a preview page): timed only. kAlreadyExists
  // when the principal runs a query of that id already, kResourceExhausted past the limits.
  Result<std::unique_ptr<Run>> Start(std::string principal, std::string id, engine::Connection& con);

  // Interrupts `principal`'s running query `id`; false when it runs none of that id (another
  // principal's query of the same id is not touched).
  bool Cancel(std::string_view principal, std::string_view id);

  std::chrono::milliseconds timeout() const { return limits_.timeout; }
  // Statements registered now (for tests and monitoring).
  size_t running() const;

 private:
  struct Entry {
    std::string principal;
    std::string id;
    engine::Connection* con = nullptr;
    std::chrono::steady_clock::time_point deadline;
    Stop stop = Stop::kNone;
  };
  void Watch();
  void End(uint64_t serial);
  Stop StopOf(uint64_t serial) const;

  const Limits limits_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<uint64_t, Entry> entries_;  // guarded by mu_
  uint64_t next_serial_ = 1;           // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::thread watcher_;
};

struct QueryOptions {
  int64_t default_rows = 1000;  // rows answered when the request names no limit
  int64_t max_rows = 10'000;    // the largest limit a request may name
  // Past this many bytes of values the answer stops early, saying there is more.
  size_t max_answer_bytes = size_t{8} << 20;
  // Absolute folders never named in an error (the warehouse, allowed directories), with the
  // name that stands in for each; longer paths first (sql::RedactPaths).
  std::vector<std::pair<std::string, std::string>> private_paths;
};

// Thread-safe. Borrows the LakeSql (over the server's locked-down Database) and the
// RunningQueries, which must outlive it.
class QueryRoute {
 public:
  QueryRoute(sql::LakeSql& lake, RunningQueries& running, QueryOptions options = {});

  // Requests larger than this are refused (413): the SQL text's bound and room for the rest.
  static constexpr size_t kMaxRequestBytes = (size_t{1} << 20) + 4096;

  // Answers kQueryPath and kQueryPath/{id} (nullopt for any other path), for `principal` (who
  // sent the request, as the REST server names clients):
  // - POST kQueryPath with {"sql": text, "limit": rows (optional), "id": [A-Za-z0-9_-]{1,64}
  //   (optional; names the query for a cancel)} runs the query: 200 {"id", "columns": [{"name",
  //   "type"}], "rows": [[text or null, …]], "more": whether rows were left out, "limited-by":
  //   "rows" | "bytes" | null, "elapsed-ms"}; values as `skade sql` renders them (DuckDB's text).
  // - DELETE kQueryPath/{id} cancels the caller's running query of that id: 200 {"cancelled"},
  //   404 when the caller runs none of that id.
  // Errors are {"error": {"message", "type", "code"}}: 400 bad request or SQL error
  // (BadRequestException), 403 a write or anything else that is not a read query
  // (ForbiddenException), 405 another method (with Allow), 409 an id the caller runs already,
  // 413 a request over kMaxRequestBytes, 415 a POST whose `content_type` is not JSON (so that a
  // page of another site cannot send one without the browser asking the server first), 429 past
  // the running-query limits (TooManyQueriesException), 499 cancelled (QueryCancelledException),
  // 504 past the statement timeout (QueryTimeoutException).
  std::optional<RouteAnswer> Serve(std::string_view method, std::string_view path, std::string_view body,
                                   std::string_view content_type, std::string_view principal) const;

 private:
  RouteAnswer Run(std::string_view body, std::string_view principal) const;

  sql::LakeSql& lake_;
  RunningQueries& running_;
  QueryOptions options_;
};

}  // namespace skade::console
