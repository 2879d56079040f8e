// Test fixture for the REST catalog server on loopback: a lake (testing::LakeTest), the server
// started on a free port and a cpp-httplib client with helpers for the spec's calls and its
// error model.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <random>

#include "skade/base/clock.h"
#include "skade/rest/server.h"
#include "tests/testing/append_commit.h"
#include "tests/testing/lake_test.h"

namespace skade::rest {

using Json = nlohmann::json;

class RestServerTest : public testing::LakeTest {
 protected:
  RestServerTest() : LakeTest("base") {}

  void Start(RestOptions options = {}, events::Bus* bus = nullptr) {
    options.port = 0;
    auto server = RestServer::Start(*catalog_, *io_, options, bus);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(60, 0);
  }

  httplib::Headers Headers() const {
    httplib::Headers h;
    if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
    return h;
  }

  struct Reply {
    int status = 0;
    Json body;
    std::string etag;
  };
  static Reply Of(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    if (!r->body.empty()) out.body = Json::parse(r->body, nullptr, false);
    out.etag = r->get_header_value("ETag");
    return out;
  }
  Reply Get(const std::string& path, httplib::Headers extra = {}) {
    auto h = Headers();
    for (auto& kv : extra) h.insert(kv);
    return Of(client_->Get(path, h));
  }
  Reply Head(const std::string& path) { return Of(client_->Head(path, Headers())); }
  Reply Post(const std::string& path, const std::string& body) {
    return Of(client_->Post(path, Headers(), body, "application/json"));
  }
  Reply Post(const std::string& path, const Json& body) { return Post(path, body.dump()); }
  Reply Delete(const std::string& path) { return Of(client_->Delete(path, Headers())); }

  // The error model's type of a reply (spec IcebergErrorResponse), checked for shape.
  static std::string ErrorType(const Reply& r) {
    if (!r.body.is_object() || !r.body.contains("error")) return "<no error body>";
    const Json& e = r.body["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_EQ(e["code"], r.status);
    return e["type"].get<std::string>();
  }

  static Json Schema() {
    return Json::parse(R"({"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"region","required":false,"type":"string"}]})");
  }
  Reply CreateTable(const std::string& ns, const std::string& name, bool staged = false) {
    Json body{{"name", name}, {"schema", Schema()}, {"stage-create", staged}};
    body["partition-spec"] = Json::parse(R"({"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"region","transform":"identity"}]})");
    return Post("/v1/namespaces/" + ns + "/tables", body);
  }

  // An append written by skade's library (Parquet data file, manifest, manifest list) on top
  // of `base`, as the add-snapshot + set-snapshot-ref updates of a CommitTableRequest with an
  // assert-ref-snapshot-id requirement on `base`'s main.
  Json AppendCommit(const iceberg::TableMetadata& base, int64_t first_id, int rows, const std::string& tag) {
    std::mt19937_64 rng(static_cast<uint64_t>(NowMicros()) ^ std::hash<std::string>{}(tag));
    auto commit = testing::WriteAppendCommit(*db_, *io_, base,
                                             "SELECT range AS id, 'eu' AS region FROM range(" +
                                                 std::to_string(first_id) + ", " + std::to_string(first_id + rows) + ")",
                                             tag, static_cast<int64_t>(rng() >> 2));
    EXPECT_TRUE(commit.ok()) << commit.status().ToString();
    return commit.ok() ? Json::parse(commit->request_json) : Json::object();
  }

  std::string Count(const std::string& ns, const std::string& table) {
    auto t = LoadTable(*catalog::TableIdent::Parse(ns + "." + table));
    if (!t) return "?";
    auto rows = Rows(*t, "SELECT count(*) FROM t");
    return rows.empty() ? "?" : rows[0][0];
  }

  std::unique_ptr<RestServer> server_;
  std::unique_ptr<httplib::Client> client_;
  std::string token_;
};

}  // namespace skade::rest
