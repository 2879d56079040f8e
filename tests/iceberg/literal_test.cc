#include "skade/iceberg/literal.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace skade::iceberg {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

// The uuid of the spec's Appendix B example, f79c3e09-677c-4bbd-a479-3f349cb785e7.
std::string SpecUuidBytes() {
  return Bytes({0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD, 0xA4, 0x79, 0x3F, 0x34, 0x9C, 0xB7,
                0x85, 0xE7});
}

constexpr int32_t kDays20171116 = 17486;
constexpr int64_t kMicros20171116T223108_123456 = 1510871468123456;

TEST(LiteralTest, BinaryFormOfEachType) {
  EXPECT_EQ(Literal::Boolean(true).ToBinary(), Bytes({0x01}));
  EXPECT_EQ(Literal::Boolean(false).ToBinary(), Bytes({0x00}));
  EXPECT_EQ(Literal::Int(34).ToBinary(), Bytes({0x22, 0, 0, 0}));
  EXPECT_EQ(Literal::Int(-2).ToBinary(), Bytes({0xfe, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Literal::Date(kDays20171116).ToBinary(), Bytes({0x4e, 0x44, 0, 0}));
  EXPECT_EQ(Literal::Long(34).ToBinary(), Bytes({0x22, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Literal::Timestamp(-1).ToBinary(),
            Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Literal::Float(1.0f).ToBinary(), Bytes({0, 0, 0x80, 0x3f}));
  EXPECT_EQ(Literal::Double(1.0).ToBinary(), Bytes({0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  EXPECT_EQ(Literal::String("iceberg").ToBinary(), "iceberg");
  EXPECT_EQ(Literal::Uuid(SpecUuidBytes()).ToBinary(), SpecUuidBytes());
  EXPECT_EQ(Literal::Binary(Bytes({0, 1, 2, 0xff})).ToBinary(), Bytes({0, 1, 2, 0xff}));
}

TEST(LiteralTest, DecimalBinaryIsMinimalBigEndianTwosComplement) {
  EXPECT_EQ(Literal::Decimal(1420, 9, 2).ToBinary(), Bytes({0x05, 0x8c}));
  EXPECT_EQ(Literal::Decimal(0, 9, 2).ToBinary(), Bytes({0x00}));
  EXPECT_EQ(Literal::Decimal(-1, 9, 2).ToBinary(), Bytes({0xff}));
  EXPECT_EQ(Literal::Decimal(127, 9, 2).ToBinary(), Bytes({0x7f}));
  EXPECT_EQ(Literal::Decimal(128, 9, 2).ToBinary(), Bytes({0x00, 0x80}));
  EXPECT_EQ(Literal::Decimal(-128, 9, 2).ToBinary(), Bytes({0x80}));
  EXPECT_EQ(Literal::Decimal(-129, 9, 2).ToBinary(), Bytes({0xff, 0x7f}));
  __int128 big = static_cast<__int128>(1) << 100;
  EXPECT_EQ(Literal::Decimal(big, 38, 0).ToBinary().size(), 13u);
}

TEST(LiteralTest, BinaryRoundTrips) {
  const Literal values[] = {
      Literal::Boolean(true),
      Literal::Int(std::numeric_limits<int32_t>::min()),
      Literal::Long(std::numeric_limits<int64_t>::max()),
      Literal::Float(-2.5f),
      Literal::Double(1e300),
      Literal::Decimal(-123456789, 12, 3),
      Literal::Decimal((static_cast<__int128>(1) << 120) + 7, 38, 4),
      Literal::Date(-1),
      Literal::Time(81068123456),
      Literal::Timestamp(kMicros20171116T223108_123456),
      Literal::TimestampTz(-5),
      Literal::TimestampNs(1510871468123456789),
      Literal::TimestampTzNs(-1),
      Literal::String("h\xc3\xa9llo"),
      Literal::Uuid(SpecUuidBytes()),
      Literal::Fixed(Bytes({1, 2, 3})),
      Literal::Binary(""),
  };
  for (const Literal& v : values) {
    auto back = Literal::FromBinary(v.type(), v.ToBinary());
    ASSERT_TRUE(back.ok()) << v.ToString() << ": " << back.status().ToString();
    EXPECT_EQ(*back, v) << v.ToString();
  }
}

TEST(LiteralTest, FromBinaryRejectsWrongLengths) {
  auto code = [](const TypePtr& t, std::string bytes) {
    return Literal::FromBinary(t, bytes).status().code();
  };
  EXPECT_EQ(code(Type::Primitive(TypeId::kInt), Bytes({1, 2})), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kDate), Bytes({1, 2, 3, 4, 5})), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kLong), Bytes({1, 2, 3})), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kTimestamp), Bytes({1, 2, 3, 4})),
            StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kBoolean), ""), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kFloat), Bytes({0, 0, 0, 0, 0, 0, 0, 0})),
            StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Primitive(TypeId::kUuid), Bytes({1, 2, 3})), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Fixed(4), Bytes({1, 2, 3})), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Decimal(9, 2), ""), StatusCode::kCorruption);
  EXPECT_EQ(code(Type::Decimal(38, 2), std::string(17, '\x01')), StatusCode::kCorruption);
}

TEST(LiteralTest, FromBinaryReadsBoundsWrittenBeforePromotion) {
  // An int column promoted to long keeps 4-byte bounds in old files; float → double too.
  auto l = Literal::FromBinary(Type::Primitive(TypeId::kLong), Bytes({0xfe, 0xff, 0xff, 0xff}));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->as_long(), -2);
  auto d = Literal::FromBinary(Type::Primitive(TypeId::kDouble), Bytes({0, 0, 0x80, 0x3f}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->as_double(), 1.0);
}

TEST(LiteralTest, JsonMatchesSpecAppendixDExamples) {
  EXPECT_EQ(Literal::Boolean(true).ToJson(), "true");
  EXPECT_EQ(Literal::Int(34).ToJson(), "34");
  EXPECT_EQ(Literal::Long(34).ToJson(), "34");
  EXPECT_EQ(Literal::Float(1.0f).ToJson(), "1.0");
  EXPECT_EQ(Literal::Double(1.0).ToJson(), "1.0");
  EXPECT_EQ(Literal::Decimal(1420, 9, 2).ToJson(), "\"14.20\"");
  EXPECT_EQ(Literal::Date(kDays20171116).ToJson(), "\"2017-11-16\"");
  EXPECT_EQ(Literal::Time(81068123456).ToJson(), "\"22:31:08.123456\"");
  EXPECT_EQ(Literal::Timestamp(kMicros20171116T223108_123456).ToJson(),
            "\"2017-11-16T22:31:08.123456\"");
  EXPECT_EQ(Literal::TimestampTz(kMicros20171116T223108_123456).ToJson(),
            "\"2017-11-16T22:31:08.123456+00:00\"");
  EXPECT_EQ(Literal::TimestampNs(1510871468123456789).ToJson(),
            "\"2017-11-16T22:31:08.123456789\"");
  EXPECT_EQ(Literal::TimestampTzNs(1510871468123456789).ToJson(),
            "\"2017-11-16T22:31:08.123456789+00:00\"");
  EXPECT_EQ(Literal::String("iceberg").ToJson(), "\"iceberg\"");
  EXPECT_EQ(Literal::Uuid(SpecUuidBytes()).ToJson(), "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"");
  EXPECT_EQ(Literal::Fixed(Bytes({0, 1, 2, 0xff})).ToJson(), "\"000102ff\"");
  EXPECT_EQ(Literal::Binary(Bytes({0, 1, 2, 0xff})).ToJson(), "\"000102ff\"");
}

TEST(LiteralTest, JsonRoundTrips) {
  const Literal values[] = {
      Literal::Boolean(false),
      Literal::Int(-7),
      Literal::Long(std::numeric_limits<int64_t>::min()),
      Literal::Float(0.1f),
      Literal::Double(-1.5e-7),
      Literal::Decimal(-5, 9, 2),
      Literal::Decimal(1420, 9, 0),
      Literal::Date(-1),
      Literal::Date(-719162),
      Literal::Time(0),
      Literal::Timestamp(-1),
      Literal::TimestampTz(kMicros20171116T223108_123456),
      Literal::TimestampNs(-1),
      Literal::TimestampTzNs(1510871468123456789),
      Literal::String("quote \" backslash \\ newline \n"),
      Literal::Uuid(SpecUuidBytes()),
      Literal::Fixed(Bytes({0xab, 0xcd})),
      Literal::Binary(Bytes({0, 0xff})),
  };
  for (const Literal& v : values) {
    auto back = Literal::FromJson(v.type(), v.ToJson());
    ASSERT_TRUE(back.ok()) << v.ToJson() << ": " << back.status().ToString();
    EXPECT_EQ(*back, v) << v.ToJson();
  }
}

TEST(LiteralTest, JsonPreEpochValues) {
  EXPECT_EQ(Literal::Date(-1).ToJson(), "\"1969-12-31\"");
  EXPECT_EQ(Literal::Timestamp(-1).ToJson(), "\"1969-12-31T23:59:59.999999\"");
  EXPECT_EQ(Literal::TimestampNs(-1).ToJson(), "\"1969-12-31T23:59:59.999999999\"");
  EXPECT_EQ(Literal::Decimal(-5, 9, 2).ToJson(), "\"-0.05\"");
}

TEST(LiteralTest, FromJsonReadsOffsetsAndRejectsMismatches) {
  auto tz = Literal::FromJson(Type::Primitive(TypeId::kTimestampTz),
                              "\"2017-11-16T14:31:08.123456-08:00\"");
  ASSERT_TRUE(tz.ok());
  EXPECT_EQ(tz->as_long(), kMicros20171116T223108_123456);
  auto code = [](TypeId id, std::string json) {
    return Literal::FromJson(Type::Primitive(id), json).status().code();
  };
  EXPECT_EQ(code(TypeId::kTimestamp, "\"2017-11-16T22:31:08+00:00\""),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kTimestampTz, "\"2017-11-16T22:31:08\""), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kInt, "2147483648"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kInt, "\"34\""), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kDate, "\"2017-02-29\""), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kUuid, "\"not-a-uuid\""), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kBinary, "\"abc\""), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TypeId::kBoolean, "tru"), StatusCode::kInvalidArgument);
  // The JSON form of a decimal states its scale with the fraction digits.
  EXPECT_EQ(Literal::FromJson(Type::Decimal(9, 2), "\"14.2\"").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Literal::FromJson(Type::Decimal(3, 2), "\"14.20\"").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Literal::FromJson(Type::Fixed(3), "\"0001\"").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(LiteralTest, ToStringIsReadable) {
  EXPECT_EQ(Literal::Decimal(1420, 9, 2).ToString(), "14.20");
  EXPECT_EQ(Literal::Date(kDays20171116).ToString(), "2017-11-16");
  EXPECT_EQ(Literal::TimestampTz(0).ToString(), "1970-01-01T00:00:00.000000+00:00");
  EXPECT_EQ(Literal::String("abc").ToString(), "abc");
  EXPECT_EQ(Literal::Double(std::nan("")).ToString(), "NaN");
}

TEST(LiteralTest, CastsNumbers) {
  auto long_type = Type::Primitive(TypeId::kLong);
  auto int_type = Type::Primitive(TypeId::kInt);
  auto l = Literal::Int(34).CastTo(long_type);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->as_long(), 34);
  EXPECT_EQ(l->type_id(), TypeId::kLong);
  auto i = Literal::Long(-34).CastTo(int_type);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->as_int(), -34);
  EXPECT_EQ(Literal::Long(int64_t{1} << 31).CastTo(int_type).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Literal::Long(-(int64_t{1} << 31) - 1).CastTo(int_type).status().code(),
            StatusCode::kInvalidArgument);
  auto d = Literal::Float(1.5f).CastTo(Type::Primitive(TypeId::kDouble));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->as_double(), 1.5);
  EXPECT_EQ(Literal::Boolean(true).CastTo(int_type).status().code(), StatusCode::kInvalidArgument);
}

TEST(LiteralTest, CastsDecimalsOnlyWhenExact) {
  auto to = [](const Literal& v, int p, int s) { return v.CastTo(Type::Decimal(p, s)); };
  auto from_int = to(Literal::Int(5), 9, 2);
  ASSERT_TRUE(from_int.ok());
  EXPECT_EQ(from_int->as_decimal(), 500);
  auto from_long = to(Literal::Long(-12), 4, 1);
  ASSERT_TRUE(from_long.ok());
  EXPECT_EQ(from_long->as_decimal(), -120);
  EXPECT_FALSE(to(Literal::Long(12345), 4, 1).ok());  // 1234.5 needs 5 digits

  auto down = to(Literal::Decimal(1420, 9, 2), 9, 1);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->as_decimal(), 142);
  EXPECT_EQ(to(Literal::Decimal(1425, 9, 2), 9, 1).status().code(), StatusCode::kInvalidArgument);
  auto up = to(Literal::Decimal(1420, 9, 2), 9, 4);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->as_decimal(), 142000);
  EXPECT_EQ(to(Literal::Decimal(1420, 9, 2), 3, 2).status().code(), StatusCode::kInvalidArgument);

  auto from_double = to(Literal::Double(14.2), 9, 2);
  ASSERT_TRUE(from_double.ok());
  EXPECT_EQ(from_double->as_decimal(), 1420);
  EXPECT_FALSE(to(Literal::Double(14.255), 9, 2).ok());
}

TEST(LiteralTest, CastsStringsByParsingIsoText) {
  auto date = Literal::String("2017-11-16").CastTo(Type::Primitive(TypeId::kDate));
  ASSERT_TRUE(date.ok());
  EXPECT_EQ(date->as_int(), kDays20171116);
  auto time = Literal::String("22:31:08.123456").CastTo(Type::Primitive(TypeId::kTime));
  ASSERT_TRUE(time.ok());
  EXPECT_EQ(time->as_long(), 81068123456);
  auto ts =
      Literal::String("2017-11-16T22:31:08.123456").CastTo(Type::Primitive(TypeId::kTimestamp));
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(ts->as_long(), kMicros20171116T223108_123456);
  auto tz = Literal::String("2017-11-16T14:31:08.123456-08:00")
                .CastTo(Type::Primitive(TypeId::kTimestampTz));
  ASSERT_TRUE(tz.ok());
  EXPECT_EQ(tz->as_long(), kMicros20171116T223108_123456);
  auto ns = Literal::String("2017-11-16T22:31:08.123456789")
                .CastTo(Type::Primitive(TypeId::kTimestampNs));
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->as_long(), 1510871468123456789);
  auto uuid = Literal::String("F79C3E09-677C-4BBD-A479-3F349CB785E7")
                  .CastTo(Type::Primitive(TypeId::kUuid));
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(uuid->as_bytes(), SpecUuidBytes());
  auto dec = Literal::String("-14.2").CastTo(Type::Decimal(9, 2));
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->as_decimal(), -1420);

  EXPECT_EQ(Literal::String("2017-13-01").CastTo(Type::Primitive(TypeId::kDate)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Literal::String("22:31:08.1234567").CastTo(Type::Primitive(TypeId::kTime)).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(Literal::String("abc").CastTo(Type::Decimal(9, 2)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Literal::String("1.234").CastTo(Type::Decimal(9, 2)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(LiteralTest, CastsDatesAndTimestamps) {
  auto ts = Literal::Date(-1).CastTo(Type::Primitive(TypeId::kTimestamp));
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(ts->as_long(), -86'400'000'000);
  auto ns = Literal::Date(1).CastTo(Type::Primitive(TypeId::kTimestampNs));
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->as_long(), 86'400'000'000'000);
  auto micros = Literal::TimestampNs(5000).CastTo(Type::Primitive(TypeId::kTimestamp));
  ASSERT_TRUE(micros.ok());
  EXPECT_EQ(micros->as_long(), 5);
  EXPECT_FALSE(Literal::TimestampNs(5001).CastTo(Type::Primitive(TypeId::kTimestamp)).ok());
  auto midnight = Literal::Timestamp(-86'400'000'000).CastTo(Type::Primitive(TypeId::kDate));
  ASSERT_TRUE(midnight.ok());
  EXPECT_EQ(midnight->as_int(), -1);
  EXPECT_FALSE(Literal::Timestamp(1).CastTo(Type::Primitive(TypeId::kDate)).ok());
}

TEST(LiteralTest, ComparesBySpecOrdering) {
  EXPECT_LT(CompareLiterals(Literal::Int(-1), Literal::Int(0)), 0);
  EXPECT_GT(CompareLiterals(Literal::Long(5), Literal::Long(-5)), 0);
  EXPECT_EQ(CompareLiterals(Literal::Double(0.0), Literal::Double(-0.0)), 0);
  // Strings, binary and uuids compare as unsigned bytes: 0xff sorts after 'a'.
  EXPECT_GT(CompareLiterals(Literal::String("\xc3\xa9"), Literal::String("z")), 0);
  EXPECT_LT(CompareLiterals(Literal::String("a"), Literal::String("ab")), 0);
  EXPECT_GT(CompareLiterals(Literal::Binary(Bytes({0xff})), Literal::Binary(Bytes({0x01, 0x02}))),
            0);
  EXPECT_LT(CompareLiterals(Literal::Uuid(std::string(16, '\x01')), Literal::Uuid(SpecUuidBytes())),
            0);
  EXPECT_LT(CompareLiterals(Literal::Decimal(-1420, 9, 2), Literal::Decimal(5, 9, 2)), 0);
  EXPECT_LT(CompareLiterals(Literal::Boolean(false), Literal::Boolean(true)), 0);
}

TEST(LiteralTest, NaNSortsAboveEverything) {
  Literal nan = Literal::Double(std::numeric_limits<double>::quiet_NaN());
  Literal inf = Literal::Double(std::numeric_limits<double>::infinity());
  EXPECT_TRUE(nan.IsNaN());
  EXPECT_FALSE(inf.IsNaN());
  EXPECT_FALSE(Literal::Int(1).IsNaN());
  EXPECT_GT(CompareLiterals(nan, inf), 0);
  EXPECT_LT(CompareLiterals(inf, nan), 0);
  EXPECT_EQ(CompareLiterals(nan, nan), 0);
  EXPECT_TRUE(Literal::Float(std::nanf("")).IsNaN());
  EXPECT_GT(CompareLiterals(Literal::Float(std::nanf("")), Literal::Float(1e30f)), 0);
}

TEST(LiteralTest, EqualityNeedsSameTypeAndValue) {
  EXPECT_EQ(Literal::Int(1), Literal::Int(1));
  EXPECT_FALSE(Literal::Int(1) == Literal::Long(1));
  EXPECT_FALSE(Literal::Int(1) == Literal::Date(1));
  EXPECT_FALSE(Literal::Decimal(1, 9, 2) == Literal::Decimal(1, 9, 3));
  EXPECT_EQ(Literal::Double(std::nan("")), Literal::Double(std::nan("")));
  EXPECT_FALSE(Literal::String("a") == Literal::String("b"));
}

TEST(LiteralTest, CivilDateConversions) {
  int y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(0, &y, &m, &d);
  EXPECT_EQ(y, 1970);
  EXPECT_EQ(m, 1u);
  EXPECT_EQ(d, 1u);
  CivilFromDays(-1, &y, &m, &d);
  EXPECT_EQ(y, 1969);
  EXPECT_EQ(m, 12u);
  EXPECT_EQ(d, 31u);
  CivilFromDays(11016, &y, &m, &d);
  EXPECT_EQ(y, 2000);
  EXPECT_EQ(m, 2u);
  EXPECT_EQ(d, 29u);
  EXPECT_EQ(DaysFromCivil(2017, 11, 16), kDays20171116);
  EXPECT_EQ(DaysFromCivil(1900, 3, 1), -25508);
  EXPECT_EQ(DaysFromCivil(1, 1, 1), -719162);
  // Every day across several 400-year cycles either side of the epoch round-trips and
  // advances the calendar by exactly one day.
  int prev_y = 0;
  unsigned prev_m = 0, prev_d = 0;
  CivilFromDays(-800'000 - 1, &prev_y, &prev_m, &prev_d);
  for (int64_t days = -800'000; days <= 800'000; ++days) {
    CivilFromDays(days, &y, &m, &d);
    ASSERT_EQ(DaysFromCivil(y, m, d), days);
    bool next_day = (y == prev_y && m == prev_m && d == prev_d + 1) ||
                    (y == prev_y && m == prev_m + 1 && d == 1) ||
                    (y == prev_y + 1 && m == 1 && d == 1 && prev_m == 12 && prev_d == 31);
    ASSERT_TRUE(next_day) << days;
    prev_y = y;
    prev_m = m;
    prev_d = d;
  }
}

TEST(LiteralTest, FloorDivRoundsDown) {
  EXPECT_EQ(FloorDiv(7, 2), 3);
  EXPECT_EQ(FloorDiv(-1, 10), -1);
  EXPECT_EQ(FloorDiv(-10, 10), -1);
  EXPECT_EQ(FloorDiv(-11, 10), -2);
  EXPECT_EQ(FloorDiv(0, 10), 0);
  EXPECT_EQ(FloorDiv(-1, 86'400'000'000), -1);
}

}  // namespace
}  // namespace skade::iceberg
