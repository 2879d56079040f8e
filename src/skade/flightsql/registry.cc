#include "skade/flightsql/registry_internal.h"

#include <algorithm>
#include <set>

#include "skade/arrow/ipc.h"
#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/random.h"
#include "skade/io/sigv4.h"

namespace skade::flightsql {

std::string Session::schema() const {
  std::lock_guard<std::mutex> lock(mu_);
  return schema_;
}

void Session::set_schema(std::string schema) {
  std::lock_guard<std::mutex> lock(mu_);
  schema_ = std::move(schema);
}

int64_t ParamSet::rows() const {
  int64_t n = 0;
  for (const auto& b : batches) n += b->length;
  return n;
}

struct Registry::Run::Entry {
  std::string handle;
  std::string principal;
  int64_t started_ns = 0;
  engine::Connection* connection = nullptr;  // guarded by Registry::Impl::mu; set by Attach
  Run::Stop stop = Run::Stop::kNone;         // guarded by Registry::Impl::mu
  sql::WriteInterrupt write;                 // a write's statements (thread-safe itself)
  // A prepared statement's run watching the shared state for cancels (Registry::WatchCancels):
  // the value of the handle's cancel record read before it started ("" for none). Guarded by mu.
  bool watches_cancels = false;
  std::string cancel_seen;

  // Records why (the first reason wins) and interrupts the statement if it executes yet.
  void Interrupt(Run::Stop why) {
    if (stop == Run::Stop::kNone) stop = why;
    if (connection != nullptr) connection->Interrupt();
    write.Interrupt();
  }
};

namespace {

// An entry with its owner and last use, for the per-principal LRU limit and idle expiry.
template <typename T>
struct Owned {
  T value;
  std::string principal;
  int64_t last_used_ns;
};

// Drops the least recently used entries of `principal` until fewer than `limit` remain.
template <typename T>
void MakeRoom(std::map<std::string, Owned<T>>& entries, const std::string& principal, int limit,
              const char* what) {
  std::vector<std::pair<int64_t, std::string>> mine;
  for (const auto& [key, e] : entries) {
    if (e.principal == principal) mine.emplace_back(e.last_used_ns, key);
  }
  if (static_cast<int>(mine.size()) < limit) return;
  std::sort(mine.begin(), mine.end());
  size_t drop = mine.size() - static_cast<size_t>(limit) + 1;
  for (size_t i = 0; i < drop; ++i) entries.erase(mine[i].second);
  SKADE_LOG_INFO("flight sql: {} of one client at the limit ({}); closed the {} least recently used", what, limit,
                 drop);
}

template <typename T>
void DropIdle(std::map<std::string, Owned<T>>& entries, int64_t now, int64_t idle_ns) {
  std::erase_if(entries, [&](const auto& e) { return now - e.second.last_used_ns > idle_ns; });
}

// What a token carries: length-prefixed fields (LEB128 lengths), in an order each kind fixes.
void PutField(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  do {
    uint8_t byte = n & 0x7f;
    n >>= 7;
    out.push_back(static_cast<char>(n != 0 ? (byte | 0x80) : byte));
  } while (n != 0);
  out.append(field);
}

bool GetField(std::string_view& in, std::string* field) {
  uint64_t n = 0;
  for (int shift = 0;; shift += 7) {
    if (in.empty() || shift > 35) return false;
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    n |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  if (n > in.size()) return false;
  field->assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

constexpr std::string_view kTicketPurpose = "flightsql.ticket";
constexpr std::string_view kPreparedPurpose = "flightsql.prepared";
constexpr std::string_view kSessionPurpose = "flightsql.session";

// The parameters key of a handle whose parameters are kept only by the instance that bound them
// (no shared state): another instance refuses the handle and says why. Not a shared-state key.
constexpr std::string_view kParamsKeptLocally = "-";

// Closed prepared statements, cancelled tickets and closed sessions of this instance, kept until
// their tokens expire; at most this many (the oldest give way).
constexpr size_t kMaxTombstones = 65536;

// Kinds of shared state (catalog::ServerStateRecord), each scoped to the principal. A prepared
// statement's and a session's key is the random id all their tokens carry; a ticket's, the
// SHA-256 of the ticket.
constexpr std::string_view kParamsKind = "flightsql.params";
constexpr std::string_view kClosedPreparedKind = "flightsql.prepared.closed";
constexpr std::string_view kClosedSessionKind = "flightsql.session.closed";
constexpr std::string_view kCancelledTicketKind = "flightsql.ticket.cancelled";
// The last cancel of a prepared statement's handle (key: its SHA-256): a random value, new at
// each cancel, so that a run tells a cancel that came after it started from an older one.
constexpr std::string_view kCancelledPreparedKind = "flightsql.prepared.cancelled";

// The id of a statement or session whose token carries none (issued by an older build): its
// token's digest.
std::string IdOrDigest(const std::string& id, std::string_view token) {
  return id.empty() ? io::Sha256Hex(token) : id;
}

std::string PackQuery(const PendingQuery& q) {
  std::string out;
  PutField(out, q.principal);
  PutField(out, q.sql);
  PutField(out, q.schema);
  PutField(out, q.changed_rows ? std::to_string(*q.changed_rows) : std::string());
  return out;
}

std::optional<PendingQuery> UnpackQuery(std::string_view in) {
  PendingQuery q;
  std::string changed;
  if (!GetField(in, &q.principal) || !GetField(in, &q.sql) || !GetField(in, &q.schema) || !GetField(in, &changed) ||
      !in.empty()) {
    return std::nullopt;
  }
  if (!changed.empty()) q.changed_rows = std::stoll(changed);
  return q;
}

// What a prepared-statement handle carries: the statement (principal, sql, schema; the rest is
// re-derived), its bound parameters as Arrow IPC ("" for none), the statement's random id (the
// same in every handle of it) and the shared-state key of its bound parameters ("" for none).
struct SealedPrepared {
  PreparedStatement statement;
  std::string params_ipc;
  std::string id;
  std::string params_key;
};

std::string PackPrepared(const PreparedStatement& p, std::string_view params, std::string_view id,
                         std::string_view params_key) {
  std::string out;
  PutField(out, p.principal);
  PutField(out, p.sql);
  PutField(out, p.schema);
  PutField(out, params);
  PutField(out, id);
  PutField(out, params_key);
  return out;
}

std::optional<SealedPrepared> UnpackPrepared(std::string_view in) {
  SealedPrepared p;
  if (!GetField(in, &p.statement.principal) || !GetField(in, &p.statement.sql) || !GetField(in, &p.statement.schema) ||
      !GetField(in, &p.params_ipc)) {
    return std::nullopt;
  }
  // Handles of an older build end here (no id, no key).
  if (!in.empty() && (!GetField(in, &p.id) || !GetField(in, &p.params_key))) return std::nullopt;
  if (!in.empty()) return std::nullopt;
  return p;
}

}  // namespace

std::string EncodeParams(const ParamSet& params, size_t max_bytes) {
  auto encoder = arrow::ipc::StreamEncoder::Make(*params.schema.get());
  if (!encoder.ok()) return "";
  std::vector<arrow::ipc::EncodedMessage> messages{(*encoder)->SchemaMessage()};
  size_t size = messages.back().metadata.size();
  for (const auto& batch : params.batches) {
    // The encoder takes a batch it may release: a view whose release does nothing, over the
    // batch the set keeps.
    ArrowArray view = *batch.get();
    view.release = [](ArrowArray* a) { a->release = nullptr; };
    auto encoded = (*encoder)->EncodeBatch(arrow::ArrayHandle(&view));
    if (!encoded.ok()) return "";
    for (auto& m : *encoded) {
      size += m.metadata.size() + static_cast<size_t>(m.body_length);
      if (size > max_bytes) return "";
      messages.push_back(std::move(m));
    }
  }
  std::string bytes = arrow::ipc::Concatenate(messages);
  bytes.append(arrow::ipc::EndOfStreamMarker());
  return bytes;
}

Result<std::shared_ptr<const ParamSet>> DecodeParams(std::string_view ipc) {
  SKADE_ASSIGN_OR_RETURN(auto reader, arrow::ipc::StreamReader::Open(std::string(ipc)));
  auto set = std::make_shared<ParamSet>();
  SKADE_ASSIGN_OR_RETURN(set->schema, reader->ExportSchema());
  while (true) {
    SKADE_ASSIGN_OR_RETURN(auto batch, reader->Next());
    if (!batch) break;
    if ((*batch)->length > 0) set->batches.push_back(std::move(*batch));
  }
  return std::shared_ptr<const ParamSet>(std::move(set));
}

struct Registry::Impl {
  RegistryLimits limits;
  std::shared_ptr<const io::Sealer> sealer;
  catalog::Catalog* shared = nullptr;  // null: no shared state (RegistryLimits::shared_state)
  Reprepare reprepare;
  mutable std::mutex mu;
  // A session by each of its cookies (a new cookie each time its options change or its cookie
  // is refreshed), with the cookie's expiry (Unix ms).
  struct SessionCookie {
    std::shared_ptr<Session> session;
    int64_t expires_at_ms;
  };
  std::map<std::string, Owned<SessionCookie>> sessions;
  std::map<std::string, Owned<PendingQuery>> queries;
  struct PreparedEntry {
    std::shared_ptr<const PreparedStatement> statement;
    std::shared_ptr<const ParamSet> params;
    std::string id;          // the statement's (IdOrDigest)
    std::string params_key;  // shared state of the parameters, "" for none
    // The Arrow IPC size of `params` when they are kept on this instance only (no shared state
    // and too large for the handle), else 0: what counts against the principal's bound.
    int64_t kept_bytes = 0;
  };
  std::map<std::string, Owned<PreparedEntry>> prepared;
  // Without shared state: kResourceExhausted when `bytes` more parameters kept here would take
  // `principal` past max_shared_params_bytes_per_principal (each binding counted once; the ones
  // `rebound` names now are being replaced). Called with mu held, in the same hold as the
  // binding is stored: concurrent bindings cannot all pass it.
  Status CheckKeptParamsLocked(const std::string& principal, const std::string& rebound, int64_t bytes) const {
    const ParamSet* replaced = nullptr;
    if (auto it = prepared.find(rebound); it != prepared.end()) replaced = it->second.value.params.get();
    std::set<const ParamSet*> counted;
    int64_t kept = 0;
    for (const auto& [h, e] : prepared) {
      const PreparedEntry& entry = e.value;
      if (e.principal != principal || entry.kept_bytes == 0 || entry.params.get() == replaced) continue;
      if (counted.insert(entry.params.get()).second) kept += entry.kept_bytes;
    }
    if (kept + bytes > limits.max_shared_params_bytes_per_principal) {
      return Status::ResourceExhausted(
          "the parameters this server keeps for one user would pass " +
          std::to_string(limits.max_shared_params_bytes_per_principal) + " bytes (Arrow IPC; " +
          std::to_string(kept) + " kept): close prepared statements, or bind fewer rows");
    }
    return Status::Ok();
  }
  std::multimap<std::string, std::shared_ptr<Run::Entry>> running;  // handle → runs
  // Tokens closed (or cancelled, for tickets) here: handle → when the tombstone may go.
  struct Tombstone {
    int64_t until_ns;
    bool cancelled;
  };
  std::map<std::string, Tombstone> tombstones;
  int64_t last_cancel_poll_ns = 0;  // Reap's shared-state work, guarded by mu
  int64_t last_purge_ns = 0;

  int64_t idle_ns() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(limits.idle_lifetime).count(); }
  int64_t prepared_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(limits.prepared_lifetime).count();
  }

  void Bury(const std::string& handle, int64_t lifetime_ns, bool cancelled) {
    if (tombstones.size() >= kMaxTombstones && !tombstones.contains(handle)) {
      auto oldest = std::min_element(tombstones.begin(), tombstones.end(),
                                     [](const auto& a, const auto& b) { return a.second.until_ns < b.second.until_ns; });
      tombstones.erase(oldest);
    }
    tombstones[handle] = Tombstone{MonotonicNanos() + lifetime_ns, cancelled};
  }

  // Whether the shared state records `key` of `principal` under `kind` (a close or a cancel on
  // any instance); false without shared state. Called without mu (it reads the database).
  Result<bool> Recorded(std::string_view kind, const std::string& principal, const std::string& key) const {
    if (shared == nullptr) return false;
    SKADE_ASSIGN_OR_RETURN(std::optional<catalog::ServerStateRecord> row,
                           shared->GetServerState(std::string(kind), principal, key, NowMicros()));
    return row.has_value();
  }

  // The value the shared state keeps for `key` of `principal` under `kind` ("" for none).
  Result<std::string> RecordedValue(std::string_view kind, const std::string& principal, const std::string& key) const {
    if (shared == nullptr) return std::string();
    SKADE_ASSIGN_OR_RETURN(std::optional<catalog::ServerStateRecord> row,
                           shared->GetServerState(std::string(kind), principal, key, NowMicros()));
    return row ? std::move(row->value) : std::string();
  }

  // Records `key` of `principal` under `kind` (with `value`) for `lifetime`, replacing what was
  // recorded (no shared state: nothing to do).
  Status Record(std::string_view kind, const std::string& principal, const std::string& key,
                std::chrono::seconds lifetime, std::string value = "") const {
    if (shared == nullptr) return Status::Ok();
    catalog::ServerStateRecord row;
    row.kind = std::string(kind);
    row.scope = principal;
    row.key = key;
    row.value = std::move(value);
    row.expires_at_us = NowMicros() + lifetime.count() * 1000 * 1000;
    return shared->PutServerState(row, 0);
  }

  // Forgets every local handle of the prepared statement `id` and buries them. Called with mu.
  void ForgetPrepared(const std::string& id) {
    for (auto e = prepared.begin(); e != prepared.end();) {
      if (e->second.value.id == id) {
        Bury(e->first, prepared_ns(), false);
        e = prepared.erase(e);
      } else {
        ++e;
      }
    }
  }

  // Forgets every local cookie of the session `key` and buries them. Called with mu.
  void ForgetSession(const std::string& key) {
    for (auto e = sessions.begin(); e != sessions.end();) {
      if (e->second.value.session->key == key) {
        Bury(e->first, idle_ns(), false);
        e = sessions.erase(e);
      } else {
        ++e;
      }
    }
  }

  // The ticket `handle` carries, if it is a valid ticket of `principal`.
  std::optional<PendingQuery> OpenQuery(const std::string& handle, const std::string& principal) const {
    auto payload = sealer->Open(kTicketPurpose, handle);
    std::optional<PendingQuery> query = payload.ok() ? UnpackQuery(*payload) : std::nullopt;
    if (!query || query->principal != principal) return std::nullopt;
    return query;
  }

  // The prepared statement `handle` carries, if it is a valid handle of `principal` (its id
  // filled in for a handle of an older build).
  std::optional<SealedPrepared> OpenPrepared(const std::string& handle, const std::string& principal) const {
    auto payload = sealer->Open(kPreparedPurpose, handle);
    std::optional<SealedPrepared> prepared = payload.ok() ? UnpackPrepared(*payload) : std::nullopt;
    if (!prepared || prepared->statement.principal != principal) return std::nullopt;
    prepared->id = IdOrDigest(prepared->id, handle);
    return prepared;
  }

  // The ticket `handle` of `principal` in the local table, adopted from its token when another
  // instance issued it (or it was forgotten here); null when unknown, expired, closed or
  // another principal's. Called with mu held.
  Owned<PendingQuery>* QueryLocked(const std::string& handle, const std::string& principal) {
    auto it = queries.find(handle);
    if (it != queries.end()) return it->second.principal == principal ? &it->second : nullptr;
    if (tombstones.contains(handle)) return nullptr;
    std::optional<PendingQuery> query = OpenQuery(handle, principal);
    if (!query) return nullptr;
    MakeRoom(queries, principal, limits.max_pending_queries, "pending statement tickets");
    auto& entry = queries[handle];
    entry = {std::move(*query), principal, MonotonicNanos()};
    return &entry;
  }
};

Registry::Registry(RegistryLimits limits) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->sealer = limits.sealer ? limits.sealer : io::Sealer::Ephemeral();
  // A catalog that keeps no server state (REST, Nessie, file catalogs; a read-only SqlCatalog):
  // large parameters, closes and cancels stay in this process, as without a catalog.
  if (limits.shared_state != nullptr && limits.shared_state->KeepsServerState()) impl_->shared = limits.shared_state;
}
Registry::~Registry() = default;

void Registry::set_reprepare(Reprepare reprepare) { impl_->reprepare = std::move(reprepare); }

namespace {

// A cookie for `s` (base64url text) and when it expires: `lifetime` from now, so that a session
// unused that long closes on every instance; calls refresh it (Registry::Refresh).
std::pair<std::string, int64_t> SessionCookieValue(const io::Sealer& sealer, const Session& s,
                                                   std::chrono::seconds lifetime) {
  std::string payload;
  PutField(payload, s.principal);
  PutField(payload, s.schema());
  PutField(payload, s.key);
  const int64_t expires_at_ms = NowMillis() + lifetime.count() * 1000;
  return {io::EncodeBase64Url(sealer.Seal(kSessionPurpose, payload, lifetime)), expires_at_ms};
}

}  // namespace

std::shared_ptr<Session> Registry::CreateSession(const std::string& principal) {
  auto s = std::make_shared<Session>();
  s->principal = principal;
  s->key = RandomHex(16);
  auto [id, expires] = SessionCookieValue(*impl_->sealer, *s, impl_->limits.idle_lifetime);
  s->id = id;
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->sessions, principal, impl_->limits.max_sessions, "sessions");
  impl_->sessions[id] = {Impl::SessionCookie{s, expires}, principal, MonotonicNanos()};
  return s;
}

std::string Registry::Reseal(const std::shared_ptr<Session>& session) {
  auto [id, expires] = SessionCookieValue(*impl_->sealer, *session, impl_->limits.idle_lifetime);
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->sessions, session->principal, impl_->limits.max_sessions, "sessions");
  impl_->sessions[id] = {Impl::SessionCookie{session, expires}, session->principal, MonotonicNanos()};
  return id;
}

std::optional<std::string> Registry::Refresh(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->sessions.find(id);
    if (it == impl_->sessions.end()) return std::nullopt;
    const int64_t left_ms = it->second.value.expires_at_ms - NowMillis();
    if (left_ms > impl_->limits.idle_lifetime.count() * 1000 / 2) return std::nullopt;
    session = it->second.value.session;
  }
  return Reseal(session);
}

Result<std::shared_ptr<Session>> Registry::FindSession(const std::string& id, const std::string& principal) {
  const Status unknown = Status::NotFound(
      "the session is closed, expired or unknown; drop the arrow_flight_session_id cookie to start anew");
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->sessions.find(id);
    if (it != impl_->sessions.end() && it->second.value.expires_at_ms < NowMillis()) {
      impl_->sessions.erase(it);
      return unknown;
    }
    if (it == impl_->sessions.end()) {
      // A session of another instance (or one forgotten here): its cookie carries it.
      std::string token;
      if (impl_->tombstones.contains(id) || !io::DecodeBase64Url(id, &token)) return unknown;
      int64_t expires_at_ms = 0;
      auto payload = impl_->sealer->Open(kSessionPurpose, token, &expires_at_ms);
      if (!payload.ok()) return unknown;
      std::string_view in = *payload;
      auto s = std::make_shared<Session>();
      std::string schema;
      if (!GetField(in, &s->principal) || !GetField(in, &schema)) return unknown;
      // Cookies of an older build end here (no key).
      if (!in.empty() && !GetField(in, &s->key)) return unknown;
      if (!in.empty()) return unknown;
      if (s->principal != principal) return Status::Unauthorized("the session belongs to another user");
      s->id = id;
      s->key = IdOrDigest(s->key, token);
      s->set_schema(std::move(schema));
      MakeRoom(impl_->sessions, principal, impl_->limits.max_sessions, "sessions");
      it = impl_->sessions
               .emplace(id, Owned<Impl::SessionCookie>{Impl::SessionCookie{s, expires_at_ms}, principal, MonotonicNanos()})
               .first;
    }
    if (it->second.principal != principal) return Status::Unauthorized("the session belongs to another user");
    it->second.last_used_ns = MonotonicNanos();
    session = it->second.value.session;
  }
  // Closed on another instance? (Read outside the lock: it asks the database.)
  SKADE_ASSIGN_OR_RETURN(bool closed, impl_->Recorded(kClosedSessionKind, principal, session->key));
  if (closed) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->ForgetSession(session->key);
    return unknown;
  }
  return session;
}

Status Registry::CloseSession(const std::shared_ptr<Session>& session) {
  // Every cookie of the session (one per change of its options or refresh) closes with it:
  // here by its key, elsewhere through the shared state, until the last cookie it could have
  // issued expires.
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->Bury(session->id, impl_->idle_ns(), false);
    impl_->ForgetSession(session->key);
  }
  return impl_->Record(kClosedSessionKind, session->principal, session->key, impl_->limits.idle_lifetime)
      .WithContext("close the session");
}

std::string Registry::AddQuery(PendingQuery query) {
  std::string handle = impl_->sealer->Seal(kTicketPurpose, PackQuery(query), impl_->limits.idle_lifetime);
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->queries, query.principal, impl_->limits.max_pending_queries, "pending statement tickets");
  std::string principal = query.principal;
  impl_->queries[handle] = {std::move(query), std::move(principal), MonotonicNanos()};
  return handle;
}

Result<PendingQuery> Registry::FindQuery(const std::string& handle, const std::string& principal) {
  PendingQuery query;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (auto t = impl_->tombstones.find(handle); t != impl_->tombstones.end() && t->second.cancelled) {
      // Cancelled here and forgotten since: still cancelled (unless it is another's).
      if (impl_->OpenQuery(handle, principal)) return Status::Cancelled("the statement was cancelled");
    }
    Owned<PendingQuery>* entry = impl_->QueryLocked(handle, principal);
    if (entry == nullptr) return Status::NotFound("unknown, expired or closed statement ticket");
    if (entry->value.cancelled) return Status::Cancelled("the statement was cancelled");
    entry->last_used_ns = MonotonicNanos();
    query = entry->value;
  }
  // A write's ticket only reports its count: nothing to cancel (Cancel records none for it).
  if (query.changed_rows) return query;
  // Cancelled on another instance? (Read outside the lock: it asks the database.)
  SKADE_ASSIGN_OR_RETURN(bool cancelled, impl_->Recorded(kCancelledTicketKind, principal, io::Sha256Hex(handle)));
  if (cancelled) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (auto it = impl_->queries.find(handle); it != impl_->queries.end()) it->second.value.cancelled = true;
    impl_->Bury(handle, impl_->idle_ns(), true);
    return Status::Cancelled("the statement was cancelled");
  }
  return query;
}

void Registry::MarkFetched(const std::string& handle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->queries.find(handle);
  if (it != impl_->queries.end()) it->second.value.fetched = true;
}

std::string Registry::AddPrepared(std::shared_ptr<const PreparedStatement> prepared) {
  std::string id = RandomHex(16);
  std::string handle =
      impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*prepared, "", id, ""), impl_->limits.prepared_lifetime);
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->prepared, prepared->principal, impl_->limits.max_prepared, "prepared statements");
  std::string principal = prepared->principal;
  impl_->prepared[handle] = {Impl::PreparedEntry{std::move(prepared), nullptr, std::move(id), ""}, std::move(principal),
                             MonotonicNanos()};
  return handle;
}

Result<std::shared_ptr<const PreparedStatement>> Registry::FindPrepared(const std::string& handle,
                                                                        const std::string& principal) {
  const Status unknown = Status::NotFound("unknown, expired or closed prepared statement");
  std::string id;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it != impl_->prepared.end()) {
      if (it->second.principal != principal) return unknown;
      id = it->second.value.id;
    } else if (impl_->tombstones.contains(handle)) {
      return unknown;
    }
  }
  // Issued by another instance (or forgotten here): opened from the handle, outside the lock.
  std::optional<SealedPrepared> sealed;
  if (id.empty()) {
    sealed = impl_->OpenPrepared(handle, principal);
    if (!sealed || !impl_->reprepare) return unknown;
    id = sealed->id;
  }
  // Closed on another instance? (Read outside the lock: it asks the database.)
  SKADE_ASSIGN_OR_RETURN(bool closed, impl_->Recorded(kClosedPreparedKind, principal, id));
  if (closed) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->Bury(handle, impl_->prepared_ns(), false);
    impl_->ForgetPrepared(id);
    return unknown;
  }
  if (!sealed) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it != impl_->prepared.end()) {
      it->second.last_used_ns = MonotonicNanos();
      return it->second.value.statement;
    }
    // Forgotten meanwhile (the principal's limit): adopted again below.
    sealed = impl_->OpenPrepared(handle, principal);
    if (!sealed || !impl_->reprepare) return unknown;
  }
  // Re-created from the handle, outside the lock (it consults the catalog).
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedStatement> statement, impl_->reprepare(sealed->statement));
  std::string ipc = std::move(sealed->params_ipc);
  if (sealed->params_key == kParamsKeptLocally || (!sealed->params_key.empty() && impl_->shared == nullptr)) {
    return Status::NotFound(
        "the parameters bound to this prepared statement are kept only by the server that received them (it keeps "
        "no shared state: serve --read-only, or a catalog without it): bind them again on this server");
  }
  if (!sealed->params_key.empty()) {
    // Parameters too large for the handle: kept in the shared state under the key it carries.
    SKADE_ASSIGN_OR_RETURN(
        std::optional<catalog::ServerStateRecord> row,
        impl_->shared->GetServerState(std::string(kParamsKind), principal, sealed->params_key, NowMicros()));
    if (!row) {
      return Status::NotFound(
          "the parameters bound to the prepared statement expired or were dropped: bind them again");
    }
    ipc = std::move(row->value);
  }
  std::shared_ptr<const ParamSet> params;
  if (!ipc.empty()) {
    auto decoded = DecodeParams(ipc);
    if (!decoded.ok()) return decoded.status().WithContext("the parameters bound to the prepared statement");
    params = std::move(*decoded);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->tombstones.contains(handle)) return unknown;  // closed meanwhile
  MakeRoom(impl_->prepared, principal, impl_->limits.max_prepared, "prepared statements");
  auto& entry = impl_->prepared[handle];
  entry = {Impl::PreparedEntry{statement, std::move(params), std::move(sealed->id), std::move(sealed->params_key)},
           principal, MonotonicNanos()};
  return statement;
}

std::shared_ptr<const ParamSet> Registry::Params(const std::string& handle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  return it == impl_->prepared.end() ? nullptr : it->second.value.params;
}

Result<std::string> Registry::BindParams(const std::string& handle, const std::string& principal,
                                         std::shared_ptr<const ParamSet> params) {
  std::shared_ptr<const PreparedStatement> statement;
  std::string id;
  std::string old_key;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it == impl_->prepared.end() || it->second.principal != principal) {
      return Status::NotFound("unknown, expired or closed prepared statement");
    }
    if (!params) {
      it->second.value.params = nullptr;
      it->second.value.kept_bytes = 0;
      return handle;
    }
    statement = it->second.value.statement;
    id = it->second.value.id;
    old_key = it->second.value.params_key;
  }
  // Small parameters travel in a new handle, so that the next call may land on any instance;
  // larger ones go to the shared state, under a new key that new handle carries, or stay on this
  // instance without shared state. Either way one binding and a principal's kept parameters in
  // all are bounded alike (RegistryLimits).
  const size_t limit = std::max(impl_->limits.max_sealed_params_bytes, impl_->limits.max_shared_params_bytes);
  std::string ipc = EncodeParams(*params, limit);
  if (ipc.size() > limit) ipc.clear();  // EncodeParams bounds the messages, not the stream's end marker
  std::string sealed;
  std::string key;
  int64_t kept_bytes = 0;
  if (!ipc.empty() && ipc.size() <= impl_->limits.max_sealed_params_bytes) {
    sealed = impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*statement, ipc, id, ""), impl_->limits.prepared_lifetime);
  } else if (ipc.empty()) {
    return Status::InvalidArgument("the bound parameters are larger than " +
                                   std::to_string(impl_->limits.max_shared_params_bytes) +
                                   " bytes (Arrow IPC), the most a server keeps for one binding");
  } else if (impl_->shared == nullptr) {
    // The parameters stay on this instance, under a new handle that says so: another instance
    // refuses it explicitly instead of running the statement as if nothing were bound.
    kept_bytes = static_cast<int64_t>(ipc.size());  // checked against the user's bound when stored, below
    sealed = impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*statement, "", id, kParamsKeptLocally),
                                 impl_->limits.prepared_lifetime);
  } else {
    // A rebinding replaces the row of the parameters bound before (a handle naming it sees the
    // new ones, as on the instance that bound them): rebinding piles no rows up.
    key = old_key.empty() ? RandomHex(16) : old_key;
    catalog::ServerStateRecord row;
    row.kind = std::string(kParamsKind);
    row.scope = principal;
    row.key = key;
    row.value = std::move(ipc);
    row.expires_at_us = NowMicros() + impl_->limits.prepared_lifetime.count() * 1000 * 1000;
    SKADE_RETURN_IF_ERROR(impl_->shared->PutServerState(row, impl_->limits.max_shared_params_bytes_per_principal)
                              .WithContext("keep the bound parameters"));
    sealed = impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*statement, "", id, key), impl_->limits.prepared_lifetime);
  }
  // Small parameters after large ones: the row of the large ones goes.
  if (!old_key.empty() && key.empty() && impl_->shared != nullptr) {
    Status dropped = impl_->shared->DeleteServerState(std::string(kParamsKind), principal, old_key);
    if (!dropped.ok()) SKADE_LOG_WARN("flight sql: replaced parameters were not deleted (they expire): {}", dropped.ToString());
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (kept_bytes > 0) SKADE_RETURN_IF_ERROR(impl_->CheckKeptParamsLocked(principal, handle, kept_bytes));
  // The handle bound keeps naming the parameters on this instance (a rebinding replaces them).
  if (auto it = impl_->prepared.find(handle); it != impl_->prepared.end() && it->second.principal == principal) {
    it->second.value.params = params;
    it->second.value.kept_bytes = kept_bytes;
  }
  MakeRoom(impl_->prepared, principal, impl_->limits.max_prepared, "prepared statements");
  impl_->prepared[sealed] = {
      Impl::PreparedEntry{std::move(statement), std::move(params), std::move(id), std::move(key), kept_bytes},
      principal, MonotonicNanos()};
  return sealed;
}

Status Registry::ClosePrepared(const std::string& handle, const std::string& principal) {
  const Status unknown = Status::NotFound("unknown or already closed prepared statement");
  std::string id;
  std::string params_key;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it != impl_->prepared.end()) {
      if (it->second.principal != principal) return unknown;
      id = it->second.value.id;
      params_key = it->second.value.params_key;
    } else if (impl_->tombstones.contains(handle)) {
      return unknown;
    }
  }
  if (id.empty()) {
    // Issued elsewhere or forgotten here: closed if it is a live handle of the caller.
    std::optional<SealedPrepared> sealed = impl_->OpenPrepared(handle, principal);
    if (!sealed) return unknown;
    id = sealed->id;
    params_key = sealed->params_key;
  }
  SKADE_ASSIGN_OR_RETURN(bool closed, impl_->Recorded(kClosedPreparedKind, principal, id));
  if (!closed) {
    // Every handle of the statement was issued less than prepared_lifetime ago: the record
    // outlives them all.
    SKADE_RETURN_IF_ERROR(impl_->Record(kClosedPreparedKind, principal, id, impl_->limits.prepared_lifetime)
                              .WithContext("close the prepared statement"));
    if (!params_key.empty() && params_key != kParamsKeptLocally && impl_->shared != nullptr) {
      Status dropped = impl_->shared->DeleteServerState(std::string(kParamsKind), principal, params_key);
      if (!dropped.ok()) SKADE_LOG_WARN("flight sql: a closed statement's parameters were not deleted (they expire): {}", dropped.ToString());
    }
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->Bury(handle, impl_->prepared_ns(), false);
  impl_->ForgetPrepared(id);
  return closed ? unknown : Status::Ok();
}

std::unique_ptr<Registry::Run> Registry::StartRun(const std::string& handle, const std::string& principal) {
  auto entry = std::make_shared<Run::Entry>();
  entry->handle = handle;
  entry->principal = principal;
  entry->started_ns = MonotonicNanos();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->running.emplace(handle, entry);
  return std::unique_ptr<Run>(new Run(this, std::move(entry)));
}

Registry::Run::~Run() {
  std::lock_guard<std::mutex> lock(registry_->impl_->mu);
  auto& running = registry_->impl_->running;
  auto [begin, end] = running.equal_range(entry_->handle);
  for (auto it = begin; it != end; ++it) {
    if (it->second == entry_) {
      running.erase(it);
      break;
    }
  }
}

Registry::Run::Stop Registry::Run::stop() const {
  std::lock_guard<std::mutex> lock(registry_->impl_->mu);
  return entry_->stop;
}

Registry::Run::Stop Registry::Run::Attach(engine::Connection* connection) {
  std::lock_guard<std::mutex> lock(registry_->impl_->mu);
  entry_->connection = connection;
  return entry_->stop;
}

sql::WriteInterrupt* Registry::Run::write_interrupt() { return &entry_->write; }

void Registry::Run::Cancel() {
  std::lock_guard<std::mutex> lock(registry_->impl_->mu);
  entry_->Interrupt(Stop::kCancelled);
}

Result<std::string> Registry::CancelMark(const std::string& handle, const std::string& principal) {
  if (impl_->shared == nullptr) return std::string();
  return impl_->RecordedValue(kCancelledPreparedKind, principal, io::Sha256Hex(handle));
}

void Registry::WatchCancels(Run& run, std::string mark) {
  if (impl_->shared == nullptr) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  run.entry_->watches_cancels = true;
  run.entry_->cancel_seen = std::move(mark);
}

Result<CancelOutcome> Registry::Cancel(const std::string& handle, const std::string& principal) {
  bool cancelled = false;
  bool ticket = false;
  bool prepared = false;  // a live prepared-statement handle of `principal`
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto [begin, end] = impl_->running.equal_range(handle);
    for (auto it = begin; it != end; ++it) {
      if (it->second->principal != principal) continue;
      it->second->Interrupt(Run::Stop::kCancelled);
      cancelled = true;
    }
    Owned<PendingQuery>* q = impl_->QueryLocked(handle, principal);
    if (q != nullptr && !q->value.fetched && !q->value.changed_rows) {
      // Running or not, the ticket is dead: remembered (until it expires) so that a DoGet of it,
      // a retry included, says it was cancelled rather than runs it again.
      q->value.cancelled = true;
      impl_->Bury(handle, impl_->idle_ns(), true);
      cancelled = true;
      ticket = true;
    }
    if (!ticket) {
      auto p = impl_->prepared.find(handle);
      if (p != impl_->prepared.end()) {
        prepared = p->second.principal == principal;
      } else if (!impl_->tombstones.contains(handle)) {
        prepared = impl_->OpenPrepared(handle, principal).has_value();
      }
    }
  }
  // A prepared statement may run on other instances: each watching it sees the record's new
  // value and interrupts its run (Reap). Runs starting later read this value first and go on.
  if (prepared && impl_->shared != nullptr) {
    SKADE_RETURN_IF_ERROR(impl_->Record(kCancelledPreparedKind, principal, io::Sha256Hex(handle),
                                        impl_->limits.idle_lifetime, RandomHex(16))
                              .WithContext("cancel the prepared statement"));
    if (!cancelled) return CancelOutcome::kCancelling;
  }
  // On every instance: a DoGet there reads it, and one running there is interrupted (Reap).
  if (ticket) {
    SKADE_RETURN_IF_ERROR(impl_->Record(kCancelledTicketKind, principal, io::Sha256Hex(handle),
                                        impl_->limits.idle_lifetime)
                              .WithContext("cancel the statement"));
  }
  return cancelled ? CancelOutcome::kCancelled : CancelOutcome::kNotCancellable;
}

void Registry::InterruptAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [handle, run] : impl_->running) run->Interrupt(Run::Stop::kCancelled);
}

void Registry::ReapShared() {
  if (impl_->shared == nullptr) return;
  constexpr int64_t kPollNs = 1000 * 1000 * 1000;
  constexpr int64_t kPurgeNs = int64_t{60} * kPollNs;
  const int64_t now = MonotonicNanos();
  bool purge = false;
  std::vector<std::pair<std::string, std::string>> tickets;  // running ticket handles, principals
  std::vector<std::shared_ptr<Run::Entry>> watching;         // running prepared statements
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (now - impl_->last_purge_ns >= kPurgeNs) {
      impl_->last_purge_ns = now;
      purge = true;
    }
    if (now - impl_->last_cancel_poll_ns >= kPollNs) {
      impl_->last_cancel_poll_ns = now;
      for (const auto& [handle, run] : impl_->running) {
        auto q = impl_->queries.find(handle);
        if (run->stop == Run::Stop::kNone && q != impl_->queries.end() && !q->second.value.changed_rows) {
          tickets.emplace_back(handle, run->principal);
        }
        if (run->stop == Run::Stop::kNone && run->watches_cancels) watching.push_back(run);
      }
    }
  }
  // Tickets running here that another instance cancelled: one read each, outside the lock.
  for (const auto& [handle, principal] : tickets) {
    Result<bool> cancelled = impl_->Recorded(kCancelledTicketKind, principal, io::Sha256Hex(handle));
    if (!cancelled.ok() || !*cancelled) continue;
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto [begin, end] = impl_->running.equal_range(handle);
    for (auto it = begin; it != end; ++it) {
      if (it->second->principal == principal) it->second->Interrupt(Run::Stop::kCancelled);
    }
    if (auto q = impl_->queries.find(handle); q != impl_->queries.end()) q->second.value.cancelled = true;
    impl_->Bury(handle, impl_->idle_ns(), true);
  }
  // Prepared statements running here whose cancel record changed since they started.
  for (const std::shared_ptr<Run::Entry>& run : watching) {
    Result<std::string> now_recorded =
        impl_->RecordedValue(kCancelledPreparedKind, run->principal, io::Sha256Hex(run->handle));
    if (!now_recorded.ok() || now_recorded->empty()) continue;
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (*now_recorded != run->cancel_seen) run->Interrupt(Run::Stop::kCancelled);
  }
  if (purge) {
    Result<int64_t> purged = impl_->shared->PurgeServerState(NowMicros());
    if (!purged.ok()) {
      SKADE_LOG_WARN("flight sql: expired shared state was not purged (next try in a minute): {}",
                     purged.status().ToString());
    }
  }
}

void Registry::Reap(std::chrono::seconds query_timeout) {
  ReapShared();
  int64_t now = MonotonicNanos();
  int64_t timeout_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(query_timeout).count();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [handle, run] : impl_->running) {
    if (timeout_ns > 0 && run->stop == Run::Stop::kNone && now - run->started_ns > timeout_ns) {
      run->Interrupt(Run::Stop::kTimedOut);
    } else if (run->stop != Run::Stop::kNone) {
      // A write runs one DuckDB statement after another, and DuckDB forgets an interrupt that
      // comes between two: the next one is stopped here.
      run->write.Interrupt();
    }
  }
  int64_t idle = impl_->idle_ns();
  if (idle <= 0) return;
  DropIdle(impl_->sessions, now, idle);
  DropIdle(impl_->queries, now, idle);
  // A prepared statement or ticket in use is not idle.
  for (auto& [handle, run] : impl_->running) {
    if (auto p = impl_->prepared.find(handle); p != impl_->prepared.end()) p->second.last_used_ns = now;
    if (auto q = impl_->queries.find(handle); q != impl_->queries.end()) q->second.last_used_ns = now;
  }
  DropIdle(impl_->prepared, now, idle);
  std::erase_if(impl_->tombstones, [&](const auto& t) { return t.second.until_ns < now; });
}

size_t Registry::session_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sessions.size();
}

}  // namespace skade::flightsql
