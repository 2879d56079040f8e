#include "skade/iceberg/thrift_compact.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace skade::iceberg::thrift {
namespace {

// A struct with one field of every kind Parquet's footers use, and a nested struct and list.
std::string SampleStruct() {
  CompactWriter w;
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kI32, 1);
  w.WriteI32(-42);
  w.WriteFieldHeader(CompactType::kI64, 2);
  w.WriteI64(std::numeric_limits<int64_t>::min());
  w.WriteFieldHeader(CompactType::kBinary, 3);
  w.WriteBinary("hello");
  w.WriteBoolField(4, true);
  w.WriteFieldHeader(CompactType::kList, 5);
  w.WriteListHeader(CompactType::kI32, 20);  // long form
  for (int i = 0; i < 20; ++i) w.WriteI32(i * 1000);
  w.WriteFieldHeader(CompactType::kStruct, 40);  // long form field id (delta > 15)
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kDouble, 1);
  w.WriteDouble(2.5);
  w.WriteFieldHeader(CompactType::kI8, 2);
  w.WriteI8(-7);
  w.WriteFieldHeader(CompactType::kI16, 3);
  w.WriteI16(-300);
  w.EndStruct();
  w.WriteFieldHeader(CompactType::kList, 41);
  w.WriteListHeader(CompactType::kTrue, 2);
  w.WriteElementBool(true);
  w.WriteElementBool(false);
  w.EndStruct();
  return w.bytes();
}

TEST(CompactReaderTest, ReadsWhatTheWriterWrote) {
  const std::string bytes = SampleStruct();
  CompactReader r(bytes);
  ASSERT_TRUE(r.BeginStruct());
  FieldHeader f = r.NextField();
  EXPECT_EQ(f.id, 1);
  EXPECT_EQ(r.ReadI32(), -42);
  f = r.NextField();
  EXPECT_EQ(f.type, CompactType::kI64);
  EXPECT_EQ(r.ReadI64(), std::numeric_limits<int64_t>::min());
  f = r.NextField();
  EXPECT_EQ(r.ReadBinary(), "hello");
  f = r.NextField();
  EXPECT_EQ(f.id, 4);
  EXPECT_TRUE(CompactReader::FieldBool(f));
  f = r.NextField();
  ListHeader list = r.ReadListHeader();
  EXPECT_EQ(list.element, CompactType::kI32);
  ASSERT_EQ(list.size, 20);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(r.ReadI32(), i * 1000);
  f = r.NextField();
  EXPECT_EQ(f.id, 40);
  EXPECT_EQ(f.type, CompactType::kStruct);
  ASSERT_TRUE(r.BeginStruct());
  r.NextField();
  EXPECT_EQ(r.ReadDouble(), 2.5);
  r.NextField();
  EXPECT_EQ(r.ReadI8(), -7);
  r.NextField();
  EXPECT_EQ(r.ReadI16(), -300);
  EXPECT_EQ(r.NextField().type, CompactType::kStop);
  r.EndStruct();
  f = r.NextField();
  EXPECT_EQ(f.id, 41);
  list = r.ReadListHeader();
  ASSERT_EQ(list.size, 2);
  EXPECT_TRUE(r.ReadElementBool());
  EXPECT_FALSE(r.ReadElementBool());
  EXPECT_EQ(r.NextField().type, CompactType::kStop);
  r.EndStruct();
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.position(), bytes.size());
}

TEST(CompactReaderTest, SkipsAWholeStruct) {
  const std::string bytes = SampleStruct() + "\x15\x02";  // and one more byte pair after it
  CompactReader r(bytes);
  r.SkipField(CompactType::kStruct);
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.position(), bytes.size() - 2);
}

TEST(CompactReaderTest, EveryCutOfAValidStructIsTruncated) {
  const std::string bytes = SampleStruct();
  for (size_t n = 0; n < bytes.size(); ++n) {
    CompactReader r(std::string_view(bytes).substr(0, n));
    r.SkipField(CompactType::kStruct);
    EXPECT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error(), ReadError::kTruncated) << n << ": " << r.message();
  }
}

TEST(CompactReaderTest, GarbageNeverReadsPastItsBytes) {
  std::mt19937 rng(31);
  for (int round = 0; round < 20000; ++round) {
    std::string bytes(1 + rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    CompactReader r(bytes);
    r.SkipField(CompactType::kStruct);
    EXPECT_LE(r.position(), bytes.size());
    if (!r.ok()) {
      EXPECT_FALSE(r.message().empty());
    }
  }
}

TEST(CompactReaderTest, DeepNestingStopsAtTheLimit) {
  // Struct field 1 holding a struct holding a struct … far deeper than kMaxDepth.
  std::string bytes(10000, '\x1c');
  CompactReader r(bytes);
  r.SkipField(CompactType::kStruct);
  EXPECT_EQ(r.error(), ReadError::kTooDeep);
  // Lists of lists likewise.
  std::string lists(10000, '\x19');
  CompactReader l(lists);
  l.SkipField(CompactType::kList);
  EXPECT_EQ(l.error(), ReadError::kTooDeep);
  // Exactly at the limit is fine.
  std::string ok(CompactReader::kMaxDepth - 1, '\x1c');
  ok += std::string(CompactReader::kMaxDepth, '\0');
  CompactReader at(ok);
  at.SkipField(CompactType::kStruct);
  EXPECT_TRUE(at.ok()) << at.message();
}

TEST(CompactReaderTest, HugeLengthsFailWithoutAllocating) {
  // A list claiming 2^31-1 elements, a binary of 2^31-1 bytes, a map of 2^31-1 entries: each
  // in a few bytes.
  CompactWriter w;
  w.WriteListHeader(CompactType::kI64, std::numeric_limits<int32_t>::max());
  CompactReader list(w.bytes());
  EXPECT_EQ(list.ReadListHeader().size, 0);
  EXPECT_EQ(list.error(), ReadError::kTruncated);

  const std::string binary =
      "\xff\xff\xff\xff\x07"
      "abc";
  CompactReader b(binary);
  EXPECT_TRUE(b.ReadBinary().empty());
  EXPECT_EQ(b.error(), ReadError::kTruncated);

  const std::string map =
      "\xff\xff\xff\xff\x07\x55"
      "ab";
  CompactReader m(map);
  m.SkipField(CompactType::kMap);
  EXPECT_EQ(m.error(), ReadError::kTruncated);

  // Lengths beyond 32 bits are malformed, not large.
  const std::string too_long = "\xff\xff\xff\xff\x1f";
  CompactReader t(too_long);
  t.ReadBinary();
  EXPECT_EQ(t.error(), ReadError::kMalformed);
}

TEST(CompactReaderTest, RejectsMalformedValues) {
  {
    const std::string varint(11, '\xff');  // a varint longer than ten bytes
    CompactReader r(varint);
    r.ReadI64();
    EXPECT_EQ(r.error(), ReadError::kMalformed);
  }
  {
    const std::string overflow = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02";  // past 64 bits
    CompactReader r(overflow);
    r.ReadI64();
    EXPECT_EQ(r.error(), ReadError::kMalformed);
  }
  {
    const std::string i32 = "\x80\x80\x80\x80\x20";  // 2^33: not an i32
    CompactReader r(i32);
    r.ReadI32();
    EXPECT_EQ(r.error(), ReadError::kMalformed);
  }
  {
    const std::string field = "\x0e";  // type 14 does not exist
    CompactReader r(field);
    ASSERT_TRUE(r.BeginStruct());
    r.NextField();
    EXPECT_EQ(r.error(), ReadError::kMalformed);
  }
  {
    const std::string list = "\x1e";  // a list of one element of type 14
    CompactReader r(list);
    r.ReadListHeader();
    EXPECT_EQ(r.error(), ReadError::kMalformed);
  }
  {
    // After the first failure every read returns zero and the position stays.
    const std::string bytes = "\x0e\x15\x02";
    CompactReader r(bytes);
    ASSERT_TRUE(r.BeginStruct());
    r.NextField();
    const size_t at = r.position();
    EXPECT_EQ(r.ReadI32(), 0);
    EXPECT_EQ(r.NextField().type, CompactType::kStop);
    EXPECT_EQ(r.position(), at);
  }
}

TEST(CompactWriterTest, UsesShortAndLongForms) {
  CompactWriter w;
  w.BeginStruct();
  w.WriteFieldHeader(CompactType::kI32, 4);  // delta 4: one byte 0x45
  w.WriteI32(1);                             // zigzag 2
  w.WriteFieldHeader(CompactType::kI32, 3);  // going back: long form 0x05, zigzag(3) = 6
  w.WriteI32(-1);                            // zigzag 1
  w.EndStruct();
  EXPECT_EQ(w.bytes(), std::string("\x45\x02\x05\x06\x01\x00", 6));
}

}  // namespace
}  // namespace skade::iceberg::thrift
