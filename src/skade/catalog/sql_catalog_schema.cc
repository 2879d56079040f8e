// The catalog's tables: the Iceberg JDBC catalog's (iceberg_tables, iceberg_namespace_properties)
// and skade's own (skade_commit_log, skade_meta, skade_table_locations,
// skade_idempotency_keys, skade_server_state), created where missing
// and checked against the schema version this build understands.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

namespace {

// skade_meta schema_version this build writes and understands.
constexpr int64_t kSchemaVersion = 1;
// Any constant; serialises schema creation between processes opening one PostgreSQL database.
constexpr int64_t kSchemaLockKey = 0x736b616465;  // "skade"

constexpr std::string_view kCreateTablesSql =
    "CREATE TABLE IF NOT EXISTS iceberg_tables ("
    "catalog_name VARCHAR(255) NOT NULL, "
    "table_namespace VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, "
    "metadata_location VARCHAR(1000), "
    "previous_metadata_location VARCHAR(1000), "
    "iceberg_type VARCHAR(5), "
    "PRIMARY KEY (catalog_name, table_namespace, table_name))";
constexpr std::string_view kCreateNamespacePropertiesSql =
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties ("
    "catalog_name VARCHAR(255) NOT NULL, "
    "namespace VARCHAR(255) NOT NULL, "
    "property_key VARCHAR(255) NOT NULL, "
    "property_value VARCHAR(1000), "
    "PRIMARY KEY (catalog_name, namespace, property_key))";
constexpr std::string_view kCreateCommitLogSql =
    "CREATE TABLE IF NOT EXISTS skade_commit_log ("
    "commit_seq BIGINT NOT NULL PRIMARY KEY, "
    "catalog_name VARCHAR(255) NOT NULL, "
    "table_namespace VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, "
    "snapshot_id BIGINT, "
    "metadata_location VARCHAR(1000), "
    "previous_metadata_location VARCHAR(1000), "
    "operation VARCHAR(64) NOT NULL, "
    "added_records BIGINT NOT NULL, "
    "deleted_records BIGINT NOT NULL, "
    "committed_at_us BIGINT NOT NULL, "
    "txn_id VARCHAR(64) NOT NULL)";
constexpr std::string_view kCreateMetaSql =
    "CREATE TABLE IF NOT EXISTS skade_meta ("
    "key VARCHAR(255) NOT NULL PRIMARY KEY, "
    "value VARCHAR(1000))";

// skade_meta's rows, key → value.
Result<std::map<std::string, std::string>> ReadMeta(SqlConnection& conn) {
  SKADE_ASSIGN_OR_RETURN(SqlResult meta, conn.Exec("SELECT key, value FROM skade_meta", {}));
  std::map<std::string, std::string> values;
  for (const auto& row : meta.rows) {
    if (row[0]) values[*row[0]] = row[1].value_or("");
  }
  return values;
}

// A catalog written by a newer skade may use tables this build does not know.
Status CheckVersion(const std::map<std::string, std::string>& meta) {
  auto it = meta.find("schema_version");
  if (it == meta.end()) return Status::Ok();
  SKADE_ASSIGN_OR_RETURN(int64_t version, ParseInt64(it->second, "skade_meta schema_version"));
  if (version > kSchemaVersion) {
    return Status::Corruption("catalog schema version " + std::to_string(version) +
                              " is newer than this build (" + std::to_string(kSchemaVersion) + ")");
  }
  return Status::Ok();
}

}  // namespace

// Read-only open: checks without writing. A database without the JDBC catalog tables is no
// catalog; one without skade's tables (written by another JDBC catalog) reads, without a log.
// `has_log`: whether skade's commit log is there (a foreign Iceberg SQL catalog has none).
Status CheckSchema(SqlConnection& conn, bool* has_log) {
  std::string tables = conn.dialect() == Dialect::kSqlite
                           ? "SELECT name FROM sqlite_master WHERE type = 'table'"
                           : "SELECT table_name FROM information_schema.tables WHERE table_schema "
                             "= current_schema()";
  SKADE_ASSIGN_OR_RETURN(SqlResult rows, conn.Exec(tables, {}));
  std::set<std::string> names;
  for (const auto& row : rows.rows) {
    if (row[0]) names.insert(*row[0]);
  }
  if (!names.count("iceberg_tables"))
    return Status::NotFound("the database holds no Iceberg catalog");
  *has_log = names.count("skade_meta") && names.count("skade_commit_log");
  if (!names.count("skade_meta")) return Status::Ok();
  SKADE_ASSIGN_OR_RETURN(auto values, ReadMeta(conn));
  return CheckVersion(values);
}

// Creates the tables if missing and checks skade_meta, in one transaction.
Status SetUpSchema(SqlConnection& conn) {
  SKADE_RETURN_IF_ERROR(conn.BeginWrite());
  auto run = [&]() -> Status {
    if (conn.dialect() == Dialect::kPostgres) {
      // Concurrent CREATE TABLE IF NOT EXISTS can fail in PostgreSQL; serialise openers.
      SKADE_RETURN_IF_ERROR(
          conn.Exec("SELECT pg_advisory_xact_lock(?)", {SqlParam(kSchemaLockKey)}));
    }
    for (std::string_view ddl : {kCreateTablesSql, kCreateNamespacePropertiesSql, kCreateCommitLogSql,
                                 kCreateMetaSql, kCreateTableLocationsSql, kCreateIdempotencyKeysSql,
                                 kCreateIdempotencyExpiryIndexSql, kCreateServerStateSql,
                                 kCreateServerStateExpiryIndexSql}) {
      SKADE_RETURN_IF_ERROR(conn.Exec(ddl, {}));
    }
    // JDBC catalogs created before the V1 schema have no iceberg_type column; add it as
    // JdbcCatalog's migration does.
    std::string has_type =
        conn.dialect() == Dialect::kSqlite
            ? "SELECT COUNT(*) FROM pragma_table_info('iceberg_tables') WHERE name = 'iceberg_type'"
            : "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
              "current_schema() AND table_name = 'iceberg_tables' AND column_name = 'iceberg_type'";
    SKADE_ASSIGN_OR_RETURN(SqlResult columns, conn.Exec(has_type, {}));
    SKADE_ASSIGN_OR_RETURN(int64_t count, ParseInt64(columns.rows.at(0)[0], "count"));
    if (count == 0) {
      SKADE_RETURN_IF_ERROR(
          conn.Exec("ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)", {}));
    }
    SKADE_ASSIGN_OR_RETURN(auto values, ReadMeta(conn));
    SKADE_RETURN_IF_ERROR(CheckVersion(values));
    if (!values.count("schema_version")) {
      SKADE_RETURN_IF_ERROR(
          conn.Exec("INSERT INTO skade_meta (key, value) VALUES ('schema_version', ?)",
                    {Text(std::to_string(kSchemaVersion))}));
    }
    if (!values.count("last_commit_seq")) {
      SKADE_ASSIGN_OR_RETURN(SqlResult max_seq,
                             conn.Exec("SELECT MAX(commit_seq) FROM skade_commit_log", {}));
      int64_t last = 0;
      if (!max_seq.rows.empty() && max_seq.rows[0][0]) {
        SKADE_ASSIGN_OR_RETURN(last, ParseInt64(max_seq.rows[0][0], "max commit_seq"));
      }
      SKADE_RETURN_IF_ERROR(
          conn.Exec("INSERT INTO skade_meta (key, value) VALUES ('last_commit_seq', ?)",
                    {Text(std::to_string(last))}));
    }
    return conn.Exec("COMMIT", {}).status();
  };
  Status status = run();
  if (!status.ok()) RollbackQuietly(conn);
  return status;
}

}  // namespace skade::catalog::internal
