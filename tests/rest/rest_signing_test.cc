// The signRequest route over HTTP on a lake on disk: off unless the server holds a store to sign
// for, and then requests are parsed and checked before anything is signed. (Signing for tables
// on S3, and the signatures themselves, are tested in tests/io/s3_remote_signing_test.cc and
// through `skade serve` on s3rver in tests/cli/object_store_cli_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

constexpr const char* kSignRoute = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign";

Json SignBody(const std::string& uri, const std::string& method = "GET") {
  return Json{{"region", "us-east-1"}, {"uri", uri}, {"method", method}, {"headers", Json::object()}};
}

// A server that signs for a store at 127.0.0.1:9000.
RestOptions SigningFor127() {
  RestOptions options;
  io::S3Options store;
  store.endpoint = "http://127.0.0.1:9000";
  store.access_key_id = "AKID";
  store.secret_access_key = "secret";
  options.remote_signing = store;
  return options;
}

bool Lists(const Json& config, const std::string& endpoint) {
  for (const Json& e : config["endpoints"]) {
    if (e == endpoint) return true;
  }
  return false;
}

TEST_F(RestServerTest, SigningIsOffWithoutAStore) {
  Start();
  ASSERT_EQ(Post("/v1/namespaces", Json{{"namespace", {"sales"}}}).status, 200);
  ASSERT_EQ(CreateTable("sales", "orders").status, 200);
  EXPECT_FALSE(Lists(Get("/v1/config").body, kSignRoute));
  Reply loaded = Get("/v1/namespaces/sales/tables/orders");
  EXPECT_EQ(loaded.body["config"], Json::object());
  EXPECT_FALSE(loaded.body.contains("remote-signing-config"));
  Reply r = Post("/v1/namespaces/sales/tables/orders/sign", SignBody("http://127.0.0.1:9000/b/k"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body.dump(), ::testing::HasSubstr("does not sign"));
}

TEST_F(RestServerTest, SignRequestsAreCheckedBeforeSigning) {
  RestOptions options = SigningFor127();
  Start(options);
  ASSERT_EQ(Post("/v1/namespaces", Json{{"namespace", {"sales"}}}).status, 200);
  ASSERT_EQ(CreateTable("sales", "orders").status, 200);
  EXPECT_TRUE(Lists(Get("/v1/config").body, kSignRoute));
  // A table on disk is not on the store: no signer in its config, and nothing of the store is
  // signed for it.
  EXPECT_EQ(Get("/v1/namespaces/sales/tables/orders").body["config"], Json::object());
  const std::string route = "/v1/namespaces/sales/tables/orders/sign";
  Reply outside = Post(route, SignBody("http://127.0.0.1:9000/bucket/sales/orders/data/x.parquet"));
  EXPECT_EQ(outside.status, 403);
  EXPECT_EQ(ErrorType(outside), "ForbiddenException");
  // A table not created yet is signed for the location it would get (here on disk: nothing).
  EXPECT_EQ(Post("/v1/namespaces/sales/tables/later/sign", SignBody("http://127.0.0.1:9000/bucket/x")).status, 403);
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/nowhere/tables/t/sign", SignBody("http://127.0.0.1:9000/bucket/x"))),
            "NoSuchNamespaceException");

  // Malformed requests.
  Json no_headers = SignBody("http://127.0.0.1:9000/bucket/x");
  no_headers.erase("headers");
  Json bad_header = SignBody("http://127.0.0.1:9000/bucket/x");
  bad_header["headers"] = Json{{"Range", "bytes=0-1"}};  // values are arrays
  Json gcs = SignBody("http://127.0.0.1:9000/bucket/x");
  gcs["provider"] = "gcs";
  Json no_uri = SignBody("");
  no_uri.erase("uri");
  for (const Json& body : {no_headers, bad_header, gcs, no_uri, SignBody("http://127.0.0.1:9000/bucket/x", "TRACE"),
                           SignBody("http://127.0.0.1:9000/bucket/a%zz")}) {
    Reply r = Post(route, body);
    EXPECT_EQ(r.status, 400) << body.dump() << " → " << r.body.dump();
    EXPECT_EQ(ErrorType(r), "BadRequestException");
  }
  EXPECT_EQ(Post(route, std::string("{not json")).status, 400);
}

// A staged create at a location of the client's choice writes its files before the table
// exists: the staged answer's signer route carries a sealed scope (those locations, that client,
// that table), and only requests under it are signed until the table is committed.
TEST_F(RestServerTest, AStagedCreateAtItsOwnLocationIsSignedThroughItsScope) {
  RestOptions options = SigningFor127();
  options.allowed_directories = {"s3://bucket/custom"};
  options.static_tokens = {"alice-token", "bob-token"};
  token_ = "alice-token";
  Start(options);
  ASSERT_EQ(Post("/v1/namespaces", Json{{"namespace", {"sales"}}}).status, 200);
  Json staged{{"name", "orders"}, {"schema", Schema()}, {"stage-create", true},
              {"location", "s3://bucket/custom/orders"}};
  Reply r = Post("/v1/namespaces/sales/tables", staged);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string endpoint = r.body["config"]["signer.endpoint"];
  EXPECT_EQ(r.body["config"]["s3.signer.endpoint"], endpoint);
  const std::string plain = "v1/namespaces/sales/tables/orders/sign";
  ASSERT_EQ(endpoint.rfind(plain + "?scope=", 0), 0u) << endpoint;
  const std::string scoped = "/" + endpoint;
  const std::string file = "http://127.0.0.1:9000/bucket/custom/orders/data/00000-x.parquet";

  Reply put = Post(scoped, SignBody(file, "PUT"));
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["uri"], file);
  EXPECT_TRUE(put.body["headers"].contains("Authorization")) << put.body.dump();
  // Outside the staged location, without the scope (the table's default location is on disk),
  // for another table, by another client, or with a changed scope: refused.
  EXPECT_EQ(ErrorType(Post(scoped, SignBody("http://127.0.0.1:9000/bucket/custom/other/x.parquet", "PUT"))),
            "ForbiddenException");
  EXPECT_EQ(ErrorType(Post("/" + plain, SignBody(file, "PUT"))), "ForbiddenException");
  const std::string query = endpoint.substr(endpoint.find('?'));
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/sales/tables/other/sign" + query, SignBody(file, "PUT"))),
            "ForbiddenException");
  std::string changed = scoped;
  changed[changed.size() - 5] = changed[changed.size() - 5] == 'A' ? 'B' : 'A';
  EXPECT_EQ(ErrorType(Post(changed, SignBody(file, "PUT"))), "ForbiddenException");
  token_ = "bob-token";
  EXPECT_EQ(ErrorType(Post(scoped, SignBody(file, "PUT"))), "ForbiddenException");
}

}  // namespace
}  // namespace skade::rest
