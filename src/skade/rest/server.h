// The Iceberg REST catalog server (DESIGN §10): the REST catalog OpenAPI
// (shared/fixtures/openapi/iceberg-rest-catalog-open-api.yaml) over a skade Catalog, so that
// Spark, Trino, Flink, PyIceberg and iceberg-js use the lake. Namespaces, tables (create, staged
// create, load with ETag, commit with requirements and updates, drop, rename, register),
// multi-table transactions, metrics reports, OAuth2 client-credentials tokens or static bearer
// tokens, Idempotency-Key on mutations, server-side scan planning (synchronous, paged and
// asynchronous), the change feed (the proposed events endpoint, and a Server-Sent Events stream
// of commit events), /healthz and /metrics (Prometheus text). Names pass the catalog's one rule
// (catalog::ValidateName); every failure answers in the spec's error model.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/events/bus.h"
#include "skade/io/file_io.h"
#include "skade/io/s3_file_io.h"
#include "skade/io/sealer.h"

namespace skade::rest {

// The answer of a public route (RestOptions::public_files).
struct PublicResponse {
  int status = 200;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// A request to an extra route (RestOptions::extra_routes), borrowed for the call.
struct ExtraRequest {
  std::string_view method;  // as sent, but HEAD is "GET"
  std::string_view path;    // percent-decoded, without the query
  const std::map<std::string, std::string>& query;  // decoded
  std::string_view body;
  std::string_view content_type;  // the Content-Type header as sent ("" without one)
  // Who sent it, as the server keys what it holds for clients: the authenticated client (each
  // static token, each OAuth2 client) or, without authentication, "address:<client address>".
  std::string_view principal;
};

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
  // The key ring every server of a deployment shares (io/sealer.h): OAuth2 tokens and scan plan
  // ids one server issues are accepted by all (a plan id carries what its plan is made from;
  // another server makes the plan again). Null = a key of this process alone.
  std::shared_ptr<const io::Sealer> sealer;
  size_t max_body_bytes = 16 << 20;  // larger requests: 413
  // Threads running requests. Connections hold none: `io_threads` event loops read and write
  // all of them, and a request goes to a thread only once it has arrived whole.
  int threads = 8;
  int io_threads = 2;
  // A request must arrive whole (headers and body) within this long after its connection opened
  // or its previous response was sent (slow senders are cut off); a keep-alive connection idle
  // this long, or a client not reading its response for this long, is closed.
  std::chrono::seconds request_timeout{30};
  // Connections open at once, in all and from one client address (past either, a new
  // connection is closed at once; trusted_proxies count in all only). Iceberg's Java client
  // pools up to 100 per host.
  int max_connections = 1024;
  int max_connections_per_client = 128;
  // Load balancers or proxies in front (canonical IP addresses, base/forwarded.h): a request
  // from one of them is its client's, the nearest address of X-Forwarded-For that is no trusted
  // proxy — what a server without authentication keys its per-client bounds, scan plans and
  // Idempotency-Key records on. Any other peer's header is ignored.
  std::vector<std::string> trusted_proxies;
  std::string tls_cert_file;  // both set = HTTPS
  std::string tls_key_file;
  // Server-side scan planning: a plan of more file scan tasks than plan_page_tasks answers
  // them in pages (plan tasks, fetched one by one); a plan over a snapshot of at least
  // plan_async_manifests manifests (0 = never) runs in the background ("submitted") while the
  // client polls. Plans not fetched or cancelled expire after plan_ttl.
  size_t plan_page_tasks = 1000;
  size_t plan_async_manifests = 64;
  std::chrono::seconds plan_ttl{600};
  // Decoded manifest lists and manifests kept across plans (iceberg/manifest_cache.h), about
  // this many bytes: a plan after a commit reads only what the commit added.
  int64_t plan_manifest_cache_bytes = int64_t{256} << 20;
  // Change-feed streams (GET /v1/{prefix}/events/stream, Server-Sent Events) open at once per
  // client (its principal; without authentication, its address) — past it 503 for that client
  // only — and in all. A stream holds no thread: one thread feeds every stream. A comment line
  // every second keeps proxies from closing an idle stream and lets the server notice a client
  // that went away (its stream is freed within seconds); a stream ends when its bearer token
  // expires (the client reconnects with a new one and Last-Event-ID).
  int max_event_streams = 4;
  int max_event_streams_total = 256;
  // Access log lines (method, path, status, microseconds) at info level.
  bool access_log = false;
  // A commit (commitTable, or a table of transactions/commit) refused only because other commits
  // moved its branch — an append, or blind property/statistics updates — is re-based on the
  // table's current state by the server instead of answering 409 (commit_rebase.h).
  bool rebase_commits = true;
  // Remote signing (the spec's signRequest, POST …/tables/{table}/sign): set, the server signs
  // the requests clients will send to this object store (its endpoint, region and credentials),
  // for objects under the table's locations only (reads and, unless read_only, writes), and the
  // loadTable/createTable answers of tables on an object store tell clients to use it, so that
  // clients hold no keys of their own. A table not created yet (a staged create) is signed for
  // the location the catalog would give it.
  std::optional<io::S3Options> remote_signing;
  // Public files served beside the catalog (the web console under /ui, console/static_files.h):
  // asked first with every request's method and percent-decoded path, before authentication, in
  // an I/O thread — so it answers from memory without blocking, and only with what anyone may
  // read; nullopt leaves the request to the catalog's routes. Unset = none.
  std::function<std::optional<PublicResponse>(std::string_view method, std::string_view path)> public_files;
  // Extra routes beside the catalog's (the web console's data preview and SQL page,
  // console/preview.h, console/query.h): asked, after authentication and in a worker thread, with
  // each request no catalog route serves; nullopt = 404 as before. They run whatever
  // options.read_only says: each route keeps to reads itself.
  std::function<std::optional<PublicResponse>(const ExtraRequest& request)> extra_routes;
  // More of the process's health for /metrics (the OpenLineage emitter of `skade serve`,
  // lineage::EmitterMetricsText): Prometheus text appended to the server's own metrics. Asked on
  // each scrape, in an I/O thread, so it must answer from memory without waiting. Unset = none.
  std::function<std::string()> more_metrics;
  // Idempotency-Key (the spec's header on mutation endpoints, a UUIDv7): a mutation carrying a key
  // is applied at most once per principal, and a retry with the key within this lifetime (from
  // the first request) gets the first final answer (2xx, or 4xx; a 5xx is not kept). Commits
  // store their key in the catalog transaction that commits them, so a retry after a crash finds
  // the commit; other mutations' records follow their answer (SQL catalogs; in memory for others).
  // /v1/config advertises it as idempotency-key-lifetime; 0 ignores keys and advertises nothing.
  std::chrono::seconds idempotency_key_lifetime{1800};
  // A retry arriving while the first request with its key still runs waits this long for that
  // answer, then gets 503 with Retry-After (not a final answer: the client retries again).
  std::chrono::seconds idempotency_wait{30};
};

// What the server has served (also exported by /metrics).
struct RestStats {
  int64_t requests = 0;
  int64_t commits = 0;    // successful table commits (single and in transactions)
  int64_t conflicts = 0;  // commits refused with 409 CommitFailedException
  int64_t rebased = 0;    // table commits re-based on the current state instead of a 409
  int64_t event_streams = 0;  // change-feed streams open now
  int64_t connections = 0;    // HTTP connections open now
};

// Thread-safe.
class RestServer {
 public:
  // Binds and starts serving. kUnavailable when the address cannot be bound, kInvalidArgument
  // for inconsistent options (a prefix that is not one path segment, half a TLS pair).
  // Borrows `catalog`, `io` (the FileIO of the warehouse) and `bus` (fed with the catalog's
  // commits, e.g. by an events::Watcher), which must outlive the server. Without a bus the
  // Server-Sent Events stream is absent (406); the events endpoint needs only the catalog's log.
  static Result<std::unique_ptr<RestServer>> Start(catalog::Catalog& catalog, io::FileIO& io, RestOptions options,
                                                   events::Bus* bus = nullptr);
  ~RestServer();  // Shutdown()

  int port() const;
  RestStats stats() const;
  // Stops accepting, lets running requests finish (queued ones get 503), ends change-feed
  // streams and closes every connection without waiting for slow clients; idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit RestServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::rest
