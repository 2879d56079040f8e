// Queries: FlightInfo for statements and prepared statements, DoGet streaming of results and
// metadata, query timeouts and cancellation.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/flightsql/backend_internal.h"

namespace skade::flightsql {

namespace {

}  // namespace

Status RefuseConfigurationReads(const engine::Statement& statement) {
  if (statement.reads_configuration.empty()) return Status::Ok();
  return Status(StatusCode::kPermissionDenied, "permission denied: " + statement.reads_configuration +
                                                   " shows the server's configuration, which clients may not read");
}

namespace {

Status NotAllowed(const std::string& type_name) {
  return Status(StatusCode::kPermissionDenied, "permission denied: " + type_name +
                                                   " statements are not allowed (only queries, and through "
                                                   "CommandStatementUpdate the Iceberg write statements)");
}

}  // namespace

Status CheckSqlSize(const std::string& sql) {
  constexpr size_t kMaxSqlBytes = 1 << 20;
  if (sql.size() <= kMaxSqlBytes) return Status::Ok();
  return Status::InvalidArgument("SQL text is " + std::to_string(sql.size()) + " bytes; the limit is 1 MiB");
}

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
      registry_(RegistryLimits{options.max_sessions, 1024, 4096, options.session_idle_timeout}),
      streams_(StreamLimits{options.max_streams_per_client, options.max_streams, options.stall_timeout}) {
  facts_.version = options.version;
  facts_.read_only = options.read_only;
  facts_.statement_timeout_ms = static_cast<int>(options.query_timeout.count() * 1000);
  facts_.schema_cache = &schema_cache_;
}

Result<std::unique_ptr<engine::Connection>> Backend::Connect(const Caller& caller, const std::string& schema,
                                                             const std::string& sql) {
  SKADE_ASSIGN_OR_RETURN(auto con, lake_.db().Connect());
  // current_user and its synonyms name the authenticated user, not DuckDB's "duckdb": temporary
  // macros of the connection come before the built-in functions. Only statements whose text
  // could name one of them pay for the four macros (every such name holds "user" or "role").
  auto mentions = [&sql](std::string_view word) {
    return std::search(sql.begin(), sql.end(), word.begin(), word.end(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           }) != sql.end();
  };
  if (!caller.principal.empty() && (mentions("user") || mentions("role"))) {
    const std::string user = engine::QuoteString(caller.principal);
    for (const char* name : {"current_user", "user", "session_user", "current_role"}) {
      SKADE_RETURN_IF_ERROR(con->Execute("CREATE OR REPLACE TEMP MACRO " + std::string(name) + "() AS " + user));
    }
  }
  SKADE_RETURN_IF_ERROR(lake_.Use(*con, schema));
  return con;
}

Result<PreparedQuery> Backend::PrepareQuery(const std::string& schema, engine::Connection& con,
                                            const std::string& sql) {
  SKADE_RETURN_IF_ERROR(CheckSqlSize(sql));
  // Classified from DuckDB's parse tree before anything runs; exactly one statement.
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
  SKADE_RETURN_IF_ERROR(RefuseConfigurationReads(statement));
  if (statement.is_write()) {
    if (options_.read_only) return ReadOnlyRefusal();
    return Status::InvalidArgument("a write statement cannot run as a query; send it as CommandStatementUpdate");
  }
  if (statement.kind != engine::Statement::Kind::kQuery && statement.kind != engine::Statement::Kind::kExplain) {
    return NotAllowed(statement.type_name);
  }
  SKADE_RETURN_IF_ERROR(lake_.SyncViews(sql, schema));
  PreparedQuery query;
  SKADE_ASSIGN_OR_RETURN(query.stmt, con.Prepare(sql));
  if (query->kind() != engine::StatementKind::kSelect && query->kind() != engine::StatementKind::kExplain) {
    return NotAllowed(query->kind_name());
  }
  if (!statement.source_table.empty()) {
    auto result = query->ResultSchema();
    if (result.ok()) query.required = RequiredColumns(statement, schema, (*result)->n_children);
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
      if (!column.empty() && f.name.size() == column.size() &&
          std::equal(f.name.begin(), f.name.end(), column.begin(),
                     [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                                 std::tolower(static_cast<unsigned char>(b)); })) {
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
                          pb::FlightInfo* out, bool annotate, const std::vector<bool>& required) {
  ArrowSchema annotated;
  AnnotateResultSchema(schema, &annotated, required);
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
                               const pb::FlightDescriptor& desc, pb::FlightInfo* out) {
  if (command.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
  const std::string schema_name = caller.schema();
  auto con = Connect(caller, schema_name, command.query());
  if (!con.ok()) return ToGrpc(con.status());
  auto stmt = PrepareQuery(schema_name, **con, command.query());
  if (!stmt.ok()) return ToGrpc(stmt.status());
  auto schema = ResultSchemaOrEmpty(**stmt);
  if (!schema.ok()) return ToGrpc(schema.status());
  std::string handle = registry_.AddQuery(PendingQuery{caller.principal, command.query(), schema_name});
  pbsql::TicketStatementQuery ticket;
  ticket.set_statement_handle(handle);
  return FillInfo(desc, *schema->get(), PackAny(ticket), out, true, stmt->required);
}

GStatus Backend::PreparedInfo(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command,
                              const pb::FlightDescriptor& desc, pb::FlightInfo* out) {
  auto prepared = registry_.FindPrepared(command.prepared_statement_handle(), caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  if ((*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is an update, not a query");
  auto con = Connect(caller, (*prepared)->schema, (*prepared)->sql);
  if (!con.ok()) return ToGrpc(con.status());
  auto stmt = PrepareQuery((*prepared)->schema, **con, (*prepared)->sql);
  if (!stmt.ok()) return ToGrpc(stmt.status());
  auto schema = ResultSchemaOrEmpty(**stmt);
  if (!schema.ok()) return ToGrpc(schema.status());
  return FillInfo(desc, *schema->get(), desc.cmd(), out, true, stmt->required);
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
  GStatus st = StreamQuery(caller, *run, query->schema, query->sql, nullptr, writer);
  if (st.ok()) registry_.MarkFetched(ticket.statement_handle());
  return st;
}

GStatus Backend::GetPrepared(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command,
                             DataWriter* writer) {
  const std::string& handle = command.prepared_statement_handle();
  std::unique_ptr<Registry::Run> run = registry_.StartRun(handle, caller.principal);
  auto prepared = registry_.FindPrepared(handle, caller.principal);
  if (!prepared.ok()) return ToGrpc(prepared.status());
  if ((*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is an update, not a query");
  std::shared_ptr<const ParamSet> params = registry_.Params(handle);
  if ((*prepared)->parameter_count > 0 && !params) {
    return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement has parameters; bind them with DoPut first");
  }
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
    AnnotateResultSchema(result_schema, &annotated, stmt->required);
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
    auto stream = (*stmt)->ExecuteArrow();
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
                     "query timed out after " + std::to_string(options_.query_timeout.count()) + " s");
    case Registry::Run::Stop::kCancelled:
      return GStatus(GCode::CANCELLED, "query cancelled");
    case Registry::Run::Stop::kNone:
      break;
  }
  return ToGrpc(st);
}

}  // namespace skade::flightsql
