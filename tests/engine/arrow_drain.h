// Draining an Arrow stream in tests: its batch lengths, the BIGINT values of its first column in
// stream order, and the batches again as a stream.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/arrow/c_data.h"

namespace skade::engine {

struct Drained {
  std::vector<int64_t> lengths;
  std::vector<int64_t> first_column;  // the BIGINT values of column 0, in stream order
  arrow::StreamHandle again;
  std::string error;  // the stream's error, when it failed
};

inline Drained Drain(arrow::StreamHandle stream) {
  Drained out;
  arrow::SchemaHandle schema;
  EXPECT_EQ(stream->get_schema(stream.get(), schema.get()), 0);
  std::vector<arrow::ArrayHandle> batches;
  while (true) {
    arrow::ArrayHandle batch;
    if (stream->get_next(stream.get(), batch.get()) != 0) {
      const char* error = stream->get_last_error(stream.get());
      out.error = error ? error : "(no message)";
      break;
    }
    if (!batch.valid()) break;
    out.lengths.push_back(batch->length);
    const ArrowArray& first = *batch->children[0];
    const auto* values = static_cast<const int64_t*>(first.buffers[1]) + first.offset + batch->offset;
    out.first_column.insert(out.first_column.end(), values, values + batch->length);
    batches.push_back(std::move(batch));
  }
  out.again = arrow::MakeBatchStream(std::move(schema), std::move(batches));
  return out;
}

}  // namespace skade::engine
