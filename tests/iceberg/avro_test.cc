#include "skade/iceberg/avro.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace skade::iceberg::avro {
namespace {

using skade::testing::FixturePath;
using skade::testing::ReadFileOrDie;

AvroNodePtr MustParse(std::string_view json) {
  auto schema = ParseSchema(json);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  return schema.ok() ? *schema : nullptr;
}

std::string Encode(const AvroNode& schema, const AvroValue& value) {
  std::string out;
  Status st = EncodeValue(schema, value, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::string Hex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(kHex[(static_cast<uint8_t>(c) >> 4) & 15]);
    out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
  }
  return out;
}

// Reads every record of a container file; the first error if any.
Result<std::vector<AvroValue>> ReadAll(std::string data, std::string name) {
  SKADE_ASSIGN_OR_RETURN(auto reader, FileReader::Open(std::move(data), std::move(name)));
  std::vector<AvroValue> out;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(std::optional<AvroValue> v, reader->Next());
    if (!v) break;
    out.push_back(std::move(*v));
  }
  return out;
}

constexpr const char* kRecordSchema = R"({
  "type": "record", "name": "row", "namespace": "test",
  "fields": [
    {"name": "id", "type": "long", "field-id": 1},
    {"name": "name", "type": ["null", "string"], "default": null, "field-id": 2},
    {"name": "score", "type": "double", "field-id": 3}
  ]})";

std::string WriteRows(Codec codec, int rows, std::vector<std::pair<std::string, std::string>> meta,
                      std::string_view schema_json = kRecordSchema) {
  auto writer = FileWriter::Create(std::string(schema_json), std::move(meta), codec);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (int i = 0; i < rows; ++i) {
    AvroValue row = AvroValue::List(
        {AvroValue::Long(i),
         i % 3 == 0 ? AvroValue::Null() : AvroValue::Bytes("name-" + std::to_string(i)),
         AvroValue::Double(i * 0.5)});
    Status st = (*writer)->Append(row);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  auto bytes = (*writer)->Finish();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

// Offset just past the header (magic, metadata, sync marker) of a file written by us.
size_t HeaderSize(const std::string& file) {
  std::string sync = file.substr(file.size() - 16);
  return file.find(sync) + 16;
}

TEST(AvroTest, ParsesSchemaKeepingEveryAttribute) {
  AvroNodePtr schema = MustParse(R"({
    "type": "record", "name": "manifest_entry", "namespace": "iceberg",
    "aliases": ["entry"],
    "fields": [
      {"name": "status", "type": "int", "field-id": 0, "doc": "status doc", "custom": {"a": 1}},
      {"name": "bounds", "type": ["null", {"type": "array", "logicalType": "map",
        "items": {"type": "record", "name": "k126_v127", "fields": [
          {"name": "key", "type": "int", "field-id": 126},
          {"name": "value", "type": "bytes", "field-id": 127}]}}],
        "default": null, "field-id": 125, "aliases": ["old_bounds"]},
      {"name": "more_bounds", "type": ["null", {"type": "array", "items": "k126_v127"}],
        "default": null, "field-id": 128},
      {"name": "offsets", "type": {"type": "array", "items": "long", "element-id": 133},
        "field-id": 132},
      {"name": "props", "type": {"type": "map", "values": "string", "key-id": 10,
        "value-id": 11}},
      {"name": "price", "type": {"type": "fixed", "name": "dec", "size": 5,
        "logicalType": "decimal", "precision": 10, "scale": 2}},
      {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros",
        "adjust-to-utc": true}},
      {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["R", "G"]}}
    ]})");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->kind, AvroKind::kRecord);
  EXPECT_EQ(schema->name, "iceberg.manifest_entry");
  EXPECT_EQ(schema->aliases, std::vector<std::string>{"entry"});
  ASSERT_EQ(schema->fields.size(), 8u);

  const AvroField& status = schema->fields[0];
  EXPECT_EQ(status.field_id, 0);
  EXPECT_EQ(status.doc, "status doc");
  ASSERT_EQ(status.attributes.size(), 1u);
  EXPECT_EQ(status.attributes[0].first, "custom");
  EXPECT_FALSE(status.has_default);

  const AvroField& bounds = schema->fields[1];
  EXPECT_EQ(bounds.field_id, 125);
  EXPECT_TRUE(bounds.has_default);
  EXPECT_EQ(bounds.aliases, std::vector<std::string>{"old_bounds"});
  ASSERT_EQ(bounds.type->kind, AvroKind::kUnion);
  EXPECT_EQ(bounds.type->NonNullBranch(), 1);
  const AvroNode& array = *bounds.type->branches[1];
  EXPECT_EQ(array.kind, AvroKind::kArray);
  EXPECT_EQ(array.logical_type, "map");
  EXPECT_EQ(array.items->name, "iceberg.k126_v127");
  EXPECT_EQ(array.items->fields[0].field_id, 126);
  EXPECT_EQ(array.items->fields[1].field_id, 127);
  EXPECT_EQ(array.items->FieldIndex("value"), 1);
  EXPECT_EQ(array.items->FieldIndex("nope"), -1);

  // A named-type reference shares the node.
  const AvroNode& more = *schema->fields[2].type->branches[1];
  EXPECT_EQ(more.items.get(), array.items.get());

  EXPECT_EQ(schema->fields[3].type->element_id, 133);
  EXPECT_EQ(schema->fields[4].type->key_id, 10);
  EXPECT_EQ(schema->fields[4].type->value_id, 11);

  const AvroNode& price = *schema->fields[5].type;
  EXPECT_EQ(price.kind, AvroKind::kFixed);
  EXPECT_EQ(price.size, 5);
  EXPECT_EQ(price.logical_type, "decimal");
  EXPECT_EQ(price.precision, 10);
  EXPECT_EQ(price.scale, 2);

  const AvroNode& ts = *schema->fields[6].type;
  EXPECT_EQ(ts.kind, AvroKind::kLong);
  EXPECT_EQ(ts.logical_type, "timestamp-micros");
  EXPECT_EQ(ts.adjust_to_utc, true);

  EXPECT_EQ(schema->fields[7].type->symbols, (std::vector<std::string>{"R", "G"}));
}

TEST(AvroTest, RejectsMalformedSchemas) {
  EXPECT_EQ(ParseSchema("{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema("42").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema(R"("no_such_type")").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema(R"({"type": "record", "name": "r"})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema(R"({"type": "fixed", "name": "f"})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema(R"({"type": "record", "name": "r", "fields": [
              {"name": "a", "type": "int", "field-id": "x"}]})")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSchema(R"({"type": "record", "name": "r", "fields": [
              {"name": "a", "type": "int"}, {"name": "a", "type": "int"}]})")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  // Recursive types are not needed for Iceberg metadata and are refused.
  EXPECT_FALSE(ParseSchema(R"({"type": "record", "name": "node", "fields": [
              {"name": "next", "type": ["null", "node"]}]})")
                   .ok());
}

TEST(AvroTest, EncodesZigZagVarints) {
  AvroNodePtr long_schema = MustParse(R"("long")");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(0))), "00");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(-1))), "01");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(1))), "02");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(-64))), "7f");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(64))), "8001");
  EXPECT_EQ(Hex(Encode(*long_schema, AvroValue::Long(std::numeric_limits<int64_t>::max()))),
            "feffffffffffffffff01");
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{123456789}, int64_t{-987654321012},
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    std::string bytes = Encode(*long_schema, AvroValue::Long(v));
    std::string_view in = bytes;
    auto decoded = DecodeValue(*long_schema, &in);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded->long_value, v);
    EXPECT_TRUE(in.empty());
  }
  // An int must fit 32 bits both ways.
  AvroNodePtr int_schema = MustParse(R"("int")");
  std::string out;
  EXPECT_EQ(EncodeValue(*int_schema, AvroValue::Long(int64_t{1} << 40), &out).code(),
            StatusCode::kInvalidArgument);
  std::string big = Encode(*long_schema, AvroValue::Long(int64_t{1} << 40));
  std::string_view in = big;
  EXPECT_EQ(DecodeValue(*int_schema, &in).status().code(), StatusCode::kCorruption);
  // Eleven continuation bytes are not a varint.
  std::string too_long(11, '\xff');
  in = too_long;
  EXPECT_EQ(DecodeValue(*long_schema, &in).status().code(), StatusCode::kCorruption);
}

constexpr const char* kAllTypesSchema = R"({
  "type": "record", "name": "all", "fields": [
    {"name": "n", "type": "null"},
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"},
    {"name": "s", "type": "string"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "arr", "type": {"type": "array", "items": "int"}},
    {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "u", "type": ["null", "string", "long"]},
    {"name": "nested", "type": {"type": "record", "name": "inner", "fields": [
      {"name": "x", "type": ["null", "F4"]}]}}
  ]})";

AvroValue AllTypesValue() {
  AvroValue u = AvroValue::Long(-5);
  return AvroValue::List({
      AvroValue::Null(),
      AvroValue::Bool(true),
      AvroValue::Long(-123),
      AvroValue::Long(int64_t{1} << 50),
      AvroValue::Float(1.5f),
      AvroValue::Double(-2.25),
      AvroValue::Bytes(std::string("\x00\x01\xff", 3)),
      AvroValue::Bytes("héllo"),
      AvroValue::Long(2),
      AvroValue::Bytes("abcd"),
      AvroValue::List({AvroValue::Long(1), AvroValue::Long(-2), AvroValue::Long(3)}),
      AvroValue::Map({{"k1", AvroValue::Long(7)}, {"k2", AvroValue::Null()}}),
      u,
      AvroValue::List({AvroValue::Bytes("wxyz")}),
  });
}

TEST(AvroTest, RoundTripsEveryType) {
  AvroNodePtr schema = MustParse(kAllTypesSchema);
  ASSERT_NE(schema, nullptr);
  std::string bytes = Encode(*schema, AllTypesValue());
  std::string_view in = bytes;
  auto decoded = DecodeValue(*schema, &in);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(in.empty());
  const AvroValue& v = *decoded;
  ASSERT_EQ(v.items.size(), 14u);
  EXPECT_TRUE(v.items[0].is_null());
  EXPECT_TRUE(v.items[1].bool_value);
  EXPECT_EQ(v.items[2].long_value, -123);
  EXPECT_EQ(v.items[3].long_value, int64_t{1} << 50);
  EXPECT_EQ(v.items[4].float_value, 1.5f);
  EXPECT_EQ(v.items[5].double_value, -2.25);
  EXPECT_EQ(v.items[6].bytes, std::string("\x00\x01\xff", 3));
  EXPECT_EQ(v.items[7].bytes, "héllo");
  EXPECT_EQ(v.items[8].long_value, 2);
  EXPECT_EQ(v.items[9].bytes, "abcd");
  ASSERT_EQ(v.items[10].items.size(), 3u);
  EXPECT_EQ(v.items[10].items[1].long_value, -2);
  ASSERT_EQ(v.items[11].entries.size(), 2u);
  EXPECT_EQ(v.items[11].entries[0].first, "k1");
  EXPECT_EQ(v.items[11].entries[0].second.long_value, 7);
  EXPECT_TRUE(v.items[11].entries[1].second.is_null());
  EXPECT_EQ(v.items[12].tag, AvroValue::Tag::kLong);
  EXPECT_EQ(v.items[12].branch, 2);
  EXPECT_EQ(v.items[12].long_value, -5);
  EXPECT_EQ(v.items[13].items[0].bytes, "wxyz");

  // Re-encoding the decoded value gives the same bytes.
  EXPECT_EQ(Encode(*schema, v), bytes);
}

TEST(AvroTest, RejectsValuesThatDoNotMatchTheSchema) {
  AvroNodePtr schema = MustParse(kAllTypesSchema);
  std::string out;
  AvroValue bad = AllTypesValue();
  bad.items[9] = AvroValue::Bytes("abc");  // fixed of 4
  EXPECT_EQ(EncodeValue(*schema, bad, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(out.empty());
  bad = AllTypesValue();
  bad.items[8] = AvroValue::Long(3);  // enum index out of range
  EXPECT_EQ(EncodeValue(*schema, bad, &out).code(), StatusCode::kInvalidArgument);
  bad = AllTypesValue();
  bad.items.pop_back();
  EXPECT_EQ(EncodeValue(*schema, bad, &out).code(), StatusCode::kInvalidArgument);
  bad = AllTypesValue();
  bad.items[12] = AvroValue::Bool(true);  // no boolean branch
  EXPECT_EQ(EncodeValue(*schema, bad, &out).code(), StatusCode::kInvalidArgument);
}

TEST(AvroTest, DecodesBlocksWithNegativeCounts) {
  AvroNodePtr schema = MustParse(R"({"type": "array", "items": "long"})");
  // Block of -2 items with a byte size of 2, then a block of 1 item, then the end.
  std::string bytes("\x03\x04\x02\x04\x02\x06\x00", 7);
  std::string_view in = bytes;
  auto v = DecodeValue(*schema, &in);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->items.size(), 3u);
  EXPECT_EQ(v->items[0].long_value, 1);
  EXPECT_EQ(v->items[1].long_value, 2);
  EXPECT_EQ(v->items[2].long_value, 3);
  EXPECT_TRUE(in.empty());

  AvroNodePtr map_schema = MustParse(R"({"type": "map", "values": "int"})");
  std::string map_bytes("\x01\x06\x02k\x08\x00", 6);  // -1 entries, 3 bytes: "k" → 4
  in = map_bytes;
  auto m = DecodeValue(*map_schema, &in);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->entries.size(), 1u);
  EXPECT_EQ(m->entries[0].first, "k");
  EXPECT_EQ(m->entries[0].second.long_value, 4);
}

TEST(AvroTest, RejectsAbsurdBlockCountsWithoutAllocating) {
  AvroNodePtr schema = MustParse(R"({"type": "array", "items": "long"})");
  std::string bytes;
  ASSERT_TRUE(EncodeValue(*MustParse(R"("long")"), AvroValue::Long(int64_t{1} << 60), &bytes).ok());
  bytes += std::string("\x02\x00", 2);
  std::string_view in = bytes;
  EXPECT_EQ(DecodeValue(*schema, &in).status().code(), StatusCode::kCorruption);

  // Zero-byte items (null) are bounded by a fixed cap.
  AvroNodePtr nulls = MustParse(R"({"type": "array", "items": "null"})");
  in = bytes;
  EXPECT_EQ(DecodeValue(*nulls, &in).status().code(), StatusCode::kCorruption);

  // A negative count of INT64_MIN cannot be negated.
  std::string min_count = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  in = min_count;
  EXPECT_EQ(DecodeValue(*schema, &in).status().code(), StatusCode::kCorruption);

  // A string length beyond the input.
  AvroNodePtr str = MustParse(R"("string")");
  std::string long_len;
  ASSERT_TRUE(
      EncodeValue(*MustParse(R"("long")"), AvroValue::Long(int64_t{1} << 40), &long_len).ok());
  in = long_len;
  EXPECT_EQ(DecodeValue(*str, &in).status().code(), StatusCode::kCorruption);
}

TEST(AvroTest, DecodingTruncatedValuesFails) {
  AvroNodePtr schema = MustParse(kAllTypesSchema);
  std::string bytes = Encode(*schema, AllTypesValue());
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::string cut = bytes.substr(0, len);  // own copy so ASan sees over-reads
    std::string_view in = cut;
    auto v = DecodeValue(*schema, &in);
    EXPECT_EQ(v.status().code(), StatusCode::kCorruption) << "length " << len;
  }
}

TEST(AvroTest, RejectsInvalidUnionIndexBooleanAndEnum) {
  AvroNodePtr u = MustParse(R"(["null", "long"])");
  std::string bytes("\x04", 1);  // branch 2
  std::string_view in = bytes;
  EXPECT_EQ(DecodeValue(*u, &in).status().code(), StatusCode::kCorruption);
  AvroNodePtr b = MustParse(R"("boolean")");
  bytes = "\x02";
  in = bytes;
  EXPECT_EQ(DecodeValue(*b, &in).status().code(), StatusCode::kCorruption);
  AvroNodePtr e = MustParse(R"({"type": "enum", "name": "E", "symbols": ["A"]})");
  bytes = "\x02";
  in = bytes;
  EXPECT_EQ(DecodeValue(*e, &in).status().code(), StatusCode::kCorruption);
}

TEST(AvroTest, FileRoundTripsWithNullAndDeflate) {
  for (Codec codec : {Codec::kNull, Codec::kDeflate}) {
    // Enough rows for several 64 KiB blocks.
    std::string file = WriteRows(codec, 20000, {{"format-version", "2"}, {"empty", ""}});
    ASSERT_EQ(file.substr(0, 4), std::string("Obj\x01", 4));
    auto reader = FileReader::Open(file, "rows.avro");
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->schema_json(), kRecordSchema);  // verbatim
    EXPECT_EQ((*reader)->Metadata("format-version"), "2");
    EXPECT_EQ((*reader)->Metadata("empty"), "");
    EXPECT_EQ((*reader)->Metadata("avro.codec"), codec == Codec::kNull ? "null" : "deflate");
    EXPECT_EQ((*reader)->Metadata("missing"), std::nullopt);
    EXPECT_EQ((*reader)->schema()->fields[1].field_id, 2);
    int count = 0;
    while (true) {
      auto next = (*reader)->Next();
      ASSERT_TRUE(next.ok()) << next.status().ToString();
      if (!next->has_value()) break;
      const AvroValue& row = **next;
      ASSERT_EQ(row.items[0].long_value, count);
      if (count % 3 == 0) {
        EXPECT_TRUE(row.items[1].is_null());
      } else {
        EXPECT_EQ(row.items[1].bytes, "name-" + std::to_string(count));
      }
      EXPECT_EQ(row.items[2].double_value, count * 0.5);
      ++count;
    }
    EXPECT_EQ(count, 20000);
  }
  // Deflate actually compresses this repetitive data.
  EXPECT_LT(WriteRows(Codec::kDeflate, 20000, {}).size(),
            WriteRows(Codec::kNull, 20000, {}).size() / 2);
}

TEST(AvroTest, WritesEmptyFilesAndRandomSyncMarkers) {
  std::string a = WriteRows(Codec::kDeflate, 0, {});
  std::string b = WriteRows(Codec::kDeflate, 0, {});
  auto rows = ReadAll(a, "empty.avro");
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
  EXPECT_NE(a.substr(a.size() - 16), b.substr(b.size() - 16));
}

TEST(AvroTest, WriterRejectsBadInput) {
  EXPECT_EQ(FileWriter::Create("{", {}, Codec::kNull).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(FileWriter::Create(kRecordSchema, {{"avro.codec", "x"}}, Codec::kNull).status().code(),
            StatusCode::kInvalidArgument);
  auto writer = FileWriter::Create(kRecordSchema, {}, Codec::kNull);
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ((*writer)->Append(AvroValue::Long(1)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_FALSE((*writer)->Finish().ok());
}

TEST(AvroTest, ReadsEveryFixtureFile) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::vector<std::string> files;
  for (const char* dir : {"iceberg", "metadata/avro"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(FixturePath(dir))) {
      if (e.path().extension() == ".avro") files.push_back(e.path().string());
    }
  }
  ASSERT_EQ(files.size(), 41u);
  for (const std::string& path : files) {
    auto reader = FileReader::Open(ReadFileOrDie(path), path);
    ASSERT_TRUE(reader.ok()) << path << ": " << reader.status().ToString();
    EXPECT_EQ((*reader)->Metadata("avro.codec"), "deflate") << path;
    EXPECT_TRUE((*reader)->Metadata("format-version").has_value()) << path;
    const AvroNode& schema = *(*reader)->schema();
    ASSERT_EQ(schema.kind, AvroKind::kRecord);
    EXPECT_TRUE(schema.name == "manifest_entry" || schema.name == "manifest_file") << path;
    for (const AvroField& f : schema.fields) EXPECT_TRUE(f.field_id.has_value()) << f.name;
    int records = 0;
    while (true) {
      auto next = (*reader)->Next();
      ASSERT_TRUE(next.ok()) << path << ": " << next.status().ToString();
      if (!next->has_value()) break;
      ASSERT_EQ((**next).items.size(), schema.fields.size());
      ++records;
    }
    EXPECT_GT(records, 0) << path;
  }
}

TEST(AvroTest, ReadsFixtureValues) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::string path = FixturePath("metadata/avro/manifest-list-v2-2.avro");
  auto rows = ReadAll(ReadFileOrDie(path), path);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const AvroValue& row = (*rows)[0];
  EXPECT_EQ(row.items[0].bytes,
            "iceberg-warehouse_2/people/metadata/80064d99-bd75-4cf3-9b27-13a60f189039-m0.avro");
  EXPECT_EQ(row.items[1].long_value, 6660);
  EXPECT_EQ(row.items[6].long_value, 3083072880052097243);
}

TEST(AvroTest, RejectsBadMagic) {
  std::string file = WriteRows(Codec::kNull, 3, {});
  file[3] = '\x02';
  EXPECT_EQ(FileReader::Open(file, "x.avro").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(FileReader::Open("", "x.avro").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(FileReader::Open("PAR1 not avro", "x.avro").status().code(), StatusCode::kCorruption);
}

TEST(AvroTest, RejectsBadSyncMarkerInALaterBlock) {
  for (Codec codec : {Codec::kNull, Codec::kDeflate}) {
    std::string file = WriteRows(codec, 20000, {});
    std::string sync = file.substr(file.size() - 16);
    // Corrupt the marker that ends the second block.
    size_t first = file.find(sync, HeaderSize(file));
    size_t second = file.find(sync, first + 16);
    ASSERT_NE(second, std::string::npos);
    ASSERT_LT(second + 16, file.size());
    file[second + 5] = static_cast<char>(file[second + 5] ^ 0x55);
    auto reader = FileReader::Open(file, "sync.avro");
    ASSERT_TRUE(reader.ok());
    int good = 0;
    Status error;
    while (true) {
      auto next = (*reader)->Next();
      if (!next.ok()) {
        error = next.status();
        break;
      }
      ASSERT_TRUE(next->has_value()) << "reached the end despite a bad sync marker";
      ++good;
    }
    EXPECT_EQ(error.code(), StatusCode::kCorruption);
    EXPECT_NE(error.message().find("sync.avro"), std::string::npos);
    EXPECT_GT(good, 0);
    EXPECT_LT(good, 20000);
  }
}

TEST(AvroTest, RejectsUnknownCodec) {
  std::string file = WriteRows(Codec::kNull, 3, {});
  std::string key = std::string("avro.codec") + '\x08' + "null";
  size_t at = file.find(key);
  ASSERT_NE(at, std::string::npos);
  file.replace(at + key.size() - 4, 4, "zstd");
  auto reader = FileReader::Open(file, "zstd.avro");
  EXPECT_EQ(reader.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(reader.status().message().find("zstd"), std::string::npos);
}

TEST(AvroTest, TruncatedFilesFailAtEveryOffset) {
  for (Codec codec : {Codec::kNull, Codec::kDeflate}) {
    std::string file = WriteRows(codec, 40, {{"k", "v"}});
    size_t header = HeaderSize(file);
    ASSERT_TRUE(ReadAll(file, "t.avro").ok());
    for (size_t len = 0; len < file.size(); ++len) {
      auto rows = ReadAll(file.substr(0, len), "t.avro");
      if (len == header) {
        // Only the header: a valid file without records.
        ASSERT_TRUE(rows.ok());
        EXPECT_TRUE(rows->empty());
        continue;
      }
      ASSERT_FALSE(rows.ok()) << "length " << len;
      EXPECT_EQ(rows.status().code(), StatusCode::kCorruption) << "length " << len;
    }
  }
}

TEST(AvroTest, GarbledBytesNeverCrash) {
  std::string file = WriteRows(Codec::kDeflate, 50, {});
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string copy = file;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < flips; ++j) {
      copy[rng() % copy.size()] = static_cast<char>(rng());
    }
    auto rows = ReadAll(copy, "g.avro");  // any outcome but a crash is fine
    if (!rows.ok()) {
      EXPECT_TRUE(rows.status().code() == StatusCode::kCorruption ||
                  rows.status().code() == StatusCode::kNotImplemented)
          << rows.status().ToString();
    }
  }
}

TEST(AvroTest, AvrocatReadsOurFiles) {
  skade::testing::TempDir dir;
  std::string path = dir.Path("rows.avro");
  skade::testing::WriteFileOrDie(path, WriteRows(Codec::kDeflate, 5, {{"format-version", "2"}}));
  std::string cmd = "avrocat " + path + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  int rc = pclose(pipe);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("\"id\": 4"), std::string::npos) << output;
  EXPECT_NE(output.find("name-4"), std::string::npos) << output;
  EXPECT_NE(output.find("\"name\": null"), std::string::npos) << output;
}

}  // namespace
}  // namespace skade::iceberg::avro
