// Filter and projection pushdown through SQL (engine/pushdown_scan.h): for every fixture table
// (Impala, Spark, Java and DuckDB writers) and tables skade writes with partitions, position
// and equality deletes, random predicates give the same rows with pushdown on and off (off: a
// view over every file of the snapshot, the oracle); count(*) is right; and the files a
// pushed-down scan hands DuckDB are only those that can match.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "skade/sql/lake_sql.h"
#include "tests/engine/arrow_drain.h"
#include "tests/testing/lake_test.h"

namespace skade::sql {
namespace {

using engine::QuoteIdentifier;
using engine::QuoteString;

class PushdownTest : public testing::LakeTest {
 protected:
  PushdownTest() : LakeTest("p") {}

  void SetUp() override {
    LakeTest::SetUp();
    auto lake = LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  // With `parted`, pushdown reads every table in parts planned while they are read
  // (table/parted_read.h), whatever its number of files.
  std::vector<std::vector<std::string>> Sql(const std::string& query, bool pushdown, bool parted = false) {
    lake_->set_pushdown(pushdown);
    lake_->set_parted_read_files(parted ? 0 : LakeSql::kPartedReadFiles);
    Status st = lake_->SyncViews(query, "p");
    EXPECT_TRUE(st.ok()) << st.ToString();
    return testing::QueryText(*db_, query);
  }

  // Runs one write statement through the lake, as Flight SQL and the CLI do; whether it
  // committed.
  bool Write(const std::string& sql) {
    auto statement = engine::ParseStatement(sql);
    EXPECT_TRUE(statement.ok()) << sql;
    if (!statement.ok()) return false;
    const bool written = lake_->ExecuteWrite(*statement, "p").ok();
    EXPECT_TRUE(written) << sql;
    return written;
  }

  void Register(const std::string& name, const std::string& metadata) {
    auto r = catalog_->RegisterTable(Ident(name), testing::FixturePath("iceberg/" + metadata));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // A literal of `value` (text as DuckDB renders it) of DuckDB type `type`.
  static std::string Literal(const std::string& value, const std::string& type) {
    return "CAST(" + QuoteString(value) + " AS " + type + ")";
  }

  // Random predicates over `table`'s primitive columns (struct fields too), with constants
  // sampled from its rows, compared with pushdown on and off: rows as a multiset fingerprint,
  // count(*), and one projected column.
  void CompareRandomPredicates(const std::string& name, int predicates, uint32_t seed) {
    SCOPED_TRACE(name);
    const std::string view = "skade.p." + QuoteIdentifier(name);
    // The columns and their types as DuckDB sees them.
    auto described = Sql("SELECT column_name, column_type FROM (DESCRIBE " + view + ")", false);
    std::vector<std::pair<std::string, std::string>> columns;  // SQL path, type
    for (const auto& row : described) {
      const std::string& type = row[1];
      // Nested columns are exercised by the written table's struct below.
      if (type.rfind("STRUCT(", 0) == 0 || type.find('[') != std::string::npos || type.rfind("MAP", 0) == 0 ||
          type == "BLOB") {
        continue;
      }
      columns.emplace_back(QuoteIdentifier(row[0]), type);
    }
    ASSERT_FALSE(columns.empty());
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    // Sampled constants per column (deterministic: the smallest hashes).
    std::map<std::string, std::vector<std::string>> samples;
    for (const auto& [col, type] : columns) {
      for (const auto& row : Sql("SELECT DISTINCT CAST(" + col + " AS VARCHAR) AS v FROM " + view + " WHERE " + col +
                                     " IS NOT NULL ORDER BY hash(v) LIMIT 6",
                                 false)) {
        samples[col].push_back(row[0]);
      }
    }
    auto atom = [&]() -> std::string {
      const auto& [col, type] = columns[pick(columns.size())];
      const auto& values = samples[col];
      if (values.empty() || pick(8) == 0) return col + (pick(2) ? " IS NULL" : " IS NOT NULL");
      const std::string v = Literal(values[pick(values.size())], type);
      switch (pick(type == "VARCHAR" ? 5 : 4)) {
        case 0: {
          static const char* ops[] = {"=", "<>", "<", "<=", ">", ">="};
          return col + " " + ops[pick(6)] + " " + v;
        }
        case 1: return col + " BETWEEN " + v + " AND " + Literal(values[pick(values.size())], type);
        case 2: return col + " IN (" + v + ", " + Literal(values[pick(values.size())], type) + ")";
        case 3: return v + " >= " + col;
        default: {
          std::string prefix = values[pick(values.size())].substr(0, 2);
          for (char& c : prefix) {
            if (c == '%' || c == '_' || c == '\'') c = 'a';
          }
          return col + " LIKE " + QuoteString(prefix + "%");
        }
      }
    };
    for (int i = 0; i < predicates; ++i) {
      std::string where = atom();
      for (int more = static_cast<int>(pick(3)); more > 0; --more) where += (pick(2) ? " AND " : " OR ") + atom();
      SCOPED_TRACE(where);
      const std::string rows = "SELECT count(*), sum(hash(t)::HUGEINT) FROM (SELECT * FROM " + view + " WHERE " +
                               where + ") t";
      const auto oracle = Sql(rows, false);
      EXPECT_EQ(Sql(rows, true), oracle);
      EXPECT_EQ(Sql(rows, true, /*parted=*/true), oracle);
      const std::string& col = columns[pick(columns.size())].first;
      const std::string one = "SELECT count(" + col + "), count(*) FROM " + view + " WHERE " + where;
      EXPECT_EQ(Sql(one, true), Sql(one, false));
    }
    // Every row, read in parts.
    const std::string all = "SELECT count(*), sum(hash(t)::HUGEINT) FROM (SELECT * FROM " + view + ") t";
    EXPECT_EQ(Sql(all, true, /*parted=*/true), Sql(all, false));
    const std::string count = "SELECT count(*) FROM " + view;
    EXPECT_EQ(Sql(count, true), Sql(count, false));
    EXPECT_EQ(Sql(count, true, /*parted=*/true), Sql(count, false));
  }

  std::unique_ptr<LakeSql> lake_;
};

TEST_F(PushdownTest, FixtureTablesGiveTheSameRowsWithAndWithoutPushdown) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Register("lineitem", "lineitem_iceberg/metadata/v2.metadata.json");
  Register("impala", "iceberg_partitioned/metadata/v2.metadata.json");
  Register("bucket", "partition_bucket_test/metadata/v2.metadata.json");
  Register("spark", "generated_spec2_0_001/pyspark_iceberg_table/metadata/v9.metadata.json");
  Register("equality", "equality_deletes_mytable/metadata/v7.metadata.json");
  uint32_t seed = 1;
  for (const char* t : {"lineitem", "impala", "bucket", "spark", "equality"}) CompareRandomPredicates(t, 12, seed++);
}

TEST_F(PushdownTest, WrittenTablesWithDeletesGiveTheSameRowsWithAndWithoutPushdown) {
  ASSERT_NE(CreateTable("w", "id BIGINT, ts TIMESTAMP, region VARCHAR, amount DECIMAL(10,2), s STRUCT(a INTEGER, b VARCHAR)",
                        "day(ts), region", {{"write.delete.mode", "merge-on-read"}}, {1}),
            nullptr);
  EXPECT_EQ(Sql("SELECT 1", true).size(), 1u);
  for (int batch = 0; batch < 4; ++batch) {
    ASSERT_TRUE(Write(
        "INSERT INTO p.w SELECT range + " + std::to_string(batch * 500) +
        ", TIMESTAMP '2024-01-01' + INTERVAL (range % 9) DAY, ['eu', 'us', 'apac'][1 + range % 3], range * 1.25, "
        "{'a': (range % 11)::INTEGER, 'b': 'k' || (range % 5)} FROM range(500)"));
  }
  ASSERT_TRUE(Write("DELETE FROM skade.p.w WHERE id % 7 = 0"));
  ASSERT_TRUE(Write("UPDATE p.w SET region = 'mena' WHERE id % 13 = 1"));
  CompareRandomPredicates("w", 40, 99);
  // Nested fields push down too.
  for (const char* where : {"s.a = 3", "s.b LIKE 'k1%' AND s.a < 5", "s.a IN (1, 2) OR region = 'us'"}) {
    const std::string q = std::string("SELECT count(*), sum(id) FROM skade.p.w WHERE ") + where;
    EXPECT_EQ(Sql(q, true), Sql(q, false)) << where;
  }
}

TEST_F(PushdownTest, OnlyFilesThatCanMatchAreRead) {
  ASSERT_NE(CreateTable("days", "id BIGINT, day DATE", "day"), nullptr);
  ASSERT_TRUE(Write("INSERT INTO p.days SELECT range, DATE '2024-01-01' + (range % 4)::INTEGER FROM range(400)"));
  const std::string q = "SELECT count(*), min(id) FROM skade.p.days WHERE day = DATE '2024-01-02'";
  EXPECT_EQ(Sql(q, true), (std::vector<std::vector<std::string>>{{"100", "1"}}));
  // Remove the data files of every other day: a scan that still lists them fails.
  int removed = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp_.Path("warehouse"))) {
    const std::string path = e.path().string();
    if (e.path().extension() != ".parquet") continue;
    const auto rows = testing::QueryText(*db_, "SELECT count(*) FROM read_parquet(" + QuoteString(path) +
                                                   ") WHERE day = DATE '2024-01-02'");
    if (rows.size() == 1 && rows[0][0] == "0") {
      std::filesystem::remove(e.path());
      ++removed;
    }
  }
  ASSERT_EQ(removed, 3);
  EXPECT_EQ(Sql(q, true), (std::vector<std::vector<std::string>>{{"100", "1"}}));
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.p.days WHERE day BETWEEN DATE '2024-01-02' AND DATE '2024-01-02'", true),
            (std::vector<std::vector<std::string>>{{"100"}}));
  // count(*) of the whole table comes from the manifests: no file is opened.
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.p.days", true), (std::vector<std::vector<std::string>>{{"400"}}));
  // Without pushdown the same query opens every file, and fails on the missing ones.
  lake_->set_pushdown(false);
  EXPECT_FALSE(lake_->SyncViews(q, "p").ok() && db_->QueryRows(q).ok());
}

TEST_F(PushdownTest, ARepeatedScanIsPlannedFromTheCache) {
  // Without a manifest cache, so that another plan has to read the manifests.
  auto uncached = LakeSql::Open(*catalog_, *io_, *db_, "nocache", /*manifest_cache_bytes=*/0);
  ASSERT_TRUE(uncached.ok()) << uncached.status().ToString();
  lake_ = std::move(*uncached);
  EXPECT_EQ(lake_->manifest_cache(), nullptr);
  ASSERT_NE(CreateTable("again", "id BIGINT, day DATE", "day"), nullptr);
  ASSERT_TRUE(Write("INSERT INTO p.again SELECT range, DATE '2024-01-01' + (range % 4)::INTEGER FROM range(400)"));
  const std::string q = "SELECT count(*), max(id) FROM nocache.p.again WHERE day = DATE '2024-01-03'";
  const std::vector<std::vector<std::string>> expected{{"100", "398"}};
  EXPECT_EQ(Sql(q, true), expected);
  // Without its manifests the table cannot be planned again; the same scan needs no planning.
  int removed = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp_.Path("warehouse"))) {
    if (e.path().extension() == ".avro") removed += std::filesystem::remove(e.path()) ? 1 : 0;
  }
  ASSERT_GT(removed, 0);
  EXPECT_EQ(Sql(q, true), expected);
  // Another filter is another plan: it reads the manifests, and names the missing file.
  auto other = db_->QueryRows("SELECT count(*) FROM nocache.p.again WHERE day = DATE '2024-01-04'");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(".avro"), std::string::npos) << other.status().ToString();
}

// A view's rows reach every thread of a statement in morsels (DuckDB's batch indexes): a
// statement that keeps its sources' order (a stream, a materialized result, a LIMIT with an
// OFFSET) gives the rows in the order the view without pushdown gives them, whole or in parts.
TEST_F(PushdownTest, EveryThreadOfAStatementKeepsTheViewsOrder) {
  ASSERT_NE(CreateTable("ord", "id BIGINT, s VARCHAR"), nullptr);
  constexpr int64_t kPerFile = 60'000;
  constexpr int kFiles = 4;
  for (int f = 0; f < kFiles; ++f) {
    ASSERT_TRUE(Write("INSERT INTO p.ord SELECT range, 'row ' || range FROM range(" + std::to_string(f * kPerFile) +
                      ", " + std::to_string((f + 1) * kPerFile) + ")"));
  }
  ASSERT_TRUE(db_->Execute("SET threads = 4").ok());  // more threads than cores: they interleave
  const std::string q = "SELECT id, s FROM skade.p.ord WHERE id % 7 <> 3";
  auto stream_ids = [&](bool pushdown, bool parted) {
    lake_->set_pushdown(pushdown);
    lake_->set_parted_read_files(parted ? 0 : LakeSql::kPartedReadFiles);
    Status st = lake_->SyncViews(q, "p");
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto stream = db_->QueryArrow(q);
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return stream.ok() ? engine::Drain(std::move(*stream)).first_column : std::vector<int64_t>{};
  };
  const std::vector<int64_t> oracle = stream_ids(false, false);
  // The oracle (a skade_scan too, of every file) itself: each file's rows in order, every row
  // once, so at most one step back between two files.
  size_t steps_back = 0;
  for (size_t i = 1; i < oracle.size(); ++i) steps_back += oracle[i] < oracle[i - 1];
  EXPECT_LT(steps_back, static_cast<size_t>(kFiles));
  ASSERT_EQ(oracle.size(), static_cast<size_t>(kFiles * kPerFile - (kFiles * kPerFile + 3) / 7));
  std::vector<int64_t> sorted = oracle;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  for (bool parted : {false, true}) {
    SCOPED_TRACE(parted ? "in parts" : "whole");
    for (int round = 0; round < 3; ++round) EXPECT_EQ(stream_ids(true, parted), oracle) << "round " << round;
    // A materialized result and a LIMIT with an OFFSET keep the same order.
    auto rows = db_->QueryRows(q);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->size(), oracle.size());
    size_t differ = 0;
    for (size_t i = 0; i < oracle.size(); ++i) differ += (*rows)[i][0] != std::to_string(oracle[i]);
    EXPECT_EQ(differ, 0u);
    EXPECT_EQ(Sql(q + " LIMIT 3 OFFSET 150000", true, parted),
              (std::vector<std::vector<std::string>>{
                  {std::to_string(oracle[150000]), "row " + std::to_string(oracle[150000])},
                  {std::to_string(oracle[150001]), "row " + std::to_string(oracle[150001])},
                  {std::to_string(oracle[150002]), "row " + std::to_string(oracle[150002])}}));
  }
  // Aggregates over every thread agree with the oracle's.
  EXPECT_EQ(Sql("SELECT count(*), sum(id), min(s), max(s) FROM skade.p.ord", true),
            Sql("SELECT count(*), sum(id), min(s), max(s) FROM skade.p.ord", false));
}

// A part of a read that fails (here a data file gone) fails the statement with the file's
// name, however many threads were taking the view's rows when it failed; none of them reads
// on from the broken source.
TEST_F(PushdownTest, APartThatFailsFailsEveryThreadWithTheFilesName) {
  ASSERT_NE(CreateTable("gone", "id BIGINT"), nullptr);
  constexpr int kFiles = 12;  // more than the first part's files
  for (int f = 0; f < kFiles; ++f) {
    ASSERT_TRUE(Write("INSERT INTO p.gone SELECT range FROM range(" + std::to_string(f * 3000) + ", " +
                      std::to_string((f + 1) * 3000) + ")"));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp_.Path("warehouse"))) {
    if (e.path().extension() == ".parquet") files.push_back(e.path());
  }
  ASSERT_EQ(files.size(), static_cast<size_t>(kFiles));
  std::sort(files.begin(), files.end());
  const std::filesystem::path removed = files.back();
  ASSERT_TRUE(std::filesystem::remove(removed));
  ASSERT_TRUE(db_->Execute("SET threads = 4").ok());
  const std::string q = "SELECT id FROM skade.p.gone";
  lake_->set_parted_read_files(0);  // in parts: the missing file is met while others are read
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(lake_->SyncViews(q, "p").ok());
    std::string error;
    auto stream = db_->QueryArrow(q);
    if (!stream.ok()) {
      error = stream.status().message();
    } else {
      error = engine::Drain(std::move(*stream)).error;
    }
    EXPECT_NE(error.find(removed.filename().string()), std::string::npos) << error;
    auto rows = db_->QueryRows(q);
    ASSERT_FALSE(rows.ok());
    EXPECT_NE(rows.status().message().find(removed.filename().string()), std::string::npos)
        << rows.status().ToString();
  }
}

// After a commit the views plan again (a new snapshot), reading only the new manifest list and
// the commit's new manifest: the manifests they share come from the manifest cache, whichever
// filter asks.
TEST_F(PushdownTest, AfterACommitOnlyWhatItAddedIsRead) {
  ASSERT_NE(CreateTable("grow", "id BIGINT, day DATE", "day"), nullptr);
  auto insert = [&](int from, int to) {
    ASSERT_TRUE(Write("INSERT INTO p.grow SELECT range, DATE '2024-01-01' + (range % 4)::INTEGER FROM range(" +
                      std::to_string(from) + ", " + std::to_string(to) + ")"));
  };
  insert(0, 400);
  const std::string q = "SELECT count(*), max(id) FROM skade.p.grow WHERE day = DATE '2024-01-03'";
  EXPECT_EQ(Sql(q, true), (std::vector<std::vector<std::string>>{{"100", "398"}}));
  ASSERT_NE(lake_->manifest_cache(), nullptr);
  const auto before = lake_->manifest_cache()->stats();
  EXPECT_EQ(before.items, 2) << "one list and one manifest";

  insert(400, 404);
  EXPECT_EQ(Sql(q, true), (std::vector<std::vector<std::string>>{{"101", "402"}}));
  const auto after = lake_->manifest_cache()->stats();
  EXPECT_EQ(after.misses - before.misses, 2) << "the new list and the new manifest";
  EXPECT_GE(after.hits - before.hits, 1) << "the first manifest, shared by both snapshots";
  // Another filter over the same snapshot reads no file either.
  EXPECT_EQ(Sql("SELECT count(*) FROM skade.p.grow WHERE day = DATE '2024-01-04'", true),
            (std::vector<std::vector<std::string>>{{"101"}}));
  EXPECT_EQ(lake_->manifest_cache()->stats().misses, after.misses);
}

}  // namespace
}  // namespace skade::sql
