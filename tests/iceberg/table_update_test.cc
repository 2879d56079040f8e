// Commit requirements and metadata updates: every requirement passing and failing, updates
// applied alone and as a realistic commit sequence (checked field by field and through the
// metadata JSON), new-table metadata, metadata file names, and the REST JSON shapes.
#include "skade/iceberg/table_update.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using Kind = TableUpdate::Kind;

constexpr int64_t kS1 = 1001;
constexpr int64_t kS2 = 1002;
constexpr int64_t kS3 = 1003;

NestedField Field(int id, std::string name, TypeId type, bool required = false) {
  NestedField f;
  f.id = id;
  f.name = std::move(name);
  f.required = required;
  f.type = Type::Primitive(type);
  return f;
}

SchemaPtr BaseSchema(int schema_id = 0) {
  return std::make_shared<const Schema>(
      schema_id, std::vector<NestedField>{Field(1, "id", TypeId::kLong, true),
                                          Field(2, "data", TypeId::kString)});
}

SchemaPtr WiderSchema(int schema_id) {
  return std::make_shared<const Schema>(
      schema_id, std::vector<NestedField>{Field(1, "id", TypeId::kLong, true),
                                          Field(2, "data", TypeId::kString),
                                          Field(3, "ts", TypeId::kTimestampTz)});
}

PartitionSpecPtr BucketSpec(int spec_id, int field_id = 1000) {
  PartitionField f;
  f.source_id = 1;
  f.field_id = field_id;
  f.name = "id_bucket";
  f.transform = Transform::Bucket(16);
  return std::make_shared<const PartitionSpec>(spec_id, std::vector<PartitionField>{f});
}

SortOrder DataOrder(int order_id) {
  SortOrder o;
  o.order_id = order_id;
  SortField f;
  f.source_id = 2;
  f.direction = SortDirection::kDesc;
  f.null_order = NullOrder::kNullsLast;
  o.fields.push_back(f);
  return o;
}

Snapshot MakeSnapshot(int64_t id, std::optional<int64_t> parent, int64_t sequence_number,
                      int64_t timestamp_ms) {
  Snapshot s;
  s.snapshot_id = id;
  s.parent_snapshot_id = parent;
  s.sequence_number = sequence_number;
  s.timestamp_ms = timestamp_ms;
  s.manifest_list = "s3://b/t/metadata/snap-" + std::to_string(id) + ".avro";
  s.summary = {{"operation", "append"}, {"added-records", "10"}};
  return s;
}

TableMetadata NewTable() {
  auto m =
      NewTableMetadata(BaseSchema(), nullptr, SortOrder{}, "s3://b/t", {{"owner", "ann"}}, 1000);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : TableMetadata{};
}

// A new table with snapshot kS1 (sequence number 1) on main.
TableMetadata TableWithSnapshot() {
  auto m = ApplyUpdates(NewTable(), "",
                        {TableUpdate::AddSnapshot(MakeSnapshot(kS1, std::nullopt, 1, 2000)),
                         TableUpdate::SetBranch("main", kS1)},
                        2001);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : TableMetadata{};
}

TableMetadata ParseFixture(const std::string& relative) {
  auto parsed = ParseTableMetadata(testing::ReadFileOrDie(testing::FixturePath(relative)));
  EXPECT_TRUE(parsed.ok()) << relative << ": " << parsed.status().ToString();
  return parsed.ok() ? std::move(parsed).value() : TableMetadata{};
}

StatusCode ApplyCode(const TableMetadata& base, std::vector<TableUpdate> updates) {
  return ApplyUpdates(base, "", updates, 5000).status().code();
}

// ---------------------------------------------------------------------------------------
// TableRequirement

TEST(TableRequirementTest, AssertCreatePassesOnlyWithoutTable) {
  TableMetadata m = NewTable();
  EXPECT_TRUE(TableRequirement::AssertCreate().Check(nullptr).ok());
  EXPECT_EQ(TableRequirement::AssertCreate().Check(&m).code(), StatusCode::kConflict);
}

TEST(TableRequirementTest, OtherRequirementsOnMissingTableAreNotFound) {
  EXPECT_EQ(TableRequirement::AssertTableUuid("x").Check(nullptr).code(), StatusCode::kNotFound);
  EXPECT_EQ(TableRequirement::AssertRefSnapshotId("main", std::nullopt).Check(nullptr).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(TableRequirement::AssertCurrentSchemaId(0).Check(nullptr).code(),
            StatusCode::kNotFound);
}

TEST(TableRequirementTest, AssertTableUuid) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  EXPECT_TRUE(
      TableRequirement::AssertTableUuid("9c12d441-03fe-4693-9a96-a0705ddf69c1").Check(&m).ok());
  // UUID text compares case-insensitively.
  EXPECT_TRUE(
      TableRequirement::AssertTableUuid("9C12D441-03FE-4693-9A96-A0705DDF69C1").Check(&m).ok());
  EXPECT_EQ(
      TableRequirement::AssertTableUuid("9c12d441-03fe-4693-9a96-a0705ddf69c2").Check(&m).code(),
      StatusCode::kConflict);
}

TEST(TableRequirementTest, AssertRefSnapshotId) {
  TableMetadata m = TableWithSnapshot();
  EXPECT_TRUE(TableRequirement::AssertRefSnapshotId("main", kS1).Check(&m).ok());
  EXPECT_EQ(TableRequirement::AssertRefSnapshotId("main", kS2).Check(&m).code(),
            StatusCode::kConflict);
  // Null snapshot id: the ref must not exist.
  EXPECT_TRUE(TableRequirement::AssertRefSnapshotId("dev", std::nullopt).Check(&m).ok());
  EXPECT_EQ(TableRequirement::AssertRefSnapshotId("main", std::nullopt).Check(&m).code(),
            StatusCode::kConflict);
  // A missing ref fails a non-null expectation.
  EXPECT_EQ(TableRequirement::AssertRefSnapshotId("dev", kS1).Check(&m).code(),
            StatusCode::kConflict);
  TableMetadata empty = NewTable();
  EXPECT_TRUE(TableRequirement::AssertRefSnapshotId("main", std::nullopt).Check(&empty).ok());
}

TEST(TableRequirementTest, IdRequirementsPassAndFail) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata m = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  struct Case {
    TableRequirement (*make)(int);
    int actual;
  };
  const Case cases[] = {
      {&TableRequirement::AssertLastAssignedFieldId, 3},
      {&TableRequirement::AssertCurrentSchemaId, 1},
      {&TableRequirement::AssertLastAssignedPartitionId, 1000},
      {&TableRequirement::AssertDefaultSpecId, 0},
      {&TableRequirement::AssertDefaultSortOrderId, 3},
  };
  for (const Case& c : cases) {
    TableRequirement ok = c.make(c.actual);
    EXPECT_TRUE(ok.Check(&m).ok()) << TableRequirementToJson(ok);
    TableRequirement bad = c.make(c.actual + 1);
    EXPECT_EQ(bad.Check(&m).code(), StatusCode::kConflict) << TableRequirementToJson(bad);
  }
}

TEST(TableRequirementTest, JsonRoundTripsEveryKind) {
  const std::vector<TableRequirement> all = {
      TableRequirement::AssertCreate(),
      TableRequirement::AssertTableUuid("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
      TableRequirement::AssertRefSnapshotId("main", 3055729675574597004),
      TableRequirement::AssertRefSnapshotId("dev", std::nullopt),
      TableRequirement::AssertLastAssignedFieldId(7),
      TableRequirement::AssertCurrentSchemaId(2),
      TableRequirement::AssertLastAssignedPartitionId(1003),
      TableRequirement::AssertDefaultSpecId(1),
      TableRequirement::AssertDefaultSortOrderId(4),
  };
  for (const TableRequirement& r : all) {
    std::string json = TableRequirementToJson(r);
    auto parsed = ParseTableRequirement(json);
    ASSERT_TRUE(parsed.ok()) << json << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->kind, r.kind) << json;
    EXPECT_EQ(parsed->uuid, r.uuid) << json;
    EXPECT_EQ(parsed->ref, r.ref) << json;
    EXPECT_EQ(parsed->snapshot_id, r.snapshot_id) << json;
    EXPECT_EQ(parsed->value, r.value) << json;
    EXPECT_EQ(TableRequirementToJson(*parsed), json);
  }
}

TEST(TableRequirementTest, WritesRestShapes) {
  EXPECT_EQ(TableRequirementToJson(TableRequirement::AssertCreate()),
            R"({"type":"assert-create"})");
  EXPECT_EQ(TableRequirementToJson(TableRequirement::AssertRefSnapshotId("main", 5)),
            R"({"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":5})");
  // snapshot-id is required but nullable.
  EXPECT_EQ(TableRequirementToJson(TableRequirement::AssertRefSnapshotId("b", std::nullopt)),
            R"({"type":"assert-ref-snapshot-id","ref":"b","snapshot-id":null})");
  EXPECT_EQ(TableRequirementToJson(TableRequirement::AssertDefaultSortOrderId(0)),
            R"({"type":"assert-default-sort-order-id","default-sort-order-id":0})");
}

TEST(TableRequirementTest, ParsesRestShapes) {
  struct Case {
    const char* json;
    TableRequirement::Kind kind;
    int64_t value;
  };
  const Case cases[] = {
      {R"({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 12})",
       TableRequirement::Kind::kAssertLastAssignedFieldId, 12},
      {R"({"type": "assert-current-schema-id", "current-schema-id": 3})",
       TableRequirement::Kind::kAssertCurrentSchemaId, 3},
      {R"({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1001})",
       TableRequirement::Kind::kAssertLastAssignedPartitionId, 1001},
      {R"({"type": "assert-default-spec-id", "default-spec-id": 2})",
       TableRequirement::Kind::kAssertDefaultSpecId, 2},
      {R"({"type": "assert-default-sort-order-id", "default-sort-order-id": 1})",
       TableRequirement::Kind::kAssertDefaultSortOrderId, 1},
  };
  for (const Case& c : cases) {
    auto r = ParseTableRequirement(c.json);
    ASSERT_TRUE(r.ok()) << c.json << ": " << r.status().ToString();
    EXPECT_EQ(r->kind, c.kind);
    EXPECT_EQ(r->value, c.value);
  }
  auto uuid = ParseTableRequirement(R"({"type": "assert-table-uuid", "uuid": "abc"})");
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(uuid->uuid, "abc");
  auto ref = ParseTableRequirement(
      R"({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3055729675574597004})");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->ref, "main");
  EXPECT_EQ(ref->snapshot_id, 3055729675574597004);
  auto null_ref = ParseTableRequirement(
      R"({"type": "assert-ref-snapshot-id", "ref": "b", "snapshot-id": null})");
  ASSERT_TRUE(null_ref.ok());
  EXPECT_FALSE(null_ref->snapshot_id.has_value());
}

TEST(TableRequirementTest, RejectsBadJson) {
  const char* bad[] = {
      "not json",
      "[]",
      R"({})",
      R"({"type": 3})",
      R"({"type": "assert-nothing"})",
      R"({"type": "assert-view-uuid", "uuid": "x"})",
      R"({"type": "assert-table-uuid"})",
      R"({"type": "assert-table-uuid", "uuid": 5})",
      R"({"type": "assert-ref-snapshot-id", "snapshot-id": 1})",
      R"({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": "1"})",
      R"({"type": "assert-current-schema-id"})",
      R"({"type": "assert-default-spec-id", "default-spec-id": 1.5})",
      R"({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99999999999})",
  };
  for (const char* json : bad) {
    EXPECT_EQ(ParseTableRequirement(json).status().code(), StatusCode::kInvalidArgument) << json;
  }
}

// ---------------------------------------------------------------------------------------
// NewTableMetadata

TEST(TableUpdateTest, NewTableMetadataDefaults) {
  TableMetadata m = NewTable();
  EXPECT_EQ(m.format_version, 2);
  EXPECT_EQ(m.table_uuid.size(), 36u);
  EXPECT_EQ(m.location, "s3://b/t");
  EXPECT_EQ(m.last_sequence_number, 0);
  EXPECT_EQ(m.last_updated_ms, 1000);
  EXPECT_EQ(m.last_column_id, 2);
  ASSERT_EQ(m.schemas.size(), 1u);
  EXPECT_EQ(m.schemas[0]->schema_id(), 0);
  EXPECT_EQ(m.current_schema_id, 0);
  ASSERT_EQ(m.partition_specs.size(), 1u);
  EXPECT_EQ(m.partition_specs[0]->spec_id(), 0);
  EXPECT_TRUE(m.partition_specs[0]->fields().empty());
  EXPECT_EQ(m.default_spec_id, 0);
  EXPECT_EQ(m.last_partition_id, 999);
  ASSERT_EQ(m.sort_orders.size(), 1u);
  EXPECT_EQ(m.sort_orders[0].order_id, 0);
  EXPECT_TRUE(m.sort_orders[0].fields.empty());
  EXPECT_EQ(m.default_sort_order_id, 0);
  EXPECT_EQ(m.properties, (std::map<std::string, std::string>{{"owner", "ann"}}));
  EXPECT_FALSE(m.current_snapshot_id.has_value());
  EXPECT_TRUE(m.snapshots.empty());
  EXPECT_TRUE(m.refs.empty());
  EXPECT_TRUE(m.snapshot_log.empty());
  EXPECT_TRUE(m.metadata_log.empty());
  EXPECT_FALSE(m.next_row_id.has_value());
  // Two tables never share a UUID.
  EXPECT_NE(NewTable().table_uuid, m.table_uuid);

  auto again = ParseTableMetadata(TableMetadataToJson(m));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(TableMetadataToJson(*again), TableMetadataToJson(m));
}

TEST(TableUpdateTest, NewTableMetadataKeepsSpecAndOrder) {
  auto m = NewTableMetadata(BaseSchema(5), BucketSpec(3, 1004), DataOrder(7), "/w/t", {}, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->schemas[0]->schema_id(), 0);
  EXPECT_EQ(m->schemas[0]->fields().size(), 2u);
  EXPECT_EQ(m->partition_specs[0]->spec_id(), 0);
  EXPECT_EQ(m->partition_specs[0]->fields()[0].field_id, 1004);
  EXPECT_EQ(m->last_partition_id, 1004);
  ASSERT_EQ(m->sort_orders.size(), 1u);
  EXPECT_EQ(m->sort_orders[0].order_id, 7);
  EXPECT_EQ(m->default_sort_order_id, 7);

  // A sorted order may not take the reserved id 0.
  auto zero = NewTableMetadata(BaseSchema(), nullptr, DataOrder(0), "/w/t", {}, 1);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->default_sort_order_id, 1);
}

TEST(TableUpdateTest, NewTableMetadataFormatVersionProperty) {
  auto v3 = NewTableMetadata(BaseSchema(), nullptr, {}, "/w/t", {{"format-version", "3"}}, 1);
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  EXPECT_EQ(v3->format_version, 3);
  EXPECT_EQ(v3->next_row_id, 0);
  EXPECT_TRUE(v3->properties.empty());
  EXPECT_EQ(NewTableMetadata(BaseSchema(), nullptr, {}, "/w/t", {{"format-version", "9"}}, 1)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, NewTableMetadataRejectsBadInput) {
  EXPECT_EQ(NewTableMetadata(nullptr, nullptr, {}, "/w/t", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewTableMetadata(BaseSchema(), nullptr, {}, "", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  PartitionField f;
  f.source_id = 42;
  f.field_id = 1000;
  f.name = "nope";
  auto spec = std::make_shared<const PartitionSpec>(0, std::vector<PartitionField>{f});
  EXPECT_EQ(NewTableMetadata(BaseSchema(), spec, {}, "/w/t", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  SortOrder order = DataOrder(1);
  order.fields[0].source_id = 42;
  EXPECT_EQ(NewTableMetadata(BaseSchema(), nullptr, order, "/w/t", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------
// ApplyUpdates

TEST(TableUpdateTest, AppliesRealisticCommitSequence) {
  const TableMetadata created = NewTable();
  const std::string loc0 = "s3://b/t/metadata/00000-a.metadata.json";
  const std::string loc1 = "s3://b/t/metadata/00001-b.metadata.json";
  const std::string loc2 = "s3://b/t/metadata/00002-c.metadata.json";

  // Commit 1: append kS1 and move main.
  auto r1 = ApplyUpdates(created, loc0,
                         {TableUpdate::AddSnapshot(MakeSnapshot(kS1, std::nullopt, 1, 2000)),
                          TableUpdate::SetBranch("main", kS1)},
                         2001);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  const TableMetadata& m1 = *r1;
  EXPECT_EQ(m1.table_uuid, created.table_uuid);
  EXPECT_EQ(m1.last_updated_ms, 2001);
  EXPECT_EQ(m1.last_sequence_number, 1);
  EXPECT_EQ(m1.current_snapshot_id, kS1);
  ASSERT_EQ(m1.refs.count("main"), 1u);
  EXPECT_EQ(m1.refs.at("main").snapshot_id, kS1);
  EXPECT_EQ(m1.refs.at("main").type, RefType::kBranch);
  ASSERT_EQ(m1.snapshot_log.size(), 1u);
  EXPECT_EQ(m1.snapshot_log[0].snapshot_id, kS1);
  EXPECT_EQ(m1.snapshot_log[0].timestamp_ms, 2000);  // the snapshot's own time
  ASSERT_EQ(m1.metadata_log.size(), 1u);
  EXPECT_EQ(m1.metadata_log[0].metadata_file, loc0);
  EXPECT_EQ(m1.metadata_log[0].timestamp_ms, 1000);  // base's last-updated-ms

  // Commit 2: evolve the schema and the spec, append kS2 with the new schema, tag kS1.
  Snapshot s2 = MakeSnapshot(kS2, kS1, 2, 3000);
  s2.schema_id = 1;
  auto r2 = ApplyUpdates(m1, loc1,
                         {TableUpdate::AddSchema(WiderSchema(0)), TableUpdate::SetCurrentSchema(-1),
                          TableUpdate::AddSpec(BucketSpec(-1)), TableUpdate::SetDefaultSpec(-1),
                          TableUpdate::AddSortOrder(DataOrder(0)),
                          TableUpdate::SetDefaultSortOrder(-1), TableUpdate::AddSnapshot(s2),
                          TableUpdate::SetBranch("main", kS2), TableUpdate::SetTag("v1", kS1)},
                         3001);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  const TableMetadata& m2 = *r2;
  ASSERT_EQ(m2.schemas.size(), 2u);
  EXPECT_EQ(m2.schemas[1]->schema_id(), 1);  // 0 was taken
  EXPECT_EQ(m2.current_schema_id, 1);
  EXPECT_EQ(m2.last_column_id, 3);
  ASSERT_EQ(m2.partition_specs.size(), 2u);
  EXPECT_EQ(m2.partition_specs[1]->spec_id(), 1);
  EXPECT_EQ(m2.default_spec_id, 1);
  EXPECT_EQ(m2.last_partition_id, 1000);
  ASSERT_EQ(m2.sort_orders.size(), 2u);
  EXPECT_EQ(m2.sort_orders[1].order_id, 1);
  EXPECT_EQ(m2.default_sort_order_id, 1);
  EXPECT_EQ(m2.last_sequence_number, 2);
  EXPECT_EQ(m2.current_snapshot_id, kS2);
  ASSERT_EQ(m2.snapshots.size(), 2u);
  EXPECT_EQ(m2.snapshots[1].schema_id, 1);
  ASSERT_EQ(m2.refs.size(), 2u);
  EXPECT_EQ(m2.refs.at("main").snapshot_id, kS2);
  EXPECT_EQ(m2.refs.at("v1").snapshot_id, kS1);
  EXPECT_EQ(m2.refs.at("v1").type, RefType::kTag);
  ASSERT_EQ(m2.snapshot_log.size(), 2u);
  EXPECT_EQ(m2.snapshot_log[1].snapshot_id, kS2);
  EXPECT_EQ(m2.snapshot_log[1].timestamp_ms, 3000);
  ASSERT_EQ(m2.metadata_log.size(), 2u);
  EXPECT_EQ(m2.metadata_log[1].metadata_file, loc1);
  EXPECT_EQ(m2.metadata_log[1].timestamp_ms, 2001);

  // Commit 3: expire kS1 (drops its tag and its snapshot-log history) and edit properties.
  auto r3 = ApplyUpdates(m2, loc2,
                         {TableUpdate::RemoveSnapshots({kS1}),
                          TableUpdate::SetProperties({{"write.format.default", "parquet"}}),
                          TableUpdate::RemoveProperties({"owner", "absent"})},
                         4000);
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  const TableMetadata& m3 = *r3;
  ASSERT_EQ(m3.snapshots.size(), 1u);
  EXPECT_EQ(m3.snapshots[0].snapshot_id, kS2);
  EXPECT_EQ(m3.refs.size(), 1u);
  EXPECT_EQ(m3.refs.count("v1"), 0u);
  EXPECT_EQ(m3.current_snapshot_id, kS2);
  ASSERT_EQ(m3.snapshot_log.size(), 1u);
  EXPECT_EQ(m3.snapshot_log[0].snapshot_id, kS2);
  EXPECT_EQ(m3.properties,
            (std::map<std::string, std::string>{{"write.format.default", "parquet"}}));
  ASSERT_EQ(m3.metadata_log.size(), 3u);
  EXPECT_EQ(m3.metadata_log[2].metadata_file, loc2);
  EXPECT_EQ(m3.last_updated_ms, 4000);
  EXPECT_EQ(m3.last_sequence_number, 2);

  // The result is a valid metadata document that survives a JSON round trip.
  std::string json = TableMetadataToJson(m3);
  auto parsed = ParseTableMetadata(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << json;
  EXPECT_EQ(parsed->table_uuid, m3.table_uuid);
  EXPECT_EQ(parsed->current_schema_id, 1);
  EXPECT_EQ(parsed->schemas.size(), 2u);
  EXPECT_EQ(parsed->default_spec_id, 1);
  EXPECT_EQ(parsed->last_partition_id, 1000);
  EXPECT_EQ(parsed->default_sort_order_id, 1);
  EXPECT_EQ(parsed->current_snapshot_id, kS2);
  EXPECT_EQ(parsed->refs.size(), 1u);
  EXPECT_EQ(parsed->snapshot_log.size(), 1u);
  EXPECT_EQ(parsed->metadata_log.size(), 3u);
  EXPECT_EQ(parsed->last_sequence_number, 2);
  EXPECT_EQ(parsed->properties, m3.properties);
  EXPECT_EQ(TableMetadataToJson(*parsed), json);
}

TEST(TableUpdateTest, AppliesToParsedFixture) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata base = ParseFixture("metadata/table/TableMetadataV2Valid.json");
  const int64_t current = 3055729675574597004;
  auto m = ApplyUpdates(base, "s3://bucket/test/location/metadata/v1.metadata.json",
                        {TableUpdate::AddSnapshot(MakeSnapshot(77, current, 35, 1602638600000)),
                         TableUpdate::SetBranch("main", 77)},
                        1602638600001);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->last_sequence_number, 35);
  EXPECT_EQ(m->current_snapshot_id, 77);
  EXPECT_EQ(m->snapshot_log.size(), 3u);
  ASSERT_EQ(m->metadata_log.size(), 1u);
  EXPECT_EQ(m->metadata_log[0].timestamp_ms, 1602638573590);
  // Sequence number 34 is the table's last one already.
  EXPECT_EQ(ApplyCode(base, {TableUpdate::AddSnapshot(MakeSnapshot(77, current, 34, 1))}),
            StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, RejectsSequenceNumberViolations) {
  TableMetadata m = TableWithSnapshot();  // last-sequence-number 1
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 1, 3000))}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 0, 3000))}),
            StatusCode::kInvalidArgument);
  // Two snapshots in one commit each need a higher number.
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 2, 3000)),
                          TableUpdate::AddSnapshot(MakeSnapshot(kS3, kS2, 2, 3001))}),
            StatusCode::kInvalidArgument);
  auto ok = ApplyUpdates(m, "",
                         {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 2, 3000)),
                          TableUpdate::AddSnapshot(MakeSnapshot(kS3, kS2, 5, 3001))},
                         4000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->last_sequence_number, 5);
  // Adding snapshots does not move main.
  EXPECT_EQ(ok->current_snapshot_id, kS1);
}

TEST(TableUpdateTest, AReplacesFirstSnapshotMayReuseASequenceNumberThatLandedMeanwhile) {
  // A replace transaction began at last-sequence-number 1 and numbered its new, parentless
  // snapshot 2; an append (kS2, number 2) committed first. The replace still applies (Java's
  // TableMetadata.Builder.addSnapshot exempts snapshots without a parent), and the table's
  // last-sequence-number does not go back.
  auto appended = ApplyUpdates(TableWithSnapshot(), "",
                               {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 2, 3000)),
                                TableUpdate::SetBranch("main", kS2)},
                               3001);
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  const Snapshot replacing = MakeSnapshot(kS3, std::nullopt, 2, 3002);
  auto replaced = ApplyUpdates(
      *appended, "", {TableUpdate::AddSnapshot(replacing), TableUpdate::SetBranch("main", kS3)},
      3003);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(replaced->current_snapshot_id, kS3);
  EXPECT_EQ(replaced->last_sequence_number, 2);
  const Snapshot older_number = MakeSnapshot(kS3 + 1, std::nullopt, 1, 3004);
  auto older = ApplyUpdates(*replaced, "", {TableUpdate::AddSnapshot(older_number)}, 3005);
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(older->last_sequence_number, 2);
  // A snapshot with a parent still needs a number above the table's last one.
  EXPECT_EQ(ApplyCode(*replaced, {TableUpdate::AddSnapshot(MakeSnapshot(kS3 + 2, kS3, 2, 3006))}),
            StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, V1IgnoresSequenceNumbers) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata v1 = ParseFixture("metadata/table/TableMetadataV1Valid.json");
  auto m = ApplyUpdates(v1, "", {TableUpdate::AddSnapshot(MakeSnapshot(9, std::nullopt, 0, 5))}, 6);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->last_sequence_number, v1.last_sequence_number);
}

TEST(TableUpdateTest, RejectsInvalidSnapshots) {
  TableMetadata m = TableWithSnapshot();
  // Duplicate id.
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(MakeSnapshot(kS1, std::nullopt, 2, 1))}),
            StatusCode::kInvalidArgument);
  // Missing parent.
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(MakeSnapshot(kS2, 999, 2, 1))}),
            StatusCode::kInvalidArgument);
  // Unknown schema.
  Snapshot s = MakeSnapshot(kS2, kS1, 2, 1);
  s.schema_id = 9;
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSnapshot(s)}), StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, SetSnapshotRef) {
  TableMetadata m = TableWithSnapshot();
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetBranch("dev", 999)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetTag("main", kS1)}), StatusCode::kInvalidArgument);

  TableUpdate tag = TableUpdate::SetTag("release", kS1);
  tag.ref.max_ref_age_ms = 86400000;
  TableUpdate branch = TableUpdate::SetBranch("dev", kS1);
  branch.ref.min_snapshots_to_keep = 3;
  branch.ref.max_snapshot_age_ms = 1000;
  auto r = ApplyUpdates(m, "", {tag, branch}, 7000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->refs.at("release").type, RefType::kTag);
  EXPECT_EQ(r->refs.at("release").max_ref_age_ms, 86400000);
  EXPECT_EQ(r->refs.at("dev").min_snapshots_to_keep, 3);
  EXPECT_EQ(r->refs.at("dev").max_snapshot_age_ms, 1000);
  // Refs other than main leave the current snapshot and its log alone.
  EXPECT_EQ(r->snapshot_log.size(), 1u);
  EXPECT_EQ(r->current_snapshot_id, kS1);
}

TEST(TableUpdateTest, RollbackLogsCommitTime) {
  TableMetadata m = TableWithSnapshot();
  auto two = ApplyUpdates(m, "",
                          {TableUpdate::AddSnapshot(MakeSnapshot(kS2, kS1, 2, 3000)),
                           TableUpdate::SetBranch("main", kS2)},
                          3001);
  ASSERT_TRUE(two.ok());
  auto back = ApplyUpdates(*two, "", {TableUpdate::SetBranch("main", kS1)}, 9000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->current_snapshot_id, kS1);
  ASSERT_EQ(back->snapshot_log.size(), 3u);
  EXPECT_EQ(back->snapshot_log[2].snapshot_id, kS1);
  EXPECT_EQ(back->snapshot_log[2].timestamp_ms, 9000);
  // Setting main to where it already is changes nothing.
  auto same = ApplyUpdates(*back, "", {TableUpdate::SetBranch("main", kS1)}, 9500);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->snapshot_log.size(), 3u);
}

TEST(TableUpdateTest, RemoveRefs) {
  TableMetadata m = TableWithSnapshot();
  auto r = ApplyUpdates(m, "",
                        {TableUpdate::SetTag("t", kS1), TableUpdate::RemoveRef("t"),
                         TableUpdate::RemoveRef("absent"), TableUpdate::RemoveRef("main")},
                        3000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->refs.empty());
  EXPECT_FALSE(r->current_snapshot_id.has_value());
  EXPECT_EQ(r->snapshots.size(), 1u);
}

TEST(TableUpdateTest, RemoveSnapshotsDropsRefsLogAndStatistics) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  TableMetadata base = ParseFixture("metadata/table/TableMetadataStatisticsFiles.json");
  const int64_t id = 3055729675574597004;
  ASSERT_FALSE(base.statistics_json.empty());
  auto r = ApplyUpdates(base, "", {TableUpdate::RemoveSnapshots({id})}, 5);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->snapshots.empty());
  EXPECT_TRUE(r->refs.empty());
  EXPECT_FALSE(r->current_snapshot_id.has_value());
  EXPECT_EQ(r->statistics_json, "[]");
  EXPECT_TRUE(r->snapshot_log.empty());
  auto parsed = ParseTableMetadata(TableMetadataToJson(*r));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
}

TEST(TableUpdateTest, SetAndRemoveStatistics) {
  TableMetadata m = TableWithSnapshot();
  const std::string stats1 =
      R"({"snapshot-id":1001,"statistics-path":"s3://b/t/a.puffin","file-size-in-bytes":10,)"
      R"("file-footer-size-in-bytes":4,"blob-metadata":[]})";
  const std::string stats2 =
      R"({"snapshot-id":1001,"statistics-path":"s3://b/t/b.puffin","file-size-in-bytes":20,)"
      R"("file-footer-size-in-bytes":4,"blob-metadata":[]})";
  auto r = ApplyUpdates(m, "", {TableUpdate::SetStatistics(kS1, stats1)}, 3000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->statistics_json, "[" + stats1 + "]");
  // Replaces the file of the same snapshot.
  r = ApplyUpdates(*r, "", {TableUpdate::SetStatistics(kS1, stats2)}, 3001);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statistics_json, "[" + stats2 + "]");
  auto parsed = ParseTableMetadata(TableMetadataToJson(*r));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->statistics_json, r->statistics_json);
  r = ApplyUpdates(*r, "", {TableUpdate::RemoveStatistics(kS1)}, 3002);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->statistics_json, "[]");
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetStatistics(kS1, "not json")}),
            StatusCode::kInvalidArgument);
}

// REST's set-partition-statistics / remove-partition-statistics (Spark sends them after
// compute_partition_stats): one file per snapshot, kept through a metadata round trip.
TEST(TableUpdateTest, SetAndRemovePartitionStatistics) {
  TableMetadata m = TableWithSnapshot();
  auto set = ParseTableUpdate(
      R"({"action":"set-partition-statistics","partition-statistics":{"snapshot-id":1001,)"
      R"("statistics-path":"s3://b/t/p1.parquet","file-size-in-bytes":7}})");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  auto r = ApplyUpdates(m, "", {*set}, 3000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->partition_statistics_json.find("p1.parquet"), std::string::npos);
  auto again = ParseTableUpdate(TableUpdateToJson(*set));
  ASSERT_TRUE(again.ok()) << TableUpdateToJson(*set);
  auto replaced = ParseTableUpdate(
      R"({"action":"set-partition-statistics","partition-statistics":{"snapshot-id":1001,)"
      R"("statistics-path":"s3://b/t/p2.parquet","file-size-in-bytes":8}})");
  r = ApplyUpdates(*r, "", {*replaced}, 3001);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->partition_statistics_json.find("p1.parquet"), std::string::npos);
  auto parsed = ParseTableMetadata(TableMetadataToJson(*r));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->partition_statistics_json, r->partition_statistics_json);
  auto remove = ParseTableUpdate(R"({"action":"remove-partition-statistics","snapshot-id":1001})");
  ASSERT_TRUE(remove.ok());
  r = ApplyUpdates(*r, "", {*remove}, 3002);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->partition_statistics_json, "[]");
  EXPECT_FALSE(ParseTableUpdate(R"({"action":"set-partition-statistics","partition-statistics":{"statistics-path":"p"}})").ok());
}

TEST(TableUpdateTest, SchemaIdsAndLastColumnId) {
  TableMetadata m = NewTable();
  // -1 without an added schema is an error.
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetCurrentSchema(-1)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetCurrentSchema(4)}), StatusCode::kInvalidArgument);

  // An identical schema reuses the existing id; a free given id is kept.
  auto r = ApplyUpdates(
      m, "", {TableUpdate::AddSchema(BaseSchema(8)), TableUpdate::SetCurrentSchema(-1)}, 2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->schemas.size(), 1u);
  EXPECT_EQ(r->current_schema_id, 0);

  TableUpdate add = TableUpdate::AddSchema(WiderSchema(8));
  add.last_column_id = 10;
  r = ApplyUpdates(m, "", {add, TableUpdate::SetCurrentSchema(-1)}, 2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->schemas.size(), 2u);
  EXPECT_EQ(r->schemas[1]->schema_id(), 8);
  EXPECT_EQ(r->current_schema_id, 8);
  EXPECT_EQ(r->last_column_id, 10);

  // Never lowered by a smaller given value; -1 means the last schema added.
  TableUpdate low = TableUpdate::AddSchema(WiderSchema(0));
  low.last_column_id = 1;
  auto narrow = std::make_shared<const Schema>(
      0, std::vector<NestedField>{Field(1, "id", TypeId::kLong, true)});
  r = ApplyUpdates(m, "", {low, TableUpdate::AddSchema(narrow), TableUpdate::SetCurrentSchema(-1)},
                   2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->schemas.size(), 3u);
  EXPECT_EQ(r->schemas[1]->schema_id(), 1);
  EXPECT_EQ(r->schemas[2]->schema_id(), 2);
  EXPECT_EQ(r->current_schema_id, 2);
  EXPECT_EQ(r->last_column_id, 3);

  // Explicit ids work too, and the change validates.
  r = ApplyUpdates(
      m, "", {TableUpdate::AddSchema(WiderSchema(0)), TableUpdate::SetCurrentSchema(1)}, 2000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->current_schema_id, 1);
}

TEST(TableUpdateTest, SpecsAndSortOrders) {
  TableMetadata m = NewTable();
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetDefaultSpec(-1)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetDefaultSpec(5)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetDefaultSortOrder(-1)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetDefaultSortOrder(2)}), StatusCode::kInvalidArgument);
  // Source columns must exist in the current schema.
  PartitionField f;
  f.source_id = 3;
  f.field_id = 1000;
  f.name = "ts_day";
  f.transform = Transform::Day();
  auto spec = std::make_shared<const PartitionSpec>(0, std::vector<PartitionField>{f});
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSpec(spec)}), StatusCode::kInvalidArgument);
  SortOrder order = DataOrder(1);
  order.fields[0].source_id = 3;
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AddSortOrder(order)}), StatusCode::kInvalidArgument);

  // With the column added first, the same spec is fine.
  auto r =
      ApplyUpdates(m, "",
                   {TableUpdate::AddSchema(WiderSchema(1)), TableUpdate::SetCurrentSchema(-1),
                    TableUpdate::AddSpec(spec), TableUpdate::AddSpec(BucketSpec(-1, 1001)),
                    TableUpdate::SetDefaultSpec(-1), TableUpdate::AddSortOrder(order),
                    TableUpdate::AddSortOrder(DataOrder(5)), TableUpdate::SetDefaultSortOrder(-1)},
                   2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->partition_specs.size(), 3u);
  EXPECT_EQ(r->partition_specs[1]->spec_id(), 1);
  EXPECT_EQ(r->partition_specs[2]->spec_id(), 2);
  EXPECT_EQ(r->default_spec_id, 2);
  EXPECT_EQ(r->last_partition_id, 1001);
  ASSERT_EQ(r->sort_orders.size(), 3u);
  EXPECT_EQ(r->sort_orders[1].order_id, 1);
  EXPECT_EQ(r->sort_orders[2].order_id, 5);
  EXPECT_EQ(r->default_sort_order_id, 5);

  // Re-adding an existing spec / order reuses its id; the unsorted order is id 0.
  auto again = ApplyUpdates(
      *r, "",
      {TableUpdate::AddSpec(BucketSpec(7, 1001)), TableUpdate::SetDefaultSpec(-1),
       TableUpdate::AddSortOrder(SortOrder{3, {}}), TableUpdate::SetDefaultSortOrder(-1)},
      3000);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->partition_specs.size(), 3u);
  EXPECT_EQ(again->default_spec_id, 2);
  EXPECT_EQ(again->sort_orders.size(), 3u);
  EXPECT_EQ(again->default_sort_order_id, 0);
}

TEST(TableUpdateTest, LocationUuidAndFormatVersion) {
  TableMetadata m = NewTable();
  auto r =
      ApplyUpdates(m, "",
                   {TableUpdate::SetLocation("s3://other/t"), TableUpdate::AssignUuid(m.table_uuid),
                    TableUpdate::UpgradeFormatVersion(2), TableUpdate::UpgradeFormatVersion(3)},
                   2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->location, "s3://other/t");
  EXPECT_EQ(r->format_version, 3);
  EXPECT_EQ(r->next_row_id, 0);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::SetLocation("")}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::AssignUuid("00000000-0000-0000-0000-000000000000")}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(*r, {TableUpdate::UpgradeFormatVersion(2)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(m, {TableUpdate::UpgradeFormatVersion(4)}), StatusCode::kInvalidArgument);

  TableMetadata no_uuid = m;
  no_uuid.table_uuid.clear();
  auto assigned = ApplyUpdates(no_uuid, "", {TableUpdate::AssignUuid("abc")}, 2000);
  ASSERT_TRUE(assigned.ok());
  EXPECT_EQ(assigned->table_uuid, "abc");
}

TEST(TableUpdateTest, V3SnapshotsAdvanceNextRowId) {
  auto base = NewTableMetadata(BaseSchema(), nullptr, {}, "/w/t", {{"format-version", "3"}}, 1);
  ASSERT_TRUE(base.ok());
  Snapshot s = MakeSnapshot(kS1, std::nullopt, 1, 10);
  s.first_row_id = 0;
  s.added_rows = 25;
  auto r = ApplyUpdates(*base, "", {TableUpdate::AddSnapshot(s)}, 11);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->next_row_id, 25);
  Snapshot behind = MakeSnapshot(kS2, kS1, 2, 12);
  behind.first_row_id = 10;
  behind.added_rows = 1;
  EXPECT_EQ(ApplyCode(*r, {TableUpdate::AddSnapshot(behind)}), StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, TrimsMetadataLog) {
  TableMetadata m = NewTable();
  for (int i = 0; i < 4; ++i) {
    m.metadata_log.push_back({100 + i, "/m/0000" + std::to_string(i) + "-x.metadata.json"});
  }
  m.properties["write.metadata.previous-versions-max"] = "2";
  auto r = ApplyUpdates(m, "/m/00004-x.metadata.json", {}, 2000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->metadata_log.size(), 2u);
  EXPECT_EQ(r->metadata_log[0].metadata_file, "/m/00003-x.metadata.json");
  EXPECT_EQ(r->metadata_log[1].metadata_file, "/m/00004-x.metadata.json");
  EXPECT_EQ(r->metadata_log[1].timestamp_ms, 1000);

  // The property set in the same commit applies; the default keeps 100.
  m.properties.erase("write.metadata.previous-versions-max");
  for (int i = 0; i < 120; ++i) m.metadata_log.push_back({200 + i, "/m/f" + std::to_string(i)});
  r = ApplyUpdates(m, "/m/last", {}, 3000);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->metadata_log.size(), 100u);
  EXPECT_EQ(r->metadata_log.back().metadata_file, "/m/last");
  r = ApplyUpdates(m, "/m/last",
                   {TableUpdate::SetProperties({{"write.metadata.previous-versions-max", "1"}})},
                   3000);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->metadata_log.size(), 1u);
  EXPECT_EQ(r->metadata_log[0].metadata_file, "/m/last");
}

TEST(TableUpdateTest, FailedUpdateLeavesBaseUntouched) {
  TableMetadata m = NewTable();
  auto r = ApplyUpdates(
      m, "", {TableUpdate::SetProperties({{"a", "b"}}), TableUpdate::SetBranch("main", 5)}, 2000);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(m.properties.count("a") == 0);
}

TEST(TableUpdateTest, ValidatesResult) {
  TableMetadata m = NewTable();
  m.current_schema_id = 42;  // a broken base is caught too
  EXPECT_EQ(ApplyCode(m, {}), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------
// NextMetadataFileName

TEST(TableUpdateTest, NextMetadataFileName) {
  auto expect_next = [](std::string_view previous, const std::string& prefix) {
    std::string next = NextMetadataFileName(previous);
    EXPECT_EQ(next.substr(0, prefix.size() + 1), prefix + "-") << previous;
    EXPECT_EQ(next.size(), prefix.size() + 1 + 36 + std::string(".metadata.json").size()) << next;
    EXPECT_EQ(next.substr(next.size() - 14), ".metadata.json") << next;
  };
  expect_next("", "00000");
  expect_next("s3://b/t/metadata/00003-1f0c9d10-7d2c-4a8e-9b57-3c5a2f1e0a11.metadata.json",
              "00004");
  expect_next("00009-abc.metadata.json", "00010");
  expect_next("/w/t/metadata/00041-abc.gz.metadata.json", "00042");
  expect_next("s3://b/t/metadata/v3.metadata.json", "00004");
  expect_next("v12.metadata.json", "00013");
  expect_next("/m/99999-x.metadata.json", "100000");
  expect_next("/m/metadata.json", "00000");
  expect_next("/m/vx.metadata.json", "00000");
  EXPECT_NE(NextMetadataFileName(""), NextMetadataFileName(""));
}

// ---------------------------------------------------------------------------------------
// TableUpdate JSON

std::vector<TableUpdate> EveryUpdate() {
  TableUpdate add_schema = TableUpdate::AddSchema(WiderSchema(1));
  add_schema.last_column_id = 3;
  Snapshot snapshot = MakeSnapshot(kS2, kS1, 2, 3000);
  snapshot.schema_id = 1;
  TableUpdate ref = TableUpdate::SetBranch("dev", kS2);
  ref.ref.min_snapshots_to_keep = 2;
  ref.ref.max_snapshot_age_ms = 100;
  ref.ref.max_ref_age_ms = 200;
  return {
      TableUpdate::AssignUuid("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
      TableUpdate::UpgradeFormatVersion(3),
      add_schema,
      TableUpdate::AddSchema(BaseSchema(0)),
      TableUpdate::SetCurrentSchema(-1),
      TableUpdate::AddSpec(BucketSpec(1)),
      TableUpdate::SetDefaultSpec(1),
      TableUpdate::AddSortOrder(DataOrder(2)),
      TableUpdate::SetDefaultSortOrder(-1),
      TableUpdate::AddSnapshot(snapshot),
      ref,
      TableUpdate::SetTag("v1", kS1),
      TableUpdate::RemoveSnapshots({kS1, kS2}),
      TableUpdate::RemoveRef("dev"),
      TableUpdate::SetLocation("s3://b/t2"),
      TableUpdate::SetProperties({{"a", "1"}, {"b", "2"}}),
      TableUpdate::RemoveProperties({"a", "c"}),
      TableUpdate::SetStatistics(
          kS1, R"({"snapshot-id":1001,"statistics-path":"s3://b/s.puffin","file-size-in-bytes":1,)"
               R"("file-footer-size-in-bytes":1,"blob-metadata":[{"type":"ndv","snapshot-id":1001,)"
               R"("sequence-number":1,"fields":[1]}]})"),
      TableUpdate::RemoveStatistics(kS1),
  };
}

TEST(TableUpdateTest, JsonRoundTripsEveryKind) {
  std::set<Kind> kinds;
  for (const TableUpdate& u : EveryUpdate()) {
    kinds.insert(u.kind);
    std::string json = TableUpdateToJson(u);
    auto parsed = ParseTableUpdate(json);
    ASSERT_TRUE(parsed.ok()) << json << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->kind, u.kind) << json;
    EXPECT_EQ(TableUpdateToJson(*parsed), json);
    EXPECT_EQ(parsed->uuid, u.uuid);
    EXPECT_EQ(parsed->format_version, u.format_version);
    EXPECT_EQ(parsed->last_column_id, u.last_column_id);
    EXPECT_EQ(parsed->schema_id, u.schema_id);
    EXPECT_EQ(parsed->spec_id, u.spec_id);
    EXPECT_EQ(parsed->sort_order_id, u.sort_order_id);
    EXPECT_EQ(parsed->ref_name, u.ref_name);
    EXPECT_EQ(parsed->ref.snapshot_id, u.ref.snapshot_id);
    EXPECT_EQ(parsed->ref.type, u.ref.type);
    EXPECT_EQ(parsed->ref.min_snapshots_to_keep, u.ref.min_snapshots_to_keep);
    EXPECT_EQ(parsed->ref.max_snapshot_age_ms, u.ref.max_snapshot_age_ms);
    EXPECT_EQ(parsed->ref.max_ref_age_ms, u.ref.max_ref_age_ms);
    EXPECT_EQ(parsed->snapshot_ids, u.snapshot_ids);
    EXPECT_EQ(parsed->snapshot_id, u.snapshot_id);
    EXPECT_EQ(parsed->location, u.location);
    EXPECT_EQ(parsed->updates, u.updates);
    EXPECT_EQ(parsed->removals, u.removals);
    EXPECT_EQ(parsed->raw_json, u.raw_json);
    if (u.kind == Kind::kAddSchema) {
      ASSERT_NE(parsed->schema, nullptr);
      EXPECT_EQ(SchemaToJson(*parsed->schema), SchemaToJson(*u.schema));
    }
    if (u.kind == Kind::kAddSpec) {
      ASSERT_NE(parsed->spec, nullptr);
      EXPECT_EQ(parsed->spec->spec_id(), u.spec->spec_id());
      ASSERT_EQ(parsed->spec->fields().size(), 1u);
      EXPECT_EQ(parsed->spec->fields()[0].transform.ToString(), "bucket[16]");
    }
    if (u.kind == Kind::kAddSortOrder) {
      EXPECT_EQ(parsed->sort_order.order_id, u.sort_order.order_id);
      ASSERT_EQ(parsed->sort_order.fields.size(), 1u);
      EXPECT_EQ(parsed->sort_order.fields[0].direction, SortDirection::kDesc);
      EXPECT_EQ(parsed->sort_order.fields[0].null_order, NullOrder::kNullsLast);
    }
    if (u.kind == Kind::kAddSnapshot) {
      EXPECT_EQ(parsed->snapshot.snapshot_id, u.snapshot.snapshot_id);
      EXPECT_EQ(parsed->snapshot.parent_snapshot_id, u.snapshot.parent_snapshot_id);
      EXPECT_EQ(parsed->snapshot.sequence_number, u.snapshot.sequence_number);
      EXPECT_EQ(parsed->snapshot.timestamp_ms, u.snapshot.timestamp_ms);
      EXPECT_EQ(parsed->snapshot.manifest_list, u.snapshot.manifest_list);
      EXPECT_EQ(parsed->snapshot.summary, u.snapshot.summary);
      EXPECT_EQ(parsed->snapshot.schema_id, u.snapshot.schema_id);
    }
  }
  EXPECT_EQ(kinds.size(), 17u);  // every Kind
}

TEST(TableUpdateTest, WritesRestShapes) {
  EXPECT_EQ(TableUpdateToJson(TableUpdate::SetTag("v1", 5)),
            R"({"action":"set-snapshot-ref","ref-name":"v1","snapshot-id":5,"type":"tag"})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::RemoveSnapshots({1, 2})),
            R"({"action":"remove-snapshots","snapshot-ids":[1,2]})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::SetProperties({{"k", "v"}})),
            R"({"action":"set-properties","updates":{"k":"v"}})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::RemoveProperties({"k"})),
            R"({"action":"remove-properties","removals":["k"]})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::UpgradeFormatVersion(2)),
            R"({"action":"upgrade-format-version","format-version":2})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::SetDefaultSortOrder(-1)),
            R"({"action":"set-default-sort-order","sort-order-id":-1})");
  EXPECT_EQ(TableUpdateToJson(TableUpdate::RemoveRef("b")),
            R"({"action":"remove-snapshot-ref","ref-name":"b"})");
}

TEST(TableUpdateTest, ParsesRestShapedCommit) {
  // The updates of a typical create-transaction and append commit, as a REST client sends them.
  const char* updates[] = {
      R"({"action": "assign-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"})",
      R"({"action": "upgrade-format-version", "format-version": 2})",
      R"({"action": "add-schema", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "ts", "required": false, "type": "timestamptz"}]},
          "last-column-id": 2})",
      R"({"action": "set-current-schema", "schema-id": -1})",
      R"({"action": "add-spec", "spec": {"fields": [
            {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}]}})",
      R"({"action": "set-default-spec", "spec-id": -1})",
      R"({"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
            {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}]}})",
      R"({"action": "set-default-sort-order", "sort-order-id": -1})",
      R"({"action": "set-location", "location": "s3://warehouse/db/t"})",
      R"({"action": "set-properties", "updates": {"write.format.default": "parquet"}})",
      R"({"action": "add-snapshot", "snapshot": {"snapshot-id": 7, "sequence-number": 1,
            "timestamp-ms": 1700000000000, "manifest-list": "s3://warehouse/db/t/metadata/snap-7.avro",
            "summary": {"operation": "append", "added-data-files": "1"}, "schema-id": 1}})",
      R"({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7,
          "max-ref-age-ms": 1000, "max-snapshot-age-ms": 2000, "min-snapshots-to-keep": 3})",
      R"({"action": "set-statistics", "snapshot-id": 7, "statistics": {"snapshot-id": 7,
            "statistics-path": "s3://warehouse/db/t/metadata/7.stats", "file-size-in-bytes": 100,
            "file-footer-size-in-bytes": 10, "blob-metadata": []}})",
  };
  std::vector<TableUpdate> parsed;
  for (const char* json : updates) {
    auto u = ParseTableUpdate(json);
    ASSERT_TRUE(u.ok()) << json << ": " << u.status().ToString();
    parsed.push_back(std::move(u).value());
  }
  EXPECT_EQ(parsed[2].schema->schema_id(), -1);  // read-only in REST: assigned on apply
  EXPECT_EQ(parsed[2].last_column_id, 2);
  EXPECT_EQ(parsed[4].spec->spec_id(), -1);
  EXPECT_EQ(parsed[11].ref.max_ref_age_ms, 1000);
  EXPECT_EQ(parsed[12].snapshot_id, 7);

  // Applied to a fresh table without a UUID, they form a valid table.
  TableMetadata shell = NewTable();
  shell.table_uuid.clear();
  auto m = ApplyUpdates(shell, "", parsed, 1700000000001);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->table_uuid, "2cc52516-5e73-41f2-b139-545d41a4e151");
  EXPECT_EQ(m->current_schema_id, 1);
  EXPECT_EQ(m->default_spec_id, 1);
  EXPECT_EQ(m->default_sort_order_id, 1);
  EXPECT_EQ(m->location, "s3://warehouse/db/t");
  EXPECT_EQ(m->current_snapshot_id, 7);
  EXPECT_EQ(m->refs.at("main").min_snapshots_to_keep, 3);
  auto json = ParseTableMetadata(TableMetadataToJson(*m));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(json->refs.at("main").max_ref_age_ms, 1000);
}

TEST(TableUpdateTest, SetStatisticsTakesIdFromEitherPlace) {
  auto only_inner = ParseTableUpdate(
      R"({"action": "set-statistics", "statistics": {"snapshot-id": 9, "statistics-path": "p",
          "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}})");
  ASSERT_TRUE(only_inner.ok());
  EXPECT_EQ(only_inner->snapshot_id, 9);
  EXPECT_EQ(ParseTableUpdate(R"({"action": "set-statistics", "snapshot-id": 8, "statistics":
                                {"snapshot-id": 9}})")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(TableUpdateTest, RejectsBadJson) {
  const char* bad[] = {
      "{",
      "42",
      R"({})",
      R"({"action": 1})",
      R"({"action": "frobnicate"})",
      R"({"action": "add-view-version", "view-version": {}})",
      R"({"action": "assign-uuid"})",
      R"({"action": "upgrade-format-version", "format-version": "2"})",
      R"({"action": "add-schema"})",
      R"({"action": "add-schema", "schema": {"type": "struct"}})",
      R"({"action": "add-schema", "schema": {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "nope"}]}})",
      R"({"action": "set-current-schema"})",
      R"({"action": "add-spec", "spec": {"fields": [{"name": "x", "transform": "identity", "source-id": "1"}]}})",
      R"({"action": "add-spec"})",
      R"({"action": "set-default-spec", "spec-id": null})",
      R"({"action": "add-sort-order", "sort-order": {"fields": []}})",
      R"({"action": "set-default-sort-order"})",
      R"({"action": "add-snapshot", "snapshot": {"snapshot-id": 1}})",
      R"({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 1})",
      R"({"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 1, "type": "leaf"})",
      R"({"action": "set-snapshot-ref", "type": "branch", "snapshot-id": 1})",
      R"({"action": "remove-snapshots", "snapshot-ids": [1, "2"]})",
      R"({"action": "remove-snapshots"})",
      R"({"action": "remove-snapshot-ref"})",
      R"({"action": "set-location", "location": 5})",
      R"({"action": "set-properties", "updates": {"a": 1}})",
      R"({"action": "set-properties", "updates": ["a"]})",
      R"({"action": "remove-properties", "removals": [1]})",
      R"({"action": "set-statistics", "snapshot-id": 1})",
      R"({"action": "set-statistics", "statistics": {"statistics-path": "p"}})",
      R"({"action": "remove-statistics"})",
  };
  for (const char* json : bad) {
    EXPECT_EQ(ParseTableUpdate(json).status().code(), StatusCode::kInvalidArgument) << json;
  }
  // Spec updates skade does not apply yet are reported as such.
  EXPECT_EQ(ParseTableUpdate(R"({"action": "remove-encryption-key", "key-id": "k"})").status().code(),
            StatusCode::kNotImplemented);
  EXPECT_EQ(ParseTableUpdate(R"({"action": "remove-schemas", "schema-ids": ["1"]})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTableUpdate(R"({"action": "remove-partition-specs", "spec-ids": [-1]})").status().code(),
            StatusCode::kInvalidArgument);
}

// REST RemoveSchemasUpdate / RemovePartitionSpecsUpdate: unused schemas and specs go, the
// current schema and the default spec never; unknown ids are ignored; the update round-trips.
TEST(TableUpdateTest, RemovesUnusedSchemasAndSpecsButNeverTheCurrentOnes) {
  auto evolved = ApplyUpdates(NewTable(), "",
                              {TableUpdate::AddSchema(WiderSchema(0)), TableUpdate::SetCurrentSchema(-1),
                               TableUpdate::AddSpec(BucketSpec(-1)), TableUpdate::SetDefaultSpec(-1)},
                              2000);
  ASSERT_TRUE(evolved.ok()) << evolved.status().ToString();
  ASSERT_EQ(evolved->schemas.size(), 2u);
  ASSERT_EQ(evolved->partition_specs.size(), 2u);
  auto schemas = ParseTableUpdate(R"({"action": "remove-schemas", "schema-ids": [0, 77]})");
  auto specs = ParseTableUpdate(R"({"action": "remove-partition-specs", "spec-ids": [0]})");
  ASSERT_TRUE(schemas.ok()) << schemas.status().ToString();
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(TableUpdateToJson(*schemas), R"({"action":"remove-schemas","schema-ids":[0,77]})");
  auto removed = ApplyUpdates(*evolved, "", {*schemas, *specs}, 3000);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  ASSERT_EQ(removed->schemas.size(), 1u);
  EXPECT_EQ(removed->schemas[0]->schema_id(), 1);
  ASSERT_EQ(removed->partition_specs.size(), 1u);
  EXPECT_EQ(removed->partition_specs[0]->spec_id(), 1);
  auto again = ParseTableMetadata(TableMetadataToJson(*removed));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->schemas.size(), 1u);
  // The current schema and the default spec stay.
  auto current = ParseTableUpdate(R"({"action": "remove-schemas", "schema-ids": [1]})");
  auto default_spec = ParseTableUpdate(R"({"action": "remove-partition-specs", "spec-ids": [1]})");
  ASSERT_TRUE(current.ok() && default_spec.ok());
  EXPECT_EQ(ApplyCode(*removed, {*current}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(*removed, {*default_spec}), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::iceberg
