// Database: an in-process DuckDB (the only module that includes DuckDB headers is engine/),
// opened with extension auto-install off, a memory limit and UTC time zone. Results stream
// out as Arrow C Data Interface streams or as text rows for the CLI.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::engine {

struct DatabaseOptions {
  std::string memory_limit = "4GB";  // DuckDB memory_limit setting
  int threads = 0;                   // 0 = DuckDB's default (all cores)
};

// A row of text values (nullopt = SQL NULL).
using TextRow = std::vector<std::optional<std::string>>;

// Thread-safe: every call uses its own DuckDB connection.
class Database {
 public:
  // kInternal if DuckDB can't start (message from DuckDB).
  static Result<std::unique_ptr<Database>> Open(const DatabaseOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one statement, discarding its result. kInvalidArgument for SQL errors.
  Status Execute(std::string_view sql);

  // Runs a query and returns a streaming Arrow C stream (DuckDB's 2048-row chunks converted one
  // at a time: bounded memory). The stream owns its connection and may outlive this call but
  // not the Database. kInvalidArgument for SQL errors found before the first row.
  Result<arrow::StreamHandle> QueryArrow(std::string_view sql);

  // Runs a query and calls `on_row` for every row with the values rendered as text (DuckDB's
  // own VARCHAR cast). `on_header` receives the column names first. Streams (bounded memory).
  Status QueryText(std::string_view sql, const std::function<void(const std::vector<std::string>&)>& on_header,
                   const std::function<Status(const TextRow&)>& on_row);

  // Convenience: all rows as text.
  Result<std::vector<TextRow>> QueryRows(std::string_view sql);

  // The tables a query references, each as its name parts (schema, table; or just the table
  // name when unqualified). kInvalidArgument if the SQL does not parse.
  Result<std::vector<std::vector<std::string>>> ReferencedTables(std::string_view sql);

  // Runs `sql` on one connection on which the Arrow stream `input` is readable as the view
  // `view_name` (the stream is consumed; the caller keeps ownership of the struct). Rows as
  // QueryRows returns them.
  Result<std::vector<TextRow>> QueryRowsWithArrow(std::string_view view_name, ArrowArrayStream* input,
                                                  std::string_view sql);

 private:
  struct Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// SQL quoting helpers: "identifier" (quotes doubled) and 'string literal' (quotes doubled).
std::string QuoteIdentifier(std::string_view name);
std::string QuoteString(std::string_view value);

}  // namespace skade::engine
