#include "skade/iceberg/puffin.h"

#include <lz4frame.h>

#include <cstring>
#include <memory>

#include "skade/iceberg/json_internal.h"

namespace skade::iceberg {
namespace {

using json_internal::Json;

constexpr std::string_view kMagic = "PFA1";
constexpr size_t kTail = 12;                       // payload size, flags, magic
constexpr int64_t kMaxFooter = int64_t{256} << 20;  // a footer larger than this is not a real one
constexpr uint32_t kFooterCompressed = 1;           // flags byte 0, bit 0

uint32_t GetLE32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
void PutLE32(std::string* out, uint32_t v) {
  for (size_t i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

Status Bad(std::string_view name, const std::string& what) {
  return Status::Corruption("Puffin file '" + std::string(name) + "': " + what);
}

Result<std::string> Lz4FrameDecompress(std::string_view in, std::string_view name) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
    return Status::Internal("cannot create an LZ4 decompression context");
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> guard(ctx, LZ4F_freeDecompressionContext);
  std::string out;
  char buf[64 * 1024];
  size_t pos = 0;
  for (;;) {
    size_t src = in.size() - pos, dst = sizeof(buf);
    const size_t hint = LZ4F_decompress(ctx, buf, &dst, in.data() + pos, &src, nullptr);
    if (LZ4F_isError(hint)) return Bad(name, std::string("the LZ4 footer does not decompress: ") + LZ4F_getErrorName(hint));
    out.append(buf, dst);
    pos += src;
    if (static_cast<int64_t>(out.size()) > kMaxFooter) return Bad(name, "the footer decompresses past 256 MiB");
    if (hint == 0) return out;
    if (src == 0 && dst == 0) return Bad(name, "the LZ4 footer is truncated");
  }
}

Result<PuffinBlob> ParseBlob(const Json& j, std::string_view ctx) {
  if (!j.is_object()) return json_internal::Bad(std::string(ctx) + ": a blob entry is not an object");
  PuffinBlob b;
  SKADE_ASSIGN_OR_RETURN(b.type, json_internal::GetString(j, "type", ctx));
  SKADE_ASSIGN_OR_RETURN(const Json* fields, json_internal::GetArray(j, "fields", ctx, true));
  for (const Json& f : *fields) {
    if (!f.is_number_integer()) return json_internal::Bad(std::string(ctx) + ": blob fields must be integers");
    b.fields.push_back(f.get<int>());
  }
  SKADE_ASSIGN_OR_RETURN(b.snapshot_id, json_internal::GetLong(j, "snapshot-id", ctx));
  SKADE_ASSIGN_OR_RETURN(b.sequence_number, json_internal::GetLong(j, "sequence-number", ctx));
  SKADE_ASSIGN_OR_RETURN(b.offset, json_internal::GetLong(j, "offset", ctx));
  SKADE_ASSIGN_OR_RETURN(b.length, json_internal::GetLong(j, "length", ctx));
  if (const Json* codec = json_internal::Find(j, "compression-codec")) {
    if (!codec->is_string()) return json_internal::Bad(std::string(ctx) + ": compression-codec is not a string");
    b.compression_codec = codec->get<std::string>();
  }
  if (const Json* props = json_internal::Find(j, "properties")) {
    if (!props->is_object()) return json_internal::Bad(std::string(ctx) + ": blob properties are not an object");
    for (const auto& [k, v] : props->items()) {
      if (!v.is_string()) return json_internal::Bad(std::string(ctx) + ": blob property '" + k + "' is not a string");
      b.properties[k] = v.get<std::string>();
    }
  }
  return b;
}

// `head` = the file's first 4 bytes, `footer` = magic + payload, `tail` = the last 12 bytes.
Result<PuffinFooter> ParseFooter(std::string_view head, std::string_view footer, std::string_view tail,
                                 int64_t file_size, std::string_view name) {
  if (head != kMagic) return Bad(name, "does not start with the Puffin magic PFA1");
  if (footer.substr(0, 4) != kMagic) return Bad(name, "the footer does not start with the Puffin magic");
  const uint32_t flags = GetLE32(tail, 4);
  std::string decompressed;
  std::string_view payload = footer.substr(4);
  if (flags & kFooterCompressed) {
    SKADE_ASSIGN_OR_RETURN(decompressed, Lz4FrameDecompress(payload, name));
    payload = decompressed;
  }
  auto json = json_internal::ParseJson(payload, "Puffin footer");
  if (!json.ok()) return Bad(name, "the footer payload is not JSON");
  if (!json->is_object()) return Bad(name, "the footer payload is not a JSON object");
  const std::string ctx = "Puffin file '" + std::string(name) + "' footer";
  PuffinFooter out;
  auto blobs = json_internal::GetArray(*json, "blobs", ctx, true);
  if (!blobs.ok()) return Status::Corruption(blobs.status().message());
  // Blobs lie between the leading magic and the footer.
  const int64_t blob_end = file_size - static_cast<int64_t>(footer.size() + kTail);
  for (const Json& j : **blobs) {
    auto blob = ParseBlob(j, ctx);
    if (!blob.ok()) return Status::Corruption(blob.status().message());
    if (blob->offset < 4 || blob->length < 0 || blob->offset > blob_end - blob->length) {
      return Bad(name, "blob '" + blob->type + "' at offset " + std::to_string(blob->offset) + " with length " +
                           std::to_string(blob->length) + " lies outside the blob area (bytes 4 to " +
                           std::to_string(blob_end) + ")");
    }
    out.blobs.push_back(std::move(*blob));
  }
  if (const Json* props = json_internal::Find(*json, "properties"); props && props->is_object()) {
    for (const auto& [k, v] : props->items()) {
      if (v.is_string()) out.properties[k] = v.get<std::string>();
    }
  }
  return out;
}

// The footer's size (magic + payload) from the last 12 bytes, checked against the file size.
Result<int64_t> FooterSize(std::string_view tail, int64_t file_size, std::string_view name) {
  if (tail.substr(8, 4) != kMagic) return Bad(name, "does not end with the Puffin magic PFA1");
  const int64_t payload = GetLE32(tail, 0);
  if (payload > kMaxFooter || 4 + payload + 4 + static_cast<int64_t>(kTail) > file_size) {
    return Bad(name, "its footer payload size (" + std::to_string(payload) + " bytes) does not fit the file (" +
                         std::to_string(file_size) + " bytes)");
  }
  return 4 + payload;
}

}  // namespace

const PuffinBlob* PuffinFooter::BlobAt(int64_t offset) const {
  for (const PuffinBlob& b : blobs) {
    if (b.offset == offset) return &b;
  }
  return nullptr;
}

Result<PuffinFooter> ParsePuffinFile(std::string_view file, std::string_view name) {
  if (file.size() < 4 + 4 + kTail) return Bad(name, "is too short to be a Puffin file (" + std::to_string(file.size()) + " bytes)");
  const auto size = static_cast<int64_t>(file.size());
  std::string_view tail = file.substr(file.size() - kTail);
  SKADE_ASSIGN_OR_RETURN(int64_t footer_size, FooterSize(tail, size, name));
  return ParseFooter(file.substr(0, 4), file.substr(file.size() - kTail - footer_size, footer_size), tail, size, name);
}

Result<PuffinFooter> ReadPuffinFooter(io::FileIO& io, std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(io::FileInfo info, io.Stat(location));
  if (info.size < static_cast<int64_t>(4 + 4 + kTail)) {
    return Bad(location, "is too short to be a Puffin file (" + std::to_string(info.size) + " bytes)");
  }
  SKADE_ASSIGN_OR_RETURN(std::string tail, io.ReadRange(location, info.size - kTail, kTail));
  if (tail.size() != kTail) return Bad(location, "changed size while being read");
  SKADE_ASSIGN_OR_RETURN(int64_t footer_size, FooterSize(tail, info.size, location));
  SKADE_ASSIGN_OR_RETURN(std::string head, io.ReadRange(location, 0, 4));
  SKADE_ASSIGN_OR_RETURN(std::string footer, io.ReadRange(location, info.size - kTail - footer_size, footer_size));
  if (static_cast<int64_t>(footer.size()) != footer_size) return Bad(location, "changed size while being read");
  return ParseFooter(head, footer, tail, info.size, location);
}

PuffinWriter::PuffinWriter() : file_(kMagic) {}

const PuffinBlob& PuffinWriter::Add(PuffinBlob blob, std::string_view bytes) {
  blob.offset = static_cast<int64_t>(file_.size());
  blob.length = static_cast<int64_t>(bytes.size());
  file_.append(bytes);
  blobs_.push_back(std::move(blob));
  return blobs_.back();
}

std::string PuffinWriter::Finish(const std::map<std::string, std::string>& properties, bool compress_footer) {
  Json blobs = Json::array();
  for (const PuffinBlob& b : blobs_) {
    Json j = {{"type", b.type}, {"fields", b.fields}, {"snapshot-id", b.snapshot_id},
              {"sequence-number", b.sequence_number}, {"offset", b.offset}, {"length", b.length}};
    if (b.compression_codec) j["compression-codec"] = *b.compression_codec;
    if (!b.properties.empty()) j["properties"] = b.properties;
    blobs.push_back(std::move(j));
  }
  Json footer = {{"blobs", std::move(blobs)}};
  if (!properties.empty()) footer["properties"] = properties;
  std::string payload = json_internal::Dump(footer);
  uint32_t flags = 0;
  if (compress_footer) {
    LZ4F_preferences_t prefs;
    std::memset(&prefs, 0, sizeof(prefs));
    prefs.frameInfo.contentSize = payload.size();
    std::string compressed(LZ4F_compressFrameBound(payload.size(), &prefs), '\0');
    const size_t n = LZ4F_compressFrame(compressed.data(), compressed.size(), payload.data(), payload.size(), &prefs);
    if (!LZ4F_isError(n)) {
      compressed.resize(n);
      payload = std::move(compressed);
      flags |= kFooterCompressed;
    }
  }
  std::string out = std::move(file_);
  out += kMagic;
  out += payload;
  PutLE32(&out, static_cast<uint32_t>(payload.size()));
  PutLE32(&out, flags);
  out += kMagic;
  file_ = std::string(kMagic);
  blobs_.clear();
  return out;
}

}  // namespace skade::iceberg
