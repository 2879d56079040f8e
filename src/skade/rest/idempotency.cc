// Idempotency-Key for the REST catalog's mutations (idempotency_internal.h). The spec's rules
// (iceberg-rest-catalog-open-api.yaml, components/parameters/idempotency-key):
//   "If a prior request with this key has been finalized, the server returns an equivalent final
//    response without re-running the operation."
//   "Finalize & replay: 200, 201, 204, and deterministic terminal 4xx (including 409 such as
//    AlreadyExists, NamespaceNotEmpty, etc.)"  "Do not finalize (not stored/replayed): 5xx"
//   "Key format: UUIDv7 in string form (RFC 9562)."
// and CatalogConfig.idempotency-key-lifetime: "Servers SHOULD accept retries for at least this
// duration", counted "from the first submission using a key to the last retry".
//
// The spec says nothing of a retry that arrives while the first request still runs, nor of a key
// sent again with another request. The first waits for the first's answer (a 409 "in progress"
// would be read as CommitFailedException by Iceberg clients, which then delete the files of a
// commit that may land); past the wait it is 503 with Retry-After, which clients retry and never
// clean up after. The second is 400 BadRequestException: the document lists 400 for every
// mutation (422, the IETF Idempotency-Key draft's status, only for updateProperties), and not 409
// for the same reason as above.
//
// "Key format: UUIDv7" is asked of clients; the parameter's schema is `format: uuid`. Any UUID in
// its 8-4-4-4-12 form is taken (a client sending a version-4 key still gets at-most-once).
#include "skade/rest/idempotency_internal.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/io/sigv4.h"

namespace skade::rest {
namespace {

// How often expired records are purged at most (and at least once per lifetime).
constexpr int64_t kMaxPurgeIntervalUs = int64_t{60} * 1000 * 1000;

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Statuses that are a request's final answer (spec "Finalize & replay"): success, and client
// errors about the operation itself; not those that say "try again later" or concern the
// credentials (a 401 or 419 says nothing of what the operation does).
bool Finalizes(int status) {
  if (status >= 200 && status < 300) return true;
  if (status < 400 || status >= 500) return false;
  return status != 401 && status != 408 && status != 419 && status != 425 && status != 429;
}

std::string RecordId(const std::string& scope, const std::string& key) { return scope + "\n" + key; }

size_t RecordBytes(const std::string& id, const catalog::IdempotencyRecord& r) {
  return id.size() + r.scope.size() + r.key.size() + r.request_hash.size() + r.response.size() +
         r.metadata_location.size() + 64;
}

// A response kept for replay: its headers and body as one JSON text.
std::string EncodeResponse(const Response& response) {
  Json headers = Json::array();
  for (const auto& [name, value] : response.headers) headers.push_back(Json::array({name, value}));
  return Json{{"headers", std::move(headers)}, {"body", response.body}}.dump(-1, ' ', false,
                                                                              Json::error_handler_t::replace);
}

Result<Response> DecodeResponse(int status, const std::string& text) {
  Response out;
  out.status = status;
  if (text.empty()) return out;
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("body") || !j["body"].is_string() || !j.contains("headers") ||
      !j["headers"].is_array()) {
    return Status::Corruption("a stored idempotency record's response is malformed");
  }
  out.body = j["body"].get<std::string>();
  for (const Json& h : j["headers"]) {
    if (!h.is_array() || h.size() != 2 || !h[0].is_string() || !h[1].is_string()) {
      return Status::Corruption("a stored idempotency record's response is malformed");
    }
    out.headers.emplace_back(h[0].get<std::string>(), h[1].get<std::string>());
  }
  return out;
}

Response KeyReused(const std::string& key) {
  return ErrorResponse(400, "BadRequestException",
                       "Idempotency-Key " + key +
                           " was first sent with a different request (method, path, query or body); a "
                           "different operation needs a new key");
}

}  // namespace

Result<std::string> ParseIdempotencyKey(std::string_view value) {
  auto refuse = [&] {
    return Status::InvalidArgument("Idempotency-Key must be a UUID (RFC 9562; UUIDv7 by the spec) in its 8-4-4-4-12 "
                                   "form, not '" +
                                   std::string(value.substr(0, 64)) + "'");
  };
  if (value.size() != 36) return refuse();
  std::string key(value);
  for (size_t i = 0; i < key.size(); ++i) {
    char& c = key[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return refuse();
      continue;
    }
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!IsHex(c)) return refuse();
  }
  return key;
}

std::string IsoDuration(std::chrono::seconds lifetime) {
  int64_t s = std::max<int64_t>(0, lifetime.count());
  if (s == 0) return "PT0S";
  std::string out = "PT";
  if (s >= 3600) out += std::to_string(s / 3600) + "H";
  if (s % 3600 >= 60) out += std::to_string(s % 3600 / 60) + "M";
  if (s % 60 != 0) out += std::to_string(s % 60) + "S";
  return out;
}

std::string RequestDigest(const Request& r) {
  // Each part length-prefixed, so that no two requests share a text.
  std::string text;
  auto add = [&text](std::string_view part) {
    text += std::to_string(part.size());
    text += ':';
    text.append(part);
  };
  add(r.method);
  add(r.path);
  for (const auto& [name, value] : r.query) {
    add(name);
    add(value);
  }
  add(r.body);
  return io::Sha256Hex(text);
}

IdempotencyKeys::IdempotencyKeys(catalog::Catalog& catalog, std::chrono::seconds lifetime, std::chrono::seconds wait,
                                 bool use_catalog)
    : catalog_(catalog),
      lifetime_us_(std::max<int64_t>(0, lifetime.count()) * 1000 * 1000),
      wait_(wait),
      durable_(use_catalog && lifetime.count() > 0 &&
               catalog.LoadIdempotencyRecord("", "", 0).status().code() != StatusCode::kNotImplemented),
      purge_interval_us_(std::clamp<int64_t>(lifetime_us_, 1, kMaxPurgeIntervalUs)) {}

Result<std::optional<catalog::IdempotencyRecord>> IdempotencyKeys::Find(const std::string& scope,
                                                                        const std::string& key, bool in_catalog) {
  const int64_t now = NowMicros();
  if (in_catalog) return catalog_.LoadIdempotencyRecord(scope, key, now);
  std::lock_guard<std::mutex> lock(memory_mu_);
  auto it = memory_.find(RecordId(scope, key));
  if (it == memory_.end() || it->second.expires_at_us <= now) return std::optional<catalog::IdempotencyRecord>();
  return std::optional<catalog::IdempotencyRecord>(it->second);
}

Status IdempotencyKeys::Store(const catalog::IdempotencyRecord& record, bool in_catalog) {
  if (in_catalog) return catalog_.StoreIdempotencyRecord(record);
  const std::string id = RecordId(record.scope, record.key);
  std::lock_guard<std::mutex> lock(memory_mu_);
  const size_t bytes = RecordBytes(id, record);
  if (memory_bytes_ + bytes > kMaxMemoryBytes) PurgeMemoryLocked(NowMicros());
  if (memory_bytes_ + bytes > kMaxMemoryBytes) {
    // Bounded memory wins over the lifetime: the oldest records go first.
    std::vector<std::pair<int64_t, std::string>> by_age;
    for (const auto& [k, r] : memory_) by_age.emplace_back(r.created_at_us, k);
    std::sort(by_age.begin(), by_age.end());
    size_t dropped = 0;
    for (const auto& [created, k] : by_age) {
      if (memory_bytes_ + bytes <= kMaxMemoryBytes / 2) break;
      auto it = memory_.find(k);
      memory_bytes_ -= RecordBytes(k, it->second);
      memory_.erase(it);
      ++dropped;
    }
    SKADE_LOG_WARN("rest: idempotency records in memory reached {} bytes; dropped the oldest {} before their lifetime",
                   kMaxMemoryBytes, dropped);
  }
  auto [it, inserted] = memory_.emplace(id, record);
  if (!inserted) {
    memory_bytes_ -= RecordBytes(id, it->second);
    it->second = record;
  }
  memory_bytes_ += bytes;
  return Status::Ok();
}

void IdempotencyKeys::PurgeMemoryLocked(int64_t now_us) {
  for (auto it = memory_.begin(); it != memory_.end();) {
    if (it->second.expires_at_us > now_us) {
      ++it;
      continue;
    }
    memory_bytes_ -= RecordBytes(it->first, it->second);
    it = memory_.erase(it);
  }
}

void IdempotencyKeys::MaybePurge() {
  const int64_t now = NowMicros();
  int64_t last = last_purge_us_.load();
  if (now - last < purge_interval_us_ || !last_purge_us_.compare_exchange_strong(last, now)) return;
  {
    std::lock_guard<std::mutex> lock(memory_mu_);
    PurgeMemoryLocked(now);
  }
  if (!durable_) return;
  auto purged = catalog_.PurgeIdempotencyRecords(now);
  if (!purged.ok()) SKADE_LOG_WARN("rest: purging expired idempotency records: {}", purged.status().ToString());
}

Response IdempotencyKeys::Replay(const catalog::IdempotencyRecord& record, const Rebuild& rebuild) const {
  if (record.response.empty() && !record.metadata_location.empty() && record.status == 200 && rebuild) {
    return rebuild(record);
  }
  auto decoded = DecodeResponse(record.status, record.response);
  if (!decoded.ok()) return ErrorResponse(decoded.status());
  return std::move(decoded).value();
}

Response IdempotencyKeys::Run(Request& r, KeyedRecords where, const Handler& handler, const Rebuild& rebuild) {
  if (!enabled() || r.headers.count("idempotency-key") == 0) return handler(r);
  auto key = ParseIdempotencyKey(r.header("idempotency-key"));
  if (!key.ok()) return ErrorResponse(key.status());
  const std::string hash = RequestDigest(r);
  const std::string id = RecordId(r.principal, *key);
  const bool in_catalog = where == KeyedRecords::kCatalog && durable_;

  // One request per key runs at a time in this server; a retry waits for the first one's answer.
  {
    std::unique_lock<std::mutex> lock(running_mu_);
    const auto deadline = std::chrono::steady_clock::now() + wait_;
    for (auto it = running_.find(id); it != running_.end(); it = running_.find(id)) {
      if (it->second != hash) return KeyReused(*key);
      if (running_cv_.wait_until(lock, deadline) == std::cv_status::timeout && running_.count(id)) {
        Response busy = ErrorResponse(503, "ServiceUnavailableException",
                                      "the first request with Idempotency-Key " + *key + " is still running; retry");
        busy.headers.emplace_back("Retry-After", "1");
        return busy;
      }
    }
    running_.emplace(id, hash);
  }
  struct Release {
    IdempotencyKeys* keys;
    const std::string& id;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(keys->running_mu_);
        keys->running_.erase(id);
      }
      keys->running_cv_.notify_all();
    }
  } release{this, id};

  // A replay when the key has a final answer (also one given before a restart, or by another
  // server of the same catalog).
  auto found = Find(r.principal, *key, in_catalog);
  if (!found.ok()) return ErrorResponse(found.status().WithContext("look up Idempotency-Key " + *key));
  if (*found) return (*found)->request_hash == hash ? Replay(**found, rebuild) : KeyReused(*key);

  IdempotencyContext context;
  context.record.scope = r.principal;
  context.record.key = *key;
  context.record.request_hash = hash;
  context.record.created_at_us = NowMicros();
  context.record.expires_at_us = context.record.created_at_us + lifetime_us_;
  context.durable = in_catalog;
  r.idempotency = &context;
  Response out = handler(r);
  r.idempotency = nullptr;
  if (context.stored) {
    MaybePurge();
    return out;
  }
  if (in_catalog && (out.status == 409 || out.status >= 500)) {
    // A commit refused because a record of the key landed meanwhile: another server of the same
    // catalog ran the request first. Its answer is the answer.
    auto now_found = Find(r.principal, *key, in_catalog);
    if (now_found.ok() && *now_found) {
      return (*now_found)->request_hash == hash ? Replay(**now_found, rebuild) : KeyReused(*key);
    }
  }
  if (Finalizes(out.status)) {
    context.record.status = out.status;
    context.record.response = EncodeResponse(out);
    Status stored = Store(context.record, in_catalog);
    if (!stored.ok()) {
      // The answer stands; a retry may run the request again (not a commit: those are stored with
      // their transaction).
      SKADE_LOG_WARN("rest: could not keep the answer of Idempotency-Key {}: {}", *key, stored.ToString());
    }
  }
  MaybePurge();
  return out;
}

}  // namespace skade::rest
