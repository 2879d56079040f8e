// The console's files through the REST catalog server's public-files hook: answered before
// authentication (the pages hold no secrets), while nothing under /ui reaches a catalog route
// (a path that climbs out of /ui is refused, not served unauthenticated).
#include <array>

#include "skade/console/static_files.h"
#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

constexpr std::array<console::Asset, 2> kFiles = {{
    {"index.html", "<!doctype html><p>console</p>"},
    {"assets/app-ABC123.js", "console.log(1)"},
}};

class ConsoleServerTest : public RestServerTest {
 protected:
  void StartWithConsole(RestOptions options = {}) {
    options.public_files = [this](std::string_view method, std::string_view path) {
      std::optional<console::StaticResponse> f = files_.Serve(method, path);
      if (!f) return std::optional<PublicResponse>();
      return std::optional<PublicResponse>(PublicResponse{f->status, f->content_type, f->headers, f->body});
    };
    Start(options);
  }
  console::StaticFiles files_{kFiles};
};

TEST_F(ConsoleServerTest, PagesNeedNoTokenAndCatalogRoutesStillDo) {
  RestOptions options;
  options.static_tokens = {"s3cr3t"};
  StartWithConsole(options);
  auto page = client_->Get("/ui");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, "<!doctype html><p>console</p>");
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'none'"), std::string::npos);
  auto js = client_->Get("/ui/assets/app-ABC123.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
  auto head = client_->Head("/ui/");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());

  EXPECT_EQ(client_->Get("/v1/namespaces")->status, 401);
  for (const char* climb : {"/ui/../v1/namespaces", "/ui/%2e%2e/v1/namespaces", "/ui/%2E%2E%2Fv1%2Fnamespaces",
                            "/ui/..%2fv1/namespaces"}) {
    auto r = client_->Get(climb);
    ASSERT_TRUE(r) << climb;
    EXPECT_EQ(r->status, 404) << climb;
    EXPECT_EQ(r->body.find("namespaces\":"), std::string::npos) << climb;
  }
  EXPECT_EQ(client_->Get("/ui/missing.js")->status, 404);
  EXPECT_EQ(client_->Post("/ui/index.html", "x", "text/plain")->status, 405);
  token_ = "s3cr3t";
  EXPECT_EQ(Get("/v1/namespaces").status, 200);
}

TEST_F(ConsoleServerTest, ExtraRoutesAnswerOnlyAuthenticatedRequestsNoCatalogRouteServes) {
  RestOptions options;
  options.static_tokens = {"s3cr3t", "other-token"};
  options.extra_routes = [](const ExtraRequest& r) {
    if (r.path != "/console/v1/preview" && r.path != "/v1/namespaces") return std::optional<PublicResponse>();
    auto table = r.query.find("table");
    Json echo{{"m", r.method}, {"t", table == r.query.end() ? "" : table->second}, {"b", r.body}, {"p", r.principal},
              {"c", r.content_type}};
    return std::optional<PublicResponse>(PublicResponse{200, "application/json", {{"Allow", "GET"}}, echo.dump()});
  };
  StartWithConsole(options);
  EXPECT_EQ(client_->Get("/console/v1/preview?table=db.t")->status, 401);
  token_ = "s3cr3t";
  auto page = Get("/console/v1/preview?table=db.t");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body["t"], "db.t");
  EXPECT_EQ(page.body["m"], "GET");
  // The body and who sent it: each token is a principal of its own.
  auto posted = Post("/console/v1/preview", std::string("{\"sql\":\"SELECT 1\"}"));
  EXPECT_EQ(posted.body["m"], "POST");
  EXPECT_EQ(posted.body["b"], "{\"sql\":\"SELECT 1\"}");
  EXPECT_EQ(posted.body["c"], "application/json");
  const std::string first = posted.body["p"];
  EXPECT_FALSE(first.empty());
  token_ = "other-token";
  const std::string second = Get("/console/v1/preview").body["p"];
  EXPECT_FALSE(second.empty());
  EXPECT_NE(first, second);
  EXPECT_EQ(client_->Get("/console/v1/preview", Headers())->get_header_value("Allow"), "GET");
  // A catalog route keeps its answer; a path nobody serves stays 404.
  EXPECT_TRUE(Get("/v1/namespaces").body.contains("namespaces"));
  EXPECT_EQ(Get("/console/v1/other").status, 404);
}

TEST_F(ConsoleServerTest, WithoutTheHookUiIsNoRoute) {
  RestOptions options;
  Start(options);
  EXPECT_EQ(client_->Get("/ui")->status, 404);
  EXPECT_EQ(Get("/v1/namespaces").status, 200);
}

}  // namespace
}  // namespace skade::rest
