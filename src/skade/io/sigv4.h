// AWS Signature Version 4 (AWS4-HMAC-SHA256): the Authorization header and presigned URLs, with
// the intermediate canonical request and string to sign exposed for tests; plus the SHA-256,
// HMAC-SHA256 and MD5 digests (OpenSSL libcrypto) and the URI encoding S3 signs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skade::io {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term keys
};

// The credential scope: region and service ("s3").
struct SigV4Scope {
  std::string region = "us-east-1";
  std::string service = "s3";
};

// The payload hash S3 accepts when the body is not hashed (presigned URLs always use it).
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

// What is signed. Values are as sent, except `query`, which holds decoded names and values
// (they are encoded while signing and in the query string returned by Presign).
struct SigV4Request {
  std::string method;  // "GET"
  std::string host;    // the Host header: "bucket.s3.us-east-1.amazonaws.com" or "127.0.0.1:9000"
  // The path as sent, already URI-encoded (UriEncodePath). S3 signs it as it is, without the
  // second encoding or dot-segment normalisation other services apply.
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> query;
  // Headers to sign besides Host (names in any case; values trimmed and inner runs of spaces
  // collapsed when signing). Authorization must not be among them.
  std::vector<std::pair<std::string, std::string>> headers;
  // Lower-case hex SHA-256 of the body, or kUnsignedPayload. Empty: the hash of an empty body.
  std::string payload_hash;
};

struct SigV4Result {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string signature;       // lower-case hex
  // Header auth: the fields to add to the request (x-amz-date, x-amz-content-sha256 for S3,
  // x-amz-security-token with a session token, and Authorization).
  std::vector<std::pair<std::string, std::string>> headers_to_add;
  // Presigning: the whole encoded query string, X-Amz-Signature last (no leading '?').
  std::string query;
};

// Signs with an Authorization header at `unix_seconds`. For the service "s3" an
// x-amz-content-sha256 header carrying the payload hash is added (and signed) unless present;
// a session token is sent and signed as x-amz-security-token.
SigV4Result SignRequest(const SigV4Request& request, const AwsCredentials& credentials,
                        const SigV4Scope& scope, int64_t unix_seconds);

// A presigned request valid for `expires_seconds` (1..604800) from `unix_seconds`: the X-Amz-*
// parameters (with X-Amz-Security-Token when there is a session token) are added to the query
// and the payload is UNSIGNED-PAYLOAD. `request.headers` are signed too and must be sent.
SigV4Result PresignRequest(const SigV4Request& request, const AwsCredentials& credentials,
                           const SigV4Scope& scope, int64_t unix_seconds, int64_t expires_seconds);

// The signing key: HMAC chain over "AWS4" + secret, date (YYYYMMDD), region, service,
// "aws4_request". Raw bytes.
std::string SigV4SigningKey(std::string_view secret_access_key, std::string_view date,
                            std::string_view region, std::string_view service);

// "20130524T000000Z" for a time in seconds since the epoch (UTC).
std::string AmzDate(int64_t unix_seconds);

// URI-encodes every byte except the unreserved A-Z a-z 0-9 - . _ ~ (upper-case hex), as SigV4
// requires for query names and values and for S3 keys; UriEncodePath keeps '/' as it is.
std::string UriEncode(std::string_view s);
std::string UriEncodePath(std::string_view s);
// A request's query string as S3 requests carry it: "?name=value&…" in order, names and values
// UriEncoded (a parameter without a value as "name="); "" for none.
std::string EncodedQuery(const std::vector<std::pair<std::string, std::string>>& query);

// Digests: lower-case hex SHA-256, raw HMAC-SHA256, and base64 MD5 (the Content-MD5 header).
std::string Sha256Hex(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);
std::string Md5Base64(std::string_view data);

}  // namespace skade::io
