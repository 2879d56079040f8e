#include "skade/table/table.h"

#include <charconv>
#include <chrono>
#include <random>
#include <thread>
#include <set>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_update.h"

namespace skade::table {
namespace {

using iceberg::DataFile;
using iceberg::ManifestEntry;
using iceberg::ManifestEntryStatus;
using iceberg::ManifestFile;

int64_t SummaryLong(const iceberg::Snapshot* s, std::string_view key) {
  if (s == nullptr) return 0;
  auto v = s->SummaryValue(key);
  if (!v) return 0;
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  return ec == std::errc() && p == v->data() + v->size() ? out : 0;
}

// Counts that go into a snapshot summary (spec "Snapshot Summary": optional fields).
struct Changes {
  int64_t added_data_files = 0;
  int64_t added_records = 0;
  int64_t added_files_size = 0;
  int64_t deleted_data_files = 0;
  int64_t deleted_records = 0;
  int64_t removed_files_size = 0;
  int64_t removed_delete_files = 0;
  int64_t removed_position_deletes = 0;
  int64_t removed_equality_deletes = 0;
  std::set<std::string> partitions;  // changed partitions
};

std::vector<std::pair<std::string, std::string>> Summary(const std::string& operation, const Changes& c,
                                                         const iceberg::Snapshot* parent) {
  std::vector<std::pair<std::string, std::string>> s;
  s.emplace_back("operation", operation);
  auto add = [&](const char* k, int64_t v) {
    if (v != 0) s.emplace_back(k, std::to_string(v));
  };
  add("added-data-files", c.added_data_files);
  add("deleted-data-files", c.deleted_data_files);
  add("added-records", c.added_records);
  add("deleted-records", c.deleted_records);
  add("added-files-size", c.added_files_size);
  add("removed-files-size", c.removed_files_size);
  add("removed-delete-files", c.removed_delete_files);
  add("removed-position-deletes", c.removed_position_deletes);
  add("removed-equality-deletes", c.removed_equality_deletes);
  s.emplace_back("changed-partition-count", std::to_string(c.partitions.size()));
  auto total = [&](const char* k, int64_t delta) {
    s.emplace_back(k, std::to_string(std::max<int64_t>(0, SummaryLong(parent, k) + delta)));
  };
  total("total-records", c.added_records - c.deleted_records);
  total("total-files-size", c.added_files_size - c.removed_files_size);
  total("total-data-files", c.added_data_files - c.deleted_data_files);
  total("total-delete-files", -c.removed_delete_files);
  total("total-position-deletes", -c.removed_position_deletes);
  total("total-equality-deletes", -c.removed_equality_deletes);
  s.emplace_back("engine-name", "skade");
  return s;
}

std::string PartitionText(const DataFile& f) {
  std::string key = std::to_string(f.spec_id);
  for (const auto& v : f.partition) key += "|" + (v ? v->ToString() : std::string("null"));
  return key;
}

// commit.retry.num-retries (Iceberg's property) plus the first attempt.
int MaxCommitAttempts(const std::map<std::string, std::string>& properties) {
  auto it = properties.find("commit.retry.num-retries");
  if (it != properties.end()) {
    int n = 0;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
    if (ec == std::errc() && p == it->second.data() + it->second.size() && n >= 0) return n + 1;
  }
  return Table::kMaxAttempts;
}

// Jittered exponential backoff between attempts: 1 ms doubling up to 256 ms, so that many
// writers racing on one table spread out instead of colliding again.
void BackOff(int attempt) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  int64_t cap = int64_t{1} << std::min(attempt, 8);
  std::uniform_int_distribution<int64_t> dist(cap / 2, cap);
  std::this_thread::sleep_for(std::chrono::milliseconds(dist(rng)));
}

}  // namespace

int64_t NewSnapshotId() {
  // Random positive 63-bit ids, as Iceberg writers use (UUID-derived there).
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(MonotonicNanos())};
  int64_t id = 0;
  while (id == 0) id = static_cast<int64_t>(rng() & 0x7FFFFFFFFFFFFFFFULL);
  return id;
}

Result<std::unique_ptr<Table>> Table::Load(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db,
                                           const catalog::TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, catalog.LoadTable(ident));
  return std::unique_ptr<Table>(new Table(catalog, io, db, std::move(state)));
}

Status Table::Refresh() {
  SKADE_ASSIGN_OR_RETURN(state_, catalog_.LoadTable(state_.ident));
  return Status::Ok();
}

Result<engine::IcebergScan> Table::PlanRead(const ReadOptions& options) {
  const iceberg::TableMetadata& m = metadata();
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(m, options.snapshot));
  engine::IcebergScan scan;
  scan.schema = selected.schema;
  scan.name_mapping = m.DefaultNameMapping();
  if (selected.snapshot == nullptr) return scan;
  iceberg::ExprPtr filter;
  if (!options.where_sql.empty()) {
    SKADE_ASSIGN_OR_RETURN(filter, engine::SqlToIcebergFilter(db_, options.where_sql, *selected.schema));
  }
  iceberg::ScanPlanner planner(io_, m);
  SKADE_ASSIGN_OR_RETURN(scan.tasks, planner.PlanAll(*selected.snapshot, *selected.schema, filter));
  return scan;
}

Result<std::string> Table::ReadSql(const ReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(engine::IcebergScan scan, PlanRead(options));
  engine::ScanQuery q;
  q.columns = options.columns;
  q.where_sql = options.where_sql;
  q.limit = options.limit;
  return engine::BuildScanSql(db_, scan, q);
}

Result<arrow::StreamHandle> Table::Read(const ReadOptions& options) {
  SKADE_ASSIGN_OR_RETURN(std::string sql, ReadSql(options));
  return db_.QueryArrow(sql);
}

Result<int64_t> Table::Count(const ReadOptions& options) {
  const iceberg::TableMetadata& m = metadata();
  SKADE_ASSIGN_OR_RETURN(auto selected, iceberg::SelectSnapshot(m, options.snapshot));
  if (selected.snapshot == nullptr) return 0;
  if (options.where_sql.empty()) {
    iceberg::ScanPlanner planner(io_, m);
    SKADE_ASSIGN_OR_RETURN(auto counts, planner.CountFromManifests(*selected.snapshot));
    if (counts.delete_files == 0) return counts.record_count;
  }
  SKADE_ASSIGN_OR_RETURN(engine::IcebergScan scan, PlanRead(options));
  return engine::CountRows(db_, scan, options.where_sql);
}

Result<CommitOutcome> Table::Append(const engine::WriteSource& source) {
  return WriteAndCommit(source, Mode::kAppend);
}

Result<CommitOutcome> Table::OverwriteAll(const engine::WriteSource& source) {
  return WriteAndCommit(source, Mode::kReplace);
}

Result<CommitOutcome> Table::WriteAndCommit(const engine::WriteSource& source, Mode mode) {
  const iceberg::TableMetadata& start = metadata();
  iceberg::SchemaPtr schema = start.CurrentSchema();
  iceberg::PartitionSpecPtr spec = start.DefaultSpec();
  if (!schema || !spec) return Status::Corruption("table metadata has no current schema or spec");
  const std::string table_root = io::LocalPath(start.location);
  const std::string write_id = Uuid::NewV7().ToString();
  engine::WriteOptions wopts =
      engine::WriteOptionsFromProperties(start.properties, io::JoinLocation(table_root, "data"));
  wopts.file_prefix = write_id + "-";
  SKADE_ASSIGN_OR_RETURN(engine::WriteResult written,
                         engine::WriteDataFiles(db_, source, *schema, *spec, wopts));

  // Files written but never committed stay orphans (removable by gc); remove them here when
  // the commit fails for good.
  std::vector<std::string> written_paths;
  for (const auto& f : written.files) written_paths.push_back(f.file_path);
  std::vector<std::string> metadata_files;  // manifests and lists written by this operation
  auto abandon = [&](Status st) -> Status {
    for (const auto& p : written_paths) (void)io_.Delete(p);
    for (const auto& p : metadata_files) (void)io_.Delete(p);
    return st;
  };

  const int64_t snapshot_id = NewSnapshotId();
  const std::string metadata_dir = io::JoinLocation(table_root, "metadata");

  // The new data manifest is written once; its sequence number is assigned by the manifest
  // list at commit time, so it survives retries.
  std::optional<ManifestFile> added_manifest;
  Changes changes;
  if (!written.files.empty()) {
    iceberg::ManifestWriterOptions mo;
    mo.format_version = std::max(2, start.format_version);
    mo.snapshot_id = snapshot_id;
    SKADE_ASSIGN_OR_RETURN(auto mw, iceberg::ManifestWriter::Create(schema, spec, mo));
    for (const DataFile& f : written.files) {
      ManifestEntry e;
      e.status = ManifestEntryStatus::kAdded;
      e.snapshot_id = snapshot_id;
      e.data_file = f;
      Status st = mw->Add(e);
      if (!st.ok()) return abandon(st);
      changes.partitions.insert(PartitionText(f));
    }
    std::string path = io::JoinLocation(metadata_dir, write_id + "-m0.avro");
    auto out = mw->Finish(path);
    if (!out.ok()) return abandon(out.status());
    Status st = io_.CreateExclusive(path, out->bytes);
    if (!st.ok()) return abandon(st);
    metadata_files.push_back(path);
    added_manifest = out->manifest;
  }
  changes.added_data_files = static_cast<int64_t>(written.files.size());
  changes.added_records = written.records;
  changes.added_files_size = written.bytes;

  CommitOutcome outcome;
  const int max_attempts = MaxCommitAttempts(start.properties);
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (attempt > 1) {
      BackOff(attempt);
      Status st = Refresh();
      if (!st.ok()) return abandon(st);
    }
    const iceberg::TableMetadata& base = metadata();
    const iceberg::Snapshot* parent = base.CurrentSnapshot();
    iceberg::ScanPlanner planner(io_, base);
    std::vector<ManifestFile> manifests;
    if (added_manifest) manifests.push_back(*added_manifest);
    Changes c = changes;
    std::string operation = "append";
    if (parent != nullptr) {
      auto base_manifests = planner.LoadManifests(*parent);
      if (!base_manifests.ok()) return abandon(base_manifests.status());
      if (mode == Mode::kAppend) {
        manifests.insert(manifests.end(), base_manifests->begin(), base_manifests->end());
      } else {
        // Replace: every live file of the parent is recorded as DELETED in this snapshot.
        operation = "overwrite";
        std::map<int, std::unique_ptr<iceberg::ManifestWriter>> deleted_writers;
        for (const ManifestFile& m : *base_manifests) {
          auto reader = iceberg::ManifestReader::Open(io_, m.manifest_path, m);
          if (!reader.ok()) return abandon(reader.status());
          while (true) {
            auto entry = (*reader)->Next();
            if (!entry.ok()) return abandon(entry.status());
            if (!*entry) break;
            ManifestEntry e = std::move(**entry);
            if (e.status == ManifestEntryStatus::kDeleted) continue;
            const DataFile& f = e.data_file;
            if (f.content == iceberg::DataFileContent::kData) {
              ++c.deleted_data_files;
              c.deleted_records += f.record_count;
            } else {
              ++c.removed_delete_files;
              if (f.content == iceberg::DataFileContent::kPositionDeletes) {
                c.removed_position_deletes += f.record_count;
              } else {
                c.removed_equality_deletes += f.record_count;
              }
            }
            c.removed_files_size += f.file_size_in_bytes;
            c.partitions.insert(PartitionText(f));
            int key = m.partition_spec_id * 2 + (m.content == iceberg::ManifestContent::kDeletes ? 1 : 0);
            auto& w = deleted_writers[key];
            if (!w) {
              iceberg::ManifestWriterOptions mo;
              mo.format_version = std::max(2, base.format_version);
              mo.snapshot_id = snapshot_id;
              mo.content = m.content;
              iceberg::PartitionSpecPtr mspec = base.SpecById(m.partition_spec_id);
              if (!mspec) return abandon(Status::Corruption("unknown partition spec " + std::to_string(m.partition_spec_id)));
              auto created = iceberg::ManifestWriter::Create(base.CurrentSchema(), mspec, mo);
              if (!created.ok()) return abandon(created.status());
              w = std::move(created).value();
            }
            e.status = ManifestEntryStatus::kDeleted;
            e.snapshot_id = snapshot_id;
            Status st = w->Add(e);
            if (!st.ok()) return abandon(st);
          }
        }
        int index = 1;
        for (auto& [key, w] : deleted_writers) {
          std::string path = io::JoinLocation(
              metadata_dir, write_id + "-a" + std::to_string(attempt) + "-d" + std::to_string(index++) + ".avro");
          auto out = w->Finish(path);
          if (!out.ok()) return abandon(out.status());
          Status st = io_.CreateExclusive(path, out->bytes);
          if (!st.ok()) return abandon(st);
          metadata_files.push_back(path);
          manifests.push_back(out->manifest);
        }
      }
    }
    if (mode == Mode::kReplace && parent == nullptr) operation = "overwrite";

    iceberg::Snapshot snap;
    snap.snapshot_id = snapshot_id;
    if (parent) snap.parent_snapshot_id = parent->snapshot_id;
    snap.sequence_number = base.last_sequence_number + 1;
    snap.timestamp_ms = std::max(NowMillis(), base.last_updated_ms);
    snap.schema_id = schema->schema_id();
    snap.summary = Summary(operation, c, parent);
    std::string list_path = io::JoinLocation(
        metadata_dir, "snap-" + std::to_string(snapshot_id) + "-" + std::to_string(attempt) + "-" + write_id + ".avro");
    auto list = iceberg::WriteManifestList(std::max(2, base.format_version), snapshot_id,
                                           snap.parent_snapshot_id, snap.sequence_number, manifests);
    if (!list.ok()) return abandon(list.status());
    Status st = io_.CreateExclusive(list_path, *list);
    if (!st.ok()) return abandon(st);
    metadata_files.push_back(list_path);
    snap.manifest_list = list_path;

    catalog::TableCommit commit;
    commit.ident = state_.ident;
    commit.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(base.table_uuid));
    commit.requirements.push_back(iceberg::TableRequirement::AssertRefSnapshotId(
        "main", parent ? std::optional<int64_t>(parent->snapshot_id) : std::nullopt));
    if (mode == Mode::kReplace) {
      // The written files follow the current schema and spec.
      commit.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(schema->schema_id()));
      commit.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(spec->spec_id()));
    }
    commit.updates.push_back(iceberg::TableUpdate::AddSnapshot(snap));
    commit.updates.push_back(iceberg::TableUpdate::SetBranch("main", snapshot_id));
    auto result = catalog_.CommitTable(commit);
    if (result.ok()) {
      state_ = result->table;
      outcome.snapshot_id = snapshot_id;
      outcome.sequence_number = snap.sequence_number;
      outcome.commit_seq = result->commit_seq;
      outcome.operation = operation;
      outcome.added_records = c.added_records;
      outcome.added_files = c.added_data_files;
      outcome.added_bytes = c.added_files_size;
      outcome.deleted_records = c.deleted_records;
      outcome.deleted_files = c.deleted_data_files;
      outcome.attempts = attempt;
      return outcome;
    }
    // This attempt's manifest list is dead either way.
    (void)io_.Delete(list_path);
    metadata_files.pop_back();
    if (result.status().code() != StatusCode::kConflict) {
      if (result.status().code() == StatusCode::kCommitUnknown) return result.status();  // keep files
      return abandon(result.status());
    }
    SKADE_LOG_INFO("commit to {} conflicted (attempt {}); retrying", state_.ident.ToString(), attempt);
    if (mode == Mode::kReplace) {
      // A replace is rebased too: it replaces whatever is current now. Drop this attempt's
      // deleted-entry manifests; the next attempt rewrites them from the new parent.
      while (metadata_files.size() > (added_manifest ? 1u : 0u)) {
        (void)io_.Delete(metadata_files.back());
        metadata_files.pop_back();
      }
    }
  }
  return abandon(Status::Conflict("gave up committing to " + state_.ident.ToString() + " after " +
                                  std::to_string(max_attempts) + " conflicting attempts"));
}

}  // namespace skade::table
