// skade_idempotency_keys: the records of requests that carried an idempotency key (catalog.h,
// IdempotencyRecord). A commit's record is inserted in the commit's own transaction
// (sql_catalog.cc), any other in a transaction of its own; the row format lives here only.
#include <string>
#include <utility>
#include <vector>

#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

const std::string_view kCreateIdempotencyKeysSql =
    "CREATE TABLE IF NOT EXISTS skade_idempotency_keys ("
    "catalog_name VARCHAR(255) NOT NULL, "
    "scope VARCHAR(1000) NOT NULL, "
    "idempotency_key VARCHAR(64) NOT NULL, "
    "request_hash VARCHAR(128) NOT NULL, "
    "response_status INTEGER NOT NULL, "
    "response TEXT NOT NULL, "
    "metadata_location VARCHAR(1000) NOT NULL, "
    "created_at_us BIGINT NOT NULL, "
    "expires_at_us BIGINT NOT NULL, "
    "PRIMARY KEY (catalog_name, scope, idempotency_key))";
// The purge deletes by expiry: an index keeps it from reading every row.
const std::string_view kCreateIdempotencyExpiryIndexSql =
    "CREATE INDEX IF NOT EXISTS skade_idempotency_keys_expiry ON skade_idempotency_keys "
    "(catalog_name, expires_at_us)";

Result<std::optional<IdempotencyRecord>> SelectIdempotencyRecord(SqlConnection& conn, const std::string& catalog,
                                                                 const std::string& scope, const std::string& key,
                                                                 int64_t now_us) {
  SKADE_ASSIGN_OR_RETURN(
      SqlResult result,
      conn.Exec("SELECT request_hash, response_status, response, metadata_location, created_at_us, expires_at_us "
                "FROM skade_idempotency_keys WHERE catalog_name = ? AND scope = ? AND idempotency_key = ? "
                "AND expires_at_us > ?",
                {Text(catalog), Text(scope), Text(key), SqlParam(now_us)}));
  if (result.rows.empty()) return std::optional<IdempotencyRecord>();
  const SqlRow& row = result.rows[0];
  IdempotencyRecord record;
  record.scope = scope;
  record.key = key;
  record.request_hash = row[0].value_or("");
  SKADE_ASSIGN_OR_RETURN(int64_t status, ParseInt64(row[1], "skade_idempotency_keys response_status"));
  record.status = static_cast<int>(status);
  record.response = row[2].value_or("");
  record.metadata_location = row[3].value_or("");
  SKADE_ASSIGN_OR_RETURN(record.created_at_us, ParseInt64(row[4], "skade_idempotency_keys created_at_us"));
  SKADE_ASSIGN_OR_RETURN(record.expires_at_us, ParseInt64(row[5], "skade_idempotency_keys expires_at_us"));
  return std::optional<IdempotencyRecord>(std::move(record));
}

Status InsertIdempotencyRecord(SqlConnection& conn, const std::string& catalog, const IdempotencyRecord& record,
                               int64_t now_us) {
  // An expired row of the same key is history: the key is free again.
  SKADE_RETURN_IF_ERROR(conn.Exec("DELETE FROM skade_idempotency_keys WHERE catalog_name = ? AND scope = ? AND "
                                  "idempotency_key = ? AND expires_at_us <= ?",
                                  {Text(catalog), Text(record.scope), Text(record.key), SqlParam(now_us)}));
  // Checked before the insert so that the answer does not depend on how a dialect reports the
  // primary key (the key still decides a race between processes: kAlreadyExists either way).
  SKADE_ASSIGN_OR_RETURN(std::optional<IdempotencyRecord> existing,
                         SelectIdempotencyRecord(conn, catalog, record.scope, record.key, now_us));
  if (existing) return Status::AlreadyExists("idempotency key " + record.key + " was used already");
  return conn
      .Exec("INSERT INTO skade_idempotency_keys (catalog_name, scope, idempotency_key, request_hash, "
            "response_status, response, metadata_location, created_at_us, expires_at_us) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {Text(catalog), Text(record.scope), Text(record.key), Text(record.request_hash),
             SqlParam(static_cast<int64_t>(record.status)), Text(record.response), Text(record.metadata_location),
             SqlParam(record.created_at_us), SqlParam(record.expires_at_us)})
      .status();
}

Result<int64_t> DeleteExpiredIdempotencyRecords(SqlConnection& conn, const std::string& catalog, int64_t now_us) {
  SKADE_ASSIGN_OR_RETURN(SqlResult deleted,
                         conn.Exec("DELETE FROM skade_idempotency_keys WHERE catalog_name = ? AND expires_at_us <= ?",
                                   {Text(catalog), SqlParam(now_us)}));
  return deleted.affected;
}

}  // namespace skade::catalog::internal
