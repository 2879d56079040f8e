// Row-level operations: delete/overwrite by filter (copy-on-write or position deletes),
// dynamic partition overwrite, equality deletes and upserts (CDC), incremental reads between
// snapshots, and compaction. Each builds a PendingSnapshot committed by Table::CommitSnapshot.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "skade/base/clock.h"
#include "skade/base/uuid.h"
#include "skade/engine/new_file_checksums.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/puffin.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"
#include "skade/table/commit_internal.h"
#include "skade/table/table.h"

namespace skade::table {
namespace {

using engine::QuoteIdentifier;
using engine::QuoteString;
using iceberg::DataFile;
using iceberg::DataFileContent;

// Reserved field ids of position delete files (spec "Position Delete Files").
constexpr int kPosFilePathId = 2147483546;
constexpr int kPosPosId = 2147483545;

std::optional<int64_t> ToLong(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size()) return std::nullopt;
  return v;
}

std::string SqlList(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + QuoteString(values[i]);
  return out;
}

std::string ColumnList(const iceberg::Schema& schema) {
  std::string out;
  for (const auto& f : schema.fields()) out += (out.empty() ? "" : ", ") + QuoteIdentifier(f.name);
  return out;
}

bool IsMergeOnRead(const iceberg::TableMetadata& m) {
  return m.Property("write.delete.mode", "copy-on-write") == "merge-on-read";
}

// Spec "Reserved Field IDs": _pos, the column a deletion vector is about.
constexpr int kRowPositionId = 2147483645;

// Merge-on-read on a format v3 table (spec "Deletion Vectors"): one vector per target data file
// holding every position that is gone after this operation — the rows matching `where_sql` and
// everything deleted before (earlier vector, position or equality deletes) — all in one Puffin
// file at `puffin_path`. Each replaces its data file's earlier vector and file-scoped position
// delete files (PendingSnapshot::replaced_deletes_of). `rel` is the table relation with row
// origins exposed.
Status AddDeletionVectors(engine::Database& db, io::FileIO& io, const std::string& rel, const std::string& where_sql,
                          const std::vector<const iceberg::FileScanTask*>& targets, const std::string& puffin_path,
                          PendingSnapshot& p) {
  std::string values, names;
  for (const auto* t : targets) {
    values += std::string(values.empty() ? "" : ", ") + "(" + QuoteString(t->file.file_path) + ", " +
              std::to_string(t->file.record_count) + ")";
    names += std::string(names.empty() ? "" : ", ") + QuoteString(t->file.file_path);
  }
  SKADE_ASSIGN_OR_RETURN(
      auto rows, db.QueryRows("WITH __skade_rel AS (" + rel + "\n), __skade_targets(file, n) AS (VALUES " + values +
                              "), __skade_kept AS (SELECT __skade_file AS file, __skade_pos AS pos FROM __skade_rel "
                              "WHERE __skade_file IN (" + names + ") AND (" + where_sql + ") IS NOT TRUE) "
                              "SELECT a.file, a.pos FROM (SELECT t.file, r.range AS pos FROM __skade_targets t, "
                              "range(t.n) r) a ANTI JOIN __skade_kept k ON k.file = a.file AND k.pos = a.pos"));
  std::map<std::string, std::vector<int64_t>> gone;
  for (const auto& row : rows) {
    auto pos = ToLong(row[1]);
    if (!row[0] || !pos) return Status::Internal("unexpected deleted-position row");
    gone[*row[0]].push_back(*pos);
  }
  iceberg::PuffinWriter puffin;
  std::vector<DataFile> vectors;
  for (const auto* t : targets) {
    auto dv = iceberg::DeletionVector::FromPositions(std::move(gone[t->file.file_path]));
    // Spec: a vector's blob carries -1 for snapshot id and sequence number (they are inherited).
    const auto& blob = puffin.Add(iceberg::PuffinBlob{std::string(iceberg::kDeletionVectorBlob),
                                                      {kRowPositionId}, -1, -1, 0, 0, std::nullopt,
                                                      {{"referenced-data-file", t->file.file_path},
                                                       {"cardinality", std::to_string(dv.cardinality())}}},
                                  dv.Serialize());
    DataFile d;
    d.content = DataFileContent::kPositionDeletes;
    d.file_path = puffin_path;
    d.file_format = iceberg::FileFormat::kPuffin;
    d.spec_id = t->file.spec_id;
    d.partition = t->file.partition;
    d.record_count = dv.cardinality();
    d.referenced_data_file = t->file.file_path;
    d.content_offset = blob.offset;
    d.content_size_in_bytes = blob.length;
    vectors.push_back(std::move(d));
    p.replaced_deletes_of.insert(t->file.file_path);  // its earlier vector and file-scoped deletes
  }
  const std::string bytes = puffin.Finish({{"created-by", "skade"}});
  SKADE_RETURN_IF_ERROR(io.CreateExclusive(puffin_path, bytes));
  p.attempt_files.push_back(puffin_path);
  for (DataFile& d : vectors) {
    d.file_size_in_bytes = static_cast<int64_t>(bytes.size());
    p.added_deletes.push_back(std::move(d));
  }
  return Status::Ok();
}

}  // namespace

Result<CommitOutcome> Table::DeleteWhere(const engine::Predicate& where) {
  return OverwriteWhere(where, engine::WriteSource{});
}

Result<CommitOutcome> Table::OverwriteWhere(const engine::Predicate& where, const engine::WriteSource& source) {
  const bool has_source = !source.sql.empty() || source.arrow != nullptr;
  return Observed(has_source ? "overwrite" : "delete", [&] { return OverwriteWhereUnobserved(where, source); });
}

Result<CommitOutcome> Table::OverwriteWhereUnobserved(const engine::Predicate& where,
                                                      const engine::WriteSource& source) {
  const std::string& where_sql = where.sql();
  const bool has_source = !source.sql.empty() || source.arrow != nullptr;
  // Validate the predicate before anything is written.
  {
    const iceberg::TableMetadata& m = metadata();
    if (!m.CurrentSchema()) return Status::Corruption("table has no current schema");
    SKADE_RETURN_IF_ERROR(engine::SqlToIcebergFilter(db_, where, *m.CurrentSchema()));
  }
  // New rows are written once, before the first attempt.
  engine::WriteResult new_rows;
  std::vector<std::string> new_paths;
  if (has_source) {
    const iceberg::TableMetadata& m = metadata();
    engine::WriteOptions wopts =
        engine::WriteOptionsFromProperties(m.properties, io::JoinLocation(io::LocalPath(m.location), "data"));
    wopts.object_store = &io_;
    wopts.file_prefix = Uuid::NewV7().ToString() + "-";
    SKADE_ASSIGN_OR_RETURN(new_rows, engine::WriteDataFiles(db_, source, *m.CurrentSchema(), *m.DefaultSpec(), wopts));
    for (const auto& f : new_rows.files) new_paths.push_back(f.file_path);
  }
  const int schema_id = metadata().current_schema_id;
  const int spec_id = metadata().default_spec_id;

  return CommitSnapshot([&](const iceberg::TableMetadata& base, int) -> Result<PendingSnapshot> {
    PendingSnapshot p;
    p.operation = has_source ? "overwrite" : "delete";
    p.added_data = new_rows.files;
    p.operation_files = new_paths;
    p.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(schema_id));
    p.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(spec_id));
    const iceberg::Snapshot* current = base.CurrentSnapshot();
    if (current == nullptr) return p;
    iceberg::SchemaPtr schema = base.CurrentSchema();
    SKADE_ASSIGN_OR_RETURN(iceberg::ExprPtr filter, engine::SqlToIcebergFilter(db_, where, *schema));
    iceberg::ScanPlanner planner(io_, base);
    engine::IcebergScan scan;
    scan.schema = schema;
    scan.name_mapping = base.DefaultNameMapping();
    scan.specs = base.partition_specs;
    const int64_t planning_started = NowMicros();
    SKADE_ASSIGN_OR_RETURN(scan.tasks, planner.PlanAll(*current, *schema, filter));
    p.scan_report = ScanReportOfPlan(base, current->snapshot_id, where_sql, scan.tasks, planner.stats(),
                                     NowMicros() - planning_started);
    if (scan.tasks.empty()) return p;
    SKADE_ASSIGN_OR_RETURN(std::string rel, engine::BuildTableSql(db_, scan, engine::RowOrigin::kExposed));

    // Live and matching rows per candidate file.
    SKADE_ASSIGN_OR_RETURN(
        auto counts, db_.QueryRows("SELECT __skade_file, count(*), count(*) FILTER (WHERE (" + where_sql +
                                   ")) FROM (" + rel + "\n) GROUP BY 1"));
    std::map<std::string, const iceberg::FileScanTask*> by_path;
    for (const auto& t : scan.tasks) by_path[t.file.file_path] = &t;
    std::vector<std::string> partial;  // files with some (not all) rows matching
    int64_t partial_hits = 0;
    for (const auto& row : counts) {
      auto live = ToLong(row[1]);
      auto hit = ToLong(row[2]);
      if (!row[0] || !live || !hit) return Status::Internal("unexpected count row");
      if (*hit == 0) continue;
      if (*hit == *live) {
        p.removed_files.insert(*row[0]);
      } else {
        partial.push_back(*row[0]);
        partial_hits += *hit;
      }
    }
    // Files whose every row was already deleted before (no live rows) are not in `counts`.
    if (partial.empty()) return p;

    const std::string data_dir = io::JoinLocation(io::LocalPath(base.location), "data");
    const std::string prefix = Uuid::NewV7().ToString() + "-";
    // v3 tables always take deletion vectors: rewriting rows would need their _row_id and
    // _last_updated_sequence_number carried into the new files (spec "Row Lineage"), which
    // skade does not write yet.
    if (!IsMergeOnRead(base) && base.format_version < 3) {
      // Copy-on-write: the surviving rows of partially matching files go to new files.
      engine::WriteOptions wopts = engine::WriteOptionsFromProperties(base.properties, data_dir);
      wopts.object_store = &io_;
      wopts.file_prefix = prefix;
      engine::WriteSource rest;
      rest.sql = "SELECT " + ColumnList(*schema) + " FROM (" + rel + "\n) WHERE __skade_file IN (" +
                 SqlList(partial) + ") AND (" + where_sql + ") IS NOT TRUE";
      SKADE_ASSIGN_OR_RETURN(auto rewritten, engine::WriteDataFiles(db_, rest, *schema, *base.DefaultSpec(), wopts));
      for (auto& f : rewritten.files) {
        p.attempt_files.push_back(f.file_path);
        p.added_data.push_back(std::move(f));
      }
      for (const auto& f : partial) p.removed_files.insert(f);
      return p;
    }
    // Merge-on-read: one position delete file per partially matching data file, in that
    // file's partition (spec "Position Delete Files": sorted by file_path, pos). The rows they
    // remove count as deleted records, beside those of the files removed whole.
    int64_t whole_file_rows = 0;
    for (const auto& row : counts) {
      if (row[0] && p.removed_files.count(*row[0])) whole_file_rows += ToLong(row[2]).value_or(0);
    }
    p.rows_removed = partial_hits + whole_file_rows;
    if (base.format_version >= 3) {
      // v3 tables take no new position delete files: deletion vectors instead.
      std::vector<const iceberg::FileScanTask*> targets;
      for (const auto& f : partial) targets.push_back(by_path[f]);
      SKADE_RETURN_IF_ERROR(AddDeletionVectors(db_, io_, rel, where_sql, targets,
                                               io::JoinLocation(data_dir, prefix + "deletes.puffin"), p));
      return p;
    }
    if (!io::IsObjectStoreLocation(data_dir)) SKADE_RETURN_IF_ERROR(io::CreateFoldersDurably(data_dir));
    int n = 0;
    for (const std::string& target : partial) {
      const iceberg::FileScanTask* task = by_path[target];
      std::string out = io::JoinLocation(data_dir, prefix + "deletes-" + std::to_string(n++) + ".parquet");
      SKADE_ASSIGN_OR_RETURN(
          auto rows,
          db_.QueryRows("COPY (SELECT __skade_file AS file_path, __skade_pos AS pos FROM (" + rel +
                        "\n) WHERE __skade_file = " + QuoteString(target) + " AND (" + where_sql +
                        ") ORDER BY pos) TO " + QuoteString(out) + " (FORMAT parquet, FIELD_IDS {file_path: " +
                        std::to_string(kPosFilePathId) + ", pos: " + std::to_string(kPosPosId) +
                        "}, COMPRESSION zstd, RETURN_STATS true)"));
      p.attempt_files.push_back(out);
      if (rows.size() != 1) return Status::Internal("unexpected COPY result for a delete file");
      int64_t size = ToLong(rows[0][2]).value_or(0);
      if (engine::WriteOptionsFromProperties(base.properties, data_dir).page_checksums) {
        SKADE_ASSIGN_OR_RETURN(engine::ChecksummedFile checksummed, engine::AddPageChecksumsToNewFile(out, &io_));
        size = checksummed.size;
      }
      SKADE_RETURN_IF_ERROR(engine::SyncFiles({out}));
      DataFile d;
      d.content = DataFileContent::kPositionDeletes;
      d.file_path = out;
      d.file_format = iceberg::FileFormat::kParquet;
      d.spec_id = task->file.spec_id;
      d.partition = task->file.partition;
      d.record_count = ToLong(rows[0][1]).value_or(0);
      d.file_size_in_bytes = size;
      // Tight file_path bounds let readers match the delete file to its one data file.
      d.lower_bounds[kPosFilePathId] = target;
      d.upper_bounds[kPosFilePathId] = target;
      d.referenced_data_file = target;
      p.added_deletes.push_back(std::move(d));
    }
    return p;
  });
}

Result<CommitOutcome> Table::OverwritePartitions(const engine::WriteSource& source) {
  return Observed("overwrite", [&] { return OverwritePartitionsUnobserved(source); });
}

Result<CommitOutcome> Table::OverwritePartitionsUnobserved(const engine::WriteSource& source) {
  const iceberg::TableMetadata& m = metadata();
  engine::WriteOptions wopts =
      engine::WriteOptionsFromProperties(m.properties, io::JoinLocation(io::LocalPath(m.location), "data"));
  wopts.object_store = &io_;
  wopts.file_prefix = Uuid::NewV7().ToString() + "-";
  SKADE_ASSIGN_OR_RETURN(auto written, engine::WriteDataFiles(db_, source, *m.CurrentSchema(), *m.DefaultSpec(), wopts));
  std::vector<std::string> paths;
  std::set<std::string> partitions;
  for (const auto& f : written.files) {
    paths.push_back(f.file_path);
    partitions.insert(PartitionText(f));
  }
  const int spec_id = m.default_spec_id;
  const int schema_id = m.current_schema_id;
  return CommitSnapshot([&](const iceberg::TableMetadata& base, int) -> Result<PendingSnapshot> {
    PendingSnapshot p;
    p.operation = "overwrite";
    p.added_data = written.files;
    p.operation_files = paths;
    p.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(spec_id));
    p.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(schema_id));
    const iceberg::Snapshot* current = base.CurrentSnapshot();
    if (current == nullptr) return p;
    // Every live file (data or delete) of a written partition of this spec is replaced.
    iceberg::ScanPlanner planner(io_, base);
    SKADE_ASSIGN_OR_RETURN(auto manifests, planner.LoadManifests(*current));
    for (const auto& mf : manifests) {
      if (mf.partition_spec_id != spec_id) continue;
      SKADE_RETURN_IF_ERROR(iceberg::ForEachLiveEntry(io_, mf, [&](iceberg::ManifestEntry& entry) {
        if (partitions.count(PartitionText(entry.data_file))) p.removed_files.insert(entry.data_file.file_path);
        return Status::Ok();
      }));
    }
    return p;
  });
}

namespace {

// Key columns (top-level primitives) by name, and their field ids.
Result<std::vector<const iceberg::NestedField*>> KeyFields(const iceberg::Schema& schema,
                                                          const std::vector<std::string>& names) {
  if (names.empty()) return Status::InvalidArgument("no key columns given and the table has no identifier fields");
  std::vector<const iceberg::NestedField*> out;
  for (const std::string& n : names) {
    const iceberg::NestedField* f = nullptr;
    for (const auto& top : schema.fields()) {
      if (top.name == n) f = &top;
    }
    if (f == nullptr) return Status::InvalidArgument("key column '" + n + "' is not a top-level column");
    if (!f->type->is_primitive() || f->type->id() == iceberg::TypeId::kFloat || f->type->id() == iceberg::TypeId::kDouble) {
      return Status::InvalidArgument("key column '" + n + "' must be a non-floating primitive");
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace

Result<std::set<int>> Table::LiveDataSpecIds(const iceberg::TableMetadata& m) {
  std::set<int> ids;
  const iceberg::Snapshot* current = m.CurrentSnapshot();
  if (current == nullptr || current->manifest_list.empty()) return ids;
  SKADE_ASSIGN_OR_RETURN(auto manifests, iceberg::ReadManifestList(read_io(), current->manifest_list));
  for (const auto& mf : manifests) {
    if (mf.content != iceberg::ManifestContent::kData) continue;
    // Without counts (v1 lists may omit them) the manifest may hold live files.
    const bool known_empty = mf.added_files_count && mf.existing_files_count &&
                             *mf.added_files_count + *mf.existing_files_count == 0;
    if (!known_empty) ids.insert(mf.partition_spec_id);
  }
  return ids;
}

Result<CommitOutcome> Table::DeleteKeys(const engine::WriteSource& keys, const std::vector<std::string>& key_columns) {
  return Observed("delete", [&]() -> Result<CommitOutcome> {
    if (key_columns.empty()) return Status::InvalidArgument("delete by key needs key columns");
    return WriteKeyed(keys, key_columns, KeyedWrite::kDeleteOnly);
  });
}

Result<CommitOutcome> Table::Upsert(const engine::WriteSource& source, std::vector<std::string> key_columns) {
  return Observed("overwrite", [&] { return WriteKeyed(source, std::move(key_columns), KeyedWrite::kUpsert); });
}

Result<CommitOutcome> Table::WriteKeyed(const engine::WriteSource& source_in, std::vector<std::string> key_columns,
                                        KeyedWrite kind) {
  const iceberg::TableMetadata& m = metadata();
  iceberg::SchemaPtr schema = m.CurrentSchema();
  iceberg::PartitionSpecPtr spec = m.DefaultSpec();
  if (!schema || !spec) return Status::Corruption("table has no current schema or spec");
  if (key_columns.empty()) {
    for (int id : schema->identifier_field_ids()) key_columns.push_back(schema->FindColumnName(id));
  }
  SKADE_ASSIGN_OR_RETURN(auto keys, KeyFields(*schema, key_columns));
  std::set<int> key_ids;
  for (const auto* f : keys) key_ids.insert(f->id);
  for (const auto& pf : spec->fields()) {
    if (pf.transform.kind() != iceberg::TransformKind::kVoid && !key_ids.count(pf.source_id)) {
      return Status::InvalidArgument("key columns must include the partition source column '" +
                                     schema->FindColumnName(pf.source_id) + "'");
    }
  }

  // An Arrow stream can be read once: stage it in DuckDB so keys and rows come from one copy.
  std::string staged;
  engine::WriteSource source = source_in;
  if (source.arrow != nullptr) {
    staged = QuoteIdentifier("__skade_stage_" + Uuid::NewV7().ToString());
    SKADE_RETURN_IF_ERROR(db_.QueryRowsWithArrow("__skade_input", source.arrow,
                                                 "CREATE TABLE " + staged + " AS " + source.sql).status());
    source = engine::WriteSource{"SELECT * FROM " + staged, nullptr, source_in.cast};
  }
  struct DropStage {
    engine::Database& db;
    std::string name;
    ~DropStage() {
      if (!name.empty()) (void)db.Execute("DROP TABLE IF EXISTS " + name);
    }
  } drop_stage{db_, staged};

  SKADE_ASSIGN_OR_RETURN(std::vector<engine::ColumnType> described, db_.QueryColumns(source.sql));
  std::set<std::string> source_cols;
  for (const engine::ColumnType& c : described) source_cols.insert(c.name);
  std::string key_list;
  for (const auto* f : keys) {
    if (!source_cols.count(f->name)) return Status::InvalidArgument("the input has no key column '" + f->name + "'");
    key_list += (key_list.empty() ? "" : ", ") + QuoteIdentifier(f->name);
  }
  const bool insert_rows = kind == KeyedWrite::kUpsert;

  if (insert_rows) {
    SKADE_ASSIGN_OR_RETURN(auto dups, db_.QueryRows("SELECT count(*) FROM (SELECT " + key_list + " FROM (" + source.sql +
                                                    "\n) GROUP BY ALL HAVING count(*) > 1)"));
    if (!dups.empty() && dups[0][0] && *dups[0][0] != "0") {
      return Status::InvalidArgument("the upsert input has " + *dups[0][0] + " duplicate key(s) on (" + key_list + ")");
    }
  }

  const std::string data_dir = io::JoinLocation(io::LocalPath(m.location), "data");
  // Equality delete files: the distinct keys, partitioned like the data (key columns include
  // the partition sources), with the key columns' field ids.
  std::vector<iceberg::NestedField> key_fields;
  for (const auto* f : keys) key_fields.push_back(*f);
  iceberg::Schema key_schema(schema->schema_id(), key_fields);
  engine::WriteOptions dopts = engine::WriteOptionsFromProperties(m.properties, data_dir);
  dopts.object_store = &io_;
  dopts.file_prefix = Uuid::NewV7().ToString() + "-eq-";
  engine::WriteSource key_source{"SELECT DISTINCT " + key_list + " FROM (" + source.sql + "\n)", nullptr, source.cast};
  SKADE_ASSIGN_OR_RETURN(auto deletes, engine::WriteDataFiles(db_, key_source, key_schema, *spec, dopts));
  // Spec "Scan Planning": an equality delete applies to the data files of its own spec and
  // partition only (everywhere when its spec is unpartitioned). Files written before a spec
  // change keep their spec, so the keys go out once more partitioned by each earlier spec that
  // still has data files — or once unpartitioned when such a spec partitions by a column the
  // keys lack.
  SKADE_ASSIGN_OR_RETURN(std::set<int> earlier, LiveDataSpecIds(m));
  earlier.erase(spec->spec_id());
  bool wrote_global = false;
  for (int id : earlier) {
    iceberg::PartitionSpecPtr older = m.SpecById(id);
    if (!older) return Status::Corruption("a data manifest names unknown partition spec " + std::to_string(id));
    std::string uncovered;
    for (const auto& pf : older->fields()) {
      if (pf.transform.kind() != iceberg::TransformKind::kVoid && !key_ids.count(pf.source_id)) {
        uncovered = schema->FindColumnName(pf.source_id);
      }
    }
    iceberg::PartitionSpecPtr target = older;
    if (!uncovered.empty()) {
      if (wrote_global) continue;
      target = nullptr;
      for (const auto& candidate : m.partition_specs) {
        bool unpartitioned = true;
        for (const auto& pf : candidate->fields()) unpartitioned = unpartitioned && pf.transform.kind() == iceberg::TransformKind::kVoid;
        if (unpartitioned) target = candidate;
      }
      if (!target) {
        return Status::InvalidArgument("data files of partition spec " + std::to_string(id) + " are partitioned by '" +
                                       uncovered + "', which is not among the key columns: include it, or the keys "
                                       "cannot reach those files");
      }
      wrote_global = true;
    }
    SKADE_ASSIGN_OR_RETURN(auto more, engine::WriteDataFiles(db_, key_source, key_schema, *target, dopts));
    for (auto& f : more.files) deletes.files.push_back(std::move(f));
  }
  std::vector<int> equality_ids;
  for (const auto* f : keys) equality_ids.push_back(f->id);
  std::vector<std::string> written;
  for (auto& d : deletes.files) {
    d.content = DataFileContent::kEqualityDeletes;
    d.equality_ids = equality_ids;
    written.push_back(d.file_path);
  }
  engine::WriteResult rows;
  if (insert_rows) {
    engine::WriteOptions wopts = engine::WriteOptionsFromProperties(m.properties, data_dir);
    wopts.object_store = &io_;
    wopts.file_prefix = Uuid::NewV7().ToString() + "-";
    auto r = engine::WriteDataFiles(db_, source, *schema, *spec, wopts);
    if (!r.ok()) {
      for (const auto& w : written) (void)io_.Delete(w);
      return r.status();
    }
    rows = std::move(r).value();
    for (const auto& f : rows.files) written.push_back(f.file_path);
  }
  const int schema_id = schema->schema_id();
  const int spec_id = spec->spec_id();
  // Rebasable: the deletes get the commit's sequence number, so they hit every older row with
  // these keys — including rows other writers committed meanwhile — and none of the new rows.
  return CommitSnapshot([&](const iceberg::TableMetadata& base, int) -> Result<PendingSnapshot> {
    PendingSnapshot p;
    p.operation = insert_rows ? "overwrite" : "delete";
    // The rows these keys remove from the base (what the commit reports and logs).
    p.rows_removed = 0;
    if (const iceberg::Snapshot* current = base.CurrentSnapshot()) {
      iceberg::ScanPlanner planner(io_, base);
      engine::IcebergScan scan;
      scan.schema = base.CurrentSchema();
      scan.name_mapping = base.DefaultNameMapping();
      scan.specs = base.partition_specs;
      const int64_t planning_started = NowMicros();
      SKADE_ASSIGN_OR_RETURN(scan.tasks, planner.PlanAll(*current, *scan.schema, nullptr));
      // The keys' rows are looked up in the whole table (no filter): its scan report.
      p.scan_report = ScanReportOfPlan(base, current->snapshot_id, "", scan.tasks, planner.stats(),
                                       NowMicros() - planning_started);
      if (!scan.tasks.empty()) {
        SKADE_ASSIGN_OR_RETURN(std::string rel, engine::BuildTableSql(db_, scan));
        std::string on;
        for (const auto* f : keys) {
          on += (on.empty() ? "" : " AND ") + ("__t." + QuoteIdentifier(f->name) + " IS NOT DISTINCT FROM __k." +
                                               QuoteIdentifier(f->name));
        }
        SKADE_ASSIGN_OR_RETURN(auto counted,
                               db_.QueryRows("SELECT count(*) FROM (" + rel + "\n) __t SEMI JOIN (SELECT DISTINCT " +
                                             key_list + " FROM (" + source.sql + "\n)) __k ON " + on));
        p.rows_removed = counted.empty() ? std::nullopt : ToLong(counted[0][0]);
      }
    }
    p.added_deletes = deletes.files;
    p.added_data = rows.files;
    p.operation_files = written;
    p.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(schema_id));
    p.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(spec_id));
    return p;
  });
}

Result<std::string> Table::ChangesSql(int64_t from_snapshot, std::optional<int64_t> to_snapshot, ChangeMode mode) {
  const iceberg::TableMetadata& m = metadata();
  const iceberg::Snapshot* to = to_snapshot ? m.SnapshotById(*to_snapshot) : m.CurrentSnapshot();
  if (to == nullptr) {
    return Status::NotFound(to_snapshot ? "snapshot " + std::to_string(*to_snapshot) + " not found"
                                        : std::string("the table has no snapshot"));
  }
  // The range: the snapshots after `from` up to `to`, oldest first.
  SKADE_ASSIGN_OR_RETURN(std::vector<const iceberg::Snapshot*> range, iceberg::SnapshotsBetween(m, from_snapshot, *to));
  iceberg::SchemaPtr schema = m.CurrentSchema();
  iceberg::ScanPlanner planner(io_, m);
  const std::string columns = ColumnList(*schema);

  if (mode == ChangeMode::kAppendsOnly) {
    engine::IcebergScan scan;
    scan.schema = schema;
    scan.name_mapping = m.DefaultNameMapping();
    scan.specs = m.partition_specs;
    SKADE_RETURN_IF_ERROR(planner.PlanAppends(from_snapshot, *to, *schema, nullptr, [&](iceberg::FileScanTask t) {
      scan.tasks.push_back(std::move(t));
      return Status::Ok();
    }));
    return engine::BuildTableSql(db_, scan);
  }

  // Changelog: per snapshot, the net row changes against its parent (multiset difference of the
  // two states, so rows a rewrite carried over unchanged do not show up).
  std::string sql;
  int ordinal = 0;
  for (const iceberg::Snapshot* s : range) {
    auto state = [&](const iceberg::Snapshot* snap) -> Result<std::string> {
      engine::IcebergScan scan;
      scan.schema = schema;
      scan.name_mapping = m.DefaultNameMapping();
      scan.specs = m.partition_specs;
      if (snap != nullptr) {
        SKADE_ASSIGN_OR_RETURN(scan.tasks, planner.PlanAll(*snap, *schema, nullptr));
      }
      return engine::BuildTableSql(db_, scan);
    };
    const iceberg::Snapshot* parent = s->parent_snapshot_id ? m.SnapshotById(*s->parent_snapshot_id) : nullptr;
    SKADE_ASSIGN_OR_RETURN(std::string before, state(parent));
    SKADE_ASSIGN_OR_RETURN(std::string after, state(s));
    std::string tail = ", " + std::to_string(ordinal) + " AS _change_ordinal, " + std::to_string(s->snapshot_id) +
                       " AS _commit_snapshot_id";
    std::string part = "SELECT *, 'DELETE' AS _change_type" + tail + " FROM (SELECT " + columns + " FROM (" + before +
                       "\n) EXCEPT ALL SELECT " + columns + " FROM (" + after + "\n))\nUNION ALL\n" +
                       "SELECT *, 'INSERT' AS _change_type" + tail + " FROM (SELECT " + columns + " FROM (" + after +
                       "\n) EXCEPT ALL SELECT " + columns + " FROM (" + before + "\n))";
    sql += (sql.empty() ? "" : "\nUNION ALL\n") + part;
    ++ordinal;
  }
  if (sql.empty()) {
    engine::IcebergScan empty;
    empty.schema = schema;
    SKADE_ASSIGN_OR_RETURN(std::string none, engine::BuildTableSql(db_, empty));
    return "SELECT *, CAST(NULL AS VARCHAR) AS _change_type, CAST(NULL AS INTEGER) AS _change_ordinal, "
           "CAST(NULL AS BIGINT) AS _commit_snapshot_id FROM (" + none + ")";
  }
  return sql;
}

Result<CommitOutcome> Table::Compact(const CompactOptions& options) {
  return Observed("replace", [&] { return CompactUnobserved(options); });
}

Result<CommitOutcome> Table::CompactUnobserved(const CompactOptions& options) {
  return CommitSnapshot([&](const iceberg::TableMetadata& base, int) -> Result<PendingSnapshot> {
    PendingSnapshot p;
    p.operation = "replace";
    if (base.format_version >= 3) {
      return Status::NotImplemented("compacting a format v3 table would rewrite rows without their row lineage "
                                    "(_row_id, _last_updated_sequence_number), which skade does not write yet");
    }
    const iceberg::Snapshot* current = base.CurrentSnapshot();
    if (current == nullptr) return p;
    iceberg::SchemaPtr schema = base.CurrentSchema();
    iceberg::ScanPlanner planner(io_, base);
    const int64_t planning_started = NowMicros();
    SKADE_ASSIGN_OR_RETURN(auto tasks, planner.PlanAll(*current, *schema, nullptr));
    p.scan_report =
        ScanReportOfPlan(base, current->snapshot_id, "", tasks, planner.stats(), NowMicros() - planning_started);
    // Rewrite small files, files of older specs, and (if asked) files that have deletes.
    engine::IcebergScan scan;
    scan.schema = schema;
    scan.name_mapping = base.DefaultNameMapping();
    scan.specs = base.partition_specs;
    std::map<const iceberg::DeleteFileTask*, int> uses, rewritten_uses;
    for (const auto& t : tasks) {
      for (const auto& d : t.deletes) ++uses[d.get()];
    }
    for (const auto& t : tasks) {
      bool small = t.file.file_size_in_bytes < options.small_file_bytes;
      bool old_spec = t.file.spec_id != base.default_spec_id;
      bool has_deletes = options.apply_deletes && !t.deletes.empty();
      if (small || old_spec || has_deletes) scan.tasks.push_back(t);
    }
    // Nothing to gain from rewriting one small file without deletes.
    if (scan.tasks.empty() || (scan.tasks.size() == 1 && scan.tasks[0].deletes.empty() &&
                               scan.tasks[0].file.spec_id == base.default_spec_id)) {
      return p;
    }
    for (const auto& t : scan.tasks) {
      p.removed_files.insert(t.file.file_path);
      for (const auto& d : t.deletes) ++rewritten_uses[d.get()];
    }
    // A delete file whose every target is rewritten has nothing left to apply to.
    for (const auto& [d, n] : uses) {
      if (rewritten_uses[d] != n) continue;
      if (d->file.file_format == iceberg::FileFormat::kPuffin && d->file.referenced_data_file) {
        p.replaced_deletes_of.insert(*d->file.referenced_data_file);  // its Puffin file may hold others' vectors
      } else {
        p.removed_files.insert(d->file.file_path);
      }
    }
    SKADE_ASSIGN_OR_RETURN(std::string rel, engine::BuildTableSql(db_, scan));
    engine::WriteOptions wopts =
        engine::WriteOptionsFromProperties(base.properties, io::JoinLocation(io::LocalPath(base.location), "data"));
    wopts.object_store = &io_;
    wopts.file_prefix = Uuid::NewV7().ToString() + "-";
    SKADE_ASSIGN_OR_RETURN(auto written, engine::WriteDataFiles(db_, {"SELECT * FROM (" + rel + "\n)", nullptr}, *schema,
                                                               *base.DefaultSpec(), wopts));
    for (auto& f : written.files) {
      p.attempt_files.push_back(f.file_path);
      p.added_data.push_back(std::move(f));
    }
    p.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(base.current_schema_id));
    return p;
  });
}

}  // namespace skade::table
