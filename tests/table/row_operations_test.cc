// Row-level operations on a real catalog: delete (copy-on-write and merge-on-read),
// overwrite by filter and by partition, equality deletes and upserts, incremental reads and
// compaction — each checked against exact rows.
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skade/catalog/sql_catalog.h"
#include "skade/engine/schema_convert.h"
#include "skade/table/table.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using ::testing::ElementsAre;

class RowOperationsTest : public testing::LakeTest {
 protected:
  std::unique_ptr<Table> Create(const std::string& name, const std::string& columns, const std::string& partition_by,
                                std::map<std::string, std::string> props = {}, std::vector<int> identifier = {}) {
    return CreateTable(name, columns, partition_by, std::move(props), std::move(identifier));
  }

  void Append(Table& t, const std::string& sql) {
    auto r = t.Append({sql, nullptr});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  int64_t LiveDeleteFiles(Table& t) {
    auto v = t.metadata().CurrentSnapshot()->SummaryValue("total-delete-files");
    return v ? std::stoll(*v) : -1;
  }

};

TEST_F(RowOperationsTest, CopyOnWriteDeleteRewritesOrDropsFiles) {
  auto t = Create("cow", "id BIGINT, v VARCHAR", "");
  Append(*t, "SELECT range AS id, 'a' || range AS v FROM range(50)");
  Append(*t, "SELECT range AS id, 'b' || range AS v FROM range(50, 100)");
  int64_t before = t->metadata().current_snapshot_id.value();
  auto r = t->DeleteWhere(testing::Where("id % 10 = 0 OR id >= 50"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->deleted_files, 2);  // the second file entirely, the first rewritten
  EXPECT_EQ(r->added_files, 1);
  EXPECT_EQ(r->operation, "delete");
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id), min(id), max(id) FROM t"),
              ElementsAre(ElementsAre("45", "1125", "1", "49")));  // 1225 - (0+10+20+30+40)
  EXPECT_EQ(LiveDeleteFiles(*t), 0);
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("total-records"), "45");
  ReadOptions old;
  old.snapshot.snapshot_id = before;
  EXPECT_EQ(*t->Count(old), 100);
  // A delete that matches nothing commits nothing.
  int64_t seq = *catalog_->LatestCommitSeq();
  auto none = t->DeleteWhere(testing::Where("id > 1000"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->snapshot_id, 0);
  EXPECT_EQ(*catalog_->LatestCommitSeq(), seq);
  // NULLs in the predicate keep the row (only TRUE deletes).
  Append(*t, "SELECT NULL::BIGINT AS id, 'n' AS v");
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id < 5")).ok());
  EXPECT_THAT(Rows(*t, "SELECT count(*) FILTER (WHERE id IS NULL), count(*) FROM t"),
              ElementsAre(ElementsAre("1", "42")));
}

TEST_F(RowOperationsTest, MergeOnReadDeleteWritesPositionDeletes) {
  auto t = Create("mor", "id BIGINT, region VARCHAR", "region", {{"write.delete.mode", "merge-on-read"}});
  Append(*t, "SELECT range AS id, CASE WHEN range % 2 = 0 THEN 'eu' ELSE 'us' END AS region FROM range(100)");
  auto r = t->DeleteWhere(testing::Where("id % 3 = 0"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added_files, 0);
  EXPECT_EQ(LiveDeleteFiles(*t), 2);  // one per partially-hit data file (eu, us)
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("added-position-deletes"), "34");
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id) FROM t"), ElementsAre(ElementsAre("66", "3267")));
  EXPECT_THAT(Rows(*t, "SELECT count(*) FROM t WHERE id % 3 = 0"), ElementsAre(ElementsAre("0")));
  // A second delete stacks another delete file; rows stay exact.
  // eu holds the even ids; 16 of the 25 even ids below 50 are not multiples of 6.
  ASSERT_TRUE(t->DeleteWhere(testing::Where("region = 'eu' AND id < 50")).ok());
  EXPECT_THAT(Rows(*t, "SELECT count(*) FROM t"), ElementsAre(ElementsAre("50")));
  // Compaction applies the deletes and drops the delete files.
  auto c = t->Compact({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->operation, "replace");
  EXPECT_EQ(LiveDeleteFiles(*t), 0);
  // 3267 minus the even ids below 50 that are not multiples of 6 (600 - 216).
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id) FROM t"), ElementsAre(ElementsAre("50", "2883")));
}

TEST_F(RowOperationsTest, OverwriteByFilterAndByPartition) {
  auto t = Create("ow", "id BIGINT, region VARCHAR, v INTEGER", "region");
  Append(*t, "SELECT range AS id, ['eu','us','ap'][range % 3 + 1] AS region, 1 AS v FROM range(30)");
  auto r = t->OverwriteWhere(testing::Where("region = 'eu'"), {"SELECT 1000 AS id, 'eu' AS region, 2 AS v", nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT region, count(*), sum(v) FROM t GROUP BY 1 ORDER BY 1"),
              ElementsAre(ElementsAre("ap", "10", "10"), ElementsAre("eu", "1", "2"), ElementsAre("us", "10", "10")));
  auto p = t->OverwritePartitions({"SELECT 7 AS id, 'us' AS region, 3 AS v UNION ALL SELECT 8, 'mx', 3", nullptr});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT region, count(*), sum(v) FROM t GROUP BY 1 ORDER BY 1"),
              ElementsAre(ElementsAre("ap", "10", "10"), ElementsAre("eu", "1", "2"), ElementsAre("mx", "1", "3"),
                          ElementsAre("us", "1", "3")));
}

TEST_F(RowOperationsTest, UpsertAndEqualityDeletesRespectSequenceNumbers) {
  auto t = Create("cdc", "id BIGINT NOT NULL, name VARCHAR", "", {}, {1});
  Append(*t, "SELECT range AS id, 'v1' AS name FROM range(1, 6)");
  auto u = t->Upsert({"SELECT 2 AS id, 'v2' AS name UNION ALL SELECT 6, 'v2'", nullptr}, {});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT id, name FROM t ORDER BY id"),
              ElementsAre(ElementsAre("1", "v1"), ElementsAre("2", "v2"), ElementsAre("3", "v1"),
                          ElementsAre("4", "v1"), ElementsAre("5", "v1"), ElementsAre("6", "v2")));
  const iceberg::Snapshot* s = t->metadata().CurrentSnapshot();
  EXPECT_EQ(s->SummaryValue("added-equality-deletes"), "2");
  EXPECT_EQ(s->SummaryValue("added-records"), "2");
  // Upserting the same key again replaces the previous upsert's row too.
  ASSERT_TRUE(t->Upsert({"SELECT 2 AS id, 'v3' AS name", nullptr}, {"id"}).ok());
  EXPECT_THAT(Rows(*t, "SELECT name FROM t WHERE id = 2"), ElementsAre(ElementsAre("v3")));
  EXPECT_EQ(*t->Count({}), 6);
  // Delete by key.
  ASSERT_TRUE(t->DeleteKeys({"SELECT 1 AS id UNION ALL SELECT 6", nullptr}, {"id"}).ok());
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || name, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("2v3,3v1,4v1,5v1")));
  // Rows inserted after a delete of their key are not hit by it.
  Append(*t, "SELECT 1 AS id, 'again' AS name");
  EXPECT_THAT(Rows(*t, "SELECT name FROM t WHERE id = 1"), ElementsAre(ElementsAre("again")));
  // Duplicate keys in one batch are refused, nothing committed.
  int64_t seq = *catalog_->LatestCommitSeq();
  auto dup = t->Upsert({"SELECT 3 AS id, 'x' AS name UNION ALL SELECT 3, 'y'", nullptr}, {"id"});
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*catalog_->LatestCommitSeq(), seq);
  EXPECT_EQ(t->Upsert({"SELECT 3 AS id", nullptr}, {"nope"}).status().code(), StatusCode::kInvalidArgument);
  // Compaction applies the equality deletes.
  ASSERT_TRUE(t->Compact({}).ok());
  EXPECT_EQ(LiveDeleteFiles(*t), 0);
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || name, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("1again,2v3,3v1,4v1,5v1")));
}

TEST_F(RowOperationsTest, PartitionedUpsertNeedsPartitionColumnsInTheKey) {
  auto t = Create("pcdc", "id BIGINT NOT NULL, region VARCHAR NOT NULL, v INTEGER", "region");
  Append(*t, "SELECT range AS id, 'eu' AS region, 1 AS v FROM range(5)");
  EXPECT_EQ(t->Upsert({"SELECT 1 AS id, 'eu' AS region, 2 AS v", nullptr}, {"id"}).status().code(),
            StatusCode::kInvalidArgument);
  auto ok = t->Upsert({"SELECT 1 AS id, 'eu' AS region, 2 AS v", nullptr}, {"id", "region"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT sum(v), count(*) FROM t"), ElementsAre(ElementsAre("6", "5")));
}

// Equality deletes apply within their own spec and partition (spec "Scan Planning"): after a
// partition spec change, keys written under the new spec must still delete the rows that files
// of the old specs hold.
TEST_F(RowOperationsTest, UpsertsAndKeyDeletesReachFilesOfEarlierPartitionSpecs) {
  auto t = Create("evolved", "id BIGINT NOT NULL, region VARCHAR NOT NULL, v INTEGER", "region");
  Append(*t, "SELECT range AS id, 'eu' AS region, 1 AS v FROM range(6)");
  ASSERT_TRUE(t->UpdatePartitionSpec("region, bucket(4, id)").ok());
  Append(*t, "SELECT range AS id, 'us' AS region, 1 AS v FROM range(10, 14)");
  auto up = t->Upsert({"SELECT 1 AS id, 'eu' AS region, 2 AS v UNION ALL SELECT 11, 'us', 2", nullptr},
                      {"id", "region"});
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || ':' || v, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("0:1,1:2,2:1,3:1,4:1,5:1,10:1,11:2,12:1,13:1")));
  ASSERT_TRUE(t->DeleteKeys({"SELECT 2 AS id, 'eu' AS region UNION ALL SELECT 12, 'us'", nullptr}, {"id", "region"}).ok());
  // And again under a third spec that no longer partitions by region.
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(2, id)").ok());
  ASSERT_TRUE(t->DeleteKeys({"SELECT 3 AS id, 'eu' AS region", nullptr}, {"id", "region"}).ok());
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || ':' || v, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("0:1,1:2,4:1,5:1,10:1,11:2,13:1")));
}

// Keys that cannot say which partition of an earlier spec a row is in: unpartitioned deletes
// when the table has an unpartitioned spec, a clear refusal otherwise (never a delete that
// silently misses rows).
TEST_F(RowOperationsTest, KeysMissingAnEarlierSpecsPartitionColumnDeleteEverywhereOrAreRefused) {
  auto t = Create("started_plain", "id BIGINT NOT NULL, region VARCHAR NOT NULL, v INTEGER", "");
  Append(*t, "SELECT range AS id, 'eu' AS region, 1 AS v FROM range(3)");
  ASSERT_TRUE(t->UpdatePartitionSpec("region").ok());
  Append(*t, "SELECT range AS id, 'us' AS region, 1 AS v FROM range(10, 13)");
  ASSERT_TRUE(t->UpdatePartitionSpec("bucket(4, id)").ok());
  auto up = t->Upsert({"SELECT 1 AS id, 'eu' AS region, 2 AS v UNION ALL SELECT 11, 'us', 2", nullptr}, {"id"});
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT string_agg(id::VARCHAR || ':' || v, ',' ORDER BY id) FROM t"),
              ElementsAre(ElementsAre("0:1,1:2,2:1,10:1,11:2,12:1")));

  auto r = Create("regions", "id BIGINT NOT NULL, region VARCHAR NOT NULL, v INTEGER", "region");
  Append(*r, "SELECT range AS id, 'eu' AS region, 1 AS v FROM range(3)");
  ASSERT_TRUE(r->UpdatePartitionSpec("bucket(4, id)").ok());
  const int64_t before = *r->metadata().current_snapshot_id;
  EXPECT_EQ(r->DeleteKeys({"SELECT 1 AS id", nullptr}, {"id"}).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(r->Refresh().ok());
  EXPECT_EQ(*r->metadata().current_snapshot_id, before);
  EXPECT_TRUE(r->DeleteKeys({"SELECT 1 AS id, 'eu' AS region", nullptr}, {"id", "region"}).ok());
  EXPECT_THAT(Rows(*r, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"), ElementsAre(ElementsAre("0,2")));
}

TEST_F(RowOperationsTest, IncrementalReadsAndChangelog) {
  auto t = Create("inc", "id BIGINT, v VARCHAR", "");
  Append(*t, "SELECT 1 AS id, 'a' AS v");
  int64_t s1 = t->metadata().current_snapshot_id.value();
  Append(*t, "SELECT 2 AS id, 'b' AS v");
  Append(*t, "SELECT 3 AS id, 'c' AS v UNION ALL SELECT 4, 'd'");
  int64_t s3 = t->metadata().current_snapshot_id.value();
  auto delta = t->ChangesSql(s1, std::nullopt, Table::ChangeMode::kAppendsOnly);
  ASSERT_TRUE(delta.ok()) << delta.status().ToString();
  EXPECT_THAT(Query(*delta, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t"), ElementsAre(ElementsAre("2,3,4")));
  ASSERT_TRUE(t->DeleteWhere(testing::Where("id = 2")).ok());
  auto refused = t->ChangesSql(s1, std::nullopt, Table::ChangeMode::kAppendsOnly);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  auto upto = t->ChangesSql(s1, s3, Table::ChangeMode::kAppendsOnly);
  ASSERT_TRUE(upto.ok());
  EXPECT_THAT(Query(*upto, "SELECT count(*) FROM t"), ElementsAre(ElementsAre("3")));
  auto log = t->ChangesSql(s3, std::nullopt, Table::ChangeMode::kChangelog);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_THAT(Query(*log, "SELECT id, v, _change_type, _change_ordinal FROM t ORDER BY ALL"),
              ElementsAre(ElementsAre("2", "b", "DELETE", "0")));
  EXPECT_EQ(t->ChangesSql(123, std::nullopt, Table::ChangeMode::kAppendsOnly).status().code(), StatusCode::kNotFound);
}

TEST_F(RowOperationsTest, CompactsSmallFiles) {
  auto t = Create("small", "id BIGINT, v VARCHAR", "");
  for (int i = 0; i < 5; ++i) Append(*t, "SELECT " + std::to_string(i) + " AS id, 'x' AS v");
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("total-data-files"), "5");
  auto c = t->Compact({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("total-data-files"), "1");
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id) FROM t"), ElementsAre(ElementsAre("5", "10")));
}

TEST_F(RowOperationsTest, ConcurrentDeleteAndAppendBothLand) {
  auto t = Create("race", "id BIGINT", "");
  Append(*t, "SELECT range AS id FROM range(100)");
  auto ident = t->ident();
  std::thread appender([&] {
    auto other = Table::Load(*catalog_, *io_, *db_, ident);
    ASSERT_TRUE(other.ok());
    for (int i = 0; i < 5; ++i) {
      auto r = (*other)->Append({"SELECT " + std::to_string(1000 + i) + " AS id", nullptr});
      EXPECT_TRUE(r.ok()) << r.status().ToString();
    }
  });
  for (int i = 0; i < 5; ++i) {
    auto r = t->DeleteWhere(testing::Where("id = " + std::to_string(i * 10)));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  appender.join();
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_THAT(Rows(*t, "SELECT count(*), count(*) FILTER (WHERE id >= 1000) FROM t"),
              ElementsAre(ElementsAre("100", "5")));
}

}  // namespace
}  // namespace skade::table
