// SqlConnection over the sqlite3 C API (TOOLCHAIN §9): WAL journal, synchronous=FULL so a
// committed catalog transaction survives power loss, and a busy timeout so several processes
// can share one catalog file (writers queue on the file lock).
#include <sqlite3.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "skade/catalog/sql_catalog_internal.h"
#include "skade/io/reserved_files.h"

namespace skade::catalog::internal {
namespace {

constexpr int kBusyTimeoutMs = 10000;

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StatementFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using SqliteHandle = std::unique_ptr<sqlite3, SqliteCloser>;
using StatementHandle = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        return Status::AlreadyExists(std::move(message));
      }
      return Status::InvalidArgument(std::move(message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(std::move(message));
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return Status::IoError(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

// Thread-compatible (one user at a time). Prepared statements are cached per SQL text.
class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(SqliteHandle db) : db_(std::move(db)) {}
  ~SqliteConnection() override {
    // Statements must be finalized before the handle closes.
    statements_.clear();
  }

  Dialect dialect() const override { return Dialect::kSqlite; }

  Result<SqlResult> Exec(std::string_view sql, const std::vector<SqlParam>& params) override {
    SKADE_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    int expected = sqlite3_bind_parameter_count(stmt);
    if (expected != static_cast<int>(params.size())) {
      return Status::Internal("statement expects " + std::to_string(expected) +
                              " parameters, got " + std::to_string(params.size()) + ": " +
                              std::string(sql));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      int index = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      if (const auto* number = std::get_if<int64_t>(&params[i])) {
        rc = sqlite3_bind_int64(stmt, index, *number);
      } else if (const auto* text = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text(stmt, index, text->data(), static_cast<int>(text->size()),
                               SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(stmt, index);
      }
      if (rc != SQLITE_OK) return SqliteStatus(db_.get(), rc, "bind");
    }
    SqlResult result;
    while (true) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status status = SqliteStatus(db_.get(), sqlite3_extended_errcode(db_.get()),
                                     "sqlite: " + std::string(sql.substr(0, 60)));
        sqlite3_reset(stmt);
        return status;
      }
      int columns = sqlite3_column_count(stmt);
      SqlRow row(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) continue;
        const unsigned char* text = sqlite3_column_text(stmt, c);
        int size = sqlite3_column_bytes(stmt, c);
        row[static_cast<size_t>(c)] =
            std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
      }
      result.rows.push_back(std::move(row));
    }
    result.affected = sqlite3_changes64(db_.get());
    sqlite3_reset(stmt);
    return result;
  }

  Status BeginWrite() override {
    // IMMEDIATE takes the write lock now (waiting up to the busy timeout) instead of at the
    // first write, so a transaction never fails half-way with SQLITE_BUSY_SNAPSHOT.
    return Exec("BEGIN IMMEDIATE", {}).status();
  }

  bool InTransaction() override { return sqlite3_get_autocommit(db_.get()) == 0; }

  Status EnsureConnected() override { return Status::Ok(); }

 private:
  Result<sqlite3_stmt*> Prepare(std::string_view sql) {
    std::string key(sql);
    auto it = statements_.find(key);
    if (it != statements_.end()) return it->second.get();
    sqlite3_stmt* raw = nullptr;
    int rc =
        sqlite3_prepare_v2(db_.get(), key.c_str(), static_cast<int>(key.size()), &raw, nullptr);
    StatementHandle stmt(raw);
    if (rc != SQLITE_OK) return SqliteStatus(db_.get(), rc, "prepare '" + key + "'");
    sqlite3_stmt* out = stmt.get();
    statements_.emplace(std::move(key), std::move(stmt));
    return out;
  }

  SqliteHandle db_;
  std::unordered_map<std::string, StatementHandle> statements_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path) {
  // From now on nothing else in the process opens these files (io/reserved_files.h).
  io::ReserveSqliteDatabase(path);
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteHandle db(raw);
  if (rc != SQLITE_OK) {
    return Status::Unavailable("open sqlite catalog '" + path +
                               "': " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(std::move(db));
  // WAL lets readers run beside the single writer; the mode is stored in the file, so only
  // the first open converts it. FULL syncs the WAL on every commit (durability over speed;
  // group commit amortises the fsync).
  SKADE_ASSIGN_OR_RETURN(SqlResult mode, connection->Exec("PRAGMA journal_mode=WAL", {}));
  if (mode.rows.empty() || !mode.rows[0][0] || *mode.rows[0][0] != "wal") {
    return Status::Unavailable("sqlite catalog '" + path + "' could not switch to WAL mode");
  }
  SKADE_RETURN_IF_ERROR(connection->Exec("PRAGMA synchronous=FULL", {}));
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

namespace {

// "file:" URI of a path, for sqlite3_open_v2 with SQLITE_OPEN_URI ('%', '?' and '#' escaped).
std::string FileUri(const std::string& path, std::string_view query) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char* kHex = "0123456789ABCDEF";
      out += '%';
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 15];
      out += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  return out + "?" + std::string(query);
}

Result<std::unique_ptr<SqliteConnection>> OpenReadOnly(const std::string& uri, const std::string& path) {
  io::ReserveSqliteDatabase(path);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteHandle db(raw);
  if (rc != SQLITE_OK) {
    return Status::Unavailable("open sqlite catalog '" + path + "': " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(std::move(db));
  // Opening is lazy: the first read is what touches the WAL index.
  SKADE_RETURN_IF_ERROR(connection->Exec("SELECT count(*) FROM sqlite_master", {}));
  return connection;
}

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenSqliteConnectionReadOnly(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound("no catalog database at " + path);
  auto opened = OpenReadOnly(FileUri(path, "mode=ro"), path);
  if (opened.ok()) return std::unique_ptr<SqlConnection>(std::move(opened).value());
  // A WAL database needs its -shm index; where this process cannot create it (a read-only
  // folder, another user's lake) the file can still be read as immutable, provided no
  // committed transaction waits in the WAL (a writer that is running keeps -shm present).
  struct stat wal;
  bool wal_pending = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  if (wal_pending) {
    return opened.status().WithContext("cannot read the catalog without writing its WAL index (" + path +
                                       "-wal holds changes a writer has not checkpointed)");
  }
  auto immutable = OpenReadOnly(FileUri(path, "immutable=1"), path);
  if (!immutable.ok()) return opened.status();
  return std::unique_ptr<SqlConnection>(std::move(immutable).value());
}

}  // namespace skade::catalog::internal
