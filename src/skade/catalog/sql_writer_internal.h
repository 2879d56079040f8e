// Private to skade/catalog: a SQL catalog's one writer connection and its group commit (DESIGN
// §4). A write is a function run in a write transaction. With group commit, a thread of its own
// drains the queued writes into shared transactions: each write in a savepoint of its own, so a
// failing one leaves the others intact, and one COMMIT (one fsync) for all of them. Without it,
// callers take turns. The commit-log entries a write returns get their commit_seq (dense and in
// commit order, across processes too), commit time and transaction id here, and are appended
// to skade_commit_log in the same transaction.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

// Thread-safe.
class SqlWriter {
 public:
  // Runs on the writer connection inside the transaction; returns the commit-log entries to
  // append (commit_seq, committed_at_us and txn_id are filled in by the writer).
  using WriteFn = std::function<Result<std::vector<CommitLogEntry>>(SqlConnection&)>;
  // Called once per committed transaction with its entries in commit_seq order, before the
  // next transaction starts (so never concurrently).
  using OnCommitted = std::function<void(const std::vector<const CommitLogEntry*>&)>;

  // `catalog_name` is the catalog_name column of the log rows written.
  SqlWriter(std::string catalog_name, Dialect dialect, std::unique_ptr<SqlConnection> conn,
            bool group_commit, OnCommitted on_committed);
  // Runs the writes already queued, then stops.
  ~SqlWriter();
  SqlWriter(const SqlWriter&) = delete;
  SqlWriter& operator=(const SqlWriter&) = delete;

  // Runs `fn` in a write transaction and returns its entries as appended to the log.
  // kUnavailable once the writer is stopping, or when the transaction could not commit;
  // kCommitUnknown when the connection broke during COMMIT (PostgreSQL).
  Result<std::vector<CommitLogEntry>> Write(WriteFn fn);

 private:
  struct Unit;

  void Loop();
  void RunBatch(const std::vector<Unit*>& units);

  const std::string catalog_name_;
  const Dialect dialect_;
  const bool group_commit_;
  const OnCommitted on_committed_;

  // Held by whoever runs a transaction on conn_.
  std::mutex write_mu_;
  std::unique_ptr<SqlConnection> conn_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Unit*> queue_;  // guarded by queue_mu_
  bool stopping_ = false;    // guarded by queue_mu_
  std::thread thread_;
};

}  // namespace skade::catalog::internal
