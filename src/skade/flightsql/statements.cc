// Queries: FlightInfo for statements and prepared statements, DoGet streaming of results and
// metadata, query timeouts and cancellation.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/base/ascii.h"
#include "skade/flightsql/backend_internal.h"
#include "skade/sql/client_query.h"

namespace skade::flightsql {

namespace {

// The result of a write statement sent as a query: one row of one BIGINT column "Count", the
// rows it changed. That is DuckDB's own answer to INSERT, UPDATE and DELETE (and so what the
// Flight SQL servers built on DuckDB send), and it gives clients that run every statement as a
// query (ADBC's DB-API execute()) a result set to read.
Status ChangedRowsResult(int64_t changed, ArrowSchema* schema, ArrowArray* batch) {
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("Count", "l", false);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(changed);
  return b.Finish(schema, batch);
}

// The value of row `i` of a utf8 or large utf8 array; nullopt for a null or another type.
std::optional<std::string> TextAt(const ArrowSchema& field, const ArrowArray& a, int64_t i) {
  const std::string_view format = field.format;
  if (format != "u" && format != "U") return std::nullopt;
  const int64_t at = a.offset + i;
  if (a.null_count != 0 && a.buffers[0] != nullptr &&
      !((static_cast<const uint8_t*>(a.buffers[0])[at / 8] >> (at % 8)) & 1)) {
    return std::nullopt;
  }
  int64_t begin = 0, end = 0;
  if (format == "u") {
    begin = static_cast<const int32_t*>(a.buffers[1])[at];
    end = static_cast<const int32_t*>(a.buffers[1])[at + 1];
  } else {
    begin = static_cast<const int64_t*>(a.buffers[1])[at];
    end = static_cast<const int64_t*>(a.buffers[1])[at + 1];
  }
  return std::string(static_cast<const char*>(a.buffers[2]) + begin, static_cast<size_t>(end - begin));
}

// Whether any column of `schema` has the null type: DuckDB's stand-in for a column whose type
// it can only tell once the parameters are bound.
bool HasUntypedColumn(const ArrowSchema& schema) {
  for (int64_t i = 0; i < schema.n_children; ++i) {
    if (std::string_view(schema.children[i]->format) == "n") return true;
  }
  return false;
}

// One result column as DESCRIBE names it.
struct DescribedColumn {
  std::string name;
  std::string type;  // DuckDB's spelling, e.g. "ENUM('a', 'b')"
};

// Runs the DESCRIBE statement `describe` (its parameters bound, if any) and reads its rows to
// the end, before the connection prepares anything else (that would end them).
Result<std::vector<DescribedColumn>> ReadDescribe(engine::PreparedStatement& describe) {
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle rows, describe.ExecuteArrow());
  arrow::SchemaHandle row_schema;
  if (rows->get_schema(rows.get(), row_schema.get()) != 0 || row_schema->n_children < 2) {
    return Status::InvalidArgument("DESCRIBE gave no column names and types");
  }
  std::vector<DescribedColumn> out;
  while (true) {
    arrow::ArrayHandle batch;
    if (rows->get_next(rows.get(), batch.get()) != 0) {
      const char* err = rows->get_last_error(rows.get());
      return Status::InvalidArgument(std::string("DESCRIBE failed: ") + (err ? err : "no message"));
    }
    if (!batch.valid()) break;
    for (int64_t i = 0; i < batch->length; ++i) {
      auto name = TextAt(*row_schema->children[0], *batch->children[0], i);
      auto type = TextAt(*row_schema->children[1], *batch->children[1], i);
      if (!name || !type) return Status::InvalidArgument("DESCRIBE gave a column without a name or type");
      out.push_back(DescribedColumn{std::move(*name), std::move(*type)});
    }
  }
  return out;
}

// DuckDB's spelling of the result types of `sql` (a query without parameters; nothing of it
// runs) when a column of `result` NeedsSqlType; empty when none does or DuckDB cannot describe
// it (EXPLAIN, a statement with parameters): TYPE_NAME then comes from the Arrow types alone.
std::vector<std::string> SqlTypesFor(engine::Connection& con, const std::string& sql, const ArrowSchema& result) {
  bool needed = false;
  for (int64_t i = 0; i < result.n_children; ++i) needed = needed || NeedsSqlType(*result.children[i]);
  if (!needed) return {};
  auto describe = con.Prepare("DESCRIBE " + sql);
  if (!describe.ok() || (*describe)->parameter_count() != 0) return {};
  auto columns = ReadDescribe(**describe);
  if (!columns.ok() || static_cast<int64_t>(columns->size()) != result.n_children) return {};
  std::vector<std::string> types;
  for (auto& c : *columns) types.push_back(std::move(c.type));
  return types;
}

}  // namespace

Status RefuseConfigurationReads(const engine::Statement& statement) {
  return sql::RefuseConfigurationReads(statement);
}

Status CheckSqlSize(const std::string& sql) { return sql::CheckClientSqlSize(sql); }

Status ReadOnlyRefusal() { return Status(StatusCode::kPermissionDenied, "permission denied: the server is read-only"); }

Result<arrow::SchemaHandle> ResultSchemaOrEmpty(engine::PreparedStatement& stmt) {
  auto schema = stmt.ResultSchema();
  if (schema.ok()) return schema;
  auto b = arrow::RecordBatchBuilder({});
  arrow::SchemaHandle empty;
  arrow::ArrayHandle unused;
  SKADE_RETURN_IF_ERROR(b.Finish(empty.get(), unused.get()));
  return empty;
}

GStatus ToGrpc(const Status& st) {
  GCode code = GCode::INTERNAL;
  switch (st.code()) {
    case StatusCode::kOk: return GStatus::OK;
    case StatusCode::kInvalidArgument: code = GCode::INVALID_ARGUMENT; break;
    case StatusCode::kNotFound: code = GCode::NOT_FOUND; break;
    case StatusCode::kAlreadyExists: code = GCode::ALREADY_EXISTS; break;
    case StatusCode::kConflict: code = GCode::ABORTED; break;
    case StatusCode::kNotImplemented: code = GCode::UNIMPLEMENTED; break;
    case StatusCode::kUnauthorized: code = GCode::UNAUTHENTICATED; break;
    case StatusCode::kPermissionDenied: code = GCode::PERMISSION_DENIED; break;
    case StatusCode::kResourceExhausted: code = GCode::RESOURCE_EXHAUSTED; break;
    case StatusCode::kCancelled: code = GCode::CANCELLED; break;
    case StatusCode::kUnavailable: code = GCode::UNAVAILABLE; break;
    case StatusCode::kCorruption: code = GCode::DATA_LOSS; break;
    default: break;
  }
  return GStatus(code, st.message());
}

std::string PackAny(const google::protobuf::Message& m) {
  google::protobuf::Any any;
  any.PackFrom(m);
  return any.SerializeAsString();
}

Backend::Backend(sql::LakeSql& lake, const ServerOptions& options)
    : lake_(lake),
      options_(options),
      budget_(options.buffer_budget_bytes),
      registry_(RegistryLimits{options.max_sessions, options.max_pending_queries, options.max_prepared,
                               options.session_idle_timeout, options.sealer, options.handle_lifetime,
                               options.max_handle_params_bytes, &lake.catalog(), options.max_shared_params_bytes,
                               options.max_shared_params_bytes_per_principal}),
      streams_(StreamLimits{options.max_streams_per_client, options.max_streams, options.stall_timeout}) {
  registry_.set_reprepare([this](const PreparedStatement& sealed) -> Result<std::shared_ptr<const PreparedStatement>> {
    SKADE_ASSIGN_OR_RETURN(auto prepared, Prepare(sealed.principal, sealed.schema, sealed.sql, nullptr));
    return std::shared_ptr<const PreparedStatement>(std::move(prepared));
  });
  facts_.version = options.version;
  facts_.read_only = options.read_only;
  facts_.statement_timeout_ms = static_cast<int>(options.query_timeout.count() * 1000);
  facts_.schema_cache = &schema_cache_;
}

Result<std::unique_ptr<engine::Connection>> Backend::Connect(const Caller& caller, const std::string& schema,
                                                             const std::string& sql) {
  SKADE_ASSIGN_OR_RETURN(auto con, lake_.db().Connect());
  // The same session setup as the caller's writes get (RunUpdate): its schema, its user.
  SKADE_RETURN_IF_ERROR(lake_.SetUp(*con, sql::Session{schema, caller.principal}, sql));
  return con;
}

Result<PreparedQuery> Backend::PrepareQuery(const std::string& schema, engine::Connection& con,
                                            const std::string& sql) {
  // Classified from DuckDB's parse tree before anything runs; exactly one statement.
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, sql::ClassifyClientSql(sql));
  if (statement.is_write()) {
    if (options_.read_only) return ReadOnlyRefusal();
    return Status::InvalidArgument("a write statement cannot run as a query; send it as CommandStatementUpdate");
  }
  // The lake's tables current, AT (…) snapshots and the lake's listings substituted; only what
  // DuckDB prepares as a query runs (the rules every client's SQL meets, sql/client_query.h).
  SKADE_ASSIGN_OR_RETURN(sql::PreparedRead read, sql::PrepareReadQuery(lake_, con, schema, sql, statement));
  const std::string& resolved = read.resolved;
  PreparedQuery query;
  query.stmt = std::move(read.stmt);
  auto result = query->ResultSchema();
  if (result.ok()) {
    if (!statement.source_table.empty()) {
      query.columns.required = RequiredColumns(statement, schema, (*result)->n_children);
    }
    query.columns.sql_types = SqlTypesFor(con, resolved, *result->get());
  }
  return query;
}

std::vector<bool> Backend::RequiredColumns(const engine::Statement& statement, const std::string& schema,
                                           int64_t columns) {
  auto ident = lake_.Resolve(statement.source_table, schema);
  if (!ident.ok()) return {};
  auto state = lake_.catalog().LoadTable(*ident);
  if (!state.ok()) return {};
  iceberg::SchemaPtr table = state->metadata->CurrentSchema();
  if (!table) return {};
  std::vector<bool> required;
  for (const std::string& column : statement.passthrough_columns) {
    if (column == "*") {
      for (const auto& f : table->fields()) required.push_back(f.required);
      continue;
    }
    bool known = false;
    for (const auto& f : table->fields()) {
      // DuckDB resolves column names case-insensitively.
      if (!column.empty() && EqualsIgnoreAsciiCase(f.name, column)) {
        known = f.required;
      }
    }
    required.push_back(known);
  }
  // Anything unexpected (a view of another shape): claim nothing.
  if (static_cast<int64_t>(required.size()) != columns) return {};
  return required;
}

GStatus Backend::FillInfo(const pb::FlightDescriptor& desc, const ArrowSchema& schema, const std::string& ticket,
                          pb::FlightInfo* out, bool annotate, const ResultColumns& columns) {
  ArrowSchema annotated;
  AnnotateResultSchema(schema, &annotated, columns);
  arrow::SchemaHandle owned(&annotated);
  auto bytes = SerializeSchema(annotate ? *owned.get() : schema);
  if (!bytes.ok()) return ToGrpc(bytes.status());
  out->set_schema(*bytes);
  *out->mutable_flight_descriptor() = desc;
  out->add_endpoint()->mutable_ticket()->set_ticket(ticket);
  out->set_total_records(-1);
  out->set_total_bytes(-1);
  return GStatus::OK;
}

GStatus Backend::MetadataInfo(const google::protobuf::Any& command, const pb::FlightDescriptor& desc,
                              pb::FlightInfo* out) {
  auto stream = MetadataResult(command, lake_, facts_, true);
  if (!stream.ok()) return ToGrpc(stream.status());
  arrow::SchemaHandle schema;
  (*stream)->get_schema(stream->get(), schema.get());
  return FillInfo(desc, *schema.get(), desc.cmd(), out, false);
}

GStatus Backend::StatementInfo(const Caller& caller, const pbsql::CommandStatementQuery& command,
                               const pb::FlightDescriptor& desc, InfoUse use, pb::FlightInfo* out) {
  if (command.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  const std::string schema_name = caller.schema();
  if (Status size = CheckSqlSize(command.query()); !size.ok()) return ToGrpc(size);
  auto statement = engine::ParseStatement(command.query());
  if (!statement.ok()) return ToGrpc(statement.status());
  if (statement->is_write()) {
    if (use == InfoUse::kSchemaOnly) {
      // The same refusals as running it would meet, without running it.
      if (Status refused = RefuseConfigurationReads(*statement); !refused.ok()) return ToGrpc(refused);
      if (options_.read_only) return ToGrpc(ReadOnlyRefusal());
      return WriteInfo(caller, schema_name, std::nullopt, desc, out);
    }
    // Executing the command runs the write, once, as CommandStatementUpdate would.
    std::unique_ptr<Registry::Run> run = StartUpdateRun(caller.principal);
    auto changed = RunUpdate(*run, sql::Session{schema_name, caller.principal}, command.query());
    if (!changed.ok()) return QueryFailure(*run, changed.status());
    return WriteInfo(caller, schema_name, *changed, desc, out);
  }
  auto con = Connect(caller, schema_name, command.query());
  if (!con.ok()) return ToGrpc(con.status());
  auto stmt = PrepareQuery(schema_name, **con, command.query());
  if (!stmt.ok()) return ToGrpc(stmt.status());
  auto schema = ResultSchemaOrEmpty(**stmt);
  if (!schema.ok()) return ToGrpc(schema.status());
  std::string handle = registry_.AddQuery(PendingQuery{caller.principal, command.query(), schema_name});
  pbsql::TicketStatementQuery ticket;
  ticket.set_statement_handle(handle);
  return FillInfo(desc, *schema->get(), PackAny(ticket), out, true, stmt->columns);
}

GStatus Backend::PreparedInfo(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command,
                              const pb::FlightDescriptor& desc, InfoUse use, pb::FlightInfo* out) {
  const std::string& handle = command.prepared_statement_handle();
  auto prepared = registry_.FindPrepared(handle, caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  std::shared_ptr<const ParamSet> params = registry_.Params(handle);
  if ((*prepared)->write) {
    // An update executed as a query: it runs now, with the parameters bound by DoPut (once per
    // row), through the update path (CommandPreparedStatementUpdate's); the ticket fetches its
    // count and never runs it again.
    if (use == InfoUse::kSchemaOnly) return WriteInfo(caller, (*prepared)->schema, std::nullopt, desc, out);
    if ((*prepared)->parameter_count > 0 && !params) {
      return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement has parameters; bind them with DoPut first");
    }
    std::unique_ptr<Registry::Run> run = StartUpdateRun(caller.principal);
    auto changed = RunPreparedUpdate(*run, **prepared, params.get());
    if (!changed.ok()) return QueryFailure(*run, changed.status());
    return WriteInfo(caller, (*prepared)->schema, *changed, desc, out);
  }
  auto con = Connect(caller, (*prepared)->schema, (*prepared)->sql);
  if (!con.ok()) return ToGrpc(con.status());
  auto stmt = PrepareQuery((*prepared)->schema, **con, (*prepared)->sql);
  if (!stmt.ok()) return ToGrpc(stmt.status());
  auto schema = ResultSchemaOrEmpty(**stmt);
  if (!schema.ok()) return ToGrpc(schema.status());
  // The stream (StreamQuery) runs the statement with the first parameter row bound and sends
  // the schema of that result. DuckDB types a parameter from the value bound to it and re-plans
  // the statement then, so a result column that depends on one (SELECT ? AS v, coalesce(?, 1))
  // may have another type, or before binding none at all (one column "unknown" of the null
  // type). Clients compare this schema with the stream's (ADBC refuses the result when they
  // differ), so it is the one of the statement as bound.
  if (params && (*stmt)->parameter_count() > 0 && params->rows() > 0) {
    auto bound = BoundResultSchema(**con, **stmt, (*prepared)->sql, *params);
    if (bound.ok()) return FillInfo(desc, *bound->get(), desc.cmd(), out, true, stmt->columns);
    if (HasUntypedColumn(*schema->get())) {
      // DuckDB cannot describe it (a statement DESCRIBE does not take, such as EXPLAIN): no
      // schema rather than a wrong one; clients then take the stream's.
      GStatus filled = FillInfo(desc, *schema->get(), desc.cmd(), out, true, stmt->columns);
      out->clear_schema();
      return filled;
    }
  }
  return FillInfo(desc, *schema->get(), desc.cmd(), out, true, stmt->columns);
}

Result<arrow::SchemaHandle> Backend::BoundResultSchema(engine::Connection& con, const engine::PreparedStatement& stmt,
                                                       const std::string& sql, const ParamSet& params) {
  // DESCRIBE of the statement with the same values bound binds it as running it would, and
  // runs nothing of it; its column types become an Arrow schema through DuckDB's own Arrow
  // conversion (the stream's) of an empty SELECT of typed NULLs.
  SKADE_ASSIGN_OR_RETURN(auto describe, con.Prepare("DESCRIBE " + sql));
  if (describe->parameter_count() != stmt.parameter_count() || params.batches.empty()) {
    return Status::InvalidArgument("the statement cannot be described with its parameters");
  }
  SKADE_RETURN_IF_ERROR(describe->BindRow(*params.schema.get(), *params.batches.front().get(), 0));
  SKADE_ASSIGN_OR_RETURN(std::vector<DescribedColumn> columns, ReadDescribe(*describe));
  std::string select;
  for (const DescribedColumn& c : columns) {
    select += (select.empty() ? "SELECT " : ", ") + ("CAST(NULL AS " + c.type + ") AS ") +
              engine::QuoteIdentifier(c.name);
  }
  if (select.empty()) return Status::InvalidArgument("DESCRIBE gave no columns");
  // The type names are DuckDB's renderings (a struct's field names quoted): the text is one
  // query of constants, which is checked before anything prepares it.
  SKADE_ASSIGN_OR_RETURN(engine::Statement typed, engine::ParseStatement(select));
  if (typed.kind != engine::Statement::Kind::kQuery || !typed.reads_configuration.empty() ||
      !typed.runs_sql_text.empty() ||
      typed.parameter_count != 0) {
    return Status::InvalidArgument("DESCRIBE gave type names that do not render as a query of constants");
  }
  SKADE_ASSIGN_OR_RETURN(auto typed_stmt, con.Prepare(select));
  return typed_stmt->ResultSchema();
}

GStatus Backend::WriteInfo(const Caller& caller, const std::string& schema, std::optional<int64_t> changed,
                           const pb::FlightDescriptor& desc, pb::FlightInfo* out) {
  arrow::SchemaHandle result_schema;
  arrow::ArrayHandle unused;
  if (Status built = ChangedRowsResult(changed.value_or(0), result_schema.get(), unused.get()); !built.ok()) {
    return ToGrpc(built);
  }
  if (!changed) return FillInfo(desc, *result_schema.get(), "", out, true);  // GetSchema: no ticket
  PendingQuery ran{caller.principal, "", schema};
  ran.changed_rows = *changed;
  pbsql::TicketStatementQuery ticket;
  ticket.set_statement_handle(registry_.AddQuery(std::move(ran)));
  GStatus filled = FillInfo(desc, *result_schema.get(), PackAny(ticket), out, true);
  // ADBC reports FlightInfo.total_records as the rows a statement affected (DB-API's
  // cursor.rowcount after execute()); for a write that is the count, not the result's one row.
  out->set_total_records(*changed);
  return filled;
}

GStatus Backend::SendChangedRows(const Caller& caller, int64_t changed, DataWriter* writer) {
  arrow::SchemaHandle schema;
  arrow::ArrayHandle batch;
  if (Status built = ChangedRowsResult(changed, schema.get(), batch.get()); !built.ok()) return ToGrpc(built);
  // Annotated as FillInfo annotates the announced schema, so the two are the same.
  ArrowSchema annotated;
  AnnotateResultSchema(*schema.get(), &annotated);
  arrow::SchemaHandle owned(&annotated);
  auto encoder = arrow::ipc::StreamEncoder::Make(*owned.get());
  if (!encoder.ok()) return ToGrpc(encoder.status());
  if (!WriteToClient(caller, writer, RawFlightData{(*encoder)->SchemaMessage(), "", false})) {
    return GStatus(GCode::CANCELLED, "client went away");
  }
  auto messages = (*encoder)->EncodeBatch(std::move(batch));
  if (!messages.ok()) return ToGrpc(messages.status());
  for (auto& m : *messages) {
    if (!WriteToClient(caller, writer, RawFlightData{std::move(m), "", false})) {
      return GStatus(GCode::CANCELLED, "client went away");
    }
  }
  return GStatus::OK;
}

bool Backend::WriteToClient(const Caller& caller, DataWriter* writer, RawFlightData data, grpc::WriteOptions options) {
  if (caller.stream == nullptr) return writer->Write(data, options);
  auto wait = caller.stream->WaitForClient();
  return writer->Write(data, options);
}

GStatus Backend::GetMetadata(const Caller& caller, const google::protobuf::Any& command, DataWriter* writer) {
  auto stream = MetadataResult(command, lake_, facts_, false);
  if (!stream.ok()) return ToGrpc(stream.status());
  arrow::SchemaHandle schema;
  (*stream)->get_schema(stream->get(), schema.get());
  auto encoder = arrow::ipc::StreamEncoder::Make(*schema.get());
  if (!encoder.ok()) return ToGrpc(encoder.status());
  if (!WriteToClient(caller, writer, RawFlightData{(*encoder)->SchemaMessage(), "", false})) {
    return GStatus(GCode::CANCELLED, "client went away");
  }
  while (true) {
    arrow::ArrayHandle batch;
    if ((*stream)->get_next(stream->get(), batch.get()) != 0) {
      const char* err = (*stream)->get_last_error(stream->get());
      return GStatus(GCode::INTERNAL, err ? err : "metadata query failed");
    }
    if (!batch.valid()) break;
    auto messages = (*encoder)->EncodeBatch(std::move(batch));
    if (!messages.ok()) return ToGrpc(messages.status());
    for (auto& m : *messages) {
      if (!WriteToClient(caller, writer, RawFlightData{std::move(m), "", false})) {
        return GStatus(GCode::CANCELLED, "client went away");
      }
    }
  }
  return GStatus::OK;
}

GStatus Backend::GetStatement(const Caller& caller, const pbsql::TicketStatementQuery& ticket, DataWriter* writer) {
  // Running before the ticket is looked up: a cancel from now on stops this DoGet.
  std::unique_ptr<Registry::Run> run = registry_.StartRun(ticket.statement_handle(), caller.principal);
  auto query = registry_.FindQuery(ticket.statement_handle(), caller.principal);
  if (!query.ok()) return ToGrpc(query.status());
  GStatus st = query->changed_rows ? SendChangedRows(caller, *query->changed_rows, writer)
                                   : StreamQuery(caller, *run, query->schema, query->sql, nullptr, writer);
  if (st.ok()) registry_.MarkFetched(ticket.statement_handle());
  return st;
}

GStatus Backend::GetPrepared(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command,
                             DataWriter* writer) {
  const std::string& handle = command.prepared_statement_handle();
  // Read before the run starts: a cancel another instance records once it has started changes
  // it, however soon (WatchCancels below).
  Result<std::string> cancel_mark = registry_.CancelMark(handle, caller.principal);
  if (!cancel_mark.ok()) return ToGrpc(cancel_mark.status());
  std::unique_ptr<Registry::Run> run = registry_.StartRun(handle, caller.principal);
  auto prepared = registry_.FindPrepared(handle, caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  if ((*prepared)->write) {
    // Its GetFlightInfo runs it and answers a ticket of its own; this one would run it again.
    return GStatus(GCode::INVALID_ARGUMENT,
                   "the prepared statement is an update: GetFlightInfo runs it, and its FlightInfo's ticket fetches "
                   "the result");
  }
  std::shared_ptr<const ParamSet> params = registry_.Params(handle);
  if ((*prepared)->parameter_count > 0 && !params) {
    return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement has parameters; bind them with DoPut first");
  }
  // A cancel of the handle sent to another instance interrupts this run too.
  registry_.WatchCancels(*run, std::move(cancel_mark).value());
  return StreamQuery(caller, *run, (*prepared)->schema, (*prepared)->sql, params.get(), writer);
}

GStatus Backend::StreamQuery(const Caller& caller, Registry::Run& run, const std::string& schema,
                             const std::string& sql, const ParamSet* params, DataWriter* writer) {
  auto con = Connect(caller, schema, sql);
  if (!con.ok()) return ToGrpc(con.status());
  auto stmt = PrepareQuery(schema, **con, sql);
  if (!stmt.ok()) return ToGrpc(stmt.status());
  const Registry::Run::Stop stopped_before = run.Attach(con->get());
  // The run outlives this connection: it must not interrupt it once it is closed.
  struct Detach {
    Registry::Run& run;
    ~Detach() { run.Attach(nullptr); }
  } detach{run};
  if (stopped_before != Registry::Run::Stop::kNone) return QueryFailure(run, Status::Cancelled("stopped before it ran"));
  // The client leaving, its deadline passing or its stalling interrupts the query within the
  // monitor's period (gRPC would only tell a blocked writer, and a query computing an
  // aggregate writes nothing for a long time).
  std::unique_ptr<ActiveStream::Watch> watch;
  if (caller.stream != nullptr) watch = caller.stream->OnEnd([&run] { run.Cancel(); });
  std::unique_ptr<arrow::ipc::StreamEncoder> encoder;
  // The stream's schema message, from the first result (or the prepared statement's schema).
  auto start = [&](const ArrowSchema& result_schema) -> GStatus {
    ArrowSchema annotated;
    AnnotateResultSchema(result_schema, &annotated, stmt->columns);
    arrow::SchemaHandle owned(&annotated);
    auto made = arrow::ipc::StreamEncoder::Make(*owned.get());
    if (!made.ok()) return ToGrpc(made.status());
    encoder = std::move(*made);
    if (!WriteToClient(caller, writer, RawFlightData{encoder->SchemaMessage(), "", false})) {
      return GStatus(GCode::CANCELLED, "client went away");
    }
    return GStatus::OK;
  };
  // Without parameters the statement runs once; with them once per parameter row (all rows'
  // results in one stream).
  const bool bound = params != nullptr && (*stmt)->parameter_count() > 0;
  const int64_t rows = bound ? params->rows() : 1;
  size_t batch_index = 0;
  int64_t row_in_batch = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (bound) {
      while (row_in_batch >= params->batches[batch_index]->length) {
        ++batch_index;
        row_in_batch = 0;
      }
      Status st = (*stmt)->BindRow(*params->schema.get(), *params->batches[batch_index].get(), row_in_batch++);
      if (!st.ok()) return ToGrpc(st);
    }
    // Every record batch costs a message, a wake-up on each side and a decode in the client:
    // after a first small one (the first rows at once) batches grow to 64k rows or about 1 MiB.
    // The byte bound keeps a message of joined chunks well below 4 MiB, the largest message
    // gRPC clients accept unless told otherwise, so clients that took each chunk still take
    // each batch.
    auto stream = (*stmt)->ExecuteArrow(engine::ArrowBatching{.first_rows = 2048, .max_rows = 65536, .max_bytes = 1 << 20});
    if (!stream.ok()) return QueryFailure(run, stream.status());
    // DuckDB clears a connection's interrupt when a statement starts: a cancel or timeout that
    // came since Attach (or between parameter rows) is only in the run's record.
    if (run.stop() != Registry::Run::Stop::kNone) return QueryFailure(run, Status::Cancelled("stopped before it ran"));
    if (!encoder) {
      arrow::SchemaHandle result_schema;
      if ((*stream)->get_schema(stream->get(), result_schema.get()) != 0) {
        return GStatus(GCode::INTERNAL, "cannot read the result schema");
      }
      if (GStatus st = start(*result_schema.get()); !st.ok()) return st;
    }
    GStatus sent = SendBatches(caller, run, *stream->get(), *encoder, writer);
    if (!sent.ok()) return sent;
  }
  if (!encoder) {  // zero parameter rows: an empty result of the statement's schema
    auto result_schema = ResultSchemaOrEmpty(**stmt);
    if (!result_schema.ok()) return ToGrpc(result_schema.status());
    return start(*result_schema->get());
  }
  return GStatus::OK;
}

// Streams the batches of `stream`: a producer thread pulls them from DuckDB and encodes them
// into a small bounded queue while this thread writes to gRPC, so scanning and sending overlap;
// writes followed by already-queued ones carry gRPC's buffer hint (fewer flushes and wake-ups),
// the last one queued flushes. Queued batches count against the server's buffer budget: when
// it is spent the producer waits for room (or for its own queue to drain, so that every stream
// can always hold one batch and make progress).
GStatus Backend::SendBatches(const Caller& caller, Registry::Run& run, ArrowArrayStream& stream,
                             arrow::ipc::StreamEncoder& encoder, DataWriter* writer) {
  constexpr size_t kQueueBatches = 8;
  constexpr int kFlushEvery = 16;
  struct Queued {
    std::vector<arrow::ipc::EncodedMessage> messages;
    MemoryBudget::Reservation held;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Queued> queue;
  bool done = false;     // producer finished (status in `produced`)
  bool stopped = false;  // consumer gave up
  GStatus produced = GStatus::OK;
  std::thread producer([&] {
    GStatus result = GStatus::OK;
    while (true) {
      arrow::ArrayHandle batch;
      if (stream.get_next(&stream, batch.get()) != 0) {
        const char* err = stream.get_last_error(&stream);
        result = QueryFailure(run, Status::InvalidArgument(err ? err : "query failed"));
        break;
      }
      if (!batch.valid()) break;
      auto messages = encoder.EncodeBatch(std::move(batch));
      if (!messages.ok()) {
        result = ToGrpc(messages.status());
        break;
      }
      int64_t bytes = 0;
      for (const auto& m : *messages) bytes += m.body_length + static_cast<int64_t>(m.flatbuffer().size());
      std::unique_lock<std::mutex> lock(mu);
      MemoryBudget::Reservation held;
      while (!stopped) {
        if (queue.size() < kQueueBatches) {
          if (queue.empty()) {
            held = budget_.ReserveAnyway(bytes);
            break;
          }
          auto reserved = budget_.Reserve(bytes, "a result batch");
          if (reserved.ok()) {
            held = std::move(*reserved);
            break;
          }
        }
        // Room comes from this stream's consumer (notified) or another stream (polled).
        cv.wait_for(lock, std::chrono::milliseconds(10));
      }
      if (stopped) break;
      queue.push_back(Queued{std::move(*messages), std::move(held)});
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    produced = result;
    cv.notify_all();
  });
  GStatus result = GStatus::OK;
  int unflushed = 0;
  while (true) {
    Queued item;
    bool more = false;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !queue.empty() || done; });
      if (queue.empty()) break;
      item = std::move(queue.front());
      queue.pop_front();
      more = !queue.empty();
      cv.notify_all();
    }
    bool failed = false;
    for (size_t i = 0; i < item.messages.size() && !failed; ++i) {
      grpc::WriteOptions write_options;
      bool last = i + 1 == item.messages.size();
      if ((!last || more) && ++unflushed < kFlushEvery) {
        write_options.set_buffer_hint();
      } else {
        unflushed = 0;
      }
      failed = !WriteToClient(caller, writer, RawFlightData{std::move(item.messages[i]), "", options_.copy_batches},
                              write_options);
    }
    if (failed) {
      run.Cancel();
      result = GStatus(GCode::CANCELLED, caller.stream && caller.stream->ended() == StreamEnd::kStalled
                                             ? "the client read nothing for too long; the stream was ended"
                                             : "client went away");
      std::lock_guard<std::mutex> lock(mu);
      stopped = true;
      cv.notify_all();
      break;
    }
  }
  producer.join();
  return result.ok() ? produced : result;
}

GStatus Backend::QueryFailure(const Registry::Run& run, const Status& st) {
  switch (run.stop()) {
    case Registry::Run::Stop::kTimedOut:
      return GStatus(GCode::DEADLINE_EXCEEDED,
                     "the statement timed out after " + std::to_string(options_.query_timeout.count()) +
                         " s (the server's query timeout) and was stopped");
    case Registry::Run::Stop::kCancelled:
      return GStatus(GCode::CANCELLED, "query cancelled");
    case Registry::Run::Stop::kNone:
      break;
  }
  return ToGrpc(st);
}

}  // namespace skade::flightsql
