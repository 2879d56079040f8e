// skade_server_state: ServerStateRecord rows (catalog.h), one per catalog, kind, scope and key.
// Values are any bytes; PostgreSQL TEXT takes neither NUL nor invalid UTF-8, so both dialects
// store them as base64 text, with their raw size beside them for the per-scope limit.
#include <string>

#include "skade/base/base64.h"
#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

const std::string_view kCreateServerStateSql =
    "CREATE TABLE IF NOT EXISTS skade_server_state ("
    "catalog_name VARCHAR(255) NOT NULL, "
    "kind VARCHAR(64) NOT NULL, "
    "scope VARCHAR(1000) NOT NULL, "
    "state_key VARCHAR(128) NOT NULL, "
    "state_value TEXT NOT NULL, "
    "value_bytes BIGINT NOT NULL, "
    "expires_at_us BIGINT NOT NULL, "
    "PRIMARY KEY (catalog_name, kind, scope, state_key))";
// The purge deletes by expiry: an index keeps it from reading every row.
const std::string_view kCreateServerStateExpiryIndexSql =
    "CREATE INDEX IF NOT EXISTS skade_server_state_expiry ON skade_server_state (catalog_name, expires_at_us)";

Status CheckServerStateKey(const std::string& kind, const std::string& scope, const std::string& key) {
  if (kind.empty() || kind.size() > 64) return Status::InvalidArgument("a server state kind has 1 to 64 bytes");
  if (scope.size() > 1000) return Status::InvalidArgument("a server state scope has at most 1000 bytes");
  if (key.empty() || key.size() > 128) return Status::InvalidArgument("a server state key has 1 to 128 bytes");
  return Status::Ok();
}

Result<std::optional<ServerStateRecord>> SelectServerState(SqlConnection& conn, const std::string& catalog,
                                                           const std::string& kind, const std::string& scope,
                                                           const std::string& key, int64_t now_us) {
  SKADE_RETURN_IF_ERROR(CheckServerStateKey(kind, scope, key));
  SKADE_ASSIGN_OR_RETURN(SqlResult result,
                         conn.Exec("SELECT state_value, value_bytes, expires_at_us FROM skade_server_state "
                                   "WHERE catalog_name = ? AND kind = ? AND scope = ? AND state_key = ? "
                                   "AND expires_at_us > ?",
                                   {Text(catalog), Text(kind), Text(scope), Text(key), SqlParam(now_us)}));
  if (result.rows.empty()) return std::optional<ServerStateRecord>();
  const SqlRow& row = result.rows[0];
  ServerStateRecord record;
  record.kind = kind;
  record.scope = scope;
  record.key = key;
  const std::string encoded = row[0].value_or("");
  record.value = DecodeBase64(encoded);
  SKADE_ASSIGN_OR_RETURN(int64_t size, ParseInt64(row[1], "skade_server_state value_bytes"));
  // DecodeBase64 gives "" for text that is not base64: a damaged row, not an empty value.
  if (static_cast<int64_t>(record.value.size()) != size) {
    return Status::Corruption("skade_server_state: the value of a " + kind + " row does not decode to its size");
  }
  SKADE_ASSIGN_OR_RETURN(record.expires_at_us, ParseInt64(row[2], "skade_server_state expires_at_us"));
  return std::optional<ServerStateRecord>(std::move(record));
}

Status PutServerStateRow(SqlConnection& conn, const std::string& catalog, const ServerStateRecord& record,
                         int64_t max_scope_bytes, int64_t now_us) {
  SKADE_RETURN_IF_ERROR(CheckServerStateKey(record.kind, record.scope, record.key));
  if (record.value.size() > kMaxServerStateBytes) {
    return Status::InvalidArgument("a server state value of " + std::to_string(record.value.size()) +
                                   " bytes is over the limit of " + std::to_string(kMaxServerStateBytes));
  }
  const auto size = static_cast<int64_t>(record.value.size());
  if (max_scope_bytes > 0) {
    // The scope's other live values of this kind (the row replaced does not count).
    SKADE_ASSIGN_OR_RETURN(SqlResult held,
                           conn.Exec("SELECT COALESCE(SUM(value_bytes), 0) FROM skade_server_state "
                                     "WHERE catalog_name = ? AND kind = ? AND scope = ? AND state_key <> ? "
                                     "AND expires_at_us > ?",
                                     {Text(catalog), Text(record.kind), Text(record.scope), Text(record.key),
                                      SqlParam(now_us)}));
    SKADE_ASSIGN_OR_RETURN(int64_t bytes, ParseInt64(held.rows.at(0)[0], "skade_server_state sum"));
    if (bytes + size > max_scope_bytes) {
      return Status::ResourceExhausted("kept " + record.kind + " of this user would grow to " +
                                       std::to_string(bytes + size) + " bytes, over the limit of " +
                                       std::to_string(max_scope_bytes) + " (they expire, or close what holds them)");
    }
  }
  // Delete and insert rather than a dialect's upsert: the key is the caller's random choice, so
  // no two writers race for it.
  SKADE_RETURN_IF_ERROR(DeleteServerStateRow(conn, catalog, record.kind, record.scope, record.key));
  return conn
      .Exec("INSERT INTO skade_server_state (catalog_name, kind, scope, state_key, state_value, value_bytes, "
            "expires_at_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
            {Text(catalog), Text(record.kind), Text(record.scope), Text(record.key), Text(EncodeBase64(record.value)),
             SqlParam(size), SqlParam(record.expires_at_us)})
      .status();
}

Status DeleteServerStateRow(SqlConnection& conn, const std::string& catalog, const std::string& kind,
                            const std::string& scope, const std::string& key) {
  SKADE_RETURN_IF_ERROR(CheckServerStateKey(kind, scope, key));
  return conn
      .Exec("DELETE FROM skade_server_state WHERE catalog_name = ? AND kind = ? AND scope = ? AND state_key = ?",
            {Text(catalog), Text(kind), Text(scope), Text(key)})
      .status();
}

Result<int64_t> DeleteExpiredServerState(SqlConnection& conn, const std::string& catalog, int64_t now_us) {
  SKADE_ASSIGN_OR_RETURN(SqlResult deleted,
                         conn.Exec("DELETE FROM skade_server_state WHERE catalog_name = ? AND expires_at_us <= ?",
                                   {Text(catalog), SqlParam(now_us)}));
  return deleted.affected;
}

}  // namespace skade::catalog::internal
