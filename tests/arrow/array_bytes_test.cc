// arrow::ArrayBufferBytes against sizes worked out by hand from the Arrow columnar layout.
#include "skade/arrow/array_bytes.h"

#include <gtest/gtest.h>

#include "skade/arrow/builder.h"

namespace skade::arrow {
namespace {

struct Built {
  SchemaHandle schema;
  ArrayHandle array;
};

Built Finish(ArrayBuilder builder) {
  Built b;
  EXPECT_TRUE(builder.Finish(b.schema.get(), b.array.get()).ok());
  return b;
}

TEST(ArrayBufferBytesTest, CountsEachLayoutsBuffers) {
  // int64 without nulls: 8 bytes a row, no bitmap.
  ArrayBuilder ints("i", "l", true);
  for (int i = 0; i < 10; ++i) ints.AppendInt(i);
  Built a = Finish(std::move(ints));
  EXPECT_EQ(ArrayBufferBytes(*a.schema.get(), *a.array.get()), 80);

  // int32 with a null: a 2-byte bitmap for 10 rows.
  ArrayBuilder with_null("i", "i", true);
  for (int i = 0; i < 9; ++i) with_null.AppendInt(i);
  with_null.AppendNull();
  Built b = Finish(std::move(with_null));
  EXPECT_EQ(ArrayBufferBytes(*b.schema.get(), *b.array.get()), 40 + 2);

  // utf8: 4-byte offsets (rows + 1) and the bytes they span.
  ArrayBuilder text("s", "u", false);
  text.AppendString("abc");
  text.AppendString("");
  text.AppendString("hello");
  Built c = Finish(std::move(text));
  EXPECT_EQ(ArrayBufferBytes(*c.schema.get(), *c.array.get()), 4 * 4 + 8);

  // A struct of a bool and a list of int16: the list's offsets and its child in full.
  ArrayBuilder row("r", "+s", false,
                   {ArrayBuilder("flag", "b", false),
                    ArrayBuilder("xs", "+l", false, {ArrayBuilder("item", "s", false)})});
  for (int r = 0; r < 3; ++r) {
    row.AppendStruct();
    row.child(0).AppendBool(r % 2 == 0);
    for (int k = 0; k < r; ++k) row.child(1).child(0).AppendInt(k);
    row.child(1).AppendList(r);
  }
  Built d = Finish(std::move(row));
  // bool: 1 byte; list: 4 offsets of 4 bytes + 3 int16 values.
  EXPECT_EQ(ArrayBufferBytes(*d.schema.get(), *d.array.get()), 1 + 16 + 6);
}

TEST(ArrayBufferBytesTest, FixedWidthFormatsAndMalformedOnes) {
  ArrowSchema schema{};
  ArrowArray array{};
  array.length = 4;
  const std::pair<const char*, int64_t> cases[] = {
      {"d:18,2", 64},  {"d:38,10,256", 128}, {"w:3", 12}, {"tdD", 16},   {"tsu:UTC", 32},
      {"tin", 64},     {"e", 8},             {"n", 0},    {"bogus", 0},
  };
  for (const auto& [format, bytes] : cases) {
    schema.format = format;
    EXPECT_EQ(ArrayBufferBytes(schema, array), bytes) << format;
  }
  schema.format = nullptr;
  EXPECT_EQ(ArrayBufferBytes(schema, array), 0);
}

}  // namespace
}  // namespace skade::arrow
