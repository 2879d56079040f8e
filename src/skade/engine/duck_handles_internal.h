// Owners of DuckDB C API handles, each released once when it goes out of scope.
#pragma once

#include <string>

#include "duckdb.h"

namespace skade::engine {

// A connection of its own (a registered one is duck_query_internal.h's RawConnection).
struct OwnedConnection {
  duckdb_connection con = nullptr;
  ~OwnedConnection() {
    if (con) duckdb_disconnect(&con);
  }
};

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

struct DataChunk {
  duckdb_data_chunk chunk = nullptr;
  DataChunk() = default;
  DataChunk(DataChunk&& o) noexcept : chunk(o.chunk) { o.chunk = nullptr; }
  DataChunk& operator=(DataChunk&& o) noexcept {
    if (this != &o) {
      if (chunk) duckdb_destroy_data_chunk(&chunk);
      chunk = o.chunk;
      o.chunk = nullptr;
    }
    return *this;
  }
  DataChunk(const DataChunk&) = delete;
  DataChunk& operator=(const DataChunk&) = delete;
  ~DataChunk() {
    if (chunk) duckdb_destroy_data_chunk(&chunk);
  }
};

struct ErrorData {
  duckdb_error_data error = nullptr;
  ~ErrorData() {
    if (error) duckdb_destroy_error_data(&error);
  }
  bool has_error() const { return error && duckdb_error_data_has_error(error); }
  std::string message() const { return error ? duckdb_error_data_message(error) : ""; }
};

}  // namespace skade::engine
