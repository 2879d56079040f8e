#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "skade/engine/deletion_vectors_internal.h"
#include "skade/iceberg/puffin.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

// Decoded blobs by (file, offset, length, file size, modification time): a Puffin file is
// immutable, and a file rewritten in place (size or time changed) is read again. Least
// recently used blobs leave first once the blob bytes held pass the bound.
class VectorCache {
 public:
  static VectorCache& Instance() {
    static VectorCache* cache = new VectorCache(int64_t{128} << 20);
    return *cache;
  }

  DeletionVectorPtr Find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.position);
    return it->second.vector;
  }

  void Put(const std::string& key, DeletionVectorPtr vector, int64_t bytes) {
    std::lock_guard lock(mu_);
    if (entries_.count(key) || bytes > limit_) return;
    order_.push_front(key);
    entries_[key] = Entry{std::move(vector), bytes, order_.begin()};
    held_ += bytes;
    while (held_ > limit_ && !order_.empty()) {
      auto victim = entries_.find(order_.back());
      held_ -= victim->second.bytes;
      entries_.erase(victim);
      order_.pop_back();
    }
  }

 private:
  explicit VectorCache(int64_t limit) : limit_(limit) {}
  struct Entry {
    DeletionVectorPtr vector;
    int64_t bytes = 0;
    std::list<std::string>::iterator position;
  };
  std::mutex mu_;
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string, Entry> entries_;
  int64_t held_ = 0;
  const int64_t limit_;
};

std::string CacheKey(const std::string& path, int64_t offset, int64_t length, const io::FileInfo& info) {
  return path + '\0' + std::to_string(offset) + '\0' + std::to_string(length) + '\0' + std::to_string(info.size) +
         '\0' + std::to_string(info.modified_ms);
}

// A vector for a data file of 2^31 rows, every one deleted, in array containers: far above any
// real blob (a bitset container caps a block of 65536 rows at 8 KiB).
constexpr int64_t kMaxBlobBytes = int64_t{1} << 30;

Status Bad(const std::string& path, const std::string& what) {
  return Status::Corruption("deletion vector file '" + path + "': " + what);
}

// Reads and decodes one blob of the file at local `path` (`name` in messages); no footer check
// (the cache's entry or the scan's load did it).
Result<DeletionVectorPtr> ReadVector(io::FileIO& io, const std::string& path, const std::string& name,
                                     int64_t offset, int64_t length, const io::FileInfo& info) {
  const std::string key = CacheKey(path, offset, length, info);
  if (DeletionVectorPtr hit = VectorCache::Instance().Find(key)) return hit;
  if (offset < 0 || length < 12 || length > kMaxBlobBytes || offset > info.size - length) {
    return Bad(name, "the blob at offset " + std::to_string(offset) + " with length " + std::to_string(length) +
                         " does not fit the file (" + std::to_string(info.size) + " bytes)");
  }
  SKADE_ASSIGN_OR_RETURN(std::string blob, io.ReadRange(path, offset, length));
  if (static_cast<int64_t>(blob.size()) != length) return Bad(name, "the file changed size while being read");
  auto decoded = iceberg::DeletionVector::Deserialize(blob);
  if (!decoded.ok()) {
    return Bad(name, "blob at offset " + std::to_string(offset) + ": " + decoded.status().message());
  }
  auto vector = std::make_shared<const iceberg::DeletionVector>(std::move(*decoded));
  VectorCache::Instance().Put(key, vector, vector->memory_bytes());
  return DeletionVectorPtr(vector);
}

// The FileIO that reads `location`: `object_store` for an object-store location
// (kInvalidArgument when the database has none), `local` otherwise.
Result<io::FileIO*> ReaderFor(const std::string& location, io::FileIO& local, io::FileIO* object_store) {
  if (!io::IsObjectStoreLocation(location)) return &local;
  if (object_store == nullptr) {
    return Status::InvalidArgument("deletion vector file '" + location + "' is on object storage, which is not configured");
  }
  return object_store;
}

}  // namespace

Result<std::vector<DeletionVectorPtr>> LoadDeletionVectors(const std::vector<DeletionVectorRequest>& requests,
                                                           io::FileIO* object_store) {
  auto local = io::MakeLocalFileIO();
  std::map<std::string, io::FileInfo> infos;
  std::map<std::string, iceberg::PuffinFooter> footers;  // read only for blobs not cached
  std::vector<DeletionVectorPtr> out;
  out.reserve(requests.size());
  for (const DeletionVectorRequest& r : requests) {
    const iceberg::DataFile& dv = *r.vector;
    if (!dv.content_offset || !dv.content_size_in_bytes) {
      return Bad(dv.file_path, "its manifest entry has no content_offset or content_size_in_bytes");
    }
    const int64_t offset = *dv.content_offset, length = *dv.content_size_in_bytes;
    SKADE_ASSIGN_OR_RETURN(io::FileIO * io, ReaderFor(r.puffin, *local, object_store));
    auto info_it = infos.find(r.puffin);
    if (info_it == infos.end()) {
      auto info = io->Stat(r.puffin);
      if (!info.ok()) {
        if (info.status().code() == StatusCode::kNotFound) {
          return Status::NotFound("deletion vector file '" + dv.file_path + "' does not exist" +
                                  (r.puffin != dv.file_path ? " (looked for '" + r.puffin + "')" : ""));
        }
        return info.status();
      }
      info_it = infos.emplace(r.puffin, *info).first;
    }
    const io::FileInfo& info = info_it->second;
    if (!VectorCache::Instance().Find(CacheKey(r.puffin, offset, length, info))) {
      // First sight of this blob: its footer entry must say it is a deletion vector as stored.
      auto footer_it = footers.find(r.puffin);
      if (footer_it == footers.end()) {
        auto footer = iceberg::ReadPuffinFooter(*io, r.puffin);
        if (!footer.ok()) return footer.status();
        footer_it = footers.emplace(r.puffin, std::move(*footer)).first;
      }
      const iceberg::PuffinBlob* blob = footer_it->second.BlobAt(offset);
      if (blob == nullptr) return Bad(dv.file_path, "its footer lists no blob at offset " + std::to_string(offset));
      if (blob->type != iceberg::kDeletionVectorBlob) {
        return Bad(dv.file_path, "the blob at offset " + std::to_string(offset) + " is a '" + blob->type +
                                     "' blob, not a deletion vector (" + std::string(iceberg::kDeletionVectorBlob) + ")");
      }
      if (blob->length != length) {
        return Bad(dv.file_path, "the footer gives the blob at offset " + std::to_string(offset) + " " +
                                     std::to_string(blob->length) + " bytes, the manifest " + std::to_string(length));
      }
      if (blob->compression_codec && !blob->compression_codec->empty()) {
        return Bad(dv.file_path, "the deletion vector at offset " + std::to_string(offset) + " is compressed (" +
                                     *blob->compression_codec + "); the spec stores them uncompressed");
      }
    }
    SKADE_ASSIGN_OR_RETURN(DeletionVectorPtr vector, ReadVector(*io, r.puffin, dv.file_path, offset, length, info));
    const iceberg::DeletionVector& v = *vector;
    if (v.cardinality() != dv.record_count) {
      return Bad(dv.file_path, "the deletion vector for '" + r.data->file_path + "' holds " +
                                   std::to_string(v.cardinality()) + " positions, its manifest entry says " +
                                   std::to_string(dv.record_count));
    }
    if (v.max() >= r.data->record_count) {
      return Bad(dv.file_path, "the deletion vector for '" + r.data->file_path + "' deletes position " +
                                   std::to_string(v.max()) + ", past the data file's " +
                                   std::to_string(r.data->record_count) + " rows");
    }
    out.push_back(std::move(vector));
  }
  return out;
}

namespace {

struct FunctionInfo {
  bool lock_down = false;
  std::vector<std::filesystem::path> allowed;  // canonical
  std::vector<std::string> allowed_objects;    // object-store prefixes
  io::FileIO* object_store = nullptr;          // DatabaseOptions::object_store
};

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

// Reads and checks the vectors the five lists name (the function's constant arguments).
Result<std::unique_ptr<BindData>> LoadBindData(const FunctionInfo& fn, const char* name, duckdb_value puffin_list,
                                               duckdb_value offset_list, duckdb_value length_list,
                                               duckdb_value path_list, duckdb_value count_list) {
  const std::vector<std::string> puffins = StringList(puffin_list), data_paths = StringList(path_list);
  const std::vector<int64_t> offsets = LongList(offset_list), lengths = LongList(length_list),
                             row_counts = LongList(count_list);
  const size_t n = puffins.size();
  if (offsets.size() != n || lengths.size() != n || data_paths.size() != n || row_counts.size() != n) {
    return Status::InvalidArgument(std::string(name) + ": the five lists must have the same length");
  }
  auto data = std::make_unique<BindData>();
  auto local = io::MakeLocalFileIO();
  for (size_t i = 0; i < puffins.size(); ++i) {
    if (!Allowed(fn, puffins[i])) {
      return Status::PermissionDenied(std::string(name) + ": '" + puffins[i] + "' is outside the allowed directories");
    }
    const std::string path = io::LocalPath(puffins[i]);  // object-store locations stay as they are
    SKADE_ASSIGN_OR_RETURN(io::FileIO * io, ReaderFor(path, *local, fn.object_store));
    auto stat = io->Stat(path);
    if (!stat.ok()) return stat.status();
    SKADE_ASSIGN_OR_RETURN(DeletionVectorPtr vector, ReadVector(*io, path, puffins[i], offsets[i], lengths[i], *stat));
    // Every position names a row of the data file: this also bounds what a vector expands to.
    if (vector->max() >= row_counts[i]) {
      return Status::Corruption(std::string(name) + ": the vector at offset " + std::to_string(offsets[i]) + " of '" +
                                puffins[i] + "' deletes position " + std::to_string(vector->max()) + ", past the " +
                                std::to_string(row_counts[i]) + " rows of '" + data_paths[i] + "'");
    }
    data->vectors.push_back(std::move(vector));
  }
  data->data_paths = data_paths;
  return data;
}

// ---- skade_deletion_vector_deletes(path, pos, puffins, offsets, lengths, data_paths, counts):
// whether the row at `pos` of data file `path` is deleted. The lists are constants, read once
// at bind; each row then costs one bitmap probe (no join).

// Copied with the expression that uses it (DuckDB copies bound expressions while planning).
struct ProbeData {
  std::shared_ptr<const BindData> vectors;
  std::unordered_map<std::string, const iceberg::DeletionVector*> by_path;
};

void ProbeBind(duckdb_bind_info info) {
  const auto* fn = static_cast<const FunctionInfo*>(duckdb_scalar_function_bind_get_extra_info(info));
  if (duckdb_scalar_function_bind_get_argument_count(info) != 7) {
    duckdb_scalar_function_bind_set_error(info, "skade_deletion_vector_deletes takes 7 arguments");
    return;
  }
  duckdb_client_context context = nullptr;
  duckdb_scalar_function_get_client_context(info, &context);
  std::vector<std::unique_ptr<Value>> lists;
  for (idx_t i = 2; i < 7; ++i) {
    duckdb_expression e = duckdb_scalar_function_bind_get_argument(info, i);
    duckdb_value v = nullptr;
    duckdb_error_data error = nullptr;
    if (duckdb_expression_is_foldable(e)) error = duckdb_expression_fold(context, e, &v);
    duckdb_destroy_expression(&e);
    const bool failed = v == nullptr || (error != nullptr && duckdb_error_data_has_error(error));
    if (error != nullptr) duckdb_destroy_error_data(&error);
    if (failed) {
      if (v != nullptr) duckdb_destroy_value(&v);
      duckdb_destroy_client_context(&context);
      duckdb_scalar_function_bind_set_error(info, "skade_deletion_vector_deletes: the lists must be constants");
      return;
    }
    lists.push_back(std::make_unique<Value>(v));
  }
  duckdb_destroy_client_context(&context);
  auto loaded = LoadBindData(*fn, "skade_deletion_vector_deletes", lists[0]->v, lists[1]->v, lists[2]->v,
                             lists[3]->v, lists[4]->v);
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

void Probe(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  const auto* data = static_cast<const ProbeData*>(duckdb_scalar_function_get_bind_data(info));
  if (data == nullptr) {
    duckdb_scalar_function_set_error(info, "skade_deletion_vector_deletes: no vectors bound");
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
  // Rows of one file come together: the vector is looked up when the path changes.
  std::string_view last;
  const iceberg::DeletionVector* vector = nullptr;
  for (idx_t i = 0; i < n; ++i) {
    if ((path_valid && !duckdb_validity_row_is_valid(path_valid, i)) ||
        (pos_valid && !duckdb_validity_row_is_valid(pos_valid, i))) {
      out[i] = false;
      continue;
    }
    duckdb_string_t s = path_data[i];
    std::string_view path(duckdb_string_t_data(&s), duckdb_string_t_length(s));
    if (i == 0 || path != last) {
      auto it = data->by_path.find(std::string(path));
      vector = it == data->by_path.end() ? nullptr : it->second;
      // The view points into the input vector, which outlives this call.
      last = std::string_view(duckdb_string_t_data(&path_data[i]), path.size());
    }
    out[i] = vector != nullptr && vector->Contains(pos_data[i]);
  }
}

Status RegisterProbeFunction(duckdb_connection con, const FunctionInfo& info) {
  duckdb_scalar_function f = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(f, "skade_deletion_vector_deletes");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
  duckdb_logical_type varchars = duckdb_create_list_type(varchar);
  duckdb_logical_type bigints = duckdb_create_list_type(bigint);
  for (duckdb_logical_type t : {varchar, bigint, varchars, bigints, bigints, varchars, bigints}) {
    duckdb_scalar_function_add_parameter(f, t);
  }
  duckdb_scalar_function_set_return_type(f, boolean);
  for (auto* t : {&varchar, &bigint, &boolean, &varchars, &bigints}) duckdb_destroy_logical_type(t);
  duckdb_scalar_function_set_extra_info(f, new FunctionInfo(info), [](void* p) { delete static_cast<FunctionInfo*>(p); });
  duckdb_scalar_function_set_bind(f, ProbeBind);
  duckdb_scalar_function_set_function(f, Probe);
  const duckdb_state st = duckdb_register_scalar_function(con, f);
  duckdb_destroy_scalar_function(&f);
  if (st != DuckDBSuccess) return Status::Internal("cannot register skade_deletion_vector_deletes");
  return Status::Ok();
}

}  // namespace

Status RegisterDeletionVectorFunction(duckdb_connection con, const DatabaseOptions& options) {
  FunctionInfo info;
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
  return RegisterProbeFunction(con, info);
}

}  // namespace skade::engine
