// rest_transport_bench: the REST catalog's HTTP transport under connection pressure (issue 31,
// item 12). In one process, for each transport: the REST server (libmicrohttpd, event-driven)
// and, as the old one, a cpp-httplib server set up as the REST server was before (a pool of
// --threads threads, keep-alive, TCP_NODELAY, 30 s read timeout) serving the same /v1/config
// body.
//   1. a probe client's GET /v1/config latency (p50, p99, max, failures) for D seconds, alone
//      and then during a slowloris attack of S connections trickling a request head;
//   2. C closed-loop keep-alive clients (all connected before the clock starts) on GET
//      /v1/config for D seconds: req/s, p99 and failed requests (hang-ups, timeouts).
//   rest_transport_bench [--threads 8] [--attackers 64] [--clients 64] [--seconds 5]
//                        [--transport both|new|old]
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <barrier>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

#include "bench/bench_catalog.h"
#include "bench/bench_util.h"
#include "skade/rest/server.h"

namespace skade::bench {
namespace {

struct Probe {
  int64_t requests = 0;
  int64_t failures = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};

// One client sending GET /v1/config back to back on a keep-alive connection for `seconds`.
Probe RunProbe(int port, double seconds) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(10, 0);
  std::vector<double> ms;
  Probe p;
  const double until = NowSeconds() + seconds;
  while (NowSeconds() < until) {
    const double t0 = NowSeconds();
    auto res = client.Get("/v1/config");
    ms.push_back((NowSeconds() - t0) * 1e3);
    if (!res || res->status != 200) ++p.failures;
  }
  p.requests = static_cast<int64_t>(ms.size());
  p.p50_ms = Percentile(ms, 50);
  p.p99_ms = Percentile(ms, 99);
  p.max_ms = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  return p;
}

// `n` connections each sending a request head one byte every 100 ms until `stop`.
class Slowloris {
 public:
  Slowloris(int port, int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, port] {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
          if (fd >= 0) ::close(fd);
          return;
        }
        const std::string head = "GET /v1/config HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        ++connected_;
        for (size_t k = 0; !stop_; ++k) {
          if (::send(fd, head.data() + k % head.size(), 1, MSG_NOSIGNAL) != 1) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ::close(fd);
      });
    }
    const double until = NowSeconds() + 5;
    while (connected_ < n && NowSeconds() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~Slowloris() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int connected() const { return connected_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> connected_{0};
  std::vector<std::thread> threads_;
};

struct Throughput {
  double per_second = 0, p99_ms = 0;
  int64_t requests = 0, failures = 0, unconnected = 0;
};

// `clients` keep-alive clients, each connected (one request) before the clock starts.
Throughput RunClients(int port, int clients, double seconds) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int64_t> failures{0}, unconnected{0};
  std::atomic<double> start{0};
  std::barrier ready(clients + 1);
  std::barrier go(clients + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(5, 0);
      auto first = client.Get("/v1/config");
      if (!first || first->status != 200) ++unconnected;
      ready.arrive_and_wait();
      go.arrive_and_wait();
      const double until = start.load() + seconds;
      while (NowSeconds() < until) {
        const double t0 = NowSeconds();
        auto res = client.Get("/v1/config");
        latencies[c].push_back((NowSeconds() - t0) * 1e3);
        if (!res || res->status != 200) ++failures;
      }
    });
  }
  ready.arrive_and_wait();
  start = NowSeconds();
  go.arrive_and_wait();
  for (auto& t : threads) t.join();
  const double elapsed = NowSeconds() - start.load();
  std::vector<double> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  Throughput t;
  t.requests = static_cast<int64_t>(all.size());
  t.per_second = static_cast<double>(all.size() - static_cast<size_t>(failures.load())) / elapsed;
  t.p99_ms = Percentile(all, 99);
  t.failures = failures;
  t.unconnected = unconnected;
  return t;
}

void Report(const std::string& transport, int port, int attackers, int clients, double seconds) {
  Probe alone = RunProbe(port, seconds);
  std::cout << transport << " | probe alone | " << alone.requests << " requests, p50 " << alone.p50_ms << " ms, p99 "
            << alone.p99_ms << " ms, max " << alone.max_ms << " ms, failed " << alone.failures << "\n";
  {
    Slowloris attack(port, attackers);
    Probe during = RunProbe(port, seconds);
    std::cout << transport << " | probe during slowloris (" << attack.connected() << " connections) | "
              << during.requests << " requests, p50 " << during.p50_ms << " ms, p99 " << during.p99_ms << " ms, max "
              << during.max_ms << " ms, failed " << during.failures << "\n";
  }
  Throughput t = RunClients(port, clients, seconds);
  std::cout << transport << " | " << clients << " keep-alive clients | " << static_cast<int64_t>(t.per_second)
            << " req/s ok, p99 " << t.p99_ms << " ms, " << t.requests << " requests, failed " << t.failures
            << ", clients never served " << t.unconnected << "\n";
}

Status Run(const std::string& dir, const std::string& transport, int threads, int attackers, int clients,
           double seconds) {
  SKADE_ASSIGN_OR_RETURN(BenchCatalog bench, OpenBenchCatalog(dir));
  std::string config_body;
  if (transport == "both" || transport == "new") {
    rest::RestOptions options;
    options.port = 0;
    options.threads = threads;
    SKADE_ASSIGN_OR_RETURN(auto server, rest::RestServer::Start(*bench.catalog, *bench.io, options));
    httplib::Client c("127.0.0.1", server->port());
    auto res = c.Get("/v1/config");
    if (!res || res->status != 200) return Status::Internal("GET /v1/config failed");
    config_body = res->body;
    Report("new (libmicrohttpd)", server->port(), attackers, clients, seconds);
    server->Shutdown();
  }
  if (transport == "both" || transport == "old") {
    if (config_body.empty()) config_body = R"({"defaults":{},"overrides":{}})";
    // The old transport as server.cc set it up on cpp-httplib.
    httplib::Server old;
    old.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    old.set_tcp_nodelay(true);
    old.set_keep_alive_max_count(10000);
    old.set_read_timeout(30, 0);
    old.set_write_timeout(30, 0);
    old.Get("/v1/config", [&](const httplib::Request&, httplib::Response& r) { r.set_content(config_body, "application/json"); });
    const int port = old.bind_to_any_port("127.0.0.1");
    if (port <= 0) return Status::Unavailable("cannot bind the old transport");
    std::thread loop([&] { old.listen_after_bind(); });
    Report("old (cpp-httplib)", port, attackers, clients, seconds);
    old.stop();
    loop.join();
  }
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"REST transport: a probe's latency during slowloris, keep-alive clients' rate"};
  int threads = 8, attackers = 64, clients = 64;
  double seconds = 5;
  std::string transport = "both";
  app.add_option("--threads", threads, "server request threads (--rest-threads)")->capture_default_str();
  app.add_option("--attackers", attackers, "slowloris connections")->capture_default_str();
  app.add_option("--clients", clients, "keep-alive clients")->capture_default_str();
  app.add_option("--seconds", seconds, "seconds per measurement")->capture_default_str();
  app.add_option("--transport", transport, "both | new | old")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::string pattern = (std::filesystem::temp_directory_path() / "skade-rest-transport-bench.XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return 1;
  skade::Status st = skade::bench::Run(pattern, transport, threads, attackers, clients, seconds);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    std::cerr << "rest_transport_bench: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
