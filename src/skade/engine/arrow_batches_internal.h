// The Arrow size of a DuckDB chunk, estimated before it is converted: how growing batches
// (engine::ArrowBatching) keep to their byte bound.
#pragma once

#include <cstdint>

#include "duckdb.hpp"

namespace skade::engine {

// About the bytes `chunk` takes as Arrow buffers: values at their Arrow width (DECIMAL as 16
// bytes), strings and blobs by their lengths plus offsets, lists and structs by their children;
// DuckDB's own size says nothing of this (a constant or dictionary string of 200 bytes takes
// 200 bytes a row in Arrow). May flatten the chunk's nested vectors.
int64_t ChunkArrowBytes(duckdb::DataChunk& chunk);

}  // namespace skade::engine
