#include "skade/engine/arrow_batches_internal.h"

#include <algorithm>
#include <exception>
#include <string>

#include "duckdb.hpp"
#include "duckdb/common/arrow/arrow_appender.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"
#include "duckdb/main/capi/capi_internal.hpp"

namespace skade::engine {

namespace {

int64_t VectorBytes(duckdb::Vector& v, duckdb::idx_t count) {
  using duckdb::PhysicalType;
  const duckdb::LogicalType& type = v.GetType();
  const int64_t rows = static_cast<int64_t>(count);
  switch (type.InternalType()) {
    case PhysicalType::VARCHAR: {
      duckdb::UnifiedVectorFormat format;
      v.ToUnifiedFormat(count, format);
      const auto* data = duckdb::UnifiedVectorFormat::GetData<duckdb::string_t>(format);
      int64_t bytes = 4 * (rows + 1);
      for (duckdb::idx_t i = 0; i < count; ++i) {
        const auto index = format.sel->get_index(i);
        if (format.validity.RowIsValid(index)) bytes += static_cast<int64_t>(data[index].GetSize());
      }
      return bytes;
    }
    case PhysicalType::LIST:
      v.Flatten(count);
      return 4 * (rows + 1) + VectorBytes(duckdb::ListVector::GetEntry(v), duckdb::ListVector::GetListSize(v));
    case PhysicalType::ARRAY:
      v.Flatten(count);
      return VectorBytes(duckdb::ArrayVector::GetEntry(v), count * duckdb::ArrayType::GetSize(type));
    case PhysicalType::STRUCT: {
      v.Flatten(count);
      int64_t bytes = (rows + 7) / 8;
      for (auto& child : duckdb::StructVector::GetEntries(v)) bytes += VectorBytes(*child, count);
      return bytes;
    }
    default:
      break;
  }
  const int64_t width = type.id() == duckdb::LogicalTypeId::DECIMAL
                            ? 16
                            : static_cast<int64_t>(duckdb::GetTypeIdSize(type.InternalType()));
  return (rows + 7) / 8 + rows * width;
}

}  // namespace

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

int64_t ChunkJoiner::ArrowBytes(duckdb_data_chunk chunk) {
  try {
    auto& input = *reinterpret_cast<duckdb::DataChunk*>(chunk);
    int64_t bytes = 0;
    for (auto& column : input.data) bytes += VectorBytes(column, input.size());
    return bytes;
  } catch (const std::exception&) {
    return 0;  // an estimate: the conversion reports what is wrong with the chunk
  }
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
