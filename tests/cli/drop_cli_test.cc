// Dropping and replacing tables from the command line (issue 33, item 7): `skade drop` with and
// without --purge, DROP TABLE … PURGE and CREATE OR REPLACE TABLE through `skade sql`; a purge
// deletes the table's files only, and replaced tables leave no folders behind.
#include <chrono>
#include <filesystem>
#include <set>
#include <string>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::ShellQuote;

class DropCliTest : public LakeCliTest {
 protected:
  // Files below `dir` (a folder of the test), relative to it.
  static std::set<std::string> FilesUnder(const std::string& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) out.insert(e.path().lexically_relative(dir).string());
    }
    return out;
  }

  // The entries (files and folders) directly in `dir`, by name.
  static std::set<std::string> Entries(const std::string& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
  }

  std::string TableFolder(const std::string& name) { return warehouse_ + "/demo/" + name; }
};

TEST_F(DropCliTest, DropWithoutPurgeKeepsEveryFileAndSaysWhere) {
  CreateDemoRows();
  const std::set<std::string> before = WarehouseFiles();
  const size_t table_files = FilesUnder(TableFolder("t")).size();
  std::string out = SkadeOk("drop demo.t");
  EXPECT_THAT(out, HasSubstr("dropped table demo.t from the catalog; its " + std::to_string(table_files) + " files"));
  EXPECT_THAT(out, HasSubstr("stay at " + TableFolder("t")));
  EXPECT_EQ(WarehouseFiles(), before);
  EXPECT_EQ(SkadeOk("tables"), "");
  EXPECT_EQ(Log().back()["operation"], "drop");
  // The files can be registered again as the table they were.
  SkadeOk("register demo.t " + ShellQuote(TableFolder("t")));
  EXPECT_THAT(SkadeOk("sql 'SELECT count(*) FROM demo.t'"), HasSubstr("10"));
}

TEST_F(DropCliTest, DropPurgeDeletesTheTablesFilesAndFolderOnly) {
  CreateDemoRows();
  SkadeOk("create demo.u --schema 'id BIGINT'");
  SkadeOk("ingest demo.u --sql 'SELECT 1 AS id'");
  const std::set<std::string> others = FilesUnder(TableFolder("u"));
  const size_t table_files = FilesUnder(TableFolder("t")).size();
  Json j = SkadeJson("drop demo.t --purge --json");
  EXPECT_EQ(j["table"], "demo.t");
  EXPECT_EQ(j["purged"], true);
  EXPECT_EQ(j["removed_files"].get<size_t>(), table_files);
  EXPECT_EQ(j["files_before"].get<size_t>(), table_files);
  EXPECT_TRUE(j["left_files"].empty()) << j.dump();
  EXPECT_EQ(j["outside_files"], 0);
  EXPECT_FALSE(fs::exists(TableFolder("t")));
  EXPECT_EQ(FilesUnder(TableFolder("u")), others);
  EXPECT_EQ(Entries(warehouse_ + "/demo"), (std::set<std::string>{"u"}));
  EXPECT_THAT(SkadeOk("tables"), HasSubstr("demo.u"));
  EXPECT_THAT(SkadeOk("sql 'SELECT count(*) FROM demo.u'"), HasSubstr("1"));
  // The name and its natural folder are free again.
  EXPECT_THAT(SkadeOk("create demo.t --schema 'id BIGINT'"), HasSubstr("at " + TableFolder("t") + "\n"));
  std::string text = SkadeOk("drop demo.t --purge");
  EXPECT_THAT(text, HasSubstr("dropped table demo.t and purged its files: removed "));
  EXPECT_FALSE(fs::exists(TableFolder("t")));
}

TEST_F(DropCliTest, RefusedDropsChangeNothing) {
  CreateDemoRows();
  ExpectRefused("drop demo.missing --purge", "NotFound");
  ExpectRefused("drop demo.missing", "NotFound");
  ExpectRefused("drop demo.t --force", "InvalidArgument", "--force is for --purge");
  ExpectRefused("drop t --purge", "InvalidArgument", "ns.table");
  ExpectRefused("sql 'DROP TABLE demo.missing PURGE'", "NotFound");
  EXPECT_THAT(SkadeOk("sql 'DROP TABLE IF EXISTS demo.missing PURGE'"), HasSubstr("DROP 0"));
  EXPECT_TRUE(fs::exists(TableFolder("t")));
}

TEST_F(DropCliTest, PurgeOutsideTheWarehouseNeedsForce) {
  // A table of another lake, registered in this one: its files are not this lake's to delete
  // unless asked with --force.
  const std::string other_lake = tmp_.Path("other");
  auto other = [&](const std::string& args) {
    testing::ProcessResult r = testing::RunProcess(std::string(skade::testing::CliPath()) + " --warehouse " +
                                                   ShellQuote(other_lake) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  };
  other("ns create x");
  other("sql 'CREATE TABLE x.ext AS SELECT range AS id FROM range(5)'");
  SkadeOk("ns create demo");
  SkadeOk("register demo.ext " + ShellQuote(other_lake + "/x/ext"));
  const std::set<std::string> files = FilesUnder(other_lake + "/x/ext");
  ExpectRefused("drop demo.ext --purge", "PermissionDenied", "--force");
  ExpectRefused("sql 'DROP TABLE demo.ext PURGE'", "PermissionDenied");
  EXPECT_EQ(FilesUnder(other_lake + "/x/ext"), files);
  std::string out = SkadeOk("drop demo.ext --purge --force");
  EXPECT_THAT(out, HasSubstr("removed " + std::to_string(files.size()) + " files"));
  EXPECT_FALSE(fs::exists(other_lake + "/x/ext"));
  EXPECT_TRUE(fs::exists(other_lake + "/catalog.db"));
}

TEST_F(DropCliTest, PurgeOfACopyReadAwayFromItsRecordedLocationIsRefused) {
  // A copy of demo.t's folder registered as demo.copy records demo.t's location: a purge of it
  // would delete under that location, which is not the copy's.
  CreateDemoRows();
  const std::string copy = warehouse_ + "/copies/t";
  fs::create_directories(warehouse_ + "/copies");
  fs::copy(TableFolder("t"), copy, fs::copy_options::recursive);
  SkadeOk("drop demo.t");
  SkadeOk("register demo.copy " + ShellQuote(copy));
  const std::set<std::string> original = FilesUnder(TableFolder("t"));
  ExpectRefused("drop demo.copy --purge", "InvalidArgument", "is read from");
  ExpectRefused("drop demo.copy --purge --force", "InvalidArgument", "is read from");
  EXPECT_EQ(FilesUnder(TableFolder("t")), original);
  EXPECT_THAT(SkadeOk("drop demo.copy"), HasSubstr("from the catalog"));
}

TEST_F(DropCliTest, SqlDropPurgeAndReplacesLeaveNoFolderBehind) {
  SkadeOk("ns create demo");
  SkadeOk("sql 'CREATE TABLE demo.r AS SELECT range AS id FROM range(100)'");
  for (int i = 1; i <= 3; ++i) {
    std::string out = SkadeOk("sql " + ShellQuote("CREATE OR REPLACE TABLE demo.r AS SELECT range AS id, " +
                                                  std::to_string(i) + " AS round FROM range(" +
                                                  std::to_string(10 * i) + ")"));
    EXPECT_THAT(out, HasSubstr("CREATE " + std::to_string(10 * i)));
  }
  EXPECT_THAT(SkadeOk("sql 'SELECT count(*), max(round) FROM demo.r'"), HasSubstr("30"));
  // One table, one folder: the replacements went into the same table's history.
  EXPECT_EQ(Entries(warehouse_ + "/demo"), (std::set<std::string>{"r"}));
  Json snapshots = SkadeJson("snapshots demo.r --json");
  EXPECT_EQ(snapshots.size(), 4u) << snapshots.dump();
  // The replaced rows go with their snapshots' expiry; nothing is left unreferenced.
  SkadeOk("expire demo.r --older-than 2999-01-01");
  EXPECT_EQ(SkadeJson("snapshots demo.r --json").size(), 1u);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_THAT(SkadeOk("gc demo.r --dry-run --older-than " + std::to_string(now_ms)), HasSubstr("found 0 orphan"));
  // DROP TABLE … PURGE (Spark's syntax, which DuckDB's grammar lacks) in any case, with a ';'.
  std::string out = SkadeOk("sql 'drop table demo.r purge;'");
  EXPECT_THAT(out, HasSubstr("DROP 0"));
  EXPECT_THAT(out, HasSubstr("dropped table demo.r and purged its files: removed "));
  EXPECT_FALSE(fs::exists(warehouse_ + "/demo/r"));
  EXPECT_TRUE(fs::exists(warehouse_ + "/demo"));
  // A quoted "purge" is a name, and PURGE applies to DROP TABLE only.
  ExpectRefused("sql 'DROP TABLE demo.\"purge\"'", "NotFound");
  ExpectRefused("sql 'DROP SCHEMA demo PURGE'", "InvalidArgument", "PURGE");
}

}  // namespace
}  // namespace skade::cli
