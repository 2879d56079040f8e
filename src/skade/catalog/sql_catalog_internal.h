// Private to skade/catalog: the small database-connection seam SqlCatalog runs its SQL through,
// with one implementation per dialect (SQLite via the sqlite3 C API, PostgreSQL via libpq).
// Statements are written once with `?` placeholders; every value is a bound parameter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"

namespace skade::catalog::internal {

enum class Dialect { kSqlite, kPostgres };

// A bound parameter: NULL (monostate), an integer or text.
using SqlParam = std::variant<std::monostate, int64_t, std::string>;
// One result row; nullopt for SQL NULL. Every column comes back as text.
using SqlRow = std::vector<std::optional<std::string>>;

struct SqlResult {
  std::vector<SqlRow> rows;
  int64_t affected = 0;  // rows changed by INSERT/UPDATE/DELETE
};

// One database connection. Not thread-safe: one thread uses it at a time (the pool or the
// writer owns it). Error codes: kAlreadyExists for a unique/primary-key violation,
// kUnavailable when the database is busy beyond the timeout or unreachable, kCorruption for a
// damaged SQLite file, kIoError/kInternal otherwise.
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual Dialect dialect() const = 0;
  // Runs one statement; `?` placeholders are bound to `params` in order.
  virtual Result<SqlResult> Exec(std::string_view sql, const std::vector<SqlParam>& params) = 0;
  // Starts a read-write transaction that holds the write lock from the start where the
  // database has one (SQLite: BEGIN IMMEDIATE, waiting up to the busy timeout).
  virtual Status BeginWrite() = 0;
  // Whether a transaction is open (SQLite may roll one back by itself after some errors).
  virtual bool InTransaction() = 0;
  // Reconnects a broken connection (PostgreSQL); kUnavailable if that fails.
  virtual Status EnsureConnected() = 0;
};

// Opens a SQLite database file (created if missing) in WAL mode with synchronous=FULL and a
// 10 s busy timeout.
Result<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path);
// Opens an existing SQLite database for reading only: it never takes the write lock, so a
// stuck writer does not block it, and it works on a read-only file system or another user's
// lake. When SQLite cannot create the WAL index there and no WAL content is pending, the file
// is opened as immutable. kNotFound if the file does not exist.
Result<std::unique_ptr<SqlConnection>> OpenSqliteConnectionReadOnly(const std::string& path);
// Connects with a libpq connection string or URI. kUnavailable if the server can't be reached.
// A read-only connection sets default_transaction_read_only, so the server refuses writes too.
enum class Access { kReadWrite, kReadOnly };
Result<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& conninfo,
                                                              Access access = Access::kReadWrite);

// ---- The catalog's tables (sql_catalog_schema.cc) ----

// Creates the catalog's tables where missing, adds iceberg_type to a JDBC catalog older than
// its V1 schema, and records the schema version and the commit-log sequence, in one
// transaction. kCorruption for a catalog of a newer schema version.
Status SetUpSchema(SqlConnection& conn);
// A read-only open's check, which writes nothing: kNotFound for a database without
// iceberg_tables, kCorruption for a newer schema version. `has_log`: whether skade's commit log
// is there (a foreign Iceberg SQL catalog has none).
Status CheckSchema(SqlConnection& conn, bool* has_log);

// ---- The commit log and the consumer cursors (sql_commit_log.cc) ----
// skade_commit_log holds one row per logged commit (CommitLogEntry); skade_meta holds
// last_commit_seq and one "consumer_cursor:<consumer>" row per consumer.

// Appends `entry` (its commit_seq, committed_at_us and txn_id already set) for `catalog`.
Status InsertCommitLogEntry(SqlConnection& conn, const std::string& catalog,
                            const CommitLogEntry& entry);
// The entries of `catalog` after `after_seq`, in commit_seq order, at most `limit`.
Result<std::vector<CommitLogEntry>> SelectCommitsSince(SqlConnection& conn,
                                                       const std::string& catalog,
                                                       int64_t after_seq, int64_t limit);
// kYes (inside a write transaction): PostgreSQL locks the row, which serialises committers
// across processes until the transaction ends.
enum class LockRow { kNo, kYes };
// The last commit_seq given; kCorruption if the row is missing.
Result<int64_t> SelectLastCommitSeq(SqlConnection& conn, LockRow lock);
Status UpdateLastCommitSeq(SqlConnection& conn, int64_t seq);
// The cursor stored for `consumer`, nullopt if none.
Result<std::optional<int64_t>> SelectConsumerCursor(SqlConnection& conn,
                                                    const std::string& consumer);
// Inserts or replaces the cursor of `consumer`.
Status PutConsumerCursor(SqlConnection& conn, const std::string& consumer, int64_t commit_seq);

// ---- Idempotency records (sql_idempotency.cc) ----
// skade_idempotency_keys holds one row per IdempotencyRecord, keyed by catalog, scope and key.
// It was added without a schema version change (created where missing): older builds ignore it
// and honour no keys.

extern const std::string_view kCreateIdempotencyKeysSql;
extern const std::string_view kCreateIdempotencyExpiryIndexSql;

// The record of `scope` and `key` in `catalog` not expired at `now_us`, nullopt if none.
Result<std::optional<IdempotencyRecord>> SelectIdempotencyRecord(SqlConnection& conn, const std::string& catalog,
                                                                 const std::string& scope, const std::string& key,
                                                                 int64_t now_us);
// Inside a write transaction: inserts `record`, replacing an expired row of its scope and key;
// kAlreadyExists when one not expired at `now_us` is there.
Status InsertIdempotencyRecord(SqlConnection& conn, const std::string& catalog, const IdempotencyRecord& record,
                               int64_t now_us);
// Deletes the rows of `catalog` expired at `now_us`; how many.
Result<int64_t> DeleteExpiredIdempotencyRecords(SqlConnection& conn, const std::string& catalog, int64_t now_us);

// ---- Server state (sql_server_state.cc) ----
// skade_server_state holds one row per ServerStateRecord, keyed by catalog, kind, scope and key.
// Added without a schema version change (created where missing), as the idempotency keys were.

extern const std::string_view kCreateServerStateSql;
extern const std::string_view kCreateServerStateExpiryIndexSql;

// kInvalidArgument for a kind, scope or key out of the column's bounds.
Status CheckServerStateKey(const std::string& kind, const std::string& scope, const std::string& key);
// The record of `kind`, `scope` and `key` in `catalog` not expired at `now_us`, nullopt if none.
Result<std::optional<ServerStateRecord>> SelectServerState(SqlConnection& conn, const std::string& catalog,
                                                           const std::string& kind, const std::string& scope,
                                                           const std::string& key, int64_t now_us);
// Inside a write transaction: inserts or replaces `record` (Catalog::PutServerState's errors).
Status PutServerStateRow(SqlConnection& conn, const std::string& catalog, const ServerStateRecord& record,
                         int64_t max_scope_bytes, int64_t now_us);
Status DeleteServerStateRow(SqlConnection& conn, const std::string& catalog, const std::string& kind,
                            const std::string& scope, const std::string& key);
// Deletes the rows of `catalog` expired at `now_us`; how many.
Result<int64_t> DeleteExpiredServerState(SqlConnection& conn, const std::string& catalog, int64_t now_us);

// A text parameter.
inline SqlParam Text(std::string value) { return SqlParam(std::move(value)); }
// Ends the open transaction, if any, ignoring errors (the caller reports its own).
inline void RollbackQuietly(SqlConnection& conn) {
  if (conn.InTransaction()) (void)conn.Exec("ROLLBACK", {});
}

// Parses a decimal int64 column value; kCorruption naming `what` otherwise.
Result<int64_t> ParseInt64(const std::optional<std::string>& text, std::string_view what);

// ---- The table-location index (sql_catalog_locations.cc) ----
// skade_table_locations holds each table's location, so placing a new table and guarding
// maintenance never load every table's metadata. Tables another program added to the JDBC
// tables have no row; they are read once and added.

extern const std::string_view kCreateTableLocationsSql;

enum class Backfill { kNo, kYes };  // kYes only inside a write transaction

// Every table of `catalog` with its location: from the index, else from `location_of` (given
// the table's metadata location; a table whose metadata cannot be read gets an empty location
// and a log line). With kYes, index rows are added for those tables.
Result<std::vector<TableLocation>> SelectTableLocations(
    SqlConnection& conn, const std::string& catalog,
    const std::function<Result<std::string>(const std::string& metadata_location)>& location_of, Backfill backfill);
// Inserts or replaces the index row of `ident`.
Status PutTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& ident,
                        const std::string& location);
Status DeleteTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& ident);
Status RenameTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& from,
                           const TableIdent& to);
// Every namespace a property row or a table names (those skade cannot represent are skipped).
Result<std::vector<Namespace>> SelectAllNamespaces(SqlConnection& conn, const std::string& catalog);

}  // namespace skade::catalog::internal
