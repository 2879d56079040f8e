#include "tests/testing/parquet_checksums.h"

#include <algorithm>

#include "skade/iceberg/parquet_pages.h"
#include "skade/iceberg/thrift_compact.h"

namespace skade::testing {
namespace {

using iceberg::thrift::CompactReader;
using iceberg::thrift::CompactType;
using iceberg::thrift::CompactWriter;
using iceberg::thrift::FieldHeader;

// Any compact-protocol value Parquet's footer and page headers use (no maps, no uuids), kept
// whole so that it can be written back with a few fields changed.
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
      return false;
  }
  return r.ok();
}

void Encode(CompactWriter& w, CompactType type, const Value& v) {
  switch (type) {
    case CompactType::kTrue:
    case CompactType::kFalse:
      w.WriteElementBool(v.boolean);
      break;  // fields: see below
    case CompactType::kI8:
      w.WriteI8(static_cast<int8_t>(v.integer));
      break;
    case CompactType::kI16:
    case CompactType::kI32:
    case CompactType::kI64:
      w.WriteI64(v.integer);
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

// Sets an integer field, adding it in id order when absent.
void SetInt(Value& s, int16_t id, CompactType type, int64_t value) {
  if (Field* f = Find(s, id)) {
    f->type = type;
    f->value.integer = value;
    return;
  }
  auto at =
      std::find_if(s.fields.begin(), s.fields.end(), [&](const Field& f) { return f.id > id; });
  Field f{id, type, {}};
  f.value.integer = value;
  s.fields.insert(at, std::move(f));
}

void Remove(Value& s, int16_t id) {
  s.fields.erase(
      std::remove_if(s.fields.begin(), s.fields.end(), [&](const Field& f) { return f.id == id; }),
      s.fields.end());
}

Status Bad(const std::string& what) { return Status::InvalidArgument("AddPageChecksums: " + what); }

uint32_t Le32(std::string_view b) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(b[i])) << (8 * i);
  return v;
}

struct ChunkAt {
  size_t row_group;
  size_t column;
  int64_t start;
  int64_t length;
  int64_t growth = 0;  // bytes the chunk's headers grew by
};

}  // namespace

Result<ChecksummedParquet> AddPageChecksums(std::string_view file) {
  if (file.size() < 12 || file.substr(0, 4) != "PAR1" || file.substr(file.size() - 4) != "PAR1") {
    return Bad("not a Parquet file");
  }
  const int64_t size = static_cast<int64_t>(file.size());
  const int64_t footer_size = Le32(file.substr(file.size() - 8, 4));
  if (footer_size > size - 12) return Bad("bad footer length");
  const int64_t footer_start = size - 8 - footer_size;
  CompactReader fr(
      file.substr(static_cast<size_t>(footer_start), static_cast<size_t>(footer_size)));
  Value meta;
  if (!Decode(fr, CompactType::kStruct, false, meta)) return Bad("footer: " + fr.message());

  Field* groups = Find(meta, 4);
  if (groups == nullptr) return Bad("no row groups");
  std::vector<ChunkAt> chunks;
  for (size_t g = 0; g < groups->value.items.size(); ++g) {
    Field* columns = Find(groups->value.items[g], 1);
    if (columns == nullptr) return Bad("a row group without columns");
    for (size_t c = 0; c < columns->value.items.size(); ++c) {
      Field* md = Find(columns->value.items[c], 3);
      if (md == nullptr || !Find(md->value, 9) || !Find(md->value, 7))
        return Bad("a column chunk without metadata");
      int64_t start = Find(md->value, 9)->value.integer;
      if (Field* dict = Find(md->value, 11);
          dict && dict->value.integer > 0 && dict->value.integer < start) {
        start = dict->value.integer;
      }
      chunks.push_back({g, c, start, Find(md->value, 7)->value.integer});
    }
  }
  std::sort(chunks.begin(), chunks.end(),
            [](const ChunkAt& a, const ChunkAt& b) { return a.start < b.start; });

  ChecksummedParquet out;
  out.bytes = "PAR1";
  int64_t cursor = 4;
  std::vector<std::pair<int64_t, int64_t>> growth;  // (old header offset, bytes it grew by)
  for (ChunkAt& chunk : chunks) {
    if (chunk.start < cursor || chunk.length < 0 || chunk.start + chunk.length > footer_start) {
      return Bad("column chunks overlap or leave the file");
    }
    out.bytes.append(
        file.substr(static_cast<size_t>(cursor), static_cast<size_t>(chunk.start - cursor)));
    const int64_t end = chunk.start + chunk.length;
    for (int64_t pos = chunk.start; pos < end;) {
      CompactReader hr(file.substr(static_cast<size_t>(pos), static_cast<size_t>(end - pos)));
      Value header;
      if (!Decode(hr, CompactType::kStruct, false, header))
        return Bad("page header: " + hr.message());
      const int64_t header_size = static_cast<int64_t>(hr.position());
      Field* compressed = Find(header, 3);
      Field* type = Find(header, 1);
      if (compressed == nullptr || type == nullptr || compressed->value.integer < 0 ||
          compressed->value.integer > end - pos - header_size) {
        return Bad("a page header without sizes");
      }
      const std::string_view data = file.substr(static_cast<size_t>(pos + header_size),
                                                static_cast<size_t>(compressed->value.integer));
      // SetInt may grow header.fields: no Field* of it is used after.
      const int32_t page_type = static_cast<int32_t>(type->value.integer);
      SetInt(header, 4, CompactType::kI32, static_cast<int32_t>(iceberg::ParquetCrc32(data)));
      CompactWriter w;
      Encode(w, CompactType::kStruct, header);
      ParquetPageSpan span;
      span.header_offset = static_cast<int64_t>(out.bytes.size());
      out.bytes += w.bytes();
      span.data_offset = static_cast<int64_t>(out.bytes.size());
      span.data_size = static_cast<int64_t>(data.size());
      span.type = page_type;
      out.bytes.append(data);
      out.pages.push_back(span);
      const int64_t grew = static_cast<int64_t>(w.bytes().size()) - header_size;
      growth.emplace_back(pos, grew);
      chunk.growth += grew;
      pos += header_size + static_cast<int64_t>(data.size());
    }
    cursor = end;
  }
  out.bytes.append(
      file.substr(static_cast<size_t>(cursor), static_cast<size_t>(footer_start - cursor)));

  // An offset into the old file → the same byte in the new one.
  auto moved = [&](int64_t old) {
    int64_t shift = 0;
    for (const auto& [at, grew] : growth) {
      if (at < old) shift += grew;
    }
    return old + shift;
  };
  std::vector<int64_t> group_growth(groups->value.items.size(), 0);
  for (const ChunkAt& chunk : chunks) {
    Value& column = Find(groups->value.items[chunk.row_group], 1)->value.items[chunk.column];
    Value& md = Find(column, 3)->value;
    for (int16_t id : {9, 10, 11, 14}) {  // data, index, dictionary page and Bloom filter offsets
      if (Field* f = Find(md, id); f && f->value.integer > 0)
        f->value.integer = moved(f->value.integer);
    }
    Find(md, 7)->value.integer += chunk.growth;  // total_compressed_size
    if (Field* f = Find(md, 6))
      f->value.integer += chunk.growth;  // total_uncompressed_size (headers included)
    if (Field* f = Find(column, 2); f && f->value.integer > 0)
      f->value.integer = moved(f->value.integer);
    for (int16_t id : {4, 5, 6, 7}) Remove(column, id);  // offset and column index references
    group_growth[chunk.row_group] += chunk.growth;
  }
  for (size_t g = 0; g < groups->value.items.size(); ++g) {
    Value& group = groups->value.items[g];
    if (Field* f = Find(group, 5); f && f->value.integer > 0)
      f->value.integer = moved(f->value.integer);
    if (Field* f = Find(group, 6)) f->value.integer += group_growth[g];
  }
  CompactWriter w;
  Encode(w, CompactType::kStruct, meta);
  out.bytes += w.bytes();
  const uint32_t n = static_cast<uint32_t>(w.bytes().size());
  for (int i = 0; i < 4; ++i) out.bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.bytes += "PAR1";
  return out;
}

}  // namespace skade::testing
