// Deletion vectors (spec v3) and Puffin files: the portable 64-bit Roaring format checked
// against bytes written out by hand from the format's description, every container shape,
// positions past 2^32, and damaged blobs and footers as clear Corruption errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/puffin.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

// Frames a vector as the spec's blob: big-endian length, magic, vector, big-endian CRC-32.
// The CRC is passed in (computed independently below with the textbook bitwise algorithm).
uint32_t BitwiseCrc32(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}
std::string Frame(const std::string& vector) {
  std::string body = Bytes({0xD1, 0xD3, 0x39, 0x64}) + vector;
  auto be = [](uint32_t v) { return Bytes({int(v >> 24), int((v >> 16) & 0xFF), int((v >> 8) & 0xFF), int(v & 0xFF)}); };
  return be(static_cast<uint32_t>(body.size())) + body + be(BitwiseCrc32(body));
}

std::vector<int64_t> Positions(const DeletionVector& dv) {
  std::vector<int64_t> out;
  dv.ForEach([&](int64_t p) { out.push_back(p); });
  return out;
}

TEST(DeletionVectorTest, DecodesAnArrayContainerWrittenByHand) {
  // One 32-bit bitmap (key 0) without run containers: cookie 12346, one container (key 0,
  // cardinality 3), its offset (16 bytes from the bitmap's start), then values 1, 2, 7.
  const std::string vector = Bytes({1, 0, 0, 0, 0, 0, 0, 0,  // one bitmap
                                    0, 0, 0, 0,               // key 0
                                    0x3A, 0x30, 0, 0,         // cookie 12346
                                    1, 0, 0, 0,               // one container
                                    0, 0, 2, 0,               // key 0, cardinality - 1 = 2
                                    16, 0, 0, 0,              // offset
                                    1, 0, 2, 0, 7, 0});
  auto dv = DeletionVector::Deserialize(Frame(vector));
  ASSERT_TRUE(dv.ok()) << dv.status().ToString();
  EXPECT_EQ(Positions(*dv), (std::vector<int64_t>{1, 2, 7}));
  EXPECT_EQ(dv->cardinality(), 3);
  EXPECT_EQ(dv->max(), 7);
  EXPECT_TRUE(dv->Contains(2));
  EXPECT_FALSE(dv->Contains(3));
  // Our writer produces exactly these bytes.
  EXPECT_EQ(DeletionVector::FromPositions({7, 1, 2, 2}).Serialize(), Frame(vector));
}

TEST(DeletionVectorTest, DecodesRunContainersAndHighKeysWrittenByHand) {
  // Key 1 (positions 2^32 + …), run cookie with one container: 12347 | (1 - 1) << 16, the
  // run flag bitset (container 0 is a run container), header (key 5, cardinality 11), no
  // offsets (fewer than 4 containers), then one run: start 100, length - 1 = 10.
  const std::string vector = Bytes({1, 0, 0, 0, 0, 0, 0, 0,  // one bitmap
                                    1, 0, 0, 0,               // key 1
                                    0x3B, 0x30, 0, 0,         // cookie 12347, 1 container
                                    1,                        // run flags
                                    5, 0, 10, 0,              // key 5, cardinality - 1 = 10
                                    1, 0,                     // one run
                                    100, 0, 10, 0});
  auto dv = DeletionVector::Deserialize(Frame(vector));
  ASSERT_TRUE(dv.ok()) << dv.status().ToString();
  const int64_t base = (int64_t{1} << 32) + (int64_t{5} << 16);
  std::vector<int64_t> expected;
  for (int i = 100; i <= 110; ++i) expected.push_back(base + i);
  EXPECT_EQ(Positions(*dv), expected);
  EXPECT_EQ(dv->max(), base + 110);
  EXPECT_TRUE(dv->Contains(base + 105));
  EXPECT_FALSE(dv->Contains(base + 111));
  EXPECT_FALSE(dv->Contains(105));
  EXPECT_EQ(DeletionVector::FromPositions(expected).Serialize(), Frame(vector));
}

TEST(DeletionVectorTest, EveryContainerShapeRoundTrips) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> positions;
  for (int i = 0; i < 3000; ++i) positions.push_back(rng() % 65536);              // array
  for (int i = 0; i < 30000; ++i) positions.push_back(65536 + rng() % 65536);       // bitset
  for (int i = 0; i < 50000; ++i) positions.push_back(3 * 65536 + i);              // one long run
  for (int i = 0; i < 5; ++i) positions.push_back((int64_t{7} << 32) + i * 1000);  // second key
  positions.push_back((int64_t{1} << 62) + 3);                                       // far out
  auto dv = DeletionVector::FromPositions(positions);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  auto decoded = DeletionVector::Deserialize(dv.Serialize());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(Positions(*decoded), positions);
  EXPECT_EQ(decoded->cardinality(), static_cast<int64_t>(positions.size()));
  EXPECT_EQ(decoded->max(), positions.back());
  for (int64_t p : {int64_t{0}, int64_t{65535}, int64_t{65536 + 17}, int64_t{3 * 65536 + 49999}, positions.back()}) {
    EXPECT_EQ(decoded->Contains(p), std::binary_search(positions.begin(), positions.end(), p)) << p;
  }
  EXPECT_EQ(DeletionVector::Deserialize(DeletionVector().Serialize())->cardinality(), 0);
}

TEST(DeletionVectorTest, DamagedBlobsAreCorruption) {
  const std::string good = DeletionVector::FromPositions({1, 5, 9, 70000}).Serialize();
  auto expect_corrupt = [](const std::string& blob, const std::string& says) {
    auto dv = DeletionVector::Deserialize(blob);
    ASSERT_EQ(dv.status().code(), StatusCode::kCorruption) << says;
    EXPECT_THAT(dv.status().message(), HasSubstr(says));
  };
  std::string flipped = good;
  flipped[20] = static_cast<char>(flipped[20] ^ 0x40);
  expect_corrupt(flipped, "CRC");
  std::string magic = good;
  magic[5] = 0;
  expect_corrupt(magic, "magic");
  expect_corrupt(good.substr(0, good.size() - 3), "length");
  expect_corrupt(good.substr(0, 6), "fewer than its framing");
  // A well-framed vector (right CRC) whose bitmap is truncated, or has keys out of order.
  const std::string vector = good.substr(8, good.size() - 12);
  expect_corrupt(Frame(vector.substr(0, vector.size() - 2)), "truncated");
  expect_corrupt(Frame(Bytes({2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0x3A, 0x30, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0x3A, 0x30,
                              0, 0, 0, 0, 0, 0})),
                 "ascending");
  expect_corrupt(Frame(Bytes({1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3A, 0x30, 0, 0, 0, 0, 0, 0})), "negative");
  expect_corrupt(Frame(Bytes({1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 0, 0})), "cookie");
  expect_corrupt(Frame(vector + "x"), "unexpected byte");
}

TEST(PuffinTest, FooterRoundTripsPlainAndCompressed) {
  for (bool compress : {false, true}) {
    SCOPED_TRACE(compress ? "LZ4 footer" : "plain footer");
    PuffinWriter writer;
    PuffinBlob a{std::string(kDeletionVectorBlob), {2147483645}, 7, 3, 0, 0, std::nullopt,
                 {{"referenced-data-file", "/w/a.parquet"}, {"cardinality", "2"}}};
    const std::string blob_a = DeletionVector::FromPositions({1, 2}).Serialize();
    const std::string blob_b = DeletionVector::FromPositions({4}).Serialize();
    EXPECT_EQ(writer.Add(a, blob_a).offset, 4);
    PuffinBlob b = a;
    b.properties["referenced-data-file"] = "/w/b.parquet";
    const PuffinBlob& placed = writer.Add(b, blob_b);
    EXPECT_EQ(placed.offset, 4 + static_cast<int64_t>(blob_a.size()));
    const std::string file = writer.Finish({{"created-by", "skade test"}}, compress);
    testing::TempDir tmp;
    const std::string path = tmp.Path("f.puffin");
    auto io = io::MakeLocalFileIO();
    ASSERT_TRUE(io->CreateExclusive(path, file).ok());
    auto footer = ReadPuffinFooter(*io, path);
    ASSERT_TRUE(footer.ok()) << footer.status().ToString();
    ASSERT_EQ(footer->blobs.size(), 2u);
    EXPECT_EQ(footer->properties.at("created-by"), "skade test");
    const PuffinBlob* second = footer->BlobAt(placed.offset);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second->length, static_cast<int64_t>(blob_b.size()));
    EXPECT_EQ(second->properties.at("referenced-data-file"), "/w/b.parquet");
    EXPECT_EQ(second->snapshot_id, 7);
    EXPECT_EQ(second->sequence_number, 3);
    EXPECT_EQ(second->fields, std::vector<int>{2147483645});
    EXPECT_EQ(footer->BlobAt(5), nullptr);
    auto whole = ParsePuffinFile(file, "f.puffin");
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    EXPECT_EQ(whole->blobs.size(), 2u);
  }
}

TEST(PuffinTest, DamagedFilesAreCorruptionNamingTheFile) {
  PuffinWriter writer;
  writer.Add(PuffinBlob{std::string(kDeletionVectorBlob), {}, 1, 1, 0, 0, std::nullopt, {}},
             DeletionVector::FromPositions({0}).Serialize());
  const std::string good = writer.Finish({});
  auto expect_corrupt = [](const std::string& file, const std::string& says) {
    auto footer = ParsePuffinFile(file, "x.puffin");
    ASSERT_EQ(footer.status().code(), StatusCode::kCorruption) << says;
    EXPECT_THAT(footer.status().message(), HasSubstr("x.puffin"));
    EXPECT_THAT(footer.status().message(), HasSubstr(says));
  };
  expect_corrupt("PAR1" + good.substr(4), "start with the Puffin magic");
  expect_corrupt(good.substr(0, good.size() - 1) + "2", "end with the Puffin magic");
  std::string big = good;
  big[big.size() - 12] = '\x7f';  // payload size far past the file
  big[big.size() - 11] = '\x7f';
  expect_corrupt(big, "does not fit the file");
  expect_corrupt("PFA1", "too short");
  // A blob entry pointing past the blob area.
  PuffinWriter w2;
  PuffinBlob far{"apache-datasketches-theta-v1", {1}, 1, 1, 0, 0, std::nullopt, {}};
  w2.Add(far, "abc");
  std::string file = w2.Finish({});
  const std::string entry = "\"offset\":4";
  auto at = file.find(entry);
  ASSERT_NE(at, std::string::npos);
  file.replace(at, entry.size(), "\"offset\":9");
  expect_corrupt(file, "outside the blob area");
}

}  // namespace
}  // namespace skade::iceberg
