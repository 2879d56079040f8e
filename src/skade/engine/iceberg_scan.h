// Reads a planned Iceberg scan with DuckDB: one SQL over read_parquet with columns mapped by
// field id (renamed, retyped and added columns read right), files without field ids mapped by
// the table's name mapping, position deletes as an anti-join on (file, row number) and
// equality deletes as an anti-join on the key columns limited by sequence number and partition.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/scan.h"
#include "skade/io/location_map.h"

namespace skade::engine {

// The row-lineage metadata columns of format v3 tables (spec "Row Lineage"). A data file that
// stores none (new rows) gives each row first_row_id + its position and the data sequence
// number of the file's manifest entry; rewritten rows keep the values their file stores.
inline constexpr std::string_view kRowIdColumn = "_row_id";
inline constexpr std::string_view kLastUpdatedSequenceNumberColumn = "_last_updated_sequence_number";

// Whether the table relation ends with the two row-lineage columns.
enum class RowLineage { kOmitted, kIncluded };

// A planned scan: the files to read and how to interpret them.
struct IcebergScan {
  iceberg::SchemaPtr schema;  // the read schema (its top-level fields become the columns)
  std::vector<iceberg::FileScanTask> tasks;
  std::optional<iceberg::NameMapping> name_mapping;  // for data files without field ids
  // The table's partition specs: a column a data file does not store reads the file's identity
  // partition value (spec "Column Projection"), by the spec the file was written with.
  std::vector<iceberg::PartitionSpecPtr> specs;
  // Told what the read noticed that a careful user wants to know (e.g. position delete rows
  // that name no data file of this read); unset = logged at debug level.
  std::function<void(const std::string&)> note;
  io::LocationMap locations;  // stored location → readable local path
  int format_version = 2;     // the table's; row lineage exists from 3
  RowLineage row_lineage = RowLineage::kOmitted;
};

// Projection, filter and limit applied on top of the table relation.
struct ScanQuery {
  // Empty = every top-level column, in schema order. May name the row-lineage columns of a
  // format v3 table (kRowIdColumn, kLastUpdatedSequenceNumberColumn).
  std::vector<std::string> columns;
  std::optional<Predicate> where;    // over the columns; optional
  // `where` was found boolean over the scan's schema already (SqlToIcebergFilter checks it when
  // the read is planned): BuildScanSql does not check it again.
  bool where_checked = false;
  std::optional<int64_t> limit;
};

// Whether the relation also exposes each row's origin: __skade_file (the data file's stored
// path, as manifests record it) and __skade_pos (its row position in that file).
enum class RowOrigin { kHidden, kExposed };

// Builds the SQL of the whole table relation (all schema columns, then the row-lineage columns
// when scan.row_lineage says so; deletes applied). Reads the data files' footers through `db`
// to find files written without field ids, and checks the page checksums of the data and
// delete files first (db.data_file_checks(), once per file). Errors name the file (missing
// data file → kNotFound; a damaged page, footer or page header → kCorruption); row lineage on
// a table before format v3 is kInvalidArgument. The SQL carries a mark of its files
// (DataFileChecks::MarkScan), so that a read error DuckDB raises without naming a file is
// traced back to it.
Result<std::string> BuildTableSql(Database& db, const IcebergScan& scan,
                                  RowOrigin origin = RowOrigin::kHidden);

// The table relation wrapped in SELECT columns … WHERE … LIMIT …. kInvalidArgument for an
// unknown column, or a row-lineage column of a table before format v3.
Result<std::string> BuildScanSql(Database& db, const IcebergScan& scan, const ScanQuery& query);

// Runs the scan and returns the rows as an Arrow C stream (bounded memory).
Result<arrow::StreamHandle> ScanToArrow(Database& db, const IcebergScan& scan, const ScanQuery& query);

// Counts the rows BuildScanSql's query gives, with DuckDB (deletes, filter and limit applied).
Result<int64_t> CountRows(Database& db, const IcebergScan& scan, const ScanQuery& query);

}  // namespace skade::engine
