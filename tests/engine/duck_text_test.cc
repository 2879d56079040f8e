// Partition folder texts (engine/duck_text_internal.h): what a partitioned write names its
// folders by reads back as exactly the ordinal it was made from, and any other text is refused
// (the write then fails), never read as some other value. The SQL side runs through DuckDB in
// table_test (TimePartitionFoldersAreDatesAndTheirValuesReadBackExactly).
#include <gtest/gtest.h>

#include "skade/engine/duck_text_internal.h"

namespace skade::engine {
namespace {

using iceberg::TransformKind;

TEST(PartitionFolderTextTest, ReadsBackTheOrdinalsOfDateTexts) {
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kYear, "2024"), 54);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kYear, "1969"), -1);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kYear, "-043"), -2013);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kYear, "12000"), 10030);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kMonth, "2024-01"), 648);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kMonth, "1969-12"), -1);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "1970-01-01"), 0);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "2024-01-31"), 19753);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "2024-02-29"), 19782);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "0001-01-01"), -719162);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "9999-12-31"), 2932896);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kIdentity, "1969-12-31"), -1);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kHour, "1970-01-01-00"), 0);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kHour, "1969-12-31-23"), -1);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kHour, "2024-01-31-10"), 19753 * 24 + 10);
  // Outside the years 0001-9999 a day or hour keeps its ordinal.
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "-735160"), -735160);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, "3663534"), 3663534);
  EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kHour, "-17643888"), -17643888);
}

TEST(PartitionFolderTextTest, RefusesEveryOtherText) {
  for (const char* text : {"", "-", "+5", " 2024", "2024 ", "20x4", "2024-01"}) {
    EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kYear, text), std::nullopt) << text;
  }
  for (const char* text : {"2024", "2024-13", "2024-00", "2024-1", "2024-01-01", "2024--1", "2024-01-"}) {
    EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kMonth, text), std::nullopt) << text;
  }
  // An impossible date, a short field, a plain-range ordinal (never written as such), a date
  // beyond the plain range (written as an ordinal), an hour past 23.
  for (const char* text : {"2024-02-30", "2023-02-29", "2024-1-01", "2024-01-1", "19753", "0", "-1",
                           "12000-06-01", "0000-12-31", "2024-01-31-10", "2024/01/31"}) {
    EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kDay, text), std::nullopt) << text;
  }
  for (const char* text : {"2024-01-31-24", "2024-01-31", "2024-01-31-1", "474082", "2024-01-31-10-00"}) {
    EXPECT_EQ(OrdinalFromPartitionFolderText(TransformKind::kHour, text), std::nullopt) << text;
  }
}

TEST(PartitionFolderTextTest, AppliesToTimeTransformsAndIdentityDatesOnly) {
  EXPECT_TRUE(HasPartitionFolderText(TransformKind::kDay, iceberg::TypeId::kTimestampTz));
  EXPECT_TRUE(HasPartitionFolderText(TransformKind::kYear, iceberg::TypeId::kDate));
  EXPECT_TRUE(HasPartitionFolderText(TransformKind::kIdentity, iceberg::TypeId::kDate));
  EXPECT_FALSE(HasPartitionFolderText(TransformKind::kIdentity, iceberg::TypeId::kTimestamp));
  EXPECT_FALSE(HasPartitionFolderText(TransformKind::kBucket, iceberg::TypeId::kDate));
  EXPECT_FALSE(HasPartitionFolderText(TransformKind::kTruncate, iceberg::TypeId::kLong));
}

}  // namespace
}  // namespace skade::engine
