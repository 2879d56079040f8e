// The REST catalog's routes, authentication, the OAuth2 token endpoint, access log, /healthz,
// /metrics and the Server-Sent Events change feed, over the event-driven HTTP transport
// (http_server.cc); what each route does is in CatalogApi (api.cc).
#include "skade/rest/server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "skade/base/auth_header.h"
#include "skade/base/base64.h"
#include "skade/base/clock.h"
#include "skade/base/forwarded.h"
#include "skade/base/log.h"
#include "skade/base/media_type.h"
#include "skade/base/url.h"
#include "skade/events/replay.h"
#include "skade/rest/api_internal.h"
#include "skade/rest/auth_internal.h"
#include "skade/rest/http_server_internal.h"
#include "skade/rest/idempotency_internal.h"

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
    out += "# HELP skade_rest_commits_rebased_total Table commits re-based on the current state instead of a 409.\n";
    out += "# TYPE skade_rest_commits_rebased_total counter\n";
    out += "skade_rest_commits_rebased_total " + std::to_string(s.rebased) + "\n";
    out += "# HELP skade_rest_connections Open HTTP connections.\n";
    out += "# TYPE skade_rest_connections gauge\n";
    out += "skade_rest_connections " + std::to_string(s.connections) + "\n";
    out += "# HELP skade_rest_event_streams Open change-feed streams.\n";
    out += "# TYPE skade_rest_event_streams gauge\n";
    out += "skade_rest_event_streams " + std::to_string(s.event_streams) + "\n";
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

HttpResponse ToHttp(Response from) {
  HttpResponse to;
  to.status = from.status;
  for (auto& [k, v] : from.headers) {
    if (k == "Content-Type") {
      to.content_type = std::move(v);
    } else {
      to.headers.emplace_back(std::move(k), std::move(v));
    }
  }
  to.body = std::move(from.body);
  return to;
}

// The error model for what the transport refuses itself (and for routes that do not exist).
HttpResponse TransportError(int status, std::string message) {
  std::string_view type = "BadRequestException";
  if (status == 404) type = "NotFoundException";
  if (status == 503) type = "ServiceUnavailableException";
  if (status >= 500 && status != 503) type = "ServerErrorException";
  return ToHttp(ErrorResponse(status, type, std::move(message)));
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

Result<std::string> ReadPem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) return Status::InvalidArgument("cannot load the TLS certificate or key " + path);
  return text.str();
}

using Clock = std::chrono::steady_clock;

// The change-feed streams (Server-Sent Events): one thread pulls every stream's commit events
// (replayed from the log, then live from the bus) into its connection's sink, so a stream holds
// no thread, and a quiet stream's connection is parked. Counted per client. Thread-safe.
class EventStreams {
 public:
  EventStreams(int per_client, int total) : per_client_(std::max(1, per_client)), total_(std::max(1, total)) {
    pump_ = std::thread([this] { Pump(); });
  }
  ~EventStreams() { Stop(); }

  // A place for one more stream of `client`; kUnavailable past its limit or the server's.
  Status Reserve(const std::string& client) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::Unavailable("the server is shutting down");
    if (open_ >= total_) {
      return Status::Unavailable("too many change-feed streams are open (" + std::to_string(total_) + "); retry later");
    }
    int& mine = per_client_open_[client];
    if (mine >= per_client_) {
      return Status::Unavailable("this client has " + std::to_string(mine) +
                                 " change-feed streams open, the most it may; close one or retry later");
    }
    ++mine;
    ++open_;
    return Status::Ok();
  }
  void Unreserve(const std::string& client) {
    std::lock_guard<std::mutex> lock(mu_);
    ReleaseLocked(client);
  }

  // Starts feeding a reserved stream; its sink is the response body.
  std::shared_ptr<StreamSink> Add(std::unique_ptr<events::ReplayThenTail> feed, std::set<std::string> tables,
                                  std::string client, std::optional<Clock::time_point> expires) {
    auto s = std::make_shared<Stream>();
    s->feed = std::move(feed);
    s->tables = std::move(tables);
    s->client = std::move(client);
    s->expires = expires;
    s->sink = std::make_shared<StreamSink>();
    s->last_write_ns = MonotonicNanos();
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(s);
    cv_.notify_all();
    return s->sink;
  }

  int64_t open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    if (pump_.joinable()) pump_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : streams_) {
      s->sink->End();
      ReleaseLocked(s->client);
    }
    streams_.clear();
  }

 private:
  // A stream's queue is topped up to this many bytes per round; a client reading slower than
  // the feed leaves events in the log, not in memory.
  static constexpr size_t kQueueBytes = 64 << 10;
  static constexpr int64_t kHeartbeatNs = 1'000'000'000;

  struct Stream {
    std::unique_ptr<events::ReplayThenTail> feed;  // only the pump thread uses it
    std::set<std::string> tables;
    std::string client;
    std::optional<Clock::time_point> expires;
    std::shared_ptr<StreamSink> sink;
    int64_t last_write_ns = 0;
  };

  void ReleaseLocked(const std::string& client) {
    auto it = per_client_open_.find(client);
    if (it != per_client_open_.end() && --it->second <= 0) per_client_open_.erase(it);
    --open_;
  }

  // Whether the stream goes on after this round.
  bool Feed(Stream& s) {
    if (s.sink->closed()) return false;  // the client went away (noticed at a write)
    if (s.expires && Clock::now() >= *s.expires) {
      s.sink->End();  // the token expired: the client reconnects with a new one
      return false;
    }
    while (s.sink->queued() < kQueueBytes) {
      auto next = s.feed->Next(std::chrono::nanoseconds(0));
      if (!next.ok()) {
        if (s.feed->closed()) {
          s.sink->End();
          return false;
        }
        SKADE_LOG_WARN("rest: events stream: {}", next.status().ToString());  // retried next round
        break;
      }
      if (!*next) break;
      if (s.tables.empty() || s.tables.count((*next)->table_name())) {
        if (!s.sink->Write(SseFrame(**next))) return false;
        s.last_write_ns = MonotonicNanos();
      }
    }
    if (MonotonicNanos() - s.last_write_ns > kHeartbeatNs) {
      // Keeps proxies from closing an idle stream; a write to a client that went away fails and
      // frees the stream.
      s.last_write_ns = MonotonicNanos();
      if (!s.sink->Write(": keep-alive\n\n")) return false;
    }
    return true;
  }

  void Pump() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      if (stopped_) break;
      std::vector<std::shared_ptr<Stream>> round = streams_;
      lock.unlock();
      std::vector<Stream*> finished;
      for (const auto& s : round) {
        if (!Feed(*s)) finished.push_back(s.get());
      }
      lock.lock();
      if (!finished.empty()) {
        std::erase_if(streams_, [&](const std::shared_ptr<Stream>& s) {
          if (std::find(finished.begin(), finished.end(), s.get()) == finished.end()) return false;
          ReleaseLocked(s->client);
          return true;
        });
      }
    }
  }

  const int per_client_;
  const int total_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  int64_t open_ = 0;
  std::map<std::string, int> per_client_open_;
  std::vector<std::shared_ptr<Stream>> streams_;
  std::thread pump_;
};

// The path's parameters of a matched route, decoded.
using Params = std::vector<std::string>;

// A route: a method and path segments, "*" standing for one non-empty segment (a parameter;
// a decoded "%2F" splits a segment, so it matches no route, as before).
struct RouteEntry {
  std::string method;
  std::vector<std::string> segments;
  std::function<HttpResponse(Request&, const HttpRequest&, const Params&)> run;
};

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  if (path.empty() || path[0] != '/') return {"\x01"};  // matches nothing
  size_t pos = 1;
  while (true) {
    const size_t slash = path.find('/', pos);
    out.emplace_back(path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos));
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return out;
}

// The answer of a public file or an extra route, as the transport sends it.
HttpResponse FromPublic(PublicResponse r) {
  HttpResponse out;
  out.status = r.status;
  out.content_type = std::move(r.content_type);
  out.headers = std::move(r.headers);
  out.body = std::move(r.body);
  return out;
}

}  // namespace

struct RestServer::Impl {
  catalog::Catalog& catalog;
  events::Bus* bus;
  RestOptions options;
  CatalogApi api;
  IdempotencyKeys keys;
  TokenAuthority tokens;
  Metrics metrics;
  EventStreams streams;
  std::vector<RouteEntry> routes;
  std::unique_ptr<HttpServer> http;
  std::atomic<HttpServer*> serving{nullptr};  // `http` once started (read by /metrics)
  std::once_flag stopped;

  Impl(catalog::Catalog& c, io::FileIO& io, RestOptions o, events::Bus* b)
      : catalog(c),
        bus(b),
        options(std::move(o)),
        api(catalog, io, options),
        // A read-only server answers every mutation 403: its records need not outlive it.
        keys(catalog, options.idempotency_key_lifetime, options.idempotency_wait, !options.read_only),
        tokens(options.clients, options.static_tokens, options.token_lifetime, options.sealer),
        streams(options.max_event_streams, options.max_event_streams_total) {}

  // Who sends `h` (authentication already passed): the token's identity, or the client's
  // address on a server without authentication.
  TokenAuthority::Identity Who(const HttpRequest& h) {
    if (tokens.enabled()) {
      auto it = h.headers.find("authorization");
      auto who = tokens.Authenticate(it == h.headers.end() ? std::string() : it->second);
      if (who.ok()) return std::move(who).value();
    }
    auto forwarded = h.headers.find("x-forwarded-for");
    const std::string address =
        "address:" + ClientBehindProxies(h.client_address, forwarded == h.headers.end() ? "" : forwarded->second,
                                         options.trusted_proxies);
    return TokenAuthority::Identity{address, address, std::nullopt};
  }

  Response Token(const Request& req) {
    auto fields = FormFields(req.body);
    if (fields["grant_type"] != "client_credentials") {
      return OAuthError(400, "unsupported_grant_type", "only grant_type=client_credentials is supported");
    }
    std::string id = fields["client_id"], secret = fields["client_secret"];
    // RFC 6749 §2.3.1: the credentials may come as HTTP Basic instead.
    const std::string header = req.header("authorization");
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
  // ?after=SEQ; none = from now on) and then live, optionally only of ?tables=a.b,c.d.
  HttpResponse EventStream(const Request& req, const HttpRequest& h) {
    if (bus == nullptr) {
      return ToHttp(ErrorResponse(406, "UnsupportedOperationException", "this server has no live commit feed"));
    }
    std::optional<int64_t> after;
    const std::string cursor = req.headers.count("last-event-id") ? req.header("last-event-id")
                                                                    : (req.has("after") ? req.query.at("after") : "");
    if (!cursor.empty()) {
      after = ParseCommitSeq(cursor);
      if (!after) return ToHttp(ErrorResponse(400, "BadRequestException", "the cursor must be a commit_seq, not '" + cursor + "'"));
    }
    std::set<std::string> tables;
    const std::string list = req.has("tables") ? req.query.at("tables") : "";
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = std::min(list.find(',', pos), list.size());
      auto ident = catalog::TableIdent::Parse(std::string_view(list).substr(pos, comma - pos));
      if (!ident.ok()) return ToHttp(ErrorResponse(ident.status()));
      tables.insert(ident->ToString());
      pos = comma + 1;
    }
    TokenAuthority::Identity who = Who(h);
    // Counted per client before the log's head is read (so a stream from now cannot miss a
    // commit made after it was counted).
    if (Status reserved = streams.Reserve(who.client); !reserved.ok()) {
      return ToHttp(ErrorResponse(503, "ServiceUnavailableException", reserved.message()));
    }
    auto opened = events::ReplayThenTail::Open(catalog, *bus, after, {});
    if (!opened.ok()) {
      streams.Unreserve(who.client);
      return ToHttp(ErrorResponse(opened.status()));
    }
    HttpResponse res;
    res.status = 200;
    res.content_type = "text/event-stream";
    res.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    res.stream = streams.Add(std::move(*opened), std::move(tables), who.client, who.expires);
    return res;
  }

  // Before the body: /healthz (never authenticated), public files (the web console's pages),
  // authentication, /metrics — answered in the I/O thread, so health checks and refusals never
  // wait for a worker.
  std::optional<HttpResponse> Screen(const HttpRequest& h) {
    const bool get = h.method == "GET" || h.method == "HEAD";
    if (h.path == "/healthz" && get) {
      HttpResponse ok;
      ok.body = "{\"status\":\"ok\"}";
      return ok;
    }
    if (options.public_files) {
      if (std::optional<PublicResponse> file = options.public_files(h.method, h.path)) return FromPublic(std::move(*file));
    }
    if (tokens.enabled() && h.path != "/v1/oauth/tokens" && h.path != "/healthz") {
      auto it = h.headers.find("authorization");
      auto who = tokens.Check(it == h.headers.end() ? std::string() : it->second);
      if (!who.ok()) {
        HttpResponse refused = ToHttp(ErrorResponse(who.status()));
        refused.headers.emplace_back("WWW-Authenticate", "Bearer");
        return refused;
      }
    }
    if (h.path == "/metrics" && get) {
      HttpResponse text;
      text.body = metrics.Text(Stats());
      if (options.more_metrics) text.body += options.more_metrics();
      text.content_type = "text/plain; version=0.0.4";
      return text;
    }
    return std::nullopt;
  }

  HttpResponse Handle(HttpRequest& h) {
    // HEAD runs the GET route (whose responses to HEAD have no body).
    const std::string method = h.method == "HEAD" ? std::string("GET") : h.method;
    const std::vector<std::string> segments = Segments(h.path);
    for (const RouteEntry& route : routes) {
      if (route.method != method) continue;
      Params params;
      if (!Matches(route, segments, &params)) continue;
      if (!JsonBodyAllowed(h)) {
        // 400, the spec's status for a malformed request (it documents no 415).
        return ToHttp(ErrorResponse(400, "BadRequestException",
                                    "a " + h.method + " to " + h.path + " needs Content-Type: application/json"));
      }
      Request r;
      r.method = h.method;
      r.path = h.path;
      r.query = h.query;
      r.headers = h.headers;
      r.body = std::move(h.body);
      // Server-held state (scan plans) belongs to the client: each static token, each OAuth2
      // client, or each address without authentication.
      r.principal = Who(h).client;
      try {
        return route.run(r, h, params);
      } catch (const std::exception& e) {
        return ToHttp(ErrorResponse(500, "ServerErrorException", e.what()));
      }
    }
    if (options.extra_routes) {
      const std::string who = Who(h).client;
      auto content_type = h.headers.find("content-type");
      const ExtraRequest request{h.method == "HEAD" ? std::string_view("GET") : std::string_view(h.method), h.path,
                                 h.query, h.body,
                                 content_type == h.headers.end() ? std::string_view() : content_type->second, who};
      if (std::optional<PublicResponse> extra = options.extra_routes(request)) {
        return FromPublic(std::move(*extra));
      }
    }
    return NoRoute(h, segments);
  }

  // A catalog route changes state only from a JSON body sent as such: a web page of another site
  // can make a browser send a POST of text/plain, form data or no body without asking the
  // server first (a CORS "simple request"), but not one of application/json. So every POST and
  // PUT must say application/json (any parameters), except the OAuth2 token route, whose body
  // the spec makes a form and which changes nothing.
  static bool JsonBodyAllowed(const HttpRequest& h) {
    if (h.method != "POST" && h.method != "PUT") return true;
    if (h.path == "/v1/oauth/tokens") return true;
    auto it = h.headers.find("content-type");
    return it != h.headers.end() && IsJsonContentType(it->second);
  }

  // Whether `route` serves the path `segments`; its wildcard segments go to `params`.
  static bool Matches(const RouteEntry& route, const std::vector<std::string>& segments, Params* params) {
    if (route.segments.size() != segments.size()) return false;
    for (size_t i = 0; i < segments.size(); ++i) {
      if (route.segments[i] == "*") {
        if (segments[i].empty()) return false;
        params->push_back(segments[i]);
      } else if (route.segments[i] != segments[i]) {
        return false;
      }
    }
    return true;
  }

  // A path served with other methods: 405 and the methods it has (RFC 9110 §15.5.6);
  // otherwise 404.
  HttpResponse NoRoute(const HttpRequest& h, const std::vector<std::string>& segments) const {
    std::vector<std::string> allowed;
    for (const RouteEntry& route : routes) {
      Params unused;
      if (!Matches(route, segments, &unused)) continue;
      if (std::find(allowed.begin(), allowed.end(), route.method) != allowed.end()) continue;
      allowed.push_back(route.method);
      if (route.method == "GET") allowed.push_back("HEAD");
    }
    if (allowed.empty()) return TransportError(404, "no route for " + h.method + " " + h.path);
    std::string allow;
    for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    HttpResponse refused = ToHttp(ErrorResponse(
        405, "BadRequestException", h.method + " is not allowed on " + h.path + " (allowed: " + allow + ")"));
    refused.headers.emplace_back("Allow", allow);
    return refused;
  }

  RestStats Stats() const {
    RestStats s = api.stats();
    s.requests = metrics.total();
    s.event_streams = streams.open();
    HttpServer* server = serving.load();
    s.connections = server != nullptr ? server->connections() : 0;
    return s;
  }

  void Route() {
    const std::string base = "/v1" + (options.prefix.empty() ? std::string() : "/" + options.prefix);
    const std::string ns = base + "/namespaces/*";
    const std::string table = ns + "/tables/*";
    auto add = [this](std::string method, const std::string& path,
                      std::function<Response(const Request&, const Params&)> fn) {
      routes.push_back(RouteEntry{std::move(method), Segments(path),
                             [fn](Request& r, const HttpRequest&, const Params& p) { return ToHttp(fn(r, p)); }});
    };
    // A mutation the spec lets carry an Idempotency-Key (idempotency_internal.h): applied at most
    // once per key; `rebuild` answers a commit's record from its metadata file.
    using Rebuild = std::function<Response(const catalog::IdempotencyRecord&, const Params&)>;
    auto keyed = [this](std::string method, const std::string& path, KeyedRecords where,
                        std::function<Response(const Request&, const Params&)> fn, Rebuild rebuild = nullptr) {
      routes.push_back(RouteEntry{
          std::move(method), Segments(path),
          [this, where, fn, rebuild](Request& r, const HttpRequest&, const Params& p) {
            IdempotencyKeys::Rebuild again;
            if (rebuild) again = [&rebuild, &p](const catalog::IdempotencyRecord& record) { return rebuild(record, p); };
            return ToHttp(keys.Run(r, where, [&fn, &p](const Request& req) { return fn(req, p); }, again));
          }});
    };
    constexpr KeyedRecords kCatalog = KeyedRecords::kCatalog;
    constexpr KeyedRecords kMemory = KeyedRecords::kMemory;
    add("POST", "/v1/oauth/tokens", [this](const Request& r, const Params&) { return Token(r); });
    add("GET", "/v1/config", [this](const Request& r, const Params&) { return api.Config(r); });
    add("GET", base + "/namespaces", [this](const Request& r, const Params&) { return api.ListNamespaces(r); });
    keyed("POST", base + "/namespaces", kCatalog, [this](const Request& r, const Params&) { return api.CreateNamespace(r); });
    add("GET", ns, [this](const Request& r, const Params& p) { return api.LoadNamespace(r, p[0]); });
    keyed("DELETE", ns, kCatalog, [this](const Request& r, const Params& p) { return api.DropNamespace(r, p[0]); });
    keyed("POST", ns + "/properties", kCatalog,
        [this](const Request& r, const Params& p) { return api.UpdateNamespaceProperties(r, p[0]); });
    add("GET", ns + "/tables", [this](const Request& r, const Params& p) { return api.ListTables(r, p[0]); });
    keyed("POST", ns + "/tables", kCatalog, [this](const Request& r, const Params& p) { return api.CreateTable(r, p[0]); });
    keyed("POST", ns + "/register", kCatalog,
          [this](const Request& r, const Params& p) { return api.RegisterTable(r, p[0]); });
    add("GET", table, [this](const Request& r, const Params& p) { return api.LoadTable(r, p[0], p[1]); });
    keyed(
        "POST", table, kCatalog, [this](const Request& r, const Params& p) { return api.CommitTable(r, p[0], p[1]); },
        [this](const catalog::IdempotencyRecord& record, const Params& p) {
          return api.CommittedTable(record.metadata_location, p[0], p[1]);
        });
    keyed("DELETE", table, kCatalog, [this](const Request& r, const Params& p) { return api.DropTable(r, p[0], p[1]); });
    keyed("POST", table + "/unregister", kCatalog,
          [this](const Request& r, const Params& p) { return api.UnregisterTable(r, p[0], p[1]); });
    // Signing changes nothing itself: what it signs is bounded to the table's locations.
    add("POST", table + "/sign", [this](const Request& r, const Params& p) { return api.SignRequest(r, p[0], p[1]); });
    add("POST", table + "/metrics", [this](const Request& r, const Params& p) { return api.ReportMetrics(r, p[0], p[1]); });
    // Scan plans are held by the server that made them (another server of the ring makes a plan
    // again from its sealed id); the records of their keys stay in memory.
    keyed("POST", table + "/plan", kMemory,
          [this](const Request& r, const Params& p) { return api.PlanTableScan(r, p[0], p[1]); });
    add("GET", table + "/plan/*",
        [this](const Request& r, const Params& p) { return api.FetchPlanningResult(r, p[0], p[1], p[2]); });
    keyed("DELETE", table + "/plan/*", kMemory,
          [this](const Request& r, const Params& p) { return api.CancelPlanning(r, p[0], p[1], p[2]); });
    keyed("POST", table + "/tasks", kMemory,
          [this](const Request& r, const Params& p) { return api.FetchScanTasks(r, p[0], p[1]); });
    add("POST", base + "/events", [this](const Request& r, const Params&) { return api.QueryEvents(r); });
    routes.push_back(RouteEntry{"GET", Segments(base + "/events/stream"),
                           [this](Request& r, const HttpRequest& h, const Params&) { return EventStream(r, h); }});
    add("GET", ns + "/views", [this](const Request& r, const Params& p) { return api.ListViews(r, p[0]); });
    keyed("POST", ns + "/views", kCatalog, [this](const Request& r, const Params& p) { return api.CreateView(r, p[0]); });
    add("GET", ns + "/views/*", [this](const Request& r, const Params& p) { return api.LoadView(r, p[0], p[1]); });
    keyed("POST", ns + "/views/*", kCatalog,
          [this](const Request& r, const Params& p) { return api.ReplaceView(r, p[0], p[1]); });
    keyed("DELETE", ns + "/views/*", kCatalog,
          [this](const Request& r, const Params& p) { return api.DropView(r, p[0], p[1]); });
    keyed("POST", ns + "/register-view", kCatalog,
          [this](const Request& r, const Params& p) { return api.RegisterView(r, p[0]); });
    keyed("POST", base + "/views/rename", kCatalog, [this](const Request& r, const Params&) { return api.RenameView(r); });
    keyed("POST", base + "/tables/rename", kCatalog, [this](const Request& r, const Params&) { return api.RenameTable(r); });
    keyed("POST", base + "/transactions/commit", kCatalog,
          [this](const Request& r, const Params&) { return api.CommitTransaction(r); });
  }

  void Completed(const HttpRequest& h, int status, double seconds) {
    metrics.Record(h.method, status, seconds);
    if (options.access_log) {
      SKADE_LOG_INFO("rest: {} {} {} {} us", h.method, h.path, status, static_cast<int64_t>(seconds * 1e6));
    }
  }

  void Stop() {
    std::call_once(stopped, [this] {
      // The feed first (its streams end), then the transport (handlers in flight finish).
      streams.Stop();
      if (http) http->Shutdown();
    });
  }
};

RestServer::RestServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RestServer::~RestServer() { Shutdown(); }

int RestServer::port() const { return impl_->http->port(); }

RestStats RestServer::stats() const { return impl_->Stats(); }

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
  HttpOptions http;
  http.host = options.host;
  http.port = options.port;
  http.workers = options.threads;
  http.io_threads = std::max(1, options.io_threads);
  http.max_body_bytes = options.max_body_bytes;
  http.request_timeout = std::max(std::chrono::seconds(1), options.request_timeout);
  http.max_connections = options.max_connections;
  http.max_connections_per_client = options.max_connections_per_client;
  // A balancer's connections carry many clients: bounded in all, not as one client.
  http.unbounded_peers = options.trusted_proxies;
  if (!options.tls_cert_file.empty()) {
    SKADE_ASSIGN_OR_RETURN(http.tls_cert_pem, ReadPem(options.tls_cert_file));
    SKADE_ASSIGN_OR_RETURN(http.tls_key_pem, ReadPem(options.tls_key_file));
  }
  auto impl = std::make_unique<Impl>(catalog, io, std::move(options), bus);
  impl->Route();
  Impl* raw = impl.get();
  HttpCallbacks callbacks;
  callbacks.screen = [raw](const HttpRequest& h) { return raw->Screen(h); };
  callbacks.handler = [raw](HttpRequest& h) { return raw->Handle(h); };
  callbacks.error = [](int status, std::string message) { return TransportError(status, std::move(message)); };
  callbacks.completed = [raw](const HttpRequest& h, int status, double seconds) { raw->Completed(h, status, seconds); };
  auto started = HttpServer::Start(std::move(http), std::move(callbacks));
  if (!started.ok()) {
    impl->streams.Stop();
    return started.status();
  }
  impl->http = std::move(*started);
  impl->serving = impl->http.get();
  return std::unique_ptr<RestServer>(new RestServer(std::move(impl)));
}

}  // namespace skade::rest
