// UPDATE … FROM and MERGE through LakeSql: each is one Iceberg commit with SQL's semantics — the
// first WHEN clause that applies wins, unmatched target and source rows are handled by their
// own clauses, a target row matching several source rows is an error that changes nothing, and
// target rows with equal values are treated alike.
#include <gtest/gtest.h>

#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::sql {
namespace {

using Grid = std::vector<std::vector<std::string>>;

class LakeSqlMergeTest : public testing::LakeTest {
 protected:
  LakeSqlMergeTest() : LakeTest("m") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
    ASSERT_TRUE(CreateTable("stock", "sku BIGINT, qty BIGINT, note VARCHAR"));
    ASSERT_TRUE(CreateTable("delivery", "sku BIGINT, qty BIGINT"));
    ASSERT_EQ(Write("INSERT INTO stock VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c'), (4, 40, 'd')"), 4);
    ASSERT_EQ(Write("INSERT INTO delivery VALUES (2, 5), (3, 0), (5, 7)"), 3);
  }

  Result<int64_t> Run(const std::string& sql) {
    SKADE_ASSIGN_OR_RETURN(engine::Statement w, engine::ParseStatement(sql));
    return lake_->ExecuteWrite(w, "m");
  }
  int64_t Write(const std::string& sql) {
    auto n = Run(sql);
    EXPECT_TRUE(n.ok()) << sql << ": " << n.status().ToString();
    return n.ok() ? *n : -1;
  }
  Grid Sql(const std::string& query) {
    Status st = lake_->SyncViews(query, "m");
    EXPECT_TRUE(st.ok()) << st.ToString();
    return testing::QueryText(*db_, query);
  }
  Grid Stock() { return Sql("SELECT sku, qty, coalesce(note, '-') FROM skade.m.stock ORDER BY sku"); }
  std::string LastOperation() {
    auto t = LoadTable(Ident("stock"));
    return t && t->metadata().CurrentSnapshot() ? t->metadata().CurrentSnapshot()->operation() : "";
  }
  int SnapshotCount() {
    auto t = LoadTable(Ident("stock"));
    return t ? static_cast<int>(t->metadata().snapshots.size()) : -1;
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(LakeSqlMergeTest, UpdateFromChangesTheMatchedRowsInOneOverwrite) {
  const int before = SnapshotCount();
  EXPECT_EQ(Write("UPDATE stock AS s SET qty = s.qty + d.qty, note = 'delivered' FROM delivery d "
                  "WHERE d.sku = s.sku AND d.qty > 0"),
            1);
  EXPECT_EQ(Stock(), (Grid{{"1", "10", "a"}, {"2", "25", "delivered"}, {"3", "30", "c"}, {"4", "40", "d"}}));
  EXPECT_EQ(SnapshotCount(), before + 1);
  EXPECT_EQ(LastOperation(), "overwrite");
  // No row matches: nothing commits.
  EXPECT_EQ(Write("UPDATE stock SET qty = 0 FROM delivery WHERE delivery.sku = stock.sku AND delivery.qty > 100"), 0);
  EXPECT_EQ(SnapshotCount(), before + 1);
}

TEST_F(LakeSqlMergeTest, ATargetRowMatchingTwoSourceRowsIsAnErrorThatChangesNothing) {
  ASSERT_EQ(Write("INSERT INTO delivery VALUES (2, 1)"), 1);
  const int before = SnapshotCount();
  EXPECT_EQ(Run("UPDATE stock SET qty = d.qty FROM delivery d WHERE d.sku = stock.sku").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("MERGE INTO stock s USING delivery d ON s.sku = d.sku WHEN MATCHED THEN DELETE").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SnapshotCount(), before);
  EXPECT_EQ(Stock(), (Grid{{"1", "10", "a"}, {"2", "20", "b"}, {"3", "30", "c"}, {"4", "40", "d"}}));
}

TEST_F(LakeSqlMergeTest, MergeAppliesTheFirstClauseThatHoldsToEachRow) {
  const int before = SnapshotCount();
  EXPECT_EQ(Write("MERGE INTO stock AS s USING delivery AS d ON s.sku = d.sku "
                  "WHEN MATCHED AND d.qty = 0 THEN DELETE "
                  "WHEN MATCHED THEN UPDATE SET qty = s.qty + d.qty "
                  "WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (d.sku, d.qty) "
                  "WHEN NOT MATCHED BY SOURCE AND s.sku = 4 THEN UPDATE SET note = 'unsold'"),
            4);  // 3 deleted, 2 updated, 5 inserted, 4 marked
  EXPECT_EQ(Stock(), (Grid{{"1", "10", "a"}, {"2", "25", "b"}, {"4", "40", "unsold"}, {"5", "7", "-"}}));
  EXPECT_EQ(SnapshotCount(), before + 1);
  EXPECT_EQ(LastOperation(), "overwrite");
}

TEST_F(LakeSqlMergeTest, AMergeThatOnlyInsertsAppendsAndOneThatOnlyDeletesDeletes) {
  EXPECT_EQ(Write("MERGE INTO stock USING (SELECT sku + 10 AS sku, qty FROM delivery) AS n ON stock.sku = n.sku "
                  "WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED AND n.qty > 0 THEN INSERT VALUES (n.sku, n.qty, 'new')"),
            2);
  EXPECT_EQ(LastOperation(), "append");
  EXPECT_EQ(Sql("SELECT sku, qty, note FROM skade.m.stock WHERE sku > 10 ORDER BY sku"),
            (Grid{{"12", "5", "new"}, {"15", "7", "new"}}));
  EXPECT_EQ(Write("MERGE INTO stock USING delivery USING (sku) WHEN MATCHED THEN DELETE"), 2);
  EXPECT_EQ(LastOperation(), "delete");
  EXPECT_EQ(Sql("SELECT list(sku ORDER BY sku) FROM skade.m.stock"), (Grid{{"[1, 4, 12, 15]"}}));
}

TEST_F(LakeSqlMergeTest, EqualTargetRowsAreUpdatedAlike) {
  ASSERT_EQ(Write("INSERT INTO stock VALUES (2, 20, 'b')"), 1);  // a second, equal row 2
  EXPECT_EQ(Write("UPDATE stock SET qty = stock.qty + d.qty FROM delivery d WHERE d.sku = stock.sku AND d.sku = 2"), 2);
  EXPECT_EQ(Sql("SELECT sku, qty FROM skade.m.stock WHERE sku = 2"), (Grid{{"2", "25"}, {"2", "25"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.m.stock"), (Grid{{"5"}}));
}

TEST_F(LakeSqlMergeTest, WhatCannotRunIsRefusedBeforeAnythingIsWritten) {
  const int before = SnapshotCount();
  EXPECT_EQ(Run("MERGE INTO stock USING delivery d ON stock.sku = d.sku WHEN MATCHED THEN ERROR").status().code(),
            StatusCode::kNotImplemented);
  EXPECT_EQ(Run("MERGE INTO stock USING delivery d ON stock.sku = d.sku WHEN MATCHED THEN UPDATE SET nope = 1")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("MERGE INTO stock USING delivery d ON stock.sku = d.sku WHEN NOT MATCHED THEN INSERT VALUES (d.sku)")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SnapshotCount(), before);
}

}  // namespace
}  // namespace skade::sql
