// `skade scan` of a snapshot of more than table::kPartedReadFiles data files reads it in parts
// planned while they are read (table/parted_read.h): its rows, filters and limits are those of
// the table, and a --limit the first part satisfies never reads the manifests of later parts.
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/table_generator.h"
#include "skade/engine/database.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/table/parted_read.h"
#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

class PartedScanCliTest : public LakeCliTest {
 protected:
  // One row per file (id = the file's number), each file in a manifest of its own.
  static constexpr int kFiles = static_cast<int>(table::kPartedReadFiles) + 24;

  void SetUp() override {
    LakeCliTest::SetUp();
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    bench::GeneratorOptions options;
    options.out_dir = tmp_.Path("big");
    options.rows = kFiles;
    options.columns = 2;
    options.files = kFiles;
    options.manifests = kFiles;
    auto made = bench::GenerateTable(**db, options);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    metadata_ = made->metadata_file;
  }

  // The manifests of the table's snapshot, in manifest-list order.
  std::vector<std::string> Manifests() {
    auto io = io::MakeLocalFileIO();
    auto text = io->Read(metadata_);
    EXPECT_TRUE(text.ok());
    auto metadata = iceberg::ParseTableMetadata(*text);
    EXPECT_TRUE(metadata.ok()) << metadata.status().ToString();
    iceberg::ScanPlanner planner(*io, *metadata);
    auto manifests = planner.LoadManifests(*metadata->CurrentSnapshot());
    EXPECT_TRUE(manifests.ok());
    std::vector<std::string> out;
    for (const auto& m : *manifests) out.push_back(m.manifest_path);
    return out;
  }

  std::string metadata_;
};

TEST_F(PartedScanCliTest, RowsFiltersAndLimitsAreTheTables) {
  const std::string table = testing::ShellQuote(metadata_);
  const std::string all = SkadeOk("scan " + table + " --columns id --format csv");
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), kFiles + 1);  // a header and every row
  EXPECT_EQ(SkadeOk("scan " + table + " --columns id --where 'id >= " + std::to_string(kFiles - 3) +
                    "' --format csv"),
            "id\n" + std::to_string(kFiles - 3) + "\n" + std::to_string(kFiles - 2) + "\n" +
                std::to_string(kFiles - 1) + "\n");
  const std::string three = SkadeOk("scan " + table + " --columns id --limit 3 --format csv");
  EXPECT_EQ(std::count(three.begin(), three.end(), '\n'), 4);
  // Past the first parts: the limit carries over.
  const std::string many = SkadeOk("scan " + table + " --columns id --limit 500 --format csv");
  EXPECT_EQ(std::count(many.begin(), many.end(), '\n'), 501);
  EXPECT_NE(Skade("scan " + table + " --columns nope --limit 1").exit_code, 0);
  // Counts: from the manifests, and with a filter over the parts.
  EXPECT_EQ(SkadeOk("scan " + table + " --count"), std::to_string(kFiles) + "\n");
  EXPECT_EQ(SkadeOk("scan " + table + " --count --where 'id >= 1000'"), std::to_string(kFiles - 1000) + "\n");
}

TEST_F(PartedScanCliTest, ALimitNeverReadsTheManifestsOfLaterParts) {
  const std::vector<std::string> manifests = Manifests();
  ASSERT_EQ(manifests.size(), static_cast<size_t>(kFiles));
  // Remove the manifests past the first few hundred: a read of all of them fails on one.
  for (size_t i = 300; i < manifests.size(); ++i) ASSERT_TRUE(fs::remove(io::LocalPath(manifests[i])));
  const std::string table = testing::ShellQuote(metadata_);
  const std::string three = SkadeOk("scan " + table + " --columns id --limit 3 --format csv");
  EXPECT_EQ(std::count(three.begin(), three.end(), '\n'), 4);
  testing::ProcessResult whole = Skade("scan " + table + " --format csv");
  EXPECT_NE(whole.exit_code, 0);
  EXPECT_NE(whole.err.find(fs::path(manifests[300]).filename().string()), std::string::npos) << whole.err;
}

}  // namespace
}  // namespace skade::cli
