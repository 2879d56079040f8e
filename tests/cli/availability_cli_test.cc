// The CLI when things are not as expected: a writer holding the catalog's lock, a lake that is
// read-only or another user's, a mistyped catalog URI, a missing lake. Reads work; nothing is
// created by accident; errors say what and where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/lake_cli_fixture.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/poll_until.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
using testing::ShellQuote;
using Json = nlohmann::json;

class AvailabilityCliTest : public LakeCliTest {
 protected:
  // Every read command, each expected to succeed on the lake at `warehouse` run by `prefix`.
  void ExpectReadsWork(const std::string& prefix, const std::string& warehouse) {
    const std::string skade = prefix + std::string(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse) + " ";
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
      // Below SQLite's 10 s busy timeout: a read never waits for the write lock (a sanitized
      // build on a loaded machine takes seconds for a command on its own).
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(9)) << r.args;
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
  testing::ProcessResult w = testing::RunProcess("runuser -u nobody -- " + std::string(skade::testing::CliPath()) +
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
    testing::ProcessResult r = testing::RunProcess("cd " + ShellQuote(cwd) + " && " + std::string(skade::testing::CliPath()) +
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

// Maintenance beside writers, each in its own process as users run them: expiry keeps only
// the newest snapshot while appends land; compaction and orphan sweeps whose base was expired
// underneath them reload and go again instead of failing.
TEST_F(AvailabilityCliTest, CompactAndGcBesideExpiryAndAppendsNeverFail) {
  CreateDemoRows();
  SkadeOk("props demo.t --set commit.retry.num-retries=200");
  const std::string skade = std::string(skade::testing::CliPath()) + " --warehouse " + ShellQuote(warehouse_) + " ";
  const std::string stop = tmp_.Path("stop");
  const std::string appended = tmp_.Path("appended");
  // Background: 12 appends, and expiry in a loop until they are done.
  std::string appends;
  for (int i = 0; i < 12; ++i) {
    appends += skade + "ingest demo.t --sql " +
               ShellQuote("SELECT " + std::to_string(100 + i) + " AS id, 'x' AS s, 1.0 AS amount, DATE '2024-01-01' AS day") +
               " || echo append-failed >> " + ShellQuote(tmp_.Path("failed")) + "; ";
  }
  testing::RunProcess("(" + appends + "touch " + ShellQuote(appended) + ") >/dev/null 2>&1 &");
  // The loop ends at the stop file (written however the test ends) or when the test's folder
  // is gone, and says so in expire.done.
  const std::string expire_done = tmp_.Path("expire.done");
  testing::RunProcess("(while [ ! -e " + ShellQuote(stop) + " ] && [ -d " + ShellQuote(tmp_.path()) + " ]; do " + skade +
                      "expire demo.t --retain-last 1 --older-than 9999999999999 || echo expire-failed >> " +
                      ShellQuote(tmp_.Path("failed")) + "; done; touch " + ShellQuote(expire_done) +
                      ") >/dev/null 2>&1 &");
  struct StopLoop {
    std::string stop;
    ~StopLoop() { std::ofstream(stop).flush(); }
  } stop_loop{stop};
  int compacts = 0, sweeps = 0;
  while (!fs::exists(appended) || compacts < 5) {
    testing::ProcessResult c = testing::RunProcess(skade + "compact demo.t --small-file-bytes 1000000000");
    EXPECT_EQ(c.exit_code, 0) << "compact " << compacts << ": " << c.err;
    testing::ProcessResult g = testing::RunProcess(skade + "gc demo.t");
    EXPECT_EQ(g.exit_code, 0) << "gc " << sweeps << ": " << g.err;
    ++compacts;
    ++sweeps;
    ASSERT_LT(compacts, 200) << "the appends did not finish";
  }
  testing::WriteFileOrDie(stop, "");
  // The expiry loop has ended before the table is read.
  ASSERT_TRUE(skade::testing::PollUntil([&] { return fs::exists(expire_done); }, std::chrono::seconds(60),
                                        std::chrono::milliseconds(50)));
  EXPECT_FALSE(fs::exists(tmp_.Path("failed"))) << testing::ReadFileOrDie(tmp_.Path("failed"));
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count")).back(), "22");
  EXPECT_EQ(Lines(SkadeOk("sql 'SELECT sum(id) FROM demo.t' --format csv")).back(), std::to_string(45 + 1266));
}

// Bad input files get a message that says what is wrong and where, never an echo of the input;
// nothing is committed.
TEST_F(AvailabilityCliTest, BadInputFilesAreNamedClearly) {
  CreateDemoRows();
  auto expect = [&](const std::string& file, const std::string& content, const std::string& detail) {
    std::string path = File(file, content);
    ExpectRefused("ingest demo.t " + ShellQuote(path), "InvalidArgument", detail);
  };
  expect("empty.csv", "", "is empty");
  expect("empty.json", "", "is empty");
  expect("ragged.csv", "id,s,amount,day\n1,a,1.0,2024-01-01\n2,b\n", "line 3 has 2 fields; the header has 4");
  expect("quote.csv", "id,s,amount,day\n1,\"open,1.0,2024-01-01\n2,b,2.0,2024-01-02\n", "opens a quote that is never closed");
  expect("deep.json", std::string(20000, '[') + std::string(20000, ']') + "\n", "deeper than 128 levels");
  std::string deep = File("deep2.json", "{\"id\": 1, \"s\": " + std::string(5000, '[') + std::string(5000, ']') + "}\n");
  ExpectRefused("create demo.deep --like " + ShellQuote(deep), "InvalidArgument", "deeper than 128 levels");
  // A 50 MB single-line record: the message names the line, without the 50 MB.
  std::string huge = tmp_.Path("huge.csv");
  {
    std::string line = "id,s,amount,day\n1," + std::string(50'000'000, 'a') + ",1.0,2024-01-01,extra\n";
    testing::WriteFileOrDie(huge, line);
  }
  testing::ProcessResult r = Skade("ingest demo.t " + ShellQuote(huge));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("line 2 has 5 fields"));
  EXPECT_LT(r.err.size(), 10'000u);
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count")).back(), "10");
}

// Options out of their range are refused by name before anything happens.
TEST_F(AvailabilityCliTest, OutOfRangeOptionsAreRefused) {
  CreateDemoRows();
  ExpectRefused("expire demo.t --retain-last 0", "InvalidArgument", "--retain-last 0");
  ExpectRefused("compact demo.t --small-file-bytes -1", "InvalidArgument", "--small-file-bytes -1");
  ExpectRefused("gc demo.t --older-than 2999-01-01", "InvalidArgument", "in the future");
  // A function the SQL side accepts works in --where too.
  SkadeOk("ingest demo.t --sql " + ShellQuote("SELECT 99 AS id, 'nan' AS s, 'nan'::DOUBLE AS amount, NULL::DATE AS day"));
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count --where 'isnan(amount)'")).back(), "1");
}

// upsert and delete-keys report and log the rows they replaced or removed.
TEST_F(AvailabilityCliTest, KeyedWritesReportTheRowsTheyRemove) {
  CreateDemoRows();
  Json upsert = SkadeJson("ingest demo.t --mode upsert --key id --json --sql " +
                          ShellQuote("SELECT * FROM (VALUES (1, 'one', 1.0, DATE '2024-01-01'), (2, 'two', 2.0, NULL), "
                                     "(50, 'new', 5.0, NULL)) v(id, s, amount, day)"));
  EXPECT_EQ(upsert["added_records"], 3);
  EXPECT_EQ(upsert["deleted_records"], 2);
  Json keys = SkadeJson("ingest demo.t --mode delete-keys --key id --json --sql " +
                        ShellQuote("SELECT * FROM (VALUES (3), (4), (404)) v(id)"));
  EXPECT_EQ(keys["deleted_records"], 2);
  EXPECT_THAT(SkadeOk("ingest demo.t --mode delete-keys --key id --sql 'SELECT 5 AS id'"), HasSubstr("-1 rows"));
  Json log = Log();
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[log.size() - 3]["deleted_records"], 2);
  EXPECT_EQ(log[log.size() - 2]["deleted_records"], 2);
  EXPECT_EQ(log[log.size() - 1]["deleted_records"], 1);
  EXPECT_EQ(Lines(SkadeOk("scan demo.t --count")).back(), "8");
}

// Global options are accepted after the subcommand too; ingest --create makes the table.
TEST_F(AvailabilityCliTest, GlobalOptionsAfterTheSubcommandAndIngestCreate) {
  const std::string elsewhere = tmp_.Path("elsewhere");
  testing::ProcessResult r = testing::RunProcess(std::string(skade::testing::CliPath()) + " ns create demo --warehouse " +
                                                 ShellQuote(elsewhere) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(elsewhere + "/catalog.db"));
  std::string csv = File("in.csv", "id,name,score\n1,a,1.5\n2,b,2.5\n");
  r = testing::RunProcess(std::string(skade::testing::CliPath()) + " ingest demo.fresh " + ShellQuote(csv) + " --create --warehouse " +
                          ShellQuote(elsewhere));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created table demo.fresh"));  // a summary, on stdout
  r = testing::RunProcess(std::string(skade::testing::CliPath()) + " scan demo.fresh --count --warehouse " + ShellQuote(elsewhere));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).back(), "2");
  // Without --create a missing table is an error.
  r = testing::RunProcess(std::string(skade::testing::CliPath()) + " --warehouse " + ShellQuote(elsewhere) + " ingest demo.other " +
                          ShellQuote(csv));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NotFound"));
}

// A table whose files are missing is reported as such, naming the file, never as a table that
// does not exist.
TEST_F(AvailabilityCliTest, MissingFilesAreNamedNotMistakenForMissingTables) {
  CreateDemoRows();
  std::string data_file;
  for (const auto& e : fs::recursive_directory_iterator(warehouse_ + "/demo/t/data")) {
    if (e.path().extension() == ".parquet") data_file = e.path().string();
  }
  ASSERT_FALSE(data_file.empty());
  fs::remove(data_file);
  // (count(*) alone is answered from the manifests and opens no data file.)
  testing::ProcessResult r = Skade("sql 'SELECT * FROM demo.t'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(fs::path(data_file).filename().string()));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("does not exist!")));
  std::string manifest_list;
  for (const auto& e : fs::directory_iterator(warehouse_ + "/demo/t/metadata")) {
    if (e.path().filename().string().rfind("snap-", 0) == 0) manifest_list = e.path().string();
  }
  ASSERT_FALSE(manifest_list.empty());
  fs::remove(manifest_list);
  r = Skade("sql 'SELECT count(*) FROM demo.t'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(fs::path(manifest_list).filename().string()));
}

}  // namespace
}  // namespace skade::cli
