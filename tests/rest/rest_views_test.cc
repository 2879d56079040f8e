// The REST catalog's view routes over real HTTP on loopback, with request bodies as Spark's and
// Trino's REST clients send them: create, list (paged), load and exists, replace with its
// requirement, rename, register and drop, the error types clients map to exceptions, locations
// outside the warehouse refused, and a catalog without views answering as before.
#include <algorithm>

#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

class RestViewsTest : public RestServerTest {
 protected:
  static Json Version(const std::string& sql, const std::string& dialect = "spark") {
    return Json{{"version-id", 1},
                {"schema-id", 0},
                {"timestamp-ms", 1733400000000},
                {"summary", {{"engine-name", "spark"}, {"engine-version", "3.5.6"}}},
                {"representations", Json::array({Json{{"type", "sql"}, {"sql", sql}, {"dialect", dialect}}})},
                {"default-namespace", Json::array({"base"})}};
  }
  static Json ViewSchema() {
    return Json::parse(R"({"type":"struct","schema-id":0,"fields":[
      {"id":0,"name":"id","required":false,"type":"long"}]})");
  }
  Reply CreateView(const std::string& ns, const std::string& name, const std::string& sql) {
    Json body{{"name", name}, {"schema", ViewSchema()}, {"view-version", Version(sql)}, {"properties", Json::object()}};
    return Post("/v1/namespaces/" + ns + "/views", body);
  }
};

TEST_F(RestViewsTest, ViewsGoThroughTheirWholeLife) {
  Start();
  auto config = Get("/v1/config");
  ASSERT_EQ(config.status, 200);
  const Json& endpoints = config.body["endpoints"];
  for (const char* e : {"POST /v1/{prefix}/namespaces/{namespace}/views", "POST /v1/{prefix}/views/rename",
                        "POST /v1/{prefix}/namespaces/{namespace}/register-view"}) {
    EXPECT_NE(std::find(endpoints.begin(), endpoints.end(), e), endpoints.end()) << e;
  }

  auto created = CreateView("base", "v", "SELECT id FROM t");
  ASSERT_EQ(created.status, 200) << created.body.dump();
  EXPECT_EQ(created.body["metadata"]["current-version-id"], 1);
  EXPECT_EQ(created.body["metadata"]["format-version"], 1);
  const std::string uuid = created.body["metadata"]["view-uuid"];
  const std::string first = created.body["metadata-location"];
  EXPECT_EQ(ErrorType(CreateView("base", "v", "SELECT 1")), "AlreadyExistsException");
  EXPECT_EQ(ErrorType(CreateView("ghost", "v", "SELECT 1")), "NoSuchNamespaceException");
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  EXPECT_EQ(ErrorType(CreateView("base", "t", "SELECT 1")), "AlreadyExistsException");
  // Malformed bodies are 400 naming the member.
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views", Json{{"name", "w"}, {"schema", ViewSchema()}})),
            "BadRequestException");
  Json two_spark{{"name", "w"}, {"schema", ViewSchema()}, {"view-version", Version("SELECT 1")}};
  two_spark["view-version"]["representations"].push_back(Json{{"type", "sql"}, {"sql", "SELECT 2"}, {"dialect", "SPARK"}});
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views", two_spark)), "BadRequestException");
  testing::TempDir elsewhere;
  Json outside{{"name", "w"}, {"schema", ViewSchema()}, {"view-version", Version("SELECT 1")},
               {"location", elsewhere.path() + "/w"}};
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views", outside)), "BadRequestException");

  // Listing (paged) and loading; a table is no view and a view no table.
  ASSERT_EQ(CreateView("base", "u", "SELECT 2 AS id").status, 200);
  auto listed = Get("/v1/namespaces/base/views?pageSize=1&pageToken=");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body["identifiers"], Json::parse(R"([{"namespace":["base"],"name":"u"}])"));
  auto next = Get("/v1/namespaces/base/views?pageSize=1&pageToken=" + listed.body["next-page-token"].get<std::string>());
  EXPECT_EQ(next.body["identifiers"], Json::parse(R"([{"namespace":["base"],"name":"v"}])"));
  EXPECT_EQ(Get("/v1/namespaces/base/tables").body["identifiers"].size(), 1u);
  EXPECT_EQ(Head("/v1/namespaces/base/views/v").status, 204);
  EXPECT_EQ(Head("/v1/namespaces/base/views/t").status, 404);
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/views/t")), "NoSuchViewException");
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/tables/v")), "NoSuchTableException");
  auto loaded = Get("/v1/namespaces/base/views/v");
  ASSERT_EQ(loaded.status, 200);
  EXPECT_EQ(loaded.body["metadata-location"], first);
  EXPECT_EQ(loaded.body["metadata"]["versions"][0]["representations"][0]["sql"], "SELECT id FROM t");

  // Replace as Spark's CREATE OR REPLACE VIEW sends it.
  Json replace{{"identifier", {{"namespace", {"base"}}, {"name", "v"}}},
               {"requirements", Json::array({Json{{"type", "assert-view-uuid"}, {"uuid", uuid}}})},
               {"updates", Json::array({Json{{"action", "add-schema"}, {"schema", ViewSchema()}, {"last-column-id", 1}},
                                        Json{{"action", "add-view-version"}, {"view-version", Version("SELECT id + 1 FROM t")}},
                                        Json{{"action", "set-current-view-version"}, {"view-version-id", -1}}})}};
  replace["updates"][1]["view-version"]["schema-id"] = -1;
  auto replaced = Post("/v1/namespaces/base/views/v", replace);
  ASSERT_EQ(replaced.status, 200) << replaced.body.dump();
  EXPECT_EQ(replaced.body["metadata"]["current-version-id"], 2);
  EXPECT_EQ(replaced.body["metadata"]["versions"].size(), 2u);
  EXPECT_EQ(replaced.body["metadata"]["schemas"].size(), 1u);  // the same schema is reused
  Json wrong_uuid = replace;
  wrong_uuid["requirements"][0]["uuid"] = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views/v", wrong_uuid)), "CommitFailedException");
  Json other_view = replace;
  other_view["identifier"]["name"] = "u";
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views/v", other_view)), "BadRequestException");
  Json moved = Json{{"updates", Json::array({Json{{"action", "set-location"}, {"location", elsewhere.path() + "/v"}}})}};
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views/v", moved)), "BadRequestException");
  Json anonymous = replace;
  anonymous.erase("identifier");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views/ghost", anonymous)), "NoSuchViewException");

  // Rename (destination checks first), register the metadata again, drop.
  Json rename{{"source", {{"namespace", {"base"}}, {"name", "v"}}}, {"destination", {{"namespace", {"base"}}, {"name", "t"}}}};
  EXPECT_EQ(ErrorType(Post("/v1/views/rename", rename)), "AlreadyExistsException");
  rename["destination"]["namespace"] = {"ghost"};
  EXPECT_EQ(ErrorType(Post("/v1/views/rename", rename)), "NoSuchNamespaceException");
  rename["destination"] = {{"namespace", {"base"}}, {"name", "v2"}};
  EXPECT_EQ(Post("/v1/views/rename", rename).status, 204);
  rename["source"]["name"] = "gone";
  EXPECT_EQ(ErrorType(Post("/v1/views/rename", rename)), "NoSuchViewException");
  const std::string current = replaced.body["metadata-location"];
  auto registered = Post("/v1/namespaces/base/register-view", Json{{"name", "again"}, {"metadata-location", current}});
  ASSERT_EQ(registered.status, 200) << registered.body.dump();
  EXPECT_EQ(registered.body["metadata"]["view-uuid"], uuid);
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/register-view",
                           Json{{"name", "x"}, {"metadata-location", elsewhere.path() + "/a.metadata.json"}})),
            "BadRequestException");
  EXPECT_EQ(Delete("/v1/namespaces/base/views/v2").status, 204);
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/base/views/v2")), "NoSuchViewException");
  EXPECT_EQ(Get("/v1/namespaces/base/views").body["identifiers"].size(), 2u);  // u, again
}

TEST_F(RestViewsTest, AReadOnlyServerShowsViewsAndChangesNone) {
  Start();
  ASSERT_EQ(CreateView("base", "v", "SELECT 1 AS id").status, 200);
  server_.reset();
  RestOptions options;
  options.read_only = true;
  Start(options);
  EXPECT_EQ(Get("/v1/namespaces/base/views/v").status, 200);
  EXPECT_EQ(ErrorType(CreateView("base", "w", "SELECT 1 AS id")), "ForbiddenException");
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/base/views/v")), "ForbiddenException");
  EXPECT_EQ(Get("/v1/namespaces/base/views").body["identifiers"].size(), 1u);
}

}  // namespace
}  // namespace skade::rest
