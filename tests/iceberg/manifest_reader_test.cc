// The typed manifest entry decoder against layouts other writers use (fields in another
// order, unions either way round, int where long is expected, unknown fields of every Avro
// kind, metric maps as Avro maps or as records with the value first), against garbled bytes,
// and with ManifestReadOptions that leave metrics out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "skade/iceberg/avro.h"
#include "skade/iceberg/manifest.h"
#include "skade/io/file_io.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using avro::AvroValue;

// A manifest_entry schema no skade writer produces, but every part of which a writer may.
constexpr const char* kForeignSchema = R"({"type": "record", "name": "manifest_entry", "fields": [
  {"name": "data_file", "field-id": 2, "type": {"type": "record", "name": "r2", "fields": [
    {"name": "extra_record", "type": {"type": "record", "name": "x", "fields": [
      {"name": "a", "type": "double"},
      {"name": "b", "type": {"type": "enum", "name": "e", "symbols": ["P", "Q"]}},
      {"name": "c", "type": "boolean"}]}},
    {"name": "file_format", "type": "string", "field-id": 101},
    {"name": "file_path", "type": "string", "field-id": 100},
    {"name": "partition", "field-id": 102, "type": {"type": "record", "name": "r102", "fields": [
      {"name": "d", "field-id": 1000, "type": [{"type": "int", "logicalType": "date"}, "null"]},
      {"name": "s", "field-id": 1001, "type": ["null", "string"]}]}},
    {"name": "record_count", "type": "int", "field-id": 103},
    {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
    {"name": "extra_map", "type": {"type": "map", "values": {"type": "array", "items": "float"}}},
    {"name": "value_counts", "field-id": 109, "type": [{"type": "array", "logicalType": "map", "items":
      {"type": "record", "name": "k119_v120", "fields": [
        {"name": "value", "type": "long", "field-id": 120},
        {"name": "key", "type": "int", "field-id": 119}]}}, "null"]},
    {"name": "null_value_counts", "field-id": 110, "type": ["null", {"type": "map", "values": "long"}]},
    {"name": "lower_bounds", "field-id": 125, "type": ["null", {"type": "array", "items":
      {"type": "record", "name": "k126_v127", "fields": [
        {"name": "value", "type": "bytes"}, {"name": "key", "type": "int"}]}}]},
    {"name": "upper_bounds", "field-id": 128, "type": ["null", {"type": "array", "items":
      {"type": "record", "name": "k129_v130", "fields": [
        {"name": "key", "type": "int"}, {"name": "note", "type": ["null", "string"]},
        {"name": "value", "type": "bytes"}]}}]},
    {"name": "extra_fixed", "type": {"type": "fixed", "name": "f3", "size": 3}},
    {"name": "split_offsets", "field-id": 132, "type": ["null", {"type": "array", "items": "long"}]},
    {"name": "equality_ids", "field-id": 135, "type": [{"type": "array", "items": "int"}, "null"]},
    {"name": "sort_order_id", "field-id": 140, "type": ["null", "int"]}]}},
  {"name": "extra_top", "type": ["null", "string", {"type": "array", "items": "long"}]},
  {"name": "status", "type": "int", "field-id": 0},
  {"name": "snapshot_id", "type": ["long", "null"], "field-id": 1},
  {"name": "sequence_number", "type": ["null", "long"], "field-id": 3},
  {"name": "file_sequence_number", "type": ["null", "long"], "field-id": 4}]})";

AvroValue Kv(int64_t key, AvroValue value, bool value_first) {
  return value_first ? AvroValue::List({std::move(value), AvroValue::Long(key)})
                     : AvroValue::List({AvroValue::Long(key), std::move(value)});
}

AvroValue ForeignEntry(int i) {
  AvroValue extra_record = AvroValue::List({AvroValue::Double(1.5 * i), AvroValue::Long(i % 2), AvroValue::Bool(true)});
  AvroValue partition = AvroValue::List({i % 3 == 0 ? AvroValue::Null() : AvroValue::Long(19000 + i),
                                         AvroValue::Bytes("p" + std::to_string(i))});
  AvroValue extra_map = AvroValue::Map({{"k", AvroValue::List({AvroValue::Float(1), AvroValue::Float(2)})}});
  AvroValue value_counts = AvroValue::List({Kv(1, AvroValue::Long(10 + i), true), Kv(2, AvroValue::Long(20 + i), true)});
  AvroValue null_counts = AvroValue::Map({{"1", AvroValue::Long(i)}, {"2", AvroValue::Long(0)}});
  AvroValue lower = AvroValue::List({Kv(1, AvroValue::Bytes("lo1"), true), Kv(2, AvroValue::Bytes("lo2"), true)});
  AvroValue upper = AvroValue::List(
      {AvroValue::List({AvroValue::Long(1), AvroValue::Bytes("why"), AvroValue::Bytes("hi1")}),
       AvroValue::List({AvroValue::Long(2), AvroValue::Null(), AvroValue::Bytes("hi2")})});
  AvroValue data_file = AvroValue::List({
      extra_record,
      AvroValue::Bytes("parquet"),
      AvroValue::Bytes("s3://b/t/data/f" + std::to_string(i) + ".parquet"),
      partition,
      AvroValue::Long(100 + i),
      AvroValue::Long(4096 + i),
      extra_map,
      value_counts,
      null_counts,
      lower,
      upper,
      AvroValue::Bytes("abc"),
      AvroValue::List({AvroValue::Long(4), AvroValue::Long(4000)}),
      AvroValue::List({AvroValue::Long(1)}),
      AvroValue::Long(7),
  });
  AvroValue extra_top = AvroValue::List({AvroValue::Long(1), AvroValue::Long(2)});
  extra_top.branch = 2;
  return AvroValue::List({data_file, extra_top, AvroValue::Long(i == 1 ? 0 : 1), AvroValue::Long(55),
                          i == 1 ? AvroValue::Long(3) : AvroValue::Null(), i == 1 ? AvroValue::Long(2) : AvroValue::Null()});
}

std::string ForeignManifest(int entries, avro::Codec codec) {
  auto writer = avro::FileWriter::Create(kForeignSchema, {{"format-version", "2"}, {"content", "data"}}, codec);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (int i = 0; i < entries; ++i) {
    Status st = (*writer)->Append(ForeignEntry(i));
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return (*writer)->Finish().value();
}

ManifestFile Listed() {
  ManifestFile m;
  m.sequence_number = 9;
  m.added_snapshot_id = 77;
  m.partition_spec_id = 3;
  return m;
}

Result<std::vector<ManifestEntry>> ReadAll(const std::string& bytes, ManifestReadOptions options = {}) {
  SKADE_ASSIGN_OR_RETURN(auto reader, ManifestReader::FromBytes(bytes, "foreign.avro", Listed(), std::move(options)));
  std::vector<ManifestEntry> out;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(auto entry, reader->Next());
    if (!entry) return out;
    out.push_back(std::move(*entry));
  }
}

TEST(TypedManifestReaderTest, ReadsAForeignLayoutFieldByField) {
  for (avro::Codec codec : {avro::Codec::kNull, avro::Codec::kDeflate}) {
    auto entries = ReadAll(ForeignManifest(4, codec));
    ASSERT_TRUE(entries.ok()) << entries.status().ToString();
    ASSERT_EQ(entries->size(), 4u);
    for (int i = 0; i < 4; ++i) {
      const ManifestEntry& e = (*entries)[static_cast<size_t>(i)];
      const DataFile& f = e.data_file;
      SCOPED_TRACE(i);
      EXPECT_EQ(e.status, i == 1 ? ManifestEntryStatus::kExisting : ManifestEntryStatus::kAdded);
      EXPECT_EQ(e.snapshot_id, 55);
      // Entry 1 is EXISTING with its own sequence number; the others inherit the list's.
      EXPECT_EQ(e.sequence_number, i == 1 ? 3 : 9);
      EXPECT_EQ(e.file_sequence_number, i == 1 ? 2 : 9);
      EXPECT_EQ(f.file_path, "s3://b/t/data/f" + std::to_string(i) + ".parquet");
      EXPECT_EQ(f.file_format, FileFormat::kParquet);
      EXPECT_EQ(f.spec_id, 3);
      EXPECT_EQ(f.record_count, 100 + i);
      EXPECT_EQ(f.file_size_in_bytes, 4096 + i);
      ASSERT_EQ(f.partition.size(), 2u);
      if (i % 3 == 0) {
        EXPECT_FALSE(f.partition[0].has_value());
      } else {
        ASSERT_TRUE(f.partition[0].has_value());
        EXPECT_EQ(*f.partition[0], Literal::Date(19000 + i));
      }
      EXPECT_EQ(f.partition[1], Literal::String("p" + std::to_string(i)));
      EXPECT_EQ(f.value_counts, (std::map<int, int64_t>{{1, 10 + i}, {2, 20 + i}}));
      EXPECT_EQ(f.null_value_counts, (std::map<int, int64_t>{{1, i}, {2, 0}}));
      EXPECT_EQ(f.lower_bounds, (std::map<int, std::string>{{1, "lo1"}, {2, "lo2"}}));
      EXPECT_EQ(f.upper_bounds, (std::map<int, std::string>{{1, "hi1"}, {2, "hi2"}}));
      EXPECT_EQ(f.split_offsets, (std::vector<int64_t>{4, 4000}));
      EXPECT_EQ(f.equality_ids, (std::vector<int>{1}));
      EXPECT_EQ(f.sort_order_id, 7);
    }
  }
}

TEST(TypedManifestReaderTest, OptionsLeaveOutMetricsAndSplitOffsets) {
  const std::string bytes = ForeignManifest(3, avro::Codec::kDeflate);
  auto all = ReadAll(bytes);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  for (const std::vector<int>& ids : {std::vector<int>{}, std::vector<int>{2}, std::vector<int>{2, 1, 99}}) {
    auto some = ReadAll(bytes, ManifestReadOptions{ids, /*split_offsets=*/false});
    ASSERT_TRUE(some.ok()) << some.status().ToString();
    ASSERT_EQ(some->size(), all->size());
    for (size_t i = 0; i < all->size(); ++i) {
      const DataFile& a = (*all)[i].data_file;
      const DataFile& s = (*some)[i].data_file;
      auto only = [&](auto map) {
        std::erase_if(map, [&](const auto& kv) { return std::find(ids.begin(), ids.end(), kv.first) == ids.end(); });
        return map;
      };
      EXPECT_EQ(s.value_counts, only(a.value_counts));
      EXPECT_EQ(s.null_value_counts, only(a.null_value_counts));
      EXPECT_EQ(s.lower_bounds, only(a.lower_bounds));
      EXPECT_EQ(s.upper_bounds, only(a.upper_bounds));
      EXPECT_TRUE(s.split_offsets.empty());
      // Everything else is read as before.
      EXPECT_EQ(s.file_path, a.file_path);
      EXPECT_EQ(s.partition, a.partition);
      EXPECT_EQ(s.record_count, a.record_count);
      EXPECT_EQ(s.equality_ids, a.equality_ids);
      EXPECT_EQ((*some)[i].sequence_number, (*all)[i].sequence_number);
    }
  }
}

TEST(TypedManifestReaderTest, GarbledBytesAreCorruptionNeverACrash) {
  // Uncompressed, so every byte of every record is exposed to the decoder (ASan checks the
  // bounds in the sanitized run).
  const std::string good = ForeignManifest(2, avro::Codec::kNull);
  ASSERT_TRUE(ReadAll(good).ok());
  int corrupt = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ flip);
      for (const ManifestReadOptions& options : {ManifestReadOptions{}, ManifestReadOptions{std::vector<int>{}, false}}) {
        auto entries = ReadAll(bad, options);
        if (!entries.ok()) {
          // (A garbled codec name in the header is a codec skade does not know.)
          EXPECT_TRUE(entries.status().code() == StatusCode::kCorruption ||
                      entries.status().code() == StatusCode::kNotImplemented)
              << i << ": " << entries.status().ToString();
          ++corrupt;
        }
      }
    }
  }
  EXPECT_GT(corrupt, 0);
  // Cut anywhere: an error or fewer entries.
  for (size_t len = 0; len < good.size(); ++len) {
    auto entries = ReadAll(good.substr(0, len));
    if (entries.ok()) {
      EXPECT_LT(entries->size(), 2u) << len;
    } else {
      EXPECT_EQ(entries.status().code(), StatusCode::kCorruption) << len;
    }
  }
}

TEST(TypedManifestReaderTest, MissingRequiredFieldsAndBadValuesAreNamed) {
  auto with = [](const std::function<void(AvroValue&)>& change) {
    auto writer = avro::FileWriter::Create(kForeignSchema, {}, avro::Codec::kNull);
    AvroValue entry = ForeignEntry(0);
    change(entry);
    EXPECT_TRUE((*writer)->Append(entry).ok());
    return ReadAll((*writer)->Finish().value()).status();
  };
  Status st = with([](AvroValue& e) { e.items[2] = AvroValue::Long(5); });
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("field 'status'"), std::string::npos) << st.ToString();
  st = with([](AvroValue& e) { e.items[0].items[1] = AvroValue::Bytes("csv"); });
  EXPECT_NE(st.message().find("field 'file_format'"), std::string::npos) << st.ToString();
  st = with([](AvroValue& e) { e.items[0].items[8] = AvroValue::Map({{"one", AvroValue::Long(1)}}); });
  EXPECT_NE(st.message().find("field 'null_value_counts': non-numeric map key"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("foreign.avro"), std::string::npos) << st.ToString();
}

TEST(TypedManifestReaderTest, AMetricMapOfTheWrongValueTypeIsCorruptionWhetherOrNotItIsRead) {
  // value_counts declared with bytes values: corrupt, even when no metric is asked for.
  std::string schema = kForeignSchema;
  const std::string long_value = R"({"name": "value", "type": "long", "field-id": 120})";
  schema.replace(schema.find(long_value), long_value.size(), R"({"name": "value", "type": "bytes", "field-id": 120})");
  auto writer = avro::FileWriter::Create(schema, {}, avro::Codec::kNull);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  AvroValue entry = ForeignEntry(0);
  entry.items[0].items[7] = AvroValue::List({Kv(1, AvroValue::Bytes("x"), true)});
  ASSERT_TRUE((*writer)->Append(entry).ok());
  const std::string bytes = (*writer)->Finish().value();
  for (const ManifestReadOptions& options :
       {ManifestReadOptions{}, ManifestReadOptions{std::vector<int>{}, false}, ManifestReadOptions{std::vector<int>{7}, false}}) {
    Status st = ReadAll(bytes, options).status();
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_NE(st.message().find("field 'value_counts': map value is not a long"), std::string::npos) << st.ToString();
  }
}

TEST(AvroSkipTest, SkipsBlocksWithAByteSizeInOneStep) {
  // array<long> [1, 2] written as one block with a negative count and its byte size, then
  // the end: -2 → 3, size 2 → 4, items 1 → 2 and 2 → 4, end 0.
  const std::string bytes("\x03\x04\x02\x04\x00", 5);
  auto schema = avro::ParseSchema(R"({"type": "array", "items": "long"})");
  ASSERT_TRUE(schema.ok());
  std::string_view in = bytes;
  ASSERT_TRUE(avro::SkipValue(**schema, &in).ok());
  EXPECT_TRUE(in.empty());
  std::string_view again = bytes;
  auto value = avro::DecodeValue(**schema, &again);
  ASSERT_TRUE(value.ok());
  ASSERT_EQ(value->items.size(), 2u);
  EXPECT_EQ(value->items[1].long_value, 2);
  // A byte size past the end is corruption, not a skip out of bounds.
  const std::string bad("\x03\x40\x02\x04\x00", 5);
  std::string_view cut = bad;
  EXPECT_EQ(avro::SkipValue(**schema, &cut).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace skade::iceberg
