// DoPut: statement updates, parameters bound to prepared statements (queries and updates), and
// bulk ingest into Iceberg tables.
#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/engine/user_sql.h"
#include "skade/flightsql/backend_internal.h"

namespace skade::flightsql {

namespace {

GStatus WriteResult(PutStream* stream, const std::string& metadata) {
  pb::PutResult r;
  r.set_app_metadata(metadata);
  if (!stream->Write(r)) return GStatus(GCode::CANCELLED, "client went away before the result");
  return GStatus::OK;
}

// Whether a DoPut input's failure reaches the client as itself: a budget or a cut-off client
// (malformed or unsupported input is the client's INVALID_ARGUMENT).
bool Passes(const Status& failure) {
  return failure.code() == StatusCode::kResourceExhausted || failure.code() == StatusCode::kCancelled;
}

GStatus UpdateResult(PutStream* stream, int64_t count) {
  pbsql::DoPutUpdateResult r;
  r.set_record_count(count);
  return WriteResult(stream, r.SerializeAsString());
}

}  // namespace

arrow::StreamHandle Backend::ReadBatches(const Caller& caller, const pb::FlightData& first, PutStream* stream,
                                         FlightDataBounds bounds) {
  // A message may decode into at most what the buffer budget has left (a compressed buffer
  // may claim 65536 times its size: nothing is allocated for a claim past the budget).
  if (!bounds.max_decoded_bytes) bounds.max_decoded_bytes = [this] { return budget_.available(); };
  // gRPC ends the reads of a cancelled call as if the client had finished: a client that went
  // away (or was cut off for stalling) must not have its partial input written.
  grpc::ServerContext* context = caller.context;
  bounds.check_end = [context] {
    if (context != nullptr && context->IsCancelled()) {
      return Status::Cancelled("the client went away before finishing its DoPut; nothing was written");
    }
    return Status::Ok();
  };
  ActiveStream* active = caller.stream;
  return FlightDataStream(
      first,
      [stream, active](pb::FlightData* m) {
        if (active == nullptr) return stream->Read(m);
        auto wait = active->WaitForClient();
        return stream->Read(m);
      },
      std::move(bounds));
}

Result<std::shared_ptr<ParamSet>> Backend::ReadParams(const Caller& caller, const pb::FlightData& first,
                                                      PutStream* stream) {
  auto set = std::make_shared<ParamSet>();
  Status failure;
  Status held;
  FlightDataBounds bounds;
  // Bound parameters stay in memory until the statement closes: they hold budget that long.
  bounds.decoded = [&](int64_t bytes) {
    auto reserved = budget_.Reserve(bytes, "the parameters");
    if (reserved.ok()) {
      set->held.push_back(std::move(*reserved));
    } else if (held.ok()) {
      held = reserved.status();
    }
  };
  bounds.failed = [&](const Status& st) { failure = st; };
  auto batches = ReadBatches(caller, first, stream, std::move(bounds));
  auto error = [&](const char* fallback) -> Status {
    if (Passes(failure)) return failure.WithContext("parameter stream");
    const char* err = batches->get_last_error(batches.get());
    return Status::InvalidArgument(std::string("parameter stream: ") + (err ? err : fallback));
  };
  if (batches->get_schema(batches.get(), set->schema.get()) != 0) return error("no schema");
  while (true) {
    arrow::ArrayHandle b;
    if (batches->get_next(batches.get(), b.get()) != 0) return error("bad batch");
    SKADE_RETURN_IF_ERROR(held);
    if (!b.valid()) break;
    if (b->length > 0) set->batches.push_back(std::move(b));
  }
  return set;
}

// SQL literals of every parameter row: DuckDB renders each value as text and names its type,
// and each literal is a CAST of the quoted text to that type (dictionary-encoded columns are
// decoded by DuckDB's Arrow scan, so values bind, not indices).
Result<std::vector<std::vector<std::string>>> Backend::ParamLiterals(const ParamSet& params) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& batch : params.batches) {
    // DuckDB reads a borrowed view of the batch (its release does nothing).
    ArrowArray view = *batch.get();
    view.release = [](ArrowArray* a) { a->release = nullptr; };
    std::vector<arrow::ArrayHandle> one;
    one.emplace_back(&view);
    ArrowSchema schema;
    arrow::CopySchema(*params.schema.get(), &schema);
    auto stream = arrow::MakeBatchStream(arrow::SchemaHandle(&schema), std::move(one));
    SKADE_ASSIGN_OR_RETURN(auto values,
                           lake_.db().QueryRowsWithArrow("__p", stream.get(),
                                                         "SELECT CAST(COLUMNS(*) AS VARCHAR), typeof(COLUMNS(*)) FROM __p"));
    for (const auto& row : values) {
      size_t n = row.size() / 2;
      std::vector<std::string> literals;
      for (size_t c = 0; c < n; ++c) {
        std::string type = row[n + c] ? *row[n + c] : "VARCHAR";
        literals.push_back(row[c] ? "CAST(" + engine::QuoteString(*row[c]) + " AS " + type + ")" : "NULL");
      }
      rows.push_back(std::move(literals));
    }
  }
  return rows;
}

std::unique_ptr<Registry::Run> Backend::StartUpdateRun(const std::string& principal) {
  return registry_.StartRun("update:" + std::to_string(++update_runs_), principal);
}

Result<int64_t> Backend::RunUpdate(Registry::Run& run, sql::Session session, const std::string& sql,
                                   std::span<const std::string> parameters) {
  session.interrupt = run.write_interrupt();
  SKADE_RETURN_IF_ERROR(CheckSqlSize(sql));
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql, parameters));
  SKADE_RETURN_IF_ERROR(RefuseConfigurationReads(statement));
  if (statement.is_write()) {
    if (options_.read_only) return ReadOnlyRefusal();
    return lake_.ExecuteWrite(statement, session);
  }
  if (statement.kind == engine::Statement::Kind::kQuery || statement.kind == engine::Statement::Kind::kExplain) {
    return Status::InvalidArgument("a query cannot run as an update; send it as CommandStatementQuery");
  }
  return Status(StatusCode::kPermissionDenied,
                "permission denied: " + statement.type_name + " statements are not allowed" +
                    (options_.read_only ? " (the server is read-only)"
                                        : "; supported: INSERT, UPDATE, DELETE, CREATE/DROP TABLE, CREATE/DROP SCHEMA"));
}

GStatus Backend::PutStatementUpdate(const Caller& caller, const pbsql::CommandStatementUpdate& command,
                                    const pb::FlightData& first, PutStream* stream) {
  if (command.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  // The statement carries no data: at most an empty schema (as some drivers send). Anything
  // else in the first message — a batch, a header that does not decode — is a malformed
  // request, refused before the statement runs.
  if (!first.data_header().empty() || !first.data_body().empty()) {
    arrow::ipc::MessageDecoder decoder;
    auto decoded = decoder.Decode(first.data_header(), first.data_body());
    if (!decoded.ok()) {
      return GStatus(GCode::INVALID_ARGUMENT, "CommandStatementUpdate: the message is not Arrow IPC: " +
                                                  decoded.status().message());
    }
    if (decoded->has_value() || !decoder.has_schema()) {
      return GStatus(GCode::INVALID_ARGUMENT, "CommandStatementUpdate carries no data; the client sent a record batch");
    }
  }
  std::unique_ptr<Registry::Run> run = StartUpdateRun(caller.principal);
  auto n = RunUpdate(*run, sql::Session{caller.schema(), caller.principal}, command.query());
  if (!n.ok()) return QueryFailure(*run, n.status());
  return UpdateResult(stream, *n);
}

Result<std::shared_ptr<const ParamSet>> Backend::ReadParamsFor(const Caller& caller, const PreparedStatement& prepared,
                                                                const pb::FlightData& first, PutStream* stream) {
  // Clients differ for statements without parameters: JDBC sends an empty schema and a 0-row
  // batch, Arrow C++ an empty schema alone, others only the descriptor. All mean "no values".
  if (first.data_header().empty() && prepared.parameter_count == 0) {
    pb::FlightData rest;
    auto read = [&] {
      if (caller.stream == nullptr) return stream->Read(&rest);
      auto wait = caller.stream->WaitForClient();
      return stream->Read(&rest);
    };
    while (read()) {
      if (!rest.data_header().empty()) {
        return Status::InvalidArgument("the prepared statement has no parameters; the client sent values");
      }
    }
    if (caller.context != nullptr && caller.context->IsCancelled()) {
      return Status::Cancelled("the client went away before finishing its DoPut; nothing ran");
    }
    return std::shared_ptr<const ParamSet>();
  }
  SKADE_ASSIGN_OR_RETURN(auto params, ReadParams(caller, first, stream));
  const int64_t columns = params->schema->n_children;
  if (prepared.parameter_count == 0) {
    if (columns != 0 || !params->batches.empty()) {
      return Status::InvalidArgument("the prepared statement has no parameters; the client sent values");
    }
    return std::shared_ptr<const ParamSet>();
  }
  if (columns != prepared.parameter_count) {
    return Status::InvalidArgument("parameter batch has " + std::to_string(columns) + " columns; the statement has " +
                                   std::to_string(prepared.parameter_count) + " parameters");
  }
  return std::shared_ptr<const ParamSet>(std::move(params));
}

GStatus Backend::PutPreparedQuery(const Caller& caller, const std::string& handle, const pb::FlightData& first,
                                  PutStream* stream) {
  auto prepared = registry_.FindPrepared(handle, caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  // An update statement may be executed as a query too (ADBC's DB-API execute() sends every
  // statement so): its parameters are kept like a query's and the statement runs, with them,
  // at GetFlightInfo (PreparedInfo). Read-only servers refuse it as PutPreparedUpdate does.
  if ((*prepared)->write && options_.read_only) return ToGrpc(ReadOnlyRefusal());
  auto params = ReadParamsFor(caller, **prepared, first, stream);
  if (!params.ok()) return ToGrpc(params.status());
  // Check every row of a query binds now, so a wrong parameter type fails here, not in DoGet.
  if (!(*prepared)->write && *params && !(*params)->batches.empty()) {
    auto con = Connect(caller, (*prepared)->schema, (*prepared)->sql);
    if (!con.ok()) return ToGrpc(con.status());
    auto stmt = PrepareQuery((*prepared)->schema, **con, (*prepared)->sql);
    if (!stmt.ok()) return ToGrpc(stmt.status());
    for (const auto& batch : (*params)->batches) {
      for (int64_t r = 0; r < batch->length; ++r) {
        Status bound = (*stmt)->BindRow(*(*params)->schema.get(), *batch.get(), r);
        if (!bound.ok()) return ToGrpc(bound);
      }
    }
  }
  // The answer names the handle to use from now on: one that carries small parameters, so that
  // the client's next call may go to any server of the deployment.
  auto bound = registry_.BindParams(handle, caller.principal, *params);
  if (!bound.ok()) return ToGrpc(bound.status());
  pbsql::DoPutPreparedStatementResult r;
  r.set_prepared_statement_handle(*bound);
  return WriteResult(stream, r.SerializeAsString());
}

GStatus Backend::PutPreparedUpdate(const Caller& caller, const std::string& handle, const pb::FlightData& first,
                                   PutStream* stream) {
  auto prepared = registry_.FindPrepared(handle, caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  if (!(*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is a query, not an update");
  if (options_.read_only) return ToGrpc(ReadOnlyRefusal());
  auto params = ReadParamsFor(caller, **prepared, first, stream);
  if (!params.ok()) return ToGrpc(params.status());
  std::unique_ptr<Registry::Run> run = StartUpdateRun(caller.principal);
  auto changed = RunPreparedUpdate(*run, **prepared, params->get());
  if (!changed.ok()) return QueryFailure(*run, changed.status());
  return UpdateResult(stream, *changed);
}

Result<int64_t> Backend::RunPreparedUpdate(Registry::Run& run, const PreparedStatement& prepared,
                                           const ParamSet* params) {
  // Without parameters the statement runs exactly once; with them once per row (none for none).
  std::vector<std::vector<std::string>> rows = {{}};
  if (params != nullptr) {
    SKADE_ASSIGN_OR_RETURN(rows, ParamLiterals(*params));
  }
  int64_t total = 0;
  for (const auto& row : rows) {
    if (run.stop() != Registry::Run::Stop::kNone) return Status::Cancelled("stopped before the next parameter row");
    SKADE_ASSIGN_OR_RETURN(int64_t n,
                           RunUpdate(run, sql::Session{prepared.schema, prepared.principal}, prepared.sql, row));
    total += n;
  }
  return total;
}

GStatus Backend::PutIngest(const Caller& caller, const pbsql::CommandStatementIngest& command,
                           const pb::FlightData& first, PutStream* stream) {
  if (options_.read_only) return ToGrpc(ReadOnlyRefusal());
  if (command.temporary()) return GStatus(GCode::INVALID_ARGUMENT, "temporary tables are not supported");
  if (command.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  std::vector<std::string> parts;
  if (command.has_catalog()) parts.push_back(command.catalog());
  if (command.has_schema() || command.has_catalog()) parts.push_back(command.schema());
  parts.push_back(command.table());
  auto ident = lake_.Resolve(parts, caller.schema());
  if (!ident.ok()) return ToGrpc(ident.status());
  using Opt = pbsql::CommandStatementIngest::TableDefinitionOptions;
  bool create = command.table_definition_options().if_not_exist() == Opt::TABLE_NOT_EXIST_OPTION_CREATE;
  auto if_exists = command.table_definition_options().if_exists();
  bool exists = lake_.catalog().LoadTable(*ident).ok();
  if (!exists && !create) return GStatus(GCode::NOT_FOUND, "table " + ident->ToString() + " does not exist");
  if (exists && if_exists != Opt::TABLE_EXISTS_OPTION_APPEND && if_exists != Opt::TABLE_EXISTS_OPTION_REPLACE) {
    return GStatus(GCode::ALREADY_EXISTS, "table " + ident->ToString() + " already exists");
  }
  sql::LakeSql::IngestMode mode = sql::LakeSql::IngestMode::kCreateAppend;
  if (if_exists == Opt::TABLE_EXISTS_OPTION_REPLACE) {
    mode = sql::LakeSql::IngestMode::kReplace;
  } else if (exists) {
    mode = sql::LakeSql::IngestMode::kAppend;
  }
  Status failure;
  FlightDataBounds bounds;
  bounds.failed = [&](const Status& st) { failure = st; };
  auto batches = ReadBatches(caller, first, stream, std::move(bounds));
  auto n = lake_.Ingest(*ident, batches.get(), mode);
  // The stream's own failure (a message past the budget, a stalled client) says more than
  // DuckDB's report of it.
  if (!n.ok() && Passes(failure)) return ToGrpc(failure.WithContext("ingest"));
  if (!n.ok()) return ToGrpc(n.status());
  return UpdateResult(stream, *n);
}

}  // namespace skade::flightsql
