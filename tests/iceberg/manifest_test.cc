#include "skade/iceberg/manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "skade/iceberg/avro.h"
#include "skade/io/file_io.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using skade::testing::FixturePath;
using skade::testing::ReadFileOrDie;

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Fixture tables store foreign path prefixes; manifests live next to the list locally.
std::string LocalManifest(const std::string& table, const ManifestFile& m) {
  return FixturePath(table + "/metadata/" + Basename(m.manifest_path));
}

std::vector<ManifestFile> MustParseList(const std::string& path) {
  auto list = ParseManifestList(ReadFileOrDie(path), path);
  EXPECT_TRUE(list.ok()) << path << ": " << list.status().ToString();
  return list.ok() ? *list : std::vector<ManifestFile>();
}

std::vector<ManifestEntry> ReadEntries(const std::string& data, const std::string& name,
                                       const ManifestFile& manifest,
                                       std::unique_ptr<ManifestReader>* keep = nullptr) {
  auto reader = ManifestReader::FromBytes(data, name, manifest);
  EXPECT_TRUE(reader.ok()) << name << ": " << reader.status().ToString();
  std::vector<ManifestEntry> out;
  if (!reader.ok()) return out;
  while (true) {
    auto next = (*reader)->Next();
    EXPECT_TRUE(next.ok()) << name << ": " << next.status().ToString();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  if (keep != nullptr) *keep = std::move(reader).value();
  return out;
}

std::vector<ManifestEntry> ReadFixtureManifest(const std::string& table, const ManifestFile& m,
                                               std::unique_ptr<ManifestReader>* keep = nullptr) {
  std::string path = LocalManifest(table, m);
  return ReadEntries(ReadFileOrDie(path), path, m, keep);
}

int32_t LittleEndianInt(const std::string& bytes) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  return static_cast<int32_t>(v);
}

// ------------------------------------------------------------------------------------------
// Manifest lists

TEST(ManifestListTest, ParsesV2ListsWithOldAndNewCountNames) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  struct Case {
    const char* file;
    const char* path;
    int64_t length;
    int64_t snapshot;
  };
  for (const Case& c :
       {Case{"metadata/avro/manifest-list-v2-1.avro",
             "iceberg-warehouse/people/metadata/794bd2ee-052c-449c-9a6f-3a88857c747f-m0.avro", 6658,
             6653143792592159268},
        Case{"metadata/avro/manifest-list-v2-2.avro",
             "iceberg-warehouse_2/people/metadata/80064d99-bd75-4cf3-9b27-13a60f189039-m0.avro",
             6660, 3083072880052097243}}) {
    auto list = MustParseList(FixturePath(c.file));
    ASSERT_EQ(list.size(), 1u) << c.file;
    const ManifestFile& m = list[0];
    EXPECT_EQ(m.manifest_path, c.path);
    EXPECT_EQ(m.manifest_length, c.length);
    EXPECT_EQ(m.partition_spec_id, 0);
    EXPECT_EQ(m.content, ManifestContent::kData);
    EXPECT_EQ(m.sequence_number, 1);
    EXPECT_EQ(m.min_sequence_number, 1);
    EXPECT_EQ(m.added_snapshot_id, c.snapshot);
    EXPECT_EQ(m.added_files_count, 1) << c.file;
    EXPECT_EQ(m.existing_files_count, 0) << c.file;
    EXPECT_EQ(m.deleted_files_count, 0) << c.file;
    EXPECT_EQ(m.added_rows_count, 1);
    EXPECT_EQ(m.existing_rows_count, 0);
    EXPECT_EQ(m.deleted_rows_count, 0);
    EXPECT_TRUE(m.partitions.empty());
    EXPECT_FALSE(m.key_metadata.has_value());
  }
}

TEST(ManifestListTest, ParsesV1ListWithDefaults) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto list = MustParseList(
      FixturePath("iceberg/iceberg_partitioned/metadata/"
                  "snap-8270633197658268308-1-af797bab-2f2c-44df-a77b-d91c7198fe53.avro"));
  ASSERT_EQ(list.size(), 1u);
  const ManifestFile& m = list[0];
  EXPECT_EQ(m.manifest_path,
            "/test-warehouse/iceberg_test/iceberg_partitioned/metadata/"
            "af797bab-2f2c-44df-a77b-d91c7198fe53-m0.avro");
  EXPECT_EQ(m.manifest_length, 5579);
  EXPECT_EQ(m.content, ManifestContent::kData);
  EXPECT_EQ(m.sequence_number, 0);
  EXPECT_EQ(m.min_sequence_number, 0);
  EXPECT_EQ(m.added_snapshot_id, 8270633197658268308);
  EXPECT_EQ(m.added_files_count, 20);
  EXPECT_EQ(m.added_rows_count, 20);
  EXPECT_EQ(m.deleted_rows_count, 0);
  ASSERT_EQ(m.partitions.size(), 2u);
  EXPECT_FALSE(m.partitions[0].contains_null);
  EXPECT_FALSE(m.partitions[0].contains_nan.has_value());
  EXPECT_EQ(LittleEndianInt(*m.partitions[0].lower_bound), 438296);
  EXPECT_EQ(LittleEndianInt(*m.partitions[0].upper_bound), 438298);
  EXPECT_EQ(m.partitions[1].lower_bound, "click");
  EXPECT_EQ(m.partitions[1].upper_bound, "view");
}

TEST(ManifestListTest, ReadsEqualityDeleteTableList) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto list = MustParseList(
      FixturePath("iceberg/equality_deletes_mytable/metadata/"
                  "snap-1916084761853986166-1-61648895-78fc-44d6-bf55-298a7614c4f8.avro"));
  ASSERT_EQ(list.size(), 6u);
  std::vector<std::pair<ManifestContent, int64_t>> got;
  for (const ManifestFile& m : list) {
    got.emplace_back(m.content, m.sequence_number);
    EXPECT_EQ(m.min_sequence_number, m.sequence_number);
    EXPECT_EQ(m.added_files_count, 1);
  }
  std::vector<std::pair<ManifestContent, int64_t>> want = {
      {ManifestContent::kData, 5},    {ManifestContent::kData, 1},
      {ManifestContent::kDeletes, 6}, {ManifestContent::kDeletes, 4},
      {ManifestContent::kDeletes, 3}, {ManifestContent::kDeletes, 2}};
  EXPECT_EQ(got, want);
}

TEST(ManifestListTest, ReadsThroughFileIO) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto io = io::MakeLocalFileIO();
  std::string path = FixturePath("metadata/avro/manifest-list-v2-1.avro");
  auto list = ReadManifestList(*io, path);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), 1u);
  EXPECT_EQ(ReadManifestList(*io, FixturePath("metadata/avro/nope.avro")).status().code(),
            StatusCode::kNotFound);
}

std::vector<ManifestFile> SampleManifestFiles() {
  ManifestFile a;
  a.manifest_path = "s3://b/t/metadata/a-m0.avro";
  a.manifest_length = 4242;
  a.partition_spec_id = 3;
  a.content = ManifestContent::kData;
  a.sequence_number = 7;
  a.min_sequence_number = 2;
  a.added_snapshot_id = 99;
  a.added_files_count = 2;
  a.existing_files_count = 1;
  a.deleted_files_count = 0;
  a.added_rows_count = 200;
  a.existing_rows_count = 50;
  a.deleted_rows_count = 0;
  FieldSummary s1;
  s1.contains_null = true;
  s1.contains_nan = false;
  s1.lower_bound = std::string("\x01\x00\x00\x00", 4);
  s1.upper_bound = std::string("\x09\x00\x00\x00", 4);
  FieldSummary s2;  // all null: no bounds
  s2.contains_null = true;
  a.partitions = {s1, s2};
  a.key_metadata = std::string("\x00key", 4);

  ManifestFile b = a;
  b.manifest_path = "s3://b/t/metadata/b-m1.avro";
  b.partitions.clear();
  b.key_metadata.reset();
  b.added_rows_count = 0;
  return {a, b};
}

void ExpectManifestFileEq(const ManifestFile& a, const ManifestFile& b) {
  EXPECT_EQ(a.manifest_path, b.manifest_path);
  EXPECT_EQ(a.manifest_length, b.manifest_length);
  EXPECT_EQ(a.partition_spec_id, b.partition_spec_id);
  EXPECT_EQ(a.content, b.content);
  EXPECT_EQ(a.sequence_number, b.sequence_number);
  EXPECT_EQ(a.min_sequence_number, b.min_sequence_number);
  EXPECT_EQ(a.added_snapshot_id, b.added_snapshot_id);
  EXPECT_EQ(a.added_files_count, b.added_files_count);
  EXPECT_EQ(a.existing_files_count, b.existing_files_count);
  EXPECT_EQ(a.deleted_files_count, b.deleted_files_count);
  EXPECT_EQ(a.added_rows_count, b.added_rows_count);
  EXPECT_EQ(a.existing_rows_count, b.existing_rows_count);
  EXPECT_EQ(a.deleted_rows_count, b.deleted_rows_count);
  ASSERT_EQ(a.partitions.size(), b.partitions.size());
  for (size_t i = 0; i < a.partitions.size(); ++i) {
    EXPECT_EQ(a.partitions[i].contains_null, b.partitions[i].contains_null);
    EXPECT_EQ(a.partitions[i].contains_nan, b.partitions[i].contains_nan);
    EXPECT_EQ(a.partitions[i].lower_bound, b.partitions[i].lower_bound);
    EXPECT_EQ(a.partitions[i].upper_bound, b.partitions[i].upper_bound);
  }
  EXPECT_EQ(a.key_metadata, b.key_metadata);
  EXPECT_EQ(a.first_row_id, b.first_row_id);
}

TEST(ManifestListTest, RoundTripsV2) {
  std::vector<ManifestFile> files = SampleManifestFiles();
  files[1].content = ManifestContent::kDeletes;
  auto bytes = WriteManifestList(2, 99, 98, 7, files);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto reader = avro::FileReader::Open(*bytes, "list.avro");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Metadata("snapshot-id"), "99");
  EXPECT_EQ((*reader)->Metadata("parent-snapshot-id"), "98");
  EXPECT_EQ((*reader)->Metadata("sequence-number"), "7");
  EXPECT_EQ((*reader)->Metadata("format-version"), "2");
  EXPECT_EQ((*reader)->Metadata("avro.codec"), "deflate");
  // The spec's field ids.
  const avro::AvroNode& schema = *(*reader)->schema();
  std::map<std::string, int> ids;
  for (const auto& f : schema.fields) ids[f.name] = f.field_id.value_or(-1);
  EXPECT_EQ(ids, (std::map<std::string, int>{{"manifest_path", 500},
                                             {"manifest_length", 501},
                                             {"partition_spec_id", 502},
                                             {"content", 517},
                                             {"sequence_number", 515},
                                             {"min_sequence_number", 516},
                                             {"added_snapshot_id", 503},
                                             {"added_files_count", 504},
                                             {"existing_files_count", 505},
                                             {"deleted_files_count", 506},
                                             {"added_rows_count", 512},
                                             {"existing_rows_count", 513},
                                             {"deleted_rows_count", 514},
                                             {"partitions", 507},
                                             {"key_metadata", 519}}));
  const avro::AvroNode& partitions =
      *schema.fields[static_cast<size_t>(schema.FieldIndex("partitions"))].type->branches[1];
  EXPECT_EQ(partitions.element_id, 508);
  std::vector<int> summary_ids;
  for (const auto& f : partitions.items->fields) summary_ids.push_back(f.field_id.value_or(-1));
  EXPECT_EQ(summary_ids, (std::vector<int>{509, 518, 510, 511}));

  auto parsed = ParseManifestList(*bytes, "list.avro");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  for (size_t i = 0; i < files.size(); ++i) ExpectManifestFileEq((*parsed)[i], files[i]);
}

TEST(ManifestListTest, RoundTripsV1) {
  std::vector<ManifestFile> files = SampleManifestFiles();
  for (ManifestFile& f : files) {
    f.sequence_number = 0;
    f.min_sequence_number = 0;
  }
  files[1].added_files_count.reset();  // optional in v1
  auto bytes = WriteManifestList(1, 5, std::nullopt, 0, files);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto reader = avro::FileReader::Open(*bytes, "list.avro");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Metadata("parent-snapshot-id"), "null");
  EXPECT_EQ((*reader)->Metadata("sequence-number"), std::nullopt);
  EXPECT_EQ((*reader)->Metadata("format-version"), "1");
  EXPECT_EQ((*reader)->schema()->FieldIndex("content"), -1);
  EXPECT_EQ((*reader)->schema()->FieldIndex("sequence_number"), -1);
  auto parsed = ParseManifestList(*bytes, "list.avro");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  for (size_t i = 0; i < files.size(); ++i) ExpectManifestFileEq((*parsed)[i], files[i]);
}

TEST(ManifestListTest, AssignsPendingSequenceNumbers) {
  std::vector<ManifestFile> files = SampleManifestFiles();
  files[0].sequence_number = -1;
  files[0].min_sequence_number = -1;
  auto bytes = WriteManifestList(2, 99, std::nullopt, 12, files);
  ASSERT_TRUE(bytes.ok());
  auto parsed = ParseManifestList(*bytes, "list.avro");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)[0].sequence_number, 12);
  EXPECT_EQ((*parsed)[0].min_sequence_number, 12);
  EXPECT_EQ((*parsed)[1].sequence_number, 7);
}

TEST(ManifestListTest, RejectsInvalidLists) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::vector<ManifestFile> files = SampleManifestFiles();
  files[0].added_rows_count.reset();
  EXPECT_EQ(WriteManifestList(2, 1, std::nullopt, 1, files).status().code(),
            StatusCode::kInvalidArgument);
  files = SampleManifestFiles();
  files[0].content = ManifestContent::kDeletes;
  EXPECT_EQ(WriteManifestList(1, 1, std::nullopt, 0, files).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteManifestList(9, 1, std::nullopt, 0, {}).status().code(),
            StatusCode::kNotImplemented);

  // Truncations of a real list are corruption, naming the file.
  std::string data = ReadFileOrDie(FixturePath("metadata/avro/manifest-list-v2-1.avro"));
  for (size_t len = 0; len < data.size(); len += 7) {
    auto r = ParseManifestList(data.substr(0, len), "cut.avro");
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_NE(r.status().message().find("cut.avro"), std::string::npos);
  }
  // A manifest is not a manifest list.
  EXPECT_EQ(
      ParseManifestList(ReadFileOrDie(FixturePath("iceberg/partition_bucket_test/metadata/"
                                                  "6cfeb452-0e9f-465a-bec0-6d0779c2f041-m0.avro")),
                        "m.avro")
          .status()
          .code(),
      StatusCode::kCorruption);
}

// ------------------------------------------------------------------------------------------
// Reading fixture manifests

TEST(ManifestReaderTest, ReadsBucketPartitionedManifest) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "iceberg/partition_bucket_test";
  auto list = MustParseList(FixturePath(
      table + "/metadata/snap-8614859770535311463-1-6cfeb452-0e9f-465a-bec0-6d0779c2f041.avro"));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].added_rows_count, 100);
  std::unique_ptr<ManifestReader> reader;
  auto entries = ReadFixtureManifest(table, list[0], &reader);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(reader->format_version(), 2);
  EXPECT_EQ(reader->Metadata("content"), "data");
  EXPECT_EQ(reader->Metadata("partition-spec-id"), "0");
  const TypePtr& ptype = reader->partition_type();
  ASSERT_EQ(ptype->id(), TypeId::kStruct);
  ASSERT_EQ(ptype->fields().size(), 1u);
  EXPECT_EQ(ptype->fields()[0].id, 1000);
  EXPECT_EQ(ptype->fields()[0].name, "partition_col_bucket");
  EXPECT_EQ(ptype->fields()[0].type->id(), TypeId::kInt);

  std::set<int> buckets;
  int64_t records = 0;
  for (const ManifestEntry& e : entries) {
    EXPECT_EQ(e.status, ManifestEntryStatus::kAdded);
    EXPECT_EQ(e.snapshot_id, 8614859770535311463);
    EXPECT_EQ(e.sequence_number, 1);  // inherited from the list
    EXPECT_EQ(e.file_sequence_number, 1);
    const DataFile& f = e.data_file;
    EXPECT_EQ(f.content, DataFileContent::kData);
    EXPECT_EQ(f.file_format, FileFormat::kParquet);
    EXPECT_EQ(f.spec_id, 0);
    ASSERT_EQ(f.partition.size(), 1u);
    ASSERT_TRUE(f.partition[0].has_value());
    EXPECT_EQ(f.partition[0]->type_id(), TypeId::kInt);
    buckets.insert(f.partition[0]->as_int());
    EXPECT_NE(f.file_path.find("partition_col_bucket=" + std::to_string(f.partition[0]->as_int())),
              std::string::npos);
    records += f.record_count;
    EXPECT_EQ(f.value_counts.at(1), f.record_count);
    EXPECT_EQ(f.null_value_counts.at(3), 0);
    EXPECT_EQ(f.column_sizes.size(), 3u);
    EXPECT_TRUE(f.lower_bounds.count(3));
  }
  EXPECT_EQ(buckets, (std::set<int>{0, 2, 4, 6, 7, 8}));
  EXPECT_EQ(records, 100);
}

TEST(ManifestReaderTest, ReadsV1HourAndIdentityManifest) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "iceberg/iceberg_partitioned";
  auto list = MustParseList(FixturePath(
      table + "/metadata/snap-8270633197658268308-1-af797bab-2f2c-44df-a77b-d91c7198fe53.avro"));
  ASSERT_EQ(list.size(), 1u);
  std::unique_ptr<ManifestReader> reader;
  auto entries = ReadFixtureManifest(table, list[0], &reader);
  ASSERT_EQ(entries.size(), 20u);
  EXPECT_EQ(reader->format_version(), 1);
  const auto& pfields = reader->partition_type()->fields();
  ASSERT_EQ(pfields.size(), 2u);
  EXPECT_EQ(pfields[0].id, 1000);
  EXPECT_EQ(pfields[0].type->id(), TypeId::kInt);
  EXPECT_EQ(pfields[1].id, 1001);
  EXPECT_EQ(pfields[1].name, "action");
  EXPECT_EQ(pfields[1].type->id(), TypeId::kString);

  std::map<std::pair<int, std::string>, int> partitions;
  for (const ManifestEntry& e : entries) {
    EXPECT_EQ(e.status, ManifestEntryStatus::kAdded);
    EXPECT_EQ(e.sequence_number, 0);  // v1
    EXPECT_EQ(e.file_sequence_number, 0);
    EXPECT_EQ(e.snapshot_id, 8270633197658268308);
    EXPECT_EQ(e.data_file.content, DataFileContent::kData);
    EXPECT_EQ(e.data_file.record_count, 1);
    ASSERT_EQ(e.data_file.partition.size(), 2u);
    partitions[{e.data_file.partition[0]->as_int(), e.data_file.partition[1]->as_bytes()}]++;
  }
  std::map<std::pair<int, std::string>, int> want = {
      {{438296, "view"}, 8}, {{438297, "click"}, 6}, {{438298, "download"}, 6}};
  EXPECT_EQ(partitions, want);
}

TEST(ManifestReaderTest, ReadsEqualityDeleteManifests) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "iceberg/equality_deletes_mytable";
  auto list = MustParseList(FixturePath(
      table + "/metadata/snap-1916084761853986166-1-61648895-78fc-44d6-bf55-298a7614c4f8.avro"));
  std::map<int64_t, std::vector<int>> equality_ids_by_seq;
  int64_t live_data_rows = 0;
  for (const ManifestFile& m : list) {
    auto entries = ReadFixtureManifest(table, m);
    ASSERT_EQ(entries.size(), 1u);
    const ManifestEntry& e = entries[0];
    EXPECT_EQ(e.sequence_number, m.sequence_number);
    EXPECT_EQ(e.snapshot_id, m.added_snapshot_id);
    if (m.content == ManifestContent::kDeletes) {
      EXPECT_EQ(e.data_file.content, DataFileContent::kEqualityDeletes);
      EXPECT_EQ(e.data_file.record_count, 1);
      equality_ids_by_seq[*e.sequence_number] = e.data_file.equality_ids;
    } else {
      EXPECT_EQ(e.data_file.content, DataFileContent::kData);
      EXPECT_TRUE(e.data_file.equality_ids.empty());
      live_data_rows += e.data_file.record_count;
    }
  }
  // name='b' (seq 2), id=1 (seq 3), (id,name)=(3,'c') (seq 4), name='f' (seq 6).
  std::map<int64_t, std::vector<int>> want = {{2, {2}}, {3, {1}}, {4, {1, 2}}, {6, {2}}};
  EXPECT_EQ(equality_ids_by_seq, want);
  EXPECT_EQ(live_data_rows, 6);  // the summary's total-records
}

TEST(ManifestReaderTest, InheritsOnlyForAddedEntries) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string table = "iceberg/lineitem_iceberg";
  auto list = MustParseList(FixturePath(
      table + "/metadata/snap-2354745328521181395-1-179b4fb1-0366-4f7d-ad35-99ee8da0abf5.avro"));
  ASSERT_EQ(list.size(), 2u);
  int64_t live = 0, deleted = 0;
  for (const ManifestFile& m : list) {
    EXPECT_EQ(m.sequence_number, 2);
    for (const ManifestEntry& e : ReadFixtureManifest(table, m)) {
      if (e.status == ManifestEntryStatus::kDeleted) {
        // Written explicitly when the file was deleted: its original sequence number.
        EXPECT_EQ(e.sequence_number, 1);
        EXPECT_EQ(e.file_sequence_number, 1);
        deleted += e.data_file.record_count;
      } else {
        EXPECT_EQ(e.sequence_number, 2);
        live += e.data_file.record_count;
      }
      EXPECT_EQ(e.snapshot_id, 2354745328521181395);
    }
  }
  EXPECT_EQ(live, 51793);
  EXPECT_EQ(deleted, 60175);
}

// Every fixture list and manifest reads, and the row counts match the snapshot summaries in
// the tables' metadata JSON.
TEST(ManifestReaderTest, ReadsEveryFixtureSnapshot) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  struct Table {
    std::string dir;
    std::string metadata;
  };
  std::vector<Table> tables = {
      {"iceberg/lineitem_iceberg", "v2.metadata.json"},
      {"iceberg/iceberg_partitioned", "v2.metadata.json"},
      {"iceberg/partition_bucket_test", "v2.metadata.json"},
      {"iceberg/generated_spec2_0_001/pyspark_iceberg_table", "v9.metadata.json"},
      {"iceberg/equality_deletes_mytable", "v7.metadata.json"},
  };
  int snapshots_checked = 0;
  for (const Table& t : tables) {
    auto doc = nlohmann::json::parse(ReadFileOrDie(FixturePath(t.dir + "/metadata/" + t.metadata)),
                                     nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << t.dir;
    for (const auto& snap : doc["snapshots"]) {
      std::string list_path =
          FixturePath(t.dir + "/metadata/" + Basename(snap["manifest-list"].get<std::string>()));
      if (!std::filesystem::exists(list_path)) continue;  // see fixtures README (orphans)
      auto list = MustParseList(list_path);
      int64_t data_rows = 0, delete_rows = 0, data_files = 0, delete_files = 0;
      for (const ManifestFile& m : list) {
        for (const ManifestEntry& e : ReadFixtureManifest(t.dir, m)) {
          if (e.status == ManifestEntryStatus::kDeleted) continue;
          EXPECT_LE(*e.sequence_number, m.sequence_number);
          EXPECT_GE(*e.sequence_number, m.min_sequence_number);
          if (e.data_file.content == DataFileContent::kData) {
            data_rows += e.data_file.record_count;
            ++data_files;
          } else {
            delete_rows += e.data_file.record_count;
            ++delete_files;
          }
        }
      }
      const auto& summary = snap["summary"];
      EXPECT_EQ(std::to_string(data_rows), summary["total-records"].get<std::string>())
          << list_path;
      EXPECT_EQ(std::to_string(data_files), summary["total-data-files"].get<std::string>())
          << list_path;
      if (summary.contains("total-delete-files")) {
        EXPECT_EQ(std::to_string(delete_files), summary["total-delete-files"].get<std::string>())
            << list_path;
        int64_t expected_delete_rows =
            std::stoll(summary["total-position-deletes"].get<std::string>()) +
            std::stoll(summary["total-equality-deletes"].get<std::string>());
        EXPECT_EQ(delete_rows, expected_delete_rows) << list_path;
      }
      ++snapshots_checked;
    }
  }
  EXPECT_GE(snapshots_checked, 15);
}

TEST(ManifestReaderTest, RejectsCorruptManifests) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string path = FixturePath(
      "iceberg/partition_bucket_test/metadata/6cfeb452-0e9f-465a-bec0-6d0779c2f041-m0.avro");
  std::string data = ReadFileOrDie(path);
  ManifestFile m;
  m.sequence_number = 1;
  for (size_t len = 0; len < data.size(); len += 13) {
    auto reader = ManifestReader::FromBytes(data.substr(0, len), "cut.avro", m);
    Status st;
    if (!reader.ok()) {
      st = reader.status();
    } else {
      while (true) {
        auto next = (*reader)->Next();
        if (!next.ok()) {
          st = next.status();
          break;
        }
        if (!next->has_value()) break;
      }
    }
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << len;
  }
  // A manifest list is not a manifest.
  EXPECT_EQ(ManifestReader::FromBytes(
                ReadFileOrDie(FixturePath("metadata/avro/manifest-list-v2-1.avro")), "l.avro", m)
                .status()
                .code(),
            StatusCode::kCorruption);
  auto io = io::MakeLocalFileIO();
  EXPECT_EQ(ManifestReader::Open(*io, path + ".missing", m).status().code(), StatusCode::kNotFound);
}

// ------------------------------------------------------------------------------------------
// Writing

NestedField Col(int id, std::string name, TypePtr type, bool required = false) {
  NestedField f;
  f.id = id;
  f.name = std::move(name);
  f.type = std::move(type);
  f.required = required;
  return f;
}

SchemaPtr TestSchema() {
  return std::make_shared<Schema>(4, std::vector<NestedField>{
                                         Col(1, "id", Type::Primitive(TypeId::kInt), true),
                                         Col(2, "category", Type::Primitive(TypeId::kString)),
                                         Col(3, "day", Type::Primitive(TypeId::kDate)),
                                         Col(4, "price", Type::Decimal(20, 4)),
                                         Col(5, "ts", Type::Primitive(TypeId::kTimestamp)),
                                         Col(6, "tstz", Type::Primitive(TypeId::kTimestampTz)),
                                         Col(7, "amount", Type::Primitive(TypeId::kDouble)),
                                     });
}

PartitionField PField(int source, int id, std::string name, Transform t = Transform::Identity()) {
  PartitionField f;
  f.source_id = source;
  f.field_id = id;
  f.name = std::move(name);
  f.transform = t;
  return f;
}

PartitionSpecPtr TestSpec() {
  return std::make_shared<PartitionSpec>(
      2, std::vector<PartitionField>{PField(1, 1000, "id"), PField(2, 1001, "category"),
                                     PField(3, 1002, "day"), PField(4, 1003, "price"),
                                     PField(5, 1004, "ts"), PField(6, 1005, "tstz"),
                                     PField(7, 1006, "amount.x")});  // not a valid Avro name
}

DataFile MakeFile(int i, DataFileContent content) {
  DataFile f;
  f.content = content;
  f.file_path = "s3://bucket/t/data/file-" + std::to_string(i) + ".parquet";
  f.file_format = i % 2 == 0 ? FileFormat::kParquet : FileFormat::kAvro;
  f.spec_id = 2;
  f.partition = {
      Literal::Int(i * 10 - 5),
      i % 3 == 0 ? std::nullopt
                 : std::optional<Literal>(Literal::String("cat-" + std::to_string(i))),
      Literal::Date(19000 + i),
      Literal::Decimal(
          i % 2 == 0 ? static_cast<__int128>(-123456789012345) * i : static_cast<__int128>(42) * i,
          20, 4),
      Literal::Timestamp(int64_t{1700000000000000} + i),
      i == 1 ? std::nullopt : std::optional<Literal>(Literal::TimestampTz(-int64_t{1000} * i)),
      i == 2 ? Literal::Double(std::nan("")) : Literal::Double(i * 1.25),
  };
  f.record_count = 100 + i;
  f.file_size_in_bytes = 4096 + i;
  f.column_sizes = {{1, 10 + i}, {2, 20}};
  f.value_counts = {{1, 100 + i}};
  f.null_value_counts = {{2, i}};
  f.nan_value_counts = {{7, 0}};
  f.lower_bounds = {{1, Literal::Int(0).ToBinary()}};
  f.upper_bounds = {{1, Literal::Int(1000).ToBinary()}, {2, "zz"}};
  if (i == 1) f.key_metadata = std::string("\x01\x02", 2);
  f.split_offsets = {4, 1000 + i};
  if (content == DataFileContent::kEqualityDeletes) f.equality_ids = {1, 2};
  if (content == DataFileContent::kPositionDeletes) f.referenced_data_file = "s3://x/data.parquet";
  f.sort_order_id = i % 2 == 0 ? std::optional<int>(1) : std::nullopt;
  return f;
}

void ExpectDataFileEq(const DataFile& a, const DataFile& b, int format_version) {
  EXPECT_EQ(a.content, b.content);
  EXPECT_EQ(a.file_path, b.file_path);
  EXPECT_EQ(a.file_format, b.file_format);
  EXPECT_EQ(a.spec_id, b.spec_id);
  ASSERT_EQ(a.partition.size(), b.partition.size());
  for (size_t i = 0; i < a.partition.size(); ++i) {
    ASSERT_EQ(a.partition[i].has_value(), b.partition[i].has_value()) << i;
    if (!a.partition[i]) continue;
    EXPECT_EQ(a.partition[i]->type_id(), b.partition[i]->type_id()) << i;
    if (a.partition[i]->IsNaN()) {
      EXPECT_TRUE(b.partition[i]->IsNaN());
    } else {
      EXPECT_TRUE(*a.partition[i] == *b.partition[i])
          << i << ": " << a.partition[i]->ToString() << " vs " << b.partition[i]->ToString();
    }
  }
  EXPECT_EQ(a.record_count, b.record_count);
  EXPECT_EQ(a.file_size_in_bytes, b.file_size_in_bytes);
  EXPECT_EQ(a.column_sizes, b.column_sizes);
  EXPECT_EQ(a.value_counts, b.value_counts);
  EXPECT_EQ(a.null_value_counts, b.null_value_counts);
  EXPECT_EQ(a.nan_value_counts, b.nan_value_counts);
  EXPECT_EQ(a.lower_bounds, b.lower_bounds);
  EXPECT_EQ(a.upper_bounds, b.upper_bounds);
  EXPECT_EQ(a.key_metadata, b.key_metadata);
  EXPECT_EQ(a.split_offsets, b.split_offsets);
  EXPECT_EQ(a.equality_ids, b.equality_ids);
  EXPECT_EQ(a.sort_order_id, b.sort_order_id);
  if (format_version >= 2) {
    EXPECT_EQ(a.referenced_data_file, b.referenced_data_file);
  }
}

struct Written {
  std::string bytes;
  ManifestFile manifest;
  std::vector<ManifestEntry> entries;
};

// `with_nan` puts a NaN partition value in entry 2 (avrocat can't print NaN as JSON).
Written WriteSample(int format_version, ManifestContent content, DataFileContent file_content,
                    bool with_nan = true) {
  ManifestWriterOptions options;
  options.format_version = format_version;
  options.content = content;
  options.snapshot_id = 777;
  options.sequence_number = format_version == 1 ? std::nullopt : std::optional<int64_t>(9);
  auto writer = ManifestWriter::Create(TestSchema(), TestSpec(), options);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  Written w;
  if (!writer.ok()) return w;
  for (int i = 0; i < 4; ++i) {
    ManifestEntry e;
    e.data_file = MakeFile(i, file_content);
    if (!with_nan && i == 2) e.data_file.partition[6] = Literal::Double(2.5);
    if (i == 3) {
      e.status = ManifestEntryStatus::kExisting;
      e.snapshot_id = 555;
      if (format_version >= 2) {
        e.sequence_number = 4;
        e.file_sequence_number = 5;
      }
    } else if (i == 2) {
      e.status = ManifestEntryStatus::kDeleted;
      e.snapshot_id = 777;
      if (format_version >= 2) {
        e.sequence_number = 6;
        e.file_sequence_number = 6;
      }
    }
    Status st = (*writer)->Add(e);
    EXPECT_TRUE(st.ok()) << st.ToString();
    w.entries.push_back(e);
  }
  auto out = (*writer)->Finish("s3://bucket/t/metadata/m0.avro");
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return w;
  w.bytes = out->bytes;
  w.manifest = out->manifest;
  return w;
}

TEST(ManifestWriterTest, RoundTripsV2DataManifest) {
  Written w = WriteSample(2, ManifestContent::kData, DataFileContent::kData);
  ASSERT_FALSE(w.bytes.empty());
  const ManifestFile& m = w.manifest;
  EXPECT_EQ(m.manifest_path, "s3://bucket/t/metadata/m0.avro");
  EXPECT_EQ(m.manifest_length, static_cast<int64_t>(w.bytes.size()));
  EXPECT_EQ(m.partition_spec_id, 2);
  EXPECT_EQ(m.content, ManifestContent::kData);
  EXPECT_EQ(m.sequence_number, 9);
  EXPECT_EQ(m.min_sequence_number, 4);  // the EXISTING entry
  EXPECT_EQ(m.added_snapshot_id, 777);
  EXPECT_EQ(m.added_files_count, 2);
  EXPECT_EQ(m.existing_files_count, 1);
  EXPECT_EQ(m.deleted_files_count, 1);
  EXPECT_EQ(m.added_rows_count, 100 + 101);
  EXPECT_EQ(m.existing_rows_count, 103);
  EXPECT_EQ(m.deleted_rows_count, 102);

  // Partition summaries over all four files.
  ASSERT_EQ(m.partitions.size(), 7u);
  EXPECT_FALSE(m.partitions[0].contains_null);
  EXPECT_EQ(m.partitions[0].contains_nan, false);
  EXPECT_EQ(m.partitions[0].lower_bound, Literal::Int(-5).ToBinary());
  EXPECT_EQ(m.partitions[0].upper_bound, Literal::Int(25).ToBinary());
  EXPECT_TRUE(m.partitions[1].contains_null);  // i = 0 and 3
  EXPECT_EQ(m.partitions[1].lower_bound, Literal::String("cat-1").ToBinary());
  EXPECT_EQ(m.partitions[1].upper_bound, Literal::String("cat-2").ToBinary());
  EXPECT_EQ(m.partitions[2].lower_bound, Literal::Date(19000).ToBinary());
  EXPECT_EQ(m.partitions[3].lower_bound,
            Literal::Decimal(static_cast<__int128>(-123456789012345) * 2, 20, 4).ToBinary());
  EXPECT_TRUE(m.partitions[5].contains_null);
  EXPECT_EQ(m.partitions[5].upper_bound, Literal::TimestampTz(0).ToBinary());
  EXPECT_EQ(m.partitions[6].contains_nan, true);
  EXPECT_EQ(m.partitions[6].lower_bound, Literal::Double(0).ToBinary());
  EXPECT_EQ(m.partitions[6].upper_bound, Literal::Double(3.75).ToBinary());

  std::unique_ptr<ManifestReader> reader;
  auto entries = ReadEntries(w.bytes, "m0.avro", m, &reader);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(reader->format_version(), 2);
  EXPECT_EQ(reader->Metadata("content"), "data");
  EXPECT_EQ(reader->Metadata("partition-spec-id"), "2");
  EXPECT_EQ(reader->Metadata("schema-id"), "4");
  EXPECT_EQ(reader->Metadata("format-version"), "2");
  auto spec_json = nlohmann::json::parse(*reader->Metadata("partition-spec"), nullptr, false);
  ASSERT_TRUE(spec_json.is_array());
  ASSERT_EQ(spec_json.size(), 7u);
  EXPECT_EQ(spec_json[1]["name"], "category");
  EXPECT_EQ(spec_json[1]["transform"], "identity");
  EXPECT_EQ(spec_json[1]["source-id"], 2);
  EXPECT_EQ(spec_json[1]["field-id"], 1001);
  auto schema_json = nlohmann::json::parse(*reader->Metadata("schema"), nullptr, false);
  ASSERT_TRUE(schema_json.is_object());
  EXPECT_EQ(schema_json["fields"].size(), 7u);

  // The partition type read back from the file.
  auto expected_type = TestSpec()->PartitionType(*TestSchema());
  ASSERT_TRUE(expected_type.ok());
  const auto& got_fields = reader->partition_type()->fields();
  ASSERT_EQ(got_fields.size(), (*expected_type)->fields().size());
  for (size_t i = 0; i < got_fields.size(); ++i) {
    EXPECT_EQ(got_fields[i].id, (*expected_type)->fields()[i].id);
    EXPECT_TRUE(TypeEquals(*got_fields[i].type, *(*expected_type)->fields()[i].type))
        << got_fields[i].type->ToString();
  }

  for (size_t i = 0; i < entries.size(); ++i) {
    const ManifestEntry& got = entries[i];
    const ManifestEntry& want = w.entries[i];
    EXPECT_EQ(got.status, want.status);
    ExpectDataFileEq(got.data_file, want.data_file, 2);
    if (want.status == ManifestEntryStatus::kAdded) {
      EXPECT_EQ(got.snapshot_id, 777);
      EXPECT_EQ(got.sequence_number, 9);  // inherited
      EXPECT_EQ(got.file_sequence_number, 9);
    } else {
      EXPECT_EQ(got.snapshot_id, want.snapshot_id);
      EXPECT_EQ(got.sequence_number, want.sequence_number);
      EXPECT_EQ(got.file_sequence_number, want.file_sequence_number);
    }
  }
}

TEST(ManifestWriterTest, RoundTripsV1DataManifest) {
  Written w = WriteSample(1, ManifestContent::kData, DataFileContent::kData);
  ASSERT_FALSE(w.bytes.empty());
  EXPECT_EQ(w.manifest.sequence_number, 0);
  EXPECT_EQ(w.manifest.min_sequence_number, 0);
  auto file = avro::FileReader::Open(w.bytes, "v1.avro");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Metadata("content"), std::nullopt);
  EXPECT_EQ((*file)->Metadata("format-version"), "1");
  const avro::AvroNode& entry = *(*file)->schema();
  EXPECT_EQ(entry.FieldIndex("sequence_number"), -1);
  // v1 snapshot_id is required.
  EXPECT_EQ(entry.fields[1].type->kind, avro::AvroKind::kLong);
  const avro::AvroNode& df = *entry.fields[2].type;
  EXPECT_EQ(df.FieldIndex("content"), -1);
  EXPECT_EQ(df.FieldIndex("equality_ids"), -1);
  ASSERT_GE(df.FieldIndex("block_size_in_bytes"), 0);
  EXPECT_EQ(df.fields[static_cast<size_t>(df.FieldIndex("block_size_in_bytes"))].field_id, 105);

  std::unique_ptr<ManifestReader> reader;
  auto entries = ReadEntries(w.bytes, "v1.avro", w.manifest, &reader);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(reader->format_version(), 1);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].status, w.entries[i].status);
    EXPECT_EQ(entries[i].sequence_number, 0);
    EXPECT_EQ(entries[i].file_sequence_number, 0);
    EXPECT_EQ(entries[i].snapshot_id, w.entries[i].snapshot_id.value_or(777));
    ExpectDataFileEq(entries[i].data_file, w.entries[i].data_file, 1);
  }
}

TEST(ManifestWriterTest, RoundTripsV2DeleteManifests) {
  for (DataFileContent content :
       {DataFileContent::kEqualityDeletes, DataFileContent::kPositionDeletes}) {
    Written w = WriteSample(2, ManifestContent::kDeletes, content);
    ASSERT_FALSE(w.bytes.empty());
    EXPECT_EQ(w.manifest.content, ManifestContent::kDeletes);
    // Through a manifest list and back, as a scan would see it.
    auto list_bytes = WriteManifestList(2, 777, 776, 9, {w.manifest});
    ASSERT_TRUE(list_bytes.ok());
    auto list = ParseManifestList(*list_bytes, "list.avro");
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u);
    ExpectManifestFileEq((*list)[0], w.manifest);
    std::unique_ptr<ManifestReader> reader;
    auto entries = ReadEntries(w.bytes, "d.avro", (*list)[0], &reader);
    EXPECT_EQ(reader->Metadata("content"), "deletes");
    ASSERT_EQ(entries.size(), 4u);
    for (size_t i = 0; i < entries.size(); ++i) {
      ExpectDataFileEq(entries[i].data_file, w.entries[i].data_file, 2);
    }
    if (content == DataFileContent::kEqualityDeletes) {
      EXPECT_EQ(entries[0].data_file.equality_ids, (std::vector<int>{1, 2}));
    } else {
      EXPECT_EQ(entries[0].data_file.referenced_data_file, "s3://x/data.parquet");
    }
  }
}

TEST(ManifestWriterTest, PendingSequenceNumberIsAssignedByTheList) {
  ManifestWriterOptions options;
  options.snapshot_id = 31;
  auto writer = ManifestWriter::Create(TestSchema(), TestSpec(), options);
  ASSERT_TRUE(writer.ok());
  ManifestEntry e;
  e.data_file = MakeFile(1, DataFileContent::kData);
  ASSERT_TRUE((*writer)->Add(e).ok());
  auto out = (*writer)->Finish("m.avro");
  ASSERT_TRUE(out.ok());
  auto list_bytes = WriteManifestList(2, 31, std::nullopt, 17, {out->manifest});
  ASSERT_TRUE(list_bytes.ok());
  auto list = ParseManifestList(*list_bytes, "list.avro");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)[0].sequence_number, 17);
  EXPECT_EQ((*list)[0].min_sequence_number, 17);
  auto entries = ReadEntries(out->bytes, "m.avro", (*list)[0]);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].sequence_number, 17);
  EXPECT_EQ(entries[0].snapshot_id, 31);
}

TEST(ManifestWriterTest, WritesTheSpecFieldIds) {
  Written w = WriteSample(2, ManifestContent::kData, DataFileContent::kData);
  auto file = avro::FileReader::Open(w.bytes, "ids.avro");
  ASSERT_TRUE(file.ok());
  // Parse the header's avro.schema independently and collect every id attribute.
  auto doc = nlohmann::json::parse(*(*file)->Metadata("avro.schema"), nullptr, false);
  ASSERT_TRUE(doc.is_object());
  std::map<std::string, int> ids;
  std::function<void(const nlohmann::json&, const std::string&)> walk =
      [&](const nlohmann::json& j, const std::string& prefix) {
        if (j.is_array()) {
          for (const auto& x : j) walk(x, prefix);
        } else if (j.is_object()) {
          if (j.contains("field-id"))
            ids[prefix + j["name"].get<std::string>()] = j["field-id"].get<int>();
          if (j.contains("element-id")) ids[prefix + "element"] = j["element-id"].get<int>();
          std::string next =
              j.contains("field-id") ? prefix + j["name"].get<std::string>() + "." : prefix;
          if (j.contains("type")) walk(j["type"], next);
          if (j.contains("items")) walk(j["items"], next);
          if (j.contains("fields")) walk(j["fields"], next);
        }
      };
  walk(doc, "");
  std::map<std::string, int> want = {
      {"status", 0},
      {"snapshot_id", 1},
      {"sequence_number", 3},
      {"file_sequence_number", 4},
      {"data_file", 2},
      {"data_file.content", 134},
      {"data_file.file_path", 100},
      {"data_file.file_format", 101},
      {"data_file.partition", 102},
      {"data_file.record_count", 103},
      {"data_file.file_size_in_bytes", 104},
      {"data_file.column_sizes", 108},
      {"data_file.column_sizes.key", 117},
      {"data_file.column_sizes.value", 118},
      {"data_file.value_counts", 109},
      {"data_file.value_counts.key", 119},
      {"data_file.value_counts.value", 120},
      {"data_file.null_value_counts", 110},
      {"data_file.null_value_counts.key", 121},
      {"data_file.null_value_counts.value", 122},
      {"data_file.nan_value_counts", 137},
      {"data_file.nan_value_counts.key", 138},
      {"data_file.nan_value_counts.value", 139},
      {"data_file.lower_bounds", 125},
      {"data_file.lower_bounds.key", 126},
      {"data_file.lower_bounds.value", 127},
      {"data_file.upper_bounds", 128},
      {"data_file.upper_bounds.key", 129},
      {"data_file.upper_bounds.value", 130},
      {"data_file.key_metadata", 131},
      {"data_file.split_offsets", 132},
      {"data_file.split_offsets.element", 133},
      {"data_file.equality_ids", 135},
      {"data_file.equality_ids.element", 136},
      {"data_file.sort_order_id", 140},
      {"data_file.referenced_data_file", 143},
      {"data_file.partition.id", 1000},
      {"data_file.partition.category", 1001},
      {"data_file.partition.day", 1002},
      {"data_file.partition.price", 1003},
      {"data_file.partition.ts", 1004},
      {"data_file.partition.tstz", 1005},
      {"data_file.partition.amount_x2Ex", 1006},
  };
  EXPECT_EQ(ids, want);
  // Iceberg's Avro type annotations for the partition fields.
  const auto& partition = doc["fields"][4]["type"]["fields"][3]["type"]["fields"];
  EXPECT_EQ(partition[2]["type"][1]["logicalType"], "date");
  EXPECT_EQ(partition[3]["type"][1]["logicalType"], "decimal");
  EXPECT_EQ(partition[3]["type"][1]["precision"], 20);
  EXPECT_EQ(partition[3]["type"][1]["scale"], 4);
  EXPECT_EQ(partition[3]["type"][1]["size"], 9);
  EXPECT_EQ(partition[4]["type"][1]["adjust-to-utc"], false);
  EXPECT_EQ(partition[5]["type"][1]["adjust-to-utc"], true);
}

TEST(ManifestWriterTest, AvrocatReadsWrittenManifest) {
  Written w = WriteSample(2, ManifestContent::kData, DataFileContent::kData, /*with_nan=*/false);
  skade::testing::TempDir dir;
  std::string path = dir.Path("m0.avro");
  skade::testing::WriteFileOrDie(path, w.bytes);
  std::string cmd = "avrocat " + path + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  size_t lines = static_cast<size_t>(std::count(output.begin(), output.end(), '\n'));
  EXPECT_EQ(lines, 4u) << output;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(output.find("file-" + std::to_string(i) + ".parquet"), std::string::npos) << output;
  }
  EXPECT_NE(output.find("\"status\": 0"), std::string::npos) << output;
  EXPECT_NE(output.find("\"record_count\": 103"), std::string::npos) << output;
  EXPECT_NE(output.find("cat-2"), std::string::npos) << output;
}

TEST(ManifestWriterTest, RejectsInvalidEntries) {
  ManifestWriterOptions options;
  auto writer = ManifestWriter::Create(TestSchema(), TestSpec(), options);
  ASSERT_TRUE(writer.ok());
  ManifestEntry e;
  e.data_file = MakeFile(1, DataFileContent::kData);
  e.data_file.partition.pop_back();
  EXPECT_EQ((*writer)->Add(e).code(), StatusCode::kInvalidArgument);
  e.data_file = MakeFile(1, DataFileContent::kData);
  e.data_file.partition[0] = Literal::String("not an int");
  EXPECT_EQ((*writer)->Add(e).code(), StatusCode::kInvalidArgument);
  e.data_file = MakeFile(1, DataFileContent::kEqualityDeletes);  // data manifest
  EXPECT_EQ((*writer)->Add(e).code(), StatusCode::kInvalidArgument);
  e.data_file = MakeFile(1, DataFileContent::kData);
  e.status = ManifestEntryStatus::kExisting;  // no explicit sequence numbers
  EXPECT_EQ((*writer)->Add(e).code(), StatusCode::kInvalidArgument);

  options.format_version = 1;
  options.content = ManifestContent::kDeletes;
  EXPECT_EQ(ManifestWriter::Create(TestSchema(), TestSpec(), options).status().code(),
            StatusCode::kInvalidArgument);
  options.format_version = 7;
  options.content = ManifestContent::kData;
  EXPECT_EQ(ManifestWriter::Create(TestSchema(), TestSpec(), options).status().code(),
            StatusCode::kNotImplemented);
}

TEST(ManifestWriterTest, WritesUnpartitionedManifests) {
  auto spec = std::make_shared<PartitionSpec>(0, std::vector<PartitionField>{});
  ManifestWriterOptions options;
  options.sequence_number = 1;
  auto writer = ManifestWriter::Create(TestSchema(), spec, options);
  ASSERT_TRUE(writer.ok());
  ManifestEntry e;
  e.data_file.file_path = "a.parquet";
  e.data_file.record_count = 5;
  ASSERT_TRUE((*writer)->Add(e).ok());
  auto out = (*writer)->Finish("m.avro");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->manifest.partitions.empty());
  auto entries = ReadEntries(out->bytes, "m.avro", out->manifest);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].data_file.partition.empty());
  EXPECT_EQ(entries[0].data_file.record_count, 5);
  EXPECT_EQ(entries[0].sequence_number, 1);
}

}  // namespace
}  // namespace skade::iceberg
