// Runs the `skade` binary on the fixture tables as a user would, including tables whose
// metadata records another machine's locations, and on broken copies of them.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/build_paths.h"
#include "tests/testing/temp_dir.h"

namespace skade::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs skade with `args` (already shell-quoted where needed); captures stdout and stderr.
RunResult Skade(const std::string& args) {
  testing::TempDir tmp;
  std::string err_file = tmp.Path("stderr");
  std::string cmd = std::string(skade::testing::CliPath()) + " " + args + " 2>" + err_file;
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = fs::exists(err_file) ? testing::ReadFileOrDie(err_file) : "";
  return r;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Table(const std::string& name) { return Quote(testing::FixturePath("iceberg/" + name)); }

std::string LastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// A private copy of a fixture table that a test may break.
std::string CopyTable(const testing::TempDir& tmp, const std::string& name, const std::string& as = "") {
  std::string dst = tmp.Path(as.empty() ? fs::path(name).filename().string() : as);
  fs::copy(testing::FixturePath("iceberg/" + name), dst, fs::copy_options::recursive);
  return dst;
}

TEST(CliTest, CountsFromMetadataForRelocatedTable) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  RunResult r = Skade("scan " + Table("lineitem_iceberg") + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "51793");
  // The table records './lineitem_iceberg'; skade says it reads from where it was found.
  EXPECT_THAT(r.err, HasSubstr("differs"));
  r = Skade("scan " + Table("lineitem_iceberg") + " --snapshot 7817332053627255703 --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "60175");
}

TEST(CliTest, CountWithoutFilterOpensNoDataFile) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  testing::TempDir tmp;
  std::string dir = CopyTable(tmp, "iceberg_partitioned");
  fs::remove_all(dir + "/data");
  RunResult r = Skade("scan " + Quote(dir) + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "20");
  // With a filter the data must be read: the missing file is named.
  r = Skade("scan " + Quote(dir) + " --count --where 'id > 10'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NotFound"));
  EXPECT_THAT(r.err, HasSubstr(".parquet"));
}

TEST(CliTest, CountAppliesDeletes) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  RunResult r = Skade("scan " + Table("generated_spec2_0_001/pyspark_iceberg_table") + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "6592");
  r = Skade("scan " + Table("equality_deletes_mytable") + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "2");
}

TEST(CliTest, FiltersProjectsAndFormats) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  RunResult r = Skade("scan " + Table("iceberg_partitioned") +
                      " --columns id,action --where \"event_time > TIMESTAMPTZ '2020-01-01 09:00:00+00'\""
                      " --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t nl = r.out.find('\n', start);
    lines.push_back(r.out.substr(start, nl - start));
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), 7u) << r.out;
  EXPECT_EQ(lines[0], "id,action");
  std::vector<std::string> rows(lines.begin() + 1, lines.end());
  std::sort(rows.begin(), rows.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a) < std::stoi(b);
  });
  EXPECT_THAT(rows, ::testing::ElementsAre("2,download", "5,download", "7,download", "8,download",
                                           "14,download", "16,download"));

  r = Skade("scan " + Table("partition_bucket_test") +
            " --where \"partition_col IN ('partition_0','partition_1','partition_2')\" --count -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "30");
  // bucket[10] puts partition_0..2 in buckets 0 and 2: 2 of the 6 files are read.
  EXPECT_THAT(r.err, HasSubstr("6 data files (4 skipped)"));

  r = Skade("scan " + Table("equality_deletes_mytable") + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 2u);
  std::set<int> ids;
  for (const auto& row : j) ids.insert(row["id"].get<int>());
  EXPECT_EQ(ids, (std::set<int>{4, 5}));

  r = Skade("scan " + Table("lineitem_iceberg") + " --limit 3 --columns l_orderkey");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("l_orderkey"));
  EXPECT_THAT(r.out, HasSubstr("3 rows"));
}

TEST(CliTest, TimeTravelByRefAndTime) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string t = Table("equality_deletes_mytable");
  RunResult r = Skade("scan " + t + " --ref main --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "2");
  // Snapshot 842401149381792626 (seq 4: only (4,d) left) became current at 1758879496480 ms
  // and stayed so until 1758879647963 ms.
  r = Skade("scan " + t + " --snapshot 842401149381792626 --format csv --columns id");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "id\n4\n");
  r = Skade("scan " + t + " --as-of 1758879500000 --format csv --columns id");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "id\n4\n");
  r = Skade("scan " + t + " --as-of 2025-09-26T09:40:47.963Z --format csv --columns id");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n4\n"));
  EXPECT_THAT(r.out, HasSubstr("\n5\n"));
  EXPECT_THAT(r.out, HasSubstr("\n6\n"));
  EXPECT_EQ(r.out.size(), std::string("id\n4\n5\n6\n").size());
  r = Skade("scan " + t + " --ref no_such_branch --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no_such_branch"));
  r = Skade("scan " + t + " --as-of 2000-01-01 --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NotFound"));
  r = Skade("scan " + t + " --as-of yesterday --count");
  EXPECT_EQ(r.exit_code, 1);
}

TEST(CliTest, ReadsAMetadataFileAndExplicitRelocation) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  const std::string dir = testing::FixturePath("iceberg/generated_spec2_0_001/pyspark_iceberg_table");
  RunResult r = Skade("scan " + Quote(dir + "/metadata/v8.metadata.json") + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "6592");
  r = Skade("scan " + Quote(dir) + " --relocate " +
            Quote("data/iceberg/generated_spec2_0_001/pyspark_iceberg_table=" + dir) + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "6592");
}

TEST(CliTest, ReadsGzipCompressedMetadata) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  testing::TempDir tmp;
  std::string dir = CopyTable(tmp, "equality_deletes_mytable");
  std::string meta = dir + "/metadata/v7.metadata.json";
  std::string gz = dir + "/metadata/v8.gz.metadata.json";
  ASSERT_EQ(std::system(("gzip -c " + Quote(meta) + " > " + Quote(gz)).c_str()), 0);
  testing::WriteFileOrDie(dir + "/metadata/version-hint.text", "8");
  RunResult r = Skade("scan " + Quote(dir) + " --count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), "2");
  // A corrupt gzip stream is reported, not crashed on.
  std::string bytes = testing::ReadFileOrDie(gz);
  testing::WriteFileOrDie(gz, bytes.substr(0, bytes.size() / 2));
  r = Skade("scan " + Quote(dir) + " --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Corruption"));
}

TEST(CliTest, InspectShowsEverything) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  RunResult r = Skade("inspect " + Table("iceberg_partitioned"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("event_time_hour = hour(event_time)"));
  EXPECT_THAT(r.out, HasSubstr("8270633197658268308"));
  r = Skade("inspect --json " + Table("equality_deletes_mytable"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["metadata"]["snapshots"].size(), 6u);
  int eq_files = 0, data_files = 0;
  for (const auto& m : j["manifests"]) {
    for (const auto& f : m["files"]) {
      if (f["content"] == "equality_deletes") ++eq_files;
      if (f["content"] == "data") ++data_files;
    }
  }
  EXPECT_EQ(eq_files, 4);
  EXPECT_EQ(data_files, 2);
}

TEST(CliTest, BadInputGivesClearErrors) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  testing::TempDir tmp;
  RunResult r = Skade("scan " + Quote(tmp.Path("nope")) + " --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nope"));

  // Truncated metadata JSON: the error names the file.
  std::string dir = CopyTable(tmp, "partition_bucket_test");
  std::string v2 = dir + "/metadata/v2.metadata.json";
  std::string json = testing::ReadFileOrDie(v2);
  testing::WriteFileOrDie(v2, json.substr(0, json.size() / 2));
  r = Skade("scan " + Quote(dir) + " --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("v2.metadata.json"));
  EXPECT_THAT(r.err, HasSubstr("InvalidArgument"));

  // Unknown format version.
  testing::WriteFileOrDie(v2, testing::ReadFileOrDie(testing::FixturePath(
                                  "metadata/table-invalid/TableMetadataUnsupportedVersion.json")));
  r = Skade("scan " + Quote(dir) + " --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NotImplemented"));

  // Metadata pointing at a missing manifest list.
  std::string dir2 = CopyTable(tmp, "lineitem_iceberg");
  for (const auto& e : fs::directory_iterator(dir2 + "/metadata")) {
    if (e.path().filename().string().rfind("snap-", 0) == 0) fs::remove(e.path());
  }
  r = Skade("scan " + Quote(dir2) + " --count");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("snap-"));
  EXPECT_THAT(r.err, HasSubstr("NotFound"));

  // A garbled manifest: corruption named, no crash.
  std::string dir3 = CopyTable(tmp, "partition_bucket_test", "garbled");
  for (const auto& e : fs::directory_iterator(dir3 + "/metadata")) {
    std::string name = e.path().filename().string();
    if (name.size() > 8 && name.substr(name.size() - 8) == "-m0.avro") {
      std::string bytes = testing::ReadFileOrDie(e.path().string());
      for (size_t i = bytes.size() / 2; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
      testing::WriteFileOrDie(e.path().string(), bytes);
    }
  }
  r = Skade("scan " + Quote(dir3));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("-m0.avro"));

  // SQL errors in --where are reported, not crashes.
  r = Skade("scan " + Table("partition_bucket_test") + " --where 'partition_col = = 1'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("InvalidArgument"));
  r = Skade("scan " + Table("partition_bucket_test") + " --columns nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nope"));
}

}  // namespace
}  // namespace skade::cli
