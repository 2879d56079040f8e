// DoAction: prepared statements (create, close), cancellation and session options.
#include "skade/arrow/builder.h"
#include "skade/engine/user_sql.h"
#include "skade/flightsql/backend_internal.h"

namespace skade::flightsql {

namespace {

// The parameter schema of an update statement: one nullable column "1".."n" of type null (any
// value binds; DuckDB casts it to the column it goes to).
Result<std::string> UpdateParameterSchema(int64_t n) {
  std::vector<arrow::ArrayBuilder> columns;
  for (int64_t i = 0; i < n; ++i) columns.emplace_back(std::to_string(i + 1), "n", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  arrow::SchemaHandle schema;
  arrow::ArrayHandle unused;
  SKADE_RETURN_IF_ERROR(b.Finish(schema.get(), unused.get()));
  return SerializeSchema(*schema.get());
}

}  // namespace

GStatus Backend::CreatePrepared(const Caller& caller, const pbsql::ActionCreatePreparedStatementRequest& request,
                                pbsql::ActionCreatePreparedStatementResult* out) {
  if (request.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  auto prepared = std::make_shared<PreparedStatement>();
  prepared->principal = caller.principal;
  prepared->sql = request.query();
  prepared->schema = caller.schema();
  auto statement = engine::ParseStatement(request.query());
  if (!statement.ok()) return ToGrpc(statement.status());
  if (Status refused = RefuseConfigurationReads(*statement); !refused.ok()) return ToGrpc(refused);
  if (statement->is_write()) {
    if (options_.read_only) return ToGrpc(ReadOnlyRefusal());
    prepared->parameter_count = statement->parameter_count;
    prepared->write = std::move(*statement);
    auto bytes = UpdateParameterSchema(prepared->parameter_count);
    if (!bytes.ok()) return ToGrpc(bytes.status());
    out->set_parameter_schema(*bytes);
  } else {
    auto con = Connect(caller, prepared->schema, request.query());
    if (!con.ok()) return ToGrpc(con.status());
    auto stmt = PrepareQuery(prepared->schema, **con, request.query());
    if (!stmt.ok()) return ToGrpc(stmt.status());
    prepared->parameter_count = (*stmt)->parameter_count();
    auto dataset = ResultSchemaOrEmpty(**stmt);
    if (!dataset.ok()) return ToGrpc(dataset.status());
    auto parameters = (*stmt)->ParameterSchema();
    if (!parameters.ok()) return ToGrpc(parameters.status());
    ArrowSchema annotated;
    AnnotateResultSchema(*dataset->get(), &annotated, stmt->required);
    arrow::SchemaHandle owned(&annotated);
    auto dataset_bytes = SerializeSchema(*owned.get());
    if (!dataset_bytes.ok()) return ToGrpc(dataset_bytes.status());
    out->set_dataset_schema(*dataset_bytes);
    auto bytes = SerializeSchema(*parameters->get());
    if (!bytes.ok()) return ToGrpc(bytes.status());
    out->set_parameter_schema(*bytes);
  }
  out->set_prepared_statement_handle(registry_.AddPrepared(std::move(prepared)));
  return GStatus::OK;
}

GStatus Backend::ClosePrepared(const Caller& caller, const pbsql::ActionClosePreparedStatementRequest& request) {
  return ToGrpc(registry_.ClosePrepared(request.prepared_statement_handle(), caller.principal));
}

pb::CancelStatus Backend::Cancel(const Caller& caller, const pb::FlightInfo& info) {
  pb::CancelStatus result = pb::CANCEL_STATUS_NOT_CANCELLABLE;
  for (const auto& endpoint : info.endpoint()) {
    google::protobuf::Any ticket;
    if (!ticket.ParseFromString(endpoint.ticket().ticket())) continue;
    std::string handle;
    pbsql::TicketStatementQuery statement;
    pbsql::CommandPreparedStatementQuery prepared;
    if (IsFlightSqlCommand(ticket, "TicketStatementQuery") && ticket.UnpackTo(&statement)) {
      handle = statement.statement_handle();
    } else if (IsFlightSqlCommand(ticket, "CommandPreparedStatementQuery") && ticket.UnpackTo(&prepared)) {
      handle = prepared.prepared_statement_handle();
    }
    if (handle.empty()) continue;
    if (registry_.Cancel(handle, caller.principal) == CancelOutcome::kCancelled) result = pb::CANCEL_STATUS_CANCELLED;
  }
  return result;
}

void Backend::SetSessionOptions(Session& session, const pb::SetSessionOptionsRequest& request,
                                pb::SetSessionOptionsResult* out) {
  for (const auto& [name, value] : request.session_options()) {
    auto fail = [&](pb::SetSessionOptionsResult::ErrorValue e) { (*out->mutable_errors())[name].set_value(e); };
    if (name == "catalog") {
      if (!value.has_string_value() || value.string_value() != lake_.catalog_name()) {
        fail(pb::SetSessionOptionsResult::INVALID_VALUE);
      }
    } else if (name == "schema") {
      if (!value.has_string_value()) {
        fail(pb::SetSessionOptionsResult::INVALID_VALUE);
        continue;
      }
      const std::string& schema = value.string_value();
      if (!schema.empty()) {
        auto ns = sql::LakeSql::NamespaceOf(schema);
        auto exists = ns.ok() ? lake_.catalog().NamespaceExists(*ns) : Result<bool>(false);
        if (!exists.ok() || !*exists) {
          fail(pb::SetSessionOptionsResult::INVALID_VALUE);
          continue;
        }
      }
      session.set_schema(schema);
    } else {
      fail(pb::SetSessionOptionsResult::INVALID_NAME);
    }
  }
}

void Backend::GetSessionOptions(const Caller& caller, pb::GetSessionOptionsResult* out) {
  (*out->mutable_session_options())["catalog"].set_string_value(lake_.catalog_name());
  (*out->mutable_session_options())["schema"].set_string_value(caller.schema());
}

}  // namespace skade::flightsql
