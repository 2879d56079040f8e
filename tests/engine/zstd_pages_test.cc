// ZSTD Parquet pages decompressed through the system's libzstd (engine/zstd_pages_internal.h):
// DuckDB's reader calls skade's definition, answers stay right, and a damaged frame is an error.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "skade/engine/database.h"
#include "skade/engine/zstd_pages_internal.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

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
  const uint64_t before = ZstdPagesDecompressed();
  EXPECT_EQ(testing::QueryText(*db, "SELECT sum(id), count(DISTINCT tag), max(tag) FROM read_parquet('" + path + "')"),
            (std::vector<std::vector<std::string>>{{"44999850000", "1000", "v999"}}));
  // Fails if libduckdb.so stops calling the exported function (then its own copy decodes).
  EXPECT_GE(ZstdPagesDecompressed(), before + 2);
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
  // Every ZSTD frame starts with the magic number 0xFD2FB528 (little-endian); break each one.
  const std::string magic("\x28\xB5\x2F\xFD", 4);
  int broken = 0;
  for (size_t at = bytes.find(magic); at != std::string::npos; at = bytes.find(magic, at + 4)) {
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
