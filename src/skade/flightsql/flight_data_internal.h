// FlightData on the wire: outgoing messages are serialized by hand so that Arrow record batch
// bodies go to gRPC as slices over the Arrow buffers (no copy); incoming FlightData streams
// (DoPut) are decoded into an ArrowArrayStream that pulls one message at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <grpcpp/impl/codegen/serialization_traits.h>
#include <grpcpp/support/byte_buffer.h>

#include "flight.pb.h"
#include "skade/arrow/c_data.h"
#include "skade/arrow/ipc.h"
#include "skade/base/status.h"

namespace skade::flightsql {

// One outgoing FlightData: an encoded IPC message (header + zero-copy body) plus optional
// app_metadata. `copy_body` makes the serializer copy the body instead (for the benchmark).
struct RawFlightData {
  arrow::ipc::EncodedMessage message;
  std::string app_metadata;
  bool copy_body = false;
};

// Serializes `data` as a FlightData protobuf message into a ByteBuffer whose body slices point
// at the Arrow buffers (kept alive by the message's keep_alive until gRPC releases them).
grpc::ByteBuffer SerializeFlightData(const RawFlightData& data);

// Bounds and observers of a FlightDataStream (all optional).
struct FlightDataBounds {
  // Asked before each message: the most bytes it may decode into (arrow::ipc::MessageDecoder::
  // set_max_decoded_bytes); past it the stream fails with kResourceExhausted.
  std::function<int64_t()> max_decoded_bytes;
  // Told the bytes each record batch decoded into.
  std::function<void(int64_t)> decoded;
  // Told the error that ended the stream (the C stream carries only its message).
  std::function<void(const Status&)> failed;
  // Asked when `next` reports the end: an error means the input was cut off (its client went
  // away) rather than finished, and the stream fails with it instead of ending.
  std::function<Status()> check_end;
};

// Reads FlightData messages (from a DoPut stream) through `next` (false at the end) and
// exposes the record batches as an ArrowArrayStream. The first message may already have been
// read by the caller (pass it as `first`). Errors (bad IPC, a stream with no schema, a message
// past its bound) come back through the stream's get_last_error and bounds.failed. The stream
// must be consumed on one thread at a time.
arrow::StreamHandle FlightDataStream(std::optional<::arrow::flight::protocol::FlightData> first,
                                     std::function<bool(::arrow::flight::protocol::FlightData*)> next,
                                     FlightDataBounds bounds = {});

}  // namespace skade::flightsql

namespace grpc {
template <>
class SerializationTraits<skade::flightsql::RawFlightData, void> {
 public:
  static Status Serialize(const skade::flightsql::RawFlightData& msg, ByteBuffer* bb, bool* own_buffer) {
    *bb = skade::flightsql::SerializeFlightData(msg);
    *own_buffer = true;
    return Status::OK;
  }
  static Status Deserialize(ByteBuffer*, skade::flightsql::RawFlightData*) {
    return Status(StatusCode::UNIMPLEMENTED, "RawFlightData is write-only");
  }
};
}  // namespace grpc
