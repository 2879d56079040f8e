#include "skade/engine/position_deletes_internal.h"

#include <string_view>

#include "skade/base/byte_bounded_cache.h"
#include "skade/engine/database.h"
#include "skade/engine/duck_handles_internal.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

// Decoded files by (path, size, modification time): a delete file is immutable, and one
// rewritten in place is read again.
ByteBoundedCache<PositionDeletes>& Cache() {
  static auto* cache = new ByteBoundedCache<PositionDeletes>(int64_t{256} << 20);
  return *cache;
}

// Reserved field ids of the position delete schema (spec "Reserved Field IDs").
constexpr const char* kColumns =
    "MAP {2147483546: {name: 'file_path', type: 'VARCHAR', default_value: NULL::VARCHAR}, "
    "2147483545: {name: 'pos', type: 'BIGINT', default_value: NULL::VARCHAR}}";

Status Bad(const std::string& path, const std::string& what) {
  return Status::Corruption("position delete file '" + path + "': " + what);
}

// Reads the whole file (streamed in DuckDB's chunks) into its bitmaps.
Result<PositionDeletesPtr> ReadFile(duckdb_connection con, const std::string& path) {
  if (path.find('\0') != std::string::npos) return Status::InvalidArgument("a delete file path holds a NUL byte");
  const std::string sql =
      "SELECT file_path, pos FROM read_parquet(" + QuoteString(path) + ", schema = " + kColumns + ")";
  RawPrepared stmt;
  if (duckdb_prepare(con, sql.c_str(), &stmt.stmt) != DuckDBSuccess) {
    const char* e = duckdb_prepare_error(stmt.stmt);
    return Status::InvalidArgument("cannot read position delete file '" + path + "': " + (e ? e : "unknown error"));
  }
  PendingResult pending;
  if (duckdb_pending_prepared_streaming(stmt.stmt, &pending.pending) != DuckDBSuccess) {
    const char* e = pending.pending ? duckdb_pending_error(pending.pending) : nullptr;
    return Status::InvalidArgument("cannot read position delete file '" + path + "': " + (e ? e : "unknown error"));
  }
  QueryResult r;
  const duckdb_state state = duckdb_execute_pending(pending.pending, &r.result);
  r.valid = true;
  if (state != DuckDBSuccess) {
    const char* e = duckdb_result_error(&r.result);
    return Status::InvalidArgument("cannot read position delete file '" + path + "': " + (e ? e : "unknown error"));
  }
  // Positions by file_path as written; rows come sorted by it, so one lookup per run of rows.
  std::unordered_map<std::string, std::vector<int64_t>> by_path;
  std::string last;
  std::vector<int64_t>* positions = nullptr;
  int64_t rows = 0;
  while (true) {
    DataChunk chunk;
    chunk.chunk = duckdb_fetch_chunk(r.result);
    if (chunk.chunk == nullptr) {
      if (const char* e = duckdb_result_error(&r.result)) {
        return Status::InvalidArgument("cannot read position delete file '" + path + "': " + e);
      }
      break;
    }
    const idx_t n = duckdb_data_chunk_get_size(chunk.chunk);
    if (n == 0) break;
    duckdb_vector paths = duckdb_data_chunk_get_vector(chunk.chunk, 0);
    duckdb_vector poss = duckdb_data_chunk_get_vector(chunk.chunk, 1);
    auto* path_data = static_cast<duckdb_string_t*>(duckdb_vector_get_data(paths));
    const auto* pos_data = static_cast<const int64_t*>(duckdb_vector_get_data(poss));
    uint64_t* path_valid = duckdb_vector_get_validity(paths);
    uint64_t* pos_valid = duckdb_vector_get_validity(poss);
    for (idx_t i = 0; i < n; ++i) {
      if ((path_valid && !duckdb_validity_row_is_valid(path_valid, i)) ||
          (pos_valid && !duckdb_validity_row_is_valid(pos_valid, i))) {
        return Bad(path, "row " + std::to_string(rows + static_cast<int64_t>(i)) + " has a null file_path or pos");
      }
      if (pos_data[i] < 0) {
        return Bad(path, "row " + std::to_string(rows + static_cast<int64_t>(i)) + " deletes position " +
                             std::to_string(pos_data[i]));
      }
      std::string_view p(duckdb_string_t_data(&path_data[i]), duckdb_string_t_length(path_data[i]));
      if (positions == nullptr || p != last) {
        last.assign(p);
        positions = &by_path[last];
      }
      positions->push_back(pos_data[i]);
    }
    rows += static_cast<int64_t>(n);
  }
  // One bitmap per data file, whatever spellings of its path the file uses.
  std::unordered_map<std::string, std::vector<int64_t>> by_location;
  for (auto& [raw, list] : by_path) {
    std::vector<int64_t>& target = by_location[io::ComparableLocation(raw)];
    if (target.empty()) {
      target = std::move(list);
    } else {
      target.insert(target.end(), list.begin(), list.end());
    }
  }
  by_path.clear();
  auto out = std::make_shared<PositionDeletes>();
  out->rows = rows;
  for (auto& [location, list] : by_location) {
    out->by_location.emplace(location, iceberg::DeletionVector::FromPositions(std::move(list)));
  }
  return PositionDeletesPtr(std::move(out));
}

int64_t MemoryBytes(const PositionDeletes& d) {
  int64_t bytes = 0;
  for (const auto& [location, vector] : d.by_location) {
    bytes += static_cast<int64_t>(location.size()) + 64 + vector.memory_bytes();
  }
  return bytes;
}

}  // namespace

Result<std::vector<PositionDeletesPtr>> LoadPositionDeletes(duckdb_database db, const std::vector<std::string>& paths,
                                                            io::FileIO* object_store) {
  std::vector<PositionDeletesPtr> out;
  out.reserve(paths.size());
  auto local = io::MakeLocalFileIO();
  OwnedConnection con;
  for (const std::string& path : paths) {
    io::FileIO* io = local.get();
    if (io::IsObjectStoreLocation(path)) {
      if (object_store == nullptr) {
        return Status::InvalidArgument("position delete file '" + path +
                                       "' is on object storage, which is not configured");
      }
      io = object_store;
    }
    auto info = io->Stat(path);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) {
        return Status::NotFound("position delete file '" + path + "' does not exist");
      }
      return info.status();
    }
    const std::string key =
        path + '\0' + std::to_string(info->size) + '\0' + std::to_string(info->modified_ms);
    if (PositionDeletesPtr hit = Cache().Find(key)) {
      out.push_back(std::move(hit));
      continue;
    }
    if (con.con == nullptr && duckdb_connect(db, &con.con) != DuckDBSuccess) {
      return Status::Internal("cannot open a DuckDB connection");
    }
    SKADE_ASSIGN_OR_RETURN(PositionDeletesPtr file, ReadFile(con.con, path));
    Cache().Put(key, file, MemoryBytes(*file));
    out.push_back(std::move(file));
  }
  return out;
}

}  // namespace skade::engine
