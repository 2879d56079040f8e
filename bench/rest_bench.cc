// rest_bench: the Iceberg REST catalog server under load (issue 12, "Benchmarks"), in one run
// and process: C closed-loop clients on keep-alive connections (cpp-httplib's client) for D
// seconds each against GET /healthz (the baseline: a trivial JSON endpoint of the same server),
// GET /v1/config, GET loadTable, and GET loadTable with If-None-Match (304); req/s, p50 and
// p99, and each ratio to the baseline. Then W writers committing appends (set-properties with
// an assert-ref requirement, retried on 409 after a reload) to one table: commits/s.
// With --appenders N: N REST clients appending to one table as Iceberg clients do (load the
// table, write a data file, a manifest and a manifest list, commit with assert-ref-snapshot-id,
// reload and redo on 409), once with the server re-basing appends and once without:
// first-attempt success, commits/s, p50/p95 latency per append, every row checked.
//   rest_bench [--clients 8] [--seconds 5] [--writers 8] [--commits 50] [--snapshots 20]
//              [--appenders 32 --appends 10 [--only-appenders]]
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
#include "tests/testing/append_commit.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

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

struct AppendersResult {
  int64_t commits = 0, first_attempt = 0, requests = 0;
  double seconds = 0, p50_ms = 0, p95_ms = 0;
  int64_t rebased = 0;
};

// `appenders` REST clients × `appends` appends of 10 rows each to a new table.
Result<AppendersResult> RunAppenders(const std::string& dir, int appenders, int appends, bool rebase) {
  SKADE_ASSIGN_OR_RETURN(auto db, engine::Database::Open({}));
  SKADE_ASSIGN_OR_RETURN(BenchCatalog bench, OpenBenchCatalog(dir));
  io::FileIO& io = *bench.io;
  catalog::Catalog& cat = *bench.catalog;
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema,
                         engine::SchemaFromColumnDefinitions("id BIGINT NOT NULL, region VARCHAR"));
  catalog::CreateTableRequest req;
  req.schema = schema;
  SKADE_ASSIGN_OR_RETURN(auto ident, catalog::TableIdent::Parse("bench.appended"));
  SKADE_RETURN_IF_ERROR(cat.CreateTable(ident, req).status());
  rest::RestOptions options;
  options.port = 0;
  options.threads = 8;
  options.rebase_commits = rebase;
  SKADE_ASSIGN_OR_RETURN(auto server, rest::RestServer::Start(cat, io, options));
  const std::string path = "/v1/namespaces/bench/tables/appended";
  std::vector<std::vector<double>> latencies(appenders);
  std::vector<int64_t> first(appenders, 0), requests(appenders, 0);
  std::vector<std::string> failures(appenders);
  std::vector<std::thread> threads;
  const double start = NowSeconds();
  for (int a = 0; a < appenders; ++a) {
    threads.emplace_back([&, a] {
      httplib::Client client("127.0.0.1", server->port());
      client.set_keep_alive(true);
      client.set_read_timeout(300, 0);
      for (int k = 0; k < appends; ++k) {
        const double t0 = NowSeconds();
        for (int attempt = 0;; ++attempt) {
          auto loaded = client.Get(path);
          if (!loaded || loaded->status != 200) return void(failures[a] = "loadTable failed");
          auto metadata = iceberg::ParseTableMetadata(Json::parse(loaded->body)["metadata"].dump());
          if (!metadata.ok()) return void(failures[a] = metadata.status().ToString());
          const int64_t first_id = (static_cast<int64_t>(a) * appends + k) * 10;
          const std::string tag = "a" + std::to_string(a) + "-" + std::to_string(k) + "-" + std::to_string(attempt);
          auto commit = testing::WriteAppendCommit(*db, io, *metadata,
                                                   "SELECT range AS id, 'eu' AS region FROM range(" +
                                                       std::to_string(first_id) + ", " + std::to_string(first_id + 10) + ")",
                                                   tag, static_cast<int64_t>(MonotonicNanos() >> 2) + a);
          if (!commit.ok()) return void(failures[a] = commit.status().ToString());
          ++requests[a];
          auto res = client.Post(path, commit->request_json, "application/json");
          if (res && res->status == 200) {
            if (attempt == 0) ++first[a];
            break;
          }
          if (!res || res->status != 409 || attempt > 1000) return void(failures[a] = res ? res->body : "no response");
        }
        latencies[a].push_back((NowSeconds() - t0) * 1e3);
      }
    });
  }
  for (auto& t : threads) t.join();
  AppendersResult out;
  out.seconds = NowSeconds() - start;
  for (const auto& f : failures) {
    if (!f.empty()) return Status::Internal("appender failed: " + f);
  }
  std::vector<double> all;
  for (int a = 0; a < appenders; ++a) {
    all.insert(all.end(), latencies[a].begin(), latencies[a].end());
    out.first_attempt += first[a];
    out.requests += requests[a];
  }
  out.commits = static_cast<int64_t>(all.size());
  out.p50_ms = Percentile(all, 50);
  out.p95_ms = Percentile(all, 95);
  out.rebased = server->stats().rebased;
  server->Shutdown();
  // Every acknowledged row present once, and the commit log dense.
  SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(cat, io, *db, ident));
  SKADE_ASSIGN_OR_RETURN(auto rows, db->QueryRows("SELECT count(*), count(DISTINCT id) FROM (" + *t->ReadSql({}) + ")"));
  const std::string expected = std::to_string(out.commits * 10);
  if (rows.size() != 1 || rows[0][0] != expected || rows[0][1] != expected) {
    return Status::Internal("the table does not hold every acknowledged row once");
  }
  SKADE_ASSIGN_OR_RETURN(auto log, cat.CommitsSince(0, 1 << 20));
  for (size_t i = 1; i < log.size(); ++i) {
    if (log[i].commit_seq != log[i - 1].commit_seq + 1) return Status::Internal("the commit log has a gap");
  }
  return out;
}

Status RunAppenderComparison(const std::string& dir, int appenders, int appends) {
  std::cout << "== " << appenders << " REST appenders × " << appends
            << " appends (10 rows each) to one table, rebasing on vs off\n";
  AppendersResult on, off;
  for (bool rebase : {true, false}) {
    const std::string sub = dir + (rebase ? "/rebase-on" : "/rebase-off");
    std::filesystem::create_directories(sub);
    SKADE_ASSIGN_OR_RETURN(AppendersResult r, RunAppenders(sub, appenders, appends, rebase));
    std::cout << "rebasing " << (rebase ? "on " : "off") << ": " << r.commits << " commits in " << r.seconds << " s = "
              << r.commits / r.seconds << " commits/s; first attempt " << r.first_attempt << "/" << r.commits << " ("
              << 100.0 * static_cast<double>(r.first_attempt) / static_cast<double>(r.commits) << " %); "
              << r.requests << " commit requests; p50 " << r.p50_ms << " ms, p95 " << r.p95_ms << " ms; "
              << r.rebased << " re-based by the server\n";
    (rebase ? on : off) = r;
  }
  std::cout << "ratio on/off: commits/s " << (on.commits / on.seconds) / (off.commits / off.seconds) << ", p50 "
            << on.p50_ms / off.p50_ms << ", p95 " << on.p95_ms / off.p95_ms << "\n";
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"Iceberg REST catalog server: request rates and commit throughput"};
  int clients = 8, writers = 8, commits = 50, snapshots = 20, appenders = 0, appends = 10;
  bool only_appenders = false;
  double seconds = 5;
  app.add_option("--clients", clients, "concurrent readers")->capture_default_str();
  app.add_option("--seconds", seconds, "seconds per endpoint")->capture_default_str();
  app.add_option("--writers", writers, "concurrent committers")->capture_default_str();
  app.add_option("--commits", commits, "commits per writer")->capture_default_str();
  app.add_option("--snapshots", snapshots, "snapshots of the loaded table")->capture_default_str();
  app.add_option("--appenders", appenders, "REST appenders to one table, rebasing on vs off (0: none)");
  app.add_option("--appends", appends, "appends per appender")->capture_default_str();
  app.add_flag("--only-appenders", only_appenders, "run only the appender comparison");
  CLI11_PARSE(app, argc, argv);
  std::string pattern = (std::filesystem::temp_directory_path() / "skade-rest-bench.XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return 1;
  skade::Status st = only_appenders ? skade::Status::Ok()
                                    : skade::bench::Run(pattern + "/load", clients, seconds, writers, commits, snapshots);
  if (st.ok() && appenders > 0) st = skade::bench::RunAppenderComparison(pattern, appenders, appends);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    std::cerr << "rest_bench: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
