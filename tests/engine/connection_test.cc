// Connections, prepared statements with Arrow parameters, and the lock-down used by servers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/engine/database.h"
#include "skade/engine/spill_folder.h"
#include "tests/testing/query_rows.h"
#include "tests/engine/arrow_drain.h"
#include "tests/testing/temp_dir.h"

namespace skade::engine {
namespace {

std::unique_ptr<Database> OpenDb(DatabaseOptions options = {}) {
  auto db = Database::Open(options);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return std::move(*db);
}

// Drains a stream into rows of text through DuckDB itself.
std::vector<std::vector<std::string>> Rows(Database& db, arrow::StreamHandle stream) {
  auto rows = db.QueryRowsWithArrow("s", stream.get(), "SELECT * FROM s");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<std::vector<std::string>> out;
  if (!rows.ok()) return out;
  for (const auto& r : *rows) {
    std::vector<std::string> row;
    for (const auto& v : r) row.push_back(v.value_or("NULL"));
    out.push_back(row);
  }
  return out;
}

TEST(ConnectionTest, SettingsStayOnTheirConnection) {
  auto db = OpenDb();
  auto a = db->Connect();
  auto b = db->Connect();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Execute("CREATE SCHEMA s1").ok());
  ASSERT_TRUE((*a)->Execute("CREATE TABLE s1.t AS SELECT 7 AS x").ok());
  ASSERT_TRUE((*a)->Execute("USE s1").ok());
  auto on_a = (*a)->Prepare("SELECT x FROM t");
  ASSERT_TRUE(on_a.ok()) << on_a.status().ToString();
  EXPECT_FALSE((*b)->Prepare("SELECT x FROM t").ok());  // b still uses main
}

TEST(ConnectionTest, PreparedStatementKindsSchemasAndParameters) {
  auto db = OpenDb();
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare("SELECT ?::BIGINT + 1 AS n, ?::VARCHAR AS s WHERE ?::INTEGER > 0");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  EXPECT_EQ((*stmt)->kind(), StatementKind::kSelect);
  EXPECT_EQ((*stmt)->parameter_count(), 3);
  auto result_schema = (*stmt)->ResultSchema();
  ASSERT_TRUE(result_schema.ok()) << result_schema.status().ToString();
  ASSERT_EQ(result_schema->get()->n_children, 2);
  EXPECT_STREQ(result_schema->get()->children[0]->format, "l");
  EXPECT_STREQ(result_schema->get()->children[0]->name, "n");
  auto params = (*stmt)->ParameterSchema();
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_EQ(params->get()->n_children, 3);
  EXPECT_STREQ(params->get()->children[0]->name, "1");

  // Bind (41, 'x', 5) then (1, NULL, -1) from a two-row Arrow batch.
  auto batch = arrow::RecordBatchBuilder({arrow::ArrayBuilder("1", "l", true), arrow::ArrayBuilder("2", "u", true),
                                          arrow::ArrayBuilder("3", "i", true)});
  batch.AppendStruct();
  batch.child(0).AppendInt(41);
  batch.child(1).AppendString("x");
  batch.child(2).AppendInt(5);
  batch.AppendStruct();
  batch.child(0).AppendInt(1);
  batch.child(1).AppendNull();
  batch.child(2).AppendInt(-1);
  arrow::SchemaHandle schema;
  arrow::ArrayHandle array;
  ASSERT_TRUE(batch.Finish(schema.get(), array.get()).ok());
  ASSERT_TRUE((*stmt)->BindRow(*schema.get(), *array.get(), 0).ok());
  auto first = (*stmt)->ExecuteArrow();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Rows(*db, std::move(*first)), (std::vector<std::vector<std::string>>{{"42", "x"}}));
  ASSERT_TRUE((*stmt)->BindRow(*schema.get(), *array.get(), 1).ok());
  auto second = (*stmt)->ExecuteArrow();
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(Rows(*db, std::move(*second)).empty());

  // A batch with the wrong number of columns is refused.
  auto two = arrow::RecordBatchBuilder({arrow::ArrayBuilder("1", "l", true)});
  two.AppendStruct();
  two.child(0).AppendInt(1);
  arrow::SchemaHandle s2;
  arrow::ArrayHandle a2;
  ASSERT_TRUE(two.Finish(s2.get(), a2.get()).ok());
  Status st = (*stmt)->BindRow(*s2.get(), *a2.get(), 0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("3 parameters"), std::string::npos) << st.message();
}

TEST(ConnectionTest, UpdateCountsAndStatementKinds) {
  auto db = OpenDb();
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  ASSERT_TRUE((*con)->Execute("CREATE TABLE t (x INTEGER)").ok());
  auto ins = (*con)->Prepare("INSERT INTO t SELECT * FROM range(5)");
  ASSERT_TRUE(ins.ok());
  EXPECT_EQ((*ins)->kind(), StatementKind::kInsert);
  auto n = (*ins)->ExecuteUpdate();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5);
  auto copy = (*con)->Prepare("COPY t TO '/dev/null' (FORMAT csv)");
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ((*copy)->kind(), StatementKind::kOther);
  EXPECT_EQ((*copy)->kind_name(), "COPY");
  EXPECT_EQ((*con)->Prepare("SELEC 1").status().code(), StatusCode::kInvalidArgument);
}

TEST(ConnectionTest, LockedDownDatabaseReadsOnlyAllowedDirectories) {
  testing::TempDir lake;
  testing::TempDir outside;
  {
    auto setup = OpenDb();
    ASSERT_TRUE(setup->Execute("COPY (SELECT 1 AS a) TO '" + lake.path() + "/in.parquet'").ok());
    ASSERT_TRUE(setup->Execute("COPY (SELECT 2 AS a) TO '" + outside.path() + "/out.parquet'").ok());
  }
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {lake.path()};
  auto db = OpenDb(options);
  EXPECT_EQ(testing::QueryText(*db, "SELECT a FROM read_parquet('" + lake.path() + "/in.parquet')"),
            (std::vector<std::vector<std::string>>{{"1"}}));
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  const std::vector<std::string> refused = {
      "SELECT * FROM read_parquet('" + outside.path() + "/out.parquet')",
      "SELECT * FROM read_csv('/etc/passwd')",
      "SELECT * FROM read_text('/etc/hostname')",
      "COPY (SELECT 1) TO '" + outside.path() + "/x.csv'",
      "ATTACH '" + outside.path() + "/x.duckdb' AS x",
      "INSTALL httpfs",
      "LOAD httpfs",
      "SET enable_external_access = true",
      "SET allowed_directories = ['/']",
      "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
  };
  for (const std::string& sql : refused) {
    EXPECT_FALSE((*con)->Execute(sql).ok()) << sql;
  }
  // Session-level navigation still works.
  ASSERT_TRUE((*con)->Execute("CREATE SCHEMA s").ok());
  EXPECT_TRUE((*con)->Execute("USE s").ok());
}

// Issue 31 (S7): DuckDB spills to a folder outside every allowed directory. Its own spill
// files bypass the sandbox (they are opened by the buffer manager, not by a query), while a
// query can neither list nor read them: what other sessions spilled stays theirs.
TEST(ConnectionTest, ALockedDownDatabaseSpillsWhereNoQueryReads) {
  testing::TempDir lake;
  testing::TempDir private_dir;
  const std::string spill = private_dir.Path("spill");
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {lake.path()};
  options.temp_directory = spill;
  options.memory_limit = "64MB";
  options.threads = 1;
  auto db = OpenDb(options);
  // Sorting ~200 MB of text in 64 MB spills.
  EXPECT_EQ(testing::QueryText(*db, "SELECT count(*), max(rn) FROM (SELECT row_number() OVER (ORDER BY s) AS rn "
                                    "FROM (SELECT md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS s "
                                    "FROM range(2000000)))"),
            (std::vector<std::vector<std::string>>{{"2000000", "2000000"}}));
  ASSERT_TRUE(std::filesystem::exists(spill)) << "the query did not spill: the test proves nothing";
  testing::WriteFileOrDie(spill + "/planted.block", "another session's rows");
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  for (const std::string& sql : {"SELECT * FROM read_text('" + spill + "/planted.block')",
                                 "SELECT * FROM read_blob('" + spill + "/*')",
                                 "SELECT * FROM glob('" + spill + "/*')"}) {
    auto r = (*con)->Execute(sql);
    EXPECT_FALSE(r.ok()) << sql;
  }
  // Spilling still works after the refusals.
  EXPECT_EQ(testing::QueryText(*db, "SELECT count(*) FROM (SELECT row_number() OVER (ORDER BY s) AS rn "
                                    "FROM (SELECT md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS s "
                                    "FROM range(2000000)))"),
            (std::vector<std::vector<std::string>>{{"2000000"}}));
  // DuckDB removes the folder it made when the database closes: nothing piles up.
  con->reset();
  db.reset();
  EXPECT_FALSE(std::filesystem::exists(spill));
}

TEST(ConnectionTest, NewSpillFoldersArePrivateAndRefuseASharedParent) {
  testing::TempDir tmp;
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before ? before : "";
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  auto a = NewSpillFolder();
  auto b = NewSpillFolder();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
  const std::string parent = tmp.Path("skade-" + std::to_string(::getuid()));
  EXPECT_EQ(std::filesystem::path(*a).parent_path().string(), parent);
  EXPECT_EQ(std::filesystem::status(parent).permissions() & std::filesystem::perms::all, std::filesystem::perms::owner_all);
  // A parent others can enter is refused, never used.
  std::filesystem::permissions(parent, std::filesystem::perms::others_exec, std::filesystem::perm_options::add);
  EXPECT_EQ(NewSpillFolder().status().code(), StatusCode::kPermissionDenied);
  if (before) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

// DESCRIBE of a stream of `schema`, as DuckDB reads it: the oracle of ArrowInputColumns.
std::vector<std::string> Described(Database& db, const ArrowSchema& schema) {
  ArrowSchema copy;
  arrow::CopySchema(schema, &copy);
  arrow::StreamHandle empty = arrow::MakeBatchStream(arrow::SchemaHandle(&copy), {});
  auto rows = db.QueryRowsWithArrow("d", empty.get(), "DESCRIBE SELECT * FROM d");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<std::string> out;
  for (const auto& r : rows.ok() ? *rows : std::vector<TextRow>{}) out.push_back(r[0].value_or("?") + " " + r[1].value_or("?"));
  return out;
}

std::vector<std::string> InputColumns(Database& db, const ArrowSchema& schema) {
  auto columns = db.ArrowInputColumns(schema);
  EXPECT_TRUE(columns.ok()) << columns.status().ToString();
  std::vector<std::string> out;
  for (const ColumnType& c : columns.ok() ? *columns : std::vector<ColumnType>{}) out.push_back(c.name + " " + c.type);
  return out;
}

// A struct schema: id (l), tags (+l of u), u (w:16, an arrow.uuid when `uuid`).
arrow::SchemaHandle InputSchema(bool uuid) {
  std::vector<arrow::ArrayBuilder> cols;
  cols.emplace_back("id", "l", false);
  cols.emplace_back("tags", "+l", true, std::vector<arrow::ArrayBuilder>{arrow::ArrayBuilder("item", "u", true)});
  cols.emplace_back("u", "w:16", true);
  if (uuid) cols.back().set_metadata({{"ARROW:extension:name", "arrow.uuid"}});
  arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  arrow::SchemaHandle schema;
  arrow::ArrayHandle array;
  EXPECT_TRUE(b.Finish(schema.get(), array.get()).ok());
  return schema;
}

TEST(ArrowInputColumnsTest, TypesEachSchemaAsDuckDbReadsItAndKeepsSchemasApartByTheirMetadata) {
  auto db = OpenDb();
  arrow::SchemaHandle plain = InputSchema(false);
  arrow::SchemaHandle uuid = InputSchema(true);
  const std::vector<std::string> plain_types = {"id BIGINT", "tags VARCHAR[]", "u BLOB"};
  const std::vector<std::string> uuid_types = {"id BIGINT", "tags VARCHAR[]", "u UUID"};
  ASSERT_EQ(Described(*db, *plain.get()), plain_types);
  ASSERT_EQ(Described(*db, *uuid.get()), uuid_types);
  // First sight and every later one (remembered), in either order: each schema its own types.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(InputColumns(*db, *plain.get()), plain_types) << round;
    EXPECT_EQ(InputColumns(*db, *uuid.get()), uuid_types) << round;
    EXPECT_EQ(InputColumns(*db, *InputSchema(false).get()), plain_types) << round;
  }
  // More schemas than it remembers: still each one's own types.
  for (size_t i = 0; i < Database::kArrowSchemasRemembered + 3; ++i) {
    std::vector<arrow::ArrayBuilder> cols;
    cols.emplace_back("c" + std::to_string(i), i % 2 ? "i" : "u", true);
    arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
    arrow::SchemaHandle s;
    arrow::ArrayHandle a;
    ASSERT_TRUE(b.Finish(s.get(), a.get()).ok());
    ASSERT_EQ(InputColumns(*db, *s.get()),
              std::vector<std::string>{"c" + std::to_string(i) + (i % 2 ? " INTEGER" : " VARCHAR")});
  }
  EXPECT_EQ(InputColumns(*db, *uuid.get()), uuid_types);
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// Arrow inputs read on several threads at once, each through its own connection and view (the
// writes of concurrent appends do this): every one reads its own rows.
TEST(ConnectionTest, ArrowInputsAreReadOnSeveralThreadsAtOnce) {
  auto db = OpenDb();
  constexpr int kThreads = 4;
  constexpr int kRounds = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        auto builder = arrow::RecordBatchBuilder({arrow::ArrayBuilder("x", "l", false)});
        const int64_t rows = t * 100 + r + 1;
        for (int64_t i = 0; i < rows; ++i) {
          builder.AppendStruct();
          builder.child(0).AppendInt(i);
        }
        arrow::SchemaHandle schema;
        arrow::ArrayHandle batch;
        if (!builder.Finish(schema.get(), batch.get()).ok()) {
          ++failures;
          continue;
        }
        std::vector<arrow::ArrayHandle> batches;
        batches.push_back(std::move(batch));
        arrow::StreamHandle stream = arrow::MakeBatchStream(std::move(schema), std::move(batches));
        auto got = db->QueryRowsWithArrow("__skade_input", stream.get(), "SELECT count(*) FROM __skade_input");
        if (!got.ok() || got->size() != 1 || (*got)[0][0].value_or("") != std::to_string(rows)) {
          ADD_FAILURE() << "thread " << t << " round " << r << ": "
                        << (got.ok() ? (*got)[0][0].value_or("NULL") : got.status().ToString());
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// 10,000 rows in the order of column i: flat, variable-size, decimal, null, list, struct and
// date columns.
constexpr const char* kMixedRowsSql =
    "SELECT i, i::VARCHAR || repeat('x', (i % 7)::INTEGER) AS s, "
    "CASE WHEN i % 3 = 0 THEN NULL ELSE i * 1.5 END::DECIMAL(18,2) AS d, [i, i + 1] AS l, "
    "{'a': i, 'b': NULL::VARCHAR} AS st, DATE '2020-01-01' + (i % 400)::INTEGER AS day "
    "FROM range(10000) t(i) ORDER BY i";

// A stream's rows as text, sorted (for comparing results whatever their batches' order).
std::vector<std::vector<std::string>> SortedRows(Database& db, arrow::StreamHandle stream) {
  auto rows = Rows(db, std::move(stream));
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Joined batches (ArrowBatching) hold exactly the rows and values of DuckDB's chunks taken one
// by one, for flat, variable-size, decimal, null, list and struct columns; they grow from the
// first size to the maximum, and stop at the byte bound.
TEST(ArrowBatchingTest, JoinedBatchesHoldTheChunksRowsAndGrowToTheirBound) {
  auto db = OpenDb();
  const std::string sql = kMixedRowsSql;
  auto sorted = [&](arrow::StreamHandle stream) { return SortedRows(*db, std::move(stream)); };
  auto con = db->Connect();
  ASSERT_TRUE(con.ok()) << con.status().ToString();
  auto stmt = (*con)->Prepare(sql);
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  auto plain = (*stmt)->ExecuteArrow();
  ASSERT_TRUE(plain.ok());
  Drained chunks = Drain(std::move(*plain));
  ASSERT_EQ(chunks.error, "");
  for (int64_t n : chunks.lengths) EXPECT_LE(n, 2048);
  const auto want = sorted(std::move(chunks.again));
  ASSERT_EQ(want.size(), 10000u);

  auto joined = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 2048, .max_rows = 4096, .max_bytes = 64 << 20});
  ASSERT_TRUE(joined.ok());
  Drained growing = Drain(std::move(*joined));
  ASSERT_EQ(growing.error, "");
  ASSERT_GE(growing.lengths.size(), 3u);
  EXPECT_GE(growing.lengths[0], 2048);
  EXPECT_LT(growing.lengths[0], 4096);
  EXPECT_GE(growing.lengths[1], 4096);
  std::vector<int64_t> in_order(10000);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_EQ(growing.first_column, in_order);  // the chunks' rows in the chunks' order
  EXPECT_EQ(sorted(std::move(growing.again)), want);

  // A byte bound below one chunk: every batch is one chunk.
  auto capped = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 2048, .max_rows = 65536, .max_bytes = 1});
  ASSERT_TRUE(capped.ok());
  Drained small = Drain(std::move(*capped));
  ASSERT_EQ(small.error, "");
  for (int64_t n : small.lengths) EXPECT_LE(n, 2048);
  EXPECT_EQ(sorted(std::move(small.again)), want);
}

// The byte bound is on Arrow's bytes, chunk by chunk: rows that turn wide mid-stream (1,000-byte
// strings after 4,096 one-byte ones) close a batch before it passes the bound, whatever the
// batch before them weighed; without the bound the same stream joins them.
TEST(ArrowBatchingTest, RowsThatTurnWideCloseTheBatchAtTheByteBound) {
  auto db = OpenDb();
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare(
      "SELECT i, CASE WHEN i < 4096 THEN 'x' ELSE repeat('y', 1000) END AS s FROM range(20480) t(i) ORDER BY i");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  auto bounded = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 2048, .max_rows = 65536, .max_bytes = 1 << 20});
  ASSERT_TRUE(bounded.ok());
  Drained d = Drain(std::move(*bounded));
  ASSERT_EQ(d.error, "");
  int64_t total = 0;
  for (int64_t n : d.lengths) {
    EXPECT_LE(n, 2048);  // a wide chunk (~2 MB) is over the bound alone: a batch of its own
    total += n;
  }
  EXPECT_EQ(total, 20480);
  std::vector<int64_t> in_order(20480);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_EQ(d.first_column, in_order);
  auto unbounded = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 2048, .max_rows = 65536, .max_bytes = 1LL << 40});
  ASSERT_TRUE(unbounded.ok());
  Drained u = Drain(std::move(*unbounded));
  ASSERT_EQ(u.error, "");
  EXPECT_GT(*std::max_element(u.lengths.begin(), u.lengths.end()), 2048);
}

// An error raised while a batch is being joined fails the stream with DuckDB's message.
TEST(ArrowBatchingTest, AnErrorWhileJoiningFailsTheStream) {
  auto db = OpenDb();
  auto con = db->Connect();
  ASSERT_TRUE(con.ok());
  auto stmt = (*con)->Prepare("SELECT CASE WHEN i = 1999999 THEN error('boom at the end') ELSE i END AS v FROM range(2000000) t(i)");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  auto stream = (*stmt)->ExecuteArrow(ArrowBatching{.first_rows = 2048, .max_rows = 65536});
  ASSERT_TRUE(stream.ok());
  Drained d = Drain(std::move(*stream));
  EXPECT_NE(d.error.find("boom at the end"), std::string::npos) << d.error;
}

}  // namespace
}  // namespace skade::engine

namespace skade::engine {
namespace {

// A whole result (Database::QueryArrowWhole) holds the streamed result's rows and values, in
// batches of at most the asked size, in order for ORDER BY; unordered, DuckDB's worker threads
// collect it in parallel, and still every row comes once.
TEST(ArrowWholeTest, HoldsTheStreamedRowsInBoundedBatchesAndKeepsOrder) {
  auto db = OpenDb();
  const std::string sql = kMixedRowsSql;
  auto sorted = [&](arrow::StreamHandle stream) { return SortedRows(*db, std::move(stream)); };
  // Drained here first: DuckDB's Arrow scan (Rows) keeps the schemas it asks a stream for, which
  // LeakSanitizer can tell apart only when they are copies made by skade (MakeBatchStream).
  auto streamed = db->QueryArrow(sql);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  Drained chunks = Drain(std::move(*streamed));
  ASSERT_EQ(chunks.error, "");
  const auto want = sorted(std::move(chunks.again));
  ASSERT_EQ(want.size(), 10000u);

  auto whole = db->QueryArrowWhole(sql, 3000);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  Drained d = Drain(std::move(*whole));
  ASSERT_EQ(d.error, "");
  ASSERT_FALSE(d.lengths.empty());
  for (int64_t n : d.lengths) EXPECT_LE(n, 3000);
  std::vector<int64_t> in_order(10000);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_EQ(d.first_column, in_order);
  EXPECT_EQ(sorted(std::move(d.again)), want);

  // No order asked: the parallel collector, its batches made at their full size, holds the same
  // values of every type; 1,000-row batches split DuckDB's filtered chunks between batches.
  // The whole result of `query` in batches of at most `rows` rows holds the streamed one's
  // rows, `expected` of them.
  auto same_as_streamed = [&](const std::string& query, int64_t rows, size_t expected) {
    auto whole_result = db->QueryArrowWhole(query, rows);
    ASSERT_TRUE(whole_result.ok()) << whole_result.status().ToString();
    Drained batches = Drain(std::move(*whole_result));
    ASSERT_EQ(batches.error, "");
    for (int64_t n : batches.lengths) EXPECT_LE(n, rows);
    auto streamed_result = db->QueryArrow(query);
    ASSERT_TRUE(streamed_result.ok());
    Drained chunks_of = Drain(std::move(*streamed_result));
    ASSERT_EQ(chunks_of.error, "");
    const auto want_rows = sorted(std::move(chunks_of.again));
    ASSERT_EQ(want_rows.size(), expected);
    EXPECT_EQ(sorted(std::move(batches.again)), want_rows);
  };
  const std::string unordered = std::string(kMixedRowsSql).substr(0, std::string(kMixedRowsSql).rfind(" ORDER BY"));
  same_as_streamed("SELECT * FROM (" + unordered + ") WHERE i % 5 <> 2 OR i < 2000", 1000, 8400);
  // Flat columns only: skade builds the batches itself (arrow_flat_batch_internal.h), and holds
  // the same rows and values, split chunks included.
  same_as_streamed(
      "SELECT i, i::VARCHAR || repeat('x', (i % 7)::INTEGER) AS s, "
      "CASE WHEN i % 3 = 0 THEN NULL ELSE i * 1.5 END::DECIMAL(18,2) AS d, i % 2 = 0 AS b, "
      "DATE '2020-01-01' + (i % 400)::INTEGER AS day FROM range(10000) t(i) WHERE i % 5 <> 2 OR i < 2000",
      1000, 8400);

  // No order asked: 3M rows over the worker threads, each exactly once.
  auto parallel = db->QueryArrowWhole("SELECT i FROM range(3000000) t(i) WHERE i % 3 <> 1");
  ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
  Drained p = Drain(std::move(*parallel));
  ASSERT_EQ(p.error, "");
  for (int64_t n : p.lengths) EXPECT_LE(n, Database::kWholeBatchRows);
  std::vector<int64_t> seen = p.first_column;
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 2000000u);
  for (size_t k = 0; k < seen.size(); ++k) {
    const int64_t expected = static_cast<int64_t>(k / 2 * 3 + (k % 2 == 0 ? 0 : 2));
    if (seen[k] != expected) {
      ADD_FAILURE() << "row " << k << ": " << seen[k] << ", expected " << expected;
      break;
    }
  }
  // An empty result is a stream with its schema and no batch.
  auto empty = db->QueryArrowWhole("SELECT i FROM range(10) t(i) WHERE i > 100");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  Drained e = Drain(std::move(*empty));
  EXPECT_EQ(e.error, "");
  EXPECT_TRUE(e.lengths.empty());
}

TEST(ArrowWholeTest, RefusesWhatQueryArrowRefusesAndReportsErrors) {
  testing::TempDir lake;
  DatabaseOptions options;
  options.lock_down = true;
  options.allowed_directories = {lake.path()};
  auto db = OpenDb(options);
  auto fails = [&](const std::string& sql, int64_t batch_rows = Database::kWholeBatchRows) {
    auto r = db->QueryArrowWhole(sql, batch_rows);
    EXPECT_FALSE(r.ok()) << sql;
    return r.ok() ? Status::Ok() : r.status();
  };
  EXPECT_EQ(fails("SELECT 1 AS a", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fails("SELECT * FROM missing_table").code(), StatusCode::kInvalidArgument);
  // One statement only: the text cannot smuggle a second one in, nor hide one behind a NUL.
  EXPECT_EQ(fails("SELECT 1; SELECT 2").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fails(std::string("SELECT 1\0; SELECT 2", 19)).code(), StatusCode::kInvalidArgument);
  // The lock-down holds as for every other statement.
  EXPECT_EQ(fails("SELECT * FROM read_csv('/etc/passwd')").code(), StatusCode::kPermissionDenied);
  // An error raised while the query runs comes back with DuckDB's message.
  Status boom = fails("SELECT CASE WHEN i = 1999999 THEN error('boom at the end') ELSE i END FROM range(2000000) t(i)");
  EXPECT_NE(boom.message().find("boom at the end"), std::string::npos) << boom.ToString();
  // After the failures, the Database's next queries stream as before.
  auto after = db->QueryArrow("SELECT 42::BIGINT AS a");
  ASSERT_TRUE(after.ok());
  Drained answer = Drain(std::move(*after));
  EXPECT_EQ(answer.error, "");
  EXPECT_EQ(answer.first_column, std::vector<int64_t>{42});
}

// InterruptRunning stops a whole read while DuckDB collects it.
TEST(ArrowWholeTest, InterruptRunningStopsIt) {
  auto db = OpenDb();
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      db->InterruptRunning();
    }
  });
  auto r = db->QueryArrowWhole("SELECT sum(i) FROM range(100000000000) t(i)");
  done = true;
  interrupter.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nterrupt"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace skade::engine
