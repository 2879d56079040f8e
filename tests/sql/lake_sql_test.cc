// LakeSql over a real SQLite catalog: views follow commits, write statements commit to
// Iceberg with exact counts, ingest modes.
#include "skade/sql/lake_sql.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "skade/arrow/builder.h"
#include "tests/testing/lake_test.h"

namespace skade::sql {
namespace {

class LakeSqlTest : public testing::LakeTest {
 protected:
  LakeSqlTest() : LakeTest("a.b") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  std::vector<std::vector<std::string>> Sql(const std::string& query) {
    Status st = lake_->SyncViews(query, "a.b");
    EXPECT_TRUE(st.ok()) << st.ToString();
    return testing::QueryText(*db_, query);
  }

  int64_t Write(const std::string& sql) {
    auto w = engine::ParseStatement(sql);
    EXPECT_TRUE(w.ok() && w->is_write()) << sql;
    if (!w.ok() || !w->is_write()) return -1;
    auto n = lake_->ExecuteWrite(*w, "a.b");
    EXPECT_TRUE(n.ok()) << sql << ": " << n.status().ToString();
    return n.ok() ? *n : -1;
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(LakeSqlTest, SchemaNamesAndResolution) {
  EXPECT_EQ(*LakeSql::SchemaName(*catalog::Namespace::Parse("a.b")), "a.b");
  EXPECT_FALSE(LakeSql::SchemaName(catalog::Namespace{{"x.y", "z"}}).has_value());
  auto ident = lake_->Resolve({"skade", "a.b", "t"}, "");
  ASSERT_TRUE(ident.ok());
  EXPECT_EQ(ident->ToString(), "a.b.t");
  EXPECT_EQ(lake_->Resolve({"t"}, "a.b")->ToString(), "a.b.t");
  EXPECT_EQ(lake_->Resolve({"other", "a.b", "t"}, "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(lake_->Resolve({"t"}, "").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LakeSqlTest, ViewsFollowCommitsAndEachStatementSeesTheLatest) {
  auto t = CreateTable("orders", "id BIGINT, name VARCHAR");
  ASSERT_TRUE(t);
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".orders"), (std::vector<std::vector<std::string>>{{"0"}}));
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT range AS id, 'n' || range AS name FROM range(3)", nullptr}).ok());
  // A statement after the commit sees it (the view existed already).
  EXPECT_EQ(Sql("SELECT count(*), max(id) FROM skade.\"a.b\".orders"), (std::vector<std::vector<std::string>>{{"3", "2"}}));
  // Parameters and joins still find the tables a statement reads.
  ASSERT_TRUE(t->Append(engine::WriteSource{"SELECT 10 AS id, 'x' AS name", nullptr}).ok());
  ASSERT_TRUE(lake_->SyncViews("SELECT * FROM skade.\"a.b\".orders o JOIN orders p ON o.id = p.id WHERE o.id = ?", "a.b").ok());
  EXPECT_EQ(testing::QueryText(*db_, "SELECT count(*) FROM skade.\"a.b\".orders"),
            (std::vector<std::vector<std::string>>{{"4"}}));
}

TEST_F(LakeSqlTest, WriteStatementsCommitWithExactCounts) {
  ASSERT_TRUE(CreateTable("t", "id BIGINT, s VARCHAR"));
  EXPECT_EQ(Write("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')"), 3);
  EXPECT_EQ(Write("INSERT INTO skade.\"a.b\".t (s, id) SELECT 'd', 4"), 1);
  EXPECT_EQ(Write("UPDATE t SET s = upper(s) WHERE id >= 3"), 2);
  EXPECT_EQ(Write("DELETE FROM t WHERE id = 2"), 1);
  EXPECT_EQ(Sql("SELECT id, s FROM skade.\"a.b\".t ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"1", "a"}, {"3", "C"}, {"4", "D"}}));
  EXPECT_EQ(Write("DELETE FROM t WHERE id > 100"), 0);
  EXPECT_EQ(Write("DELETE FROM t"), 3);
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".t"), (std::vector<std::vector<std::string>>{{"0"}}));
}

TEST_F(LakeSqlTest, DdlGoesToTheCatalog) {
  EXPECT_EQ(Write("CREATE TABLE n (id BIGINT NOT NULL, v DOUBLE)"), 0);
  EXPECT_TRUE(catalog_->LoadTable(Ident("n")).ok());
  auto again = engine::ParseStatement("CREATE TABLE n (id BIGINT)");
  EXPECT_EQ(lake_->ExecuteWrite(*again, "a.b").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Write("CREATE TABLE IF NOT EXISTS n (id BIGINT)"), 0);
  EXPECT_EQ(Write("CREATE TABLE c AS SELECT range AS id FROM range(5)"), 5);
  EXPECT_EQ(Sql("SELECT sum(id) FROM skade.\"a.b\".c"), (std::vector<std::vector<std::string>>{{"10"}}));
  EXPECT_EQ(Write("DROP TABLE c"), 0);
  EXPECT_EQ(catalog_->LoadTable(Ident("c")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Write("DROP TABLE IF EXISTS c"), 0);
  EXPECT_EQ(Write("CREATE SCHEMA skade.\"a.b.c\""), 0);
  EXPECT_TRUE(*catalog_->NamespaceExists(*catalog::Namespace::Parse("a.b.c")));
  auto missing = engine::ParseStatement("CREATE TABLE nope.t (id BIGINT)");
  EXPECT_EQ(lake_->ExecuteWrite(*missing, "a.b").status().code(), StatusCode::kNotFound);
}

TEST_F(LakeSqlTest, ConcurrentSessionsSyncAndQueryWithoutConflicts) {
  auto a = CreateTable("ca", "id BIGINT");
  auto b = CreateTable("cb", "id BIGINT");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Append(engine::WriteSource{"SELECT range AS id FROM range(10)", nullptr}).ok());
  std::atomic<int> failures{0};
  // A writer keeps committing to `ca` while four sessions (own connections, own USE) sync the
  // views and query both tables.
  std::thread writer([&] {
    for (int i = 0; i < 10; ++i) {
      auto r = a->Append(engine::WriteSource{"SELECT 100 + " + std::to_string(i) + " AS id", nullptr});
      if (!r.ok()) {
        ADD_FAILURE() << r.status().ToString();
        ++failures;
      }
    }
  });
  std::vector<std::thread> sessions;
  for (int t = 0; t < 4; ++t) {
    sessions.emplace_back([&, t] {
      auto con = db_->Connect();
      if (!con.ok() || !lake_->Use(**con, t % 2 ? "a.b" : "").ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 20; ++i) {
        const std::string sql =
            "SELECT (SELECT count(*) FROM skade.\"a.b\".ca) + (SELECT count(*) FROM skade.\"a.b\".cb) AS n";
        if (Status synced = lake_->SyncViews(sql, "a.b"); !synced.ok()) {
          ADD_FAILURE() << synced.ToString();
          ++failures;
          continue;
        }
        auto stmt = (*con)->Prepare(sql);
        if (!stmt.ok()) {
          ADD_FAILURE() << stmt.status().ToString();
          ++failures;
          continue;
        }
        auto stream = (*stmt)->ExecuteArrow();
        if (!stream.ok()) {
          ADD_FAILURE() << stream.status().ToString();
          ++failures;
        }
      }
    });
  }
  for (auto& th : sessions) th.join();
  writer.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.\"a.b\".ca"), (std::vector<std::vector<std::string>>{{"20"}}));
}

arrow::StreamHandle Batch(std::vector<int64_t> ids) {
  auto b = arrow::RecordBatchBuilder({arrow::ArrayBuilder("id", "l", true), arrow::ArrayBuilder("s", "u", true)});
  for (int64_t id : ids) {
    b.AppendStruct();
    b.child(0).AppendInt(id);
    b.child(1).AppendString("v" + std::to_string(id));
  }
  arrow::SchemaHandle schema;
  arrow::ArrayHandle array;
  EXPECT_TRUE(b.Finish(schema.get(), array.get()).ok());
  std::vector<arrow::ArrayHandle> batches;
  batches.push_back(std::move(array));
  return arrow::MakeBatchStream(std::move(schema), std::move(batches));
}

TEST_F(LakeSqlTest, IngestModes) {
  using Mode = LakeSql::IngestMode;
  auto ident = Ident("in");
  EXPECT_EQ(lake_->Ingest(ident, Batch({1}).get(), Mode::kAppend).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*lake_->Ingest(ident, Batch({1, 2}).get(), Mode::kCreate), 2);
  EXPECT_EQ(lake_->Ingest(ident, Batch({3}).get(), Mode::kCreate).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*lake_->Ingest(ident, Batch({3}).get(), Mode::kAppend), 1);
  EXPECT_EQ(Sql("SELECT string_agg(s, ',' ORDER BY id) FROM skade.\"a.b\".\"in\""),
            (std::vector<std::vector<std::string>>{{"v1,v2,v3"}}));
  EXPECT_EQ(*lake_->Ingest(ident, Batch({9}).get(), Mode::kReplace), 1);
  EXPECT_EQ(Sql("SELECT string_agg(s, ',' ORDER BY id) FROM skade.\"a.b\".\"in\""),
            (std::vector<std::vector<std::string>>{{"v9"}}));
  EXPECT_EQ(*lake_->Ingest(Ident("in2"), Batch({5}).get(), Mode::kCreateAppend), 1);
}

}  // namespace
}  // namespace skade::sql
