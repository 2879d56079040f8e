#include "skade/engine/arrow_batches_internal.h"

#include <exception>

#include "duckdb.hpp"

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

int64_t ChunkArrowBytes(duckdb::DataChunk& chunk) {
  try {
    int64_t bytes = 0;
    for (auto& column : chunk.data) bytes += VectorBytes(column, chunk.size());
    return bytes;
  } catch (const std::exception&) {
    return 0;  // an estimate: the conversion reports what is wrong with the chunk
  }
}

}  // namespace skade::engine
