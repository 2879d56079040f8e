// Generates real Iceberg v2 tables (Hadoop layout) for benchmarks and tests: DuckDB writes the
// Parquet files with field ids and returns their statistics, skade writes the manifests, the
// manifest lists and the metadata. Optionally writes only manifests that reference data files
// that do not exist ("fake" files with realistic statistics), for planning benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"

namespace skade::bench {

enum class PartitionMode {
  kNone,
  kDay,       // day(ts)
  kIdentity,  // identity(event_date)
};

// Column catalog: the value of column k for row number `i` (a BIGINT named i) is a fixed SQL
// expression, so a test can recompute every value with DuckDB.
struct GeneratedColumn {
  iceberg::NestedField field;
  std::string duck_type;  // the DuckDB type of `expression`
  std::string expression;
};

struct GeneratorOptions {
  std::string out_dir;       // the table folder; must not exist or be empty
  int64_t rows = 1'000'000;  // total rows over all files
  int columns = 10;          // first `columns` columns of the catalog (1..64)
  int files = 4;             // data files (rows are split evenly, contiguous row ranges)
  int manifests = 1;         // files are spread evenly over this many manifests
  int snapshots = 1;         // manifests are spread evenly over this many append snapshots
  PartitionMode partition = PartitionMode::kNone;
  // Write manifests only: the data files they reference are never created. Statistics are
  // computed from a sample of each file's rows (exact for monotonic columns: id, ts, date).
  bool fake_data_files = false;
};

struct GeneratedTable {
  std::string metadata_file;  // absolute path of v1.metadata.json
  int64_t rows = 0;
  int64_t data_files = 0;
  int64_t manifests = 0;
  int64_t data_bytes = 0;               // sum of file_size_in_bytes
  std::vector<std::string> data_paths;  // every data file path, in row order
};

// The columns the generator writes for `count` columns (id first). Each file covers a
// contiguous range of rows of `rows_per_file` rows; the timestamp column places file f on day f
// (so day/identity partitions hold one value per file).
std::vector<GeneratedColumn> GeneratedColumns(int count, int64_t rows_per_file);

// The schema of those columns (schema id 0) and the partition spec (spec id 0) for `mode`.
iceberg::SchemaPtr GeneratedSchema(const std::vector<GeneratedColumn>& columns);
Result<iceberg::PartitionSpecPtr> GeneratedSpec(const iceberg::Schema& schema, PartitionMode mode);

// A SELECT producing rows [first_row, first_row + count) of the table, columns in schema order.
std::string GeneratedRowsSql(const std::vector<GeneratedColumn>& columns, int64_t first_row,
                             int64_t count);

// Rows per data file for a table of `rows` rows in `files` files (the last file may be short).
int64_t RowsPerFile(int64_t rows, int files);

// Writes the table. kInvalidArgument for inconsistent options, kIoError / kInvalidArgument
// from file writes or DuckDB. Uses `db` for the Parquet writes and statistics.
Result<GeneratedTable> GenerateTable(engine::Database& db, const GeneratorOptions& options);

}  // namespace skade::bench
