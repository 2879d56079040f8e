#include "skade/events/commit_client.h"

#include <utility>

#include <grpcpp/grpcpp.h>

#include "commits.grpc.pb.h"

namespace skade::events {

namespace {

Status FromGrpc(const grpc::Status& status) {
  std::string message = "commit stream: " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(std::move(message));
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(std::move(message));
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::Unauthorized(std::move(message));
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status(StatusCode::kPermissionDenied, std::move(message));
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

CommitEvent FromMessage(const skade::v1::CommitEventMessage& message) {
  catalog::CommitLogEntry entry;
  entry.commit_seq = message.commit_seq();
  entry.table.ns.levels.assign(message.namespace_levels().begin(),
                               message.namespace_levels().end());
  entry.table.name = message.table();
  if (message.has_snapshot_id()) entry.snapshot_id = message.snapshot_id();
  entry.metadata_location = message.metadata_location();
  entry.committed_at_us = message.committed_at_us();
  entry.operation = message.operation();
  entry.added_records = message.added_records();
  entry.deleted_records = message.deleted_records();
  return CommitEvent::FromLogEntry(entry);
}

class GrpcStream final : public CommitClientStream {
 public:
  GrpcStream(skade::v1::Commits::Stub& stub, const skade::v1::SubscribeRequest& request,
             std::chrono::milliseconds deadline, const std::string& authorization) {
    if (!authorization.empty()) context_.AddMetadata("authorization", authorization);
    if (deadline.count() > 0) context_.set_deadline(std::chrono::system_clock::now() + deadline);
    reader_ = stub.Subscribe(&context_, request);
  }

  ~GrpcStream() override {
    if (!finished_) {
      context_.TryCancel();
      skade::v1::CommitEventMessage ignored;
      while (reader_->Read(&ignored)) {
      }
      (void)reader_->Finish();
    }
  }

  Result<std::optional<CommitEvent>> Next() override {
    if (finished_) return final_;
    skade::v1::CommitEventMessage message;
    if (reader_->Read(&message)) return std::optional<CommitEvent>(FromMessage(message));
    finished_ = true;
    grpc::Status status = reader_->Finish();
    final_ = status.ok() ? Result<std::optional<CommitEvent>>(std::optional<CommitEvent>())
                         : Result<std::optional<CommitEvent>>(FromGrpc(status));
    return final_;
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<skade::v1::CommitEventMessage>> reader_;
  bool finished_ = false;
  Result<std::optional<CommitEvent>> final_ = std::optional<CommitEvent>();
};

class GrpcClient final : public CommitClient {
 public:
  GrpcClient(std::shared_ptr<grpc::Channel> channel, std::string authorization)
      : channel_(std::move(channel)),
        stub_(skade::v1::Commits::NewStub(channel_)),
        authorization_(std::move(authorization)) {}

  Result<int64_t> Latest(std::chrono::milliseconds timeout) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
    skade::v1::LatestResponse response;
    grpc::Status status = stub_->Latest(&context, skade::v1::LatestRequest(), &response);
    if (!status.ok()) return FromGrpc(status);
    return response.commit_seq();
  }

  Result<std::unique_ptr<CommitClientStream>> Subscribe(std::optional<int64_t> after_commit_seq,
                                                        const std::vector<std::string>& tables,
                                                        std::chrono::milliseconds deadline,
                                                        bool existing_tables_only) override {
    skade::v1::SubscribeRequest request;
    if (after_commit_seq) request.set_after_commit_seq(*after_commit_seq);
    for (const std::string& table : tables) request.add_tables(table);
    request.set_existing_tables_only(existing_tables_only);
    return std::unique_ptr<CommitClientStream>(std::make_unique<GrpcStream>(*stub_, request, deadline, authorization_));
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<skade::v1::Commits::Stub> stub_;
  std::string authorization_;
};

}  // namespace

Result<std::unique_ptr<CommitClient>> CommitClient::Connect(const std::string& address,
                                                            Options options) {
  grpc::ChannelArguments args;
  if (options.fixed_window_bytes > 0) {
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.fixed_window_bytes);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (!channel) return Status::InvalidArgument("cannot create a channel to " + address);
  return std::unique_ptr<CommitClient>(std::make_unique<GrpcClient>(std::move(channel), options.authorization));
}

}  // namespace skade::events
