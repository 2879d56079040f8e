#include "skade/events/commit_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "commits.grpc.pb.h"
#include "skade/base/log.h"
#include "skade/events/replay.h"

namespace skade::events {

namespace {

// How often a waiting stream checks for shutdown and client cancellation.
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

void ToMessage(const CommitEvent& event, skade::v1::CommitEventMessage* message) {
  message->Clear();
  message->set_commit_seq(event.commit_seq);
  for (const std::string& level : event.table().ns.levels) message->add_namespace_levels(level);
  message->set_table(event.table().name);
  message->set_table_name(event.table_name());
  if (event.snapshot_id) message->set_snapshot_id(*event.snapshot_id);
  message->set_metadata_location(event.metadata_location());
  message->set_committed_at_us(event.committed_at_us);
  message->set_operation(event.operation());
  message->set_added_records(event.added_records);
  message->set_deleted_records(event.deleted_records);
}

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kUnauthorized:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case StatusCode::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    default:
      break;
  }
  return grpc::Status(code, status.ToString());
}

}  // namespace

struct CommitService::Impl final : public skade::v1::Commits::Service {
  Impl(catalog::Catalog& catalog, Bus& bus, Options options)
      : catalog_(catalog), bus_(bus), options_(options) {}

  // The caller's credentials, checked by the server's rule (Options::authorize).
  grpc::Status Authorize(grpc::ServerContext* context) {
    if (!options_.authorize) return grpc::Status::OK;
    const auto& md = context->client_metadata();
    auto it = md.find("authorization");
    std::string header = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
    return ToGrpc(options_.authorize(header));
  }

  grpc::Status Latest(grpc::ServerContext* context, const skade::v1::LatestRequest*,
                      skade::v1::LatestResponse* response) override {
    if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
    Result<int64_t> head = catalog_.LatestCommitSeq();
    if (!head.ok()) return ToGrpc(head.status());
    response->set_commit_seq(*head);
    return grpc::Status::OK;
  }

  grpc::Status Subscribe(grpc::ServerContext* context, const skade::v1::SubscribeRequest* request,
                         grpc::ServerWriter<skade::v1::CommitEventMessage>* writer) override {
    if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
    if (request->after_commit_seq() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "after_commit_seq must be >= 0 (absent = from now)");
    }
    // Names that are valid but not (yet) tables match nothing: the stream stays open and
    // empty, since such a table may be created later (documented in commits.proto).
    std::set<std::string> tables;
    for (const std::string& name : request->tables()) {
      Result<catalog::TableIdent> ident = catalog::TableIdent::Parse(name);
      if (!ident.ok() || ident->ns.empty() || ident->name.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "table filter '" + name + "' is not ns.table");
      }
      tables.insert(ident->ToString());
      if (request->existing_tables_only()) {
        // Asked of the catalog's listing, not by loading the table: no metadata file is read.
        Result<std::vector<catalog::TableIdent>> listed = catalog_.ListTables(ident->ns);
        const bool found = listed.ok() && std::find(listed->begin(), listed->end(), *ident) != listed->end();
        if (!listed.ok() && listed.status().code() != StatusCode::kNotFound) return ToGrpc(listed.status());
        if (!found) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND, "table " + ident->ToString() + " does not exist");
        }
      }
    }
    if (shutting_down_) return Unavailable();
    std::optional<int64_t> after;
    if (request->has_after_commit_seq()) after = request->after_commit_seq();
    Result<std::unique_ptr<ReplayThenTail>> opened =
        ReplayThenTail::Open(catalog_, bus_, after, {.replay_batch = options_.replay_batch});
    if (!opened.ok()) return ToGrpc(opened.status());
    ReplayThenTail& stream = **opened;
    active_streams_.fetch_add(1);
    int64_t counted_buffer = 0;
    skade::v1::CommitEventMessage message;
    grpc::Status result;
    while (true) {
      if (shutting_down_) {
        result = Unavailable();
        break;
      }
      if (context->IsCancelled()) {
        result = grpc::Status(grpc::StatusCode::CANCELLED, "client cancelled");
        break;
      }
      Result<std::optional<CommitEvent>> next = stream.Next(kCheckInterval);
      int64_t buffered = static_cast<int64_t>(stream.buffered());
      buffered_events_.fetch_add(buffered - counted_buffer);
      counted_buffer = buffered;
      if (!next.ok()) {
        if (stream.closed()) {
          result = Unavailable();
          break;
        }
        // A catalog read failed (database busy or briefly down): the log is still the truth,
        // so wait and retry from the same cursor.
        SKADE_LOG_WARN("commit stream: {}", next.status().ToString());
        std::this_thread::sleep_for(kCheckInterval);
        continue;
      }
      if (!next->has_value()) continue;
      const CommitEvent& event = **next;
      if (!tables.empty() && !tables.count(event.table_name())) continue;
      ToMessage(event, &message);
      // Blocks while the client's flow-control window is full: a slow reader holds back only
      // its own stream, and the server buffers no more than the window.
      if (!writer->Write(message)) {
        result = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
        break;
      }
      events_sent_.fetch_add(1);
    }
    buffered_events_.fetch_sub(counted_buffer);
    active_streams_.fetch_sub(1);
    return result;
  }

  static grpc::Status Unavailable() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "commit service shutting down");
  }

  catalog::Catalog& catalog_;
  Bus& bus_;
  const Options options_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int64_t> active_streams_{0};
  std::atomic<int64_t> events_sent_{0};
  std::atomic<int64_t> buffered_events_{0};
};

CommitService::CommitService(catalog::Catalog& catalog, Bus& bus, Options options)
    : impl_(std::make_unique<Impl>(catalog, bus, options)) {}

CommitService::~CommitService() = default;

grpc::Service* CommitService::grpc_service() { return impl_.get(); }

void CommitService::Shutdown() { impl_->shutting_down_ = true; }

CommitServiceStats CommitService::stats() const {
  CommitServiceStats stats;
  stats.active_streams = impl_->active_streams_.load();
  stats.events_sent = impl_->events_sent_.load();
  stats.buffered_events = impl_->buffered_events_.load();
  return stats;
}

struct CommitServer::ServerHolder {
  std::unique_ptr<grpc::Server> server;
  std::atomic<bool> stopped{false};
};

Result<std::unique_ptr<CommitServer>> CommitServer::Start(catalog::Catalog& catalog, Bus& bus,
                                                          const std::string& host, int port) {
  auto service = std::make_unique<CommitService>(catalog, bus);
  auto holder = std::make_unique<ServerHolder>();
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(host + ":" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &bound_port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a port in use fails to bind
  builder.RegisterService(service->grpc_service());
  holder->server = builder.BuildAndStart();
  if (!holder->server || bound_port == 0) {
    return Status::Unavailable("commit server: cannot listen on " + host + ":" +
                               std::to_string(port));
  }
  return std::unique_ptr<CommitServer>(
      new CommitServer(std::move(service), std::move(holder), bound_port));
}

CommitServer::CommitServer(std::unique_ptr<CommitService> service,
                           std::unique_ptr<ServerHolder> server, int port)
    : service_(std::move(service)), server_(std::move(server)), port_(port) {}

CommitServer::~CommitServer() { Shutdown(); }

void CommitServer::Shutdown() {
  if (server_->stopped.exchange(true)) return;
  service_->Shutdown();
  // Streams notice within kCheckInterval; a stream stuck in Write to a client that does not
  // read is cancelled at the deadline.
  server_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->server->Wait();
}

}  // namespace skade::events
