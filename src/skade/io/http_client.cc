#include "skade/io/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>

namespace skade::io {
namespace {

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerAscii(c);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// libcurl's global state must be set up once, before any other call and not concurrently with
// another thread's curl_global_init; it is never torn down (other libraries in the process may
// use libcurl too, and cleanup at exit would race their threads).
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { SKADE_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK); });
}

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

// Failures where no (whole) response arrived and a new attempt may succeed.
bool IsTransient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int> ParseDigits(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// What the header callback collects. A 206 whose Content-Range ends at or past the complete
// length ("bytes 0-0/0") is invalid (RFC 9110 §14.4) and would promise bytes that cannot exist:
// the transfer is stopped at the end of the header block instead of waiting for them.
struct HeaderSink {
  HttpHeaders* headers = nullptr;
  int status = 0;
  std::string invalid;
};

bool InvalidContentRange(std::string_view v) {
  v = Trim(v);
  if (v.rfind("bytes ", 0) != 0) return false;
  v.remove_prefix(6);
  size_t dash = v.find('-');
  size_t slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash)
    return false;
  auto last = ParseDigits(v.substr(dash + 1, slash - dash - 1));
  auto complete = ParseDigits(v.substr(slash + 1));
  return last && complete && *last >= *complete;
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<HeaderSink*>(user);
  std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response begins (after 100 Continue or a redirect): keep only its fields.
    *sink->headers = HttpHeaders();
    size_t sp = line.find(' ');
    sink->status =
        sp == std::string_view::npos ? 0 : ParseDigits(line.substr(sp + 1, 3)).value_or(0);
    return size * count;
  }
  if (Trim(line).empty()) {
    if (sink->status == 206) {
      std::optional<std::string> range = sink->headers->Get("Content-Range");
      if (range && InvalidContentRange(*range)) {
        sink->invalid = "invalid Content-Range '" + *range + "' in a 206 response";
        return 0;
      }
    }
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos && colon > 0) {
    sink->headers->Add(std::string(Trim(line.substr(0, colon))),
                       std::string(Trim(line.substr(colon + 1))));
  }
  return size * count;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

Status AppendHeader(Slist& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (next == nullptr) return Status::Internal("out of memory building HTTP headers");
  (void)list.release();
  list.reset(next);
  return Status::Ok();
}

}  // namespace

bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

void HttpHeaders::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void HttpHeaders::Set(std::string name, std::string value) {
  Remove(name);
  Add(std::move(name), std::move(value));
}

void HttpHeaders::Remove(std::string_view name) {
  std::erase_if(entries_, [&](const auto& e) { return HeaderNameEquals(e.first, name); });
}

std::optional<std::string> HttpHeaders::Get(std::string_view name) const {
  for (const auto& [n, v] : entries_) {
    if (HeaderNameEquals(n, name)) return v;
  }
  return std::nullopt;
}

bool HttpHeaders::Contains(std::string_view name) const { return Get(name).has_value(); }

std::string RedactUrl(std::string_view url) {
  std::string out;
  size_t scheme_end = url.find("://");
  size_t authority_start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  size_t authority_end = url.find_first_of("/?#", authority_start);
  if (authority_end == std::string_view::npos) authority_end = url.size();
  std::string_view authority = url.substr(authority_start, authority_end - authority_start);
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) authority.remove_prefix(at + 1);
  out.append(url.substr(0, authority_start)).append(authority);
  std::string_view rest = url.substr(authority_end);
  size_t fragment = rest.find('#');
  if (fragment != std::string_view::npos) rest = rest.substr(0, fragment);
  size_t q = rest.find('?');
  if (q == std::string_view::npos) return out.append(rest);
  out.append(rest.substr(0, q + 1));
  std::string_view query = rest.substr(q + 1);
  bool first = true;
  while (true) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    size_t eq = param.find('=');
    std::string name = ToLowerAscii(param.substr(0, eq));
    if (!first) out.push_back('&');
    first = false;
    const bool secret =
        name.find("signature") != std::string::npos ||
        name.find("credential") != std::string::npos || name.find("token") != std::string::npos ||
        name.find("secret") != std::string::npos || name.find("password") != std::string::npos;
    if (secret && eq != std::string_view::npos) {
      out.append(param.substr(0, eq)).append("=REDACTED");
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::optional<int64_t> ParseHttpDate(std::string_view value) {
  // IMF-fixdate only: "Sun, 06 Nov 1994 08:49:37 GMT" (the form RFC 9110 requires senders use).
  value = Trim(value);
  size_t comma = value.find(", ");
  if (comma == std::string_view::npos) return std::nullopt;
  std::string_view s = value.substr(comma + 2);
  if (s.size() != 24 || s[2] != ' ' || s[6] != ' ' || s[11] != ' ' || s[14] != ':' ||
      s[17] != ':' || s.substr(20) != " GMT") {
    return std::nullopt;
  }
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  auto month_it = std::find(kMonths.begin(), kMonths.end(), s.substr(3, 3));
  if (month_it == kMonths.end()) return std::nullopt;
  auto day = ParseDigits(s.substr(0, 2));
  auto year = ParseDigits(s.substr(7, 4));
  auto hour = ParseDigits(s.substr(12, 2));
  auto minute = ParseDigits(s.substr(15, 2));
  auto second = ParseDigits(s.substr(18, 2));
  if (!day || !year || !hour || !minute || !second || *day < 1 || *day > 31 || *hour > 23 ||
      *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  const unsigned month = static_cast<unsigned>(month_it - kMonths.begin()) + 1;
  return DaysFromCivil(*year, month, static_cast<unsigned>(*day)) * 86400 + *hour * 3600 +
         *minute * 60 + *second;
}

std::optional<int64_t> ParseRetryAfter(std::string_view value, int64_t now_unix_seconds) {
  value = Trim(value);
  if (auto seconds = ParseDigits(value)) return *seconds;
  if (auto date = ParseHttpDate(value)) return std::max<int64_t>(0, *date - now_unix_seconds);
  return std::nullopt;
}

// Idle easy handles (each keeps its own connection cache, so a handle taken from the pool
// reuses the keep-alive connection it last used) and one share handle for DNS and TLS sessions.
// Connections themselves are not put in the share: a pooled handle used by one thread at a time
// owns its connections, which needs no locking while a transfer runs.
struct HttpClient::Pool {
  std::mutex mu;
  std::vector<CURL*> idle;  // guarded by mu
  int max_idle = 16;

  CURLSH* share = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> share_locks;

  Pool() {
    share = curl_share_init();
    SKADE_CHECK(share != nullptr);
    curl_share_setopt(share, CURLSHOPT_LOCKFUNC, &Pool::Lock);
    curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, &Pool::Unlock);
    curl_share_setopt(share, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
    curl_share_cleanup(share);
  }

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Pool*>(user)->share_locks[static_cast<size_t>(data) % CURL_LOCK_DATA_LAST].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Pool*>(user)->share_locks[static_cast<size_t>(data) % CURL_LOCK_DATA_LAST].unlock();
  }

  CURL* Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        return h;
      }
    }
    CURL* h = curl_easy_init();
    SKADE_CHECK(h != nullptr);
    return h;
  }

  // A handle whose transfer failed may hold a broken connection; it is closed rather than
  // pooled.
  void Release(CURL* h, bool healthy) {
    if (healthy) {
      std::lock_guard<std::mutex> lock(mu);
      if (static_cast<int>(idle.size()) < max_idle) {
        idle.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }
};

namespace {

struct Attempt {
  Attempt(Result<HttpResponse> r, bool t = false)
      : response(std::move(r)), transient(t) {}  // NOLINT
  Result<HttpResponse> response;
  bool transient;  // a transport failure worth retrying
};

}  // namespace

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)), pool_(std::make_unique<Pool>()) {
  pool_->max_idle = std::max(0, options_.max_idle_connections);
}

HttpClient::~HttpClient() = default;

std::unique_ptr<HttpClient> HttpClient::Make(HttpClientOptions options) {
  InitCurlOnce();
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(options)));
}

namespace {

Attempt Perform(CURL* h, CURLSH* share, const HttpRequest& req, const std::string& user_agent) {
  const std::string where = req.method + " " + RedactUrl(req.url);
  curl_easy_reset(h);
  std::array<char, CURL_ERROR_SIZE> error{};
  HttpResponse response;
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(h, CURLOPT_SHARE, share);
  curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error.data());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &WriteHeader);
  HeaderSink sink;
  sink.headers = &response.headers;
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);

  const bool sends_body =
      !req.body.empty() || req.method == "PUT" || req.method == "POST" || req.method == "PATCH";
  if (req.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  if (sends_body && req.method != "GET" && req.method != "HEAD") {
    // POSTFIELDS sends the bytes as they are with a Content-Length, for any custom method.
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.empty() ? "" : req.body.data());
  }

  Slist headers;
  for (const auto& [name, value] : req.headers.entries()) {
    // "Name;" is libcurl's spelling of a header sent with an empty value.
    Status st = AppendHeader(headers, value.empty() ? name + ";" : name + ": " + value);
    if (!st.ok()) return {st};
  }
  // No 100-continue round trip, and no form content type invented for a body sent without one.
  if (!req.headers.Contains("Expect")) {
    Status st = AppendHeader(headers, "Expect:");
    if (!st.ok()) return {st};
  }
  if (sends_body && !req.headers.Contains("Content-Type")) {
    Status st = AppendHeader(headers, "Content-Type:");
    if (!st.ok()) return {st};
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

  CURLcode code = curl_easy_perform(h);
  if (!sink.invalid.empty()) return {Status::IoError(where + ": " + sink.invalid)};
  if (code != CURLE_OK) {
    std::string detail = error[0] != '\0' ? std::string(error.data()) : curl_easy_strerror(code);
    std::string msg = where + ": " + detail + " (curl error " + std::to_string(code) + ")";
    if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL) {
      return {Status::InvalidArgument(std::move(msg))};
    }
    return {Status::Unavailable(std::move(msg)), IsTransient(code)};
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  return {std::move(response)};
}

std::chrono::milliseconds Backoff(const RetryPolicy& policy, int retry) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double base = static_cast<double>(policy.initial_backoff.count());
  for (int i = 1; i < retry && base < static_cast<double>(policy.max_backoff.count()); ++i)
    base *= 2;
  base = std::min(base, static_cast<double>(policy.max_backoff.count()));
  std::uniform_real_distribution<double> jitter(base / 2, base);
  return std::chrono::milliseconds(static_cast<int64_t>(jitter(rng)));
}

}  // namespace

Result<HttpResponse> HttpClient::Send(const HttpRequest& request, const Prepare& prepare) {
  const RetryPolicy& policy = options_.retry;
  const bool may_retry =
      request.retry == RetryMode::kAlways ||
      (request.retry == RetryMode::kIfIdempotent && IsIdempotent(request.method));
  const int max_attempts = may_retry ? std::max(1, policy.max_attempts) : 1;
  for (int attempt = 1;; ++attempt) {
    HttpRequest current = request;
    if (prepare) prepare(current);
    CURL* h = pool_->Acquire();
    Attempt result = Perform(h, pool_->share, current, options_.user_agent);
    pool_->Release(h, result.response.ok());
    const bool last = attempt >= max_attempts;
    if (!result.response.ok()) {
      if (!result.transient || last) {
        if (attempt == 1) return std::move(result.response).status();
        return std::move(result.response)
            .status()
            .WithContext("after " + std::to_string(attempt) + " attempts");
      }
      std::this_thread::sleep_for(Backoff(policy, attempt));
      continue;
    }
    HttpResponse& response = *result.response;
    response.attempts = attempt;
    const bool retry_status = std::find(policy.retry_statuses.begin(), policy.retry_statuses.end(),
                                        response.status) != policy.retry_statuses.end();
    if (!retry_status || last) return std::move(result.response);
    std::chrono::milliseconds wait = Backoff(policy, attempt);
    if (auto header = response.headers.Get("Retry-After")) {
      if (auto seconds = ParseRetryAfter(*header, static_cast<int64_t>(std::time(nullptr)))) {
        wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(*seconds),
                                                   policy.max_retry_after);
      }
    }
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace skade::io
