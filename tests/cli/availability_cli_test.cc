// The CLI when things are not as expected: a writer holding the catalog's lock, a lake that is
// read-only or another user's, a mistyped catalog URI, a missing lake. Reads work; nothing is
// created by accident; errors say what and where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
using testing::ShellQuote;

class AvailabilityCliTest : public LakeCliTest {
 protected:
  void CreateDemoRows() {
    CreateDemo();
    SkadeOk("ingest demo.t --sql " +
            ShellQuote("SELECT range AS id, 's' || range AS s, range * 1.5 AS amount, "
                       "DATE '2024-01-01' + CAST(range AS INTEGER) AS day FROM range(10)"));
  }

  // Every read command, each expected to succeed on the lake at `warehouse` run by `prefix`.
  void ExpectReadsWork(const std::string& prefix, const std::string& warehouse) {
    const std::string skade = prefix + std::string(SKADE_CLI_PATH) + " --warehouse " + ShellQuote(warehouse) + " ";
    struct Read {
      std::string args;
      std::string expect;  // a line of stdout
    };
    const std::vector<Read> reads = {
        {"tables", "demo.t"},
        {"ns list", "demo"},
        {"scan demo.t --count", "10"},
        {"scan demo.t --count --where 'id < 3'", "3"},
        {"sql 'SELECT sum(id) AS s FROM demo.t' --format csv", "45"},
        {"scan " + ShellQuote(warehouse + "/demo/t") + " --count", "10"},
        {"snapshots demo.t --json", ""},
        {"log --json", ""},
        {"inspect demo.t --json", ""},
    };
    for (const Read& r : reads) {
      auto start = std::chrono::steady_clock::now();
      testing::ProcessResult p = testing::RunProcess(skade + r.args);
      EXPECT_EQ(p.exit_code, 0) << r.args << "\n" << p.err;
      if (!r.expect.empty()) {
        EXPECT_THAT(Lines(p.out), ::testing::Contains(r.expect)) << r.args << "\n" << p.out;
      }
      // Well below SQLite's 10 s busy timeout: a read never waits for the write lock.
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << r.args;
    }
  }
};

TEST_F(AvailabilityCliTest, ReadsDoNotWaitForAWriterHoldingTheLock) {
  CreateDemoRows();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((warehouse_ + "/catalog.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  ExpectReadsWork("", warehouse_);
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

TEST_F(AvailabilityCliTest, ReadsWorkOnAReadOnlyLakeOfAnotherUser) {
  ASSERT_EQ(::geteuid(), 0u) << "this test runs the reads as user nobody (the test command runs as root)";
  CreateDemoRows();
  // A copy no writer touches again, read-only for everyone, read by `nobody`.
  const std::string copy = tmp_.Path("ro-lake");
  fs::copy(warehouse_, copy, fs::copy_options::recursive);
  fs::permissions(tmp_.Path(""), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
  ASSERT_EQ(testing::RunProcess("chmod -R a-w,a+rX " + ShellQuote(copy)).exit_code, 0);
  ExpectReadsWork("runuser -u nobody -- ", copy);
  // And a write is refused with the reason, changing nothing.
  testing::ProcessResult w = testing::RunProcess("runuser -u nobody -- " + std::string(SKADE_CLI_PATH) +
                                                 " --warehouse " + ShellQuote(copy) + " ns create other");
  EXPECT_EQ(w.exit_code, 1);
  ASSERT_EQ(testing::RunProcess("chmod -R u+w " + ShellQuote(copy)).exit_code, 0);
}

TEST_F(AvailabilityCliTest, NoLakeIsMadeByAccident) {
  // A read or a write on a missing lake says there is none, and where; nothing is created.
  for (const std::string args : {"tables", "scan demo.t --count", "sql 'SELECT 1'", "ingest demo.t --sql 'SELECT 1'",
                                  "log", "ns list", "gc demo.t"}) {
    testing::ProcessResult r = Skade(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out;
    EXPECT_THAT(r.err, HasSubstr("NotFound")) << args;
    EXPECT_FALSE(fs::exists(warehouse_)) << args << " created the warehouse";
  }
  EXPECT_THAT(Skade("tables").err, HasSubstr(warehouse_));
  // Mistyped catalog URIs are errors, not new lakes in folders named after them.
  const std::string cwd = tmp_.Path("cwd");
  fs::create_directories(cwd);
  for (const std::string uri : {"mysql://x", "sqlit://x/c.db", "postgress://localhost/x"}) {
    testing::ProcessResult r = testing::RunProcess("cd " + ShellQuote(cwd) + " && " + std::string(SKADE_CLI_PATH) +
                                                   " --warehouse " + ShellQuote(warehouse_) + " --catalog " +
                                                   ShellQuote(uri) + " ns create x");
    EXPECT_EQ(r.exit_code, 1) << uri;
    EXPECT_THAT(r.err, HasSubstr("InvalidArgument")) << uri;
    EXPECT_THAT(r.err, HasSubstr("unknown catalog URI scheme")) << uri;
  }
  EXPECT_TRUE(fs::is_empty(cwd));
  // An explicit SQLite catalog in a folder that does not exist: never created.
  const std::string absent = tmp_.Path("absent/dir/c.db");
  testing::ProcessResult r = Skade("--catalog " + ShellQuote("sqlite://" + absent) + " ns create x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NotFound"));
  EXPECT_FALSE(fs::exists(tmp_.Path("absent")));
  // The commands that create do create.
  SkadeOk("ns create x");
  EXPECT_TRUE(fs::exists(warehouse_ + "/catalog.db"));
  EXPECT_THAT(Lines(SkadeOk("ns list")), ::testing::ElementsAre("x"));
}

}  // namespace
}  // namespace skade::cli
