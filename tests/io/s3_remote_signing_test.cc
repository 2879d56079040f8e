// Remote signing: what is signed (re-rendered URLs, the headers S3 checks), checked by botocore as
// S3 would (tests/io/botocore_verify.py), and what is refused (other endpoints, objects outside
// the roots, writes of a read-only client, operations and headers that reach further).
#include "skade/io/s3_remote_signing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "skade/io/sigv4.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::io {
namespace {

using Json = nlohmann::json;
using Pairs = std::vector<std::pair<std::string, std::string>>;

constexpr int64_t kNow = 1790000000;

S3Options Store() {
  S3Options o;
  o.endpoint = "http://127.0.0.1:9000";
  o.region = "eu-central-1";
  o.access_key_id = "AKIDSERVER";
  o.secret_access_key = "server/secret+key=";
  return o;
}

const std::vector<std::string> kRoots = {"s3://lake/wh/sales/orders", "s3://lake/elsewhere/orders-data"};

Result<S3SignOutput> Sign(std::string method, std::string uri, Pairs headers = {},
                          std::optional<std::string> body = std::nullopt,
                          S3SignAccess access = S3SignAccess::kReadWrite, const S3Options& store = Store()) {
  S3SignInput in;
  in.method = std::move(method);
  in.uri = std::move(uri);
  in.headers = std::move(headers);
  in.body = std::move(body);
  return SignS3Request(store, kRoots, access, in, kNow);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string HeaderOf(const S3SignOutput& out, std::string_view name) {
  std::string found;
  int count = 0;
  for (const auto& [n, v] : out.headers) {
    if (EqualsIgnoreCase(n, name)) {
      found = v;
      ++count;
    }
  }
  EXPECT_LE(count, 1) << "header " << name << " sent " << count << " times";
  return found;
}

TEST(S3RemoteSigningTest, SignsReadsAndWritesBotocoreAccepts) {
  testing::ProcessResult probe = testing::RunProcess("/usr/bin/python3 -c 'import botocore.auth'");
  ASSERT_EQ(probe.exit_code, 0) << "python3-botocore is required (scripts/setup.sh installs it): " << probe.err;
  S3Options with_token = Store();
  with_token.session_token = "FwoGZXIvYXdz//token+/==";
  S3Options virtual_host = Store();
  virtual_host.endpoint = "https://objects.example.test";
  virtual_host.path_style = false;
  struct Case {
    std::string name;
    std::string method;
    Result<S3SignOutput> out;
    const S3Options* store;
  };
  const S3Options plain = Store();
  const std::string delete_body =
      "<Delete><Object><Key>wh/sales/orders/data/a.parquet</Key></Object>"
      "<Object><Key>elsewhere/orders-data/b.parquet</Key></Object><Quiet>true</Quiet></Delete>";
  std::vector<Case> cases;
  auto add = [&](std::string name, std::string method, std::string uri, Pairs headers = {},
                 std::optional<std::string> body = std::nullopt, const S3Options* store = nullptr) {
    const S3Options& used = store != nullptr ? *store : plain;
    Result<S3SignOutput> out = Sign(method, std::move(uri), std::move(headers), std::move(body),
                                    S3SignAccess::kReadWrite, used);
    cases.push_back({std::move(name), std::move(method), std::move(out), &used});
  };
  add("get", "GET", "http://127.0.0.1:9000/lake/wh/sales/orders/metadata/v1.metadata.json?x-id=GetObject",
      {{"Range", "bytes=0-99"}, {"User-Agent", "pyiceberg"}});
  add("head odd key", "HEAD", "http://127.0.0.1:9000/lake/wh/sales/orders/data/a%20b%2Bc%3Dd.parquet");
  add("put with metadata", "PUT", "http://127.0.0.1:9000/lake/wh/sales/orders/data/00000-0.parquet",
      {{"Content-MD5", "1B2M2Y8AsgTpgAhXWVMXXQ=="},
       {"x-amz-meta-writer", "pyiceberg"},
       {"Content-Length", "0"},
       {"Expect", "100-continue"}});
  add("upload part", "PUT", "http://127.0.0.1:9000/lake/elsewhere/orders-data/big.parquet?partNumber=2&uploadId=abc%2Fdef");
  add("list", "GET", "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Fsales%2Forders%2Fmetadata%2F&max-keys=10");
  add("delete objects", "POST", "http://127.0.0.1:9000/lake?delete", {{"Content-MD5", Md5Base64(delete_body)}},
      delete_body);
  add("session token", "GET", "http://127.0.0.1:9000/lake/wh/sales/orders/x.avro", {}, std::nullopt, &with_token);
  add("virtual host", "GET", "https://lake.objects.example.test/wh/sales/orders/x.avro", {}, std::nullopt,
      &virtual_host);

  Json in = Json::array();
  for (const Case& c : cases) {
    ASSERT_TRUE(c.out.ok()) << c.name << ": " << c.out.status().ToString();
    Json headers = Json::array();
    for (const auto& [n, v] : c.out->headers) headers.push_back({n, v});
    in.push_back({{"method", c.method},
                  {"url", c.out->uri},
                  {"headers", headers},
                  {"access_key", c.store->access_key_id},
                  {"secret_key", c.store->secret_access_key},
                  {"region", c.store->region}});
  }
  testing::TempDir tmp;
  testing::WriteFileOrDie(tmp.Path("cases.json"), in.dump());
  testing::ProcessResult run =
      testing::RunProcess("/usr/bin/python3 " + testing::ShellQuote(testing::SourcePath("tests/io/botocore_verify.py")) +
                          " " + testing::ShellQuote(tmp.Path("cases.json")));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Json verdicts = Json::parse(run.out);
  ASSERT_EQ(verdicts.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(verdicts[i]["valid"].get<bool>()) << cases[i].name << ": " << verdicts[i]["reason"].get<std::string>();
  }

  // What was signed, as sent.
  const S3SignOutput& get = *cases[0].out;
  EXPECT_EQ(get.uri, "http://127.0.0.1:9000/lake/wh/sales/orders/metadata/v1.metadata.json?x-id=GetObject");
  EXPECT_TRUE(get.read);
  EXPECT_EQ(HeaderOf(get, "Range"), "bytes=0-99");  // the client's headers travel back unchanged
  EXPECT_EQ(HeaderOf(get, "User-Agent"), "pyiceberg");
  EXPECT_EQ(HeaderOf(get, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(HeaderOf(get, "x-amz-date"), AmzDate(kNow));
  EXPECT_NE(HeaderOf(get, "Authorization").find("Credential=AKIDSERVER/"), std::string::npos);
  EXPECT_NE(HeaderOf(get, "Authorization").find("SignedHeaders=host;x-amz-content-sha256;x-amz-date,"), std::string::npos);
  EXPECT_EQ(cases[1].out->uri, "http://127.0.0.1:9000/lake/wh/sales/orders/data/a%20b%2Bc%3Dd.parquet");
  EXPECT_NE(HeaderOf(*cases[2].out, "Authorization").find("SignedHeaders=content-md5;host;x-amz-content-sha256;x-amz-date;x-amz-meta-writer,"),
            std::string::npos);
  EXPECT_FALSE(cases[2].out->read);
  EXPECT_EQ(cases[3].out->uri, "http://127.0.0.1:9000/lake/elsewhere/orders-data/big.parquet?partNumber=2&uploadId=abc%2Fdef");
  // DeleteObjects is signed with its body's hash: S3 takes no other body under this signature.
  EXPECT_EQ(HeaderOf(*cases[5].out, "x-amz-content-sha256"), Sha256Hex(delete_body));
  EXPECT_EQ(cases[5].out->uri, "http://127.0.0.1:9000/lake?delete=");
  EXPECT_EQ(HeaderOf(*cases[6].out, "x-amz-security-token"), with_token.session_token);
  EXPECT_EQ(cases[7].out->uri, "https://lake.objects.example.test/wh/sales/orders/x.avro");
}

TEST(S3RemoteSigningTest, ReplacesTheClientsOwnSignature) {
  auto out = Sign("GET", "http://127.0.0.1:9000/lake/wh/sales/orders/x.avro",
                  {{"Authorization", "AWS4-HMAC-SHA256 Credential=CLIENT/..."},
                   {"X-Amz-Date", "19990101T000000Z"},
                   {"x-amz-security-token", "client-token"},
                   {"Host", "evil.example"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(HeaderOf(*out, "x-amz-date"), AmzDate(kNow));
  EXPECT_EQ(HeaderOf(*out, "x-amz-security-token"), "");
  EXPECT_EQ(HeaderOf(*out, "Host"), "");
  EXPECT_EQ(HeaderOf(*out, "Authorization").find("CLIENT"), std::string::npos);
}

TEST(S3RemoteSigningTest, RefusesWhatLiesOutsideTheRoots) {
  const std::string base = "http://127.0.0.1:9000/lake/";
  // Another table, a folder sharing the root's name as a prefix, another bucket.
  for (const std::string key : {"wh/sales/other/x.parquet", "wh/sales/orders2/x.parquet", "wh/sales/orders"}) {
    auto out = Sign("GET", base + key);
    if (key == "wh/sales/orders") {
      EXPECT_TRUE(out.ok()) << "the root itself is within";
      continue;
    }
    EXPECT_EQ(out.status().code(), StatusCode::kPermissionDenied) << key;
  }
  EXPECT_EQ(Sign("GET", "http://127.0.0.1:9000/other-bucket/wh/sales/orders/x").status().code(),
            StatusCode::kPermissionDenied);
  // Dot segments and empty segments are refused outright, encoded or not.
  for (const std::string key : {"wh/sales/orders/../other/x", "wh/sales/orders/%2E%2E/other/x",
                                 "wh/sales/orders/./x", "wh/sales/orders//x"}) {
    EXPECT_EQ(Sign("GET", base + key).status().code(), StatusCode::kInvalidArgument) << key;
  }
  // Malformed escapes, NUL and control characters.
  for (const std::string key : {"wh/sales/orders/%zz", "wh/sales/orders/a%00b", "wh/sales/orders/a%0Ab", "wh/sales/orders/%4"}) {
    EXPECT_EQ(Sign("GET", base + key).status().code(), StatusCode::kInvalidArgument) << key;
  }
  // Other endpoints: host, port, scheme, user information, a look-alike suffix.
  for (const std::string uri : {"http://127.0.0.2:9000/lake/wh/sales/orders/x", "http://127.0.0.1:9001/lake/wh/sales/orders/x",
                                 "https://127.0.0.1:9000/lake/wh/sales/orders/x",
                                 "http://lake.evil127.0.0.1:9000/wh/sales/orders/x"}) {
    EXPECT_EQ(Sign("GET", uri).status().code(), StatusCode::kPermissionDenied) << uri;
  }
  EXPECT_EQ(Sign("GET", "http://user@127.0.0.1:9000/lake/wh/sales/orders/x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("GET", "127.0.0.1:9000/lake/wh/sales/orders/x").status().code(), StatusCode::kInvalidArgument);
  // Listings: the prefix must stay inside a root, as a folder.
  for (const std::string query : {"list-type=2&prefix=wh%2Fsales%2F", "list-type=2&prefix=wh%2Fsales%2Forders",
                                   "list-type=2", "prefix=wh%2Fsales%2Forders2%2F"}) {
    EXPECT_EQ(Sign("GET", "http://127.0.0.1:9000/lake?" + query).status().code(), StatusCode::kPermissionDenied) << query;
  }
  EXPECT_TRUE(Sign("GET", "http://127.0.0.1:9000/lake?prefix=wh%2Fsales%2Forders%2F&delimiter=%2F").ok());
}

TEST(S3RemoteSigningTest, RefusesOperationsAndHeadersThatReachFurther) {
  const std::string object = "http://127.0.0.1:9000/lake/wh/sales/orders/data/a.parquet";
  // A read-only client reads and lists, and writes nothing.
  for (const std::string method : {"PUT", "POST", "DELETE"}) {
    EXPECT_EQ(Sign(method, object + (method == "POST" ? "?uploads" : ""), {}, std::nullopt, S3SignAccess::kRead)
                  .status()
                  .code(),
              StatusCode::kPermissionDenied)
        << method;
  }
  EXPECT_TRUE(Sign("GET", object, {}, std::nullopt, S3SignAccess::kRead).ok());
  EXPECT_EQ(Sign("PATCH", object).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("OPTIONS", object).status().code(), StatusCode::kInvalidArgument);
  // Sub-resources that change access or reach other objects.
  for (const std::string query : {"acl", "tagging", "retention", "legal-hold", "x-id=GetObject&response-content-type=x"}) {
    EXPECT_EQ(Sign("GET", object + "?" + query).status().code(), StatusCode::kPermissionDenied) << query;
    EXPECT_EQ(Sign("PUT", object + "?" + query).status().code(), StatusCode::kPermissionDenied) << query;
  }
  EXPECT_EQ(Sign("POST", object).status().code(), StatusCode::kPermissionDenied);  // neither uploads nor uploadId
  EXPECT_EQ(Sign("PUT", object + "?partNumber=1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("GET", object + "?x-id=a&x-id=b").status().code(), StatusCode::kInvalidArgument);
  // Bucket operations other than listings and DeleteObjects.
  for (const std::string method : {"PUT", "DELETE", "HEAD"}) {
    EXPECT_EQ(Sign(method, "http://127.0.0.1:9000/lake").status().code(), StatusCode::kPermissionDenied) << method;
  }
  EXPECT_EQ(Sign("GET", "http://127.0.0.1:9000/lake?policy").status().code(), StatusCode::kPermissionDenied);
  // Copies read other objects; ACLs, grants, redirects and locks change access.
  for (const std::string header : {"x-amz-copy-source", "X-Amz-Copy-Source-Range", "x-amz-acl", "x-amz-grant-read",
                                    "x-amz-website-redirect-location", "x-amz-object-lock-mode",
                                    "x-amz-bypass-governance-retention"}) {
    EXPECT_EQ(Sign("PUT", object, {{header, "v"}}).status().code(), StatusCode::kPermissionDenied) << header;
  }
  // Header injection.
  EXPECT_EQ(Sign("PUT", object, {{"x-amz-meta-a", "v\r\nx-amz-acl: public-read"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("PUT", object, {{"x-amz meta", "v"}}).status().code(), StatusCode::kInvalidArgument);
  // Chunk signing needs the secret for every chunk; other payload hashes pass through.
  EXPECT_EQ(Sign("PUT", object, {{"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("PUT", object, {{"x-amz-content-sha256", "not a hash"}}).status().code(), StatusCode::kInvalidArgument);
  auto hashed = Sign("PUT", object, {{"x-amz-content-sha256", Sha256Hex("data")}});
  ASSERT_TRUE(hashed.ok());
  EXPECT_EQ(HeaderOf(*hashed, "x-amz-content-sha256"), Sha256Hex("data"));
  EXPECT_TRUE(Sign("PUT", object, {{"x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
                                   {"x-amz-trailer", "x-amz-checksum-crc32"}})
                  .ok());
}

TEST(S3RemoteSigningTest, DeleteObjectsIsSignedOnlyForItsCheckedBody) {
  const std::string uri = "http://127.0.0.1:9000/lake?delete";
  auto doc = [](std::vector<std::string> keys) {
    std::string body = "<Delete>";
    for (const std::string& k : keys) body += "<Object><Key>" + k + "</Key></Object>";
    return body + "</Delete>";
  };
  EXPECT_TRUE(Sign("POST", uri, {}, doc({"wh/sales/orders/a", "wh/sales/orders/b"})).ok());
  EXPECT_EQ(Sign("POST", uri, {}, doc({"wh/sales/orders/a", "wh/sales/other/b"})).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Sign("POST", uri, {}, doc({"wh/sales/orders/../other/b"})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("POST", uri).status().code(), StatusCode::kInvalidArgument);  // no body
  EXPECT_EQ(Sign("POST", uri, {}, "<Delete></Delete>").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("POST", uri, {}, "<Other/>").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("POST", uri, {}, "<Delete><Object><Key>wh/sales/orders/a</Key><VersionId>1</VersionId></Object></Delete>")
                .status()
                .code(),
            StatusCode::kPermissionDenied);
  // A hash the client claims for another body.
  EXPECT_EQ(Sign("POST", uri, {{"x-amz-content-sha256", Sha256Hex("other")}}, doc({"wh/sales/orders/a"})).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Sign("POST", uri, {}, doc({"wh/sales/orders/a"}), S3SignAccess::kRead).status().code(),
            StatusCode::kPermissionDenied);
}

TEST(S3RemoteSigningTest, NeedsCredentials) {
  S3Options none = Store();
  none.access_key_id.clear();
  EXPECT_EQ(Sign("GET", "http://127.0.0.1:9000/lake/wh/sales/orders/x", {}, std::nullopt, S3SignAccess::kRead, none)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::io
