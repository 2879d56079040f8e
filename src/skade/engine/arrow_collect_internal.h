// A query's whole result collected as Arrow inside DuckDB's pipeline (Database::QueryArrowWhole):
// DuckDB's Arrow collector converts in its worker threads, with no streaming buffer between the
// query and the conversion: in parallel, rows in no particular order, unless the plan fixes an
// order (ORDER BY), which is then kept.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duckdb.h"
#include "skade/arrow/c_data.h"
#include "skade/engine/page_pool_internal.h"

namespace skade::engine {

struct CollectedArrow {
  arrow::SchemaHandle schema;
  std::vector<arrow::ArrayHandle> batches;  // struct arrays of `schema`, in the result's order
};

// Runs `prepared` (a statement of the C API, every parameter bound) to its end with DuckDB's
// Arrow collector, into batches of at most `batch_rows` rows (at least 1: the caller,
// Database::QueryArrowWhole, refuses less), in the order its ORDER BY fixes, else in none.
// Unordered results of flat columns are built by skade into `pool`'s pages (none: DuckDB's
// appender builds every batch; arrow_flat_batch_internal.h). On failure, DuckDB's message
// (Interrupted when its connection was interrupted). The statement's connection must not run
// another statement meanwhile.
std::optional<std::string> CollectArrow(duckdb_prepared_statement prepared, int64_t batch_rows,
                                        std::shared_ptr<PagePool> pool, CollectedArrow* out);

}  // namespace skade::engine
