// Arrow record batches of flat columns (numbers, booleans, dates, times, timestamps, decimals,
// strings, blobs) built by skade from DuckDB chunks, into pooled pages (page_pool_internal.h):
// a batch's values and validity in one run of pages, each string column's bytes in a run of its
// own. The arrays are the ones DuckDB's ArrowAppender gives for the same chunks (same formats,
// same values); a column DuckDB would give in another form (nested, dictionary, extension type,
// string view) makes the layout refuse the result, and DuckDB's appender builds it instead.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "duckdb.hpp"
#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/page_pool_internal.h"

namespace skade::engine {

// How each column of a result becomes Arrow. Immutable; shared by the builders of one result.
class FlatBatchLayout {
 public:
  enum class Kind { kFixed, kBool, kDecimal, kString };
  struct Column {
    Kind kind;
    int source_width;  // bytes of DuckDB's value (kFixed, kDecimal)
    int offset_width;  // 4 or 8 (kString)
  };

  // The layout of a result of `types`, whose Arrow schema DuckDB renders with `properties`;
  // null when some column is not flat in that schema.
  static std::shared_ptr<const FlatBatchLayout> For(const duckdb::vector<duckdb::LogicalType>& types,
                                                    duckdb::ClientProperties properties);

  const std::vector<Column>& columns() const { return columns_; }

 private:
  std::vector<Column> columns_;
};

// Builds one batch at a time of at most `capacity` rows. Thread-compatible; the batches it
// returns may be released on any thread, children apart from their parent (the C data
// interface's move of a child), and keep their pages (and the pool) until the last goes.
class FlatBatchBuilder {
 public:
  // The most rows a batch may be made for (the sizes of its runs stay far from overflowing).
  static constexpr int64_t kMaxCapacity = int64_t{1} << 24;

  // `capacity`: 1 to kMaxCapacity (clamped).
  FlatBatchBuilder(std::shared_ptr<const FlatBatchLayout> layout, std::shared_ptr<PagePool> pool, int64_t capacity);
  ~FlatBatchBuilder();
  FlatBatchBuilder(const FlatBatchBuilder&) = delete;
  FlatBatchBuilder& operator=(const FlatBatchBuilder&) = delete;

  // Appends every row of `chunk` (of the layout's types; rows() + its size <= capacity).
  // kResourceExhausted when no memory could be mapped; kInvalidArgument when a string column's
  // bytes pass what 32-bit offsets hold (as DuckDB's appender refuses them). After an error
  // the batch is unusable: the builder must not be used again.
  Status Append(duckdb::DataChunk& chunk);
  int64_t rows() const { return rows_; }
  // The rows appended as a struct array of the layout's columns (kInternal before any); the
  // builder starts over.
  Result<arrow::ArrayHandle> Finish();

 private:
  struct ColumnState;
  Status Start();
  // The parts of Append for one column of `count` rows placed after rows_.
  void AppendValidity(ColumnState& state, const duckdb::UnifiedVectorFormat& format, int64_t count);
  void AppendValues(const FlatBatchLayout::Column& column, ColumnState& state,
                    const duckdb::UnifiedVectorFormat& format, int64_t count);
  Status AppendStrings(const FlatBatchLayout::Column& column, ColumnState& state,
                       const duckdb::UnifiedVectorFormat& format, int64_t count);

  std::shared_ptr<const FlatBatchLayout> layout_;
  std::shared_ptr<PagePool> pool_;
  int64_t capacity_;
  int64_t rows_ = 0;
  bool started_ = false;
  PageRun fixed_;
  std::vector<ColumnState> columns_;
};

}  // namespace skade::engine
