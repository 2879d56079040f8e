// Arrow IPC streaming format: encapsulated messages (continuation marker, metadata length,
// Message flatbuffer padded to 8, body of 8-byte aligned buffers), record and dictionary
// batches, LZ4_FRAME/ZSTD body compression. Rules cite the Arrow columnar format spec,
// "Serialization and Interprocess Communication (IPC)".
#include "skade/arrow/ipc.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <map>

#include <lz4frame.h>
#include <zstd.h>

#include "skade/arrow/ipc_internal.h"

namespace skade::arrow::ipc {

using internal::BufferKind;
using internal::FieldInfo;
using internal::Layout;
using internal::LayoutOf;
namespace fb = internal::fb;

namespace {

constexpr uint32_t kContinuation = 0xFFFFFFFFu;
constexpr uint8_t kZeros[64] = {};
// Padding and empty offsets point here; 8-byte aligned for the int64 offsets case.
alignas(8) constexpr int64_t kZeroOffsets[1] = {0};

int64_t PaddedTo8(int64_t n) { return (n + 7) & ~int64_t{7}; }

void AppendInt32(std::string& out, int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

// Frames a finished flatbuffer: continuation, padded length, flatbuffer, zero padding.
std::string FrameMetadata(const uint8_t* data, size_t size) {
  int64_t padded = PaddedTo8(static_cast<int64_t>(size) + 8) - 8;
  std::string out;
  out.reserve(padded + 8);
  AppendInt32(out, static_cast<int32_t>(kContinuation));
  AppendInt32(out, static_cast<int32_t>(padded));
  out.append(reinterpret_cast<const char*>(data), size);
  out.append(padded - size, '\0');
  return out;
}

}  // namespace

std::string_view EncodedMessage::flatbuffer() const {
  return std::string_view(metadata).substr(std::min<size_t>(8, metadata.size()));
}

std::string EncodedMessage::ToString() const {
  std::string out;
  out.reserve(metadata.size() + body_length);
  out += metadata;
  for (const BodySlice& s : body) out.append(reinterpret_cast<const char*>(s.data), s.size);
  return out;
}

std::string_view EndOfStreamMarker() {
  static constexpr char kEos[8] = {'\xff', '\xff', '\xff', '\xff', 0, 0, 0, 0};
  return std::string_view(kEos, 8);
}

std::string Concatenate(std::span<const EncodedMessage> messages) {
  size_t total = 0;
  for (const EncodedMessage& m : messages) total += m.metadata.size() + m.body_length;
  std::string out;
  out.reserve(total);
  for (const EncodedMessage& m : messages) {
    out += m.metadata;
    for (const BodySlice& s : m.body) out.append(reinterpret_cast<const char*>(s.data), s.size);
  }
  return out;
}

// ================================================================ encoder

namespace {

// What the body slices of one EncodeBatch call point into.
struct KeepAlive {
  ArrayHandle batch;
  std::deque<std::string> copies;
};

bool BitSet(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

// Accumulates nodes and buffers of one record batch body.
class BodyWriter {
 public:
  BodyWriter(KeepAlive* keep, Compression compression) : keep_(keep), compression_(compression) {}

  void AddNode(int64_t length, int64_t null_count) { nodes_.emplace_back(length, null_count); }

  // Adds a borrowed buffer (compressed into a copy when compression is on).
  Status AddBuffer(const uint8_t* data, int64_t size) {
    if (size > 0 && compression_ != Compression::kNone) {
      SKADE_ASSIGN_OR_RETURN(std::string compressed, Compress(data, size));
      keep_->copies.push_back(std::move(compressed));
      data = reinterpret_cast<const uint8_t*>(keep_->copies.back().data());
      size = static_cast<int64_t>(keep_->copies.back().size());
    }
    buffers_.emplace_back(offset_, size);
    if (size > 0) slices_.push_back({data, size});
    int64_t pad = PaddedTo8(size) - size;
    if (pad > 0) slices_.push_back({kZeros, pad});
    offset_ += size + pad;
    return Status::Ok();
  }

  // Adds a buffer the encoder built (rebased offsets, shifted bitmap).
  Status AddCopy(std::string bytes) {
    keep_->copies.push_back(std::move(bytes));
    const std::string& s = keep_->copies.back();
    return AddBuffer(reinterpret_cast<const uint8_t*>(s.data()), static_cast<int64_t>(s.size()));
  }

  void AddVariadicCount(int64_t n) { variadic_counts_.push_back(n); }

  flatbuffers::Offset<fb::RecordBatch> Finish(flatbuffers::FlatBufferBuilder& b, int64_t length) {
    auto nodes = b.CreateVectorOfStructs(nodes_);
    auto buffers = b.CreateVectorOfStructs(buffers_);
    flatbuffers::Offset<fb::BodyCompression> compression = 0;
    if (compression_ != Compression::kNone) {
      compression = fb::CreateBodyCompression(
          b, compression_ == Compression::kLz4Frame ? fb::CompressionType::LZ4_FRAME
                                                    : fb::CompressionType::ZSTD);
    }
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> variadic = 0;
    if (!variadic_counts_.empty()) variadic = b.CreateVector(variadic_counts_);
    return fb::CreateRecordBatch(b, length, nodes, buffers, compression, variadic);
  }

  int64_t body_length() const { return offset_; }
  std::vector<BodySlice>& slices() { return slices_; }

 private:
  // Spec (BodyCompression, method BUFFER): each buffer is an int64 uncompressed length then the
  // compressed bytes; -1 means the bytes follow uncompressed (used when compression does not
  // shrink the buffer).
  Result<std::string> Compress(const uint8_t* data, int64_t size) {
    std::string out;
    int64_t prefix = size;
    out.append(reinterpret_cast<const char*>(&prefix), 8);
    if (compression_ == Compression::kLz4Frame) {
      size_t bound = LZ4F_compressFrameBound(size, nullptr);
      out.resize(8 + bound);
      size_t n = LZ4F_compressFrame(out.data() + 8, bound, data, size, nullptr);
      if (LZ4F_isError(n)) return Status::Internal(std::string("LZ4: ") + LZ4F_getErrorName(n));
      out.resize(8 + n);
    } else {
      size_t bound = ZSTD_compressBound(size);
      out.resize(8 + bound);
      size_t n = ZSTD_compress(out.data() + 8, bound, data, size, 1);
      if (ZSTD_isError(n)) return Status::Internal(std::string("ZSTD: ") + ZSTD_getErrorName(n));
      out.resize(8 + n);
    }
    if (static_cast<int64_t>(out.size()) >= size + 8) {
      out.resize(8);
      int64_t raw = -1;
      std::memcpy(out.data(), &raw, 8);
      out.append(reinterpret_cast<const char*>(data), size);
    }
    return out;
  }

  KeepAlive* keep_;
  Compression compression_;
  std::vector<fb::FieldNode> nodes_;
  std::vector<fb::Buffer> buffers_;
  std::vector<int64_t> variadic_counts_;
  std::vector<BodySlice> slices_;
  int64_t offset_ = 0;
};

int64_t CountNulls(const ArrowArray& a, int64_t start, int64_t length) {
  const auto* bits = static_cast<const uint8_t*>(a.buffers[0]);
  int64_t nulls = 0;
  for (int64_t i = start; i < start + length; ++i) nulls += BitSet(bits, i) ? 0 : 1;
  return nulls;
}

// Bits [start, start + length) of `bits` as a buffer starting at bit 0: a slice when `start`
// is byte-aligned, otherwise a shifted copy.
Status AddBits(BodyWriter& w, const uint8_t* bits, int64_t start, int64_t length) {
  int64_t bytes = (length + 7) / 8;
  if (start % 8 == 0) return w.AddBuffer(bits + start / 8, bytes);
  std::string copy(bytes, '\0');
  for (int64_t i = 0; i < length; ++i) {
    if (BitSet(bits, start + i)) copy[i >> 3] = static_cast<char>(copy[i >> 3] | (1 << (i & 7)));
  }
  return w.AddCopy(std::move(copy));
}

template <typename T>
Status AddOffsets(BodyWriter& w, const T* offsets, int64_t length) {
  if (length == 0) return w.AddBuffer(reinterpret_cast<const uint8_t*>(kZeroOffsets), sizeof(T));
  if (offsets[0] == 0) {
    return w.AddBuffer(reinterpret_cast<const uint8_t*>(offsets), (length + 1) * sizeof(T));
  }
  // Spec: a sliced array's offsets are rebased so the buffer starts at zero.
  std::string copy((length + 1) * sizeof(T), '\0');
  T* out = reinterpret_cast<T*>(copy.data());
  for (int64_t i = 0; i <= length; ++i) out[i] = offsets[i] - offsets[0];
  return w.AddCopy(std::move(copy));
}

// Writes the nodes and buffers of elements [start, start + length) of `a` (indices counted
// from the start of a's buffers, i.e. a.offset already added by the caller).
Status EncodeArray(BodyWriter& w, const FieldInfo& field, const ArrowArray& a, int64_t start,
                   int64_t length, int depth);

// Unions have no validity buffer: the int8 type ids, then (dense) the int32 offsets into the
// children. A dense union's children are sent whole (offsets stay valid); a sparse union's
// children are sliced like the union.
Status EncodeUnion(BodyWriter& w, const FieldInfo& field, const Layout& layout, const ArrowArray& a,
                   int64_t start, int64_t length, int depth) {
  if (a.n_buffers != static_cast<int64_t>(layout.buffers.size()) ||
      a.n_children != static_cast<int64_t>(field.children.size()) ||
      field.children.size() != layout.type_ids.size()) {
    return Status::InvalidArgument("union array of format " + field.format + " has the wrong buffers or children");
  }
  if (start < 0 || length < 0 || start + length > a.offset + a.length) {
    return Status::InvalidArgument("array slice out of range");
  }
  w.AddNode(length, 0);
  SKADE_RETURN_IF_ERROR(w.AddBuffer(static_cast<const uint8_t*>(a.buffers[0]) + start, length));
  if (layout.dense) {
    SKADE_RETURN_IF_ERROR(w.AddBuffer(static_cast<const uint8_t*>(a.buffers[1]) + start * 4, length * 4));
  }
  for (size_t i = 0; i < field.children.size(); ++i) {
    const ArrowArray& child = *a.children[i];
    int64_t child_start = layout.dense ? child.offset : child.offset + start - a.offset;
    int64_t child_length = layout.dense ? child.length : length;
    SKADE_RETURN_IF_ERROR(EncodeArray(w, field.children[i], child, child_start, child_length, depth + 1));
  }
  return Status::Ok();
}

Status EncodeArray(BodyWriter& w, const FieldInfo& field, const ArrowArray& a, int64_t start,
                   int64_t length, int depth) {
  if (depth > 64) return Status::InvalidArgument("Arrow array nested too deep");
  SKADE_ASSIGN_OR_RETURN(Layout layout, LayoutOf(field.format));
  if (layout.is_union) return EncodeUnion(w, field, layout, a, start, length, depth);
  size_t c_buffers = layout.buffers.size();
  if (layout.variadic) {
    if (a.n_buffers < 3) return Status::InvalidArgument("view array without variadic sizes");
  } else if (a.n_buffers != static_cast<int64_t>(c_buffers)) {
    return Status::InvalidArgument("array of format " + field.format + " has " +
                                   std::to_string(a.n_buffers) + " buffers");
  }
  if (start < 0 || length < 0 || start + length > a.offset + a.length) {
    return Status::InvalidArgument("array slice out of range");
  }
  if (field.format == "n") {
    w.AddNode(length, length);
    return Status::Ok();
  }
  bool has_validity = a.buffers[0] != nullptr && a.null_count != 0;
  int64_t null_count = 0;
  if (has_validity) {
    null_count = (start == a.offset && length == a.length && a.null_count > 0)
                     ? a.null_count
                     : CountNulls(a, start, length);
  }
  w.AddNode(length, null_count);
  if (null_count > 0) {
    SKADE_RETURN_IF_ERROR(AddBits(w, static_cast<const uint8_t*>(a.buffers[0]), start, length));
  } else {
    SKADE_RETURN_IF_ERROR(w.AddBuffer(nullptr, 0));
  }
  const auto* data = a.n_buffers > 1 ? static_cast<const uint8_t*>(a.buffers[1]) : nullptr;
  BufferKind kind = layout.buffers.size() > 1 ? layout.buffers[1] : BufferKind::kValidity;
  switch (kind) {
    case BufferKind::kFixed:
      if (layout.bit_width == 1) return AddBits(w, data, start, length);
      return w.AddBuffer(data + start * (layout.bit_width / 8), length * (layout.bit_width / 8));
    case BufferKind::kOffset32:
    case BufferKind::kOffset64: {
      bool wide = kind == BufferKind::kOffset64;
      int64_t first = 0, last = 0;
      if (length > 0) {
        if (wide) {
          const auto* o = reinterpret_cast<const int64_t*>(data) + start;
          first = o[0];
          last = o[length];
          SKADE_RETURN_IF_ERROR(AddOffsets(w, o, length));
        } else {
          const auto* o = reinterpret_cast<const int32_t*>(data) + start;
          first = o[0];
          last = o[length];
          SKADE_RETURN_IF_ERROR(AddOffsets(w, o, length));
        }
      } else {
        SKADE_RETURN_IF_ERROR(wide ? AddOffsets<int64_t>(w, nullptr, 0) : AddOffsets<int32_t>(w, nullptr, 0));
      }
      if (layout.buffers.size() == 3) {  // binary / utf8 values
        const auto* values = static_cast<const uint8_t*>(a.buffers[2]);
        return w.AddBuffer(values + first, last - first);
      }
      if (a.n_children != 1) return Status::InvalidArgument("list without one child");
      const ArrowArray& child = *a.children[0];
      return EncodeArray(w, field.children[0], child, child.offset + first, last - first, depth + 1);
    }
    case BufferKind::kViews: {
      SKADE_RETURN_IF_ERROR(w.AddBuffer(data + start * 16, length * 16));
      int64_t n_variadic = a.n_buffers - 3;
      const auto* sizes = static_cast<const int64_t*>(a.buffers[a.n_buffers - 1]);
      for (int64_t i = 0; i < n_variadic; ++i) {
        SKADE_RETURN_IF_ERROR(w.AddBuffer(static_cast<const uint8_t*>(a.buffers[2 + i]), sizes[i]));
      }
      w.AddVariadicCount(n_variadic);
      return Status::Ok();
    }
    default:
      break;
  }
  // Struct and fixed-size list: only validity at this level.
  if (a.n_children != static_cast<int64_t>(field.children.size())) {
    return Status::InvalidArgument("array of format " + field.format + " has the wrong children");
  }
  if (field.format == "+s") {
    for (size_t i = 0; i < field.children.size(); ++i) {
      const ArrowArray& child = *a.children[i];
      if (child.length < start - a.offset + length) return Status::InvalidArgument("short struct child");
      SKADE_RETURN_IF_ERROR(EncodeArray(w, field.children[i], child, child.offset + start - a.offset,
                                        length, depth + 1));
    }
    return Status::Ok();
  }
  // Fixed-size list: element i covers child elements [i * n, (i + 1) * n).
  const ArrowArray& child = *a.children[0];
  return EncodeArray(w, field.children[0], child, child.offset + (start - a.offset) * layout.list_size,
                     length * layout.list_size, depth + 1);
}

// Collects (field, array) pairs of dictionary-encoded columns in schema order.
void CollectDictionaries(const FieldInfo& field, const ArrowArray& a,
                         std::vector<std::pair<const FieldInfo*, const ArrowArray*>>& out) {
  if (!field.dictionary.empty()) {
    out.emplace_back(&field, &a);
    return;
  }
  for (size_t i = 0; i < field.children.size() && static_cast<int64_t>(i) < a.n_children; ++i) {
    CollectDictionaries(field.children[i], *a.children[i], out);
  }
}

EncodedMessage FinishMessage(flatbuffers::FlatBufferBuilder& b, fb::MessageHeader type,
                             flatbuffers::Offset<void> header, int64_t body_length) {
  auto message = fb::CreateMessage(b, fb::MetadataVersion::V5, type, header, body_length);
  b.Finish(message);
  EncodedMessage out;
  out.metadata = FrameMetadata(b.GetBufferPointer(), b.GetSize());
  out.body_length = body_length;
  return out;
}

}  // namespace

struct StreamEncoder::Impl {
  EncodeOptions options;
  FieldInfo root;  // the struct of columns
};

StreamEncoder::StreamEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamEncoder::~StreamEncoder() = default;

Result<std::unique_ptr<StreamEncoder>> StreamEncoder::Make(const ArrowSchema& schema,
                                                           EncodeOptions options) {
  int64_t next_id = 0;
  SKADE_ASSIGN_OR_RETURN(FieldInfo root, internal::FromArrowSchema(schema, next_id));
  if (root.format != "+s" || !root.dictionary.empty()) {
    return Status::InvalidArgument("Arrow IPC: the schema must be a struct of columns");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->root = std::move(root);
  return std::unique_ptr<StreamEncoder>(new StreamEncoder(std::move(impl)));
}

EncodedMessage StreamEncoder::SchemaMessage() const {
  flatbuffers::FlatBufferBuilder b;
  auto schema = internal::WriteSchema(b, impl_->root.children);
  return FinishMessage(b, fb::MessageHeader::Schema, schema.Union(), 0);
}

Result<std::vector<EncodedMessage>> StreamEncoder::EncodeBatch(ArrayHandle batch) {
  const FieldInfo& root = impl_->root;
  if (!batch.valid()) return Status::InvalidArgument("released batch");
  if (batch->n_children != static_cast<int64_t>(root.children.size())) {
    return Status::InvalidArgument("batch has " + std::to_string(batch->n_children) +
                                   " columns, schema " + std::to_string(root.children.size()));
  }
  auto keep = std::make_shared<KeepAlive>();
  keep->batch = std::move(batch);
  const ArrowArray& a = *keep->batch.get();
  std::vector<EncodedMessage> out;

  std::vector<std::pair<const FieldInfo*, const ArrowArray*>> dicts;
  for (int64_t i = 0; i < a.n_children; ++i) CollectDictionaries(root.children[i], *a.children[i], dicts);
  for (const auto& [field, array] : dicts) {
    if (array->dictionary == nullptr) return Status::InvalidArgument("dictionary array missing");
    const ArrowArray& dict = *array->dictionary;
    BodyWriter w(keep.get(), impl_->options.compression);
    SKADE_RETURN_IF_ERROR(EncodeArray(w, field->dictionary[0], dict, dict.offset, dict.length, 0));
    flatbuffers::FlatBufferBuilder b;
    auto data = w.Finish(b, dict.length);
    auto header = fb::CreateDictionaryBatch(b, field->dictionary_id, data, false);
    EncodedMessage m = FinishMessage(b, fb::MessageHeader::DictionaryBatch, header.Union(), w.body_length());
    m.body = std::move(w.slices());
    m.keep_alive = keep;
    out.push_back(std::move(m));
  }

  BodyWriter w(keep.get(), impl_->options.compression);
  for (int64_t i = 0; i < a.n_children; ++i) {
    const ArrowArray& column = *a.children[i];
    if (column.length < a.offset + a.length) return Status::InvalidArgument("short column");
    SKADE_RETURN_IF_ERROR(
        EncodeArray(w, root.children[i], column, column.offset + a.offset, a.length, 0)
            .WithContext("column " + root.children[i].name));
  }
  flatbuffers::FlatBufferBuilder b;
  auto header = w.Finish(b, a.length);
  EncodedMessage m = FinishMessage(b, fb::MessageHeader::RecordBatch, header.Union(), w.body_length());
  m.body = std::move(w.slices());
  m.keep_alive = keep;
  out.push_back(std::move(m));
  return out;
}

Result<std::string> EncodeStream(ArrowArrayStream* stream, EncodeOptions options) {
  SchemaHandle schema;
  if (stream->get_schema(stream, schema.get()) != 0) {
    return Status::IoError("get_schema failed");
  }
  SKADE_ASSIGN_OR_RETURN(auto encoder, StreamEncoder::Make(*schema.get(), options));
  std::string out = encoder->SchemaMessage().ToString();
  while (true) {
    ArrayHandle batch;
    if (stream->get_next(stream, batch.get()) != 0) {
      const char* err = stream->get_last_error(stream);
      return Status::IoError(std::string("get_next failed: ") + (err ? err : ""));
    }
    if (!batch.valid()) break;
    SKADE_ASSIGN_OR_RETURN(std::vector<EncodedMessage> messages, encoder->EncodeBatch(std::move(batch)));
    out += Concatenate(messages);
  }
  out += EndOfStreamMarker();
  return out;
}

// ================================================================ decoder

namespace {

Status Corrupt(std::string what) { return Status::Corruption("Arrow IPC: " + std::move(what)); }

// Largest element count accepted, so size arithmetic cannot overflow.
constexpr int64_t kMaxLength = int64_t{1} << 40;
// Largest decompressed buffer accepted.
constexpr int64_t kMaxBuffer = int64_t{1} << 36;

// An immutable decoded array; shared between batches for dictionaries.
struct Node {
  int64_t length = 0;
  int64_t null_count = 0;
  std::vector<std::vector<uint8_t>> buffers;  // empty vector = null buffer
  std::vector<int64_t> variadic_sizes;        // view types: the C trailing sizes buffer
  std::vector<std::shared_ptr<const Node>> children;
  std::shared_ptr<const Node> dictionary;
};

struct ArrayPrivate {
  std::shared_ptr<const Node> node;
  std::vector<const void*> buffer_pointers;
  std::vector<std::unique_ptr<ArrowArray>> children;
  std::vector<ArrowArray*> child_pointers;
  std::unique_ptr<ArrowArray> dictionary;
};

void ReleaseArray(ArrowArray* array) {
  auto* priv = static_cast<ArrayPrivate*>(array->private_data);
  for (auto& child : priv->children) {
    if (child->release != nullptr) child->release(child.get());
  }
  if (priv->dictionary && priv->dictionary->release != nullptr) {
    priv->dictionary->release(priv->dictionary.get());
  }
  std::unique_ptr<ArrayPrivate> owned(priv);
  array->release = nullptr;
}

void ExportNode(std::shared_ptr<const Node> node, ArrowArray* out) {
  auto priv = std::make_unique<ArrayPrivate>();
  for (const auto& b : node->buffers) priv->buffer_pointers.push_back(b.empty() ? nullptr : b.data());
  for (const auto& child : node->children) {
    auto c = std::make_unique<ArrowArray>();
    ExportNode(child, c.get());
    priv->child_pointers.push_back(c.get());
    priv->children.push_back(std::move(c));
  }
  if (node->dictionary) {
    priv->dictionary = std::make_unique<ArrowArray>();
    ExportNode(node->dictionary, priv->dictionary.get());
  }
  out->length = node->length;
  out->null_count = node->null_count;
  out->offset = 0;
  out->n_buffers = static_cast<int64_t>(priv->buffer_pointers.size());
  out->n_children = static_cast<int64_t>(priv->children.size());
  out->buffers = priv->buffer_pointers.empty() ? nullptr : priv->buffer_pointers.data();
  out->children = priv->child_pointers.empty() ? nullptr : priv->child_pointers.data();
  out->dictionary = priv->dictionary.get();
  out->release = &ReleaseArray;
  priv->node = std::move(node);
  out->private_data = priv.release();
}

Result<std::vector<uint8_t>> Decompress(fb::CompressionType codec, const uint8_t* data, int64_t size) {
  if (size < 8) return Corrupt("compressed buffer shorter than its length prefix");
  int64_t raw_size;
  std::memcpy(&raw_size, data, 8);
  data += 8;
  size -= 8;
  if (raw_size == -1) return std::vector<uint8_t>(data, data + size);
  if (raw_size < 0 || raw_size > kMaxBuffer || raw_size > size * 65536 + (1 << 20)) {
    return Corrupt("bad uncompressed buffer length");
  }
  std::vector<uint8_t> out(raw_size);
  if (codec == fb::CompressionType::LZ4_FRAME) {
    LZ4F_dctx* ctx = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
      return Status::Internal("LZ4F_createDecompressionContext failed");
    }
    size_t produced = 0, consumed = 0;
    size_t ret = 1;
    while (ret != 0) {
      size_t dst = out.size() - produced;
      size_t src = static_cast<size_t>(size) - consumed;
      ret = LZ4F_decompress(ctx, out.data() + produced, &dst, data + consumed, &src, nullptr);
      if (LZ4F_isError(ret)) break;
      produced += dst;
      consumed += src;
      if (src == 0 && dst == 0) break;  // no progress: truncated input or full output
    }
    LZ4F_freeDecompressionContext(ctx);
    if (LZ4F_isError(ret) || ret != 0 || produced != out.size()) {
      return Corrupt("bad LZ4 frame");
    }
  } else if (codec == fb::CompressionType::ZSTD) {
    size_t n = ZSTD_decompress(out.data(), out.size(), data, size);
    if (ZSTD_isError(n) || n != out.size()) return Corrupt("bad ZSTD frame");
  } else {
    return Corrupt("unknown compression codec");
  }
  return out;
}

// Element `i` of a flatbuffer vector of int64s (or of structs made of int64s: FieldNode and
// Buffer are two each). The verifier checks only the 4-byte alignment of a vector's length
// prefix, so 8-byte elements may sit at 4 mod 8: copy instead of loading in place.
int64_t VectorInt64(const uint8_t* data, size_t i) {
  int64_t v;
  std::memcpy(&v, data + i * 8, 8);
  return v;
}

// A Message flatbuffer checked by the verifier, at an 8-byte aligned address. Flatbuffers
// loads scalars in place and its verifier checks alignment relative to the buffer start
// only, so a buffer at an odd address (a pre-0.15 stream's 4-byte prefix, a Flight payload)
// is copied first. Moving keeps the copy's address.
class VerifiedMessage {
 public:
  static Result<VerifiedMessage> Make(std::string_view bytes) {
    // The verifier asserts that its buffer is below FLATBUFFERS_MAX_BUFFER_SIZE (2 GiB).
    if (bytes.size() < 8 || bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
      return Corrupt("message metadata of a bad size");
    }
    VerifiedMessage out;
    if (reinterpret_cast<uintptr_t>(bytes.data()) % 8 != 0) {
      out.copy_.resize((bytes.size() + 7) / 8);
      std::memcpy(out.copy_.data(), bytes.data(), bytes.size());
      bytes = std::string_view(reinterpret_cast<const char*>(out.copy_.data()), bytes.size());
    }
    flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (!fb::VerifyMessageBuffer(verifier)) {
      return Corrupt("message metadata fails flatbuffer verification");
    }
    out.bytes_ = bytes;
    return out;
  }

  // The aligned flatbuffer bytes (the input itself when it was aligned).
  std::string_view bytes() const { return bytes_; }
  const fb::Message& message() const { return *fb::GetMessage(bytes_.data()); }

 private:
  VerifiedMessage() = default;
  std::vector<uint64_t> copy_;
  std::string_view bytes_;
};

// One FieldNode of a record batch.
struct NodeSize {
  int64_t length = 0;
  int64_t null_count = 0;
};

// Reads one record batch's nodes and buffers against its body.
class BodyReader {
 public:
  // `max_bytes`: the most the buffers may decode into (negative = no limit).
  BodyReader(const fb::RecordBatch& batch, std::string_view body, int64_t max_bytes)
      : batch_(batch), body_(body), max_bytes_(max_bytes) {}

  Status Init() {
    if (batch_.nodes() == nullptr || batch_.buffers() == nullptr) return Corrupt("record batch without nodes/buffers");
    if (const fb::BodyCompression* c = batch_.compression()) {
      if (c->method() != fb::BodyCompressionMethod::BUFFER) return Corrupt("bad compression method");
      if (c->codec() != fb::CompressionType::LZ4_FRAME && c->codec() != fb::CompressionType::ZSTD) {
        return Corrupt("unknown compression codec");
      }
      compressed_ = true;
      codec_ = c->codec();
    }
    return Status::Ok();
  }

  Result<NodeSize> NextNode() {
    if (node_index_ >= batch_.nodes()->size()) return Corrupt("too few field nodes");
    NodeSize n;
    n.length = VectorInt64(batch_.nodes()->Data(), 2 * node_index_);
    n.null_count = VectorInt64(batch_.nodes()->Data(), 2 * node_index_ + 1);
    ++node_index_;
    if (n.length < 0 || n.length > kMaxLength || n.null_count < 0 || n.null_count > n.length) {
      return Corrupt("bad field node");
    }
    return n;
  }

  // The next buffer, decompressed and padded with zeros to at least `min_size` bytes (its
  // real size must reach `need` bytes).
  Result<std::vector<uint8_t>> NextBuffer(int64_t need) {
    if (buffer_index_ >= batch_.buffers()->size()) return Corrupt("too few buffers");
    int64_t off = VectorInt64(batch_.buffers()->Data(), 2 * buffer_index_);
    int64_t len = VectorInt64(batch_.buffers()->Data(), 2 * buffer_index_ + 1);
    ++buffer_index_;
    if (off < 0 || len < 0 || off > static_cast<int64_t>(body_.size()) ||
        len > static_cast<int64_t>(body_.size()) - off) {
      return Corrupt("buffer outside the message body");
    }
    const auto* data = reinterpret_cast<const uint8_t*>(body_.data()) + off;
    // What the buffer will take once decoded, checked before anything is allocated: a
    // compressed buffer may claim up to 65536 times its size.
    int64_t claimed = len;
    if (compressed_ && len >= 8) {
      std::memcpy(&claimed, data, 8);
      if (claimed == -1) claimed = len - 8;
    }
    if (max_bytes_ >= 0 && claimed > 0 && claimed > max_bytes_ - decoded_bytes_) {
      return Status(StatusCode::kResourceExhausted,
                    "Arrow IPC: the message decodes to more than the " + std::to_string(max_bytes_) + " bytes allowed");
    }
    std::vector<uint8_t> out;
    if (compressed_ && len > 0) {
      SKADE_ASSIGN_OR_RETURN(out, Decompress(codec_, data, len));
    } else {
      out.assign(data, data + len);
    }
    if (static_cast<int64_t>(out.size()) < need) return Corrupt("buffer too short for its array");
    decoded_bytes_ += static_cast<int64_t>(out.size());
    return out;
  }

  int64_t decoded_bytes() const { return decoded_bytes_; }

  Result<int64_t> NextVariadicCount() {
    const auto* counts = batch_.variadicBufferCounts();
    if (counts == nullptr || variadic_index_ >= counts->size()) return Corrupt("missing variadic buffer count");
    int64_t n = VectorInt64(counts->Data(), variadic_index_++);
    if (n < 0 || n > (1 << 20)) return Corrupt("bad variadic buffer count");
    return n;
  }

  bool compressed() const { return compressed_; }

 private:
  const fb::RecordBatch& batch_;
  std::string_view body_;
  const int64_t max_bytes_;
  int64_t decoded_bytes_ = 0;
  bool compressed_ = false;
  fb::CompressionType codec_ = fb::CompressionType::LZ4_FRAME;
  flatbuffers::uoffset_t node_index_ = 0;
  flatbuffers::uoffset_t buffer_index_ = 0;
  flatbuffers::uoffset_t variadic_index_ = 0;
};

template <typename T>
Status CheckOffsets(const std::vector<uint8_t>& buffer, int64_t length, int64_t limit) {
  const auto* o = reinterpret_cast<const T*>(buffer.data());
  if (o[0] < 0) return Corrupt("negative offset");
  for (int64_t i = 0; i < length; ++i) {
    if (o[i + 1] < o[i]) return Corrupt("decreasing offsets");
  }
  if (o[length] > limit) return Corrupt("offset past the end of the values");
  return Status::Ok();
}

int64_t MaxOffset(const std::vector<uint8_t>& buffer, int64_t length, bool wide) {
  if (wide) return reinterpret_cast<const int64_t*>(buffer.data())[length];
  return reinterpret_cast<const int32_t*>(buffer.data())[length];
}

using DictionaryMap = std::map<int64_t, std::shared_ptr<const Node>>;

Status CheckIndices(const Node& node, const std::string& format, int64_t dict_length) {
  const auto* valid = node.buffers[0].empty() ? nullptr : node.buffers[0].data();
  const uint8_t* data = node.buffers[1].data();
  for (int64_t i = 0; i < node.length; ++i) {
    if (valid != nullptr && !BitSet(valid, i)) continue;
    int64_t v;
    switch (format[0]) {
      case 'c': v = reinterpret_cast<const int8_t*>(data)[i]; break;
      case 'C': v = data[i]; break;
      case 's': v = reinterpret_cast<const int16_t*>(data)[i]; break;
      case 'S': v = reinterpret_cast<const uint16_t*>(data)[i]; break;
      case 'i': v = reinterpret_cast<const int32_t*>(data)[i]; break;
      case 'I': v = reinterpret_cast<const uint32_t*>(data)[i]; break;
      default: {
        uint64_t u = reinterpret_cast<const uint64_t*>(data)[i];
        if (u >= static_cast<uint64_t>(dict_length)) return Corrupt("dictionary index out of range");
        continue;
      }
    }
    if (v < 0 || v >= dict_length) return Corrupt("dictionary index out of range");
  }
  return Status::Ok();
}

Result<std::shared_ptr<const Node>> DecodeArray(BodyReader& r, const FieldInfo& field,
                                                const DictionaryMap* dictionaries, bool as_value) {
  const bool dict_encoded = !as_value && !field.dictionary.empty();
  SKADE_ASSIGN_OR_RETURN(Layout layout, LayoutOf(field.format));
  SKADE_ASSIGN_OR_RETURN(NodeSize size, r.NextNode());
  auto node = std::make_shared<Node>();
  node->length = size.length;
  node->null_count = size.null_count;
  const int64_t n = node->length;
  if (field.format == "n") {
    node->null_count = n;  // Spec: the Null type has no buffers.
    return std::shared_ptr<const Node>(std::move(node));
  }
  for (size_t i = 0; i < layout.buffers.size(); ++i) {
    BufferKind kind = layout.buffers[i];
    int64_t need = 0;
    switch (kind) {
      case BufferKind::kValidity: need = node->null_count > 0 ? (n + 7) / 8 : 0; break;
      case BufferKind::kFixed:
        // FixedSizeBinary(0) has a bit width of 0: no value bytes at all.
        if (layout.bit_width > 0 && n > (int64_t{1} << 62) / layout.bit_width) {
          return Corrupt("array too large");
        }
        need = (n * layout.bit_width + 7) / 8;
        break;
      case BufferKind::kOffset32: need = n > 0 ? (n + 1) * 4 : 0; break;
      case BufferKind::kOffset64: need = n > 0 ? (n + 1) * 8 : 0; break;
      case BufferKind::kViews: need = n * 16; break;
      case BufferKind::kValues: {
        bool wide = layout.buffers[1] == BufferKind::kOffset64;
        need = n > 0 ? MaxOffset(node->buffers[1], n, wide) : 0;
        break;
      }
    }
    SKADE_ASSIGN_OR_RETURN(std::vector<uint8_t> buf, r.NextBuffer(need));
    if (kind == BufferKind::kValidity && node->null_count == 0) buf.clear();
    if ((kind == BufferKind::kOffset32 || kind == BufferKind::kOffset64) && n == 0) {
      buf.assign(8, 0);  // C consumers may read offsets[0] of an empty array
    }
    if (kind == BufferKind::kOffset32 && n > 0) SKADE_RETURN_IF_ERROR(CheckOffsets<int32_t>(buf, n, kMaxLength));
    if (kind == BufferKind::kOffset64 && n > 0) SKADE_RETURN_IF_ERROR(CheckOffsets<int64_t>(buf, n, kMaxLength));
    if (buf.empty() && kind != BufferKind::kValidity) buf.assign(8, 0);  // never a null data pointer
    node->buffers.push_back(std::move(buf));
  }
  if (layout.variadic) {
    SKADE_ASSIGN_OR_RETURN(int64_t count, r.NextVariadicCount());
    for (int64_t i = 0; i < count; ++i) {
      SKADE_ASSIGN_OR_RETURN(std::vector<uint8_t> buf, r.NextBuffer(0));
      node->variadic_sizes.push_back(static_cast<int64_t>(buf.size()));
      if (buf.empty()) buf.assign(8, 0);
      node->buffers.push_back(std::move(buf));
    }
    // Spec (view layout): inline if size <= 12, else buffer index and offset into it.
    const uint8_t* views = node->buffers[1].data();
    for (int64_t i = 0; i < n; ++i) {
      int32_t size, index, offset;
      std::memcpy(&size, views + i * 16, 4);
      if (size < 0) return Corrupt("negative view size");
      if (size <= 12) continue;
      std::memcpy(&index, views + i * 16 + 8, 4);
      std::memcpy(&offset, views + i * 16 + 12, 4);
      if (index < 0 || index >= count || offset < 0 ||
          static_cast<int64_t>(offset) + size > node->variadic_sizes[index]) {
        return Corrupt("view outside its data buffer");
      }
    }
    // The C Data Interface adds a final buffer holding the variadic buffer sizes.
    std::vector<uint8_t> sizes(std::max<size_t>(8, node->variadic_sizes.size() * 8), 0);
    if (!node->variadic_sizes.empty()) std::memcpy(sizes.data(), node->variadic_sizes.data(), node->variadic_sizes.size() * 8);
    node->buffers.push_back(std::move(sizes));
  }
  if (dict_encoded) {
    auto it = dictionaries->find(field.dictionary_id);
    if (it == dictionaries->end()) return Corrupt("record batch before its dictionary");
    SKADE_RETURN_IF_ERROR(CheckIndices(*node, field.format, it->second->length));
    node->dictionary = it->second;
    return std::shared_ptr<const Node>(std::move(node));
  }
  // Children.
  const std::string& f = field.format;
  if (f == "+l" || f == "+L" || f == "+m") {
    SKADE_ASSIGN_OR_RETURN(auto child, DecodeArray(r, field.children[0], dictionaries, false));
    int64_t used = n > 0 ? MaxOffset(node->buffers[1], n, f == "+L") : 0;
    if (used > child->length) return Corrupt("list offsets past the child array");
    if (f == "+m" && child->null_count > 0) return Corrupt("null map entries");
    node->children.push_back(std::move(child));
  } else if (f == "+s") {
    for (const FieldInfo& c : field.children) {
      SKADE_ASSIGN_OR_RETURN(auto child, DecodeArray(r, c, dictionaries, false));
      if (child->length < n) return Corrupt("struct child shorter than the struct");
      node->children.push_back(std::move(child));
    }
  } else if (f.rfind("+w:", 0) == 0) {
    SKADE_ASSIGN_OR_RETURN(auto child, DecodeArray(r, field.children[0], dictionaries, false));
    if (layout.list_size > 0 && child->length / layout.list_size < n) {
      return Corrupt("fixed-size list child too short");
    }
    node->children.push_back(std::move(child));
  }
  return std::shared_ptr<const Node>(std::move(node));
}

// Concatenates two flat arrays (a dictionary delta onto the existing dictionary).
Result<std::shared_ptr<const Node>> Concat(const FieldInfo& field, const Node& a, const Node& b) {
  SKADE_ASSIGN_OR_RETURN(Layout layout, LayoutOf(field.format));
  if (a.length + b.length > kMaxLength) return Corrupt("dictionary delta past the length limit");
  auto out = std::make_shared<Node>();
  out->length = a.length + b.length;
  out->null_count = a.null_count + b.null_count;
  auto get_bit = [](const Node& x, size_t buf, int64_t i) {
    return x.buffers[buf].empty() || BitSet(x.buffers[buf].data(), i);
  };
  auto concat_bits = [&](size_t buf) {
    std::vector<uint8_t> bits((out->length + 7) / 8 + 8, 0);
    for (int64_t i = 0; i < out->length; ++i) {
      bool v = i < a.length ? get_bit(a, buf, i) : get_bit(b, buf, i - a.length);
      if (v) bits[i >> 3] |= static_cast<uint8_t>(1 << (i & 7));
    }
    return bits;
  };
  if (field.format == "n") return std::shared_ptr<const Node>(std::move(out));
  // Only flat values concatenate buffer by buffer: fixed width (validity + values) and
  // binary/utf8 (validity + offsets + values). Lists and maps also have two buffers, but
  // their values live in a child.
  bool fixed = layout.buffers.size() == 2 && layout.buffers[1] == BufferKind::kFixed;
  bool binary = layout.buffers.size() == 3 && layout.buffers[2] == BufferKind::kValues;
  if (!fixed && !binary) {
    return Status::NotImplemented("Arrow IPC: dictionary deltas of nested or view types");
  }
  out->buffers.push_back(out->null_count > 0 ? concat_bits(0) : std::vector<uint8_t>());
  if (layout.buffers[1] == BufferKind::kFixed) {
    if (layout.bit_width == 1) {
      out->buffers.push_back(concat_bits(1));
    } else {
      int64_t w = layout.bit_width / 8;
      std::vector<uint8_t> data(a.buffers[1].begin(), a.buffers[1].begin() + a.length * w);
      data.insert(data.end(), b.buffers[1].begin(), b.buffers[1].begin() + b.length * w);
      if (data.empty()) data.assign(8, 0);
      out->buffers.push_back(std::move(data));
    }
    return std::shared_ptr<const Node>(std::move(out));
  }
  bool wide = layout.buffers[1] == BufferKind::kOffset64;
  int64_t w = wide ? 8 : 4;
  auto offset_at = [&](const Node& x, int64_t i) -> int64_t {
    if (x.length == 0) return 0;
    return wide ? reinterpret_cast<const int64_t*>(x.buffers[1].data())[i]
                : reinterpret_cast<const int32_t*>(x.buffers[1].data())[i];
  };
  int64_t a_end = offset_at(a, a.length), b_start = offset_at(b, 0), b_end = offset_at(b, b.length);
  if (!wide && a_end + (b_end - b_start) > std::numeric_limits<int32_t>::max()) {
    return Corrupt("dictionary delta overflows 32-bit offsets");
  }
  std::vector<uint8_t> offsets((out->length + 1) * w);
  for (int64_t i = 0; i <= out->length; ++i) {
    int64_t v = i <= a.length ? offset_at(a, i) : a_end + offset_at(b, i - a.length) - b_start;
    if (wide) {
      std::memcpy(offsets.data() + i * 8, &v, 8);
    } else {
      int32_t v32 = static_cast<int32_t>(v);
      std::memcpy(offsets.data() + i * 4, &v32, 4);
    }
  }
  out->buffers.push_back(std::move(offsets));
  std::vector<uint8_t> values(a.buffers[2].begin(), a.buffers[2].begin() + a_end);
  values.insert(values.end(), b.buffers[2].begin() + b_start, b.buffers[2].begin() + b_end);
  if (values.empty()) values.assign(8, 0);
  out->buffers.push_back(std::move(values));
  return std::shared_ptr<const Node>(std::move(out));
}

void IndexDictionaryFields(const FieldInfo& field, std::map<int64_t, const FieldInfo*>& out) {
  if (!field.dictionary.empty()) {
    out[field.dictionary_id] = &field;
    IndexDictionaryFields(field.dictionary[0], out);
  }
  for (const FieldInfo& c : field.children) IndexDictionaryFields(c, out);
}

}  // namespace

struct MessageDecoder::Impl {
  bool has_schema = false;
  FieldInfo root;  // struct of the columns
  std::map<int64_t, const FieldInfo*> dictionary_fields;
  DictionaryMap dictionaries;
  int64_t max_decoded_bytes = -1;
  int64_t last_decoded_bytes = 0;

  Result<std::shared_ptr<const Node>> DecodeBatch(const fb::RecordBatch& batch, std::string_view body,
                                                  const std::vector<FieldInfo>& fields, bool as_value) {
    BodyReader r(batch, body, max_decoded_bytes);
    SKADE_RETURN_IF_ERROR(r.Init());
    if (batch.length() < 0 || batch.length() > kMaxLength) return Corrupt("bad batch length");
    auto node = std::make_shared<Node>();
    node->length = batch.length();
    node->buffers.emplace_back();  // struct validity: none
    for (const FieldInfo& f : fields) {
      SKADE_ASSIGN_OR_RETURN(auto column, DecodeArray(r, f, &dictionaries, as_value));
      if (column->length < node->length) return Corrupt("column shorter than its batch");
      node->children.push_back(std::move(column));
    }
    last_decoded_bytes = r.decoded_bytes();
    return std::shared_ptr<const Node>(std::move(node));
  }
};

MessageDecoder::MessageDecoder() : impl_(std::make_unique<Impl>()) {}
MessageDecoder::~MessageDecoder() = default;
MessageDecoder::MessageDecoder(MessageDecoder&&) noexcept = default;
MessageDecoder& MessageDecoder::operator=(MessageDecoder&&) noexcept = default;

bool MessageDecoder::has_schema() const { return impl_->has_schema; }
void MessageDecoder::set_max_decoded_bytes(int64_t bytes) { impl_->max_decoded_bytes = bytes; }
int64_t MessageDecoder::last_decoded_bytes() const { return impl_->last_decoded_bytes; }

Result<SchemaHandle> MessageDecoder::ExportSchema() const {
  if (!impl_->has_schema) return Status::InvalidArgument("no schema message decoded yet");
  SchemaHandle out;
  internal::ExportField(impl_->root, out.get());
  return out;
}

Result<std::optional<ArrayHandle>> MessageDecoder::Decode(std::string_view flatbuffer,
                                                          std::string_view body) {
  SKADE_ASSIGN_OR_RETURN(VerifiedMessage verified, VerifiedMessage::Make(flatbuffer));
  const fb::Message* message = &verified.message();
  if (message->version() < fb::MetadataVersion::V4) {
    return Status::NotImplemented("Arrow IPC: metadata version before V4");
  }
  if (message->bodyLength() < 0 || message->bodyLength() > static_cast<int64_t>(body.size())) {
    return Corrupt("body shorter than bodyLength");
  }
  body = body.substr(0, message->bodyLength());
  Impl& s = *impl_;
  s.last_decoded_bytes = 0;
  // header_type may name a table the message does not carry (the field is optional in the
  // flatbuffer): every case below dereferences its header, so check it once here.
  if (message->header() == nullptr) return Corrupt("message header type set but no header");
  switch (message->header_type()) {
    case fb::MessageHeader::Schema: {
      if (s.has_schema) return Corrupt("second schema message");
      SKADE_ASSIGN_OR_RETURN(std::vector<FieldInfo> fields, internal::ReadSchema(*message->header_as_Schema()));
      s.root = FieldInfo();
      s.root.format = "+s";
      s.root.flags = 0;
      s.root.children = std::move(fields);
      s.dictionary_fields.clear();
      IndexDictionaryFields(s.root, s.dictionary_fields);
      s.has_schema = true;
      return std::optional<ArrayHandle>();
    }
    case fb::MessageHeader::DictionaryBatch: {
      if (!s.has_schema) return Corrupt("dictionary batch before the schema");
      const fb::DictionaryBatch* d = message->header_as_DictionaryBatch();
      if (d->data() == nullptr) return Corrupt("dictionary batch without data");
      auto it = s.dictionary_fields.find(d->id());
      if (it == s.dictionary_fields.end()) return Corrupt("dictionary batch with an unknown id");
      const FieldInfo& value_field = it->second->dictionary[0];
      std::vector<FieldInfo> one = {value_field};
      SKADE_ASSIGN_OR_RETURN(auto batch, s.DecodeBatch(*d->data(), body, one, false));
      if (batch->children.size() != 1 || batch->children[0]->length != batch->length) {
        return Corrupt("bad dictionary batch");
      }
      std::shared_ptr<const Node> values = batch->children[0];
      auto existing = s.dictionaries.find(d->id());
      if (d->isDelta() && existing != s.dictionaries.end()) {
        SKADE_ASSIGN_OR_RETURN(values, Concat(value_field, *existing->second, *values));
      }
      s.dictionaries[d->id()] = std::move(values);
      return std::optional<ArrayHandle>();
    }
    case fb::MessageHeader::RecordBatch: {
      if (!s.has_schema) return Corrupt("record batch before the schema");
      SKADE_ASSIGN_OR_RETURN(auto batch,
                             s.DecodeBatch(*message->header_as_RecordBatch(), body, s.root.children, false));
      ArrayHandle out;
      ExportNode(std::move(batch), out.get());
      return std::optional<ArrayHandle>(std::move(out));
    }
    case fb::MessageHeader::Tensor:
    case fb::MessageHeader::SparseTensor:
      return Status::NotImplemented("Arrow IPC: tensor messages");
    default:
      return Corrupt("message without a known header");
  }
}

// ================================================================ stream framing

StreamReader::StreamReader(std::string bytes) : bytes_(std::move(bytes)) {}
StreamReader::~StreamReader() = default;

Result<std::unique_ptr<StreamReader>> StreamReader::Open(std::string bytes) {
  std::unique_ptr<StreamReader> reader(new StreamReader(std::move(bytes)));
  SKADE_ASSIGN_OR_RETURN(std::optional<ArrayHandle> first, reader->ReadMessage());
  if (!reader->decoder_.has_schema()) return Corrupt("stream does not start with a schema message");
  if (first.has_value()) return Corrupt("stream does not start with a schema message");
  return reader;
}

namespace {

// The message framed at `pos` of `bytes`, moving `pos` past it; nullopt at the end of the
// stream (end marker or no more bytes; `pos` then at the end).
Result<std::optional<FramedMessage>> NextFrame(std::string_view bytes, size_t& pos) {
  // Spec (encapsulated message format): <0xFFFFFFFF> <int32 metadata size> <metadata>
  // <padding> <body>; a size of 0 is the end of the stream. Pre-0.15 streams omit the
  // continuation marker and start with the size.
  size_t remaining = bytes.size() - pos;
  if (remaining == 0) return std::optional<FramedMessage>();
  if (remaining < 4) return Corrupt("truncated message prefix");
  uint32_t word;
  std::memcpy(&word, bytes.data() + pos, 4);
  size_t header = 4;
  if (word == kContinuation) {
    if (remaining < 8) return Corrupt("truncated message prefix");
    std::memcpy(&word, bytes.data() + pos + 4, 4);
    header = 8;
  }
  int32_t size = static_cast<int32_t>(word);
  if (size == 0) {
    pos = bytes.size();
    return std::optional<FramedMessage>();
  }
  if (size < 0 || static_cast<size_t>(size) > remaining - header) return Corrupt("truncated message metadata");
  std::string_view meta(bytes.data() + pos + header, size);
  SKADE_ASSIGN_OR_RETURN(VerifiedMessage verified, VerifiedMessage::Make(meta));
  int64_t body_length = verified.message().bodyLength();
  size_t body_start = pos + header + size;
  if (body_length < 0 || static_cast<uint64_t>(body_length) > bytes.size() - body_start) {
    return Corrupt("truncated message body");
  }
  pos = body_start + body_length;
  return std::optional<FramedMessage>(FramedMessage{meta, std::string_view(bytes.data() + body_start, body_length)});
}

}  // namespace

Result<std::vector<FramedMessage>> SplitStream(std::string_view bytes) {
  std::vector<FramedMessage> out;
  size_t pos = 0;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(std::optional<FramedMessage> frame, NextFrame(bytes, pos));
    if (!frame) return out;
    out.push_back(*frame);
  }
}

Result<std::optional<ArrayHandle>> StreamReader::ReadMessage() {
  SKADE_ASSIGN_OR_RETURN(std::optional<FramedMessage> frame, NextFrame(bytes_, pos_));
  if (!frame) {
    done_ = true;
    pos_ = bytes_.size();
    return std::optional<ArrayHandle>();
  }
  return decoder_.Decode(frame->flatbuffer, frame->body);
}

Result<std::optional<ArrayHandle>> StreamReader::Next() {
  while (!done_) {
    SKADE_ASSIGN_OR_RETURN(std::optional<ArrayHandle> batch, ReadMessage());
    if (batch.has_value()) return batch;
  }
  return std::optional<ArrayHandle>();
}

}  // namespace skade::arrow::ipc
