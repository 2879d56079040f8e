// ArrayBuilder, CopySchema and MakeBatchStream, checked through the IPC encoder and decoder;
// SchemaKey.
#include "skade/arrow/builder.h"

#include <gtest/gtest.h>

#include "skade/arrow/ipc.h"

namespace skade::arrow {
namespace {

std::vector<std::pair<std::string, std::string>> MetadataOf(const ArrowSchema& s) {
  auto kv = DecodeMetadata(s.metadata);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return kv.ok() ? *kv : std::vector<std::pair<std::string, std::string>>{};
}

TEST(ArrayBuilderTest, NestedValuesRoundTripThroughIpc) {
  std::vector<ArrayBuilder> cols;
  cols.emplace_back("id", "l", false);
  cols.emplace_back("name", "u", true);
  cols.emplace_back("tags", "+l", true, std::vector<ArrayBuilder>{ArrayBuilder("item", "u", true)});
  cols.emplace_back("m", "+m", true,
                    std::vector<ArrayBuilder>{ArrayBuilder("entries", "+s", false,
                                                           {ArrayBuilder("key", "i", false), ArrayBuilder("value", "b", true)})});
  ArrayBuilder b = RecordBatchBuilder(std::move(cols));
  for (int64_t i = 0; i < 3; ++i) {
    b.AppendStruct();
    b.child(0).AppendInt(i);
    if (i == 1) {
      b.child(1).AppendNull();
      b.child(2).AppendNull();
      b.child(3).AppendNull();
      continue;
    }
    b.child(1).AppendString("n" + std::to_string(i));
    b.child(2).child(0).AppendString("a");
    b.child(2).child(0).AppendString("b");
    b.child(2).AppendList(2);
    b.child(3).child(0).AppendStruct();
    b.child(3).child(0).child(0).AppendInt(7);
    b.child(3).child(0).child(1).AppendBool(i == 2);
    b.child(3).AppendList(1);
  }
  SchemaHandle schema;
  ArrayHandle array;
  ASSERT_TRUE(b.Finish(schema.get(), array.get()).ok());
  EXPECT_EQ(array->length, 3);
  EXPECT_EQ(schema->children[0]->flags & ARROW_FLAG_NULLABLE, 0);
  std::vector<ArrayHandle> batches;
  batches.push_back(std::move(array));
  StreamHandle stream = MakeBatchStream(std::move(schema), std::move(batches));
  auto bytes = ipc::EncodeStream(stream.get());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto reader = ipc::StreamReader::Open(*bytes);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto batch = (*reader)->Next();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << batch.status().ToString();
  const ArrowArray& a = *(*batch)->get();
  ASSERT_EQ(a.length, 3);
  // id 0..2, name NULL in row 1, tags of row 2 = ["a", "b"].
  const auto* ids = static_cast<const int64_t*>(a.children[0]->buffers[1]);
  EXPECT_EQ(ids[2], 2);
  EXPECT_EQ(a.children[1]->null_count, 1);
  const auto* offsets = static_cast<const int32_t*>(a.children[2]->buffers[1]);
  EXPECT_EQ(offsets[3] - offsets[2], 2);
  EXPECT_EQ(a.children[3]->null_count, 1);
}

TEST(ArrayBuilderTest, DenseUnionEncodes) {
  std::vector<ArrayBuilder> members;
  members.emplace_back("s", "u", true);
  members.emplace_back("i", "l", true);
  std::vector<ArrayBuilder> cols;
  cols.emplace_back("v", "+ud:0,1", false, std::move(members));
  ArrayBuilder b = RecordBatchBuilder(std::move(cols));
  b.AppendStruct();
  b.child(0).AppendUnion(1);
  b.child(0).child(1).AppendInt(5);
  b.AppendStruct();
  b.child(0).AppendUnion(0);
  b.child(0).child(0).AppendString("x");
  SchemaHandle schema;
  ArrayHandle array;
  ASSERT_TRUE(b.Finish(schema.get(), array.get()).ok());
  const ArrowArray& u = *array->children[0];
  ASSERT_EQ(u.n_buffers, 2);
  EXPECT_EQ(static_cast<const int8_t*>(u.buffers[0])[0], 1);
  EXPECT_EQ(static_cast<const int32_t*>(u.buffers[1])[1], 0);
  auto encoder = ipc::StreamEncoder::Make(*schema.get());
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  auto messages = (*encoder)->EncodeBatch(std::move(array));
  ASSERT_TRUE(messages.ok()) << messages.status().ToString();
  ASSERT_EQ(messages->size(), 1u);
  // Types (2 bytes) and offsets (8 bytes), each padded to 8, then the children's buffers.
  EXPECT_GE(messages->at(0).body_length, 16);
}

TEST(CopySchemaTest, KeepsDictionariesAndReplacesChildMetadata) {
  ArrayBuilder dict("", "u", false);
  SchemaHandle value_schema;
  ArrayHandle unused;
  ASSERT_TRUE(dict.Finish(value_schema.get(), unused.get()).ok());
  std::vector<ArrayBuilder> cols;
  cols.emplace_back("e", "C", true);
  cols.emplace_back("n", "l", true);
  ArrayBuilder b = RecordBatchBuilder(std::move(cols));
  SchemaHandle schema;
  ArrayHandle array;
  ASSERT_TRUE(b.Finish(schema.get(), array.get()).ok());
  schema->children[0]->dictionary = value_schema.get();  // borrowed for the copy below

  std::vector<std::vector<std::pair<std::string, std::string>>> meta = {{{"k", "v"}}, {}};
  ArrowSchema copy;
  CopySchema(*schema.get(), &copy, &meta);
  SchemaHandle owned(&copy);
  schema->children[0]->dictionary = nullptr;
  ASSERT_NE(owned->children[0]->dictionary, nullptr);
  EXPECT_STREQ(owned->children[0]->dictionary->format, "u");
  EXPECT_EQ(MetadataOf(*owned->children[0]), meta[0]);
  EXPECT_TRUE(MetadataOf(*owned->children[1]).empty());
  EXPECT_STREQ(owned->children[1]->name, "n");
}

// A struct schema (id l, tags +l of u), with the metadata of "id" when given.
SchemaHandle KeyTestSchema(std::vector<std::pair<std::string, std::string>> id_metadata = {}) {
  std::vector<ArrayBuilder> cols;
  cols.emplace_back("id", "l", false);
  cols.back().set_metadata(std::move(id_metadata));
  cols.emplace_back("tags", "+l", true, std::vector<ArrayBuilder>{ArrayBuilder("item", "u", true)});
  ArrayBuilder b = RecordBatchBuilder(std::move(cols));
  SchemaHandle schema;
  ArrayHandle array;
  EXPECT_TRUE(b.Finish(schema.get(), array.get()).ok());
  return schema;
}

TEST(SchemaKeyTest, TwoSchemasShareAKeyExactlyWhenTheirTreesAreEqual) {
  SchemaHandle base = KeyTestSchema();
  const std::string key = SchemaKey(*base.get());
  ArrowSchema copy;
  CopySchema(*base.get(), &copy);
  SchemaHandle copied(&copy);
  EXPECT_EQ(SchemaKey(*copied.get()), key);
  EXPECT_EQ(SchemaKey(*KeyTestSchema().get()), key);

  std::vector<std::string> keys = {key};
  auto differs = [&](const ArrowSchema& s, const char* what) {
    const std::string k = SchemaKey(s);
    for (const std::string& other : keys) EXPECT_NE(k, other) << what;
    keys.push_back(k);
  };
  SchemaHandle with_meta = KeyTestSchema({{"ARROW:extension:name", "arrow.uuid"}});
  differs(*with_meta.get(), "metadata");
  differs(*KeyTestSchema({{"ARROW:extension:name", "arrow.json"}}).get(), "metadata value");
  differs(*KeyTestSchema({{"ARROW:extension:name", "arrow.uuid"}, {"k", ""}}).get(), "an empty metadata value");

  SchemaHandle renamed = KeyTestSchema();
  renamed->children[1]->children[0]->name = "element";
  differs(*renamed.get(), "a nested name");
  SchemaHandle retyped = KeyTestSchema();
  retyped->children[0]->format = "i";
  differs(*retyped.get(), "a format");
  SchemaHandle nullable = KeyTestSchema();
  nullable->children[0]->flags |= ARROW_FLAG_NULLABLE;
  differs(*nullable.get(), "flags");
  // Names and formats that run into each other stay apart ("ab" + "c" against "a" + "bc").
  SchemaHandle shifted = KeyTestSchema();
  shifted->children[0]->name = "idl";
  shifted->children[0]->format = "";
  differs(*shifted.get(), "a name running into the format");

  // A dictionary counts; malformed metadata has a key of its own, not that of no metadata.
  ArrayBuilder dict("", "u", false);
  SchemaHandle dict_schema;
  ArrayHandle unused;
  ASSERT_TRUE(dict.Finish(dict_schema.get(), unused.get()).ok());
  SchemaHandle encoded = KeyTestSchema();
  encoded->children[0]->dictionary = dict_schema.get();
  differs(*encoded.get(), "a dictionary");
  encoded->children[0]->dictionary = nullptr;  // borrowed
  const std::string bad_metadata("\xff\xff\xff\xff", 4);  // a negative count
  SchemaHandle malformed = KeyTestSchema();
  malformed->children[0]->metadata = bad_metadata.data();
  differs(*malformed.get(), "malformed metadata");
  malformed->children[0]->metadata = nullptr;  // not the builder's to free
}

}  // namespace
}  // namespace skade::arrow
