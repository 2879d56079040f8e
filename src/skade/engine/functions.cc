#include <cstring>
#include <string>

#include "skade/base/uuid.h"
#include "skade/engine/functions_internal.h"
#include "skade/iceberg/transform.h"

namespace skade::engine {
namespace {

struct LogicalTypeHolder {
  duckdb_logical_type t;
  explicit LogicalTypeHolder(duckdb_type id) : t(duckdb_create_logical_type(id)) {}
  ~LogicalTypeHolder() { duckdb_destroy_logical_type(&t); }
};

int32_t BucketOfHash(int32_t hash, int32_t n) { return (hash & 0x7FFFFFFF) % n; }

// Spec "Bucket Transform Details": ints and longs are hashed as 8-byte little-endian longs.
int32_t HashLong(int64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF);
  return iceberg::Murmur3Hash32(std::string_view(buf, 8));
}

// Decimals hash the minimal big-endian two's-complement bytes of the unscaled value.
int32_t HashUnscaled(__int128 v) {
  char buf[16];
  for (int i = 0; i < 16; ++i) buf[15 - i] = static_cast<char>((static_cast<unsigned __int128>(v) >> (8 * i)) & 0xFF);
  int start = 0;
  while (start < 15) {
    unsigned char b = static_cast<unsigned char>(buf[start]);
    unsigned char next = static_cast<unsigned char>(buf[start + 1]);
    if ((b == 0x00 && !(next & 0x80)) || (b == 0xFF && (next & 0x80))) {
      ++start;
    } else {
      break;
    }
  }
  return iceberg::Murmur3Hash32(std::string_view(buf + start, 16 - start));
}

std::string_view StringAt(duckdb_vector vec, idx_t row) {
  auto* data = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vec));
  return std::string_view(duckdb_string_t_data(&data[row]), duckdb_string_t_length(data[row]));
}

enum class Input { kLong, kString, kHugeint, kUuid };

template <Input kInput>
void Bucket(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  idx_t n = duckdb_data_chunk_get_size(input);
  duckdb_vector values = duckdb_data_chunk_get_vector(input, 0);
  duckdb_vector widths = duckdb_data_chunk_get_vector(input, 1);
  uint64_t* value_valid = duckdb_vector_get_validity(values);
  uint64_t* width_valid = duckdb_vector_get_validity(widths);
  auto* width_data = static_cast<int32_t*>(duckdb_vector_get_data(widths));
  auto* out = static_cast<int32_t*>(duckdb_vector_get_data(output));
  duckdb_vector_ensure_validity_writable(output);
  uint64_t* out_valid = duckdb_vector_get_validity(output);
  for (idx_t i = 0; i < n; ++i) {
    if ((value_valid && !duckdb_validity_row_is_valid(value_valid, i)) ||
        (width_valid && !duckdb_validity_row_is_valid(width_valid, i))) {
      duckdb_validity_set_row_invalid(out_valid, i);
      continue;
    }
    int32_t width = width_data[i];
    if (width <= 0) {
      duckdb_scalar_function_set_error(info, "iceberg_bucket: the bucket count must be positive");
      return;
    }
    int32_t hash = 0;
    if constexpr (kInput == Input::kLong) {
      hash = HashLong(static_cast<int64_t*>(duckdb_vector_get_data(values))[i]);
    } else if constexpr (kInput == Input::kString) {
      hash = iceberg::Murmur3Hash32(StringAt(values, i));
    } else if constexpr (kInput == Input::kHugeint) {
      auto h = static_cast<duckdb_hugeint*>(duckdb_vector_get_data(values))[i];
      __int128 v = (static_cast<__int128>(h.upper) << 64) | static_cast<__int128>(h.lower);
      hash = HashUnscaled(v);
    } else {
      auto uuid = Uuid::Parse(StringAt(values, i));
      if (!uuid.ok()) {
        duckdb_scalar_function_set_error(info, "iceberg_bucket_uuid: not a UUID");
        return;
      }
      hash = iceberg::Murmur3Hash32(
          std::string_view(reinterpret_cast<const char*>(uuid->bytes.data()), uuid->bytes.size()));
    }
    out[i] = BucketOfHash(hash, width);
  }
}

Status AddOverload(duckdb_scalar_function_set set, const char* name, duckdb_type input,
                   duckdb_scalar_function_t fn) {
  duckdb_scalar_function f = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(f, name);
  LogicalTypeHolder in(input), width(DUCKDB_TYPE_INTEGER), out(DUCKDB_TYPE_INTEGER);
  duckdb_scalar_function_add_parameter(f, in.t);
  duckdb_scalar_function_add_parameter(f, width.t);
  duckdb_scalar_function_set_return_type(f, out.t);
  duckdb_scalar_function_set_function(f, fn);
  duckdb_state st = duckdb_add_scalar_function_to_set(set, f);
  duckdb_destroy_scalar_function(&f);
  if (st != DuckDBSuccess) return Status::Internal("cannot add an iceberg_bucket overload");
  return Status::Ok();
}

Status RegisterSet(duckdb_connection con, const char* name,
                   std::initializer_list<std::pair<duckdb_type, duckdb_scalar_function_t>> overloads) {
  duckdb_scalar_function_set set = duckdb_create_scalar_function_set(name);
  Status status;
  for (const auto& [type, fn] : overloads) {
    status = AddOverload(set, name, type, fn);
    if (!status.ok()) break;
  }
  if (status.ok() && duckdb_register_scalar_function_set(con, set) != DuckDBSuccess) {
    status = Status::Internal(std::string("cannot register ") + name);
  }
  duckdb_destroy_scalar_function_set(&set);
  return status;
}

}  // namespace

Status RegisterIcebergFunctions(duckdb_connection con) {
  SKADE_RETURN_IF_ERROR(RegisterSet(con, "iceberg_bucket",
                                    {{DUCKDB_TYPE_BIGINT, Bucket<Input::kLong>},
                                     {DUCKDB_TYPE_VARCHAR, Bucket<Input::kString>},
                                     {DUCKDB_TYPE_BLOB, Bucket<Input::kString>},
                                     {DUCKDB_TYPE_HUGEINT, Bucket<Input::kHugeint>}}));
  return RegisterSet(con, "iceberg_bucket_uuid", {{DUCKDB_TYPE_VARCHAR, Bucket<Input::kUuid>}});
}

}  // namespace skade::engine
