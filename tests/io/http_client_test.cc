// HttpClient against loopback servers: keep-alive reuse, concurrency, timeouts, the retry
// policy with Retry-After, refused connections and truncated bodies.
#include "skade/io/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "tests/io/test_servers.h"

namespace skade::io {
namespace {

using namespace std::chrono_literals;
using testing::HttplibServer;
using testing::RawServer;

HttpClientOptions FastRetries(int attempts) {
  HttpClientOptions o;
  o.retry.max_attempts = attempts;
  o.retry.initial_backoff = 5ms;
  o.retry.max_backoff = 20ms;
  return o;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HttpClientTest, ReusesKeepAliveConnection) {
  HttplibServer server;
  server.server().Get("/port", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(std::to_string(req.remote_port), "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make();
  std::set<std::string> ports;
  for (int i = 0; i < 5; ++i) {
    HttpRequest req;
    req.url = server.Url() + "/port";
    Result<HttpResponse> r = client->Send(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    ports.insert(r->body);
  }
  EXPECT_EQ(ports.size(), 1u) << "sequential requests should share one connection";
}

TEST(HttpClientTest, SendsMethodHeadersAndBodyAndReadsHeadersIgnoringCase) {
  HttplibServer server;
  server.server().Put("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Got-Header", req.get_header_value("x-custom"));
    res.set_header("X-Content-Type", req.get_header_value("Content-Type"));
    res.set_header("X-Expect", req.get_header_value("Expect"));
    res.set_content(req.method + ":" + req.body, "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make();
  const std::string body(200'000, 'z');  // above libcurl's Expect: 100-continue size
  HttpRequest req;
  req.method = "PUT";
  req.url = server.Url() + "/echo";
  req.headers.Add("X-Custom", "value 1");
  req.body = body;
  Result<HttpResponse> r = client->Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "PUT:" + body);
  EXPECT_EQ(r->headers.Get("x-got-header").value_or(""), "value 1");
  EXPECT_EQ(r->headers.Get("X-GOT-HEADER").value_or(""), "value 1");
  EXPECT_EQ(r->headers.Get("x-content-type").value_or("?"), "");
  EXPECT_EQ(r->headers.Get("x-expect").value_or("?"), "");
  EXPECT_FALSE(r->headers.Get("no-such-header").has_value());
}

TEST(HttpClientTest, ConcurrentRequestsFromManyThreads) {
  HttplibServer server;
  server.server().Get(R"(/n/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.matches[1].str(), "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make();
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        HttpRequest req;
        const std::string n = std::to_string(t * 100 + i);
        req.url = server.Url() + "/n/" + n;
        Result<HttpResponse> r = client->Send(req);
        if (r.ok() && r->status == 200 && r->body == n) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 80);
}

TEST(HttpClientTest, TimeoutIsUnavailable) {
  // The handler answers only when the test is over (or after 20 s): the client's 200 ms
  // timeout, retried once, must end the call long before.
  std::atomic<bool> over{false};
  HttplibServer server;
  server.server().Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 2000 && !over; ++i) std::this_thread::sleep_for(10ms);
    res.set_content("late", "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  struct Over {
    std::atomic<bool>& over;
    ~Over() { over = true; }
  } release{over};
  auto client = HttpClient::Make(FastRetries(1));
  HttpRequest req;
  req.url = server.Url() + "/slow";
  req.timeout = 200ms;
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> r = client->Send(req);
  EXPECT_LT(SecondsSince(start), 5.0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("/slow"), std::string::npos) << r.status().message();
}

TEST(HttpClientTest, RetriesServerErrorsThenSucceeds) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Get("/flaky", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls <= 2) {
      res.status = 503;
      return;
    }
    res.set_content("ok", "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make(FastRetries(4));
  HttpRequest req;
  req.url = server.Url() + "/flaky";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(calls.load(), 3);
}

TEST(HttpClientTest, GivesUpAfterMaxAttemptsAndReturnsLastResponse) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Get("/down", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 500;
  });
  server.server().Get("/missing", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 404;
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make(FastRetries(3));
  HttpRequest req;
  req.url = server.Url() + "/down";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(calls.load(), 3);
  // A 404 is an answer, not a failure: never retried.
  req.url = server.Url() + "/missing";
  r = client->Send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->attempts, 1);
}

TEST(HttpClientTest, PostIsRetriedOnlyWhenTheCallerAllows) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Post("/p", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 503;
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make(FastRetries(3));
  HttpRequest req;
  req.method = "POST";
  req.url = server.Url() + "/p";
  req.body = "x";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempts, 1);
  req.retry = RetryMode::kAlways;
  r = client->Send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(calls.load(), 4);
}

TEST(HttpClientTest, HonoursRetryAfter) {
  HttplibServer server;
  std::atomic<int> calls{0};
  server.server().Get("/busy", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      return;
    }
    res.set_content("done", "text/plain");
  });
  ASSERT_GT(server.Start(), 0);
  auto client = HttpClient::Make(FastRetries(3));
  HttpRequest req;
  req.url = server.Url() + "/busy";
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> r = client->Send(req);
  const double elapsed = SecondsSince(start);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_GE(elapsed, 0.95) << "Retry-After: 1 was not waited for";
  EXPECT_LT(elapsed, 5.0);
}

TEST(HttpClientTest, ConnectionRefusedIsUnavailableWithoutCredentialsInMessage) {
  int port;
  {
    HttplibServer server;
    port = server.Start();
    ASSERT_GT(port, 0);
  }  // closed: nothing listens there now
  auto client = HttpClient::Make(FastRetries(2));
  HttpRequest req;
  req.url = "http://user:hunter2@127.0.0.1:" + std::to_string(port) +
            "/obj?X-Amz-Signature=deadbeef&X-Amz-Security-Token=tok&part=1";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("127.0.0.1:" + std::to_string(port) + "/obj"), std::string::npos) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
  EXPECT_EQ(m.find("deadbeef"), std::string::npos) << m;
  EXPECT_EQ(m.find("tok&"), std::string::npos) << m;
  EXPECT_NE(m.find("part=1"), std::string::npos) << m;
}

TEST(HttpClientTest, TruncatedBodyIsAnErrorNeverShortData) {
  RawServer server("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly twenty bytes...");
  ASSERT_GT(server.port(), 0);
  auto client = HttpClient::Make(FastRetries(2));
  HttpRequest req;
  req.url = server.Url() + "/t";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpClientTest, InvalidContentRangeIsAnError) {
  // What s3rver sends for a range of an empty object: it promises a byte that never comes.
  RawServer server(
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-0/0\r\nContent-Length: 1\r\n\r\n");
  ASSERT_GT(server.port(), 0);
  auto client = HttpClient::Make(FastRetries(3));
  HttpRequest req;
  req.url = server.Url() + "/e";
  req.timeout = 5s;
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> r = client->Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_LT(SecondsSince(start), 2.0);
}

TEST(HttpClientTest, MalformedUrlIsInvalidArgument) {
  auto client = HttpClient::Make(FastRetries(3));
  HttpRequest req;
  req.url = "ftp://127.0.0.1/x";
  Result<HttpResponse> r = client->Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(HttpClientTest, RedactsUrlsAndParsesDates) {
  EXPECT_EQ(RedactUrl("https://a:b@host:1/p/q?x=1&X-Amz-Credential=AK%2F1&token=t#frag"),
            "https://host:1/p/q?x=1&X-Amz-Credential=REDACTED&token=REDACTED");
  EXPECT_EQ(RedactUrl("http://h/p"), "http://h/p");
  EXPECT_EQ(ParseHttpDate("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
  EXPECT_EQ(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_FALSE(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT").has_value());
  EXPECT_FALSE(ParseHttpDate("garbage").has_value());
  EXPECT_EQ(ParseRetryAfter("120", 0), 120);
  EXPECT_EQ(ParseRetryAfter("Fri, 24 May 2013 00:00:10 GMT", 1369353600), 10);
  EXPECT_EQ(ParseRetryAfter("Fri, 24 May 2013 00:00:10 GMT", 1369353700), 0);
  EXPECT_FALSE(ParseRetryAfter("soon", 0).has_value());
}

}  // namespace
}  // namespace skade::io
