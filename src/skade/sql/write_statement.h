// The write statements a SQL client may run against Iceberg tables, recognised from their
// leading clauses (the rest stays DuckDB SQL): INSERT INTO … SELECT/VALUES, DELETE FROM …
// [WHERE], UPDATE … SET … [WHERE], CREATE TABLE (columns) / AS query, DROP TABLE, CREATE /
// DROP SCHEMA. Anything else is not a write statement (a query, or something refused).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"

namespace skade::sql {

struct WriteStatement {
  enum class Kind { kInsert, kDelete, kUpdate, kCreateTable, kDropTable, kCreateSchema, kDropSchema };
  Kind kind = Kind::kInsert;
  std::vector<std::string> target;        // the name as written: 1–3 parts, quotes removed
  std::vector<std::string> columns;       // INSERT column list
  std::string query;                      // INSERT source, CREATE TABLE … AS query
  std::string column_definitions;         // CREATE TABLE (…) without the parentheses
  std::string where;                      // DELETE/UPDATE predicate; empty = every row
  std::vector<std::pair<std::string, std::string>> assignments;  // UPDATE column = expression
  bool if_exists = false;                 // DROP … IF EXISTS
  bool if_not_exists = false;             // CREATE … IF NOT EXISTS
  bool or_replace = false;                // CREATE OR REPLACE TABLE
};

// nullopt when `sql` is not one of the write statements above; kInvalidArgument when it starts
// like one but is malformed (e.g. INSERT without INTO), or holds more than one statement.
Result<std::optional<WriteStatement>> ParseWriteStatement(std::string_view sql);

// The number of '?' parameter markers in `sql` (outside strings, quoted names and comments).
Result<int64_t> CountParameters(std::string_view sql);

// `sql` with its '?' markers replaced in order by `literals` (SQL text). kInvalidArgument when
// the counts differ.
Result<std::string> BindParameters(std::string_view sql, const std::vector<std::string>& literals);

}  // namespace skade::sql
