#include "tests/testing/s3rver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace skade::testing {
namespace {

using namespace std::chrono_literals;

const std::string kInteropDir = SourcePath("tests/interop");

// Created on first use; the environment stops it and removes its folder when the tests end.
S3rver* shared = nullptr;

class S3rverEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (shared == nullptr) return;
    shared->Stop();
    delete shared;  // its TempDir goes with it
    shared = nullptr;
  }
};
[[maybe_unused]] ::testing::Environment* const kS3rverEnvironment =
    ::testing::AddGlobalTestEnvironment(new S3rverEnvironment);

}  // namespace

S3rver& S3rver::Shared() {
  if (shared == nullptr) shared = new S3rver();
  return *shared;
}

void S3rver::Stop() {
  if (child_) child_->Stop(SIGTERM, 5s);
  child_.reset();
  port_ = 0;
}

S3rver::S3rver() {
  if (!std::filesystem::exists(kInteropDir + "/node_modules/s3rver/package.json")) {
    error_ = "s3rver is missing from " + kInteropDir + "/node_modules (run scripts/setup.sh)";
    return;
  }
  child_ = ChildProcess::Start(
      // s3rver encrypts ListObjectsV2 continuation tokens with DES, which Node 20's OpenSSL 3
      // offers only through the legacy provider.
      {"node", "--openssl-legacy-provider", kInteropDir + "/s3rver.mjs", dir_.Path("data"),
       kS3rverBucket, kS3rverOtherBucket},
      dir_.Path("s3rver.err"));
  if (!child_) {
    error_ = "node could not be started (scripts/setup.sh installs it)";
    return;
  }
  std::string line = child_->ReadLine(30s);
  if (line.rfind("port ", 0) != 0) {
    error_ = "s3rver printed no port: '" + line + "'";
    return;
  }
  port_ = std::atoi(line.c_str() + 5);
}

}  // namespace skade::testing
