#include "skade/engine/deletion_vectors_internal.h"

#include <map>

#include "skade/base/byte_bounded_cache.h"
#include "skade/iceberg/puffin.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

// Decoded blobs by (file, offset, length, file size, modification time): a Puffin file is
// immutable, and a file rewritten in place (size or time changed) is read again.
ByteBoundedCache<iceberg::DeletionVector>& VectorCache() {
  static auto* cache = new ByteBoundedCache<iceberg::DeletionVector>(int64_t{128} << 20);
  return *cache;
}

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
  if (DeletionVectorPtr hit = VectorCache().Find(key)) return hit;
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
  VectorCache().Put(key, vector, vector->memory_bytes());
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
    if (!VectorCache().Find(CacheKey(r.puffin, offset, length, info))) {
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

Result<DeletionVectorPtr> ReadDeletionVector(const std::string& puffin, int64_t offset, int64_t length,
                                             io::FileIO* object_store) {
  auto local = io::MakeLocalFileIO();
  SKADE_ASSIGN_OR_RETURN(io::FileIO * io, ReaderFor(puffin, *local, object_store));
  auto info = io->Stat(puffin);
  if (!info.ok()) return info.status();
  return ReadVector(*io, puffin, puffin, offset, length, *info);
}

}  // namespace skade::engine
