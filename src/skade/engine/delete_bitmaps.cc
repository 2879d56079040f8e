#include "skade/engine/delete_bitmaps_internal.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "skade/engine/position_deletes_internal.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

Status CheckAllowed(const DeleteAccess& access, const char* caller, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (!access.Allows(p)) {
      return Status::PermissionDenied(std::string(caller) + ": '" + p + "' is outside the allowed directories");
    }
  }
  return Status::Ok();
}

}  // namespace

DeletionVectorPtr UnionOf(const std::vector<DeletionVectorPtr>& vectors) {
  if (vectors.size() == 1) return vectors.front();
  std::vector<int64_t> positions;
  for (const auto& v : vectors) v->ForEach([&](int64_t p) { positions.push_back(p); });
  return std::make_shared<const iceberg::DeletionVector>(iceberg::DeletionVector::FromPositions(std::move(positions)));
}

DeleteAccess DeleteAccess::From(duckdb_database db, const DatabaseOptions& options) {
  DeleteAccess access;
  access.db = db;
  access.lock_down = options.lock_down;
  access.object_store = options.object_store;
  for (const std::string& d : options.allowed_directories) {
    if (io::IsObjectStoreLocation(d)) {
      access.allowed_objects.push_back(d);
      continue;
    }
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(d, ec), ec);
    if (!ec) access.allowed.push_back(canonical);
  }
  return access;
}

bool DeleteAccess::Allows(const std::string& path) const {
  if (io::IsObjectStoreLocation(path)) {
    if (object_store == nullptr) return false;
    if (!lock_down) return true;
    return std::any_of(allowed_objects.begin(), allowed_objects.end(),
                       [&](const std::string& prefix) { return io::IsWithin(path, prefix); });
  }
  const std::string local = io::LocalPath(path);
  if (local.find("://") != std::string::npos || local.starts_with("file:")) return false;
  if (!lock_down) return true;
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(local, ec), ec);
  if (ec) return false;
  for (const auto& dir : allowed) {
    auto rel = p.lexically_relative(dir);
    if (!rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
}

Result<DeleteBitmaps> LoadVectorBitmaps(const DeleteAccess& access, const VectorRequest& request, const char* caller) {
  const size_t n = request.puffins.size();
  if (request.offsets.size() != n || request.lengths.size() != n || request.data_paths.size() != n ||
      request.row_counts.size() != n) {
    return Status::InvalidArgument(std::string(caller) + ": the five deletion vector lists must have the same length");
  }
  SKADE_RETURN_IF_ERROR(CheckAllowed(access, caller, request.puffins));
  DeleteBitmaps out;
  for (size_t i = 0; i < n; ++i) {
    // Object-store locations stay as they are.
    SKADE_ASSIGN_OR_RETURN(DeletionVectorPtr vector,
                           ReadDeletionVector(io::LocalPath(request.puffins[i]), request.offsets[i],
                                              request.lengths[i], access.object_store));
    // Every position names a row of the data file: this also bounds what a vector expands to.
    if (vector->max() >= request.row_counts[i]) {
      return Status::Corruption(std::string(caller) + ": the vector at offset " + std::to_string(request.offsets[i]) +
                                " of '" + request.puffins[i] + "' deletes position " + std::to_string(vector->max()) +
                                ", past the " + std::to_string(request.row_counts[i]) + " rows of '" +
                                request.data_paths[i] + "'");
    }
    out.data_paths.push_back(request.data_paths[i]);
    out.vectors.push_back(std::move(vector));
  }
  return out;
}

Result<DeleteBitmaps> LoadPositionBitmaps(const DeleteAccess& access, const PositionDeleteRequest& request,
                                          const char* caller) {
  const size_t n = request.data_paths.size();
  if (request.data_locations.size() != n || request.data_deletes.size() != n) {
    return Status::InvalidArgument(std::string(caller) +
                                   ": data_paths, data_locations and data_deletes must have the same length");
  }
  for (const auto& list : request.data_deletes) {
    for (int64_t k : list) {
      if (k < 0 || k >= static_cast<int64_t>(request.files.size())) {
        return Status::InvalidArgument(std::string(caller) + ": data_deletes names delete file " + std::to_string(k) +
                                       " of " + std::to_string(request.files.size()));
      }
    }
  }
  SKADE_RETURN_IF_ERROR(CheckAllowed(access, caller, request.files));
  SKADE_ASSIGN_OR_RETURN(std::vector<PositionDeletesPtr> loaded,
                         LoadPositionDeletes(access.db, request.files, access.object_store));
  DeleteBitmaps out;
  for (size_t i = 0; i < n; ++i) {
    const std::string location = io::ComparableLocation(request.data_locations[i]);
    std::vector<DeletionVectorPtr> found;
    for (int64_t k : request.data_deletes[i]) {
      const PositionDeletesPtr& file = loaded[static_cast<size_t>(k)];
      auto it = file->by_location.find(location);
      // Shares the file's ownership: the bitmap lives as long as this read holds it.
      if (it != file->by_location.end()) found.emplace_back(file, &it->second);
    }
    if (found.empty()) continue;
    out.data_paths.push_back(request.data_paths[i]);
    // Several delete files for one data file: one bitmap of them all.
    out.vectors.push_back(UnionOf(found));
  }
  return out;
}

}  // namespace skade::engine
