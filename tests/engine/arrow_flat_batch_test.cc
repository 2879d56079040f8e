// skade's own Arrow batches of flat columns (FlatBatchBuilder) against DuckDB's ArrowAppender on
// the same chunks, and the pool of pages they live in (PagePool).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/common/arrow/arrow_appender.hpp"
#include "skade/engine/arrow_flat_batch_internal.h"
#include "skade/engine/page_pool_internal.h"

namespace skade::engine {
namespace {

bool Bit(const void* bits, int64_t i) { return (static_cast<const uint8_t*>(bits)[i / 8] >> (i % 8)) & 1; }

bool Valid(const ArrowArray& a, int64_t i) {
  return a.buffers[0] == nullptr || Bit(a.buffers[0], a.offset + i);
}

// The value of row `i` of a flat array of `format` as bytes (empty for a null).
std::string Value(const ArrowArray& a, std::string_view format, int64_t i) {
  if (!Valid(a, i)) return "<null>";
  const int64_t row = a.offset + i;
  if (format == "b") return Bit(a.buffers[1], row) ? "true" : "false";
  if (format == "u" || format == "z") {
    const auto* offsets = static_cast<const int32_t*>(a.buffers[1]);
    return std::string(static_cast<const char*>(a.buffers[2]) + offsets[row], offsets[row + 1] - offsets[row]);
  }
  if (format == "U" || format == "Z") {
    const auto* offsets = static_cast<const int64_t*>(a.buffers[1]);
    return std::string(static_cast<const char*>(a.buffers[2]) + offsets[row], offsets[row + 1] - offsets[row]);
  }
  size_t width = 8;
  if (format == "c" || format == "C") width = 1;
  if (format == "s" || format == "S") width = 2;
  if (format == "i" || format == "I" || format == "f" || format == "tdD") width = 4;
  if (format.starts_with("d:")) width = 16;
  return std::string(static_cast<const char*>(a.buffers[1]) + row * width, width);
}

struct Results {
  duckdb::DuckDB db{nullptr};
  duckdb::Connection con{db};
};

// Every chunk of `sql`, in order (the query runs on one thread, so chunks come as made).
std::vector<duckdb::unique_ptr<duckdb::DataChunk>> Chunks(Results& r, const std::string& sql,
                                                          duckdb::vector<duckdb::LogicalType>* types) {
  auto result = r.con.Query(sql);
  std::vector<duckdb::unique_ptr<duckdb::DataChunk>> chunks;
  if (result->HasError()) {
    ADD_FAILURE() << result->GetError();
    return chunks;
  }
  *types = result->types;
  while (auto chunk = result->Fetch()) {
    if (chunk->size() == 0) break;
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

// Builds `chunks` into batches of `capacity` rows both ways, skade's and DuckDB's appender, and
// compares every array: length, null count, validity and each valid value.
void ExpectSameArrays(Results& r, const duckdb::vector<duckdb::LogicalType>& types,
                      const std::vector<duckdb::DataChunk*>& chunks, int64_t capacity) {
  ASSERT_FALSE(chunks.empty());
  auto properties = r.con.context->GetClientProperties();
  auto layout = FlatBatchLayout::For(types, properties);
  ASSERT_NE(layout, nullptr);
  auto pool = PagePool::Make();
  FlatBatchBuilder builder(layout, pool, capacity);
  duckdb::vector<std::string> names;
  for (size_t i = 0; i < types.size(); ++i) names.push_back("c" + std::to_string(i));
  ArrowSchema schema;
  duckdb::ArrowConverter::ToArrowSchema(&schema, types, names, properties);
  arrow::SchemaHandle owned_schema(&schema);

  int64_t total = 0;
  size_t next = 0;
  while (next < chunks.size()) {
    duckdb::ArrowAppender appender(types, static_cast<duckdb::idx_t>(capacity), properties, {});
    while (next < chunks.size() && builder.rows() + static_cast<int64_t>(chunks[next]->size()) <= capacity) {
      ASSERT_TRUE(builder.Append(*chunks[next]).ok());
      appender.Append(*chunks[next], 0, chunks[next]->size(), chunks[next]->size());
      ++next;
    }
    ASSERT_GT(builder.rows(), 0) << "a chunk larger than the capacity";
    auto ours = builder.Finish();
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    ArrowArray raw = appender.Finalize();
    arrow::ArrayHandle theirs(&raw);
    ASSERT_EQ((*ours)->length, theirs->length);
    ASSERT_EQ((*ours)->n_children, theirs->n_children);
    EXPECT_EQ((*ours)->null_count, 0);
    for (int64_t c = 0; c < theirs->n_children; ++c) {
      const ArrowArray& a = *(*ours)->children[c];
      const ArrowArray& b = *theirs->children[c];
      const std::string_view format = owned_schema->children[c]->format;
      ASSERT_EQ(a.length, b.length);
      EXPECT_EQ(a.null_count, b.null_count) << "column " << c << " (" << format << ")";
      for (int64_t i = 0; i < a.length; ++i) {
        ASSERT_EQ(Value(a, format, i), Value(b, format, i)) << "column " << c << " (" << format << ") row " << i;
      }
    }
    total += (*ours)->length;
  }
  int64_t rows = 0;
  for (const auto* chunk : chunks) rows += static_cast<int64_t>(chunk->size());
  EXPECT_EQ(total, rows);
}

// ExpectSameArrays over the chunks of `sql` as DuckDB returns them (flat vectors of up to
// 2,048 rows).
void ExpectSameAsDuckDb(const std::string& sql, int64_t capacity, int64_t* rows_out = nullptr) {
  Results r;
  r.con.Query("SET threads = 1");
  duckdb::vector<duckdb::LogicalType> types;
  auto chunks = Chunks(r, sql, &types);
  ASSERT_FALSE(chunks.empty());
  std::vector<duckdb::DataChunk*> borrowed;
  int64_t rows = 0;
  for (auto& chunk : chunks) {
    borrowed.push_back(chunk.get());
    rows += static_cast<int64_t>(chunk->size());
  }
  ExpectSameArrays(r, types, borrowed, capacity);
  if (rows_out != nullptr) *rows_out = rows;
}

// Every flat type, nulls that start in a later chunk, strings inline (≤ 12 bytes) and not, empty
// and null strings, decimals of each storage width, a column of one value, a column of NULLs.
constexpr const char* kFlatTypesSql =
    "SELECT (i % 120 - 60)::TINYINT AS t, (i - 3000)::SMALLINT AS sm, i::INTEGER AS n, i AS b, (i % 200)::UTINYINT AS ut, "
    "i::USMALLINT AS us, i::UINTEGER AS ui, i::UBIGINT AS ub, i / 3.0::FLOAT AS f, i / 7.0 AS d, "
    "i % 3 = 0 AS flag, CASE WHEN i >= 3000 AND i % 5 = 0 THEN NULL ELSE i END AS late_nulls, "
    "CASE WHEN i % 4 = 0 THEN NULL WHEN i % 4 = 1 THEN '' WHEN i % 4 = 2 THEN 'short' "
    "ELSE repeat('long-', (i % 9)::INTEGER) || i::VARCHAR END AS s, "
    "('b' || i::VARCHAR)::BLOB AS bl, DATE '2020-01-01' + (i % 400)::INTEGER AS day, "
    "TIME '00:00:00' + INTERVAL (i) SECOND AS tm, TIMESTAMP '2020-01-01' + INTERVAL (i) MICROSECOND AS ts, "
    "(TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_MS AS ts_ms, "
    "(TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_NS AS ts_ns, "
    "(TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_S AS ts_s, "
    "TIMESTAMPTZ '2020-01-01 00:00:00+00' + INTERVAL (i) SECOND AS tz, "
    "((i % 1000) * 0.5 - 250)::DECIMAL(4,1) AS d16, (i * 1.5 - 3000)::DECIMAL(9,2) AS d32, "
    "(i * -1.25)::DECIMAL(18,2) AS d64, ((i::HUGEINT - 3000) * 100000000000000000000 - 1)::DECIMAL(38,0) AS d128, "
    "42 AS constant, NULL::INTEGER AS all_null "
    "FROM range(6000) t(i)";

TEST(FlatBatchTest, EveryFlatTypeGivesDuckDbsArrays) {
  int64_t rows = 0;
  ExpectSameAsDuckDb(kFlatTypesSql, 4096, &rows);
  EXPECT_EQ(rows, 6000);
  // Batches of exactly one chunk, and batches over many.
  ExpectSameAsDuckDb(kFlatTypesSql, 2048);
  ExpectSameAsDuckDb(kFlatTypesSql, 100000);
}

// Chunks made by hand in the forms DuckDB's operators hand on: flat chunks of odd sizes (rows
// that start in the middle of a bitmap byte), dictionary vectors (a selection over another
// chunk, rows repeated and skipped, nulls among them) and constant vectors (a NULL one too).
TEST(FlatBatchTest, DictionaryConstantAndOddSizedChunks) {
  Results r;
  r.con.Query("SET threads = 1");
  duckdb::vector<duckdb::LogicalType> types;
  auto base = Chunks(r, kFlatTypesSql, &types);
  ASSERT_EQ(base.size(), 3u);
  duckdb::DataChunk& source = *base[1];  // rows 2048..4095: late_nulls has nulls from row 3000
  auto& allocator = duckdb::Allocator::DefaultAllocator();
  std::vector<duckdb::unique_ptr<duckdb::DataChunk>> made;
  auto sliced = [&](duckdb::idx_t count, duckdb::idx_t step, duckdb::idx_t start, bool flat) {
    duckdb::SelectionVector sel(count);
    for (duckdb::idx_t i = 0; i < count; ++i) sel.set_index(i, (start + i * step) % source.size());
    auto chunk = duckdb::make_uniq<duckdb::DataChunk>();
    chunk->Initialize(allocator, types);
    chunk->Slice(source, sel, count);
    if (flat) chunk->Flatten();
    made.push_back(std::move(chunk));
  };
  auto constant = [&](duckdb::idx_t row, duckdb::idx_t count) {
    auto chunk = duckdb::make_uniq<duckdb::DataChunk>();
    chunk->InitializeEmpty(types);
    for (duckdb::idx_t c = 0; c < types.size(); ++c) chunk->data[c].Reference(source.GetValue(c, row));
    chunk->SetCardinality(count);
    made.push_back(std::move(chunk));
  };
  sliced(13, 7, 940, true);     // flat, 13 rows
  sliced(1001, 1, 950, true);   // flat, starts at bit 13 % 8
  constant(952, 5);             // constant vectors of row 3000: late_nulls and s are NULL
  sliced(700, 3, 900, false);   // dictionary: every third row across the nulls' start
  constant(1, 9);               // constant vectors of row 2049: only all_null is NULL
  sliced(35, 0, 1000, false);   // dictionary: one row repeated
  sliced(2048, 5, 3, false);    // dictionary of a whole chunk, rows repeated
  sliced(35, 1, 2000, true);
  std::vector<duckdb::DataChunk*> chunks;
  for (auto& chunk : made) chunks.push_back(chunk.get());
  // In one batch, and in batches that split the sequence differently.
  ExpectSameArrays(r, types, chunks, 10000);
  ExpectSameArrays(r, types, chunks, 2100);
  ExpectSameArrays(r, types, chunks, 3100);
}

// Strings of ~1 KB each grow a batch's run of bytes many times (mremap), keeping what was
// written; a filter's selection over them.
TEST(FlatBatchTest, GrowsStringBytes) {
  ExpectSameAsDuckDb("SELECT repeat('y', 1000 + (i % 50)::INTEGER) || i::VARCHAR AS wide, "
                     "CASE WHEN i % 3 = 0 THEN NULL ELSE 'v' || i::VARCHAR END AS maybe FROM range(8000) t(i) "
                     "WHERE i % 7 <> 1",
                     100000);
}

TEST(FlatBatchTest, LayoutRefusesWhatIsNotFlat) {
  Results r;
  auto properties = r.con.context->GetClientProperties();
  for (const char* sql : {"SELECT [1, 2] AS l", "SELECT {'a': 1} AS s", "SELECT INTERVAL 1 DAY AS i",
                          "SELECT 1::HUGEINT AS h", "SELECT gen_random_uuid() AS u", "SELECT 1 AS a, [1] AS l",
                          "SELECT 'a'::ENUM('a', 'b') AS e"}) {
    auto result = r.con.Query(sql);
    ASSERT_FALSE(result->HasError()) << result->GetError();
    EXPECT_EQ(FlatBatchLayout::For(result->types, properties), nullptr) << sql;
  }
  auto flat = r.con.Query("SELECT 1 AS a, 'x' AS b");
  EXPECT_NE(FlatBatchLayout::For(flat->types, properties), nullptr);
}

// A batch's children may be moved out and released after their parent (the C data interface's
// move), and its pages go back to the pool only when the last of them is released.
TEST(FlatBatchTest, ChildrenOutliveTheirParent) {
  Results r;
  duckdb::vector<duckdb::LogicalType> types;
  auto chunks = Chunks(r, "SELECT i, i::VARCHAR AS s FROM range(100) t(i)", &types);
  auto layout = FlatBatchLayout::For(types, r.con.context->GetClientProperties());
  ASSERT_NE(layout, nullptr);
  auto pool = PagePool::Make();
  FlatBatchBuilder builder(layout, pool, 1000);
  ASSERT_TRUE(builder.Append(*chunks[0]).ok());
  auto batch = builder.Finish();
  ASSERT_TRUE(batch.ok());
  ArrowArray moved = *(*batch)->children[1];
  (*batch)->children[1]->release = nullptr;
  batch->Reset();
  EXPECT_EQ(pool->stats().kept_bytes, 0u);  // the string child still holds the pages
  ASSERT_EQ(moved.length, 100);
  EXPECT_EQ(Value(moved, "u", 42), "42");
  moved.release(&moved);
  EXPECT_GT(pool->stats().kept_bytes, 0u);
  EXPECT_FALSE(builder.Finish().ok());  // nothing appended since
}

TEST(PagePoolTest, ReusesReleasedRunsWithinItsBounds) {
  constexpr size_t kMiB = size_t{1} << 20;
  auto pool = PagePool::Make(4 * kMiB, 60'000);
  {
    auto a = pool->Acquire(1000);
    ASSERT_TRUE(a.ok());
    EXPECT_GE(a->size(), 1000u);
    std::memset(a->data(), 7, a->size());
  }
  EXPECT_EQ(pool->stats().kept_bytes, size_t{64} << 10);
  auto b = pool->Acquire(30000);  // the kept run holds it
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(pool->stats().reused, 1u);
  EXPECT_EQ(pool->stats().kept_bytes, 0u);

  // Growing keeps the contents.
  auto c = pool->Acquire(kMiB);
  ASSERT_TRUE(c.ok());
  std::memset(c->data(), 9, c->size());
  ASSERT_TRUE(c->Grow(3 * kMiB).ok());
  EXPECT_GE(c->size(), 3 * kMiB);
  EXPECT_EQ(c->data()[kMiB - 1], 9);
  std::memset(c->data(), 1, c->size());
  *c = PageRun();
  EXPECT_EQ(pool->stats().kept_bytes, 3 * kMiB);

  // A run larger than the bound is not kept.
  auto d = pool->Acquire(8 * kMiB);
  ASSERT_TRUE(d.ok());
  *d = PageRun();
  EXPECT_EQ(pool->stats().kept_bytes, 3 * kMiB);
  EXPECT_EQ(pool->stats().mapped, 3u);

  // A kept run at most twice the request serves it; a larger one does not.
  auto small = pool->Acquire(100 << 10);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(pool->stats().mapped, 4u);
  auto e = pool->Acquire(2 * kMiB);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(pool->stats().reused, 2u);
  auto f = pool->Acquire(3 * kMiB);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(pool->stats().mapped, 5u);

  // Past the bound, the run released longest ago goes.
  *e = PageRun();
  *f = PageRun();
  EXPECT_EQ(pool->stats().kept_bytes, 3 * kMiB);

  // Runs outlive the last handle on their pool.
  pool.reset();
  small->data()[0] = 1;
  *small = PageRun();
  *b = PageRun();
}

// The pool's own thread unmaps runs idle for too long, with no further use of the pool.
TEST(PagePoolTest, RunsIdleTooLongAreUnmapped) {
  auto pool = PagePool::Make(size_t{64} << 20, 20);
  {
    auto a = pool->Acquire(100);
    ASSERT_TRUE(a.ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool->stats().kept_bytes > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(pool->stats().kept_bytes, 0u);
  auto b = pool->Acquire(100);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(pool->stats().reused, 0u);
  EXPECT_EQ(pool->stats().mapped, 2u);
  // Released again: the thread starts again, and the pool goes while it runs.
  *b = PageRun();
  pool.reset();
}

}  // namespace
}  // namespace skade::engine
