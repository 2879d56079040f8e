#include "skade/iceberg/manifest_merge.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "skade/io/file_io.h"
#include "tests/testing/temp_dir.h"

namespace skade::iceberg {
namespace {

using Plan = std::vector<std::vector<size_t>>;

ManifestFile Manifest(int64_t length, int spec_id = 0,
                      ManifestContent content = ManifestContent::kData) {
  ManifestFile m;
  m.manifest_path = "m" + std::to_string(length);
  m.manifest_length = length;
  m.partition_spec_id = spec_id;
  m.content = content;
  return m;
}

ManifestMergePolicy Policy(int min_count, int64_t target) {
  ManifestMergePolicy p;
  p.min_count_to_merge = min_count;
  p.target_size_bytes = target;
  return p;
}

TEST(ManifestMergePolicyTest, ReadsTablePropertiesAndKeepsDefaultsForMalformedValues) {
  ManifestMergePolicy d = ManifestMergePolicy::FromProperties({});
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.min_count_to_merge, 100);
  EXPECT_EQ(d.target_size_bytes, 8 << 20);
  ManifestMergePolicy p =
      ManifestMergePolicy::FromProperties({{"commit.manifest-merge.enabled", "FALSE"},
                                           {"commit.manifest.min-count-to-merge", "7"},
                                           {"commit.manifest.target-size-bytes", "4096"}});
  EXPECT_FALSE(p.enabled);
  EXPECT_EQ(p.min_count_to_merge, 7);
  EXPECT_EQ(p.target_size_bytes, 4096);
  ManifestMergePolicy bad =
      ManifestMergePolicy::FromProperties({{"commit.manifest-merge.enabled", "sometimes"},
                                           {"commit.manifest.min-count-to-merge", "7x"},
                                           {"commit.manifest.target-size-bytes", "0"}});
  EXPECT_TRUE(bad.enabled);
  EXPECT_EQ(bad.min_count_to_merge, 100);
  EXPECT_EQ(bad.target_size_bytes, 8 << 20);
}

TEST(ManifestMergePlanTest, TheNewestBinWaitsForTheMinimumCount) {
  std::vector<ManifestFile> list;
  for (int i = 0; i < 4; ++i) list.push_back(Manifest(10 + i));
  EXPECT_EQ(PlanManifestMerge(list, Policy(5, 1 << 20)), (Plan{{0}, {1}, {2}, {3}}));
  list.push_back(Manifest(20));
  EXPECT_EQ(PlanManifestMerge(list, Policy(5, 1 << 20)), (Plan{{0, 1, 2, 3, 4}}));
}

TEST(ManifestMergePlanTest, PacksFromTheEndSoTheNewestBinIsTheUnderfilledOne) {
  // From the end: {50, 50} fills 100; 50 opens a bin the new 10 joins.
  std::vector<ManifestFile> list = {Manifest(10), Manifest(51), Manifest(52), Manifest(48)};
  EXPECT_EQ(PlanManifestMerge(list, Policy(100, 100)), (Plan{{0}, {1}, {2, 3}}));
  // With a low minimum the newest bin merges too.
  EXPECT_EQ(PlanManifestMerge(list, Policy(2, 100)), (Plan{{0, 1}, {2, 3}}));
}

TEST(ManifestMergePlanTest, AManifestLargerThanTheTargetStaysAlone) {
  std::vector<ManifestFile> list = {Manifest(10), Manifest(500), Manifest(20), Manifest(30)};
  EXPECT_EQ(PlanManifestMerge(list, Policy(1, 100)), (Plan{{0}, {1}, {2, 3}}));
}

TEST(ManifestMergePlanTest, GroupsBySpecNewestFirstAndPutsDeletesAfterData) {
  std::vector<ManifestFile> list = {Manifest(1, 0, ManifestContent::kDeletes),
                                    Manifest(2, 0),
                                    Manifest(3, 1),
                                    Manifest(4, 0),
                                    Manifest(5, 1),
                                    Manifest(6, 0, ManifestContent::kDeletes),
                                    Manifest(7, 0, ManifestContent::kDeletes)};
  // Disabled: untouched.
  ManifestMergePolicy off = Policy(1, 1000);
  off.enabled = false;
  EXPECT_EQ(PlanManifestMerge(list, off), (Plan{{0}, {1}, {2}, {3}, {4}, {5}, {6}}));
  // The first data manifest is index 1 (spec 0): its bin of two waits for a third; spec 1
  // has no first manifest and merges; the delete group holds its own first (index 0).
  EXPECT_EQ(PlanManifestMerge(list, Policy(3, 1000)), (Plan{{2, 4}, {1}, {3}, {0, 5, 6}}));
}

// Merging real manifests: statuses, sequence numbers and row ids.
class ManifestMergeTest : public ::testing::Test {
 protected:
  static SchemaPtr TestSchema() {
    NestedField id;
    id.id = 1;
    id.name = "id";
    id.type = Type::Primitive(TypeId::kLong);
    id.required = true;
    return std::make_shared<Schema>(0, std::vector<NestedField>{id});
  }
  static PartitionSpecPtr Unpartitioned() {
    return std::make_shared<PartitionSpec>(0, std::vector<PartitionField>{});
  }

  static ManifestEntry Entry(const std::string& name, ManifestEntryStatus status, int64_t snapshot,
                             int64_t sequence, std::optional<int64_t> first_row_id = std::nullopt) {
    ManifestEntry e;
    e.status = status;
    e.snapshot_id = snapshot;
    if (status != ManifestEntryStatus::kAdded) {
      e.sequence_number = sequence;
      e.file_sequence_number = sequence;
    }
    e.data_file.file_path = "/t/data/" + name + ".parquet";
    e.data_file.record_count = 10;
    e.data_file.file_size_in_bytes = 100;
    e.data_file.first_row_id = first_row_id;
    return e;
  }

  // Writes a manifest of `entries` added by `snapshot`; `sequence` < 0 leaves it unassigned.
  ManifestFile Write(const std::string& name, int64_t snapshot, int64_t sequence,
                     const std::vector<ManifestEntry>& entries, int format = 2) {
    ManifestWriterOptions o;
    o.format_version = format;
    o.snapshot_id = snapshot;
    auto w = ManifestWriter::Create(TestSchema(), Unpartitioned(), o);
    EXPECT_TRUE(w.ok());
    for (const ManifestEntry& e : entries) EXPECT_TRUE((*w)->Add(e).ok());
    auto out = (*w)->Finish(dir_.Path(name));
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(io_->CreateUnpublished(out->manifest.manifest_path, out->bytes).ok());
    ManifestFile m = out->manifest;
    if (sequence >= 0) {
      m.sequence_number = sequence;
      m.min_sequence_number = sequence;
    }
    return m;
  }

  MergedManifestSink Sink(int format, int64_t snapshot) {
    MergedManifestSink sink;
    sink.open = [=](int, ManifestContent content) {
      ManifestWriterOptions o;
      o.format_version = format;
      o.snapshot_id = snapshot;
      o.content = content;
      return ManifestWriter::Create(TestSchema(), Unpartitioned(), o);
    };
    sink.finish = [this](ManifestWriter& w) -> Result<ManifestFile> {
      SKADE_ASSIGN_OR_RETURN(auto out,
                             w.Finish(dir_.Path("merged-" + std::to_string(merged_++) + ".avro")));
      SKADE_RETURN_IF_ERROR(io_->CreateUnpublished(out.manifest.manifest_path, out.bytes));
      return out.manifest;
    };
    return sink;
  }

  std::vector<ManifestEntry> Read(const ManifestFile& m) {
    auto r = ManifestReader::Open(*io_, m.manifest_path, m);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<ManifestEntry> out;
    while (r.ok()) {
      auto next = (*r)->Next();
      EXPECT_TRUE(next.ok());
      if (!next.ok() || !*next) break;
      out.push_back(std::move(**next));
    }
    return out;
  }

  skade::testing::TempDir dir_;
  std::unique_ptr<io::FileIO> io_ = io::MakeLocalFileIO();
  int merged_ = 0;
};

TEST_F(ManifestMergeTest, KeepsLiveFilesWithTheirSequenceNumbersAndDropsOldDeletes) {
  constexpr int64_t kNow = 40;
  std::vector<ManifestFile> list;
  // This snapshot's own manifest: a new file (sequence number unassigned until the list).
  list.push_back(Write("new.avro", kNow, -1, {Entry("new", ManifestEntryStatus::kAdded, kNow, 0)}));
  // Older ones: an ADDED file of snapshot 10 (sequence 1), a rewritten manifest of snapshot 20
  // (sequence 2) holding an EXISTING file and a file it deleted, and one this snapshot rewrote to
  // delete a file.
  list.push_back(Write("s10.avro", 10, 1, {Entry("a", ManifestEntryStatus::kAdded, 10, 0)}));
  list.push_back(Write("s20.avro", 20, 2,
                       {Entry("b", ManifestEntryStatus::kExisting, 15, 1),
                        Entry("c", ManifestEntryStatus::kDeleted, 20, 1)}));
  list.push_back(Write("s40.avro", kNow, -1,
                       {Entry("d", ManifestEntryStatus::kDeleted, kNow, 1),
                        Entry("e", ManifestEntryStatus::kExisting, 12, 1)}));

  auto merged = MergeManifests(*io_, list, kNow, Policy(2, 1 << 20), Sink(2, kNow));
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_EQ(merged->size(), 1u);
  ManifestFile m = merged->at(0);
  EXPECT_EQ(m.added_snapshot_id, kNow);
  EXPECT_EQ(m.added_files_count, 1);
  EXPECT_EQ(m.existing_files_count, 3);
  EXPECT_EQ(m.deleted_files_count, 1);
  EXPECT_EQ(m.min_sequence_number, 1);
  // As the manifest list would record it.
  m.sequence_number = 3;
  std::map<std::string, ManifestEntry> by_name;
  for (ManifestEntry& e : Read(m)) by_name[e.data_file.file_path.substr(8)] = std::move(e);
  ASSERT_EQ(by_name.size(), 5u);  // "c", deleted by an older snapshot, is gone
  EXPECT_EQ(by_name.count("c.parquet"), 0u);
  const ManifestEntry& added = by_name["new.parquet"];
  EXPECT_EQ(added.status, ManifestEntryStatus::kAdded);
  EXPECT_EQ(added.snapshot_id, kNow);
  EXPECT_EQ(added.sequence_number, 3);  // inherited from the list
  const ManifestEntry& a = by_name["a.parquet"];
  EXPECT_EQ(a.status, ManifestEntryStatus::kExisting);
  EXPECT_EQ(a.snapshot_id, 10);
  EXPECT_EQ(a.sequence_number, 1);
  EXPECT_EQ(a.file_sequence_number, 1);
  EXPECT_EQ(by_name["b.parquet"].status, ManifestEntryStatus::kExisting);
  EXPECT_EQ(by_name["b.parquet"].sequence_number, 1);
  EXPECT_EQ(by_name["d.parquet"].status, ManifestEntryStatus::kDeleted);
  EXPECT_EQ(by_name["d.parquet"].snapshot_id, kNow);
  EXPECT_EQ(by_name["e.parquet"].status, ManifestEntryStatus::kExisting);
}

TEST_F(ManifestMergeTest, NothingToMergeReturnsTheListAndWritesNothing) {
  std::vector<ManifestFile> list = {
      Write("new.avro", 5, -1, {Entry("x", ManifestEntryStatus::kAdded, 5, 0)}),
      Write("old.avro", 4, 1, {Entry("y", ManifestEntryStatus::kAdded, 4, 0)})};
  auto merged = MergeManifests(*io_, list, 5, Policy(3, 1 << 20), Sink(2, 5));
  ASSERT_TRUE(merged.ok());
  ASSERT_EQ(merged->size(), 2u);
  EXPECT_EQ(merged->at(0).manifest_path, list[0].manifest_path);
  EXPECT_EQ(merged_, 0);
}

TEST_F(ManifestMergeTest, RowIdsOfExistingFilesSurviveAV3Merge) {
  // v3: the old manifest's files inherit row ids from its first_row_id (100, then 110).
  ManifestFile old = Write("old.avro", 1, 1,
                           {Entry("a", ManifestEntryStatus::kAdded, 1, 0),
                            Entry("b", ManifestEntryStatus::kAdded, 1, 0)},
                           3);
  old.first_row_id = 100;
  ManifestFile fresh = Write("new.avro", 2, -1, {Entry("c", ManifestEntryStatus::kAdded, 2, 0)}, 3);
  auto merged = MergeManifests(*io_, {fresh, old}, 2, Policy(2, 1 << 20), Sink(3, 2));
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_EQ(merged->size(), 1u);
  ManifestFile m = merged->at(0);
  EXPECT_FALSE(m.first_row_id.has_value());  // assigned when the list is written
  // The list reserves added + existing rows from 500: the new file takes 500, the old keep theirs.
  m.first_row_id = 500;
  m.sequence_number = 2;
  std::map<std::string, std::optional<int64_t>> ids;
  for (const ManifestEntry& e : Read(m)) ids[e.data_file.file_path] = e.data_file.first_row_id;
  EXPECT_EQ(ids["/t/data/a.parquet"], 100);
  EXPECT_EQ(ids["/t/data/b.parquet"], 110);
  EXPECT_EQ(ids["/t/data/c.parquet"], 500);
}

TEST_F(ManifestMergeTest, AMissingInputFailsTheMerge) {
  std::vector<ManifestFile> list = {
      Write("new.avro", 5, -1, {Entry("x", ManifestEntryStatus::kAdded, 5, 0)}), Manifest(40)};
  list[1].manifest_path = dir_.Path("gone.avro");
  list[1].sequence_number = 1;
  auto merged = MergeManifests(*io_, list, 5, Policy(2, 1 << 20), Sink(2, 5));
  EXPECT_FALSE(merged.ok());
}

}  // namespace
}  // namespace skade::iceberg
