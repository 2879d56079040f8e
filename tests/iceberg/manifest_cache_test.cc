// ManifestCache: planning through it gives the same tasks as reading the files, on every
// snapshot of every fixture table; a warm plan reads no file; entries are told apart by where
// they are read (relocated copies of one table do not collide); the bound evicts least
// recently used first; errors are not kept.
#include "skade/iceberg/manifest_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "skade/iceberg/relocation.h"
#include "skade/iceberg/scan.h"
#include "skade/io/delegating_file_io.h"
#include "skade/io/location_map.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

namespace fs = std::filesystem;

// Counts whole-file reads (manifest lists and manifests are read whole).
class CountingFileIO final : public io::DelegatingFileIO {
 public:
  explicit CountingFileIO(io::FileIO& base) : base_(base) {}
  int reads() const { return reads_; }
  Result<std::string> Read(std::string_view l) override {
    ++reads_;
    return base_.Read(l);
  }
  Result<std::string> ReadRange(std::string_view l, int64_t o, int64_t n) override {
    ++reads_;
    return base_.ReadRange(l, o, n);
  }

 private:
  Result<Target> Route(std::string_view l) override { return Target{&base_, std::string(l), nullptr}; }

  io::FileIO& base_;
  std::atomic<int> reads_{0};
};

// A task as text: file, sequence number, records, kept metrics and its deletes.
std::string Describe(const FileScanTask& t) {
  const DataFile& f = t.file;
  std::string s = f.file_path + " seq=" + std::to_string(t.sequence_number) +
                  " rows=" + std::to_string(f.record_count) +
                  " size=" + std::to_string(f.file_size_in_bytes) +
                  " spec=" + std::to_string(f.spec_id) +
                  " format=" + std::string(FileFormatName(f.file_format)) +
                  " first_row_id=" + (f.first_row_id ? std::to_string(*f.first_row_id) : "-") +
                  " sort=" + (f.sort_order_id ? std::to_string(*f.sort_order_id) : "-") +
                  " key=" + f.key_metadata.value_or("-") + " counts=" +
                  std::to_string(f.value_counts.size() + f.null_value_counts.size() +
                                 f.column_sizes.size() + f.nan_value_counts.size());
  for (const auto& p : f.partition) s += " p=" + (p ? p->ToString() : std::string("null"));
  for (const auto& [id, b] : f.lower_bounds) s += " lo" + std::to_string(id) + "=" + b;
  for (const auto& [id, b] : f.upper_bounds) s += " hi" + std::to_string(id) + "=" + b;
  std::vector<std::string> deletes;
  for (const auto& d : t.deletes) {
    std::string eq;
    for (int id : d->file.equality_ids) eq += "," + std::to_string(id);
    deletes.push_back(d->file.file_path + "@" + std::to_string(d->sequence_number) + " eq" + eq +
                      " ref=" + d->file.referenced_data_file.value_or("-") +
                      " dv=" + std::to_string(d->file.content_offset.value_or(-1)) + "/" +
                      std::to_string(d->file.content_size_in_bytes.value_or(-1)));
  }
  std::sort(deletes.begin(), deletes.end());
  for (const auto& d : deletes) s += " del=" + d;
  return s;
}

Result<std::vector<std::string>> Plan(io::FileIO& io, const TableMetadata& m, const Snapshot& s,
                                      ManifestCache* cache, std::set<int> kept = {}) {
  ScanPlanner planner(io, m);
  planner.set_cache(cache);
  planner.set_kept_stats(std::move(kept));
  SKADE_ASSIGN_OR_RETURN(auto tasks, planner.PlanAll(s, *m.SchemaForSnapshot(s), nullptr));
  std::vector<std::string> out;
  for (const auto& t : tasks) out.push_back(Describe(t));
  return out;
}

struct Table {
  std::string metadata_file;
  TableMetadata metadata;
  std::unique_ptr<io::FileIO> io;
};

std::vector<Table> FixtureTables(io::FileIO& local) {
  std::vector<Table> out;
  for (const auto& e : fs::recursive_directory_iterator(testing::FixturePath("iceberg"))) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".metadata.json")) continue;
    auto m = ParseTableMetadata(testing::ReadFileOrDie(e.path().string()));
    if (!m.ok()) continue;
    Table t;
    t.metadata_file = e.path().string();
    Relocation r = DetectRelocation(*m, TableDirOfMetadataFile(t.metadata_file));
    t.metadata = std::move(m).value();
    t.io = io::MakeRelocatingFileIO(local, r.map);
    out.push_back(std::move(t));
  }
  return out;
}

TEST(ManifestCacheTest, PlansLikeTheFilesOnEverySnapshotOfEveryFixture) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto local = io::MakeLocalFileIO();
  ManifestCache cache(int64_t{64} << 20);
  int snapshots = 0;
  for (const Table& t : FixtureTables(*local)) {
    for (const Snapshot& s : t.metadata.snapshots) {
      auto direct = Plan(*t.io, t.metadata, s, nullptr, {1});
      if (!direct.ok()) continue;  // a snapshot whose files the fixture does not carry
      SCOPED_TRACE(t.metadata_file + " snapshot " + std::to_string(s.snapshot_id));
      auto cold = Plan(*t.io, t.metadata, s, &cache, {1});
      ASSERT_TRUE(cold.ok()) << cold.status().ToString();
      EXPECT_EQ(*cold, *direct);
      CountingFileIO counting(*t.io);
      auto warm = Plan(counting, t.metadata, s, &cache, {1});
      ASSERT_TRUE(warm.ok()) << warm.status().ToString();
      EXPECT_EQ(*warm, *direct);
      EXPECT_EQ(counting.reads(), 0) << "a warm plan read a file";
      ++snapshots;
    }
  }
  EXPECT_GE(snapshots, 20);
  EXPECT_GT(cache.stats().hits, 0);
  EXPECT_GT(cache.stats().bytes, 0);
}

TEST(ManifestCacheTest, RelocatedCopiesOfOneTableAreKeptApart) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  // Two copies of one table record the same paths and are read from two folders. In copy b the
  // current snapshot's list file holds an older snapshot's list, so the two plans differ.
  testing::TempDir tmp;
  const std::string src = testing::FixturePath("iceberg/equality_deletes_mytable");
  for (const char* copy : {"a", "b"}) fs::copy(src, tmp.Path(copy), fs::copy_options::recursive);
  auto local = io::MakeLocalFileIO();
  auto m = ParseTableMetadata(testing::ReadFileOrDie(tmp.Path("a/metadata/v7.metadata.json")));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Snapshot* current = m->CurrentSnapshot();
  ASSERT_NE(current, nullptr);
  Relocation ra = DetectRelocation(*m, tmp.Path("a"));
  Relocation rb = DetectRelocation(*m, tmp.Path("b"));
  auto io_a = io::MakeRelocatingFileIO(*local, ra.map);
  auto io_b = io::MakeRelocatingFileIO(*local, rb.map);
  ASSERT_NE(io_a->ResolvedLocation(current->manifest_list),
            io_b->ResolvedLocation(current->manifest_list));
  auto current_plan = Plan(*io_b, *m, *current, nullptr);
  ASSERT_TRUE(current_plan.ok()) << current_plan.status().ToString();
  const Snapshot* older = nullptr;
  for (const Snapshot& s : m->snapshots) {
    auto p = Plan(*io_b, *m, s, nullptr);
    if (p.ok() && *p != *current_plan) older = &s;
  }
  ASSERT_NE(older, nullptr) << "the fixture has an older snapshot that plans differently";
  fs::copy_file(io_b->ResolvedLocation(older->manifest_list),
                io_b->ResolvedLocation(current->manifest_list),
                fs::copy_options::overwrite_existing);

  ManifestCache cache(int64_t{64} << 20);
  auto a = Plan(*io_a, *m, *current, &cache);
  auto b = Plan(*io_b, *m, *current, &cache);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*a, *current_plan);
  auto b_direct = Plan(*io_b, *m, *current, nullptr);
  ASSERT_TRUE(b_direct.ok());
  EXPECT_EQ(*b, *b_direct);
  EXPECT_NE(*a, *b) << "copy b was answered from copy a's entries";
}

TEST(ManifestCacheTest, EvictsLeastRecentlyUsedWithinItsBoundAndKeepsNoErrors) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto local = io::MakeLocalFileIO();
  std::vector<Table> tables = FixtureTables(*local);
  ASSERT_FALSE(tables.empty());
  // Room for about one table's manifests.
  ManifestCache sizing(int64_t{1} << 30);
  const Table& t = tables.front();
  const Snapshot* s = t.metadata.CurrentSnapshot();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Plan(*t.io, t.metadata, *s, &sizing).ok());
  const int64_t one_table = sizing.stats().bytes;
  ASSERT_GT(one_table, 0);

  ManifestCache cache(one_table + one_table / 2);
  for (const Table& other : tables) {
    if (const Snapshot* cur = other.metadata.CurrentSnapshot())
      (void)Plan(*other.io, other.metadata, *cur, &cache);
    EXPECT_LE(cache.stats().bytes, one_table + one_table / 2);
  }
  // The first table was pushed out by the others: planning it again reads files.
  CountingFileIO counting(*t.io);
  ASSERT_TRUE(Plan(counting, t.metadata, *s, &cache).ok());
  EXPECT_GT(counting.reads(), 0);
  // Now it is the most recent: warm.
  CountingFileIO again(*t.io);
  ASSERT_TRUE(Plan(again, t.metadata, *s, &cache).ok());
  EXPECT_EQ(again.reads(), 0);

  // A missing manifest list is an error each time it is asked for (nothing kept).
  const int64_t misses = cache.stats().misses;
  EXPECT_FALSE(cache.ManifestList(*local, "/nonexistent/snap-1.avro").ok());
  EXPECT_FALSE(cache.ManifestList(*local, "/nonexistent/snap-1.avro").ok());
  EXPECT_EQ(cache.stats().misses, misses + 2);
}

// A cache of 0 bytes is none: the planner reads the files itself (streaming, nothing decoded
// kept) and plans what it plans without a cache.
TEST(ManifestCacheTest, AZeroByteCacheIsNone) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  auto local = io::MakeLocalFileIO();
  std::vector<Table> tables = FixtureTables(*local);
  ASSERT_FALSE(tables.empty());
  ManifestCache none(0);
  for (const Table& t : tables) {
    const Snapshot* s = t.metadata.CurrentSnapshot();
    if (s == nullptr) continue;
    auto direct = Plan(*t.io, t.metadata, *s, nullptr);
    if (!direct.ok()) continue;
    auto through = Plan(*t.io, t.metadata, *s, &none);
    ASSERT_TRUE(through.ok()) << through.status().ToString();
    EXPECT_EQ(*through, *direct) << t.metadata_file;
    CountingFileIO counting(*t.io);
    ASSERT_TRUE(Plan(counting, t.metadata, *s, &none).ok());
    EXPECT_GT(counting.reads(), 0) << "planned again without reading: " << t.metadata_file;
  }
  EXPECT_EQ(none.stats().hits + none.stats().misses, 0) << "the planner asked a cache of 0 bytes";
}

}  // namespace
}  // namespace skade::iceberg
