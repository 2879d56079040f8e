// The web console's static files: lookup by exact name, headers (CSP, nosniff, types, caching),
// refusals of odd paths and methods, and the files embedded in this build.
#include "skade/console/static_files.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace skade::console {
namespace {

constexpr std::array<Asset, 3> kFiles = {{
    {"index.html", "<!doctype html><p>console</p>"},
    {"assets/app-ABC123.js", "console.log(1)"},
    {"assets/app-DEF456.css", "body{}"},
}};

std::string Header(const StaticResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(StaticFilesTest, ServesIndexAtTheMountWithAndWithoutSlash) {
  StaticFiles files(kFiles);
  for (std::string_view path : {"/ui", "/ui/", "/ui/index.html"}) {
    auto r = files.Serve("GET", path);
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->content_type, "text/html; charset=utf-8");
    EXPECT_EQ(r->body, "<!doctype html><p>console</p>");
    EXPECT_EQ(Header(*r, "Cache-Control"), "no-cache");
  }
}

TEST(StaticFilesTest, EveryAnswerCarriesTheSecurityHeaders) {
  StaticFiles files(kFiles);
  for (std::string_view path : {"/ui", "/ui/assets/app-ABC123.js", "/ui/nope", "/ui/../v1/config"}) {
    auto r = files.Serve("GET", path);
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(Header(*r, "Content-Security-Policy"),
              "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        << path;
    EXPECT_EQ(Header(*r, "X-Content-Type-Options"), "nosniff") << path;
  }
}

TEST(StaticFilesTest, HashedAssetsAreImmutableWithTheirTypes) {
  StaticFiles files(kFiles);
  auto js = files.Serve("GET", "/ui/assets/app-ABC123.js");
  ASSERT_TRUE(js.has_value());
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js->body, "console.log(1)");
  EXPECT_EQ(Header(*js, "Cache-Control"), "public, max-age=31536000, immutable");
  auto css = files.Serve("HEAD", "/ui/assets/app-DEF456.css");
  ASSERT_TRUE(css.has_value());
  EXPECT_EQ(css->status, 200);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
}

TEST(StaticFilesTest, LeavesOtherPathsToOtherRoutes) {
  StaticFiles files(kFiles);
  for (std::string_view path : {"/v1/config", "/uix", "/ui.html", "/", "", "/v1/../ui", "//ui", "/UI"}) {
    EXPECT_FALSE(files.Serve("GET", path).has_value()) << path;
  }
}

TEST(StaticFilesTest, RefusesTraversalAndOddSegments) {
  StaticFiles files(kFiles);
  // The transport hands over decoded paths: /ui/%2e%2e/ arrives as /ui/../.
  for (std::string_view path : {"/ui/../v1/config", "/ui/..", "/ui/../", "/ui/./index.html", "/ui//index.html",
                                "/ui/assets/../index.html", "/ui/assets\\..\\index.html", "/ui/index.html/",
                                "/ui/assets/", "/ui/assets"}) {
    auto r = files.Serve("GET", path);
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_EQ(r->content_type, "text/plain; charset=utf-8") << path;
  }
  auto nul = files.Serve("GET", std::string_view("/ui/index.html\0x", 16));
  ASSERT_TRUE(nul.has_value());
  EXPECT_EQ(nul->status, 404);
  auto control = files.Serve("GET", "/ui/index\n.html");
  ASSERT_TRUE(control.has_value());
  EXPECT_EQ(control->status, 404);
}

TEST(StaticFilesTest, UnknownFilesAre404) {
  StaticFiles files(kFiles);
  for (std::string_view path : {"/ui/missing.js", "/ui/assets/app-ZZZ.js", "/ui/INDEX.HTML"}) {
    auto r = files.Serve("GET", path);
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 404) << path;
  }
}

TEST(StaticFilesTest, OnlyGetAndHead) {
  StaticFiles files(kFiles);
  for (std::string_view method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
    auto r = files.Serve(method, "/ui/index.html");
    ASSERT_TRUE(r.has_value()) << method;
    EXPECT_EQ(r->status, 405) << method;
    EXPECT_EQ(Header(*r, "Allow"), "GET, HEAD");
  }
}

TEST(StaticFilesTest, ContentTypesByExtension) {
  EXPECT_EQ(ContentTypeOf("a.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("a.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("a.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeOf("a.svg"), "image/svg+xml");
  EXPECT_EQ(ContentTypeOf("a.png"), "image/png");
  EXPECT_EQ(ContentTypeOf("js"), "application/octet-stream");
  EXPECT_EQ(ContentTypeOf("a.exe"), "application/octet-stream");
}

TEST(StaticFilesTest, AnEmptyBuildSaysHowToBuildTheConsole) {
  StaticFiles files({});
  auto r = files.Serve("GET", "/ui");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("scripts/setup.sh"), std::string::npos);
}

// The bundle this build embedded (web/ through esbuild): index.html names a script and a
// stylesheet under assets/, both served, and holds no inline script or style.
TEST(EmbeddedAssetsTest, IndexNamesEmbeddedHashedAssets) {
  auto assets = EmbeddedAssets();
  if (assets.empty()) GTEST_SKIP() << "this build has no web console (web/node_modules missing)";
  StaticFiles files(assets);
  auto index = files.Serve("GET", "/ui/");
  ASSERT_TRUE(index.has_value());
  ASSERT_EQ(index->status, 200);
  const std::string& html = index->body;
  for (std::string_view attr : {"src=\"/ui/assets/", "href=\"/ui/assets/"}) {
    size_t at = html.find(attr);
    ASSERT_NE(at, std::string::npos) << attr;
    const size_t start = at + attr.size() - std::string_view("/ui/assets/").size();
    const std::string path = html.substr(start, html.find('"', start) - start);
    auto asset = files.Serve("GET", path);
    ASSERT_TRUE(asset.has_value()) << path;
    EXPECT_EQ(asset->status, 200) << path;
    EXPECT_FALSE(asset->body.empty()) << path;
  }
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find("style="), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("onload"), std::string::npos);
}

}  // namespace
}  // namespace skade::console
