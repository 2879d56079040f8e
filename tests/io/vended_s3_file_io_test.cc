// Storage settings vended by a catalog: the S3 FileIO properties mapped to S3Options, and the
// FileIO that uses them for the locations under their prefix (against s3rver on loopback).
#include "skade/io/vended_s3_file_io.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "skade/base/uuid.h"
#include "tests/testing/s3rver.h"

namespace skade::io {
namespace {

using Config = std::map<std::string, std::string>;

TEST(S3OptionsFromStorageConfigTest, MapsTheIcebergS3Properties) {
  S3Options base;
  base.access_key_id = "BASE";
  base.secret_access_key = "base-secret";
  base.session_token = "base-token";
  base.region = "eu-west-1";
  auto o = S3OptionsFromStorageConfig(base, {{"s3.access-key-id", "AK"},
                                             {"s3.secret-access-key", "SK"},
                                             {"s3.endpoint", "http://127.0.0.1:9"},
                                             {"client.region", "us-west-2"},
                                             {"s3.path-style-access", "true"},
                                             {"unrelated", "x"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE(o->has_value());
  EXPECT_EQ((*o)->access_key_id, "AK");
  EXPECT_EQ((*o)->secret_access_key, "SK");
  EXPECT_EQ((*o)->session_token, "") << "a vended key never pairs with the base's session token";
  EXPECT_EQ((*o)->endpoint, "http://127.0.0.1:9");
  EXPECT_EQ((*o)->region, "us-west-2");
  EXPECT_EQ((*o)->path_style, std::optional<bool>(true));

  auto region_only = S3OptionsFromStorageConfig(base, {{"s3.region", "ap-south-1"}});
  ASSERT_TRUE(region_only.ok() && region_only->has_value());
  EXPECT_EQ((*region_only)->region, "ap-south-1");
  EXPECT_EQ((*region_only)->access_key_id, "BASE") << "no vended credentials: the base's stay";

  auto nothing = S3OptionsFromStorageConfig(base, {{"write.format.default", "parquet"}});
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->has_value());

  EXPECT_EQ(S3OptionsFromStorageConfig(base, {{"s3.access-key-id", "AK"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(S3OptionsFromStorageConfig(base, {{"s3.path-style-access", "yes"}}).status().code(),
            StatusCode::kInvalidArgument);
}

class VendedS3FileIOTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& server = testing::S3rver::Shared();
    ASSERT_GT(server.port(), 0) << server.error();
    endpoint_ = server.endpoint();
    prefix_ = std::string("s3://") + testing::kS3rverBucket + "/vended-" + Uuid::NewV7().ToString();
    S3Options o;
    o.endpoint = endpoint_;
    o.access_key_id = testing::kS3rverAccessKey;
    o.secret_access_key = testing::kS3rverSecretKey;
    o.conditional_writes = S3ConditionalWrites::kEmulated;
    writer_ = MakeS3FileIO(o);
    ASSERT_TRUE(writer_->Overwrite(prefix_ + "/t/data/a", "table a").ok());
    ASSERT_TRUE(writer_->Overwrite(prefix_ + "/t2/data/b", "table b").ok());
  }

  Config Vended(const std::string& key) const {
    return {{"s3.access-key-id", key},
            {"s3.secret-access-key", testing::kS3rverSecretKey},
            {"s3.endpoint", endpoint_},
            {"s3.path-style-access", "true"}};
  }

  std::string endpoint_, prefix_;
  std::unique_ptr<FileIO> writer_;
};

TEST(S3OptionsFromStorageConfigTest, RemoteSigningReplacesTheKeysWhenASignerIsGiven) {
  S3Options base;
  base.access_key_id = "BASE";
  base.secret_access_key = "base-secret";
  base.session_token = "base-token";
  const std::map<std::string, std::string> config = {{"s3.remote-signing-enabled", "true"},
                                                     {"s3.endpoint", "http://127.0.0.1:9"}};
  StorageSigner signer = [](const StorageRequest& r) -> Result<SignedStorageRequest> {
    return SignedStorageRequest{r.url, {{"Authorization", "signed"}}};
  };
  auto with_signer = S3OptionsFromStorageConfig(base, config, signer);
  ASSERT_TRUE(with_signer.ok() && with_signer->has_value());
  EXPECT_TRUE(static_cast<bool>((*with_signer)->remote_signer));
  EXPECT_EQ((*with_signer)->access_key_id, "") << "no key of this process goes to a store the catalog signs for";
  EXPECT_EQ((*with_signer)->session_token, "");
  // Without a signer (a caller that is no REST catalog) the flag is ignored.
  auto without = S3OptionsFromStorageConfig(base, config);
  ASSERT_TRUE(without.ok() && without->has_value());
  EXPECT_FALSE(static_cast<bool>((*without)->remote_signer));
  EXPECT_EQ((*without)->access_key_id, "BASE");
  auto disabled = S3OptionsFromStorageConfig(base, {{"s3.remote-signing-enabled", "false"}}, signer);
  ASSERT_TRUE(disabled.ok());
  EXPECT_FALSE(disabled->has_value());
}

TEST_F(VendedS3FileIOTest, UsesTheSettingsOfTheLongestVendedPrefix) {
  // A machine with no object-store configuration of its own.
  auto io = MakeVendedS3FileIO(Status::NotFound("AWS profile 'p' is in neither file"));
  auto before = io->Read(prefix_ + "/t/data/a");
  EXPECT_EQ(before.status().code(), StatusCode::kInvalidArgument) << "a missing profile is not a missing file";
  EXPECT_NE(before.status().message().find("not configured"), std::string::npos) << before.status().ToString();

  io->ApplyStorageConfig(prefix_ + "/t", Vended(testing::kS3rverAccessKey));
  EXPECT_EQ(io->Read(prefix_ + "/t/data/a").ValueOr(""), "table a");
  EXPECT_EQ(io->Read("s3a" + (prefix_ + "/t/data/a").substr(2)).ValueOr(""), "table a") << "one normal form";
  // Whole path components: /t2 is not under /t.
  EXPECT_EQ(io->Read(prefix_ + "/t2/data/b").status().code(), StatusCode::kInvalidArgument);

  // A longer prefix wins; its credentials are refused by the server.
  io->ApplyStorageConfig(prefix_ + "/t/data", Vended("NOT-A-KEY"));
  auto refused = io->Read(prefix_ + "/t/data/a");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  // Renewed credentials for the same prefix replace the old ones.
  io->ApplyStorageConfig(prefix_ + "/t/data", Vended(testing::kS3rverAccessKey));
  EXPECT_EQ(io->Read(prefix_ + "/t/data/a").ValueOr(""), "table a");

  // Settings without storage keys, or malformed ones, change nothing.
  io->ApplyStorageConfig(prefix_ + "/t2", {{"s3.access-key-id", "half"}});
  io->ApplyStorageConfig(prefix_ + "/t2", {{"write.format.default", "parquet"}});
  EXPECT_EQ(io->Read(prefix_ + "/t2/data/b").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(VendedS3FileIOTest, FallsBackToTheEnvironmentsSettings) {
  S3Options env;
  env.endpoint = endpoint_;
  env.access_key_id = testing::kS3rverAccessKey;
  env.secret_access_key = testing::kS3rverSecretKey;
  auto io = MakeVendedS3FileIO(env);
  EXPECT_EQ(io->Read(prefix_ + "/t2/data/b").ValueOr(""), "table b");
  io->ApplyStorageConfig(prefix_ + "/t", Vended("NOT-A-KEY"));
  EXPECT_FALSE(io->Read(prefix_ + "/t/data/a").ok()) << "the vended settings apply under their prefix";
  EXPECT_EQ(io->Read(prefix_ + "/t2/data/b").ValueOr(""), "table b") << "and only there";
}

}  // namespace
}  // namespace skade::io
