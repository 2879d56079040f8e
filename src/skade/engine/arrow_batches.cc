#include "skade/engine/arrow_batches_internal.h"

#include <algorithm>
#include <exception>
#include <string>

#include "duckdb.hpp"
#include "duckdb/common/arrow/arrow_appender.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"
#include "duckdb/main/capi/capi_internal.hpp"

namespace skade::engine {

struct ChunkJoiner::State {
  duckdb::vector<duckdb::LogicalType> types;
  std::unique_ptr<duckdb::ArrowAppender> appender;
};

ChunkJoiner::ChunkJoiner(duckdb_arrow_options options) : options_(options) {}
ChunkJoiner::~ChunkJoiner() = default;

Status ChunkJoiner::Append(duckdb_data_chunk chunk, int64_t capacity) {
  try {
    // The C API's handles are DuckDB's own objects (duckdb/main/capi/capi_internal.hpp).
    auto& input = *reinterpret_cast<duckdb::DataChunk*>(chunk);
    if (state_ == nullptr) {
      auto& properties = reinterpret_cast<duckdb::CClientArrowOptionsWrapper*>(options_)->properties;
      state_ = std::make_unique<State>();
      state_->types = input.GetTypes();
      auto extensions = properties.client_context
                            ? duckdb::ArrowTypeExtensionData::GetExtensionTypes(*properties.client_context,
                                                                                state_->types)
                            : duckdb::unordered_map<duckdb::idx_t, const duckdb::shared_ptr<duckdb::ArrowTypeExtensionData>>{};
      const auto rows = std::max<duckdb::idx_t>(input.size(), static_cast<duckdb::idx_t>(std::max<int64_t>(capacity, 0)));
      state_->appender = std::make_unique<duckdb::ArrowAppender>(state_->types, rows, properties, std::move(extensions));
    }
    state_->appender->Append(input, 0, input.size(), input.size());
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot convert a result chunk to Arrow: ") + duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

int64_t ChunkJoiner::rows() const {
  return state_ ? static_cast<int64_t>(state_->appender->RowCount()) : 0;
}

Status ChunkJoiner::Finish(ArrowArray* out) {
  if (state_ == nullptr) return Status::Internal("no chunk to finish");
  try {
    *out = state_->appender->Finalize();
  } catch (const std::exception& e) {
    state_.reset();
    return Status::Internal(std::string("cannot convert a result chunk to Arrow: ") + duckdb::ErrorData(e).Message());
  }
  state_.reset();
  return Status::Ok();
}

}  // namespace skade::engine
