// The Iceberg REST catalog server (DESIGN §10): the REST catalog OpenAPI
// (shared/fixtures/openapi/iceberg-rest-catalog-open-api.yaml) over a skade Catalog, so that
// Spark, Trino, Flink, PyIceberg and iceberg-js use the lake. Namespaces, tables (create, staged
// create, load with ETag, commit with requirements and updates, drop, rename, register),
// multi-table transactions, metrics reports, OAuth2 client-credentials tokens or static bearer
// tokens, /healthz and /metrics (Prometheus text). Names pass the catalog's one rule
// (catalog::ValidateName); every failure answers in the spec's error model.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/io/file_io.h"

namespace skade::rest {

struct RestOptions {
  std::string host = "127.0.0.1";
  int port = 8181;  // 0 picks a free port
  // The {prefix} path segment of every catalog route ("/v1/{prefix}/namespaces"), sent to
  // clients in /v1/config's overrides; empty = routes without a prefix ("/v1/namespaces").
  std::string prefix;
  bool read_only = false;  // every mutation answers 403 (ForbiddenException)
  // Where clients may put or register tables: the warehouse and these folders. A table
  // location, a set-location update or a registered metadata file elsewhere is refused (400),
  // so that no client makes the server write, read or purge files outside them.
  std::vector<std::string> allowed_directories;
  // Authentication. Without clients and tokens every request is allowed. OAuth2 client
  // credentials (POST /v1/oauth/tokens, grant_type=client_credentials) issue bearer tokens of
  // token_lifetime; static_tokens are accepted as bearer tokens as they are.
  std::map<std::string, std::string> clients;  // client_id → client_secret
  std::vector<std::string> static_tokens;
  std::chrono::seconds token_lifetime{3600};
  size_t max_body_bytes = 16 << 20;  // larger requests: 413
  int threads = 8;
  std::string tls_cert_file;  // both set = HTTPS
  std::string tls_key_file;
  // Access log lines (method, path, status, microseconds) at info level.
  bool access_log = false;
};

// What the server has served (also exported by /metrics).
struct RestStats {
  int64_t requests = 0;
  int64_t commits = 0;    // successful table commits (single and in transactions)
  int64_t conflicts = 0;  // commits refused with 409 CommitFailedException
};

// Thread-safe.
class RestServer {
 public:
  // Binds and starts serving. kUnavailable when the address cannot be bound, kInvalidArgument
  // for inconsistent options (a prefix that is not one path segment, half a TLS pair).
  // Borrows `catalog` and `io` (the FileIO of the warehouse), which must outlive the server.
  static Result<std::unique_ptr<RestServer>> Start(catalog::Catalog& catalog, io::FileIO& io, RestOptions options);
  ~RestServer();  // Shutdown()

  int port() const;
  RestStats stats() const;
  // Stops accepting, finishes requests in flight and stops; idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit RestServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::rest
