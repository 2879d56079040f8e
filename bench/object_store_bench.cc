// Object storage: a Parquet scan through skade's S3 client (DuckDB's s3:// file system over
// S3FileIO) against s3rver on loopback, beside the same scan of the same file on local disk in
// the same run (throughput ratio); and the bytes a selective query fetches (projection and
// row-group pruning must fetch a fraction of the file). s3rver (Node.js, objects as files) is
// the server here: when it is the bottleneck the ratio says so, not what AWS S3 would do.
//   object_store_bench [--rows 8000000] [--repeats 3] [--dir /tmp/skade-object-store-bench]
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>

#include "bench/bench_util.h"
#include "skade/engine/database.h"
#include "skade/io/s3_file_io.h"
#include "tests/testing/child_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::bench {
namespace {

// Counts the ranged reads (and their bytes) DuckDB makes through the object store.
class CountingFileIO final : public io::FileIO {
 public:
  explicit CountingFileIO(io::FileIO& inner) : inner_(inner) {}
  std::atomic<int64_t> reads{0}, bytes{0};
  Result<std::string> Read(std::string_view l) override { return inner_.Read(l); }
  Result<std::string> ReadRange(std::string_view l, int64_t offset, int64_t length) override {
    auto r = inner_.ReadRange(l, offset, length);
    if (r.ok()) {
      ++reads;
      bytes += static_cast<int64_t>(r->size());
    }
    return r;
  }
  Result<io::FileInfo> Stat(std::string_view l) override { return inner_.Stat(l); }
  Status CreateExclusive(std::string_view l, std::string_view d) override { return inner_.CreateExclusive(l, d); }
  Status Overwrite(std::string_view l, std::string_view d) override { return inner_.Overwrite(l, d); }
  Status Update(std::string_view l, const Change& c) override { return inner_.Update(l, c); }
  Result<std::vector<io::FileInfo>> List(std::string_view p) override { return inner_.List(p); }
  Status Delete(std::string_view l) override { return inner_.Delete(l); }

 private:
  io::FileIO& inner_;
};

int Fail(const Status& st) {
  std::cerr << "object_store_bench: " << st.ToString() << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"S3 scan vs local scan, bytes fetched by selective queries"};
  int64_t rows = 8'000'000;
  int repeats = 3;
  std::string dir = "/tmp/skade-object-store-bench";
  app.add_option("--rows", rows, "rows of the Parquet file");
  app.add_option("--repeats", repeats, "runs per measurement (median)");
  app.add_option("--dir", dir, "scratch folder (emptied)");
  CLI11_PARSE(app, argc, argv);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/s3");

  auto server = testing::ChildProcess::Start(
      {"node", "--openssl-legacy-provider", skade::testing::SourcePath("tests/interop/s3rver.mjs"), dir + "/s3",
       "bench"},
      dir + "/s3rver.err");
  if (!server) return Fail(Status::Unavailable("cannot start node"));
  const std::string line = server->ReadLine(std::chrono::seconds(30));
  if (line.rfind("port ", 0) != 0) return Fail(Status::Unavailable("s3rver did not start: " + line));
  io::S3Options o;
  o.endpoint = "http://127.0.0.1:" + line.substr(5);
  o.access_key_id = "S3RVER";
  o.secret_access_key = "S3RVER";
  auto s3 = io::S3FileIO::Open(o);
  if (!s3.ok()) return Fail(s3.status());
  CountingFileIO counting(**s3);

  engine::DatabaseOptions db_options;
  db_options.object_store = &counting;
  auto db = engine::Database::Open(db_options);
  if (!db.ok()) return Fail(db.status());
  // Every run reads the bytes again (DuckDB's cache would serve repeats from memory).
  if (Status st = (*db)->Execute("SET enable_external_file_cache = false"); !st.ok()) return Fail(st);

  const std::string local = dir + "/t.parquet";
  const std::string remote = "s3://bench/t.parquet";
  Status wrote = (*db)->Execute(
      "COPY (SELECT range AS id, random() AS a, random() * 1000 AS b, (range % 1000)::INTEGER AS c, "
      "md5(range::VARCHAR) AS s, range * 2 AS d, (random() * 100)::BIGINT AS e, 'k' || (range % 97) AS k "
      "FROM range(" + std::to_string(rows) + ")) TO '" + local + "' (FORMAT parquet, ROW_GROUP_SIZE 122880)");
  if (!wrote.ok()) return Fail(wrote);
  auto bytes = std::make_shared<std::string>();
  {
    std::ifstream in(local, std::ios::binary);
    bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const double upload_start = NowSeconds();
  if (Status st = (*s3)->CreateExclusive(remote, *bytes); !st.ok()) return Fail(st);
  const double upload_s = NowSeconds() - upload_start;
  const double file_mb = static_cast<double>(bytes->size()) / 1e6;

  auto time_query = [&](const std::string& sql) -> Result<double> {
    std::vector<double> runs;
    for (int i = 0; i < repeats; ++i) {
      const double t0 = NowSeconds();
      SKADE_ASSIGN_OR_RETURN(auto r, (*db)->QueryRows(sql));
      (void)r;
      runs.push_back(NowSeconds() - t0);
    }
    return Median(runs);
  };
  const std::string full = "SELECT sum(a), sum(b), sum(c), count(DISTINCT k), max(s), sum(d), sum(e), max(id) FROM read_parquet('";
  auto local_s = time_query(full + local + "')");
  if (!local_s.ok()) return Fail(local_s.status());
  counting.reads = 0;
  counting.bytes = 0;
  auto s3_s = time_query(full + remote + "')");
  if (!s3_s.ok()) return Fail(s3_s.status());
  const double full_bytes = static_cast<double>(counting.bytes.load()) / repeats;

  auto fetched = [&](const std::string& sql) -> Result<std::pair<int64_t, double>> {
    counting.reads = 0;
    counting.bytes = 0;
    SKADE_ASSIGN_OR_RETURN(auto r, (*db)->QueryRows(sql));
    (void)r;
    return std::make_pair(counting.reads.load(), static_cast<double>(counting.bytes.load()));
  };
  auto one_column = fetched("SELECT sum(a) FROM read_parquet('" + remote + "')");
  auto selective = fetched("SELECT sum(a) FROM read_parquet('" + remote + "') WHERE id BETWEEN 1000 AND 2000");
  if (!one_column.ok()) return Fail(one_column.status());
  if (!selective.ok()) return Fail(selective.status());

  std::cout << "file: " << rows << " rows, " << file_mb << " MB (8 columns, row groups of 122880); upload "
            << file_mb / upload_s << " MB/s\n";
  std::cout << "full scan: local " << *local_s << " s (" << file_mb / *local_s << " MB/s), s3rver " << *s3_s << " s ("
            << file_mb / *s3_s << " MB/s); s3 / local throughput = " << *local_s / *s3_s << "; fetched "
            << full_bytes / 1e6 << " MB per scan\n";
  std::cout << "one column of eight: " << one_column->first << " range reads, " << one_column->second / 1e6
            << " MB = " << 100.0 * one_column->second / static_cast<double>(bytes->size()) << "% of the file\n";
  std::cout << "id BETWEEN 1000 AND 2000, one column: " << selective->first << " range reads, "
            << selective->second / 1e6 << " MB = " << 100.0 * selective->second / static_cast<double>(bytes->size())
            << "% of the file\n";
  server->Stop(SIGTERM, std::chrono::seconds(5));
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) { return skade::bench::Main(argc, argv); }
