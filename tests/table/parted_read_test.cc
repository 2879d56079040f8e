// A read planned while it is read (table/parted_read.h): the parts together are the table's
// rows, a reader that stops after the first part has read only a few manifests, a manifest the
// first parts do not need cannot fail them, and a reader gone mid-plan stops the planner.
#include "skade/table/parted_read.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "skade/io/delegating_file_io.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

// Counts the manifests (Avro files) read through it.
class ManifestCountingIO final : public io::DelegatingFileIO {
 public:
  explicit ManifestCountingIO(io::FileIO& base) : base_(base) {}
  int manifests_read() const { return reads_; }
  Result<std::string> Read(std::string_view l) override {
    Count(l);
    return base_.Read(l);
  }
  Result<std::string> ReadRange(std::string_view l, int64_t o, int64_t n) override {
    Count(l);
    return base_.ReadRange(l, o, n);
  }

 private:
  void Count(std::string_view l) {
    if (l.ends_with(".avro") && l.find("snap-") == std::string_view::npos) ++reads_;
  }
  Result<Target> Route(std::string_view l) override { return Target{&base_, std::string(l), nullptr}; }

  io::FileIO& base_;
  std::atomic<int> reads_{0};
};

class PartedReadTest : public testing::LakeTest {
 protected:
  PartedReadTest() : LakeTest("p") {}

  static constexpr int kFiles = 60;

  // A table of kFiles data files of one row each (id 0 … kFiles-1), each in a manifest of its
  // own (one append each, manifests never merged).
  void MakeTable() {
    auto t = CreateTable("t", "id BIGINT, name VARCHAR", "", {{"commit.manifest-merge.enabled", "false"}});
    ASSERT_NE(t, nullptr);
    for (int i = 0; i < kFiles; ++i) {
      auto r = t->Append({"SELECT " + std::to_string(i) + "::BIGINT AS id, 'n" + std::to_string(i) + "' AS name",
                          nullptr});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }

  // The rows of one part's SQL, as "id,name".
  std::vector<std::string> Rows(const std::string& sql) {
    std::vector<std::string> out;
    for (const auto& row : testing::QueryText(*db_, "SELECT id, name FROM (" + sql + ") ORDER BY id")) {
      out.push_back(row[0] + "," + row[1]);
    }
    return out;
  }

  // The manifest files of the table's current snapshot, in manifest-list order.
  std::vector<std::string> Manifests(const Table& t) {
    iceberg::ScanPlanner planner(*io_, t.metadata());
    auto manifests = planner.LoadManifests(*t.metadata().CurrentSnapshot());
    EXPECT_TRUE(manifests.ok()) << manifests.status().ToString();
    std::vector<std::string> out;
    if (manifests.ok()) {
      for (const auto& m : *manifests) out.push_back(m.manifest_path);
    }
    return out;
  }
};

TEST_F(PartedReadTest, ThePartsTogetherAreTheTablesRowsInGrowingParts) {
  MakeTable();
  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  auto read = t->ReadInParts({});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  std::multiset<std::string> seen;
  std::vector<size_t> sizes;
  for (;;) {
    auto next = (*read)->Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!*next) break;
    auto rows = Rows(**next);
    sizes.push_back(rows.size());
    seen.insert(rows.begin(), rows.end());
  }
  // 8 files, then 32, then the 20 left (one row per file).
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 32, 20}));
  std::multiset<std::string> expected;
  for (int i = 0; i < kFiles; ++i) expected.insert(std::to_string(i) + ",n" + std::to_string(i));
  EXPECT_EQ(seen, expected);
  EXPECT_EQ((*read)->files_planned(), kFiles);
  // After the end, still the end.
  auto after = (*read)->Next();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

TEST_F(PartedReadTest, AReaderOfTheFirstPartReadsOnlyTheManifestsOfTheNext) {
  MakeTable();
  ManifestCountingIO counting(*io_);
  auto t = table::Table::Load(*catalog_, counting, *db_, Ident("t"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  {
    auto read = (*t)->ReadInParts({});
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    auto first = (*read)->Next();
    ASSERT_TRUE(first.ok() && first->has_value()) << first.status().ToString();
    EXPECT_EQ(Rows(**first).size(), 8u);
    // The planner goes on with the next part (32 files), then waits for the reader.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((*read)->files_planned() < 40 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ((*read)->files_planned(), 40);
    // 40 manifests for two parts, and a few that the planner's readers fetched ahead.
    EXPECT_GE(counting.manifests_read(), 40);
    EXPECT_LE(counting.manifests_read(), 40 + 6);
  }  // the reader goes: the planner stops
  const int after_stop = counting.manifests_read();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(counting.manifests_read(), after_stop);
  EXPECT_LT(after_stop, kFiles);

  // A whole read reads every manifest.
  ManifestCountingIO whole(*io_);
  auto t2 = table::Table::Load(*catalog_, whole, *db_, Ident("t"));
  ASSERT_TRUE(t2.ok());
  auto read = (*t2)->ReadInParts({});
  ASSERT_TRUE(read.ok());
  for (;;) {
    auto next = (*read)->Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!*next) break;
  }
  EXPECT_EQ(whole.manifests_read(), kFiles);
}

TEST_F(PartedReadTest, AMissingManifestFailsOnlyThePartThatNeedsIt) {
  MakeTable();
  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  const std::vector<std::string> manifests = Manifests(*t);
  ASSERT_EQ(manifests.size(), static_cast<size_t>(kFiles));
  // The last manifest in list order holds a file of the third part.
  const std::string missing = manifests.back();
  ASSERT_TRUE(std::filesystem::remove(io::LocalPath(missing)));

  auto read = t->ReadInParts({});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  size_t rows = 0;
  Status failed;
  for (;;) {
    auto next = (*read)->Next();
    if (!next.ok()) {
      failed = next.status();
      break;
    }
    ASSERT_TRUE(next->has_value()) << "the read ended without the missing manifest's error";
    rows += Rows(**next).size();
  }
  EXPECT_EQ(rows, 40u);  // the first two parts came whole
  EXPECT_NE(failed.ToString().find(std::filesystem::path(missing).filename().string()), std::string::npos)
      << failed.ToString();
  // The whole plan fails on the same manifest.
  auto whole = t->ReadSql({});
  EXPECT_FALSE(whole.ok());
}

TEST_F(PartedReadTest, AFilterAndColumnsAreAppliedInEachPart) {
  MakeTable();
  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  table::ReadOptions options;
  options.columns = {"name"};
  auto where = engine::Predicate::Parse("id >= 50");
  ASSERT_TRUE(where.ok());
  options.where = *where;
  auto read = t->ReadInParts(options);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  std::vector<std::string> names;
  for (;;) {
    auto next = (*read)->Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!*next) break;
    for (const auto& row : testing::QueryText(*db_, "SELECT * FROM (" + **next + ")")) {
      ASSERT_EQ(row.size(), 1u);
      names.push_back(row[0]);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected;
  for (int i = 50; i < kFiles; ++i) expected.push_back("n" + std::to_string(i));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
}

// Rows and the sum of the first (BIGINT) column of a stream; the stream's error as a failure.
struct Drained {
  int64_t rows = 0;
  int64_t sum = 0;
  std::string schema;  // formats of the columns
};
Drained Drain(arrow::StreamHandle& stream) {
  Drained d;
  arrow::SchemaHandle schema;
  EXPECT_EQ(stream->get_schema(stream.get(), schema.get()), 0);
  for (int64_t i = 0; i < schema->n_children; ++i) d.schema += std::string(schema->children[i]->format) + ";";
  for (;;) {
    arrow::ArrayHandle batch;
    const int rc = stream->get_next(stream.get(), batch.get());
    EXPECT_EQ(rc, 0) << (stream->get_last_error(stream.get()) ? stream->get_last_error(stream.get()) : "");
    if (rc != 0 || !batch.valid()) break;
    d.rows += batch->length;
    const ArrowArray& ids = *batch->children[0];
    const auto* values = static_cast<const int64_t*>(ids.buffers[1]);
    for (int64_t i = 0; i < ids.length; ++i) d.sum += values[ids.offset + i];
  }
  return d;
}

TEST_F(PartedReadTest, AStreamOfThePartsGivesEveryRowOrTheLimit) {
  MakeTable();
  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  {
    auto read = t->ReadInParts({});
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    auto stream = PartedRead::Stream(std::move(*read), std::nullopt);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    Drained d = Drain(*stream);
    EXPECT_EQ(d.rows, kFiles);
    EXPECT_EQ(d.sum, kFiles * (kFiles - 1) / 2);
    EXPECT_EQ(d.schema, "l;u;");
  }
  // Limits inside the first part, at its end, past it and of no row.
  ManifestCountingIO counting(*io_);
  auto counted = table::Table::Load(*catalog_, counting, *db_, Ident("t"));
  ASSERT_TRUE(counted.ok());
  for (int64_t limit : {0, 5, 8, 9, 45}) {
    SCOPED_TRACE(limit);
    auto read = (*counted)->ReadInParts({});
    ASSERT_TRUE(read.ok());
    auto stream = PartedRead::Stream(std::move(*read), limit);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    EXPECT_EQ(Drain(*stream).rows, limit);
  }
  // No file matches: the typed empty result.
  table::ReadOptions none;
  none.where = *engine::Predicate::Parse("id > 1000");
  auto read = t->ReadInParts(none);
  ASSERT_TRUE(read.ok());
  auto stream = PartedRead::Stream(std::move(*read), std::nullopt);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Drained d = Drain(*stream);
  EXPECT_EQ(d.rows, 0);
  EXPECT_EQ(d.schema, "l;u;");
}

TEST_F(PartedReadTest, AStreamNamesTheMissingManifestOfALaterPart) {
  MakeTable();
  auto t = LoadTable(Ident("t"));
  ASSERT_NE(t, nullptr);
  const std::string missing = Manifests(*t).back();
  ASSERT_TRUE(std::filesystem::remove(io::LocalPath(missing)));
  // A limit the first part satisfies does not need it.
  {
    auto read = t->ReadInParts({});
    ASSERT_TRUE(read.ok());
    auto stream = PartedRead::Stream(std::move(*read), 10);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    EXPECT_EQ(Drain(*stream).rows, 10);
  }
  auto read = t->ReadInParts({});
  ASSERT_TRUE(read.ok());
  auto stream = PartedRead::Stream(std::move(*read), std::nullopt);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  int rc = 0;
  int64_t rows = 0;
  for (;;) {
    arrow::ArrayHandle batch;
    rc = (*stream)->get_next(stream->get(), batch.get());
    if (rc != 0 || !batch.valid()) break;
    rows += batch->length;
  }
  EXPECT_NE(rc, 0);
  EXPECT_EQ(rows, 40);
  const char* error = (*stream)->get_last_error(stream->get());
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find(std::filesystem::path(missing).filename().string()), std::string::npos) << error;
}

TEST_F(PartedReadTest, ACountInPartsAppliesDeletesAndTheFilter) {
  // 12 files of 10 rows (ids 0 … 119); deletes as position delete files.
  auto t = CreateTable("d", "id BIGINT", "",
                       {{"commit.manifest-merge.enabled", "false"}, {"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 12; ++i) {
    auto r = t->Append({"SELECT range + " + std::to_string(i * 10) + " AS id FROM range(10)", nullptr});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  auto deleted = t->DeleteWhere(*engine::Predicate::Parse("id % 7 = 0"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  table::ReadOptions parted;
  parted.parted_read_files = 0;
  ASSERT_TRUE(*t->ReadsInParts(parted));
  // Delete files: the manifests' counts no longer answer, rows are counted.
  EXPECT_FALSE(t->CountFromManifests(parted)->has_value());
  table::ReadOptions whole;
  ASSERT_FALSE(*t->ReadsInParts(whole));
  const int64_t kept = 120 - 18;  // ids 0, 7, … 119 deleted
  EXPECT_EQ(*t->Count(whole), kept);
  auto counted = t->Count(parted);
  ASSERT_TRUE(counted.ok()) << counted.status().ToString();
  EXPECT_EQ(*counted, kept);
  parted.where = *engine::Predicate::Parse("id >= 60");
  whole.where = parted.where;
  EXPECT_EQ(*t->Count(whole), 60 - 9);  // 63, 70, … 119
  EXPECT_EQ(*t->Count(parted), 60 - 9);
}

TEST_F(PartedReadTest, ATableWithoutSnapshotsHasNoPart) {
  auto t = CreateTable("empty", "id BIGINT");
  ASSERT_NE(t, nullptr);
  auto read = t->ReadInParts({});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto next = (*read)->Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

}  // namespace
}  // namespace skade::table
