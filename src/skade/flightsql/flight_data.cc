#include "skade/flightsql/flight_data_internal.h"

#include <memory>
#include <vector>

#include <grpcpp/support/slice.h>

#include "skade/arrow/stream_of.h"

namespace skade::flightsql {
namespace {

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Protobuf wire format: a length-delimited field = tag (field << 3 | 2), length, bytes.
void PutBytesHeader(std::string& out, uint32_t field, uint64_t length) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | 2);
  PutVarint(out, length);
}

// gRPC calls this when it drops a slice; the slice's user data is one heap reference.
void ReleaseKeepAlive(void* user) {
  std::unique_ptr<std::shared_ptr<const void>>(static_cast<std::shared_ptr<const void>*>(user)).reset();
}

}  // namespace

grpc::ByteBuffer SerializeFlightData(const RawFlightData& data) {
  std::string_view header = data.message.flatbuffer();
  std::string head;
  PutBytesHeader(head, 2, header.size());  // data_header
  head.append(header);
  if (!data.app_metadata.empty()) {
    PutBytesHeader(head, 3, data.app_metadata.size());
    head += data.app_metadata;
  }
  std::vector<grpc::Slice> slices;
  if (data.message.body_length > 0) {
    PutBytesHeader(head, 1000, static_cast<uint64_t>(data.message.body_length));  // data_body
    if (data.copy_body) {
      for (const auto& s : data.message.body) head.append(reinterpret_cast<const char*>(s.data), s.size);
      slices.emplace_back(head);
    } else {
      slices.emplace_back(head);
      for (const auto& s : data.message.body) {
        if (s.size == 0) continue;
        auto keep = std::make_unique<std::shared_ptr<const void>>(data.message.keep_alive);
        slices.emplace_back(const_cast<uint8_t*>(s.data), static_cast<size_t>(s.size), ReleaseKeepAlive,
                            keep.release());  // released by ReleaseKeepAlive
      }
    }
  } else {
    slices.emplace_back(head);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

namespace {

namespace pb = ::arrow::flight::protocol;

struct PutStreamState {
  std::optional<pb::FlightData> pending;
  std::function<bool(pb::FlightData*)> next;
  arrow::ipc::MessageDecoder decoder;
  FlightDataBounds bounds;
  std::string last_error;
  bool done = false;

  void Fail(const Status& st) {
    last_error = st.message();
    done = true;
    if (bounds.failed) bounds.failed(st);
  }

  // Reads messages until the schema is known (or the input ends).
  bool EnsureSchema() {
    while (!decoder.has_schema()) {
      auto batch = ReadOne();
      if (!batch) return false;
      if (*batch) {
        Fail(Status::InvalidArgument("record batch before the schema"));
        return false;
      }
    }
    return true;
  }

  // One decoded message: an outer nullopt on end/error, an inner nullopt for non-batch messages.
  std::optional<std::optional<arrow::ArrayHandle>> ReadOne() {
    pb::FlightData msg;
    if (pending) {
      msg = std::move(*pending);
      pending.reset();
    } else if (done) {
      return std::nullopt;
    } else if (!next(&msg)) {
      done = true;
      if (bounds.check_end) {
        if (Status cut = bounds.check_end(); !cut.ok()) Fail(cut);
      }
      return std::nullopt;
    }
    if (msg.data_header().empty()) return std::optional<arrow::ArrayHandle>();  // descriptor/metadata only
    if (bounds.max_decoded_bytes) decoder.set_max_decoded_bytes(bounds.max_decoded_bytes());
    auto decoded = decoder.Decode(msg.data_header(), msg.data_body());
    if (!decoded.ok()) {
      Fail(decoded.status());
      return std::nullopt;
    }
    if (*decoded && bounds.decoded) bounds.decoded(decoder.last_decoded_bytes());
    return std::move(*decoded);
  }

  // The C stream's calls (arrow::StreamOf).
  int GetSchema(ArrowSchema* out) {
    if (!EnsureSchema()) {
      if (last_error.empty()) last_error = "the stream ended before its schema";
      return EINVAL;
    }
    return arrow::MoveSchemaOrFail(decoder.ExportSchema(), out, last_error);
  }
  int GetNext(ArrowArray* out) {
    if (!EnsureSchema()) {
      if (last_error.empty()) last_error = "the stream ended before its schema";
      return EINVAL;
    }
    while (true) {
      auto m = ReadOne();
      if (!m) {
        if (!last_error.empty()) return EIO;
        out->release = nullptr;
        return 0;
      }
      if (*m) {
        (*m)->MoveTo(out);
        return 0;
      }
    }
  }
  const char* LastError() const { return last_error.empty() ? nullptr : last_error.c_str(); }
};

}  // namespace

arrow::StreamHandle FlightDataStream(std::optional<pb::FlightData> first, std::function<bool(pb::FlightData*)> next,
                                     FlightDataBounds bounds) {
  auto st = std::make_unique<PutStreamState>();
  st->pending = std::move(first);
  st->next = std::move(next);
  st->bounds = std::move(bounds);
  return arrow::StreamOf(std::move(st));
}

}  // namespace skade::flightsql
