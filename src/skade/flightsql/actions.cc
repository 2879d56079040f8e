// DoAction: prepared statements (create, close), cancellation and session options.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/engine/user_sql.h"
#include "skade/flightsql/backend_internal.h"

namespace skade::flightsql {
namespace {

// The parameter schema as CreatePreparedStatement announces it. Timestamps and times are
// announced in milliseconds: the Flight SQL JDBC driver (DBeaver's) writes a java.sql
// Timestamp or Time as epoch milliseconds into whatever unit the schema names, so a finer unit
// would store 2024-03-10 as 1970-01-20. Binding takes any unit (BindParameters), so a client
// that sends microseconds still keeps them.
Result<std::string> AnnouncedParameterSchema(ArrowSchema& parameters) {
  std::vector<std::string> formats;
  formats.reserve(static_cast<size_t>(parameters.n_children));  // no reallocation: c_str() stays valid
  std::vector<std::pair<ArrowSchema*, const char*>> originals;
  for (int64_t i = 0; i < parameters.n_children; ++i) {
    ArrowSchema* field = parameters.children[i];
    const std::string_view f = field->format;
    if (f.starts_with("tsu:") || f.starts_with("tsn:")) {
      formats.push_back("tsm:" + std::string(f.substr(4)));
    } else if (f == "ttu" || f == "ttn") {
      formats.push_back("ttm");
    } else {
      continue;
    }
    originals.emplace_back(field, field->format);
    field->format = formats.back().c_str();
  }
  Result<std::string> bytes = SerializeSchema(parameters);
  // The schema's own release frees what its producer allocated: its own format strings back.
  for (const auto& [field, format] : originals) field->format = format;
  return bytes;
}

}  // namespace

Result<std::shared_ptr<PreparedStatement>> Backend::Prepare(const std::string& principal, const std::string& schema,
                                                            const std::string& sql,
                                                            pbsql::ActionCreatePreparedStatementResult* out) {
  auto prepared = std::make_shared<PreparedStatement>();
  prepared->principal = principal;
  prepared->sql = sql;
  prepared->schema = schema;
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
  SKADE_RETURN_IF_ERROR(RefuseConfigurationReads(statement));
  if (statement.is_write()) {
    if (options_.read_only) return ReadOnlyRefusal();
    // The types DuckDB gives the markers where the write uses them: clients that build their
    // parameter vectors from this schema (the Flight SQL JDBC driver) can then bind values
    // (a parameter of the null type takes only NULL there). Whatever type a client sends,
    // its values bind as that type and convert where the statement uses them.
    SKADE_ASSIGN_OR_RETURN(auto parameters, lake_.WriteParameters(sql, statement, sql::Session{schema, principal}));
    if (out != nullptr) {
      SKADE_ASSIGN_OR_RETURN(std::string bytes, AnnouncedParameterSchema(*parameters.get()));
      out->set_parameter_schema(std::move(bytes));
    }
    prepared->parameter_count = statement.parameter_count;
    prepared->write = std::move(statement);
    return prepared;
  }
  Caller caller;
  caller.principal = principal;
  SKADE_ASSIGN_OR_RETURN(auto con, Connect(caller, schema, sql));
  SKADE_ASSIGN_OR_RETURN(auto stmt, PrepareQuery(schema, *con, sql));
  prepared->parameter_count = stmt->parameter_count();
  if (out == nullptr) return prepared;
  SKADE_ASSIGN_OR_RETURN(auto dataset, ResultSchemaOrEmpty(*stmt));
  SKADE_ASSIGN_OR_RETURN(auto parameters, stmt->ParameterSchema());
  ArrowSchema annotated;
  AnnotateResultSchema(*dataset.get(), &annotated, stmt.columns);
  arrow::SchemaHandle owned(&annotated);
  SKADE_ASSIGN_OR_RETURN(std::string dataset_bytes, SerializeSchema(*owned.get()));
  out->set_dataset_schema(std::move(dataset_bytes));
  SKADE_ASSIGN_OR_RETURN(std::string bytes, AnnouncedParameterSchema(*parameters.get()));
  out->set_parameter_schema(std::move(bytes));
  return prepared;
}

GStatus Backend::CreatePrepared(const Caller& caller, const pbsql::ActionCreatePreparedStatementRequest& request,
                                pbsql::ActionCreatePreparedStatementResult* out) {
  if (request.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  auto prepared = Prepare(caller.principal, caller.schema(), request.query(), out);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  out->set_prepared_statement_handle(registry_.AddPrepared(std::move(*prepared)));
  return GStatus::OK;
}

GStatus Backend::ClosePrepared(const Caller& caller, const pbsql::ActionClosePreparedStatementRequest& request) {
  return ToGrpc(registry_.ClosePrepared(request.prepared_statement_handle(), caller.principal));
}

Result<pb::CancelStatus> Backend::Cancel(const Caller& caller, const pb::FlightInfo& info) {
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
    SKADE_ASSIGN_OR_RETURN(CancelOutcome outcome, registry_.Cancel(handle, caller.principal));
    if (outcome == CancelOutcome::kCancelled) {
      result = pb::CANCEL_STATUS_CANCELLED;
    } else if (outcome == CancelOutcome::kCancelling && result != pb::CANCEL_STATUS_CANCELLED) {
      // Recorded for the instances that may run it; none ran here (the client may ask again).
      result = pb::CANCEL_STATUS_CANCELLING;
    }
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
