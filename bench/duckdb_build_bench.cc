// One SQL statement on the DuckDB library skade embeds, through DuckDB's C API only (no skade
// code in the timed loop): the other half of bench/duckdb_builds.sh, which runs the same
// statement in DuckDB's Python packages (bench/RESULTS.md, section au). Prints the median and
// the best of --repeat runs after one warm-up, and the first row's first value (the answers of
// the two sides must agree).
//   duckdb_build_bench --sql "SELECT count(*) FROM read_parquet('…')" [--repeat 15]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "duckdb.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"one SQL statement on skade's embedded DuckDB, timed"};
  std::string sql;
  int repeat = 15;
  app.add_option("--sql", sql, "the statement")->required();
  app.add_option("--repeat", repeat, "timed runs after one warm-up")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  duckdb_database db = nullptr;
  duckdb_connection con = nullptr;
  if (duckdb_open(nullptr, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess) {
    std::fprintf(stderr, "duckdb_build_bench: cannot open DuckDB\n");
    return 1;
  }
  std::vector<double> ms;
  std::string first;
  for (int i = 0; i <= repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    duckdb_result result;
    if (duckdb_query(con, sql.c_str(), &result) != DuckDBSuccess) {
      std::fprintf(stderr, "duckdb_build_bench: %s\n", duckdb_result_error(&result));
      duckdb_destroy_result(&result);
      return 1;
    }
    const auto end = std::chrono::steady_clock::now();
    if (i == 0 && duckdb_row_count(&result) > 0 && duckdb_column_count(&result) > 0) {
      char* text = duckdb_value_varchar(&result, 0, 0);
      first = text != nullptr ? text : "NULL";
      duckdb_free(text);
    }
    duckdb_destroy_result(&result);
    if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("DuckDB %s (skade's library, C API): median %.1f ms, best %.1f ms; first value %s\n",
              duckdb_library_version(), ms[ms.size() / 2], ms.front(), first.c_str());
  duckdb_disconnect(&con);
  duckdb_close(&db);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
