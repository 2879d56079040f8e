// Table metadata JSON: every fixture document written by Iceberg Java/Rust, Spark and Impala
// parses with the values its source quotes, writes back to JSON that parses to an equal
// model, keeps unknown fields, and rejects invalid documents with clear codes.
#include "skade/iceberg/table_metadata.h"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

namespace fs = std::filesystem;

TableMetadata ParseFixture(const std::string& relative) {
  auto parsed = ParseTableMetadata(testing::ReadFileOrDie(testing::FixturePath(relative)));
  EXPECT_TRUE(parsed.ok()) << relative << ": " << parsed.status().ToString();
  return parsed.ok() ? std::move(parsed).value() : TableMetadata{};
}

// Parse → write → parse → write must be a fixed point (the written JSON is the model).
void ExpectRoundTrip(const TableMetadata& m, const std::string& what) {
  std::string once = TableMetadataToJson(m);
  // The text is the compact form of its own JSON tree, members in their written order.
  auto tree = nlohmann::ordered_json::parse(once, nullptr, false);
  ASSERT_FALSE(tree.is_discarded()) << what << ": not JSON\n" << once;
  EXPECT_EQ(tree.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), once) << what;
  auto again = ParseTableMetadata(once);
  ASSERT_TRUE(again.ok()) << what << ": " << again.status().ToString() << "\n" << once;
  EXPECT_EQ(TableMetadataToJson(*again), once) << what;
  EXPECT_EQ(again->format_version, m.format_version);
  EXPECT_EQ(again->snapshots.size(), m.snapshots.size());
  EXPECT_EQ(again->schemas.size(), m.schemas.size());
  EXPECT_EQ(again->properties, m.properties);
  EXPECT_EQ(again->current_snapshot_id, m.current_snapshot_id);
  EXPECT_EQ(again->refs.size(), m.refs.size());
}

TEST(TableMetadataTest, ParsesV1Valid) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV1Valid.json");
  EXPECT_EQ(m.format_version, 1);
  SchemaPtr s = m.CurrentSchema();
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->fields().size(), 3u);
  EXPECT_EQ(s->fields()[0].name, "x");
  EXPECT_EQ(s->fields()[1].doc, "comment");
  EXPECT_EQ(s->fields()[2].type->id(), TypeId::kLong);
  PartitionSpecPtr spec = m.DefaultSpec();
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->fields().size(), 1u);
  EXPECT_EQ(spec->fields()[0].field_id, 1000);
  EXPECT_EQ(spec->fields()[0].transform.kind(), TransformKind::kIdentity);
  ExpectRoundTrip(m, "v1");
}

TEST(TableMetadataTest, ParsesV2Valid) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  EXPECT_EQ(m.format_version, 2);
  EXPECT_EQ(m.table_uuid, "9c12d441-03fe-4693-9a96-a0705ddf69c1");
  EXPECT_EQ(m.location, "s3://bucket/test/location");
  EXPECT_EQ(m.last_sequence_number, 34);
  ASSERT_EQ(m.schemas.size(), 2u);
  EXPECT_EQ(m.current_schema_id, 1);
  EXPECT_EQ(m.CurrentSchema()->identifier_field_ids(), (std::vector<int>{1, 2}));
  const SortOrder* order = m.SortOrderById(m.default_sort_order_id);
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->order_id, 3);
  ASSERT_EQ(order->fields.size(), 2u);
  EXPECT_EQ(order->fields[0].transform.kind(), TransformKind::kIdentity);
  EXPECT_EQ(order->fields[0].direction, SortDirection::kAsc);
  EXPECT_EQ(order->fields[0].null_order, NullOrder::kNullsFirst);
  EXPECT_EQ(order->fields[1].transform.ToString(), "bucket[4]");
  EXPECT_EQ(order->fields[1].direction, SortDirection::kDesc);
  EXPECT_EQ(order->fields[1].null_order, NullOrder::kNullsLast);
  ASSERT_EQ(m.snapshots.size(), 2u);
  EXPECT_EQ(m.snapshots[0].snapshot_id, 3051729675574597004);
  EXPECT_EQ(m.CurrentSnapshot()->snapshot_id, 3055729675574597004);
  EXPECT_EQ(m.CurrentSnapshot()->parent_snapshot_id, 3051729675574597004);
  ExpectRoundTrip(m, "v2");
}

TEST(TableMetadataTest, ParsesV2MinimalWithoutSnapshots) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2ValidMinimal.json");
  EXPECT_TRUE(m.snapshots.empty());
  EXPECT_FALSE(m.current_snapshot_id.has_value());
  EXPECT_EQ(m.CurrentSnapshot(), nullptr);
  ExpectRoundTrip(m, "v2 minimal");
}

TEST(TableMetadataTest, ParsesV3AndKeepsWhatItDoesNotActOn) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV3ValidMinimal.json");
  EXPECT_EQ(m.format_version, 3);
  EXPECT_EQ(m.next_row_id, 0);
  const NestedField& x = m.CurrentSchema()->fields()[0];
  EXPECT_EQ(x.initial_default_json, "1");
  EXPECT_EQ(x.write_default_json, "1");
  ExpectRoundTrip(m, "v3 minimal");

  TableMetadata enc = ParseFixture("metadata/table/TableMetadataV3ValidEncryption.json");
  EXPECT_NE(enc.encryption_keys_json.find("5b29941b-b3b4-4d57-8758-a9d1bf340b39"), std::string::npos);
  bool has_key_id = false;
  for (const auto& s : enc.snapshots) has_key_id = has_key_id || s.key_id.has_value();
  EXPECT_TRUE(has_key_id);
  ExpectRoundTrip(enc, "v3 encryption");
  std::string written = TableMetadataToJson(enc);
  EXPECT_NE(written.find("1fb95f04-7f98-4b1f-a08f-e810cfb907ff"), std::string::npos);
}

TEST(TableMetadataTest, CarriesStatisticsFilesThrough) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataStatisticsFiles.json");
  EXPECT_NE(m.statistics_json.find("s3://a/b/stats.puffin"), std::string::npos);
  EXPECT_NE(TableMetadataToJson(m).find("s3://a/b/stats.puffin"), std::string::npos);
  ExpectRoundTrip(m, "statistics");
  TableMetadata p = ParseFixture("metadata/table/TableMetadataPartitionStatisticsFiles.json");
  EXPECT_NE(TableMetadataToJson(p).find("s3://a/b/partition-stats.parquet"), std::string::npos);
  ExpectRoundTrip(p, "partition statistics");
}

TEST(TableMetadataTest, EveryFixtureTableVersionParsesAndRoundTrips) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  int count = 0;
  for (const auto& e : fs::recursive_directory_iterator(testing::FixturePath("iceberg"))) {
    std::string name = e.path().filename().string();
    if (name.size() < 14 || name.substr(name.size() - 14) != ".metadata.json") continue;
    auto parsed = ParseTableMetadata(testing::ReadFileOrDie(e.path().string()));
    ASSERT_TRUE(parsed.ok()) << e.path() << ": " << parsed.status().ToString();
    ExpectRoundTrip(*parsed, e.path().string());
    ++count;
  }
  EXPECT_GE(count, 20);
}

TEST(TableMetadataTest, UnknownFieldsSurviveRoundTrip) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::string json = testing::ReadFileOrDie(testing::FixturePath("metadata/table/TableMetadataV2Valid.json"));
  // Add an unknown top-level member and an unknown snapshot member.
  size_t brace = json.find('{');
  json.insert(brace + 1, "\"x-vendor-extension\": {\"a\": [1, 2, 3]},");
  size_t snap = json.find("\"snapshot-id\"");
  json.insert(snap, "\"x-snapshot-note\": \"kept\", ");
  auto m = ParseTableMetadata(json);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->unknown.size(), 1u);
  EXPECT_EQ(m->unknown[0].first, "x-vendor-extension");
  std::string out = TableMetadataToJson(*m);
  EXPECT_NE(out.find("x-vendor-extension"), std::string::npos);
  EXPECT_NE(out.find("x-snapshot-note"), std::string::npos);
  ExpectRoundTrip(*m, "unknown fields");
}

// Strings that need escaping, text beyond ASCII, invalid UTF-8, a summary key given twice and
// unknown snapshot members: written as the JSON library would, and read back the same.
TEST(TableMetadataTest, WritesEscapedAndUnusualTextExactly) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  ASSERT_FALSE(m.snapshots.empty());
  // Snapshots are immutable in their list: the changed copy replaces the last one.
  Snapshot s = m.snapshots.back();
  m.snapshots.EraseIf([&](const Snapshot& x) { return x.snapshot_id == s.snapshot_id; });
  s.summary.emplace_back("quote\"back\\slash", "tab\tnew\nline\x01ctl");
  s.summary.emplace_back("unicode", "bl\xc3\xa5" "b\xc3\xa6r \xe2\x82\xac");
  s.summary.emplace_back("broken", std::string("a\xff\xfe", 3));
  s.summary.emplace_back("operation", "overwrite");  // repeated: the last value, the first place
  s.manifest_list = "s3://bucket/t/metadata/snap \"1\".avro";
  s.unknown.emplace_back("x-note", "{\"k\":[1,2]}");
  m.properties["comment"] = "line1\nline2 \"quoted\" \xc3\xa9";
  m.snapshots.push_back(s);
  m.location = "/data/\xc3\xa5r/t";
  ExpectRoundTrip(m, "unusual text");
  auto back = ParseTableMetadata(TableMetadataToJson(m));
  ASSERT_TRUE(back.ok());
  const Snapshot& b = back->snapshots.back();
  EXPECT_EQ(b.SummaryValue("quote\"back\\slash"), "tab\tnew\nline\x01ctl");
  EXPECT_EQ(b.SummaryValue("unicode"), "bl\xc3\xa5" "b\xc3\xa6r \xe2\x82\xac");
  EXPECT_EQ(b.SummaryValue("broken"), "a\xef\xbf\xbd\xef\xbf\xbd");  // each invalid byte replaced
  EXPECT_EQ(b.operation(), "overwrite");
  EXPECT_EQ(b.summary.front().first, "operation");
  EXPECT_EQ(b.manifest_list, s.manifest_list);
  EXPECT_EQ(back->properties.at("comment"), m.properties.at("comment"));
  EXPECT_EQ(back->location, m.location);
  EXPECT_EQ(SnapshotToJson(b, 2).find("\"x-note\":{\"k\":[1,2]}") != std::string::npos, true);
}

TEST(TableMetadataTest, RejectsInvalidDocuments) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto unsupported = ParseTableMetadata(testing::ReadFileOrDie(
      testing::FixturePath("metadata/table-invalid/TableMetadataUnsupportedVersion.json")));
  EXPECT_EQ(unsupported.status().code(), StatusCode::kNotImplemented);
  auto no_schema = ParseTableMetadata(testing::ReadFileOrDie(
      testing::FixturePath("metadata/table-invalid/TableMetadataV2CurrentSchemaNotFound.json")));
  EXPECT_EQ(no_schema.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_schema.status().message().find("current-schema-id=2"), std::string::npos);
  auto missing = ParseTableMetadata(testing::ReadFileOrDie(
      testing::FixturePath("metadata/table-invalid/TableMetadataV2MissingSchemas.json")));
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("schemas"), std::string::npos);

  EXPECT_EQ(ParseTableMetadata("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTableMetadata("[]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTableMetadata("{\"format-version\": \"two\"}").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TableMetadataTest, TruncatedOrGarbledJsonNeverCrashes) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  std::string json = testing::ReadFileOrDie(testing::FixturePath("metadata/table/TableMetadataV2Valid.json"));
  for (size_t cut = 0; cut < json.size(); cut += 3) {
    auto r = ParseTableMetadata(json.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  // Wrong types in every position a value appears: flip digits to strings and back.
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] != ':') continue;
    std::string bad = json;
    bad.insert(i + 1, " \"bogus\", \"x\":");
    (void)ParseTableMetadata(bad);  // must return, ok or not, without crashing
  }
}

TEST(TableMetadataTest, SnapshotSelectionHelpers) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("iceberg/equality_deletes_mytable/metadata/v7.metadata.json");
  auto main = m.SnapshotForRef("main");
  ASSERT_TRUE(main.ok());
  EXPECT_EQ((*main)->snapshot_id, 1916084761853986166);
  EXPECT_EQ(m.SnapshotForRef("nope").status().code(), StatusCode::kNotFound);
  auto at = m.SnapshotAsOf(1758879500000);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ((*at)->snapshot_id, 842401149381792626);
  EXPECT_EQ(m.SnapshotAsOf(1000).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.CurrentSnapshot()->operation(), "delete");
  EXPECT_EQ(m.CurrentSnapshot()->SummaryValue("total-records"), "6");
}

TEST(TableMetadataTest, SchemaAndTypeJsonRoundTrip) {
  std::string json = R"json({"type":"struct","schema-id":7,"identifier-field-ids":[1],"fields":[
    {"id":1,"name":"id","required":true,"type":"long"},
    {"id":2,"name":"price","required":false,"type":"decimal(9, 2)"},
    {"id":3,"name":"tags","required":false,"type":{"type":"list","element-id":4,"element":"string","element-required":false}},
    {"id":5,"name":"attrs","required":false,"type":{"type":"map","key-id":6,"key":"string","value-id":7,"value":{"type":"struct","fields":[{"id":8,"name":"v","required":false,"type":"fixed[16]"}]},"value-required":true}},
    {"id":9,"name":"ts","required":false,"type":"timestamptz_ns"}]})json";
  auto s = ParseSchemaJson(json);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->schema_id(), 7);
  EXPECT_EQ((*s)->FindFieldByName("attrs.value.v")->id, 8);
  EXPECT_EQ((*s)->FindField(2)->type->ToString(), "decimal(9,2)");
  auto again = ParseSchemaJson(SchemaToJson(**s));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(TypeEquals(*(*again)->as_struct(), *(*s)->as_struct()));
  EXPECT_EQ(SchemaToJson(**again), SchemaToJson(**s));
  // Duplicate ids and bad identifier fields are rejected.
  EXPECT_FALSE(ParseSchemaJson(R"({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"},{"id":1,"name":"b","required":true,"type":"int"}]})").ok());
  EXPECT_FALSE(ParseSchemaJson(R"({"type":"struct","identifier-field-ids":[2],"fields":[{"id":1,"name":"a","required":true,"type":"int"}]})").ok());
  EXPECT_FALSE(ParseSchemaJson(R"({"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"varchar"}]})").ok());
}

// The same metadata with its own, never-rendered copy of every snapshot.
TableMetadata WithFreshSnapshots(const TableMetadata& m) {
  TableMetadata fresh = m;
  fresh.snapshots.clear();
  for (const Snapshot& s : m.snapshots) fresh.snapshots.push_back(s);
  return fresh;
}

// Metadata versions share their snapshots (a commit copies pointers, not its history), and a
// snapshot's text is rendered once and reused by every version that keeps it.
TEST(TableMetadataTest, CopiesShareSnapshotsAndTheirRenderedText) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  ASSERT_EQ(m.snapshots.size(), 2u);
  const std::string json = TableMetadataToJson(m);
  TableMetadata next = m;
  EXPECT_EQ(&next.snapshots[0], &m.snapshots[0]);
  EXPECT_EQ(next.snapshots.Json(1, 2).data(), m.snapshots.Json(1, 2).data());
  EXPECT_EQ(next.snapshots.Json(1, 2), SnapshotToJson(m.snapshots[1], 2));
  EXPECT_EQ(TableMetadataToJson(next), json);

  // Changing a copy's list leaves the original's alone.
  Snapshot added = m.snapshots.back();
  added.snapshot_id = 42;
  added.parent_snapshot_id = m.snapshots.back().snapshot_id;
  next.snapshots.push_back(added);
  size_t removed = next.snapshots.EraseIf([&](const Snapshot& s) { return s.snapshot_id == m.snapshots[0].snapshot_id; });
  EXPECT_EQ(removed, 1u);
  ASSERT_EQ(next.snapshots.size(), 2u);
  EXPECT_EQ(next.snapshots.back().snapshot_id, 42);
  EXPECT_EQ(m.snapshots.size(), 2u);
  EXPECT_EQ(TableMetadataToJson(m), json);
  EXPECT_EQ(TableMetadataToJson(next), TableMetadataToJson(WithFreshSnapshots(next)));
}

// A snapshot keeps a rendering per format version: after an upgrade (or in a v1 document) the
// snapshots are written in that version's layout, never the one rendered first.
TEST(TableMetadataTest, RendersSharedSnapshotsInEachFormatVersionsLayout) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  ASSERT_FALSE(m.snapshots.empty());
  TableMetadataToJson(m);  // renders the v2 text
  for (int version : {1, 3, 2}) {
    TableMetadata other = m;
    other.format_version = version;
    EXPECT_EQ(TableMetadataToJson(other), TableMetadataToJson(WithFreshSnapshots(other))) << "v" << version;
    EXPECT_EQ(other.snapshots.Json(0, version).find("\"sequence-number\"") != std::string_view::npos, version >= 2)
        << "v" << version;
  }
}

// Threads writing metadata that share never-rendered snapshots all write the same bytes.
TEST(TableMetadataTest, SharedSnapshotsRenderOnceUnderConcurrentWriters) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata base = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  ASSERT_FALSE(base.snapshots.empty());
  for (int i = 0; i < 200; ++i) {
    Snapshot s = base.snapshots.back();
    s.parent_snapshot_id = s.snapshot_id;
    s.snapshot_id += 1000 + i;
    s.summary.emplace_back("n", std::to_string(i));
    base.snapshots.push_back(s);
  }
  const std::string expected = TableMetadataToJson(WithFreshSnapshots(base));
  const TableMetadata shared = WithFreshSnapshots(base);
  constexpr int kThreads = 8;
  std::vector<std::string> written(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TableMetadata own = shared;  // another metadata version holding the same snapshots
      written[t] = TableMetadataToJson(own);
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(written[t], expected) << "thread " << t;
}

}  // namespace
}  // namespace skade::iceberg
