// DuckDB chunks joined into one Arrow batch (engine::ArrowBatching): the chunks of a streaming
// result appended to one Arrow array with DuckDB's own converter, the one
// duckdb_data_chunk_to_arrow uses for a single chunk, so a joined batch holds exactly the
// arrays the chunks would have given one by one. Each chunk's Arrow size is estimated before it
// joins, so a batch can be closed before a chunk would take it past its byte bound.
#pragma once

#include <cstdint>
#include <memory>

#include "duckdb.h"
#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::engine {

class ChunkJoiner {
 public:
  // `options`: the result's (duckdb_result_get_arrow_options), borrowed.
  explicit ChunkJoiner(duckdb_arrow_options options);
  ~ChunkJoiner();
  ChunkJoiner(const ChunkJoiner&) = delete;
  ChunkJoiner& operator=(const ChunkJoiner&) = delete;

  // Appends every row of `chunk` (borrowed); the first chunk of a batch fixes its columns and,
  // with `capacity`, the rows its buffers are first made for.
  Status Append(duckdb_data_chunk chunk, int64_t capacity = 0);
  int64_t rows() const;
  // About the bytes `chunk` takes as Arrow buffers: values at their Arrow width (DECIMAL as
  // 16 bytes), strings and blobs by their lengths plus offsets, lists and structs by their
  // children; DuckDB's own size says nothing of this (a constant or dictionary string of 200
  // bytes takes 200 bytes a row in Arrow). May flatten the chunk's nested vectors.
  static int64_t ArrowBytes(duckdb_data_chunk chunk);
  // The batch of the rows appended (kInternal before any); the joiner starts over.
  Status Finish(ArrowArray* out);

 private:
  struct State;
  duckdb_arrow_options options_;
  std::unique_ptr<State> state_;
};

}  // namespace skade::engine
