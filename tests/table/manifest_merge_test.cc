// Manifest merging on commit (commit.manifest-merge.* table properties): appends, coalesced
// appends and row operations keep a short manifest list, and every snapshot still reads exactly
// its rows — deletes by sequence number, incremental reads, counts from manifests, v3 row ids —
// with no manifest left behind that no list names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/clock.h"
#include "skade/iceberg/manifest.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using ::testing::ElementsAre;

class ManifestMergeTest : public testing::LakeTest {
 protected:
  // The manifests of `t`'s current snapshot.
  std::vector<iceberg::ManifestFile> CurrentManifests(Table& t) {
    EXPECT_TRUE(t.Refresh().ok());
    const iceberg::Snapshot* s = t.metadata().CurrentSnapshot();
    if (s == nullptr) return {};
    auto list = iceberg::ReadManifestList(*io_, s->manifest_list);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? *list : std::vector<iceberg::ManifestFile>();
  }

  size_t Count(const std::vector<iceberg::ManifestFile>& list, iceberg::ManifestContent content) {
    size_t n = 0;
    for (const auto& m : list) n += m.content == content ? 1 : 0;
    return n;
  }

  // Nothing under the table's folder that no metadata names (a merged-away manifest would be).
  void ExpectNoOrphans(Table& t) {
    auto orphans = t.RemoveOrphanFiles(NowMillis() + 60'000, Table::OrphanMode::kDryRun);
    ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
    EXPECT_TRUE(orphans->orphans.empty())
        << orphans->orphans.size() << " orphans, e.g. " << orphans->orphans.front();
  }

  int64_t CountAt(Table& t, int64_t snapshot_id) {
    ReadOptions at;
    at.snapshot.snapshot_id = snapshot_id;
    auto n = t.Count(at);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : -1;
  }
};

class AppendMergeTest : public ManifestMergeTest, public ::testing::WithParamInterface<bool> {};

// Appends, coalesced (one writer: batches of one) or each its own commit.
TEST_P(AppendMergeTest, AppendsKeepTheListShortAndEverySnapshotReadsItsRows) {
  const bool coalesce = GetParam();
  auto t = CreateTable("t", "id BIGINT", "",
                       {{"commit.manifest.min-count-to-merge", "4"},
                        {Table::kCoalesceAppendsProperty, coalesce ? "true" : "false"}});
  ASSERT_NE(t, nullptr);
  constexpr int kAppends = 13;
  std::vector<int64_t> snapshots;
  size_t longest = 0;
  for (int i = 0; i < kAppends; ++i) {
    auto r = t->Append({"SELECT " + std::to_string(i) + " AS id", nullptr});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    snapshots.push_back(r->snapshot_id);
    longest = std::max(longest, CurrentManifests(*t).size());
  }
  // Every fourth manifest of a bin merges them: the list never reaches four.
  EXPECT_EQ(longest, 3u);
  const auto list = CurrentManifests(*t);
  ASSERT_EQ(list.size(), 1u);  // merges at the 4th, 7th, 10th and 13th appends
  EXPECT_EQ(list[0].added_files_count, 1);
  EXPECT_EQ(list[0].existing_files_count, kAppends - 1);
  EXPECT_EQ(list[0].added_snapshot_id, snapshots.back());

  // Each snapshot: exactly the rows appended up to it (counts come from the manifests; rows are
  // read).
  for (int i = 0; i < kAppends; ++i)
    EXPECT_EQ(CountAt(*t, snapshots[static_cast<size_t>(i)]), i + 1) << i;
  ReadOptions at;
  at.snapshot.snapshot_id = snapshots[7];
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t", at),
              ElementsAre(ElementsAre("0,1,2,3,4,5,6,7")));
  // An incremental read across merges sees each append once, by the snapshot that added it.
  auto delta = t->ChangesSql(snapshots[2], snapshots[10], Table::ChangeMode::kAppendsOnly);
  ASSERT_TRUE(delta.ok()) << delta.status().ToString();
  EXPECT_THAT(Query(*delta, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("3,4,5,6,7,8,9,10")));
  // The new manifests that were merged away are gone; merged ones stay for their snapshots.
  ExpectNoOrphans(*t);
}

INSTANTIATE_TEST_SUITE_P(CoalescedOrNot, AppendMergeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Coalesced" : "OwnCommits"; });

TEST_F(ManifestMergeTest, MergedManifestsKeepDeletesApplyingByTheirSequenceNumbers) {
  auto t = CreateTable(
      "cdc", "id BIGINT NOT NULL, name VARCHAR", "",
      {{"commit.manifest.min-count-to-merge", "3"}, {"write.delete.mode", "merge-on-read"}}, {1});
  ASSERT_NE(t, nullptr);
  auto ok = [&](const Result<CommitOutcome>& r) { ASSERT_TRUE(r.ok()) << r.status().ToString(); };
  ok(t->Append({"SELECT range AS id, 'v1' AS name FROM range(1, 6)", nullptr}));
  ok(t->Upsert({"SELECT 2 AS id, 'v2' AS name", nullptr}, {"id"}));
  ok(t->DeleteKeys({"SELECT 1 AS id", nullptr}, {"id"}));
  // Rows added after the delete of their key are not hit by it, even once the manifests of
  // both are merged into one.
  ok(t->Append({"SELECT 1 AS id, 'again' AS name", nullptr}));
  ok(t->Upsert({"SELECT 3 AS id, 'v3' AS name", nullptr}, {"id"}));
  ok(t->DeleteWhere(testing::Where("id = 4")));
  ok(t->Append({"SELECT 6 AS id, 'v1' AS name", nullptr}));
  const int64_t middle = t->metadata().current_snapshot_id.value_or(0);
  ok(t->Upsert({"SELECT 2 AS id, 'v4' AS name UNION ALL SELECT 7, 'v4'", nullptr}, {"id"}));
  ok(t->DeleteKeys({"SELECT 6 AS id", nullptr}, {"id"}));
  ok(t->Append({"SELECT 6 AS id, 'back' AS name", nullptr}));

  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || name, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("1again,2v4,3v3,5v1,6back,7v4")));
  ReadOptions at;
  at.snapshot.snapshot_id = middle;
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || name, ',' ORDER BY id) FROM t", at),
              ElementsAre(ElementsAre("1again,2v2,3v3,5v1,6v1")));
  const auto list = CurrentManifests(*t);
  EXPECT_LT(Count(list, iceberg::ManifestContent::kData), 3u);
  EXPECT_LT(Count(list, iceberg::ManifestContent::kDeletes), 3u);
  EXPECT_GE(Count(list, iceberg::ManifestContent::kDeletes), 1u);
  ExpectNoOrphans(*t);
}

TEST_F(ManifestMergeTest, ConcurrentCoalescedAppendsMergeAndLoseNothing) {
  ASSERT_NE(
      CreateTable("t", "w INTEGER, c INTEGER", "", {{"commit.manifest.min-count-to-merge", "3"}}),
      nullptr);
  constexpr int kWriters = 6, kEach = 8;
  std::vector<std::unique_ptr<Table>> tables;
  for (int w = 0; w < kWriters; ++w) tables.push_back(LoadTable(Ident("t")));
  std::vector<Result<CommitOutcome>> outcomes(kWriters * kEach, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int c = 0; c < kEach; ++c) {
        outcomes[static_cast<size_t>(w * kEach + c)] = tables[static_cast<size_t>(w)]->Append(
            {"SELECT " + std::to_string(w) + " AS w, " + std::to_string(c) + " AS c", nullptr});
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& o : outcomes) ASSERT_TRUE(o.ok()) << o.status().ToString();

  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  EXPECT_LT(CurrentManifests(*t).size(), 3u);
  EXPECT_THAT(
      Rows(*t, "SELECT count(*), count(DISTINCT (w, c)) FROM t"),
      ElementsAre(ElementsAre(std::to_string(kWriters * kEach), std::to_string(kWriters * kEach))));
  // Every snapshot holds as many rows as its summary says it does.
  for (const iceberg::Snapshot& s : t->metadata().snapshots) {
    EXPECT_EQ(CountAt(*t, s.snapshot_id), s.SummaryLong("total-records").value_or(-1))
        << s.snapshot_id;
  }
  ExpectNoOrphans(*t);
}

TEST_F(ManifestMergeTest, V3RowIdsSurviveMerges) {
  auto t = CreateTable("v3", "id BIGINT NOT NULL", "",
                       {{"format-version", "3"}, {"commit.manifest.min-count-to-merge", "3"}});
  ASSERT_NE(t, nullptr);
  ReadOptions lineage;
  lineage.columns = {"id", "_row_id"};
  auto row_ids = [&] {
    std::map<std::string, std::string> out;
    for (const auto& row : Rows(*t, "SELECT * FROM t", lineage)) out[row[0]] = row[1];
    return out;
  };
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(0, 4)", nullptr}).ok());
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(4, 6)", nullptr}).ok());
  const auto before = row_ids();
  ASSERT_EQ(before.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(t->Append({"SELECT " + std::to_string(100 + i) + " AS id", nullptr}).ok());
  }
  ASSERT_LT(CurrentManifests(*t).size(), 3u) << "the manifests were merged";
  const auto after = row_ids();
  ASSERT_EQ(after.size(), 11u);
  for (const auto& [id, row_id] : before) EXPECT_EQ(after.at(id), row_id) << "row " << id;
  std::set<std::string> distinct;
  for (const auto& [id, row_id] : after) {
    EXPECT_NE(row_id, "NULL") << id;
    distinct.insert(row_id);
  }
  EXPECT_EQ(distinct.size(), after.size()) << "row ids are unique";
}

TEST_F(ManifestMergeTest, DisabledMergingKeepsEveryManifest) {
  auto t = CreateTable(
      "t", "id BIGINT", "",
      {{"commit.manifest-merge.enabled", "false"}, {"commit.manifest.min-count-to-merge", "2"}});
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(t->Append({"SELECT " + std::to_string(i) + " AS id", nullptr}).ok());
  EXPECT_EQ(CurrentManifests(*t).size(), 5u);
}

}  // namespace
}  // namespace skade::table
