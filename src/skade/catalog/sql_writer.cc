#include "skade/catalog/sql_writer_internal.h"

#include <future>
#include <utility>

#include "skade/base/clock.h"
#include "skade/base/uuid.h"

namespace skade::catalog::internal {

namespace {

// Upper bound on the writes one group-commit transaction takes.
constexpr size_t kMaxBatchUnits = 512;

}  // namespace

// One write: a function run inside the shared transaction (in its own savepoint) and the
// promise its caller waits on.
struct SqlWriter::Unit {
  WriteFn fn;
  std::string txn_id;
  Result<std::vector<CommitLogEntry>> result = Status::Internal("write unit did not run");
  std::promise<void> done;
};

SqlWriter::SqlWriter(std::string catalog_name, Dialect dialect, std::unique_ptr<SqlConnection> conn,
                     bool group_commit, OnCommitted on_committed)
    : catalog_name_(std::move(catalog_name)),
      dialect_(dialect),
      group_commit_(group_commit),
      on_committed_(std::move(on_committed)),
      conn_(std::move(conn)) {
  if (group_commit_) thread_ = std::thread([this] { Loop(); });
}

SqlWriter::~SqlWriter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  thread_.join();
}

Result<std::vector<CommitLogEntry>> SqlWriter::Write(WriteFn fn) {
  Unit unit;
  unit.fn = std::move(fn);
  unit.txn_id = Uuid::NewV7().ToString();
  if (!group_commit_) {
    std::lock_guard<std::mutex> lock(write_mu_);
    std::vector<Unit*> batch = {&unit};
    RunBatch(batch);
    return std::move(unit.result);
  }
  std::future<void> done = unit.done.get_future();
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (stopping_) return Status::Unavailable("catalog is closing");
    queue_.push_back(&unit);
  }
  queue_cv_.notify_one();
  done.wait();
  return std::move(unit.result);
}

void SqlWriter::Loop() {
  while (true) {
    std::vector<Unit*> batch;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      while (!queue_.empty() && batch.size() < kMaxBatchUnits) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    std::lock_guard<std::mutex> lock(write_mu_);
    RunBatch(batch);
    // A unit lives on its caller's stack: after set_value it may be gone.
    for (Unit* unit : batch) unit->done.set_value();
  }
}

// One transaction for all `units` (group commit, DESIGN §4): the commit-log sequence is read
// (PostgreSQL: and locked) once, each unit runs in a savepoint so its failure leaves the
// others intact, and one COMMIT makes them all durable with one fsync.
void SqlWriter::RunBatch(const std::vector<Unit*>& units) {
  SqlConnection& conn = *conn_;
  auto fail_all = [&](const Status& status) {
    for (Unit* unit : units) {
      if (unit->result.ok()) unit->result = status;
    }
  };
  for (Unit* unit : units) unit->result = Status::Internal("write unit did not run");
  Status begun = conn.BeginWrite();
  if (!begun.ok()) {
    for (Unit* unit : units) unit->result = begun.WithContext("begin catalog transaction");
    return;
  }
  // PostgreSQL: the row lock on last_commit_seq serialises committers across processes for
  // the rest of the transaction, so commit_seq is dense and in commit order (a sequence
  // would leave gaps and could reorder). SQLite's IMMEDIATE lock already does this.
  Result<int64_t> last = SelectLastCommitSeq(conn, LockRow::kYes);
  if (!last.ok()) {
    RollbackQuietly(conn);
    for (Unit* unit : units) unit->result = last.status();
    return;
  }
  int64_t seq = *last;
  const int64_t now_us = NowMicros();
  for (Unit* unit : units) {
    if (!conn.InTransaction()) {
      unit->result = Status::Unavailable("catalog transaction was rolled back");
      continue;
    }
    Status saved = conn.Exec("SAVEPOINT skade_unit", {}).status();
    if (!saved.ok()) {
      unit->result = saved;
      continue;
    }
    Result<std::vector<CommitLogEntry>> entries = unit->fn(conn);
    int64_t unit_seq = seq;
    if (entries.ok()) {
      Status appended;
      for (CommitLogEntry& entry : *entries) {
        entry.commit_seq = ++unit_seq;
        entry.committed_at_us = now_us;
        entry.txn_id = unit->txn_id;
        appended = InsertCommitLogEntry(conn, catalog_name_, entry);
        if (!appended.ok()) break;
      }
      if (!appended.ok()) entries = appended;
    }
    if (entries.ok()) {
      Status released = conn.Exec("RELEASE SAVEPOINT skade_unit", {}).status();
      if (released.ok()) {
        seq = unit_seq;
        unit->result = std::move(entries);
        continue;
      }
      entries = released;
    }
    if (conn.InTransaction()) {
      (void)conn.Exec("ROLLBACK TO SAVEPOINT skade_unit", {});
      (void)conn.Exec("RELEASE SAVEPOINT skade_unit", {});
    }
    unit->result = entries.status();
  }
  if (!conn.InTransaction()) {
    fail_all(Status::Unavailable("catalog transaction was rolled back"));
    return;
  }
  if (seq != *last) {
    Status bumped = UpdateLastCommitSeq(conn, seq);
    if (bumped.ok() && dialect_ == Dialect::kPostgres) {
      // A hint for listeners in other processes (DESIGN §4); delivered only on COMMIT.
      bumped =
          conn.Exec("SELECT pg_notify('skade_commits', ?)", {Text(std::to_string(seq))}).status();
    }
    if (!bumped.ok()) {
      RollbackQuietly(conn);
      fail_all(bumped);
      return;
    }
  }
  Status committed = conn.Exec("COMMIT", {}).status();
  if (!committed.ok()) {
    if (conn.InTransaction()) {
      // The COMMIT did not happen (SQLite keeps the transaction open on some errors).
      RollbackQuietly(conn);
      fail_all(Status::Unavailable("catalog commit failed: " + committed.message()));
    } else if (dialect_ == Dialect::kPostgres && committed.code() == StatusCode::kUnavailable) {
      // The connection broke while COMMIT was in flight: it may or may not have happened.
      fail_all(Status::CommitUnknown("catalog commit outcome unknown: " + committed.message()));
    } else {
      fail_all(Status::Unavailable("catalog commit failed: " + committed.message()));
    }
    return;
  }
  // Callers hold write_mu_, so this process's commits are told in commit_seq order.
  if (!on_committed_) return;
  std::vector<const CommitLogEntry*> entries;
  for (Unit* unit : units) {
    if (!unit->result.ok()) continue;
    for (const CommitLogEntry& entry : *unit->result) entries.push_back(&entry);
  }
  if (!entries.empty()) on_committed_(entries);
}

}  // namespace skade::catalog::internal
