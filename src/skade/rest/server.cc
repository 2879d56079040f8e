// HTTP transport of the REST catalog on cpp-httplib: routes, authentication, the OAuth2 token
// endpoint, request size limit, access log, /healthz and /metrics; what each route does is in
// CatalogApi (api.cc).
#include "skade/rest/server.h"

#include <httplib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "skade/base/auth_header.h"
#include "skade/base/base64.h"
#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/url.h"
#include "skade/events/replay.h"
#include "skade/rest/api_internal.h"
#include "skade/rest/auth_internal.h"

namespace skade::rest {
namespace {

// Prometheus histogram buckets of request latency, in seconds.
constexpr std::array<double, 9> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0};

// Request counters for /metrics. Thread-safe.
class Metrics {
 public:
  void Record(const std::string& method, int status, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[{method, status}];
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      if (seconds <= kBuckets[i]) ++buckets_[i];
    }
    ++count_;
    sum_ += seconds;
  }
  int64_t total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  // The Prometheus text exposition format.
  std::string Text(const RestStats& s) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    out += "# HELP skade_rest_requests_total REST catalog requests by method and status.\n";
    out += "# TYPE skade_rest_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      out += "skade_rest_requests_total{method=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
             "\"} " + std::to_string(n) + "\n";
    }
    out += "# HELP skade_rest_request_duration_seconds REST catalog request latency.\n";
    out += "# TYPE skade_rest_request_duration_seconds histogram\n";
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      out += "skade_rest_request_duration_seconds_bucket{le=\"" + Number(kBuckets[i]) + "\"} " +
             std::to_string(buckets_[i]) + "\n";
    }
    out += "skade_rest_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
    out += "skade_rest_request_duration_seconds_sum " + Number(sum_) + "\n";
    out += "skade_rest_request_duration_seconds_count " + std::to_string(count_) + "\n";
    out += "# HELP skade_rest_commits_total Table commits through the REST catalog.\n";
    out += "# TYPE skade_rest_commits_total counter\n";
    out += "skade_rest_commits_total " + std::to_string(s.commits) + "\n";
    out += "# HELP skade_rest_commit_conflicts_total Commits refused because a requirement failed.\n";
    out += "# TYPE skade_rest_commit_conflicts_total counter\n";
    out += "skade_rest_commit_conflicts_total " + std::to_string(s.conflicts) + "\n";
    return out;
  }

 private:
  static std::string Number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    return buf;
  }
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  std::array<int64_t, kBuckets.size()> buckets_{};
  int64_t count_ = 0;
  double sum_ = 0;
};

Request FromHttp(const httplib::Request& in) {
  Request r;
  r.method = in.method;
  for (const auto& [k, v] : in.params) r.query.emplace(k, v);
  for (const auto& [k, v] : in.headers) {
    std::string lower = k;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace(std::move(lower), v);
  }
  r.body = in.body;
  return r;
}

void ToHttp(const Response& from, httplib::Response& to) {
  to.status = from.status;
  std::string type = "application/json";
  for (const auto& [k, v] : from.headers) {
    if (k == "Content-Type") {
      type = v;
    } else {
      to.set_header(k, v);
    }
  }
  if (!from.body.empty()) to.set_content(from.body, type.c_str());
}

// application/x-www-form-urlencoded fields (the OAuth2 token request).
std::map<std::string, std::string> FormFields(const std::string& body) {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : ParseQueryString(body)) out[k] = std::move(v);
  return out;
}

// An OAuth2 error (RFC 6749 §5.2), the spec's OAuthError.
Response OAuthError(int status, const std::string& error, const std::string& description) {
  return JsonResponse(Json{{"error", error}, {"error_description", description}}, status);
}

std::string EscapeRegex(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

thread_local int64_t request_started_ns = 0;

}  // namespace

struct RestServer::Impl {
  catalog::Catalog& catalog;
  events::Bus* bus;
  RestOptions options;
  CatalogApi api;
  TokenAuthority tokens;
  Metrics metrics;
  std::unique_ptr<httplib::Server> http;
  std::thread loop;
  int port = 0;
  std::once_flag stopped;
  std::atomic<bool> stopping{false};
  std::atomic<int> event_streams{0};

  Impl(catalog::Catalog& c, io::FileIO& io, RestOptions o, events::Bus* b)
      : catalog(c),
        bus(b),
        options(std::move(o)),
        api(catalog, io, options),
        tokens(options.clients, options.static_tokens, options.token_lifetime) {}

  Response Token(const httplib::Request& req) {
    auto fields = FormFields(req.body);
    if (fields["grant_type"] != "client_credentials") {
      return OAuthError(400, "unsupported_grant_type", "only grant_type=client_credentials is supported");
    }
    std::string id = fields["client_id"], secret = fields["client_secret"];
    // RFC 6749 §2.3.1: the credentials may come as HTTP Basic instead.
    const std::string header = req.get_header_value("Authorization");
    const std::optional<std::string_view> basic = AuthCredentials(header, "Basic");
    if (id.empty() && basic) {
      const std::string decoded = DecodeBase64(*basic);
      size_t colon = decoded.find(':');
      if (colon != std::string::npos) {
        id = decoded.substr(0, colon);
        secret = decoded.substr(colon + 1);
      }
    }
    if (id.empty()) return OAuthError(400, "invalid_request", "client_id and client_secret are required");
    auto issued = tokens.Issue(id, secret);
    if (!issued.ok()) return OAuthError(401, "invalid_client", issued.status().message());
    return JsonResponse(Json{{"access_token", issued->token},
                             {"token_type", "bearer"},
                             {"expires_in", issued->expires_in_s},
                             {"issued_token_type", "urn:ietf:params:oauth:token-type:access_token"}});
  }

  // GET …/events/stream: commit events as Server-Sent Events, replayed from the durable log
  // after the cursor (Last-Event-ID, which an EventSource sends when it reconnects, or
  // ?after=SEQ; none = from now on) and then live, optionally only of ?tables=a.b,c.d. A
  // comment line every second keeps proxies from closing an idle stream and finds clients
  // that went away (the write after the peer's reset fails).
  void EventStream(const httplib::Request& req, httplib::Response& res) {
    if (bus == nullptr) {
      ToHttp(ErrorResponse(406, "UnsupportedOperationException", "this server has no live commit feed"), res);
      return;
    }
    std::optional<int64_t> after;
    const std::string cursor = req.has_header("Last-Event-ID") ? req.get_header_value("Last-Event-ID")
                                                                : req.get_param_value("after");
    if (!cursor.empty()) {
      after = ParseCommitSeq(cursor);
      if (!after) {
        ToHttp(ErrorResponse(400, "BadRequestException", "the cursor must be a commit_seq, not '" + cursor + "'"), res);
        return;
      }
    }
    auto tables = std::make_shared<std::set<std::string>>();
    const std::string list = req.get_param_value("tables");
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = std::min(list.find(',', pos), list.size());
      auto ident = catalog::TableIdent::Parse(std::string_view(list).substr(pos, comma - pos));
      if (!ident.ok()) {
        ToHttp(ErrorResponse(ident.status()), res);
        return;
      }
      tables->insert(ident->ToString());
      pos = comma + 1;
    }
    const int limit = options.max_event_streams > 0 ? options.max_event_streams : std::max(1, options.threads / 2);
    if (event_streams.fetch_add(1) >= limit) {
      event_streams.fetch_sub(1);
      ToHttp(ErrorResponse(503, "ServiceUnavailableException",
                           "too many change-feed streams are open (" + std::to_string(limit) + "); retry later"),
             res);
      return;
    }
    auto opened = events::ReplayThenTail::Open(catalog, *bus, after, {});
    if (!opened.ok()) {
      event_streams.fetch_sub(1);
      ToHttp(ErrorResponse(opened.status()), res);
      return;
    }
    std::shared_ptr<events::ReplayThenTail> stream = std::move(*opened);
    auto last_write = std::make_shared<int64_t>(MonotonicNanos());
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, stream, tables, last_write](size_t, httplib::DataSink& sink) {
          if (stopping) {
            sink.done();
            return true;
          }
          auto next = stream->Next(std::chrono::milliseconds(250));
          if (!next.ok()) {
            if (stream->closed()) {
              sink.done();
              return true;
            }
            SKADE_LOG_WARN("rest: events stream: {}", next.status().ToString());  // retried on the next call
          } else if (*next && (tables->empty() || tables->count((*next)->table_name()))) {
            const std::string frame = SseFrame(**next);
            *last_write = MonotonicNanos();
            return sink.write(frame.data(), frame.size());
          }
          if (MonotonicNanos() - *last_write > 1'000'000'000LL) {
            *last_write = MonotonicNanos();
            static constexpr char kBeat[] = ": keep-alive\n\n";
            return sink.write(kBeat, sizeof(kBeat) - 1);
          }
          return true;
        },
        [this](bool) { event_streams.fetch_sub(1); });
  }

  // Who sends `req` (authentication already passed): the token's principal, or the client's
  // address on a server without authentication.
  std::string Principal(const httplib::Request& req) {
    if (!tokens.enabled()) return "address:" + req.remote_addr;
    auto who = tokens.Check(req.get_header_value("Authorization"));
    return who.ok() ? *who : "address:" + req.remote_addr;
  }

  void Route() {
    httplib::Server& s = *http;
    const std::string base = "/v1" + (options.prefix.empty() ? std::string() : "/" + EscapeRegex(options.prefix));
    const std::string ns = base + "/namespaces/([^/]+)";
    const std::string table = ns + "/tables/([^/]+)";
    auto handle = [this](auto fn) {
      return [this, fn](const httplib::Request& req, httplib::Response& res) {
        Request r = FromHttp(req);
        r.principal = Principal(req);
        ToHttp(fn(r, req), res);
      };
    };
    s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("{\"status\":\"ok\"}", "application/json"); });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.Text(api.stats()), "text/plain; version=0.0.4");
    });
    s.Post("/v1/oauth/tokens", handle([this](const Request&, const httplib::Request& req) { return Token(req); }));
    s.Get("/v1/config", handle([this](const Request& r, const httplib::Request&) { return api.Config(r); }));
    s.Get(base + "/namespaces", handle([this](const Request& r, const httplib::Request&) { return api.ListNamespaces(r); }));
    s.Post(base + "/namespaces", handle([this](const Request& r, const httplib::Request&) { return api.CreateNamespace(r); }));
    s.Get(ns, handle([this](const Request& r, const httplib::Request& q) { return api.LoadNamespace(r, q.matches[1]); }));
    s.Delete(ns, handle([this](const Request& r, const httplib::Request& q) { return api.DropNamespace(r, q.matches[1]); }));
    s.Post(ns + "/properties", handle([this](const Request& r, const httplib::Request& q) {
             return api.UpdateNamespaceProperties(r, q.matches[1]);
           }));
    s.Get(ns + "/tables", handle([this](const Request& r, const httplib::Request& q) { return api.ListTables(r, q.matches[1]); }));
    s.Post(ns + "/tables", handle([this](const Request& r, const httplib::Request& q) { return api.CreateTable(r, q.matches[1]); }));
    s.Post(ns + "/register", handle([this](const Request& r, const httplib::Request& q) { return api.RegisterTable(r, q.matches[1]); }));
    s.Get(table, handle([this](const Request& r, const httplib::Request& q) {
            return api.LoadTable(r, q.matches[1], q.matches[2]);
          }));
    s.Post(table, handle([this](const Request& r, const httplib::Request& q) {
             return api.CommitTable(r, q.matches[1], q.matches[2]);
           }));
    s.Delete(table, handle([this](const Request& r, const httplib::Request& q) {
               return api.DropTable(r, q.matches[1], q.matches[2]);
             }));
    s.Post(table + "/metrics", handle([this](const Request& r, const httplib::Request& q) {
             return api.ReportMetrics(r, q.matches[1], q.matches[2]);
           }));
    s.Post(table + "/plan", handle([this](const Request& r, const httplib::Request& q) {
             return api.PlanTableScan(r, q.matches[1], q.matches[2]);
           }));
    s.Get(table + "/plan/([^/]+)", handle([this](const Request& r, const httplib::Request& q) {
            return api.FetchPlanningResult(r, q.matches[1], q.matches[2], q.matches[3]);
          }));
    s.Delete(table + "/plan/([^/]+)", handle([this](const Request& r, const httplib::Request& q) {
               return api.CancelPlanning(r, q.matches[1], q.matches[2], q.matches[3]);
             }));
    s.Post(table + "/tasks", handle([this](const Request& r, const httplib::Request& q) {
             return api.FetchScanTasks(r, q.matches[1], q.matches[2]);
           }));
    s.Post(base + "/events", handle([this](const Request& r, const httplib::Request&) { return api.QueryEvents(r); }));
    s.Get(base + "/events/stream", [this](const httplib::Request& req, httplib::Response& res) { EventStream(req, res); });
    const std::string view = ns + "/views/([^/]+)";
    auto views = handle([this](const Request& r, const httplib::Request& q) { return api.Views(r, q.matches[1], nullptr); });
    auto one_view = handle([this](const Request& r, const httplib::Request& q) {
      const std::string name = q.matches[2];
      return api.Views(r, q.matches[1], &name);
    });
    s.Get(ns + "/views", views);
    s.Post(ns + "/views", views);
    s.Get(view, one_view);
    s.Post(view, one_view);
    s.Delete(view, one_view);
    s.Post(base + "/views/rename", handle([this](const Request&, const httplib::Request&) {
             return ErrorResponse(406, "UnsupportedOperationException", "this catalog does not support views");
           }));
    s.Post(base + "/tables/rename", handle([this](const Request& r, const httplib::Request&) { return api.RenameTable(r); }));
    s.Post(base + "/transactions/commit",
           handle([this](const Request& r, const httplib::Request&) { return api.CommitTransaction(r); }));

    // Authentication before routing: everything but the token endpoint and health checks.
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      request_started_ns = MonotonicNanos();
      if (!tokens.enabled() || req.path == "/v1/oauth/tokens" || req.path == "/healthz") {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      auto who = tokens.Check(req.get_header_value("Authorization"));
      if (who.ok()) return httplib::Server::HandlerResponse::Unhandled;
      ToHttp(ErrorResponse(who.status()), res);
      res.set_header("WWW-Authenticate", "Bearer");
      return httplib::Server::HandlerResponse::Handled;
    });
    // Errors httplib produces itself (no route, a body past the limit) in the error model.
    s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      switch (res.status) {
        case 404:
          ToHttp(ErrorResponse(404, "NotFoundException", "no route for " + req.method + " " + req.path), res);
          break;
        case 413:
          ToHttp(ErrorResponse(413, "BadRequestException", "the request body is too large"), res);
          break;
        default:
          ToHttp(ErrorResponse(res.status, res.status >= 500 ? "ServerErrorException" : "BadRequestException",
                               "request failed with HTTP status " + std::to_string(res.status)),
                 res);
      }
    });
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      ToHttp(ErrorResponse(500, "ServerErrorException", what), res);
    });
    s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const double seconds = static_cast<double>(MonotonicNanos() - request_started_ns) / 1e9;
      metrics.Record(req.method, res.status, seconds);
      if (options.access_log) {
        SKADE_LOG_INFO("rest: {} {} {} {} us", req.method, req.path, res.status, static_cast<int64_t>(seconds * 1e6));
      }
    });
  }

  void Stop() {
    std::call_once(stopped, [this] {
      stopping = true;
      if (http) http->stop();
      if (loop.joinable()) loop.join();
    });
  }
};

RestServer::RestServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RestServer::~RestServer() { Shutdown(); }

int RestServer::port() const { return impl_->port; }

RestStats RestServer::stats() const {
  RestStats s = impl_->api.stats();
  s.requests = impl_->metrics.total();
  s.event_streams = impl_->event_streams.load();
  return s;
}

void RestServer::Shutdown() { impl_->Stop(); }

Result<std::unique_ptr<RestServer>> RestServer::Start(catalog::Catalog& catalog, io::FileIO& io, RestOptions options,
                                                      events::Bus* bus) {
  if (options.prefix.find('/') != std::string::npos) {
    return Status::InvalidArgument("the REST prefix must be one path segment, not '" + options.prefix + "'");
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Status::InvalidArgument("TLS needs both a certificate and a key");
  }
  if (options.threads <= 0) return Status::InvalidArgument("the REST server needs at least one thread");
  auto impl = std::make_unique<Impl>(catalog, io, std::move(options), bus);
  const RestOptions& o = impl->options;
  if (!o.tls_cert_file.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(o.tls_cert_file.c_str(), o.tls_key_file.c_str());
    if (!ssl->is_valid()) return Status::InvalidArgument("cannot load the TLS certificate or key");
    impl->http = std::move(ssl);
  } else {
    impl->http = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *impl->http;
  const int threads = o.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // TOOLCHAIN.md §7: without TCP_NODELAY keep-alive requests wait on delayed ACKs (~44 ms).
  s.set_tcp_nodelay(true);
  // httplib's default options add SO_REUSEPORT, with which a second server on a port in use
  // binds too and the kernel splits clients between them: SO_REUSEADDR only (restarts still
  // bind while old connections are in TIME_WAIT), so a port in use fails to bind.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  s.set_keep_alive_max_count(10000);
  s.set_payload_max_length(o.max_body_bytes);
  s.set_read_timeout(30, 0);
  s.set_write_timeout(30, 0);
  impl->Route();
  if (o.port == 0) {
    impl->port = s.bind_to_any_port(o.host);
    if (impl->port <= 0) return Status::Unavailable("cannot listen on " + o.host);
  } else {
    if (!s.bind_to_port(o.host, o.port)) {
      return Status::Unavailable("cannot listen on " + o.host + ":" + std::to_string(o.port));
    }
    impl->port = o.port;
  }
  Impl* raw = impl.get();
  impl->loop = std::thread([raw] { raw->http->listen_after_bind(); });
  return std::unique_ptr<RestServer>(new RestServer(std::move(impl)));
}

}  // namespace skade::rest
