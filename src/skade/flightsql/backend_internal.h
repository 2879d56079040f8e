// What the Flight SQL commands do, apart from how they arrive: server.cc authenticates a call,
// finds its session, decodes the command from its protobuf Any and hands it here.
//   statements.cc  queries: FlightInfo, DoGet streaming, timeouts and cancellation
//   do_put.cc      updates, parameter binding, bulk ingest
//   actions.cc     prepared statements, cancel, session options
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <google/protobuf/any.pb.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include "flight.pb.h"
#include "flight_sql.pb.h"
#include "skade/base/status.h"
#include "skade/flightsql/flight_data_internal.h"
#include "skade/flightsql/limits_internal.h"
#include "skade/flightsql/metadata_internal.h"
#include "skade/flightsql/registry_internal.h"
#include "skade/flightsql/server.h"

namespace skade::flightsql {

namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;
using GStatus = grpc::Status;
using GCode = grpc::StatusCode;
using DataWriter = grpc::ServerWriter<RawFlightData>;
using PutStream = grpc::ServerReaderWriter<pb::PutResult, pb::FlightData>;

// The one mapping of skade codes to gRPC codes.
GStatus ToGrpc(const Status& st);
std::string PackAny(const google::protobuf::Message& m);
// kInvalidArgument for SQL text over the server's limit (1 MiB), before anything parses it.
Status CheckSqlSize(const std::string& sql);
// The refusal of every write path on a --read-only server.
Status ReadOnlyRefusal();
// kPermissionDenied for a statement that reads the server's settings, files or databases.
Status RefuseConfigurationReads(const engine::Statement& statement);
// The result schema DuckDB can tell before running; an empty schema when it cannot (the
// stream's own schema message then describes the result).
Result<arrow::SchemaHandle> ResultSchemaOrEmpty(engine::PreparedStatement& stmt);

// A query ready to run, and what is known of its result columns beyond their Arrow types.
// Dereferences to its statement.
struct PreparedQuery {
  std::unique_ptr<engine::PreparedStatement> stmt;
  // required: per result column, a NOT NULL column of a catalog table passed through unchanged,
  // so the column is not nullable; empty when the query's columns cannot be traced to one
  // table. sql_types: DuckDB's spelling of the result types when a column NeedsSqlType; empty
  // otherwise, or when DuckDB cannot describe the statement.
  ResultColumns columns;
  engine::PreparedStatement* operator->() const { return stmt.get(); }
  engine::PreparedStatement& operator*() const { return *stmt; }
};

// What a call asks of a statement command's FlightInfo: GetFlightInfo and PollFlightInfo execute
// the statement (a write runs then); GetSchema wants its result schema only and runs nothing.
enum class InfoUse { kExecute, kSchemaOnly };

// Who makes a call: the authenticated principal and, when the call sends a session cookie, the
// session (null otherwise).
struct Caller {
  std::string principal;
  std::shared_ptr<Session> session;
  grpc::ServerContext* context = nullptr;  // the call (cancellation, deadline)
  ActiveStream* stream = nullptr;          // DoGet and DoPut: the admitted stream
  std::string schema() const { return session ? session->schema() : std::string(); }
};

class Backend {
 public:
  Backend(sql::LakeSql& lake, const ServerOptions& options);

  Registry& registry() { return registry_; }
  StreamMonitor& streams() { return streams_; }
  MemoryBudget& budget() { return budget_; }
  const ServerOptions& options() const { return options_; }

  // ---- statements.cc
  GStatus MetadataInfo(const google::protobuf::Any& command, const pb::FlightDescriptor& desc, pb::FlightInfo* out);
  // A query's FlightInfo announces its result schema (for a prepared statement with bound
  // parameters, the schema of the statement with them bound: its stream's). A write statement
  // sent as a query runs here, once, through the update path; its ticket then streams the rows
  // it changed (WriteInfo).
  GStatus StatementInfo(const Caller& caller, const pbsql::CommandStatementQuery& command,
                        const pb::FlightDescriptor& desc, InfoUse use, pb::FlightInfo* out);
  GStatus PreparedInfo(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command,
                       const pb::FlightDescriptor& desc, InfoUse use, pb::FlightInfo* out);
  GStatus GetMetadata(const Caller& caller, const google::protobuf::Any& command, DataWriter* writer);
  GStatus GetStatement(const Caller& caller, const pbsql::TicketStatementQuery& ticket, DataWriter* writer);
  GStatus GetPrepared(const Caller& caller, const pbsql::CommandPreparedStatementQuery& command, DataWriter* writer);

  // ---- do_put.cc (`first` is the stream's first message, already read)
  // The first message may carry an empty schema, nothing else (INVALID_ARGUMENT otherwise).
  GStatus PutStatementUpdate(const Caller& caller, const pbsql::CommandStatementUpdate& command,
                             const pb::FlightData& first, PutStream* stream);
  GStatus PutPreparedQuery(const Caller& caller, const std::string& handle, const pb::FlightData& first,
                           PutStream* stream);
  GStatus PutPreparedUpdate(const Caller& caller, const std::string& handle, const pb::FlightData& first,
                            PutStream* stream);
  GStatus PutIngest(const Caller& caller, const pbsql::CommandStatementIngest& command, const pb::FlightData& first,
                    PutStream* stream);

  // ---- actions.cc
  GStatus CreatePrepared(const Caller& caller, const pbsql::ActionCreatePreparedStatementRequest& request,
                         pbsql::ActionCreatePreparedStatementResult* out);
  // The prepared statement `sql` of `principal`, names resolving in `schema`: classified, its
  // parameters counted, and (with `out`) its dataset and parameter schemas announced. Also
  // re-creates a statement whose handle another instance issued.
  Result<std::shared_ptr<PreparedStatement>> Prepare(const std::string& principal, const std::string& schema,
                                                     const std::string& sql,
                                                     pbsql::ActionCreatePreparedStatementResult* out);
  GStatus ClosePrepared(const Caller& caller, const pbsql::ActionClosePreparedStatementRequest& request);
  // The cancel's error when it could not be recorded for the other instances (shared state).
  Result<pb::CancelStatus> Cancel(const Caller& caller, const pb::FlightInfo& info);
  // Applies the options to `session` (created by the caller when the call had none).
  void SetSessionOptions(Session& session, const pb::SetSessionOptionsRequest& request,
                         pb::SetSessionOptionsResult* out);
  void GetSessionOptions(const Caller& caller, pb::GetSessionOptionsResult* out);

 private:
  // A connection for running `sql`, set up for the caller's session whose default schema is
  // `schema` (LakeSql::SetUp: the rule its writes follow too).
  Result<std::unique_ptr<engine::Connection>> Connect(const Caller& caller, const std::string& schema,
                                                      const std::string& sql);
  // Prepares a query (only queries) after syncing the views it reads.
  Result<PreparedQuery> PrepareQuery(const std::string& schema, engine::Connection& con,
                                                                  const std::string& sql);
  // The NOT NULL columns `statement` passes through from its one table (ResultColumns::required)
  // for a result of `columns` columns; empty when they cannot be told.
  std::vector<bool> RequiredColumns(const engine::Statement& statement, const std::string& schema, int64_t columns);
  // The result schema of `sql` (prepared on `con` as `stmt`) with the first row of `params`
  // bound: the schema its stream will have. kInvalidArgument when DuckDB cannot describe it.
  Result<arrow::SchemaHandle> BoundResultSchema(engine::Connection& con, const engine::PreparedStatement& stmt,
                                                const std::string& sql, const ParamSet& params);
  // The FlightInfo of a write statement sent as a query that changed `changed` rows (already
  // run and committed; nullopt for kSchemaOnly, which runs nothing): the schema of
  // ChangedRowsResult and a ticket of its own for the caller that streams it, however often
  // it is fetched.
  GStatus WriteInfo(const Caller& caller, const std::string& schema, std::optional<int64_t> changed,
                    const pb::FlightDescriptor& desc, pb::FlightInfo* out);
  // DoGet of a write's ticket: the one row of ChangedRowsResult.
  GStatus SendChangedRows(const Caller& caller, int64_t changed, DataWriter* writer);
  // `annotate`: the result schema of a query, given the Flight SQL column metadata from
  // `columns` (AnnotateResultSchema); otherwise (metadata commands) sent as it is.
  GStatus FillInfo(const pb::FlightDescriptor& desc, const ArrowSchema& schema, const std::string& ticket,
                   pb::FlightInfo* out, bool annotate, const ResultColumns& columns = {});
  // Runs `sql` (with `params`: once per parameter row) as `run` and streams the result.
  GStatus StreamQuery(const Caller& caller, Registry::Run& run, const std::string& schema,
                      const std::string& sql, const ParamSet* params, DataWriter* writer);
  GStatus SendBatches(const Caller& caller, Registry::Run& run, ArrowArrayStream& stream,
                      arrow::ipc::StreamEncoder& encoder, DataWriter* writer);
  // Writes one message of a DoGet, marked as waiting for the client; false when it is gone.
  static bool WriteToClient(const Caller& caller, DataWriter* writer, RawFlightData data,
                            grpc::WriteOptions options = {});
  GStatus QueryFailure(const Registry::Run& run, const Status& st);

  // The messages a DoPut client sends after `first`, each read marked as waiting for the client,
  // decoded within the buffer budget.
  arrow::StreamHandle ReadBatches(const Caller& caller, const pb::FlightData& first, PutStream* stream,
                                  FlightDataBounds bounds);
  Result<std::shared_ptr<ParamSet>> ReadParams(const Caller& caller, const pb::FlightData& first, PutStream* stream);
  // The parameter rows a client sent for `prepared`, the column count checked; null when the
  // statement has no parameters (whatever empty stream the client sent).
  Result<std::shared_ptr<const ParamSet>> ReadParamsFor(const Caller& caller, const PreparedStatement& prepared,
                                                        const pb::FlightData& first, PutStream* stream);
  Result<std::vector<std::vector<std::string>>> ParamLiterals(const ParamSet& params);
  // A run of the registry for an update: the query timeout and a shutdown interrupt it. Its
  // key is no statement handle, so no client cancels it.
  std::unique_ptr<Registry::Run> StartUpdateRun(const std::string& principal);
  // Runs an update statement as `run` for `session` (its default schema and user, as its
  // queries see them); `parameters` (SQL literals) replace its markers in the parse tree. A
  // failure of an interrupted run is the caller's to report as QueryFailure(run, …).
  Result<int64_t> RunUpdate(Registry::Run& run, sql::Session session, const std::string& sql,
                            std::span<const std::string> parameters = {});
  // Runs the prepared update statement `prepared` as `run`: once without parameters, once per
  // row of `params` with them (not at all for zero rows). The rows changed in all.
  Result<int64_t> RunPreparedUpdate(Registry::Run& run, const PreparedStatement& prepared, const ParamSet* params);

  sql::LakeSql& lake_;
  const ServerOptions& options_;
  ServerFacts facts_;
  TableSchemaCache schema_cache_;
  // Before the registry: bound parameters it holds give their bytes back when it is destroyed.
  MemoryBudget budget_;
  Registry registry_;
  StreamMonitor streams_;
  std::atomic<uint64_t> update_runs_{0};  // numbers the keys of StartUpdateRun
};

}  // namespace skade::flightsql
