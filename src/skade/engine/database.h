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
#include "skade/io/file_io.h"
#include "skade/engine/data_file_checks.h"
#include "skade/engine/pushdown_scan.h"

namespace skade::engine {

struct DatabaseOptions {
  std::string memory_limit = "4GB";  // DuckDB memory_limit setting
  int threads = 0;                   // 0 = DuckDB's default (all cores)
  // Lock-down for SQL from untrusted clients: after setup, DuckDB may read and write files only
  // below `allowed_directories` (enable_external_access off: no other files, no network, no
  // extension loading) and no statement can change the configuration (lock_configuration).
  bool lock_down = false;
  std::vector<std::string> allowed_directories;
  // Where DuckDB spills (temp_directory); empty = DuckDB's default. DuckDB lets queries reach
  // it whatever allowed_directories say, so a locked-down database refuses every query
  // operation inside it (file_guard_internal.h); keep it outside allowed_directories
  // (engine/spill_folder.h).
  std::string temp_directory;
  // In-memory catalogs to ATTACH before the lock-down (e.g. the SQL view of a lake).
  std::vector<std::string> attach_in_memory;
  // Serves s3://, s3a:// and s3n:// to DuckDB (read_parquet, globs, COPY … TO) when set;
  // borrowed, must outlive the Database, called from DuckDB's threads concurrently. Written
  // objects are buffered in an unlinked file under temp_directory (or $TMPDIR) and created with
  // FileIO::CreateExclusive when the write completes: an existing object is never replaced, and
  // a failed write uploads nothing. With lock_down, object-store locations are readable and
  // writable only below an allowed_directories entry such as "s3://bucket/prefix/".
  io::FileIO* object_store = nullptr;
};

// A row of text values (nullopt = SQL NULL).
using TextRow = std::vector<std::optional<std::string>>;

// A column of a relation with the type DuckDB gives it (its SQL spelling, e.g. "INTEGER[]").
struct ColumnType {
  std::string name;
  std::string type;
};

// DuckDB's classification of a prepared statement.
enum class StatementKind { kSelect, kExplain, kInsert, kUpdate, kDelete, kCreate, kDrop, kAlter, kOther };

// One prepared statement of a Connection. Thread-compatible.
// How a query's Arrow stream cuts its batches. Each thread running the query builds its own
// batches from the rows it produces (engine/arrow_feed_internal.h). By default a batch holds up
// to 2,048 rows (one DuckDB chunk's), joined from the chunks a filter left short. A reader
// that pays per batch (a network stream: a message, a wake-up and a decode per batch) asks for
// growing batches: each thread's first of `first_rows` rows, then each twice the last, up to
// `max_rows` rows and `max_bytes` of Arrow buffers (estimated per chunk before it joins) — so
// the first rows still come at once. A batch may end short (where its thread's part of the
// source ends, or before a chunk that would pass `max_bytes`, which then starts the next
// batch); a single chunk larger than `max_bytes` is a batch of its own.
struct ArrowBatching {
  int64_t first_rows = 0;  // 0: one batch per chunk (the other fields are ignored)
  int64_t max_rows = 65536;
  int64_t max_bytes = 1 << 20;
};

class PreparedStatement {
 public:
  ~PreparedStatement();
  PreparedStatement(const PreparedStatement&) = delete;
  PreparedStatement& operator=(const PreparedStatement&) = delete;

  StatementKind kind() const;
  // DuckDB's name of the statement type ("SELECT", "COPY", "ATTACH", …), for messages.
  std::string kind_name() const;
  int64_t parameter_count() const;
  // The result columns as an Arrow struct schema.
  Result<arrow::SchemaHandle> ResultSchema() const;
  // The parameters as an Arrow struct schema with fields "1".."n"; a parameter whose type
  // DuckDB cannot tell before binding has the null type.
  Result<arrow::SchemaHandle> ParameterSchema() const;
  // Binds the parameters from row `row` of `batch` (columns = parameters in order). Supported
  // parameter types: null, bool, integers, float, double, decimal128, utf8/large utf8,
  // binary/large binary, date32, timestamps (any unit, with or without zone). kInvalidArgument
  // for a wrong column count or a value DuckDB refuses; kNotImplemented for other types.
  Status BindRow(const ArrowSchema& schema, const ArrowArray& batch, int64_t row);
  // Runs the statement streaming its result in batches cut by `batching`; the stream borrows
  // this statement, which must outlive it and not run again meanwhile. kInvalidArgument for SQL
  // errors.
  Result<arrow::StreamHandle> ExecuteArrow(ArrowBatching batching = {});
  // Runs the statement; the number of rows it changed (DuckDB's count for DML, 0 otherwise).
  Result<int64_t> ExecuteUpdate();

  struct Impl;
  explicit PreparedStatement(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// One DuckDB connection: its own settings (search path, …) and prepared statements.
// Thread-compatible, except Interrupt, which any thread may call.
class Connection {
 public:
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status Execute(std::string_view sql);
  // Prepares one statement. kInvalidArgument for SQL errors (DuckDB's message).
  Result<std::unique_ptr<PreparedStatement>> Prepare(std::string_view sql);
  // Interrupts the statement running on this connection (it fails with "Interrupted").
  void Interrupt();
  // Database::QueryTypedText on this connection (its settings; Interrupt stops it): the rows of
  // `sql` with values rendered as text, streamed; a non-OK status from `on_row` stops the query
  // and is returned.
  Status QueryTypedText(std::string_view sql, const std::function<void(const std::vector<ColumnType>&)>& on_header,
                        const std::function<Status(const TextRow&)>& on_row);

  struct Impl;
  explicit Connection(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// How far a running statement is (DuckDB's own estimate).
struct QueryProgress {
  double percent = 0;          // 0..100; negative when DuckDB cannot tell
  uint64_t rows_processed = 0;
  uint64_t total_rows = 0;     // 0 when unknown
  double seconds = 0;          // since the statement started
};

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

  // A new connection of its own (settings set on it stay on it); must not outlive the Database.
  Result<std::unique_ptr<Connection>> Connect();

  // Another Database over the same DuckDB, whose every connection first runs `setup` (after
  // this one's own setup), in order: how SQL run on a client session's behalf sees that
  // session wherever it runs (its default schema, its current_user), e.g. by a Table loaded
  // over it. A setup statement that fails fails the call that opened the connection.
  // QueryRowsWithArrow and ReferencedTables run no setup (they read an Arrow stream by its
  // name in DuckDB's default schema, and parse only). Shares the scan sources, file checks and
  // progress listener; borrows this Database, which must outlive it.
  std::unique_ptr<Database> WithConnectionSetup(std::vector<std::string> setup);

  // From now on, statements run through QueryText/QueryRows/QueryRowsWithArrow report their
  // progress to `listener` about every 250 ms (from a helper thread) while they run longer
  // than that. Not for a locked-down database (it changes settings). Empty = stop reporting.
  Status SetProgressListener(std::function<void(const QueryProgress&)> listener);

  // Runs a query and returns a streaming Arrow C stream of batches of up to 2,048 rows, in the
  // order DuckDB gives the rows (an ORDER BY's, else the sources'). DuckDB's worker threads
  // convert as they run the query, into a bounded queue (memory stays bounded; a reader that
  // does not read holds the query back). The stream owns its connection and may outlive this
  // call but not the Database. Runs the query to its first batch: kInvalidArgument for SQL
  // errors found by then.
  Result<arrow::StreamHandle> QueryArrow(std::string_view sql);

  // QueryArrow for a reader that keeps every row anyway (a whole table into pyarrow, pandas):
  // DuckDB runs the query to its end and converts to Arrow in its worker threads, in parallel,
  // with no streaming buffer in between, into batches of at most `batch_rows` rows. The rows
  // come in no particular order unless the query fixes one (ORDER BY), which is kept;
  // QueryArrow keeps the order of its sources. The call returns when the query has ended;
  // memory then holds the whole result until the stream's batches are read. The stream needs
  // neither this Database nor DuckDB. Batches of flat columns live in pages this Database keeps
  // for the next whole read once they are released: up to 1 GiB, given to the kernel to take
  // back whenever it needs memory (MADV_FREE; counted in the RSS until then), and unmapped
  // after 10 s unused (engine/page_pool_internal.h). DuckDB's memory_limit does not count
  // them, nor the batches. kInvalidArgument for SQL errors and a batch_rows below 1.
  Result<arrow::StreamHandle> QueryArrowWhole(std::string_view sql, int64_t batch_rows = kWholeBatchRows);
  // DuckDB's row group size: each worker thread's Arrow buffers stay modest.
  static constexpr int64_t kWholeBatchRows = 122'880;

  // Runs a query and calls `on_row` for every row with the values rendered as text (DuckDB's
  // own VARCHAR cast). `on_header` receives the column names first. Streams (bounded memory).
  Status QueryText(std::string_view sql, const std::function<void(const std::vector<std::string>&)>& on_header,
                   const std::function<Status(const TextRow&)>& on_row);

  // QueryText with each column's type (DuckDB's SQL spelling, e.g. "DECIMAL(18,3)") in the
  // header.
  Status QueryTypedText(std::string_view sql, const std::function<void(const std::vector<ColumnType>&)>& on_header,
                        const std::function<Status(const TextRow&)>& on_row);

  // Interrupts the statements running now through Execute, QueryText, QueryTypedText,
  // QueryRows and QueryArrow's streams on this Database and every Database over the same DuckDB
  // (they fail with "Interrupted"); statements started later run. Any thread may call it.
  void InterruptRunning();
  // The same for the statements running now on this Database only, not on the others over
  // the same DuckDB (e.g. one write's, on its WithConnectionSetup Database).
  void InterruptOwnStatements();

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

  // The columns of `query` as DuckDB types them (DESCRIBE; the query is not run).
  // kInvalidArgument for SQL errors.
  Result<std::vector<ColumnType>> QueryColumns(std::string_view query);

  // The columns DuckDB reads from an Arrow stream of `schema` (a struct schema), as its own
  // Arrow type mapping types them. Remembered per schema (arrow::SchemaKey) for the life of
  // the Database, at most kArrowSchemasRemembered of them: a stream of a schema seen before
  // costs no statement. kInvalidArgument when DuckDB cannot read such a stream.
  Result<std::vector<ColumnType>> ArrowInputColumns(const ArrowSchema& schema);
  static constexpr size_t kArrowSchemasRemembered = 256;

  // DatabaseOptions::object_store (null when none): where writers that produce object-store
  // files through DuckDB remove them again.
  io::FileIO* object_store() const;
  // The table sources `skade_scan('<token>')` reads (pushdown_scan.h).
  ScanSources& scans();
  // The page checksums of the data files scans read, each file checked once
  // (data_file_checks.h).
  DataFileChecks& data_file_checks();

 private:
  friend struct DatabaseAccess;  // engine code reading through a connection of its own
  struct Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// SQL quoting helpers: "identifier" (quotes doubled) and 'string literal' (quotes doubled).
std::string QuoteIdentifier(std::string_view name);
std::string QuoteString(std::string_view value);

}  // namespace skade::engine
