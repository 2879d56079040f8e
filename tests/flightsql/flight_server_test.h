// Test helpers for driving a Flight SQL server in process: a synchronous FlightService client
// with basic credentials on every call, IPC-encoded batches to send, and a fixture with a lake,
// a LakeSql and a server on a free loopback port.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <google/protobuf/any.pb.h>
#include <grpcpp/grpcpp.h>

#include "flight.grpc.pb.h"
#include "flight_sql.pb.h"
#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/base/base64.h"
#include "skade/flightsql/auth.h"
#include "skade/flightsql/server.h"
#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::flightsql::testing {

namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;
using Clock = std::chrono::steady_clock;

// An IPC-encoded schema message and one record batch message (flatbuffers and body).
struct EncodedBatchView {
  std::string_view schema;
  std::string_view header;
  std::string_view body;
};

// A FlightService client with basic credentials on every call.
class Client {
 public:
  Client(int port, const std::string& user)
      : stub_(pb::FlightService::NewStub(
            grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()))),
        authorization_("Basic " + EncodeBase64(user + ":pw")) {}

  void Prepare(grpc::ClientContext& ctx) const {
    ctx.AddMetadata("authorization", authorization_);
    if (!cookie_.empty()) ctx.AddMetadata("cookie", cookie_);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  }

  // SetSessionOptions of the session's default schema. The session cookie the server sets goes
  // with every later call of this client.
  Status SetSchema(const std::string& schema) {
    pb::SetSessionOptionsRequest request;
    (*request.mutable_session_options())["schema"].set_string_value(schema);
    pb::Action action;
    action.set_type("SetSessionOptions");
    action.set_body(request.SerializeAsString());
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto reader = stub_->DoAction(&ctx, action);
    pb::Result first;
    const bool answered = reader->Read(&first);
    pb::Result rest;
    while (reader->Read(&rest)) {
    }
    grpc::Status st = reader->Finish();
    if (!st.ok()) return Failed("DoAction", st);
    for (const auto& [key, value] : ctx.GetServerInitialMetadata()) {
      if (key == "set-cookie") {
        std::string cookie(value.data(), value.size());
        cookie_ = cookie.substr(0, cookie.find(';'));
      }
    }
    pb::SetSessionOptionsResult result;
    if (!answered || !result.ParseFromString(first.body())) return Status::Internal("SetSessionOptions: no result");
    if (!result.errors().empty()) return Status::InvalidArgument("SetSessionOptions refused the schema");
    return Status::Ok();
  }

  // The result schema of `sql` undecoded: FlightInfo.schema (IPC-encapsulated) and the
  // flatbuffer of its DoGet stream's first message (the schema message).
  Result<std::pair<std::string, std::string>> SchemaBytes(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, Info(sql));
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto stream = stub_->DoGet(&ctx, info.endpoint(0).ticket());
    pb::FlightData data;
    std::optional<std::string> first;
    while (stream->Read(&data)) {
      if (!first) first = data.data_header();
    }
    grpc::Status st = stream->Finish();
    if (!st.ok()) return Failed("DoGet", st);
    if (!first) return Status::Internal("DoGet: no schema message");
    return std::make_pair(info.schema(), *first);
  }

  // The result schema of `sql` as GetFlightInfo announces it, and as the schema message of its
  // DoGet stream gives it.
  Result<std::pair<arrow::SchemaHandle, arrow::SchemaHandle>> Schemas(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(auto bytes, SchemaBytes(sql));
    SKADE_ASSIGN_OR_RETURN(auto reader, arrow::ipc::StreamReader::Open(bytes.first));
    SKADE_ASSIGN_OR_RETURN(auto announced, reader->ExportSchema());
    arrow::ipc::MessageDecoder decoder;
    SKADE_RETURN_IF_ERROR(decoder.Decode(bytes.second, "").status());
    SKADE_ASSIGN_OR_RETURN(auto streamed, decoder.ExportSchema());
    return std::make_pair(std::move(announced), std::move(streamed));
  }

  // Per result column of `sql`, whether it is nullable: as GetFlightInfo's schema says, and as
  // the schema message of its DoGet stream says.
  Result<std::pair<std::vector<bool>, std::vector<bool>>> Nullability(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(auto schemas, Schemas(sql));
    auto flags = [](const ArrowSchema& s) {
      std::vector<bool> out;
      for (int64_t i = 0; i < s.n_children; ++i) out.push_back((s.children[i]->flags & ARROW_FLAG_NULLABLE) != 0);
      return out;
    };
    return std::make_pair(flags(*schemas.first.get()), flags(*schemas.second.get()));
  }

  Result<pb::FlightInfo> Info(const std::string& sql) {
    pbsql::CommandStatementQuery q;
    q.set_query(sql);
    google::protobuf::Any any;
    any.PackFrom(q);
    pb::FlightDescriptor desc;
    desc.set_type(pb::FlightDescriptor::CMD);
    desc.set_cmd(any.SerializeAsString());
    grpc::ClientContext ctx;
    Prepare(ctx);
    pb::FlightInfo info;
    grpc::Status st = stub_->GetFlightInfo(&ctx, desc, &info);
    if (!st.ok()) return Failed("GetFlightInfo", st);
    return info;
  }

  Result<pb::Ticket> Ticket(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, Info(sql));
    return info.endpoint(0).ticket();
  }

  // The rows of `sql`, every batch read and decoded.
  Result<int64_t> Rows(const std::string& sql) {
    int64_t rows = 0;
    SKADE_RETURN_IF_ERROR(Fetch(sql, [&](const ArrowArray& batch) { rows += batch.length; }));
    return rows;
  }

  // The values of the first column of `sql`, a VARCHAR, in order (NULL as "NULL").
  Result<std::vector<std::string>> Strings(const std::string& sql) {
    std::vector<std::string> out;
    SKADE_RETURN_IF_ERROR(Fetch(sql, [&](const ArrowArray& batch) {
      const ArrowArray& column = *batch.children[0];
      const auto* validity = static_cast<const uint8_t*>(column.buffers[0]);
      const auto* offsets = static_cast<const int32_t*>(column.buffers[1]);
      const char* data = static_cast<const char*>(column.buffers[2]);
      for (int64_t i = column.offset; i < column.offset + column.length; ++i) {
        bool valid = validity == nullptr || (validity[i / 8] >> (i % 8)) & 1;
        out.push_back(valid ? std::string(data + offsets[i], offsets[i + 1] - offsets[i]) : "NULL");
      }
    }));
    return out;
  }

  // GetFlightInfo + DoGet of `sql`, each decoded batch given to `fn`. A failure of either call
  // is kInternal with its gRPC code in code_of_last_failure().
  Status Fetch(const std::string& sql, const std::function<void(const ArrowArray&)>& fn) {
    auto ticket = Ticket(sql);
    if (!ticket.ok()) return ticket.status();
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto reader = stub_->DoGet(&ctx, *ticket);
    arrow::ipc::MessageDecoder decoder;
    pb::FlightData data;
    Status failure;
    while (reader->Read(&data)) {
      auto batch = decoder.Decode(data.data_header(), data.data_body());
      if (!batch.ok()) {
        failure = batch.status();
      } else if (*batch && failure.ok()) {
        fn(*(**batch).get());
      }
    }
    grpc::Status st = reader->Finish();
    if (!st.ok()) return Failed("DoGet", st);
    return failure;
  }

  grpc::StatusCode code_of_last_failure() const { return last_code_; }

  // The session cookie ("name=value"), to hand to a client of another server.
  const std::string& cookie() const { return cookie_; }
  void set_cookie(std::string cookie) { cookie_ = std::move(cookie); }

  // ---- statement commands one call at a time (as ADBC's DB-API execute() makes them)

  // GetFlightInfo of `command` (packed into a CMD descriptor).
  Result<pb::FlightInfo> InfoFor(const google::protobuf::Message& command) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    pb::FlightInfo info;
    grpc::Status st = stub_->GetFlightInfo(&ctx, Descriptor(command), &info);
    if (!st.ok()) return Failed("GetFlightInfo", st);
    return info;
  }

  // GetSchema of `command`: the IPC-encapsulated schema.
  Result<std::string> SchemaFor(const google::protobuf::Message& command) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    pb::SchemaResult result;
    grpc::Status st = stub_->GetSchema(&ctx, Descriptor(command), &result);
    if (!st.ok()) return Failed("GetSchema", st);
    return result.schema();
  }

  // DoAction of `action`: the body of its first result.
  Result<std::string> DoActionResult(const pb::Action& action) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto reader = stub_->DoAction(&ctx, action);
    pb::Result first;
    const bool answered = reader->Read(&first);
    pb::Result rest;
    while (reader->Read(&rest)) {
    }
    grpc::Status st = reader->Finish();
    if (!st.ok()) return Failed("DoAction", st);
    if (!answered) return Status::Internal("DoAction: no result");
    return first.body();
  }

  // ActionCreatePreparedStatement of `sql`.
  Result<pbsql::ActionCreatePreparedStatementResult> CreatePrepared(const std::string& sql) {
    pbsql::ActionCreatePreparedStatementRequest request;
    request.set_query(sql);
    google::protobuf::Any any;
    any.PackFrom(request);
    pb::Action action;
    action.set_type("CreatePreparedStatement");
    action.set_body(any.SerializeAsString());
    SKADE_ASSIGN_OR_RETURN(std::string body, DoActionResult(action));
    google::protobuf::Any packed;
    pbsql::ActionCreatePreparedStatementResult out;
    if (!packed.ParseFromString(body) || !packed.UnpackTo(&out)) {
      return Status::Internal("CreatePreparedStatement: malformed result");
    }
    return out;
  }

  // DoPut of CommandPreparedStatementQuery `handle` binding the rows of `params`.
  Status BindPrepared(const std::string& handle, const EncodedBatchView& params) {
    pbsql::CommandPreparedStatementQuery command;
    command.set_prepared_statement_handle(handle);
    return PutParameters(command, params, nullptr).status();
  }

  // DoPut of CommandPreparedStatementUpdate `handle` with the rows of `params`: the rows the
  // statement changed.
  Result<int64_t> PreparedUpdate(const std::string& handle, const EncodedBatchView& params) {
    pbsql::CommandPreparedStatementUpdate command;
    command.set_prepared_statement_handle(handle);
    pb::PutResult result;
    SKADE_ASSIGN_OR_RETURN(bool answered, PutParameters(command, params, &result));
    pbsql::DoPutUpdateResult count;
    if (!answered || !count.ParseFromString(result.app_metadata())) return Status::Internal("DoPut: no update result");
    return count.record_count();
  }

  // One DoPut of `command` with the parameter rows `params`: true when the server answered a
  // PutResult (the first goes to `first`, if set; the rest are read and dropped).
  Result<bool> PutParameters(const google::protobuf::Message& command, const EncodedBatchView& params,
                             pb::PutResult* first) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto stream = stub_->DoPut(&ctx);
    pb::FlightData head;
    *head.mutable_flight_descriptor() = Descriptor(command);
    head.set_data_header(std::string(params.schema));
    stream->Write(head);
    pb::FlightData batch;
    batch.set_data_header(std::string(params.header));
    batch.set_data_body(std::string(params.body));
    stream->Write(batch);
    stream->WritesDone();
    pb::PutResult result;
    const bool answered = stream->Read(&result);
    if (answered && first != nullptr) *first = result;
    while (stream->Read(&result)) {
    }
    grpc::Status st = stream->Finish();
    if (!st.ok()) return Failed("DoPut", st);
    return answered;
  }

  // What a DoGet streamed: the schema message's schema and the batches.
  struct Fetched {
    arrow::SchemaHandle schema;
    std::vector<arrow::ArrayHandle> batches;
  };
  Result<Fetched> Get(const pb::Ticket& ticket) {
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto reader = stub_->DoGet(&ctx, ticket);
    arrow::ipc::MessageDecoder decoder;
    pb::FlightData data;
    Fetched out;
    Status failure;
    while (reader->Read(&data)) {
      auto batch = decoder.Decode(data.data_header(), data.data_body());
      if (!batch.ok()) {
        failure = batch.status();
      } else if (*batch) {
        out.batches.push_back(std::move(**batch));
      }
    }
    grpc::Status st = reader->Finish();
    if (!st.ok()) return Failed("DoGet", st);
    SKADE_RETURN_IF_ERROR(failure);
    SKADE_ASSIGN_OR_RETURN(out.schema, decoder.ExportSchema());
    return out;
  }

  // GetFlightInfo + DoGet of a metadata command (CommandGetPrimaryKeys, …): what its ticket
  // streams, and in `announced` the schema the FlightInfo announced.
  Result<Fetched> Metadata(const google::protobuf::Message& command, arrow::SchemaHandle* announced) {
    SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, InfoFor(command));
    if (info.endpoint_size() != 1) return Status::Internal("GetFlightInfo: not one endpoint");
    SKADE_ASSIGN_OR_RETURN(auto reader, arrow::ipc::StreamReader::Open(info.schema()));
    SKADE_ASSIGN_OR_RETURN(*announced, reader->ExportSchema());
    return Get(info.endpoint(0).ticket());
  }

  // A DoGet that is started and never read: its server-side writes stall on flow control.
  struct StalledGet {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<pb::FlightData>> reader;
  };
  std::unique_ptr<StalledGet> StartGet(const pb::Ticket& ticket) {
    auto call = std::make_unique<StalledGet>();
    Prepare(call->ctx);
    call->reader = stub_->DoGet(&call->ctx, ticket);
    call->reader->WaitForInitialMetadata();  // the server has admitted or refused it
    return call;
  }

  struct Put {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<pb::FlightData, pb::PutResult>> stream;
    // Reads the results (gRPC delivers the status only after them) and the status.
    grpc::Status Finish() {
      pb::PutResult result;
      while (stream->Read(&result)) {
      }
      return stream->Finish();
    }
  };
  // A DoPut of CommandStatementIngest into `table` (appended, created if missing); the first
  // message carries the descriptor and the schema.
  std::unique_ptr<Put> StartIngest(const std::string& table, const std::string& schema_message) {
    pbsql::CommandStatementIngest in;
    in.set_table(table);
    in.set_schema("db");
    in.mutable_table_definition_options()->set_if_not_exist(
        pbsql::CommandStatementIngest::TableDefinitionOptions::TABLE_NOT_EXIST_OPTION_CREATE);
    in.mutable_table_definition_options()->set_if_exists(
        pbsql::CommandStatementIngest::TableDefinitionOptions::TABLE_EXISTS_OPTION_APPEND);
    google::protobuf::Any any;
    any.PackFrom(in);
    auto put = std::make_unique<Put>();
    Prepare(put->ctx);
    put->stream = stub_->DoPut(&put->ctx);
    pb::FlightData first;
    first.mutable_flight_descriptor()->set_type(pb::FlightDescriptor::CMD);
    first.mutable_flight_descriptor()->set_cmd(any.SerializeAsString());
    first.set_data_header(schema_message);
    put->stream->Write(first);
    return put;
  }

  // A DoPut of CommandStatementUpdate: the number of rows the statement changed.
  Result<int64_t> Update(const std::string& sql, const std::string& data_header = "") {
    pbsql::CommandStatementUpdate update;
    update.set_query(sql);
    google::protobuf::Any any;
    any.PackFrom(update);
    grpc::ClientContext ctx;
    Prepare(ctx);
    auto stream = stub_->DoPut(&ctx);
    pb::FlightData first;
    first.mutable_flight_descriptor()->set_type(pb::FlightDescriptor::CMD);
    first.mutable_flight_descriptor()->set_cmd(any.SerializeAsString());
    first.set_data_header(data_header);
    stream->Write(first);
    stream->WritesDone();
    pb::PutResult result;
    const bool answered = stream->Read(&result);
    grpc::Status st = stream->Finish();
    if (!st.ok()) return Failed("DoPut", st);
    pbsql::DoPutUpdateResult count;
    if (!answered || !count.ParseFromString(result.app_metadata())) return Status::Internal("DoPut: no update result");
    return count.record_count();
  }

  static pb::FlightDescriptor Descriptor(const google::protobuf::Message& command) {
    google::protobuf::Any any;
    any.PackFrom(command);
    pb::FlightDescriptor desc;
    desc.set_type(pb::FlightDescriptor::CMD);
    desc.set_cmd(any.SerializeAsString());
    return desc;
  }

 private:
  Status Failed(const char* call, const grpc::Status& st) {
    last_code_ = st.error_code();
    return Status::Internal(std::string(call) + ": gRPC code " + std::to_string(st.error_code()) + ": " +
                            st.error_message());
  }

  std::unique_ptr<pb::FlightService::Stub> stub_;
  std::string authorization_;
  std::string cookie_;  // "name=value" of the session cookie, once the server set one
  grpc::StatusCode last_code_ = grpc::StatusCode::OK;
};

// One BIGINT column "x" of `rows` zeros, IPC-encoded with `compression`.
struct EncodedBatch {
  std::string schema;  // the schema message's flatbuffer
  std::string header;
  std::string body;
};
inline EncodedBatch Zeros(int64_t rows, arrow::ipc::Compression compression) {
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("x", "l", false);
  auto builder = arrow::RecordBatchBuilder(std::move(columns));
  for (int64_t i = 0; i < rows; ++i) {
    builder.AppendStruct();
    builder.child(0).AppendInt(0);
  }
  arrow::SchemaHandle schema;
  arrow::ArrayHandle batch;
  EXPECT_TRUE(builder.Finish(schema.get(), batch.get()).ok());
  auto encoder = arrow::ipc::StreamEncoder::Make(*schema.get(), {compression});
  EXPECT_TRUE(encoder.ok());
  EncodedBatch out;
  out.schema = std::string((*encoder)->SchemaMessage().flatbuffer());
  auto messages = (*encoder)->EncodeBatch(std::move(batch));
  EXPECT_TRUE(messages.ok() && messages->size() == 1);
  const auto& m = messages->back();
  out.header = std::string(m.flatbuffer());
  for (const auto& s : m.body) out.body.append(reinterpret_cast<const char*>(s.data), s.size);
  return out;
}

// `builder` (a RecordBatchBuilder with its rows appended) IPC-encoded.
inline EncodedBatch Encode(arrow::ArrayBuilder builder) {
  arrow::SchemaHandle schema;
  arrow::ArrayHandle batch;
  EXPECT_TRUE(builder.Finish(schema.get(), batch.get()).ok());
  auto encoder = arrow::ipc::StreamEncoder::Make(*schema.get());
  EXPECT_TRUE(encoder.ok());
  EncodedBatch out;
  out.schema = std::string((*encoder)->SchemaMessage().flatbuffer());
  auto messages = (*encoder)->EncodeBatch(std::move(batch));
  EXPECT_TRUE(messages.ok() && messages->size() == 1);
  const auto& m = messages->back();
  out.header = std::string(m.flatbuffer());
  for (const auto& s : m.body) out.body.append(reinterpret_cast<const char*>(s.data), s.size);
  return out;
}

inline EncodedBatchView View(const EncodedBatch& b) { return {b.schema, b.header, b.body}; }

inline pb::FlightData BatchMessage(const EncodedBatch& b) {
  pb::FlightData d;
  d.set_data_header(b.header);
  d.set_data_body(b.body);
  return d;
}

// A lake with namespace "db" (table "big": 200,000 rows of id and a 200-byte string;
// "target": 5 rows of x = 7) served by a Flight SQL server with users "stall" and "good"
// (password "pw") on a free port.
class FlightServerTest : public skade::testing::LakeTest {
 protected:
  FlightServerTest() : LakeTest("db") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto big = CreateTable("big", "id BIGINT NOT NULL, s VARCHAR");
    ASSERT_NE(big, nullptr);
    ASSERT_TRUE(big->Append({"SELECT range AS id, repeat('x', 200) AS s FROM range(200000)", nullptr}).ok());
    auto target = CreateTable("target", "x BIGINT");
    ASSERT_NE(target, nullptr);
    ASSERT_TRUE(target->Append({"SELECT 7 AS x FROM range(5)", nullptr}).ok());
    auto lake = sql::LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  // Starts the server with `options` changed by `adjust` (port and users are set here).
  void StartServer(const std::function<void(ServerOptions&)>& adjust = {}) {
    ServerOptions o;
    o.port = 0;
    AuthOptions auth;
    auth.users = {{"stall", "pw"}, {"good", "pw"}};
    o.authenticator = std::make_shared<Authenticator>(auth);
    if (adjust) adjust(o);
    auto server = FlightSqlServer::Start(*lake_, o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  // Waits up to `limit` for `done`.
  static bool Eventually(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(10)) {
    auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }

  std::string Count(const std::string& table) {
    auto rows = Rows(*LoadTable(Ident(table)), "SELECT count(*) FROM t");
    return rows.empty() ? "?" : rows[0][0];
  }

  std::unique_ptr<sql::LakeSql> lake_;
  std::unique_ptr<FlightSqlServer> server_;
};

}  // namespace skade::flightsql::testing
