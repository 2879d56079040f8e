// Arrow IPC streaming format (Arrow columnar specification, "Serialization and Interprocess
// Communication"): an encoder from Arrow C Data Interface structs to encapsulated messages whose
// bodies are zero-copy slices, and a validating decoder back into owning C structs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::arrow::ipc {

// Body compression of record and dictionary batches (BodyCompression, codec per buffer).
enum class Compression { kNone, kLz4Frame, kZstd };

struct EncodeOptions {
  Compression compression = Compression::kNone;
};

// A borrowed range of body bytes; valid while the owning EncodedMessage's keep_alive lives.
struct BodySlice {
  const uint8_t* data = nullptr;
  int64_t size = 0;
};

// One encapsulated IPC message: `metadata` is the 0xFFFFFFFF continuation, the int32 metadata
// length, the Message flatbuffer and zero padding to 8 bytes; `body` lists the body buffers
// and their padding in order (sizes sum to body_length). Cheap to move; copies share
// keep_alive, which owns whatever `body` points into (the encoded batch, compressed copies).
struct EncodedMessage {
  std::string metadata;
  std::vector<BodySlice> body;
  int64_t body_length = 0;
  std::shared_ptr<const void> keep_alive;

  // The Message flatbuffer alone (what Flight sends as FlightData.data_header), padded.
  std::string_view flatbuffer() const;
  // The message as one contiguous byte string (the copying encoder).
  std::string ToString() const;
};

// The end-of-stream marker: 0xFFFFFFFF followed by a zero int32.
std::string_view EndOfStreamMarker();

// Concatenates messages into contiguous bytes (copies every body buffer).
std::string Concatenate(std::span<const EncodedMessage> messages);

// Encodes one schema and then batches of that schema. Not thread-safe.
class StreamEncoder {
 public:
  // Converts `schema` (a struct schema whose children are the columns; it is only read).
  // kNotImplemented for types the encoder does not handle (unions, run-end encoded,
  // list views, nested dictionaries), kInvalidArgument for malformed format strings.
  static Result<std::unique_ptr<StreamEncoder>> Make(const ArrowSchema& schema,
                                                     EncodeOptions options = {});
  ~StreamEncoder();

  // The schema message (no body).
  EncodedMessage SchemaMessage() const;

  // Takes ownership of `batch` (a struct array of the schema) and returns one dictionary
  // batch message per dictionary-encoded field (replacements, in schema order) followed by
  // the record batch message. Bodies point into the batch without copying unless an offset
  // must be rebased, a bitmap shifted or a buffer compressed. kInvalidArgument if the batch
  // does not match the schema.
  Result<std::vector<EncodedMessage>> EncodeBatch(ArrayHandle batch);

 private:
  struct Impl;
  explicit StreamEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Drains `stream` into one contiguous IPC stream (schema, batches, end-of-stream marker).
Result<std::string> EncodeStream(ArrowArrayStream* stream, EncodeOptions options = {});

// Decodes IPC messages one at a time (metadata flatbuffer and body given separately, as
// Flight delivers them). Keeps the schema and dictionaries between messages. Every offset and
// length is checked against the body and the flatbuffer is verified: malformed input gives
// kCorruption; unsupported types or features give kNotImplemented. Not thread-safe; arrays it
// returns own their memory and outlive the decoder.
class MessageDecoder {
 public:
  MessageDecoder();
  ~MessageDecoder();
  MessageDecoder(MessageDecoder&&) noexcept;
  MessageDecoder& operator=(MessageDecoder&&) noexcept;

  // Decodes one message. Returns the record batch (a struct array) for a RecordBatch message,
  // nullopt for Schema and DictionaryBatch messages.
  Result<std::optional<ArrayHandle>> Decode(std::string_view flatbuffer, std::string_view body);

  // The most bytes one message may decode into (its buffers decompressed and copied); a
  // message claiming more fails with kResourceExhausted before anything is allocated. Applies
  // from the next Decode; negative = no limit (the default).
  void set_max_decoded_bytes(int64_t bytes);
  // The bytes the last decoded message's buffers take.
  int64_t last_decoded_bytes() const;

  bool has_schema() const;
  // A fresh, independently owned copy of the schema; kInvalidArgument before the schema.
  Result<SchemaHandle> ExportSchema() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One encapsulated message of a stream: its Message flatbuffer (as Flight's data_header carries
// it) and its body (data_body). Views into the stream's bytes.
struct FramedMessage {
  std::string_view flatbuffer;
  std::string_view body;
};

// Splits an IPC stream held in memory into its messages (framing only: continuation marker,
// metadata length, padding, bodyLength, end-of-stream), up to the end marker or the end of the
// bytes. kCorruption for a truncated or malformed frame.
Result<std::vector<FramedMessage>> SplitStream(std::string_view bytes);

// Reads an IPC stream held in memory: message framing (continuation marker, length,
// padding, end-of-stream) on top of MessageDecoder. Not thread-safe.
class StreamReader {
 public:
  // Reads up to and including the schema message. kCorruption if it is missing or malformed.
  static Result<std::unique_ptr<StreamReader>> Open(std::string bytes);
  ~StreamReader();

  Result<SchemaHandle> ExportSchema() const { return decoder_.ExportSchema(); }
  // The next record batch, or nullopt at the end-of-stream marker or the end of the bytes.
  Result<std::optional<ArrayHandle>> Next();

 private:
  explicit StreamReader(std::string bytes);
  // Decodes the next framed message; sets done_ at the end of the stream.
  Result<std::optional<ArrayHandle>> ReadMessage();
  std::string bytes_;
  size_t pos_ = 0;
  bool done_ = false;
  MessageDecoder decoder_;
};

}  // namespace skade::arrow::ipc
