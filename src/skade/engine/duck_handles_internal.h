// Owners of DuckDB C API handles, each released once when it goes out of scope.
#pragma once

#include "duckdb.h"

namespace skade::engine {

struct RawPrepared {
  duckdb_prepared_statement stmt = nullptr;
  ~RawPrepared() {
    if (stmt) duckdb_destroy_prepare(&stmt);
  }
};

struct PendingResult {
  duckdb_pending_result pending = nullptr;
  ~PendingResult() {
    if (pending) duckdb_destroy_pending(&pending);
  }
};

struct QueryResult {
  duckdb_result result;
  bool valid = false;  // set once duckdb_execute_* filled `result` (even with an error)
  ~QueryResult() {
    if (valid) duckdb_destroy_result(&result);
  }
};

struct RawChunk {
  duckdb_data_chunk chunk = nullptr;
  ~RawChunk() {
    if (chunk) duckdb_destroy_data_chunk(&chunk);
  }
};

}  // namespace skade::engine
