// Issue 31 item 8 through SQL (what Flight SQL, the C API and `skade sql` run): a damaged page
// of a checksummed data file fails the statement with an error naming the file, with pushdown
// on and off; undamaged, the same statements return the right rows.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "skade/engine/data_writer.h"
#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"
#include "tests/testing/query_rows.h"
#include "tests/testing/parquet_checksums.h"

namespace skade::sql {
namespace {

namespace fs = std::filesystem;
using Text = std::vector<std::vector<std::string>>;

class PageChecksumsSqlTest : public testing::LakeTest {
 protected:
  PageChecksumsSqlTest() : LakeTest("p") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  // A new database and SQL view of the lake, as a server process started now would have: a
  // process checks each file once, and its views and plans keep what they found.
  void Restart() {
    lake_.reset();
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  // The statement's rows, or its error.
  Result<Text> Sql(const std::string& query, bool pushdown) {
    lake_->set_pushdown(pushdown);
    // As `skade sql` and Flight SQL run it.
    SKADE_ASSIGN_OR_RETURN(std::string resolved, lake_->ResolveQuery(query, "p"));
    SKADE_ASSIGN_OR_RETURN(auto rows, db_->QueryRows(resolved));
    Text out;
    for (const auto& r : rows) {
      out.emplace_back();
      for (const auto& v : r) out.back().push_back(v.value_or("NULL"));
    }
    return out;
  }

  static void Damage(const std::string& path, size_t offset) {
    std::string bytes = testing::ReadFileOrDie(path);
    const auto time = fs::last_write_time(path);
    bytes[offset] ^= 0x08;
    fs::remove(path);
    testing::WriteFileOrDie(path, bytes);
    fs::last_write_time(path, time + std::chrono::seconds(1));
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(PageChecksumsSqlTest, ADamagedPageFailsTheStatementWithPushdownOnAndOff) {
  auto t = CreateTable("t", "id BIGINT, v DOUBLE");
  ASSERT_TRUE(t);
  ASSERT_TRUE(
      t->Append(engine::WriteSource{"SELECT range AS id, range / 4 AS v FROM range(2000)", nullptr})
          .ok());
  auto scan = t->PlanRead({});
  ASSERT_TRUE(scan.ok() && scan->tasks.size() == 1);
  const std::string path = io::LocalPath(scan->tasks[0].file.file_path);
  auto checksummed = testing::AddPageChecksums(testing::ReadFileOrDie(path));
  ASSERT_TRUE(checksummed.ok()) << checksummed.status().ToString();
  fs::remove(path);
  testing::WriteFileOrDie(path, checksummed->bytes);

  const std::string query = "SELECT count(*), sum(id), sum(v) FROM skade.p.t WHERE id >= 0";
  for (bool pushdown : {true, false}) {
    auto rows = Sql(query, pushdown);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(*rows, (Text{{"2000", "1999000", "499750.0"}}));
  }
  const auto& last = checksummed->pages.back();  // the last page of the last column: v
  Damage(path, static_cast<size_t>(last.data_offset + last.data_size - 1));
  for (bool pushdown : {true, false}) {
    Restart();
    auto rows = Sql(query, pushdown);
    ASSERT_FALSE(rows.ok()) << "pushdown " << pushdown;
    EXPECT_NE(rows.status().message().find(path), std::string::npos) << rows.status().ToString();
    EXPECT_NE(rows.status().message().find("checksum mismatch"), std::string::npos)
        << rows.status().ToString();
  }
}

// A file without checksums (opted out) with a garbled page header: DuckDB's error does
// not name the file, skade's walk of the statement's scans finds it, with pushdown on and off
// (off, the scans sit inside the table's view, not in the statement).
TEST_F(PageChecksumsSqlTest, AGarbledPageHeaderWithoutChecksumsIsNamedWithPushdownOnAndOff) {
  auto t = CreateTable("plain", "id BIGINT, v DOUBLE", "", {{std::string(engine::kPageChecksumsProperty), "false"}});
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT range AS id, range / 4 AS v FROM range(300000)", nullptr}).ok());
  auto scan = t->PlanRead({});
  ASSERT_TRUE(scan.ok() && scan->tasks.size() == 1);
  const std::string path = io::LocalPath(scan->tasks[0].file.file_path);
  const std::string query = "SELECT sum(id), sum(v) FROM skade.p.plain";
  ASSERT_TRUE(Sql(query, false).ok());
  // The page header of column v in the second row group: past the first pages a reader probes.
  auto offset = testing::QueryText(*db_, "SELECT data_page_offset FROM parquet_metadata(" + engine::QuoteString(path) +
                                             ") WHERE row_group_id = 1 AND path_in_schema = 'v'");
  ASSERT_EQ(offset.size(), 1u);
  const size_t at = std::stoul(offset[0][0]);
  std::string bytes = testing::ReadFileOrDie(path);
  for (size_t i = at; i < at + 8; ++i) bytes[i] = static_cast<char>(0xff);
  const auto time = fs::last_write_time(path);
  fs::remove(path);
  testing::WriteFileOrDie(path, bytes);
  fs::last_write_time(path, time + std::chrono::seconds(1));
  for (bool pushdown : {true, false}) {
    Restart();
    auto rows = Sql(query, pushdown);
    ASSERT_FALSE(rows.ok()) << "pushdown " << pushdown;
    EXPECT_NE(rows.status().message().find(path), std::string::npos) << "pushdown " << pushdown << ": "
                                                                      << rows.status().ToString();
  }
}

TEST_F(PageChecksumsSqlTest, ASparkTableWithADamagedPageFailsNamingTheFile) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  // A copy of the PySpark table (parquet-mr writes a CRC on every page).
  const std::string dir = tmp_.Path("lineitem_iceberg");
  fs::copy(testing::FixturePath("iceberg/lineitem_iceberg"), dir, fs::copy_options::recursive);
  ASSERT_TRUE(catalog_->RegisterTable(Ident("lineitem"), dir + "/metadata/v2.metadata.json").ok());
  const std::string query = "SELECT count(*) FROM skade.p.lineitem";
  auto rows = Sql(query, true);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, (Text{{"51793"}}));  // fixtures/README.md
  // count(*) alone is answered from manifests; reading a column reads the pages.
  const std::string sum = "SELECT sum(l_quantity) FROM skade.p.lineitem";
  ASSERT_TRUE(Sql(sum, true).ok());
  const std::string file = dir + "/data/00000-5-dad9988f-2a3b-464c-adb6-6034de93da19-00001.parquet";
  Damage(file, static_cast<size_t>(fs::file_size(file) / 3));
  for (bool pushdown : {true, false}) {
    Restart();
    auto damaged = Sql(sum, pushdown);
    ASSERT_FALSE(damaged.ok()) << "pushdown " << pushdown;
    EXPECT_NE(damaged.status().message().find(
                  "00000-5-dad9988f-2a3b-464c-adb6-6034de93da19-00001.parquet"),
              std::string::npos)
        << damaged.status().ToString();
  }
}

}  // namespace
}  // namespace skade::sql
