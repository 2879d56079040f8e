// Private to skade/arrow: the schema model shared by the IPC encoder and decoder, and its
// conversions to and from ArrowSchema and the flatbuffers Field tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/arrow/format/Message_generated.h"
#include "skade/arrow/format/Schema_generated.h"
#include "skade/base/status.h"

namespace skade::arrow::ipc::internal {

namespace fb = ::skade::arrow::flatbuf;

// One field. `format` is the C Data Interface format string of the stored values; for a
// dictionary-encoded field it is the index type and `dictionary` holds the value field.
struct FieldInfo {
  std::string name;
  std::string format;
  int64_t flags = ARROW_FLAG_NULLABLE;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<FieldInfo> children;
  std::vector<FieldInfo> dictionary;  // zero or one element
  int64_t dictionary_id = -1;

  bool nullable() const { return (flags & ARROW_FLAG_NULLABLE) != 0; }
};

// Buffer roles of one array in IPC order (the C Data Interface order is the same; view types
// add their variadic data buffers and, in C, a trailing buffer of their sizes).
enum class BufferKind { kValidity, kFixed, kOffset32, kOffset64, kValues, kViews };

struct Layout {
  std::vector<BufferKind> buffers;
  int64_t bit_width = 0;        // kFixed
  int64_t list_size = 0;        // fixed-size list
  bool variadic = false;        // view types
  bool is_union = false;        // "+ud:…" / "+us:…": type ids (and offsets when dense), no validity
  bool dense = false;
  std::vector<int32_t> type_ids;  // unions: the type code of each child
};

// The layout of a field's stored array; kNotImplemented for unsupported formats,
// kInvalidArgument for malformed ones.
Result<Layout> LayoutOf(std::string_view format);

// Reads a C schema (recursively); assigns dictionary ids from `next_dictionary_id`.
Result<FieldInfo> FromArrowSchema(const ArrowSchema& schema, int64_t& next_dictionary_id);
// Exports a field as an owning C schema.
void ExportField(const FieldInfo& field, ArrowSchema* out);

// Schema flatbuffer <-> fields.
flatbuffers::Offset<fb::Schema> WriteSchema(flatbuffers::FlatBufferBuilder& builder,
                                            const std::vector<FieldInfo>& fields);
Result<std::vector<FieldInfo>> ReadSchema(const fb::Schema& schema);

}  // namespace skade::arrow::ipc::internal
