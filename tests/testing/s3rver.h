// Test helper: one s3rver (the S3 API server from npm, pinned in tests/interop/package-lock.json)
// per test binary, on 127.0.0.1 with a free port, started on first use by
// tests/interop/s3rver.mjs and stopped when the test program ends.
#pragma once

#include <memory>
#include <string>

#include "tests/testing/child_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::testing {

// The buckets the shared s3rver creates.
inline constexpr const char* kS3rverBucket = "skade-test";
inline constexpr const char* kS3rverOtherBucket = "other-bucket";

// Credentials s3rver accepts (it checks only that the access key exists, not the signature).
inline constexpr const char* kS3rverAccessKey = "S3RVER";
inline constexpr const char* kS3rverSecretKey = "S3RVER";

// Not thread-safe: use it from the test thread.
class S3rver {
 public:
  // The binary's server, started on the first call. Tests share it: give each its own key
  // prefix.
  static S3rver& Shared();

  // 0 when the server could not be started (then error() says why).
  int port() const { return port_; }
  // "http://127.0.0.1:<port>".
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& error() const { return error_; }
  void Stop();

  S3rver(const S3rver&) = delete;
  S3rver& operator=(const S3rver&) = delete;

 private:
  S3rver();
  TempDir dir_;
  std::unique_ptr<ChildProcess> child_;
  int port_ = 0;
  std::string error_;
};

}  // namespace skade::testing
