#include "skade/engine/arrow_flat_batch_internal.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "duckdb/common/arrow/arrow_converter.hpp"

namespace skade::engine {
namespace {

constexpr size_t kAlign = 64;  // Arrow's recommended buffer alignment
constexpr size_t kFirstStringBytes = size_t{64} << 10;
constexpr size_t kMaxFirstStringBytes = size_t{256} << 20;

size_t Aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
size_t BitmapBytes(int64_t rows) { return static_cast<size_t>((rows + 7) / 8); }

// The buffer of an empty string column's bytes: consumers may not expect a null pointer there.
alignas(kAlign) const uint8_t kNoBytes[kAlign] = {};

void SetBit(uint8_t* bits, int64_t i, bool on) {
  const uint8_t mask = static_cast<uint8_t>(1u << (i % 8));
  bits[i / 8] = on ? static_cast<uint8_t>(bits[i / 8] | mask) : static_cast<uint8_t>(bits[i / 8] & ~mask);
}

// Sets bits [from, from + count) on.
void SetBitsOn(uint8_t* bits, int64_t from, int64_t count) {
  int64_t i = from;
  const int64_t end = from + count;
  for (; i < end && i % 8 != 0; ++i) SetBit(bits, i, true);
  const int64_t whole = (end - i) / 8;
  if (whole > 0) {
    std::memset(bits + i / 8, 0xFF, static_cast<size_t>(whole));
    i += whole * 8;
  }
  for (; i < end; ++i) SetBit(bits, i, true);
}

// The Arrow format DuckDB gives a flat type; empty for any other type. Timestamps with a time
// zone carry it after the colon.
bool FormatMatches(const duckdb::LogicalType& type, std::string_view format) {
  using duckdb::LogicalTypeId;
  switch (type.id()) {
    case LogicalTypeId::BOOLEAN: return format == "b";
    case LogicalTypeId::TINYINT: return format == "c";
    case LogicalTypeId::SMALLINT: return format == "s";
    case LogicalTypeId::INTEGER: return format == "i";
    case LogicalTypeId::BIGINT: return format == "l";
    case LogicalTypeId::UTINYINT: return format == "C";
    case LogicalTypeId::USMALLINT: return format == "S";
    case LogicalTypeId::UINTEGER: return format == "I";
    case LogicalTypeId::UBIGINT: return format == "L";
    case LogicalTypeId::FLOAT: return format == "f";
    case LogicalTypeId::DOUBLE: return format == "g";
    case LogicalTypeId::DATE: return format == "tdD";
    case LogicalTypeId::TIME: return format == "ttu";
    case LogicalTypeId::TIMESTAMP: return format == "tsu:";
    case LogicalTypeId::TIMESTAMP_TZ: return format.starts_with("tsu:");
    case LogicalTypeId::TIMESTAMP_MS: return format == "tsm:";
    case LogicalTypeId::TIMESTAMP_NS: return format == "tsn:";
    case LogicalTypeId::TIMESTAMP_SEC: return format == "tss:";
    case LogicalTypeId::DECIMAL: {
      // 128 bits, said or not (the bit width follows the scale); DuckDB's other decimal forms
      // (32 or 64 bits) are not built here.
      const std::string decimal = "d:" + std::to_string(duckdb::DecimalType::GetWidth(type)) + "," +
                                  std::to_string(duckdb::DecimalType::GetScale(type));
      return format == decimal || format == decimal + ",128";
    }
    case LogicalTypeId::VARCHAR: return format == "u" || format == "U";
    case LogicalTypeId::BLOB: return format == "z" || format == "Z";
    default: return false;
  }
}

std::optional<FlatBatchLayout::Column> ColumnFor(const duckdb::LogicalType& type, std::string_view format) {
  using duckdb::PhysicalType;
  using Kind = FlatBatchLayout::Kind;
  if (!FormatMatches(type, format)) return std::nullopt;
  switch (type.InternalType()) {
    case PhysicalType::BOOL: return FlatBatchLayout::Column{Kind::kBool, 1, 0};
    case PhysicalType::VARCHAR:
      return FlatBatchLayout::Column{Kind::kString, 0, format == "U" || format == "Z" ? 8 : 4};
    default: break;
  }
  const int width = static_cast<int>(duckdb::GetTypeIdSize(type.InternalType()));
  if (type.id() == duckdb::LogicalTypeId::DECIMAL) {
    if (width != 2 && width != 4 && width != 8 && width != 16) return std::nullopt;
    return FlatBatchLayout::Column{Kind::kDecimal, width, 0};
  }
  if (width != 1 && width != 2 && width != 4 && width != 8) return std::nullopt;
  return FlatBatchLayout::Column{Kind::kFixed, width, 0};
}

// A decimal of `width` bytes at `p` as the 128-bit little-endian integer Arrow holds.
void WideDecimal(const uint8_t* p, int width, uint8_t* out) {
  int64_t value = 0;
  switch (width) {
    case 2: value = *reinterpret_cast<const int16_t*>(p); break;
    case 4: value = *reinterpret_cast<const int32_t*>(p); break;
    case 8: value = *reinterpret_cast<const int64_t*>(p); break;
    default: std::memcpy(out, p, 16); return;  // hugeint_t: lower word, then upper
  }
  const uint64_t low = static_cast<uint64_t>(value);
  const uint64_t high = value < 0 ? ~uint64_t{0} : 0;
  std::memcpy(out, &low, 8);
  std::memcpy(out + 8, &high, 8);
}

// What the batch's arrays keep alive: their pages, returned to the pool with the last of them.
struct BatchPages {
  PageRun fixed;
  std::vector<PageRun> strings;
};

struct ChildData {
  std::shared_ptr<BatchPages> pages;
  const void* buffers[3] = {nullptr, nullptr, nullptr};
};

struct RootData {
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_pointers;
  const void* buffers[1] = {nullptr};
};

void ReleaseChild(ArrowArray* array) {
  std::unique_ptr<ChildData>(static_cast<ChildData*>(array->private_data)).reset();
  array->private_data = nullptr;
  array->release = nullptr;
}

// Releases the children the consumer did not move out, then the root.
void ReleaseRoot(ArrowArray* array) {
  std::unique_ptr<RootData> root(static_cast<RootData*>(array->private_data));
  for (ArrowArray& child : root->children) {
    if (child.release != nullptr) child.release(&child);
  }
  array->private_data = nullptr;
  array->release = nullptr;
}

}  // namespace

using Kind = FlatBatchLayout::Kind;

std::shared_ptr<const FlatBatchLayout> FlatBatchLayout::For(const duckdb::vector<duckdb::LogicalType>& types,
                                                            duckdb::ClientProperties properties) {
  if (types.empty()) return nullptr;
  try {
    duckdb::vector<std::string> names;
    for (size_t i = 0; i < types.size(); ++i) names.push_back("c" + std::to_string(i));
    ArrowSchema schema;
    duckdb::ArrowConverter::ToArrowSchema(&schema, types, names, properties);
    arrow::SchemaHandle owned(&schema);
    if (owned->n_children != static_cast<int64_t>(types.size())) return nullptr;
    auto layout = std::shared_ptr<FlatBatchLayout>(new FlatBatchLayout());
    for (size_t i = 0; i < types.size(); ++i) {
      const ArrowSchema* child = owned->children[i];
      // Metadata names an extension type (UUID, JSON, …) DuckDB builds its own way.
      if (child->metadata != nullptr || child->dictionary != nullptr || child->n_children != 0) return nullptr;
      auto column = ColumnFor(types[i], child->format != nullptr ? child->format : "");
      if (!column) return nullptr;
      layout->columns_.push_back(*column);
    }
    return layout;
  } catch (const std::exception&) {
    return nullptr;  // DuckDB's appender reports what is wrong with the types
  }
}

struct FlatBatchBuilder::ColumnState {
  size_t validity_at = 0;  // offsets into the fixed run
  size_t values_at = 0;
  bool has_nulls = false;  // the validity bitmap is kept from the first null on
  int64_t null_count = 0;
  PageRun bytes;           // kString: the values' bytes
  size_t bytes_used = 0;
};

FlatBatchBuilder::FlatBatchBuilder(std::shared_ptr<const FlatBatchLayout> layout, std::shared_ptr<PagePool> pool,
                                   int64_t capacity)
    : layout_(std::move(layout)), pool_(std::move(pool)), capacity_(std::clamp<int64_t>(capacity, 1, kMaxCapacity)) {}

FlatBatchBuilder::~FlatBatchBuilder() = default;

Status FlatBatchBuilder::Start() {
  const auto& layout = layout_->columns();
  columns_.clear();
  columns_.resize(layout.size());
  size_t at = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    columns_[i].validity_at = at;
    at += Aligned(BitmapBytes(capacity_));
    columns_[i].values_at = at;
    switch (layout[i].kind) {
      case Kind::kFixed: at += Aligned(static_cast<size_t>(capacity_) * layout[i].source_width); break;
      case Kind::kBool: at += Aligned(BitmapBytes(capacity_)); break;
      case Kind::kDecimal: at += Aligned(static_cast<size_t>(capacity_) * 16); break;
      case Kind::kString: at += Aligned(static_cast<size_t>(capacity_ + 1) * layout[i].offset_width); break;
    }
  }
  SKADE_ASSIGN_OR_RETURN(fixed_, pool_->Acquire(at));
  started_ = true;
  return Status::Ok();
}

Status FlatBatchBuilder::Append(duckdb::DataChunk& chunk) {
  const int64_t count = static_cast<int64_t>(chunk.size());
  if (count == 0) return Status::Ok();
  if (rows_ + count > capacity_) return Status::Internal("a chunk past the batch's capacity");
  if (!started_) SKADE_RETURN_IF_ERROR(Start());
  const auto& layout = layout_->columns();
  for (size_t c = 0; c < layout.size(); ++c) {
    duckdb::UnifiedVectorFormat format;
    chunk.data[c].ToUnifiedFormat(chunk.size(), format);
    AppendValidity(columns_[c], format, count);
    if (layout[c].kind == Kind::kString) {
      SKADE_RETURN_IF_ERROR(AppendStrings(layout[c], columns_[c], format, count));
    } else {
      AppendValues(layout[c], columns_[c], format, count);
    }
  }
  rows_ += count;
  return Status::Ok();
}

// A selection (a dictionary or constant vector, or a filter's) makes the rows gather one by one.
void FlatBatchBuilder::AppendValidity(ColumnState& state, const duckdb::UnifiedVectorFormat& format, int64_t count) {
  uint8_t* validity = fixed_.data() + state.validity_at;
  if (format.validity.AllValid()) {
    if (state.has_nulls) SetBitsOn(validity, rows_, count);
    return;
  }
  // No bitmap is kept until the first null; from then on, every row's bit.
  if (!state.has_nulls) {
    SetBitsOn(validity, 0, rows_);
    state.has_nulls = true;
  }
  const duckdb::SelectionVector& sel = *format.sel;
  int64_t nulls = 0;
  if (!sel.IsSet() && rows_ % 8 == 0) {
    // DuckDB's mask is 64-bit words, least significant bit first: Arrow's bit order.
    const auto* mask = reinterpret_cast<const uint8_t*>(format.validity.GetData());
    std::memcpy(validity + rows_ / 8, mask, BitmapBytes(count));
    for (int64_t i = 0; i < count / 8; ++i) nulls += 8 - std::popcount(mask[i]);
    for (int64_t i = count / 8 * 8; i < count; ++i) nulls += format.validity.RowIsValid(i) ? 0 : 1;
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const bool valid = format.validity.RowIsValid(sel.get_index(i));
      SetBit(validity, rows_ + i, valid);
      nulls += valid ? 0 : 1;
    }
  }
  state.null_count += nulls;
}

void FlatBatchBuilder::AppendValues(const FlatBatchLayout::Column& column, ColumnState& state,
                                    const duckdb::UnifiedVectorFormat& format, int64_t count) {
  uint8_t* values = fixed_.data() + state.values_at;
  const duckdb::SelectionVector& sel = *format.sel;
  const size_t width = static_cast<size_t>(column.source_width);
  switch (column.kind) {
    case Kind::kFixed: {
      uint8_t* out = values + static_cast<size_t>(rows_) * width;
      if (!sel.IsSet()) {
        std::memcpy(out, format.data, static_cast<size_t>(count) * width);
      } else {
        for (int64_t i = 0; i < count; ++i) std::memcpy(out + i * width, format.data + sel.get_index(i) * width, width);
      }
      return;
    }
    case Kind::kBool:
      for (int64_t i = 0; i < count; ++i) SetBit(values, rows_ + i, format.data[sel.get_index(i)] != 0);
      return;
    case Kind::kDecimal: {
      uint8_t* out = values + static_cast<size_t>(rows_) * 16;
      for (int64_t i = 0; i < count; ++i) WideDecimal(format.data + sel.get_index(i) * width, column.source_width, out + i * 16);
      return;
    }
    case Kind::kString:
      break;  // AppendStrings
  }
}

Status FlatBatchBuilder::AppendStrings(const FlatBatchLayout::Column& column, ColumnState& state,
                                       const duckdb::UnifiedVectorFormat& format, int64_t count) {
  const duckdb::SelectionVector& sel = *format.sel;
  const auto* strings = reinterpret_cast<const duckdb::string_t*>(format.data);
  size_t needed = 0;
  for (int64_t i = 0; i < count; ++i) {
    const auto index = sel.get_index(i);
    if (format.validity.RowIsValid(index)) needed += strings[index].GetSize();
  }
  const size_t total = state.bytes_used + needed;
  if (column.offset_width == 4 && total > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::InvalidArgument("a batch's strings take " + std::to_string(total) +
                                   " bytes, more than Arrow's 32-bit offsets hold (2147483647)");
  }
  if (needed > 0) {
    if (state.bytes.data() == nullptr) {
      // Sized for a batch of such chunks; pages never written are never touched.
      const size_t guess = needed / static_cast<size_t>(count) * static_cast<size_t>(capacity_);
      SKADE_ASSIGN_OR_RETURN(state.bytes, pool_->Acquire(std::clamp(std::max(guess, total), kFirstStringBytes,
                                                                    std::max(kMaxFirstStringBytes, total))));
    } else if (total > state.bytes.size()) {
      SKADE_RETURN_IF_ERROR(state.bytes.Grow(std::max(total, state.bytes.size() * 2)));
    }
  }
  uint8_t* bytes = state.bytes.data();
  size_t used = state.bytes_used;
  auto put = [&](auto* offsets) {
    using Offset = std::remove_pointer_t<decltype(offsets)>;
    if (rows_ == 0) offsets[0] = 0;
    for (int64_t i = 0; i < count; ++i) {
      const auto index = sel.get_index(i);
      if (format.validity.RowIsValid(index)) {
        const duckdb::string_t& s = strings[index];
        const size_t size = s.GetSize();
        if (size > 0) std::memcpy(bytes + used, s.GetData(), size);
        used += size;
      }
      offsets[rows_ + i + 1] = static_cast<Offset>(used);
    }
  };
  uint8_t* offsets = fixed_.data() + state.values_at;
  if (column.offset_width == 4) {
    put(reinterpret_cast<int32_t*>(offsets));
  } else {
    put(reinterpret_cast<int64_t*>(offsets));
  }
  state.bytes_used = used;
  return Status::Ok();
}

Result<arrow::ArrayHandle> FlatBatchBuilder::Finish() {
  if (!started_ || rows_ == 0) return Status::Internal("no rows to finish a batch with");
  const auto& layout = layout_->columns();
  auto pages = std::make_shared<BatchPages>();
  pages->fixed = std::move(fixed_);
  const uint8_t* base = pages->fixed.data();
  // Everything that allocates comes before the first child owns its data, so that a failed
  // allocation leaves nothing behind.
  auto root = std::make_unique<RootData>();
  root->children.resize(layout.size());
  root->child_pointers.reserve(layout.size());
  pages->strings.reserve(layout.size());
  std::vector<std::unique_ptr<ChildData>> data(layout.size());
  for (auto& d : data) d = std::make_unique<ChildData>();
  for (size_t c = 0; c < layout.size(); ++c) {
    ColumnState& state = columns_[c];
    ChildData& d = *data[c];
    d.buffers[0] = state.has_nulls ? base + state.validity_at : nullptr;
    d.buffers[1] = base + state.values_at;
    int64_t n_buffers = 2;
    if (layout[c].kind == Kind::kString) {
      d.buffers[2] = state.bytes.data() != nullptr ? state.bytes.data() : kNoBytes;
      if (state.bytes.data() != nullptr) pages->strings.push_back(std::move(state.bytes));
      n_buffers = 3;
    }
    d.pages = pages;
    ArrowArray& child = root->children[c];
    child.length = rows_;
    child.null_count = state.null_count;
    child.offset = 0;
    child.n_buffers = n_buffers;
    child.n_children = 0;
    child.buffers = d.buffers;
    child.children = nullptr;
    child.dictionary = nullptr;
    child.release = ReleaseChild;
    child.private_data = data[c].release();  // owned by the child from here
  }
  for (ArrowArray& child : root->children) root->child_pointers.push_back(&child);
  ArrowArray out;
  out.length = rows_;
  out.null_count = 0;
  out.offset = 0;
  out.n_buffers = 1;
  out.n_children = static_cast<int64_t>(layout.size());
  out.buffers = root->buffers;
  out.children = root->child_pointers.data();
  out.dictionary = nullptr;
  out.release = ReleaseRoot;
  out.private_data = root.release();  // owned by the array from here
  rows_ = 0;
  started_ = false;
  columns_.clear();
  return arrow::ArrayHandle(&out);
}

}  // namespace skade::engine
