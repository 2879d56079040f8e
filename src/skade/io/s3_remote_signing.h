// Remote signing of S3 requests (the Iceberg REST spec's signRequest, RemoteSignRequest and
// RemoteSignResult): a server that holds the object store's credentials signs the requests a
// client will send to the store, for objects under the prefixes it allows, so that clients read
// and write tables without holding keys. The request is parsed once, checked, and re-rendered:
// what is signed is the re-rendered request, never the client's text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/io/s3_file_io.h"

namespace skade::io {

// A request as the client describes it.
struct S3SignInput {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string uri;     // the whole URL the client will send ("http://host:9000/bucket/key?x-id=GetObject")
  // The headers the client will send, a multi-valued header as one entry per value.
  std::vector<std::pair<std::string, std::string>> headers;
  // The body, where S3 must see exactly the body that was checked (DeleteObjects).
  std::optional<std::string> body;
};

// What a client may do with the objects under the allowed prefixes.
enum class S3SignAccess {
  kRead,       // GET and HEAD of objects, listings
  kReadWrite,  // also PUT, multipart uploads, DELETE and DeleteObjects
};

struct S3SignOutput {
  std::string uri;  // the URL to send: the request re-rendered (path and query encoded as signed)
  // Every header to send: the client's, minus those the signature replaces, plus x-amz-date,
  // x-amz-content-sha256, x-amz-security-token (with a session token) and Authorization.
  std::vector<std::pair<std::string, std::string>> headers;
  bool read = false;  // a read (GET/HEAD): its answer may be cached by the client for a while
};

// Signs `input` with `options`' credentials at `unix_seconds` when it addresses `options`'
// endpoint (scheme and host, path-style or virtual-host addressing as S3FileIO uses them) and
// every object it reads, writes, lists or deletes lies within one of `roots` (s3:// locations,
// compared as whole path components of their normal forms), by an operation of `access`:
//   objects: GET/HEAD (x-id, partNumber, versionId), PUT (x-id; partNumber+uploadId),
//            POST ?uploads / ?uploadId, DELETE (x-id; uploadId);
//   buckets: GET listings (ListObjects/ListObjectsV2) whose prefix starts with a root's key and
//            '/'; POST ?delete (DeleteObjects) with the body, each key within a root, signed
//            with the body's SHA-256 so that S3 accepts only that body.
// kPermissionDenied naming what was refused for another endpoint, an object outside the roots,
// a write under kRead, any other operation or query parameter, or a header that would reach
// other objects or change access (x-amz-copy-source*, x-amz-acl, x-amz-grant-*,
// x-amz-website-redirect-location, x-amz-object-lock-*, x-amz-bypass-governance-retention);
// kInvalidArgument for a malformed URL, method or header, a key with an empty, "." or ".."
// segment or a control character, a DeleteObjects without its body, a chunk-signed upload
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD needs the secret for every chunk), or options without
// credentials.
Result<S3SignOutput> SignS3Request(const S3Options& options, std::span<const std::string> roots,
                                   S3SignAccess access, const S3SignInput& input, int64_t unix_seconds);

}  // namespace skade::io
