#include "skade/iceberg/manifest_merge.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "skade/base/log.h"

namespace skade::iceberg {
namespace {

template <typename T>
T PropertyNumber(const std::map<std::string, std::string>& properties, const char* key, T fallback,
                 T minimum) {
  auto it = properties.find(key);
  if (it == properties.end()) return fallback;
  T n = 0;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size() || n < minimum) {
    SKADE_LOG_WARN("table property {}='{}' is not a number ≥ {}; using {}", key, s, minimum,
                   fallback);
    return fallback;
  }
  return n;
}

// Packs `items` (indexes into `manifests`) from the end into bins of at most `target` bytes,
// each new bin closing the one before (Iceberg packs with a look-back of one bin, so order is
// kept); bins and their items come back in list order.
std::vector<std::vector<size_t>> PackFromEnd(const std::vector<ManifestFile>& manifests,
                                             const std::vector<size_t>& items, int64_t target) {
  std::vector<std::vector<size_t>> bins;
  int64_t weight = 0;
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    const int64_t w = std::max<int64_t>(0, manifests[*it].manifest_length);
    if (bins.empty() || weight + w > target) {
      bins.emplace_back();
      weight = 0;
    }
    bins.back().push_back(*it);
    weight += w;
  }
  for (auto& bin : bins) std::reverse(bin.begin(), bin.end());
  std::reverse(bins.begin(), bins.end());
  return bins;
}

}  // namespace

ManifestMergePolicy ManifestMergePolicy::FromProperties(
    const std::map<std::string, std::string>& properties) {
  ManifestMergePolicy p;
  if (auto it = properties.find("commit.manifest-merge.enabled"); it != properties.end()) {
    std::string v = it->second;
    std::transform(v.begin(), v.end(), v.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (v == "false") {
      p.enabled = false;
    } else if (v != "true") {
      SKADE_LOG_WARN(
          "table property commit.manifest-merge.enabled='{}' is not true or false; using true",
          it->second);
    }
  }
  p.min_count_to_merge = PropertyNumber<int>(properties, "commit.manifest.min-count-to-merge",
                                             p.min_count_to_merge, 0);
  p.target_size_bytes = PropertyNumber<int64_t>(properties, "commit.manifest.target-size-bytes",
                                                p.target_size_bytes, 1);
  return p;
}

std::vector<std::vector<size_t>> PlanManifestMerge(const std::vector<ManifestFile>& manifests,
                                                   const ManifestMergePolicy& policy) {
  std::vector<std::vector<size_t>> out;
  if (!policy.enabled) {
    for (size_t i = 0; i < manifests.size(); ++i) out.push_back({i});
    return out;
  }
  for (ManifestContent content : {ManifestContent::kData, ManifestContent::kDeletes}) {
    // The content's manifests by spec, newest spec first, each in list order.
    std::map<int, std::vector<size_t>, std::greater<int>> by_spec;
    std::optional<size_t> first;
    for (size_t i = 0; i < manifests.size(); ++i) {
      if (manifests[i].content != content) continue;
      if (!first) first = i;
      by_spec[manifests[i].partition_spec_id].push_back(i);
    }
    for (const auto& [spec_id, items] : by_spec) {
      for (std::vector<size_t>& bin : PackFromEnd(manifests, items, policy.target_size_bytes)) {
        const bool holds_first = std::find(bin.begin(), bin.end(), *first) != bin.end();
        if (bin.size() == 1 ||
            (holds_first && bin.size() < static_cast<size_t>(policy.min_count_to_merge))) {
          for (size_t i : bin) out.push_back({i});
        } else {
          out.push_back(std::move(bin));
        }
      }
    }
  }
  return out;
}

Result<std::vector<ManifestFile>> MergeManifests(io::FileIO& io,
                                                 const std::vector<ManifestFile>& manifests,
                                                 int64_t snapshot_id,
                                                 const ManifestMergePolicy& policy,
                                                 const MergedManifestSink& sink) {
  std::vector<std::vector<size_t>> plan = PlanManifestMerge(manifests, policy);
  const bool merges =
      std::any_of(plan.begin(), plan.end(), [](const auto& step) { return step.size() > 1; });
  if (!merges) return manifests;
  std::vector<ManifestFile> out;
  out.reserve(plan.size());
  for (const std::vector<size_t>& step : plan) {
    if (step.size() == 1) {
      out.push_back(manifests[step[0]]);
      continue;
    }
    const ManifestFile& head = manifests[step[0]];
    SKADE_ASSIGN_OR_RETURN(std::unique_ptr<ManifestWriter> writer,
                           sink.open(head.partition_spec_id, head.content));
    for (size_t i : step) {
      const ManifestFile& m = manifests[i];
      SKADE_ASSIGN_OR_RETURN(std::unique_ptr<ManifestReader> reader,
                             ManifestReader::Open(io, m.manifest_path, m));
      while (true) {
        SKADE_ASSIGN_OR_RETURN(std::optional<ManifestEntry> next, reader->Next());
        if (!next) break;
        ManifestEntry& e = *next;
        const bool this_snapshot = e.snapshot_id == snapshot_id;
        if (e.status == ManifestEntryStatus::kDeleted && !this_snapshot) continue;
        if (e.status == ManifestEntryStatus::kAdded && this_snapshot) {
          // Spec "Sequence Number Inheritance": new files take the snapshot's sequence number
          // through the merged manifest, as they would have through their own.
          e.sequence_number.reset();
          e.file_sequence_number.reset();
        } else if (e.status != ManifestEntryStatus::kDeleted) {
          e.status = ManifestEntryStatus::kExisting;
        }
        SKADE_RETURN_IF_ERROR(writer->Add(e).WithContext("merge manifest " + m.manifest_path));
      }
    }
    SKADE_ASSIGN_OR_RETURN(ManifestFile merged, sink.finish(*writer));
    out.push_back(std::move(merged));
  }
  return out;
}

}  // namespace skade::iceberg
