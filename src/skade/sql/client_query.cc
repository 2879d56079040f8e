// Client SQL, checked before anything runs. Flight SQL (flightsql/statements.cc) and the web
// console's SQL page (console/query.cc) both come through here, so a statement one of them
// refuses the other refuses too.
#include "skade/sql/client_query.h"

namespace skade::sql {

std::chrono::seconds ClientStatementTimeout(int seconds) {
  return seconds > 0 ? std::chrono::seconds(seconds) : kDefaultClientStatementTimeout;
}

Status CheckClientSqlSize(std::string_view sql) {
  if (sql.size() <= kMaxClientSqlBytes) return Status::Ok();
  return Status::InvalidArgument("SQL text is " + std::to_string(sql.size()) + " bytes; the limit is 1 MiB");
}

Status RefuseConfigurationReads(const engine::Statement& statement) {
  if (!statement.runs_sql_text.empty()) {
    return Status::PermissionDenied("permission denied: " + statement.runs_sql_text +
                                    " runs SQL given as a value, which the server does not check; send that "
                                    "SQL as the statement itself");
  }
  if (statement.reads_configuration.empty()) return Status::Ok();
  return Status::PermissionDenied("permission denied: " + statement.reads_configuration +
                                  " shows the server's configuration, which clients may not read");
}

Result<engine::Statement> ClassifyClientSql(std::string_view sql) {
  SKADE_RETURN_IF_ERROR(CheckClientSqlSize(sql));
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
  SKADE_RETURN_IF_ERROR(RefuseConfigurationReads(statement));
  return statement;
}

namespace {

Status NotAQuery(const std::string& type_name) {
  return Status::PermissionDenied("permission denied: " + type_name +
                                  " statements do not run as queries (only SELECT, WITH, VALUES, FROM, SHOW, "
                                  "DESCRIBE, SUMMARIZE and EXPLAIN of a query)");
}

}  // namespace

Result<PreparedRead> PrepareReadQuery(LakeSql& lake, engine::Connection& con, const std::string& schema,
                                      std::string_view sql, const engine::Statement& statement) {
  // Classified from the parse tree first (COPY, ATTACH, SET, PRAGMA, writes: nothing of them
  // runs), then from what DuckDB prepared (it binds what the tree only names).
  if (statement.kind != engine::Statement::Kind::kQuery && statement.kind != engine::Statement::Kind::kExplain) {
    return NotAQuery(statement.type_name);
  }
  PreparedRead read;
  SKADE_ASSIGN_OR_RETURN(read.resolved, lake.ResolveQuery(sql, schema));
  SKADE_ASSIGN_OR_RETURN(read.stmt, con.Prepare(read.resolved));
  if (read.stmt->kind() != engine::StatementKind::kSelect && read.stmt->kind() != engine::StatementKind::kExplain) {
    return NotAQuery(read.stmt->kind_name());
  }
  return read;
}

std::string RedactPaths(std::string message, const std::vector<std::pair<std::string, std::string>>& private_paths) {
  // Where a path ends in a message: at a quote, a space or punctuation around it.
  auto token_end = [&](size_t from) {
    const size_t end = message.find_first_of(" \t\n'\"`,;()[]{}", from);
    return end == std::string::npos ? message.size() : end;
  };
  for (const auto& [path, name] : private_paths) {
    if (path.empty()) continue;
    for (size_t pos = message.find(path); pos != std::string::npos;) {
      const size_t after = pos + path.size();
      // Inside the folder ("<folder>/x") or the folder itself: its name stands in. A longer
      // name that merely starts the same ("<folder>2/x", a sibling) is a private path too,
      // and goes whole (a plain prefix replacement would show "<warehouse>2/x").
      const bool boundary = after == message.size() || message[after] == '/' || token_end(after) == after;
      const std::string stand_in = boundary ? name : "<private path>";
      message.replace(pos, boundary ? path.size() : token_end(after) - pos, stand_in);
      pos = message.find(path, pos + stand_in.size());
    }
  }
  return message;
}

}  // namespace skade::sql
