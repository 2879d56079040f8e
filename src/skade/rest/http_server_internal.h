// Private to skade/rest: the REST catalog's HTTP/1.1 transport on libmicrohttpd, event-driven so
// that threads serve requests, never connections. A few I/O threads (poll) read and write every
// connection; a request that has arrived whole goes to a pool of worker threads while its
// connection is suspended, and comes back with its response. Idle keep-alive connections, slow
// senders (slowloris) and streamed responses (Server-Sent Events) hold no thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"

struct MHD_Connection;

namespace skade::rest {

// A request as the transport received it.
struct HttpRequest {
  std::string method;                          // as sent: GET, HEAD, POST, DELETE, …
  std::string path;                            // percent-decoded ('+' stays '+'), without the query
  std::map<std::string, std::string> query;    // decoded ('+' is a space); the first of repeated keys
  std::map<std::string, std::string> headers;  // names in lower case; the first of repeated names
  std::string body;
  std::string client_address;  // the peer's IP address, without port
};

// The sending side of a streamed (chunked) response body, e.g. Server-Sent Events. A producer
// on any thread writes; the connection takes what was written when the socket can take it, and
// is parked (no thread, no polling) while nothing is queued. Thread-safe.
class StreamSink {
 public:
  StreamSink() = default;
  StreamSink(const StreamSink&) = delete;
  StreamSink& operator=(const StreamSink&) = delete;

  // Queues bytes for the client; false (and nothing queued) once the stream ended or its
  // connection closed.
  bool Write(std::string_view bytes);
  // Ends the body after what is queued (the chunked terminator follows); idempotent.
  void End();
  // Bytes queued and not yet taken by the connection.
  size_t queued() const;
  // Whether the connection is gone (the client went away, the response finished, or the
  // server stopped): writes are useless from then on.
  bool closed() const;

  // For the transport only (http_server.cc): binds the connection that sends the body (ended at
  // once when the server is stopping), takes up to `max` bytes (-1 at the end of the stream; 0
  // after parking the connection until the next Write or End) and releases it when the
  // response is freed.
  void Bind(MHD_Connection* connection, bool stopping);
  long Take(char* out, size_t max);
  void Release();

 private:
  mutable std::mutex mu_;
  std::string pending_;
  size_t offset_ = 0;  // bytes of pending_ already taken
  MHD_Connection* connection_ = nullptr;
  bool parked_ = false;  // the connection is suspended waiting for bytes
  bool ended_ = false;
  bool closed_ = false;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type;  // empty with a body: application/json
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is streamed from it (chunked) and `body` is ignored.
  std::shared_ptr<StreamSink> stream;
};

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;         // 0 picks a free port
  int workers = 8;      // threads running handlers
  int io_threads = 2;   // event loops reading and writing connections
  std::string tls_cert_pem;  // both set = HTTPS
  std::string tls_key_pem;
  size_t max_body_bytes = 16 << 20;  // larger bodies: 413 (and the connection closes)
  // A request must arrive whole (headers and body) within this long after its connection opened
  // or the previous response on it was sent; a connection idle (or stalled, e.g. a client
  // not reading its response) this long is closed too.
  std::chrono::seconds request_timeout{30};
  int max_connections = 1024;             // open at once in all; past it new ones are closed
  int max_connections_per_client = 128;   // from one IP address (0 = no bound)
  // Peers (canonical IP addresses, base/forwarded.h) bounded by max_connections only, not by the
  // per-client bound: load balancers and proxies, whose connections carry many clients.
  std::vector<std::string> unbounded_peers;
  size_t max_header_bytes = 32 << 10;     // request line and headers together; past it 431
};

// What the server does with requests. Each callback may run on several threads at once.
struct HttpCallbacks {
  // Runs in an I/O thread once a request's headers arrived (its body is still empty) and must
  // not block: an answer (e.g. 401, /healthz) is sent after the body is read and dropped, and
  // the handler never sees the request.
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> screen;
  // Runs in a worker thread with the whole request.
  std::function<HttpResponse(HttpRequest& request)> handler;
  // The transport's own refusals (400 bad framing, 413, 503 while stopping) in the caller's
  // error model.
  std::function<HttpResponse(int status, std::string message)> error;
  // After each response was sent (or its connection failed while sending): logs and metrics.
  std::function<void(const HttpRequest& request, int status, double seconds)> completed;
};

// Thread-safe.
class HttpServer {
 public:
  // Binds (SO_REUSEADDR, never SO_REUSEPORT) and starts serving. kUnavailable when the address
  // cannot be bound, kInvalidArgument when TLS cannot use the certificate or key.
  static Result<std::unique_ptr<HttpServer>> Start(HttpOptions options, HttpCallbacks callbacks);
  ~HttpServer();  // Shutdown()

  int port() const;
  // Connections open now.
  int64_t connections() const;
  // Stops accepting (connections opened from now on are refused), lets running handlers finish
  // (requests still queued get 503), ends streamed bodies and closes every connection without
  // waiting for slow clients; idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skade::rest
