// rest_bench: the Iceberg REST catalog server under load (issue 12, "Benchmarks"), in one run
// and process: C closed-loop clients on keep-alive connections (cpp-httplib's client) for D
// seconds each against GET /healthz (the baseline: a trivial JSON endpoint of the same server),
// GET /v1/config, GET loadTable, and GET loadTable with If-None-Match (304); req/s, p50 and
// p99, and each ratio to the baseline. Then W writers committing appends (set-properties with
// an assert-ref requirement, retried on 409 after a reload) to one table: commits/s.
//   rest_bench [--clients 8] [--seconds 5] [--writers 8] [--commits 50] [--snapshots 20]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_catalog.h"
#include "bench/bench_util.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/io/file_io.h"
#include "skade/rest/server.h"
#include "skade/table/table.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

struct LoadResult {
  double per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t failures = 0;
};

// `clients` threads each sending GET `path` (with `headers`) back to back for `seconds`;
// a response other than `expected` counts as a failure.
LoadResult Load(int port, const std::string& path, const httplib::Headers& headers, int expected, int clients,
                double seconds) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int64_t> failures{0};
  std::vector<std::thread> threads;
  const double start = NowSeconds(), until = start + seconds;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      while (NowSeconds() < until) {
        const double t0 = NowSeconds();
        auto res = client.Get(path, headers);
        latencies[c].push_back((NowSeconds() - t0) * 1e3);
        if (!res || res->status != expected) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = NowSeconds() - start;
  std::vector<double> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  return LoadResult{static_cast<double>(all.size()) / elapsed, Percentile(all, 50), Percentile(all, 99), failures};
}

Status Run(const std::string& dir, int clients, double seconds, int writers, int commits, int snapshots) {
  SKADE_ASSIGN_OR_RETURN(auto db, engine::Database::Open({}));
  SKADE_ASSIGN_OR_RETURN(BenchCatalog bench, OpenBenchCatalog(dir));
  io::FileIO* io = bench.io.get();
  catalog::Catalog* cat = bench.catalog.get();
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema,
                         engine::SchemaFromColumnDefinitions("id BIGINT NOT NULL, ts TIMESTAMPTZ, region VARCHAR, amount DOUBLE"));
  catalog::CreateTableRequest req;
  req.schema = schema;
  SKADE_ASSIGN_OR_RETURN(auto ident, catalog::TableIdent::Parse("bench.events"));
  SKADE_RETURN_IF_ERROR(cat->CreateTable(ident, req).status());
  {
    // A table with history: `snapshots` appends make the metadata a realistic size.
    SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(*cat, *io, *db, ident));
    for (int s = 0; s < snapshots; ++s) {
      SKADE_RETURN_IF_ERROR(
          t->Append({"SELECT range AS id, now() AS ts, 'eu' AS region, 1.5 AS amount FROM range(100)", nullptr}).status());
    }
  }
  rest::RestOptions options;
  options.port = 0;
  options.threads = std::max(8, writers);
  SKADE_ASSIGN_OR_RETURN(auto server, rest::RestServer::Start(*cat, *io, options));
  const int port = server->port();
  const std::string load = "/v1/namespaces/bench/tables/events";
  std::string etag;
  {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get(load);
    if (!res || res->status != 200) return Status::Internal("loadTable failed");
    etag = res->get_header_value("ETag");
    std::cout << "loadTable body " << res->body.size() << " bytes (" << snapshots << " snapshots)\n";
  }
  std::cout << "== " << clients << " clients × " << seconds << " s per endpoint, keep-alive, loopback, "
            << options.threads << " server threads\n";
  struct Case {
    std::string name, path;
    httplib::Headers headers;
    int expected;
  };
  std::vector<Case> cases = {{"GET /healthz (baseline)", "/healthz", {}, 200},
                             {"GET /v1/config", "/v1/config", {}, 200},
                             {"GET loadTable", load, {}, 200},
                             {"GET loadTable, If-None-Match (304)", load, {{"If-None-Match", etag}}, 304}};
  double baseline = 0;
  for (const Case& c : cases) {
    LoadResult r = Load(port, c.path, c.headers, c.expected, clients, seconds);
    if (baseline == 0) baseline = r.per_second;
    std::cout << c.name << ": " << static_cast<int64_t>(r.per_second) << " req/s, p50 " << r.p50_ms << " ms, p99 "
              << r.p99_ms << " ms, ratio to baseline " << r.per_second / baseline
              << (r.failures ? ", FAILURES " + std::to_string(r.failures) : "") << "\n";
    if (r.failures) return Status::Internal(c.name + ": unexpected responses");
  }

  std::cout << "== " << writers << " writers × " << commits << " commits to one table through REST\n";
  std::atomic<int64_t> conflicts{0};
  std::vector<std::thread> threads;
  std::vector<std::string> failures(writers);
  const double start = NowSeconds();
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      for (int k = 0; k < commits; ++k) {
        for (int attempt = 0;; ++attempt) {
          // The client's view: load, then commit with the requirement that main did not move.
          auto loaded = client.Get(load);
          if (!loaded || loaded->status != 200) return void(failures[w] = "load failed");
          Json table = Json::parse(loaded->body);
          const Json current = table["metadata"].value("current-snapshot-id", Json(nullptr));
          Json body{{"requirements", Json::array({Json{{"type", "assert-ref-snapshot-id"}, {"ref", "main"},
                                                       {"snapshot-id", current}}})},
                    {"updates", Json::array({Json{{"action", "set-properties"},
                                                  {"updates", {{"writer-" + std::to_string(w), std::to_string(k)}}}}})}};
          auto res = client.Post(load, body.dump(), "application/json");
          if (res && res->status == 200) break;
          if (!res || res->status != 409 || attempt > 1000) return void(failures[w] = res ? res->body : "no response");
          ++conflicts;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = NowSeconds() - start;
  for (const auto& f : failures) {
    if (!f.empty()) return Status::Internal("writer failed: " + f);
  }
  std::cout << writers * commits << " commits in " << elapsed << " s: " << writers * commits / elapsed
            << " commits/s, " << conflicts.load() << " conflicts retried (" << server->stats().commits
            << " commits counted by the server)\n";
  server->Shutdown();
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"Iceberg REST catalog server: request rates and commit throughput"};
  int clients = 8, writers = 8, commits = 50, snapshots = 20;
  double seconds = 5;
  app.add_option("--clients", clients, "concurrent readers")->capture_default_str();
  app.add_option("--seconds", seconds, "seconds per endpoint")->capture_default_str();
  app.add_option("--writers", writers, "concurrent committers")->capture_default_str();
  app.add_option("--commits", commits, "commits per writer")->capture_default_str();
  app.add_option("--snapshots", snapshots, "snapshots of the loaded table")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::string pattern = (std::filesystem::temp_directory_path() / "skade-rest-bench.XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return 1;
  skade::Status st = skade::bench::Run(pattern, clients, seconds, writers, commits, snapshots);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    std::cerr << "rest_bench: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
