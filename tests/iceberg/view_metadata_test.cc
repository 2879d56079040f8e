// Iceberg views: metadata files as Java Iceberg writes them (parsed, and written back byte for
// byte), a full round trip, every refusal of the parser, the REST ViewUpdate / ViewRequirement
// shapes, new-view metadata, and the rules of applying updates (id reuse, "-1", the version log,
// the history limit).
#include "skade/iceberg/view_metadata.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skade/iceberg/table_metadata.h"

namespace skade::iceberg {
namespace {

using Kind = ViewUpdate::Kind;

constexpr std::string_view kUuid = "fa6506c3-7681-40c8-86dc-e36561f83385";

// The view spec's Appendix A example after the second CREATE OR REPLACE, as Java Iceberg's
// ViewMetadataParser writes it (compact, its member order), with a second schema (a column
// added) used by version 2 and a trino representation beside the spark one.
constexpr std::string_view kJavaWritten =
    R"({"view-uuid":"fa6506c3-7681-40c8-86dc-e36561f83385","format-version":1,)"
    R"("location":"s3://bucket/warehouse/default.db/event_agg",)"
    R"("properties":{"comment":"Daily event counts"},)"
    R"("schemas":[{"type":"struct","schema-id":1,"fields":[)"
    R"({"id":1,"name":"event_count","required":false,"type":"int","doc":"Count of events"},)"
    R"({"id":2,"name":"event_date","required":false,"type":"date"}]},)"
    R"({"type":"struct","schema-id":2,"fields":[)"
    R"({"id":1,"name":"event_count","required":false,"type":"int","doc":"Count of events"},)"
    R"({"id":2,"name":"event_date","required":false,"type":"date"},)"
    R"({"id":3,"name":"source","required":false,"type":"string"}]}],)"
    R"("current-version-id":2,)"
    R"("versions":[{"version-id":1,"timestamp-ms":1573518431292,"schema-id":1,)"
    R"("summary":{"engine-name":"Spark","engine-version":"3.3.2"},)"
    R"("default-catalog":"prod","default-namespace":["default"],)"
    R"("representations":[{"type":"sql",)"
    R"("sql":"SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\nGROUP BY 2",)"
    R"("dialect":"spark"}]},)"
    R"({"version-id":2,"timestamp-ms":1573518981593,"schema-id":2,)"
    R"("summary":{"engine-name":"Spark","engine-version":"3.3.2"},)"
    R"("default-catalog":"prod","default-namespace":["default"],)"
    R"("representations":[{"type":"sql",)"
    R"("sql":"SELECT\n    COUNT(1), CAST(event_ts AS DATE), source\n)"
    R"(FROM prod.default.events\nGROUP BY 2, 3",)"
    R"("dialect":"spark"},)"
    R"({"type":"sql","sql":"SELECT count(1), CAST(event_ts AS DATE), source )"
    R"(FROM prod.default.events GROUP BY 2, 3",)"
    R"("dialect":"trino"}]}],)"
    R"("version-log":[{"timestamp-ms":1573518431292,"version-id":1},)"
    R"({"timestamp-ms":1573518981593,"version-id":2}]})";

// The first metadata file of the spec's Appendix A, exactly as the spec prints it (pretty, and
// with its own member order).
constexpr std::string_view kSpecExample = R"json({
  "view-uuid": "fa6506c3-7681-40c8-86dc-e36561f83385",
  "format-version" : 1,
  "location" : "s3://bucket/warehouse/default.db/event_agg",
  "current-version-id" : 1,
  "properties" : {
    "comment" : "Daily event counts"
  },
  "versions" : [ {
    "version-id" : 1,
    "timestamp-ms" : 1573518431292,
    "schema-id" : 1,
    "default-catalog" : "prod",
    "default-namespace" : [ "default" ],
    "summary" : {
      "engine-name" : "Spark",
      "engine-version" : "3.3.2"
    },
    "representations" : [ {
      "type" : "sql",
      "sql" : "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\nGROUP BY 2",
      "dialect" : "spark"
    } ]
  } ],
  "schemas": [ {
    "schema-id": 1,
    "type" : "struct",
    "fields" : [ {
      "id" : 1,
      "name" : "event_count",
      "required" : false,
      "type" : "int",
      "doc" : "Count of events"
    }, {
      "id" : 2,
      "name" : "event_date",
      "required" : false,
      "type" : "date"
    } ]
  } ],
  "version-log" : [ {
    "timestamp-ms" : 1573518431292,
    "version-id" : 1
  } ]
})json";

NestedField Field(int id, std::string name, TypePtr type, bool required = false) {
  NestedField f;
  f.id = id;
  f.name = std::move(name);
  f.required = required;
  f.type = std::move(type);
  return f;
}

SchemaPtr CountSchema(int schema_id) {
  return std::make_shared<const Schema>(
      schema_id, std::vector<NestedField>{Field(1, "event_count", Type::Primitive(TypeId::kLong)),
                                          Field(2, "event_date", Type::Primitive(TypeId::kDate))});
}

SchemaPtr WiderSchema(int schema_id) {
  return std::make_shared<const Schema>(
      schema_id, std::vector<NestedField>{Field(1, "event_count", Type::Primitive(TypeId::kLong)),
                                          Field(2, "event_date", Type::Primitive(TypeId::kDate)),
                                          Field(3, "source", Type::Primitive(TypeId::kString))});
}

ViewVersion SparkVersion(std::string sql, int schema_id = 0, int64_t timestamp_ms = 1000) {
  ViewVersion v;
  v.schema_id = schema_id;
  v.timestamp_ms = timestamp_ms;
  v.summary = {{"engine-name", "skade"}, {"engine-version", "0.1"}};
  v.representations = {{std::move(sql), "spark"}};
  v.default_namespace = {"default"};
  return v;
}

ViewMetadata MustParse(std::string_view json) {
  Result<ViewMetadata> m = ParseViewMetadata(json);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : ViewMetadata{};
}

// A new view (version 1 over schema 0, created at t=1000) with `properties`.
ViewMetadata NewView(std::map<std::string, std::string> properties = {}) {
  Result<ViewMetadata> m = NewViewMetadata(CountSchema(0), SparkVersion("SELECT 1"),
                                           "s3://b/v", std::move(properties), 1000);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : ViewMetadata{};
}

ViewMetadata MustApply(const ViewMetadata& base, const std::vector<ViewUpdate>& updates,
                       int64_t now_ms) {
  Result<ViewMetadata> m = ApplyViewUpdates(base, updates, now_ms);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : base;
}

StatusCode ApplyCode(const ViewMetadata& base, const std::vector<ViewUpdate>& updates) {
  return ApplyViewUpdates(base, updates, 9000).status().code();
}

ViewUpdate AddVersion(ViewVersion version) {
  ViewUpdate u;
  u.kind = Kind::kAddViewVersion;
  u.version = std::move(version);
  return u;
}

ViewUpdate SetCurrent(int version_id) {
  ViewUpdate u;
  u.kind = Kind::kSetCurrentViewVersion;
  u.version_id = version_id;
  return u;
}

ViewUpdate AddSchema(SchemaPtr schema) {
  ViewUpdate u;
  u.kind = Kind::kAddSchema;
  u.schema = std::move(schema);
  return u;
}

ViewUpdate SetProperties(std::map<std::string, std::string> updates) {
  ViewUpdate u;
  u.kind = Kind::kSetProperties;
  u.updates = std::move(updates);
  return u;
}

std::vector<int> VersionIds(const ViewMetadata& m) {
  std::vector<int> ids;
  for (const ViewVersion& v : m.versions) ids.push_back(v.version_id);
  return ids;
}

// Compares every field; schemas through their JSON (they are shared pointers).
void ExpectSameMetadata(const ViewMetadata& a, const ViewMetadata& b) {
  EXPECT_EQ(a.view_uuid, b.view_uuid);
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.location, b.location);
  ASSERT_EQ(a.schemas.size(), b.schemas.size());
  for (size_t i = 0; i < a.schemas.size(); ++i) {
    EXPECT_EQ(SchemaToJson(*a.schemas[i]), SchemaToJson(*b.schemas[i])) << "schema " << i;
  }
  EXPECT_EQ(a.current_version_id, b.current_version_id);
  EXPECT_EQ(a.versions, b.versions);
  EXPECT_EQ(a.version_log, b.version_log);
  EXPECT_EQ(a.properties, b.properties);
}

// `json` with `from` (which must occur) replaced once by `to`.
std::string Edited(std::string_view json, std::string_view from, std::string_view to) {
  std::string out(json);
  size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

// ---- metadata files ----

TEST(ViewMetadataTest, ParsesMetadataAsJavaWritesIt) {
  ViewMetadata m = MustParse(kJavaWritten);
  EXPECT_EQ(m.view_uuid, kUuid);
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.location, "s3://bucket/warehouse/default.db/event_agg");
  EXPECT_EQ(m.properties, (std::map<std::string, std::string>{{"comment", "Daily event counts"}}));
  ASSERT_EQ(m.schemas.size(), 2u);
  EXPECT_EQ(m.schemas[0]->schema_id(), 1);
  EXPECT_EQ(m.schemas[1]->schema_id(), 2);
  ASSERT_EQ(m.schemas[1]->fields().size(), 3u);
  EXPECT_EQ(m.schemas[0]->fields()[0].doc, "Count of events");
  EXPECT_EQ(m.current_version_id, 2);
  ASSERT_EQ(m.versions.size(), 2u);

  const ViewVersion& v1 = m.versions[0];
  EXPECT_EQ(v1.version_id, 1);
  EXPECT_EQ(v1.timestamp_ms, 1573518431292);
  EXPECT_EQ(v1.schema_id, 1);
  EXPECT_EQ(v1.summary, (std::map<std::string, std::string>{{"engine-name", "Spark"},
                                                            {"engine-version", "3.3.2"}}));
  EXPECT_EQ(v1.default_catalog, std::optional<std::string>("prod"));
  EXPECT_EQ(v1.default_namespace, std::vector<std::string>{"default"});
  ASSERT_EQ(v1.representations.size(), 1u);
  EXPECT_EQ(v1.representations[0].sql,
            "SELECT\n    COUNT(1), CAST(event_ts AS DATE)\nFROM events\nGROUP BY 2");
  EXPECT_EQ(v1.representations[0].dialect, "spark");

  const ViewVersion* current = m.CurrentVersion();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->version_id, 2);
  EXPECT_EQ(current->timestamp_ms, 1573518981593);
  ASSERT_EQ(current->representations.size(), 2u);
  ASSERT_NE(current->Representation("TRINO"), nullptr);
  EXPECT_EQ(current->Representation("TRINO")->dialect, "trino");
  EXPECT_EQ(current->Representation("Spark"), &current->representations[0]);
  EXPECT_EQ(current->Representation("duckdb"), nullptr);
  ASSERT_NE(m.CurrentSchema(), nullptr);
  EXPECT_EQ(m.CurrentSchema()->schema_id(), 2);
  EXPECT_EQ(m.Schema(1), m.schemas[0]);
  EXPECT_EQ(m.Schema(3), nullptr);
  EXPECT_EQ(m.Version(1), &m.versions[0]);
  EXPECT_EQ(m.Version(3), nullptr);

  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1573518431292}, {2, 1573518981593}}));
}

TEST(ViewMetadataTest, WritesWhatJavaWrites) {
  // Same members, same order, same compact layout: the bytes Java Iceberg writes.
  EXPECT_EQ(ViewMetadataToJson(MustParse(kJavaWritten)), kJavaWritten);
}

TEST(ViewMetadataTest, ParsesTheSpecExample) {
  ViewMetadata m = MustParse(kSpecExample);
  EXPECT_EQ(m.view_uuid, kUuid);
  EXPECT_EQ(m.current_version_id, 1);
  ASSERT_EQ(m.versions.size(), 1u);
  EXPECT_EQ(m.versions[0].default_catalog, std::optional<std::string>("prod"));
  ASSERT_EQ(m.schemas.size(), 1u);
  EXPECT_EQ(m.CurrentSchema(), m.schemas[0]);
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1573518431292}}));
  ViewMetadata back = MustParse(ViewMetadataToJson(m));
  ExpectSameMetadata(back, m);
}

TEST(ViewMetadataTest, RoundTripsFullMetadata) {
  ViewMetadata m;
  m.view_uuid = "0192f6a8-2c5e-7d1a-9b3e-5f4c3a2b1d0e";
  m.location = "file:///warehouse/ns/v";
  auto nested = std::make_shared<const Schema>(
      7,
      std::vector<NestedField>{
          Field(1, "id", Type::Primitive(TypeId::kLong), true),
          Field(2, "tags", Type::List(3, Type::Primitive(TypeId::kString), false)),
          Field(4, "attrs",
                Type::Map(5, Type::Primitive(TypeId::kString), 6,
                          Type::Struct({Field(7, "v", Type::Decimal(10, 2))}), true))},
      std::vector<int>{1});
  m.schemas = {CountSchema(0), nested};
  ViewVersion v1 = SparkVersion("SELECT 1", 0, 1000);
  v1.version_id = 1;
  ViewVersion v3 = SparkVersion("SELECT id, tags, attrs FROM t -- \"quoted\" é", 7, 3000);
  v3.version_id = 3;
  v3.representations.push_back({"SELECT id, tags, attrs FROM t", "Trino"});
  v3.default_catalog = "lake";
  v3.default_namespace = {};
  v3.summary.clear();
  m.versions = {v1, v3};
  m.current_version_id = 3;
  m.version_log = {{1, 1000}, {3, 3000}, {1, 4000}, {3, 5000}};
  m.properties = {{"comment", "a view"}, {std::string(kViewVersionHistoryProperty), "5"}};

  const std::string json = ViewMetadataToJson(m);
  ViewMetadata back = MustParse(json);
  ExpectSameMetadata(back, m);
  EXPECT_EQ(ViewMetadataToJson(back), json);
  // An absent default-catalog stays absent (the view's own catalog), not "".
  EXPECT_FALSE(back.versions[0].default_catalog.has_value());
  EXPECT_EQ(back.schemas[1]->identifier_field_ids(), std::vector<int>{1});
}

TEST(ViewMetadataTest, OmitsEmptyPropertiesAndAbsentCatalog) {
  ViewMetadata m = NewView();
  const std::string json = ViewMetadataToJson(m);
  EXPECT_EQ(json.find("\"properties\""), std::string::npos) << json;
  EXPECT_EQ(json.find("default-catalog"), std::string::npos) << json;
  EXPECT_TRUE(MustParse(json).properties.empty());
}

TEST(ViewMetadataTest, RefusesMissingRequiredMembers) {
  // Each edit renames one required member (so it is absent), in the metadata, in the first
  // version, or in its representation.
  const std::vector<std::pair<std::string_view, std::string_view>> edits = {
      {R"("view-uuid":)", R"("x-view-uuid":)"},
      {R"("format-version":)", R"("x-format-version":)"},
      {R"("location":)", R"("x-location":)"},
      {R"("schemas":)", R"("x-schemas":)"},
      {R"("current-version-id":)", R"("x-current-version-id":)"},
      {R"("versions":)", R"("x-versions":)"},
      {R"("version-log":)", R"("x-version-log":)"},
      {R"({"version-id":1,)", R"({"x-version-id":1,)"},
      {R"("timestamp-ms":1573518431292,"schema-id")", R"("x-timestamp-ms":1,"schema-id")"},
      {R"("schema-id":1,"summary")", R"("x-schema-id":1,"summary")"},
      {R"("summary":)", R"("x-summary":)"},
      {R"("default-namespace":)", R"("x-default-namespace":)"},
      {R"("representations":)", R"("x-representations":)"},
      {R"("representations":[{"type":"sql",)", R"("representations":[{"x-type":"sql",)"},
      {R"("sql":"SELECT\n)", R"("x-sql":"SELECT\n)"},
      {R"("dialect":"spark")", R"("x-dialect":"spark")"},
      {R"({"timestamp-ms":1573518431292,"version-id":1})",
       R"({"x-timestamp-ms":1573518431292,"version-id":1})"},
      {R"("timestamp-ms":1573518431292,"version-id":1})",
       R"("timestamp-ms":1573518431292,"x-version-id":1})"},
  };
  for (const auto& [from, to] : edits) {
    EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, from, to)).status().code(),
              StatusCode::kInvalidArgument)
        << from;
  }
}

TEST(ViewMetadataTest, RefusesMistypedMembers) {
  const std::vector<std::pair<std::string_view, std::string_view>> edits = {
      {R"("format-version":1)", R"("format-version":"1")"},
      {R"("current-version-id":2)", R"("current-version-id":"2")"},
      {R"("properties":{"comment":"Daily event counts"})", R"("properties":{"comment":1})"},
      {R"("default-namespace":["default"])", R"("default-namespace":"default")"},
      {R"("default-catalog":"prod")", R"("default-catalog":7)"},
      {R"("summary":{"engine-name":"Spark",)", R"("summary":{"engine-name":true,)"},
      {R"("versions":[)", R"("versions":{"a":1},"x":[)"},
  };
  for (const auto& [from, to] : edits) {
    EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, from, to)).status().code(),
              StatusCode::kInvalidArgument)
        << from;
  }
  EXPECT_EQ(ParseViewMetadata("not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseViewMetadata("[1]").status().code(), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, RefusesFormatVersion2) {
  EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, R"("format-version":1)",
                                     R"("format-version":2)"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, RefusesUnknownCurrentVersion) {
  EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, R"("current-version-id":2)",
                                     R"("current-version-id":3)"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, RefusesDuplicateDialect) {
  // "SPARK" and "spark" are one dialect.
  std::string json = Edited(kJavaWritten, R"("dialect":"trino")", R"("dialect":"SPARK")");
  EXPECT_EQ(ParseViewMetadata(json).status().code(), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, RefusesVersionOfUnknownSchema) {
  std::string json =
      Edited(kJavaWritten, R"("schema-id":2,"summary")", R"("schema-id":5,"summary")");
  EXPECT_EQ(ParseViewMetadata(json).status().code(), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, RefusesDuplicateIdsAndUnknownRepresentationTypes) {
  EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, R"({"version-id":2,)", R"({"version-id":1,)"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, R"("schema-id":2,"fields")",
                                     R"("schema-id":1,"fields")"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseViewMetadata(Edited(kJavaWritten, R"({"type":"sql","sql":"SELECT count(1))",
                                     R"({"type":"substrait","sql":"SELECT count(1))"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, VersionJsonRoundTripsAndAllowsLastAddedSchema) {
  ViewVersion v = SparkVersion("SELECT 2", -1, 1234);
  v.version_id = 4;
  v.default_catalog = "prod";
  const std::string json = ViewVersionToJson(v);
  EXPECT_EQ(json,
            R"({"version-id":4,"timestamp-ms":1234,"schema-id":-1,)"
            R"("summary":{"engine-name":"skade","engine-version":"0.1"},)"
            R"("default-catalog":"prod","default-namespace":["default"],)"
            R"("representations":[{"type":"sql","sql":"SELECT 2","dialect":"spark"}]})");
  Result<ViewVersion> back = ParseViewVersionJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, v);
  EXPECT_EQ(ParseViewVersionJson(Edited(json, R"("dialect":"spark")", R"("x":"spark")"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

// ---- REST shapes ----

TEST(ViewMetadataTest, RequirementJsonAndCheck) {
  Result<ViewRequirement> r = ParseViewRequirement(
      R"({"type":"assert-view-uuid","uuid":"fa6506c3-7681-40c8-86dc-e36561f83385"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->uuid, kUuid);
  EXPECT_EQ(ViewRequirementToJson(*r),
            R"({"type":"assert-view-uuid","uuid":"fa6506c3-7681-40c8-86dc-e36561f83385"})");

  ViewMetadata m = MustParse(kJavaWritten);
  EXPECT_TRUE(CheckViewRequirement(m, *r).ok());
  EXPECT_TRUE(CheckViewRequirement(m, {"FA6506C3-7681-40C8-86DC-E36561F83385"}).ok());
  EXPECT_EQ(CheckViewRequirement(m, {"fa6506c3-7681-40c8-86dc-e36561f83386"}).code(),
            StatusCode::kConflict);

  EXPECT_EQ(ParseViewRequirement(R"({"type":"assert-table-uuid","uuid":"x"})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseViewRequirement(R"({"type":"assert-view-uuid"})").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ViewMetadataTest, UpdateJsonShapesRoundTrip) {
  ViewUpdate assign;
  assign.kind = Kind::kAssignUuid;
  assign.uuid = std::string(kUuid);
  ViewUpdate upgrade;
  upgrade.kind = Kind::kUpgradeFormatVersion;
  upgrade.format_version = 1;
  ViewUpdate location;
  location.kind = Kind::kSetLocation;
  location.location = "s3://b/v2";
  ViewUpdate remove;
  remove.kind = Kind::kRemoveProperties;
  remove.removals = {"a", "b"};
  ViewVersion version = SparkVersion("SELECT 1", -1, 77);
  version.version_id = 2;

  const std::vector<std::pair<ViewUpdate, std::string>> cases = {
      {assign, R"({"action":"assign-uuid","uuid":"fa6506c3-7681-40c8-86dc-e36561f83385"})"},
      {upgrade, R"({"action":"upgrade-format-version","format-version":1})"},
      {AddSchema(CountSchema(3)),
       R"({"action":"add-schema","schema":{"type":"struct","schema-id":3,"fields":[)"
       R"({"id":1,"name":"event_count","required":false,"type":"long"},)"
       R"({"id":2,"name":"event_date","required":false,"type":"date"}]}})"},
      {location, R"({"action":"set-location","location":"s3://b/v2"})"},
      {SetProperties({{"comment", "c"}, {"owner", "o"}}),
       R"({"action":"set-properties","updates":{"comment":"c","owner":"o"}})"},
      {remove, R"({"action":"remove-properties","removals":["a","b"]})"},
      {AddVersion(version),
       R"({"action":"add-view-version","view-version":{"version-id":2,"timestamp-ms":77,)"
       R"("schema-id":-1,"summary":{"engine-name":"skade","engine-version":"0.1"},)"
       R"("default-namespace":["default"],)"
       R"("representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}]}})"},
      {SetCurrent(-1), R"({"action":"set-current-view-version","view-version-id":-1})"},
  };
  for (const auto& [update, json] : cases) {
    EXPECT_EQ(ViewUpdateToJson(update), json);
    Result<ViewUpdate> back = ParseViewUpdate(json);
    ASSERT_TRUE(back.ok()) << json << ": " << back.status().ToString();
    EXPECT_EQ(back->kind, update.kind);
    EXPECT_EQ(ViewUpdateToJson(*back), json);
  }
  Result<ViewUpdate> parsed = ParseViewUpdate(cases[6].second);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->version, version);
}

TEST(ViewMetadataTest, RefusesUnknownOrIncompleteUpdates) {
  for (std::string_view json : {
           R"({"action":"add-snapshot","snapshot":{}})",
           R"({"action":"set-current-schema","schema-id":1})",
           R"({"action":"frobnicate"})",
           R"({"uuid":"x"})",
           R"({"action":"add-view-version"})",
           R"({"action":"set-current-view-version"})",
           R"({"action":"set-properties","updates":{"a":1}})",
           R"({"action":"remove-properties","removals":"a"})",
           R"({"action":"add-schema"})",
       }) {
    EXPECT_EQ(ParseViewUpdate(json).status().code(), StatusCode::kInvalidArgument) << json;
  }
}

// ---- new metadata ----

TEST(ViewMetadataUpdatesTest, NewViewMetadata) {
  ViewVersion version = SparkVersion("SELECT 1", 5, 0);
  version.version_id = 9;
  Result<ViewMetadata> r =
      NewViewMetadata(CountSchema(4), version, "s3://b/v", {{"comment", "c"}}, 1234);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ViewMetadata& m = *r;
  EXPECT_EQ(m.view_uuid.size(), 36u);
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.location, "s3://b/v");
  ASSERT_EQ(m.schemas.size(), 1u);
  EXPECT_EQ(m.schemas[0]->schema_id(), 0);
  ASSERT_EQ(m.versions.size(), 1u);
  EXPECT_EQ(m.versions[0].version_id, 1);
  EXPECT_EQ(m.versions[0].schema_id, 0);
  EXPECT_EQ(m.versions[0].timestamp_ms, 1234);
  EXPECT_EQ(m.current_version_id, 1);
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1234}}));
  EXPECT_EQ(m.properties.at("comment"), "c");
  ExpectSameMetadata(MustParse(ViewMetadataToJson(m)), m);
  EXPECT_NE(NewView().view_uuid, NewView().view_uuid);
}

TEST(ViewMetadataUpdatesTest, NewViewMetadataRefusals) {
  ViewVersion no_sql = SparkVersion("SELECT 1");
  no_sql.representations.clear();
  EXPECT_EQ(NewViewMetadata(CountSchema(0), no_sql, "s3://b/v", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  ViewVersion two_spark = SparkVersion("SELECT 1");
  two_spark.representations.push_back({"SELECT 2", "Spark"});
  EXPECT_EQ(NewViewMetadata(CountSchema(0), two_spark, "s3://b/v", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewViewMetadata(CountSchema(0), SparkVersion("SELECT 1"), "", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewViewMetadata(nullptr, SparkVersion("SELECT 1"), "s3://b/v", {}, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewViewMetadata(CountSchema(0), SparkVersion("SELECT 1"), "s3://b/v",
                            {{std::string(kViewVersionHistoryProperty), "0"}}, 1)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

// ---- applying updates ----

TEST(ViewMetadataUpdatesTest, AddSchemaReusesEqualSchemaOrTakesNextId) {
  ViewMetadata base = NewView();
  // Equal to schema 0 apart from its id: reused, and "-1" in the version means schema 0.
  ViewMetadata m =
      MustApply(base, {AddSchema(CountSchema(8)), AddVersion(SparkVersion("SELECT 2", -1))}, 2000);
  ASSERT_EQ(m.schemas.size(), 1u);
  ASSERT_EQ(m.versions.size(), 2u);
  EXPECT_EQ(m.versions[1].schema_id, 0);

  // A new schema takes max id + 1 whatever id it came with.
  m = MustApply(base, {AddSchema(WiderSchema(0)), AddVersion(SparkVersion("SELECT 3", -1)),
                       SetCurrent(-1)},
                3000);
  ASSERT_EQ(m.schemas.size(), 2u);
  EXPECT_EQ(m.schemas[1]->schema_id(), 1);
  EXPECT_EQ(m.schemas[1]->fields().size(), 3u);
  EXPECT_EQ(m.versions[1].schema_id, 1);
  EXPECT_EQ(m.CurrentSchema(), m.schemas[1]);
  // Adding it again reuses id 1.
  ViewMetadata again = MustApply(m, {AddSchema(WiderSchema(5))}, 4000);
  EXPECT_EQ(again.schemas.size(), 2u);
}

TEST(ViewMetadataUpdatesTest, AddViewVersionTakesNextIdAndLogsTheChange) {
  ViewMetadata base = NewView();
  ViewVersion v = SparkVersion("SELECT 2", 0, 2500);
  v.version_id = 1;  // taken: the next id is used
  ViewMetadata m = MustApply(base, {AddVersion(v), SetCurrent(-1)}, 3000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{1, 2}));
  EXPECT_EQ(m.current_version_id, 2);
  // The version became current when it was written: its own timestamp, not the commit's.
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1000}, {2, 2500}}));
  EXPECT_EQ(base.versions.size(), 1u);  // the base is untouched

  // A version added without a timestamp gets now_ms; an id above all others is kept.
  ViewVersion later = SparkVersion("SELECT 3", 0, 0);
  later.version_id = 10;
  ViewMetadata m2 = MustApply(m, {AddVersion(later)}, 5000);
  EXPECT_EQ(VersionIds(m2), (std::vector<int>{1, 2, 10}));
  EXPECT_EQ(m2.versions[2].timestamp_ms, 5000);
  EXPECT_EQ(m2.current_version_id, 2);
  EXPECT_EQ(m2.version_log, m.version_log);  // adding alone does not change the current one
}

TEST(ViewMetadataUpdatesTest, AddViewVersionReusesEqualVersion) {
  ViewMetadata base = NewView();
  ViewMetadata m = MustApply(base, {AddVersion(SparkVersion("SELECT 2", 0, 2000)), SetCurrent(-1)},
                             2000);
  ASSERT_EQ(m.current_version_id, 2);
  // Version 1 again, with another id and timestamp: the same version, so id 1, and "-1" is it.
  ViewVersion same = SparkVersion("SELECT 1", 0, 7777);
  same.version_id = 42;
  ViewMetadata back = MustApply(m, {AddVersion(same), SetCurrent(-1)}, 8000);
  EXPECT_EQ(VersionIds(back), (std::vector<int>{1, 2}));
  EXPECT_EQ(back.current_version_id, 1);
  EXPECT_EQ(back.versions[0].timestamp_ms, 1000);  // the existing version is kept as it was
  // Set back to an older version (a rollback): logged with the commit's time.
  EXPECT_EQ(back.version_log, (std::vector<ViewLogEntry>{{1, 1000}, {2, 2000}, {1, 8000}}));

  // Another default catalog makes another version.
  ViewVersion other = SparkVersion("SELECT 1", 0, 7777);
  other.default_catalog = "prod";
  EXPECT_EQ(MustApply(base, {AddVersion(other)}, 9000).versions.size(), 2u);
}

TEST(ViewMetadataUpdatesTest, VersionLogOnlyOnChange) {
  ViewMetadata base = NewView();
  ViewMetadata m = MustApply(base, {SetCurrent(1)}, 2000);
  EXPECT_EQ(m.version_log, base.version_log);
  // Setting the current version twice in one commit logs the final one once.
  m = MustApply(base, {AddVersion(SparkVersion("SELECT 2", 0, 1500)),
                       AddVersion(SparkVersion("SELECT 3", 0, 1600)), SetCurrent(2), SetCurrent(3)},
                2000);
  EXPECT_EQ(m.current_version_id, 3);
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1000}, {3, 1600}}));
  // Away and back within one commit is no change.
  m = MustApply(base, {AddVersion(SparkVersion("SELECT 2", 0, 1500)), SetCurrent(2), SetCurrent(1)},
                2000);
  EXPECT_EQ(m.version_log, base.version_log);
}

TEST(ViewMetadataUpdatesTest, RefusesUpdatesThatCannotApply) {
  ViewMetadata base = NewView();
  EXPECT_EQ(ApplyCode(base, {SetCurrent(-1)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(base, {SetCurrent(7)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(base, {AddVersion(SparkVersion("SELECT 2", -1))}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(base, {AddVersion(SparkVersion("SELECT 2", 3))}),
            StatusCode::kInvalidArgument);
  ViewVersion two = SparkVersion("SELECT 2");
  two.representations.push_back({"SELECT 3", "SPARK"});
  EXPECT_EQ(ApplyCode(base, {AddVersion(two)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyCode(base, {AddSchema(nullptr)}), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataUpdatesTest, HistoryLimitDropsOldestNonCurrentVersions) {
  ViewMetadata m = NewView({{std::string(kViewVersionHistoryProperty), "2"}});
  m = MustApply(m, {AddVersion(SparkVersion("SELECT 2", 0, 2000)), SetCurrent(-1)}, 2000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{1, 2}));
  m = MustApply(m, {AddVersion(SparkVersion("SELECT 3", 0, 3000)), SetCurrent(-1)}, 3000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{2, 3}));
  // The log keeps nothing up to the last entry of the dropped version 1.
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{2, 2000}, {3, 3000}}));

  // Roll back to 2, then add 4 without making it current: 3 (oldest not current) goes.
  m = MustApply(m, {SetCurrent(2)}, 4000);
  m = MustApply(m, {AddVersion(SparkVersion("SELECT 4", 0, 5000))}, 5000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{2, 4}));
  EXPECT_EQ(m.current_version_id, 2);
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{2, 4000}}));

  // With a limit of 1, the current version and the one this commit added both stay.
  m = MustApply(m, {SetProperties({{std::string(kViewVersionHistoryProperty), "1"}}),
                    AddVersion(SparkVersion("SELECT 5", 0, 6000))},
                6000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{2, 5}));
  m = MustApply(m, {SetCurrent(5)}, 7000);
  EXPECT_EQ(VersionIds(m), (std::vector<int>{5}));
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{5, 7000}}));
  // The schemas no version uses any more stay.
  EXPECT_EQ(m.schemas.size(), 1u);

  EXPECT_EQ(ApplyCode(m, {SetProperties({{std::string(kViewVersionHistoryProperty), "x"}})}),
            StatusCode::kInvalidArgument);
}

TEST(ViewMetadataUpdatesTest, DefaultHistoryKeepsTenVersions) {
  ViewMetadata m = NewView();
  for (int i = 2; i <= 12; ++i) {
    m = MustApply(m, {AddVersion(SparkVersion("SELECT " + std::to_string(i), 0, i * 1000)),
                      SetCurrent(-1)},
                  i * 1000);
  }
  EXPECT_EQ(VersionIds(m), (std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(m.version_log.size(), 10u);
  EXPECT_EQ(m.version_log.front().version_id, 3);
}

TEST(ViewMetadataUpdatesTest, AssertViewUuidConflict) {
  ViewMetadata m = NewView();
  EXPECT_TRUE(CheckViewRequirement(m, {m.view_uuid}).ok());
  EXPECT_EQ(CheckViewRequirement(m, {std::string(kUuid)}).code(), StatusCode::kConflict);
  EXPECT_EQ(CheckViewRequirement(ViewMetadata{}, {std::string(kUuid)}).code(),
            StatusCode::kConflict);
}

TEST(ViewMetadataUpdatesTest, SetAndRemoveProperties) {
  ViewMetadata base = NewView({{"comment", "old"}, {"keep", "k"}});
  ViewUpdate remove;
  remove.kind = Kind::kRemoveProperties;
  remove.removals = {"keep", "absent"};
  ViewMetadata m = MustApply(base, {SetProperties({{"comment", "new"}, {"owner", "o"}}), remove},
                             2000);
  EXPECT_EQ(m.properties,
            (std::map<std::string, std::string>{{"comment", "new"}, {"owner", "o"}}));
  EXPECT_EQ(m.version_log, base.version_log);
  EXPECT_EQ(m.versions, base.versions);
}

TEST(ViewMetadataUpdatesTest, SetLocation) {
  ViewMetadata base = NewView();
  ViewUpdate u;
  u.kind = Kind::kSetLocation;
  u.location = "s3://other/v";
  EXPECT_EQ(MustApply(base, {u}, 2000).location, "s3://other/v");
  u.location.clear();
  EXPECT_EQ(ApplyCode(base, {u}), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataUpdatesTest, UpgradeFormatVersion) {
  ViewMetadata base = NewView();
  ViewUpdate u;
  u.kind = Kind::kUpgradeFormatVersion;
  u.format_version = 1;
  EXPECT_EQ(MustApply(base, {u}, 2000).format_version, 1);
  u.format_version = 2;
  EXPECT_EQ(ApplyCode(base, {u}), StatusCode::kInvalidArgument);
  u.format_version = 0;
  EXPECT_EQ(ApplyCode(base, {u}), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataUpdatesTest, AssignUuid) {
  ViewMetadata base = NewView();
  ViewUpdate u;
  u.kind = Kind::kAssignUuid;
  u.uuid = base.view_uuid;
  EXPECT_EQ(MustApply(base, {u}, 2000).view_uuid, base.view_uuid);
  u.uuid = std::string(kUuid);
  EXPECT_EQ(ApplyCode(base, {u}), StatusCode::kInvalidArgument);
}

TEST(ViewMetadataUpdatesTest, CreatesViewFromUpdates) {
  // What a REST client sends to create a view: everything from empty metadata.
  ViewUpdate assign;
  assign.kind = Kind::kAssignUuid;
  assign.uuid = std::string(kUuid);
  ViewUpdate location;
  location.kind = Kind::kSetLocation;
  location.location = "s3://b/v";
  ViewMetadata m = MustApply(ViewMetadata{},
                             {assign, AddSchema(CountSchema(0)), location,
                              SetProperties({{"comment", "c"}}),
                              AddVersion(SparkVersion("SELECT 1", -1, 1500)), SetCurrent(-1)},
                             2000);
  EXPECT_EQ(m.view_uuid, kUuid);
  EXPECT_EQ(VersionIds(m), std::vector<int>{1});
  EXPECT_EQ(m.current_version_id, 1);
  EXPECT_EQ(m.version_log, (std::vector<ViewLogEntry>{{1, 1500}}));
  ExpectSameMetadata(MustParse(ViewMetadataToJson(m)), m);
  // Without a version the result is no view.
  EXPECT_EQ(ApplyCode(ViewMetadata{}, {assign, AddSchema(CountSchema(0)), location}),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skade::iceberg
