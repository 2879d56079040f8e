#include "skade/iceberg/scan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <thread>
#include <unordered_map>

#include "skade/base/ordered_parallel.h"
#include "skade/io/location.h"

namespace skade::iceberg {
namespace {

// The most tasks a manifest's reading makes room for up front (from the list's counts).
constexpr int64_t kMaxTasksReserved = 1 << 16;

// Identifies a partition: spec id plus the binary form of each value (nulls marked).
std::string PartitionKey(const DataFile& f) {
  std::string key = std::to_string(f.spec_id);
  for (const auto& v : f.partition) {
    if (!v) {
      key += "|N";
    } else {
      std::string bin = v->ToBinary();
      key += "|" + std::to_string(bin.size()) + ":" + bin;
    }
  }
  return key;
}

// Reserved field id of the `file_path` column of position delete files (spec "Reserved
// Field IDs").
constexpr int kDeleteFilePathId = 2147483546;

// Whether two locations are spelled with the same scheme and authority (so their byte order
// compares their paths).
bool SameForm(std::string_view a, std::string_view b) {
  auto prefix = [](std::string_view s) {
    size_t scheme_end = s.find("://");
    if (scheme_end == std::string_view::npos) return s.substr(0, s.starts_with("file:") ? 5 : 0);
    size_t path = s.find('/', scheme_end + 3);
    return s.substr(0, path == std::string_view::npos ? s.size() : path);
  };
  return prefix(a) == prefix(b);
}

// Delete files indexed for matching (spec "Scan Planning"): a position delete applies to a data
// file with data sequence number <= its own, an equality delete to one with a strictly smaller
// data sequence number; both only within the same partition unless the delete file's spec is
// unpartitioned (global).
class DeleteIndex {
 public:
  void Add(DeleteFileTaskPtr d, bool global) {
    if (d->file.content == DataFileContent::kPositionDeletes && d->file.referenced_data_file) {
      // Deletion vectors and file-scoped position deletes name their one data file: indexed by
      // it (one normal form, io::ComparableLocation), so planning stays linear in the files.
      by_reference_[io::ComparableLocation(*d->file.referenced_data_file)].push_back({std::move(d), global});
    } else if (global) {
      global_.push_back(std::move(d));
    } else {
      by_partition_[PartitionKey(d->file)].push_back(std::move(d));
    }
  }
  bool empty() const { return global_.empty() && by_partition_.empty() && by_reference_.empty(); }

  std::vector<DeleteFileTaskPtr> For(const DataFile& file, int64_t seq) const {
    std::vector<DeleteFileTaskPtr> out;
    const std::string data_path = io::ComparableLocation(file.file_path);
    const std::string partition = PartitionKey(file);
    auto consider = [&](const DeleteFileTaskPtr& d) {
      if (d->file.content == DataFileContent::kPositionDeletes) {
        if (d->sequence_number < seq) return;
        // file_path bounds: equal bounds name the one data file the delete file refers to; a
        // range prunes only when it is in the data file's own form (else the order of the two
        // forms says nothing, and the read matches paths through one normal form anyway).
        auto lo = d->file.lower_bounds.find(kDeleteFilePathId);
        auto hi = d->file.upper_bounds.find(kDeleteFilePathId);
        if (lo != d->file.lower_bounds.end() && hi != d->file.upper_bounds.end()) {
          if (lo->second == hi->second) {
            if (io::ComparableLocation(lo->second) != data_path) return;
          } else if (SameForm(lo->second, file.file_path) && SameForm(hi->second, file.file_path) &&
                     (file.file_path < lo->second || file.file_path > hi->second)) {
            return;
          }
        }
      } else if (d->sequence_number <= seq) {
        return;
      }
      out.push_back(d);
    };
    for (const auto& d : global_) consider(d);
    if (auto it = by_partition_.find(partition); it != by_partition_.end()) {
      for (const auto& d : it->second) consider(d);
    }
    bool has_vector = false;
    if (auto it = by_reference_.find(data_path); it != by_reference_.end()) {
      for (const auto& [d, global] : it->second) {
        if (!global && PartitionKey(d->file) != partition) continue;
        size_t before = out.size();
        consider(d);
        has_vector = has_vector || (out.size() > before && d->file.file_format == FileFormat::kPuffin);
      }
    }
    if (has_vector) {
      // Spec "Scan Planning": position delete files apply only when no deletion vector does
      // (a deletion vector, when written, took in every earlier position delete of its file).
      std::erase_if(out, [](const DeleteFileTaskPtr& d) {
        return d->file.content == DataFileContent::kPositionDeletes && d->file.file_format != FileFormat::kPuffin;
      });
    }
    return out;
  }

 private:
  struct Referenced {
    DeleteFileTaskPtr file;
    bool global = false;
  };
  std::vector<DeleteFileTaskPtr> global_;
  std::unordered_map<std::string, std::vector<DeleteFileTaskPtr>> by_partition_;
  std::unordered_map<std::string, std::vector<Referenced>> by_reference_;
};

// Drops per-column metrics to keep tasks small, except the bounds of `keep_bounds_of`.
void ClearStats(DataFile* f, int keep_bounds_of = -1) {
  f->column_sizes.clear();
  f->value_counts.clear();
  f->null_value_counts.clear();
  f->nan_value_counts.clear();
  std::erase_if(f->lower_bounds, [&](const auto& kv) { return kv.first != keep_bounds_of; });
  std::erase_if(f->upper_bounds, [&](const auto& kv) { return kv.first != keep_bounds_of; });
  f->split_offsets.clear();
}

// Drops the per-column metrics of fields outside `keep` (a data file's task).
void ClearStatsExcept(DataFile* f, const std::set<int>& keep) {
  auto drop = [&](auto& m) { std::erase_if(m, [&](const auto& kv) { return !keep.count(kv.first); }); };
  drop(f->column_sizes);
  drop(f->value_counts);
  drop(f->null_value_counts);
  drop(f->nan_value_counts);
  drop(f->lower_bounds);
  drop(f->upper_bounds);
  f->split_offsets.clear();
}

// A task's copy of a cached data file: everything but the per-column metrics, of which only
// those of `keep` (what ClearStatsExcept leaves, without copying the rest first).
DataFile CopyForTask(const DataFile& f, const std::set<int>& keep) {
  DataFile out;
  out.content = f.content;
  out.file_path = f.file_path;
  out.file_format = f.file_format;
  out.spec_id = f.spec_id;
  out.partition = f.partition;
  out.record_count = f.record_count;
  out.file_size_in_bytes = f.file_size_in_bytes;
  out.key_metadata = f.key_metadata;
  out.equality_ids = f.equality_ids;
  out.sort_order_id = f.sort_order_id;
  out.first_row_id = f.first_row_id;
  out.referenced_data_file = f.referenced_data_file;
  out.content_offset = f.content_offset;
  out.content_size_in_bytes = f.content_size_in_bytes;
  if (!keep.empty()) {
    auto take = [&](const auto& from, auto& to) {
      for (const auto& kv : from) {
        if (keep.count(kv.first)) to.insert(kv);
      }
    };
    take(f.column_sizes, out.column_sizes);
    take(f.value_counts, out.value_counts);
    take(f.null_value_counts, out.null_value_counts);
    take(f.nan_value_counts, out.nan_value_counts);
    take(f.lower_bounds, out.lower_bounds);
    take(f.upper_bounds, out.upper_bounds);
  }
  return out;
}

// The data file of a data task for a live `entry`: moved out of `owned` (an entry decoded for
// this plan alone) or copied from the cache's, either way with only the metrics of `keep`.
void TaskFileOf(const ManifestEntry& entry, ManifestEntry* owned, const std::set<int>& keep, DataFile* out) {
  if (owned == nullptr) {
    *out = CopyForTask(entry.data_file, keep);
    return;
  }
  *out = std::move(owned->data_file);
  ClearStatsExcept(out, keep);
}

// The field ids the predicates of a bound expression refer to.
void CollectFieldIds(const ExprPtr& expr, std::set<int>* ids) {
  if (expr->is_predicate() && expr->is_bound()) ids->insert(expr->field_id());
  for (const ExprPtr& child : expr->children()) CollectFieldIds(child, ids);
}

// Per-spec pruning state, built lazily.
struct SpecFilter {
  PartitionSpecPtr spec;
  std::optional<ManifestEvaluator> manifest_eval;
  std::optional<PartitionEvaluator> partition_eval;
};

// A scan filter bound once to the read schema, and its projections per partition spec (built
// on first use): decides which manifests and data files might hold matching rows.
class FilePruner {
 public:
  static Result<FilePruner> Make(const TableMetadata& metadata, const Schema& schema, const ExprPtr& filter) {
    FilePruner p(metadata, schema);
    if (filter) {
      SKADE_ASSIGN_OR_RETURN(p.bound_, Bind(filter, schema, /*case_sensitive=*/true));
      p.bound_ = RewriteNot(p.bound_);
      p.metrics_.emplace(p.bound_, p.schema_);
    }
    return p;
  }

  Result<const SpecFilter*> ForSpec(int spec_id) {
    auto it = specs_.find(spec_id);
    if (it != specs_.end()) return &it->second;
    SpecFilter sf;
    sf.spec = metadata_->SpecById(spec_id);
    if (!sf.spec) return Status::Corruption("manifest refers to unknown partition spec " + std::to_string(spec_id));
    if (bound_) {
      ExprPtr projected = ProjectInclusive(bound_, *sf.spec, *schema_);
      sf.partition_eval.emplace(projected, *sf.spec);
      auto ptype = sf.spec->PartitionType(*schema_);
      if (ptype.ok()) sf.manifest_eval.emplace(projected, *sf.spec, *ptype);
    }
    return &specs_.emplace(spec_id, std::move(sf)).first->second;
  }

  // False when the manifest's partition summaries rule out every match.
  Result<bool> KeepManifest(const ManifestFile& m) {
    SKADE_ASSIGN_OR_RETURN(const SpecFilter* sf, ForSpec(m.partition_spec_id));
    return !sf->manifest_eval || sf->manifest_eval->MightMatch(m);
  }

  // What to decode of each manifest entry: the metrics of the fields the filter reads and
  // of `kept` (those a task keeps), no split offsets (tasks drop them).
  ManifestReadOptions ReadOptions(const std::set<int>& kept) const {
    std::set<int> ids = kept;
    if (bound_) CollectFieldIds(bound_, &ids);
    return ManifestReadOptions{std::vector<int>(ids.begin(), ids.end()), /*split_offsets=*/false};
  }

  // False when the file's partition values or column metrics rule out every match.
  bool KeepFile(const SpecFilter& sf, const DataFile& f) const {
    if (sf.partition_eval && !sf.partition_eval->Eval(f.partition)) return false;
    return !metrics_ || metrics_->MightMatch(f);
  }

 private:
  FilePruner(const TableMetadata& metadata, const Schema& schema)
      : metadata_(&metadata), schema_(std::make_shared<const Schema>(schema)) {}
  const TableMetadata* metadata_;
  std::shared_ptr<const Schema> schema_;
  ExprPtr bound_;
  std::optional<MetricsEvaluator> metrics_;
  std::map<int, SpecFilter> specs_;
};

}  // namespace

Result<SelectedSnapshot> SelectSnapshot(const TableMetadata& metadata,
                                        const SnapshotSelector& selector) {
  int set = (selector.snapshot_id ? 1 : 0) + (selector.ref ? 1 : 0) + (selector.as_of_ms ? 1 : 0);
  if (set > 1) {
    return Status::InvalidArgument("choose at most one of snapshot id, ref and time");
  }
  SelectedSnapshot out;
  if (selector.snapshot_id) {
    out.snapshot = metadata.SnapshotById(*selector.snapshot_id);
    if (out.snapshot == nullptr) {
      return Status::NotFound("snapshot " + std::to_string(*selector.snapshot_id) + " not found");
    }
    out.schema = metadata.SchemaForSnapshot(*out.snapshot);
  } else if (selector.ref) {
    SKADE_ASSIGN_OR_RETURN(out.snapshot, metadata.SnapshotForRef(*selector.ref));
    auto it = metadata.refs.find(*selector.ref);
    bool is_tag = it != metadata.refs.end() && it->second.type == RefType::kTag;
    out.schema = is_tag ? metadata.SchemaForSnapshot(*out.snapshot) : metadata.CurrentSchema();
  } else if (selector.as_of_ms) {
    SKADE_ASSIGN_OR_RETURN(out.snapshot, metadata.SnapshotAsOf(*selector.as_of_ms));
    out.schema = metadata.SchemaForSnapshot(*out.snapshot);
  } else {
    out.snapshot = metadata.CurrentSnapshot();
    out.schema = metadata.CurrentSchema();
  }
  if (!out.schema) return Status::Corruption("table metadata has no current schema");
  return out;
}

ScanPlanner::ScanPlanner(io::FileIO& io, const TableMetadata& metadata)
    : io_(io), metadata_(metadata), threads_(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u))) {}

Status ScanPlanner::ForEachLive(const ManifestFile& m, const ManifestReadOptions& options,
                                const std::function<Status(const ManifestEntry&, ManifestEntry*)>& fn) {
  if (cache_ == nullptr) {
    return ForEachLiveEntry(io_, m, [&](ManifestEntry& entry) { return fn(entry, &entry); }, options);
  }
  SKADE_ASSIGN_OR_RETURN(ManifestCache::Entries entries, cache_->LiveEntries(io_, m, options));
  for (const ManifestEntry& entry : *entries) SKADE_RETURN_IF_ERROR(fn(entry, nullptr));
  return Status::Ok();
}

Result<std::vector<ManifestFile>> ScanPlanner::LoadManifests(const Snapshot& snapshot) {
  if (!snapshot.manifest_list.empty()) {
    const std::string context = "snapshot " + std::to_string(snapshot.snapshot_id);
    if (cache_ == nullptr) return ReadManifestList(io_, snapshot.manifest_list).WithContext(context);
    SKADE_ASSIGN_OR_RETURN(ManifestCache::List list,
                           cache_->ManifestList(io_, snapshot.manifest_list).WithContext(context));
    return *list;
  }
  // v1 snapshots may list manifests inline; their spec id comes from each manifest header.
  std::vector<ManifestFile> out;
  for (const std::string& path : snapshot.manifests) {
    ManifestFile mf;
    mf.manifest_path = path;
    mf.added_snapshot_id = snapshot.snapshot_id;
    mf.partition_spec_id = metadata_.default_spec_id;
    SKADE_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(io_, path, mf));
    if (auto id = reader->Metadata("partition-spec-id")) {
      try {
        mf.partition_spec_id = std::stoi(*id);
      } catch (...) {
        return Status::Corruption("manifest '" + path + "': bad partition-spec-id '" + *id + "'");
      }
    }
    out.push_back(std::move(mf));
  }
  return out;
}

Status ScanPlanner::PlanFiles(const Snapshot& snapshot, const Schema& schema,
                              const ExprPtr& filter,
                              const std::function<Status(FileScanTask)>& sink) {
  return PlanBatches(snapshot, schema, filter, [&](std::vector<FileScanTask>& tasks) -> Status {
    for (FileScanTask& task : tasks) SKADE_RETURN_IF_ERROR(sink(std::move(task)));
    return Status::Ok();
  });
}

Status ScanPlanner::PlanBatches(const Snapshot& snapshot, const Schema& schema, const ExprPtr& filter,
                                const std::function<Status(std::vector<FileScanTask>&)>& batch) {
  stats_ = PlanStats{};
  SKADE_ASSIGN_OR_RETURN(FilePruner pruner, FilePruner::Make(metadata_, schema, filter));
  SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> manifests, LoadManifests(snapshot));
  stats_.manifests_total = static_cast<int64_t>(manifests.size());

  auto keep_manifest = [&](const ManifestFile& m) -> Result<bool> {
    SKADE_ASSIGN_OR_RETURN(bool keep, pruner.KeepManifest(m));
    if (!keep) ++stats_.manifests_skipped;
    return keep;
  };

  // Pass 1: index delete files (bounded by the number of delete files). Of their metrics only
  // the file_path bounds are used, to match delete files to data files.
  DeleteIndex deletes;
  const ManifestReadOptions delete_options{std::vector<int>{kDeleteFilePathId}, /*split_offsets=*/false};
  for (const ManifestFile& m : manifests) {
    if (m.content != ManifestContent::kDeletes) continue;
    SKADE_ASSIGN_OR_RETURN(bool keep, keep_manifest(m));
    if (!keep) continue;
    SKADE_ASSIGN_OR_RETURN(const SpecFilter* sf, pruner.ForSpec(m.partition_spec_id));
    SKADE_RETURN_IF_ERROR(ForEachLive(m, delete_options, [&](const ManifestEntry& entry, ManifestEntry* owned) -> Status {
      if (entry.data_file.content == DataFileContent::kData) {
        return Status::Corruption("delete manifest '" + m.manifest_path + "' lists a data file");
      }
      if (sf->partition_eval && !sf->partition_eval->Eval(entry.data_file.partition)) return Status::Ok();
      auto task = std::make_shared<DeleteFileTask>();
      task->sequence_number = entry.sequence_number.value_or(0);
      if (owned) {
        task->file = std::move(owned->data_file);
        ClearStats(&task->file, kDeleteFilePathId);  // keep the file_path bounds used for matching
      } else {
        task->file = CopyForTask(entry.data_file, {kDeleteFilePathId});
      }
      ++stats_.delete_files;
      deletes.Add(std::move(task), sf->spec->is_unpartitioned());
      return Status::Ok();
    }));
  }

  // Pass 2: data manifests, read and decoded in parallel (a few at a time, so memory stays
  // flat) and handed to the sink in manifest order.
  struct ToRead {
    const ManifestFile* manifest;
    const SpecFilter* spec;
  };
  std::vector<ToRead> to_read;
  for (const ManifestFile& m : manifests) {
    if (m.content != ManifestContent::kData) continue;
    SKADE_ASSIGN_OR_RETURN(bool keep, keep_manifest(m));
    if (!keep) continue;
    SKADE_ASSIGN_OR_RETURN(const SpecFilter* sf, pruner.ForSpec(m.partition_spec_id));
    to_read.push_back(ToRead{&m, sf});
  }
  const ManifestReadOptions options = pruner.ReadOptions(kept_stats_);
  struct Read {
    Status status;
    std::vector<FileScanTask> tasks;
    int64_t files = 0;
  };
  std::function<Read(size_t)> read = [&](size_t i) {
    Read out;
    const ManifestFile& m = *to_read[i].manifest;
    const SpecFilter& sf = *to_read[i].spec;
    // Tasks are built in place (a task is ~600 bytes: each move costs), room made up front when
    // the list says how many files the manifest holds; a count that lies costs only growth.
    if (m.added_files_count && m.existing_files_count) {
      const int64_t live = *m.added_files_count + *m.existing_files_count;
      if (live > 0) out.tasks.reserve(static_cast<size_t>(std::min<int64_t>(live, kMaxTasksReserved)));
    }
    out.status = ForEachLive(m, options, [&](const ManifestEntry& entry, ManifestEntry* owned) -> Status {
      if (entry.data_file.content != DataFileContent::kData) {
        return Status::Corruption("data manifest '" + m.manifest_path + "' lists a delete file");
      }
      ++out.files;
      if (!pruner.KeepFile(sf, entry.data_file)) return Status::Ok();
      FileScanTask& task = out.tasks.emplace_back();
      task.sequence_number = entry.sequence_number.value_or(0);
      TaskFileOf(entry, owned, kept_stats_, &task.file);
      if (!deletes.empty()) task.deletes = deletes.For(task.file, task.sequence_number);
      return Status::Ok();
    });
    // A filter that kept few of many files leaves the room unused: PlanAll holds every
    // manifest's tasks until the end, so give it back.
    if (out.tasks.capacity() > 2 * out.tasks.size() + 16) out.tasks.shrink_to_fit();
    return out;
  };
  std::function<Status(size_t, Read&)> hand_on = [&](size_t, Read& r) -> Status {
    SKADE_RETURN_IF_ERROR(r.status);
    stats_.data_files_total += r.files;
    stats_.data_files_skipped += r.files - static_cast<int64_t>(r.tasks.size());
    for (const FileScanTask& task : r.tasks) stats_.record_count += task.file.record_count;
    return batch(r.tasks);
  };
  return OrderedParallel<Read>(to_read.size(), threads_, static_cast<size_t>(threads_) + 1, read, hand_on);
}

Status ScanPlanner::PlanAppends(int64_t from_exclusive, const Snapshot& to, const Schema& schema,
                                const ExprPtr& filter, const std::function<Status(FileScanTask)>& sink) {
  stats_ = PlanStats{};
  SKADE_ASSIGN_OR_RETURN(std::vector<const Snapshot*> range, SnapshotsBetween(metadata_, from_exclusive, to));
  for (const Snapshot* s : range) {
    if (s->operation() != "append" && non_appends_ == NonAppends::kRefuse) {
      return Status::InvalidArgument("snapshot " + std::to_string(s->snapshot_id) + " is a " + s->operation() +
                                     ", not an append: an incremental append scan cannot express its changes");
    }
  }
  // Skipped snapshots (replace, overwrite, delete) add nothing: the files an overwrite wrote are
  // not appended rows, and the files an append added stay in the scan even when a later
  // snapshot of the range removed them (IncrementalAppendScan lists appends, not a net change).
  std::erase_if(range, [](const Snapshot* s) { return s->operation() != "append"; });
  SKADE_ASSIGN_OR_RETURN(FilePruner pruner, FilePruner::Make(metadata_, schema, filter));
  const ManifestReadOptions options = pruner.ReadOptions(kept_stats_);
  for (const Snapshot* s : range) {
    SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> manifests, LoadManifests(*s));
    for (const ManifestFile& m : manifests) {
      // A file appears as ADDED, with the adding snapshot's id, only in a manifest that
      // snapshot wrote.
      if (m.content != ManifestContent::kData || m.added_snapshot_id != s->snapshot_id) continue;
      ++stats_.manifests_total;
      SKADE_ASSIGN_OR_RETURN(bool keep, pruner.KeepManifest(m));
      if (!keep) {
        ++stats_.manifests_skipped;
        continue;
      }
      SKADE_ASSIGN_OR_RETURN(const SpecFilter* sf, pruner.ForSpec(m.partition_spec_id));
      SKADE_RETURN_IF_ERROR(ForEachLive(m, options, [&](const ManifestEntry& entry, ManifestEntry* owned) -> Status {
        if (entry.status != ManifestEntryStatus::kAdded || entry.snapshot_id != s->snapshot_id) return Status::Ok();
        if (entry.data_file.content != DataFileContent::kData) {
          return Status::Corruption("data manifest '" + m.manifest_path + "' lists a delete file");
        }
        ++stats_.data_files_total;
        if (!pruner.KeepFile(*sf, entry.data_file)) {
          ++stats_.data_files_skipped;
          return Status::Ok();
        }
        FileScanTask task;
        task.sequence_number = entry.sequence_number.value_or(0);
        TaskFileOf(entry, owned, kept_stats_, &task.file);
        stats_.record_count += task.file.record_count;
        return sink(std::move(task));
      }));
    }
  }
  return Status::Ok();
}

Result<std::vector<const Snapshot*>> SnapshotsBetween(const TableMetadata& m, int64_t from_exclusive,
                                                      const Snapshot& to) {
  if (m.SnapshotById(from_exclusive) == nullptr) {
    return Status::NotFound("snapshot " + std::to_string(from_exclusive) + " not found");
  }
  std::vector<const Snapshot*> range;
  for (const Snapshot* s = &to; s->snapshot_id != from_exclusive;) {
    range.push_back(s);
    if (!s->parent_snapshot_id) {
      return Status::InvalidArgument("snapshot " + std::to_string(from_exclusive) + " is not an ancestor of " +
                                     std::to_string(to.snapshot_id));
    }
    const Snapshot* parent = m.SnapshotById(*s->parent_snapshot_id);
    if (parent == nullptr) {
      if (*s->parent_snapshot_id == from_exclusive) break;
      return Status::NotFound("snapshot " + std::to_string(*s->parent_snapshot_id) + " in the range has expired");
    }
    s = parent;
  }
  std::reverse(range.begin(), range.end());
  return range;
}

Result<std::vector<FileScanTask>> ScanPlanner::PlanAll(const Snapshot& snapshot,
                                                       const Schema& schema,
                                                       const ExprPtr& filter) {
  // Each manifest's tasks are kept as read, then moved once into a vector of the exact size:
  // no task moves through the growth of one large vector.
  std::vector<std::vector<FileScanTask>> batches;
  size_t total = 0;
  SKADE_RETURN_IF_ERROR(PlanBatches(snapshot, schema, filter, [&](std::vector<FileScanTask>& tasks) {
    total += tasks.size();
    if (!tasks.empty()) batches.push_back(std::move(tasks));
    return Status::Ok();
  }));
  std::vector<FileScanTask> out;
  out.reserve(total);
  for (std::vector<FileScanTask>& tasks : batches) {
    std::move(tasks.begin(), tasks.end(), std::back_inserter(out));
    std::vector<FileScanTask>().swap(tasks);
  }
  return out;
}

Result<ScanPlanner::ManifestCounts> ScanPlanner::CountFromManifests(const Snapshot& snapshot) {
  SKADE_ASSIGN_OR_RETURN(std::vector<ManifestFile> manifests, LoadManifests(snapshot));
  ManifestCounts counts;
  for (const ManifestFile& m : manifests) {
    bool has_counts = m.added_files_count && m.existing_files_count && m.added_rows_count &&
                      m.existing_rows_count;
    if (has_counts) {
      int64_t files = *m.added_files_count + *m.existing_files_count;
      if (m.content == ManifestContent::kDeletes) {
        counts.delete_files += files;
      } else {
        counts.data_files += files;
        counts.record_count += *m.added_rows_count + *m.existing_rows_count;
      }
      continue;
    }
    SKADE_RETURN_IF_ERROR(ForEachLive(m, ManifestReadOptions{std::vector<int>{}, /*split_offsets=*/false},
                                      [&](const ManifestEntry& entry, ManifestEntry*) {
                                        if (entry.data_file.content == DataFileContent::kData) {
                                          ++counts.data_files;
                                          counts.record_count += entry.data_file.record_count;
                                        } else {
                                          ++counts.delete_files;
                                        }
                                        return Status::Ok();
                                      }));
  }
  return counts;
}

}  // namespace skade::iceberg
