#include "skade/catalog/polled_log.h"

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "skade/base/clock.h"
#include "skade/base/hash.h"
#include "skade/base/log.h"
#include "skade/io/local_folders.h"
#include "skade/io/reserved_files.h"

namespace skade::catalog {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS polled_tables (table_namespace TEXT NOT NULL, table_name TEXT NOT NULL, "
    "metadata_location TEXT NOT NULL, snapshot_id INTEGER, PRIMARY KEY (table_namespace, table_name));"
    "CREATE TABLE IF NOT EXISTS polled_log (commit_seq INTEGER PRIMARY KEY, table_namespace TEXT NOT NULL, "
    "table_name TEXT NOT NULL, snapshot_id INTEGER, metadata_location TEXT NOT NULL, "
    "previous_metadata_location TEXT NOT NULL, operation TEXT NOT NULL, added_records INTEGER NOT NULL, "
    "deleted_records INTEGER NOT NULL, committed_at_us INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS polled_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

// What the poll saw of one table.
struct Seen {
  std::string metadata_location;
  std::optional<int64_t> snapshot_id;
};

class PolledLogCatalog final : public Catalog {
 public:
  PolledLogCatalog(std::unique_ptr<Catalog> inner, PolledLogOptions options, sqlite3* db)
      : inner_(std::move(inner)), options_(std::move(options)), db_(db) {}

  ~PolledLogCatalog() override {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    sqlite3_close_v2(db_);
  }

  // Loads the stored state; on a new log the catalog's current tables become the baseline.
  Status Start() {
    SKADE_RETURN_IF_ERROR(Exec(kSchema));
    SKADE_RETURN_IF_ERROR(LoadState());
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fresh = !HasMeta("baseline");
    }
    if (fresh) {
      SKADE_ASSIGN_OR_RETURN(auto current, Scan());
      std::lock_guard<std::mutex> lock(mu_);
      SKADE_RETURN_IF_ERROR(Apply(current, /*log=*/false, nullptr));
      SKADE_RETURN_IF_ERROR(Exec("INSERT OR REPLACE INTO polled_meta (key, value) VALUES ('baseline', '1')"));
    } else {
      // Changes made while nothing was polling show up now.
      SKADE_RETURN_IF_ERROR(PollOnce());
    }
    thread_ = std::thread([this] { Run(); });
    return Status::Ok();
  }

  const std::string& name() const override { return inner_->name(); }
  const std::string& warehouse() const override { return inner_->warehouse(); }

  Status CreateNamespace(const Namespace& ns, const std::map<std::string, std::string>& p) override {
    return inner_->CreateNamespace(ns, p);
  }
  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override { return inner_->ListNamespaces(parent); }
  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    return inner_->LoadNamespaceProperties(ns);
  }
  Status UpdateNamespaceProperties(const Namespace& ns, const std::map<std::string, std::string>& u,
                                   const std::vector<std::string>& r) override {
    return inner_->UpdateNamespaceProperties(ns, u, r);
  }
  Status DropNamespace(const Namespace& ns) override { return inner_->DropNamespace(ns); }
  Result<bool> NamespaceExists(const Namespace& ns) override { return inner_->NamespaceExists(ns); }
  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override { return inner_->ListTables(ns); }
  Result<std::vector<TablePointer>> ListTablePointers(const Namespace& ns) override {
    return inner_->ListTablePointers(ns);
  }
  Result<TableState> LoadTable(const TableIdent& ident) override { return inner_->LoadTable(ident); }
  Result<std::vector<TableLocation>> ListTableLocations() override { return inner_->ListTableLocations(); }

  // Changes through this object are logged at once (their CommitResult carries the seq).
  Result<CommitResult> CreateTable(const TableIdent& ident, const CreateTableRequest& request) override {
    SKADE_ASSIGN_OR_RETURN(CommitResult r, inner_->CreateTable(ident, request));
    r.commit_seq = r.first_commit_seq = Observe(ident, r.table);
    return r;
  }
  Status DropTable(const TableIdent& ident, DropMode mode,
                   const std::optional<std::string>& if_metadata_location) override {
    SKADE_RETURN_IF_ERROR(inner_->DropTable(ident, mode, if_metadata_location));
    Observe(ident, std::nullopt);
    return Status::Ok();
  }
  Status UnregisterTable(const TableIdent& ident, const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(inner_->UnregisterTable(ident, metadata_location));
    Observe(ident, std::nullopt);
    return Status::Ok();
  }
  Status RenameTable(const TableIdent& from, const TableIdent& to) override {
    // One step for the poller: a poll in between would log the rename by itself.
    std::lock_guard<std::mutex> lock(poll_mu_);
    SKADE_RETURN_IF_ERROR(inner_->RenameTable(from, to));
    ObserveLocked(from, std::nullopt);
    auto state = inner_->LoadTable(to);
    if (state.ok()) ObserveLocked(to, *state);
    return Status::Ok();
  }
  // Views are not logged: forwarded as they are.
  bool SupportsViews() const override { return inner_->SupportsViews(); }
  Result<std::vector<TableIdent>> ListViews(const Namespace& ns) override { return inner_->ListViews(ns); }
  Result<ViewState> CreateView(const TableIdent& ident, const CreateViewRequest& request) override {
    return inner_->CreateView(ident, request);
  }
  Result<ViewState> LoadView(const TableIdent& ident) override { return inner_->LoadView(ident); }
  Result<ViewState> CommitView(const ViewCommit& commit) override { return inner_->CommitView(commit); }
  Status DropView(const TableIdent& ident) override { return inner_->DropView(ident); }
  Status RenameView(const TableIdent& from, const TableIdent& to) override { return inner_->RenameView(from, to); }
  Result<ViewState> RegisterView(const TableIdent& ident, const std::string& metadata_location) override {
    return inner_->RegisterView(ident, metadata_location);
  }
  Result<CommitResult> RegisterTable(const TableIdent& ident, const std::string& location) override {
    SKADE_ASSIGN_OR_RETURN(CommitResult r, inner_->RegisterTable(ident, location));
    r.commit_seq = r.first_commit_seq = Observe(ident, r.table);
    return r;
  }
  Result<CommitResult> CommitTable(const TableCommit& commit) override {
    SKADE_ASSIGN_OR_RETURN(CommitResult r, inner_->CommitTable(commit));
    r.commit_seq = r.first_commit_seq = Observe(commit.ident, r.table);
    return r;
  }
  Result<std::vector<CommitResult>> CommitTransaction(const std::vector<TableCommit>& commits) override {
    SKADE_ASSIGN_OR_RETURN(std::vector<CommitResult> rs, inner_->CommitTransaction(commits));
    for (auto& r : rs) r.commit_seq = r.first_commit_seq = Observe(r.table.ident, r.table);
    return rs;
  }

  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t after_seq, int64_t limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<CommitLogEntry> out;
    sqlite3_stmt* stmt = nullptr;
    const char* sql =
        "SELECT commit_seq, table_namespace, table_name, snapshot_id, metadata_location, "
        "previous_metadata_location, operation, added_records, deleted_records, committed_at_us "
        "FROM polled_log WHERE commit_seq > ? ORDER BY commit_seq LIMIT ?";
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return Error("read the polled log");
    sqlite3_bind_int64(stmt, 1, after_seq);
    sqlite3_bind_int64(stmt, 2, limit);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      CommitLogEntry e;
      e.commit_seq = sqlite3_column_int64(stmt, 0);
      auto ns = Namespace::Parse(Text(stmt, 1));
      if (ns.ok()) e.table.ns = *ns;
      e.table.name = Text(stmt, 2);
      if (sqlite3_column_type(stmt, 3) != SQLITE_NULL) e.snapshot_id = sqlite3_column_int64(stmt, 3);
      e.metadata_location = Text(stmt, 4);
      e.previous_metadata_location = Text(stmt, 5);
      e.operation = Text(stmt, 6);
      e.added_records = sqlite3_column_int64(stmt, 7);
      e.deleted_records = sqlite3_column_int64(stmt, 8);
      e.committed_at_us = sqlite3_column_int64(stmt, 9);
      out.push_back(std::move(e));
    }
    sqlite3_finalize(stmt);
    return out;
  }

  Result<int64_t> LatestCommitSeq() override {
    std::lock_guard<std::mutex> lock(mu_);
    return last_seq_;
  }

  void SetCommitListener(CommitListener listener) override {
    std::lock_guard<std::mutex> lock(listener_mu_);
    listener_ = std::move(listener);
  }

 private:
  static std::string Text(sqlite3_stmt* stmt, int col) {
    const unsigned char* t = sqlite3_column_text(stmt, col);
    return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
  }
  Status Error(const std::string& what) const {
    return Status::IoError(what + " (" + options_.state_path + "): " + sqlite3_errmsg(db_));
  }
  Status Exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string m = message ? message : "";
      sqlite3_free(message);
      return Status::IoError("polled commit log " + options_.state_path + ": " + m);
    }
    return Status::Ok();
  }
  bool HasMeta(const char* key) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db_, "SELECT 1 FROM polled_meta WHERE key = ?", -1, &stmt, nullptr);
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_TRANSIENT);
    const bool found = sqlite3_step(stmt) == SQLITE_ROW;
    sqlite3_finalize(stmt);
    return found;
  }

  Status LoadState() {
    std::lock_guard<std::mutex> lock(mu_);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT table_namespace, table_name, metadata_location, snapshot_id FROM polled_tables",
                           -1, &stmt, nullptr) != SQLITE_OK) {
      return Error("read the polled state");
    }
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const std::string key = Text(stmt, 0) + '\x1f' + Text(stmt, 1);
      Seen s{Text(stmt, 2), std::nullopt};
      if (sqlite3_column_type(stmt, 3) != SQLITE_NULL) s.snapshot_id = sqlite3_column_int64(stmt, 3);
      state_[key] = std::move(s);
    }
    sqlite3_finalize(stmt);
    sqlite3_stmt* seq = nullptr;
    sqlite3_prepare_v2(db_, "SELECT COALESCE(MAX(commit_seq), 0) FROM polled_log", -1, &seq, nullptr);
    if (sqlite3_step(seq) == SQLITE_ROW) last_seq_ = sqlite3_column_int64(seq, 0);
    sqlite3_finalize(seq);
    return Status::Ok();
  }

  static std::string Key(const TableIdent& t) { return t.ns.ToString() + '\x1f' + t.name; }
  static TableIdent IdentOfKey(const std::string& key) {
    TableIdent t;
    const size_t sep = key.find('\x1f');
    auto ns = Namespace::Parse(key.substr(0, sep));
    if (ns.ok()) t.ns = *ns;
    t.name = key.substr(sep + 1);
    return t;
  }

  // Every table of the catalog with what its current metadata says.
  struct Observed {
    std::string metadata_location;
    iceberg::TableMetadataPtr metadata;
  };
  Result<std::map<std::string, Observed>> Scan() {
    std::map<std::string, Observed> out;
    SKADE_ASSIGN_OR_RETURN(std::vector<Namespace> namespaces, ListNamespacesBelow(*inner_, Namespace{}));
    for (const Namespace& ns : namespaces) {
      auto tables = inner_->ListTables(ns);
      if (!tables.ok()) {
        if (tables.status().code() == StatusCode::kNotFound) continue;  // dropped meanwhile
        return tables.status();
      }
      for (const TableIdent& t : *tables) {
        auto state = inner_->LoadTable(t);
        if (!state.ok()) {
          if (state.status().code() != StatusCode::kNotFound) {
            SKADE_LOG_WARN("polled commit log: cannot load {}: {}", t.ToString(), state.status().ToString());
            // Keep what was known: an unreadable table is not a dropped one.
            std::lock_guard<std::mutex> lock(mu_);
            if (auto it = state_.find(Key(t)); it != state_.end()) out[Key(t)] = Observed{it->second.metadata_location, nullptr};
          }
          continue;
        }
        out[Key(t)] = Observed{state->metadata_location, state->metadata};
      }
    }
    return out;
  }

  // One entry for a table whose metadata moved from `before` (nullopt: new) to `after`
  // (nullopt: gone).
  CommitLogEntry EntryFor(const std::string& key, const std::optional<Seen>& before, const Observed* after) {
    CommitLogEntry e;
    e.table = IdentOfKey(key);
    e.committed_at_us = NowMicros();
    if (before) e.previous_metadata_location = before->metadata_location;
    if (after == nullptr) {
      e.operation = "drop";
      return e;
    }
    e.metadata_location = after->metadata_location;
    const iceberg::Snapshot* current = after->metadata ? after->metadata->CurrentSnapshot() : nullptr;
    if (current) e.snapshot_id = current->snapshot_id;
    if (!before) {
      e.operation = "create";
    } else if (current && (!before->snapshot_id || *before->snapshot_id != current->snapshot_id)) {
      DescribeAddedSnapshot(*current, &e);
    } else {
      e.operation = "update";
    }
    return e;
  }

  // Records the differences between the state and `current` (all tables, or only those in
  // `only`); with `log`, each as a log entry. Caller holds mu_.
  Status Apply(const std::map<std::string, Observed>& current, bool log, const std::string* only,
               std::vector<CommitLogEntry>* added = nullptr) {
    std::vector<CommitLogEntry> entries;
    std::map<std::string, std::optional<Seen>> changes;
    // Drops first: a rename seen by one poll reads as drop, then create.
    for (const auto& [key, seen] : state_) {
      if (only != nullptr && key != *only) continue;
      if (current.count(key)) continue;
      if (log) entries.push_back(EntryFor(key, seen, nullptr));
      changes[key] = std::nullopt;
    }
    for (const auto& [key, obs] : current) {
      auto it = state_.find(key);
      if (it != state_.end() && it->second.metadata_location == obs.metadata_location) continue;
      if (!obs.metadata && it != state_.end()) continue;  // unreadable now: keep
      if (log) entries.push_back(EntryFor(key, it == state_.end() ? std::nullopt : std::optional<Seen>(it->second), &obs));
      Seen s{obs.metadata_location, std::nullopt};
      if (obs.metadata && obs.metadata->CurrentSnapshot()) s.snapshot_id = obs.metadata->CurrentSnapshot()->snapshot_id;
      changes[key] = s;
    }
    if (changes.empty()) return Status::Ok();
    SKADE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    auto run = [&]() -> Status {
      for (const auto& [key, seen] : changes) {
        const TableIdent t = IdentOfKey(key);
        sqlite3_stmt* stmt = nullptr;
        if (seen) {
          sqlite3_prepare_v2(db_,
                             "INSERT OR REPLACE INTO polled_tables (table_namespace, table_name, metadata_location, "
                             "snapshot_id) VALUES (?, ?, ?, ?)",
                             -1, &stmt, nullptr);
          sqlite3_bind_text(stmt, 3, seen->metadata_location.c_str(), -1, SQLITE_TRANSIENT);
          if (seen->snapshot_id) sqlite3_bind_int64(stmt, 4, *seen->snapshot_id);
        } else {
          sqlite3_prepare_v2(db_, "DELETE FROM polled_tables WHERE table_namespace = ? AND table_name = ?", -1, &stmt,
                             nullptr);
        }
        const std::string ns = t.ns.ToString();
        sqlite3_bind_text(stmt, 1, ns.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 2, t.name.c_str(), -1, SQLITE_TRANSIENT);
        const int rc = sqlite3_step(stmt);
        sqlite3_finalize(stmt);
        if (rc != SQLITE_DONE) return Error("write the polled state");
      }
      int64_t seq = last_seq_;
      for (auto& e : entries) {
        e.commit_seq = ++seq;
        sqlite3_stmt* stmt = nullptr;
        sqlite3_prepare_v2(db_,
                           "INSERT INTO polled_log (commit_seq, table_namespace, table_name, snapshot_id, "
                           "metadata_location, previous_metadata_location, operation, added_records, "
                           "deleted_records, committed_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           -1, &stmt, nullptr);
        const std::string ns = e.table.ns.ToString();
        sqlite3_bind_int64(stmt, 1, e.commit_seq);
        sqlite3_bind_text(stmt, 2, ns.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 3, e.table.name.c_str(), -1, SQLITE_TRANSIENT);
        if (e.snapshot_id) sqlite3_bind_int64(stmt, 4, *e.snapshot_id);
        sqlite3_bind_text(stmt, 5, e.metadata_location.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 6, e.previous_metadata_location.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(stmt, 7, e.operation.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(stmt, 8, e.added_records);
        sqlite3_bind_int64(stmt, 9, e.deleted_records);
        sqlite3_bind_int64(stmt, 10, e.committed_at_us);
        const int rc = sqlite3_step(stmt);
        sqlite3_finalize(stmt);
        if (rc != SQLITE_DONE) return Error("append to the polled log");
      }
      return Status::Ok();
    };
    Status st = run();
    if (!st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
    SKADE_RETURN_IF_ERROR(Exec("COMMIT"));
    for (const auto& [key, seen] : changes) {
      if (seen) {
        state_[key] = *seen;
      } else {
        state_.erase(key);
      }
    }
    if (!entries.empty()) last_seq_ = entries.back().commit_seq;
    if (added != nullptr) *added = entries;
    return Status::Ok();
  }

  void Announce(const std::vector<CommitLogEntry>& entries) {
    std::lock_guard<std::mutex> lock(listener_mu_);
    if (!listener_) return;
    for (const auto& e : entries) listener_(e);
  }

  Status PollOnce() {
    std::vector<CommitLogEntry> entries;
    {
      // The scan and its application are one step: a change this object logs meanwhile
      // must not be undone by an older scan.
      std::lock_guard<std::mutex> lock(poll_mu_);
      SKADE_ASSIGN_OR_RETURN(auto current, Scan());
      {
        std::lock_guard<std::mutex> state_lock(mu_);
        SKADE_RETURN_IF_ERROR(Apply(current, true, nullptr, &entries));
      }
      Announce(entries);  // under poll_mu_: listeners hear entries in commit_seq order
    }
    return Status::Ok();
  }

  // Logs the change of one table this object made; its commit_seq (0 when nothing changed
  // or the log could not be written, which the next poll retries).
  int64_t Observe(const TableIdent& ident, const std::optional<TableState>& state) {
    std::lock_guard<std::mutex> lock(poll_mu_);
    return ObserveLocked(ident, state);
  }
  // Observe, with poll_mu_ held by the caller.
  int64_t ObserveLocked(const TableIdent& ident, const std::optional<TableState>& state) {
    std::map<std::string, Observed> current;
    if (state) current[Key(ident)] = Observed{state->metadata_location, state->metadata};
    const std::string key = Key(ident);
    std::vector<CommitLogEntry> entries;
    {
      std::lock_guard<std::mutex> state_lock(mu_);
      Status st = Apply(current, true, &key, &entries);
      if (!st.ok()) SKADE_LOG_WARN("polled commit log: {}", st.ToString());
    }
    Announce(entries);
    if (!entries.empty()) return entries.back().commit_seq;
    // A poll between the change and this observation logged it already: that entry's seq.
    return state ? LoggedSeq(ident, state->metadata_location) : 0;
  }

  // The commit_seq of the entry that logged `ident` at `metadata_location` (0 when none).
  int64_t LoggedSeq(const TableIdent& ident, const std::string& metadata_location) {
    std::lock_guard<std::mutex> state_lock(mu_);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "SELECT MAX(commit_seq) FROM polled_log WHERE table_namespace = ? AND table_name = ? "
                           "AND metadata_location = ?",
                           -1, &stmt, nullptr) != SQLITE_OK) {
      return 0;
    }
    const std::string ns = ident.ns.ToString();
    sqlite3_bind_text(stmt, 1, ns.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, ident.name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 3, metadata_location.c_str(), -1, SQLITE_TRANSIENT);
    int64_t seq = 0;
    if (sqlite3_step(stmt) == SQLITE_ROW) seq = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return seq;
  }

  void Run() {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stopping_) {
      stop_cv_.wait_for(lock, options_.interval, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      Status st = PollOnce();
      if (!st.ok()) SKADE_LOG_WARN("polled commit log: poll failed (retried in {} ms): {}", options_.interval.count(), st.ToString());
      lock.lock();
    }
  }

  std::unique_ptr<Catalog> inner_;
  const PolledLogOptions options_;
  sqlite3* db_;
  std::mutex poll_mu_;  // one poll (scan + apply) or observation at a time
  std::mutex mu_;       // db_, state_, last_seq_
  std::map<std::string, Seen> state_;
  int64_t last_seq_ = 0;
  std::mutex listener_mu_;
  CommitListener listener_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Catalog>> WithPolledCommitLog(std::unique_ptr<Catalog> inner, PolledLogOptions options) {
  const std::filesystem::path parent = std::filesystem::path(options.state_path).parent_path();
  if (!parent.empty()) SKADE_RETURN_IF_ERROR(io::CreateFoldersDurably(parent.string()));
  io::ReserveSqliteDatabase(options.state_path);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(options.state_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return Status::IoError("cannot open the polled commit log " + options.state_path + ": " + m);
  }
  sqlite3_busy_timeout(db, 5000);
  auto catalog = std::make_unique<PolledLogCatalog>(std::move(inner), std::move(options), db);
  SKADE_RETURN_IF_ERROR(catalog->Start());
  return std::unique_ptr<Catalog>(std::move(catalog));
}

std::string DefaultStatePath(const std::string& catalog_uri, std::string_view stem, std::string_view extension) {
  std::string base;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    base = std::string(xdg) + "/skade";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.local/state/skade";
  } else {
    base = "/tmp/skade-state";
  }
  // FNV-1a of the URI without its query (credentials stay out of file names and hashes alike
  // would change with a rotated token). The basis is the one state files were always named
  // with (it lacks a digit of the standard one; kept so existing state is found again).
  const uint64_t h = Fnv1a64(std::string_view(catalog_uri).substr(0, catalog_uri.find('?')), 1469598103934665603ULL);
  char hash[20];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(h));
  return base + "/" + std::string(stem) + "-" + hash + std::string(extension);
}

std::string DefaultPolledLogPath(const std::string& catalog_uri) { return DefaultStatePath(catalog_uri, "polled", ".db"); }

}  // namespace skade::catalog
