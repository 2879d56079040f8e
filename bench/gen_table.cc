// skade_gen_table: writes a generated Iceberg v2 table (Hadoop layout) for benchmarks.
//   skade_gen_table --out /tmp/t --rows 10000000 --files 10 --manifests 2 [--partition-by-day]
//   skade_gen_table --out /tmp/p --rows 100000000 --files 100000 --manifests 1000 --fake-data-files
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "bench/table_generator.h"
#include "skade/base/clock.h"
#include "skade/engine/database.h"

int main(int argc, char** argv) {
  CLI::App app{"Writes a generated Iceberg v2 table (Hadoop layout: metadata/v1.metadata.json)"};
  skade::bench::GeneratorOptions options;
  bool partition_by_day = false;
  std::string partition = "none";
  int threads = 0;
  app.add_option("--out", options.out_dir, "table folder to create")->required();
  app.add_option("--rows", options.rows, "total rows")->capture_default_str();
  app.add_option("--columns", options.columns, "number of columns (1..64; 10 mixed types)")
      ->capture_default_str();
  app.add_option("--files", options.files, "number of data files")->capture_default_str();
  app.add_option("--manifests", options.manifests, "spread the files over this many manifests")
      ->capture_default_str();
  app.add_option("--snapshots", options.snapshots, "spread the manifests over this many appends")
      ->capture_default_str();
  app.add_flag("--partition-by-day", partition_by_day, "partition by day(ts)");
  app.add_option("--partition", partition, "none | day (day(ts)) | identity (event_date)")
      ->check(CLI::IsMember({"none", "day", "identity"}))
      ->capture_default_str();
  app.add_flag("--fake-data-files", options.fake_data_files,
               "write manifests only; the referenced data files are not created");
  app.add_option("--threads", threads, "DuckDB threads (0 = all cores)");
  CLI11_PARSE(app, argc, argv);

  if (partition_by_day || partition == "day") {
    options.partition = skade::bench::PartitionMode::kDay;
  } else if (partition == "identity") {
    options.partition = skade::bench::PartitionMode::kIdentity;
  }
  skade::engine::DatabaseOptions db_options;
  db_options.threads = threads;
  auto db = skade::engine::Database::Open(db_options);
  if (!db.ok()) {
    std::cerr << "skade_gen_table: " << db.status().ToString() << "\n";
    return 1;
  }
  int64_t start = skade::MonotonicNanos();
  auto table = skade::bench::GenerateTable(**db, options);
  if (!table.ok()) {
    std::cerr << "skade_gen_table: " << table.status().ToString() << "\n";
    return 1;
  }
  double seconds = static_cast<double>(skade::MonotonicNanos() - start) / 1e9;
  std::cout << "wrote " << table->metadata_file << ": " << table->rows << " rows, "
            << table->data_files << (options.fake_data_files ? " fake" : "") << " data files ("
            << table->data_bytes << " bytes), " << table->manifests << " manifests, "
            << options.snapshots << " snapshots in " << seconds << " s\n";
  return 0;
}
