// lineage_bench: commit throughput with the OpenLineage emitter on vs off, in one run.
// W writer threads (a table each, so commits never conflict and the catalog is the limit)
// commit C one-row appends; "on" runs a commit watcher and an Emitter that sends every
// commit's START and COMPLETE to an HTTP receiver on loopback (httplib), "off" runs neither.
// Repetitions alternate off/on; prints per-repetition rates, medians, the on/off ratio (goal
// >= 0.95) and how long after the last commit the emitter had delivered everything. After each
// "off" run's commits, the events/s the emitter sustains: an emitter started then at the log's
// beginning drains the whole backlog to the loopback receiver (timed to the last delivery), and
// CommitEventBuilder alone builds the same events (no transport) for comparison.
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
#include "skade/lineage/run_event.h"
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
  double backlog_events_per_s = 0;  // (off only) an emitter draining the whole log
  double build_events_per_s = 0;    // (off only) building the same events, no transport
};

// An emitter started at the log's beginning after every commit was made: the events it
// delivers per second to a loopback receiver, until the last one arrived.
Result<double> DrainBacklog(BenchCatalog& cat, const std::string& dir, int64_t expected_events) {
  Receiver receiver;
  events::Bus bus;
  SKADE_ASSIGN_OR_RETURN(auto watcher, events::Watcher::Start(*cat.catalog, "sqlite://" + dir + "/catalog.db", bus));
  lineage::HttpTransportOptions http;
  http.url = "http://127.0.0.1:" + std::to_string(receiver.port());
  SKADE_ASSIGN_OR_RETURN(auto transport, lineage::MakeHttpTransport(http));
  SKADE_ASSIGN_OR_RETURN(auto cursor, lineage::OpenCursorStore(*cat.catalog, "backlog", dir + "/backlog-cursor"));
  lineage::EmitterOptions options;
  options.naming.warehouse = dir + "/warehouse";
  options.start_at_beginning = true;
  SKADE_ASSIGN_OR_RETURN(int64_t last, cat.catalog->LatestCommitSeq());
  const double start = NowSeconds();
  SKADE_ASSIGN_OR_RETURN(auto emitter, lineage::Emitter::Start(*cat.catalog, *cat.io, bus, std::move(transport),
                                                               std::move(cursor), options));
  if (!emitter->WaitDelivered(last, 300s)) return Status::Internal("the backlog was not drained");
  const double end = NowSeconds();
  emitter->Stop();
  if (receiver.events() != expected_events) {
    return Status::Internal("the backlog gave " + std::to_string(receiver.events()) + " events");
  }
  return static_cast<double>(expected_events) / (end - start);
}

// CommitEventBuilder over every commit of the log (metadata read and parsed per commit, events
// serialised), no transport: the events built per second.
Result<double> BuildOnly(BenchCatalog& cat, const std::string& dir) {
  lineage::LineageNaming naming;
  naming.warehouse = dir + "/warehouse";
  const lineage::CommitEventBuilder builder(*cat.io, naming);
  SKADE_ASSIGN_OR_RETURN(auto entries, cat.catalog->CommitsSince(0, 1'000'000));
  int64_t built = 0;
  size_t bytes = 0;
  const double start = NowSeconds();
  for (const catalog::CommitLogEntry& e : entries) {
    for (const std::string& event : builder.Build(e)) {
      ++built;
      bytes += event.size();
    }
  }
  const double end = NowSeconds();
  if (bytes == 0) return Status::Internal("no events built");
  return static_cast<double>(built) / (end - start);
}

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
  if (!lineage_on) {
    const int64_t expected = 2 * static_cast<int64_t>(writers) * (commits + 1);
    SKADE_ASSIGN_OR_RETURN(run.backlog_events_per_s, DrainBacklog(cat, dir, expected));
    SKADE_ASSIGN_OR_RETURN(run.build_events_per_s, BuildOnly(cat, dir));
  }
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
  std::vector<double> off, on, drain, backlog, build;
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
      if (!lineage_on) {
        backlog.push_back(run->backlog_events_per_s);
        build.push_back(run->build_events_per_s);
      }
      std::printf("rep %d lineage %-3s %8.1f commits/s%s\n", r + 1, lineage_on ? "on" : "off", run->commits_per_s,
                  lineage_on ? (" (delivered " + std::to_string(run->events) + " events, all " +
                                std::to_string(static_cast<int>(run->drain_s * 1000)) + " ms after the last commit)")
                                   .c_str()
                             : (" (then: emitter drains the backlog at " +
                                std::to_string(static_cast<int>(run->backlog_events_per_s)) + " events/s; builder alone " +
                                std::to_string(static_cast<int>(run->build_events_per_s)) + " events/s)")
                                   .c_str());
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
  std::printf("emitter sustains (backlog to loopback HTTP) median %.0f events/s = %.1f x the off commit rate in "
              "events (2 per commit); builder alone median %.0f events/s\n",
              Median(backlog), Median(backlog) / (2 * m_off), Median(build));
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
