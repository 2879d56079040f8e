// scan_bench: reads a table through skade's scan path (load metadata, plan, build the
// field-id-mapped read_parquet SQL, stream Arrow) and, in the same run and process, the same
// Parquet files with DuckDB's read_parquet draining the same kind of Arrow stream
// (Database::QueryArrow). Prints per-repetition times, medians and
// ratio = baseline / skade (1.0 = no overhead; higher is better for skade).
//   scan_bench --table /tmp/t [--repeat 5] [--where 'id < 100000']
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "skade/cli/table_location.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::bench {
namespace {

struct Run {
  double seconds = 0;
  int64_t rows = 0;
  int64_t files = 0;
};

// The whole `skade scan TABLE [--where W]` path up to a drained Arrow stream.
Result<Run> SkadeScan(engine::Database& db, const std::string& table, const std::string& where) {
  double start = NowSeconds();
  auto local_io = io::MakeLocalFileIO();
  SKADE_ASSIGN_OR_RETURN(cli::LoadedTable t, cli::LoadTable(*local_io, table, {}));
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(t.metadata, {}));
  if (selected.snapshot == nullptr) return Status::InvalidArgument("table has no snapshot");
  iceberg::ExprPtr filter;
  std::optional<engine::Predicate> predicate;
  if (!where.empty()) {
    SKADE_ASSIGN_OR_RETURN(predicate, engine::Predicate::Parse(where));
    SKADE_ASSIGN_OR_RETURN(filter, engine::SqlToIcebergFilter(db, *predicate, *selected.schema));
  }
  iceberg::ScanPlanner planner(*table_io, t.metadata);
  engine::IcebergScan scan;
  scan.schema = selected.schema;
  scan.name_mapping = t.metadata.DefaultNameMapping();
  scan.locations = t.locations;
  SKADE_ASSIGN_OR_RETURN(scan.tasks, planner.PlanAll(*selected.snapshot, *selected.schema, filter));
  engine::ScanQuery query;
  query.where = predicate;
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, engine::ScanToArrow(db, scan, query));
  SKADE_ASSIGN_OR_RETURN(int64_t rows, DrainStream(stream));
  return Run{NowSeconds() - start, rows, static_cast<int64_t>(scan.tasks.size())};
}

// DuckDB alone on the same files: SELECT * FROM read_parquet([...]) [WHERE W].
Result<Run> BaselineScan(engine::Database& db, const std::vector<std::string>& files,
                         const std::string& where) {
  double start = NowSeconds();
  std::string list = "[";
  for (size_t k = 0; k < files.size(); ++k) list += (k ? ", " : "") + engine::QuoteString(files[k]);
  list += "]";
  std::string sql = "SELECT * FROM read_parquet(" + list + ")";
  if (!where.empty()) sql += " WHERE " + where;
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, db.QueryArrow(sql));
  SKADE_ASSIGN_OR_RETURN(int64_t rows, DrainStream(stream));
  return Run{NowSeconds() - start, rows, static_cast<int64_t>(files.size())};
}

// Every data file of the current snapshot (unfiltered plan), local paths.
Result<std::vector<std::string>> AllFiles(const std::string& table) {
  auto local_io = io::MakeLocalFileIO();
  SKADE_ASSIGN_OR_RETURN(cli::LoadedTable t, cli::LoadTable(*local_io, table, {}));
  auto table_io = io::MakeRelocatingFileIO(*local_io, t.locations);
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(t.metadata, {}));
  if (selected.snapshot == nullptr) return Status::InvalidArgument("table has no snapshot");
  iceberg::ScanPlanner planner(*table_io, t.metadata);
  SKADE_ASSIGN_OR_RETURN(auto tasks,
                         planner.PlanAll(*selected.snapshot, *selected.schema, nullptr));
  std::vector<std::string> out;
  for (const auto& task : tasks) out.push_back(t.locations.Apply(task.file.file_path));
  return out;
}

int Main(int argc, char** argv) {
  CLI::App app{"skade scan path vs DuckDB read_parquet on the same files"};
  std::string table;
  int repeat = 5;
  int threads = 0;
  std::vector<std::string> wheres;
  app.add_option("--table", table, "generated table folder")->required();
  app.add_option("--repeat", repeat, "repetitions per workload")->capture_default_str();
  app.add_option("--threads", threads, "DuckDB threads (0 = all cores)");
  app.add_option("--where", wheres, "extra filtered workloads (DuckDB SQL), may repeat");
  CLI11_PARSE(app, argc, argv);

  engine::DatabaseOptions options;
  options.threads = threads;
  auto db = engine::Database::Open(options);
  if (!db.ok()) {
    std::cerr << "scan_bench: " << db.status().ToString() << "\n";
    return 1;
  }
  auto files = AllFiles(table);
  if (!files.ok()) {
    std::cerr << "scan_bench: " << files.status().ToString() << "\n";
    return 1;
  }
  std::vector<std::string> workloads = {""};
  workloads.insert(workloads.end(), wheres.begin(), wheres.end());
  bool all_ok = true;
  for (const std::string& where : workloads) {
    std::string label = where.empty() ? "full scan" : "WHERE " + where;
    std::vector<double> skade_times, base_times;
    int64_t skade_rows = -1, base_rows = -1, skade_files = 0;
    // One warm-up of each (page cache, DuckDB caches), then alternate so noise hits both.
    for (int rep = -1; rep < repeat; ++rep) {
      auto b = BaselineScan(**db, *files, where);
      auto s = SkadeScan(**db, table, where);
      if (!b.ok() || !s.ok()) {
        std::cerr << "scan_bench: " << (b.ok() ? s.status() : b.status()).ToString() << "\n";
        return 1;
      }
      if (rep < 0) continue;
      base_times.push_back(b->seconds);
      skade_times.push_back(s->seconds);
      base_rows = b->rows;
      skade_rows = s->rows;
      skade_files = s->files;
      std::cout << "  [" << label << "] rep " << rep << ": baseline " << b->seconds << " s, skade "
                << s->seconds << " s\n";
    }
    double bm = Median(base_times), sm = Median(skade_times);
    std::cout << label << ": rows skade=" << skade_rows << " baseline=" << base_rows
              << ", files skade=" << skade_files << " baseline=" << files->size()
              << ", median baseline " << bm << " s, median skade " << sm
              << " s, ratio baseline/skade = " << (sm > 0 ? bm / sm : 0) << "\n";
    if (skade_rows != base_rows) {
      std::cout << "  MISMATCH: row counts differ\n";
      all_ok = false;
    }
  }
  return all_ok ? 0 : 2;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
