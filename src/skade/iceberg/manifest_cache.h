// ManifestCache: decoded manifest lists and manifests kept by the file they came from (Iceberg
// never rewrites one), shared by the scans of a long-running process across tables, snapshots
// and queries, so that planning after a commit reads only what the commit added. Bounded in
// bytes, least recently used first out.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/manifest.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

// Thread-safe.
class ManifestCache {
 public:
  // Holds at most about `capacity_bytes` of decoded entries (an estimate of their memory).
  explicit ManifestCache(int64_t capacity_bytes);
  int64_t capacity_bytes() const { return capacity_bytes_; }

  using Entries = std::shared_ptr<const std::vector<ManifestEntry>>;
  using List = std::shared_ptr<const std::vector<ManifestFile>>;

  // The live entries (ADDED and EXISTING) of `manifest` decoded with `options` (the column
  // metrics a scan uses; kept apart per set of metrics, which is what keeps them small), with
  // sequence numbers and row ids inherited from the list row (ManifestReader). Read through
  // `io` on a miss; errors as ManifestReader's, never cached. A manifest is known by where `io`
  // reads it (FileIO::ResolvedLocation), its length and the list-row values its entries inherit.
  Result<Entries> LiveEntries(io::FileIO& io, const ManifestFile& manifest, const ManifestReadOptions& options);
  // The rows of the manifest list at `location` (ReadManifestList), read through `io` on a miss.
  Result<List> ManifestList(io::FileIO& io, std::string_view location);

  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t bytes = 0;  // estimated, of what is held now
    int64_t items = 0;  // manifests and lists held now
  };
  Stats stats() const;

 private:
  struct Item {
    std::shared_ptr<const void> value;  // Entries or List
    int64_t bytes = 0;
    std::list<std::string>::iterator position;  // in order_, most recent first
  };
  // The held value for `key`, marked most recently used; null when absent.
  std::shared_ptr<const void> Find(const std::string& key);
  void Put(const std::string& key, std::shared_ptr<const void> value, int64_t bytes);

  const int64_t capacity_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Item> items_;
  std::list<std::string> order_;
  int64_t bytes_ = 0;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace skade::iceberg
