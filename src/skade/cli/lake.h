// The lake a command works on: warehouse folder, catalog (SQLite in the warehouse by default,
// or PostgreSQL), file IO and an in-process DuckDB; plus the lake subcommands.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/catalog/open_catalog.h"
#include "skade/cli/commands.h"
#include "skade/engine/database.h"
#include "skade/io/file_io.h"
#include "skade/table/table.h"
#include "skade/table/write_observer.h"

namespace CLI {
class App;
}

namespace skade::sql {
class LakeSql;
}  // namespace skade::sql

namespace skade::cli {

struct Lake {
  std::string warehouse;
  std::string catalog_uri;  // the catalog opened: --catalog, or the warehouse's default one
  std::shared_ptr<io::FileIO> io;
  std::unique_ptr<engine::Database> db;
  std::unique_ptr<catalog::Catalog> catalog;
  catalog::CatalogKind kind = catalog::CatalogKind::kSql;  // what --catalog named
  // Told about writes that fail (the catalog's table::FailedWriteSpool) unless opened to read.
  std::shared_ptr<table::WriteObserver> write_observer;
};

// Loads a table of the lake with the lake's write observer attached: every front that writes
// loads tables this way.
Result<std::unique_ptr<table::Table>> LoadLakeTable(Lake& lake, const catalog::TableIdent& ident);

struct LakeOpenOptions {
  // kCreate makes the warehouse folder and catalog when missing (ns create, create, serve);
  // kWrite and kRead need an existing lake and say where none was found; kRead opens the
  // catalog read-only (no write lock; works on a read-only lake).
  enum class Use { kRead, kWrite, kCreate };
  Use use = Use::kWrite;
  // DuckDB for SQL from untrusted clients: only files below the warehouse, no configuration
  // changes (see engine::DatabaseOptions::lock_down); `attach_in_memory` catalogs first.
  bool lock_down = false;
  std::vector<std::string> attach_in_memory;
  std::vector<std::string> allowed_directories;  // besides the warehouse (registered tables elsewhere)
  std::string memory_limit;  // DuckDB's memory_limit ("4GB"); empty = engine::DatabaseOptions' default
  // Commit events are needed (serve, watch): a catalog that keeps no commit log gets a polled
  // one (LakeArgs::poll_interval_s, poll_state).
  bool commit_events = false;
  // The FileIO to use (and to hand vended storage settings to); null: io::MakeEnvironmentFileIO.
  std::shared_ptr<io::FileIO> io;
};

// Opens the lake for `options.use`. kNotFound naming the warehouse when there is no lake and
// the use does not create one.
Result<Lake> OpenLake(const LakeArgs& args, const LakeOpenOptions& options = {});
// The same for the lake commands' three uses.
inline Result<Lake> OpenLakeFor(const LakeArgs& args, LakeOpenOptions::Use use) {
  LakeOpenOptions options;
  options.use = use;
  return OpenLake(args, options);
}

// The query `sql` as `skade sql` resolves it (sql::LakeSql::ResolveQuery over DuckDB's default
// catalog: the lake tables it names as views of their current snapshots, `AT (…)` snapshots,
// the lake's listings), to run on lake.db; `*views` keeps what the query reads while it runs
// (destroy it before the lake).
Result<std::string> ResolveLakeQuery(Lake& lake, const std::string& sql, std::unique_ptr<sql::LakeSql>* views,
                                     bool pushdown = true);

struct NsArgs {
  std::string action;  // create | list | drop | props
  std::string ns;
  std::vector<std::string> set;    // k=v
  std::vector<std::string> unset;  // k
  bool json = false;
};

struct CreateArgs {
  std::string table;
  std::string schema;  // column definitions
  std::string like;    // a data file to take the schema from
  std::string partition_by;
  std::vector<std::string> properties;  // k=v
};

struct RegisterArgs {
  std::string table;
  std::string metadata;  // metadata JSON file or table folder
};

struct DropArgs {
  std::string table;
  bool purge = false;  // --purge: delete the table's files too
  bool force = false;  // --force: purge a table whose location is outside the warehouse
  bool json = false;
};

struct IngestArgs {
  std::string table;
  std::vector<std::string> files;
  std::string query;  // --sql: a DuckDB query instead of files
  std::string mode = "append";  // append | overwrite | overwrite-partitions | upsert | delete-keys
  std::string where;            // overwrite only the rows matching this predicate
  std::vector<std::string> key; // upsert / delete-keys key columns (default: identifier fields)
  std::string cast = "strict";  // strict: values convert only exactly; lenient: DuckDB's casts
  std::string delimiter;        // --delimiter for CSV input: one character or "\t" (default by extension)
  bool create = false;          // --create: make the table from the input's schema if missing
  bool json = false;
};

struct DeleteArgs {
  std::string table;
  std::string where;
  bool json = false;
};

struct ChangesArgs {
  std::string table;
  int64_t from = 0;
  std::optional<int64_t> to;
  bool changelog = false;
  OutputFormat format = OutputFormat::kTable;
};

struct CompactArgs {
  std::string table;
  int64_t small_file_bytes = 32LL << 20;
  bool json = false;
};

struct SqlArgs {
  std::string sql;   // statements; "-" reads them from standard input
  std::string file;  // --file: a script of statements and dot commands
  std::optional<int64_t> max_rows;  // --max-rows: rows a table result shows (0 = all)
  OutputFormat format = OutputFormat::kTable;
  bool pushdown = true;  // plan each scan with the statement's filters and columns (--pushdown off: list every file)
};

struct ListArgs {
  std::string target;  // namespace for `tables`, table for `snapshots` and `log`
  bool json = false;
  // `log`: with --after, the first `limit` entries after it (paging forward); without, the
  // newest `limit` entries.
  std::optional<int64_t> after;
  int64_t limit = 1000;
};

int RunNs(const LakeArgs& lake, const NsArgs& args, std::ostream& out, std::ostream& err);
int RunCreate(const LakeArgs& lake, const CreateArgs& args, std::ostream& out, std::ostream& err);
int RunIngest(const LakeArgs& lake, const IngestArgs& args, std::ostream& out, std::ostream& err);
// Registers a table written elsewhere; a table found away from its recorded location is read
// from where it is (relocation), see iceberg/relocation.h.
int RunRegister(const LakeArgs& lake, const RegisterArgs& args, std::ostream& out, std::ostream& err);
int RunDelete(const LakeArgs& lake, const DeleteArgs& args, std::ostream& out, std::ostream& err);
// `skade drop ns.table [--purge [--force]]` (table::DropTable): removes the table from the
// catalog and says where its files stay, or with --purge deletes them (only under its
// location, inside the warehouse unless --force) and says what was removed and what stayed.
int RunDrop(const LakeArgs& lake, const DropArgs& args, std::ostream& out, std::ostream& err);
int RunChanges(const LakeArgs& lake, const ChangesArgs& args, std::ostream& out, std::ostream& err);
int RunCompact(const LakeArgs& lake, const CompactArgs& args, std::ostream& out, std::ostream& err);
// `skade sql` (cli/sql_command.cc): the statements given, a script (--file, or "-" / a pipe
// on standard input; stops at the first failing statement), or the interactive shell when
// no SQL is given and standard input is a terminal.
int RunSql(const LakeArgs& lake, const SqlArgs& args, std::ostream& out, std::ostream& err);
int RunTables(const LakeArgs& lake, const ListArgs& args, std::ostream& out, std::ostream& err);
int RunSnapshots(const LakeArgs& lake, const ListArgs& args, std::ostream& out, std::ostream& err);
int RunLog(const LakeArgs& lake, const ListArgs& args, std::ostream& out, std::ostream& err);

// A table argument as a path: folders and metadata files are returned as given; anything else
// that parses as ns.table is looked up in the lake's catalog (its current metadata file), which
// hands the storage settings it vends for the table to `io` (the FileIO that reads it next).
Result<std::string> ResolveTableArgument(const LakeArgs& lake, const std::string& table,
                                         std::shared_ptr<io::FileIO> io);

// Registers the table-maintenance subcommands (alter, partition, sort, props, rollback,
// set-current, branch, tag, expire, gc); each sets *exit_code when it runs.
void AddMaintenanceCommands(CLI::App& app, const LakeArgs& lake, int* exit_code);

// Registers `watch` (commit events, locally or from a server) and `events-serve` (the Commits
// gRPC service on 127.0.0.1); each sets *exit_code when it runs.
void AddWatchCommand(CLI::App& app, const LakeArgs& lake, int* exit_code);

// Long-running commands (watch, events-serve, serve) stop on SIGINT/SIGTERM: install the
// handlers, then poll StopRequested().
void InstallStopHandlers();
bool StopRequested();

// Registers `serve` (Arrow Flight SQL + the Commits stream on one port); sets *exit_code.
void AddServeCommand(CLI::App& app, const LakeArgs& lake, int* exit_code);

// Parses k=v pairs; kInvalidArgument naming a malformed one.
Result<std::map<std::string, std::string>> ParseKeyValues(const std::vector<std::string>& items);

}  // namespace skade::cli
