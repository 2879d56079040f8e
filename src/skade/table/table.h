// Table: one Iceberg table of a catalog, with the read path (plan + DuckDB scan as Arrow
// streams) and the write path (each operation writes data files, manifests and a manifest list,
// then commits one snapshot through the catalog, retrying rebasable operations on conflict).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/engine/data_writer.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"
#include "skade/table/commit_stream.h"
#include "skade/table/interfaces.h"
#include "skade/table/snapshot_lineage.h"
#include "skade/table/write_observer.h"

namespace skade::iceberg {
class ManifestCache;  // iceberg/manifest_cache.h
}  // namespace skade::iceberg

namespace skade::table {

struct PendingSnapshot;  // commit_internal.h
class AppendQueue;       // append_queue.h
struct QueuedAppend;
class PartedRead;        // parted_read.h

// Reads of snapshots of more data files than this, or that do not say how many, are read in
// parts (Table::Read and Count; SQL views: sql::LakeSql::set_parted_read_files). A smaller
// snapshot is planned whole: its plan is cheap, and SQL views keep it for the next statement.
inline constexpr int64_t kPartedReadFiles = 1000;
// Whether `snapshot` is read in parts: it has more data files than `parted_read_files`, or its
// summary does not say how many.
bool ReadsInParts(const iceberg::Snapshot& snapshot, int64_t parted_read_files);

// What to read.
struct ReadOptions {
  iceberg::SnapshotSelector snapshot;
  std::vector<std::string> columns;  // empty = all
  std::optional<engine::Predicate> where;  // prunes files where Iceberg can; DuckDB applies it all
  std::optional<int64_t> limit;
  // Read and Count read a snapshot of more data files than this in parts (parted_read.h).
  int64_t parted_read_files = kPartedReadFiles;
  // For a reader that keeps every row anyway (a whole table into pyarrow or pandas): Read runs
  // the query to its end with DuckDB converting in its worker threads
  // (engine::Database::QueryArrowWhole) before the first batch comes; memory holds the whole
  // result, and the rows come in no particular order (not file by file). A snapshot read in
  // parts still streams part by part.
  bool whole = false;
};

// One schema change (Iceberg schema evolution; columns by dotted name, nested too).
struct SchemaChange {
  enum class Kind {
    kAddColumn,      // column (parent.path.name), type, doc, default_json (initial-default)
    kDropColumn,     // column
    kRenameColumn,   // column → new_name (same parent)
    kUpdateType,     // column → type (a promotion the spec allows)
    kMakeOptional,   // column
    kMoveFirst,      // column
    kMoveBefore,     // column before reference (same parent)
    kMoveAfter,      // column after reference
    kSetDoc,         // column, doc
    kSetIdentifierFields,  // identifier_fields (top-level or struct-nested primitive columns)
  };
  Kind kind = Kind::kAddColumn;
  std::string column;
  std::string type;       // DuckDB type syntax ("BIGINT", "DECIMAL(12,2)", "STRUCT(a INTEGER)")
  std::string new_name;
  std::string reference;
  std::string doc;
  std::optional<std::string> default_json;  // single-value JSON of the initial default
  std::vector<std::string> identifier_fields;
};

struct ExpireOptions {
  // Expire snapshots older than this (default: table property history.expire.max-snapshot-age-ms,
  // else now - 5 days).
  std::optional<int64_t> older_than_ms;
  // Always keep this many most recent ancestors of each branch (default: table property
  // history.expire.min-snapshots-to-keep, else 1; a ref's own min-snapshots-to-keep wins).
  std::optional<int> retain_last;
  bool delete_files = true;  // remove files no longer referenced
  bool dry_run = false;      // report what would be expired/deleted; commit and delete nothing
};

struct ExpireResult {
  std::vector<int64_t> expired_snapshot_ids;
  int64_t deleted_data_files = 0;
  int64_t deleted_delete_files = 0;
  int64_t deleted_manifests = 0;
  int64_t deleted_manifest_lists = 0;
  int64_t deleted_statistics_files = 0;
  std::vector<std::string> deleted_files;  // every file deleted (or, in a dry run, to delete)
  int64_t commit_seq = 0;                  // 0 when nothing was committed
};

struct OrphanResult {
  std::vector<std::string> orphans;  // files under the table location no metadata references
  bool deleted = false;
};

// What a commit produced.
struct CommitOutcome {
  int64_t snapshot_id = 0;
  int64_t sequence_number = 0;
  int64_t commit_seq = 0;
  std::string operation;
  int64_t added_records = 0;
  int64_t added_files = 0;
  int64_t added_bytes = 0;
  int64_t deleted_records = 0;
  int64_t deleted_files = 0;
  int attempts = 1;
};

// Not thread-safe (one writer per Table object; concurrent writers use separate objects and
// the catalog's optimistic concurrency). The catalog, FileIO and Database are borrowed and
// must outlive the table.
class Table : public IcebergSource, public IcebergSink {
 public:
  static Result<std::unique_ptr<Table>> Load(catalog::Catalog& catalog, io::FileIO& io,
                                             engine::Database& db, const catalog::TableIdent& ident);

  const catalog::TableIdent& ident() const { return state_.ident; }
  const iceberg::TableMetadata& metadata() const { return *state_.metadata; }
  const std::string& metadata_location() const { return state_.metadata_location; }
  // Reloads the current metadata from the catalog.
  Status Refresh();
  // Another object over the same loaded state (no I/O), e.g. for another thread.
  std::unique_ptr<Table> Clone() const {
    return std::unique_ptr<Table>(new Table(catalog_, io_, db_, state_));
  }
  // The same, running its SQL on `db` instead: another Database over the same DuckDB (one set
  // up for a client's session, engine::Database::WithConnectionSetup), which must outlive it.
  std::unique_ptr<Table> CloneOn(engine::Database& db) const {
    return std::unique_ptr<Table>(new Table(catalog_, io_, db, state_));
  }

  // Plans a read (snapshot selection, pruning by the Iceberg-expressible part of `where`).
  Result<engine::IcebergScan> PlanRead(const ReadOptions& options);
  // The DuckDB SQL of a read (columns, where, limit applied).
  Result<std::string> ReadSql(const ReadOptions& options);
  // The same read in parts, planned while it is read (parted_read.h): a reader that stops
  // early has read only the manifests of the parts it took. options.limit is not applied.
  Result<std::unique_ptr<PartedRead>> ReadInParts(const ReadOptions& options) const;
  // Rows as an Arrow C stream (bounded memory).
  Result<arrow::StreamHandle> Read(const ReadOptions& options);
  // Row count (from manifests when no filter and no delete files; a snapshot of more than
  // options.parted_read_files data files is counted part by part, parted_read.h).
  Result<int64_t> Count(const ReadOptions& options);
  // The row count the manifests give without a filter: nullopt when delete files exist (or
  // options.where is set), since rows must then be read.
  Result<std::optional<int64_t>> CountFromManifests(const ReadOptions& options);
  // Whether Read and Count read the snapshot options select in parts: one of more than
  // options.parted_read_files data files, or whose summary does not say how many.
  Result<bool> ReadsInParts(const ReadOptions& options) const;

  // Fast append: new data files in one snapshot; retried on conflicts (rebasable). Appends to
  // one table from several threads of a process (through any Table objects over the same
  // catalog and FileIO) are coalesced: one catalog commit adds a snapshot for each, back to
  // back, and each caller gets its own snapshot id and commit_seq (on a catalog with a log of
  // its own; a polled log sees the batch as one change). With kSnapshotPerBatchProperty the
  // batch's appends share one snapshot (and so its id, sequence number and commit_seq); each
  // outcome still counts only the caller's own rows and files.
  Result<CommitOutcome> Append(const engine::WriteSource& source);
  // Replaces the whole table content with the source in one snapshot ("overwrite").
  Result<CommitOutcome> OverwriteAll(const engine::WriteSource& source);

  // Iceberg's replace transaction (REPLACE TABLE, CREATE OR REPLACE TABLE [… AS]; table/replace.cc),
  // one commit: `schema` becomes the current schema — its columns numbered anew, except that a
  // column with the path and type of a current column keeps that column's id — with an
  // unpartitioned spec and the unsorted order, and main a new snapshot without parent holding
  // the rows of `source` (an "overwrite"), or no snapshot at all when `source` is null (an empty
  // table). The table keeps its uuid, location, properties, other branches and tags, its
  // metadata log and older snapshots, which expire as any do (ExpireSnapshots). A concurrent
  // commit is replaced as well (the attempt is redone on it); one that changed the schema's
  // numbering in between is kConflict. kInvalidArgument for an invalid schema.
  Result<CommitOutcome> Replace(const iceberg::SchemaPtr& schema, const engine::WriteSource* source);

  // --- Row-level operations (table/row_operations.cc). Each is one snapshot. ---

  // Deletes the rows for which `where` is true: files where every live row matches are
  // dropped; other files are rewritten without those rows (copy-on-write), or get a position
  // delete file when the table property write.delete.mode is merge-on-read. Re-planned and
  // re-applied on conflict. A delete that matches nothing commits nothing (snapshot_id 0).
  Result<CommitOutcome> DeleteWhere(const engine::Predicate& where);
  // Replaces the rows matching `where` with the source rows, atomically ("overwrite").
  Result<CommitOutcome> OverwriteWhere(const engine::Predicate& where, const engine::WriteSource& source);
  // Dynamic partition overwrite: every partition the source writes to is replaced.
  Result<CommitOutcome> OverwritePartitions(const engine::WriteSource& source);
  // Equality deletes: removes every row whose `key_columns` equal a row of `keys`. Key columns
  // must include the partition source columns (so each key has one partition).
  Result<CommitOutcome> DeleteKeys(const engine::WriteSource& keys, const std::vector<std::string>& key_columns);
  // CDC upsert on `key_columns` (default: the schema's identifier fields): equality deletes for
  // the source's keys plus the source rows, in one snapshot. kInvalidArgument for duplicate
  // keys within the source.
  Result<CommitOutcome> Upsert(const engine::WriteSource& source, std::vector<std::string> key_columns);

  enum class ChangeMode { kAppendsOnly, kChangelog };
  // SQL of the rows that changed between `from_snapshot` (exclusive) and `to_snapshot`
  // (inclusive; default the current snapshot), following the parent chain. kAppendsOnly:
  // the appended rows; kInvalidArgument when the range holds an overwrite or delete.
  // kChangelog: every column plus _change_type ('INSERT'/'DELETE'), _change_ordinal (position
  // of the snapshot in the range) and _commit_snapshot_id.
  Result<std::string> ChangesSql(int64_t from_snapshot, std::optional<int64_t> to_snapshot, ChangeMode mode);

  struct CompactOptions {
    int64_t small_file_bytes = 32LL << 20;  // files below this size are rewritten
    bool apply_deletes = true;              // also rewrite files that have delete files
  };
  // Rewrites small files (and files with deletes) into target-size files, dropping the
  // delete files that no longer apply ("replace"; no row changes).
  Result<CommitOutcome> Compact(const CompactOptions& options);

  // --- Metadata operations (table/evolution.cc, table/maintenance.cc). Each is one commit. ---

  // Applies the schema changes in order as one new schema (kInvalidArgument for an unknown
  // column, a disallowed type change, a name clash, dropping an identifier column…).
  Result<CommitOutcome> UpdateSchema(const std::vector<SchemaChange>& changes);
  // Makes a new default partition spec from the text form ("day(ts), bucket(16, id)"; empty =
  // unpartitioned), keeping field ids of fields that stay (spec evolution).
  Result<CommitOutcome> UpdatePartitionSpec(const std::string& partition_by);
  // Sets the default sort order ("id ASC NULLS FIRST, day(ts) DESC"; empty = unsorted).
  Result<CommitOutcome> UpdateSortOrder(const std::string& sort_by);
  Result<CommitOutcome> UpdateProperties(const std::map<std::string, std::string>& set,
                                         const std::vector<std::string>& unset);
  // Moves main back to an ancestor of the current snapshot (kInvalidArgument otherwise).
  Result<CommitOutcome> Rollback(int64_t snapshot_id);
  // Moves main to any snapshot of the table.
  Result<CommitOutcome> SetCurrentSnapshot(int64_t snapshot_id);
  // Branches and tags (snapshot defaults to the current one). kAlreadyExists / kNotFound.
  Result<CommitOutcome> CreateBranch(const std::string& name, std::optional<int64_t> snapshot_id);
  Result<CommitOutcome> CreateTag(const std::string& name, std::optional<int64_t> snapshot_id);
  Result<CommitOutcome> DropRef(const std::string& name);
  // Expires snapshots (never those referenced by branches/tags or the newest retain_last of
  // main) and, if asked, deletes data/delete files, manifests and manifest lists that no
  // remaining snapshot references, inside the table's location and referenced by no other
  // table (catalog::DeletionGuard).
  Result<ExpireResult> ExpireSnapshots(const ExpireOptions& options);
  // Files under the table location not referenced by any snapshot's metadata (uncommitted
  // metadata files included), written before `older_than_ms` (so in-flight writes are safe;
  // a temporary file of a local write also only once it is an hour old, whatever the cutoff);
  // deletes them unless dry_run. Files inside another table's location or referenced by
  // another table's metadata are never orphans (catalog::DeletionGuard). kPermissionDenied for
  // a table outside the catalog's warehouse unless `scope` is kAnywhere.
  enum class OrphanMode { kDryRun, kDelete };
  enum class OrphanScope { kWarehouse, kAnywhere };
  Result<OrphanResult> RemoveOrphanFiles(int64_t older_than_ms, OrphanMode mode,
                                         OrphanScope scope = OrphanScope::kWarehouse);

  // --- IcebergSource / IcebergSink (interfaces.h) ---
  std::string name() const override { return state_.ident.ToString(); }
  Result<arrow::SchemaHandle> ArrowSchema() override;
  std::optional<int64_t> CurrentSnapshotId() const override { return metadata().current_snapshot_id; }
  Result<arrow::StreamHandle> Scan(const ReadOptions& options) override { return Read(options); }
  Result<arrow::StreamHandle> ScanDelta(int64_t from_snapshot, std::optional<int64_t> to_snapshot) override;
  Result<std::unique_ptr<TableCommitStream>> Subscribe(
      events::Bus& bus, std::optional<int64_t> after_commit_seq) override;
  Result<CommitOutcome> AppendStream(ArrowArrayStream* rows) override;
  Result<CommitOutcome> IngestFiles(const std::vector<std::string>& paths) override;
  Result<CommitOutcome> DeleteEquality(ArrowArrayStream* keys, const std::vector<std::string>& columns) override;
  Result<CommitOutcome> UpsertStream(ArrowArrayStream* rows, std::vector<std::string> key_columns) override;

  // Every snapshot this object commits from now on records `lineage` in its summary (where its
  // rows came from: RunTransform sets it); an empty one stops that.
  void set_snapshot_lineage(SnapshotLineage lineage) { lineage_ = std::move(lineage); }
  const SnapshotLineage& snapshot_lineage() const { return lineage_; }
  // Told about every write of this object that fails (borrowed; null for none).
  void set_write_observer(WriteObserver* observer) { observer_ = observer; }
  // Reads manifest lists and manifests through `cache` when planning reads (borrowed,
  // thread-safe; null for none; see iceberg/manifest_cache.h).
  void set_manifest_cache(iceberg::ManifestCache* cache) { manifest_cache_ = cache; }

  // Table property: "false" commits each append on its own (no coalescing; one catalog commit
  // per append, conflicting ones retried).
  static constexpr const char* kCoalesceAppendsProperty = "skade.commit.coalesce-appends";
  // Table property: "true" makes the coalesced appends of one batch (those with the same
  // lineage summary) one snapshot with one manifest, instead of a snapshot, a manifest and
  // a manifest list each: fewer files per append and a table history that grows by batch, at
  // the price of appends no longer being told apart by snapshot (time travel, incremental
  // reads and the commit log see the batch as one append).
  static constexpr const char* kSnapshotPerBatchProperty = "skade.commit.snapshot-per-batch";

  // Commit attempts for rebasable operations unless the table property
  // commit.retry.num-retries says otherwise (attempts = retries + 1).
  static constexpr int kMaxAttempts = 60;

 private:
  Table(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db, catalog::TableState state)
      : catalog_(catalog), io_(io), db_(db), state_(std::move(state)) {
    UseRelocation();
  }
  // A table whose metadata file is found away from the location it records (a registered
  // copy) is read from where the file is: reads go through a relocating FileIO and the scan's
  // location map (iceberg/relocation.h). No-op for tables where they say they are.
  void UseRelocation();
  io::FileIO& read_io() { return relocated_io_ ? *relocated_io_ : io_; }

  // A read before its files are planned: the scan without tasks, and what planning needs.
  struct PreparedRead {
    engine::IcebergScan scan;
    const iceberg::Snapshot* snapshot = nullptr;  // null: the table has no snapshot
    iceberg::ExprPtr filter;                      // the Iceberg-expressible part of `where`
    // SqlToIcebergFilter ran on `where` (found it boolean): the query need not check it again.
    bool where_checked() const { return filter != nullptr; }
  };
  Result<PreparedRead> PrepareRead(const ReadOptions& options);
  // Plans a prepared read's files (PlanRead's second half).
  Result<engine::IcebergScan> PlanPrepared(PreparedRead read);

  // A metadata-only commit (table/maintenance.cc): `build` turns the current metadata into
  // requirements + updates; on kConflict the table is reloaded and `build` runs again.
  struct MetadataCommit {
    std::vector<iceberg::TableRequirement> requirements;
    std::vector<iceberg::TableUpdate> updates;
  };
  using MetadataCommitBuilder = std::function<Result<MetadataCommit>(const iceberg::TableMetadata&)>;
  Result<CommitOutcome> CommitMetadata(const std::string& operation, const MetadataCommitBuilder& build);

  // Runs one write and tells the observer when it fails.
  Result<CommitOutcome> Observed(const char* operation, const std::function<Result<CommitOutcome>()>& write);
  Result<CommitOutcome> OverwriteWhereUnobserved(const engine::Predicate& where, const engine::WriteSource& source);
  Result<CommitOutcome> OverwritePartitionsUnobserved(const engine::WriteSource& source);
  Result<CommitOutcome> CompactUnobserved(const CompactOptions& options);
  Result<CommitOutcome> ReplaceUnobserved(const iceberg::SchemaPtr& schema, const engine::WriteSource* source);

  enum class Mode { kAppend, kReplace };
  Result<CommitOutcome> WriteAndCommit(const engine::WriteSource& source, Mode mode);
  enum class KeyedWrite { kDeleteOnly, kUpsert };
  Result<CommitOutcome> WriteKeyed(const engine::WriteSource& source, std::vector<std::string> key_columns,
                                   KeyedWrite kind);
  // Commits data files written unsynced as a fast append through the table's AppendQueue,
  // which makes them durable (and the folders the write made for them).
  Result<CommitOutcome> CommitAppend(const engine::WriteResult& written, const iceberg::SchemaPtr& schema,
                                     const iceberg::PartitionSpecPtr& spec);
  // Commits `append` through the queue; deletes `own_files` when it surely did not commit.
  Result<CommitOutcome> CommitQueued(QueuedAppend& append, const std::vector<std::string>& own_files);
  // The partition specs of the data files the current snapshot may still hold.
  Result<std::set<int>> LiveDataSpecIds(const iceberg::TableMetadata& m);
  // Commits one snapshot built by `build` from the current metadata, retrying on conflicts
  // with backoff (build runs again on fresh metadata; see commit_internal.h).
  Result<CommitOutcome> CommitSnapshot(
      const std::function<Result<PendingSnapshot>(const iceberg::TableMetadata& base, int attempt)>& build);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  engine::Database& db_;
  catalog::TableState state_;
  std::unique_ptr<io::FileIO> relocated_io_;
  io::LocationMap locations_;
  SnapshotLineage lineage_;
  WriteObserver* observer_ = nullptr;
  iceberg::ManifestCache* manifest_cache_ = nullptr;
  std::shared_ptr<AppendQueue> append_queue_;  // taken at the first append
};

// A new random positive snapshot id.
int64_t NewSnapshotId();

}  // namespace skade::table
