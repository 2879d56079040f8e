// ingest_bench: the write path against baselines measured in the same run and process.
//  a) bulk: Table::Append of a generated 10-column Parquet file (read_parquet) into a table on
//     a SQLite catalog vs DuckDB alone copying the same rows to one zstd Parquet file.
//  b) small appends: W writer threads each committing C one-row appends, on one shared table
//     and on one table per writer, with commit coalescing on and off (group commit on and off
//     without it); beside them two baselines: DuckDB alone writing the same one-row Parquet
//     files (with fsync), and the raw catalog compare-and-swap rate (CommitTable with a
//     trivial set-properties update).
//  c) arrow (--only arrow): one thread writing one-row Arrow batches as data files
//     (WriteDataFiles, no commit, no fsync), the batches' schema seen before against a schema
//     new to the database each time, beside DuckDB alone copying the same batch to a file.
// Prints per-repetition times, medians and ratios; see bench/RESULTS.md.
//   ingest_bench [--rows 10000000] [--repeat 3] [--writers 8] [--commits 50] [--cas-commits 200]
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_catalog.h"
#include "bench/bench_util.h"
#include "bench/table_generator.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/data_writer.h"
#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/io/file_io.h"
#include "skade/arrow/builder.h"
#include "skade/table/table.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;

using Catalog = BenchCatalog;

Result<Catalog> OpenCatalog(const std::string& dir, bool group_commit) { return OpenBenchCatalog(dir, group_commit); }

Result<catalog::TableIdent> CreateTable(catalog::Catalog& cat, const std::string& name,
                                        iceberg::SchemaPtr schema, iceberg::PartitionSpecPtr spec,
                                        bool coalesce = true, bool snapshot_per_batch = false,
                                        bool page_checksums = true) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse("bench." + name));
  catalog::CreateTableRequest req;
  req.schema = std::move(schema);
  req.spec = std::move(spec);
  req.properties["write.parquet.compression-codec"] = "zstd";  // as `skade create` sets it
  if (!coalesce) req.properties[table::Table::kCoalesceAppendsProperty] = "false";
  if (snapshot_per_batch) req.properties[table::Table::kSnapshotPerBatchProperty] = "true";
  if (!page_checksums) req.properties[std::string(engine::kPageChecksumsProperty)] = "false";
  SKADE_RETURN_IF_ERROR(cat.CreateTable(ident, req));
  return ident;
}

// Waits until all `n` threads arrived, then lets them go together.
class StartLine {
 public:
  explicit StartLine(int n) : waiting_(n) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--waiting_ == 0) {
      start_ = NowSeconds();
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [this] { return waiting_ == 0; });
  }
  double start() {
    std::lock_guard<std::mutex> lock(mu_);
    return start_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
  double start_ = 0;
};

// ---------------------------------------------------------------- a) bulk ingest

int RunBulk(engine::Database& db, const std::string& dir, int64_t rows, int repeat) {
  auto columns = GeneratedColumns(10, rows);
  std::string source = dir + "/source.parquet";
  double t0 = NowSeconds();
  Status st = db.Execute("COPY (" + GeneratedRowsSql(columns, 0, rows) + ") TO " +
                         engine::QuoteString(source) + " (FORMAT parquet, COMPRESSION zstd)");
  if (!st.ok()) {
    std::cerr << "ingest_bench: " << st.ToString() << "\n";
    return 1;
  }
  std::cout << "source: " << rows << " rows, 10 columns, " << fs::file_size(source)
            << " bytes zstd, written in " << NowSeconds() - t0 << " s\n";

  auto cat = OpenCatalog(dir + "/bulk", true);
  if (!cat.ok()) {
    std::cerr << "ingest_bench: " << cat.status().ToString() << "\n";
    return 1;
  }
  iceberg::SchemaPtr schema = GeneratedSchema(columns);
  auto spec = GeneratedSpec(*schema, PartitionMode::kNone);
  if (!spec.ok()) {
    std::cerr << "ingest_bench: " << spec.status().ToString() << "\n";
    return 1;
  }
  const std::string read_source = "SELECT * FROM read_parquet(" + engine::QuoteString(source) + ")";
  // Three sides per repetition: DuckDB's COPY, skade, and skade writing no page checksums
  // (what adding them costs: one more read and write of every new file).
  std::vector<double> base_times, skade_times, plain_times;
  bool all_ok = true;
  for (int rep = 0; rep < repeat; ++rep) {
    double base_s = 0, skade_s = 0, plain_s = 0;
    int64_t base_bytes = 0;
    table::CommitOutcome outcome;
    auto baseline = [&]() -> Status {
      std::string out = dir + "/baseline-" + std::to_string(rep) + ".parquet";
      double start = NowSeconds();
      SKADE_RETURN_IF_ERROR(db.Execute("COPY (" + read_source + ") TO " + engine::QuoteString(out) +
                                       " (FORMAT parquet, COMPRESSION zstd)"));
      base_s = NowSeconds() - start;
      base_bytes = static_cast<int64_t>(fs::file_size(out));
      fs::remove(out);
      return Status::Ok();
    };
    auto skade = [&](bool checksums, double& seconds) -> Status {
      // A fresh table per repetition, so every append starts from the same state.
      SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident,
                             CreateTable(*cat->catalog, (checksums ? "bulk_" : "plain_") + std::to_string(rep), schema,
                                         *spec, true, false, checksums));
      double start = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(*cat->catalog, *cat->io, db, ident));
      SKADE_ASSIGN_OR_RETURN(outcome, t->Append({read_source, nullptr}));
      seconds = NowSeconds() - start;
      SKADE_ASSIGN_OR_RETURN(int64_t count, t->Count({}));
      if (count != rows || outcome.added_records != rows) {
        return Status::Internal("skade table holds " + std::to_string(count) + " rows, expected " +
                                std::to_string(rows));
      }
      // Free the disk for the next repetition (the catalog keeps the entry; nothing reads it).
      fs::remove_all(t->metadata().location + "/data");
      return Status::Ok();
    };
    // Rotate the order so that page-cache and frequency effects hit every side.
    std::vector<std::function<Status()>> sides = {baseline, [&] { return skade(true, skade_s); },
                                                  [&] { return skade(false, plain_s); }};
    std::rotate(sides.begin(), sides.begin() + rep % 3, sides.end());
    for (const auto& side : sides) {
      if (Status st = side(); !st.ok()) {
        std::cerr << "ingest_bench: " << st.ToString() << "\n";
        return 1;
      }
    }
    base_times.push_back(base_s);
    skade_times.push_back(skade_s);
    plain_times.push_back(plain_s);
    std::cout << "  [bulk] rep " << rep << ": baseline " << base_s << " s (" << base_bytes
              << " bytes), skade " << skade_s << " s (" << outcome.added_files << " files, "
              << outcome.added_bytes << " bytes, " << outcome.attempts << " attempt), skade without page checksums "
              << plain_s << " s\n";
  }
  double bm = Median(base_times), sm = Median(skade_times), pm = Median(plain_times);
  std::cout << "bulk ingest " << rows << " rows: median baseline " << bm << " s, median skade "
            << sm << " s, ratio baseline/skade = " << (sm > 0 ? bm / sm : 0) << " ("
            << (sm > 0 ? rows / sm / 1e6 : 0) << " M rows/s); without page checksums " << pm
            << " s, ratio without/with = " << (sm > 0 ? pm / sm : 0) << "\n";
  fs::remove(source);
  return all_ok ? 0 : 2;
}

// ---------------------------------------------------------------- b) small appends

struct SmallResult {
  int64_t committed = 0;
  int64_t failed = 0;
  int64_t attempts = 0;  // Table commit attempts (0: not counted)
  double seconds = 0;
  double cpu_seconds = 0;  // user + system time of the whole process over the run
  std::vector<double> latencies;
};

// One operation of a writer thread: its status and commit attempts (0 when not counted).
struct Op {
  Status status;
  int attempts = 0;
};
// A writer thread's operation c = 0, 1, …; made on the thread before the start line.
using Worker = std::function<Op(int c)>;

// `writers` threads, each running make_worker(w) `ops` times from a common start line; their
// latencies, counts and failures (the first failure printed).
SmallResult RunWriters(int writers, int ops, const std::function<Result<Worker>(int w)>& make_worker,
                       const char* what) {
  SmallResult result;
  std::mutex mu;
  std::vector<Status> errors;
  StartLine start_line(writers);
  const double cpu_start = ProcessCpuSeconds();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      Result<Worker> worker = make_worker(w);
      start_line.ArriveAndWait();
      if (!worker.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(worker.status());
        return;
      }
      std::vector<double> latencies;
      int64_t done = 0, failed = 0, attempts = 0;
      for (int c = 0; c < ops; ++c) {
        double s = NowSeconds();
        Op op = (*worker)(c);
        latencies.push_back(NowSeconds() - s);
        if (op.status.ok()) {
          ++done;
          attempts += op.attempts;
        } else {
          ++failed;
          std::lock_guard<std::mutex> lock(mu);
          errors.push_back(op.status);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      result.committed += done;
      result.failed += failed;
      result.attempts += attempts;
      result.latencies.insert(result.latencies.end(), latencies.begin(), latencies.end());
    });
  }
  for (auto& th : threads) th.join();
  result.seconds = NowSeconds() - start_line.start();
  result.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  if (!errors.empty()) {
    std::cerr << "  " << errors.size() << " failed " << what << ", first: " << errors.front().ToString() << "\n";
  }
  return result;
}

// `writers` threads, each appending `commits` one-row batches; one table, or one per writer.
Result<SmallResult> RunSmallAppends(engine::Database& db, const std::string& dir, bool group_commit,
                                    bool table_per_writer, bool coalesce, bool snapshot_per_batch, int writers,
                                    int commits) {
  SKADE_ASSIGN_OR_RETURN(Catalog cat, OpenCatalog(dir, group_commit));
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema,
                         engine::SchemaFromColumnDefinitions("w INTEGER, c BIGINT"));
  SKADE_ASSIGN_OR_RETURN(iceberg::PartitionSpecPtr spec,
                         iceberg::ParsePartitionSpec("", *schema, 0));
  std::vector<catalog::TableIdent> idents;
  for (int w = 0; w < (table_per_writer ? writers : 1); ++w) {
    SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident,
                           CreateTable(*cat.catalog, "t" + std::to_string(w), schema, spec, coalesce,
                                       snapshot_per_batch));
    idents.push_back(ident);
  }
  SmallResult result = RunWriters(
      writers, commits,
      [&](int w) -> Result<Worker> {
        SKADE_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t,
                               table::Table::Load(*cat.catalog, *cat.io, db, idents[table_per_writer ? w : 0]));
        return Worker([t, w](int c) {
          auto r = t->Append({"SELECT " + std::to_string(w) + " AS w, " + std::to_string(c) + " AS c", nullptr});
          return r.ok() ? Op{Status::Ok(), r->attempts} : Op{r.status(), 0};
        });
      },
      "appends");
  // Every committed row is there.
  int64_t rows = 0;
  for (const auto& ident : idents) {
    SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(*cat.catalog, *cat.io, db, ident));
    SKADE_ASSIGN_OR_RETURN(int64_t n, t->Count({}));
    rows += n;
  }
  if (rows != result.committed) {
    return Status::Internal("tables hold " + std::to_string(rows) + " rows, " +
                            std::to_string(result.committed) + " appends committed");
  }
  return result;
}

// The floor under a small append: `writers` threads each writing `commits` one-row zstd
// Parquet files with DuckDB (the same COPY an append runs) and fsyncing each with its folder.
Result<SmallResult> RunDuckDbFiles(engine::Database& db, const std::string& dir, int writers, int commits) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  SmallResult result = RunWriters(
      writers, commits,
      [&](int w) -> Result<Worker> {
        return Worker([&db, &dir, w](int c) {
          const std::string path = dir + "/f-" + std::to_string(w) + "-" + std::to_string(c) + ".parquet";
          Status st = db.Execute("COPY (SELECT " + std::to_string(w) + "::INTEGER AS w, " + std::to_string(c) +
                                 "::BIGINT AS c) TO " + engine::QuoteString(path) + " (FORMAT PARQUET, COMPRESSION ZSTD)");
          if (st.ok()) st = engine::SyncFiles({path});
          return Op{st, 0};
        });
      },
      "file writes");
  if (result.failed > 0) return Status::IoError("DuckDB baseline: writes failed");
  return result;
}

// Raw catalog CAS: `threads` threads each committing `commits` set-properties updates
// (requirement: assert-table-uuid only, so none conflicts) to one table.
Result<SmallResult> RunCas(const std::string& dir, bool group_commit,
                           int threads_n, int commits) {
  SKADE_ASSIGN_OR_RETURN(Catalog cat, OpenCatalog(dir, group_commit));
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema,
                         engine::SchemaFromColumnDefinitions("w INTEGER"));
  SKADE_ASSIGN_OR_RETURN(iceberg::PartitionSpecPtr spec,
                         iceberg::ParsePartitionSpec("", *schema, 0));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, CreateTable(*cat.catalog, "cas", schema, spec));
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, cat.catalog->LoadTable(ident));
  const std::string uuid = state.metadata->table_uuid;
  return RunWriters(
      threads_n, commits,
      [&](int w) -> Result<Worker> {
        return Worker([&cat, &ident, &uuid, w](int c) {
          catalog::TableCommit commit;
          commit.ident = ident;
          commit.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(uuid));
          commit.updates.push_back(
              iceberg::TableUpdate::SetProperties({{"bench.w" + std::to_string(w), std::to_string(c)}}));
          return Op{cat.catalog->CommitTable(commit).status(), 0};
        });
      },
      "commits");
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(k, v.size() - 1)];
}

void PrintSmall(const std::string& label, const SmallResult& r) {
  std::cout << label << ": " << r.committed << " committed, " << r.failed << " failed in "
            << r.seconds
            << " s = " << (r.seconds > 0 ? static_cast<double>(r.committed) / r.seconds : 0)
            << " commits/s";
  if (r.attempts > 0) {
    std::cout << "; attempts/commit "
              << static_cast<double>(r.attempts) / static_cast<double>(r.committed);
  }
  std::cout << ", latency p50 " << Percentile(r.latencies, 0.5) * 1e3 << " ms, p99 "
            << Percentile(r.latencies, 0.99) * 1e3 << " ms, CPU "
            << (r.committed > 0 ? r.cpu_seconds * 1e3 / static_cast<double>(r.committed) : 0) << " ms/commit\n";
}

// A one-row batch (w INTEGER, c BIGINT); `tag`, when not empty, goes into the metadata of w,
// which DuckDB ignores but which makes the schema one the database has not seen.
arrow::StreamHandle OneRowBatch(int64_t c, const std::string& tag) {
  std::vector<arrow::ArrayBuilder> cols;
  cols.emplace_back("w", "i", true);
  if (!tag.empty()) cols.back().set_metadata({{"bench.tag", tag}});
  cols.emplace_back("c", "l", true);
  arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  b.AppendStruct();
  b.child(0).AppendInt(1);
  b.child(1).AppendInt(c);
  arrow::SchemaHandle schema;
  arrow::ArrayHandle batch;
  if (!b.Finish(schema.get(), batch.get()).ok()) return {};
  std::vector<arrow::ArrayHandle> batches;
  batches.push_back(std::move(batch));
  return arrow::MakeBatchStream(std::move(schema), std::move(batches));
}

// `ops` rounds; each round writes one file each way, in turn: the schema seen before, a new
// schema, and DuckDB's COPY of the same batch. Medians of CPU and wall time per file.
int RunArrow(engine::Database& db, const std::string& dir, int ops) {
  auto schema = engine::SchemaFromColumnDefinitions("w INTEGER, c BIGINT");
  auto spec = schema.ok() ? iceberg::ParsePartitionSpec("", **schema, 0) : Result<iceberg::PartitionSpecPtr>(schema.status());
  if (!spec.ok()) {
    std::cerr << "ingest_bench: " << spec.status().ToString() << "\n";
    return 1;
  }
  engine::WriteOptions options;
  options.data_location = dir + "/arrow";
  options.compression = "zstd";
  options.sync = engine::WriteOptions::Sync::kByCaller;
  std::error_code ec;
  fs::create_directories(dir + "/duckdb-arrow", ec);
  const char* names[] = {"WriteDataFiles, schema seen before", "WriteDataFiles, schema new each time",
                         "baseline: DuckDB COPY of the batch to a file"};
  std::vector<double> cpu[3], wall[3];
  for (int i = -1; i < ops; ++i) {  // round -1 warms up (the seen schema is seen there first)
    for (int way = 0; way < 3; ++way) {
      arrow::StreamHandle batch = OneRowBatch(i, way == 1 ? "r" + std::to_string(i) : "");
      const double c0 = ProcessCpuSeconds(), t0 = NowSeconds();
      Status st;
      if (way < 2) {
        st = engine::WriteDataFiles(db, {"SELECT * FROM __skade_input", batch.get()}, **schema, **spec, options).status();
      } else {
        const std::string path = dir + "/duckdb-arrow/f-" + std::to_string(i) + ".parquet";
        st = db.QueryRowsWithArrow("__skade_input", batch.get(),
                                   "COPY (SELECT * FROM __skade_input) TO " + engine::QuoteString(path) +
                                       " (FORMAT parquet, COMPRESSION zstd)")
                 .status();
      }
      const double c1 = ProcessCpuSeconds(), t1 = NowSeconds();
      if (!st.ok()) {
        std::cerr << "ingest_bench: " << names[way] << ": " << st.ToString() << "\n";
        return 1;
      }
      if (i < 0) continue;
      cpu[way].push_back(c1 - c0);
      wall[way].push_back(t1 - t0);
    }
  }
  for (int way = 0; way < 3; ++way) {
    const double c = Percentile(cpu[way], 0.5), w = Percentile(wall[way], 0.5);
    std::cout << names[way] << ", " << ops << " one-row files: median " << w * 1e6 << " us wall, " << c * 1e6
              << " us CPU per file; " << w / Percentile(wall[2], 0.5) << "x the baseline's wall, "
              << c / Percentile(cpu[2], 0.5) << "x its CPU\n";
  }
  return 0;
}

// `coalesced_only`: the baseline and the coalescing runs, without the slower runs beside them.
int RunSmall(engine::Database& db, const std::string& dir, int writers, int commits,
             int cas_commits, bool coalesced_only) {
  int k = 0;
  {
    std::string label = "baseline: DuckDB one-row Parquet files + fsync, " + std::to_string(writers) + " threads x " +
                        std::to_string(commits);
    auto r = RunDuckDbFiles(db, dir + "/duckdb-files", writers, commits);
    if (!r.ok()) {
      std::cerr << "ingest_bench: " << label << ": " << r.status().ToString() << "\n";
      return 1;
    }
    PrintSmall(label, *r);
  }
  for (bool per_writer : {false, true}) {
    // Coalescing off, on (a snapshot per append), on with a snapshot per batch (table property).
    for (int coalescing : {1, 2, 0}) {
      const bool coalesce = coalescing > 0, per_batch = coalescing == 2;
      // Group commit matters across tables; coalescing within one.
      for (bool group : {true, false}) {
        if ((!group && coalesce) || (coalesced_only && !coalesce)) continue;
        if (per_writer && per_batch) continue;  // one writer per table: batches of one
        std::string label = std::string("appends, ") + std::to_string(writers) + " writers x " +
                            std::to_string(commits) + " one-row commits, " +
                            (per_writer ? "one table per writer" : "one shared table") + ", coalescing " +
                            (per_batch ? "on, a snapshot per batch" : coalesce ? "on" : "off") + ", group commit " +
                            (group ? "on" : "off");
        auto r = RunSmallAppends(db, dir + "/small-" + std::to_string(k++), group, per_writer, coalesce, per_batch,
                                 writers, commits);
        if (!r.ok()) {
          std::cerr << "ingest_bench: " << label << ": " << r.status().ToString() << "\n";
          return 1;
        }
        PrintSmall(label, *r);
      }
    }
  }
  for (int threads_n : {writers, 1}) {
    if (coalesced_only) break;
    for (bool group : {true, false}) {
      std::string label = "catalog CAS (CommitTable set-properties), " + std::to_string(threads_n) +
                          " threads x " + std::to_string(cas_commits) + ", group commit " +
                          (group ? "on" : "off");
      auto r = RunCas(dir + "/cas-" + std::to_string(k++), group, threads_n, cas_commits);
      if (!r.ok()) {
        std::cerr << "ingest_bench: " << label << ": " << r.status().ToString() << "\n";
        return 1;
      }
      PrintSmall(label, *r);
    }
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"skade ingest vs DuckDB COPY; small concurrent appends and catalog CAS rate"};
  int64_t rows = 10'000'000;
  int repeat = 3;
  int threads = 0;
  int writers = 8;
  int commits = 50;
  int cas_commits = 200;
  std::string dir;
  std::string only;
  app.add_option("--rows", rows, "rows of the bulk ingest")->capture_default_str();
  app.add_option("--repeat", repeat, "bulk repetitions (median)")->capture_default_str();
  app.add_option("--threads", threads, "DuckDB threads (0 = all cores)");
  app.add_option("--writers", writers, "concurrent writer threads (small appends, CAS)")
      ->capture_default_str();
  app.add_option("--commits", commits, "one-row appends per writer")->capture_default_str();
  app.add_option("--cas-commits", cas_commits, "catalog commits per thread")->capture_default_str();
  app.add_option("--dir", dir,
                 "work folder (default: a new folder under $TMPDIR, removed at exit)");
  app.add_option("--only", only,
                 "bulk | small | coalesced (the baseline and coalesced small appends) | arrow (one-row Arrow "
                 "batches written as files, --commits of them); default bulk and small")
      ->check(CLI::IsMember({"bulk", "small", "coalesced", "arrow"}));
  CLI11_PARSE(app, argc, argv);

  bool own_dir = dir.empty();
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/skade-ingest-bench.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "ingest_bench: mkdtemp failed\n";
      return 1;
    }
    dir = pattern;
  }
  engine::DatabaseOptions options;
  options.threads = threads;
  auto db = engine::Database::Open(options);
  if (!db.ok()) {
    std::cerr << "ingest_bench: " << db.status().ToString() << "\n";
    return 1;
  }
  int rc = 0;
  if (only.empty() || only == "bulk") rc = RunBulk(**db, dir, rows, repeat);
  if (only == "arrow") rc = RunArrow(**db, dir, commits);
  if (rc == 0 && (only.empty() || only == "small" || only == "coalesced"))
    rc = RunSmall(**db, dir, writers, commits, cas_commits, only == "coalesced");
  std::error_code ec;
  if (own_dir) fs::remove_all(dir, ec);
  return rc;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
