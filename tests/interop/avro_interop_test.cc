// Manifests and manifest lists written by skade, read back by avsc (an independent Avro
// implementation, tests/interop/avro_dump.mjs): header keys, field-id attributes and values.
#include <cstdio>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_metadata.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using Json = nlohmann::json;

// Runs the Node reader on `path`; fails the test if it can't.
Json ReadWithAvsc(const std::string& path) {
  std::string cmd = "node " + skade::testing::SourcePath("tests/interop/avro_dump.mjs") + " '" + path + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = p ? ::pclose(p) : -1;
  EXPECT_EQ(rc, 0) << out;
  Json j = Json::parse(out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << out;
  return j;
}

// Field ids of a record schema's fields by name, recursively ("data_file.partition.x").
void CollectFieldIds(const Json& type, const std::string& prefix, std::map<std::string, int>* out) {
  if (type.is_array()) {
    for (const auto& branch : type) CollectFieldIds(branch, prefix, out);
    return;
  }
  if (!type.is_object()) return;
  if (type.value("type", "") == "record") {
    for (const auto& f : type["fields"]) {
      std::string name = prefix.empty() ? f["name"].get<std::string>() : prefix + "." + f["name"].get<std::string>();
      if (f.contains("field-id")) (*out)[name] = f["field-id"].get<int>();
      CollectFieldIds(f["type"], name, out);
    }
  } else if (type.value("type", "") == "array") {
    if (type.contains("element-id")) (*out)[prefix + ".element"] = type["element-id"].get<int>();
    CollectFieldIds(type["items"], prefix, out);
  }
}

class AvroInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ParseSchemaJson(R"json({"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"ts","required":false,"type":"timestamptz"},
      {"id":3,"name":"name","required":false,"type":"string"}]})json");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    schema_ = *s;
    spec_ = std::make_shared<PartitionSpec>(
        0, std::vector<PartitionField>{{2, {}, 1000, "ts_day", Transform::Day()},
                                       {1, {}, 1001, "id_bucket", Transform::Bucket(16)},
                                       {3, {}, 1002, "name", Transform::Identity()}});
  }

  ManifestEntry Entry(const std::string& path, int32_t day, int32_t bucket,
                      std::optional<std::string> name, int64_t rows) {
    ManifestEntry e;
    e.status = ManifestEntryStatus::kAdded;
    e.snapshot_id = 3051729675574597004;
    e.data_file.file_path = path;
    e.data_file.partition = {Literal::Int(day), Literal::Int(bucket),
                             name ? std::optional<Literal>(Literal::String(*name)) : std::nullopt};
    e.data_file.record_count = rows;
    e.data_file.file_size_in_bytes = 1000 + rows;
    e.data_file.value_counts = {{1, rows}};
    e.data_file.null_value_counts = {{3, 0}};
    e.data_file.lower_bounds = {{1, Literal::Long(-5).ToBinary()}};
    e.data_file.upper_bounds = {{1, Literal::Long(9007199254740993).ToBinary()}};
    return e;
  }

  SchemaPtr schema_;
  PartitionSpecPtr spec_;
};

TEST_F(AvroInteropTest, AvscReadsOurManifestWithFieldIdsAndHeaderKeys) {
  testing::TempDir tmp;
  ManifestWriterOptions opts;
  opts.format_version = 2;
  opts.snapshot_id = 3051729675574597004;
  opts.sequence_number = 7;
  auto writer = ManifestWriter::Create(schema_, spec_, opts);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  Status added = (*writer)->Add(Entry("s3://b/t/data/a.parquet", 18263, 3, "x", 10));
  ASSERT_TRUE(added.ok()) << added.ToString();
  ASSERT_TRUE((*writer)->Add(Entry("s3://b/t/data/b.parquet", 18264, 15, std::nullopt, 20)).ok());
  std::string path = tmp.Path("m0.avro");
  auto out = (*writer)->Finish(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  testing::WriteFileOrDie(path, out->bytes);

  Json j = ReadWithAvsc(path);
  for (const char* key : {"schema", "partition-spec", "partition-spec-id", "format-version", "content"}) {
    EXPECT_TRUE(j["metadata"].contains(key)) << key;
  }
  EXPECT_EQ(j["metadata"]["format-version"], "2");
  EXPECT_EQ(j["metadata"]["content"], "data");
  EXPECT_EQ(j["metadata"]["partition-spec-id"], "0");
  EXPECT_EQ(j["codec"], "deflate");
  // The Iceberg schema in the header is ours.
  auto header_schema = ParseSchemaJson(j["metadata"]["schema"].get<std::string>());
  ASSERT_TRUE(header_schema.ok());
  EXPECT_EQ((*header_schema)->FindFieldByName("ts")->id, 2);

  std::map<std::string, int> ids;
  CollectFieldIds(j["schema"], "", &ids);
  EXPECT_EQ(ids["status"], 0);
  EXPECT_EQ(ids["snapshot_id"], 1);
  EXPECT_EQ(ids["sequence_number"], 3);
  EXPECT_EQ(ids["file_sequence_number"], 4);
  EXPECT_EQ(ids["data_file"], 2);
  EXPECT_EQ(ids["data_file.content"], 134);
  EXPECT_EQ(ids["data_file.file_path"], 100);
  EXPECT_EQ(ids["data_file.file_format"], 101);
  EXPECT_EQ(ids["data_file.partition"], 102);
  EXPECT_EQ(ids["data_file.partition.ts_day"], 1000);
  EXPECT_EQ(ids["data_file.partition.id_bucket"], 1001);
  EXPECT_EQ(ids["data_file.partition.name"], 1002);
  EXPECT_EQ(ids["data_file.record_count"], 103);
  EXPECT_EQ(ids["data_file.file_size_in_bytes"], 104);
  EXPECT_EQ(ids["data_file.value_counts"], 109);
  EXPECT_EQ(ids["data_file.null_value_counts"], 110);
  EXPECT_EQ(ids["data_file.lower_bounds"], 125);
  EXPECT_EQ(ids["data_file.upper_bounds"], 128);

  ASSERT_EQ(j["records"].size(), 2u);
  const Json& r0 = j["records"][0];
  EXPECT_EQ(r0["status"], 1);
  const Json& df = r0["data_file"];
  EXPECT_EQ(df["file_path"], "s3://b/t/data/a.parquet");
  EXPECT_EQ(df["record_count"], "10");
  // Unions decode as {"type": value} in avsc; accept either form.
  auto unwrap = [](const Json& v) {
    if (v.is_object() && v.size() == 1) return v.begin().value();
    return v;
  };
  EXPECT_EQ(unwrap(df["partition"]["ts_day"]), 18263);
  EXPECT_EQ(unwrap(df["partition"]["id_bucket"]), 3);
  EXPECT_EQ(unwrap(df["partition"]["name"]), "x");
  EXPECT_TRUE(j["records"][1]["data_file"]["partition"]["name"].is_null());
  // Upper bound of id: 9007199254740993 as 8 little-endian bytes.
  Json upper = unwrap(df["upper_bounds"]);
  ASSERT_TRUE(upper.is_array());
  ASSERT_EQ(upper.size(), 1u);
  EXPECT_EQ(upper[0]["key"], 1);
  EXPECT_EQ(upper[0]["value"], "0100000000002000");
}

TEST_F(AvroInteropTest, AvscReadsOurManifestList) {
  testing::TempDir tmp;
  ManifestFile m;
  m.manifest_path = "s3://b/t/metadata/m0.avro";
  m.manifest_length = 4242;
  m.partition_spec_id = 0;
  m.content = ManifestContent::kDeletes;
  m.sequence_number = 7;
  m.min_sequence_number = 3;
  m.added_snapshot_id = 3051729675574597004;
  m.added_files_count = 2;
  m.existing_files_count = 0;
  m.deleted_files_count = 0;
  m.added_rows_count = 30;
  m.existing_rows_count = 0;
  m.deleted_rows_count = 0;
  m.partitions = {FieldSummary{false, std::nullopt, Literal::Date(18263).ToBinary(), Literal::Date(18264).ToBinary()}};
  auto bytes = WriteManifestList(2, 3051729675574597004, 3051729675574597003, 7, {m});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  std::string path = tmp.Path("snap.avro");
  testing::WriteFileOrDie(path, *bytes);

  Json j = ReadWithAvsc(path);
  EXPECT_EQ(j["metadata"]["snapshot-id"], "3051729675574597004");
  EXPECT_EQ(j["metadata"]["parent-snapshot-id"], "3051729675574597003");
  EXPECT_EQ(j["metadata"]["sequence-number"], "7");
  EXPECT_EQ(j["metadata"]["format-version"], "2");
  std::map<std::string, int> ids;
  CollectFieldIds(j["schema"], "", &ids);
  EXPECT_EQ(ids["manifest_path"], 500);
  EXPECT_EQ(ids["manifest_length"], 501);
  EXPECT_EQ(ids["partition_spec_id"], 502);
  EXPECT_EQ(ids["content"], 517);
  EXPECT_EQ(ids["sequence_number"], 515);
  EXPECT_EQ(ids["min_sequence_number"], 516);
  EXPECT_EQ(ids["added_snapshot_id"], 503);
  EXPECT_EQ(ids["added_files_count"], 504);
  EXPECT_EQ(ids["partitions"], 507);
  EXPECT_EQ(ids["partitions.element"], 508);
  ASSERT_EQ(j["records"].size(), 1u);
  const Json& r = j["records"][0];
  EXPECT_EQ(r["manifest_path"], "s3://b/t/metadata/m0.avro");
  EXPECT_EQ(r["manifest_length"], "4242");
  EXPECT_EQ(r["content"], 1);
  EXPECT_EQ(r["added_snapshot_id"], "3051729675574597004");

  // And our reader agrees with what we wrote.
  auto back = ParseManifestList(*bytes, "snap.avro");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].min_sequence_number, 3);
  EXPECT_EQ((*back)[0].partitions[0].upper_bound, Literal::Date(18264).ToBinary());
}

}  // namespace
}  // namespace skade::iceberg
