// Manifest merging when a snapshot is committed, as Iceberg's merging snapshot producers do it
// under the commit.manifest-merge.* table properties: the small manifests of one partition spec
// and content are packed into bins of a target size and each bin is rewritten as one manifest,
// so a table's manifest list stays short however many appends it takes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/manifest.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

struct ManifestMergePolicy {
  bool enabled = true;                           // commit.manifest-merge.enabled
  int min_count_to_merge = 100;                  // commit.manifest.min-count-to-merge
  int64_t target_size_bytes = int64_t{8} << 20;  // commit.manifest.target-size-bytes

  // The policy a table's properties set; a missing or malformed value keeps its default (as a
  // malformed commit.retry.num-retries does).
  static ManifestMergePolicy FromProperties(const std::map<std::string, std::string>& properties);
};

// The manifests of a new snapshot's list after merging, as indexes into that list: one entry
// per manifest of the result, in order; an entry of one index keeps that manifest as it is, one
// of several becomes a single manifest holding their entries.
//
// `manifests` is the list in order, the snapshot's own new manifests first. Disabled, the list
// stays as it is. Otherwise data manifests come
// before delete manifests; within each content, partition specs newest (highest id) first,
// and a spec's manifests keep their order. A spec's manifests are packed from the end of its
// list into bins of at most target_size_bytes (a lone larger manifest is a bin alone), so the
// bin left under-filled is the newest one, merged again next time. A bin of one is kept; the
// bin holding the list's first manifest of that content is merged only once it holds at least
// min_count_to_merge manifests; every other bin is merged.
std::vector<std::vector<size_t>> PlanManifestMerge(const std::vector<ManifestFile>& manifests,
                                                   const ManifestMergePolicy& policy);

// Where merged manifests go: `open` makes a writer for a spec and content (its format version,
// snapshot id and unassigned sequence number set by the caller), `finish` writes its file
// and returns the list row.
struct MergedManifestSink {
  std::function<Result<std::unique_ptr<ManifestWriter>>(int spec_id, ManifestContent content)> open;
  std::function<Result<ManifestFile>(ManifestWriter& writer)> finish;
};

// Applies PlanManifestMerge to `manifests` for snapshot `snapshot_id` and returns the new
// list. A merged manifest holds its inputs' entries in order: files this snapshot added stay
// ADDED (their sequence numbers inherited from the new manifest), files it deleted stay
// DELETED, deletes of older snapshots are dropped (spec "Manifests": a DELETED entry is kept
// only in the snapshot that deleted the file), and every other live file becomes EXISTING with
// its data and file sequence numbers (and, v3, first_row_id) written out. Reads inputs through
// `io`; any read or write error is returned. Without merging to do the list comes back as is.
Result<std::vector<ManifestFile>> MergeManifests(io::FileIO& io,
                                                 const std::vector<ManifestFile>& manifests,
                                                 int64_t snapshot_id,
                                                 const ManifestMergePolicy& policy,
                                                 const MergedManifestSink& sink);

}  // namespace skade::iceberg
