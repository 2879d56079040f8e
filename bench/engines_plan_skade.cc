// engines_plan_skade: skade's side of bench/engines_plan_bench.sh (bench/RESULTS.md, section aj).
// Loads a table once, then times either a scan plan (ScanPlanner::PlanFiles, every task counted
// and its record count summed) or a count from metadata (ScanPlanner::CountFromManifests), with
// the same protocol as bench/rust_plan and bench/engines_plan_pyiceberg.py: warm-up runs, then
// timed runs, one JSON object per run on stdout.
//   engines_plan_skade --table DIR [--threads N] [--where SQL] [--mode plan|count]
//                      [--repeat R] [--warmup W]
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "bench/bench_table.h"
#include "bench/bench_util.h"
#include "skade/cli/table_location.h"
#include "skade/engine/database.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::bench {
namespace {

int Fail(const Status& st) {
  std::cerr << "engines_plan_skade: " << st.ToString() << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"skade's planner or metadata count timed on one table"};
  std::string table;
  int threads = 1;
  std::string where;
  std::string mode = "plan";
  int repeat = 5;
  int warmup = 1;
  app.add_option("--table", table, "table folder or metadata file")->required();
  app.add_option("--threads", threads, "manifest reader threads of the planner (set_threads)");
  app.add_option("--where", where, "filter to plan with (DuckDB SQL); none by default");
  app.add_option("--mode", mode, "plan or count")->check(CLI::IsMember({"plan", "count"}));
  app.add_option("--repeat", repeat, "timed runs");
  app.add_option("--warmup", warmup, "untimed runs first");
  CLI11_PARSE(app, argc, argv);

  auto opened = OpenCurrentSnapshot(table);
  if (!opened.ok()) return Fail(opened.status());
  const cli::LoadedTable& t = (*opened)->table;
  io::FileIO* table_io = (*opened)->table_io.get();
  const iceberg::Snapshot& snapshot = *(*opened)->snapshot;
  const iceberg::Schema& schema = *(*opened)->schema;

  // The filter is bound once, outside the timed runs, as the other engines build theirs once.
  iceberg::ExprPtr filter;
  if (!where.empty()) {
    auto db = engine::Database::Open({});
    if (!db.ok()) return Fail(db.status());
    auto predicate = engine::Predicate::Parse(where);
    if (!predicate.ok()) return Fail(predicate.status());
    auto converted = engine::SqlToIcebergFilter(**db, *predicate, schema);
    if (!converted.ok()) return Fail(converted.status());
    filter = *converted;
  }

  for (int run = 0; run < warmup + repeat; ++run) {
    // A fresh planner each run: no manifest is cached between runs.
    iceberg::ScanPlanner planner(*table_io, t.metadata);
    planner.set_threads(threads);
    int64_t tasks = 0;
    int64_t records = 0;
    double start = NowSeconds();
    if (mode == "count") {
      auto counts = planner.CountFromManifests(snapshot);
      if (!counts.ok()) return Fail(counts.status());
      tasks = counts->data_files;
      records = counts->record_count;
    } else {
      Status st = planner.PlanFiles(snapshot, schema, filter, [&](iceberg::FileScanTask task) {
        ++tasks;
        records += task.file.record_count;
        return Status::Ok();
      });
      if (!st.ok()) return Fail(st);
    }
    double seconds = NowSeconds() - start;
    std::cout << "{\"run\": " << run << ", \"warmup\": " << (run < warmup ? "true" : "false")
              << ", \"seconds\": " << seconds << ", \"tasks\": " << tasks
              << ", \"records\": " << records << "}" << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
