#include "skade/flightsql/registry_internal.h"

#include <algorithm>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/base/random.h"

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
  int64_t started_ns;
  engine::Connection* connection = nullptr;  // guarded by Registry::Impl::mu; set by Attach
  Run::Stop stop = Run::Stop::kNone;         // guarded by Registry::Impl::mu

  // Records why (the first reason wins) and interrupts the statement if it executes yet.
  void Interrupt(Run::Stop why) {
    if (stop == Run::Stop::kNone) stop = why;
    if (connection != nullptr) connection->Interrupt();
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

std::string NewHandle() { return RandomHex(16); }

}  // namespace

struct Registry::Impl {
  RegistryLimits limits;
  mutable std::mutex mu;
  std::map<std::string, Owned<std::shared_ptr<Session>>> sessions;
  std::map<std::string, Owned<PendingQuery>> queries;
  struct PreparedEntry {
    std::shared_ptr<const PreparedStatement> statement;
    std::shared_ptr<const ParamSet> params;
  };
  std::map<std::string, Owned<PreparedEntry>> prepared;
  std::multimap<std::string, std::shared_ptr<Run::Entry>> running;  // handle → runs

  int64_t idle_ns() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(limits.idle_lifetime).count(); }
};

Registry::Registry(RegistryLimits limits) : impl_(std::make_unique<Impl>()) { impl_->limits = limits; }
Registry::~Registry() = default;

std::shared_ptr<Session> Registry::CreateSession(const std::string& principal) {
  auto s = std::make_shared<Session>();
  s->id = NewHandle();
  s->principal = principal;
  int64_t now = MonotonicNanos();
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->sessions, principal, impl_->limits.max_sessions, "sessions");
  impl_->sessions[s->id] = {s, principal, now};
  return s;
}

Result<std::shared_ptr<Session>> Registry::FindSession(const std::string& id, const std::string& principal) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->sessions.find(id);
  if (it == impl_->sessions.end()) {
    return Status::NotFound("the session is closed or unknown; drop the arrow_flight_session_id cookie to start anew");
  }
  if (it->second.principal != principal) return Status::Unauthorized("the session belongs to another user");
  it->second.last_used_ns = MonotonicNanos();
  return it->second.value;
}

void Registry::CloseSession(const std::string& id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->sessions.erase(id);
}

std::string Registry::AddQuery(PendingQuery query) {
  std::string handle = NewHandle();
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->queries, query.principal, impl_->limits.max_pending_queries, "pending statement tickets");
  std::string principal = query.principal;
  impl_->queries[handle] = {std::move(query), std::move(principal), MonotonicNanos()};
  return handle;
}

Result<PendingQuery> Registry::FindQuery(const std::string& handle, const std::string& principal) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->queries.find(handle);
  if (it == impl_->queries.end() || it->second.principal != principal) {
    return Status::NotFound("unknown, expired or closed statement ticket");
  }
  if (it->second.value.cancelled) return Status::Cancelled("the statement was cancelled");
  it->second.last_used_ns = MonotonicNanos();
  return it->second.value;
}

void Registry::MarkFetched(const std::string& handle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->queries.find(handle);
  if (it != impl_->queries.end()) it->second.value.fetched = true;
}

std::string Registry::AddPrepared(std::shared_ptr<const PreparedStatement> prepared) {
  std::string handle = NewHandle();
  std::lock_guard<std::mutex> lock(impl_->mu);
  MakeRoom(impl_->prepared, prepared->principal, impl_->limits.max_prepared, "prepared statements");
  std::string principal = prepared->principal;
  impl_->prepared[handle] = {Impl::PreparedEntry{std::move(prepared), nullptr}, std::move(principal), MonotonicNanos()};
  return handle;
}

Result<std::shared_ptr<const PreparedStatement>> Registry::FindPrepared(const std::string& handle,
                                                                        const std::string& principal) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  if (it == impl_->prepared.end() || it->second.principal != principal) {
    return Status::NotFound("unknown, expired or closed prepared statement");
  }
  it->second.last_used_ns = MonotonicNanos();
  return it->second.value.statement;
}

std::shared_ptr<const ParamSet> Registry::Params(const std::string& handle) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  return it == impl_->prepared.end() ? nullptr : it->second.value.params;
}

Status Registry::BindParams(const std::string& handle, const std::string& principal,
                            std::shared_ptr<const ParamSet> params) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  if (it == impl_->prepared.end() || it->second.principal != principal) {
    return Status::NotFound("unknown, expired or closed prepared statement");
  }
  it->second.value.params = std::move(params);
  return Status::Ok();
}

Status Registry::ClosePrepared(const std::string& handle, const std::string& principal) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->prepared.find(handle);
  if (it == impl_->prepared.end() || it->second.principal != principal) {
    return Status::NotFound("unknown or already closed prepared statement");
  }
  impl_->prepared.erase(it);
  return Status::Ok();
}

std::unique_ptr<Registry::Run> Registry::StartRun(const std::string& handle, const std::string& principal) {
  auto entry = std::make_shared<Run::Entry>(Run::Entry{handle, principal, MonotonicNanos()});
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
  auto q = impl_->queries.find(handle);
  if (q != impl_->queries.end() && q->second.principal == principal && !q->second.value.fetched &&
      !q->second.value.changed_rows) {
    // Running or not, the ticket is dead: kept (until idle) so that a DoGet of it, a retry
    // included, says it was cancelled rather than unknown or runs it again.
    q->second.value.cancelled = true;
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
}

size_t Registry::session_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sessions.size();
}

}  // namespace skade::flightsql
