// HttpClient: a thread-safe HTTP/1.1 client over libcurl for skade's outgoing requests (S3, the
// REST catalog connector, OpenLineage): pooled connections, timeouts, and retries with
// exponential backoff and jitter that honour Retry-After.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"

namespace skade::io {

// HTTP header fields in the order they were added. Names compare ignoring ASCII case; values
// are kept as given. Not thread-safe (a value type).
class HttpHeaders {
 public:
  // Appends a field (a repeated name keeps both).
  void Add(std::string name, std::string value);
  // Replaces every field of that name with one.
  void Set(std::string name, std::string value);
  // Removes every field of that name.
  void Remove(std::string_view name);
  // The first value of that name, or nullopt.
  std::optional<std::string> Get(std::string_view name) const;
  bool Contains(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// Whether two header names are equal ignoring ASCII case.
bool HeaderNameEquals(std::string_view a, std::string_view b);

// When a request may be sent again after a failure.
enum class RetryMode {
  kIfIdempotent,  // GET, HEAD, PUT, DELETE, OPTIONS (RFC 9110 §9.2.2); never POST or PATCH
  kAlways,        // the caller knows a repeat is harmless (e.g. a POST that deletes keys)
  kNever,
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  HttpHeaders headers;
  // Borrowed: must stay valid until Send returns.
  std::string_view body;
  // Time to establish the connection, and for the whole exchange of one attempt.
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds timeout{120'000};
  RetryMode retry = RetryMode::kIfIdempotent;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
  // How many times the request was sent (1 without retries).
  int attempts = 1;
};

// Retries: connection failures (refused, reset, timeout, truncated body) and the statuses in
// `retry_statuses` are retried up to `max_attempts` sends in all. The wait before retry n
// (n ≥ 1) is uniformly random in [b/2, b] with b = min(max_backoff, initial_backoff·2^(n-1)),
// unless the response carried Retry-After (seconds or an HTTP date), which is waited instead,
// capped at `max_retry_after`.
struct RetryPolicy {
  int max_attempts = 4;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5'000};
  std::chrono::milliseconds max_retry_after{30'000};
  std::vector<int> retry_statuses = {429, 500, 502, 503, 504};
};

struct HttpClientOptions {
  RetryPolicy retry;
  // Idle connections (libcurl easy handles) kept for reuse; more may be open while busy.
  int max_idle_connections = 16;
  std::string user_agent = "skade";
};

// Sends HTTP requests. Thread-safe: any number of threads may call Send at once; each call uses
// its own pooled connection, and DNS answers and TLS sessions are shared between them (libcurl
// share interface). Responses with any status are returned as values: an HTTP error status is
// not a Status error here, callers map statuses to their own meaning.
class HttpClient {
 public:
  // Null never: libcurl's global state is initialised once per process on first use.
  static std::unique_ptr<HttpClient> Make(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Called before each attempt with the request about to be sent (e.g. to sign it with a
  // fresh time); its changes apply to that attempt only.
  using Prepare = std::function<void(HttpRequest& attempt)>;

  // Sends `request`, retrying per the policy and request.retry. The final response is
  // returned even when its status was retryable. kUnavailable when no response arrived
  // (connection refused, timeout, reset, body shorter than its Content-Length) after the
  // retries; kInvalidArgument for a malformed URL. Messages name the method and the URL
  // with credentials and signatures removed.
  Result<HttpResponse> Send(const HttpRequest& request, const Prepare& prepare = nullptr);

  const HttpClientOptions& options() const { return options_; }

 private:
  struct Pool;
  explicit HttpClient(HttpClientOptions options);
  HttpClientOptions options_;
  std::unique_ptr<Pool> pool_;
};

// `url` fit for messages and logs: user information ("user:secret@") dropped and the values of
// query parameters that carry secrets (signatures, credentials, tokens) replaced by "REDACTED".
std::string RedactUrl(std::string_view url);

// Seconds to wait from a Retry-After value (delta-seconds or an HTTP date, RFC 9110 §10.2.3),
// relative to `now_unix_seconds`; nullopt when unparseable.
std::optional<int64_t> ParseRetryAfter(std::string_view value, int64_t now_unix_seconds);

// Seconds since the epoch of an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 §5.6.7);
// nullopt when malformed.
std::optional<int64_t> ParseHttpDate(std::string_view value);

}  // namespace skade::io
