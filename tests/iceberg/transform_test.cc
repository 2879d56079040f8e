#include "skade/iceberg/transform.h"

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace skade::iceberg {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

constexpr int32_t kDays20171116 = 17486;
constexpr int64_t kMicros20171116T223108 = 1510871468000000;  // 2017-11-16T22:31:08

Literal Apply(const Transform& t, const Literal& v) {
  auto r = t.Apply(v);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r.ok() && r->has_value());
  return **r;
}

// Every test value of the spec's Appendix B ("32-bit Hash Requirements").
TEST(TransformTest, HashesMatchSpecAppendixB) {
  EXPECT_EQ(BucketHash(Literal::Int(34)), 2017239379);
  EXPECT_EQ(BucketHash(Literal::Long(34)), 2017239379);
  EXPECT_EQ(BucketHash(Literal::Decimal(1420, 9, 2)), -500754589);  // 14.20
  EXPECT_EQ(BucketHash(Literal::Date(kDays20171116)), -653330422);
  EXPECT_EQ(BucketHash(Literal::Time(((22 * 60 + 31) * 60 + 8) * int64_t{1000000})), -662762989);
  EXPECT_EQ(BucketHash(Literal::Timestamp(kMicros20171116T223108)), -2047944441);
  EXPECT_EQ(BucketHash(Literal::Timestamp(kMicros20171116T223108 + 1)), -1207196810);
  // 2017-11-16T14:31:08-08:00 is the same instant as 22:31:08 UTC.
  EXPECT_EQ(BucketHash(Literal::TimestampTz(kMicros20171116T223108)), -2047944441);
  EXPECT_EQ(BucketHash(Literal::TimestampTz(kMicros20171116T223108 + 1)), -1207196810);
  // Nanosecond timestamps hash as microseconds: .000001001 → the hash of .000001.
  EXPECT_EQ(BucketHash(Literal::TimestampNs(kMicros20171116T223108 * 1000)), -2047944441);
  EXPECT_EQ(BucketHash(Literal::TimestampNs(kMicros20171116T223108 * 1000 + 1001)), -1207196810);
  EXPECT_EQ(BucketHash(Literal::TimestampTzNs(kMicros20171116T223108 * 1000)), -2047944441);
  EXPECT_EQ(BucketHash(Literal::TimestampTzNs(kMicros20171116T223108 * 1000 + 1001)), -1207196810);
  EXPECT_EQ(BucketHash(Literal::String("iceberg")), 1210000089);
  EXPECT_EQ(BucketHash(Literal::Uuid(Bytes({0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD, 0xA4,
                                            0x79, 0x3F, 0x34, 0x9C, 0xB7, 0x85, 0xE7}))),
            1488055340);
  EXPECT_EQ(BucketHash(Literal::Fixed(Bytes({0, 1, 2, 3}))), -188683207);
  EXPECT_EQ(BucketHash(Literal::Binary(Bytes({0, 1, 2, 3}))), -188683207);
  // The table of types not valid for bucketing.
  EXPECT_EQ(BucketHash(Literal::Boolean(true)), 1392991556);
  EXPECT_EQ(BucketHash(Literal::Float(1.0f)), -142385009);
  EXPECT_EQ(BucketHash(Literal::Float(0.0f)), 1669671676);
  EXPECT_EQ(BucketHash(Literal::Float(-0.0f)), 1669671676);
  EXPECT_EQ(BucketHash(Literal::Double(1.0)), -142385009);
  EXPECT_EQ(BucketHash(Literal::Double(0.0)), 1669671676);
  EXPECT_EQ(BucketHash(Literal::Double(-0.0)), 1669671676);
}

TEST(TransformTest, Murmur3HandlesEveryTailLength) {
  EXPECT_EQ(Murmur3Hash32(""), 0);
  // Different lengths over the same prefix give different hashes (the tail is mixed in).
  std::set<int32_t> seen;
  for (size_t n = 0; n <= 8; ++n) seen.insert(Murmur3Hash32(std::string("abcdefgh").substr(0, n)));
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(Murmur3Hash32(Bytes({0, 1, 2, 3})), -188683207);
}

// /work/shared/fixtures/iceberg/partition_bucket_test was written by Spark with
// bucket(10, partition_col) over 'partition_0'..'partition_9'.
TEST(TransformTest, BucketMatchesSparkWrittenLayout) {
  const std::map<std::string, int> expected = {
      {"partition_0", 2}, {"partition_1", 2}, {"partition_2", 0}, {"partition_3", 6},
      {"partition_4", 4}, {"partition_5", 4}, {"partition_6", 7}, {"partition_7", 7},
      {"partition_8", 8}, {"partition_9", 8},
  };
  Transform bucket = Transform::Bucket(10);
  for (const auto& [value, b] : expected) {
    EXPECT_EQ(BucketOf(Literal::String(value), 10), b) << value;
    EXPECT_EQ(Apply(bucket, Literal::String(value)).as_int(), b) << value;
  }
}

TEST(TransformTest, BucketDiscardsSignBit) {
  // hash(14.20) is negative; the bucket uses (hash & INT_MAX) % N.
  int32_t h = -500754589;
  EXPECT_EQ(BucketOf(Literal::Decimal(1420, 9, 2), 100), (h & 0x7fffffff) % 100);
  EXPECT_EQ(BucketOf(Literal::Decimal(1420, 9, 2), 100), 59);
  EXPECT_EQ(BucketOf(Literal::Int(34), 100), 79);
  EXPECT_EQ(BucketOf(Literal::Long(34), 100), 79);
  EXPECT_EQ(Apply(Transform::Bucket(100), Literal::Int(34)).type_id(), TypeId::kInt);
}

TEST(TransformTest, TruncateMatchesSpecExamples) {
  Transform t10 = Transform::Truncate(10);
  EXPECT_EQ(Apply(t10, Literal::Int(1)).as_int(), 0);
  EXPECT_EQ(Apply(t10, Literal::Int(-1)).as_int(), -10);
  EXPECT_EQ(Apply(t10, Literal::Int(-10)).as_int(), -10);
  EXPECT_EQ(Apply(t10, Literal::Int(19)).as_int(), 10);
  EXPECT_EQ(Apply(t10, Literal::Long(1)).as_long(), 0);
  EXPECT_EQ(Apply(t10, Literal::Long(-1)).as_long(), -10);
  EXPECT_EQ(Apply(t10, Literal::Long(-11)).as_long(), -20);
  // W=50, s=2: 10.65 → 10.50.
  Literal dec = Apply(Transform::Truncate(50), Literal::Decimal(1065, 9, 2));
  EXPECT_EQ(dec.as_decimal(), 1050);
  EXPECT_EQ(dec.type()->scale(), 2);
  EXPECT_EQ(Apply(Transform::Truncate(50), Literal::Decimal(-1065, 9, 2)).as_decimal(), -1100);
  EXPECT_EQ(Apply(Transform::Truncate(3), Literal::String("iceberg")).as_bytes(), "ice");
}

TEST(TransformTest, TruncateStringsByCodePoints) {
  // "été" is 5 bytes, 3 code points; width 2 keeps "ét" (3 bytes).
  EXPECT_EQ(Apply(Transform::Truncate(2), Literal::String("\xc3\xa9t\xc3\xa9")).as_bytes(),
            "\xc3\xa9t");
  // A 4-byte character counts once.
  EXPECT_EQ(Apply(Transform::Truncate(1), Literal::String("\xf0\x9f\x98\x80xyz")).as_bytes(),
            "\xf0\x9f\x98\x80");
  EXPECT_EQ(Apply(Transform::Truncate(10), Literal::String("ab")).as_bytes(), "ab");
  // Binary truncates by bytes.
  EXPECT_EQ(Apply(Transform::Truncate(3), Literal::Binary(Bytes({0, 1, 2, 3}))).as_bytes(),
            Bytes({0, 1, 2}));
}

TEST(TransformTest, TimeTransformsCountUnitsSinceEpoch) {
  // hour(2020-01-01T08:00Z) = 438296.
  int64_t micros = (DaysFromCivil(2020, 1, 1) * 24 + 8) * int64_t{3'600'000'000};
  EXPECT_EQ(Apply(Transform::Hour(), Literal::TimestampTz(micros)).as_int(), 438296);
  EXPECT_EQ(Apply(Transform::Hour(), Literal::TimestampTzNs(micros * 1000)).as_int(), 438296);

  Literal ts = Literal::Timestamp(kMicros20171116T223108);
  EXPECT_EQ(Apply(Transform::Year(), ts).as_int(), 47);
  EXPECT_EQ(Apply(Transform::Month(), ts).as_int(), 47 * 12 + 10);
  EXPECT_EQ(Apply(Transform::Day(), ts).as_int(), kDays20171116);
  EXPECT_EQ(Apply(Transform::Hour(), ts).as_int(), kDays20171116 * 24 + 22);
  Literal date = Literal::Date(kDays20171116);
  EXPECT_EQ(Apply(Transform::Year(), date).as_int(), 47);
  EXPECT_EQ(Apply(Transform::Month(), date).as_int(), 574);
  EXPECT_EQ(Apply(Transform::Day(), date).as_int(), kDays20171116);
  EXPECT_EQ(Apply(Transform::Day(), Literal::TimestampNs(kMicros20171116T223108 * 1000)).as_int(),
            kDays20171116);
}

TEST(TransformTest, TimeTransformsFloorBeforeEpoch) {
  // One microsecond before the epoch is in 1969-12-31T23:00.
  EXPECT_EQ(Apply(Transform::Hour(), Literal::Timestamp(-1)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Day(), Literal::Timestamp(-1)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Month(), Literal::Timestamp(-1)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Year(), Literal::Timestamp(-1)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Day(), Literal::TimestampNs(-1)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Hour(), Literal::Timestamp(-3'600'000'000)).as_int(), -1);
  EXPECT_EQ(Apply(Transform::Hour(), Literal::Timestamp(-3'600'000'001)).as_int(), -2);
  // 1969-01-01 is month -12, 1968-12-31 is year -2.
  EXPECT_EQ(Apply(Transform::Month(), Literal::Date(DaysFromCivil(1969, 1, 1))).as_int(), -12);
  EXPECT_EQ(Apply(Transform::Year(), Literal::Date(DaysFromCivil(1968, 12, 31))).as_int(), -2);
  EXPECT_EQ(Apply(Transform::Month(), Literal::Date(DaysFromCivil(1968, 12, 31))).as_int(), -13);
}

TEST(TransformTest, NullAndVoid) {
  auto null_in = Transform::Bucket(4).Apply(std::nullopt);
  ASSERT_TRUE(null_in.ok());
  EXPECT_FALSE(null_in->has_value());
  auto v = Transform::Void().Apply(Literal::Int(3));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
  EXPECT_EQ(Transform::Hour().Apply(Literal::Date(1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Transform::Bucket(4).Apply(Literal::Double(1.0)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TransformTest, ParsesAndPrints) {
  const char* texts[] = {"identity", "bucket[16]", "truncate[4]", "year",
                         "month",    "day",        "hour",        "void"};
  for (const char* text : texts) {
    auto t = Transform::Parse(text);
    ASSERT_TRUE(t.ok()) << text;
    EXPECT_EQ(t->ToString(), text);
  }
  auto bucket = Transform::Parse("bucket[16]");
  EXPECT_EQ(bucket->kind(), TransformKind::kBucket);
  EXPECT_EQ(bucket->param(), 16);
  EXPECT_EQ(*bucket, Transform::Bucket(16));
  EXPECT_EQ(Transform::Parse("Day")->kind(), TransformKind::kDay);
  auto unknown = Transform::Parse("zorder");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->kind(), TransformKind::kUnknown);
  EXPECT_EQ(unknown->ToString(), "zorder");
  EXPECT_FALSE(unknown->CanTransform(*Type::Primitive(TypeId::kInt)));
  EXPECT_EQ(unknown->Apply(Literal::Int(1)).status().code(), StatusCode::kInvalidArgument);
  for (const char* bad :
       {"bucket[0]", "bucket[x]", "truncate[]", "truncate[-1]", "bucket", "bucket[99999999999]"}) {
    EXPECT_EQ(Transform::Parse(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TransformTest, SourceAndResultTypes) {
  auto int_type = Type::Primitive(TypeId::kInt);
  auto date = Type::Primitive(TypeId::kDate);
  auto ts = Type::Primitive(TypeId::kTimestampTz);
  auto str = Type::Primitive(TypeId::kString);
  EXPECT_TRUE(Transform::Hour().CanTransform(*ts));
  EXPECT_FALSE(Transform::Hour().CanTransform(*date));
  EXPECT_TRUE(Transform::Day().CanTransform(*date));
  EXPECT_FALSE(Transform::Bucket(2).CanTransform(*Type::Primitive(TypeId::kFloat)));
  EXPECT_FALSE(Transform::Bucket(2).CanTransform(*Type::Primitive(TypeId::kBoolean)));
  EXPECT_TRUE(Transform::Bucket(2).CanTransform(*Type::Primitive(TypeId::kUuid)));
  EXPECT_FALSE(Transform::Truncate(2).CanTransform(*Type::Primitive(TypeId::kUuid)));
  EXPECT_FALSE(Transform::Identity().CanTransform(*Type::Struct({})));
  EXPECT_EQ((*Transform::Bucket(8).ResultType(str))->id(), TypeId::kInt);
  EXPECT_EQ((*Transform::Day().ResultType(ts))->id(), TypeId::kInt);
  EXPECT_EQ((*Transform::Truncate(3).ResultType(str))->id(), TypeId::kString);
  EXPECT_EQ((*Transform::Identity().ResultType(Type::Decimal(9, 2)))->scale(), 2);
  EXPECT_EQ((*Transform::Void().ResultType(date))->id(), TypeId::kDate);
  EXPECT_EQ(Transform::Hour().ResultType(date).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Transform::Year().ResultType(int_type).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Transform::Truncate(3).PreservesOrder());
  EXPECT_TRUE(Transform::Day().PreservesOrder());
  EXPECT_FALSE(Transform::Bucket(3).PreservesOrder());
  EXPECT_FALSE(Transform::Void().PreservesOrder());
}

// Iceberg's human strings of partition values (the form of Java's toHumanString), also for
// values before 1970 and a day typed as date.
TEST(TransformTest, HumanStringsOfTimePartitions) {
  EXPECT_EQ(Transform::Day().HumanString(Literal::Int(19723)), "2024-01-01");
  EXPECT_EQ(Transform::Day().HumanString(Literal::Date(19723)), "2024-01-01");
  EXPECT_EQ(Transform::Day().HumanString(Literal::Int(-1)), "1969-12-31");
  EXPECT_EQ(Transform::Hour().HumanString(Literal::Int(19723 * 24 + 10)), "2024-01-01-10");
  EXPECT_EQ(Transform::Hour().HumanString(Literal::Int(-1)), "1969-12-31-23");
  EXPECT_EQ(Transform::Month().HumanString(Literal::Int(648)), "2024-01");
  EXPECT_EQ(Transform::Month().HumanString(Literal::Int(-1)), "1969-12");
  EXPECT_EQ(Transform::Year().HumanString(Literal::Int(54)), "2024");
  EXPECT_EQ(Transform::Bucket(16).HumanString(Literal::Int(7)), "7");
  EXPECT_EQ(Transform::Identity().HumanString(Literal::String("eu")), "eu");
  EXPECT_EQ(Transform::Day().HumanString(std::nullopt), "null");
}

}  // namespace
}  // namespace skade::iceberg
