// Private to skade/rest: the REST spec's Idempotency-Key (iceberg-rest-catalog-open-api.yaml,
// components/parameters/idempotency-key and CatalogConfig's idempotency-key-lifetime). A mutation
// whose request carries a key is applied at most once per principal: a retry with the key within
// its lifetime gets the first final answer, also while the first still runs (it waits for it),
// and a commit's record lands in the commit's own catalog transaction, so it survives a crash.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/rest/api_internal.h"

namespace skade::rest {

// What a handler learns of the key of the request it runs (Request::idempotency).
struct IdempotencyContext {
  // scope, key, request_hash, created_at_us and expires_at_us set; the handler of a commit sets
  // its status and passes it to Catalog::CommitTransactionWithRecord.
  catalog::IdempotencyRecord record;
  bool durable = false;  // the catalog keeps the records: commits store theirs with them
  bool stored = false;   // set by the handler whose commit stored `record`
};

// Where a route's records live: in the catalog's database when it keeps them (else in memory),
// or in memory only, beside state that lives only there (scan plans).
enum class KeyedRecords { kCatalog, kMemory };

// The canonical form (lower case) of an Idempotency-Key header value; kInvalidArgument unless it
// is a UUID in the 8-4-4-4-12 form (the parameter's schema: `format: uuid`; clients are asked
// for UUIDv7, any version is taken).
Result<std::string> ParseIdempotencyKey(std::string_view value);
// `lifetime` as an ISO-8601 duration ("PT30M", "PT1H30M", "PT0S").
std::string IsoDuration(std::chrono::seconds lifetime);
// A digest of what identifies a request: method, path, query and body. A retry with a key must
// carry the same.
std::string RequestDigest(const Request& r);

// Thread-safe.
class IdempotencyKeys {
 public:
  // Records in memory are bounded in bytes: past it the oldest are dropped first (logged).
  static constexpr size_t kMaxMemoryBytes = size_t{64} << 20;

  // `lifetime` 0 disables keys (headers are ignored); `wait` bounds how long a retry waits for a
  // first request with its key that still runs. `use_catalog` false keeps every record in
  // memory (a read-only server). Borrows `catalog`.
  IdempotencyKeys(catalog::Catalog& catalog, std::chrono::seconds lifetime, std::chrono::seconds wait,
                  bool use_catalog);

  bool enabled() const { return lifetime_us_ > 0; }
  // Whether commits store their records in the catalog (durable across restarts).
  bool durable() const { return durable_; }

  using Handler = std::function<Response(const Request&)>;
  // Rebuilds the answer of a commit's record (its status 200, no stored body) from its
  // metadata_location; null where the route has no such records.
  using Rebuild = std::function<Response(const catalog::IdempotencyRecord&)>;

  // Runs `handler` for `r` under its Idempotency-Key: without one (or disabled), simply;
  // a malformed key is 400; a key first used with another request is 400; a key whose first
  // request has a final answer (2xx or 4xx) gets that answer again without running anything; a
  // key whose first request still runs waits for it, 503 with Retry-After past the wait. 5xx
  // answers are not kept (spec: "Do not finalize (not stored/replayed): 5xx").
  Response Run(Request& r, KeyedRecords where, const Handler& handler, const Rebuild& rebuild = nullptr);

 private:
  Result<std::optional<catalog::IdempotencyRecord>> Find(const std::string& scope, const std::string& key,
                                                         bool in_catalog);
  Status Store(const catalog::IdempotencyRecord& record, bool in_catalog);
  Response Replay(const catalog::IdempotencyRecord& record, const Rebuild& rebuild) const;
  // Purges expired records (memory and catalog) at most once per purge interval.
  void MaybePurge();
  void PurgeMemoryLocked(int64_t now_us);

  catalog::Catalog& catalog_;
  const int64_t lifetime_us_;
  const std::chrono::seconds wait_;
  const bool durable_;
  const int64_t purge_interval_us_;
  std::atomic<int64_t> last_purge_us_{0};

  // Requests running now with a key ("scope\nkey" → request digest); waiters are woken when one
  // ends.
  std::mutex running_mu_;
  std::condition_variable running_cv_;
  std::map<std::string, std::string> running_;

  std::mutex memory_mu_;
  std::map<std::string, catalog::IdempotencyRecord> memory_;  // "scope\nkey" →
  size_t memory_bytes_ = 0;
};

}  // namespace skade::rest
