// Values convert to their column's type only exactly: the lossy ones fail the write naming
// column, value and row and commit nothing; the exact ones land unchanged; lenient is opt-in.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "skade/engine/data_writer.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using ::testing::HasSubstr;

class LosslessIngestTest : public testing::LakeTest {
 protected:
  struct Case {
    std::string column_type;  // the table column
    std::string value_sql;    // the source value
    std::string expect;       // the value read back as text; empty = refused
  };

  void Run(const std::vector<Case>& cases) {
    int n = 0;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.column_type + " <- " + c.value_sql);
      const std::string name = "t" + std::to_string(n++);
      auto t = CreateTable(name, "c " + c.column_type);
      ASSERT_TRUE(t);
      auto appended = t->Append({"SELECT " + c.value_sql + " AS c", nullptr});
      if (c.expect.empty()) {
        ASSERT_FALSE(appended.ok()) << "converted: " << Rows(*t, "SELECT c::VARCHAR FROM t")[0][0];
        EXPECT_EQ(appended.status().code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(appended.status().message(), HasSubstr("column 'c'"));
        EXPECT_THAT(appended.status().message(), HasSubstr("not exactly representable as"));
        ASSERT_TRUE(t->Refresh().ok());
        EXPECT_EQ(t->metadata().current_snapshot_id, std::nullopt) << "a refused write committed";
      } else {
        ASSERT_TRUE(appended.ok()) << appended.status().ToString();
        EXPECT_EQ(Rows(*t, "SELECT c::VARCHAR FROM t"), (std::vector<std::vector<std::string>>{{c.expect}}));
      }
    }
  }
};

TEST_F(LosslessIngestTest, NumbersConvertOnlyExactly) {
  Run({
      {"BIGINT", "1.7::DOUBLE", ""},
      {"BIGINT", "2.5::DOUBLE", ""},
      {"BIGINT", "2.0::DOUBLE", "2"},
      {"INTEGER", "3000000000::BIGINT", ""},
      {"INTEGER", "42::BIGINT", "42"},
      {"BIGINT", "42::INTEGER", "42"},
      {"DECIMAL(5,2)", "99.999", ""},
      {"DECIMAL(5,2)", "99.99", "99.99"},
      {"DECIMAL(5,2)", "1234.5", ""},
      {"DECIMAL(5,2)", "1.5::DOUBLE", "1.50"},
      {"DECIMAL(10,2)", "12::INTEGER", "12.00"},
      {"FLOAT", "0.1::DOUBLE", ""},
      {"FLOAT", "0.5::DOUBLE", "0.5"},
      {"DOUBLE", "0.1::FLOAT", "0.10000000149011612"},
      {"VARCHAR", "1.5::DOUBLE", "1.5"},
      {"BOOLEAN", "1::INTEGER", "true"},
      {"BOOLEAN", "2::INTEGER", ""},
  });
}

TEST_F(LosslessIngestTest, TextMustSpellAValueOfTheColumn) {
  Run({
      {"BIGINT", "'1.7'", ""},
      {"BIGINT", "' 7 '", ""},  // a cast would skip the spaces
      {"BIGINT", "'7 '", ""},
      {"BIGINT", "'0x10'", ""},
      {"DOUBLE", "'0x10'", ""},
      {"DOUBLE", "' 1.5'", ""},
      {"DATE", "' 2024-01-01'", ""},
      {"DOUBLE", "'-inf'", "-inf"},
      {"BIGINT", "'007'", "7"},
      {"BIGINT", "'1e3'", ""},
      {"BIGINT", "'12345678901234567890'", ""},
      {"DECIMAL(5,2)", "'99.999'", ""},
      {"DECIMAL(5,2)", "'99.990'", "99.99"},
      {"DECIMAL(5,2)", "'1e2'", ""},
      {"BOOLEAN", "'yes'", ""},
      {"BOOLEAN", "'true'", "true"},
      {"BOOLEAN", "'F'", "false"},
      {"DATE", "'2024-01-01 10:30'", ""},
      {"DATE", "'2024-01-01'", "2024-01-01"},
      {"TIMESTAMP", "'2024-01-01 10:00:00+02'", ""},
      {"TIMESTAMP", "'2024-01-01 10:00:00'", "2024-01-01 10:00:00"},
      {"TIMESTAMPTZ", "'2024-01-01 10:00:00+02'", "2024-01-01 08:00:00+00"},
      {"FLOAT", "'1e39'", ""},
      {"DOUBLE", "'0.1'", "0.1"},
  });
}

TEST_F(LosslessIngestTest, TimesKeepTheirMeaning) {
  Run({
      {"TIMESTAMP", "TIMESTAMPTZ '2024-01-01 10:00:00+00'", ""},  // an instant is not a wall-clock time
      {"TIMESTAMPTZ", "TIMESTAMP '2024-01-01 10:00:00'", "2024-01-01 10:00:00+00"},
      {"DATE", "TIMESTAMP '2024-01-01 10:30:00'", ""},
      {"DATE", "TIMESTAMP '2024-01-01 00:00:00'", "2024-01-01"},
      {"TIMESTAMP", "DATE '2024-01-01'", "2024-01-01 00:00:00"},
  });
}

// Input files convert as they spell their values: a CSV field is text (no sniffed number
// type decides for it), a JSON value keeps its kind (a string is not a number, a boolean not a
// string).
TEST_F(LosslessIngestTest, FileValuesConvertAsTheFileSpellsThem) {
  struct FileCase {
    std::string columns;  // the table
    std::string name;     // the file name (its extension picks the reader)
    std::string text;     // the file
    std::string refused;  // empty: accepted; else a word of the refusal
  };
  const std::vector<FileCase> cases = {
      {"n BIGINT", "hex.csv", "n\n0x10\n", "0x10"},
      {"n BIGINT", "padded.csv", "n\n 7 \n", " 7 "},
      {"n DOUBLE", "hexd.csv", "n\n0x1p4\n", "0x1p4"},
      {"n BIGINT", "ok.csv", "n\n7\n-12\n", ""},
      {"s VARCHAR", "text.csv", "s\n 7 \n", ""},  // text stays text, spaces and all
      {"n BIGINT", "string.ndjson", "{\"n\": \"12\"}\n", "\"12\""},
      {"s VARCHAR", "bool.ndjson", "{\"s\": true}\n", "true"},
      {"s VARCHAR", "number.ndjson", "{\"s\": 12}\n", "12"},
      {"b BOOLEAN", "boolstr.ndjson", "{\"b\": \"true\"}\n", "\"true\""},
      {"n BIGINT, s VARCHAR, b BOOLEAN, d DATE, x DOUBLE", "kinds.ndjson",
       "{\"n\": 12, \"s\": \"12\", \"b\": false, \"d\": \"2024-01-05\", \"x\": 3}\n{\"n\": null}\n", ""},
      {"n DECIMAL(5,2)", "dec.json", "[{\"n\": 99.99}, {\"n\": 1}]", ""},
      {"n DECIMAL(5,2)", "dec3.json", "[{\"n\": 99.999}]", "99.999"},
      {"n DECIMAL(5,2)", "decstr.ndjson", "{\"n\": \"12.50\"}\n{\"n\": \"0\"}\n", ""},  // digits kept in a string
      {"n DECIMAL(5,2)", "decstr3.ndjson", "{\"n\": \"1.005\"}\n", "\"1.005\""},
  };
  int i = 0;
  for (const FileCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto t = CreateTable("f" + std::to_string(i++), c.columns);
    ASSERT_TRUE(t);
    const std::string path = tmp_.Path(c.name);
    testing::WriteFileOrDie(path, c.text);
    auto ingested = t->IngestFiles({path});
    if (c.refused.empty()) {
      EXPECT_TRUE(ingested.ok()) << ingested.status().ToString();
      continue;
    }
    ASSERT_FALSE(ingested.ok()) << "accepted: " << Rows(*t, "SELECT * FROM t")[0][0];
    EXPECT_EQ(ingested.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(ingested.status().message(), HasSubstr("value " + c.refused + " is not exactly representable"));
  }
  // What was accepted reads back as written.
  auto kinds = LoadTable(Ident("f9"));
  ASSERT_TRUE(kinds);
  EXPECT_EQ(Rows(*kinds, "SELECT n, s, b, d, x FROM t ORDER BY n NULLS LAST"),
            (std::vector<std::vector<std::string>>{{"12", "12", "false", "2024-01-05", "3.0"},
                                                   {"NULL", "NULL", "NULL", "NULL", "NULL"}}));
  auto text = LoadTable(Ident("f4"));
  ASSERT_TRUE(text);
  EXPECT_EQ(Rows(*text, "SELECT s FROM t"), (std::vector<std::vector<std::string>>{{" 7 "}}));
  auto dec = LoadTable(Ident("f10"));
  ASSERT_TRUE(dec);
  EXPECT_EQ(Rows(*dec, "SELECT n::VARCHAR FROM t ORDER BY n"),
            (std::vector<std::vector<std::string>>{{"1.00"}, {"99.99"}}));
}

TEST_F(LosslessIngestTest, TheRefusalNamesTheRowAndLenientOptsOut) {
  auto t = CreateTable("r", "id BIGINT, amount DECIMAL(5,2)");
  ASSERT_TRUE(t);
  auto refused = t->Append({"SELECT * FROM (VALUES (1, 1.25), (2, 99.999), (3, 2.5)) v(id, amount)", nullptr});
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("column 'amount': value 99.999"));
  EXPECT_THAT(refused.status().message(), HasSubstr("DECIMAL(5,2)"));
  EXPECT_THAT(refused.status().message(), HasSubstr("row 2 of the input"));
  // Two source ids would collapse into one key: refused, not merged.
  auto keys = CreateTable("k", "id INTEGER");
  ASSERT_TRUE(keys);
  EXPECT_EQ(keys->Append({"SELECT * FROM (VALUES (1.4::DOUBLE), (1.0::DOUBLE)) v(id)", nullptr}).status().code(),
            StatusCode::kInvalidArgument);
  // Opting in: DuckDB's casts round.
  engine::WriteSource lenient{"SELECT 1.7::DOUBLE AS id, 99.999 AS amount", nullptr, engine::CastPolicy::kLenient};
  ASSERT_TRUE(t->Append(lenient).ok());
  EXPECT_EQ(Rows(*t, "SELECT id, amount::VARCHAR FROM t"), (std::vector<std::vector<std::string>>{{"2", "100.00"}}));
}

}  // namespace
}  // namespace skade::table
