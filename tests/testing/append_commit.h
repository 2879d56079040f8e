// Test helper: an append written by skade's library but not committed — Parquet data files,
// a manifest and a manifest list under the table's location — as the body of a REST
// CommitTableRequest, for tests that commit it through the REST catalog.
#pragma once

#include <cstdint>
#include <string>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::testing {

struct AppendCommit {
  std::string request_json;  // CommitTableRequest: add-snapshot + set-snapshot-ref main
  int64_t records = 0;
  int64_t data_files = 0;
};

// Writes the rows of `rows_sql` (a DuckDB query over the current schema's columns) as snapshot
// `snapshot_id` on top of `base`: data files named after `tag`, one manifest, a manifest list
// holding base's manifests and the new one. The request requires main to still be at base's
// current snapshot (assert-ref-snapshot-id; null for a table without one).
Result<AppendCommit> WriteAppendCommit(engine::Database& db, io::FileIO& io, const iceberg::TableMetadata& base,
                                       const std::string& rows_sql, const std::string& tag, int64_t snapshot_id);

}  // namespace skade::testing
