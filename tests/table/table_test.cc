// The write path end to end on a real SQLite catalog: create, append (query, Arrow, files),
// overwrite, read back exact rows at every snapshot, concurrent writers, and bad input that
// must leave nothing committed.
#include "skade/table/table.h"

#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skade/catalog/sql_catalog.h"
#include "skade/engine/schema_convert.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class TableTest : public testing::LakeTest {
 protected:
  TableTest() : LakeTest("sales") {}

  catalog::TableIdent Create(const std::string& name, const std::string& columns, const std::string& partition_by) {
    CreateTable(name, columns, partition_by);
    return Ident(name);
  }

  std::unique_ptr<Table> Open(const catalog::TableIdent& ident) { return LoadTable(ident); }

  size_t DataFilesOnDisk(const catalog::TableIdent& ident) {
    auto state = catalog_->LoadTable(ident);
    std::string data = state->metadata->location + "/data";
    size_t n = 0;
    std::error_code ec;
    if (!fs::exists(data, ec)) return 0;
    for (auto& e : fs::recursive_directory_iterator(data)) n += e.is_regular_file();
    return n;
  }

};

const char* kOrders =
    "id BIGINT NOT NULL, customer VARCHAR, amount DECIMAL(10,2), ts TIMESTAMPTZ, d DATE, tags VARCHAR[], "
    "info STRUCT(city VARCHAR, zip INTEGER)";

std::string OrdersSql(int from, int to) {
  return "SELECT range AS id, 'c' || (range % 7) AS customer, (range * 1.25)::DECIMAL(10,2) AS amount, "
         "TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_hours(range * 5) AS ts, "
         "DATE '2024-01-01' + CAST(range // 10 AS INTEGER) AS d, ['t' || (range % 3)] AS tags, "
         "{'city': 'x' || (range % 2), 'zip': range::INTEGER} AS info FROM range(" +
         std::to_string(from) + ", " + std::to_string(to) + ")";
}

TEST_F(TableTest, AppendsAndReadsBackAtEverySnapshot) {
  auto ident = Create("orders", kOrders, "day(ts), bucket(4, id)");
  auto t = Open(ident);
  auto first = t->Append({OrdersSql(0, 100), nullptr});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->added_records, 100);
  EXPECT_GT(first->added_files, 4);  // partitioned by day and bucket
  EXPECT_EQ(first->operation, "append");
  auto second = t->Append({OrdersSql(100, 150), nullptr});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->commit_seq, first->commit_seq + 1);

  // Exact content, compared with DuckDB computing the same rows.
  std::string expected = OrdersSql(0, 150);
  EXPECT_THAT(Rows(*t, "SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL (" + expected + "))"),
              ElementsAre(ElementsAre("0")));
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id), sum(amount) FROM t"),
              ElementsAre(ElementsAre("150", "11175", "13968.75")));
  // Reading at the first snapshot.
  ReadOptions at_first;
  at_first.snapshot.snapshot_id = first->snapshot_id;
  EXPECT_THAT(Rows(*t, "SELECT count(*), max(id) FROM t", at_first), ElementsAre(ElementsAre("100", "99")));
  EXPECT_EQ(*t->Count({}), 150);
  EXPECT_EQ(*t->Count(at_first), 100);
  // Filters prune by partition and by metrics, and stay exact.
  ReadOptions filtered;
  filtered.where = testing::Where("id = 42");
  auto scan = t->PlanRead(filtered);
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->tasks.size(), 1u);
  EXPECT_EQ(*t->Count(filtered), 1);
  filtered.where = testing::Where("ts < TIMESTAMPTZ '2024-01-02 00:00:00+00'");
  EXPECT_EQ(*t->Count(filtered), 5);  // ids 0..4 (every 5 hours)

  // Snapshot summary and commit log.
  const iceberg::Snapshot* s = t->metadata().CurrentSnapshot();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->operation(), "append");
  EXPECT_EQ(s->SummaryValue("added-records"), "50");
  EXPECT_EQ(s->SummaryValue("total-records"), "150");
  EXPECT_EQ(s->sequence_number, 2);
  auto log = catalog_->CommitsSince(0, 100);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 3u);  // create + two appends
  EXPECT_EQ((*log)[2].operation, "append");
  EXPECT_EQ((*log)[2].added_records, 50);
  EXPECT_EQ((*log)[2].snapshot_id, second->snapshot_id);
}

// Time partitions name their folders by date as Java's writers do (ts_day=2024-01-31, not
// 19753), and the values stored in the manifests are still the ordinals: read back exactly,
// pruned exactly, also before 1970 and outside the years 0001-9999 (kept as ordinals there).
TEST_F(TableTest, TimePartitionFoldersAreDatesAndTheirValuesReadBackExactly) {
  const std::string rows =
      "SELECT * FROM (VALUES (1, TIMESTAMPTZ '2024-01-31 10:15:00+00', DATE '2024-01-31'), "
      "(2, TIMESTAMPTZ '1969-12-31 23:30:00+00', DATE '1969-12-31'), "
      "(3, TIMESTAMPTZ '0001-01-01 00:00:00+00', DATE '0001-01-01'), "
      "(4, TIMESTAMPTZ '1900-02-28 05:00:00+00', DATE '0044-03-15 (BC)'), "
      "(5, TIMESTAMPTZ '2024-12-31 23:59:59+00', DATE '12000-06-01')) v(id, ts, d)";
  struct Case {
    std::string name, partition_by;
    std::vector<std::string> folders;       // folder names some data file lies in
    std::vector<std::string> filters;       // each matches exactly one row
  };
  const std::vector<Case> cases = {
      {"by_day", "day(ts), d",
       {"ts_day=2024-01-31", "ts_day=1969-12-31", "ts_day=0001-01-01", "d_p1=2024-01-31", "d_p1=-735160",
        "d_p1=3663534"},
       {"ts < TIMESTAMPTZ '0002-01-01 00:00:00+00'", "d = DATE '0044-03-15 (BC)'", "d = DATE '12000-06-01'",
        "d = DATE '1969-12-31'", "ts >= TIMESTAMPTZ '2024-12-31 00:00:00+00'"}},
      {"by_month", "month(ts), year(d)",
       {"ts_month=2024-01", "ts_month=1969-12", "ts_month=0001-01", "d_year=-043", "d_year=12000"},
       {"ts < TIMESTAMPTZ '1900-03-01 00:00:00+00' AND ts > TIMESTAMPTZ '1900-02-01 00:00:00+00'",
        "d < DATE '0001-01-01'", "d > DATE '9999-12-31'", "d = DATE '2024-01-31'"}},
      {"by_hour", "hour(ts)",
       {"ts_hour=2024-01-31-10", "ts_hour=1969-12-31-23", "ts_hour=0001-01-01-00", "ts_hour=1900-02-28-05"},
       {"ts = TIMESTAMPTZ '1969-12-31 23:30:00+00'", "ts = TIMESTAMPTZ '2024-01-31 10:15:00+00'",
        "ts < TIMESTAMPTZ '0001-01-01 01:00:00+00'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto ident = Create(c.name, "id INTEGER, ts TIMESTAMPTZ, d DATE", c.partition_by);
    auto t = Open(ident);
    auto appended = t->Append({rows, nullptr});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    EXPECT_THAT(Rows(*t, "SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL (" + rows + "))"),
                ElementsAre(ElementsAre("0")));
    auto scan = t->PlanRead({});
    ASSERT_TRUE(scan.ok());
    std::string paths;
    for (const auto& task : scan->tasks) paths += task.file.file_path + "\n";
    for (const std::string& folder : c.folders) EXPECT_THAT(paths, ::testing::HasSubstr("/" + folder + "/"));
    for (const std::string& filter : c.filters) {
      ReadOptions filtered;
      filtered.where = testing::Where(filter);
      auto pruned = t->PlanRead(filtered);
      ASSERT_TRUE(pruned.ok()) << filter;
      EXPECT_EQ(pruned->tasks.size(), 1u) << filter << "\n" << paths;
      EXPECT_EQ(*t->Count(filtered), 1) << filter;
    }
  }
  // The stored values are Iceberg's: day 19753 (an int) for 2024-01-31, the identity date itself.
  auto by_day = Open(Ident("by_day"));
  ReadOptions one;
  one.where = testing::Where("id = 1");
  auto planned = by_day->PlanRead(one);
  ASSERT_TRUE(planned.ok());
  ASSERT_EQ(planned->tasks.size(), 1u);
  ASSERT_EQ(planned->tasks[0].file.partition.size(), 2u);
  ASSERT_TRUE(planned->tasks[0].file.partition[0].has_value());
  EXPECT_EQ(planned->tasks[0].file.partition[0]->ToString(), iceberg::Literal::Int(19753).ToString());
  ASSERT_TRUE(planned->tasks[0].file.partition[1].has_value());
  EXPECT_EQ(planned->tasks[0].file.partition[1]->ToString(), iceberg::Literal::Date(19753).ToString());
}

TEST_F(TableTest, OverwriteReplacesEverythingAndKeepsHistory) {
  auto ident = Create("o", "id BIGINT, v VARCHAR", "");
  auto t = Open(ident);
  auto a = t->Append({"SELECT range AS id, 'a' AS v FROM range(10)", nullptr});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto o = t->OverwriteAll({"SELECT range + 100 AS id, 'b' AS v FROM range(3)", nullptr});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->operation, "overwrite");
  EXPECT_EQ(o->deleted_records, 10);
  EXPECT_THAT(Rows(*t, "SELECT id, v FROM t ORDER BY id"),
              ElementsAre(ElementsAre("100", "b"), ElementsAre("101", "b"), ElementsAre("102", "b")));
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("total-records"), "3");
  EXPECT_EQ(t->metadata().CurrentSnapshot()->SummaryValue("deleted-data-files"), "1");
  ReadOptions before;
  before.snapshot.snapshot_id = a->snapshot_id;
  EXPECT_EQ(*t->Count(before), 10);
}

TEST_F(TableTest, IngestsParquetCsvAndJsonFiles) {
  auto ident = Create("f", "id INTEGER NOT NULL, name VARCHAR, score DOUBLE", "truncate(10, id)");
  auto t = Open(ident);
  std::string parquet = tmp_.Path("in.parquet"), csv = tmp_.Path("in.csv"), json = tmp_.Path("in.ndjson");
  ASSERT_TRUE(db_->Execute("COPY (SELECT range::INTEGER AS id, 'p' || range AS name, range / 2 AS score FROM range(25)) TO '" + parquet + "'").ok());
  testing::WriteFileOrDie(csv, "id,name,score\n100,x,1.5\n101,\"y, z\",\n");
  testing::WriteFileOrDie(json, "{\"id\": 200, \"name\": \"j\"}\n{\"id\": 201, \"score\": 3}\n");
  for (const std::string& f : {parquet, csv, json}) {
    auto sql = engine::FileSourceSql({f});
    ASSERT_TRUE(sql.ok()) << sql.status().ToString();
    auto r = t->Append({*sql, nullptr});
    ASSERT_TRUE(r.ok()) << f << ": " << r.status().ToString();
  }
  EXPECT_EQ(*t->Count({}), 29);
  EXPECT_THAT(Rows(*t, "SELECT id, name, score FROM t WHERE id >= 100 ORDER BY id"),
              ElementsAre(ElementsAre("100", "x", "1.5"), ElementsAre("101", "y, z", "NULL"),
                          ElementsAre("200", "j", "NULL"), ElementsAre("201", "NULL", "3.0")));
  EXPECT_EQ(engine::FileSourceSql({tmp_.Path("x.txt")}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine::FileSourceSql({parquet, csv}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TableTest, AppendsAnArrowStream) {
  auto ident = Create("arrow", "id BIGINT, s VARCHAR", "");
  auto t = Open(ident);
  auto stream = db_->QueryArrow("SELECT range AS id, 's' || range AS s FROM range(5000)");
  ASSERT_TRUE(stream.ok());
  auto r = t->Append({"SELECT * FROM __skade_input", stream->get()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(Rows(*t, "SELECT count(*), sum(id), max(s) FROM t"), ElementsAre(ElementsAre("5000", "12497500", "s999")));
}

TEST_F(TableTest, BadInputCommitsNothing) {
  auto ident = Create("bad", "id INTEGER NOT NULL, name VARCHAR", "bucket(2, id)");
  auto t = Open(ident);
  ASSERT_TRUE(t->Append({"SELECT 1 AS id, 'ok' AS name", nullptr}).ok());
  size_t files_before = DataFilesOnDisk(ident);
  int64_t seq_before = *catalog_->LatestCommitSeq();
  struct Case {
    std::string sql;
    const char* what;
  } cases[] = {
      {"SELECT 'not a number' AS id, 'x' AS name", "wrong type"},
      {"SELECT 'x' AS name", "missing required column"},
      {"SELECT NULL::INTEGER AS id, 'x' AS name", "null in required column"},
      {"SELECT 1 AS id, 'x' AS name, 3 AS extra", "unknown column"},
      {"SELECT * FROM (VALUES (1, 'a'), (NULL, 'b')) v(id, name)", "null after valid rows"},
  };
  for (const auto& c : cases) {
    auto r = t->Append({c.sql, nullptr});
    EXPECT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.what << ": " << r.status().ToString();
  }
  EXPECT_EQ(*catalog_->LatestCommitSeq(), seq_before);
  EXPECT_EQ(DataFilesOnDisk(ident), files_before);
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_EQ(*t->Count({}), 1);
}

TEST_F(TableTest, ConcurrentWritersLoseNothing) {
  auto ident = Create("hot", "writer INTEGER, i INTEGER", "");
  constexpr int kWriters = 8, kCommits = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto t = Table::Load(*catalog_, *io_, *db_, ident);
      if (!t.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < kCommits; ++i) {
        auto r = (*t)->Append({"SELECT " + std::to_string(w) + " AS writer, " + std::to_string(i) + " AS i", nullptr});
        if (!r.ok()) {
          ++failures;
          ADD_FAILURE() << r.status().ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto t = Open(ident);
  EXPECT_THAT(Rows(*t, "SELECT count(*), count(DISTINCT (writer, i)) FROM t"),
              ElementsAre(ElementsAre(std::to_string(kWriters * kCommits), std::to_string(kWriters * kCommits))));
  EXPECT_EQ(t->metadata().snapshots.size(), static_cast<size_t>(kWriters * kCommits));
  EXPECT_EQ(t->metadata().last_sequence_number, kWriters * kCommits);
}

}  // namespace
}  // namespace skade::table
