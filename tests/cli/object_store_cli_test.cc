// The CLI over tables on an S3 API server (s3rver on loopback): `skade scan` and `skade inspect`
// take s3:// locations, configured by the standard AWS_* environment variables, and read the
// same rows as the table on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "skade/base/uuid.h"
#include "skade/engine/database.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/location_map.h"
#include "skade/io/s3_file_io.h"
#include "tests/testing/foreign_table.h"
#include "tests/testing/run_process.h"
#include "tests/testing/s3rver.h"
#include "tests/testing/temp_dir.h"

namespace skade {
namespace {

using testing::RunProcess;
using testing::ShellQuote;

TEST(ObjectStoreCliTest, ScanAndInspectReadATableOnS3) {
  auto& server = testing::S3rver::Shared();
  ASSERT_GT(server.port(), 0) << server.error();
  io::S3Options o;
  o.endpoint = server.endpoint();
  o.access_key_id = testing::kS3rverAccessKey;
  o.secret_access_key = testing::kS3rverSecretKey;
  auto s3 = io::S3FileIO::Open(o);
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();

  // A fixture table (equality deletes, written by another engine), copied with every location
  // spelled s3://bucket/<prefix>/t and uploaded.
  const std::string dir = std::string(SKADE_FIXTURES_DIR) + "/iceberg/equality_deletes_mytable";
  auto parsed = iceberg::ParseTableMetadata(testing::ReadFileOrDie(dir + "/metadata/v7.metadata.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  io::LocationMap to_fixture;
  to_fixture.Add("data/persistent/equality_deletes/warehouse/mydb/mytable", dir);
  auto local_io = io::MakeLocalFileIO();
  auto fixture_io = io::MakeRelocatingFileIO(*local_io, to_fixture);
  auto db = engine::Database::Open({});
  ASSERT_TRUE(db.ok());
  testing::TempDir tmp;
  const std::string root = std::string("s3://") + testing::kS3rverBucket + "/cli-" + Uuid::NewV7().ToString() + "/t";
  auto uploaded = testing::UploadForeignCopy(*parsed, *fixture_io, **db, tmp.Path("copy"), root, **s3);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();

  const std::string env = "AWS_ENDPOINT_URL=" + ShellQuote(server.endpoint()) + " AWS_ACCESS_KEY_ID=" +
                          testing::kS3rverAccessKey + " AWS_SECRET_ACCESS_KEY=" + testing::kS3rverSecretKey +
                          " AWS_REGION=us-east-1 AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null ";
  auto skade = [&](const std::string& args) {
    return RunProcess(env + ShellQuote(SKADE_CLI_PATH) + " --warehouse " + ShellQuote(tmp.Path("lake")) + " " + args);
  };
  auto local = skade("scan " + ShellQuote(dir) + " --format csv");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto remote = skade("scan " + ShellQuote(root) + " --format csv");
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  auto sorted = [](const std::string& text) {
    auto lines = testing::Lines(text);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted(remote.out), sorted(local.out)) << "the same rows (in any order: no ORDER BY)";
  EXPECT_THAT(remote.out, ::testing::HasSubstr("4,d,2025-01-04"));
  auto by_file = skade("scan " + ShellQuote(root + "/metadata/v1.metadata.json") + " --count");
  ASSERT_EQ(by_file.exit_code, 0) << by_file.err;
  EXPECT_EQ(testing::Lines(by_file.out).back(), "2");
  auto inspect = skade("inspect " + ShellQuote(root) + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_THAT(inspect.out, ::testing::HasSubstr(root + "/data/"));
  // A missing table names the bucket's answer.
  auto missing = skade("scan " + ShellQuote(std::string("s3://") + testing::kS3rverBucket + "/nope/t") + " --count");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, ::testing::HasSubstr("nope/t"));
}

}  // namespace
}  // namespace skade
