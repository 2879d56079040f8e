// Protocol dispatch of the Flight SQL server: the FlightService methods, authentication,
// session cookies, and the decoding of Flight SQL commands from their protobuf Any; what each
// command does is in the Backend (backend_internal.h).
#include "skade/flightsql/server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>

#include "skade/base/base64.h"
#include "skade/base/forwarded.h"
#include "skade/base/log.h"
#include "skade/base/random.h"
#include "skade/flightsql/auth.h"
#include "skade/flightsql/backend_internal.h"
#include "skade/sql/client_query.h"

namespace skade::flightsql {

using google::protobuf::Any;
using grpc::ServerContext;

namespace {

constexpr const char* kCookieName = "arrow_flight_session_id";

std::string Header(ServerContext* ctx, std::string_view name) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(grpc::string_ref(name.data(), name.size()));
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// The value of the session cookie in a `cookie` header ("" when absent).
std::string SessionCookie(const std::string& cookies) {
  const std::string key = std::string(kCookieName) + "=";
  std::string id;
  for (size_t pos = 0; pos <= cookies.size();) {
    size_t end = cookies.find(';', pos);
    std::string item = cookies.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    size_t first = item.find_first_not_of(' ');
    if (first != std::string::npos && item.compare(first, key.size(), key) == 0) id = item.substr(first + key.size());
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return id;
}

// Whose streams a call's count against: its authenticated principal, or without
// authentication its network address ("ipv4:127.0.0.1:53422" → "127.0.0.1"), behind a trusted
// balancer the client's address it forwards.
std::string StreamOwner(ServerContext* ctx, const std::string& principal, bool authenticated,
                        const std::vector<std::string>& trusted_proxies) {
  if (authenticated) return "user:" + principal;
  std::string peer = ctx->peer();
  // gRPC's peer text: "ipv4:ADDR:PORT", "ipv6:[ADDR]:PORT", "unix:PATH".
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (!peer.starts_with(scheme)) continue;
    std::string address = peer.substr(scheme.size());
    const size_t colon = address.rfind(':');
    if (colon != std::string::npos) address.resize(colon);
    if (address.size() >= 2 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
    return "peer:" + ClientBehindProxies(address, Header(ctx, "x-forwarded-for"), trusted_proxies);
  }
  return "peer:" + peer;
}

GStatus Malformed(std::string_view what) { return GStatus(GCode::INVALID_ARGUMENT, "malformed " + std::string(what)); }

// Unpacks `any` into `message`, which must be the Flight SQL message `name`.
template <typename M>
bool Unpack(const Any& any, std::string_view name, M* message) {
  return IsFlightSqlCommand(any, name) && any.UnpackTo(message);
}

}  // namespace

struct FlightSqlServer::Impl final : public grpc::Service {
  ServerOptions options;
  std::shared_ptr<Authenticator> auth;
  Backend backend;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::atomic<bool> shutting_down{false};
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  std::thread reaper;
  std::once_flag shutdown_once;

  Impl(sql::LakeSql& lake, ServerOptions o)
      : options(std::move(o)),
        auth(options.authenticator ? options.authenticator : std::make_shared<Authenticator>(AuthOptions{})),
        backend(lake, options) {
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
              return s->GetFlightInfo(c, *d, InfoUse::kExecute, out);
            },
            this));
    add("/arrow.flight.protocol.FlightService/PollFlightInfo", RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<Self, pb::FlightDescriptor, pb::PollInfo, google::protobuf::MessageLite,
                                             google::protobuf::MessageLite>(
            [](Self* s, ServerContext* c, const pb::FlightDescriptor* d, pb::PollInfo* out) {
              GStatus st = s->GetFlightInfo(c, *d, InfoUse::kExecute, out->mutable_info());
              if (st.ok()) out->set_progress(1.0);  // complete: no flight_descriptor to poll again
              return st;
            },
            this));
    add("/arrow.flight.protocol.FlightService/GetSchema", RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<Self, pb::FlightDescriptor, pb::SchemaResult,
                                             google::protobuf::MessageLite, google::protobuf::MessageLite>(
            [](Self* s, ServerContext* c, const pb::FlightDescriptor* d, pb::SchemaResult* out) {
              pb::FlightInfo info;
              // The schema alone: a write statement's schema does not run it.
              GStatus st = s->GetFlightInfo(c, *d, InfoUse::kSchemaOnly, &info);
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
              auto who = s->CallerFor(c);
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

  // ---- who calls

  // The caller of `ctx`: its principal, and the session its cookie names. Without a cookie the
  // call has no session unless `create_session` (SetSessionOptions), which makes one and sets
  // the cookie.
  Result<Caller> CallerFor(ServerContext* ctx, bool create_session = false) {
    if (shutting_down) return Status::Unavailable("server is shutting down");
    Caller caller;
    caller.context = ctx;
    SKADE_ASSIGN_OR_RETURN(caller.principal, auth->Check(Header(ctx, "authorization")));
    std::string id = SessionCookie(Header(ctx, "cookie"));
    if (!id.empty()) {
      SKADE_ASSIGN_OR_RETURN(caller.session, backend.registry().FindSession(id, caller.principal));
      // A cookie half way to its expiry is renewed (SetSessionOptions sets a new one anyway).
      if (!create_session) {
        if (auto fresh = backend.registry().Refresh(id)) {
          ctx->AddInitialMetadata("set-cookie", std::string(kCookieName) + "=" + *fresh);
        }
      }
    } else if (create_session) {
      // Its cookie is set once its options are (SetSessionOptions): the cookie carries them.
      caller.session = backend.registry().CreateSession(caller.principal);
    }
    return caller;
  }

  GStatus Handshake(ServerContext* ctx, grpc::ServerReaderWriter<pb::HandshakeResponse, pb::HandshakeRequest>* rw) {
    pb::HandshakeRequest request;
    bool got = rw->Read(&request);
    std::string principal;
    if (auth->enabled()) {
      std::string header = Header(ctx, "authorization");
      Result<std::string> who = Status::Unauthorized("Handshake needs basic auth (header or BasicAuth payload)");
      if (header.starts_with("Basic ")) {
        who = auth->CheckBasic(DecodeBase64(std::string_view(header).substr(6)));
      } else if (got && !request.payload().empty()) {
        pb::BasicAuth basic;
        if (basic.ParseFromString(request.payload())) who = auth->CheckBasic(basic.username() + ":" + basic.password());
      }
      if (!who.ok()) return ToGrpc(who.status());
      principal = *who;
    }
    // Without authentication the token means nothing (every call is the anonymous principal),
    // but clients expect one.
    std::string token = auth->enabled() ? auth->IssueToken(principal) : RandomHex(16);
    ctx->AddInitialMetadata("authorization", "Bearer " + token);
    pb::HandshakeResponse response;
    response.set_payload(token);
    rw->Write(response);
    return GStatus::OK;
  }

  // ---- dispatch

  // A status whose message names none of the server's own folders (the warehouse, allowed
  // directories): clients see "<warehouse>/ns/t/…" instead of an absolute path.
  GStatus Redact(GStatus st) const {
    if (st.ok() || options.private_paths.empty()) return st;
    return GStatus(st.error_code(), sql::RedactPaths(st.error_message(), options.private_paths));
  }

  GStatus GetFlightInfo(ServerContext* ctx, const pb::FlightDescriptor& desc, InfoUse use, pb::FlightInfo* out) {
    return Redact(DispatchGetFlightInfo(ctx, desc, use, out));
  }

  GStatus DispatchGetFlightInfo(ServerContext* ctx, const pb::FlightDescriptor& desc, InfoUse use,
                                pb::FlightInfo* out) {
    auto caller = CallerFor(ctx);
    if (!caller.ok()) return ToGrpc(caller.status());
    if (desc.type() != pb::FlightDescriptor::CMD) {
      return GStatus(GCode::INVALID_ARGUMENT, "expected a CMD descriptor holding a Flight SQL command");
    }
    Any cmd;
    if (!cmd.ParseFromString(desc.cmd())) return Malformed("command: not a protobuf Any");
    if (IsMetadataCommand(cmd)) return backend.MetadataInfo(cmd, desc, out);
    if (IsFlightSqlCommand(cmd, "CommandStatementQuery")) {
      pbsql::CommandStatementQuery q;
      if (!cmd.UnpackTo(&q)) return Malformed("CommandStatementQuery");
      return backend.StatementInfo(*caller, q, desc, use, out);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery")) {
      pbsql::CommandPreparedStatementQuery q;
      if (!cmd.UnpackTo(&q)) return Malformed("CommandPreparedStatementQuery");
      return backend.PreparedInfo(*caller, q, desc, use, out);
    }
    if (IsFlightSqlCommand(cmd, "CommandStatementSubstraitPlan")) {
      return GStatus(GCode::UNIMPLEMENTED, "Substrait plans are not supported; send SQL");
    }
    return UnknownCommand(cmd, "GetFlightInfo");
  }

  static GStatus UnknownCommand(const Any& cmd, std::string_view rpc) {
    if (cmd.type_url().starts_with(kFlightSqlTypePrefix)) {
      return GStatus(GCode::INVALID_ARGUMENT, "command " + cmd.type_url() + " is not valid for " + std::string(rpc));
    }
    return GStatus(GCode::INVALID_ARGUMENT, "unknown command type '" + cmd.type_url() + "'");
  }

  GStatus DoGet(ServerContext* ctx, const pb::Ticket& ticket, DataWriter* writer) {
    return Redact(DispatchDoGet(ctx, ticket, writer));
  }

  // Admits the stream of `caller` (limits_internal.h); kResourceExhausted past its limits.
  Result<std::unique_ptr<ActiveStream>> Admit(ServerContext* ctx, Caller& caller) {
    SKADE_ASSIGN_OR_RETURN(auto stream,
                           backend.streams().Admit(StreamOwner(ctx, caller.principal, auth->enabled(), options.trusted_proxies), ctx));
    caller.stream = stream.get();
    return stream;
  }

  GStatus DispatchDoGet(ServerContext* ctx, const pb::Ticket& ticket, DataWriter* writer) {
    auto caller = CallerFor(ctx);
    if (!caller.ok()) return ToGrpc(caller.status());
    auto admitted = Admit(ctx, *caller);
    if (!admitted.ok()) return ToGrpc(admitted.status());
    Any cmd;
    if (!cmd.ParseFromString(ticket.ticket())) return Malformed("ticket");
    if (IsMetadataCommand(cmd)) return backend.GetMetadata(*caller, cmd, writer);
    if (IsFlightSqlCommand(cmd, "TicketStatementQuery")) {
      pbsql::TicketStatementQuery t;
      if (!cmd.UnpackTo(&t)) return Malformed("TicketStatementQuery");
      return backend.GetStatement(*caller, t, writer);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery")) {
      pbsql::CommandPreparedStatementQuery q;
      if (!cmd.UnpackTo(&q)) return Malformed("CommandPreparedStatementQuery");
      return backend.GetPrepared(*caller, q, writer);
    }
    return GStatus(GCode::INVALID_ARGUMENT, "unknown ticket type '" + cmd.type_url() + "'");
  }

  GStatus DoPut(ServerContext* ctx, PutStream* stream) {
    return Redact(DispatchDoPut(ctx, stream));
  }

  GStatus DispatchDoPut(ServerContext* ctx, PutStream* stream) {
    auto caller = CallerFor(ctx);
    if (!caller.ok()) return ToGrpc(caller.status());
    auto admitted = Admit(ctx, *caller);
    if (!admitted.ok()) return ToGrpc(admitted.status());
    pb::FlightData first;
    bool got_first;
    {
      auto wait = caller->stream->WaitForClient();
      got_first = stream->Read(&first);
    }
    if (!got_first) return GStatus(GCode::INVALID_ARGUMENT, "DoPut without a first message");
    Any cmd;
    if (!cmd.ParseFromString(first.flight_descriptor().cmd())) return Malformed("command: not a protobuf Any");
    if (IsFlightSqlCommand(cmd, "CommandStatementUpdate")) {
      pbsql::CommandStatementUpdate u;
      if (!cmd.UnpackTo(&u)) return Malformed("CommandStatementUpdate");
      return backend.PutStatementUpdate(*caller, u, first, stream);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementQuery")) {
      pbsql::CommandPreparedStatementQuery q;
      if (!cmd.UnpackTo(&q)) return Malformed("CommandPreparedStatementQuery");
      return backend.PutPreparedQuery(*caller, q.prepared_statement_handle(), first, stream);
    }
    if (IsFlightSqlCommand(cmd, "CommandPreparedStatementUpdate")) {
      pbsql::CommandPreparedStatementUpdate u;
      if (!cmd.UnpackTo(&u)) return Malformed("CommandPreparedStatementUpdate");
      return backend.PutPreparedUpdate(*caller, u.prepared_statement_handle(), first, stream);
    }
    if (IsFlightSqlCommand(cmd, "CommandStatementIngest")) {
      pbsql::CommandStatementIngest in;
      if (!cmd.UnpackTo(&in)) return Malformed("CommandStatementIngest");
      return backend.PutIngest(*caller, in, first, stream);
    }
    return UnknownCommand(cmd, "DoPut");
  }

  static GStatus Reply(grpc::ServerWriter<pb::Result>* w, const std::string& body) {
    pb::Result r;
    r.set_body(body);
    if (!w->Write(r)) return GStatus(GCode::CANCELLED, "client went away before the result");
    return GStatus::OK;
  }

  GStatus DoAction(ServerContext* ctx, const pb::Action& action, grpc::ServerWriter<pb::Result>* w) {
    return Redact(DispatchDoAction(ctx, action, w));
  }

  GStatus DispatchDoAction(ServerContext* ctx, const pb::Action& action, grpc::ServerWriter<pb::Result>* w) {
    const std::string& type = action.type();
    auto caller = CallerFor(ctx, type == "SetSessionOptions");
    if (!caller.ok()) return ToGrpc(caller.status());
    if (type == "CreatePreparedStatement") {
      Any any;
      pbsql::ActionCreatePreparedStatementRequest req;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req)) {
        return Malformed("ActionCreatePreparedStatementRequest");
      }
      pbsql::ActionCreatePreparedStatementResult result;
      GStatus st = backend.CreatePrepared(*caller, req, &result);
      return st.ok() ? Reply(w, PackAny(result)) : st;
    }
    if (type == "ClosePreparedStatement") {
      Any any;
      pbsql::ActionClosePreparedStatementRequest req;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req)) {
        return Malformed("ActionClosePreparedStatementRequest");
      }
      return backend.ClosePrepared(*caller, req);
    }
    if (type == "CancelFlightInfo") {
      pb::CancelFlightInfoRequest req;
      if (!req.ParseFromString(action.body())) return Malformed("CancelFlightInfoRequest");
      pb::CancelFlightInfoResult r;
      auto status = backend.Cancel(*caller, req.info());
      if (!status.ok()) return ToGrpc(status.status());
      r.set_status(*status);
      return Reply(w, r.SerializeAsString());
    }
    if (type == "CancelQuery") {
      Any any;
      pbsql::ActionCancelQueryRequest req;
      pb::FlightInfo info;
      if (!any.ParseFromString(action.body()) || !any.UnpackTo(&req) || !info.ParseFromString(req.info())) {
        return Malformed("ActionCancelQueryRequest");
      }
      pbsql::ActionCancelQueryResult r;
      auto status = backend.Cancel(*caller, info);
      if (!status.ok()) return ToGrpc(status.status());
      r.set_result(static_cast<pbsql::ActionCancelQueryResult::CancelResult>(*status));
      return Reply(w, PackAny(r));
    }
    if (type == "SetSessionOptions") {
      pb::SetSessionOptionsRequest req;
      if (!req.ParseFromString(action.body())) return Malformed("SetSessionOptionsRequest");
      pb::SetSessionOptionsResult r;
      backend.SetSessionOptions(*caller->session, req, &r);
      // A new cookie carrying the options: any server of the deployment serves the next call.
      ctx->AddInitialMetadata("set-cookie",
                              std::string(kCookieName) + "=" + backend.registry().Reseal(caller->session));
      return Reply(w, r.SerializeAsString());
    }
    if (type == "GetSessionOptions") {
      pb::GetSessionOptionsResult r;
      backend.GetSessionOptions(*caller, &r);
      return Reply(w, r.SerializeAsString());
    }
    if (type == "CloseSession") {
      // Without a cookie there is no session to close: closing nothing succeeds.
      if (caller->session) {
        Status closed = backend.registry().CloseSession(caller->session);
        if (!closed.ok()) return ToGrpc(closed);
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
      if (!req.ParseFromString(action.body())) return Malformed("RenewFlightEndpointRequest");
      return Reply(w, req.endpoint().SerializeAsString());
    }
    if (type == "CreatePreparedSubstraitPlan") return GStatus(GCode::UNIMPLEMENTED, "Substrait plans are not supported");
    return GStatus(GCode::INVALID_ARGUMENT, "unknown action type '" + type + "'");
  }

  // ---- housekeeping: query timeouts, idle sessions and handles, expired tokens

  void Reap() {
    std::unique_lock<std::mutex> lock(reaper_mu);
    for (int tick = 0; !shutting_down; ++tick) {
      reaper_cv.wait_for(lock, std::chrono::milliseconds(50));
      // Streams every 50 ms: a client gone or stalled frees its query within ~50 ms.
      backend.streams().Check();
      if (tick % 2 == 0) {
        backend.registry().Reap(options.query_timeout);
      }
    }
  }

  void Shutdown() {
    std::call_once(shutdown_once, [this] {
      shutting_down = true;
      reaper_cv.notify_all();
      backend.registry().InterruptAll();
      backend.streams().EndAll();
      if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      if (reaper.joinable()) reaper.join();
    });
  }
};

FlightSqlServer::FlightSqlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FlightSqlServer::~FlightSqlServer() { Shutdown(); }

int FlightSqlServer::port() const { return impl_->port; }

ServerStats FlightSqlServer::stats() const {
  ServerStats s;
  s.streams = impl_->backend.streams().active();
  s.buffered_bytes = impl_->backend.budget().used();
  s.buffered_peak_bytes = impl_->backend.budget().peak();
  return s;
}
void FlightSqlServer::Shutdown() { impl_->Shutdown(); }
void FlightSqlServer::Wait() {
  if (impl_->server) impl_->server->Wait();
}

Result<std::unique_ptr<FlightSqlServer>> FlightSqlServer::Start(sql::LakeSql& lake, ServerOptions options) {
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return Status::InvalidArgument("TLS needs both a certificate and a key");
  }
  if (options.max_sessions <= 0) return Status::InvalidArgument("max_sessions must be positive");
  if (options.max_pending_queries <= 0 || options.max_prepared <= 0) {
    return Status::InvalidArgument("max_pending_queries and max_prepared must be positive");
  }
  if (options.max_shared_params_bytes == 0 || options.max_shared_params_bytes_per_principal <= 0) {
    return Status::InvalidArgument("the limits of kept parameters must be positive");
  }
  if (static_cast<uint64_t>(options.max_shared_params_bytes_per_principal) < options.max_shared_params_bytes) {
    return Status::InvalidArgument("a principal's limit of kept parameters (" +
                                   std::to_string(options.max_shared_params_bytes_per_principal) +
                                   " bytes) is less than one binding's (" +
                                   std::to_string(options.max_shared_params_bytes) + ")");
  }
  if (options.max_streams <= 0 || options.max_streams_per_client <= 0) {
    return Status::InvalidArgument("stream limits must be positive");
  }
  if (options.buffer_budget_bytes <= 0) return Status::InvalidArgument("the buffer budget must be positive");
  // Longest first, so a folder inside another is named by its own name.
  std::stable_sort(options.private_paths.begin(), options.private_paths.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
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
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use would then "listen"
  // too, and the kernel would split clients between two lakes. Binding must fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);

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
