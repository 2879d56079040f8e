// The skade.v1.Commits gRPC service (commits.proto): Subscribe streams commit events replayed
// from the log and then tailed from the Bus, Latest returns the log's head; plus a standalone
// server that serves only it (until `skade serve` hosts it next to Flight SQL).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"

namespace grpc {
class Service;
}

namespace skade::events {

struct CommitServiceStats {
  int64_t active_streams = 0;   // Subscribe calls in progress
  int64_t events_sent = 0;      // messages written to all streams so far
  int64_t buffered_events = 0;  // events read from the log and not yet written, all streams
};

// Thread-safe. Borrows `catalog` and `bus` (fed by a Watcher), which must outlive it.
// Each stream holds at most one replay batch (ReplayThenTail) plus what gRPC flow control
// lets it write, so a client that never reads costs bounded server memory. Statuses:
// INVALID_ARGUMENT for a negative cursor or a table name without a namespace; UNAVAILABLE when
// the service shuts down; CANCELLED when the client went away.
class CommitService {
 public:
  struct Options {
    int64_t replay_batch = 1024;
    // Checks the `authorization` header value of every call ("" when absent): an error status
    // refuses the call (kUnauthorized → UNAUTHENTICATED). Unset = every caller is allowed.
    std::function<Status(std::string_view authorization)> authorize;
  };
  CommitService(catalog::Catalog& catalog, Bus& bus, Options options);
  CommitService(catalog::Catalog& catalog, Bus& bus) : CommitService(catalog, bus, Options()) {}
  ~CommitService();
  CommitService(const CommitService&) = delete;
  CommitService& operator=(const CommitService&) = delete;

  // The service to register on a grpc::ServerBuilder; owned by this object.
  grpc::Service* grpc_service();
  // Ends every stream (now and later) with UNAVAILABLE within ~100 ms.
  void Shutdown();
  CommitServiceStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A gRPC server serving only the Commits service. Thread-safe.
class CommitServer {
 public:
  // Binds `host`:`port` (port 0 picks a free one) without TLS. kUnavailable if binding fails.
  static Result<std::unique_ptr<CommitServer>> Start(catalog::Catalog& catalog, Bus& bus,
                                                     const std::string& host, int port);
  ~CommitServer();  // Shutdown()
  CommitServer(const CommitServer&) = delete;
  CommitServer& operator=(const CommitServer&) = delete;

  int port() const { return port_; }
  CommitService& service() { return *service_; }
  // Ends the streams with UNAVAILABLE and stops the server; idempotent.
  void Shutdown();

  struct ServerHolder;

 private:
  CommitServer(std::unique_ptr<CommitService> service, std::unique_ptr<ServerHolder> server, int port);
  std::unique_ptr<CommitService> service_;
  std::unique_ptr<ServerHolder> server_;
  int port_;
};

}  // namespace skade::events
