// The OpenLineage emitter's health on the REST server's /metrics (what the console's overview
// shows): a real emitter sending to an HTTP receiver on loopback, its skade_lineage_* lines read
// back over HTTP as a scraper reads them: events sent count up and nothing stays pending while
// the receiver takes them; while it fails, the failed attempts, the commits held back and the
// last error (escaped as a label value) show, and they clear once it takes them again; without
// an emitter the server says none is configured; /metrics keeps the catalog's authentication.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "skade/events/bus.h"
#include "skade/events/watcher.h"
#include "skade/lineage/emitter.h"
#include "skade/lineage/transport.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/poll_until.h"

namespace skade::rest {
namespace {

using namespace std::chrono_literals;

// An OpenLineage receiver on loopback: takes events (201) or, while `failing`, answers 503 with
// a body holding characters a Prometheus label value must escape.
class Receiver {
 public:
  static constexpr const char* kFailureBody = "down for \"maintenance\"\nsee C:\\status";

  Receiver() {
    // The emitter's client keeps its connection open: a short keep-alive lets stop() end soon.
    server_.set_keep_alive_timeout(1);
    server_.Post("/api/v1/lineage", [this](const httplib::Request&, httplib::Response& res) {
      if (failing.load()) {
        res.status = 503;
        res.set_content(kFailureBody, "text/plain");
        return;
      }
      ++taken;
      res.status = 201;
    });
  }
  ~Receiver() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  int Start() {
    const int port = server_.bind_to_any_port("127.0.0.1");
    if (port <= 0) return port;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    if (!testing::PollUntil([&] { return server_.is_running(); }, 20s)) return -1;
    return port;
  }

  std::atomic<bool> failing{false};
  std::atomic<int> taken{0};

 private:
  httplib::Server server_;
  std::thread thread_;
};

// The value of the sample `name` (no labels) in Prometheus text; nullopt when absent.
std::optional<double> Sample(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ' ') {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return std::nullopt;
}

// The lines of `text` that start with `prefix`.
std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) out.push_back(line);
  }
  return out;
}

class EmitterMetricsTest : public RestServerTest {
 protected:
  void SetUp() override {
    RestServerTest::SetUp();
    auto watcher = events::Watcher::Start(*catalog_, "sqlite://" + tmp_.Path("catalog.db"), bus_);
    ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
    watcher_ = std::move(*watcher);
    // Before the emitter, which starts at the log's head: each Commit() is then 2 events.
    table_ = LakeTest::CreateTable("t", "id BIGINT");
    ASSERT_NE(table_, nullptr);
  }
  void TearDown() override {
    // The server asks the emitter on each scrape: it goes first.
    if (server_) server_->Shutdown();
    if (emitter_) emitter_->Stop();
  }

  void StartEmitter(int port) {
    lineage::HttpTransportOptions http;
    http.url = "http://127.0.0.1:" + std::to_string(port);
    http.connect_timeout = 500ms;
    auto transport = lineage::MakeHttpTransport(http);
    ASSERT_TRUE(transport.ok()) << transport.status().ToString();
    auto cursor = lineage::OpenCursorStore(*catalog_, "openlineage", "");
    ASSERT_TRUE(cursor.ok()) << cursor.status().ToString();
    lineage::EmitterOptions options;
    options.naming.warehouse = tmp_.Path("warehouse");
    options.initial_backoff = 5ms;
    options.max_backoff = 20ms;
    auto emitter = lineage::Emitter::Start(*catalog_, *io_, bus_, std::move(*transport), std::move(*cursor), options);
    ASSERT_TRUE(emitter.ok()) << emitter.status().ToString();
    emitter_ = std::move(*emitter);
  }

  // Starts the server with the emitter's metrics beside its own, as `skade serve` does.
  void StartServer(RestOptions options = {}) {
    options.more_metrics = [this] { return lineage::EmitterMetricsText(emitter_.get()); };
    Start(options);
  }

  std::string Scrape() {
    auto r = client_->Get("/metrics", Headers());
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4");
    return r->body;
  }
  double Value(const std::string& name) {
    std::optional<double> v = Sample(Scrape(), name);
    return v.value_or(-1);
  }

  // Appends a few rows to base.t; returns the commit_seq.
  int64_t Commit() {
    auto done = table_->Append({"SELECT range AS id FROM range(3)", nullptr});
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    return done.ok() ? done->commit_seq : 0;
  }

  events::Bus bus_;
  std::unique_ptr<events::Watcher> watcher_;
  std::unique_ptr<lineage::Emitter> emitter_;
  std::unique_ptr<table::Table> table_;
};

TEST_F(EmitterMetricsTest, WithoutAnEmitterTheServerSaysNoneIsConfigured) {
  StartServer();
  const std::string text = Scrape();
  EXPECT_THAT(Lines(text, "skade_lineage_"), ::testing::ElementsAre("skade_lineage_emitter_configured 0"));
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE skade_lineage_emitter_configured gauge\n"));
  // The catalog's own metrics are still there, before it.
  EXPECT_LT(text.find("skade_rest_connections "), text.find("skade_lineage_emitter_configured"));
}

TEST_F(EmitterMetricsTest, DeliveredEventsCountUpAndNothingStaysPending) {
  Receiver receiver;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  StartEmitter(port);
  StartServer();
  std::string text = Scrape();
  EXPECT_EQ(Sample(text, "skade_lineage_emitter_configured"), 1);
  EXPECT_EQ(Sample(text, "skade_lineage_events_sent_total"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_send_failures_total"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_pending_commits"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_last_sent_timestamp_seconds"), std::nullopt);
  EXPECT_TRUE(Lines(text, "skade_lineage_last_error").empty());
  for (const char* counter : {"skade_lineage_events_sent_total", "skade_lineage_send_failures_total",
                              "skade_lineage_events_refused_total", "skade_lineage_failed_writes_sent_total"}) {
    EXPECT_THAT(text, ::testing::HasSubstr(std::string("# TYPE ") + counter + " counter\n"));
    EXPECT_THAT(text, ::testing::HasSubstr(std::string("# HELP ") + counter + " "));
  }
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE skade_lineage_pending_commits gauge\n"));

  // Three appends: a START and a COMPLETE each.
  Commit();
  Commit();
  const int64_t last = Commit();
  ASSERT_GT(last, 0);
  ASSERT_TRUE(emitter_->WaitDelivered(last, 30s));
  text = Scrape();
  EXPECT_EQ(Sample(text, "skade_lineage_events_sent_total"), receiver.taken.load());
  EXPECT_EQ(Sample(text, "skade_lineage_events_sent_total"), 6);
  EXPECT_EQ(Sample(text, "skade_lineage_delivered_commit_seq"), last);
  EXPECT_EQ(Sample(text, "skade_lineage_pending_commits"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_failing_attempts"), 0);
  const double now = static_cast<double>(NowMicros()) / 1e6;
  EXPECT_NEAR(Sample(text, "skade_lineage_last_sent_timestamp_seconds").value_or(0), now, 60);
  EXPECT_TRUE(Lines(text, "skade_lineage_last_error").empty());
}

TEST_F(EmitterMetricsTest, AFailingReceiverShowsFailuresPendingCommitsAndTheLastError) {
  Receiver receiver;
  receiver.failing = true;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  StartEmitter(port);
  StartServer();
  Commit();
  const int64_t last = Commit();
  ASSERT_GT(last, 0);
  // Commits go on; the emitter retries the first event and holds the rest back.
  std::string text;
  ASSERT_TRUE(testing::PollUntil(
      [&] {
        text = Scrape();
        return Sample(text, "skade_lineage_failing_attempts").value_or(0) >= 2 &&
               Sample(text, "skade_lineage_pending_commits") == 2;
      },
      30s, 10ms))
      << text;
  EXPECT_GE(Sample(text, "skade_lineage_send_failures_total").value_or(0), 2);
  EXPECT_EQ(Sample(text, "skade_lineage_events_sent_total"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_pending_commits"), 2);
  EXPECT_TRUE(Sample(text, "skade_lineage_last_error_timestamp_seconds").has_value());
  // The receiver's answer as one label value: quotes, backslash and line feed escaped.
  const std::vector<std::string> info = Lines(text, "skade_lineage_last_error_info{");
  ASSERT_EQ(info.size(), 1u) << text;
  EXPECT_THAT(info[0],
              ::testing::StartsWith("skade_lineage_last_error_info{message=\"OpenLineage endpoint http://127.0.0.1:"));
  EXPECT_THAT(info[0], ::testing::HasSubstr(" answered 503: down for \\\"maintenance\\\"\\nsee C:\\\\status\"} 1"));
  EXPECT_THAT(info[0], ::testing::EndsWith("\"} 1"));

  // Back: everything held back is delivered, the failures stop; the last error stays on record.
  receiver.failing = false;
  ASSERT_TRUE(emitter_->WaitDelivered(last, 30s));
  text = Scrape();
  EXPECT_EQ(Sample(text, "skade_lineage_events_sent_total"), 4);
  EXPECT_EQ(Sample(text, "skade_lineage_pending_commits"), 0);
  EXPECT_EQ(Sample(text, "skade_lineage_failing_attempts"), 0);
  EXPECT_EQ(Lines(text, "skade_lineage_last_error_info{").size(), 1u);
  EXPECT_GE(Sample(text, "skade_lineage_last_sent_timestamp_seconds").value_or(0),
            Sample(text, "skade_lineage_last_error_timestamp_seconds").value_or(1e18));
}

TEST_F(EmitterMetricsTest, MetricsNeedTheCatalogsToken) {
  Receiver receiver;
  const int port = receiver.Start();
  ASSERT_GT(port, 0);
  StartEmitter(port);
  RestOptions options;
  options.static_tokens = {"s3cr3t"};
  StartServer(options);
  auto refused = client_->Get("/metrics");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->body.find("skade_lineage_"), std::string::npos);
  token_ = "s3cr3t";
  EXPECT_EQ(Value("skade_lineage_emitter_configured"), 1);
}

}  // namespace
}  // namespace skade::rest
