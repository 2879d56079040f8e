// skade_commit_log's rows and the consumer cursors beside it in skade_meta: written by the
// writer (sql_writer.cc) inside its transactions, read by the catalog's log calls. The row
// format lives here only, so what is written and what is read cannot drift apart.
#include <string>
#include <utility>
#include <vector>

#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

namespace {

std::string CursorKey(const std::string& consumer) { return "consumer_cursor:" + consumer; }

}  // namespace

Status InsertCommitLogEntry(SqlConnection& conn, const std::string& catalog,
                            const CommitLogEntry& entry) {
  std::vector<SqlParam> params = {SqlParam(entry.commit_seq),
                                  Text(catalog),
                                  Text(entry.table.ns.ToString()),
                                  Text(entry.table.name),
                                  SqlParam(),
                                  Text(entry.metadata_location),
                                  Text(entry.previous_metadata_location),
                                  Text(entry.operation),
                                  SqlParam(entry.added_records),
                                  SqlParam(entry.deleted_records),
                                  SqlParam(entry.committed_at_us),
                                  Text(entry.txn_id)};
  if (entry.snapshot_id) params[4] = *entry.snapshot_id;
  return conn
      .Exec(
          "INSERT INTO skade_commit_log (commit_seq, catalog_name, table_namespace, "
          "table_name, snapshot_id, metadata_location, previous_metadata_location, "
          "operation, added_records, deleted_records, committed_at_us, txn_id) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          params)
      .status();
}

Result<std::vector<CommitLogEntry>> SelectCommitsSince(SqlConnection& conn,
                                                       const std::string& catalog,
                                                       int64_t after_seq, int64_t limit) {
  SKADE_ASSIGN_OR_RETURN(
      SqlResult result,
      conn.Exec("SELECT commit_seq, table_namespace, table_name, snapshot_id, metadata_location, "
                "previous_metadata_location, operation, added_records, deleted_records, "
                "committed_at_us, txn_id FROM skade_commit_log WHERE catalog_name = ? AND "
                "commit_seq > ? ORDER BY commit_seq LIMIT ?",
                {Text(catalog), SqlParam(after_seq), SqlParam(limit)}));
  std::vector<CommitLogEntry> out;
  out.reserve(result.rows.size());
  for (const auto& row : result.rows) {
    CommitLogEntry entry;
    SKADE_ASSIGN_OR_RETURN(entry.commit_seq, ParseInt64(row[0], "commit_seq"));
    Result<Namespace> ns = Namespace::Parse(row[1].value_or(""));
    if (!ns.ok()) return ns.status().WithContext("commit log");
    entry.table = TableIdent{std::move(ns).value(), row[2].value_or("")};
    if (row[3]) {
      SKADE_ASSIGN_OR_RETURN(int64_t id, ParseInt64(row[3], "snapshot_id"));
      entry.snapshot_id = id;
    }
    entry.metadata_location = row[4].value_or("");
    entry.previous_metadata_location = row[5].value_or("");
    entry.operation = row[6].value_or("");
    SKADE_ASSIGN_OR_RETURN(entry.added_records, ParseInt64(row[7], "added_records"));
    SKADE_ASSIGN_OR_RETURN(entry.deleted_records, ParseInt64(row[8], "deleted_records"));
    SKADE_ASSIGN_OR_RETURN(entry.committed_at_us, ParseInt64(row[9], "committed_at_us"));
    entry.txn_id = row[10].value_or("");
    out.push_back(std::move(entry));
  }
  return out;
}

Result<int64_t> SelectLastCommitSeq(SqlConnection& conn, LockRow lock) {
  std::string sql = "SELECT value FROM skade_meta WHERE key = 'last_commit_seq'";
  if (lock == LockRow::kYes && conn.dialect() == Dialect::kPostgres) sql += " FOR UPDATE";
  SKADE_ASSIGN_OR_RETURN(SqlResult result, conn.Exec(sql, {}));
  if (result.rows.empty()) return Status::Corruption("skade_meta has no last_commit_seq");
  return ParseInt64(result.rows[0][0], "skade_meta last_commit_seq");
}

Status UpdateLastCommitSeq(SqlConnection& conn, int64_t seq) {
  return conn
      .Exec("UPDATE skade_meta SET value = ? WHERE key = 'last_commit_seq'",
            {Text(std::to_string(seq))})
      .status();
}

Result<std::optional<int64_t>> SelectConsumerCursor(SqlConnection& conn,
                                                    const std::string& consumer) {
  SKADE_ASSIGN_OR_RETURN(SqlResult result, conn.Exec("SELECT value FROM skade_meta WHERE key = ?",
                                                     {Text(CursorKey(consumer))}));
  if (result.rows.empty() || !result.rows[0][0]) return std::optional<int64_t>();
  SKADE_ASSIGN_OR_RETURN(int64_t seq,
                         ParseInt64(result.rows[0][0], "skade_meta " + CursorKey(consumer)));
  return std::optional<int64_t>(seq);
}

Status PutConsumerCursor(SqlConnection& conn, const std::string& consumer, int64_t commit_seq) {
  // ON CONFLICT … DO UPDATE: SQLite ≥ 3.24 and PostgreSQL ≥ 9.5 both have it.
  return conn
      .Exec(
          "INSERT INTO skade_meta (key, value) VALUES (?, ?) "
          "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          {Text(CursorKey(consumer)), Text(std::to_string(commit_seq))})
      .status();
}

}  // namespace skade::catalog::internal
