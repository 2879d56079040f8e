// The cost of checking Parquet page checksums before a scan (issue 31 item 8,
// engine/data_file_checks.h): the same DuckDB query over the same files with and without the
// check that skade's scan path runs first (its per-process memory cleared before every run, so
// each run pays the first read's cost), for files without CRCs (DuckDB's, as skade writes
// them: a probe of the first pages) and the same files with a CRC on every page (as Spark
// writes them: every page read and checked). Local disk, and s3rver on loopback.
//   page_checksums_bench [--rows 4000000] [--files 4] [--repeats 5] [--no-s3]
#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "skade/engine/data_file_checks.h"
#include "skade/engine/database.h"
#include "skade/iceberg/parquet_pages.h"
#include "skade/io/s3_file_io.h"
#include "tests/testing/child_process.h"
#include "tests/testing/parquet_checksums.h"
#include "tests/testing/temp_dir.h"

namespace skade::bench {
namespace {

int Fail(const Status& st) {
  std::cerr << "page_checksums_bench: " << st.ToString() << "\n";
  return 1;
}

std::string List(const std::vector<std::string>& files) {
  std::string out = "[";
  for (size_t i = 0; i < files.size(); ++i) out += (i ? ", " : "") + engine::QuoteString(files[i]);
  return out + "]";
}

struct Timing {
  double plain = 0;    // the query alone
  double checked = 0;  // the check (nothing remembered), then the query
  double check = 0;    // the check alone
};

// Medians over `repeats` alternating runs.
Result<Timing> Measure(engine::Database& db, const std::vector<engine::DataFileRef>& files,
                       const std::string& sql, int repeats) {
  std::vector<double> plain, checked, check;
  engine::DataFileChecks& checks = db.data_file_checks();
  SKADE_RETURN_IF_ERROR(db.QueryRows(sql).status());  // warm-up (and a correctness run)
  for (int i = 0; i < repeats; ++i) {
    double t0 = NowSeconds();
    SKADE_RETURN_IF_ERROR(db.QueryRows(sql).status());
    plain.push_back(NowSeconds() - t0);
    checks.Forget();
    t0 = NowSeconds();
    SKADE_RETURN_IF_ERROR(checks.Check(files));
    const double t1 = NowSeconds();
    SKADE_RETURN_IF_ERROR(db.QueryRows(sql).status());
    checked.push_back(NowSeconds() - t0);
    check.push_back(t1 - t0);
  }
  return Timing{Median(plain), Median(checked), Median(check)};
}

int Main(int argc, char** argv) {
  CLI::App app{"Scan cost of checking Parquet page checksums"};
  int64_t rows = 4'000'000;
  int files = 4;
  int repeats = 5;
  bool no_s3 = false;
  app.add_option("--rows", rows, "rows in all (split evenly over the files)");
  app.add_option("--files", files, "Parquet files");
  app.add_option("--repeats", repeats, "runs per measurement (median)");
  app.add_flag("--no-s3", no_s3, "local files only (no s3rver)");
  CLI11_PARSE(app, argc, argv);
  testing::TempDir dir;

  std::unique_ptr<testing::ChildProcess> server;
  std::unique_ptr<io::S3FileIO> s3;
  if (!no_s3) {
    std::filesystem::create_directories(dir.Path("s3"));
    server = testing::ChildProcess::Start(
        {"node", "--openssl-legacy-provider", testing::SourcePath("tests/interop/s3rver.mjs"),
         dir.Path("s3"), "bench"},
        dir.Path("s3rver.err"));
    if (!server) return Fail(Status::Unavailable("cannot start node"));
    const std::string line = server->ReadLine(std::chrono::seconds(30));
    if (line.rfind("port ", 0) != 0)
      return Fail(Status::Unavailable("s3rver did not start: " + line));
    io::S3Options o;
    o.endpoint = "http://127.0.0.1:" + line.substr(5);
    o.access_key_id = "S3RVER";
    o.secret_access_key = "S3RVER";
    auto opened = io::S3FileIO::Open(o);
    if (!opened.ok()) return Fail(opened.status());
    s3 = std::move(opened).value();
  }
  engine::DatabaseOptions options;
  options.object_store = s3.get();
  auto db = engine::Database::Open(options);
  if (!db.ok()) return Fail(db.status());
  // Every run reads the objects again (DuckDB would serve repeats from memory).
  if (Status st = (*db)->Execute("SET enable_external_file_cache = false"); !st.ok())
    return Fail(st);

  // The files: DuckDB's (zstd, as skade writes data files) and the same with page CRCs.
  std::vector<engine::DataFileRef> plain, crc, plain_s3, crc_s3;
  std::vector<std::string> plain_paths, crc_paths, plain_s3_paths, crc_s3_paths;
  int64_t plain_bytes = 0, crc_bytes = 0, pages = 0;
  const int64_t per_file = rows / files;
  for (int f = 0; f < files; ++f) {
    const std::string name = "f" + std::to_string(f) + ".parquet";
    const std::string path = dir.Path("plain_" + name);
    Status wrote = (*db)->Execute(
        "COPY (SELECT range AS id, random() AS a, (range % 1000)::INTEGER AS c, "
        "md5(range::VARCHAR) AS s, "
        "range * 2 AS d, 'k' || (range % 97) AS k FROM range(" +
        std::to_string(f * per_file) + ", " + std::to_string((f + 1) * per_file) + ")) TO '" +
        path + "' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)");
    if (!wrote.ok()) return Fail(wrote);
    const std::string bytes = testing::ReadFileOrDie(path);
    auto checksummed = testing::AddPageChecksums(bytes);
    if (!checksummed.ok()) return Fail(checksummed.status());
    const std::string crc_path = dir.Path("crc_" + name);
    testing::WriteFileOrDie(crc_path, checksummed->bytes);
    plain_bytes += static_cast<int64_t>(bytes.size());
    crc_bytes += static_cast<int64_t>(checksummed->bytes.size());
    pages += static_cast<int64_t>(checksummed->pages.size());
    plain.push_back({path, path, static_cast<int64_t>(bytes.size())});
    crc.push_back({crc_path, crc_path, static_cast<int64_t>(checksummed->bytes.size())});
    plain_paths.push_back(path);
    crc_paths.push_back(crc_path);
    if (s3) {
      const std::string p = "s3://bench/plain_" + name, c = "s3://bench/crc_" + name;
      if (Status st = s3->CreateExclusive(p, bytes); !st.ok()) return Fail(st);
      if (Status st = s3->CreateExclusive(c, checksummed->bytes); !st.ok()) return Fail(st);
      plain_s3.push_back({p, p, static_cast<int64_t>(bytes.size())});
      crc_s3.push_back({c, c, static_cast<int64_t>(checksummed->bytes.size())});
      plain_s3_paths.push_back(p);
      crc_s3_paths.push_back(c);
    }
  }
  // The checks find what they should, and both sets of files give the same rows.
  engine::DataFileChecks& checks = (*db)->data_file_checks();
  if (auto st = checks.Check(crc); !st.ok()) return Fail(st.status());
  if (auto st = checks.Check(plain); !st.ok()) return Fail(st.status());
  const auto counters = checks.counters();
  if (counters.files_with_checksums != files || counters.pages_with_crc != pages) {
    return Fail(Status::Internal("the checksummed files were not all checked"));
  }
  const std::string full =
      "SELECT sum(id), sum(a), sum(c), max(s), sum(d), count(DISTINCT k) FROM read_parquet(";
  const std::string selective = "SELECT sum(a) FROM read_parquet(";
  const std::string selective_where = ") WHERE id BETWEEN 1000 AND 2000";
  const std::string exact =
      "SELECT count(*), sum(id), sum(c), max(s), sum(d), count(DISTINCT k) FROM read_parquet(";
  auto a = (*db)->QueryRows(exact + List(plain_paths) + ")");
  auto b = (*db)->QueryRows(exact + List(crc_paths) + ")");
  if (!a.ok() || !b.ok() || *a != *b)
    return Fail(Status::Internal("the files with CRCs read differently"));

  std::cout << "files: " << files << " x " << per_file << " rows, 6 columns, zstd; "
            << plain_bytes / 1e6 << " MB without CRCs, " << crc_bytes / 1e6 << " MB with (" << pages
            << " pages)\n";
  std::cout << "store | files | query | query alone | check + query | check alone | ratio alone / "
               "(check + query) | "
               "ratio alone / (alone + check alone)\n";
  struct Case {
    const char* store;
    const char* kind;
    const std::vector<engine::DataFileRef>* refs;
    const std::vector<std::string>* paths;
  };
  std::vector<Case> cases = {{"local", "no CRCs", &plain, &plain_paths},
                             {"local", "CRC every page", &crc, &crc_paths}};
  if (s3) {
    cases.push_back({"s3rver", "no CRCs", &plain_s3, &plain_s3_paths});
    cases.push_back({"s3rver", "CRC every page", &crc_s3, &crc_s3_paths});
  }
  for (const Case& c : cases) {
    for (const auto& [label, sql] :
         {std::pair<std::string, std::string>{"full scan", full + List(*c.paths) + ")"},
          std::pair<std::string, std::string>{"one column, 1k rows",
                                              selective + List(*c.paths) + selective_where}}) {
      auto t = Measure(**db, *c.refs, sql, repeats);
      if (!t.ok()) return Fail(t.status());
      std::cout << c.store << " | " << c.kind << " | " << label << " | " << t->plain * 1e3
                << " ms | " << t->checked * 1e3 << " ms | " << t->check * 1e3 << " ms | "
                << t->plain / t->checked << " | " << t->plain / (t->plain + t->check) << "\n";
    }
  }
  // The check alone in memory: CRC-32 and page walk throughput.
  {
    const std::string bytes = testing::ReadFileOrDie(crc_paths[0]);
    std::vector<double> runs;
    for (int i = 0; i < repeats; ++i) {
      const double t0 = NowSeconds();
      auto r = iceberg::CheckParquetPagesInMemory(bytes, crc_paths[0],
                                                  iceberg::PageScope::kWhereChecksummed);
      if (!r.ok()) return Fail(r.status());
      runs.push_back(NowSeconds() - t0);
    }
    std::cout << "in memory: " << static_cast<double>(bytes.size()) / Median(runs) / 1e9
              << " GB/s checking one file with CRCs (" << bytes.size() / 1e6 << " MB)\n";
    // What writing CRCs after DuckDB would cost: re-encoding a DuckDB file with them (the test
    // helper; a writer would also write the file a second time).
    const std::string plain_bytes_0 = testing::ReadFileOrDie(plain_paths[0]);
    runs.clear();
    for (int i = 0; i < repeats; ++i) {
      const double t0 = NowSeconds();
      auto r = testing::AddPageChecksums(plain_bytes_0);
      if (!r.ok()) return Fail(r.status());
      runs.push_back(NowSeconds() - t0);
    }
    std::cout << "in memory: " << static_cast<double>(plain_bytes_0.size()) / Median(runs) / 1e9
              << " GB/s re-encoding one DuckDB file with a CRC on every page\n";
  }
  if (server) server->Stop(SIGTERM, std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
