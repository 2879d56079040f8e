#include "skade/flightsql/server.h"

#include <atomic>
#include <cctype>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>

#include "flight.pb.h"
#include "flight_sql.pb.h"
#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/flightsql/flight_data_internal.h"
#include "skade/flightsql/metadata_internal.h"
#include "skade/engine/user_sql.h"

namespace skade::flightsql {

namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;
using google::protobuf::Any;
using grpc::ServerContext;
using GStatus = grpc::Status;
using GCode = grpc::StatusCode;

namespace {

constexpr size_t kMaxSqlBytes = 1 << 20;
constexpr const char* kCookieName = "arrow_flight_session_id";

// One mapping of skade codes to gRPC codes (a refusal by DuckDB's lock-down arrives as
// kPermissionDenied, engine/database.cc).
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
    case StatusCode::kUnavailable: code = GCode::UNAVAILABLE; break;
    case StatusCode::kCorruption: code = GCode::DATA_LOSS; break;
    default: break;
  }
  return GStatus(code, st.message());
}


std::string PackAny(const google::protobuf::Message& m) {
  Any any;
  any.PackFrom(m);
  return any.SerializeAsString();
}

std::string Base64Decode(std::string_view in) {
  static const std::string kChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    if (c == '=') break;
    size_t pos = kChars.find(c);
    if (pos == std::string::npos) continue;
    val = (val << 6) + static_cast<int>(pos);
    bits += 6;
    if (bits >= 0) {
      out += static_cast<char>((val >> bits) & 0xff);
      bits -= 8;
    }
  }
  return out;
}

std::string Header(ServerContext* ctx, std::string_view name) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(grpc::string_ref(name.data(), name.size()));
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// Parameter batches bound to a prepared statement (DoPut).
struct ParamSet {
  arrow::SchemaHandle schema;
  std::vector<arrow::ArrayHandle> batches;
};

struct Prepared {
  std::string sql;
  std::optional<engine::Statement> write;  // set for update statements
  int64_t parameter_count = 0;
  std::shared_ptr<ParamSet> params;
};

struct Running {
  engine::Connection* connection = nullptr;
  int64_t started_ns = 0;
  bool timed_out = false;
};

struct Session {
  std::string id;
  std::string user;
  std::mutex mu;
  std::string schema;
  std::map<std::string, std::string> queries;  // statement handle → SQL (not yet fetched)
  std::map<std::string, std::shared_ptr<Prepared>> prepared;
  std::map<std::string, Running> running;
  std::atomic<int64_t> last_used_ns{0};
};

}  // namespace

struct FlightSqlServer::Impl final : public grpc::Service {
  sql::LakeSql& lake;
  ServerOptions options;
  ServerFacts facts;
  TableSchemaCache schema_cache;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  std::map<std::string, std::string> tokens;  // bearer token → user
  std::atomic<bool> shutting_down{false};
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  std::thread reaper;
  std::once_flag shutdown_once;

  Impl(sql::LakeSql& l, ServerOptions o) : lake(l), options(std::move(o)) {
    facts.version = options.version;
    facts.read_only = options.read_only;
    facts.statement_timeout_s = static_cast<int>(options.query_timeout.count());
    facts.schema_cache = &schema_cache;
    using grpc::internal::RpcMethod;
    using grpc::internal::RpcServiceMethod;
    // grpc::Service::AddMethod takes ownership of the method and its handler (raw pointers by API).
    auto add = [this](const char* name, RpcMethod::RpcType type, grpc::internal::MethodHandler* handler) {
      AddMethod(new RpcServiceMethod(name, type, handler));
    };
    using Self = Impl;
    add("/arrow.flight.protocol.FlightService/Handshake", RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<Self, pb::HandshakeRequest, pb::HandshakeResponse>(
            [](Self* s, ServerContext* c, grpc::ServerReaderWriter<pb::HandshakeResponse, pb::HandshakeRequest>* rw) {
              return s->Handshake(c, rw);
            },
            this));
    add("/arrow.flight.protocol.FlightService/ListFlights", RpcMethod::SERVER_STREAMING,
        new grpc::internal::ServerStreamingHandler<Self, pb::Criteria, pb::FlightInfo>(
            [](Self*, ServerContext*, const pb::Criteria*, grpc::ServerWriter<pb::FlightInfo>*) {
              return GStatus(GCode::UNIMPLEMENTED, "ListFlights: use the Flight SQL commands (GetTables)");
            },
            this));
    add("/arrow.flight.protocol.FlightService/GetFlightInfo", RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<Self, pb::FlightDescriptor, pb::FlightInfo, google::protobuf::MessageLite,
                                             google::protobuf::MessageLite>(
            [](Self* s, ServerContext* c, const pb::FlightDescriptor* d, pb::FlightInfo* out) {
              return s->GetFlightInfo(c, *d, out);
            },
            this));
    add("/arrow.flight.protocol.FlightService/PollFlightInfo", RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<Self, pb::FlightDescriptor, pb::PollInfo, google::protobuf::MessageLite,
                                             google::protobuf::MessageLite>(
            [](Self* s, ServerContext* c, const pb::FlightDescriptor* d, pb::PollInfo* out) {
              GStatus st = s->GetFlightInfo(c, *d, out->mutable_info());
              if (st.ok()) out->set_progress(1.0);  // complete: no flight_descriptor to poll again
              return st;
            },
            this));
    add("/arrow.flight.protocol.FlightService/GetSchema", RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<Self, pb::FlightDescriptor, pb::SchemaResult,
                                             google::protobuf::MessageLite, google::protobuf::MessageLite>(
            [](Self* s, ServerContext* c, const pb::FlightDescriptor* d, pb::SchemaResult* out) {
              pb::FlightInfo info;
              GStatus st = s->GetFlightInfo(c, *d, &info);
              if (st.ok()) out->set_schema(info.schema());
              return st;
            },
            this));
    add("/arrow.flight.protocol.FlightService/DoGet", RpcMethod::SERVER_STREAMING,
        new grpc::internal::ServerStreamingHandler<Self, pb::Ticket, RawFlightData>(
            [](Self* s, ServerContext* c, const pb::Ticket* t, grpc::ServerWriter<RawFlightData>* w) {
              return s->DoGet(c, *t, w);
            },
            this));
    add("/arrow.flight.protocol.FlightService/DoPut", RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<Self, pb::FlightData, pb::PutResult>(
            [](Self* s, ServerContext* c, grpc::ServerReaderWriter<pb::PutResult, pb::FlightData>* rw) {
              return s->DoPut(c, rw);
            },
            this));
    add("/arrow.flight.protocol.FlightService/DoExchange", RpcMethod::BIDI_STREAMING,
        new grpc::internal::BidiStreamingHandler<Self, pb::FlightData, pb::FlightData>(
            [](Self*, ServerContext*, grpc::ServerReaderWriter<pb::FlightData, pb::FlightData>*) {
              return GStatus(GCode::UNIMPLEMENTED, "DoExchange is not supported by this Flight SQL server");
            },
            this));
    add("/arrow.flight.protocol.FlightService/DoAction", RpcMethod::SERVER_STREAMING,
        new grpc::internal::ServerStreamingHandler<Self, pb::Action, pb::Result>(
            [](Self* s, ServerContext* c, const pb::Action* a, grpc::ServerWriter<pb::Result>* w) {
              return s->DoAction(c, *a, w);
            },
            this));
    add("/arrow.flight.protocol.FlightService/ListActions", RpcMethod::SERVER_STREAMING,
        new grpc::internal::ServerStreamingHandler<Self, pb::Empty, pb::ActionType>(
            [](Self* s, ServerContext* c, const pb::Empty*, grpc::ServerWriter<pb::ActionType>* w) {
              auto who = s->Authenticate(c);
              if (!who.ok()) return ToGrpc(who.status());
              for (const char* name : {"CreatePreparedStatement", "ClosePreparedStatement", "CancelFlightInfo",
                                       "CancelQuery", "SetSessionOptions", "GetSessionOptions", "CloseSession",
                                       "RenewFlightEndpoint", "BeginTransaction", "EndTransaction"}) {
                pb::ActionType t;
                t.set_type(name);
                w->Write(t);
              }
              return GStatus::OK;
            },
            this));
  }

  // ---- auth and sessions

  Result<std::string> Authenticate(ServerContext* ctx) {
    if (!options.require_auth) return std::string();
    std::string auth = Header(ctx, "authorization");
    if (auth.rfind("Bearer ", 0) == 0) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = tokens.find(auth.substr(7));
      if (it != tokens.end()) return it->second;
      return Status::Unauthorized("invalid or expired bearer token");
    }
    if (auth.rfind("Basic ", 0) == 0) return CheckBasic(Base64Decode(auth.substr(6)));
    return Status::Unauthorized("authentication required: Handshake with basic auth, then send the bearer token");
  }

  Result<std::string> CheckBasic(const std::string& user_colon_pass) {
    size_t colon = user_colon_pass.find(':');
    std::string user = user_colon_pass.substr(0, colon);
    std::string pass = colon == std::string::npos ? "" : user_colon_pass.substr(colon + 1);
    auto it = options.users.find(user);
    if (it == options.users.end() || it->second != pass) return Status::Unauthorized("invalid username or password");
    return user;
  }

  Result<std::shared_ptr<Session>> SessionFor(ServerContext* ctx) {
    if (shutting_down) return Status::Unavailable("server is shutting down");
    SKADE_ASSIGN_OR_RETURN(std::string user, Authenticate(ctx));
    std::string cookies = Header(ctx, "cookie");
    std::string id;
    std::string key = std::string(kCookieName) + "=";
    for (size_t pos = 0; pos < cookies.size();) {
      size_t end = cookies.find(';', pos);
      std::string item = cookies.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      while (!item.empty() && item.front() == ' ') item.erase(item.begin());
      if (item.rfind(key, 0) == 0) id = item.substr(key.size());
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!id.empty()) {
      auto it = sessions.find(id);
      if (it == sessions.end()) return Status::NotFound("session " + id + " is closed or unknown; drop the cookie to start a new one");
      if (it->second->user != user) return Status::Unauthorized("the session belongs to another user");
      it->second->last_used_ns = MonotonicNanos();
      return it->second;
    }
    if (static_cast<int>(sessions.size()) >= options.max_sessions) {
      return Status(StatusCode::kResourceExhausted, "too many sessions (--max-sessions " +
                                                  std::to_string(options.max_sessions) + ")");
    }
    auto s = std::make_shared<Session>();
    s->id = Uuid::NewV7().ToString();
    s->user = user;
    s->last_used_ns = MonotonicNanos();
    sessions[s->id] = s;
    ctx->AddInitialMetadata("set-cookie", std::string(kCookieName) + "=" + s->id);
    return s;
  }

  GStatus SessionError(const Status& st) { return ToGrpc(st); }

  // A handle "<session id>:<uuid>" and the session it belongs to.
  Result<std::shared_ptr<Session>> SessionOfHandle(const std::string& handle, const std::shared_ptr<Session>& caller) {
    size_t colon = handle.find(':');
    if (colon == std::string::npos) return Status::NotFound("unknown statement handle");
    std::string sid = handle.substr(0, colon);
    std::shared_ptr<Session> owner;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = sessions.find(sid);
      if (it == sessions.end()) return Status::NotFound("the statement's session is closed or unknown");
      owner = it->second;
    }
    if (owner.get() != caller.get()) return Status::NotFound("the statement belongs to another session");
    return owner;
  }

  GStatus Handshake(ServerContext* ctx, grpc::ServerReaderWriter<pb::HandshakeResponse, pb::HandshakeRequest>* rw) {
    pb::HandshakeRequest req;
    bool got = rw->Read(&req);
    std::string user;
    if (options.require_auth) {
      std::string auth = Header(ctx, "authorization");
      Result<std::string> who = Status::Unauthorized("Handshake needs basic auth (header or BasicAuth payload)");
      if (auth.rfind("Basic ", 0) == 0) {
        who = CheckBasic(Base64Decode(auth.substr(6)));
      } else if (got && !req.payload().empty()) {
        pb::BasicAuth basic;
        if (basic.ParseFromString(req.payload())) who = CheckBasic(basic.username() + ":" + basic.password());
      }
      if (!who.ok()) return ToGrpc(who.status());
      user = *who;
    }
    std::string token = Uuid::NewV7().ToString();
    {
      std::lock_guard<std::mutex> lock(mu);
      tokens[token] = user;
    }
    ctx->AddInitialMetadata("authorization", "Bearer " + token);
    pb::HandshakeResponse resp;
    resp.set_payload(token);
    rw->Write(resp);
    return GStatus::OK;
  }

  // ---- statements

  // A connection of this session's settings.
  Result<std::unique_ptr<engine::Connection>> Connect(Session& s) {
    SKADE_ASSIGN_OR_RETURN(auto con, lake.db().Connect());
    std::string schema;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      schema = s.schema;
    }
    SKADE_RETURN_IF_ERROR(lake.Use(*con, schema));
    return con;
  }

  std::string SessionSchema(Session& s) {
    std::lock_guard<std::mutex> lock(s.mu);
    return s.schema;
  }

  // Prepares a query on `con` after syncing the views it reads; refuses anything but queries.
  Result<std::unique_ptr<engine::PreparedStatement>> PrepareQuery(Session& s, engine::Connection& con,
                                                                  const std::string& sql) {
    if (sql.size() > kMaxSqlBytes) {
      return Status::InvalidArgument("SQL text is " + std::to_string(sql.size()) + " bytes; the limit is 1 MiB");
    }
    // Classified from DuckDB's parse tree before anything runs; exactly one statement.
    SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
    if (statement.is_write()) {
      if (options.read_only) return Status(StatusCode::kPermissionDenied, "permission denied: the server is read-only");
      return Status::InvalidArgument("a write statement cannot run as a query; send it as CommandStatementUpdate");
    }
    if (statement.kind != engine::Statement::Kind::kQuery && statement.kind != engine::Statement::Kind::kExplain) {
      return Status(StatusCode::kPermissionDenied, "permission denied: " + statement.type_name +
                                                   " statements are not allowed (only queries, and through "
                                                   "CommandStatementUpdate the Iceberg write statements)");
    }
    SKADE_RETURN_IF_ERROR(lake.SyncViews(sql, SessionSchema(s)));
    auto prepared = con.Prepare(sql);
    if (!prepared.ok()) return prepared.status();
    auto stmt = std::move(*prepared);
    if (stmt->kind() != engine::StatementKind::kSelect && stmt->kind() != engine::StatementKind::kExplain) {
      return Status(StatusCode::kPermissionDenied, "permission denied: " + stmt->kind_name() +
                                                   " statements are not allowed (only queries, and through "
                                                   "CommandStatementUpdate the Iceberg write statements)");
    }
    return stmt;
  }

  // The result schema DuckDB can tell before running; an empty schema when it cannot (the
  // stream's own schema message then describes the result).
  static Result<arrow::SchemaHandle> ResultSchemaOrEmpty(engine::PreparedStatement& stmt) {
    auto schema = stmt.ResultSchema();
    if (schema.ok()) return schema;
    auto b = arrow::RecordBatchBuilder({});
    arrow::SchemaHandle empty;
    arrow::ArrayHandle unused;
    SKADE_RETURN_IF_ERROR(b.Finish(empty.get(), unused.get()));
    return empty;
  }

  GStatus FillInfo(const pb::FlightDescriptor& desc, const ArrowSchema& schema, const std::string& ticket,
                   pb::FlightInfo* out, bool annotate = false) {
    ArrowSchema annotated;
    AnnotateResultSchema(schema, &annotated);
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

  GStatus GetFlightInfo(ServerContext* ctx, const pb::FlightDescriptor& desc, pb::FlightInfo* out) {
    auto session = SessionFor(ctx);
    if (!session.ok()) return SessionError(session.status());
    if (desc.type() != pb::FlightDescriptor::CMD) {
      return GStatus(GCode::INVALID_ARGUMENT, "expected a CMD descriptor holding a Flight SQL command");
    }
    Any cmd;
    if (!cmd.ParseFromString(desc.cmd())) return GStatus(GCode::INVALID_ARGUMENT, "malformed command: not a protobuf Any");
    if (IsMetadataCommand(cmd)) {
      auto stream = MetadataResult(cmd, lake, facts, true);
      if (!stream.ok()) return ToGrpc(stream.status());
      arrow::SchemaHandle schema;
      (*stream)->get_schema(stream->get(), schema.get());
      return FillInfo(desc, *schema.get(), desc.cmd(), out);
    }
    Session& s = **session;
    if (IsFlightSqlCommand(cmd, "CommandStatementQuery")) {
      pbsql::CommandStatementQuery q;
      if (!cmd.UnpackTo(&q)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandStatementQuery");
      if (q.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
      auto con = Connect(s);
      if (!con.ok()) return ToGrpc(con.status());
      auto stmt = PrepareQuery(s, **con, q.query());
      if (!stmt.ok()) return ToGrpc(stmt.status());
      auto schema = ResultSchemaOrEmpty(**stmt);
      std::string handle = s.id + ":" + Uuid::NewV7().ToString();
      {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.queries.size() >= 1024) s.queries.erase(s.queries.begin());
        s.queries[handle] = q.query();
      }
      pbsql::TicketStatementQuery ticket;
      ticket.set_statement_handle(handle);
      return FillInfo(desc, *schema->get(), PackAny(ticket), out, true);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery")) {
      pbsql::CommandPreparedStatementQuery q;
      if (!cmd.UnpackTo(&q)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandPreparedStatementQuery");
      auto prepared = FindPrepared(s, q.prepared_statement_handle());
      if (!prepared.ok()) return ToGrpc(prepared.status());
      if ((*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is an update, not a query");
      auto con = Connect(s);
      if (!con.ok()) return ToGrpc(con.status());
      auto stmt = PrepareQuery(s, **con, (*prepared)->sql);
      if (!stmt.ok()) return ToGrpc(stmt.status());
      auto schema = ResultSchemaOrEmpty(**stmt);
      return FillInfo(desc, *schema->get(), desc.cmd(), out, true);
    }
    if (IsFlightSqlCommand(cmd, "CommandStatementSubstraitPlan")) {
      return GStatus(GCode::UNIMPLEMENTED, "Substrait plans are not supported; send SQL");
    }
    if (cmd.type_url().rfind(std::string(kFlightSqlTypePrefix), 0) == 0) {
      return GStatus(GCode::INVALID_ARGUMENT, "command " + cmd.type_url() + " is not valid for GetFlightInfo");
    }
    return GStatus(GCode::INVALID_ARGUMENT, "unknown command type '" + cmd.type_url() + "'");
  }

  Result<std::shared_ptr<Prepared>> FindPrepared(Session& caller_session, const std::string& handle) {
    // The handle names its session; it must be the caller's (or the same user's) live session.
    size_t colon = handle.find(':');
    std::string sid = colon == std::string::npos ? "" : handle.substr(0, colon);
    std::shared_ptr<Session> owner;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = sessions.find(sid);
      if (it == sessions.end()) return Status::NotFound("unknown prepared statement (its session is closed or unknown)");
      owner = it->second;
    }
    if (owner.get() != &caller_session) return Status::NotFound("unknown prepared statement (another session's)");
    std::lock_guard<std::mutex> lock(owner->mu);
    auto it = owner->prepared.find(handle);
    if (it == owner->prepared.end()) return Status::NotFound("unknown or closed prepared statement");
    return it->second;
  }

  // Streams a query's result: schema, then each batch as zero-copy FlightData.
  GStatus StreamQuery(Session& s, const std::string& handle, const std::string& sql, const ParamSet* params,
                      grpc::ServerWriter<RawFlightData>* writer) {
    auto con = Connect(s);
    if (!con.ok()) return ToGrpc(con.status());
    auto stmt = PrepareQuery(s, **con, sql);
    if (!stmt.ok()) return ToGrpc(stmt.status());
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.running[handle] = Running{con->get(), MonotonicNanos(), false};
    }
    struct Unregister {
      Session& s;
      const std::string& h;
      ~Unregister() {
        std::lock_guard<std::mutex> lock(s.mu);
        s.running.erase(h);
      }
    } unregister{s, handle};
    std::unique_ptr<arrow::ipc::StreamEncoder> encoder;
    int64_t rows = 1;
    if (params != nullptr) {
      rows = 0;
      for (const auto& b : params->batches) rows += b->length;
    }
    for (int64_t r = 0; r < std::max<int64_t>(rows, 1); ++r) {
      if (params != nullptr && rows > 0) {
        int64_t left = r;
        size_t bi = 0;
        while (left >= params->batches[bi]->length) left -= params->batches[bi++]->length;
        Status bound = (*stmt)->BindRow(*params->schema.get(), *params->batches[bi].get(), left);
        if (!bound.ok()) return ToGrpc(bound);
      }
      auto stream = (*stmt)->ExecuteArrow();
      if (!stream.ok()) return QueryFailure(s, handle, stream.status());
      if (!encoder) {
        arrow::SchemaHandle schema;
        if ((*stream)->get_schema(stream->get(), schema.get()) != 0) {
          return GStatus(GCode::INTERNAL, "cannot read the result schema");
        }
        ArrowSchema annotated;
        AnnotateResultSchema(*schema.get(), &annotated);
        arrow::SchemaHandle owned(&annotated);
        auto made = arrow::ipc::StreamEncoder::Make(*owned.get());
        if (!made.ok()) return ToGrpc(made.status());
        encoder = std::move(*made);
        if (!writer->Write(RawFlightData{encoder->SchemaMessage(), "", false})) {
          return GStatus(GCode::CANCELLED, "client went away");
        }
      }
      GStatus sent = SendBatches(s, handle, *stream->get(), *encoder, **con, writer);
      if (!sent.ok()) return sent;
    }
    return GStatus::OK;
  }

  // Streams the batches of `stream`: a producer thread pulls them from DuckDB and encodes them
  // into a small bounded queue while this thread writes to gRPC, so scanning and sending
  // overlap; writes followed by already-queued ones carry gRPC's buffer hint (fewer flushes
  // and wake-ups), the last one queued flushes.
  GStatus SendBatches(Session& s, const std::string& handle, ArrowArrayStream& stream,
                      arrow::ipc::StreamEncoder& encoder, engine::Connection& con,
                      grpc::ServerWriter<RawFlightData>* writer) {
    constexpr size_t kQueueBatches = 8;
    constexpr int kFlushEvery = 16;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<arrow::ipc::EncodedMessage>> queue;
    bool done = false;      // producer finished (status in `produced`)
    bool stopped = false;   // consumer gave up
    GStatus produced = GStatus::OK;
    std::thread producer([&] {
      GStatus result = GStatus::OK;
      while (true) {
        arrow::ArrayHandle batch;
        if (stream.get_next(&stream, batch.get()) != 0) {
          const char* err = stream.get_last_error(&stream);
          result = QueryFailure(s, handle, Status::InvalidArgument(err ? err : "query failed"));
          break;
        }
        if (!batch.valid()) break;
        auto messages = encoder.EncodeBatch(std::move(batch));
        if (!messages.ok()) {
          result = ToGrpc(messages.status());
          break;
        }
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return queue.size() < kQueueBatches || stopped; });
        if (stopped) break;
        queue.push_back(std::move(*messages));
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
      std::vector<arrow::ipc::EncodedMessage> messages;
      bool more = false;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || done; });
        if (queue.empty()) break;
        messages = std::move(queue.front());
        queue.pop_front();
        more = !queue.empty();
        cv.notify_all();
      }
      bool failed = false;
      for (size_t i = 0; i < messages.size() && !failed; ++i) {
        grpc::WriteOptions write_options;
        bool last = i + 1 == messages.size();
        if ((!last || more) && ++unflushed < kFlushEvery) {
          write_options.set_buffer_hint();
        } else {
          unflushed = 0;
        }
        failed = !writer->Write(RawFlightData{std::move(messages[i]), "", options.copy_batches}, write_options);
      }
      if (failed) {
        con.Interrupt();
        result = GStatus(GCode::CANCELLED, "client went away");
        std::lock_guard<std::mutex> lock(mu);
        stopped = true;
        cv.notify_all();
        break;
      }
    }
    producer.join();
    return result.ok() ? produced : result;
  }

  GStatus QueryFailure(Session& s, const std::string& handle, const Status& st) {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.running.find(handle);
    if (it != s.running.end() && it->second.timed_out) {
      return GStatus(GCode::DEADLINE_EXCEEDED, "query timed out after " +
                                                   std::to_string(options.query_timeout.count()) + " s");
    }
    if (st.message().find("INTERRUPT") != std::string::npos || st.message().find("nterrupt") != std::string::npos) {
      return GStatus(GCode::CANCELLED, "query cancelled");
    }
    return ToGrpc(st);
  }

  GStatus DoGet(ServerContext* ctx, const pb::Ticket& ticket, grpc::ServerWriter<RawFlightData>* writer) {
    auto session = SessionFor(ctx);
    if (!session.ok()) return SessionError(session.status());
    Any cmd;
    if (!cmd.ParseFromString(ticket.ticket())) return GStatus(GCode::INVALID_ARGUMENT, "malformed ticket");
    if (IsMetadataCommand(cmd)) {
      auto stream = MetadataResult(cmd, lake, facts, false);
      if (!stream.ok()) return ToGrpc(stream.status());
      arrow::SchemaHandle schema;
      (*stream)->get_schema(stream->get(), schema.get());
      auto encoder = arrow::ipc::StreamEncoder::Make(*schema.get());
      if (!encoder.ok()) return ToGrpc(encoder.status());
      writer->Write(RawFlightData{(*encoder)->SchemaMessage(), "", false});
      while (true) {
        arrow::ArrayHandle batch;
        if ((*stream)->get_next(stream->get(), batch.get()) != 0 || !batch.valid()) break;
        auto messages = (*encoder)->EncodeBatch(std::move(batch));
        if (!messages.ok()) return ToGrpc(messages.status());
        for (auto& m : *messages) writer->Write(RawFlightData{std::move(m), "", false});
      }
      return GStatus::OK;
    }
    if (IsFlightSqlCommand(cmd, "TicketStatementQuery")) {
      pbsql::TicketStatementQuery t;
      if (!cmd.UnpackTo(&t)) return GStatus(GCode::INVALID_ARGUMENT, "malformed TicketStatementQuery");
      auto owner = SessionOfHandle(t.statement_handle(), *session);
      if (!owner.ok()) return ToGrpc(owner.status());
      std::string sql;
      {
        std::lock_guard<std::mutex> lock((*owner)->mu);
        auto it = (*owner)->queries.find(t.statement_handle());
        if (it == (*owner)->queries.end()) return GStatus(GCode::NOT_FOUND, "unknown, cancelled or closed statement");
        sql = it->second;
      }
      return StreamQuery(**owner, t.statement_handle(), sql, nullptr, writer);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery")) {
      pbsql::CommandPreparedStatementQuery q;
      if (!cmd.UnpackTo(&q)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandPreparedStatementQuery");
      auto prepared = FindPrepared(**session, q.prepared_statement_handle());
      if (!prepared.ok()) return ToGrpc(prepared.status());
      auto owner = SessionOfHandle(q.prepared_statement_handle(), *session);
      if (!owner.ok()) return ToGrpc(owner.status());
      if ((*prepared)->parameter_count > 0 && !(*prepared)->params) {
        return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement has parameters; bind them with DoPut first");
      }
      return StreamQuery(**owner, q.prepared_statement_handle(), (*prepared)->sql, (*prepared)->params.get(), writer);
    }
    return GStatus(GCode::INVALID_ARGUMENT, "unknown ticket type '" + cmd.type_url() + "'");
  }

  // ---- DoPut: updates, parameter binding, ingest

  static GStatus WritePut(grpc::ServerReaderWriter<pb::PutResult, pb::FlightData>* rw, const std::string& metadata) {
    pb::PutResult r;
    r.set_app_metadata(metadata);
    rw->Write(r);
    return GStatus::OK;
  }

  Result<std::shared_ptr<ParamSet>> ReadParams(const pb::FlightData& first,
                                               grpc::ServerReaderWriter<pb::PutResult, pb::FlightData>* rw) {
    auto stream = FlightDataStream(first, [rw](pb::FlightData* m) { return rw->Read(m); });
    auto set = std::make_shared<ParamSet>();
    if (stream->get_schema(stream.get(), set->schema.get()) != 0) {
      const char* err = stream->get_last_error(stream.get());
      return Status::InvalidArgument(std::string("parameter stream: ") + (err ? err : "no schema"));
    }
    while (true) {
      arrow::ArrayHandle b;
      if (stream->get_next(stream.get(), b.get()) != 0) {
        const char* err = stream->get_last_error(stream.get());
        return Status::InvalidArgument(std::string("parameter stream: ") + (err ? err : "bad batch"));
      }
      if (!b.valid()) break;
      if (b->length > 0) set->batches.push_back(std::move(b));
    }
    return set;
  }

  // SQL literals of every parameter row (DuckDB renders the values; types are kept by casts).
  Result<std::vector<std::vector<std::string>>> ParamLiterals(const ParamSet& params) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& batch : params.batches) {
      // DuckDB reads a borrowed view of the batch (its release does nothing): each column as
      // text, then each column's type, in one query.
      ArrowArray view = *batch.get();
      view.release = [](ArrowArray* a) { a->release = nullptr; };
      std::vector<arrow::ArrayHandle> one;
      one.emplace_back(&view);
      ArrowSchema schema;
      arrow::CopySchema(*params.schema.get(), &schema);
      auto stream = arrow::MakeBatchStream(arrow::SchemaHandle(&schema), std::move(one));
      SKADE_ASSIGN_OR_RETURN(auto values,
                             lake.db().QueryRowsWithArrow(
                                 "__p", stream.get(), "SELECT CAST(COLUMNS(*) AS VARCHAR), typeof(COLUMNS(*)) FROM __p"));
      for (const auto& row : values) {
        size_t n = row.size() / 2;
        std::vector<std::string> lits;
        for (size_t c = 0; c < n; ++c) {
          std::string type = row[n + c] ? *row[n + c] : "VARCHAR";
          lits.push_back(row[c] ? "CAST(" + engine::QuoteString(*row[c]) + " AS " + type + ")" : "NULL");
        }
        rows.push_back(std::move(lits));
      }
    }
    return rows;
  }

  // Runs an update statement; `parameters` (SQL literals) replace its markers in the parse tree.
  Result<int64_t> RunUpdate(Session& s, const std::string& sql, std::span<const std::string> parameters = {}) {
    if (sql.size() > kMaxSqlBytes) {
      return Status::InvalidArgument("SQL text is " + std::to_string(sql.size()) + " bytes; the limit is 1 MiB");
    }
    SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql, parameters));
    if (statement.is_write()) {
      if (options.read_only) return Status(StatusCode::kPermissionDenied, "permission denied: the server is read-only");
      return lake.ExecuteWrite(statement, SessionSchema(s));
    }
    if (statement.kind == engine::Statement::Kind::kQuery || statement.kind == engine::Statement::Kind::kExplain) {
      return Status::InvalidArgument("a query cannot run as an update; send it as CommandStatementQuery");
    }
    return Status(StatusCode::kPermissionDenied,
                  "permission denied: " + statement.type_name + " statements are not allowed" +
                      (options.read_only ? " (the server is read-only)"
                                         : "; supported: INSERT, UPDATE, DELETE, CREATE/DROP TABLE, CREATE/DROP SCHEMA"));
  }

  GStatus DoPut(ServerContext* ctx, grpc::ServerReaderWriter<pb::PutResult, pb::FlightData>* rw) {
    auto session = SessionFor(ctx);
    if (!session.ok()) return SessionError(session.status());
    Session& s = **session;
    pb::FlightData first;
    if (!rw->Read(&first)) return GStatus(GCode::INVALID_ARGUMENT, "DoPut without a first message");
    Any cmd;
    if (!cmd.ParseFromString(first.flight_descriptor().cmd())) {
      return GStatus(GCode::INVALID_ARGUMENT, "malformed command: not a protobuf Any");
    }
    if (IsFlightSqlCommand(cmd, "CommandStatementUpdate")) {
      pbsql::CommandStatementUpdate u;
      if (!cmd.UnpackTo(&u)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandStatementUpdate");
      if (u.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
      auto n = RunUpdate(s, u.query());
      if (!n.ok()) return ToGrpc(n.status());
      pbsql::DoPutUpdateResult r;
      r.set_record_count(*n);
      return WritePut(rw, r.SerializeAsString());
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery") || IsFlightSqlCommand(cmd, "CommandPreparedStatementUpdate")) {
      bool query = IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery");
      std::string handle;
      if (query) {
        pbsql::CommandPreparedStatementQuery q;
        if (!cmd.UnpackTo(&q)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandPreparedStatementQuery");
        handle = q.prepared_statement_handle();
      } else {
        pbsql::CommandPreparedStatementUpdate q;
        if (!cmd.UnpackTo(&q)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandPreparedStatementUpdate");
        handle = q.prepared_statement_handle();
      }
      auto prepared = FindPrepared(s, handle);
      if (!prepared.ok()) return ToGrpc(prepared.status());
      std::shared_ptr<ParamSet> params;
      if (!first.data_header().empty() || (*prepared)->parameter_count > 0) {
        auto read = ReadParams(first, rw);
        if (!read.ok()) return ToGrpc(read.status());
        params = *read;
        if (params->schema->n_children != (*prepared)->parameter_count) {
          return GStatus(GCode::INVALID_ARGUMENT,
                         "parameter batch has " + std::to_string(params->schema->n_children) +
                             " columns; the statement has " + std::to_string((*prepared)->parameter_count) +
                             " parameters");
        }
      }
      if (query) {
        if ((*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is an update");
        // Check the values bind now, so a wrong parameter type fails here, not in DoGet.
        if (params && !params->batches.empty()) {
          auto con = Connect(s);
          if (!con.ok()) return ToGrpc(con.status());
          auto stmt = PrepareQuery(s, **con, (*prepared)->sql);
          if (!stmt.ok()) return ToGrpc(stmt.status());
          Status bound = (*stmt)->BindRow(*params->schema.get(), *params->batches[0].get(), 0);
          if (!bound.ok()) return ToGrpc(bound);
        }
        {
          std::lock_guard<std::mutex> lock(s.mu);
          (*prepared)->params = params;
        }
        pbsql::DoPutPreparedStatementResult r;
        r.set_prepared_statement_handle(handle);
        return WritePut(rw, r.SerializeAsString());
      }
      if (!(*prepared)->write) return GStatus(GCode::INVALID_ARGUMENT, "the prepared statement is a query, not an update");
      if (options.read_only) return GStatus(GCode::PERMISSION_DENIED, "permission denied: the server is read-only");
      int64_t total = 0;
      std::vector<std::vector<std::string>> rows = {{}};
      if (params) {
        auto lits = ParamLiterals(*params);
        if (!lits.ok()) return ToGrpc(lits.status());
        rows = *lits;
      }
      for (const auto& row : rows) {
        auto n = RunUpdate(s, (*prepared)->sql, row);
        if (!n.ok()) return ToGrpc(n.status());
        total += *n;
      }
      pbsql::DoPutUpdateResult r;
      r.set_record_count(total);
      return WritePut(rw, r.SerializeAsString());
    }
    if (IsFlightSqlCommand(cmd, "CommandStatementIngest")) {
      pbsql::CommandStatementIngest in;
      if (!cmd.UnpackTo(&in)) return GStatus(GCode::INVALID_ARGUMENT, "malformed CommandStatementIngest");
      if (options.read_only) return GStatus(GCode::PERMISSION_DENIED, "permission denied: the server is read-only");
      if (in.temporary()) return GStatus(GCode::INVALID_ARGUMENT, "temporary tables are not supported");
      if (in.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
      std::vector<std::string> parts;
      if (in.has_catalog()) parts.push_back(in.catalog());
      if (in.has_schema() || in.has_catalog()) parts.push_back(in.schema());
      parts.push_back(in.table());
      auto ident = lake.Resolve(parts, SessionSchema(s));
      if (!ident.ok()) return ToGrpc(ident.status());
      using Opt = pbsql::CommandStatementIngest::TableDefinitionOptions;
      bool create = in.table_definition_options().if_not_exist() == Opt::TABLE_NOT_EXIST_OPTION_CREATE;
      auto if_exists = in.table_definition_options().if_exists();
      auto existing = lake.catalog().LoadTable(*ident);
      bool exists = existing.ok();
      sql::LakeSql::IngestMode mode;
      if (!exists && !create) return GStatus(GCode::NOT_FOUND, "table " + ident->ToString() + " does not exist");
      if (exists && if_exists != Opt::TABLE_EXISTS_OPTION_APPEND && if_exists != Opt::TABLE_EXISTS_OPTION_REPLACE) {
        return GStatus(GCode::ALREADY_EXISTS, "table " + ident->ToString() + " already exists");
      }
      if (if_exists == Opt::TABLE_EXISTS_OPTION_REPLACE) {
        mode = sql::LakeSql::IngestMode::kReplace;
      } else if (exists) {
        mode = sql::LakeSql::IngestMode::kAppend;
      } else {
        mode = sql::LakeSql::IngestMode::kCreateAppend;
      }
      auto stream = FlightDataStream(first, [rw](pb::FlightData* m) { return rw->Read(m); });
      auto n = lake.Ingest(*ident, stream.get(), mode);
      if (!n.ok()) return ToGrpc(n.status());
      pbsql::DoPutUpdateResult r;
      r.set_record_count(*n);
      return WritePut(rw, r.SerializeAsString());
    }
    if (cmd.type_url().rfind(std::string(kFlightSqlTypePrefix), 0) == 0) {
      return GStatus(GCode::INVALID_ARGUMENT, "command " + cmd.type_url() + " is not valid for DoPut");
    }
    return GStatus(GCode::INVALID_ARGUMENT, "unknown command type '" + cmd.type_url() + "'");
  }

  // ---- DoAction

  static GStatus Reply(grpc::ServerWriter<pb::Result>* w, const std::string& body) {
    pb::Result r;
    r.set_body(body);
    w->Write(r);
    return GStatus::OK;
  }

  // Cancels the statements whose tickets `info` carries; the resulting CancelStatus.
  pb::CancelStatus Cancel(Session& caller, const pb::FlightInfo& info) {
    pb::CancelStatus result = pb::CANCEL_STATUS_NOT_CANCELLABLE;
    for (const auto& ep : info.endpoint()) {
      Any t;
      pbsql::TicketStatementQuery q;
      std::string handle;
      if (t.ParseFromString(ep.ticket().ticket()) && IsFlightSqlCommand(t, "TicketStatementQuery") && t.UnpackTo(&q)) {
        handle = q.statement_handle();
      } else {
        pbsql::CommandPreparedStatementQuery p;
        if (t.UnpackTo(&p)) handle = p.prepared_statement_handle();
      }
      if (handle.empty()) continue;
      std::shared_ptr<Session> owner;
      {
        std::lock_guard<std::mutex> lock(mu);
        auto it = sessions.find(handle.substr(0, handle.find(':')));
        if (it == sessions.end() || it->second->user != caller.user) continue;
        owner = it->second;
      }
      std::lock_guard<std::mutex> lock(owner->mu);
      auto run = owner->running.find(handle);
      if (run != owner->running.end()) {
        run->second.connection->Interrupt();
        result = pb::CANCEL_STATUS_CANCELLED;
      } else if (owner->queries.erase(handle) > 0) {
        result = pb::CANCEL_STATUS_CANCELLED;
      }
    }
    return result;
  }

  GStatus DoAction(ServerContext* ctx, const pb::Action& action, grpc::ServerWriter<pb::Result>* w) {
    auto session = SessionFor(ctx);
    if (!session.ok()) return SessionError(session.status());
    Session& s = **session;
    const std::string& type = action.type();
    if (type == "CreatePreparedStatement") {
      Any any;
      pbsql::ActionCreatePreparedStatementRequest req;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req)) {
        return GStatus(GCode::INVALID_ARGUMENT, "malformed ActionCreatePreparedStatementRequest");
      }
      if (req.has_transaction_id()) return GStatus(GCode::INVALID_ARGUMENT, "transactions are not supported");
      auto prepared = std::make_shared<Prepared>();
      prepared->sql = req.query();
      pbsql::ActionCreatePreparedStatementResult result;
      auto write = engine::ParseStatement(req.query());
      if (!write.ok()) return ToGrpc(write.status());
      if (write->is_write()) {
        if (options.read_only) return GStatus(GCode::PERMISSION_DENIED, "permission denied: the server is read-only");
        prepared->write = *write;
        const int64_t n = write->parameter_count;
        prepared->parameter_count = n;
        auto b = arrow::RecordBatchBuilder([&] {
          std::vector<arrow::ArrayBuilder> cols;
          for (int64_t i = 0; i < n; ++i) cols.emplace_back(std::to_string(i + 1), "n", true);
          return cols;
        }());
        arrow::SchemaHandle ps;
        arrow::ArrayHandle unused;
        (void)b.Finish(ps.get(), unused.get());
        auto bytes = SerializeSchema(*ps.get());
        if (!bytes.ok()) return ToGrpc(bytes.status());
        result.set_parameter_schema(*bytes);
      } else {
        auto con = Connect(s);
        if (!con.ok()) return ToGrpc(con.status());
        auto stmt = PrepareQuery(s, **con, req.query());
        if (!stmt.ok()) return ToGrpc(stmt.status());
        prepared->parameter_count = (*stmt)->parameter_count();
        auto ds = ResultSchemaOrEmpty(**stmt);
        auto ps = (*stmt)->ParameterSchema();
        if (!ps.ok()) return ToGrpc(ps.status());
        ArrowSchema annotated;
        AnnotateResultSchema(*ds->get(), &annotated);
        arrow::SchemaHandle owned(&annotated);
        auto ds_bytes = SerializeSchema(*owned.get());
        auto ps_bytes = SerializeSchema(*ps->get());
        if (!ds_bytes.ok()) return ToGrpc(ds_bytes.status());
        if (!ps_bytes.ok()) return ToGrpc(ps_bytes.status());
        result.set_dataset_schema(*ds_bytes);
        result.set_parameter_schema(*ps_bytes);
      }
      std::string handle = s.id + ":" + Uuid::NewV7().ToString();
      {
        std::lock_guard<std::mutex> lock(s.mu);
        s.prepared[handle] = prepared;
      }
      result.set_prepared_statement_handle(handle);
      return Reply(w, PackAny(result));
    }
    if (type == "ClosePreparedStatement") {
      Any any;
      pbsql::ActionClosePreparedStatementRequest req;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req)) {
        return GStatus(GCode::INVALID_ARGUMENT, "malformed ActionClosePreparedStatementRequest");
      }
      auto owner = SessionOfHandle(req.prepared_statement_handle(), *session);
      if (!owner.ok()) return ToGrpc(owner.status());
      std::lock_guard<std::mutex> lock((*owner)->mu);
      if ((*owner)->prepared.erase(req.prepared_statement_handle()) == 0) {
        return GStatus(GCode::NOT_FOUND, "unknown or already closed prepared statement");
      }
      return GStatus::OK;
    }
    if (type == "CancelFlightInfo") {
      pb::CancelFlightInfoRequest req;
      if (!req.ParseFromString(action.body())) return GStatus(GCode::INVALID_ARGUMENT, "malformed CancelFlightInfoRequest");
      pb::CancelFlightInfoResult r;
      r.set_status(Cancel(s, req.info()));
      return Reply(w, r.SerializeAsString());
    }
    if (type == "CancelQuery") {
      Any any;
      pbsql::ActionCancelQueryRequest req;
      pb::FlightInfo info;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req) || !info.ParseFromString(req.info())) {
        return GStatus(GCode::INVALID_ARGUMENT, "malformed ActionCancelQueryRequest");
      }
      pbsql::ActionCancelQueryResult r;
      r.set_result(static_cast<pbsql::ActionCancelQueryResult::CancelResult>(Cancel(s, info)));
      return Reply(w, PackAny(r));
    }
    if (type == "SetSessionOptions") {
      pb::SetSessionOptionsRequest req;
      if (!req.ParseFromString(action.body())) return GStatus(GCode::INVALID_ARGUMENT, "malformed SetSessionOptionsRequest");
      pb::SetSessionOptionsResult r;
      for (const auto& [name, value] : req.session_options()) {
        auto set_error = [&](pb::SetSessionOptionsResult::ErrorValue e) { (*r.mutable_errors())[name].set_value(e); };
        if (name == "catalog") {
          if (!value.has_string_value() || value.string_value() != lake.catalog_name()) {
            set_error(pb::SetSessionOptionsResult::INVALID_VALUE);
          }
        } else if (name == "schema") {
          if (!value.has_string_value()) {
            set_error(pb::SetSessionOptionsResult::INVALID_VALUE);
            continue;
          }
          const std::string& schema = value.string_value();
          auto ns = sql::LakeSql::NamespaceOf(schema);
          auto exists = ns.ok() ? lake.catalog().NamespaceExists(*ns) : Result<bool>(false);
          if (!schema.empty() && (!exists.ok() || !*exists)) {
            set_error(pb::SetSessionOptionsResult::INVALID_VALUE);
            continue;
          }
          std::lock_guard<std::mutex> lock(s.mu);
          s.schema = schema;
        } else {
          set_error(pb::SetSessionOptionsResult::INVALID_NAME);
        }
      }
      return Reply(w, r.SerializeAsString());
    }
    if (type == "GetSessionOptions") {
      pb::GetSessionOptionsResult r;
      (*r.mutable_session_options())["catalog"].set_string_value(lake.catalog_name());
      (*r.mutable_session_options())["schema"].set_string_value(SessionSchema(s));
      return Reply(w, r.SerializeAsString());
    }
    if (type == "CloseSession") {
      {
        std::lock_guard<std::mutex> lock(mu);
        sessions.erase(s.id);
      }
      {
        std::lock_guard<std::mutex> lock(s.mu);
        for (auto& [h, run] : s.running) run.connection->Interrupt();
      }
      pb::CloseSessionResult r;
      r.set_status(pb::CloseSessionResult::CLOSED);
      return Reply(w, r.SerializeAsString());
    }
    if (type == "BeginTransaction" || type == "EndTransaction" || type == "BeginSavepoint" || type == "EndSavepoint") {
      return GStatus(GCode::UNIMPLEMENTED,
                     "transactions are not supported: every statement commits atomically on its own "
                     "(SqlInfo FLIGHT_SQL_SERVER_TRANSACTION = NONE)");
    }
    if (type == "RenewFlightEndpoint") {
      // Endpoints carry no expiration here: renewing returns the endpoint as it is.
      pb::RenewFlightEndpointRequest req;
      if (!req.ParseFromString(action.body())) {
        return GStatus(GCode::INVALID_ARGUMENT, "malformed RenewFlightEndpointRequest");
      }
      return Reply(w, req.endpoint().SerializeAsString());
    }
    if (type == "CreatePreparedSubstraitPlan") return GStatus(GCode::UNIMPLEMENTED, "Substrait plans are not supported");
    return GStatus(GCode::INVALID_ARGUMENT, "unknown action type '" + type + "'");
  }

  // ---- housekeeping: query timeouts and idle sessions

  void Reap() {
    std::unique_lock<std::mutex> lock(reaper_mu);
    while (!shutting_down) {
      reaper_cv.wait_for(lock, std::chrono::milliseconds(100));
      int64_t now = MonotonicNanos();
      std::vector<std::shared_ptr<Session>> all;
      {
        std::lock_guard<std::mutex> g(mu);
        for (auto& [id, s] : sessions) all.push_back(s);
      }
      int64_t timeout_ns = options.query_timeout.count() * 1000000000LL;
      int64_t idle_ns = options.session_idle_timeout.count() * 1000000000LL;
      for (auto& s : all) {
        bool busy = false;
        {
          std::lock_guard<std::mutex> g(s->mu);
          for (auto& [h, run] : s->running) {
            busy = true;
            if (timeout_ns > 0 && !run.timed_out && now - run.started_ns > timeout_ns) {
              run.timed_out = true;
              run.connection->Interrupt();
            }
          }
        }
        if (!busy && idle_ns > 0 && now - s->last_used_ns > idle_ns) {
          std::lock_guard<std::mutex> g(mu);
          sessions.erase(s->id);
          SKADE_LOG_INFO("flight sql: session {} closed after being idle", s->id);
        }
      }
    }
  }

  void Shutdown() {
    std::call_once(shutdown_once, [this] {
      shutting_down = true;
      reaper_cv.notify_all();
      {
        std::lock_guard<std::mutex> lock(mu);
        for (auto& [id, s] : sessions) {
          std::lock_guard<std::mutex> g(s->mu);
          for (auto& [h, run] : s->running) run.connection->Interrupt();
        }
      }
      if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      if (reaper.joinable()) reaper.join();
    });
  }
};

FlightSqlServer::FlightSqlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FlightSqlServer::~FlightSqlServer() { Shutdown(); }

int FlightSqlServer::port() const { return impl_->port; }
void FlightSqlServer::Shutdown() { impl_->Shutdown(); }
void FlightSqlServer::Wait() {
  if (impl_->server) impl_->server->Wait();
}

Result<std::unique_ptr<FlightSqlServer>> FlightSqlServer::Start(sql::LakeSql& lake, ServerOptions options) {
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return Status::InvalidArgument("TLS needs both a certificate and a key");
  }
  if (options.require_auth && options.users.empty()) return Status::InvalidArgument("basic auth needs at least one user");
  auto impl = std::make_unique<Impl>(lake, std::move(options));
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!impl->options.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({impl->options.tls_key_pem, impl->options.tls_cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(impl->options.host + ":" + std::to_string(impl->options.port), creds, &impl->port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.RegisterService(impl.get());
  for (grpc::Service* s : impl->options.extra_services) builder.RegisterService(s);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return Status::Unavailable("cannot listen on " + impl->options.host + ":" + std::to_string(impl->options.port));
  }
  Impl* raw = impl.get();
  impl->reaper = std::thread([raw] { raw->Reap(); });
  return std::unique_ptr<FlightSqlServer>(new FlightSqlServer(std::move(impl)));
}

}  // namespace skade::flightsql
