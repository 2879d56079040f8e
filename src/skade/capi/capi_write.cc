// skade.h: the writes besides append (overwrite, upsert, delete), each one commit.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/capi/capi_internal.h"
#include "skade/capi/skade.h"
#include "skade/engine/user_sql.h"

namespace skade::capi {
namespace {

// The rows of a caller's stream as the write path reads them.
engine::WriteSource Rows(ArrowArrayStream* rows) { return engine::WriteSource{"SELECT * FROM __skade_input", rows}; }

void Tell(const table::CommitOutcome& outcome, int64_t* snapshot_id, int64_t* commit_seq) {
  // A write that changed nothing committed nothing: both 0.
  const bool committed = outcome.commit_seq > 0;
  if (snapshot_id) *snapshot_id = committed ? outcome.snapshot_id : 0;
  if (commit_seq) *commit_seq = committed ? outcome.commit_seq : 0;
}

Result<std::optional<engine::Predicate>> WhereOf(const char* where_sql) {
  if (where_sql == nullptr || *where_sql == '\0') return std::optional<engine::Predicate>();
  auto where = engine::Predicate::Parse(where_sql);
  if (!where.ok()) return where.status().WithContext("where");
  return std::optional<engine::Predicate>(std::move(where).value());
}

Status Overwrite(skade_lake* lake, const char* table, ArrowArrayStream* rows, const char* where_sql,
                 int64_t* snapshot_id, int64_t* commit_seq) {
  if (rows == nullptr || rows->release == nullptr) return Status::InvalidArgument("null input stream");
  ConsumedStream consumed(rows);
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(std::optional<engine::Predicate> where, WhereOf(where_sql));
  SKADE_ASSIGN_OR_RETURN(auto t, LoadTable(*state, table));
  SKADE_ASSIGN_OR_RETURN(table::CommitOutcome outcome,
                         where ? t->OverwriteWhere(*where, Rows(rows)) : t->OverwriteAll(Rows(rows)));
  Tell(outcome, snapshot_id, commit_seq);
  return Status::Ok();
}

Status Upsert(skade_lake* lake, const char* table, ArrowArrayStream* rows, const char* const* keys, int64_t n_keys,
              int64_t* snapshot_id, int64_t* commit_seq) {
  if (rows == nullptr || rows->release == nullptr) return Status::InvalidArgument("null input stream");
  ConsumedStream consumed(rows);
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> key_columns, Names(keys, n_keys, "keys"));
  SKADE_ASSIGN_OR_RETURN(auto t, LoadTable(*state, table));
  if (key_columns.empty()) {
    // The table's identifier fields, as `skade ingest --mode upsert` takes them.
    if (const iceberg::SchemaPtr schema = t->metadata().CurrentSchema()) {
      for (int id : schema->identifier_field_ids()) key_columns.push_back(schema->FindColumnName(id));
    }
    if (key_columns.empty()) {
      return Status::InvalidArgument("upsert into " + t->ident().ToString() +
                                     " needs key columns: give keys, or create the table with identifier fields");
    }
  }
  SKADE_ASSIGN_OR_RETURN(table::CommitOutcome outcome, t->Upsert(Rows(rows), std::move(key_columns)));
  Tell(outcome, snapshot_id, commit_seq);
  return Status::Ok();
}

Status Delete(skade_lake* lake, const char* table, const char* where_sql, int64_t* snapshot_id,
              int64_t* commit_seq) {
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(std::optional<engine::Predicate> where, WhereOf(where_sql));
  if (!where) return Status::InvalidArgument("delete needs a where predicate (overwrite with no rows empties a table)");
  SKADE_ASSIGN_OR_RETURN(auto t, LoadTable(*state, table));
  SKADE_ASSIGN_OR_RETURN(table::CommitOutcome outcome, t->DeleteWhere(*where));
  Tell(outcome, snapshot_id, commit_seq);
  return Status::Ok();
}

}  // namespace
}  // namespace skade::capi

extern "C" {

int skade_overwrite(skade_lake* lake, const char* table, ArrowArrayStream* rows, const char* where_sql,
                    int64_t* snapshot_id, int64_t* commit_seq) {
  return skade::capi::Report(skade::capi::Overwrite(lake, table, rows, where_sql, snapshot_id, commit_seq));
}

int skade_upsert(skade_lake* lake, const char* table, ArrowArrayStream* rows, const char* const* keys, int64_t n_keys,
                 int64_t* snapshot_id, int64_t* commit_seq) {
  return skade::capi::Report(skade::capi::Upsert(lake, table, rows, keys, n_keys, snapshot_id, commit_seq));
}

int skade_delete(skade_lake* lake, const char* table, const char* where_sql, int64_t* snapshot_id,
                 int64_t* commit_seq) {
  return skade::capi::Report(skade::capi::Delete(lake, table, where_sql, snapshot_id, commit_seq));
}

}  // extern "C"
