#include "skade/io/s3_remote_signing.h"

#include <algorithm>
#include <set>

#include "skade/base/ascii.h"
#include "skade/base/hex.h"
#include "skade/base/url.h"
#include "skade/io/location.h"
#include "skade/io/sigv4.h"
#include "skade/io/xml_internal.h"

namespace skade::io {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// kInvalidArgument for a percent escape without two hex digits (PercentDecode would keep it as
// text: a key is compared and signed only in one decoded form).
Status CheckEscapes(std::string_view s, std::string_view what) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && (i + 2 >= s.size() || HexDigitValue(s[i + 1]) < 0 || HexDigitValue(s[i + 2]) < 0)) {
      return Status::InvalidArgument(std::string(what) + " has a malformed percent escape");
    }
  }
  return Status::Ok();
}

// kInvalidArgument for a NUL or another control character in a decoded path or parameter.
Status CheckNoControl(std::string_view decoded, std::string_view what) {
  for (unsigned char c : decoded) {
    if (c < 0x20 || c == 0x7f) return Status::InvalidArgument(std::string(what) + " holds a control character");
  }
  return Status::Ok();
}

// A key's segments: none empty, "." or ".." (S3 keeps them literally, but a store on a file
// system or a proxy may resolve them, and no table file is named so).
Status CheckKey(std::string_view key) {
  size_t pos = 0;
  while (true) {
    const size_t slash = key.find('/', pos);
    const std::string_view segment = key.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (segment.empty() || segment == "." || segment == "..") {
      return Status::InvalidArgument("the object key '" + std::string(key) + "' has an empty, '.' or '..' segment");
    }
    if (slash == std::string_view::npos) return Status::Ok();
    pos = slash + 1;
  }
}

struct ParsedUri {
  std::string bucket;
  std::string key;  // decoded; empty for a bucket-level request
  Pairs query;      // decoded, in order
  std::string host;
  std::string path;  // as signed and sent: re-encoded
};

Result<ParsedUri> ParseUri(const S3Endpoint& endpoint, std::string_view uri) {
  const size_t sep = uri.find("://");
  if (sep == std::string_view::npos) return Status::InvalidArgument("the uri to sign is not an absolute URL");
  const std::string scheme = AsciiLower(uri.substr(0, sep));
  std::string_view rest = uri.substr(sep + 3);
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) {
    return Status::InvalidArgument("the uri to sign has a fragment");
  }
  const size_t path_start = rest.find_first_of("/?");
  std::string host = AsciiLower(rest.substr(0, path_start));
  rest = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (host.empty() || host.find('@') != std::string::npos) {
    return Status::InvalidArgument("the uri to sign has no host, or user information");
  }
  // The Host header leaves a default port out, as S3EndpointOf does.
  if ((scheme == "http" && host.ends_with(":80")) || (scheme == "https" && host.ends_with(":443"))) {
    host = host.substr(0, host.rfind(':'));
  }
  const size_t question = rest.find('?');
  std::string_view raw_path = rest.substr(0, question);
  std::string_view raw_query = question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  if (raw_path.empty()) raw_path = "/";
  SKADE_RETURN_IF_ERROR(CheckEscapes(raw_path, "the uri's path"));
  const std::string path = PercentDecode(raw_path, false);
  SKADE_RETURN_IF_ERROR(CheckNoControl(path, "the uri's path"));

  ParsedUri out;
  if (scheme != endpoint.scheme) {
    return Status::PermissionDenied("requests to " + scheme + "://" + host + " are not signed here (the store is " +
                                    endpoint.scheme + "://" + endpoint.host + ")");
  }
  if (host == endpoint.host) {
    // Path-style: /bucket/key.
    const size_t slash = path.find('/', 1);
    out.bucket = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    out.key = slash == std::string::npos ? "" : path.substr(slash + 1);
    if (out.bucket.empty()) return Status::PermissionDenied("requests without a bucket are not signed");
    out.path = "/" + UriEncodePath(out.bucket) + (slash == std::string::npos ? "" : "/" + UriEncodePath(out.key));
  } else if (host.size() > endpoint.host.size() + 1 && host.ends_with("." + endpoint.host)) {
    out.bucket = host.substr(0, host.size() - endpoint.host.size() - 1);
    out.key = path.substr(1);
    out.path = "/" + UriEncodePath(out.key);
  } else {
    return Status::PermissionDenied("requests to " + scheme + "://" + host + " are not signed here (the store is " +
                                    endpoint.scheme + "://" + endpoint.host + ")");
  }
  out.host = host;
  if (!out.key.empty()) SKADE_RETURN_IF_ERROR(CheckKey(out.key));
  SKADE_RETURN_IF_ERROR(CheckEscapes(raw_query, "the uri's query"));
  out.query = ParseQueryString(raw_query);
  for (const auto& [name, value] : out.query) {
    SKADE_RETURN_IF_ERROR(CheckNoControl(name, "a query parameter"));
    SKADE_RETURN_IF_ERROR(CheckNoControl(value, "a query parameter"));
  }
  return out;
}

const std::string* QueryValue(const Pairs& query, std::string_view name) {
  for (const auto& [n, v] : query) {
    if (n == name) return &v;
  }
  return nullptr;
}

// kPermissionDenied unless every query parameter is one of `allowed`.
Status OnlyParameters(const Pairs& query, std::initializer_list<std::string_view> allowed, std::string_view operation) {
  for (const auto& [name, value] : query) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return Status::PermissionDenied("the query parameter '" + name + "' is not signed for " + std::string(operation));
    }
  }
  std::set<std::string_view> seen;
  for (const auto& [name, value] : query) {
    if (!seen.insert(name).second) return Status::InvalidArgument("the query parameter '" + name + "' is repeated");
  }
  return Status::Ok();
}

// Whether s3://bucket/key lies within one of `roots`.
bool WithinRoots(std::span<const std::string> roots, const std::string& bucket, std::string_view key) {
  const std::string location = "s3://" + bucket + "/" + std::string(key);
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& root) { return IsWithin(location, root); });
}

// Whether a listing prefix stays inside a root: it starts with the root's key and a '/'.
bool PrefixWithinRoots(std::span<const std::string> roots, const std::string& bucket, std::string_view prefix) {
  for (const std::string& root : roots) {
    Result<S3Location> loc = ParseS3Location(NormalizeLocation(root));
    if (!loc.ok() || loc->bucket != bucket) continue;
    std::string root_key = loc->key;
    while (!root_key.empty() && root_key.back() == '/') root_key.pop_back();
    if (root_key.empty() || prefix.starts_with(root_key + "/")) return true;
  }
  return false;
}

Status OutsideRoots(const std::string& bucket, std::string_view key) {
  return Status::PermissionDenied("s3://" + bucket + "/" + std::string(key) + " is outside the table's locations");
}

// The keys of a DeleteObjects body.
Result<std::vector<std::string>> DeleteKeys(std::string_view body) {
  Result<XmlElement> xml = ParseXml(body);
  if (!xml.ok() || xml->name != "Delete") return Status::InvalidArgument("the DeleteObjects body is not a <Delete> document");
  std::vector<std::string> keys;
  for (const XmlElement* object : xml->Children("Object")) {
    const XmlElement* key = object->Child("Key");
    if (key == nullptr) return Status::InvalidArgument("a DeleteObjects <Object> has no <Key>");
    if (object->Child("VersionId") != nullptr) {
      return Status::PermissionDenied("deleting object versions is not signed");
    }
    keys.push_back(key->text);
  }
  if (keys.empty()) return Status::InvalidArgument("the DeleteObjects body names no object");
  return keys;
}

// 64 lower-case hex digits (a SHA-256 as x-amz-content-sha256 carries it).
bool IsHexDigest(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return HexDigitValue(c) >= 0 && c == AsciiLower(c); });
}

// Headers that would let a signed request read other objects or change who may read them.
bool IsRefusedHeader(std::string_view lower) {
  return lower.starts_with("x-amz-copy-source") || lower == "x-amz-acl" || lower.starts_with("x-amz-grant-") ||
         lower == "x-amz-website-redirect-location" || lower.starts_with("x-amz-object-lock-") ||
         lower == "x-amz-bypass-governance-retention";
}

}  // namespace

Result<S3SignOutput> SignS3Request(const S3Options& options, std::span<const std::string> roots,
                                   S3SignAccess access, const S3SignInput& input, int64_t unix_seconds) {
  if (options.access_key_id.empty()) {
    return Status::InvalidArgument("remote signing needs the store's credentials, and none are configured");
  }
  const std::string& method = input.method;
  const bool read = method == "GET" || method == "HEAD";
  const bool write = method == "PUT" || method == "POST" || method == "DELETE";
  if (!read && !write) return Status::InvalidArgument("requests with method '" + method + "' are not signed");
  if (write && access != S3SignAccess::kReadWrite) {
    return Status::PermissionDenied(method + " requests are not signed for a read-only client");
  }
  SKADE_ASSIGN_OR_RETURN(S3Endpoint endpoint, S3EndpointOf(options));
  SKADE_ASSIGN_OR_RETURN(ParsedUri uri, ParseUri(endpoint, input.uri));

  // The headers, checked; the signature's own are dropped (they are replaced).
  Pairs kept;
  Pairs signed_headers;
  std::string content_sha256;
  for (const auto& [name, value] : input.headers) {
    const std::string lower = AsciiLower(name);
    if (lower.empty() || lower.find_first_of(" \t\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos || value.find('\0') != std::string::npos) {
      return Status::InvalidArgument("the header '" + name + "' is malformed");
    }
    if (IsRefusedHeader(lower)) return Status::PermissionDenied("requests with the header " + lower + " are not signed");
    if (lower == "authorization" || lower == "x-amz-date" || lower == "x-amz-security-token" || lower == "host") continue;
    if (lower == "x-amz-content-sha256") {
      content_sha256 = value;
      continue;
    }
    kept.emplace_back(name, value);
    if (lower.starts_with("x-amz-") || lower == "content-md5") signed_headers.emplace_back(lower, value);
  }

  // The operation, and what it reaches.
  const Pairs& q = uri.query;
  bool delete_objects = false;
  if (!uri.key.empty()) {
    if (!WithinRoots(roots, uri.bucket, uri.key)) return OutsideRoots(uri.bucket, uri.key);
    if (read) {
      SKADE_RETURN_IF_ERROR(OnlyParameters(q, {"x-id", "partNumber", "versionId"}, "reading an object"));
    } else if (method == "PUT") {
      SKADE_RETURN_IF_ERROR(OnlyParameters(q, {"x-id", "partNumber", "uploadId"}, "writing an object"));
      if ((QueryValue(q, "partNumber") == nullptr) != (QueryValue(q, "uploadId") == nullptr)) {
        return Status::InvalidArgument("an upload part needs both partNumber and uploadId");
      }
    } else if (method == "POST") {
      SKADE_RETURN_IF_ERROR(OnlyParameters(q, {"x-id", "uploads", "uploadId"}, "a multipart upload"));
      if ((QueryValue(q, "uploads") == nullptr) == (QueryValue(q, "uploadId") == nullptr)) {
        return Status::PermissionDenied("POST on an object is signed only to start or complete a multipart upload");
      }
    } else {
      SKADE_RETURN_IF_ERROR(OnlyParameters(q, {"x-id", "uploadId"}, "deleting an object"));
    }
  } else if (read) {
    SKADE_RETURN_IF_ERROR(OnlyParameters(q,
                                         {"list-type", "prefix", "delimiter", "max-keys", "continuation-token",
                                          "start-after", "marker", "encoding-type", "fetch-owner", "x-id"},
                                         "a listing"));
    const std::string* list_type = QueryValue(q, "list-type");
    if (list_type != nullptr && *list_type != "2") return Status::InvalidArgument("list-type must be 2");
    const std::string* prefix = QueryValue(q, "prefix");
    if (prefix == nullptr || !PrefixWithinRoots(roots, uri.bucket, *prefix)) {
      return Status::PermissionDenied("listing s3://" + uri.bucket + "/" + (prefix ? *prefix : std::string()) +
                                      " reaches outside the table's locations");
    }
    if (const std::string* encoding = QueryValue(q, "encoding-type"); encoding != nullptr && *encoding != "url") {
      return Status::InvalidArgument("encoding-type must be url");
    }
  } else if (method == "POST" && QueryValue(q, "delete") != nullptr) {
    SKADE_RETURN_IF_ERROR(OnlyParameters(q, {"delete", "x-id"}, "DeleteObjects"));
    if (!input.body) return Status::InvalidArgument("a DeleteObjects request is signed only with its body");
    SKADE_ASSIGN_OR_RETURN(std::vector<std::string> keys, DeleteKeys(*input.body));
    for (const std::string& key : keys) {
      SKADE_RETURN_IF_ERROR(CheckKey(key));
      if (!WithinRoots(roots, uri.bucket, key)) return OutsideRoots(uri.bucket, key);
    }
    delete_objects = true;
  } else {
    return Status::PermissionDenied(method + " requests on the bucket " + uri.bucket + " are not signed");
  }

  // The payload hash S3 checks: the body's own for DeleteObjects (only the checked body passes).
  std::string payload_hash = std::string(kUnsignedPayload);
  if (delete_objects) {
    const std::string digest = Sha256Hex(*input.body);
    if (!content_sha256.empty() && content_sha256 != digest) {
      return Status::InvalidArgument("x-amz-content-sha256 is not the SHA-256 of the DeleteObjects body");
    }
    payload_hash = digest;
  } else if (!content_sha256.empty()) {
    if (content_sha256.starts_with("STREAMING-AWS4-HMAC-SHA256")) {
      return Status::InvalidArgument("chunk-signed uploads (" + content_sha256 +
                                     ") cannot be signed remotely; send the payload unsigned or hashed");
    }
    if (content_sha256 != kUnsignedPayload && content_sha256 != "STREAMING-UNSIGNED-PAYLOAD-TRAILER" &&
        !IsHexDigest(content_sha256)) {
      return Status::InvalidArgument("x-amz-content-sha256 '" + content_sha256 + "' is not a payload hash");
    }
    payload_hash = content_sha256;
  }

  SigV4Request sig;
  sig.method = method;
  sig.host = uri.host;
  sig.path = uri.path;
  sig.query = uri.query;
  sig.headers = signed_headers;
  sig.payload_hash = payload_hash;
  const AwsCredentials credentials{options.access_key_id, options.secret_access_key, options.session_token};
  SigV4Result signature = SignRequest(sig, credentials, SigV4Scope{options.region, "s3"}, unix_seconds);

  S3SignOutput out;
  // A parameter without a value ("?uploads", "?delete") is sent as "name=", which S3 reads the same.
  out.uri = endpoint.scheme + "://" + uri.host + uri.path + EncodedQuery(uri.query);
  out.headers = std::move(kept);
  for (auto& header : signature.headers_to_add) out.headers.push_back(std::move(header));
  out.read = read;
  return out;
}

}  // namespace skade::io
