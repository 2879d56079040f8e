// Loopback servers for the HTTP client and S3 tests: a cpp-httplib server on 127.0.0.1 port 0
// run on its own thread, and a raw TCP server that answers every connection with fixed bytes
// (for responses no HTTP library would send, such as a body shorter than its Content-Length).
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace skade::testing {

// Not thread-safe to configure; handlers run on the server's threads.
class HttplibServer {
 public:
  HttplibServer() {
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(1000);
  }
  ~HttplibServer() { Stop(); }

  httplib::Server& server() { return server_; }

  // Binds 127.0.0.1 on a free port and serves on a thread; the port (> 0 on success).
  int Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return port_;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so wait for it (bounded).
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return port_;
  }
  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  int port() const { return port_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

// Accepts connections on 127.0.0.1 (free port), reads each request's header block, writes
// `response` and closes the connection.
class RawServer {
 public:
  explicit RawServer(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~RawServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  void Run() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd cp{c, POLLIN, 0};
        if (::poll(&cp, 1, 2000) <= 0) break;
        ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      size_t done = 0;
      while (done < response_.size()) {
        ssize_t n = ::send(c, response_.data() + done, response_.size() - done, MSG_NOSIGNAL);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(c);
    }
  }

  std::string response_;
  int fd_ = -1;
  int port_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace skade::testing
