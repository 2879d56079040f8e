// The REST catalog's HTTP transport on libmicrohttpd (MHD): poll() I/O threads, a worker pool for
// whole requests (their connections suspended meanwhile), streamed bodies that park their
// connection while nothing is queued, and a watchdog for requests that arrive too slowly.
#include "skade/rest/http_server_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "skade/base/ascii.h"
#include "skade/base/clock.h"
#include "skade/base/forwarded.h"
#include "skade/base/log.h"
#include "skade/base/url.h"

namespace skade::rest {

// ---- StreamSink ----

// Write and End resume a parked connection after unlocking: MHD may free the response (and call
// Release, which locks) under its own lock, so this lock is never held while taking MHD's. A
// parked connection stays suspended until this resume, so it cannot go away in between.
bool StreamSink::Write(std::string_view bytes) {
  MHD_Connection* resume = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_ || closed_) return false;
    pending_.append(bytes);
    if (parked_) {
      parked_ = false;
      resume = connection_;
    }
  }
  if (resume != nullptr) MHD_resume_connection(resume);
  return true;
}

void StreamSink::End() {
  MHD_Connection* resume = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    if (parked_) {
      parked_ = false;
      resume = connection_;
    }
  }
  if (resume != nullptr) MHD_resume_connection(resume);
}

size_t StreamSink::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size() - offset_;
}

bool StreamSink::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void StreamSink::Bind(MHD_Connection* connection, bool stopping) {
  std::lock_guard<std::mutex> lock(mu_);
  connection_ = connection;
  if (stopping) ended_ = true;
}

long StreamSink::Take(char* out, size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offset_ < pending_.size()) {
    const size_t n = std::min(max, pending_.size() - offset_);
    std::memcpy(out, pending_.data() + offset_, n);
    offset_ += n;
    if (offset_ == pending_.size()) {
      pending_.clear();
      offset_ = 0;
    }
    return static_cast<long>(n);
  }
  if (ended_ || connection_ == nullptr) return MHD_CONTENT_READER_END_OF_STREAM;
  // Nothing to send: the connection leaves the event loop (MHD allows suspending from a content
  // reader) until Write or End resumes it, so a quiet stream costs no thread and no polling.
  parked_ = true;
  MHD_suspend_connection(connection_);
  return 0;
}

void StreamSink::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  parked_ = false;
  connection_ = nullptr;
}

namespace {

// A listening socket, closed unless handed over.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Socket() { Reset(); }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Binds and listens on host:port. SO_REUSEADDR lets a restart bind while old connections are
// in TIME_WAIT; SO_REUSEPORT is never set, so a port in use fails here (issue 31, item 3)
// instead of splitting clients between two servers.
Result<Socket> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status::Unavailable("cannot listen on " + host + ":" + service + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (s.get() < 0) {
      error = std::strerror(errno);
      continue;
    }
    int yes = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(s.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.get(), 511) != 0) {
      error = std::strerror(errno);
      continue;
    }
    return s;
  }
  return Status::Unavailable("cannot listen on " + host + ":" + service + ": " + error);
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

std::string AddressText(const sockaddr* addr);

// The canonical form of a peer's address (an IPv4-mapped IPv6 address as IPv4), as trusted
// proxies are written.
std::string PeerOf(const sockaddr* addr) {
  const std::string text = AddressText(addr);
  return CanonicalIpAddress(text).value_or(text);
}

std::string AddressText(const sockaddr* addr) {
  if (addr == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof(text));
  } else if (addr->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, text, sizeof(text));
  }
  return text;
}

// Threads running whole requests. Thread-safe.
class WorkerPool {
 public:
  struct Task {
    std::function<void()> run;
    std::function<void()> cancel;  // instead of run, when the pool closes first
  };

  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkerPool() { Close(); }

  // Under the pool's lock (so that Close cannot slip in between): `before`, then queues the
  // task. False, and nothing called, once the pool is closed.
  bool Post(Task task, const std::function<void()>& before) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    before();
    queue_.push_back(std::move(task));
    cv_.notify_one();
    return true;
  }

  // Takes no more tasks, cancels the queued ones and waits for the running ones.
  void Close() {
    std::deque<Task> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      closed_ = true;
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (Task& t : dropped) t.cancel();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Loop() {
    while (true) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task.run();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

// What a connection is doing, for the watchdog.
enum class Phase {
  kWaiting,  // for a request to arrive whole (since it opened or since its last response)
  kBusy,     // a request arrived whole: handled, answered or streaming
};

struct ConnectionState {
  int fd = -1;
  std::string peer;  // canonical IP address
  Phase phase = Phase::kWaiting;
  int64_t since_ns = 0;
  bool cut = false;  // shut down by the watchdog
};

// One request and its answer, from its request line (MHD's URI callback) to the notification
// that it completed.
struct Exchange {
  MHD_Connection* connection = nullptr;
  std::string raw_uri;
  HttpRequest request;
  bool headers_seen = false;
  bool refused = false;            // answered early: the rest of its body is dropped
  bool handled = false;            // handed to a worker (counted in Impl::unsent_answers)
  std::optional<HttpResponse> screened;  // answer once the body has been read
  std::optional<HttpResponse> ready;     // the worker's answer, queued when the connection resumes
  int status = 0;
  int64_t started_ns = 0;
};

// A streamed body's response holds this (MHD's content reader closure).
struct StreamBinding {
  HttpServer::Impl* server;
  std::shared_ptr<StreamSink> sink;
};

}  // namespace

struct HttpServer::Impl {
  HttpOptions options;
  HttpCallbacks callbacks;
  int port = 0;
  MHD_Daemon* daemon = nullptr;
  std::unique_ptr<WorkerPool> pool;
  std::atomic<bool> stopping{false};
  // How long Stop waits for the answers of requests that reached a worker to be sent.
  static constexpr std::chrono::seconds kAnswerGrace{1};

  std::mutex answers_mu;
  std::condition_variable answers_cv;
  int unsent_answers = 0;  // requests handed to a worker whose exchange has not completed
  std::once_flag stopped;

  std::mutex connections_mu;
  std::condition_variable watchdog_cv;
  bool watchdog_stop = false;
  std::map<ConnectionState*, std::unique_ptr<ConnectionState>> connections;
  std::map<std::string, int> per_peer;  // open connections by peer (guarded by connections_mu)
  std::thread watchdog;

  std::mutex sinks_mu;
  bool sinks_closed = false;
  std::set<std::shared_ptr<StreamSink>> sinks;

  // ---- MHD callbacks (static trampolines into the Impl) ----

  static void Log(void*, const char* format, va_list args) {
    char text[512];
    std::vsnprintf(text, sizeof(text), format, args);
    std::string line = text;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    SKADE_LOG_DEBUG("rest: http: {}", line);
  }

  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto state = std::make_unique<ConnectionState>();
      const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      state->fd = info != nullptr ? info->connect_fd : -1;
      state->since_ns = MonotonicNanos();
      if (state->fd >= 0) {
        // TOOLCHAIN.md §7: without TCP_NODELAY small keep-alive responses wait on delayed ACKs.
        int yes = 1;
        ::setsockopt(state->fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
      }
      const MHD_ConnectionInfo* address = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      state->peer = PeerOf(address != nullptr ? address->client_addr : nullptr);
      *socket_context = state.get();
      std::lock_guard<std::mutex> lock(self->connections_mu);
      ++self->per_peer[state->peer];
      self->connections.emplace(state.get(), std::move(state));
    } else {
      // Before MHD closes the descriptor: the watchdog never shuts down a reused one.
      auto* state = static_cast<ConnectionState*>(*socket_context);
      *socket_context = nullptr;
      if (state == nullptr) return;
      std::lock_guard<std::mutex> lock(self->connections_mu);
      auto peer = self->per_peer.find(state->peer);
      if (peer != self->per_peer.end() && --peer->second <= 0) self->per_peer.erase(peer);
      self->connections.erase(state);
    }
  }

  // The per-client bound, in place of MHD's own (which cannot spare a proxy): a new connection
  // from a peer already holding max_connections_per_client is closed at once. Connections are
  // counted once MHD starts them, so accepts racing on the I/O threads may pass the bound by
  // at most one each.
  static MHD_Result OnAccept(void* cls, const sockaddr* addr, socklen_t) {
    auto* self = static_cast<Impl*>(cls);
    const int bound = self->options.max_connections_per_client;
    if (bound <= 0) return MHD_YES;
    const std::string peer = PeerOf(addr);
    const auto& unbounded = self->options.unbounded_peers;
    if (std::find(unbounded.begin(), unbounded.end(), peer) != unbounded.end()) return MHD_YES;
    std::lock_guard<std::mutex> lock(self->connections_mu);
    auto it = self->per_peer.find(peer);
    return it != self->per_peer.end() && it->second >= bound ? MHD_NO : MHD_YES;
  }

  void SetPhase(MHD_Connection* connection, Phase phase) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == nullptr || info->socket_context == nullptr) return;
    auto* state = static_cast<ConnectionState*>(info->socket_context);
    std::lock_guard<std::mutex> lock(connections_mu);
    state->phase = phase;
    state->since_ns = MonotonicNanos();
  }

  // Closes connections whose request did not arrive whole in time (slowloris, idle keep-alive):
  // shutdown() makes MHD's next read see the end, and MHD closes the connection itself.
  void Watch() {
    const int64_t limit_ns = static_cast<int64_t>(options.request_timeout.count()) * 1'000'000'000;
    std::unique_lock<std::mutex> lock(connections_mu);
    while (!watchdog_stop) {
      watchdog_cv.wait_for(lock, std::chrono::milliseconds(500));
      const int64_t now = MonotonicNanos();
      for (auto& [key, state] : connections) {
        if (!state->cut && state->phase == Phase::kWaiting && now - state->since_ns > limit_ns && state->fd >= 0) {
          ::shutdown(state->fd, SHUT_RDWR);
          state->cut = true;
        }
      }
    }
  }

  static void* OnUri(void*, const char* uri, MHD_Connection* connection) {
    auto exchange = std::make_unique<Exchange>();
    exchange->connection = connection;
    exchange->raw_uri = uri != nullptr ? uri : "";
    return exchange.release();  // owned by MHD's request context until OnCompleted
  }

  static void OnCompleted(void* cls, MHD_Connection* connection, void** context, MHD_RequestTerminationCode) {
    auto* self = static_cast<Impl*>(cls);
    std::unique_ptr<Exchange> exchange(static_cast<Exchange*>(*context));
    *context = nullptr;
    if (exchange != nullptr && exchange->handled) {
      std::lock_guard<std::mutex> lock(self->answers_mu);
      if (--self->unsent_answers == 0) self->answers_cv.notify_all();
    }
    self->SetPhase(connection, Phase::kWaiting);
    if (exchange == nullptr || !exchange->headers_seen || exchange->status == 0) return;
    const double seconds = static_cast<double>(MonotonicNanos() - exchange->started_ns) / 1e9;
    if (self->callbacks.completed) self->callbacks.completed(exchange->request, exchange->status, seconds);
  }

  static ssize_t ReadStream(void* cls, uint64_t, char* out, size_t max) {
    return static_cast<StreamBinding*>(cls)->sink->Take(out, max);
  }

  static void FreeStream(void* cls) {
    std::unique_ptr<StreamBinding> binding(static_cast<StreamBinding*>(cls));
    binding->sink->Release();
    std::lock_guard<std::mutex> lock(binding->server->sinks_mu);
    binding->server->sinks.erase(binding->sink);
  }

  // Queues `response` on the connection (only from the access handler). Its status is what the
  // completion reports.
  MHD_Result Queue(Exchange& exchange, HttpResponse response) {
    MHD_Connection* connection = exchange.connection;
    MHD_Response* r = nullptr;
    if (response.stream) {
      auto binding = std::make_unique<StreamBinding>(StreamBinding{this, response.stream});
      r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 << 10, &ReadStream, binding.get(), &FreeStream);
      if (r == nullptr) {
        response.stream->Release();
        return MHD_NO;
      }
      bool stop;
      {
        std::lock_guard<std::mutex> lock(sinks_mu);
        stop = sinks_closed;
        sinks.insert(response.stream);
      }
      response.stream->Bind(connection, stop);
      binding.release();  // freed by FreeStream
    } else {
      r = MHD_create_response_from_buffer(response.body.size(), response.body.data(), MHD_RESPMEM_MUST_COPY);
      if (r == nullptr) return MHD_NO;
    }
    if (response.stream || !response.body.empty()) {
      const std::string type = response.content_type.empty() ? "application/json" : response.content_type;
      MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type.c_str());
    }
    for (const auto& [name, value] : response.headers) {
      MHD_add_response_header(r, name.c_str(), value.c_str());
    }
    exchange.status = response.status;
    SetPhase(connection, Phase::kBusy);
    const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(response.status), r);
    MHD_destroy_response(r);
    return queued;
  }

  // The request line and headers: everything but the body.
  void ReadHead(Exchange& ex, const char* method) {
    HttpRequest& r = ex.request;
    r.method = method != nullptr ? method : "";
    const std::string_view uri = ex.raw_uri;
    const size_t question = uri.find('?');
    r.path = PercentDecode(uri.substr(0, question), false);
    if (question != std::string_view::npos) {
      for (auto& [k, v] : ParseQueryString(uri.substr(question + 1))) r.query.emplace(std::move(k), std::move(v));
    }
    MHD_get_connection_values(
        ex.connection, MHD_HEADER_KIND,
        [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
          static_cast<HttpRequest*>(cls)->headers.emplace(AsciiLower(key != nullptr ? key : ""), value != nullptr ? value : "");
          return MHD_YES;
        },
        &r);
    const MHD_ConnectionInfo* info = MHD_get_connection_info(ex.connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info != nullptr) r.client_address = AddressText(info->client_addr);
  }

  // A reason to refuse the request's framing or text outright, before its body: request
  // smuggling needs a front and a back that disagree on where a request ends, so anything
  // ambiguous is refused (RFC 9112 §6.1, §6.3: both Content-Length and Transfer-Encoding,
  // several lengths, a transfer coding other than chunked). NUL characters would be cut
  // wherever a name becomes a C string.
  std::optional<std::pair<int, std::string>> Refusal(const Exchange& ex) {
    const HttpRequest& r = ex.request;
    int lengths = 0;
    MHD_get_connection_values(
        ex.connection, MHD_HEADER_KIND,
        [](void* cls, MHD_ValueKind, const char* key, const char*) -> MHD_Result {
          if (key != nullptr && AsciiLower(key) == "content-length") ++*static_cast<int*>(cls);
          return MHD_YES;
        },
        &lengths);
    const auto te = r.headers.find("transfer-encoding");
    if (te != r.headers.end()) {
      if (lengths > 0) return std::pair(400, std::string("a request may not carry both Content-Length and Transfer-Encoding"));
      if (AsciiLower(te->second) != "chunked") return std::pair(501, "unsupported transfer coding '" + te->second + "'");
    }
    if (lengths > 1) return std::pair(400, std::string("a request may carry one Content-Length"));
    if (lengths == 1) {
      const std::string& text = r.headers.at("content-length");
      if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::pair(400, std::string("a malformed Content-Length"));
      }
      if (std::stoull(text) > options.max_body_bytes) return std::pair(413, std::string("the request body is too large"));
    }
    auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
    if (has_nul(r.path) || std::any_of(r.query.begin(), r.query.end(), [&](const auto& kv) {
          return has_nul(kv.first) || has_nul(kv.second);
        })) {
      return std::pair(400, std::string("NUL characters are not allowed in the path or the query"));
    }
    return std::nullopt;
  }

  static bool ExpectsBody(const HttpRequest& r) {
    if (r.headers.count("transfer-encoding")) return true;
    auto cl = r.headers.find("content-length");
    return cl != r.headers.end() && cl->second != "0";
  }

  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char*, const char* method, const char*,
                              const char* upload_data, size_t* upload_data_size, void** context) {
    auto* self = static_cast<Impl*>(cls);
    auto* ex = static_cast<Exchange*>(*context);
    if (ex == nullptr) return MHD_NO;  // MHD always calls OnUri first; close if it did not
    ex->connection = connection;
    if (!ex->headers_seen) {
      ex->headers_seen = true;
      ex->started_ns = MonotonicNanos();
      self->ReadHead(*ex, method);
      if (auto refusal = self->Refusal(*ex)) {
        // Answered now: MHD reads nothing more of this request and closes the connection after.
        ex->refused = true;
        return self->Queue(*ex, self->callbacks.error(refusal->first, std::move(refusal->second)));
      }
      if (self->stopping) {
        ex->screened = self->callbacks.error(503, "the server is shutting down");
      } else if (self->callbacks.screen) {
        ex->screened = self->callbacks.screen(ex->request);
      }
      if (ex->screened && !ExpectsBody(ex->request)) return self->Queue(*ex, std::move(*ex->screened));
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      if (!ex->refused && !ex->screened) {
        if (ex->request.body.size() + *upload_data_size > self->options.max_body_bytes) {
          // A chunked body past the limit (a declared length was checked up front): the rest is
          // read and dropped (MHD answers nothing in the middle of a body), within the request
          // timeout, and 413 follows.
          std::string().swap(ex->request.body);
          ex->screened = self->callbacks.error(413, "the request body is too large");
          *upload_data_size = 0;
          return MHD_YES;
        }
        ex->request.body.append(upload_data, *upload_data_size);
      }
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (ex->refused) return MHD_YES;  // its answer is queued already
    if (ex->ready) return self->Queue(*ex, std::move(*std::exchange(ex->ready, std::nullopt)));
    if (ex->screened) return self->Queue(*ex, std::move(*std::exchange(ex->screened, std::nullopt)));
    // The request is whole: a worker handles it while the connection is suspended, so this I/O
    // thread goes on serving every other connection.
    self->SetPhase(connection, Phase::kBusy);
    WorkerPool::Task task;
    task.run = [self, ex, connection] {
      HttpResponse response;
      try {
        response = self->callbacks.handler(ex->request);
      } catch (const std::exception& e) {
        response = self->callbacks.error(500, e.what());
      } catch (...) {
        response = self->callbacks.error(500, "internal error");
      }
      ex->ready = std::move(response);
      MHD_resume_connection(connection);
    };
    task.cancel = [self, ex, connection] {
      ex->ready = self->callbacks.error(503, "the server is shutting down");
      MHD_resume_connection(connection);
    };
    const bool posted = self->pool->Post(std::move(task), [self, ex, connection] {
      ex->handled = true;
      {
        std::lock_guard<std::mutex> lock(self->answers_mu);
        ++self->unsent_answers;
      }
      MHD_suspend_connection(connection);
    });
    if (!posted) {
      return self->Queue(*ex, self->callbacks.error(503, "the server is shutting down"));
    }
    return MHD_YES;
  }

  void Stop() {
    std::call_once(stopped, [this] {
      stopping = true;
      // No new connections. MHD_quiesce_daemon hands the listening socket back to us (safe in
      // poll mode only; see Start) but the I/O threads may still poll it until MHD_stop_daemon,
      // so it stays open until then (microhttpd.h). shutdown() makes it stop listening at once
      // (Linux disconnects a listening socket shut for reading): connections now opened are
      // refused rather than left in the backlog until the running requests finish, and a
      // thread still polling it finds accept() failing with EINVAL, which MHD passes over.
      Socket listener;
      if (daemon != nullptr) {
        listener = Socket(MHD_quiesce_daemon(daemon));
        if (listener.get() >= 0) ::shutdown(listener.get(), SHUT_RDWR);
      }
      // Running handlers finish and resume their connections; queued ones are answered 503.
      if (pool) pool->Close();
      // Streams end (a parked one resumes to send its last chunk): MHD must not be stopped with
      // a suspended connection.
      std::vector<std::shared_ptr<StreamSink>> open;
      {
        std::lock_guard<std::mutex> lock(sinks_mu);
        sinks_closed = true;
        open.assign(sinks.begin(), sinks.end());
      }
      for (const auto& sink : open) sink->End();
      // The workers' answers are queued when their connections resume, in the I/O threads, and
      // MHD_stop_daemon would close those connections before the answers went out: they get a
      // moment to be sent. A client that does not read its answer is not waited for past it.
      {
        std::unique_lock<std::mutex> lock(answers_mu);
        answers_cv.wait_for(lock, kAnswerGrace, [this] { return unsent_answers == 0; });
      }
      // Closes every connection, slow or not, and joins the I/O threads; then the listening
      // socket can be closed.
      if (daemon != nullptr) MHD_stop_daemon(daemon);
      daemon = nullptr;
      listener.Reset();
      {
        std::lock_guard<std::mutex> lock(connections_mu);
        watchdog_stop = true;
      }
      watchdog_cv.notify_all();
      if (watchdog.joinable()) watchdog.join();
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Shutdown(); }

int HttpServer::port() const { return impl_->port; }

int64_t HttpServer::connections() const {
  std::lock_guard<std::mutex> lock(impl_->connections_mu);
  return static_cast<int64_t>(impl_->connections.size());
}

void HttpServer::Shutdown() { impl_->Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpOptions options, HttpCallbacks callbacks) {
  if (options.workers <= 0 || options.io_threads <= 0) {
    return Status::InvalidArgument("the HTTP server needs at least one worker and one I/O thread");
  }
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return Status::InvalidArgument("TLS needs both a certificate and a key");
  }
  if (!callbacks.handler || !callbacks.error) return Status::InvalidArgument("the HTTP server needs a handler");
  const bool tls = !options.tls_cert_pem.empty();
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    return Status::InvalidArgument("this libmicrohttpd has no TLS support");
  }
  SKADE_ASSIGN_OR_RETURN(Socket listener, Listen(options.host, options.port));
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->callbacks = std::move(callbacks);
  impl->port = BoundPort(listener.get());
  const HttpOptions& o = impl->options;
  impl->pool = std::make_unique<WorkerPool>(o.workers);

  // poll(), not epoll: Stop needs MHD_quiesce_daemon, and in epoll mode with a thread pool
  // libmicrohttpd 0.9.75 takes the listening socket out of each I/O thread's epoll set from the
  // calling thread while that thread, seeing the quiesce, may take it out itself; the loser's
  // epoll_ctl fails with ENOENT and MHD aborts the process ("Failed to remove listen FD from
  // epoll set", issue 35; about one stop in 400 under a connect storm). In poll mode quiescing
  // only raises a flag and wakes the threads through their ITC (MHD_ALLOW_SUSPEND_RESUME
  // includes MHD_USE_ITC, which quiescing requires). Connections still hold no thread; each
  // wake-up walks its thread's connections (at most max_connections in all), leaving out the
  // suspended ones (requests with a worker, parked streams).
  unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (tls) flags |= MHD_USE_TLS;
  std::vector<MHD_OptionItem> tls_items;
  if (tls) {
    tls_items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(o.tls_key_pem.c_str())});
    tls_items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(o.tls_cert_pem.c_str())});
  }
  tls_items.push_back({MHD_OPTION_END, 0, nullptr});
  const int fd = listener.get();
  Impl* raw = impl.get();
  impl->daemon = MHD_start_daemon(
      flags, 0, &Impl::OnAccept, raw, &Impl::OnRequest, raw,
      MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(fd),
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(o.io_threads),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(std::max(1, o.max_connections)),
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(o.request_timeout.count()),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(o.max_header_bytes),
      MHD_OPTION_URI_LOG_CALLBACK, &Impl::OnUri, raw,
      MHD_OPTION_NOTIFY_COMPLETED, &Impl::OnCompleted, raw,
      MHD_OPTION_NOTIFY_CONNECTION, &Impl::OnConnection, raw,
      MHD_OPTION_EXTERNAL_LOGGER, &Impl::Log, raw,
      MHD_OPTION_ARRAY, tls_items.data(),
      MHD_OPTION_END);
  if (impl->daemon == nullptr) {
    impl->pool->Close();
    if (tls) return Status::InvalidArgument("cannot start HTTPS: the TLS certificate or key is not usable");
    return Status::Unavailable("cannot start the HTTP server on " + o.host + ":" + std::to_string(impl->port));
  }
  listener.Release();  // MHD's now (and ours again after MHD_quiesce_daemon, in Stop)
  impl->watchdog = std::thread([raw] { raw->Watch(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

}  // namespace skade::rest
