// A data preview that runs past its statement timeout, end to end over HTTP: the REST server with
// the console's preview route wired as `skade serve` wires it (the catalog's authentication, a
// RunningQueries whose timeout stops every page), a timeout of a tenth of a second, and a table
// of millions of rows whose last page makes DuckDB order all of them by their origin (the
// preview's stable order) to skip up to the largest offset — seconds of work, so the page cannot
// end in time on any machine. The page answers 504 QueryTimeoutException in the error model
// preview.h documents, soon after the timeout rather than when the statement would have ended;
// the statement is gone, and the server answers on: a preview of a small table, the catalog's
// routes, /healthz.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skade/base/clock.h"
#include "skade/console/preview.h"
#include "skade/console/query.h"
#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

using namespace std::chrono_literals;

// Rows of the large table: its page at console::Preview::kMaxOffset takes DuckDB seconds
// on an idle 2-core machine (more when busy), tens of times the timeout.
constexpr int64_t kLargeRows = 20'000'000;
constexpr std::chrono::milliseconds kTimeout{100};

class PreviewTimeoutTest : public RestServerTest {
 protected:
  void SetUp() override {
    RestServerTest::SetUp();
    auto large = LakeTest::CreateTable("large", "id BIGINT, s VARCHAR");
    ASSERT_NE(large, nullptr);
    ASSERT_TRUE(large->Append({"SELECT range AS id, 'v' || (range % 1000) AS s FROM range(" +
                                   std::to_string(kLargeRows) + ")",
                               nullptr})
                    .ok());
    auto small = LakeTest::CreateTable("small", "id BIGINT, s VARCHAR");
    ASSERT_NE(small, nullptr);
    ASSERT_TRUE(small->Append({"SELECT range AS id, 'v' || range AS s FROM range(10)", nullptr}).ok());

    console::RunningQueries::Limits limits;
    limits.timeout = kTimeout;
    running_.emplace(limits);
    preview_.emplace(*catalog_, *io_, *db_, &*running_);
    RestOptions options;
    options.static_tokens = {"s3cr3t"};
    // As serve_command.cc answers the console's routes.
    options.extra_routes = [this](const ExtraRequest& r) {
      std::optional<console::RouteAnswer> answer = preview_->Serve(r.method, r.path, r.query);
      if (!answer) return std::optional<PublicResponse>();
      std::vector<std::pair<std::string, std::string>> headers = {{"Cache-Control", "no-store"}};
      for (auto& h : answer->headers) headers.push_back(std::move(h));
      return std::optional<PublicResponse>(
          PublicResponse{answer->status, "application/json", std::move(headers), std::move(answer->body)});
    };
    Start(options);
    token_ = "s3cr3t";
  }
  void TearDown() override {
    // The routes borrow the preview: the server stops first.
    if (server_) server_->Shutdown();
  }

  httplib::Result Page(const std::string& table, int64_t offset) {
    return client_->Get(std::string(console::kPreviewPath) + "?table=base." + table + "&offset=" +
                            std::to_string(offset) + "&limit=" + std::to_string(console::Preview::kMaxLimit),
                        Headers());
  }

  std::optional<console::RunningQueries> running_;
  std::optional<console::Preview> preview_;
};

TEST_F(PreviewTimeoutTest, APreviewPastTheTimeoutIs504AndTheServerAnswersOn) {
  // Twice: a stopped page leaves nothing behind that holds up the next.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t started = MonotonicNanos();
    auto page = Page("large", console::Preview::kMaxOffset);
    const auto took = std::chrono::nanoseconds(MonotonicNanos() - started);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 504) << page->body;
    EXPECT_EQ(page->get_header_value("Content-Type"), "application/json");
    EXPECT_EQ(page->get_header_value("Cache-Control"), "no-store");
    const Json body = Json::parse(page->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << page->body;
    EXPECT_EQ(body["error"]["code"], 504);
    EXPECT_EQ(body["error"]["type"], "QueryTimeoutException");
    EXPECT_THAT(body["error"]["message"].get<std::string>(), ::testing::HasSubstr("(100 ms)"));
    EXPECT_FALSE(body.contains("rows"));
    // It ran until the timeout and was stopped then (interrupting DuckDB is not instant, and a
    // busy machine is slow to schedule it: the bound is loose, but below the statement's seconds).
    EXPECT_GE(took, kTimeout);
    EXPECT_LT(took, 10s);
    EXPECT_EQ(running_->running(), 0u);
  }

  // The server answers on: a page within the timeout, the catalog, the health check.
  auto small = Page("small", 0);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200) << small->body;
  const Json rows = Json::parse(small->body)["rows"];
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[0][1], "v0");
  EXPECT_EQ(Get("/v1/namespaces/base/tables").status, 200);
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

}  // namespace
}  // namespace skade::rest
