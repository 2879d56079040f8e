// The CLI over tables on an S3 API server (s3rver on loopback): `skade scan` and `skade inspect`
// take s3:// locations, configured by the standard AWS_* environment variables, and read the
// same rows as the table on disk; a warehouse on S3 (catalog in a local SQLite file) takes
// every write the CLI makes; a REST catalog's vended storage settings reach the table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

#include "skade/base/uuid.h"
#include "skade/engine/database.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/location_map.h"
#include "skade/io/s3_file_io.h"
#include "skade/io/sigv4.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/foreign_table.h"
#include "tests/testing/run_process.h"
#include "tests/testing/s3rver.h"
#include "tests/testing/temp_dir.h"

namespace skade {
namespace {

using testing::RunProcess;
using testing::ShellQuote;

std::unique_ptr<io::S3FileIO> OpenS3(const testing::S3rver& server) {
  io::S3Options o;
  o.endpoint = server.endpoint();
  o.access_key_id = testing::kS3rverAccessKey;
  o.secret_access_key = testing::kS3rverSecretKey;
  auto s3 = io::S3FileIO::Open(o);
  EXPECT_TRUE(s3.ok()) << s3.status().ToString();
  return s3.ok() ? std::move(s3).value() : nullptr;
}

// The AWS_* settings of a process that reaches `server` (and nothing from this machine's ~/.aws).
std::string S3Environment(const testing::S3rver& server) {
  return "AWS_ENDPOINT_URL=" + ShellQuote(server.endpoint()) + " AWS_ACCESS_KEY_ID=" + testing::kS3rverAccessKey +
         " AWS_SECRET_ACCESS_KEY=" + testing::kS3rverSecretKey +
         " AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null ";
}

// The same, for an endpoint in front of the server.
std::string S3EnvironmentAt(const std::string& endpoint) {
  return "AWS_ENDPOINT_URL=" + ShellQuote(endpoint) + " AWS_ACCESS_KEY_ID=" + testing::kS3rverAccessKey +
         " AWS_SECRET_ACCESS_KEY=" + testing::kS3rverSecretKey +
         " AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null ";
}

std::vector<std::string> SortedLines(const std::string& text) {
  auto lines = testing::Lines(text);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// A fixture table (equality deletes, written by another engine).
const std::string kFixture = skade::testing::FixturePath("iceberg/equality_deletes_mytable");

// Copies kFixture with every location spelled under `root` (s3://bucket/<prefix>/t), staged in
// `staging` (its metadata/v1.metadata.json), and uploads it.
void UploadFixture(io::FileIO& s3, const std::string& staging, const std::string& root) {
  auto parsed = iceberg::ParseTableMetadata(testing::ReadFileOrDie(kFixture + "/metadata/v7.metadata.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  io::LocationMap to_fixture;
  to_fixture.Add("data/persistent/equality_deletes/warehouse/mydb/mytable", kFixture);
  auto local_io = io::MakeLocalFileIO();
  auto fixture_io = io::MakeRelocatingFileIO(*local_io, to_fixture);
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  auto uploaded = testing::UploadForeignCopy(*parsed, *fixture_io, **db, staging, root, s3);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
}

TEST(ObjectStoreCliTest, ScanAndInspectReadATableOnS3) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto& server = testing::S3rver::Shared();
  ASSERT_GT(server.port(), 0) << server.error();
  auto s3 = OpenS3(server);
  ASSERT_NE(s3, nullptr);

  const std::string dir = kFixture;
  testing::TempDir tmp;
  const std::string root = std::string("s3://") + testing::kS3rverBucket + "/cli-" + Uuid::NewV7().ToString() + "/t";
  ASSERT_NO_FATAL_FAILURE(UploadFixture(*s3, tmp.Path("copy"), root));

  const std::string env = S3Environment(server);
  auto skade = [&](const std::string& args) {
    return RunProcess(env + ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(tmp.Path("lake")) + " " + args);
  };
  auto local = skade("scan " + ShellQuote(dir) + " --format csv");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto remote = skade("scan " + ShellQuote(root) + " --format csv");
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(SortedLines(remote.out), SortedLines(local.out)) << "the same rows (in any order: no ORDER BY)";
  EXPECT_THAT(remote.out, ::testing::HasSubstr("4,d,2025-01-04"));
  auto by_file = skade("scan " + ShellQuote(root + "/metadata/v1.metadata.json") + " --count");
  ASSERT_EQ(by_file.exit_code, 0) << by_file.err;
  EXPECT_EQ(testing::Lines(by_file.out).back(), "2");
  auto inspect = skade("inspect " + ShellQuote(root) + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_THAT(inspect.out, ::testing::HasSubstr(root + "/data/"));
  // A missing table names the bucket's answer.
  auto missing = skade("scan " + ShellQuote(std::string("s3://") + testing::kS3rverBucket + "/nope/t") + " --count");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, ::testing::HasSubstr("nope/t"));
}

TEST(ObjectStoreCliTest, WarehouseOnS3TakesEveryWrite) {
  auto& server = testing::S3rver::Shared();
  ASSERT_GT(server.port(), 0) << server.error();
  auto s3 = OpenS3(server);
  ASSERT_NE(s3, nullptr);
  testing::TempDir tmp;
  const std::string wh = std::string("s3://") + testing::kS3rverBucket + "/wh-" + Uuid::NewV7().ToString();
  const std::string catalog = "sqlite://" + tmp.Path("catalog.db");
  auto skade_in = [&](const std::string& lake, const std::string& args) {
    auto r = RunProcess("cd " + ShellQuote(tmp.path()) + " && " + S3Environment(server) + ShellQuote(skade::testing::CliPath()) +
                        " " + lake + " " + args);
    return r;
  };
  const std::string lake = "--warehouse " + ShellQuote(wh) + " --catalog " + ShellQuote(catalog);
  auto ok = [&](const std::string& args) {
    auto r = skade_in(lake, args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.out;
  };
  auto scan = [&](const std::string& table) { return SortedLines(ok("scan " + table + " --format csv")); };

  // The catalog cannot live in the bucket: it must be named.
  auto unnamed = skade_in("--warehouse " + ShellQuote(wh), "ns create sales");
  EXPECT_NE(unnamed.exit_code, 0);
  EXPECT_THAT(unnamed.err, ::testing::HasSubstr("name the catalog"));

  ok("ns create sales");
  EXPECT_THAT(ok("create sales.orders --schema 'id bigint, name varchar, region varchar' --partition-by region"),
              ::testing::HasSubstr("at " + wh + "/sales/orders"));
  testing::WriteFileOrDie(tmp.Path("in.csv"), "id,name,region\n1,a,eu\n2,b,eu\n3,c,us\n4,d,us\n");
  ok("ingest sales.orders in.csv");
  ok("delete sales.orders --where 'id = 2'");  // copy-on-write: rewrites a file
  testing::WriteFileOrDie(tmp.Path("up.csv"), "id,name,region\n1,A,eu\n5,e,us\n");
  ok("ingest sales.orders up.csv --mode upsert --key id,region");  // equality deletes
  ok("sql \"INSERT INTO sales.orders VALUES (6, 'f', 'eu')\"");
  EXPECT_EQ(scan("sales.orders"),
            (std::vector<std::string>{"1,A,eu", "3,c,us", "4,d,us", "5,e,us", "6,f,eu", "id,name,region"}));
  // Every object a write made carries page checksums (read again and replaced before the
  // commit named it), and they verify.
  const std::string pages = ok("inspect sales.orders");
  EXPECT_THAT(pages, ::testing::HasSubstr("carry page CRCs, all verified"));
  EXPECT_THAT(pages, ::testing::HasSubstr("0 carry none"));

  // A refused write leaves no object behind.
  const std::string data_prefix = wh + "/sales/orders/data/";
  const size_t objects_before = s3->List(data_prefix).ValueOr({}).size();
  testing::WriteFileOrDie(tmp.Path("bad.csv"), "id,name,region\n7,g,eu\nseven,h,us\n");
  auto bad = skade_in(lake, "ingest sales.orders bad.csv");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(s3->List(data_prefix).ValueOr({}).size(), objects_before);

  ok("compact sales.orders");
  ok("alter sales.orders add-column qty int");
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_THAT(ok("expire sales.orders --retain-last 1 --older-than " + std::to_string(now_ms)),
              ::testing::HasSubstr("expired 4 snapshot(s)"));
  EXPECT_EQ(scan("sales.orders"),
            (std::vector<std::string>{"1,A,eu,", "3,c,us,", "4,d,us,", "5,e,us,", "6,f,eu,", "id,name,region,qty"}));
  // Expiry deleted the files only older snapshots used: what is left is what the table uses.
  auto inspect = ok("inspect sales.orders --json");
  auto left = s3->List(data_prefix).ValueOr({});
  EXPECT_EQ(left.size(), 2u);
  for (const io::FileInfo& f : left) {
    EXPECT_NE(inspect.find(f.location), std::string::npos) << f.location << " left behind by expire";
  }

  // Merge-on-read deletes: position delete files (v2) and deletion vectors (v3), both on S3.
  testing::WriteFileOrDie(tmp.Path("kv.csv"), "k,v\n1,a\n2,b\n3,c\n4,d\n");
  for (const std::string version : {"2", "3"}) {
    const std::string t = "sales.mor" + version;
    ok("create " + t + " --schema 'k bigint, v varchar' --prop format-version=" + version +
       " --prop write.delete.mode=merge-on-read");
    ok("ingest " + t + " kv.csv");
    ok("delete " + t + " --where 'k = 3'");
    EXPECT_EQ(scan(t), (std::vector<std::string>{"1,a", "2,b", "4,d", "k,v"})) << t;
    EXPECT_THAT(ok("inspect " + t + " --json"), ::testing::HasSubstr(version == "3" ? ".puffin" : "deletes-"));
  }
  ok("sql \"CREATE TABLE sales.us AS SELECT id, name FROM sales.orders WHERE region = 'us'\"");
  EXPECT_EQ(scan("sales.us"), (std::vector<std::string>{"3,c", "4,d", "5,e", "id,name"}));

  // Nothing went to a local folder (the working directory holds only the catalog).
  std::vector<std::string> local;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("catalog.db", 0) != 0 && !name.ends_with(".csv")) local.push_back(name);
  }
  EXPECT_THAT(local, ::testing::IsEmpty());
  EXPECT_FALSE(s3->List(wh + "/sales/mor3/metadata/").ValueOr({}).empty());
}

// A REST catalog that vends its tables' storage settings (loadTable `config`), as catalog
// services hand out short-lived S3 credentials: the client has no object-store configuration
// of its own and reaches the table only with what was vended; a vended key the store refuses
// fails with that refusal.
TEST(ObjectStoreCliTest, RestCatalogVendedCredentialsReachTheTable) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto& server = testing::S3rver::Shared();
  ASSERT_GT(server.port(), 0) << server.error();
  auto s3 = OpenS3(server);
  ASSERT_NE(s3, nullptr);
  const std::string dir = kFixture;
  testing::TempDir tmp;
  const std::string root = std::string("s3://") + testing::kS3rverBucket + "/vended-" + Uuid::NewV7().ToString() + "/t";
  ASSERT_NO_FATAL_FAILURE(UploadFixture(*s3, tmp.Path("copy"), root));
  const std::string metadata = testing::ReadFileOrDie(tmp.Path("copy/metadata/v1.metadata.json"));

  // The catalog: db.good vends the store's key, db.bad one the store refuses.
  httplib::Server rest;
  rest.Get("/v1/config", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"defaults": {}, "overrides": {}})", "application/json");
  });
  std::string delegation;
  rest.Get(R"(/v1/namespaces/db/tables/(good|bad))", [&](const httplib::Request& req, httplib::Response& res) {
    delegation = req.get_header_value("X-Iceberg-Access-Delegation");
    const std::string key = req.matches[1] == "good" ? testing::kS3rverAccessKey : "NOT-A-KEY";
    res.set_content(R"({"metadata-location": ")" + root + R"(/metadata/v1.metadata.json", "metadata": )" + metadata +
                        R"(, "config": {"s3.access-key-id": ")" + key + R"(", "s3.secret-access-key": ")" +
                        testing::kS3rverSecretKey + R"(", "s3.endpoint": ")" + server.endpoint() +
                        R"(", "s3.path-style-access": "true", "client.region": "us-east-1"}})",
                    "application/json");
  });
  const int port = rest.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread loop([&] { rest.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    ~Stop() {
      s.stop();
      t.join();
    }
  } stop{rest, loop};

  // No AWS settings at all: without the vended ones no request could reach the store.
  const std::string no_aws =
      "env -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_S3 -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u "
      "AWS_SESSION_TOKEN AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null ";
  auto skade = [&](const std::string& args) {
    return RunProcess(no_aws + ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(tmp.Path("lake")) +
                      " --catalog rest+http://127.0.0.1:" + std::to_string(port) + " " + args);
  };
  auto local = RunProcess(no_aws + ShellQuote(skade::testing::CliPath()) + " scan " + ShellQuote(dir) + " --format csv");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto good = skade("scan db.good --format csv");
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(SortedLines(good.out), SortedLines(local.out));
  EXPECT_EQ(delegation, "vended-credentials");
  auto count = skade("sql 'SELECT count(*) AS n FROM db.good' --format csv");
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_EQ(testing::Lines(count.out).back(), std::to_string(testing::Lines(local.out).size() - 1));

  auto bad = skade("scan db.bad --format csv");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("PermissionDenied")) << bad.err;
}

// `skade serve --remote-signing` on a warehouse on S3: loadTable tells clients where to sign, and
// the sign route signs exactly the requests that stay inside the table, which then reach the store
// (reads, writes, listings); another table, the warehouse root, a read-only server's writes and a
// server without credentials are refused.
TEST(ObjectStoreCliTest, RestRemoteSigningReachesOnlyTheTable) {
  auto& server = testing::S3rver::Shared();
  ASSERT_GT(server.port(), 0) << server.error();
  auto s3 = OpenS3(server);
  ASSERT_NE(s3, nullptr);
  testing::TempDir tmp;
  // Every request to the store passes a proxy that checks its signature with botocore as S3 would
  // (s3rver checks none) and refuses unsigned ones.
  auto proxy = testing::ChildProcess::Start(
      {"/usr/bin/python3", skade::testing::SourcePath("tests/io/botocore_verify.py"), "--proxy", server.endpoint(),
       testing::kS3rverAccessKey, testing::kS3rverSecretKey, "us-east-1"},
      tmp.Path("proxy.log"));
  ASSERT_NE(proxy, nullptr);
  const std::string listening = proxy->ReadLine(std::chrono::seconds(20));
  ASSERT_EQ(listening.rfind("listening on ", 0), 0u) << listening << testing::ReadFileOrDie(tmp.Path("proxy.log"));
  const int store_port = std::stoi(listening.substr(13));
  const std::string store = "http://127.0.0.1:" + std::to_string(store_port);
  const std::string prefix = "signed-" + Uuid::NewV7().ToString();
  const std::string wh = std::string("s3://") + testing::kS3rverBucket + "/" + prefix;
  const std::string catalog = "sqlite://" + tmp.Path("catalog.db");
  const std::string lake = "--warehouse " + ShellQuote(wh) + " --catalog " + ShellQuote(catalog);
  auto ok = [&](const std::string& args) {
    auto r = RunProcess("cd " + ShellQuote(tmp.path()) + " && " + S3EnvironmentAt(store) +
                        ShellQuote(skade::testing::CliPath()) + " " + lake + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
  };
  ok("ns create sales");
  ok("create sales.orders --schema 'id bigint, name varchar'");
  ok("create sales.other --schema 'id bigint'");
  ok("ingest sales.orders --sql \"SELECT 1 AS id, 'a' AS name\"");

  auto serve = [&](std::vector<std::string> extra, bool with_keys = true) {
    std::vector<std::string> argv = {"env", "AWS_ENDPOINT_URL=" + store, "AWS_REGION=us-east-1",
                                     "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"};
    if (with_keys) {
      argv.push_back(std::string("AWS_ACCESS_KEY_ID=") + testing::kS3rverAccessKey);
      argv.push_back(std::string("AWS_SECRET_ACCESS_KEY=") + testing::kS3rverSecretKey);
    } else {
      argv.insert(argv.begin() + 1, {"-u", "AWS_ACCESS_KEY_ID", "-u", "AWS_SECRET_ACCESS_KEY", "-u", "AWS_SESSION_TOKEN"});
    }
    const std::vector<std::string> command = {skade::testing::CliPath(), "--warehouse", wh, "--catalog", catalog, "serve",
                                              "--flight-port", "0", "--rest-port", "0", "--remote-signing"};
    argv.insert(argv.end(), command.begin(), command.end());
    for (std::string& a : extra) argv.push_back(std::move(a));
    return testing::ChildProcess::Start(argv, tmp.Path("serve.err"));
  };
  auto rest_port = [](testing::ChildProcess& child) {
    for (int i = 0; i < 10; ++i) {
      const std::string line = child.ReadLine(std::chrono::seconds(20));
      const size_t at = line.find("rest catalog listening on http://127.0.0.1:");
      if (at != std::string::npos) return std::stoi(line.substr(at + 43));
      if (line.empty()) break;
    }
    return 0;
  };

  // Without the store's credentials the server does not start.
  auto keyless = serve({}, false);
  ASSERT_NE(keyless, nullptr);
  EXPECT_NE(keyless->Stop(0, std::chrono::seconds(30)), 0);
  EXPECT_THAT(testing::ReadFileOrDie(tmp.Path("serve.err")), ::testing::HasSubstr("--remote-signing signs with"));

  auto child = serve({});
  ASSERT_NE(child, nullptr);
  const int port = rest_port(*child);
  ASSERT_GT(port, 0) << testing::ReadFileOrDie(tmp.Path("serve.err"));
  httplib::Client rest("127.0.0.1", port);
  auto config = rest.Get("/v1/config");
  ASSERT_TRUE(config && config->status == 200);
  EXPECT_THAT(config->body, ::testing::HasSubstr("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign"));
  auto loaded = rest.Get("/v1/namespaces/sales/tables/orders");
  ASSERT_TRUE(loaded && loaded->status == 200);
  auto table = nlohmann::json::parse(loaded->body);
  EXPECT_EQ(table["config"]["s3.remote-signing-enabled"], "true");
  EXPECT_EQ(table["config"]["s3.signer.endpoint"], "v1/namespaces/sales/tables/orders/sign");
  EXPECT_EQ(table["config"]["signer.endpoint"], "v1/namespaces/sales/tables/orders/sign");
  EXPECT_EQ(table["config"]["s3.endpoint"], store);
  EXPECT_FALSE(table["config"].contains("s3.access-key-id")) << "no key leaves the server";
  EXPECT_TRUE(table["remote-signing-config"].is_object());
  const std::string metadata_location = table["metadata-location"];
  const std::string table_key = prefix + "/sales/orders";
  ASSERT_EQ(metadata_location.rfind(wh + "/sales/orders/metadata/", 0), 0u) << metadata_location;
  const std::string metadata_key = metadata_location.substr(std::string("s3://").size() + std::strlen(testing::kS3rverBucket) + 1);

  // Signs a request through the route and sends it to the store as signed.
  struct Sent {
    int sign_status = 0;
    std::string cache_control;
    int store_status = 0;
    std::string body;
  };
  auto sign_and_send = [&](httplib::Client& catalog_client, const std::string& method, const std::string& path_and_query,
                           const std::string& body = "", const std::string& table_route = "sales/tables/orders") {
    Sent out;
    nlohmann::json request = {{"region", "us-east-1"},
                              {"uri", store + path_and_query},
                              {"method", method},
                              {"headers", nlohmann::json::object()}};
    if (method == "PUT") request["headers"]["Content-Length"] = {std::to_string(body.size())};
    auto signed_reply = catalog_client.Post("/v1/namespaces/" + table_route + "/sign", request.dump(), "application/json");
    if (!signed_reply) return out;
    out.sign_status = signed_reply->status;
    out.cache_control = signed_reply->get_header_value("Cache-Control");
    if (signed_reply->status != 200) {
      out.body = signed_reply->body;
      return out;
    }
    auto answer = nlohmann::json::parse(signed_reply->body);
    const std::string uri = answer["uri"];
    EXPECT_EQ(uri.rfind(store, 0), 0u) << uri;
    httplib::Headers headers;
    for (auto& [name, values] : answer["headers"].items()) {
      if (name == "Content-Length") continue;  // httplib sets it
      for (auto& v : values) headers.emplace(name, v.get<std::string>());
    }
    EXPECT_EQ(headers.count("Authorization"), 1u);
    httplib::Client to_store("127.0.0.1", store_port);
    const std::string target = uri.substr(store.size());
    httplib::Result r = method == "GET" ? to_store.Get(target, headers)
                        : method == "PUT" ? to_store.Put(target, headers, body, "application/octet-stream")
                                          : to_store.Delete(target, headers);
    if (r) {
      out.store_status = r->status;
      out.body = r->body;
    }
    return out;
  };
  const std::string bucket = std::string("/") + testing::kS3rverBucket + "/";

  Sent read = sign_and_send(rest, "GET", bucket + metadata_key + "?x-id=GetObject");
  EXPECT_EQ(read.sign_status, 200) << read.body;
  EXPECT_EQ(read.cache_control, "private");
  EXPECT_EQ(read.store_status, 200);
  auto stored = s3->Read(metadata_location);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(read.body, *stored);

  Sent write = sign_and_send(rest, "PUT", bucket + table_key + "/data/extra%20file.bin", "hello");
  EXPECT_EQ(write.sign_status, 200) << write.body;
  EXPECT_EQ(write.cache_control, "no-cache");
  EXPECT_EQ(write.store_status, 200);
  auto written = s3->Read(wh + "/sales/orders/data/extra file.bin");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(*written, "hello");

  Sent listing = sign_and_send(rest, "GET", std::string("/") + testing::kS3rverBucket + "?list-type=2&prefix=" +
                                                io::UriEncode(table_key + "/data/"));
  EXPECT_EQ(listing.sign_status, 200) << listing.body;
  EXPECT_EQ(listing.store_status, 200);
  EXPECT_THAT(listing.body, ::testing::HasSubstr("extra file.bin"));

  // Another table's files, the warehouse, another bucket: 403 from the catalog, nothing sent.
  for (const std::string& path : {bucket + prefix + "/sales/other/metadata/x.json", bucket + prefix + "/catalog.db",
                                  std::string("/") + testing::kS3rverOtherBucket + "/" + table_key + "/x"}) {
    Sent refused = sign_and_send(rest, "GET", path);
    EXPECT_EQ(refused.sign_status, 403) << path << ": " << refused.body;
    EXPECT_THAT(refused.body, ::testing::HasSubstr("ForbiddenException"));
  }
  Sent wide = sign_and_send(rest, "GET", std::string("/") + testing::kS3rverBucket + "?list-type=2&prefix=" + prefix);
  EXPECT_EQ(wide.sign_status, 403) << wide.body;
  // The route of the other table signs for that table only.
  Sent other = sign_and_send(rest, "GET", bucket + metadata_key, "", "sales/tables/other");
  EXPECT_EQ(other.sign_status, 403) << other.body;
  Sent missing = sign_and_send(rest, "GET", bucket + metadata_key, "", "nowhere/tables/t");
  EXPECT_EQ(missing.sign_status, 404) << missing.body;
  auto malformed = rest.Post("/v1/namespaces/sales/tables/orders/sign", R"({"uri": 1})", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);

  // skade as the catalog's client holding no keys: the catalog signs its reads and writes.
  const std::string no_aws =
      "env -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_S3 -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u "
      "AWS_SESSION_TOKEN AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null ";
  auto client = [&](const std::string& args) {
    auto r = RunProcess(no_aws + ShellQuote(skade::testing::CliPath()) + " --warehouse " + ShellQuote(tmp.Path("client")) +
                        " --catalog rest+http://127.0.0.1:" + std::to_string(port) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.out;
  };
  EXPECT_EQ(SortedLines(client("scan sales.orders --format csv")), (std::vector<std::string>{"1,a", "id,name"}));
  client("ingest sales.orders --sql \"SELECT 2 AS id, 'b' AS name\"");
  EXPECT_EQ(SortedLines(client("scan sales.orders --format csv")), (std::vector<std::string>{"1,a", "2,b", "id,name"}));
  EXPECT_EQ(child->Stop(SIGTERM, std::chrono::seconds(30)), 0);
  // Every request that reached the store was signed with the store's key.
  const std::string proxy_log = testing::ReadFileOrDie(tmp.Path("proxy.log"));
  EXPECT_THAT(proxy_log, ::testing::HasSubstr("\"PUT /"));
  EXPECT_THAT(proxy_log, ::testing::Not(::testing::HasSubstr("refused"))) << proxy_log;

  // A read-only server signs reads and no write.
  auto read_only = serve({"--read-only"});
  ASSERT_NE(read_only, nullptr);
  const int ro_port = rest_port(*read_only);
  ASSERT_GT(ro_port, 0);
  httplib::Client ro("127.0.0.1", ro_port);
  EXPECT_EQ(sign_and_send(ro, "GET", bucket + metadata_key).store_status, 200);
  Sent refused_write = sign_and_send(ro, "PUT", bucket + table_key + "/data/more.bin", "x");
  EXPECT_EQ(refused_write.sign_status, 403) << refused_write.body;
  EXPECT_FALSE(s3->Stat(wh + "/sales/orders/data/more.bin").ok());
  EXPECT_EQ(read_only->Stop(SIGTERM, std::chrono::seconds(30)), 0);
}

}  // namespace
}  // namespace skade
