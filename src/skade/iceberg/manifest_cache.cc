#include "skade/iceberg/manifest_cache.h"

#include <utility>

namespace skade::iceberg {
namespace {

// Rough memory of decoded values: what the containers and strings allocate, not exact.
int64_t MapBytes(size_t entries, size_t value_bytes) {
  return static_cast<int64_t>(entries * (48 + value_bytes));
}

int64_t EntryBytes(const ManifestEntry& e) {
  const DataFile& f = e.data_file;
  int64_t bytes = static_cast<int64_t>(sizeof(ManifestEntry) + f.file_path.size());
  bytes += static_cast<int64_t>(f.partition.size() * (sizeof(std::optional<Literal>) + 16));
  bytes += MapBytes(f.column_sizes.size() + f.value_counts.size() + f.null_value_counts.size() +
                        f.nan_value_counts.size(),
                    sizeof(int64_t));
  for (const auto* bounds : {&f.lower_bounds, &f.upper_bounds}) {
    for (const auto& [id, value] : *bounds)
      bytes += MapBytes(1, sizeof(std::string) + value.size());
  }
  bytes += static_cast<int64_t>((f.equality_ids.size() + f.split_offsets.size()) * sizeof(int64_t));
  if (f.referenced_data_file) bytes += static_cast<int64_t>(f.referenced_data_file->size());
  return bytes;
}

// What `options` decode, as text: "*" for every metric, else the field ids; "s" with split
// offsets.
std::string OptionsKey(const ManifestReadOptions& options) {
  std::string key = options.split_offsets ? "s" : "";
  if (!options.metric_field_ids) return key + "*";
  std::vector<int> ids = *options.metric_field_ids;
  std::sort(ids.begin(), ids.end());
  for (int id : ids) key += "," + std::to_string(id);
  return key;
}

int64_t ListBytes(const std::vector<ManifestFile>& list) {
  int64_t bytes = 0;
  for (const ManifestFile& m : list) {
    bytes += static_cast<int64_t>(sizeof(ManifestFile) + m.manifest_path.size());
    for (const FieldSummary& s : m.partitions) {
      bytes += static_cast<int64_t>(sizeof(FieldSummary) + s.lower_bound.value_or("").size() +
                                    s.upper_bound.value_or("").size());
    }
  }
  return bytes;
}

}  // namespace

ManifestCache::ManifestCache(int64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

Result<ManifestCache::Entries> ManifestCache::LiveEntries(io::FileIO& io,
                                                          const ManifestFile& manifest,
                                                          const ManifestReadOptions& options) {
  // What the entries inherit from the list row is part of the key: the same file listed with
  // other values decodes to other entries.
  const std::string key = "m|" + io.ResolvedLocation(manifest.manifest_path) + "|" +
                          std::to_string(manifest.manifest_length) + "|" +
                          std::to_string(manifest.sequence_number) + "|" +
                          std::to_string(manifest.added_snapshot_id) + "|" +
                          std::to_string(manifest.partition_spec_id) + "|" +
                          (manifest.first_row_id ? std::to_string(*manifest.first_row_id) : "-") +
                          "|" + OptionsKey(options);
  if (auto held = Find(key))
    return std::static_pointer_cast<const std::vector<ManifestEntry>>(held);
  auto entries = std::make_shared<std::vector<ManifestEntry>>();
  int64_t bytes = static_cast<int64_t>(key.size());
  SKADE_RETURN_IF_ERROR(ForEachLiveEntry(
      io, manifest,
      [&](ManifestEntry& e) {
        bytes += EntryBytes(e);
        entries->push_back(std::move(e));
        return Status::Ok();
      },
      options));
  Put(key, entries, bytes);
  return Entries(std::move(entries));
}

Result<ManifestCache::List> ManifestCache::ManifestList(io::FileIO& io, std::string_view location) {
  const std::string key = "l|" + io.ResolvedLocation(location);
  if (auto held = Find(key)) return std::static_pointer_cast<const std::vector<ManifestFile>>(held);
  SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> rows, ReadManifestList(io, location));
  const int64_t bytes = static_cast<int64_t>(key.size()) + ListBytes(rows);
  auto list = std::make_shared<const std::vector<ManifestFile>>(std::move(rows));
  Put(key, list, bytes);
  return List(std::move(list));
}

ManifestCache::Stats ManifestCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{hits_, misses_, bytes_, static_cast<int64_t>(items_.size())};
}

std::shared_ptr<const void> ManifestCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  order_.splice(order_.begin(), order_, it->second.position);
  return it->second.value;
}

void ManifestCache::Put(const std::string& key, std::shared_ptr<const void> value, int64_t bytes) {
  if (bytes > capacity_bytes_) return;  // larger than the whole cache: read it each time
  std::lock_guard<std::mutex> lock(mu_);
  if (items_.count(key) > 0) return;  // another scan read it meanwhile
  while (!order_.empty() && bytes_ + bytes > capacity_bytes_) {
    auto victim = items_.find(order_.back());
    bytes_ -= victim->second.bytes;
    items_.erase(victim);
    order_.pop_back();
  }
  order_.push_front(key);
  items_.emplace(key, Item{std::move(value), bytes, order_.begin()});
  bytes_ += bytes;
}

}  // namespace skade::iceberg
