// Table::Replace: Iceberg's replace transaction (Java's TableMetadata.buildReplacement and
// ReplaceTableTransaction, which Spark's REPLACE TABLE / CREATE OR REPLACE TABLE … AS run) as
// one commit on the same table: same uuid, location and history, a new current schema, spec
// and order, and main a new snapshot without parent (or none).
#include <map>
#include <set>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/io/location.h"
#include "skade/table/commit_internal.h"
#include "skade/table/table.h"

namespace skade::table {
namespace {

using iceberg::NestedField;
using iceberg::TableUpdate;
using iceberg::Type;
using iceberg::TypeId;
using iceberg::TypePtr;

constexpr const char* kMain = "main";

// Numbers the columns of a replacing schema against the current one. Java reuses the id of a
// current column of the same name whatever its type; here only a column of the same path and
// type (the same container kind for struct/list/map) keeps its id, so one id never names two
// types in a table's history (older snapshots' manifests bound their columns by id and type).
// Every other column takes an id above the table's last-column-id. Not thread-safe.
class ReplaceIds {
 public:
  ReplaceIds(const iceberg::Schema* current, int last_column_id) : current_(current), last_(last_column_id) {}

  TypePtr Renumber(const TypePtr& type, const std::string& path) {
    switch (type->id()) {
      case TypeId::kStruct: {
        std::vector<NestedField> fields = type->fields();
        for (NestedField& f : fields) f.id = Assign(f.id, Child(path, f.name), *f.type);
        for (NestedField& f : fields) f.type = Renumber(f.type, Child(path, f.name));
        return Type::Struct(std::move(fields));
      }
      case TypeId::kList: {
        const NestedField& element = type->element();
        const std::string at = Child(path, "element");
        const int id = Assign(element.id, at, *element.type);
        return Type::List(id, Renumber(element.type, at), element.required);
      }
      case TypeId::kMap: {
        const std::string key_at = Child(path, "key");
        const std::string value_at = Child(path, "value");
        const int key = Assign(type->key().id, key_at, *type->key().type);
        const int value = Assign(type->value().id, value_at, *type->value().type);
        TypePtr key_type = Renumber(type->key().type, key_at);
        TypePtr value_type = Renumber(type->value().type, value_at);
        return Type::Map(key, std::move(key_type), value, std::move(value_type), type->value().required);
      }
      default:
        return type;
    }
  }

  // The new id of a column of the given schema; kInvalidArgument for an id it lacks.
  Result<int> Of(int old_id) const {
    auto it = ids_.find(old_id);
    if (it == ids_.end()) return Status::InvalidArgument("the schema has no column " + std::to_string(old_id));
    return it->second;
  }

  int last_column_id() const { return last_; }

 private:
  static std::string Child(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }

  static bool SameKind(const Type& a, const Type& b) {
    if (a.is_primitive() || b.is_primitive()) return a.is_primitive() && b.is_primitive() && TypeEquals(a, b);
    return a.id() == b.id();
  }

  int Assign(int old_id, const std::string& path, const Type& type) {
    const NestedField* existing = current_ != nullptr ? current_->FindFieldByName(path) : nullptr;
    int id = 0;
    if (existing != nullptr && SameKind(*existing->type, type) && used_.insert(existing->id).second) {
      id = existing->id;
    } else {
      id = ++last_;
      used_.insert(id);
    }
    ids_[old_id] = id;
    return id;
  }

  const iceberg::Schema* current_;
  int last_;
  std::set<int> used_;
  std::map<int, int> ids_;  // given id -> new id
};

// The replacement's metadata updates against `base` (no snapshot yet), and the schema and spec
// the table will hold once they apply: what the data is written with.
struct ReplacePlan {
  std::vector<TableUpdate> updates;
  iceberg::SchemaPtr schema;
  iceberg::PartitionSpecPtr spec;
};

Result<ReplacePlan> PlanReplace(const iceberg::TableMetadata& base, const std::string& base_location,
                                const iceberg::Schema& given) {
  SKADE_RETURN_IF_ERROR(given.Validate().WithContext("replacing schema"));
  ReplaceIds ids(base.CurrentSchema().get(), base.last_column_id);
  TypePtr renumbered = ids.Renumber(given.as_struct(), "");
  std::vector<int> identifier_field_ids;
  for (int id : given.identifier_field_ids()) {
    SKADE_ASSIGN_OR_RETURN(int fresh, ids.Of(id));
    identifier_field_ids.push_back(fresh);
  }
  ReplacePlan plan;
  // Schema id -1: the catalog numbers it (or finds the same schema among the table's).
  TableUpdate add_schema = TableUpdate::AddSchema(
      std::make_shared<const iceberg::Schema>(-1, renumbered->fields(), std::move(identifier_field_ids)));
  add_schema.last_column_id = ids.last_column_id();
  plan.updates.push_back(std::move(add_schema));
  plan.updates.push_back(TableUpdate::SetCurrentSchema(-1));
  plan.updates.push_back(
      TableUpdate::AddSpec(std::make_shared<const iceberg::PartitionSpec>(-1, std::vector<iceberg::PartitionField>{})));
  plan.updates.push_back(TableUpdate::SetDefaultSpec(-1));
  plan.updates.push_back(TableUpdate::AddSortOrder(iceberg::SortOrder{}));
  plan.updates.push_back(TableUpdate::SetDefaultSortOrder(-1));
  // Applied here as the catalog will apply them, to learn the ids the schema and spec get.
  SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadata preview,
                         iceberg::ApplyUpdates(base, base_location, plan.updates, base.last_updated_ms));
  plan.schema = preview.CurrentSchema();
  plan.spec = preview.DefaultSpec();
  if (!plan.schema || !plan.spec) return Status::Internal("replacing: no current schema or spec after the updates");
  return plan;
}

bool SamePlan(const ReplacePlan& a, const ReplacePlan& b) {
  return a.schema->schema_id() == b.schema->schema_id() && TypeEquals(*a.schema->as_struct(), *b.schema->as_struct()) &&
         a.schema->identifier_field_ids() == b.schema->identifier_field_ids() &&
         a.spec->spec_id() == b.spec->spec_id();
}

}  // namespace

Result<CommitOutcome> Table::Replace(const iceberg::SchemaPtr& schema, const engine::WriteSource* source) {
  return Observed("replace", [&] { return ReplaceUnobserved(schema, source); });
}

Result<CommitOutcome> Table::ReplaceUnobserved(const iceberg::SchemaPtr& schema, const engine::WriteSource* source) {
  if (!schema) return Status::InvalidArgument("replace " + state_.ident.ToString() + ": no schema");
  SKADE_RETURN_IF_ERROR(Refresh());
  SKADE_ASSIGN_OR_RETURN(ReplacePlan written_for, PlanReplace(metadata(), state_.metadata_location, *schema));
  const int64_t started_at_us = NowMicros();
  const int64_t snapshot_id = NewSnapshotId();
  const std::string write_id = Uuid::NewV7().ToString();

  // The rows are written once, for the schema and spec the replacement gives the table.
  engine::WriteResult written;
  std::vector<std::string> data_files;
  if (source != nullptr) {
    const iceberg::TableMetadata& start = metadata();
    engine::WriteOptions wopts = engine::WriteOptionsFromProperties(
        start.properties, io::JoinLocation(io::LocalPath(start.location), "data"));
    wopts.object_store = &io_;
    wopts.file_prefix = write_id + "-";
    SKADE_ASSIGN_OR_RETURN(written,
                           engine::WriteDataFiles(db_, *source, *written_for.schema, *written_for.spec, wopts));
    for (const iceberg::DataFile& f : written.files) data_files.push_back(f.file_path);
  }
  auto delete_all = [&](const std::vector<std::string>& files) {
    for (const std::string& f : files) (void)io_.Delete(f);
  };

  const int max_attempts = MaxCommitAttempts(metadata().properties);
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    if (attempt > 1) {
      BackOff(attempt);
      Status st = Refresh();
      if (!st.ok()) {
        delete_all(data_files);
        return st;
      }
    }
    const iceberg::TableMetadata& base = metadata();
    Result<ReplacePlan> planned = PlanReplace(base, state_.metadata_location, *schema);
    if (!planned.ok()) {
      delete_all(data_files);
      return planned.status();
    }
    if (!SamePlan(*planned, written_for)) {
      // The rows carry the field ids they were written with.
      delete_all(data_files);
      return Status::Conflict("replace " + state_.ident.ToString() +
                              ": a concurrent commit changed the table's schemas or specs while its rows were "
                              "written; run it again");
    }
    catalog::TableCommit commit;
    commit.ident = state_.ident;
    // The replacement does not depend on the content it replaces, but on the ids it numbered
    // against: those are asserted, and main too (a commit in between is replaced as well, on
    // the next attempt, with the sequence numbers right).
    const iceberg::Snapshot* head = base.CurrentSnapshot();
    commit.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(base.table_uuid));
    commit.requirements.push_back(iceberg::TableRequirement::AssertRefSnapshotId(
        kMain, head ? std::optional<int64_t>(head->snapshot_id) : std::nullopt));
    commit.requirements.push_back(iceberg::TableRequirement::AssertCurrentSchemaId(base.current_schema_id));
    commit.requirements.push_back(iceberg::TableRequirement::AssertLastAssignedFieldId(base.last_column_id));
    commit.requirements.push_back(iceberg::TableRequirement::AssertDefaultSpecId(base.default_spec_id));
    commit.requirements.push_back(iceberg::TableRequirement::AssertLastAssignedPartitionId(base.last_partition_id));
    commit.updates = planned->updates;

    std::vector<std::string> attempt_files;
    Changes changes;
    iceberg::Snapshot snap;
    if (source == nullptr) {
      // An empty table: main goes; the older snapshots stay in the history.
      commit.updates.push_back(TableUpdate::RemoveRef(kMain));
    } else {
      const std::string metadata_dir = MetadataFolder(base);
      const int format = std::max(2, base.format_version);
      std::vector<iceberg::ManifestFile> manifests;
      if (!written.files.empty()) {
        std::vector<iceberg::ManifestEntry> entries;
        for (const iceberg::DataFile& f : written.files) {
          iceberg::ManifestEntry e;
          e.status = iceberg::ManifestEntryStatus::kAdded;
          e.snapshot_id = snapshot_id;
          e.data_file = f;
          changes.Add(f);
          entries.push_back(std::move(e));
        }
        iceberg::ManifestWriterOptions mo;
        mo.format_version = format;
        mo.snapshot_id = snapshot_id;
        mo.content = iceberg::ManifestContent::kData;
        const std::string path =
            io::JoinLocation(metadata_dir, write_id + "-a" + std::to_string(attempt) + "-m0.avro");
        Result<iceberg::ManifestFile> manifest =
            WriteManifest(io_, written_for.schema, written_for.spec, mo, entries, path);
        if (!manifest.ok()) {
          delete_all(data_files);
          return manifest.status();
        }
        attempt_files.push_back(path);
        manifests.push_back(std::move(manifest).value());
      }
      snap.snapshot_id = snapshot_id;
      // No parent: a new history on the same table (spec "Sequence Numbers": such a snapshot is
      // numbered against the table it replaces).
      snap.sequence_number = base.last_sequence_number + 1;
      snap.timestamp_ms = std::max(NowMillis(), base.last_updated_ms);
      snap.schema_id = written_for.schema->schema_id();
      // Everything the table showed before is gone from this snapshot: an overwrite, whose
      // totals start over.
      snap.summary = Summary("overwrite", changes, std::nullopt, nullptr);
      if (!lineage_.empty()) snap.summary.emplace_back(kSnapshotLineageKey, EncodeSnapshotLineage(lineage_));
      snap.summary.emplace_back(kCommitAttemptKey, std::to_string(attempt));
      snap.summary.emplace_back(kCommitStartedAtKey, std::to_string(started_at_us));
      Result<int64_t> assigned = AssignRowLineage(format, base.next_row_id.value_or(0), manifests, &snap);
      Result<std::string> list = assigned.ok() ? iceberg::WriteManifestList(format, snapshot_id, std::nullopt,
                                                                            snap.sequence_number, manifests)
                                               : Result<std::string>(assigned.status());
      const std::string list_path = ManifestListPath(metadata_dir, snapshot_id, attempt, write_id);
      Status st = list.ok() ? io_.CreateUnpublished(list_path, *list) : list.status();
      if (st.ok()) attempt_files.push_back(list_path);
      if (st.ok()) st = io_.SyncFolders(attempt_files);
      if (!st.ok()) {
        delete_all(attempt_files);
        delete_all(data_files);
        return st;
      }
      snap.manifest_list = list_path;
      commit.updates.push_back(TableUpdate::AddSnapshot(snap));
      commit.updates.push_back(TableUpdate::SetBranch(kMain, snapshot_id));
    }

    Result<catalog::CommitResult> result = catalog_.CommitTable(commit);
    if (result.ok()) {
      state_ = result->table;
      UseRelocation();
      if (source == nullptr) {
        CommitOutcome outcome;
        outcome.operation = "replace";
        outcome.commit_seq = result->commit_seq;
        outcome.attempts = attempt;
        return outcome;
      }
      return OutcomeOf(snap, "overwrite", changes, result->commit_seq, attempt);
    }
    if (result.status().code() == StatusCode::kCommitUnknown) return result.status();  // it may have: keep the files
    delete_all(attempt_files);
    if (result.status().code() != StatusCode::kConflict) {
      delete_all(data_files);
      return result.status();
    }
    SKADE_LOG_INFO("replace of {} conflicted (attempt {}); retrying", state_.ident.ToString(), attempt);
  }
  delete_all(data_files);
  return Status::Conflict("gave up replacing " + state_.ident.ToString() + " after " + std::to_string(max_attempts) +
                          " conflicting attempts");
}

}  // namespace skade::table
