#include "skade/flightsql/registry_internal.h"

#include <algorithm>

#include "skade/arrow/ipc.h"
#include "skade/base/clock.h"
#include "skade/base/log.h"

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

// Closed prepared statements, cancelled tickets and closed sessions of this instance, kept until
// their tokens expire; at most this many (the oldest give way).
constexpr size_t kMaxTombstones = 65536;

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

std::string PackPrepared(const PreparedStatement& p, std::string_view params) {
  std::string out;
  PutField(out, p.principal);
  PutField(out, p.sql);
  PutField(out, p.schema);
  PutField(out, params);
  return out;
}

// What a prepared-statement handle carries: the statement (principal, sql, schema; the rest is
// re-derived) and its bound parameters as Arrow IPC ("" for none).
struct SealedPrepared {
  PreparedStatement statement;
  std::string params_ipc;
};

std::optional<SealedPrepared> UnpackPrepared(std::string_view in) {
  SealedPrepared p;
  if (!GetField(in, &p.statement.principal) || !GetField(in, &p.statement.sql) || !GetField(in, &p.statement.schema) ||
      !GetField(in, &p.params_ipc) || !in.empty()) {
    return std::nullopt;
  }
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
  };
  std::map<std::string, Owned<PreparedEntry>> prepared;
  std::multimap<std::string, std::shared_ptr<Run::Entry>> running;  // handle → runs
  // Tokens closed (or cancelled, for tickets) here: handle → when the tombstone may go.
  struct Tombstone {
    int64_t until_ns;
    bool cancelled;
  };
  std::map<std::string, Tombstone> tombstones;

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

  // The ticket `handle` of `principal` in the local table, adopted from its token when another
  // instance issued it (or it was forgotten here); null when unknown, expired, closed or
  // another principal's. Called with mu held.
  // The ticket `handle` carries, if it is a valid ticket of `principal`.
  std::optional<PendingQuery> OpenQuery(const std::string& handle, const std::string& principal) const {
    auto payload = sealer->Open(kTicketPurpose, handle);
    std::optional<PendingQuery> query = payload.ok() ? UnpackQuery(*payload) : std::nullopt;
    if (!query || query->principal != principal) return std::nullopt;
    return query;
  }

  // The prepared statement `handle` carries, if it is a valid handle of `principal`.
  std::optional<SealedPrepared> OpenPrepared(const std::string& handle, const std::string& principal) const {
    auto payload = sealer->Open(kPreparedPurpose, handle);
    std::optional<SealedPrepared> prepared = payload.ok() ? UnpackPrepared(*payload) : std::nullopt;
    if (!prepared || prepared->statement.principal != principal) return std::nullopt;
    return prepared;
  }

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
  const int64_t expires_at_ms = NowMillis() + lifetime.count() * 1000;
  return {io::EncodeBase64Url(sealer.Seal(kSessionPurpose, payload, lifetime)), expires_at_ms};
}

}  // namespace

std::shared_ptr<Session> Registry::CreateSession(const std::string& principal) {
  auto s = std::make_shared<Session>();
  s->principal = principal;
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
    if (!GetField(in, &s->principal) || !GetField(in, &schema) || !in.empty()) return unknown;
    if (s->principal != principal) return Status::Unauthorized("the session belongs to another user");
    s->id = id;
    s->set_schema(std::move(schema));
    MakeRoom(impl_->sessions, principal, impl_->limits.max_sessions, "sessions");
    it = impl_->sessions
             .emplace(id, Owned<Impl::SessionCookie>{Impl::SessionCookie{s, expires_at_ms}, principal, MonotonicNanos()})
             .first;
  }
  if (it->second.principal != principal) return Status::Unauthorized("the session belongs to another user");
  it->second.last_used_ns = MonotonicNanos();
  return it->second.value.session;
}

void Registry::CloseSession(const std::string& id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->sessions.find(id);
  if (it == impl_->sessions.end()) {
    // Forgotten here (or another instance's): closed all the same.
    impl_->Bury(id, impl_->idle_ns(), false);
    return;
  }
  // Every cookie of the session (one per change of its options) closes with it.
  const std::shared_ptr<Session> session = it->second.value.session;
  for (auto e = impl_->sessions.begin(); e != impl_->sessions.end();) {
    if (e->second.value.session == session) {
      impl_->Bury(e->first, impl_->idle_ns(), false);
      e = impl_->sessions.erase(e);
    } else {
      ++e;
    }
  }
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
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (auto t = impl_->tombstones.find(handle); t != impl_->tombstones.end() && t->second.cancelled) {
    // Cancelled here and forgotten since: still cancelled (unless it is another's).
    if (impl_->OpenQuery(handle, principal)) return Status::Cancelled("the statement was cancelled");
  }
  Owned<PendingQuery>* entry = impl_->QueryLocked(handle, principal);
  if (entry == nullptr) return Status::NotFound("unknown, expired or closed statement ticket");
  if (entry->value.cancelled) return Status::Cancelled("the statement was cancelled");
  entry->last_used_ns = MonotonicNanos();
  return entry->value;
}

void Registry::MarkFetched(const std::string& handle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->queries.find(handle);
  if (it != impl_->queries.end()) it->second.value.fetched = true;
}

std::string Registry::AddPrepared(std::shared_ptr<const PreparedStatement> prepared) {
  std::string handle =
      impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*prepared, ""), impl_->limits.prepared_lifetime);
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->prepared, prepared->principal, impl_->limits.max_prepared, "prepared statements");
  std::string principal = prepared->principal;
  impl_->prepared[handle] = {Impl::PreparedEntry{std::move(prepared), nullptr}, std::move(principal), MonotonicNanos()};
  return handle;
}

Result<std::shared_ptr<const PreparedStatement>> Registry::FindPrepared(const std::string& handle,
                                                                        const std::string& principal) {
  const Status unknown = Status::NotFound("unknown, expired or closed prepared statement");
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it != impl_->prepared.end()) {
      if (it->second.principal != principal) return unknown;
      it->second.last_used_ns = MonotonicNanos();
      return it->second.value.statement;
    }
    if (impl_->tombstones.contains(handle)) return unknown;
  }
  // Issued by another instance (or forgotten here): re-created from the handle, outside the
  // lock (it consults the catalog).
  std::optional<SealedPrepared> sealed = impl_->OpenPrepared(handle, principal);
  if (!sealed || !impl_->reprepare) return unknown;
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedStatement> statement, impl_->reprepare(sealed->statement));
  std::shared_ptr<const ParamSet> params;
  if (!sealed->params_ipc.empty()) {
    auto decoded = DecodeParams(sealed->params_ipc);
    if (!decoded.ok()) return decoded.status().WithContext("the parameters the handle carries");
    params = std::move(*decoded);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->tombstones.contains(handle)) return unknown;  // closed meanwhile
  MakeRoom(impl_->prepared, principal, impl_->limits.max_prepared, "prepared statements");
  auto& entry = impl_->prepared[handle];
  entry = {Impl::PreparedEntry{statement, std::move(params)}, principal, MonotonicNanos()};
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
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->prepared.find(handle);
    if (it == impl_->prepared.end() || it->second.principal != principal) {
      return Status::NotFound("unknown, expired or closed prepared statement");
    }
    it->second.value.params = params;
    statement = it->second.value.statement;
  }
  if (!params) return handle;
  // Small parameters travel in a new handle, so that the next call may land on any instance.
  std::string ipc = EncodeParams(*params, impl_->limits.max_sealed_params_bytes);
  if (ipc.empty()) return handle;
  std::string sealed =
      impl_->sealer->Seal(kPreparedPurpose, PackPrepared(*statement, ipc), impl_->limits.prepared_lifetime);
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->prepared, principal, impl_->limits.max_prepared, "prepared statements");
  impl_->prepared[sealed] = {Impl::PreparedEntry{std::move(statement), std::move(params)}, principal, MonotonicNanos()};
  return sealed;
}

Status Registry::ClosePrepared(const std::string& handle, const std::string& principal) {
  const Status unknown = Status::NotFound("unknown or already closed prepared statement");
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  if (it != impl_->prepared.end()) {
    if (it->second.principal != principal) return unknown;
    impl_->prepared.erase(it);
  } else {
    // Issued elsewhere or forgotten here: closed if it is a live handle of the caller.
    if (impl_->tombstones.contains(handle) || !impl_->OpenPrepared(handle, principal)) return unknown;
  }
  impl_->Bury(handle, impl_->prepared_ns(), false);
  return Status::Ok();
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

CancelOutcome Registry::Cancel(const std::string& handle, const std::string& principal) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  bool cancelled = false;
  auto [begin, end] = impl_->running.equal_range(handle);
  for (auto it = begin; it != end; ++it) {
    if (it->second->principal != principal) continue;
    it->second->Interrupt(Run::Stop::kCancelled);
    cancelled = true;
  }
  Owned<PendingQuery>* q = impl_->QueryLocked(handle, principal);
  if (q != nullptr && !q->value.fetched && !q->value.changed_rows) {
    // Running or not, the ticket is dead: remembered (until it expires) so that a DoGet of it
    // on this instance, a retry included, says it was cancelled rather than runs it again.
    q->value.cancelled = true;
    impl_->Bury(handle, impl_->idle_ns(), true);
    cancelled = true;
  }
  return cancelled ? CancelOutcome::kCancelled : CancelOutcome::kNotCancellable;
}

void Registry::InterruptAll() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& [handle, run] : impl_->running) run->Interrupt(Run::Stop::kCancelled);
}

void Registry::Reap(std::chrono::seconds query_timeout) {
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
