// plan_bench: scan planning over a large (generated, usually fake-data-file) table. Measures
// `skade scan --count` (the CLI path: counts from manifest metadata, no data file opened),
// ScanPlanner::CountFromManifests, PlanAll without and with selective filters, and streaming
// PlanFiles, each with its peak RSS growth (VmHWM reset before every phase).
//   plan_bench --table /tmp/p [--repeat 3] [--where 'id < 1000']
#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "skade/cli/commands.h"
#include "skade/cli/table_location.h"
#include "skade/engine/database.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::bench {
namespace {

struct Phase {
  std::string name;
  std::vector<double> seconds;
  int64_t peak_growth_kb = 0;  // max over repetitions of VmHWM − RSS at start
  std::string detail;
};

void Report(const Phase& p) {
  std::cout << p.name << ": median " << Median(p.seconds) * 1000 << " ms over " << p.seconds.size()
            << " runs, peak RSS growth " << p.peak_growth_kb / 1024.0 << " MiB";
  if (!p.detail.empty()) std::cout << ", " << p.detail;
  std::cout << "\n";
}

// Runs `body` `repeat` times, timing each run and tracking the RSS high-water mark.
template <typename F>
Status Measure(Phase* phase, int repeat, F body) {
  for (int rep = 0; rep < repeat; ++rep) {
    ResetPeakRss();
    int64_t rss = ProcStatusKb("VmRSS");
    double start = NowSeconds();
    SKADE_RETURN_IF_ERROR(body());
    phase->seconds.push_back(NowSeconds() - start);
    phase->peak_growth_kb = std::max(phase->peak_growth_kb, ProcStatusKb("VmHWM") - rss);
  }
  return Status::Ok();
}

int Fail(const Status& st) {
  std::cerr << "plan_bench: " << st.ToString() << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"Scan planning and manifest-only counts on a large table"};
  std::string table;
  int repeat = 3;
  std::vector<std::string> wheres;
  app.add_option("--table", table, "table folder")->required();
  app.add_option("--repeat", repeat, "repetitions per phase")->capture_default_str();
  app.add_option("--where", wheres, "selective filters to plan with (DuckDB SQL), may repeat");
  CLI11_PARSE(app, argc, argv);

  std::cout << "start: RSS " << ProcStatusKb("VmRSS") / 1024.0 << " MiB\n";

  // 1. The CLI's `skade scan TABLE --count -v` in process (loads metadata, opens DuckDB,
  // counts from the manifest list). The data files do not exist for a fake table, so a
  // correct answer proves none was opened.
  Phase cli_count{"skade scan --count (cli::RunScan)", {}, 0, ""};
  Status st = Measure(&cli_count, repeat, [&]() -> Status {
    cli::ScanArgs args;
    args.table = table;
    args.count = true;
    args.verbose = true;
    std::ostringstream out, err;
    if (cli::RunScan(args, out, err) != 0) return Status::Internal("RunScan failed: " + err.str());
    std::string text = out.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    cli_count.detail = "count=" + text + " (" + err.str().substr(0, err.str().size() - 1) + ")";
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  Report(cli_count);

  auto local_io = io::MakeLocalFileIO();
  auto loaded = cli::LoadTable(*local_io, table, {});
  if (!loaded.ok()) return Fail(loaded.status());
  cli::LoadedTable& t = *loaded;
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);
  auto selected = iceberg::SelectSnapshot(t.metadata, {});
  if (!selected.ok()) return Fail(selected.status());
  if (selected->snapshot == nullptr) return Fail(Status::InvalidArgument("no snapshot"));
  const iceberg::Snapshot& snapshot = *selected->snapshot;
  const iceberg::Schema& schema = *selected->schema;

  // 2. CountFromManifests alone.
  Phase count{"CountFromManifests", {}, 0, ""};
  st = Measure(&count, repeat, [&]() -> Status {
    iceberg::ScanPlanner planner(*table_io, t.metadata);
    SKADE_ASSIGN_OR_RETURN(auto counts, planner.CountFromManifests(snapshot));
    count.detail = std::to_string(counts.record_count) + " rows in " +
                   std::to_string(counts.data_files) + " data files";
    return Status::Ok();
  });
  if (!st.ok()) return Fail(st);
  Report(count);

  // 3. Per filter: streaming PlanFiles (each task dropped at once), then PlanAll.
  auto db = engine::Database::Open({});
  if (!db.ok()) return Fail(db.status());
  std::vector<std::string> filters = {""};
  filters.insert(filters.end(), wheres.begin(), wheres.end());
  for (const std::string& where : filters) {
    iceberg::ExprPtr filter;
    if (!where.empty()) {
      auto predicate = engine::Predicate::Parse(where);
      if (!predicate.ok()) return Fail(predicate.status());
      auto f = engine::SqlToIcebergFilter(**db, *predicate, schema);
      if (!f.ok()) return Fail(f.status());
      filter = *f;
    }
    std::string label = where.empty() ? "no filter" : "WHERE " + where;
    Phase stream{"PlanFiles (streaming sink), " + label, {}, 0, ""};
    st = Measure(&stream, repeat, [&]() -> Status {
      iceberg::ScanPlanner planner(*table_io, t.metadata);
      int64_t n = 0;
      SKADE_RETURN_IF_ERROR(planner.PlanFiles(snapshot, schema, filter, [&](iceberg::FileScanTask) {
        ++n;
        return Status::Ok();
      }));
      stream.detail = std::to_string(n) + " tasks";
      return Status::Ok();
    });
    if (!st.ok()) return Fail(st);
    Report(stream);
    Phase plan{"PlanAll, " + label, {}, 0, ""};
    st = Measure(&plan, repeat, [&]() -> Status {
      iceberg::ScanPlanner planner(*table_io, t.metadata);
      SKADE_ASSIGN_OR_RETURN(auto tasks, planner.PlanAll(snapshot, schema, filter));
      const auto& s = planner.stats();
      plan.detail = std::to_string(tasks.size()) + " tasks; manifests " +
                    std::to_string(s.manifests_total) + " (" + std::to_string(s.manifests_skipped) +
                    " skipped), files " + std::to_string(s.data_files_total) + " (" +
                    std::to_string(s.data_files_skipped) + " skipped)";
      return Status::Ok();
    });
    if (!st.ok()) return Fail(st);
    Report(plan);
  }
  std::cout << "end: RSS " << ProcStatusKb("VmRSS") / 1024.0
            << " MiB, process peak (VmHWM since last reset) " << ProcStatusKb("VmHWM") / 1024.0
            << " MiB\n";
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
