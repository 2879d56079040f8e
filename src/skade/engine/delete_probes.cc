#include "skade/engine/delete_probes_internal.h"

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "skade/engine/deletion_vectors_internal.h"
#include "skade/engine/duck_handles_internal.h"
#include "skade/engine/position_deletes_internal.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

struct FunctionInfo {
  duckdb_database db = nullptr;                // where position delete files are read
  bool lock_down = false;
  std::vector<std::filesystem::path> allowed;  // canonical
  std::vector<std::string> allowed_objects;    // object-store prefixes
  io::FileIO* object_store = nullptr;          // DatabaseOptions::object_store
};

// The bitmap of each data file (by the path the scan's filename column gives), sharing
// ownership of what they were decoded into.
struct BindData {
  std::vector<std::string> data_paths;
  std::vector<DeletionVectorPtr> vectors;
};

// Whether the function may read `path`: a local path or file: URI, or an object-store location
// when the database has an object store; when locked down, a local path whose canonical form
// (the file actually opened: file: forms stripped, symlinks and '..' resolved) lies inside an
// allowed directory, an object whose normal form (io::IsWithin: '.' and '..' resolved, as an
// HTTP client resolves them in the request path) lies inside an allowed prefix.
bool Allowed(const FunctionInfo& info, const std::string& path) {
  if (io::IsObjectStoreLocation(path)) {
    if (info.object_store == nullptr) return false;
    if (!info.lock_down) return true;
    return std::any_of(info.allowed_objects.begin(), info.allowed_objects.end(),
                       [&](const std::string& prefix) { return io::IsWithin(path, prefix); });
  }
  const std::string local = io::LocalPath(path);
  if (local.find("://") != std::string::npos || local.starts_with("file:")) return false;
  if (!info.lock_down) return true;
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(local, ec), ec);
  if (ec) return false;
  for (const auto& dir : info.allowed) {
    auto rel = p.lexically_relative(dir);
    if (!rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
}

struct Value {
  duckdb_value v;
  explicit Value(duckdb_value value) : v(value) {}
  ~Value() { duckdb_destroy_value(&v); }
};

std::vector<std::string> StringList(duckdb_value list) {
  std::vector<std::string> out;
  const idx_t n = duckdb_get_list_size(list);
  for (idx_t i = 0; i < n; ++i) {
    Value child(duckdb_get_list_child(list, i));
    char* text = duckdb_get_varchar(child.v);
    out.emplace_back(text ? text : "");
    duckdb_free(text);
  }
  return out;
}

std::vector<int64_t> LongList(duckdb_value list) {
  std::vector<int64_t> out;
  const idx_t n = duckdb_get_list_size(list);
  for (idx_t i = 0; i < n; ++i) {
    Value child(duckdb_get_list_child(list, i));
    out.push_back(duckdb_get_int64(child.v));
  }
  return out;
}

// A list of lists of longs (data_deletes).
std::vector<std::vector<int64_t>> LongLists(duckdb_value list) {
  std::vector<std::vector<int64_t>> out;
  const idx_t n = duckdb_get_list_size(list);
  for (idx_t i = 0; i < n; ++i) {
    Value child(duckdb_get_list_child(list, i));
    out.push_back(LongList(child.v));
  }
  return out;
}

Status CheckAllowed(const FunctionInfo& fn, const char* name, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (!Allowed(fn, p)) {
      return Status::PermissionDenied(std::string(name) + ": '" + p + "' is outside the allowed directories");
    }
  }
  return Status::Ok();
}

// skade_deletion_vector_deletes: reads and checks the vectors its five lists name.
Result<std::unique_ptr<BindData>> LoadVectors(const FunctionInfo& fn, const std::vector<std::unique_ptr<Value>>& lists) {
  constexpr const char* kName = "skade_deletion_vector_deletes";
  const std::vector<std::string> puffins = StringList(lists[0]->v), data_paths = StringList(lists[3]->v);
  const std::vector<int64_t> offsets = LongList(lists[1]->v), lengths = LongList(lists[2]->v),
                             row_counts = LongList(lists[4]->v);
  const size_t n = puffins.size();
  if (offsets.size() != n || lengths.size() != n || data_paths.size() != n || row_counts.size() != n) {
    return Status::InvalidArgument(std::string(kName) + ": the five lists must have the same length");
  }
  SKADE_RETURN_IF_ERROR(CheckAllowed(fn, kName, puffins));
  auto data = std::make_unique<BindData>();
  for (size_t i = 0; i < n; ++i) {
    // Object-store locations stay as they are.
    SKADE_ASSIGN_OR_RETURN(DeletionVectorPtr vector,
                           ReadDeletionVector(io::LocalPath(puffins[i]), offsets[i], lengths[i], fn.object_store));
    // Every position names a row of the data file: this also bounds what a vector expands to.
    if (vector->max() >= row_counts[i]) {
      return Status::Corruption(std::string(kName) + ": the vector at offset " + std::to_string(offsets[i]) + " of '" +
                                puffins[i] + "' deletes position " + std::to_string(vector->max()) + ", past the " +
                                std::to_string(row_counts[i]) + " rows of '" + data_paths[i] + "'");
    }
    data->vectors.push_back(std::move(vector));
  }
  data->data_paths = data_paths;
  return data;
}

// skade_position_deletes: reads the delete files its lists name into one bitmap per data file.
Result<std::unique_ptr<BindData>> LoadPositions(const FunctionInfo& fn, const std::vector<std::unique_ptr<Value>>& lists) {
  constexpr const char* kName = "skade_position_deletes";
  const std::vector<std::string> files = StringList(lists[0]->v), data_paths = StringList(lists[1]->v),
                                 locations = StringList(lists[2]->v);
  const std::vector<std::vector<int64_t>> uses = LongLists(lists[3]->v);
  const size_t n = data_paths.size();
  if (locations.size() != n || uses.size() != n) {
    return Status::InvalidArgument(std::string(kName) + ": data_paths, data_locations and data_deletes must have the same length");
  }
  for (const auto& list : uses) {
    for (int64_t k : list) {
      if (k < 0 || k >= static_cast<int64_t>(files.size())) {
        return Status::InvalidArgument(std::string(kName) + ": data_deletes names delete file " + std::to_string(k) +
                                       " of " + std::to_string(files.size()));
      }
    }
  }
  SKADE_RETURN_IF_ERROR(CheckAllowed(fn, kName, files));
  SKADE_ASSIGN_OR_RETURN(std::vector<PositionDeletesPtr> loaded, LoadPositionDeletes(fn.db, files, fn.object_store));
  auto data = std::make_unique<BindData>();
  for (size_t i = 0; i < n; ++i) {
    const std::string location = io::ComparableLocation(locations[i]);
    std::vector<DeletionVectorPtr> found;
    for (int64_t k : uses[i]) {
      const PositionDeletesPtr& file = loaded[static_cast<size_t>(k)];
      auto it = file->by_location.find(location);
      // Shares the file's ownership: the bitmap lives as long as this query holds it.
      if (it != file->by_location.end()) found.emplace_back(file, &it->second);
    }
    if (found.empty()) continue;
    DeletionVectorPtr vector = found.front();
    if (found.size() > 1) {  // several delete files for one data file: one bitmap of them all
      std::vector<int64_t> positions;
      for (const auto& v : found) v->ForEach([&](int64_t p) { positions.push_back(p); });
      vector = std::make_shared<const iceberg::DeletionVector>(iceberg::DeletionVector::FromPositions(std::move(positions)));
    }
    data->data_paths.push_back(data_paths[i]);
    data->vectors.push_back(std::move(vector));
  }
  return data;
}

// Copied with the expression that uses it (DuckDB copies bound expressions while planning).
struct ProbeData {
  std::shared_ptr<const BindData> vectors;
  std::unordered_map<std::string, const iceberg::DeletionVector*> by_path;
};

using Loader = Result<std::unique_ptr<BindData>> (*)(const FunctionInfo&, const std::vector<std::unique_ptr<Value>>&);

// Folds the constant lists (arguments 2…), loads the bitmaps and binds them to the call.
void BindProbe(duckdb_bind_info info, const char* name, idx_t arguments, Loader load) {
  const auto* fn = static_cast<const FunctionInfo*>(duckdb_scalar_function_bind_get_extra_info(info));
  if (duckdb_scalar_function_bind_get_argument_count(info) != arguments) {
    duckdb_scalar_function_bind_set_error(info, (std::string(name) + " takes " + std::to_string(arguments) + " arguments").c_str());
    return;
  }
  duckdb_client_context context = nullptr;
  duckdb_scalar_function_get_client_context(info, &context);
  std::vector<std::unique_ptr<Value>> lists;
  for (idx_t i = 2; i < arguments; ++i) {
    duckdb_expression e = duckdb_scalar_function_bind_get_argument(info, i);
    duckdb_value v = nullptr;
    ErrorData error;
    if (duckdb_expression_is_foldable(e)) error.error = duckdb_expression_fold(context, e, &v);
    duckdb_destroy_expression(&e);
    if (v == nullptr || error.has_error()) {
      if (v != nullptr) duckdb_destroy_value(&v);
      duckdb_destroy_client_context(&context);
      duckdb_scalar_function_bind_set_error(info, (std::string(name) + ": the lists must be constants").c_str());
      return;
    }
    lists.push_back(std::make_unique<Value>(v));
  }
  duckdb_destroy_client_context(&context);
  auto loaded = load(*fn, lists);
  if (!loaded.ok()) {
    duckdb_scalar_function_bind_set_error(info, loaded.status().message().c_str());
    return;
  }
  auto data = std::make_unique<ProbeData>();
  data->vectors = std::shared_ptr<const BindData>(std::move(*loaded));
  for (size_t i = 0; i < data->vectors->data_paths.size(); ++i) {
    data->by_path[data->vectors->data_paths[i]] = data->vectors->vectors[i].get();
  }
  duckdb_scalar_function_set_bind_data(info, data.release(), [](void* p) { delete static_cast<ProbeData*>(p); });
  duckdb_scalar_function_set_bind_data_copy(
      info, [](void* p) -> void* { return new ProbeData(*static_cast<const ProbeData*>(p)); });
}

void VectorBind(duckdb_bind_info info) { BindProbe(info, "skade_deletion_vector_deletes", 7, LoadVectors); }
void PositionBind(duckdb_bind_info info) { BindProbe(info, "skade_position_deletes", 6, LoadPositions); }

void Probe(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  const auto* data = static_cast<const ProbeData*>(duckdb_scalar_function_get_bind_data(info));
  if (data == nullptr) {
    duckdb_scalar_function_set_error(info, "no deletes bound to this probe");
    return;
  }
  const idx_t n = duckdb_data_chunk_get_size(input);
  duckdb_vector paths = duckdb_data_chunk_get_vector(input, 0);
  duckdb_vector positions = duckdb_data_chunk_get_vector(input, 1);
  auto* path_data = static_cast<duckdb_string_t*>(duckdb_vector_get_data(paths));
  const auto* pos_data = static_cast<const int64_t*>(duckdb_vector_get_data(positions));
  uint64_t* path_valid = duckdb_vector_get_validity(paths);
  uint64_t* pos_valid = duckdb_vector_get_validity(positions);
  auto* out = static_cast<bool*>(duckdb_vector_get_data(output));
  // Rows of one file come together: the vector is looked up when the path changes. DuckDB
  // hands all rows of a file one copy of its name, so most rows compare a pointer only.
  std::string_view last;
  std::optional<iceberg::DeletionVector::Prober> prober;
  for (idx_t i = 0; i < n; ++i) {
    if ((path_valid && !duckdb_validity_row_is_valid(path_valid, i)) ||
        (pos_valid && !duckdb_validity_row_is_valid(pos_valid, i))) {
      out[i] = false;
      continue;
    }
    // Points into the input vector (inlined short strings too), which outlives this call.
    const char* bytes = duckdb_string_t_data(&path_data[i]);
    const uint32_t length = duckdb_string_t_length(path_data[i]);
    const bool same = i > 0 && length == last.size() &&
                      (bytes == last.data() || std::memcmp(bytes, last.data(), length) == 0);
    if (!same) {
      last = std::string_view(bytes, length);
      auto it = data->by_path.find(std::string(last));
      prober.reset();
      if (it != data->by_path.end()) prober.emplace(*it->second);
    }
    out[i] = prober && prober->Contains(pos_data[i]);
  }
}

enum class Arg { kVarchar, kBigint, kVarchars, kBigints, kBigintLists };

Status Register(duckdb_connection con, const FunctionInfo& info, const char* name, const std::vector<Arg>& args,
                duckdb_scalar_function_bind_t bind) {
  duckdb_scalar_function f = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(f, name);
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
  duckdb_logical_type varchars = duckdb_create_list_type(varchar);
  duckdb_logical_type bigints = duckdb_create_list_type(bigint);
  duckdb_logical_type bigint_lists = duckdb_create_list_type(bigints);
  for (Arg a : args) {
    const duckdb_logical_type types[] = {varchar, bigint, varchars, bigints, bigint_lists};
    duckdb_scalar_function_add_parameter(f, types[static_cast<int>(a)]);
  }
  duckdb_scalar_function_set_return_type(f, boolean);
  for (auto* t : {&varchar, &bigint, &boolean, &varchars, &bigints, &bigint_lists}) duckdb_destroy_logical_type(t);
  duckdb_scalar_function_set_extra_info(f, new FunctionInfo(info), [](void* p) { delete static_cast<FunctionInfo*>(p); });
  duckdb_scalar_function_set_bind(f, bind);
  duckdb_scalar_function_set_function(f, Probe);
  const duckdb_state st = duckdb_register_scalar_function(con, f);
  duckdb_destroy_scalar_function(&f);
  if (st != DuckDBSuccess) return Status::Internal(std::string("cannot register ") + name);
  return Status::Ok();
}

}  // namespace

Status RegisterDeleteProbeFunctions(duckdb_database db, duckdb_connection con, const DatabaseOptions& options) {
  FunctionInfo info;
  info.db = db;
  info.lock_down = options.lock_down;
  info.object_store = options.object_store;
  for (const std::string& d : options.allowed_directories) {
    if (io::IsObjectStoreLocation(d)) {
      info.allowed_objects.push_back(d);
      continue;
    }
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(d, ec), ec);
    if (!ec) info.allowed.push_back(canonical);
  }
  using enum Arg;
  SKADE_RETURN_IF_ERROR(Register(con, info, "skade_deletion_vector_deletes",
                                 {kVarchar, kBigint, kVarchars, kBigints, kBigints, kVarchars, kBigints}, VectorBind));
  return Register(con, info, "skade_position_deletes", {kVarchar, kBigint, kVarchars, kVarchars, kVarchars, kBigintLists},
                  PositionBind);
}

}  // namespace skade::engine
