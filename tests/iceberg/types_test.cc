// Types, schemas and name mappings.
#include <gtest/gtest.h>

#include "skade/base/json_parse_internal.h"
#include "skade/iceberg/schema.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/types.h"

namespace skade::iceberg {
namespace {

TEST(TypeTest, ParsesEveryPrimitive) {
  const std::vector<std::pair<std::string, TypeId>> cases = {
      {"boolean", TypeId::kBoolean},   {"int", TypeId::kInt},
      {"long", TypeId::kLong},         {"float", TypeId::kFloat},
      {"double", TypeId::kDouble},     {"date", TypeId::kDate},
      {"time", TypeId::kTime},         {"timestamp", TypeId::kTimestamp},
      {"timestamptz", TypeId::kTimestampTz}, {"timestamp_ns", TypeId::kTimestampNs},
      {"timestamptz_ns", TypeId::kTimestampTzNs}, {"string", TypeId::kString},
      {"uuid", TypeId::kUuid},         {"binary", TypeId::kBinary},
      {"unknown", TypeId::kUnknown},   {"variant", TypeId::kVariant}};
  for (const auto& [text, id] : cases) {
    auto t = Type::ParsePrimitive(text);
    ASSERT_TRUE(t.ok()) << text;
    EXPECT_EQ((*t)->id(), id);
    EXPECT_EQ((*t)->ToString(), text);
  }
  auto d = Type::ParsePrimitive("decimal(38, 10)");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->precision(), 38);
  EXPECT_EQ((*d)->scale(), 10);
  EXPECT_EQ((*d)->ToString(), "decimal(38,10)");
  auto f = Type::ParsePrimitive(" fixed[16] ");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->length(), 16);
  auto g = Type::ParsePrimitive("geometry(srid:4326)");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->id(), TypeId::kGeometry);
  EXPECT_EQ((*g)->ToString(), "geometry(srid:4326)");
}

TEST(TypeTest, RejectsMalformedTypes) {
  for (const char* bad : {"varchar", "decimal(39,0)", "decimal(5,6)", "decimal(x,1)", "fixed[0]",
                          "fixed[]", "decimal(9)", ""}) {
    EXPECT_EQ(Type::ParsePrimitive(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TypeTest, PromotionRules) {
  auto p = [](TypeId id) { return Type::Primitive(id); };
  EXPECT_TRUE(CanPromote(*p(TypeId::kInt), *p(TypeId::kLong)));
  EXPECT_FALSE(CanPromote(*p(TypeId::kLong), *p(TypeId::kInt)));
  EXPECT_TRUE(CanPromote(*p(TypeId::kFloat), *p(TypeId::kDouble)));
  EXPECT_TRUE(CanPromote(*Type::Decimal(9, 2), *Type::Decimal(18, 2)));
  EXPECT_FALSE(CanPromote(*Type::Decimal(9, 2), *Type::Decimal(18, 3)));
  EXPECT_FALSE(CanPromote(*Type::Decimal(18, 2), *Type::Decimal(9, 2)));
  EXPECT_FALSE(CanPromote(*p(TypeId::kString), *p(TypeId::kBinary)));
}

Schema NestedSchema() {
  NestedField id{1, "id", true, Type::Primitive(TypeId::kLong), "", {}, {}};
  NestedField inner{5, "city", false, Type::Primitive(TypeId::kString), "", {}, {}};
  NestedField addr{2, "Address", false, Type::Struct({inner}), "", {}, {}};
  NestedField tags{3, "tags", false, Type::List(4, Type::Primitive(TypeId::kString), true), "", {}, {}};
  NestedField props{6, "props", false,
                    Type::Map(7, Type::Primitive(TypeId::kString), 8, Type::Primitive(TypeId::kInt), false),
                    "", {}, {}};
  return Schema(0, {id, addr, tags, props}, {1});
}

TEST(SchemaTest, FindsFieldsByIdAndName) {
  Schema s = NestedSchema();
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.FindField(5)->name, "city");
  EXPECT_EQ(s.FindFieldByName("Address.city")->id, 5);
  EXPECT_EQ(s.FindFieldByName("address.CITY"), nullptr);
  EXPECT_EQ(s.FindFieldByName("address.CITY", /*case_sensitive=*/false)->id, 5);
  EXPECT_EQ(s.FindFieldByName("tags.element")->id, 4);
  EXPECT_EQ(s.FindFieldByName("props.value")->id, 8);
  EXPECT_EQ(s.FindColumnName(7), "props.key");
  EXPECT_EQ(s.HighestFieldId(), 8);
  EXPECT_EQ(s.FindField(99), nullptr);
}

TEST(SchemaTest, ValidateRejectsBadSchemas) {
  NestedField a{1, "a", true, Type::Primitive(TypeId::kInt), "", {}, {}};
  NestedField b{1, "b", true, Type::Primitive(TypeId::kInt), "", {}, {}};
  EXPECT_EQ(Schema(0, {a, b}).Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Schema(0, {a}, {2}).Validate().code(), StatusCode::kInvalidArgument);
  NestedField d{2, "d", true, Type::Primitive(TypeId::kDouble), "", {}, {}};
  EXPECT_EQ(Schema(0, {a, d}, {2}).Validate().code(), StatusCode::kInvalidArgument);
}

// A schema nesting `levels` types: a struct holding a list of the next level, and so on.
Schema NestedLevels(int levels) {
  int next_id = 1;
  TypePtr inner = Type::Primitive(TypeId::kInt);
  for (int i = 0; i < levels; ++i) {
    if (i % 2 == 0) {
      inner = Type::List(next_id++, inner, false);
    } else {
      inner = Type::Struct({NestedField{next_id++, "f", false, inner, "", {}, {}}});
    }
  }
  return Schema(0, {NestedField{next_id, "top", false, inner, "", {}, {}}});
}

// Every schema skade accepts writes metadata its own bounded JSON parser reads back: nesting
// deeper than the limit is refused where schemas enter (creation, add-schema, evolution).
TEST(SchemaTest, TypesNestAtMostTheLimit) {
  const Schema deepest = NestedLevels(Schema::kMaxTypeNesting);
  ASSERT_TRUE(deepest.Validate().ok()) << deepest.Validate().ToString();
  auto parsed = ParseJson(SchemaToJson(deepest), "schema");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  // Inside a metadata file the schema sits four levels down (document, schemas, schema).
  EXPECT_LT(3 * Schema::kMaxTypeNesting + 8, static_cast<int>(kMaxJsonNesting));
  const Status deeper = NestedLevels(Schema::kMaxTypeNesting + 1).Validate();
  EXPECT_EQ(deeper.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(deeper.message().find("nest more than 64"), std::string::npos) << deeper.ToString();
}

TEST(NameMappingTest, ParsesAndRoundTrips) {
  auto m = NameMapping::Parse(R"([{"field-id": 1, "names": ["id", "record_id"]},
      {"field-id": 2, "names": ["data"], "fields": [{"field-id": 3, "names": ["x"]}]},
      {"names": ["unmapped"]}])");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->FindTopLevel("record_id"), 1);
  EXPECT_EQ(m->FindTopLevel("data"), 2);
  EXPECT_FALSE(m->FindTopLevel("unmapped").has_value());
  EXPECT_FALSE(m->FindTopLevel("x").has_value());
  auto again = NameMapping::Parse(m->ToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToJson(), m->ToJson());
  EXPECT_FALSE(NameMapping::Parse("{").ok());
  EXPECT_FALSE(NameMapping::Parse(R"([{"field-id": "one", "names": []}])").ok());
  NameMapping from = NameMapping::FromSchema(NestedSchema());
  EXPECT_EQ(from.FindTopLevel("Address"), 2);
}

}  // namespace
}  // namespace skade::iceberg
