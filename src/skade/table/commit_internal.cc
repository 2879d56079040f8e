#include "skade/table/commit_internal.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "skade/base/log.h"
#include "skade/iceberg/manifest_merge.h"
#include "skade/io/location.h"

namespace skade::table {
namespace {

using iceberg::DataFile;
using iceberg::ManifestEntry;
using iceberg::ManifestFile;

int64_t SummaryLong(const iceberg::Snapshot* s, std::string_view key) {
  return s == nullptr ? 0 : s->SummaryLong(key).value_or(0);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Summary(const std::string& operation, const Changes& c,
                                                         std::optional<int64_t> rows_removed,
                                                         const iceberg::Snapshot* parent) {
  std::vector<std::pair<std::string, std::string>> s;
  s.emplace_back("operation", operation);
  auto add = [&](const char* k, int64_t v) {
    if (v != 0) s.emplace_back(k, std::to_string(v));
  };
  add("added-data-files", c.added_data_files);
  add("deleted-data-files", c.deleted_data_files);
  add("added-delete-files", c.added_delete_files);
  add("added-position-delete-files", c.added_position_delete_files);
  add("added-equality-delete-files", c.added_equality_delete_files);
  add("added-dvs", c.added_dvs);
  add("removed-dvs", c.removed_dvs);
  add("removed-delete-files", c.removed_delete_files);
  add("added-records", c.added_records);
  // Rows a delete file removes count as deleted records; totals stay those of the data files.
  add("deleted-records", rows_removed.value_or(c.deleted_records));
  add("added-files-size", c.added_files_size);
  add("removed-files-size", c.removed_files_size);
  add("added-position-deletes", c.added_position_deletes);
  add("removed-position-deletes", c.removed_position_deletes);
  add("added-equality-deletes", c.added_equality_deletes);
  add("removed-equality-deletes", c.removed_equality_deletes);
  s.emplace_back("changed-partition-count", std::to_string(c.partitions.size()));
  auto total = [&](const char* k, int64_t delta) {
    s.emplace_back(k, std::to_string(std::max<int64_t>(0, SummaryLong(parent, k) + delta)));
  };
  total("total-records", c.added_records - c.deleted_records);
  total("total-files-size", c.added_files_size - c.removed_files_size);
  total("total-data-files", c.added_data_files - c.deleted_data_files);
  total("total-delete-files", c.added_delete_files - c.removed_delete_files);
  total("total-position-deletes", c.added_position_deletes - c.removed_position_deletes);
  total("total-equality-deletes", c.added_equality_deletes - c.removed_equality_deletes);
  s.emplace_back("engine-name", "skade");
  return s;
}

ScanReport ScanReportOfPlan(const iceberg::TableMetadata& base, int64_t snapshot_id, std::string filter,
                            const std::vector<iceberg::FileScanTask>& tasks, const iceberg::PlanStats& stats,
                            int64_t planning_us) {
  ScanReport r;
  r.snapshot_id = snapshot_id;
  r.schema_id = base.current_schema_id;
  r.filter = std::move(filter);
  if (auto schema = base.CurrentSchema()) {
    for (const iceberg::NestedField& f : schema->fields()) r.projected_field_names.push_back(f.name);
  }
  r.planning_duration_us = planning_us;
  r.result_data_files = static_cast<int64_t>(tasks.size());
  r.skipped_data_files = stats.data_files_skipped;
  r.indexed_delete_files = stats.delete_files;
  std::set<const iceberg::DeleteFileTask*> deletes;
  for (const iceberg::FileScanTask& t : tasks) {
    r.total_file_size_in_bytes += t.file.file_size_in_bytes;
    for (const auto& d : t.deletes) {
      if (deletes.insert(d.get()).second) r.total_delete_file_size_in_bytes += d->file.file_size_in_bytes;
    }
  }
  r.result_delete_files = static_cast<int64_t>(deletes.size());
  return r;
}

std::string PartitionText(const DataFile& f) {
  std::string key = std::to_string(f.spec_id);
  for (const auto& v : f.partition) key += "|" + (v ? v->ToString() : std::string("null"));
  return key;
}

std::string MetadataFolder(const iceberg::TableMetadata& base) {
  return io::JoinLocation(io::LocalPath(base.location), "metadata");
}

std::string ManifestListPath(const std::string& metadata_folder, int64_t snapshot_id, int attempt,
                             const std::string& write_id) {
  return io::JoinLocation(metadata_folder, "snap-" + std::to_string(snapshot_id) + "-" + std::to_string(attempt) +
                                               "-" + write_id + ".avro");
}

Result<ManifestFile> WriteManifest(io::FileIO& io, const iceberg::SchemaPtr& schema,
                                   const iceberg::PartitionSpecPtr& spec,
                                   const iceberg::ManifestWriterOptions& options,
                                   const std::vector<ManifestEntry>& entries, const std::string& path,
                                   FileSync sync) {
  SKADE_ASSIGN_OR_RETURN(auto w, iceberg::ManifestWriter::Create(schema, spec, options));
  for (const ManifestEntry& e : entries) SKADE_RETURN_IF_ERROR(w->Add(e));
  SKADE_ASSIGN_OR_RETURN(auto out, w->Finish(path));
  SKADE_RETURN_IF_ERROR(sync == FileSync::kNow ? io.CreateUnpublished(path, out.bytes)
                                               : io.CreateUnsynced(path, out.bytes));
  return std::move(out.manifest);
}

Result<ManifestFile> WriteAppendManifest(io::FileIO& io, const iceberg::SchemaPtr& schema,
                                         const iceberg::PartitionSpecPtr& spec, int format_version, int64_t snapshot_id,
                                         const std::vector<const iceberg::DataFile*>& files, const std::string& path) {
  iceberg::ManifestWriterOptions options;
  options.format_version = format_version;
  options.snapshot_id = snapshot_id;
  options.content = iceberg::ManifestContent::kData;
  std::vector<ManifestEntry> entries(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    entries[i].status = iceberg::ManifestEntryStatus::kAdded;
    entries[i].snapshot_id = snapshot_id;
    entries[i].data_file = *files[i];
  }
  return WriteManifest(io, schema, spec, options, entries, path, FileSync::kByCommit);
}

BackgroundWork::BackgroundWork(std::function<Status()> work)
    : thread_([this, work = std::move(work)] { status_ = work(); }) {}

BackgroundWork::~BackgroundWork() { (void)Wait(); }

Status BackgroundWork::Wait() {
  std::call_once(joined_, [this] { thread_.join(); });
  return status_;
}

Result<catalog::CommitResult> CommitWhenDurable(catalog::Catalog& catalog, catalog::TableCommit commit,
                                                BackgroundWork& durable) {
  std::atomic<bool> waited{false};
  commit.before_swap = [&]() -> Status {
    waited = true;
    return durable.Wait();
  };
  Result<catalog::CommitResult> result = catalog.CommitTable(commit);
  const Status synced = durable.Wait();
  if (result.ok() && !waited) {
    // A catalog that moved the pointer without running before_swap broke its contract.
    SKADE_LOG_ERROR("catalog committed {} without waiting for its files to be durable ({})", commit.ident.ToString(),
                    synced.ok() ? "they are now" : synced.ToString());
    SKADE_DCHECK(waited);
  }
  return result;
}

Result<int64_t> AssignRowLineage(int format_version, int64_t next_row_id, std::vector<ManifestFile>& manifests,
                                 iceberg::Snapshot* snapshot) {
  if (format_version < 3) return 0;
  // Spec "Row Lineage": new data manifests take the next row ids; the table's next-row-id
  // moves past them when the snapshot is added (iceberg::ApplyUpdates).
  SKADE_ASSIGN_OR_RETURN(int64_t assigned, iceberg::AssignFirstRowIds(manifests, next_row_id));
  snapshot->first_row_id = next_row_id;
  snapshot->added_rows = assigned;
  return assigned;
}

catalog::TableCommit MainBranchCommit(const catalog::TableIdent& ident, const iceberg::TableMetadata& base,
                                      const std::vector<const iceberg::Snapshot*>& snapshots) {
  catalog::TableCommit commit;
  commit.ident = ident;
  const iceberg::Snapshot* head = base.CurrentSnapshot();
  commit.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(base.table_uuid));
  commit.requirements.push_back(iceberg::TableRequirement::AssertRefSnapshotId(
      "main", head ? std::optional<int64_t>(head->snapshot_id) : std::nullopt));
  for (const iceberg::Snapshot* s : snapshots) {
    commit.updates.push_back(iceberg::TableUpdate::AddSnapshot(*s));
    commit.updates.push_back(iceberg::TableUpdate::SetBranch("main", s->snapshot_id));
  }
  return commit;
}

CommitOutcome OutcomeOf(const iceberg::Snapshot& snapshot, const std::string& operation, const Changes& changes,
                        int64_t commit_seq, int attempts) {
  CommitOutcome outcome;
  outcome.snapshot_id = snapshot.snapshot_id;
  outcome.sequence_number = snapshot.sequence_number;
  outcome.commit_seq = commit_seq;
  outcome.operation = operation;
  outcome.added_records = changes.added_records;
  outcome.added_files = changes.added_data_files;
  outcome.added_bytes = changes.added_files_size;
  outcome.deleted_records = changes.deleted_records;
  outcome.deleted_files = changes.deleted_data_files;
  outcome.attempts = attempts;
  return outcome;
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

namespace {

// The schema a manifest of `spec` is written with: the current one, or else the newest that still
// has every column the spec's fields come from (an older spec may partition by a dropped column).
iceberg::SchemaPtr SchemaForSpec(const iceberg::TableMetadata& base, const iceberg::PartitionSpec& spec) {
  auto binds = [&](const iceberg::SchemaPtr& schema) { return schema && spec.PartitionType(*schema).ok(); };
  iceberg::SchemaPtr current = base.CurrentSchema();
  if (binds(current)) return current;
  iceberg::SchemaPtr best;
  for (const iceberg::SchemaPtr& schema : base.schemas) {
    if (binds(schema) && (!best || schema->schema_id() > best->schema_id())) best = schema;
  }
  return best ? best : current;
}

}  // namespace

Result<std::vector<ManifestFile>> MergeManifestsForCommit(io::FileIO& io, const iceberg::TableMetadata& base,
                                                         int format_version, int64_t snapshot_id,
                                                         const std::vector<ManifestFile>& manifests,
                                                         const std::function<std::string()>& next_path,
                                                         std::vector<std::string>* written) {
  const iceberg::ManifestMergePolicy policy = iceberg::ManifestMergePolicy::FromProperties(base.properties);
  iceberg::MergedManifestSink sink;
  sink.open = [&](int spec_id, iceberg::ManifestContent content) -> Result<std::unique_ptr<iceberg::ManifestWriter>> {
    iceberg::PartitionSpecPtr spec = base.SpecById(spec_id);
    if (!spec) return Status::Corruption("a manifest names unknown partition spec " + std::to_string(spec_id));
    iceberg::ManifestWriterOptions options;
    options.format_version = format_version;
    options.content = content;
    options.snapshot_id = snapshot_id;
    return iceberg::ManifestWriter::Create(SchemaForSpec(base, *spec), spec, options);
  };
  sink.finish = [&](iceberg::ManifestWriter& writer) -> Result<ManifestFile> {
    const std::string path = next_path();
    SKADE_ASSIGN_OR_RETURN(iceberg::ManifestWriter::Output out, writer.Finish(path));
    SKADE_RETURN_IF_ERROR(io.CreateUnpublished(path, out.bytes));
    written->push_back(path);
    return std::move(out.manifest);
  };
  return iceberg::MergeManifests(io, manifests, snapshot_id, policy, sink);
}

std::vector<std::string> MergedAway(const std::vector<std::string>& candidates,
                                    const std::vector<ManifestFile>& list) {
  std::set<std::string> listed;
  for (const ManifestFile& m : list) listed.insert(m.manifest_path);
  std::vector<std::string> out;
  for (const std::string& path : candidates) {
    if (listed.count(path) == 0) out.push_back(path);
  }
  return out;
}

void DeleteMergedAway(io::FileIO& io, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    Status st = io.Delete(path);
    if (!st.ok()) SKADE_LOG_WARN("could not delete merged manifest {}: {}", path, st.ToString());
  }
}

}  // namespace skade::table
