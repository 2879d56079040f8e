#include "skade/io/s3_file_io.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "skade/base/ascii.h"
#include "skade/io/sigv4.h"
#include "skade/io/xml_internal.h"

namespace skade::io {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

constexpr int kMaxUpdateAttempts = 32;
constexpr int kMaxConditionalConflictRetries = 5;
constexpr int64_t kMaxParts = 10'000;
constexpr size_t kDeleteBatch = 1000;

std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "2013-05-24T00:00:00.000Z" (ListObjectsV2's LastModified, ISO 8601 in UTC) → ms since epoch.
std::optional<int64_t> ParseIso8601Millis(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](size_t at, size_t len) -> std::optional<int> {
    int v = 0;
    for (size_t i = at; i < at + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
       se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31) {
    return std::nullopt;
  }
  int millis = 0;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    int scale = 100;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      millis += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i >= s.size() || s[i] != 'Z') return std::nullopt;
  // Days since 1970-01-01 of the civil date (H. Hinnant's days_from_civil).
  int64_t yy = *y - (*mo <= 2);
  const int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(yy - era * 400);
  const unsigned m = static_cast<unsigned>(*mo);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + static_cast<unsigned>(*d) - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + static_cast<int64_t>(doe) - 719468;
  return ((days * 86400 + *h * 3600 + *mi * 60 + *se) * 1000) + millis;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  s = TrimSpace(s);
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

using Endpoint = S3Endpoint;

}  // namespace

Result<S3Endpoint> S3EndpointOf(const S3Options& options) {
  if (options.endpoint.empty()) {
    return Endpoint{"https", "s3." + options.region + ".amazonaws.com"};
  }
  std::string_view e = options.endpoint;
  Endpoint out;
  size_t sep = e.find("://");
  if (sep == std::string_view::npos) {
    out.scheme = "https";
  } else {
    out.scheme = ToLowerAscii(e.substr(0, sep));
    e.remove_prefix(sep + 3);
  }
  if (out.scheme != "http" && out.scheme != "https") {
    return Status::InvalidArgument("S3 endpoint '" + options.endpoint +
                                   "': scheme must be http or https");
  }
  while (!e.empty() && e.back() == '/') e.remove_suffix(1);
  if (e.empty() || e.find_first_of("/?#@ ") != std::string_view::npos) {
    return Status::InvalidArgument("S3 endpoint '" + RedactUrl(options.endpoint) +
                                   "': expected scheme://host[:port] without a path");
  }
  std::string host(e);
  // The Host header omits a default port (what clients such as botocore sign).
  if ((out.scheme == "http" && host.size() > 3 && host.ends_with(":80")) ||
      (out.scheme == "https" && host.size() > 4 && host.ends_with(":443"))) {
    host = host.substr(0, host.rfind(':'));
  }
  out.host = ToLowerAscii(host);
  return out;
}

bool S3PathStyleFor(const S3Options& options, const S3Endpoint& endpoint, std::string_view bucket) {
  const bool path_style = options.path_style.value_or(!options.endpoint.empty());
  // A bucket with a '.' in a virtual host would not match an https certificate.
  if (!path_style && endpoint.scheme == "https" && bucket.find('.') != std::string_view::npos) return true;
  return path_style;
}

namespace {

struct S3Error {
  std::string code;
  std::string message;
  std::string bucket_name;
};

// S3's <Error><Code/><Message/>…</Error> body; empty fields when there is none (HEAD).
S3Error ParseError(const HttpResponse& response) {
  S3Error e;
  if (response.body.empty()) return e;
  Result<XmlElement> xml = ParseXml(response.body);
  if (!xml.ok() || xml->name != "Error") return e;
  e.code = xml->ChildText("Code");
  e.message = xml->ChildText("Message");
  e.bucket_name = xml->ChildText("BucketName");
  return e;
}

bool IsPermissionCode(std::string_view code) {
  return code == "AccessDenied" || code == "SignatureDoesNotMatch" ||
         code == "InvalidAccessKeyId" || code == "RequestTimeTooSkewed" || code == "ExpiredToken" ||
         code == "InvalidToken" || code == "AllAccessDisabled";
}

// Two writers changing one location within a process take the same stripe.
constexpr size_t kLockStripes = 64;

class ErrorFileIO final : public FileIO {
 public:
  explicit ErrorFileIO(Status status) : status_(std::move(status)) {}
  Result<std::string> Read(std::string_view) override { return status_; }
  Result<std::string> ReadRange(std::string_view, int64_t, int64_t) override { return status_; }
  Result<FileInfo> Stat(std::string_view) override { return status_; }
  Status CreateExclusive(std::string_view, std::string_view) override { return status_; }
  Status Overwrite(std::string_view, std::string_view) override { return status_; }
  Status Update(std::string_view, const Change&) override { return status_; }
  Result<std::vector<FileInfo>> List(std::string_view) override { return status_; }
  Status Delete(std::string_view) override { return status_; }

 private:
  Status status_;
};

// Condition on a write.
struct Precondition {
  std::string if_match;        // an ETag, sent as If-Match
  bool if_none_match = false;  // If-None-Match: *
};

}  // namespace

Result<S3Location> ParseS3Location(std::string_view location) {
  size_t sep = location.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument("not an S3 location: '" + std::string(location) + "'");
  }
  std::string scheme = ToLowerAscii(location.substr(0, sep));
  if (scheme != "s3" && scheme != "s3a" && scheme != "s3n") {
    return Status::InvalidArgument("not an S3 location (s3://, s3a://, s3n://): '" +
                                   std::string(location) + "'");
  }
  std::string_view rest = location.substr(sep + 3);
  size_t slash = rest.find('/');
  std::string_view bucket = rest.substr(0, slash);
  if (bucket.empty()) {
    return Status::InvalidArgument("S3 location without a bucket: '" + std::string(location) + "'");
  }
  S3Location out;
  out.scheme = std::move(scheme);
  out.bucket = std::string(bucket);
  if (slash != std::string_view::npos) out.key = std::string(rest.substr(slash + 1));
  return out;
}

// ---- the implementation ----------------------------------------------------------------------

struct S3FileIO::State {
  S3Options options;
  Endpoint endpoint;
  std::unique_ptr<HttpClient> http;
  std::array<std::mutex, kLockStripes> stripes;

  struct Call {
    Call(std::string m, std::string b, std::string k, Pairs q = {})
        : method(std::move(m)), bucket(std::move(b)), key(std::move(k)), query(std::move(q)) {}
    std::string method;
    std::string bucket;
    std::string key;  // empty for bucket-level requests
    Pairs query;      // decoded
    HttpHeaders headers;
    std::string_view body;
    RetryMode retry = RetryMode::kIfIdempotent;
  };

  bool PathStyleFor(const std::string& bucket) const { return S3PathStyleFor(options, endpoint, bucket); }

  static std::string Describe(const std::string& bucket, const std::string& key) {
    return key.empty() ? "s3://" + bucket : "s3://" + bucket + "/" + key;
  }

  Result<HttpResponse> Execute(const Call& call) {
    std::string host;
    std::string path;
    if (PathStyleFor(call.bucket)) {
      host = endpoint.host;
      path = "/" + UriEncodePath(call.bucket) + "/" + UriEncodePath(call.key);
    } else {
      host = call.bucket + "." + endpoint.host;
      path = "/" + UriEncodePath(call.key);
    }
    std::string url = endpoint.scheme + "://" + host + path + EncodedQuery(call.query);
    HttpRequest request;
    request.method = call.method;
    request.url = std::move(url);
    request.headers = call.headers;
    request.body = call.body;
    request.retry = call.retry;
    request.connect_timeout = options.connect_timeout;
    request.timeout = options.request_timeout;

    if (options.remote_signer) {
      // Signed once by the catalog (x-amz-date stays valid for S3's 15 minutes of retries); the
      // body goes along where S3 must see exactly the checked one (DeleteObjects).
      StorageRequest to_sign;
      to_sign.method = call.method;
      to_sign.url = request.url;
      to_sign.headers = call.headers.entries();
      const bool delete_objects = std::any_of(call.query.begin(), call.query.end(),
                                              [](const auto& q) { return q.first == "delete"; });
      if (delete_objects) to_sign.body = std::string(call.body);
      Result<SignedStorageRequest> signed_request = options.remote_signer(to_sign);
      if (!signed_request.ok()) {
        return signed_request.status().WithContext("S3 " + call.method + " " + Describe(call.bucket, call.key) +
                                                   ": remote signing");
      }
      request.url = signed_request->url;
      for (const auto& [name, value] : signed_request->headers) {
        if (EqualsIgnoreAsciiCase(name, "host") || EqualsIgnoreAsciiCase(name, "content-length")) continue;
        request.headers.Set(name, value);
      }
    }
    const std::string payload_hash = Sha256Hex(call.body);
    HttpClient::Prepare prepare = [&](HttpRequest& attempt) {
      attempt.headers.Set("Host", host);
      if (options.remote_signer || options.access_key_id.empty()) return;
      SigV4Request sig;
      sig.method = call.method;
      sig.host = host;
      sig.path = path;
      sig.query = call.query;
      sig.headers = call.headers.entries();
      sig.payload_hash = payload_hash;
      AwsCredentials credentials{options.access_key_id, options.secret_access_key,
                                 options.session_token};
      SigV4Result signed_request = SignRequest(sig, credentials, SigV4Scope{options.region, "s3"},
                                               static_cast<int64_t>(std::time(nullptr)));
      for (auto& [name, value] : signed_request.headers_to_add) {
        attempt.headers.Set(std::move(name), std::move(value));
      }
    };
    return http->Send(request, prepare)
        .WithContext("S3 " + call.method + " " + Describe(call.bucket, call.key));
  }

  // The Status for a response that is not a success.
  static Status ErrorStatus(const HttpResponse& response, const Call& call) {
    S3Error e = ParseError(response);
    std::string msg = "S3 " + call.method + " " + Describe(call.bucket, call.key) + ": HTTP " +
                      std::to_string(response.status);
    if (!e.code.empty()) msg += " " + e.code;
    if (!e.message.empty()) msg += ": " + e.message;
    if (response.attempts > 1) msg += " (after " + std::to_string(response.attempts) + " attempts)";
    if (e.code == "NoSuchBucket") {
      return Status::NotFound("bucket '" + call.bucket + "' does not exist (" + msg + ")");
    }
    if (response.status == 404) return Status::NotFound(std::move(msg));
    if (response.status == 401) return Status::Unauthorized(std::move(msg));
    if (response.status == 403 || IsPermissionCode(e.code)) {
      return Status::PermissionDenied(std::move(msg));
    }
    if (response.status == 412) return Status::Conflict(std::move(msg));
    if (response.status == 429 || response.status >= 500 || e.code == "SlowDown") {
      return Status::Unavailable(std::move(msg));
    }
    return Status::IoError(std::move(msg));
  }

  static bool Success(const HttpResponse& r) { return r.status >= 200 && r.status < 300; }

  Result<S3Location> ObjectLocation(std::string_view location) {
    SKADE_ASSIGN_OR_RETURN(S3Location loc, ParseS3Location(location));
    if (loc.key.empty()) {
      return Status::InvalidArgument("S3 location names no object: '" + std::string(location) +
                                     "'");
    }
    return loc;
  }

  std::mutex& StripeFor(const S3Location& loc) {
    return stripes[std::hash<std::string>{}(loc.bucket + "/" + loc.key) % kLockStripes];
  }

  struct Object {
    std::string content;
    std::string etag;
  };

  // nullopt when absent.
  Result<std::optional<Object>> Get(const S3Location& loc) {
    Call call{"GET", loc.bucket, loc.key};
    SKADE_ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
    if (r.status == 404) {
      Status st = ErrorStatus(r, call);
      if (ParseError(r).code == "NoSuchBucket") return st;
      return std::optional<Object>();
    }
    if (!Success(r)) return ErrorStatus(r, call);
    return std::optional<Object>(Object{std::move(r.body), r.headers.Get("ETag").value_or("")});
  }

  // The ETag of an existing object, nullopt when absent.
  Result<std::optional<std::string>> HeadEtag(const S3Location& loc) {
    Call call{"HEAD", loc.bucket, loc.key};
    SKADE_ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
    if (r.status == 404) return std::optional<std::string>();
    if (!Success(r)) return ErrorStatus(r, call);
    return std::optional<std::string>(r.headers.Get("ETag").value_or(""));
  }

  static void AddPrecondition(const Precondition& pre, HttpHeaders* headers) {
    if (pre.if_none_match) headers->Set("If-None-Match", "*");
    if (!pre.if_match.empty()) headers->Set("If-Match", pre.if_match);
  }

  // PUT or multipart upload under `pre`. A failed precondition comes back as kConflict (412)
  // for the caller to interpret.
  Status Put(const S3Location& loc, std::string_view data, const Precondition& pre) {
    if (static_cast<int64_t>(data.size()) > options.multipart_threshold) {
      return PutMultipart(loc, data, pre);
    }
    for (int conflict = 0;; ++conflict) {
      Call call{"PUT", loc.bucket, loc.key};
      AddPrecondition(pre, &call.headers);
      call.body = data;
      SKADE_ASSIGN_OR_RETURN(HttpResponse r, Execute(call));
      if (Success(r)) return Status::Ok();
      // AWS answers 409 ConditionalRequestConflict while another conditional write to the key is
      // in flight, and asks for a retry.
      if (r.status == 409 && ParseError(r).code == "ConditionalRequestConflict" &&
          conflict < kMaxConditionalConflictRetries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50 << conflict));
        continue;
      }
      return ErrorStatus(r, call);
    }
  }

  Status PutMultipart(const S3Location& loc, std::string_view data, const Precondition& pre) {
    int64_t part_size = std::max<int64_t>(1, options.multipart_part_size);
    const auto size = static_cast<int64_t>(data.size());
    if ((size + part_size - 1) / part_size > kMaxParts)
      part_size = (size + kMaxParts - 1) / kMaxParts;

    // CreateMultipartUpload: a repeat only leaves an unused upload behind, so it may be retried.
    Call create{"POST", loc.bucket, loc.key, {{"uploads", ""}}};
    create.retry = RetryMode::kAlways;
    SKADE_ASSIGN_OR_RETURN(HttpResponse created, Execute(create));
    if (!Success(created)) return ErrorStatus(created, create);
    SKADE_ASSIGN_OR_RETURN(XmlElement init, ParseXml(created.body)
                                                .WithContext("S3 CreateMultipartUpload " +
                                                             Describe(loc.bucket, loc.key)));
    const std::string upload_id = init.ChildText("UploadId");
    if (init.name != "InitiateMultipartUploadResult" || upload_id.empty()) {
      return Status::IoError("S3 CreateMultipartUpload " + Describe(loc.bucket, loc.key) +
                             ": no UploadId in the response");
    }
    Status st = UploadParts(loc, data, part_size, upload_id, pre);
    if (!st.ok()) {
      // Abort so the parts stop taking space; a failure here leaves them to the bucket's
      // lifecycle rules and does not hide the first error.
      Call abort{"DELETE", loc.bucket, loc.key, {{"uploadId", upload_id}}};
      (void)Execute(abort);
    }
    return st;
  }

  Status UploadParts(const S3Location& loc, std::string_view data, int64_t part_size,
                     const std::string& upload_id, const Precondition& pre) {
    std::string complete =
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
    int part_number = 0;
    // TODO(#13): upload parts concurrently for throughput on large files.
    for (int64_t offset = 0; offset < static_cast<int64_t>(data.size()); offset += part_size) {
      ++part_number;
      Call part{"PUT",
                loc.bucket,
                loc.key,
                {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}}};
      part.body = data.substr(static_cast<size_t>(offset), static_cast<size_t>(part_size));
      SKADE_ASSIGN_OR_RETURN(HttpResponse r, Execute(part));
      if (!Success(r)) return ErrorStatus(r, part);
      std::optional<std::string> etag = r.headers.Get("ETag");
      if (!etag || etag->empty()) {
        return Status::IoError("S3 UploadPart " + Describe(loc.bucket, loc.key) + " part " +
                               std::to_string(part_number) + ": no ETag in the response");
      }
      complete += "<Part><PartNumber>" + std::to_string(part_number) + "</PartNumber><ETag>" +
                  XmlEscape(*etag) + "</ETag></Part>";
    }
    complete += "</CompleteMultipartUpload>";
    // CompleteMultipartUpload is not retried: a repeat after a lost success answers
    // NoSuchUpload, which would misreport a finished write.
    Call finish{"POST", loc.bucket, loc.key, {{"uploadId", upload_id}}};
    finish.headers.Set("Content-Type", "application/xml");
    AddPrecondition(pre, &finish.headers);
    finish.body = complete;
    SKADE_ASSIGN_OR_RETURN(HttpResponse r, Execute(finish));
    if (!Success(r)) return ErrorStatus(r, finish);
    // S3 may answer 200 and still report an error in the body.
    S3Error e = ParseError(r);
    if (!e.code.empty()) {
      return Status::IoError("S3 CompleteMultipartUpload " + Describe(loc.bucket, loc.key) + ": " +
                             e.code + ": " + e.message);
    }
    return Status::Ok();
  }
};

S3FileIO::S3FileIO(std::unique_ptr<State> state) : state_(std::move(state)) {}
S3FileIO::~S3FileIO() = default;

Result<std::unique_ptr<S3FileIO>> S3FileIO::Open(S3Options options) {
  if (options.region.empty()) return Status::InvalidArgument("S3 options: region is empty");
  if (options.list_page_size < 1 || options.list_page_size > 1000) {
    return Status::InvalidArgument("S3 options: list_page_size must be 1..1000");
  }
  if (options.multipart_threshold < 1 || options.multipart_part_size < 1) {
    return Status::InvalidArgument("S3 options: multipart sizes must be positive");
  }
  if (options.access_key_id.empty() != options.secret_access_key.empty()) {
    return Status::InvalidArgument(
        "S3 options: give both the access key id and the secret, or neither");
  }
  SKADE_ASSIGN_OR_RETURN(Endpoint endpoint, S3EndpointOf(options));
  auto state = std::make_unique<State>();
  HttpClientOptions http_options;
  http_options.retry = options.retry;
  state->http = HttpClient::Make(std::move(http_options));
  state->endpoint = std::move(endpoint);
  state->options = std::move(options);
  return std::unique_ptr<S3FileIO>(new S3FileIO(std::move(state)));
}

std::unique_ptr<FileIO> MakeS3FileIO(S3Options options) {
  Result<std::unique_ptr<S3FileIO>> io = S3FileIO::Open(std::move(options));
  if (!io.ok()) return std::make_unique<ErrorFileIO>(io.status());
  return std::move(io).value();
}

Result<std::string> S3FileIO::Read(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  SKADE_ASSIGN_OR_RETURN(std::optional<State::Object> object, state_->Get(loc));
  if (!object)
    return Status::NotFound("S3 object " + State::Describe(loc.bucket, loc.key) +
                            " does not exist");
  return std::move(object->content);
}

Result<std::string> S3FileIO::ReadRange(std::string_view location, int64_t offset, int64_t length) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  if (offset < 0 || length < 0) {
    return Status::InvalidArgument("S3 range read of " + std::string(location) +
                                   ": negative offset or length");
  }
  if (length == 0) {
    SKADE_RETURN_IF_ERROR(Stat(location));
    return std::string();
  }
  State::Call call{"GET", loc.bucket, loc.key};
  call.headers.Set("Range",
                   "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
  Result<HttpResponse> sent = state_->Execute(call);
  if (!sent.ok()) {
    // A malformed range answer (s3rver sends "206, Content-Range: bytes 0-0/0" and no byte for
    // an empty object, where S3 answers 416) is checked against the object's size: a range
    // past the end reads as empty.
    if (sent.status().code() != StatusCode::kIoError) return sent.status();
    Result<FileInfo> info = Stat(location);
    if (info.ok() && info->size <= offset) return std::string();
    return sent.status();
  }
  HttpResponse r = std::move(sent).value();
  // 416: the range starts at or after the end (also any range of an empty object).
  if (r.status == 416) return std::string();
  if (r.status == 206) {
    if (static_cast<int64_t>(r.body.size()) > length) r.body.resize(static_cast<size_t>(length));
    return std::move(r.body);
  }
  if (r.status == 200) {
    // The server ignored Range and sent the whole object.
    if (offset >= static_cast<int64_t>(r.body.size())) return std::string();
    return r.body.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }
  return State::ErrorStatus(r, call);
}

Result<FileInfo> S3FileIO::Stat(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  State::Call call{"HEAD", loc.bucket, loc.key};
  SKADE_ASSIGN_OR_RETURN(HttpResponse r, state_->Execute(call));
  if (!State::Success(r)) return State::ErrorStatus(r, call);
  FileInfo info;
  info.location = std::string(location);
  std::optional<int64_t> size = ParseInt64(r.headers.Get("Content-Length").value_or(""));
  if (!size) {
    return Status::IoError("S3 HEAD " + State::Describe(loc.bucket, loc.key) +
                           ": no valid Content-Length");
  }
  info.size = *size;
  if (auto modified = ParseHttpDate(r.headers.Get("Last-Modified").value_or(""))) {
    info.modified_ms = *modified * 1000;
  }
  return info;
}

Status S3FileIO::CreateExclusive(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  std::lock_guard<std::mutex> lock(state_->StripeFor(loc));
  const std::string where = State::Describe(loc.bucket, loc.key);
  if (state_->options.conditional_writes == S3ConditionalWrites::kEmulated) {
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> etag, state_->HeadEtag(loc));
    if (etag) return Status::AlreadyExists("S3 object " + where + " already exists");
  }
  Precondition pre;
  pre.if_none_match = true;
  Status st = state_->Put(loc, data, pre);
  if (st.code() == StatusCode::kConflict) {
    return Status::AlreadyExists("S3 object " + where + " already exists (" + st.message() + ")");
  }
  return st;
}

Status S3FileIO::Overwrite(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  return state_->Put(loc, data, Precondition{});
}

Status S3FileIO::Update(std::string_view location, const Change& change) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  std::lock_guard<std::mutex> lock(state_->StripeFor(loc));
  const std::string where = State::Describe(loc.bucket, loc.key);
  for (int attempt = 0; attempt < kMaxUpdateAttempts; ++attempt) {
    SKADE_ASSIGN_OR_RETURN(std::optional<State::Object> object, state_->Get(loc));
    std::optional<std::string> current;
    if (object) current = object->content;
    std::optional<std::string> next = change(current);
    if (!next) return Status::Ok();
    Precondition pre;
    if (object) {
      pre.if_match = object->etag;
    } else {
      pre.if_none_match = true;
    }
    if (state_->options.conditional_writes == S3ConditionalWrites::kEmulated) {
      SKADE_ASSIGN_OR_RETURN(std::optional<std::string> etag, state_->HeadEtag(loc));
      const bool unchanged = object ? (etag && *etag == object->etag) : !etag;
      if (!unchanged) continue;
    }
    Status st = state_->Put(loc, *next, pre);
    // 412: someone changed it since our read; 404 NoSuchKey: it was deleted meanwhile (If-Match
    // on a missing key). Either way read again and re-decide.
    if (st.code() == StatusCode::kConflict ||
        (object && st.code() == StatusCode::kNotFound &&
         st.message().find("NoSuchBucket") == std::string::npos)) {
      continue;
    }
    return st;
  }
  return Status::Conflict("S3 update of " + where + ": still contended after " +
                          std::to_string(kMaxUpdateAttempts) + " attempts");
}

Result<std::vector<FileInfo>> S3FileIO::List(std::string_view prefix) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, ParseS3Location(prefix));
  std::string key_prefix = loc.key;
  if (!key_prefix.empty() && key_prefix.back() != '/') key_prefix.push_back('/');
  std::vector<FileInfo> out;
  std::string token;
  while (true) {
    State::Call call{"GET", loc.bucket, ""};
    call.query = {{"list-type", "2"},
                  {"max-keys", std::to_string(state_->options.list_page_size)},
                  {"prefix", key_prefix}};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    SKADE_ASSIGN_OR_RETURN(HttpResponse r, state_->Execute(call));
    if (!State::Success(r)) return State::ErrorStatus(r, call);
    const std::string where = "S3 ListObjectsV2 s3://" + loc.bucket + "/" + key_prefix;
    SKADE_ASSIGN_OR_RETURN(XmlElement xml, ParseXml(r.body).WithContext(where));
    if (xml.name != "ListBucketResult") {
      return Status::Corruption(where + ": unexpected response <" + xml.name + ">");
    }
    for (const XmlElement* contents : xml.Children("Contents")) {
      std::string key = contents->ChildText("Key");
      if (key.empty() || key.back() == '/') continue;
      if (key.rfind(key_prefix, 0) != 0) continue;
      FileInfo info;
      info.location = loc.scheme + "://" + loc.bucket + "/" + key;
      std::optional<int64_t> size = ParseInt64(contents->ChildText("Size"));
      if (!size) return Status::Corruption(where + ": bad Size for key '" + key + "'");
      info.size = *size;
      info.modified_ms = ParseIso8601Millis(contents->ChildText("LastModified")).value_or(0);
      out.push_back(std::move(info));
    }
    if (xml.ChildText("IsTruncated") != "true") break;
    std::string next = xml.ChildText("NextContinuationToken");
    if (next.empty() || next == token) {
      return Status::Corruption(where + ": truncated listing without a new continuation token");
    }
    token = std::move(next);
  }
  return out;
}

Status S3FileIO::Delete(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  State::Call call{"DELETE", loc.bucket, loc.key};
  SKADE_ASSIGN_OR_RETURN(HttpResponse r, state_->Execute(call));
  if (State::Success(r)) return Status::Ok();
  if (r.status == 404 && ParseError(r).code != "NoSuchBucket") return Status::Ok();
  return State::ErrorStatus(r, call);
}

Status S3FileIO::DeleteMany(std::span<const std::string> locations) {
  // Keys by bucket, in the order first seen.
  std::vector<std::pair<std::string, std::vector<std::string>>> by_bucket;
  for (const std::string& location : locations) {
    SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
    auto it = std::find_if(by_bucket.begin(), by_bucket.end(),
                           [&](const auto& b) { return b.first == loc.bucket; });
    if (it == by_bucket.end()) {
      by_bucket.emplace_back(loc.bucket, std::vector<std::string>{});
      it = by_bucket.end() - 1;
    }
    it->second.push_back(std::move(loc.key));
  }
  Status first_error;
  for (const auto& [bucket, keys] : by_bucket) {
    for (size_t begin = 0; begin < keys.size(); begin += kDeleteBatch) {
      const size_t end = std::min(keys.size(), begin + kDeleteBatch);
      std::string body =
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
          "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
      for (size_t i = begin; i < end; ++i) {
        body += "<Object><Key>" + XmlEscape(keys[i]) + "</Key></Object>";
      }
      body += "</Delete>";
      State::Call call{"POST", bucket, "", {{"delete", ""}}};
      call.headers.Set("Content-Type", "application/xml");
      // S3 requires an integrity header on DeleteObjects.
      call.headers.Set("Content-MD5", Md5Base64(body));
      call.body = body;
      // Deleting the same keys twice is harmless.
      call.retry = RetryMode::kAlways;
      SKADE_ASSIGN_OR_RETURN(HttpResponse r, state_->Execute(call));
      if (!State::Success(r)) {
        Status st = State::ErrorStatus(r, call);
        if (first_error.ok()) first_error = st;
        continue;
      }
      Result<XmlElement> xml = ParseXml(r.body);
      if (!xml.ok()) {
        if (first_error.ok())
          first_error = xml.status().WithContext("S3 DeleteObjects s3://" + bucket);
        continue;
      }
      std::vector<const XmlElement*> errors = xml->Children("Error");
      if (!errors.empty() && first_error.ok()) {
        const XmlElement* e = errors.front();
        std::string msg = "S3 DeleteObjects: " + std::to_string(errors.size()) +
                          " keys not deleted, first s3://" + bucket + "/" + e->ChildText("Key") +
                          ": " + e->ChildText("Code") + ": " + e->ChildText("Message");
        first_error = IsPermissionCode(e->ChildText("Code")) ? Status::PermissionDenied(msg)
                                                             : Status::IoError(msg);
      }
    }
  }
  return first_error;
}

Result<std::string> S3FileIO::PresignUrl(std::string_view method, std::string_view location,
                                         int64_t expires_seconds) {
  SKADE_ASSIGN_OR_RETURN(S3Location loc, state_->ObjectLocation(location));
  if (state_->options.access_key_id.empty()) {
    return Status::InvalidArgument("presigning " + std::string(location) + " needs credentials");
  }
  if (expires_seconds < 1 || expires_seconds > 604800) {
    return Status::InvalidArgument("presigned URLs expire after 1 to 604800 seconds");
  }
  SigV4Request sig;
  sig.method = std::string(method);
  if (state_->PathStyleFor(loc.bucket)) {
    sig.host = state_->endpoint.host;
    sig.path = "/" + UriEncodePath(loc.bucket) + "/" + UriEncodePath(loc.key);
  } else {
    sig.host = loc.bucket + "." + state_->endpoint.host;
    sig.path = "/" + UriEncodePath(loc.key);
  }
  const S3Options& o = state_->options;
  SigV4Result r = PresignRequest(
      sig, AwsCredentials{o.access_key_id, o.secret_access_key, o.session_token},
      SigV4Scope{o.region, "s3"}, static_cast<int64_t>(std::time(nullptr)), expires_seconds);
  return state_->endpoint.scheme + "://" + sig.host + sig.path + "?" + r.query;
}

// ---- options from the environment ------------------------------------------------------------

namespace {

// section → key → value; keys of a nested block ("s3 =\n  addressing_style = path") are
// stored as "s3.addressing_style".
using Ini = std::map<std::string, std::map<std::string, std::string>>;

Result<std::optional<Ini>> ReadIni(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::optional<Ini>();  // an absent file is no configuration
  Ini ini;
  std::string section;
  std::string nested;  // the key that opened a nested block, while in it
  std::string line;
  while (std::getline(in, line)) {
    const bool indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    std::string_view l = TrimSpace(line);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    if (l.front() == '[' && l.back() == ']') {
      section = std::string(TrimSpace(l.substr(1, l.size() - 2)));
      nested.clear();
      ini[section];
      continue;
    }
    size_t eq = l.find('=');
    if (eq == std::string_view::npos || section.empty()) continue;
    std::string key = ToLowerAscii(TrimSpace(l.substr(0, eq)));
    std::string value(TrimSpace(l.substr(eq + 1)));
    if (indented && !nested.empty()) {
      ini[section][nested + "." + key] = value;
      continue;
    }
    nested = value.empty() ? key : "";
    ini[section][key] = value;
  }
  if (in.bad()) return Status::IoError("read '" + path + "' failed");
  return std::optional<Ini>(std::move(ini));
}

}  // namespace

Result<S3Options> S3OptionsFromEnvironment() {
  return S3OptionsFromEnvironment([](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

Result<S3Options> S3OptionsFromEnvironment(const EnvironmentLookup& lookup) {
  auto env = [&](std::string_view name) -> std::string {
    std::optional<std::string> v = lookup(name);
    return v ? *v : std::string();
  };
  const std::string home = env("HOME");
  std::string credentials_path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (credentials_path.empty() && !home.empty()) credentials_path = home + "/.aws/credentials";
  std::string config_path = env("AWS_CONFIG_FILE");
  if (config_path.empty() && !home.empty()) config_path = home + "/.aws/config";
  const std::string explicit_profile = env("AWS_PROFILE");
  const std::string profile = explicit_profile.empty() ? "default" : explicit_profile;

  std::map<std::string, std::string> values;  // the profile's settings, credentials file first
  bool found = false;
  if (!config_path.empty()) {
    SKADE_ASSIGN_OR_RETURN(std::optional<Ini> config, ReadIni(config_path));
    if (config) {
      for (const std::string& name :
           {std::string("profile ") + profile, profile == "default" ? profile : std::string()}) {
        if (name.empty()) continue;
        auto it = config->find(name);
        if (it == config->end()) continue;
        found = true;
        for (const auto& [k, v] : it->second) values[k] = v;
        break;
      }
    }
  }
  if (!credentials_path.empty()) {
    SKADE_ASSIGN_OR_RETURN(std::optional<Ini> credentials, ReadIni(credentials_path));
    if (credentials) {
      auto it = credentials->find(profile);
      if (it != credentials->end()) {
        found = true;
        for (const auto& [k, v] : it->second) values[k] = v;  // credentials file wins
      }
    }
  }
  if (!explicit_profile.empty() && !found) {
    return Status::NotFound("AWS profile '" + profile + "' is in neither '" + credentials_path +
                            "' nor '" + config_path + "'");
  }
  auto value = [&](const std::string& key) -> std::string {
    auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  };

  S3Options options;
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    options.access_key_id = env("AWS_ACCESS_KEY_ID");
    options.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    options.session_token = env("AWS_SESSION_TOKEN");
  } else {
    options.access_key_id = value("aws_access_key_id");
    options.secret_access_key = value("aws_secret_access_key");
    options.session_token = value("aws_session_token");
  }
  for (const std::string& region :
       {env("AWS_REGION"), env("AWS_DEFAULT_REGION"), value("region")}) {
    if (!region.empty()) {
      options.region = region;
      break;
    }
  }
  for (const std::string& endpoint : {env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"),
                                      value("s3.endpoint_url"), value("endpoint_url")}) {
    if (!endpoint.empty()) {
      options.endpoint = endpoint;
      break;
    }
  }
  const std::string style = ToLowerAscii(value("s3.addressing_style"));
  if (style == "path") options.path_style = true;
  if (style == "virtual") options.path_style = false;
  return options;
}

}  // namespace skade::io
