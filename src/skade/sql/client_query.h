// The rules for SQL that a server's clients send (Flight SQL statements, the web console's SQL
// page), implemented once (DESIGN §11): a size bound; exactly one statement, classified from
// DuckDB's parse tree; no reads of the server's configuration; a read query resolved against the
// lake and accepted only if DuckDB prepared a query; the server's folders never named in errors.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {

// The longest SQL text a client may send.
inline constexpr size_t kMaxClientSqlBytes = size_t{1} << 20;

// How long a client's statement may run when the server is given no timeout: Flight SQL
// statements and updates and the web console's queries and previews alike.
inline constexpr std::chrono::seconds kDefaultClientStatementTimeout{60};

// The one rule for `skade serve --query-timeout` on every front: the seconds given when
// positive, else (0, or not given) kDefaultClientStatementTimeout. No client statement runs
// without a limit.
std::chrono::seconds ClientStatementTimeout(int seconds);

// kInvalidArgument for SQL text longer than kMaxClientSqlBytes.
Status CheckClientSqlSize(std::string_view sql);

// kPermissionDenied for a statement that calls a function showing how the server is set up
// (engine::Statement::reads_configuration: its settings name the server's folders), or one that
// runs SQL given as a value (engine::Statement::runs_sql_text: no check reaches that SQL).
Status RefuseConfigurationReads(const engine::Statement& statement);

// The statement of a client's SQL text: CheckClientSqlSize, engine::ParseStatement (exactly one
// statement; kInvalidArgument otherwise) and RefuseConfigurationReads. Write statements are
// returned as such: whether they may run is the caller's to say.
Result<engine::Statement> ClassifyClientSql(std::string_view sql);

// A read query prepared for a client.
struct PreparedRead {
  std::string resolved;  // what was prepared: `sql` resolved against the lake (LakeSql::ResolveQuery)
  std::unique_ptr<engine::PreparedStatement> stmt;
};

// Prepares `sql` (whose statement ClassifyClientSql gave) on `con` as a read: kPermissionDenied
// unless the statement is a query or EXPLAIN of one (writes included), then the lake's tables,
// time travel and listings resolved (LakeSql::ResolveQuery, for a session of `schema`), prepared,
// and kPermissionDenied unless DuckDB prepared a SELECT or an EXPLAIN. SQL errors are
// kInvalidArgument, unknown tables kNotFound, as ResolveQuery and Prepare return them.
Result<PreparedRead> PrepareReadQuery(LakeSql& lake, engine::Connection& con, const std::string& schema,
                                      std::string_view sql, const engine::Statement& statement);

// `message` with every occurrence of a private folder (absolute path, name) replaced by its name
// ("<warehouse>/ns/t/…"); a longer path that merely starts like one ("<folder>2/x") is replaced
// whole by "<private path>". List longer paths first.
std::string RedactPaths(std::string message, const std::vector<std::pair<std::string, std::string>>& private_paths);

}  // namespace skade::sql
