// FileIO for S3-compatible object stores (AWS S3, MinIO, Ceph RGW, R2, s3rver) over libcurl with
// Signature V4: locations "s3://bucket/key" (also s3a:// and s3n://), options from the standard
// AWS_* environment variables and ~/.aws profiles, batch delete and presigned URLs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/io/file_io.h"
#include "skade/io/http_client.h"

namespace skade::io {

// How CreateExclusive and Update keep concurrent writers apart.
enum class S3ConditionalWrites {
  // The server honours If-None-Match: * and If-Match on PUT and CompleteMultipartUpload (AWS S3
  // since 2024, MinIO, Ceph RGW, R2). CreateExclusive then has exactly one winner among any
  // number of writers in any processes, and Update is serialised across processes.
  kServer,
  // The server ignores those conditions (s3rver 3.7.1 does: its PUT never reads them). The
  // headers are still sent; in addition CreateExclusive checks with HEAD first and Update
  // re-reads the ETag right before its PUT. An existing object is then never replaced by a
  // CreateExclusive that starts after it was written, but writers racing from different
  // processes (or different S3FileIO objects) may both succeed, the last PUT winning, and a
  // concurrent Update may be lost. Within one S3FileIO both are still serialised (below).
  kEmulated,
};

struct S3Options {
  // "http://127.0.0.1:9000" (MinIO, s3rver, a proxy); empty: AWS,
  // https://s3.<region>.amazonaws.com. A scheme-less endpoint means https.
  std::string endpoint;
  std::string region = "us-east-1";
  // Path-style ("<endpoint>/<bucket>/<key>") or virtual-host ("<bucket>.<host>/<key>")
  // addressing. Unset: path-style when an endpoint is given, virtual-host for AWS. Buckets with
  // a '.' always use path-style over https (their virtual host would not match the certificate).
  std::optional<bool> path_style;
  // Set: every request is signed by it (remote signing: the catalog holds the keys), and the
  // keys below are not used.
  StorageSigner remote_signer;
  // Empty access key (and no remote signer): requests are sent unsigned (public buckets).
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // Keys per ListObjectsV2 page (1..1000).
  int list_page_size = 1000;
  // Writes larger than the threshold go up as a multipart upload in parts of part_size bytes
  // (AWS requires ≥ 5 MiB for every part but the last; the part size grows when more than
  // 10,000 parts would be needed).
  int64_t multipart_threshold = 64LL << 20;
  int64_t multipart_part_size = 16LL << 20;
  RetryPolicy retry;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{300'000};
  S3ConditionalWrites conditional_writes = S3ConditionalWrites::kServer;
};

// Looks up an environment variable; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;

// Options from the environment, the way the AWS CLI finds them: credentials from
// AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else from the profile
// AWS_PROFILE (default "default") in ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE) or
// ~/.aws/config (AWS_CONFIG_FILE, sections "[profile NAME]" and "[default]"); region from
// AWS_REGION, AWS_DEFAULT_REGION, then the profile's `region` (default us-east-1); endpoint from
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then the profile's `s3 = endpoint_url` or
// `endpoint_url`; `s3 = addressing_style` (path/virtual/auto) sets path_style. kNotFound when
// AWS_PROFILE names a profile in neither file; kIoError when a file exists but can't be read.
Result<S3Options> S3OptionsFromEnvironment();
Result<S3Options> S3OptionsFromEnvironment(const EnvironmentLookup& lookup);

// A location split into bucket and key ("s3://b/a/c.txt" → "b", "a/c.txt"; the key may be empty
// for "s3://b" and "s3://b/").
struct S3Location {
  std::string scheme;  // "s3", "s3a" or "s3n", as given
  std::string bucket;
  std::string key;
};
// kInvalidArgument unless `location` is s3://, s3a:// or s3n:// with a bucket.
Result<S3Location> ParseS3Location(std::string_view location);

// Where requests of `options` go: the scheme ("http"/"https") and the Host header (lower case,
// a default port left out; AWS's regional endpoint when no endpoint is set). kInvalidArgument
// for a malformed endpoint.
struct S3Endpoint {
  std::string scheme;
  std::string host;
};
Result<S3Endpoint> S3EndpointOf(const S3Options& options);
// Whether `bucket` is addressed path-style ("<host>/<bucket>/<key>") rather than as a virtual
// host ("<bucket>.<host>/<key>") under `options` (S3Options::path_style).
bool S3PathStyleFor(const S3Options& options, const S3Endpoint& endpoint, std::string_view bucket);

// FileIO over S3. Thread-safe. Error codes: kNotFound for a missing key or bucket (the message
// names the bucket), kPermissionDenied for 403 (AccessDenied, SignatureDoesNotMatch,
// InvalidAccessKeyId, RequestTimeTooSkewed), kUnavailable when the server could not be reached
// or still answered 429/5xx (SlowDown) after the retries, kIoError otherwise; messages carry the
// location and S3's Code and Message, never credentials.
//
// - CreateExclusive: PUT (or a multipart upload) with If-None-Match: *; 412 → kAlreadyExists.
//   Atomic on S3 (an object appears whole or not at all); s3rver writes its file in place, so
//   a reader racing a write there can see part of it.
// - Update: GET (content + ETag), then PUT with If-Match: <ETag> (If-None-Match: * when absent);
//   a 412 re-reads and re-applies the change (up to 32 times, then kConflict).
// - Within one S3FileIO, CreateExclusive and Update calls for one location run one at a time,
//   so two threads sharing it never both create a file, whatever the server honours. Across
//   processes the guarantee is the server's (S3ConditionalWrites).
// - List treats the prefix as a folder ("s3://b/t" lists "t/..." keys, not "t2/...") and skips
//   keys ending in '/' (folder markers); the result keeps the caller's scheme.
class S3FileIO : public FileIO {
 public:
  // kInvalidArgument for a malformed endpoint or out-of-range sizes.
  static Result<std::unique_ptr<S3FileIO>> Open(S3Options options);
  ~S3FileIO() override;

  Result<std::string> Read(std::string_view location) override;
  Result<std::string> ReadRange(std::string_view location, int64_t offset, int64_t length) override;
  Result<FileInfo> Stat(std::string_view location) override;
  Status CreateExclusive(std::string_view location, std::string_view data) override;
  Status Overwrite(std::string_view location, std::string_view data) override;
  Status Update(std::string_view location, const Change& change) override;
  Result<std::vector<FileInfo>> List(std::string_view prefix) override;
  Status Delete(std::string_view location) override;

  // Deletes many objects with DeleteObjects (POST ?delete, up to 1000 keys per request, with
  // Content-MD5), grouped by bucket. Absent keys are Ok. The first per-key error is returned
  // (kPermissionDenied for AccessDenied, else kIoError) after every batch was sent.
  Status DeleteMany(std::span<const std::string> locations);

  // A presigned URL for `method` ("GET", "PUT", "HEAD", "DELETE") on `location`, valid for
  // `expires_seconds` (1..604800) from now. kInvalidArgument without credentials.
  Result<std::string> PresignUrl(std::string_view method, std::string_view location,
                                 int64_t expires_seconds);

 private:
  struct State;
  explicit S3FileIO(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// S3FileIO::Open as a plain FileIO. With invalid options every call returns the kInvalidArgument
// that Open would have.
std::unique_ptr<FileIO> MakeS3FileIO(S3Options options);

}  // namespace skade::io
