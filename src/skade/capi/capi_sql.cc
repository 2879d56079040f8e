// skade.h: skade_sql, one statement with the rules of `skade sql` (cli/sql_session.cc): the
// statement is classified from DuckDB's parse tree; queries run over the lake's tables as
// sql::LakeSql resolves them, the Iceberg write statements commit through LakeSql, nothing
// else runs.
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/capi/capi_internal.h"
#include "skade/capi/skade.h"
#include "skade/engine/user_sql.h"
#include "skade/sql/lake_sql.h"

namespace skade::capi {
namespace {

// The lake's LakeSql, made at the first call. DuckDB names its in-memory default catalog
// "memory": the views live there, as in `skade sql`.
Result<sql::LakeSql*> LakeSqlOf(LakeState& state) {
  std::lock_guard<std::mutex> lock(state.sql_mu);
  if (state.sql == nullptr) {
    SKADE_ASSIGN_OR_RETURN(state.sql, sql::LakeSql::Open(*state.catalog, *state.io, *state.db, "memory"));
    state.sql->set_write_observer(state.failed_writes.get());
  }
  return state.sql.get();
}

Status RunSql(skade_lake* lake, const char* text, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(std::string sql, Required(text, "statement"));
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
  if (statement.parameter_count > 0) {
    return Status::InvalidArgument("the statement has parameter markers; skade_sql takes no parameters");
  }
  SKADE_ASSIGN_OR_RETURN(sql::LakeSql * views, LakeSqlOf(*state));
  if (statement.is_write()) {
    SKADE_ASSIGN_OR_RETURN(int64_t rows, views->ExecuteWrite(statement, sql::Session{"", ""}));
    std::vector<arrow::ArrayBuilder> columns;
    columns.emplace_back("statement", "u", false);
    columns.emplace_back("rows", "l", false);
    arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(columns));
    b.AppendStruct();
    b.child(0).AppendString(statement.type_name);
    b.child(1).AppendInt(rows);
    return ExportBuilt(std::move(state), b, out);
  }
  if (statement.use_schema) {
    return Status::InvalidArgument("USE does not apply here: each skade_sql statement stands alone; name tables "
                                   "with their namespace (ns.table, \"a.b\".table)");
  }
  if (statement.kind == engine::Statement::Kind::kOther) {
    return Status::InvalidArgument(statement.type_name +
                                   " statements do not run here: skade_sql runs queries, COPY … TO exports and the "
                                   "Iceberg write statements (INSERT, UPDATE, DELETE, MERGE, CREATE/DROP TABLE, "
                                   "VIEW and SCHEMA)");
  }
  // The lake's tables as views, AT (…) snapshots and the lake's listings substituted: the
  // resolution `skade sql` and Flight SQL use.
  SKADE_ASSIGN_OR_RETURN(std::string query, views->ResolveQuery(sql, ""));
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, state->db->QueryArrow(query));
  Export(std::move(state), std::move(stream), out);
  return Status::Ok();
}

}  // namespace
}  // namespace skade::capi

extern "C" {

int skade_sql(skade_lake* lake, const char* statement, ArrowArrayStream* out) {
  return skade::capi::Report(skade::capi::RunSql(lake, statement, out));
}

}  // extern "C"
