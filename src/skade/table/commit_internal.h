// Internal to table/: the changes one snapshot makes, and helpers shared by the operations that
// produce snapshots.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/table_update.h"
#include "skade/io/file_io.h"
#include "skade/table/snapshot_lineage.h"
#include "skade/table/table.h"

namespace skade::table {

// What a snapshot adds and removes; built against one base metadata.
struct PendingSnapshot {
  std::string operation;  // append | overwrite | delete | replace
  std::vector<iceberg::DataFile> added_data;
  std::vector<iceberg::DataFile> added_deletes;  // content: position or equality deletes
  std::set<std::string> removed_files;           // stored paths of data/delete files
  // Data files (stored paths) whose file-scoped deletes (deletion vectors; position delete
  // files with a referenced_data_file) go: a new vector replaces them all. A Puffin file holds
  // the vectors of many data files, so they are removed by the data file they apply to, never
  // by the Puffin file's path. A data file removed whole takes its file-scoped deletes along.
  std::set<std::string> replaced_deletes_of;
  bool remove_all = false;                       // every live file of the base is removed
  // Files written for this attempt only: deleted when the attempt is abandoned.
  std::vector<std::string> attempt_files;
  // Files shared by all attempts (e.g. appended data written once): deleted only if the whole
  // operation fails.
  std::vector<std::string> operation_files;
  std::vector<iceberg::TableRequirement> requirements;  // besides uuid + main snapshot id
  // Rows an equality or position delete removes (the summary's deleted-records, the outcome's
  // deleted_records); unset when only whole data files go, whose rows count instead.
  std::optional<int64_t> rows_removed;
  // The scan of the table this write planned before writing (copy-on-write, compaction): kept
  // in the snapshot summary (snapshot_lineage.h, kScanReportKey) for the lineage emitter.
  std::optional<ScanReport> scan_report;
  // Commit nothing when the snapshot would change nothing (e.g. a delete that matched no row).
  bool empty() const {
    return added_data.empty() && added_deletes.empty() && removed_files.empty() && replaced_deletes_of.empty() &&
           !remove_all;
  }
};

// The scan report of a plan of `snapshot_id` of `base` with `tasks` (what the planner with
// `stats` returned, in `planning_us`), reading every column of the current schema.
ScanReport ScanReportOfPlan(const iceberg::TableMetadata& base, int64_t snapshot_id, std::string filter,
                            const std::vector<iceberg::FileScanTask>& tasks, const iceberg::PlanStats& stats,
                            int64_t planning_us);

// "spec|value|value" text identifying a partition, for summaries.
std::string PartitionText(const iceberg::DataFile& f);

// Counts that go into a snapshot summary (spec "Snapshot Summary": optional fields).
struct Changes {
  int64_t added_data_files = 0;
  int64_t added_records = 0;
  int64_t added_files_size = 0;
  int64_t added_delete_files = 0;
  int64_t added_position_delete_files = 0;
  int64_t added_dvs = 0;
  int64_t removed_dvs = 0;
  int64_t added_equality_delete_files = 0;
  int64_t added_position_deletes = 0;
  int64_t added_equality_deletes = 0;
  int64_t deleted_data_files = 0;
  int64_t deleted_records = 0;
  int64_t removed_files_size = 0;
  int64_t removed_delete_files = 0;
  int64_t removed_position_deletes = 0;
  int64_t removed_equality_deletes = 0;
  std::set<std::string> partitions;  // changed partitions

  void Add(const iceberg::DataFile& f) {
    partitions.insert(PartitionText(f));
    added_files_size += f.file_size_in_bytes;
    switch (f.content) {
      case iceberg::DataFileContent::kData:
        ++added_data_files;
        added_records += f.record_count;
        break;
      case iceberg::DataFileContent::kPositionDeletes:
        ++added_delete_files;
        // Deletion vectors count apart from position delete files (spec v3 summaries).
        ++(f.file_format == iceberg::FileFormat::kPuffin ? added_dvs : added_position_delete_files);
        added_position_deletes += f.record_count;
        break;
      case iceberg::DataFileContent::kEqualityDeletes:
        ++added_delete_files;
        ++added_equality_delete_files;
        added_equality_deletes += f.record_count;
        break;
    }
  }
  void Remove(const iceberg::DataFile& f) {
    partitions.insert(PartitionText(f));
    removed_files_size += f.file_size_in_bytes;
    switch (f.content) {
      case iceberg::DataFileContent::kData:
        ++deleted_data_files;
        deleted_records += f.record_count;
        break;
      case iceberg::DataFileContent::kPositionDeletes:
        ++removed_delete_files;
        if (f.file_format == iceberg::FileFormat::kPuffin) ++removed_dvs;
        removed_position_deletes += f.record_count;
        break;
      case iceberg::DataFileContent::kEqualityDeletes:
        ++removed_delete_files;
        removed_equality_deletes += f.record_count;
        break;
    }
  }
};

// The summary of a snapshot making `c` (spec "Snapshot Summary"): the operation, the counts,
// and totals carried on from `parent`'s summary (null for the first snapshot).
std::vector<std::pair<std::string, std::string>> Summary(const std::string& operation, const Changes& c,
                                                         std::optional<int64_t> rows_removed,
                                                         const iceberg::Snapshot* parent);

// The pieces every snapshot commit shares (Table::CommitSnapshot, AppendQueue).

// <table location>/metadata, where manifests and manifest lists of new snapshots go.
std::string MetadataFolder(const iceberg::TableMetadata& base);
// The manifest list of `snapshot_id` written by attempt `attempt` of write `write_id`.
std::string ManifestListPath(const std::string& metadata_folder, int64_t snapshot_id, int attempt,
                             const std::string& write_id);
// When a new file's bytes become durable: at once, or by the commit that names it (which syncs
// it with its other files before the pointer moves).
enum class FileSync { kNow, kByCommit };
// Writes one manifest of `entries` (all of `spec` and of options.content) to `path`, unpublished
// (FileIO::CreateUnpublished, or CreateUnsynced for kByCommit); its manifest-list row.
Result<iceberg::ManifestFile> WriteManifest(io::FileIO& io, const iceberg::SchemaPtr& schema,
                                            const iceberg::PartitionSpecPtr& spec,
                                            const iceberg::ManifestWriterOptions& options,
                                            const std::vector<iceberg::ManifestEntry>& entries, const std::string& path,
                                            FileSync sync = FileSync::kNow);
// Writes the manifest of a fast append (FileSync::kByCommit): `files` as ADDED data entries of
// `snapshot_id`, for `schema` and `spec`, in `format_version`; its manifest-list row.
Result<iceberg::ManifestFile> WriteAppendManifest(io::FileIO& io, const iceberg::SchemaPtr& schema,
                                                  const iceberg::PartitionSpecPtr& spec, int format_version,
                                                  int64_t snapshot_id,
                                                  const std::vector<const iceberg::DataFile*>& files,
                                                  const std::string& path);
// The list of a new snapshot after manifest merging (iceberg/manifest_merge.h) as `base`'s
// commit.manifest-merge.* properties ask: merged manifests are written in `format_version` for
// `snapshot_id`, each unpublished at the next of `next_path()`, which is also appended to
// `written` (to sync before the commit, and to delete if it is abandoned).
Result<std::vector<iceberg::ManifestFile>> MergeManifestsForCommit(io::FileIO& io, const iceberg::TableMetadata& base,
                                                                  int format_version, int64_t snapshot_id,
                                                                  const std::vector<iceberg::ManifestFile>& manifests,
                                                                  const std::function<std::string()>& next_path,
                                                                  std::vector<std::string>* written);
// Those of `candidates` (manifests written for a snapshot) that its merged `list` does not name.
std::vector<std::string> MergedAway(const std::vector<std::string>& candidates,
                                    const std::vector<iceberg::ManifestFile>& list);
// After the commit: deletes manifests that no committed list names (best effort: one left
// behind is an orphan for `gc`).
void DeleteMergedAway(io::FileIO& io, const std::vector<std::string>& paths);
// Spec "Row Lineage" (format ≥ 3): the list's new data manifests take ids from `next_row_id`,
// which becomes `snapshot`'s first-row-id; the ids handed out (its added-rows). 0 below v3.
Result<int64_t> AssignRowLineage(int format_version, int64_t next_row_id, std::vector<iceberg::ManifestFile>& manifests,
                                 iceberg::Snapshot* snapshot);
// The catalog commit adding `snapshots` to main, each in turn its head, on top of `base`'s
// current snapshot (asserted, with the table uuid).
catalog::TableCommit MainBranchCommit(const catalog::TableIdent& ident, const iceberg::TableMetadata& base,
                                      const std::vector<const iceberg::Snapshot*>& snapshots);
// What committing `snapshot` with `changes` produced.
CommitOutcome OutcomeOf(const iceberg::Snapshot& snapshot, const std::string& operation, const Changes& changes,
                        int64_t commit_seq, int attempts);

// Work run on a thread of its own while the catalog commits — making the files a commit names
// durable as the catalog writes its metadata — and waited for before the pointer moves.
// Thread-safe; the destructor waits.
class BackgroundWork {
 public:
  explicit BackgroundWork(std::function<Status()> work);
  ~BackgroundWork();
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;
  // Waits for the work to end and returns its status (the same on every call).
  Status Wait();

 private:
  Status status_;  // written by the work's thread, read after the join
  std::once_flag joined_;
  std::thread thread_;
};

// Commits `commit` through `catalog` with its before_swap waiting for `durable` (the pointer
// moves only once that work succeeded; its error is the commit's). Returns after `durable`
// ended, whatever the outcome.
Result<catalog::CommitResult> CommitWhenDurable(catalog::Catalog& catalog, catalog::TableCommit commit,
                                                BackgroundWork& durable);

// Number of attempts allowed by commit.retry.num-retries (+1), default Table::kMaxAttempts.
int MaxCommitAttempts(const std::map<std::string, std::string>& properties);
// Jittered exponential backoff before attempt `attempt` (≥ 2).
void BackOff(int attempt);

}  // namespace skade::table
