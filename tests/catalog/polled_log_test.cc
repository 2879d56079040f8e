// The polled commit log over a catalog that keeps none: a foreign Iceberg SQL catalog (the JDBC
// tables only, as Java's JdbcCatalog or PyIceberg's SqlCatalog leave them) changed by another
// writer; each change shows up as one entry with the right operation, the cursor survives a
// restart, changes made while nothing polled are found at start, and changes made through the
// wrapper are logged at once and exactly once.
#include "skade/catalog/polled_log.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "tests/testing/schemas.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/poll_until.h"

namespace skade::catalog {
namespace {

using iceberg::TableUpdate;

CreateTableRequest Table() {
  CreateTableRequest r;
  r.schema = testing::SchemaOf({{1, "id", iceberg::TypeId::kLong, true}});
  return r;
}

TableCommit Append(const TableState& state, int64_t snapshot_id, int64_t added) {
  iceberg::Snapshot s;
  s.snapshot_id = snapshot_id;
  s.parent_snapshot_id = state.metadata->current_snapshot_id;
  s.sequence_number = state.metadata->last_sequence_number + 1;
  s.timestamp_ms = NowMillis();
  s.manifest_list = state.metadata->location + "/metadata/snap-" + std::to_string(snapshot_id) + ".avro";
  s.summary = {{"operation", "append"}, {"added-records", std::to_string(added)}, {"deleted-records", "0"}};
  s.schema_id = state.metadata->current_schema_id;
  return TableCommit{state.ident, {}, {TableUpdate::AddSnapshot(s), TableUpdate::SetBranch("main", snapshot_id)}, {}};
}

class PolledLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    SqlCatalogOptions o;
    o.uri = "sqlite://" + tmp_.Path("catalog.db");
    o.warehouse = tmp_.Path("warehouse");
    writer_ = OpenSqlCatalog(o, *io_).value();
    ASSERT_TRUE(writer_->CreateNamespace(Namespace{{"db"}}, {}).ok());
    ASSERT_TRUE(writer_->CreateTable(t1_, Table()).ok());
  }

  // Another handle on the catalog database (`file`: another database file).
  std::unique_ptr<Catalog> OpenForeign(SqlCatalogOptions::Access access, const std::string& file = "catalog.db") {
    SqlCatalogOptions o;
    o.uri = "sqlite://" + tmp_.Path(file);
    o.warehouse = tmp_.Path("warehouse");
    o.access = access;
    auto c = OpenSqlCatalog(o, *io_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<Catalog> Polled() {
    auto inner = OpenForeign(SqlCatalogOptions::Access::kReadOnly);
    if (!inner) return nullptr;
    auto c = WithPolledCommitLog(std::move(inner), PolledLogOptions{tmp_.Path("state/polled.db"), std::chrono::milliseconds(20)});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  static void WaitFor(Catalog& c, int64_t seq) {
    skade::testing::PollUntil([&] { return c.LatestCommitSeq().ValueOr(-1) >= seq; }, std::chrono::seconds(20),
                              std::chrono::milliseconds(10));
    ASSERT_EQ(c.LatestCommitSeq().ValueOr(-1), seq);
  }

  testing::TempDir tmp_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<Catalog> writer_;
  const TableIdent t1_{Namespace{{"db"}}, "t1"};
  const TableIdent t2_{Namespace{{"db"}}, "t2"};
};

TEST_F(PolledLogTest, ChangesOfAForeignCatalogBecomeADenseDurableLog) {
  // What a foreign library leaves (the Iceberg JDBC tables, no skade_* tables), opened
  // read-only as skade opens a foreign catalog: no log of its own, yet its tables read.
  writer_.reset();  // checkpoints the WAL into the file copied
  std::filesystem::copy_file(tmp_.Path("catalog.db"), tmp_.Path("foreign.db"));
  writer_ = OpenForeign(SqlCatalogOptions::Access::kReadWrite);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(tmp_.Path("foreign.db").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE skade_commit_log; DROP TABLE skade_meta;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto plain = OpenForeign(SqlCatalogOptions::Access::kReadOnly, "foreign.db");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->LatestCommitSeq().status().code(), StatusCode::kNotImplemented);
  EXPECT_EQ(plain->CommitsSince(0, 10).status().code(), StatusCode::kNotImplemented);
  EXPECT_TRUE(plain->LoadTable(t1_).ok());

  auto polled = Polled();
  ASSERT_NE(polled, nullptr);
  EXPECT_EQ(polled->LatestCommitSeq().value(), 0) << "existing tables are the baseline";
  std::vector<int64_t> heard;
  std::mutex heard_mu;
  polled->SetCommitListener([&](const CommitLogEntry& e) {
    std::lock_guard<std::mutex> lock(heard_mu);
    heard.push_back(e.commit_seq);
  });

  // Another writer's changes, one at a time.
  ASSERT_TRUE(writer_->CreateTable(t2_, Table()).ok());
  WaitFor(*polled, 1);
  auto s2 = writer_->LoadTable(t2_).value();
  ASSERT_TRUE(writer_->CommitTable(Append(s2, 77, 5)).ok());
  WaitFor(*polled, 2);
  ASSERT_TRUE(writer_->CommitTable(TableCommit{t1_, {}, {TableUpdate::SetProperties({{"k", "v"}})}, {}}).ok());
  WaitFor(*polled, 3);
  ASSERT_TRUE(writer_->DropTable(t1_, DropMode::kKeepFiles).ok());
  WaitFor(*polled, 4);

  auto log = polled->CommitsSince(0, 100).value();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].operation, "create");
  EXPECT_EQ(log[0].table, t2_);
  EXPECT_EQ(log[0].metadata_location, s2.metadata_location);
  EXPECT_EQ(log[1].operation, "append");
  EXPECT_EQ(log[1].snapshot_id, 77);
  EXPECT_EQ(log[1].added_records, 5);
  EXPECT_EQ(log[1].previous_metadata_location, s2.metadata_location);
  EXPECT_EQ(log[2].operation, "update");
  EXPECT_EQ(log[2].table, t1_);
  EXPECT_EQ(log[3].operation, "drop");
  EXPECT_EQ(log[3].metadata_location, "");
  for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].commit_seq, static_cast<int64_t>(i) + 1);
  auto heard_count = [&] {
    std::lock_guard<std::mutex> lock(heard_mu);
    return heard.size();
  };
  // The listener hears an entry just after the log has it.
  skade::testing::PollUntil([&] { return heard_count() >= 4; }, std::chrono::seconds(20), std::chrono::milliseconds(5));
  {
    std::lock_guard<std::mutex> lock(heard_mu);
    EXPECT_EQ(heard, (std::vector<int64_t>{1, 2, 3, 4}));
  }
  EXPECT_EQ(polled->CommitsSince(2, 100).value().size(), 2u);

  // Restart: the cursor continues; what changed while nothing polled is found at start.
  polled->SetCommitListener({});
  polled.reset();
  auto s2b = writer_->LoadTable(t2_).value();
  ASSERT_TRUE(writer_->CommitTable(Append(s2b, 78, 3)).ok());
  polled = Polled();
  ASSERT_NE(polled, nullptr);
  EXPECT_EQ(polled->LatestCommitSeq().value(), 5);
  auto after = polled->CommitsSince(4, 10).value();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].snapshot_id, 78);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(polled->LatestCommitSeq().value(), 5) << "no change, no entry";
}

TEST_F(PolledLogTest, ChangesThroughTheWrapperAreLoggedAtOnceAndOnce) {
  auto inner = OpenForeign(SqlCatalogOptions::Access::kReadWrite);
  ASSERT_NE(inner, nullptr);
  auto polled = WithPolledCommitLog(std::move(inner), PolledLogOptions{tmp_.Path("w.db"), std::chrono::milliseconds(20)});
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  auto created = (*polled)->CreateTable(t2_, Table());
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->commit_seq, 1) << "logged before CreateTable returned";
  auto committed = (*polled)->CommitTable(Append(created->table, 5, 1));
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->commit_seq, 2);
  ASSERT_TRUE((*polled)->RenameTable(t2_, TableIdent{Namespace{{"db"}}, "t3"}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // several polls
  auto log = (*polled)->CommitsSince(0, 100).value();
  ASSERT_EQ(log.size(), 4u) << "create, append, and the rename as drop + create; no repeats from polls";
  EXPECT_EQ(log[2].operation, "drop");
  EXPECT_EQ(log[3].operation, "create");
  EXPECT_EQ(log[3].table.name, "t3");
}

TEST(PolledLogPathTest, IsStablePerCatalogAndKeepsCredentialsOut) {
  EXPECT_EQ(DefaultPolledLogPath("rest+http://h:1/x?token=a"), DefaultPolledLogPath("rest+http://h:1/x?token=b"));
  EXPECT_NE(DefaultPolledLogPath("rest+http://h:1/x"), DefaultPolledLogPath("rest+http://h:2/x"));
  EXPECT_EQ(DefaultPolledLogPath("nessie+http://h/api/v2?ref=main").find("main"), std::string::npos);
}

}  // namespace
}  // namespace skade::catalog
