// Writes rows into Iceberg data files with DuckDB: Parquet with field ids, partitioned by the
// spec's transforms computed in SQL (bucket through the spec's Murmur3, see functions.cc), and
// per-file metrics (counts, null counts, sizes, bounds) from COPY … RETURN_STATS, returned as
// Iceberg DataFile values ready for a manifest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/lossless_cast.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"
#include "skade/io/file_io.h"

namespace skade::engine {

struct WriteOptions {
  std::string data_location;                     // local folder for new files (created)
  int64_t target_file_size_bytes = 512LL << 20;  // write.target-file-size-bytes
  int64_t row_group_size_bytes = 128LL << 20;    // write.parquet.row-group-size-bytes
  std::string compression = "zstd";              // write.parquet.compression-codec
  int metrics_truncate_length = 16;              // write.metadata.metrics.default truncate(16)
  std::string file_prefix;                       // prefix of file names (e.g. a write id)
  // kNow: the files and their folder are fsynced before WriteDataFiles returns. kByCaller:
  // the caller makes them durable before a commit names them (FileIO::SyncFiles, and
  // SyncFolders of the files and of WriteResult::folders), e.g. together with the other files
  // of that commit.
  enum class Sync { kNow, kByCaller };
  Sync sync = Sync::kNow;
  // A CRC-32 in every page header of every file (new_file_checksums.h), so that readers
  // detect damage (skade.write.parquet.page-checksums, default true).
  bool page_checksums = true;
  // Where files in an object store are read and written again to add the checksums (local
  // files need none).
  io::FileIO* object_store = nullptr;
};

// "false" writes Parquet files without page checksums (WriteOptions::page_checksums).
inline constexpr std::string_view kPageChecksumsProperty = "skade.write.parquet.page-checksums";

// Reads the write settings from table properties (the Iceberg property names above).
WriteOptions WriteOptionsFromProperties(const std::map<std::string, std::string>& properties,
                                        std::string data_location);

// Where the rows come from: a DuckDB query (SELECT, VALUES, table functions such as
// read_parquet/read_csv/read_json) whose column names match the schema's top-level fields
// (case-insensitively). Missing optional columns are written as NULL.
struct WriteSource {
  std::string sql;
  ArrowArrayStream* arrow = nullptr;  // if set, `sql` may refer to it as __skade_input
  CastPolicy cast = CastPolicy::kStrict;  // how values convert to the columns' types
};

// How the values of text input files (CSV, JSON) reach the lossless conversion (lossless_cast.h).
enum class FileValues {
  // As the file spells them: every CSV field is text (VARCHAR), every JSON member a JSON value
  // (DuckDB's JSON type, its kind kept: "12" stays a string, true a boolean). For writes.
  kAsWritten,
  // Typed by DuckDB's sniffer (numbers, dates, nested types): to make a schema from a file.
  kSniffed,
};

// The SQL source for files: Parquet, CSV, JSON / NDJSON by extension (".parquet", ".csv",
// ".tsv", ".json", ".ndjson", ".jsonl"; ".gz"/".zst" compression suffixes allowed). CSV is read
// as RFC 4180 with a header ('"' quotes), strictly, its fields separated by `delimiter` (by
// default ',' for .csv, tab for .tsv). kInvalidArgument for other extensions, mixed formats,
// empty files, folders, JSON nested deeper than kMaxJsonDepth, or a delimiter for files that are
// not CSV/TSV.
Result<std::string> FileSourceSql(const std::vector<std::string>& paths, FileValues values = FileValues::kAsWritten,
                                  std::optional<char> delimiter = std::nullopt);

// When reading `paths` failed with `failure`: for CSV files DuckDB could not make sense of, the
// line that breaks them (input_check.h); otherwise `failure` itself.
Status ExplainInputFailure(const std::vector<std::string>& paths, const Status& failure,
                           std::optional<char> delimiter = std::nullopt);

struct WriteResult {
  std::vector<iceberg::DataFile> files;
  int64_t records = 0;
  int64_t bytes = 0;
  // Local folders under options.data_location the write may have created for its files
  // (partition folders, parents first; DuckDB makes them, so whether they existed before is
  // not known and their entries are synced on every partitioned write). With Sync::kByCaller,
  // the caller makes their entries durable with the files' (FileIO::SyncFolders). A missing
  // options.data_location is created durable before the write (local_folders.h).
  std::vector<std::string> folders;
};

// Writes the source into new data files under options.data_location. Errors, with nothing
// left to commit: kInvalidArgument for a source column that is not in the schema, a missing
// required column, a value that does not convert to its column's type exactly (naming the
// column, the value and, for a re-readable input, the row; source.cast), or a null in a
// required column. Files already written by a failed call are deleted.
Result<WriteResult> WriteDataFiles(Database& db, const WriteSource& source, const iceberg::Schema& schema,
                                   const iceberg::PartitionSpec& spec, const WriteOptions& options);

// Flushes written files, their entries in their folders, and the entries of the `folders` made
// for them (WriteResult::folders) to stable storage (fsync), so that a commit never references
// data that a power loss could take away. Object-store locations need nothing. kIoError naming
// the file or folder that failed, kNotFound for a folder that is gone.
Status SyncFiles(const std::vector<std::string>& paths, const std::vector<std::string>& folders = {});

// The SQL expression computing partition field `field` from `column_sql` (a column of the
// source type), and the partition value type; used by writers and by tests.
Result<std::string> PartitionValueSql(const iceberg::PartitionField& field, const iceberg::Type& source,
                                      const std::string& column_sql);

}  // namespace skade::engine
