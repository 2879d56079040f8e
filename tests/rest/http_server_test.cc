// The REST catalog's HTTP transport at shutdown (issue 35), on loopback: stopping while clients
// storm the listening socket never aborts the process (libmicrohttpd panicked on its listen
// socket's epoll registration), requests already running finish, and new connections are
// refused from the moment Shutdown begins.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "skade/rest/http_server_internal.h"
#include "tests/testing/poll_until.h"

namespace skade::rest {
namespace {

using namespace std::chrono_literals;

enum class Outcome { kAnswered200, kRefused, kOther };

// One request on a new connection (Connection: close): answered 200, refused at connect, or
// anything else (reset, closed without an answer, 503, no answer within `timeout`).
Outcome RequestOnce(int port, std::chrono::milliseconds timeout = 1s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Outcome::kOther;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const bool refused = errno == ECONNREFUSED;
    ::close(fd);
    return refused ? Outcome::kRefused : Outcome::kOther;
  }
  const std::string request = "GET /work HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::string answer;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      answer.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return answer.rfind("HTTP/1.1 200", 0) == 0 ? Outcome::kAnswered200 : Outcome::kOther;
}

HttpCallbacks Callbacks(std::function<HttpResponse(HttpRequest&)> handler) {
  HttpCallbacks callbacks;
  callbacks.handler = std::move(handler);
  callbacks.error = [](int status, std::string message) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(message);
    r.content_type = "text/plain";
    return r;
  };
  return callbacks;
}

HttpOptions Options() {
  HttpOptions options;
  options.io_threads = 2;
  options.workers = 2;
  return options;
}

// Many start/stop rounds, each stopping while four clients open connection after connection.
// Before the fix, a round's Shutdown aborted the whole process now and then (MHD_PANIC from
// MHD_quiesce_daemon racing the I/O threads' own epoll handling of the listening socket).
TEST(HttpServerTest, StopsUnderConnectStormsWithoutAborting) {
  constexpr int kRounds = 60;
  int answered = 0;
  int refused_after_stop = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto server = HttpServer::Start(Options(), Callbacks([](HttpRequest&) {
                                      HttpResponse r;
                                      r.body = "{}";
                                      return r;
                                    }));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    const int port = (*server)->port();
    std::atomic<bool> stop{false};
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&] {
        while (!stop) {
          if (RequestOnce(port) == Outcome::kAnswered200) ++ok;
        }
      });
    }
    // Stop at a different point of the storm each round.
    std::this_thread::sleep_for(std::chrono::microseconds(500 + 700 * (round % 7)));
    (*server)->Shutdown();
    // Stopped: the port takes no connection.
    const Outcome after = RequestOnce(port);
    stop = true;
    for (std::thread& t : clients) t.join();
    answered += ok;
    refused_after_stop += after == Outcome::kRefused ? 1 : 0;
  }
  EXPECT_GT(answered, 0);
  EXPECT_EQ(refused_after_stop, kRounds);
}

// A request running when Shutdown begins is answered; a connection opened meanwhile is refused
// (not accepted and left waiting); Shutdown returns once the request was answered.
TEST(HttpServerTest, ShutdownFinishesRunningRequestsAndRefusesNewConnections) {
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  auto server = HttpServer::Start(Options(), Callbacks([&](HttpRequest&) {
                                    entered = true;
                                    while (!release) std::this_thread::sleep_for(1ms);
                                    HttpResponse r;
                                    r.body = "{}";
                                    return r;
                                  }));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  std::atomic<int> running_outcome{-1};
  std::thread running([&] { running_outcome = static_cast<int>(RequestOnce(port, 20s)); });
  ASSERT_TRUE(testing::PollUntil([&] { return entered.load(); }, 10s));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    (*server)->Shutdown();
    stopped = true;
  });
  // While the handler still runs, new connections are refused.
  EXPECT_TRUE(testing::PollUntil([&] { return RequestOnce(port) == Outcome::kRefused; }, 10s));
  EXPECT_FALSE(stopped);
  release = true;
  running.join();
  stopper.join();
  EXPECT_EQ(running_outcome, static_cast<int>(Outcome::kAnswered200));
  EXPECT_TRUE(stopped);
}

}  // namespace
}  // namespace skade::rest
