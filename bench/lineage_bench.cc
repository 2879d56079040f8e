// lineage_bench: commit throughput with the OpenLineage emitter on vs off, in one run.
// W writer threads (a table each, so commits never conflict and the catalog is the limit)
// commit C one-row appends; "on" runs a commit watcher and an Emitter that sends every
// commit's START and COMPLETE to an HTTP receiver on loopback (httplib), "off" runs neither.
// Repetitions alternate off/on; prints per-repetition rates, medians, the on/off ratio (goal
// >= 0.95) and how long after the last commit the emitter had delivered everything.
//   lineage_bench [--writers 4] [--commits 100] [--repeat 5]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_catalog.h"
#include "bench/bench_util.h"
#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/events/watcher.h"
#include "skade/lineage/emitter.h"
#include "skade/lineage/transport.h"
#include "skade/table/table.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Accepts every event (201) and counts them.
class Receiver {
 public:
  Receiver() {
    server_.Post("/api/v1/lineage", [this](const httplib::Request&, httplib::Response& res) {
      ++events_;
      res.status = 201;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  int64_t events() const { return events_.load(); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int64_t> events_{0};
};

struct Run {
  double commits_per_s = 0;
  double drain_s = 0;  // after the last commit, until every event was delivered (on only)
  int64_t events = 0;
};

Result<Run> RunOnce(engine::Database& db, const std::string& dir, bool lineage_on, int writers, int commits) {
  SKADE_ASSIGN_OR_RETURN(BenchCatalog cat, OpenBenchCatalog(dir));
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema, engine::SchemaFromColumnDefinitions("w INTEGER, c BIGINT"));
  SKADE_ASSIGN_OR_RETURN(iceberg::PartitionSpecPtr spec, iceberg::ParsePartitionSpec("", *schema, 0));
  std::vector<std::unique_ptr<table::Table>> tables;
  for (int w = 0; w < writers; ++w) {
    SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse("bench.t" + std::to_string(w)));
    catalog::CreateTableRequest req;
    req.schema = schema;
    req.spec = spec;
    SKADE_RETURN_IF_ERROR(cat.catalog->CreateTable(ident, req));
    SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(*cat.catalog, *cat.io, db, ident));
    tables.push_back(std::move(t));
  }

  std::unique_ptr<Receiver> receiver;
  events::Bus bus;
  std::unique_ptr<events::Watcher> watcher;
  std::unique_ptr<lineage::Emitter> emitter;
  if (lineage_on) {
    receiver = std::make_unique<Receiver>();
    SKADE_ASSIGN_OR_RETURN(watcher, events::Watcher::Start(*cat.catalog, "sqlite://" + dir + "/catalog.db", bus));
    lineage::HttpTransportOptions http;
    http.url = "http://127.0.0.1:" + std::to_string(receiver->port());
    SKADE_ASSIGN_OR_RETURN(auto transport, lineage::MakeHttpTransport(http));
    SKADE_ASSIGN_OR_RETURN(auto cursor, lineage::OpenCursorStore(*cat.catalog, "openlineage", dir + "/cursor"));
    lineage::EmitterOptions options;
    options.naming.warehouse = dir + "/warehouse";
    options.failure_spool = dir + "/failed-writes.jsonl";
    options.start_at_beginning = true;  // the creates too
    SKADE_ASSIGN_OR_RETURN(emitter, lineage::Emitter::Start(*cat.catalog, *cat.io, bus, std::move(transport),
                                                            std::move(cursor), options));
  }

  std::mutex mu;
  Status failed;
  std::vector<std::thread> threads;
  const double start = NowSeconds();
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (int c = 0; c < commits; ++c) {
        auto r = tables[w]->Append({"SELECT " + std::to_string(w) + " AS w, " + std::to_string(c) + " AS c", nullptr});
        if (!r.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          failed = r.status();
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double end = NowSeconds();
  SKADE_RETURN_IF_ERROR(failed);
  Run run;
  run.commits_per_s = writers * commits / (end - start);
  if (lineage_on) {
    SKADE_ASSIGN_OR_RETURN(int64_t last, cat.catalog->LatestCommitSeq());
    if (!emitter->WaitDelivered(last, 300s)) return Status::Internal("the emitter did not catch up");
    run.drain_s = NowSeconds() - end;
    emitter->Stop();
    run.events = receiver->events();
    // The creates and every append: a START and a COMPLETE each.
    if (run.events != 2 * static_cast<int64_t>(writers) * (commits + 1)) {
      return Status::Internal("the receiver got " + std::to_string(run.events) + " events");
    }
  }
  return run;
}

int Main(int argc, char** argv) {
  CLI::App app{"commit throughput with the OpenLineage emitter on vs off"};
  int writers = 4, commits = 100, repeat = 5;
  app.add_option("--writers", writers, "writer threads, a table each")->check(CLI::Range(1, 64));
  app.add_option("--commits", commits, "one-row appends per writer")->check(CLI::Range(1, 100000));
  app.add_option("--repeat", repeat, "repetitions of off and on (alternating)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  auto db = engine::Database::Open({});
  if (!db.ok()) {
    std::cerr << db.status().ToString() << "\n";
    return 1;
  }
  const std::string root = fs::temp_directory_path() / ("skade-lineage-bench-" + std::to_string(::getpid()));
  std::vector<double> off, on, drain;
  int k = 0;
  for (int r = 0; r < repeat; ++r) {
    for (bool lineage_on : {false, true}) {
      auto run = RunOnce(**db, root + "/" + std::to_string(k++), lineage_on, writers, commits);
      if (!run.ok()) {
        std::cerr << "lineage_bench: " << run.status().ToString() << "\n";
        return 1;
      }
      (lineage_on ? on : off).push_back(run->commits_per_s);
      if (lineage_on) drain.push_back(run->drain_s);
      std::printf("rep %d lineage %-3s %8.1f commits/s%s\n", r + 1, lineage_on ? "on" : "off", run->commits_per_s,
                  lineage_on ? (" (delivered " + std::to_string(run->events) + " events, all " +
                                std::to_string(static_cast<int>(run->drain_s * 1000)) + " ms after the last commit)")
                                   .c_str()
                             : "");
    }
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  const double m_off = Median(off), m_on = Median(on);
  // Each "on" against the "off" run just before it: the machine's drift cancels out.
  std::vector<double> pairs;
  for (size_t i = 0; i < on.size(); ++i) pairs.push_back(on[i] / off[i]);
  std::printf("median: off %.1f commits/s, on %.1f commits/s, on/off %.3f, median of paired ratios %.3f "
              "(goal >= 0.95); drain median %.0f ms\n",
              m_off, m_on, m_on / m_off, Median(pairs), Median(drain) * 1000);
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
