// Issue 31 item 8 through the `skade` binary: `inspect` says per data file whether its pages
// carry checksums and that they were checked; a damaged page of a checksummed file fails
// `scan` and `sql` with an error naming the file; and Parquet errors DuckDB raises on a
// truncated or garbled file name the file too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "tests/cli/lake_cli_fixture.h"
#include "tests/testing/parquet_checksums.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::ShellQuote;

class PageChecksumsCliTest : public LakeCliTest {
 protected:
  // demo.t's one data file.
  std::string DataFile() {
    std::string found;
    for (const auto& e : fs::recursive_directory_iterator(warehouse_)) {
      if (e.is_regular_file() && e.path().extension() == ".parquet") {
        EXPECT_TRUE(found.empty()) << "more than one data file";
        found = e.path().string();
      }
    }
    EXPECT_FALSE(found.empty());
    return found;
  }

  // Writes `bytes` over `path` with a later modification time (a different file).
  static void Replace(const std::string& path, const std::string& bytes) {
    const auto time = fs::last_write_time(path);
    fs::remove(path);
    testing::WriteFileOrDie(path, bytes);
    fs::last_write_time(path, time + std::chrono::seconds(1));
  }
};

TEST_F(PageChecksumsCliTest, InspectSaysWhichFilesCarryChecksums) {
  CreateDemoRows();
  // skade wrote the file with a CRC in every page header, and inspect verified them.
  const std::string file = DataFile();
  auto checksummed = testing::AddPageChecksums(testing::ReadFileOrDie(file));
  ASSERT_TRUE(checksummed.ok()) << checksummed.status().ToString();
  const std::string pages = std::to_string(checksummed->pages.size());
  std::string out = SkadeOk("inspect demo.t");
  EXPECT_THAT(out, HasSubstr("pages: " + pages + " CRCs verified"));
  EXPECT_THAT(out, HasSubstr("1 live Parquet file(s): 1 carry page CRCs, all verified (" + pages + " pages)"));
  Json j = SkadeJson("inspect demo.t --json");
  EXPECT_EQ(j["manifests"][0]["files"][0]["page_checksums"], "verified");
  EXPECT_EQ(j["page_checksums"]["checksummed"], 1);
  // --no-page-check reads no data file.
  EXPECT_THAT(SkadeOk("inspect demo.t --no-page-check"), ::testing::Not(HasSubstr("Page checksums")));

  // A table that opts out writes files without them, and inspect says so.
  SkadeOk("create demo.plain --schema 'id BIGINT'");
  SkadeOk("props demo.plain --set skade.write.parquet.page-checksums=false");
  SkadeOk("sql " + ShellQuote("INSERT INTO demo.plain VALUES (1), (2)"));
  out = SkadeOk("inspect demo.plain");
  EXPECT_THAT(out, HasSubstr("pages: no checksums"));
  EXPECT_THAT(out, HasSubstr("1 live Parquet file(s): 0 carry page CRCs; 1 carry none"));
  j = SkadeJson("inspect demo.plain --json");
  EXPECT_EQ(j["manifests"][0]["files"][0]["page_checksums"], "none");
  EXPECT_EQ(j["page_checksums"]["without_checksums"], 1);
}

TEST_F(PageChecksumsCliTest, ADamagedPageFailsScanSqlAndInspectNamingTheFile) {
  CreateDemoRows();
  const std::string file = DataFile();
  auto checksummed = testing::AddPageChecksums(testing::ReadFileOrDie(file));
  ASSERT_TRUE(checksummed.ok()) << checksummed.status().ToString();
  Replace(file, checksummed->bytes);
  EXPECT_THAT(SkadeOk("sql " + ShellQuote("SELECT sum(id) FROM demo.t")), HasSubstr("45"));

  // One byte of the first data page's bytes (the id column's values).
  std::string damaged = checksummed->bytes;
  for (const auto& page : checksummed->pages) {
    if (page.type == 0 || page.type == 3) {
      damaged[static_cast<size_t>(page.data_offset + page.data_size - 1)] ^= 0x01;
      break;
    }
  }
  Replace(file, damaged);
  for (const std::string& command :
       {std::string("scan demo.t"), std::string("scan demo.t --where 'id > 3' --count"),
        "sql " + ShellQuote("SELECT sum(id) FROM demo.t")}) {
    testing::ProcessResult r = Skade(command);
    EXPECT_NE(r.exit_code, 0) << command << "\n" << r.out;
    EXPECT_THAT(r.err, HasSubstr(file)) << command;
    EXPECT_THAT(r.err, HasSubstr("checksum mismatch")) << command;
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("45"))) << command;
  }
  testing::ProcessResult r = Skade("inspect demo.t");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("pages: DAMAGED"));
  EXPECT_THAT(r.err, HasSubstr(file));
}

TEST_F(PageChecksumsCliTest, ParquetErrorsNameTheFile) {
  CreateDemoRows();
  const std::string file = DataFile();
  const std::string bytes = testing::ReadFileOrDie(file);
  // Truncated (the footer gone), garbled footer, garbled magic, empty.
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"truncated", bytes.substr(0, bytes.size() / 2)},
      {"garbled footer", bytes.substr(0, bytes.size() - 40) + std::string(32, '\x5a') +
                             bytes.substr(bytes.size() - 8)},
      {"no magic", bytes.substr(0, bytes.size() - 4) + "PAR0"},
      {"empty", ""},
  };
  for (const auto& [what, content] : broken) {
    Replace(file, content);
    for (const std::string& command :
         {std::string("scan demo.t"), "sql " + ShellQuote("SELECT sum(id) FROM demo.t")}) {
      testing::ProcessResult r = Skade(command);
      EXPECT_NE(r.exit_code, 0) << what << ": " << command;
      EXPECT_THAT(r.err, HasSubstr(file)) << what << ": " << command;
    }
  }
  // A damaged page header past the first column chunk (the file has no CRCs, so the check
  // before the read looks at the first pages only): DuckDB's error ("don't know what type")
  // names no file; skade finds the damaged header and names the file, column and offset.
  Replace(file, bytes);
  const std::string offset_csv = SkadeOk(
      "sql " +
      ShellQuote(
          "SELECT coalesce(dictionary_page_offset, data_page_offset) FROM parquet_metadata(" +
          ("'" + file + "'") + ") WHERE path_in_schema = 'amount'") +
      " --format csv");
  const size_t newline = offset_csv.find('\n');
  ASSERT_NE(newline, std::string::npos) << offset_csv;
  const size_t offset = std::stoul(offset_csv.substr(newline + 1));
  std::string damaged = bytes;
  damaged[offset] ^= 0x5a;  // the first field header: an unknown type
  Replace(file, damaged);
  for (const std::string& command :
       {std::string("scan demo.t"), "sql " + ShellQuote("SELECT sum(amount) FROM demo.t")}) {
    testing::ProcessResult r = Skade(command);
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_THAT(r.err, HasSubstr(file)) << command;
    EXPECT_THAT(r.err, HasSubstr("column 'amount'")) << command;
    EXPECT_THAT(r.err, HasSubstr("offset " + std::to_string(offset))) << command;
  }
}

}  // namespace
}  // namespace skade::cli
