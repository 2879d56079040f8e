// Bound parameter sets for the registry's tests: one row of one BIGINT parameter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/flightsql/registry_internal.h"

namespace skade::flightsql::testing {

// One row per value, whose parameter p0 is that value.
inline ParamSet IntParams(const std::vector<int64_t>& values) {
  arrow::ArrayBuilder builder = arrow::RecordBatchBuilder({arrow::ArrayBuilder("p0", "l", true)});
  for (int64_t value : values) {
    builder.child(0).AppendInt(value);
    builder.AppendStruct();
  }
  ArrowSchema schema;
  ArrowArray batch;
  EXPECT_TRUE(builder.Finish(&schema, &batch).ok());
  ParamSet set;
  set.schema = arrow::SchemaHandle(&schema);
  set.batches.emplace_back(&batch);
  return set;
}

// One row whose parameter p0 is `value`.
inline ParamSet OneIntParam(int64_t value) { return IntParams({value}); }

// The value of the first parameter of the first row.
inline int64_t FirstInt(const ParamSet& params) {
  return static_cast<const int64_t*>(params.batches.at(0)->children[0]->buffers[1])[0];
}

}  // namespace skade::flightsql::testing
