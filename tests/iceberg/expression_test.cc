#include "skade/iceberg/expression.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "skade/iceberg/transform.h"

namespace skade::iceberg {
namespace {

constexpr int32_t kDays20171116 = 17486;
constexpr int64_t kMicros20171116 = 1510790400000000;     // 2017-11-16T00:00Z
constexpr int64_t kMicros20171116T10 = 1510826400000000;  // 2017-11-16T10:00Z
constexpr int64_t kMicrosPerHour = 3'600'000'000;

NestedField Field(int id, std::string name, TypePtr type, bool required = false) {
  NestedField f;
  f.id = id;
  f.name = std::move(name);
  f.type = std::move(type);
  f.required = required;
  return f;
}

TypePtr P(TypeId id) { return Type::Primitive(id); }

SchemaPtr TestSchema() {
  std::vector<NestedField> fields = {
      Field(1, "id", P(TypeId::kLong), true),
      Field(2, "data", P(TypeId::kString)),
      Field(3, "ts", P(TypeId::kTimestampTz)),
      Field(4, "d", P(TypeId::kDate)),
      Field(5, "f", P(TypeId::kDouble)),
      Field(6, "price", Type::Decimal(9, 2)),
      Field(7, "i", P(TypeId::kInt)),
      Field(8, "s", Type::Struct({Field(9, "inner", P(TypeId::kInt), true)})),
      Field(10, "tags", Type::List(11, P(TypeId::kString), false)),
      Field(12, "m", Type::Map(13, P(TypeId::kString), 14, P(TypeId::kInt), false)),
      Field(15, "ts_ns", P(TypeId::kTimestampNs)),
  };
  return std::make_shared<const Schema>(0, std::move(fields));
}

ExprPtr MustBind(const ExprPtr& e, const Schema& schema) {
  auto r = Bind(e, schema);
  EXPECT_TRUE(r.ok()) << e->ToString() << ": " << r.status().ToString();
  return r.ok() ? *r : AlwaysFalse();
}

StatusCode BindCode(const ExprPtr& e) { return Bind(e, *TestSchema()).status().code(); }

PartitionSpec Spec(std::vector<PartitionField> fields) {
  return PartitionSpec(0, std::move(fields));
}

PartitionField PField(int source_id, int field_id, std::string name, Transform t) {
  PartitionField f;
  f.source_id = source_id;
  f.field_id = field_id;
  f.name = std::move(name);
  f.transform = t;
  return f;
}

// Binds `e` to the test schema and projects it through `spec`.
ExprPtr Project(const ExprPtr& e, const PartitionSpec& spec) {
  SchemaPtr schema = TestSchema();
  return ProjectInclusive(MustBind(e, *schema), spec, *schema);
}

void ExpectPredicate(const ExprPtr& e, Operation op, int field_id,
                     const std::vector<Literal>& literals) {
  ASSERT_EQ(e->op(), op) << e->ToString();
  EXPECT_EQ(e->field_id(), field_id) << e->ToString();
  ASSERT_EQ(e->literals().size(), literals.size()) << e->ToString();
  for (size_t i = 0; i < literals.size(); ++i) {
    EXPECT_EQ(CompareLiterals(e->literals()[i], literals[i]), 0) << e->ToString();
    EXPECT_EQ(e->literals()[i].value().index(), literals[i].value().index()) << e->ToString();
  }
}

// ---- factories, binding, RewriteNot ----

TEST(ExpressionTest, FactoriesFoldConstants) {
  ExprPtr p = Predicate(Operation::kEq, "id", {Literal::Long(1)});
  EXPECT_EQ(And(AlwaysTrue(), p), p);
  EXPECT_EQ(And(p, AlwaysFalse())->op(), Operation::kFalse);
  EXPECT_EQ(Or(AlwaysTrue(), p)->op(), Operation::kTrue);
  EXPECT_EQ(Or(AlwaysFalse(), p), p);
  EXPECT_EQ(Not(AlwaysTrue())->op(), Operation::kFalse);
  EXPECT_EQ(Not(Not(p)), p);
  EXPECT_EQ(Predicate(Operation::kIn, "id", {})->op(), Operation::kFalse);
  EXPECT_EQ(Predicate(Operation::kNotIn, "id", {})->op(), Operation::kTrue);
  EXPECT_FALSE(p->is_bound());
  EXPECT_TRUE(p->is_predicate());
  EXPECT_FALSE(And(p, p)->is_predicate());
}

TEST(ExpressionTest, ToStringIsReadable) {
  ExprPtr e =
      And(Predicate(Operation::kLt, "id", {Literal::Long(5)}),
          Not(Predicate(Operation::kIn, "data", {Literal::String("a"), Literal::String("b")})));
  EXPECT_EQ(e->ToString(), "(id < 5 and not(data in ('a', 'b')))");
  EXPECT_EQ(Predicate(Operation::kIsNull, "x")->ToString(), "x is null");
  EXPECT_EQ(Predicate(Operation::kStartsWith, "x", {Literal::String("ab")})->ToString(),
            "x startsWith 'ab'");
}

TEST(ExpressionTest, BindResolvesNamesAndConvertsLiterals) {
  SchemaPtr schema = TestSchema();
  ExprPtr b = MustBind(Predicate(Operation::kLt, "id", {Literal::Int(5)}), *schema);
  ExpectPredicate(b, Operation::kLt, 1, {Literal::Long(5)});
  EXPECT_EQ(b->literals()[0].type_id(), TypeId::kLong);
  EXPECT_TRUE(b->is_bound());

  ExprPtr nested = MustBind(Predicate(Operation::kEq, "s.inner", {Literal::Int(3)}), *schema);
  ExpectPredicate(nested, Operation::kEq, 9, {Literal::Int(3)});

  ExprPtr date = MustBind(Predicate(Operation::kEq, "d", {Literal::String("2017-11-16")}), *schema);
  ExpectPredicate(date, Operation::kEq, 4, {Literal::Date(kDays20171116)});
  EXPECT_EQ(date->literals()[0].type_id(), TypeId::kDate);

  ExprPtr dec = MustBind(Predicate(Operation::kGt, "price", {Literal::String("14.2")}), *schema);
  ExpectPredicate(dec, Operation::kGt, 6, {Literal::Decimal(1420, 9, 2)});

  auto insensitive = Bind(Predicate(Operation::kEq, "ID", {Literal::Long(1)}), *schema,
                          /*case_sensitive=*/false);
  ASSERT_TRUE(insensitive.ok());
  EXPECT_EQ((*insensitive)->field_id(), 1);
}

TEST(ExpressionTest, BindRejectsBadReferencesAndLiterals) {
  EXPECT_EQ(BindCode(Predicate(Operation::kEq, "ID", {Literal::Long(1)})),
            StatusCode::kInvalidArgument);  // case-sensitive by default
  EXPECT_EQ(BindCode(Predicate(Operation::kEq, "nope", {Literal::Long(1)})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kIsNull, "s")), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kNotNull, "tags")), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kIsNull, "m")), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kEq, "d", {Literal::String("yesterday")})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kEq, "i", {Literal::Boolean(true)})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kStartsWith, "i", {Literal::String("1")})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kIsNan, "id")), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kEq, "f", {Literal::Double(std::nan(""))})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kLt, "id")), StatusCode::kInvalidArgument);
  EXPECT_EQ(BindCode(Predicate(Operation::kIsNull, "id", {Literal::Long(1)})),
            StatusCode::kInvalidArgument);
  // Errors inside and/or/not surface too.
  EXPECT_EQ(BindCode(Or(Predicate(Operation::kEq, "id", {Literal::Long(1)}),
                        Not(Predicate(Operation::kEq, "nope", {Literal::Long(1)})))),
            StatusCode::kInvalidArgument);
}

TEST(ExpressionTest, BindFoldsNullChecksOnRequiredColumns) {
  SchemaPtr schema = TestSchema();
  EXPECT_EQ(MustBind(Predicate(Operation::kIsNull, "id"), *schema)->op(), Operation::kFalse);
  EXPECT_EQ(MustBind(Predicate(Operation::kNotNull, "id"), *schema)->op(), Operation::kTrue);
  // s.inner is required but its struct is optional, so it can still be null.
  ExpectPredicate(MustBind(Predicate(Operation::kIsNull, "s.inner"), *schema), Operation::kIsNull,
                  9, {});
  ExpectPredicate(MustBind(Predicate(Operation::kIsNan, "f"), *schema), Operation::kIsNan, 5, {});
}

TEST(ExpressionTest, BindDedupesSetsAndFoldsOutOfRangeLiterals) {
  SchemaPtr schema = TestSchema();
  ExprPtr in = MustBind(
      Predicate(Operation::kIn, "i", {Literal::Long(3), Literal::Int(3), Literal::Long(1)}),
      *schema);
  ExpectPredicate(in, Operation::kIn, 7, {Literal::Int(1), Literal::Int(3)});
  ExprPtr single =
      MustBind(Predicate(Operation::kNotIn, "i", {Literal::Int(3), Literal::Long(3)}), *schema);
  ExpectPredicate(single, Operation::kNotEq, 7, {Literal::Int(3)});

  Literal big = Literal::Long(int64_t{1} << 40);
  Literal small = Literal::Long(-(int64_t{1} << 40));
  auto bound_op = [&](Operation op, const Literal& v) {
    return MustBind(Predicate(op, "i", {v}), *schema)->op();
  };
  EXPECT_EQ(bound_op(Operation::kLt, big), Operation::kTrue);
  EXPECT_EQ(bound_op(Operation::kGtEq, big), Operation::kFalse);
  EXPECT_EQ(bound_op(Operation::kEq, big), Operation::kFalse);
  EXPECT_EQ(bound_op(Operation::kNotEq, big), Operation::kTrue);
  EXPECT_EQ(bound_op(Operation::kGt, small), Operation::kTrue);
  EXPECT_EQ(bound_op(Operation::kLtEq, small), Operation::kFalse);
  EXPECT_EQ(MustBind(Predicate(Operation::kIn, "i", {big}), *schema)->op(), Operation::kFalse);
  EXPECT_EQ(MustBind(Predicate(Operation::kNotIn, "i", {big}), *schema)->op(), Operation::kTrue);
  ExpectPredicate(MustBind(Predicate(Operation::kIn, "i", {big, Literal::Int(2)}), *schema),
                  Operation::kEq, 7, {Literal::Int(2)});
}

TEST(ExpressionTest, RewriteNotPushesNegationToPredicates) {
  SchemaPtr schema = TestSchema();
  ExprPtr e = MustBind(Not(And(Predicate(Operation::kLt, "id", {Literal::Long(5)}),
                               Predicate(Operation::kIsNull, "data"))),
                       *schema);
  ExprPtr r = RewriteNot(e);
  ASSERT_EQ(r->op(), Operation::kOr);
  ExpectPredicate(r->children()[0], Operation::kGtEq, 1, {Literal::Long(5)});
  ExpectPredicate(r->children()[1], Operation::kNotNull, 2, {});
  EXPECT_EQ(r->ToString(), "(id >= 5 or data is not null)");

  ExprPtr o = RewriteNot(Not(Or(Predicate(Operation::kIn, "x", {Literal::Int(1), Literal::Int(2)}),
                                Predicate(Operation::kStartsWith, "y", {Literal::String("a")}))));
  ASSERT_EQ(o->op(), Operation::kAnd);
  EXPECT_EQ(o->children()[0]->op(), Operation::kNotIn);
  EXPECT_EQ(o->children()[1]->op(), Operation::kNotStartsWith);

  const std::pair<Operation, Operation> pairs[] = {
      {Operation::kLt, Operation::kGtEq},        {Operation::kLtEq, Operation::kGt},
      {Operation::kEq, Operation::kNotEq},       {Operation::kIsNan, Operation::kNotNan},
      {Operation::kNotNull, Operation::kIsNull},
  };
  for (auto [op, negated] : pairs) {
    std::vector<Literal> lits;
    if (op != Operation::kIsNan && op != Operation::kNotNull) lits.push_back(Literal::Int(1));
    EXPECT_EQ(RewriteNot(Not(Predicate(op, "x", lits)))->op(), negated);
  }
  // Double negation disappears; the inner tree is still rewritten.
  ExprPtr inner = Not(Predicate(Operation::kEq, "x", {Literal::Int(1)}));
  auto doubled = std::make_shared<const Expression>(Operation::kNot, std::vector<ExprPtr>{inner},
                                                    "", -1, std::vector<Literal>{});
  EXPECT_EQ(RewriteNot(doubled)->op(), Operation::kEq);
  EXPECT_EQ(RewriteNot(Not(AlwaysFalse()))->op(), Operation::kTrue);
}

// ---- inclusive projection ----

TEST(ExpressionTest, ProjectsIdentityUnchanged) {
  PartitionSpec spec = Spec({PField(1, 1000, "id", Transform::Identity())});
  ExpectPredicate(Project(Predicate(Operation::kLt, "id", {Literal::Long(5)}), spec),
                  Operation::kLt, 1000, {Literal::Long(5)});
  ExpectPredicate(Project(Predicate(Operation::kNotEq, "id", {Literal::Long(5)}), spec),
                  Operation::kNotEq, 1000, {Literal::Long(5)});
  ExpectPredicate(
      Project(Not(Predicate(Operation::kIn, "id", {Literal::Long(1), Literal::Long(2)})), spec),
      Operation::kNotIn, 1000, {Literal::Long(1), Literal::Long(2)});
  // A column without a partition field projects to true.
  EXPECT_EQ(Project(Predicate(Operation::kEq, "i", {Literal::Int(1)}), spec)->op(),
            Operation::kTrue);
  ExprPtr mixed = Project(And(Predicate(Operation::kEq, "id", {Literal::Long(1)}),
                              Predicate(Operation::kEq, "i", {Literal::Int(1)})),
                          spec);
  ExpectPredicate(mixed, Operation::kEq, 1000, {Literal::Long(1)});
  EXPECT_EQ(Project(Or(Predicate(Operation::kEq, "id", {Literal::Long(1)}),
                       Predicate(Operation::kEq, "i", {Literal::Int(1)})),
                    spec)
                ->op(),
            Operation::kTrue);
}

TEST(ExpressionTest, ProjectsBucketEqualityOnly) {
  PartitionSpec spec = Spec({PField(2, 1000, "data_bucket", Transform::Bucket(16))});
  // hash("iceberg") = 1210000089 (spec Appendix B); 1210000089 % 16 = 9.
  ExpectPredicate(Project(Predicate(Operation::kEq, "data", {Literal::String("iceberg")}), spec),
                  Operation::kEq, 1000, {Literal::Int(9)});
  ExprPtr in = Project(Predicate(Operation::kIn, "data",
                                 {Literal::String("partition_0"), Literal::String("partition_1"),
                                  Literal::String("iceberg")}),
                       spec);
  ASSERT_EQ(in->op(), Operation::kIn);
  std::vector<Literal> expected = {Literal::Int(BucketOf(Literal::String("partition_0"), 16)),
                                   Literal::Int(BucketOf(Literal::String("partition_1"), 16)),
                                   Literal::Int(9)};
  for (const Literal& want : expected) {
    bool found = false;
    for (const Literal& got : in->literals()) found = found || CompareLiterals(got, want) == 0;
    EXPECT_TRUE(found) << want.ToString() << " in " << in->ToString();
  }
  for (Operation op : {Operation::kLt, Operation::kGtEq, Operation::kNotEq, Operation::kStartsWith,
                       Operation::kNotStartsWith}) {
    EXPECT_EQ(Project(Predicate(op, "data", {Literal::String("x")}), spec)->op(), Operation::kTrue);
  }
  ExpectPredicate(Project(Predicate(Operation::kIsNull, "data"), spec), Operation::kIsNull, 1000,
                  {});
  ExpectPredicate(Project(Predicate(Operation::kNotNull, "data"), spec), Operation::kNotNull, 1000,
                  {});
}

TEST(ExpressionTest, ProjectsTruncateOnIntegers) {
  PartitionSpec spec = Spec({PField(7, 1000, "i_trunc", Transform::Truncate(10))});
  auto project = [&](Operation op, int32_t v) {
    return Project(Predicate(op, "i", {Literal::Int(v)}), spec);
  };
  ExpectPredicate(project(Operation::kLt, 25), Operation::kLtEq, 1000, {Literal::Int(20)});
  ExpectPredicate(project(Operation::kLt, 30), Operation::kLtEq, 1000, {Literal::Int(20)});
  ExpectPredicate(project(Operation::kLtEq, 30), Operation::kLtEq, 1000, {Literal::Int(30)});
  ExpectPredicate(project(Operation::kGt, 29), Operation::kGtEq, 1000, {Literal::Int(30)});
  ExpectPredicate(project(Operation::kGt, 25), Operation::kGtEq, 1000, {Literal::Int(20)});
  ExpectPredicate(project(Operation::kGtEq, 25), Operation::kGtEq, 1000, {Literal::Int(20)});
  ExpectPredicate(project(Operation::kEq, 25), Operation::kEq, 1000, {Literal::Int(20)});
  ExpectPredicate(project(Operation::kLt, -5), Operation::kLtEq, 1000, {Literal::Int(-10)});
  ExpectPredicate(project(Operation::kEq, -1), Operation::kEq, 1000, {Literal::Int(-10)});
  EXPECT_EQ(project(Operation::kNotEq, 25)->op(), Operation::kTrue);
  EXPECT_EQ(project(Operation::kLt, std::numeric_limits<int32_t>::min())->op(), Operation::kFalse);
  EXPECT_EQ(project(Operation::kGt, std::numeric_limits<int32_t>::max())->op(), Operation::kFalse);
  ExpectPredicate(
      Project(Predicate(Operation::kIn, "i", {Literal::Int(5), Literal::Int(15), Literal::Int(17)}),
              spec),
      Operation::kIn, 1000, {Literal::Int(0), Literal::Int(10)});
  EXPECT_EQ(
      Project(Predicate(Operation::kNotIn, "i", {Literal::Int(5), Literal::Int(15)}), spec)->op(),
      Operation::kTrue);
}

TEST(ExpressionTest, ProjectsTruncateOnDecimalsAndStrings) {
  PartitionSpec dec = Spec({PField(6, 1000, "price_trunc", Transform::Truncate(50))});
  // price < 10.65 ⇒ price <= 10.64 ⇒ truncate <= 10.50.
  ExpectPredicate(Project(Predicate(Operation::kLt, "price", {Literal::Decimal(1065, 9, 2)}), dec),
                  Operation::kLtEq, 1000, {Literal::Decimal(1050, 9, 2)});
  ExpectPredicate(Project(Predicate(Operation::kGt, "price", {Literal::Decimal(1049, 9, 2)}), dec),
                  Operation::kGtEq, 1000, {Literal::Decimal(1050, 9, 2)});

  PartitionSpec str = Spec({PField(2, 1000, "data_trunc", Transform::Truncate(3))});
  auto project = [&](Operation op, const char* v) {
    return Project(Predicate(op, "data", {Literal::String(v)}), str);
  };
  ExpectPredicate(project(Operation::kLt, "abcd"), Operation::kLtEq, 1000,
                  {Literal::String("abc")});
  ExpectPredicate(project(Operation::kGt, "abcd"), Operation::kGtEq, 1000,
                  {Literal::String("abc")});
  ExpectPredicate(project(Operation::kEq, "iceberg"), Operation::kEq, 1000,
                  {Literal::String("ice")});
  ExpectPredicate(project(Operation::kStartsWith, "ab"), Operation::kStartsWith, 1000,
                  {Literal::String("ab")});
  ExpectPredicate(project(Operation::kStartsWith, "abcd"), Operation::kEq, 1000,
                  {Literal::String("abc")});
  ExpectPredicate(project(Operation::kStartsWith, "abc"), Operation::kEq, 1000,
                  {Literal::String("abc")});
  // Width counts code points: "éé" is 2 code points (4 bytes), shorter than W=3.
  ExpectPredicate(project(Operation::kStartsWith, "\xc3\xa9\xc3\xa9"), Operation::kStartsWith, 1000,
                  {Literal::String("\xc3\xa9\xc3\xa9")});
  EXPECT_EQ(project(Operation::kNotStartsWith, "abcd")->op(), Operation::kTrue);
  EXPECT_EQ(project(Operation::kNotEq, "abcd")->op(), Operation::kTrue);
}

TEST(ExpressionTest, ProjectsTimeTransforms) {
  PartitionSpec day = Spec({PField(3, 1000, "ts_day", Transform::Day())});
  auto project = [&](const PartitionSpec& spec, Operation op, int64_t micros) {
    return Project(Predicate(op, "ts", {Literal::TimestampTz(micros)}), spec);
  };
  // ts < 2017-11-16T00:00 ⇒ ts <= 2017-11-15T23:59:59.999999 ⇒ day <= 17485.
  ExpectPredicate(project(day, Operation::kLt, kMicros20171116), Operation::kLtEq, 1000,
                  {Literal::Int(kDays20171116 - 1)});
  ExpectPredicate(project(day, Operation::kLtEq, kMicros20171116), Operation::kLtEq, 1000,
                  {Literal::Int(kDays20171116)});
  ExpectPredicate(project(day, Operation::kGt, kMicros20171116T10), Operation::kGtEq, 1000,
                  {Literal::Int(kDays20171116)});
  ExpectPredicate(project(day, Operation::kGtEq, kMicros20171116T10), Operation::kGtEq, 1000,
                  {Literal::Int(kDays20171116)});
  ExpectPredicate(project(day, Operation::kEq, kMicros20171116T10), Operation::kEq, 1000,
                  {Literal::Int(kDays20171116)});
  EXPECT_EQ(project(day, Operation::kNotEq, kMicros20171116T10)->op(), Operation::kTrue);

  PartitionSpec hour = Spec({PField(3, 1000, "ts_hour", Transform::Hour())});
  int64_t t = (DaysFromCivil(2020, 1, 1) * 24 + 8) * kMicrosPerHour;
  ExpectPredicate(project(hour, Operation::kEq, t), Operation::kEq, 1000, {Literal::Int(438296)});
  ExpectPredicate(project(hour, Operation::kLt, t), Operation::kLtEq, 1000, {Literal::Int(438295)});

  PartitionSpec year = Spec({PField(4, 1000, "d_year", Transform::Year())});
  ExpectPredicate(Project(Predicate(Operation::kLt, "d", {Literal::Date(kDays20171116)}), year),
                  Operation::kLtEq, 1000, {Literal::Int(47)});
  ExpectPredicate(
      Project(Predicate(Operation::kLt, "d", {Literal::Date(DaysFromCivil(2017, 1, 1))}), year),
      Operation::kLtEq, 1000, {Literal::Int(46)});
  PartitionSpec month = Spec({PField(4, 1000, "d_month", Transform::Month())});
  ExpectPredicate(Project(Predicate(Operation::kGtEq, "d", {Literal::Date(kDays20171116)}), month),
                  Operation::kGtEq, 1000, {Literal::Int(574)});

  PartitionSpec ns_day = Spec({PField(15, 1000, "ts_ns_day", Transform::Day())});
  ExpectPredicate(
      Project(Predicate(Operation::kLt, "ts_ns", {Literal::TimestampNs(kMicros20171116 * 1000)}),
              ns_day),
      Operation::kLtEq, 1000, {Literal::Int(kDays20171116 - 1)});

  EXPECT_EQ(Project(Predicate(Operation::kIsNan, "f"),
                    Spec({PField(5, 1000, "f_b", Transform::Bucket(2))}))
                ->op(),
            Operation::kTrue);
}

// Pre-epoch values: partition values floor correctly, and (as the reference implementation
// does for files from writers that truncated toward zero) projections touching negative
// values are widened by one unit.
TEST(ExpressionTest, ProjectsTimeTransformsBeforeEpoch) {
  PartitionSpec day = Spec({PField(3, 1000, "ts_day", Transform::Day())});
  auto project = [&](Operation op, int64_t micros) {
    return Project(Predicate(op, "ts", {Literal::TimestampTz(micros)}), day);
  };
  const int64_t noon_dec31 = -12 * kMicrosPerHour;  // 1969-12-31T12:00Z, day -1
  ExpectPredicate(project(Operation::kEq, noon_dec31), Operation::kIn, 1000,
                  {Literal::Int(-1), Literal::Int(0)});
  // ts < 1970-01-01T00:00 ⇒ ts <= -1µs ⇒ day <= -1, widened to day <= 0.
  ExpectPredicate(project(Operation::kLt, 0), Operation::kLtEq, 1000, {Literal::Int(0)});
  ExpectPredicate(project(Operation::kLtEq, noon_dec31), Operation::kLtEq, 1000, {Literal::Int(0)});
  // Lower bounds need no widening.
  ExpectPredicate(project(Operation::kGtEq, noon_dec31), Operation::kGtEq, 1000,
                  {Literal::Int(-1)});
  ExpectPredicate(project(Operation::kGt, -2 * 24 * kMicrosPerHour), Operation::kGtEq, 1000,
                  {Literal::Int(-2)});
  // Positive values are untouched.
  ExpectPredicate(project(Operation::kEq, 1), Operation::kEq, 1000, {Literal::Int(0)});

  PartitionSpec month = Spec({PField(4, 1000, "d_month", Transform::Month())});
  ExprPtr in = Project(Predicate(Operation::kIn, "d",
                                 {Literal::Date(DaysFromCivil(1969, 11, 5)),
                                  Literal::Date(DaysFromCivil(2000, 1, 1))}),
                       month);
  ExpectPredicate(in, Operation::kIn, 1000,
                  {Literal::Int(-2), Literal::Int(-1), Literal::Int(360)});
}

TEST(ExpressionTest, ProjectsThroughSeveralFieldsAndVoid) {
  PartitionSpec spec = Spec({PField(3, 1000, "ts_day", Transform::Day()),
                             PField(3, 1001, "ts_bucket", Transform::Bucket(4)),
                             PField(3, 1002, "ts_void", Transform::Void())});
  ExprPtr e =
      Project(Predicate(Operation::kEq, "ts", {Literal::TimestampTz(kMicros20171116T10)}), spec);
  ASSERT_EQ(e->op(), Operation::kAnd);
  ExpectPredicate(e->children()[0], Operation::kEq, 1000, {Literal::Int(kDays20171116)});
  ExpectPredicate(e->children()[1], Operation::kEq, 1001,
                  {Literal::Int(BucketOf(Literal::TimestampTz(kMicros20171116T10), 4))});
  PartitionSpec only_void = Spec({PField(3, 1000, "ts_void", Transform::Void())});
  EXPECT_EQ(Project(Predicate(Operation::kIsNull, "ts"), only_void)->op(), Operation::kTrue);
  EXPECT_EQ(Project(Predicate(Operation::kEq, "ts", {Literal::TimestampTz(1)}), only_void)->op(),
            Operation::kTrue);
}

// ---- evaluators ----

TEST(PartitionEvaluatorTest, EvaluatesTuplesExactly) {
  PartitionSpec spec = Spec(
      {PField(7, 1000, "i", Transform::Identity()), PField(3, 1001, "ts_day", Transform::Day())});
  ExprPtr filter = And(Predicate(Operation::kGtEq, "i", {Literal::Int(5)}),
                       Predicate(Operation::kEq, "ts", {Literal::TimestampTz(kMicros20171116T10)}));
  PartitionEvaluator eval(Project(filter, spec), spec);
  EXPECT_TRUE(eval.Eval({Literal::Int(5), Literal::Int(kDays20171116)}));
  EXPECT_FALSE(eval.Eval({Literal::Int(4), Literal::Int(kDays20171116)}));
  EXPECT_FALSE(eval.Eval({Literal::Int(5), Literal::Int(kDays20171116 + 1)}));
  // Manifests written by other engines may type the day partition as date.
  EXPECT_TRUE(eval.Eval({Literal::Int(6), Literal::Date(kDays20171116)}));
  EXPECT_FALSE(eval.Eval({std::nullopt, Literal::Int(kDays20171116)}));

  PartitionEvaluator nulls(Project(Predicate(Operation::kIsNull, "i"), spec), spec);
  EXPECT_TRUE(nulls.Eval({std::nullopt, std::nullopt}));
  EXPECT_FALSE(nulls.Eval({Literal::Int(1), std::nullopt}));

  PartitionEvaluator not_in(
      Project(Not(Predicate(Operation::kIn, "i", {Literal::Int(1), Literal::Int(2)})), spec), spec);
  EXPECT_FALSE(not_in.Eval({Literal::Int(2), std::nullopt}));
  EXPECT_TRUE(not_in.Eval({Literal::Int(3), std::nullopt}));

  PartitionSpec str = Spec({PField(2, 1000, "data_trunc", Transform::Truncate(3))});
  PartitionEvaluator starts(
      Project(Predicate(Operation::kStartsWith, "data", {Literal::String("ab")}), str), str);
  EXPECT_TRUE(starts.Eval({Literal::String("abc")}));
  EXPECT_FALSE(starts.Eval({Literal::String("acc")}));

  // An int partition value of a column since promoted to long still compares.
  PartitionSpec id = Spec({PField(1, 1000, "id", Transform::Identity())});
  PartitionEvaluator promoted(Project(Predicate(Operation::kLt, "id", {Literal::Long(10)}), id),
                              id);
  EXPECT_TRUE(promoted.Eval({Literal::Int(9)}));
  EXPECT_FALSE(promoted.Eval({Literal::Int(10)}));
}

FieldSummary Summary(bool contains_null, std::optional<Literal> lower, std::optional<Literal> upper,
                     std::optional<bool> contains_nan = std::nullopt) {
  FieldSummary s;
  s.contains_null = contains_null;
  s.contains_nan = contains_nan;
  if (lower) s.lower_bound = lower->ToBinary();
  if (upper) s.upper_bound = upper->ToBinary();
  return s;
}

ManifestFile Manifest(std::vector<FieldSummary> partitions) {
  ManifestFile m;
  m.manifest_path = "m.avro";
  m.partitions = std::move(partitions);
  return m;
}

class ManifestEvaluatorTest : public ::testing::Test {
 protected:
  bool MightMatch(const ExprPtr& filter, const PartitionSpec& spec, const ManifestFile& m) {
    SchemaPtr schema = TestSchema();
    auto ptype = spec.PartitionType(*schema);
    EXPECT_TRUE(ptype.ok());
    ManifestEvaluator eval(Project(filter, spec), spec, *ptype);
    return eval.MightMatch(m);
  }
  PartitionSpec ints_ = Spec({PField(7, 1000, "i", Transform::Identity())});
};

TEST_F(ManifestEvaluatorTest, UsesBoundsInclusively) {
  ManifestFile m = Manifest({Summary(false, Literal::Int(10), Literal::Int(20))});
  auto match = [&](Operation op, std::vector<Literal> lits) {
    return MightMatch(Predicate(op, "i", std::move(lits)), ints_, m);
  };
  EXPECT_FALSE(match(Operation::kEq, {Literal::Int(5)}));
  EXPECT_TRUE(match(Operation::kEq, {Literal::Int(10)}));
  EXPECT_TRUE(match(Operation::kEq, {Literal::Int(20)}));
  EXPECT_FALSE(match(Operation::kEq, {Literal::Int(21)}));
  EXPECT_FALSE(match(Operation::kLt, {Literal::Int(10)}));
  EXPECT_TRUE(match(Operation::kLtEq, {Literal::Int(10)}));
  EXPECT_FALSE(match(Operation::kGt, {Literal::Int(20)}));
  EXPECT_TRUE(match(Operation::kGtEq, {Literal::Int(20)}));
  EXPECT_TRUE(match(Operation::kNotEq, {Literal::Int(10)}));
  EXPECT_FALSE(match(Operation::kIn, {Literal::Int(1), Literal::Int(25)}));
  EXPECT_TRUE(match(Operation::kIn, {Literal::Int(1), Literal::Int(15)}));
  EXPECT_FALSE(match(Operation::kIsNull, {}));
  EXPECT_TRUE(match(Operation::kNotNull, {}));
  EXPECT_FALSE(MightMatch(Not(Predicate(Operation::kLtEq, "i", {Literal::Int(20)})), ints_, m));
  // A very large in-list is not checked.
  std::vector<Literal> many;
  for (int v = 100; v < 400; ++v) many.push_back(Literal::Int(v));
  EXPECT_TRUE(match(Operation::kIn, many));
}

TEST_F(ManifestEvaluatorTest, HandlesAllNullAndMissingSummaries) {
  ManifestFile all_null = Manifest({Summary(true, std::nullopt, std::nullopt)});
  EXPECT_TRUE(MightMatch(Predicate(Operation::kIsNull, "i"), ints_, all_null));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kNotNull, "i"), ints_, all_null));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kEq, "i", {Literal::Int(1)}), ints_, all_null));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kLt, "i", {Literal::Int(1)}), ints_, all_null));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotEq, "i", {Literal::Int(1)}), ints_, all_null));
  // No summaries at all: anything may match.
  EXPECT_TRUE(MightMatch(Predicate(Operation::kEq, "i", {Literal::Int(1)}), ints_, Manifest({})));
  // Undecodable bounds are ignored rather than trusted.
  FieldSummary bad;
  bad.lower_bound = std::string("\x01\x02", 2);
  bad.upper_bound = std::string("\x01\x02", 2);
  EXPECT_TRUE(
      MightMatch(Predicate(Operation::kEq, "i", {Literal::Int(1)}), ints_, Manifest({bad})));
}

TEST_F(ManifestEvaluatorTest, ProjectsThroughTransforms) {
  PartitionSpec day = Spec({PField(3, 1000, "ts_day", Transform::Day())});
  ManifestFile m =
      Manifest({Summary(false, Literal::Int(kDays20171116), Literal::Int(kDays20171116 + 2))});
  EXPECT_TRUE(MightMatch(
      Predicate(Operation::kEq, "ts", {Literal::TimestampTz(kMicros20171116T10)}), day, m));
  EXPECT_FALSE(
      MightMatch(Predicate(Operation::kLt, "ts", {Literal::TimestampTz(kMicros20171116)}), day, m));
  EXPECT_TRUE(MightMatch(
      Predicate(Operation::kLt, "ts", {Literal::TimestampTz(kMicros20171116 + 1)}), day, m));
  PartitionSpec bucket = Spec({PField(2, 1000, "data_bucket", Transform::Bucket(16))});
  ManifestFile b = Manifest({Summary(false, Literal::Int(0), Literal::Int(5))});
  EXPECT_FALSE(
      MightMatch(Predicate(Operation::kEq, "data", {Literal::String("iceberg")}), bucket, b));  // 9
  EXPECT_TRUE(
      MightMatch(Predicate(Operation::kLt, "data", {Literal::String("iceberg")}), bucket, b));
}

TEST_F(ManifestEvaluatorTest, StartsWithAndNotStartsWith) {
  PartitionSpec spec = Spec({PField(2, 1000, "data", Transform::Identity())});
  ManifestFile m = Manifest({Summary(false, Literal::String("abc"), Literal::String("abz"))});
  auto match = [&](Operation op, const char* prefix, const ManifestFile& mf) {
    return MightMatch(Predicate(op, "data", {Literal::String(prefix)}), spec, mf);
  };
  EXPECT_TRUE(match(Operation::kStartsWith, "ab", m));
  EXPECT_TRUE(match(Operation::kStartsWith, "abd", m));
  EXPECT_FALSE(match(Operation::kStartsWith, "ac", m));
  EXPECT_FALSE(match(Operation::kStartsWith, "aa", m));
  EXPECT_FALSE(match(Operation::kNotStartsWith, "ab", m));
  EXPECT_TRUE(match(Operation::kNotStartsWith, "abc", m));
  ManifestFile with_null =
      Manifest({Summary(true, Literal::String("abc"), Literal::String("abz"))});
  EXPECT_TRUE(match(Operation::kNotStartsWith, "ab", with_null));
}

TEST_F(ManifestEvaluatorTest, FloatingSummariesAndNaN) {
  PartitionSpec spec = Spec({PField(5, 1000, "f", Transform::Identity())});
  ManifestFile no_nan =
      Manifest({Summary(false, Literal::Double(1.0), Literal::Double(2.0), false)});
  ManifestFile some_nan =
      Manifest({Summary(false, Literal::Double(1.0), Literal::Double(2.0), true)});
  ManifestFile only_nan = Manifest({Summary(false, std::nullopt, std::nullopt, true)});
  auto gt5 = Predicate(Operation::kGt, "f", {Literal::Double(5.0)});
  EXPECT_FALSE(MightMatch(gt5, spec, no_nan));
  EXPECT_TRUE(MightMatch(gt5, spec, some_nan));  // NaN sorts above 5
  EXPECT_FALSE(MightMatch(Predicate(Operation::kIsNan, "f"), spec, no_nan));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kIsNan, "f"), spec, some_nan));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kNotNan, "f"), spec, only_nan));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotNan, "f"), spec, some_nan));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kEq, "f", {Literal::Double(1.5)}), spec, only_nan));
}

class MetricsEvaluatorTest : public ::testing::Test {
 protected:
  bool MightMatch(const ExprPtr& filter, const DataFile& file) {
    SchemaPtr schema = TestSchema();
    MetricsEvaluator eval(MustBind(filter, *schema), schema);
    return eval.MightMatch(file);
  }

  DataFile File() {
    DataFile f;
    f.file_path = "f.parquet";
    f.record_count = 10;
    f.value_counts = {{1, 10}, {2, 10}, {5, 10}};
    f.null_value_counts = {{1, 0}, {2, 2}, {5, 0}};
    f.lower_bounds[1] = Literal::Long(10).ToBinary();
    f.upper_bounds[1] = Literal::Long(20).ToBinary();
    return f;
  }
};

TEST_F(MetricsEvaluatorTest, UsesBoundsAndCounts) {
  DataFile f = File();
  auto match = [&](Operation op, std::vector<Literal> lits) {
    return MightMatch(Predicate(op, "id", std::move(lits)), f);
  };
  EXPECT_FALSE(match(Operation::kLt, {Literal::Long(10)}));
  EXPECT_TRUE(match(Operation::kLtEq, {Literal::Long(10)}));
  EXPECT_FALSE(match(Operation::kGt, {Literal::Long(20)}));
  EXPECT_TRUE(match(Operation::kGtEq, {Literal::Long(20)}));
  EXPECT_TRUE(match(Operation::kEq, {Literal::Long(15)}));
  EXPECT_FALSE(match(Operation::kEq, {Literal::Long(25)}));
  EXPECT_FALSE(match(Operation::kIn, {Literal::Long(1), Literal::Long(21)}));
  EXPECT_TRUE(match(Operation::kIn, {Literal::Long(1), Literal::Long(15)}));
  EXPECT_TRUE(match(Operation::kNotEq, {Literal::Long(15)}));
  EXPECT_TRUE(match(Operation::kNotIn, {Literal::Long(15)}));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kIsNull, "s.inner"), [&] {
    DataFile g = f;
    g.null_value_counts[9] = 0;
    return g;
  }()));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kIsNull, "data"), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotNull, "data"), f));
  EXPECT_FALSE(MightMatch(Not(Predicate(Operation::kGtEq, "id", {Literal::Long(10)})), f));
  EXPECT_FALSE(MightMatch(And(Predicate(Operation::kLt, "id", {Literal::Long(10)}),
                              Predicate(Operation::kNotNull, "data")),
                          f));
  EXPECT_TRUE(MightMatch(Or(Predicate(Operation::kLt, "id", {Literal::Long(10)}),
                            Predicate(Operation::kNotNull, "data")),
                         f));
}

TEST_F(MetricsEvaluatorTest, MissingStatsMightMatch) {
  DataFile f = File();
  EXPECT_TRUE(MightMatch(Predicate(Operation::kEq, "i", {Literal::Int(1)}), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kIsNull, "i"), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotNull, "i"), f));
  f.lower_bounds[1] = std::string("\x01", 1);  // undecodable: ignored
  EXPECT_TRUE(MightMatch(Predicate(Operation::kLt, "id", {Literal::Long(10)}), f));
  DataFile unknown_count = File();
  unknown_count.record_count = -1;
  EXPECT_TRUE(MightMatch(Predicate(Operation::kLt, "id", {Literal::Long(10)}), unknown_count));
}

TEST_F(MetricsEvaluatorTest, EmptyAndAllNullFilesCannotMatch) {
  DataFile empty = File();
  empty.record_count = 0;
  EXPECT_FALSE(MightMatch(Predicate(Operation::kNotEq, "id", {Literal::Long(1)}), empty));
  DataFile f = File();
  f.value_counts[2] = 10;
  f.null_value_counts[2] = 10;
  EXPECT_FALSE(MightMatch(Predicate(Operation::kNotNull, "data"), f));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kEq, "data", {Literal::String("a")}), f));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kLt, "data", {Literal::String("a")}), f));
  EXPECT_FALSE(MightMatch(Predicate(Operation::kStartsWith, "data", {Literal::String("a")}), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kIsNull, "data"), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotStartsWith, "data", {Literal::String("a")}), f));
}

TEST_F(MetricsEvaluatorTest, TruncatedStringBounds) {
  // Writers truncate string bounds: the lower bound "abc" stands for e.g. "abcdef" and the
  // upper bound "abd" for e.g. "abc\u00ff..." rounded up.
  DataFile f = File();
  f.null_value_counts[2] = 0;
  f.lower_bounds[2] = "abc";
  f.upper_bounds[2] = "abd";
  auto match = [&](Operation op, const char* v) {
    return MightMatch(Predicate(op, "data", {Literal::String(v)}), f);
  };
  EXPECT_TRUE(match(Operation::kEq, "abcz"));
  EXPECT_TRUE(match(Operation::kEq, "abd"));
  EXPECT_FALSE(match(Operation::kEq, "abda"));
  EXPECT_FALSE(match(Operation::kEq, "abb"));
  EXPECT_TRUE(match(Operation::kStartsWith, "abcd"));
  EXPECT_TRUE(match(Operation::kStartsWith, "ab"));
  EXPECT_TRUE(match(Operation::kStartsWith, "abd"));
  EXPECT_FALSE(match(Operation::kStartsWith, "abe"));
  EXPECT_FALSE(match(Operation::kStartsWith, "aa"));
  EXPECT_FALSE(match(Operation::kNotStartsWith, "ab"));
  EXPECT_TRUE(match(Operation::kNotStartsWith, "abc"));
  // Bytes compare unsigned: "\xc3\xa9" (é) sorts after "abd".
  EXPECT_FALSE(match(Operation::kStartsWith, "\xc3\xa9"));
  f.null_value_counts[2] = 1;
  EXPECT_TRUE(match(Operation::kNotStartsWith, "ab"));
}

TEST_F(MetricsEvaluatorTest, FloatingBoundsAndNaNCounts) {
  DataFile f = File();
  f.lower_bounds[5] = Literal::Double(1.0).ToBinary();
  f.upper_bounds[5] = Literal::Double(2.0).ToBinary();
  f.nan_value_counts[5] = 0;
  auto match = [&](const ExprPtr& e, const DataFile& file) { return MightMatch(e, file); };
  ExprPtr gt5 = Predicate(Operation::kGt, "f", {Literal::Double(5.0)});
  EXPECT_FALSE(match(gt5, f));
  EXPECT_FALSE(match(Predicate(Operation::kIsNan, "f"), f));
  EXPECT_FALSE(match(Predicate(Operation::kLt, "f", {Literal::Double(0.5)}), f));
  DataFile unknown_nans = f;
  unknown_nans.nan_value_counts.clear();
  EXPECT_TRUE(match(gt5, unknown_nans));  // NaN may be present and sorts above 5
  EXPECT_TRUE(match(Predicate(Operation::kIsNan, "f"), unknown_nans));
  DataFile nan_lower = f;
  nan_lower.lower_bounds[5] = Literal::Double(std::nan("")).ToBinary();
  EXPECT_TRUE(match(Predicate(Operation::kLt, "f", {Literal::Double(0.5)}), nan_lower));
  DataFile all_nan = f;
  all_nan.nan_value_counts[5] = 10;
  EXPECT_FALSE(match(Predicate(Operation::kNotNan, "f"), all_nan));
  EXPECT_FALSE(match(Predicate(Operation::kEq, "f", {Literal::Double(1.5)}), all_nan));
  EXPECT_TRUE(match(Predicate(Operation::kIsNan, "f"), all_nan));
}

TEST_F(MetricsEvaluatorTest, NestedFields) {
  DataFile f = File();
  // A struct-nested primitive has reliable stats.
  f.value_counts[9] = 10;
  f.null_value_counts[9] = 0;
  f.lower_bounds[9] = Literal::Int(1).ToBinary();
  f.upper_bounds[9] = Literal::Int(3).ToBinary();
  EXPECT_FALSE(MightMatch(Predicate(Operation::kGt, "s.inner", {Literal::Int(3)}), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kGt, "s.inner", {Literal::Int(2)}), f));
  // A list element's stats aggregate over elements; they are never used to prune.
  f.value_counts[11] = 10;
  f.null_value_counts[11] = 10;
  f.lower_bounds[11] = "a";
  f.upper_bounds[11] = "b";
  EXPECT_TRUE(MightMatch(Predicate(Operation::kEq, "tags.element", {Literal::String("z")}), f));
  EXPECT_TRUE(MightMatch(Predicate(Operation::kNotNull, "tags.element"), f));
}

}  // namespace
}  // namespace skade::iceberg
