// Internal to engine/: the rows DuckDB's COPY … RETURN_STATS returns, one per Parquet file it
// wrote (path, row count, bytes, footer statistics per column, partition keys), read into
// Iceberg data file entries: value/null/NaN counts, column sizes and bounds in the spec's
// single-value binary form (Appendix D), truncated as "Metrics" allows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"

namespace skade::engine {

class CopyStatsReader {
 public:
  // `partition_columns[i]`: the COPY's column that holds partition field i of `spec` (empty
  // for a void transform); `partition_types[i]`: that field's result type.
  CopyStatsReader(const iceberg::Schema& schema, const iceberg::PartitionSpec& spec,
                  std::vector<std::string> partition_columns, std::vector<iceberg::TypePtr> partition_types,
                  int metrics_truncate_length);

  // The data file one row describes (a file of no rows has record_count 0 and nothing else
  // read). kInternal when the row is not shaped as DuckDB returns it or a partition key does
  // not read back as its type.
  Result<iceberg::DataFile> Read(const TextRow& r) const;

 private:
  int spec_id_;
  std::vector<std::string> partition_columns_;
  std::vector<iceberg::TypePtr> partition_types_;
  // Per partition field: the transform whose folder text (PartitionFolderTextSql) its column
  // holds instead of the stored value, if any.
  std::vector<std::optional<iceberg::TransformKind>> folder_text_;
  int metrics_truncate_length_;
  // DuckDB's statistics key ("\"a\".\"b\"") → the leaf field, and whether it sits in a list or map.
  std::map<std::string, std::pair<const iceberg::NestedField*, bool>> leaves_;
};

}  // namespace skade::engine
