// Issue 31 item 8: skade writes a CRC into every page header of its data and delete files
// (DuckDB's writer leaves them out; engine/new_file_checksums.h adds them), such a file reads
// the right rows, and one flipped byte in a page fails every read of the table with an error
// naming the file instead of wrong rows.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "skade/engine/data_writer.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/parquet_pages.h"
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
  // A table of 3000 rows in one data file, written with page CRCs.
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
    const std::string written = testing::ReadFileOrDie(path_);
    auto checksummed = testing::AddPageChecksums(written);
    ASSERT_TRUE(checksummed.ok()) << checksummed.status().ToString();
    file_ = std::move(checksummed).value();
    // The writer already put every page's CRC in: adding them again changes no byte.
    ASSERT_EQ(file_.bytes, written);
    EXPECT_EQ(scan->tasks[0].file.file_size_in_bytes, static_cast<int64_t>(written.size()));
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
  auto plain = CreateTable("plain", "id BIGINT", "", {{std::string(engine::kPageChecksumsProperty), "false"}});
  ASSERT_TRUE(plain);
  ASSERT_TRUE(
      plain->Append(engine::WriteSource{"SELECT range AS id FROM range(100)", nullptr}).ok());
  EXPECT_EQ(Rows(*plain, "SELECT sum(id) FROM t"), (Text{{"4950"}}));
  const auto counters = db_->data_file_checks().counters();
  EXPECT_EQ(counters.files_checked, 1);
  EXPECT_EQ(counters.files_with_checksums, 0);
}

// Every file a write makes carries checksums on every page, its size as stored and its
// columns' sizes with the longer page headers: appends (partitioned too), copy-on-write
// rewrites, merge-on-read position delete files, equality deletes of upserts.
TEST_F(PageChecksumsTest, EveryWriteMakesChecksummedFilesWithTheirTrueSizes) {
  auto t = CreateTable("every", "id BIGINT NOT NULL, day DATE, name VARCHAR", "bucket(4, id)",
                       {{"format-version", "2"}, {"write.delete.mode", "merge-on-read"}}, {1});
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT range AS id, DATE '2024-01-01' + (range % 3)::INT AS day, "
                                            "'n' || range AS name FROM range(5000)",
                                            nullptr})
                  .ok());
  auto deleted = t->DeleteWhere(testing::Where("id % 10 = 0"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  auto upserted = t->Upsert(engine::WriteSource{"SELECT 7::BIGINT AS id, DATE '2024-02-01' AS day, 'seven' AS name",
                                                nullptr},
                            {"id"});
  ASSERT_TRUE(upserted.ok()) << upserted.status().ToString();
  EXPECT_EQ(Rows(*t, "SELECT count(*), sum(id), max(name) FILTER (WHERE id = 7) FROM t"),
            (Text{{"4500", "11250000", "seven"}}));

  // Every live file with its full metrics, from the current snapshot's manifests.
  std::vector<iceberg::DataFile> files;
  auto list = iceberg::ReadManifestList(*io_, t->metadata().CurrentSnapshot()->manifest_list);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (const iceberg::ManifestFile& m : *list) {
    auto reader = iceberg::ManifestReader::Open(*io_, m.manifest_path, m);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    while (true) {
      auto entry = (*reader)->Next();
      ASSERT_TRUE(entry.ok()) << entry.status().ToString();
      if (!entry->has_value()) break;
      if ((*entry)->status != iceberg::ManifestEntryStatus::kDeleted) files.push_back((*entry)->data_file);
    }
  }
  int position_deletes = 0, equality_deletes = 0;
  for (const iceberg::DataFile& f : files) {
    position_deletes += f.content == iceberg::DataFileContent::kPositionDeletes;
    equality_deletes += f.content == iceberg::DataFileContent::kEqualityDeletes;
    const std::string path = io::LocalPath(f.file_path);
    const std::string bytes = testing::ReadFileOrDie(path);
    EXPECT_EQ(f.file_size_in_bytes, static_cast<int64_t>(bytes.size())) << path;
    auto report = iceberg::CheckParquetPagesInMemory(bytes, path, iceberg::PageScope::kAll);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_GT(report->pages, 0) << path;
    EXPECT_EQ(report->pages_with_crc, report->pages) << path;
    // column_sizes: the column chunks' sizes as stored, headers included.
    for (const auto& row : testing::QueryText(*db_, "SELECT path_in_schema, sum(total_compressed_size) FROM parquet_metadata(" +
                                                engine::QuoteString(path) + ") GROUP BY 1")) {
      const int id = row[0] == "id" ? 1 : row[0] == "day" ? 2 : row[0] == "name" ? 3 : 0;
      if (id == 0 || f.content != iceberg::DataFileContent::kData) continue;
      ASSERT_TRUE(f.column_sizes.count(id)) << path << " " << row[0];
      EXPECT_EQ(std::to_string(f.column_sizes.at(id)), row[1]) << path << " " << row[0];
    }
  }
  EXPECT_GT(position_deletes, 0);
  EXPECT_GT(equality_deletes, 0);
}

// A flipped byte in skade's own file, as written (no test re-encoding), is an error naming
// it, never a wrong sum: the reproduction of the issue (64 bytes XORed in an id page).
TEST_F(PageChecksumsTest, DamageInAFileSkadeWroteIsAnErrorNotAWrongSum) {
  const std::string written = testing::ReadFileOrDie(path_);
  std::string damaged = written;
  for (const auto& page : file_.pages) {
    if (page.type != 0 && page.type != 3) continue;
    for (int64_t i = 0; i < 64 && i < page.data_size; ++i) {
      damaged[static_cast<size_t>(page.data_offset + page.data_size / 2 - 32 + i)] ^= 0x5a;
    }
    break;
  }
  Replace(damaged);
  ExpectNamesTheDamagedFile(table_->Read({}).status());
}

}  // namespace
}  // namespace skade::table
