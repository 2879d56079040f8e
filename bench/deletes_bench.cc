// deletes_bench: what each delete representation costs a scan (issue 10, "Benchmarks"). Three
// tables of the same rows on one SQLite catalog, in one run and process: 10% of the rows
// deleted by deletion vectors (format v3, merge-on-read), the same rows deleted by position
// delete Parquet files (format v2, merge-on-read), and — the baseline — a table that holds the
// remaining rows only. Each is read whole through Table::ReadSql into a drained Arrow stream;
// rounds rotate the order. Prints medians and ratios baseline / table (1.0 = no overhead).
//   deletes_bench [--rows 10000000] [--repeat 5] [--keep DIR]
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_catalog.h"
#include "bench/bench_util.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/user_sql.h"
#include "skade/io/file_io.h"
#include "skade/table/table.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kColumns = "id BIGINT NOT NULL, a BIGINT, b DOUBLE, s VARCHAR";
constexpr const char* kDeleted = "id % 10 = 3";

std::string Rows(int64_t rows, const std::string& where) {
  return "SELECT range AS id, range * 7 AS a, range / 3.0 AS b, 'row ' || (range % 1000) AS s FROM range(" +
         std::to_string(rows) + ")" + (where.empty() ? "" : " WHERE " + where);
}

struct Variant {
  std::string name;
  std::string table;
  std::vector<double> seconds;
  int64_t rows = 0;
};

Result<std::unique_ptr<table::Table>> Make(catalog::Catalog& cat, io::FileIO& io, engine::Database& db,
                                           const std::string& name, std::map<std::string, std::string> properties) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse("bench." + name));
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema, engine::SchemaFromColumnDefinitions(kColumns));
  SKADE_ASSIGN_OR_RETURN(auto spec, iceberg::ParsePartitionSpec("", *schema, 0));
  catalog::CreateTableRequest req;
  req.schema = schema;
  req.spec = spec;
  req.properties = std::move(properties);
  req.properties["write.parquet.compression-codec"] = "zstd";
  SKADE_RETURN_IF_ERROR(cat.CreateTable(ident, req).status());
  return table::Table::Load(cat, io, db, ident);
}

// Reads the whole table through the scan path into a drained Arrow stream.
Result<std::pair<double, int64_t>> ReadAll(table::Table& t, engine::Database& db) {
  double start = NowSeconds();
  SKADE_ASSIGN_OR_RETURN(std::string sql, t.ReadSql({}));
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, db.QueryArrow(sql));
  SKADE_ASSIGN_OR_RETURN(int64_t rows, DrainStream(stream));
  return std::make_pair(NowSeconds() - start, rows);
}

Status Run(const std::string& dir, int64_t rows, int repeat) {
  SKADE_ASSIGN_OR_RETURN(auto db, engine::Database::Open({}));
  SKADE_ASSIGN_OR_RETURN(BenchCatalog bench, OpenBenchCatalog(dir));
  io::FileIO* io = bench.io.get();
  catalog::Catalog* cat = bench.catalog.get();
  SKADE_ASSIGN_OR_RETURN(auto where, engine::Predicate::Parse(kDeleted));

  double start = NowSeconds();
  SKADE_ASSIGN_OR_RETURN(auto dv, Make(*cat, *io, *db, "dv", {{"format-version", "3"}, {"write.delete.mode", "merge-on-read"}}));
  SKADE_RETURN_IF_ERROR(dv->Append({Rows(rows, ""), nullptr}).status());
  SKADE_RETURN_IF_ERROR(dv->DeleteWhere(where).status());
  SKADE_ASSIGN_OR_RETURN(auto pos, Make(*cat, *io, *db, "pos", {{"write.delete.mode", "merge-on-read"}}));
  SKADE_RETURN_IF_ERROR(pos->Append({Rows(rows, ""), nullptr}).status());
  SKADE_RETURN_IF_ERROR(pos->DeleteWhere(where).status());
  SKADE_ASSIGN_OR_RETURN(auto kept, Make(*cat, *io, *db, "kept", {}));
  SKADE_RETURN_IF_ERROR(kept->Append({Rows(rows, "NOT (" + std::string(kDeleted) + ")"), nullptr}).status());
  std::cout << "three tables of " << rows << " rows (10% deleted) written in " << NowSeconds() - start << " s\n";

  std::vector<Variant> variants = {{"remaining rows only (baseline)", "kept", {}, 0},
                                   {"deletion vectors (v3)", "dv", {}, 0},
                                   {"position delete files (v2)", "pos", {}, 0}};
  table::Table* tables[] = {kept.get(), dv.get(), pos.get()};
  for (int rep = -1; rep < repeat; ++rep) {
    for (int k = 0; k < 3; ++k) {
      int which = (k + std::max(rep, 0)) % 3;
      SKADE_ASSIGN_OR_RETURN(auto run, ReadAll(*tables[which], *db));
      Variant& v = variants[which];
      v.rows = run.second;
      if (rep < 0) continue;  // warm-up
      v.seconds.push_back(run.first);
      std::cout << "  rep " << rep << " " << v.name << ": " << run.first << " s\n";
    }
  }
  const int64_t expected = rows - (rows + 6) / 10;
  const double base = Median(variants[0].seconds);
  for (const Variant& v : variants) {
    if (v.rows != expected) {
      return Status::Internal(v.name + " read " + std::to_string(v.rows) + " rows, expected " + std::to_string(expected));
    }
    double median = Median(v.seconds);
    std::cout << v.name << ": median " << median << " s (" << static_cast<double>(v.rows) / median / 1e6
              << " M rows/s); ratio baseline/this " << base / median << "\n";
  }
  std::cout << "peak RSS " << ProcStatusKb("VmHWM") / 1024 << " MiB\n";
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"scan cost of deletion vectors and position delete files"};
  int64_t rows = 10'000'000;
  int repeat = 5;
  std::string keep;
  app.add_option("--rows", rows, "rows per table")->capture_default_str();
  app.add_option("--repeat", repeat, "measured reads per table")->capture_default_str();
  app.add_option("--keep", keep, "lake folder to write (kept); default a temp folder, removed");
  CLI11_PARSE(app, argc, argv);
  namespace fs = std::filesystem;
  std::string dir = keep;
  if (dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "skade-deletes-bench.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return 1;
    dir = pattern;
  }
  skade::Status st = skade::bench::Run(dir, rows, repeat);
  if (keep.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  if (!st.ok()) {
    std::cerr << "deletes_bench: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
