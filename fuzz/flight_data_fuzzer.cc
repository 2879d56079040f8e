// libFuzzer target: arbitrary bytes as what a Flight SQL DoPut client sends. The bytes are an
// Arrow IPC stream split into FlightData messages (data_header = the Message flatbuffer,
// data_body = its body) and read through FlightDataStream, the server's DoPut decoder, with a
// decode bound; every batch is read by a strict C Data Interface consumer. The same bytes are
// also a protobuf Any holding a Flight SQL command, unpacked as the command types the server
// dispatches on (each must parse its own serialisation again).
#include <google/protobuf/any.pb.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "flight.pb.h"
#include "flight_sql.pb.h"
#include "fuzz/c_data_consumer.h"
#include "skade/arrow/ipc.h"
#include "skade/flightsql/flight_data_internal.h"

namespace {

namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;

constexpr int kMaxBatches = 32;
constexpr int64_t kMaxDecodedBytes = int64_t{64} << 20;

template <typename M>
void TryUnpack(const google::protobuf::Any& any, const char* name) {
  if (!any.Is<M>()) return;
  M message;
  if (any.UnpackTo(&message)) {
    std::string again = message.SerializeAsString();
    M back;
    if (!back.ParseFromString(again)) {
      std::fprintf(stderr, "flight_data_fuzzer: %s does not parse its own serialisation\n", name);
      std::abort();
    }
  }
}

void Commands(const uint8_t* data, size_t size) {
  google::protobuf::Any any;
  if (!any.ParseFromArray(data, static_cast<int>(size))) return;
  TryUnpack<pbsql::CommandStatementQuery>(any, "CommandStatementQuery");
  TryUnpack<pbsql::CommandPreparedStatementQuery>(any, "CommandPreparedStatementQuery");
  TryUnpack<pbsql::CommandStatementUpdate>(any, "CommandStatementUpdate");
  TryUnpack<pbsql::CommandPreparedStatementUpdate>(any, "CommandPreparedStatementUpdate");
  TryUnpack<pbsql::CommandStatementIngest>(any, "CommandStatementIngest");
  TryUnpack<pbsql::TicketStatementQuery>(any, "TicketStatementQuery");
  TryUnpack<pbsql::CommandGetSqlInfo>(any, "CommandGetSqlInfo");
  TryUnpack<pbsql::CommandGetXdbcTypeInfo>(any, "CommandGetXdbcTypeInfo");
  TryUnpack<pbsql::CommandGetDbSchemas>(any, "CommandGetDbSchemas");
  TryUnpack<pbsql::CommandGetTables>(any, "CommandGetTables");
  TryUnpack<pbsql::CommandGetPrimaryKeys>(any, "CommandGetPrimaryKeys");
  TryUnpack<pbsql::CommandGetCrossReference>(any, "CommandGetCrossReference");
  TryUnpack<pbsql::ActionCreatePreparedStatementRequest>(any, "ActionCreatePreparedStatementRequest");
  TryUnpack<pbsql::ActionClosePreparedStatementRequest>(any, "ActionClosePreparedStatementRequest");
  TryUnpack<pbsql::ActionCancelQueryRequest>(any, "ActionCancelQueryRequest");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Commands(data, size);
  auto frames = skade::arrow::ipc::SplitStream(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!frames.ok()) return 0;
  std::vector<pb::FlightData> messages;
  for (const auto& f : *frames) {
    pb::FlightData m;
    m.set_data_header(std::string(f.flatbuffer));
    m.set_data_body(std::string(f.body));
    messages.push_back(std::move(m));
  }
  size_t next = 0;
  skade::flightsql::FlightDataBounds bounds;
  bounds.max_decoded_bytes = [] { return kMaxDecodedBytes; };
  auto stream = skade::flightsql::FlightDataStream(
      std::nullopt,
      [&](pb::FlightData* m) {
        if (next >= messages.size()) return false;
        *m = messages[next++];
        return true;
      },
      bounds);
  ArrowSchema schema;
  if (stream->get_schema(stream.get(), &schema) != 0) return 0;
  skade::arrow::SchemaHandle owned(&schema);
  for (int i = 0; i < kMaxBatches; ++i) {
    ArrowArray batch;
    if (stream->get_next(stream.get(), &batch) != 0 || batch.release == nullptr) break;
    skade::arrow::ArrayHandle held(&batch);
    skade::fuzz::ConsumeArray(*owned.get(), *held.get());
  }
  return 0;
}
