// ZSTD Parquet pages decompressed through the system's libzstd (engine/zstd_pages_internal.h):
// DuckDB's reader calls skade's definition, answers stay right, a damaged frame is an error, and
// only zstd frames (and skippable ones) are decoded.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include "skade/engine/database.h"
#include "skade/engine/zstd_pages_internal.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/temp_dir.h"

// The definition under test (zstd_pages.cc), and DuckDB's own test of its results.
namespace duckdb_zstd {
size_t ZSTD_decompress(void* dst, size_t dst_capacity, const void* src, size_t compressed_size);
unsigned ZSTD_isError(size_t code);
}  // namespace duckdb_zstd

namespace skade::engine {
namespace {

// A zstd frame of one raw block holding "hello": the magic number, a frame header of one
// segment with a one-byte content size, a last raw block of 5 bytes, the bytes.
const std::string kHelloFrame("\x28\xB5\x2F\xFD\x20\x05\x29\x00\x00hello", 14);
// A skippable frame of 3 bytes.
const std::string kSkippable("\x50\x2A\x4D\x18\x03\x00\x00\x00" "abc", 11);

std::string Decompress(const std::string& src, size_t capacity, size_t* result) {
  std::string dst(capacity, '\0');
  *result = duckdb_zstd::ZSTD_decompress(dst.data(), dst.size(), src.data(), src.size());
  return duckdb_zstd::ZSTD_isError(*result) ? "" : dst.substr(0, *result);
}

TEST(ZstdPagesTest, ZstdAndSkippableFramesDecodeAndNothingElse) {
  size_t result = 0;
  EXPECT_EQ(Decompress(kHelloFrame, 16, &result), "hello");
  EXPECT_EQ(Decompress(kSkippable + kHelloFrame + kHelloFrame, 16, &result), "hellohello");
  // zstd's legacy formats (v0.7: magic 0xFD2FB527), a truncated frame, a frame too large for
  // the room, and stray bytes after a frame are errors.
  for (const std::string& bad : {std::string("\x27\xB5\x2F\xFD\x20\x05\x29\x00\x00hello", 14),
                                 kHelloFrame.substr(0, 10), kHelloFrame + "\x01\x02"}) {
    Decompress(bad, 16, &result);
    EXPECT_TRUE(duckdb_zstd::ZSTD_isError(result)) << bad.size() << " bytes";
  }
  Decompress(kHelloFrame, 4, &result);
  EXPECT_TRUE(duckdb_zstd::ZSTD_isError(result));
}

std::unique_ptr<Database> OpenDb() {
  auto db = Database::Open({});
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(*db) : nullptr;
}

// Writes 300,000 rows (several pages) of two columns as a ZSTD Parquet file.
void WriteZstdFile(Database& db, const std::string& path) {
  Status written = db.Execute("COPY (SELECT i AS id, 'v' || (i % 1000) AS tag FROM range(300000) t(i)) TO '" + path +
                              "' (FORMAT parquet, COMPRESSION zstd)");
  ASSERT_TRUE(written.ok()) << written.ToString();
}

TEST(ZstdPagesTest, DuckDbsParquetReaderDecompressesThroughTheSystemLibrary) {
  testing::TempDir dir;
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::string path = dir.path() + "/z.parquet";
  WriteZstdFile(*db, path);
  const uint64_t before = ZstdFramesDecompressed();
  EXPECT_EQ(testing::QueryText(*db, "SELECT sum(id), count(DISTINCT tag), max(tag) FROM read_parquet('" + path + "')"),
            (std::vector<std::vector<std::string>>{{"44999850000", "1000", "v999"}}));
  // Fails if libduckdb.so stops calling the exported function (then its own copy decodes).
  EXPECT_GE(ZstdFramesDecompressed(), before + 2);
}

TEST(ZstdPagesTest, ADamagedFrameIsAnErrorAndOtherFilesStillRead) {
  testing::TempDir dir;
  auto db = OpenDb();
  ASSERT_NE(db, nullptr);
  const std::string good = dir.path() + "/good.parquet";
  const std::string bad = dir.path() + "/bad.parquet";
  WriteZstdFile(*db, good);
  WriteZstdFile(*db, bad);
  std::string bytes;
  {
    std::ifstream in(bad, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Every ZSTD frame starts with the magic number 0xFD2FB528 (little-endian); break each one in
  // the pages, before the footer (its length is the 4 bytes before the closing "PAR1").
  ASSERT_GT(bytes.size(), 12u);
  const uint32_t footer = static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 8])) |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 7])) << 8 |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 6])) << 16 |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 5])) << 24;
  ASSERT_LT(footer + 8u, bytes.size());
  const size_t pages_end = bytes.size() - 8 - footer;
  const std::string magic("\x28\xB5\x2F\xFD", 4);
  int broken = 0;
  for (size_t at = bytes.find(magic); at != std::string::npos && at < pages_end; at = bytes.find(magic, at + 4)) {
    bytes[at] = '\x29';
    ++broken;
  }
  ASSERT_GT(broken, 0);
  {
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  auto rows = db->QueryRows("SELECT sum(id) FROM read_parquet('" + bad + "')");
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("ZSTD"), std::string::npos) << rows.status().ToString();
  EXPECT_EQ(testing::QueryText(*db, "SELECT sum(id) FROM read_parquet('" + good + "')"),
            (std::vector<std::vector<std::string>>{{"44999850000"}}));
}

}  // namespace
}  // namespace skade::engine
