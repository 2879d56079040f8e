#include "skade/table/table.h"

#include "skade/engine/schema_convert.h"

#include "skade/iceberg/relocation.h"

#include "skade/table/append_queue.h"
#include "skade/table/commit_internal.h"
#include "skade/table/parted_read.h"

#include <charconv>
#include <chrono>
#include <random>
#include <thread>
#include <set>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/io/location.h"
#include "skade/base/uuid.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/manifest_cache.h"
#include "skade/iceberg/table_update.h"

namespace skade::table {
namespace {

using iceberg::DataFile;
using iceberg::ManifestEntry;
using iceberg::ManifestEntryStatus;
using iceberg::ManifestFile;

}  // namespace

int64_t NewSnapshotId() {
  // Random positive 63-bit ids taken from a fresh UUIDv7's random bits (fork-safe, as
  // Uuid::NewV7 reseeds in a forked child).
  Uuid u = Uuid::NewV7();
  uint64_t bits = 0;
  for (int i = 8; i < 16; ++i) bits = (bits << 8) | u.bytes[i];
  bits ^= static_cast<uint64_t>(u.bytes[7]) << 56;
  int64_t id = static_cast<int64_t>(bits & 0x7FFFFFFFFFFFFFFFULL);
  return id == 0 ? 1 : id;
}

Result<std::unique_ptr<Table>> Table::Load(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db,
                                           const catalog::TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, catalog.LoadTable(ident));
  return std::unique_ptr<Table>(new Table(catalog, io, db, std::move(state)));
}

Status Table::Refresh() {
  SKADE_ASSIGN_OR_RETURN(state_, catalog_.LoadTable(state_.ident));
  UseRelocation();
  return Status::Ok();
}

void Table::UseRelocation() {
  relocated_io_.reset();
  locations_ = io::LocationMap();
  const std::string& file = state_.metadata_location;
  if (file.find("://") != std::string::npos && file.rfind("file:", 0) != 0) return;  // object stores: as recorded
  iceberg::Relocation r = iceberg::DetectRelocation(metadata(), iceberg::TableDirOfMetadataFile(file));
  if (r.map.empty()) return;
  for (const std::string& note : r.notes) SKADE_LOG_DEBUG("{}: {}", state_.ident.ToString(), note);
  locations_ = r.map;
  relocated_io_ = io::MakeRelocatingFileIO(io_, std::move(r.map));
}

Result<Table::PreparedRead> Table::PrepareRead(const ReadOptions& options) {
  const iceberg::TableMetadata& m = metadata();
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(m, options.snapshot));
  PreparedRead read;
  read.scan.schema = selected.schema;
  read.scan.name_mapping = m.DefaultNameMapping();
  read.scan.specs = m.partition_specs;
  read.scan.format_version = m.format_version;
  read.snapshot = selected.snapshot;
  if (read.snapshot == nullptr) return read;
  if (options.where) {
    SKADE_ASSIGN_OR_RETURN(read.filter, engine::SqlToIcebergFilter(db_, *options.where, *selected.schema));
  }
  read.scan.locations = locations_;
  return read;
}

Result<engine::IcebergScan> Table::PlanRead(const ReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(PreparedRead read, PrepareRead(options));
  return PlanPrepared(std::move(read));
}

Result<engine::IcebergScan> Table::PlanPrepared(PreparedRead read) {
  if (read.snapshot == nullptr) return std::move(read.scan);
  iceberg::ScanPlanner planner(read_io(), metadata());
  planner.set_cache(manifest_cache_);
  SKADE_ASSIGN_OR_RETURN(read.scan.tasks, planner.PlanAll(*read.snapshot, *read.scan.schema, read.filter));
  return std::move(read.scan);
}

Result<std::string> Table::ReadSql(const ReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(PreparedRead read, PrepareRead(options));
  engine::ScanQuery q;
  q.columns = options.columns;
  q.where = options.where;
  q.where_checked = read.where_checked();
  q.limit = options.limit;
  SKADE_ASSIGN_OR_RETURN(engine::IcebergScan scan, PlanPrepared(std::move(read)));
  return engine::BuildScanSql(db_, scan, q);
}

bool ReadsInParts(const iceberg::Snapshot& snapshot, int64_t parted_read_files) {
  std::optional<int64_t> files = snapshot.SummaryLong("total-data-files");
  return !files || *files > parted_read_files;
}

Result<bool> Table::ReadsInParts(const ReadOptions& options) const {
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(metadata(), options.snapshot));
  return selected.snapshot != nullptr && table::ReadsInParts(*selected.snapshot, options.parted_read_files);
}

Result<arrow::StreamHandle> Table::Read(const ReadOptions& options) {
  // A large snapshot is read in parts planned while they are read (parted_read.h): a limit then
  // reads a few manifests, and memory does not grow with the number of files.
  SKADE_ASSIGN_OR_RETURN(bool parted, ReadsInParts(options));
  if (parted) {
    SKADE_ASSIGN_OR_RETURN(std::unique_ptr<PartedRead> read, ReadInParts(options));
    return PartedRead::Stream(std::move(read), options.limit);
  }
  SKADE_ASSIGN_OR_RETURN(std::string sql, ReadSql(options));
  return options.whole ? db_.QueryArrowWhole(sql) : db_.QueryArrow(sql);
}

Result<std::optional<int64_t>> Table::CountFromManifests(const ReadOptions& options) {
  if (options.where) return std::optional<int64_t>();
  const iceberg::TableMetadata& m = metadata();
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(m, options.snapshot));
  if (selected.snapshot == nullptr) return std::optional<int64_t>(0);
  iceberg::ScanPlanner planner(read_io(), m);
  planner.set_cache(manifest_cache_);
  SKADE_ASSIGN_OR_RETURN(auto counts, planner.CountFromManifests(*selected.snapshot));
  if (counts.delete_files != 0) return std::optional<int64_t>();
  return std::optional<int64_t>(counts.record_count);
}

Result<int64_t> Table::Count(const ReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> counted, CountFromManifests(options));
  if (counted) return *counted;
  SKADE_ASSIGN_OR_RETURN(bool parted, ReadsInParts(options));
  if (!parted) {
    SKADE_ASSIGN_OR_RETURN(PreparedRead read, PrepareRead(options));
    engine::ScanQuery q;
    q.where = options.where;
    q.where_checked = read.where_checked();
    SKADE_ASSIGN_OR_RETURN(engine::IcebergScan scan, PlanPrepared(std::move(read)));
    return engine::CountRows(db_, scan, q);
  }
  ReadOptions counting = options;
  counting.columns.clear();
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<PartedRead> read, ReadInParts(counting));
  int64_t total = 0;
  for (;;) {
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> sql, read->Next());
    if (!sql) return total;
    SKADE_ASSIGN_OR_RETURN(auto rows, db_.QueryRows("SELECT count(*) FROM (" + *sql + ")"));
    if (rows.size() != 1 || !rows[0][0]) return Status::Internal("a part's count returned no row");
    total += std::stoll(*rows[0][0]);
  }
}

Result<arrow::SchemaHandle> Table::ArrowSchema() {
  return engine::RelationArrowSchema(db_, metadata().CurrentSchema());
}

Result<arrow::StreamHandle> Table::ScanDelta(int64_t from_snapshot, std::optional<int64_t> to_snapshot) {
  SKADE_ASSIGN_OR_RETURN(std::string sql, ChangesSql(from_snapshot, to_snapshot, ChangeMode::kAppendsOnly));
  return db_.QueryArrow(sql);
}

Result<std::unique_ptr<TableCommitStream>> Table::Subscribe(events::Bus& bus,
                                                            std::optional<int64_t> after_commit_seq) {
  return TableCommitStream::Open(catalog_, bus, state_.ident, after_commit_seq);
}

Result<CommitOutcome> Table::AppendStream(ArrowArrayStream* rows) {
  return Append({"SELECT * FROM __skade_input", rows});
}

Result<CommitOutcome> Table::IngestFiles(const std::vector<std::string>& paths) {
  SKADE_ASSIGN_OR_RETURN(std::string sql, engine::FileSourceSql(paths));
  return Append({sql, nullptr});
}

Result<CommitOutcome> Table::DeleteEquality(ArrowArrayStream* keys, const std::vector<std::string>& columns) {
  return DeleteKeys({"SELECT * FROM __skade_input", keys}, columns);
}

Result<CommitOutcome> Table::UpsertStream(ArrowArrayStream* rows, std::vector<std::string> key_columns) {
  return Upsert({"SELECT * FROM __skade_input", rows}, std::move(key_columns));
}

Result<CommitOutcome> Table::Append(const engine::WriteSource& source) {
  return Observed("append", [&] { return WriteAndCommit(source, Mode::kAppend); });
}

Result<CommitOutcome> Table::OverwriteAll(const engine::WriteSource& source) {
  return Observed("overwrite", [&] { return WriteAndCommit(source, Mode::kReplace); });
}

Result<CommitOutcome> Table::Observed(const char* operation, const std::function<Result<CommitOutcome>()>& write) {
  if (observer_ == nullptr) return write();
  const int64_t started = NowMicros();
  Result<CommitOutcome> result = write();
  if (result.ok()) return result;
  if (result.status().code() == StatusCode::kCommitUnknown) {
    // It may have committed (then the commit log has it): not a failure to report.
    return result;
  }
  FailedWrite failed;
  failed.table = state_.ident;
  failed.operation = operation;
  failed.started_at_us = started;
  failed.failed_at_us = NowMicros();
  failed.error = result.status().ToString();
  failed.lineage = lineage_;
  observer_->OnWriteFailed(failed);
  return result;
}

Result<CommitOutcome> Table::WriteAndCommit(const engine::WriteSource& source, Mode mode) {
  const iceberg::TableMetadata& start = metadata();
  iceberg::SchemaPtr schema = start.CurrentSchema();
  iceberg::PartitionSpecPtr spec = start.DefaultSpec();
  if (!schema || !spec) return Status::Corruption("table metadata has no current schema or spec");
  engine::WriteOptions wopts = engine::WriteOptionsFromProperties(
      start.properties, io::JoinLocation(io::LocalPath(start.location), "data"));
  wopts.object_store = &io_;
  wopts.file_prefix = Uuid::NewV7().ToString() + "-";
  const bool coalesce = mode == Mode::kAppend && start.Property(kCoalesceAppendsProperty) != "false";
  // A coalesced append's files are made durable by its batch, beside the batch's other files
  // and the catalog's metadata write (AppendQueue).
  if (coalesce) wopts.sync = engine::WriteOptions::Sync::kByCaller;
  SKADE_ASSIGN_OR_RETURN(engine::WriteResult written, engine::WriteDataFiles(db_, source, *schema, *spec, wopts));
  std::vector<std::string> paths;
  for (const auto& f : written.files) paths.push_back(f.file_path);
  if (coalesce && !written.files.empty()) return CommitAppend(written, schema, spec);
  const int schema_id = schema->schema_id();
  const int spec_id = spec->spec_id();
  // The data is written once; each attempt only rebuilds metadata (appends and full replaces
  // are rebasable onto whatever is current).
  return CommitSnapshot([&](const iceberg::TableMetadata& base, int) -> Result<PendingSnapshot> {
    PendingSnapshot p;
    p.operation = mode == Mode::kAppend ? "append" : "overwrite";
    p.added_data = written.files;
    p.operation_files = paths;
    p.remove_all = mode == Mode::kReplace;
    if (mode == Mode::kReplace || base.current_schema_id != schema_id || base.default_spec_id != spec_id) {
      // Files were written for this schema and spec.
      p.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(schema_id));
      p.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(spec_id));
    }
    if (mode == Mode::kAppend && written.files.empty()) p.operation_files.clear();
    return p;
  });
}

Result<CommitOutcome> Table::CommitAppend(const engine::WriteResult& written, const iceberg::SchemaPtr& schema,
                                         const iceberg::PartitionSpecPtr& spec) {
  const std::vector<DataFile>& files = written.files;
  std::vector<std::string> operation_files;
  for (const DataFile& f : files) operation_files.push_back(f.file_path);
  auto delete_all = [&] {
    for (const auto& f : operation_files) (void)io_.Delete(f);
  };
  QueuedAppend append;
  append.snapshot_id = NewSnapshotId();
  append.schema_id = schema->schema_id();
  append.spec_id = spec->spec_id();
  append.format_version = std::max(2, metadata().format_version);
  append.files = files;
  append.folders = written.folders;
  if (!lineage_.empty()) append.extra_summary.emplace_back(kSnapshotLineageKey, EncodeSnapshotLineage(lineage_));
  if (metadata().Property(kSnapshotPerBatchProperty) == "true") {
    // The batch writes one manifest for the appends sharing its snapshot.
    append.unsynced = operation_files;
    return CommitQueued(append, operation_files);
  }
  // The manifest of the new files is this caller's to write, beside the other callers'.
  std::vector<const DataFile*> added;
  for (const DataFile& f : files) added.push_back(&f);
  const std::string path = io::JoinLocation(MetadataFolder(metadata()), Uuid::NewV7().ToString() + "-m0.avro");
  auto manifest = WriteAppendManifest(io_, schema, spec, append.format_version, append.snapshot_id, added, path);
  if (!manifest.ok()) {
    delete_all();
    return manifest.status();
  }
  append.manifest = std::move(manifest).value();
  operation_files.push_back(path);
  append.unsynced = operation_files;  // the data files and the manifest
  return CommitQueued(append, operation_files);
}

Result<CommitOutcome> Table::CommitQueued(QueuedAppend& append, const std::vector<std::string>& own_files) {
  if (!append_queue_) append_queue_ = AppendQueue::For(catalog_, io_, state_.ident);
  Result<CommitOutcome> outcome = append_queue_->Commit(append);
  if (outcome.ok()) {
    state_ = std::move(append.table);
  } else if (outcome.status().code() != StatusCode::kCommitUnknown) {
    // An unknown outcome keeps its files: the commit may have happened.
    for (const auto& f : own_files) (void)io_.Delete(f);
  }
  return outcome;
}

Result<CommitOutcome> Table::CommitSnapshot(
    const std::function<Result<PendingSnapshot>(const iceberg::TableMetadata& base, int attempt)>& build) {
  const int64_t snapshot_id = NewSnapshotId();
  const std::string write_id = Uuid::NewV7().ToString();
  const int64_t started_at_us = NowMicros();  // the commit report's duration starts here
  const int max_attempts = MaxCommitAttempts(metadata().properties);
  std::vector<std::string> operation_files;
  auto delete_all = [&](const std::vector<std::string>& files) {
    for (const auto& f : files) (void)io_.Delete(f);
  };

  // A file of the base that vanished (a concurrent expiry removed the snapshot it belongs
  // to) means the base is stale: reload and rebuild, as after a conflict.
  auto base_moved = [&](const Status& st) {
    if (st.code() != StatusCode::kNotFound) return false;
    auto now = catalog_.LoadTable(state_.ident);
    return now.ok() && now->metadata_location != state_.metadata_location;
  };
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (attempt > 1) {
      BackOff(attempt);
      Status st = Refresh();
      if (!st.ok()) {
        delete_all(operation_files);
        return st;
      }
    }
    const iceberg::TableMetadata& base = metadata();
    auto built = build(base, attempt);
    if (!built.ok()) {
      if (base_moved(built.status())) {
        SKADE_LOG_INFO("base of {} moved while planning (attempt {}); retrying", state_.ident.ToString(), attempt);
        continue;
      }
      delete_all(operation_files);
      return built.status();
    }
    PendingSnapshot pending = std::move(built).value();
    operation_files = pending.operation_files;
    std::vector<std::string> attempt_files = pending.attempt_files;
    // One attempt: the outcome, a final error, or nullopt to go again on fresh metadata.
    std::optional<Result<CommitOutcome>> finished = [&]() -> std::optional<Result<CommitOutcome>> {
      auto fail = [&](Status st) -> std::optional<Result<CommitOutcome>> {
        delete_all(attempt_files);
        if (base_moved(st)) return std::nullopt;
        delete_all(operation_files);
        return Result<CommitOutcome>(std::move(st));
      };
      if (pending.empty()) {
        delete_all(attempt_files);
        CommitOutcome nothing;
        nothing.operation = pending.operation;
        nothing.attempts = attempt;
        return nothing;
      }

      const iceberg::Snapshot* parent = base.CurrentSnapshot();
      const std::string metadata_dir = MetadataFolder(base);
      const int format = std::max(2, base.format_version);
      iceberg::SchemaPtr schema = base.CurrentSchema();
      Changes changes;
      std::vector<ManifestFile> manifests;
      std::vector<std::string> own_manifests;  // written by this attempt
      int manifest_index = 0;
      auto manifest_path = [&]() {
        return io::JoinLocation(metadata_dir, write_id + "-a" + std::to_string(attempt) + "-m" +
                                                  std::to_string(manifest_index++) + ".avro");
      };
      // Writes one manifest of `entries` (all of one spec and one content kind).
      auto write_manifest = [&](int spec_id, iceberg::ManifestContent content,
                                const std::vector<ManifestEntry>& entries) -> Status {
        iceberg::PartitionSpecPtr mspec = base.SpecById(spec_id);
        if (!mspec) return Status::Corruption("unknown partition spec " + std::to_string(spec_id));
        iceberg::ManifestWriterOptions mo;
        mo.format_version = format;
        mo.snapshot_id = snapshot_id;
        mo.content = content;
        std::string path = manifest_path();
        SKADE_ASSIGN_OR_RETURN(ManifestFile written, WriteManifest(io_, schema, mspec, mo, entries, path));
        attempt_files.push_back(path);
        own_manifests.push_back(path);
        manifests.push_back(std::move(written));
        return Status::Ok();
      };

      // New files, one manifest per (spec, content).
      std::map<std::pair<int, int>, std::vector<ManifestEntry>> added;
      for (const auto* list : {&pending.added_data, &pending.added_deletes}) {
        for (const DataFile& f : *list) {
          ManifestEntry e;
          e.status = ManifestEntryStatus::kAdded;
          e.snapshot_id = snapshot_id;
          e.data_file = f;
          changes.Add(f);
          bool is_delete = f.content != iceberg::DataFileContent::kData;
          added[{f.spec_id, is_delete ? 1 : 0}].push_back(std::move(e));
        }
      }
      for (auto& [key, entries] : added) {
        Status st = write_manifest(key.first, key.second ? iceberg::ManifestContent::kDeletes
                                                         : iceberg::ManifestContent::kData,
                                   entries);
        if (!st.ok()) return fail(st);
      }

      // Existing manifests: kept as they are unless they hold a removed file, then rewritten with
      // that entry DELETED (kept for incremental readers) and the others EXISTING.
      std::set<std::string> still_to_remove = pending.removed_files;
      std::set<std::string> deletes_replaced_of;  // comparable forms of replaced_deletes_of
      for (const std::string& f : pending.replaced_deletes_of) deletes_replaced_of.insert(io::ComparableLocation(f));
      // Deletes scoped to a removed data file would apply to nothing: they go too.
      for (const std::string& f : pending.removed_files) deletes_replaced_of.insert(io::ComparableLocation(f));
      if (parent != nullptr) {
        iceberg::ScanPlanner planner(io_, base);
        auto base_manifests = planner.LoadManifests(*parent);
        if (!base_manifests.ok()) return fail(base_manifests.status());
        for (const ManifestFile& m : *base_manifests) {
          if (!pending.remove_all && deletes_replaced_of.empty()) {
            manifests.push_back(m);
            continue;
          }
          auto reader = iceberg::ManifestReader::Open(io_, m.manifest_path, m);
          if (!reader.ok()) return fail(reader.status());
          std::vector<ManifestEntry> entries;
          bool touched = false;
          while (true) {
            auto entry = (*reader)->Next();
            if (!entry.ok()) return fail(entry.status());
            if (!*entry) break;
            ManifestEntry e = std::move(**entry);
            if (e.status == ManifestEntryStatus::kDeleted) continue;  // deleted in an older snapshot
            const bool scoped_removed = e.data_file.content == iceberg::DataFileContent::kPositionDeletes &&
                                        e.data_file.referenced_data_file &&
                                        deletes_replaced_of.count(io::ComparableLocation(*e.data_file.referenced_data_file));
            bool removed = pending.remove_all || scoped_removed ||
                           (e.data_file.file_format != iceberg::FileFormat::kPuffin &&
                            pending.removed_files.count(e.data_file.file_path) > 0);
            if (removed) {
              touched = true;
              still_to_remove.erase(e.data_file.file_path);
              changes.Remove(e.data_file);
              e.status = ManifestEntryStatus::kDeleted;
              e.snapshot_id = snapshot_id;
            } else {
              e.status = ManifestEntryStatus::kExisting;
            }
            entries.push_back(std::move(e));
          }
          if (!touched) {
            manifests.push_back(m);
            continue;
          }
          Status st = write_manifest(m.partition_spec_id, m.content, entries);
          if (!st.ok()) return fail(st);
        }
      }
      if (!still_to_remove.empty()) {
        // The builder saw a file that the base no longer has: someone removed it concurrently.
        return fail(Status::Conflict("file '" + *still_to_remove.begin() + "' was removed by a concurrent commit"));
      }
      // Small manifests merge as the table's commit.manifest-merge.* properties ask (as Iceberg's
      // merging snapshot producers do), so the list does not grow with every commit.
      auto merged = MergeManifestsForCommit(io_, base, format, snapshot_id, manifests, manifest_path, &attempt_files);
      if (!merged.ok()) return fail(merged.status());
      manifests = std::move(merged).value();

      iceberg::Snapshot snap;
      snap.snapshot_id = snapshot_id;
      if (parent) snap.parent_snapshot_id = parent->snapshot_id;
      snap.sequence_number = base.last_sequence_number + 1;
      snap.timestamp_ms = std::max(NowMillis(), base.last_updated_ms);
      snap.schema_id = base.current_schema_id;
      snap.summary = Summary(pending.operation, changes, pending.rows_removed, parent);
      if (!lineage_.empty()) snap.summary.emplace_back(kSnapshotLineageKey, EncodeSnapshotLineage(lineage_));
      if (pending.scan_report) snap.summary.emplace_back(kScanReportKey, EncodeScanReport(*pending.scan_report));
      snap.summary.emplace_back(kCommitAttemptKey, std::to_string(attempt));
      snap.summary.emplace_back(kCommitStartedAtKey, std::to_string(started_at_us));
      std::string list_path = ManifestListPath(metadata_dir, snapshot_id, attempt, write_id);
      auto assigned = AssignRowLineage(format, base.next_row_id.value_or(0), manifests, &snap);
      if (!assigned.ok()) return fail(assigned.status());
      auto list = iceberg::WriteManifestList(format, snapshot_id, snap.parent_snapshot_id, snap.sequence_number, manifests);
      if (!list.ok()) return fail(list.status());
      snap.manifest_list = list_path;
      attempt_files.push_back(list_path);  // its own name (write_id): deleting it when abandoned is safe
      // The list is written, and the names of the new files made durable, while the catalog
      // writes its metadata; the pointer moves only after that (TableCommit::before_swap).
      BackgroundWork durable([&, bytes = std::move(list).value()]() -> Status {
        SKADE_RETURN_IF_ERROR(io_.CreateUnpublished(list_path, bytes));
        return io_.SyncFolders(attempt_files);
      });
      catalog::TableCommit commit = MainBranchCommit(state_.ident, base, {&snap});
      for (const auto& r : pending.requirements) commit.requirements.push_back(r);
      auto result = CommitWhenDurable(catalog_, std::move(commit), durable);
      if (result.ok()) {
        state_ = result->table;
        DeleteMergedAway(io_, MergedAway(own_manifests, manifests));
        CommitOutcome outcome = OutcomeOf(snap, pending.operation, changes, result->commit_seq, attempt);
        outcome.deleted_records = pending.rows_removed.value_or(changes.deleted_records);
        return outcome;
      }
      if (result.status().code() == StatusCode::kCommitUnknown) return Result<CommitOutcome>(result.status());  // keep files
      delete_all(attempt_files);
      if (result.status().code() != StatusCode::kConflict) {
        delete_all(operation_files);
        return Result<CommitOutcome>(result.status());
      }
      SKADE_LOG_INFO("commit to {} conflicted (attempt {}); retrying", state_.ident.ToString(), attempt);
      return std::nullopt;
    }();
    if (finished) return std::move(*finished);
  }
  delete_all(operation_files);
  return Status::Conflict("gave up committing to " + state_.ident.ToString() + " after " +
                          std::to_string(max_attempts) + " conflicting attempts");
}

}  // namespace skade::table
