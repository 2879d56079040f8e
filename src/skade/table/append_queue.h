// Internal to table/: commit coalescing. Fast appends to one table from the threads of one
// process wait in that table's AppendQueue; whichever caller finds no batch running commits
// every append queued so far as one catalog commit — one snapshot per append, applied back to
// back, each append's manifest list reusing the manifests of the snapshot before it — and
// hands each caller its own outcome (snapshot id, sequence number, commit_seq). Consecutive
// appends queued without a manifest (Table::kSnapshotPerBatchProperty) with the same extra
// summary share one snapshot instead, whose manifest the batch writes. An append whose own
// requirements fail (the table's schema or spec moved on) fails alone; the others of its
// batch commit. Conflicts with other processes rebuild the batch on the new metadata.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/manifest.h"
#include "skade/io/file_io.h"
#include "skade/table/table.h"

namespace skade::table {

// One caller's append: its data files, and their manifest unless it is to share a snapshot.
struct QueuedAppend {
  int64_t snapshot_id = 0;
  int schema_id = 0;       // the schema and spec the files were written for
  int spec_id = 0;
  int format_version = 2;  // of the manifest
  // The manifest of `files` written for `snapshot_id`; no path: the append shares a snapshot
  // of the batch (the batch writes one manifest for the appends sharing it).
  iceberg::ManifestFile manifest;
  std::vector<iceberg::DataFile> files;
  std::vector<std::pair<std::string, std::string>> extra_summary;  // e.g. snapshot lineage
  // Files of the append whose bytes and folder entries the batch makes durable before its
  // commit (FileIO::SyncFiles, SyncFolders): data files and the manifest (when it wrote one).
  std::vector<std::string> unsynced;
  // Folders the append's data writer may have created (engine::WriteResult::folders), whose
  // entries the batch makes durable with the files' (SyncFolders).
  std::vector<std::string> folders;

  // Set by the batch that took it.
  std::optional<Result<CommitOutcome>> outcome;
  catalog::TableState table;  // after the commit, when it succeeded
  bool done = false;          // guarded by the queue's mutex
};

class AppendQueue {
 public:
  // The queue every Table object of this process shares for `ident` in `catalog` written
  // through `io` (both must outlive the Table objects holding it).
  static std::shared_ptr<AppendQueue> For(catalog::Catalog& catalog, io::FileIO& io,
                                          const catalog::TableIdent& ident);

  // Commits `append` together with the appends queued beside it and returns its outcome:
  // kConflict when its own requirements fail or the batch gave up on conflicts,
  // kCommitUnknown when the catalog could not tell (its files must stay), any other error
  // of the batch's writes or commit.
  Result<CommitOutcome> Commit(QueuedAppend& append);

  // Upper bound on appends one catalog commit takes.
  static constexpr size_t kMaxBatch = 64;

  // How many appends have entered this queue so far (waiting, in a batch or done).
  uint64_t entered() const { return entered_.load(); }

 private:
  AppendQueue(catalog::Catalog& catalog, io::FileIO& io, catalog::TableIdent ident)
      : catalog_(catalog), io_(io), ident_(std::move(ident)) {}
  // Commits `batch` (runs on one caller's thread, one batch at a time).
  void CommitBatch(const std::vector<QueuedAppend*>& batch);
  // Writes to `path` the manifest of the files of `appends`, which share `snapshot_id`, for
  // `base`'s current schema and default spec, unsynced.
  Result<iceberg::ManifestFile> WriteSharedManifest(const iceberg::TableMetadata& base, int format,
                                                    int64_t snapshot_id, const std::vector<QueuedAppend*>& appends,
                                                    const std::string& path);
  // The manifests of `snapshot`'s list, from the last batch when it wrote that list.
  Result<std::vector<iceberg::ManifestFile>> ManifestsOf(const iceberg::TableMetadata& base,
                                                         const iceberg::Snapshot& snapshot);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  const catalog::TableIdent ident_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<QueuedAppend*> waiting_;
  std::atomic<uint64_t> entered_{0};
  bool committing_ = false;  // a caller is running a batch

  // Touched only by the caller running a batch.
  std::string last_list_;
  std::vector<iceberg::ManifestFile> last_manifests_;
};

}  // namespace skade::table
