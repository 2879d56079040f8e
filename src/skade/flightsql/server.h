// The Arrow Flight SQL server (DESIGN §10): arrow.flight.protocol.FlightService with the
// Flight SQL commands over a LakeSql; basic auth → bearer tokens (auth.h), TLS, read-only
// mode, cancellation and query timeouts. Statement tickets and prepared-statement handles are
// capabilities of their principal, valid with or without a session cookie; sessions (cookie
// arrow_flight_session_id) exist only for clients that set session options
// (registry_internal.h). Other gRPC services (the Commits stream) can share its port.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/sql/client_query.h"
#include "skade/sql/lake_sql.h"

namespace grpc {
class Service;
}
namespace skade::io {
class Sealer;
}

namespace skade::flightsql {

class Authenticator;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 31337;  // 0 picks a free port
  bool read_only = false;
  // Basic auth: Handshake with a username/password returns a bearer token that every later
  // call must carry (shared with the other services on the port). Null = no authentication.
  std::shared_ptr<Authenticator> authenticator;
  std::string tls_cert_pem;  // both set = TLS
  std::string tls_key_pem;
  int max_sessions = 256;  // per principal; past it the least recently used session closes
  // Sessions, statement tickets and prepared statements unused this long are closed.
  std::chrono::seconds session_idle_timeout{900};
  // A query (DoGet of a statement or prepared statement) or update running longer is
  // interrupted and answered DEADLINE_EXCEEDED; SqlInfo FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT
  // reports it. 0 = none (`skade serve` never passes 0: sql::ClientStatementTimeout).
  std::chrono::seconds query_timeout = sql::kDefaultClientStatementTimeout;
  // Session cookies, statement tickets and prepared-statement handles are sealed with this key
  // ring (io/sealer.h) and carry what serving them needs: every server given the same keys
  // serves the handles of the others (a load balancer needs no affinity). Null = a random key
  // of this process. Prepared-statement handles stay valid for handle_lifetime after they were
  // issued, tickets for session_idle_timeout; session cookies close after session_idle_timeout
  // unused (each call renews its cookie when half of that has passed). What cannot travel in a
  // token (bound parameters over max_handle_params_bytes, closes, cancels) is kept in the lake's
  // catalog database when its catalog keeps server state (SqlCatalog opened read-write), so
  // servers sharing that database serve each other's handles whatever their size; otherwise
  // (`serve --read-only` included: it writes nothing there) it stays on the instance.
  std::shared_ptr<const io::Sealer> sealer;
  std::chrono::seconds handle_lifetime{86400};
  // What one principal holds at most (past it its least recently used entry is forgotten here,
  // and adopted again from its token when used): statement tickets not fetched yet, prepared
  // statements.
  int max_pending_queries = 1024;
  int max_prepared = 4096;
  // Bound parameters up to this size (Arrow IPC) travel in the prepared-statement handle; larger
  // ones are kept in the catalog's server state (or on this instance without one).
  size_t max_handle_params_bytes = 64 * 1024;
  // With server state: one binding's parameters larger than this are refused (INVALID_ARGUMENT),
  // and a principal's kept parameters larger than this in all (RESOURCE_EXHAUSTED) until some
  // expire or their statements close. Must be positive, the second at least the first.
  size_t max_shared_params_bytes = size_t{16} << 20;
  int64_t max_shared_params_bytes_per_principal = int64_t{256} << 20;
  // What one client can hold (a client is its authenticated user; without authentication, its
  // network address): concurrent DoGet and DoPut streams per client and in all (past them
  // RESOURCE_EXHAUSTED); a stream whose client accepts no data or sends none for stall_timeout
  // is ended; client data buffered outside DuckDB (queued result batches, decoded DoPut
  // messages, bound parameters) stays within buffer_budget_bytes. DuckDB's own memory is
  // bounded by the database's memory_limit.
  int max_streams_per_client = 16;
  int max_streams = 256;
  // Load balancers in front (canonical IP addresses, base/forwarded.h): a call arriving from one
  // counts against the client its x-forwarded-for names, not against the balancer.
  std::vector<std::string> trusted_proxies;
  std::chrono::milliseconds stall_timeout{60000};
  int64_t buffer_budget_bytes = int64_t{1} << 30;
  std::string version = "0.1.0";
  // Copy record batch bodies into the gRPC message instead of sending slices over the Arrow
  // buffers (for benchmarks comparing the two).
  bool copy_batches = false;
  std::vector<grpc::Service*> extra_services;  // borrowed; registered on the same port
  // Absolute paths never shown to clients: each occurrence in an error message is replaced by
  // its name (e.g. the warehouse folder → "<warehouse>"). Longer paths first.
  std::vector<std::pair<std::string, std::string>> private_paths;
};

// What the server holds for clients at a moment (tests, monitoring).
struct ServerStats {
  size_t streams = 0;               // admitted DoGet and DoPut streams
  int64_t buffered_bytes = 0;       // client data buffered outside DuckDB
  int64_t buffered_peak_bytes = 0;  // the most ever buffered at once
};

// Thread-safe.
class FlightSqlServer {
 public:
  // Binds and starts serving. kUnavailable if the address cannot be bound, kInvalidArgument for
  // inconsistent options. Borrows `lake`, which must outlive the server.
  static Result<std::unique_ptr<FlightSqlServer>> Start(sql::LakeSql& lake, ServerOptions options);
  ~FlightSqlServer();  // Shutdown()

  int port() const;
  ServerStats stats() const;
  // Cancels running queries, ends streams and stops the server; idempotent.
  void Shutdown();
  // Blocks until Shutdown() has completed.
  void Wait();

  struct Impl;

 private:
  explicit FlightSqlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::flightsql
