// Issue 31 item 8: a data file whose pages carry CRCs (Spark writes them; DuckDB does not, so
// the test re-encodes skade's own file with them) reads the right rows, and one flipped byte in
// a page fails every read of the table with an error naming the file instead of wrong rows.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "skade/io/file_io.h"
#include "skade/table/table.h"
#include "tests/testing/lake_test.h"
#include "tests/testing/parquet_checksums.h"

namespace skade::table {
namespace {

namespace fs = std::filesystem;
using Text = std::vector<std::vector<std::string>>;

class PageChecksumsTest : public testing::LakeTest {
 protected:
  // A table of 3000 rows in one data file, that file re-encoded with page CRCs.
  void SetUp() override {
    LakeTest::SetUp();
    table_ = CreateTable("t", "id BIGINT, name VARCHAR");
    ASSERT_TRUE(table_);
    auto appended = table_->Append(engine::WriteSource{
        "SELECT range AS id, 'name ' || (range % 17) AS name FROM range(3000)", nullptr});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    auto scan = table_->PlanRead({});
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    ASSERT_EQ(scan->tasks.size(), 1u);
    stored_path_ = scan->tasks[0].file.file_path;
    path_ = io::LocalPath(stored_path_);
    auto checksummed = testing::AddPageChecksums(testing::ReadFileOrDie(path_));
    ASSERT_TRUE(checksummed.ok()) << checksummed.status().ToString();
    file_ = std::move(checksummed).value();
    Replace(file_.bytes);
  }

  // Writes `bytes` over the data file and moves its modification time on, as a different file
  // would have (two writes within one clock tick can share a time).
  void Replace(const std::string& bytes) {
    const auto before =
        fs::exists(path_) ? fs::last_write_time(path_) : fs::file_time_type::clock::now();
    fs::remove(path_);
    testing::WriteFileOrDie(path_, bytes);
    fs::last_write_time(path_, before + std::chrono::seconds(1));
  }

  // The file with one byte flipped in the middle of its first data page.
  std::string Damaged() const {
    for (const auto& page : file_.pages) {
      if (page.type != 0 && page.type != 3) continue;
      std::string bytes = file_.bytes;
      bytes[static_cast<size_t>(page.data_offset + page.data_size / 2)] ^= 0x04;
      return bytes;
    }
    ADD_FAILURE() << "no data page";
    return file_.bytes;
  }

  void ExpectNamesTheDamagedFile(const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kCorruption) << status.ToString();
    EXPECT_NE(status.message().find(path_), std::string::npos) << status.ToString();
    EXPECT_NE(status.message().find("checksum mismatch"), std::string::npos) << status.ToString();
  }

  std::unique_ptr<Table> table_;
  std::string stored_path_, path_;
  testing::ChecksummedParquet file_;
};

TEST_F(PageChecksumsTest, AChecksummedFileReadsItsRowsAndIsCheckedOnce) {
  ASSERT_GT(file_.pages.size(), 1u);
  EXPECT_EQ(Rows(*table_, "SELECT count(*), sum(id), count(DISTINCT name), max(name) FROM t"),
            (Text{{"3000", "4498500", "17", "name 9"}}));
  auto counters = db_->data_file_checks().counters();
  EXPECT_EQ(counters.files_checked, 1);
  EXPECT_EQ(counters.files_with_checksums, 1);
  EXPECT_EQ(counters.pages_with_crc, static_cast<int64_t>(file_.pages.size()));
  // Read again: the file is not read again for the check.
  EXPECT_EQ(Rows(*table_, "SELECT count(*) FROM t WHERE id < 10"), (Text{{"10"}}));
  counters = db_->data_file_checks().counters();
  EXPECT_EQ(counters.files_checked, 1);
  EXPECT_EQ(counters.files_remembered, 1);
}

TEST_F(PageChecksumsTest, AFlippedPageByteFailsEveryReadNamingTheFile) {
  EXPECT_EQ(Rows(*table_, "SELECT count(*) FROM t"), (Text{{"3000"}}));
  Replace(Damaged());
  // The file changed (size or time): it is checked again, and every read path refuses it.
  ExpectNamesTheDamagedFile(table_->Read({}).status());
  ExpectNamesTheDamagedFile(table_->ReadSql({}).status());
  ReadOptions where;
  where.where = testing::Where("id > 5");
  ExpectNamesTheDamagedFile(table_->Count(where).status());
  // Writes that read the table's rows (copy-on-write delete) fail before committing anything.
  const std::string before = table_->metadata_location();
  ExpectNamesTheDamagedFile(table_->DeleteWhere(testing::Where("id = 7")).status());
  ASSERT_TRUE(table_->Refresh().ok());
  EXPECT_EQ(table_->metadata_location(), before);
  // A new process (here: a new database) refuses it too.
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  auto fresh = table::Table::Load(*catalog_, *io_, **db, Ident("t"));
  ASSERT_TRUE(fresh.ok());
  ExpectNamesTheDamagedFile((*fresh)->Read({}).status());
  // Repaired, it reads again (failures are never remembered).
  Replace(file_.bytes);
  EXPECT_EQ(Rows(*table_, "SELECT count(*), sum(id) FROM t"), (Text{{"3000", "4498500"}}));
}

TEST_F(PageChecksumsTest, AFileWithoutChecksumsCostsAProbe) {
  auto plain = CreateTable("plain", "id BIGINT");
  ASSERT_TRUE(plain);
  ASSERT_TRUE(
      plain->Append(engine::WriteSource{"SELECT range AS id FROM range(100)", nullptr}).ok());
  EXPECT_EQ(Rows(*plain, "SELECT sum(id) FROM t"), (Text{{"4950"}}));
  const auto counters = db_->data_file_checks().counters();
  EXPECT_EQ(counters.files_checked, 1);
  EXPECT_EQ(counters.files_with_checksums, 0);
}

}  // namespace
}  // namespace skade::table
