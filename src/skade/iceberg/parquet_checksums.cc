#include "skade/iceberg/parquet_checksums.h"

#include <algorithm>
#include <optional>

#include "skade/iceberg/parquet_pages.h"
#include "skade/iceberg/thrift_compact.h"

namespace skade::iceberg {
namespace {

using thrift::CompactReader;
using thrift::CompactType;
using thrift::CompactWriter;
using thrift::FieldHeader;

constexpr int64_t kCopyBlock = int64_t{4} << 20;  // bytes between column chunks, per read

// Any compact-protocol value of Parquet's footer and page headers (no maps, no UUIDs), kept
// whole so that it is written back with a few fields changed and every other field as read.
struct Field;
struct Value {
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string bytes;
  std::vector<Field> fields;                 // a struct's fields, in the order read
  CompactType element = CompactType::kStop;  // a list's element type
  std::vector<Value> items;                  // a list's elements
};
struct Field {
  int16_t id = 0;
  CompactType type = CompactType::kStop;
  Value value;
};

bool Decode(CompactReader& r, CompactType type, bool element, Value& v) {
  switch (type) {
    case CompactType::kTrue:
    case CompactType::kFalse:
      v.boolean = element ? r.ReadElementBool() : type == CompactType::kTrue;
      break;
    case CompactType::kI8:
      v.integer = r.ReadI8();
      break;
    case CompactType::kI16:
      v.integer = r.ReadI16();
      break;
    case CompactType::kI32:
      v.integer = r.ReadI32();
      break;
    case CompactType::kI64:
      v.integer = r.ReadI64();
      break;
    case CompactType::kDouble:
      v.real = r.ReadDouble();
      break;
    case CompactType::kBinary:
      v.bytes = std::string(r.ReadBinary());
      break;
    case CompactType::kList:
    case CompactType::kSet: {
      const auto list = r.ReadListHeader();
      v.element = list.element;
      for (int64_t i = 0; i < list.size && r.ok(); ++i) {
        v.items.emplace_back();
        if (!Decode(r, list.element, true, v.items.back())) return false;
      }
      break;
    }
    case CompactType::kStruct: {
      if (!r.BeginStruct()) return false;
      for (FieldHeader f = r.NextField(); f.type != CompactType::kStop; f = r.NextField()) {
        v.fields.push_back(Field{f.id, f.type, {}});
        if (!Decode(r, f.type, false, v.fields.back().value)) return false;
      }
      r.EndStruct();
      break;
    }
    default:
      return false;  // maps and UUIDs: not in Parquet's footer or page headers
  }
  return r.ok();
}

void Encode(CompactWriter& w, CompactType type, const Value& v) {
  switch (type) {
    case CompactType::kTrue:
    case CompactType::kFalse:
      w.WriteElementBool(v.boolean);  // as a list element; fields carry it in their header
      break;
    case CompactType::kI8:
      w.WriteI8(static_cast<int8_t>(v.integer));
      break;
    case CompactType::kI16:
    case CompactType::kI32:
    case CompactType::kI64:
      w.WriteI64(v.integer);  // one zigzag varint for all three
      break;
    case CompactType::kDouble:
      w.WriteDouble(v.real);
      break;
    case CompactType::kBinary:
      w.WriteBinary(v.bytes);
      break;
    case CompactType::kList:
    case CompactType::kSet:
      w.WriteListHeader(v.element, static_cast<int64_t>(v.items.size()));
      for (const Value& item : v.items) Encode(w, v.element, item);
      break;
    case CompactType::kStruct:
      w.BeginStruct();
      for (const Field& f : v.fields) {
        if (f.type == CompactType::kTrue || f.type == CompactType::kFalse) {
          w.WriteBoolField(f.id, f.value.boolean);
        } else {
          w.WriteFieldHeader(f.type, f.id);
          Encode(w, f.type, f.value);
        }
      }
      w.EndStruct();
      break;
    default:
      break;
  }
}

Field* Find(Value& s, int16_t id) {
  for (Field& f : s.fields) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

int64_t IntOr(Value& s, int16_t id, int64_t otherwise) {
  const Field* f = Find(s, id);
  return f != nullptr ? f->value.integer : otherwise;
}

// Sets an integer field, adding it in id order when absent.
void SetInt(Value& s, int16_t id, CompactType type, int64_t value) {
  if (Field* f = Find(s, id)) {
    f->type = type;
    f->value.integer = value;
    return;
  }
  auto at = std::find_if(s.fields.begin(), s.fields.end(), [&](const Field& f) { return f.id > id; });
  Field f{id, type, {}};
  f.value.integer = value;
  s.fields.insert(at, std::move(f));
}

void Remove(Value& s, int16_t id) {
  std::erase_if(s.fields, [&](const Field& f) { return f.id == id; });
}

uint32_t Le32(std::string_view b) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  return v;
}

std::string Le32Bytes(uint32_t n) {
  std::string out(4, '\0');
  for (size_t i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

// parquet.thrift field ids used here.
namespace fid {
// FileMetaData
constexpr int16_t kSchema = 2, kNumRows = 3, kRowGroups = 4;
// SchemaElement
constexpr int16_t kNumChildren = 5, kFieldId = 9;
// RowGroup
constexpr int16_t kColumns = 1, kGroupFileOffset = 5, kGroupCompressedSize = 6;
// ColumnChunk
constexpr int16_t kChunkFileOffset = 2, kChunkMetaData = 3;
constexpr int16_t kPageIndexRefs[] = {4, 5, 6, 7};  // offset/column index offsets and lengths
// ColumnMetaData
constexpr int16_t kUncompressedSize = 6, kCompressedSize = 7, kDataPageOffset = 9;
constexpr int16_t kIndexPageOffset = 10, kDictionaryPageOffset = 11, kBloomFilterOffset = 14;
// PageHeader
constexpr int16_t kPageType = 1, kCompressedPageSize = 3, kCrc = 4;
}  // namespace fid

struct ChunkAt {
  size_t row_group = 0;
  size_t column = 0;
  int64_t start = 0;
  int64_t length = 0;
  int64_t growth = 0;  // bytes the chunk's page headers grew by
};

class Rewriter {
 public:
  Rewriter(int64_t size, const ParquetRangeReader& read, const ParquetByteSink& write, std::string_view name,
           bool keep_spans)
      : size_(size), read_(read), write_(write), name_(name), keep_spans_(keep_spans) {}

  Result<PageChecksumRewrite> Run() {
    SKADE_RETURN_IF_ERROR(ReadFooter());
    SKADE_RETURN_IF_ERROR(FindChunks());
    SKADE_RETURN_IF_ERROR(Emit("PAR1"));
    int64_t cursor = 4;
    for (ChunkAt& chunk : chunks_) {
      if (chunk.start < cursor || chunk.length < 0 || chunk.start > footer_start_ - chunk.length) {
        return Bad("column chunks overlap or leave the file");
      }
      SKADE_RETURN_IF_ERROR(Copy(cursor, chunk.start));
      SKADE_RETURN_IF_ERROR(RewriteChunk(chunk));
      cursor = chunk.start + chunk.length;
    }
    SKADE_RETURN_IF_ERROR(Copy(cursor, footer_start_));
    SKADE_RETURN_IF_ERROR(WriteFooter());
    out_.size = written_;
    return std::move(out_);
  }

 private:
  Status Bad(const std::string& what) const {
    return Status::InvalidArgument("adding page checksums to '" + std::string(name_) + "': " + what);
  }

  Status Emit(std::string_view bytes) {
    written_ += static_cast<int64_t>(bytes.size());
    return write_(bytes);
  }

  Result<std::string> ReadExactly(int64_t offset, int64_t length) {
    SKADE_ASSIGN_OR_RETURN(std::string bytes, read_(offset, length));
    if (static_cast<int64_t>(bytes.size()) != length) {
      return Status::IoError("short read of '" + std::string(name_) + "': " + std::to_string(bytes.size()) +
                             " of " + std::to_string(length) + " bytes at offset " + std::to_string(offset));
    }
    return bytes;
  }

  // Copies the original bytes [from, to) as they are.
  Status Copy(int64_t from, int64_t to) {
    for (int64_t at = from; at < to; at += kCopyBlock) {
      SKADE_ASSIGN_OR_RETURN(std::string bytes, ReadExactly(at, std::min(kCopyBlock, to - at)));
      SKADE_RETURN_IF_ERROR(Emit(bytes));
    }
    return Status::Ok();
  }

  Status ReadFooter() {
    if (size_ < 12) return Bad("not a Parquet file (" + std::to_string(size_) + " bytes)");
    SKADE_ASSIGN_OR_RETURN(std::string head, ReadExactly(0, 4));
    SKADE_ASSIGN_OR_RETURN(std::string tail, ReadExactly(size_ - 8, 8));
    if (tail.substr(4) == "PARE") return Bad("its footer is encrypted");
    if (head != "PAR1" || tail.substr(4) != "PAR1") return Bad("not a Parquet file");
    const int64_t footer_size = Le32(tail);
    if (footer_size > size_ - 12) return Bad("its footer length is larger than the file");
    footer_start_ = size_ - 8 - footer_size;
    SKADE_ASSIGN_OR_RETURN(std::string footer, ReadExactly(footer_start_, footer_size));
    CompactReader r(footer);
    if (!Decode(r, CompactType::kStruct, false, meta_)) return Bad("its footer: " + r.message());
    return Status::Ok();
  }

  // The column chunks in file order, and the field id of each leaf column.
  Status FindChunks() {
    if (Field* schema = Find(meta_, fid::kSchema)) {
      for (size_t i = 1; i < schema->value.items.size(); ++i) {  // [0] is the root
        Value& element = schema->value.items[i];
        if (IntOr(element, fid::kNumChildren, 0) > 0) continue;  // a group
        const Field* id = Find(element, fid::kFieldId);
        leaf_field_ids_.push_back(id ? std::optional<int>(static_cast<int>(id->value.integer)) : std::nullopt);
      }
    }
    Field* groups = Find(meta_, fid::kRowGroups);
    if (groups == nullptr || Find(meta_, fid::kSchema) == nullptr || Find(meta_, fid::kNumRows) == nullptr) {
      return Bad("its footer lacks the schema, row count or row groups every Parquet footer has");
    }
    for (size_t g = 0; g < groups->value.items.size(); ++g) {
      Field* columns = Find(groups->value.items[g], fid::kColumns);
      if (columns == nullptr) return Bad("a row group without columns");
      for (size_t c = 0; c < columns->value.items.size(); ++c) {
        Field* md = Find(columns->value.items[c], fid::kChunkMetaData);
        if (md == nullptr || !Find(md->value, fid::kDataPageOffset) || !Find(md->value, fid::kCompressedSize)) {
          return Bad("a column chunk without metadata (stored in another file?)");
        }
        int64_t start = IntOr(md->value, fid::kDataPageOffset, 0);
        const int64_t dictionary = IntOr(md->value, fid::kDictionaryPageOffset, 0);
        if (dictionary > 0 && dictionary < start) start = dictionary;
        chunks_.push_back({g, c, start, IntOr(md->value, fid::kCompressedSize, 0)});
      }
    }
    std::sort(chunks_.begin(), chunks_.end(), [](const ChunkAt& a, const ChunkAt& b) { return a.start < b.start; });
    return Status::Ok();
  }

  Status RewriteChunk(ChunkAt& chunk) {
    SKADE_ASSIGN_OR_RETURN(std::string bytes, ReadExactly(chunk.start, chunk.length));
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 64 + 64);
    const std::string_view in(bytes);
    for (size_t pos = 0; pos < in.size();) {
      CompactReader hr(in.substr(pos));
      Value header;
      if (!Decode(hr, CompactType::kStruct, false, header)) {
        return Bad("the page header at offset " + std::to_string(chunk.start + static_cast<int64_t>(pos)) + ": " +
                   hr.message());
      }
      const size_t header_size = hr.position();
      const Field* type = Find(header, fid::kPageType);
      const int64_t data_size = IntOr(header, fid::kCompressedPageSize, -1);
      if (type == nullptr || data_size < 0 || static_cast<uint64_t>(data_size) > in.size() - pos - header_size) {
        return Bad("a page header without sizes that fit its column chunk, at offset " +
                   std::to_string(chunk.start + static_cast<int64_t>(pos)));
      }
      const int32_t page_type = static_cast<int32_t>(type->value.integer);
      const std::string_view data = in.substr(pos + header_size, static_cast<size_t>(data_size));
      const uint32_t crc = ParquetCrc32(data);
      if (const Field* has = Find(header, fid::kCrc); has && static_cast<uint32_t>(has->value.integer) != crc) {
        return Status::Corruption("Parquet file '" + std::string(name_) + "': the page at offset " +
                                  std::to_string(chunk.start + static_cast<int64_t>(pos)) +
                                  " does not match its checksum");
      }
      SetInt(header, fid::kCrc, CompactType::kI32, static_cast<int32_t>(crc));
      CompactWriter w;
      Encode(w, CompactType::kStruct, header);
      const int64_t header_at = written_ + static_cast<int64_t>(out.size());
      out += w.bytes();
      if (keep_spans_) {
        out_.spans.push_back({header_at, header_at + static_cast<int64_t>(w.bytes().size()), data_size, page_type});
      }
      out.append(data);
      const int64_t grew = static_cast<int64_t>(w.bytes().size()) - static_cast<int64_t>(header_size);
      total_growth_ += grew;
      growth_.push_back({chunk.start + static_cast<int64_t>(pos), total_growth_});
      chunk.growth += grew;
      ++out_.pages;
      pos += header_size + static_cast<size_t>(data_size);
    }
    return Emit(out);
  }

  // An offset into the original file → the same byte in the new one: moved by the growth of
  // every page header before it.
  int64_t Moved(int64_t old) const {
    auto after = std::lower_bound(growth_.begin(), growth_.end(), old,
                                  [](const Growth& g, int64_t at) { return g.header_at < at; });
    return after == growth_.begin() ? old : old + std::prev(after)->total;
  }

  void MoveOffset(Value& s, int16_t id) {
    if (Field* f = Find(s, id); f && f->value.integer > 0) f->value.integer = Moved(f->value.integer);
  }

  Status WriteFooter() {
    if (Field* groups = Find(meta_, fid::kRowGroups)) {
      std::vector<int64_t> group_growth(groups->value.items.size(), 0);
      for (const ChunkAt& chunk : chunks_) {
        Value& column = Find(groups->value.items[chunk.row_group], fid::kColumns)->value.items[chunk.column];
        Value& md = Find(column, fid::kChunkMetaData)->value;
        for (int16_t id : {fid::kDataPageOffset, fid::kIndexPageOffset, fid::kDictionaryPageOffset,
                           fid::kBloomFilterOffset}) {
          MoveOffset(md, id);
        }
        Find(md, fid::kCompressedSize)->value.integer += chunk.growth;
        if (Field* f = Find(md, fid::kUncompressedSize)) f->value.integer += chunk.growth;  // headers count too
        MoveOffset(column, fid::kChunkFileOffset);
        for (int16_t id : fid::kPageIndexRefs) Remove(column, id);
        group_growth[chunk.row_group] += chunk.growth;
        if (chunk.column < leaf_field_ids_.size() && leaf_field_ids_[chunk.column]) {
          out_.growth_by_field_id[*leaf_field_ids_[chunk.column]] += chunk.growth;
        }
      }
      for (size_t g = 0; g < groups->value.items.size(); ++g) {
        Value& group = groups->value.items[g];
        MoveOffset(group, fid::kGroupFileOffset);
        if (Field* f = Find(group, fid::kGroupCompressedSize)) f->value.integer += group_growth[g];
      }
    }
    CompactWriter w;
    Encode(w, CompactType::kStruct, meta_);
    SKADE_RETURN_IF_ERROR(Emit(w.bytes()));
    SKADE_RETURN_IF_ERROR(Emit(Le32Bytes(static_cast<uint32_t>(w.bytes().size()))));
    return Emit("PAR1");
  }

  struct Growth {
    int64_t header_at;  // a page header's offset in the original file
    int64_t total;      // bytes every header up to and including this one grew by
  };

  const int64_t size_;
  const ParquetRangeReader& read_;
  const ParquetByteSink& write_;
  const std::string_view name_;
  const bool keep_spans_;

  Value meta_;
  int64_t footer_start_ = 0;
  std::vector<ChunkAt> chunks_;
  std::vector<std::optional<int>> leaf_field_ids_;
  std::vector<Growth> growth_;  // by header_at, ascending
  int64_t total_growth_ = 0;
  int64_t written_ = 0;
  PageChecksumRewrite out_;
};

}  // namespace

Result<PageChecksumRewrite> AddParquetPageChecksums(int64_t size, const ParquetRangeReader& read,
                                                    const ParquetByteSink& write, std::string_view name,
                                                    bool keep_spans) {
  return Rewriter(size, read, write, name, keep_spans).Run();
}

}  // namespace skade::iceberg
