#include "skade/events/watcher.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <sqlite3.h>
#include <unistd.h>

#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/log.h"
#include "skade/io/reserved_files.h"

namespace skade::events {

// A dialect's "something may have changed" signal. Check() is called by the watcher thread
// only.
struct Watcher::Hint {
  virtual ~Hint() = default;
  // A descriptor that becomes readable on a hint, or -1 when the hint must be polled.
  virtual int fd() = 0;
  // Whether the catalog may have changed since the previous call.
  virtual Result<bool> Check() = 0;
};

namespace {

constexpr int64_t kCatchUpBatch = 1024;

// SQLite: PRAGMA data_version changes whenever another connection (this process's writer
// included) commits to the file. Reading it is a few microseconds and takes no lock.
class SqliteHint final : public Watcher::Hint {
 public:
  static Result<std::unique_ptr<SqliteHint>> Open(const std::string& path) {
    io::ReserveSqliteDatabase(path);
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    auto hint = std::unique_ptr<SqliteHint>(new SqliteHint(db));
    if (rc != SQLITE_OK) {
      return Status::IoError("watch sqlite catalog " + path + ": " +
                             (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(db, 1000);
    rc = sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &hint->stmt_, nullptr);
    if (rc != SQLITE_OK) {
      return Status::IoError("watch sqlite catalog " + path + ": " + sqlite3_errmsg(db));
    }
    return hint;
  }

  ~SqliteHint() override {
    if (stmt_) sqlite3_finalize(stmt_);
    if (db_) sqlite3_close_v2(db_);
  }

  int fd() override { return -1; }

  Result<bool> Check() override {
    sqlite3_reset(stmt_);
    int rc = sqlite3_step(stmt_);
    if (rc != SQLITE_ROW) return Status::Unavailable(std::string("data_version: ") + sqlite3_errmsg(db_));
    int64_t version = sqlite3_column_int64(stmt_, 0);
    sqlite3_reset(stmt_);
    bool changed = version != version_;
    version_ = version;
    return changed;
  }

 private:
  explicit SqliteHint(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int64_t version_ = -1;
};

// PostgreSQL: the commit transaction sends pg_notify('skade_commits', seq); notifications
// arrive on this connection's socket only after the commit.
class PostgresHint final : public Watcher::Hint {
 public:
  static Result<std::unique_ptr<PostgresHint>> Open(const std::string& conninfo) {
    auto hint = std::unique_ptr<PostgresHint>(new PostgresHint(PQconnectdb(conninfo.c_str())));
    SKADE_RETURN_IF_ERROR(hint->Listen());
    return hint;
  }

  ~PostgresHint() override {
    if (conn_) PQfinish(conn_);
  }

  int fd() override { return conn_ && PQstatus(conn_) == CONNECTION_OK ? PQsocket(conn_) : -1; }

  Result<bool> Check() override {
    if (PQstatus(conn_) != CONNECTION_OK || !PQconsumeInput(conn_)) {
      // Reconnect; commits made meanwhile are found by reading the log.
      PQreset(conn_);
      SKADE_RETURN_IF_ERROR(Listen());
      return true;
    }
    bool any = false;
    while (PGnotify* notify = PQnotifies(conn_)) {
      any = true;
      PQfreemem(notify);
    }
    return any;
  }

 private:
  explicit PostgresHint(PGconn* conn) : conn_(conn) {}

  Status Listen() {
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      return Status::Unavailable(std::string("watch postgres catalog: ") +
                                 (conn_ ? PQerrorMessage(conn_) : "out of memory"));
    }
    PGresult* result = PQexec(conn_, "LISTEN skade_commits");
    bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
    PQclear(result);
    if (!ok) return Status::Unavailable(std::string("LISTEN skade_commits: ") + PQerrorMessage(conn_));
    return Status::Ok();
  }

  PGconn* conn_;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// A catalog reached over the network or with a polled log (REST, Nessie, a folder of
// tables): no change signal, so every `interval` the watcher catches up, which asks for the
// log head itself (one request when nothing changed).
class IntervalHint final : public Watcher::Hint {
 public:
  explicit IntervalHint(std::chrono::milliseconds interval) : interval_(interval) {}
  int fd() override { return -1; }
  Result<bool> Check() override {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return false;
    next_ = now + interval_;
    return true;
  }

 private:
  const std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace

Result<std::unique_ptr<Watcher>> Watcher::Start(catalog::Catalog& catalog,
                                                const std::string& catalog_uri, Bus& bus,
                                                WatcherOptions options) {
  std::unique_ptr<Hint> hint;
  std::string_view uri = catalog_uri;
  if (StartsWith(uri, "postgresql://") || StartsWith(uri, "postgres://")) {
    SKADE_ASSIGN_OR_RETURN(hint, PostgresHint::Open(catalog_uri));
  } else if (uri.find("://") != std::string_view::npos && !StartsWith(uri, "sqlite://")) {
    // A catalog reached over the network or a polled one (REST, Nessie, a folder of tables).
    hint = std::make_unique<IntervalHint>(options.remote_poll_interval);
  } else {
    if (StartsWith(uri, "sqlite://")) uri.remove_prefix(std::string_view("sqlite://").size());
    if (uri.empty()) return Status::InvalidArgument("watch: empty catalog path");
    SKADE_ASSIGN_OR_RETURN(hint, SqliteHint::Open(std::string(uri)));
  }
  SKADE_ASSIGN_OR_RETURN(int64_t head, catalog.LatestCommitSeq());
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return Status::IoError("watch: pipe failed");
  bus.SkipTo(head);
  int64_t start = bus.last_seq();
  auto watcher = std::unique_ptr<Watcher>(
      new Watcher(catalog, bus, options, std::move(hint), start, fds[0], fds[1]));
  Watcher* self = watcher.get();
  catalog.SetCommitListener([self](const catalog::CommitLogEntry& entry) { self->OnLocalCommit(entry); });
  watcher->thread_ = std::thread([self] { self->Run(); });
  watcher->Wake();  // commits between reading the head and installing the listener
  return watcher;
}

Watcher::Watcher(catalog::Catalog& catalog, Bus& bus, WatcherOptions options,
                 std::unique_ptr<Hint> hint, int64_t start_seq, int wake_read_fd,
                 int wake_write_fd)
    : catalog_(catalog),
      bus_(bus),
      options_(options),
      hint_(std::move(hint)),
      wake_read_fd_(wake_read_fd),
      wake_write_fd_(wake_write_fd),
      last_published_(start_seq) {}

Watcher::~Watcher() {
  catalog_.SetCommitListener({});  // waits for a listener call in progress
  stopping_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  ::close(wake_read_fd_);
  ::close(wake_write_fd_);
}

int64_t Watcher::last_published() const {
  std::lock_guard<std::mutex> lock(publish_mu_);
  return last_published_;
}

void Watcher::Wake() {
  char byte = 1;
  // A full pipe already holds a wake-up.
  [[maybe_unused]] ssize_t n = ::write(wake_write_fd_, &byte, 1);
}

void Watcher::OnLocalCommit(const catalog::CommitLogEntry& entry) {
  {
    std::lock_guard<std::mutex> lock(publish_mu_);
    if (entry.commit_seq <= last_published_) return;
    if (entry.commit_seq == last_published_ + 1) {
      bus_.Publish(CommitEvent::FromLogEntry(entry));
      last_published_ = entry.commit_seq;
      return;
    }
  }
  // Another process committed in between: the watcher thread reads the gap from the log
  // and publishes it (this entry with it), keeping the order.
  Wake();
}

void Watcher::CatchUp() {
  while (!stopping_) {
    int64_t from = last_published();
    Result<int64_t> head = catalog_.LatestCommitSeq();
    if (!head.ok()) {
      SKADE_LOG_WARN("commit watcher: {}", head.status().ToString());
      return;
    }
    if (*head <= from) return;
    ++log_reads_;
    Result<std::vector<catalog::CommitLogEntry>> entries = catalog_.CommitsSince(from, kCatchUpBatch);
    if (!entries.ok()) {
      SKADE_LOG_WARN("commit watcher: {}", entries.status().ToString());
      return;
    }
    if (entries->empty()) return;
    std::vector<const catalog::CommitLogEntry*> found;  // commits this process did not announce
    {
      std::lock_guard<std::mutex> lock(publish_mu_);
      for (const catalog::CommitLogEntry& entry : *entries) {
        // The log is the truth: publish whatever it holds above what is already published.
        if (entry.commit_seq <= last_published_) continue;
        bus_.Publish(CommitEvent::FromLogEntry(entry));
        last_published_ = entry.commit_seq;
        found.push_back(&entry);
      }
    }
    // Their committers may have died before moving the folder readers' hints.
    for (const catalog::CommitLogEntry* entry : found) catalog_.FollowCommit(*entry);
    if (static_cast<int64_t>(entries->size()) < kCatchUpBatch) return;
  }
}

void Watcher::Run() {
  auto last_full_check = std::chrono::steady_clock::now();
  while (!stopping_) {
    pollfd fds[2];
    fds[0] = {wake_read_fd_, POLLIN, 0};
    int hint_fd = hint_->fd();
    nfds_t count = 1;
    if (hint_fd >= 0) {
      fds[1] = {hint_fd, POLLIN, 0};
      count = 2;
    }
    auto timeout = hint_fd >= 0 ? options_.safety_interval : options_.poll_interval;
    ::poll(fds, count, static_cast<int>(timeout.count()));
    bool kicked = false;
    if (fds[0].revents & POLLIN) {
      char buffer[64];
      while (::read(wake_read_fd_, buffer, sizeof(buffer)) > 0) {
      }
      kicked = true;
    }
    if (stopping_) break;
    Result<bool> changed = hint_->Check();
    if (!changed.ok()) {
      SKADE_LOG_WARN("commit watcher: {}", changed.status().ToString());
    }
    auto now = std::chrono::steady_clock::now();
    bool due = now - last_full_check >= options_.safety_interval;
    if (kicked || due || !changed.ok() || *changed) {
      last_full_check = now;
      CatchUp();
    }
  }
}

}  // namespace skade::events
