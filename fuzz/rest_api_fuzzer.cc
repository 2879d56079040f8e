// libFuzzer target: the REST catalog's request handling (route + query + body → response), as a
// hostile HTTP client drives it, without sockets: every CatalogApi operation over a real SQLite
// catalog in a scratch folder, with one namespace and one table to reach. Input layout: byte 0
// picks the operation, then NUL-separated fields: namespace segment, table segment, a query
// parameter "k=v", and the body (the rest, NULs included). A response must be a status code
// between 200 and 599 with a JSON body (or none); a crash, leak or hang is the failure.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "skade/catalog/sql_catalog.h"
#include "skade/io/file_io.h"
#include "skade/rest/api_internal.h"

namespace {

using skade::rest::CatalogApi;
using skade::rest::Request;
using skade::rest::Response;

struct World {
  std::string root;
  std::unique_ptr<skade::io::FileIO> io;
  std::unique_ptr<skade::catalog::Catalog> catalog;
  skade::rest::RestOptions options;
  std::unique_ptr<CatalogApi> api;
};

World* TheWorld() {
  static World* world = [] {
    auto* w = new World();
    char pattern[] = "/tmp/skade-rest-fuzz.XXXXXX";
    if (::mkdtemp(pattern) == nullptr) std::abort();
    w->root = pattern;
    // The scratch folder goes when the fuzzer exits (libFuzzer ends with exit()).
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(TheWorld()->root, ec);
    });
    w->io = skade::io::MakeLocalFileIO();
    skade::catalog::SqlCatalogOptions o;
    o.uri = "sqlite://" + w->root + "/catalog.db";
    o.warehouse = w->root + "/warehouse";
    auto catalog = skade::catalog::OpenSqlCatalog(o, *w->io);
    if (!catalog.ok()) {
      std::fprintf(stderr, "rest_api_fuzzer: %s\n", catalog.status().ToString().c_str());
      std::abort();
    }
    w->catalog = std::move(catalog).value();
    w->options.allowed_directories = {w->root + "/warehouse"};
    w->options.plan_async_manifests = 0;  // plans run in the calling thread
    // The sign route parses hostile URLs, headers and DeleteObjects bodies (nothing is sent).
    skade::io::S3Options store;
    store.endpoint = "http://127.0.0.1:9";
    store.access_key_id = "AKIDFUZZ";
    store.secret_access_key = "fuzz-secret";
    w->options.remote_signing = store;
    w->api = std::make_unique<CatalogApi>(*w->catalog, *w->io, w->options);
    // Something to find: namespace "db" and table db.t.
    Request ns;
    ns.method = "POST";
    ns.body = R"({"namespace":["db"]})";
    (void)w->api->CreateNamespace(ns);
    Request t;
    t.method = "POST";
    t.body = R"({"name":"t","schema":{"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"s","required":false,"type":"string"}]}})";
    (void)w->api->CreateTable(t, "db");
    return w;
  }();
  return world;
}

std::string_view NextField(std::string_view& rest) {
  const size_t nul = rest.find('\0');
  std::string_view field = rest.substr(0, nul);
  rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  return field;
}

void Check(const Response& r) {
  if (r.status < 200 || r.status > 599) {
    std::fprintf(stderr, "rest_api_fuzzer: HTTP status %d\n", r.status);
    std::abort();
  }
  if (!r.body.empty() && r.body.front() == '{' &&
      nlohmann::json::parse(r.body, nullptr, false).is_discarded()) {
    std::fprintf(stderr, "rest_api_fuzzer: a response body is not JSON: %s\n", r.body.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = *TheWorld();
  CatalogApi& api = *w.api;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string ns(NextField(rest));
  const std::string table(NextField(rest));
  const std::string_view param = NextField(rest);
  Request r;
  r.body = std::string(rest);
  if (const size_t eq = param.find('='); eq != std::string_view::npos) {
    r.query.emplace(std::string(param.substr(0, eq)), std::string(param.substr(eq + 1)));
  }
  const std::string plan_id = "p";
  switch (data[0] % 26) {
    case 0: r.method = "GET"; Check(api.Config(r)); break;
    case 1: r.method = "GET"; Check(api.ListNamespaces(r)); break;
    case 2: r.method = "POST"; Check(api.CreateNamespace(r)); break;
    case 3: r.method = "GET"; Check(api.LoadNamespace(r, ns)); break;
    case 4: r.method = "POST"; Check(api.UpdateNamespaceProperties(r, ns)); break;
    case 5: r.method = "GET"; Check(api.ListTables(r, ns)); break;
    case 6: r.method = "POST"; Check(api.CreateTable(r, ns)); break;
    case 7: r.method = "POST"; Check(api.RegisterTable(r, ns)); break;
    case 8: r.method = "GET"; Check(api.LoadTable(r, ns, table)); break;
    case 9: r.method = "POST"; Check(api.CommitTable(r, ns, table)); break;
    case 10: r.method = "POST"; Check(api.ReportMetrics(r, ns, table)); break;
    case 11: r.method = "POST"; Check(api.RenameTable(r)); break;
    case 12: r.method = "POST"; Check(api.CommitTransaction(r)); break;
    case 13: r.method = "POST"; Check(api.PlanTableScan(r, ns, table)); break;
    case 14: r.method = "GET"; Check(api.FetchPlanningResult(r, ns, table, plan_id)); break;
    case 15: r.method = "POST"; Check(api.FetchScanTasks(r, ns, table)); break;
    case 16: r.method = "POST"; Check(api.QueryEvents(r)); break;
    case 17: r.method = "DELETE"; Check(api.CancelPlanning(r, ns, table, plan_id)); break;
    case 18: r.method = "GET"; Check(api.ListViews(r, ns)); break;
    case 19: r.method = "POST"; Check(api.CreateView(r, ns)); break;
    case 20: r.method = "GET"; Check(api.LoadView(r, ns, table)); break;
    case 21: r.method = "POST"; Check(api.ReplaceView(r, ns, table)); break;
    case 22: r.method = "POST"; Check(api.RenameView(r)); break;
    case 23: r.method = "POST"; Check(api.RegisterView(r, ns)); break;
    case 24: r.method = "POST"; Check(api.SignRequest(r, ns, table)); break;
    // Drops stay rare (one selector of 26) so the table is there for most inputs; a dropped one
    // is made again.
    default: {
      r.method = "DELETE";
      Check(api.DropTable(r, ns, table));
      Check(api.DropView(r, ns, table));
      Request t;
      t.method = "POST";
      t.body = R"({"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"id","required":true,"type":"long"}]}})";
      (void)api.CreateTable(t, "db");
    }
  }
  return 0;
}
