// Scan planning (spec "Scan Planning"): choose a snapshot (id, ref or time), prune manifests by
// partition summaries and files by partition values and column metrics, and attach position and
// equality delete files by sequence number and partition. Data manifests are read a few at a
// time in parallel, their tasks streamed in manifest order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/expression.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/manifest_cache.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

// Which snapshot to read. At most one of the three may be set; none = the current snapshot.
struct SnapshotSelector {
  std::optional<int64_t> snapshot_id;
  std::optional<std::string> ref;
  std::optional<int64_t> as_of_ms;
};

// The snapshot to read (nullptr for a table without snapshots) and the schema to read it with:
// the snapshot's own schema for ids, tags and times; the current schema for the current
// snapshot and branches (Iceberg's time-travel rule). kNotFound naming what is missing;
// kInvalidArgument if more than one selector is set.
struct SelectedSnapshot {
  const Snapshot* snapshot = nullptr;
  SchemaPtr schema;
};
Result<SelectedSnapshot> SelectSnapshot(const TableMetadata& metadata, const SnapshotSelector& selector);

// The snapshots after `from_exclusive` up to and including `to`, oldest first, found by
// following parents from `to` (empty when they are the same snapshot). kNotFound when
// `from_exclusive` is unknown or a snapshot in between has expired; kInvalidArgument when
// `from_exclusive` is not an ancestor of `to`.
Result<std::vector<const Snapshot*>> SnapshotsBetween(const TableMetadata& metadata, int64_t from_exclusive,
                                                      const Snapshot& to);

// A delete file with its data sequence number.
struct DeleteFileTask {
  DataFile file;
  int64_t sequence_number = 0;
};
using DeleteFileTaskPtr = std::shared_ptr<const DeleteFileTask>;

// One data file to read plus the delete files that apply to it.
struct FileScanTask {
  DataFile file;  // column statistics are cleared after pruning to keep tasks small
  int64_t sequence_number = 0;  // data sequence number
  std::vector<DeleteFileTaskPtr> deletes;
};

struct PlanStats {
  int64_t manifests_total = 0;
  int64_t manifests_skipped = 0;
  int64_t data_files_total = 0;
  int64_t data_files_skipped = 0;
  int64_t delete_files = 0;
  int64_t record_count = 0;  // sum over planned data files (before deletes)
};

// What an incremental append scan does with a snapshot in its range whose operation is not
// "append": kRefuse fails the scan; kSkip leaves it out, so that it contributes no files, as
// Iceberg's IncrementalAppendScan does (BaseIncrementalAppendScan keeps only the range's
// snapshots whose operation is append).
enum class NonAppends { kRefuse, kSkip };

// Plans scans of one table. Not thread-safe; cheap to create.
class ScanPlanner {
 public:
  // `io` reads manifest lists and manifests (pass a relocating FileIO for moved tables); it
  // and `metadata` must outlive the planner.
  ScanPlanner(io::FileIO& io, const TableMetadata& metadata);

  // Streams the data-file tasks of `snapshot` matching `filter` (unbound, may be null) to
  // `sink`. Delete manifests are indexed first; then data manifests are read (see set_threads).
  // Errors name the manifest or list that failed.
  Status PlanFiles(const Snapshot& snapshot, const Schema& schema, const ExprPtr& filter,
                   const std::function<Status(FileScanTask)>& sink);
  // An incremental append scan: streams the data files that the snapshots after
  // `from_exclusive` up to and including `to` appended, matching `filter`. What happens to a
  // snapshot in the range that is not an append follows set_non_appends: by default the scan
  // fails (kInvalidArgument naming the first: other operations change rows in ways a list of new
  // files cannot express). Tasks carry no deletes, since an append adds none. Range errors as
  // SnapshotsBetween.
  Status PlanAppends(int64_t from_exclusive, const Snapshot& to, const Schema& schema, const ExprPtr& filter,
                     const std::function<Status(FileScanTask)>& sink);
  // All tasks at once, in PlanFiles' order.
  Result<std::vector<FileScanTask>> PlanAll(const Snapshot& snapshot, const Schema& schema,
                                            const ExprPtr& filter);

  struct ManifestCounts {
    int64_t data_files = 0;
    int64_t delete_files = 0;
    int64_t record_count = 0;  // live data rows before deletes
  };
  // Counts from the manifest list's per-manifest added/existing counts when every manifest
  // has them; otherwise by reading the manifests (never data files).
  Result<ManifestCounts> CountFromManifests(const Snapshot& snapshot);

  // The snapshot's manifest-list rows (v1 snapshots with an inline `manifests` list get rows
  // built from the manifest headers).
  Result<std::vector<ManifestFile>> LoadManifests(const Snapshot& snapshot);

  const PlanStats& stats() const { return stats_; }
  // Data-file tasks keep the column metrics of these field ids (all others are dropped to keep
  // tasks small); none by default.
  void set_kept_stats(std::set<int> field_ids) { kept_stats_ = std::move(field_ids); }
  // How PlanAppends treats snapshots that are not appends; kRefuse by default.
  void set_non_appends(NonAppends mode) { non_appends_ = mode; }
  // Threads that read and decode data manifests while PlanFiles runs (tasks still reach the
  // sink in order, on the calling thread); default: the cores, at most 4. 1 reads them on the
  // calling thread.
  void set_threads(int threads) { threads_ = threads < 1 ? 1 : threads; }
  // Reads manifest lists and manifests through `cache` (borrowed, thread-safe; null, or one of
  // 0 bytes, for none): a long-running process plans again after a commit reading only what the
  // commit added.
  void set_cache(ManifestCache* cache) { cache_ = cache != nullptr && cache->capacity_bytes() > 0 ? cache : nullptr; }

 private:
  // PlanFiles, handing on each read data manifest's tasks together (in manifest order, the
  // planner's stats already counting them): `batch` may move the tasks out.
  Status PlanBatches(const Snapshot& snapshot, const Schema& schema, const ExprPtr& filter,
                     const std::function<Status(std::vector<FileScanTask>&)>& batch);
  // Calls fn(entry, owned) for each live entry of `m`: from the cache when one is set (owned is
  // null: copy what is kept), else decoded with `options` (owned is the entry: move from it).
  Status ForEachLive(const ManifestFile& m, const ManifestReadOptions& options,
                     const std::function<Status(const ManifestEntry&, ManifestEntry*)>& fn);

  io::FileIO& io_;
  const TableMetadata& metadata_;
  PlanStats stats_;
  std::set<int> kept_stats_;
  int threads_;
  ManifestCache* cache_ = nullptr;
  NonAppends non_appends_ = NonAppends::kRefuse;
};

}  // namespace skade::iceberg
