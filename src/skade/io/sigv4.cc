#include "skade/io/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "skade/base/base64.h"
#include "skade/base/hex.h"
#include "skade/base/status.h"

namespace skade::io {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

// A header value as signed: leading and trailing whitespace removed, inner runs of spaces and
// tabs collapsed to one space (the SigV4 canonical-headers rule).
std::string CanonicalHeaderValue(std::string_view v) {
  std::string out;
  bool pending_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

// Sorted by encoded name, then encoded value; "name=value" joined by '&'.
std::string CanonicalQuery(const Pairs& query) {
  Pairs encoded;
  encoded.reserve(query.size());
  for (const auto& [k, v] : query) encoded.emplace_back(UriEncode(k), UriEncode(v));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out.push_back('&');
    out.append(k).append("=").append(v);
  }
  return out;
}

struct CanonicalHeaders {
  std::string block;         // "name:value\n" per header
  std::string signed_names;  // "a;b;c"
};

// Names lower-cased and sorted; repeated names joined with ',' in the order given.
CanonicalHeaders Canonicalize(const Pairs& headers) {
  std::vector<std::pair<std::string, std::string>> merged;
  for (const auto& [name, value] : headers) {
    std::string lower = ToLowerAscii(name);
    std::string canonical = CanonicalHeaderValue(value);
    auto it =
        std::find_if(merged.begin(), merged.end(), [&](const auto& e) { return e.first == lower; });
    if (it == merged.end()) {
      merged.emplace_back(std::move(lower), std::move(canonical));
    } else {
      it->second.append(",").append(canonical);
    }
  }
  std::sort(merged.begin(), merged.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  CanonicalHeaders out;
  for (const auto& [name, value] : merged) {
    out.block.append(name).append(":").append(value).append("\n");
    if (!out.signed_names.empty()) out.signed_names.push_back(';');
    out.signed_names.append(name);
  }
  return out;
}

bool HasHeader(const Pairs& headers, std::string_view lower_name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& e) { return ToLowerAscii(e.first) == lower_name; });
}

// Fills canonical_request, string_to_sign, signed_headers and signature.
void Sign(const std::string& method, const std::string& path, const std::string& canonical_query,
          const Pairs& headers, const std::string& payload_hash, const std::string& amz_date,
          const std::string& credential_scope, const AwsCredentials& credentials,
          const SigV4Scope& scope, SigV4Result* out) {
  CanonicalHeaders canonical = Canonicalize(headers);
  out->canonical_request = method + "\n" + path + "\n" + canonical_query + "\n" + canonical.block +
                           "\n" + canonical.signed_names + "\n" + payload_hash;
  out->string_to_sign = std::string(kAlgorithm) + "\n" + amz_date + "\n" + credential_scope + "\n" +
                        Sha256Hex(out->canonical_request);
  out->signed_headers = canonical.signed_names;
  std::string key = SigV4SigningKey(credentials.secret_access_key, amz_date.substr(0, 8),
                                    scope.region, scope.service);
  out->signature = HexEncode(HmacSha256(key, out->string_to_sign));
}

std::string Digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  SKADE_CHECK(EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) == 1);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::string UriEncode(std::string_view s) { return Encode(s, false); }
std::string UriEncodePath(std::string_view s) { return Encode(s, true); }

std::string EncodedQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out;
  for (size_t i = 0; i < query.size(); ++i) {
    out += (i == 0 ? "?" : "&") + UriEncode(query[i].first) + "=" + UriEncode(query[i].second);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) { return HexEncode(Digest(EVP_sha256(), data)); }

std::string Md5Base64(std::string_view data) { return EncodeBase64(Digest(EVP_md5(), data)); }

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  SKADE_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                   reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
                   &len) != nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string AmzDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  size_t n = std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

std::string SigV4SigningKey(std::string_view secret_access_key, std::string_view date,
                            std::string_view region, std::string_view service) {
  std::string k_date = HmacSha256("AWS4" + std::string(secret_access_key), date);
  std::string k_region = HmacSha256(k_date, region);
  std::string k_service = HmacSha256(k_region, service);
  return HmacSha256(k_service, "aws4_request");
}

SigV4Result SignRequest(const SigV4Request& request, const AwsCredentials& credentials,
                        const SigV4Scope& scope, int64_t unix_seconds) {
  const std::string amz_date = AmzDate(unix_seconds);
  const std::string credential_scope =
      amz_date.substr(0, 8) + "/" + scope.region + "/" + scope.service + "/aws4_request";
  const std::string payload_hash =
      request.payload_hash.empty() ? Sha256Hex("") : request.payload_hash;

  SigV4Result out;
  Pairs headers = request.headers;
  if (!HasHeader(headers, "host")) headers.emplace_back("host", request.host);
  if (!HasHeader(headers, "x-amz-date")) {
    headers.emplace_back("x-amz-date", amz_date);
    out.headers_to_add.emplace_back("x-amz-date", amz_date);
  }
  if (scope.service == "s3" && !HasHeader(headers, "x-amz-content-sha256")) {
    headers.emplace_back("x-amz-content-sha256", payload_hash);
    out.headers_to_add.emplace_back("x-amz-content-sha256", payload_hash);
  }
  if (!credentials.session_token.empty() && !HasHeader(headers, "x-amz-security-token")) {
    headers.emplace_back("x-amz-security-token", credentials.session_token);
    out.headers_to_add.emplace_back("x-amz-security-token", credentials.session_token);
  }
  Sign(request.method, request.path, CanonicalQuery(request.query), headers, payload_hash, amz_date,
       credential_scope, credentials, scope, &out);
  out.headers_to_add.emplace_back(
      "Authorization", std::string(kAlgorithm) + " Credential=" + credentials.access_key_id + "/" +
                           credential_scope + ", SignedHeaders=" + out.signed_headers +
                           ", Signature=" + out.signature);
  return out;
}

SigV4Result PresignRequest(const SigV4Request& request, const AwsCredentials& credentials,
                           const SigV4Scope& scope, int64_t unix_seconds, int64_t expires_seconds) {
  const std::string amz_date = AmzDate(unix_seconds);
  const std::string credential_scope =
      amz_date.substr(0, 8) + "/" + scope.region + "/" + scope.service + "/aws4_request";
  Pairs headers = request.headers;
  if (!HasHeader(headers, "host")) headers.emplace_back("host", request.host);
  const std::string signed_names = Canonicalize(headers).signed_names;

  Pairs query = request.query;
  query.emplace_back("X-Amz-Algorithm", std::string(kAlgorithm));
  query.emplace_back("X-Amz-Credential", credentials.access_key_id + "/" + credential_scope);
  query.emplace_back("X-Amz-Date", amz_date);
  query.emplace_back("X-Amz-Expires", std::to_string(expires_seconds));
  query.emplace_back("X-Amz-SignedHeaders", signed_names);
  if (!credentials.session_token.empty()) {
    query.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  const std::string canonical_query = CanonicalQuery(query);
  SigV4Result out;
  Sign(request.method, request.path, canonical_query, headers, std::string(kUnsignedPayload),
       amz_date, credential_scope, credentials, scope, &out);
  out.query = canonical_query + "&X-Amz-Signature=" + out.signature;
  return out;
}

}  // namespace skade::io
