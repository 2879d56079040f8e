// The `skade` command line.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "skade/base/log.h"
#include "skade/cli/command_line.h"
#include "skade/cli/commands.h"
#include "skade/cli/lake.h"
#include "skade/cli/lineage_command.h"

#ifndef SKADE_VERSION
#define SKADE_VERSION "0.0.0"
#endif

namespace {

// An option that may repeat but takes one value each time ("--key id file.csv" leaves the
// file alone); a comma list in that value gives several ("--key a,b").
CLI::Option* OneValueEach(CLI::Option* option) { return option->allow_extra_args(false); }

// Parses OLD=NEW pairs given to --relocate.
bool ParseRelocations(const std::vector<std::string>& raw,
                      std::vector<std::pair<std::string, std::string>>* out) {
  for (const std::string& r : raw) {
    size_t eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      std::cerr << "skade: --relocate expects OLD=NEW, got '" << r << "'\n";
      return false;
    }
    out->emplace_back(r.substr(0, eq), r.substr(eq + 1));
  }
  return true;
}

skade::cli::OutputFormat FormatOf(const std::string& name) {
  if (name == "csv") return skade::cli::OutputFormat::kCsv;
  if (name == "json") return skade::cli::OutputFormat::kJson;
  return skade::cli::OutputFormat::kTable;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"skade: an Apache Iceberg lakehouse engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "skade " SKADE_VERSION);
  // Global options may also follow the subcommand ("skade serve --warehouse W"); subcommands
  // inherit this when they are added below.
  app.fallthrough();
  std::string log_level;
  app.add_option("--log-level", log_level, "debug|info|warn|error|off")
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error", "off"}));
  skade::cli::LakeArgs lake;
  app.add_option("--warehouse", lake.warehouse,
                 "warehouse folder (default $SKADE_WAREHOUSE or ./lake)");
  app.add_option("--catalog", lake.catalog_uri,
                 "catalog: sqlite://PATH, postgresql://…, an Iceberg REST catalog rest+http(s)://HOST:PORT/…"
                 "[?warehouse=W&credential=ID:SECRET&token=T], Nessie nessie+http(s)://HOST:PORT/api/v2?ref=REF, "
                 "or a folder of tables file:///PATH | s3://BUCKET/PREFIX (default WAREHOUSE/catalog.db)");
  app.add_flag("--quiet,-q", lake.quiet, "no progress output on stderr");
  app.add_option("--poll-interval", lake.poll_interval_s,
                 "seconds between polls of a catalog that keeps no commit log (Nessie, folders, foreign SQL catalogs)")
      ->check(CLI::PositiveNumber);
  app.add_option("--poll-state", lake.poll_state,
                 "where the polled commit log of such a catalog is kept (default ~/.local/state/skade/polled-<hash>.db)");

  skade::cli::ScanArgs scan;
  std::vector<std::string> scan_relocate;
  std::string scan_format = "table";
  std::string columns;
  auto* scan_cmd = app.add_subcommand("scan", "Read rows of an Iceberg table");
  scan_cmd->add_option("table", scan.table, "table folder or *.metadata.json file")->required();
  auto* snap_opt = scan_cmd->add_option("--snapshot", scan.snapshot_id, "snapshot id");
  auto* ref_opt = scan_cmd->add_option("--ref", scan.ref, "branch or tag name");
  auto* asof_opt = scan_cmd->add_option("--as-of", scan.as_of,
                                        "time travel: epoch ms or ISO timestamp (UTC)");
  snap_opt->excludes(ref_opt)->excludes(asof_opt);
  ref_opt->excludes(asof_opt);
  scan_cmd->add_option("--columns", columns, "comma-separated column names");
  scan_cmd->add_option("--where", scan.where, "SQL boolean expression");
  scan_cmd->add_option("--limit", scan.limit, "maximum number of rows")->check(CLI::NonNegativeNumber);
  scan_cmd->add_option("--max-rows", scan.max_rows,
                       "rows the table format shows: the first and last halves of this many (default 40; 0 = all)")
      ->check(CLI::NonNegativeNumber);
  scan_cmd->add_flag("--count", scan.count, "print the row count only");
  scan_cmd->add_option("--format", scan_format, "table|csv|json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  OneValueEach(scan_cmd->add_option("--relocate", scan_relocate, "OLD=NEW location prefix rewrite"));
  scan_cmd->add_flag("-v,--verbose", scan.verbose, "print the plan and SQL to stderr");

  skade::cli::InspectArgs inspect;
  std::vector<std::string> inspect_relocate;
  auto* inspect_cmd = app.add_subcommand("inspect", "Show a table's metadata, manifests and files");
  inspect_cmd->add_option("table", inspect.table, "table folder or *.metadata.json file")->required();
  inspect_cmd->add_flag("--json", inspect.json, "machine-readable output");
  inspect_cmd->add_option("--snapshot", inspect.snapshot_id, "list manifests of this snapshot");
  OneValueEach(inspect_cmd->add_option("--relocate", inspect_relocate, "OLD=NEW location prefix rewrite"));
  bool no_page_check = false;
  inspect_cmd->add_flag("--no-page-check", no_page_check,
                        "do not read data files to check their page checksums");

  skade::cli::NsArgs ns;
  auto* ns_cmd = app.add_subcommand("ns", "Namespaces: create | list | drop | props");
  ns_cmd->add_option("action", ns.action, "create|list|drop|props")
      ->required()
      ->check(CLI::IsMember({"create", "list", "drop", "props"}));
  ns_cmd->add_option("namespace", ns.ns, "namespace, levels separated by '.'");
  OneValueEach(ns_cmd->add_option("--set", ns.set, "KEY=VALUE property (create, props)"));
  OneValueEach(ns_cmd->add_option("--unset", ns.unset, "property to remove (props)"));
  ns_cmd->add_flag("--json", ns.json, "JSON output");

  skade::cli::CreateArgs create;
  auto* create_cmd = app.add_subcommand("create", "Create a table");
  create_cmd->add_option("table", create.table, "ns.table")->required();
  create_cmd->add_option("--schema", create.schema, "column definitions, e.g. \"id BIGINT NOT NULL, ts TIMESTAMPTZ\"");
  create_cmd->add_option("--like", create.like, "take the schema from a Parquet/CSV/JSON file");
  create_cmd->add_option("--partition-by", create.partition_by, "e.g. \"day(ts), bucket(16, id)\"");
  OneValueEach(create_cmd->add_option("--prop", create.properties, "KEY=VALUE table property"));

  skade::cli::RegisterArgs reg;
  auto* register_cmd = app.add_subcommand(
      "register", "Register an existing Iceberg table (its metadata file or folder) in the catalog");
  register_cmd->add_option("table", reg.table, "ns.table")->required();
  register_cmd->add_option("metadata", reg.metadata, "a *.metadata.json file or a table folder")->required();

  skade::cli::DropArgs drop;
  auto* drop_cmd = app.add_subcommand(
      "drop", "Drop a table from the catalog; its files stay unless --purge deletes them");
  drop_cmd->add_option("table", drop.table, "ns.table")->required();
  drop_cmd->add_flag("--purge", drop.purge,
                     "delete the table's files too (only under its location; what another table owns or references stays)");
  drop_cmd->add_flag("--force", drop.force, "with --purge: also a table whose location is outside the warehouse");
  drop_cmd->add_flag("--json", drop.json, "JSON output");

  skade::cli::IngestArgs ingest;
  auto* ingest_cmd = app.add_subcommand("ingest", "Write files (or a query's rows) into a table, as one commit");
  ingest_cmd->add_option("table", ingest.table, "ns.table")->required();
  ingest_cmd->add_option("files", ingest.files,
                         "Parquet, CSV or JSON/NDJSON files, folders (their files of those types) or globs");
  ingest_cmd->add_option("--sql", ingest.query, "a DuckDB query to ingest instead of files");
  ingest_cmd->add_option("--mode", ingest.mode, "append|overwrite|overwrite-partitions|upsert|delete-keys")
      ->check(CLI::IsMember({"append", "overwrite", "overwrite-partitions", "upsert", "delete-keys"}));
  ingest_cmd->add_option("--where", ingest.where, "with --mode overwrite: replace only the rows matching this");
  OneValueEach(ingest_cmd->add_option("--key", ingest.key,
                                      "key columns for upsert/delete-keys, a comma list (default: identifier fields)"))
      ->delimiter(',');
  ingest_cmd->add_option("--delimiter", ingest.delimiter, "CSV field delimiter: one character, \\t for a tab");
  ingest_cmd->add_option("--cast", ingest.cast,
                         "strict (default): a value converts to its column's type only exactly; lenient: round/parse "
                         "as DuckDB casts")
      ->check(CLI::IsMember({"strict", "lenient"}));
  ingest_cmd->add_flag("--create", ingest.create, "create the table from the input's columns if it does not exist");
  ingest_cmd->add_flag("--json", ingest.json, "JSON output");

  skade::cli::DeleteArgs del;
  auto* delete_cmd = app.add_subcommand("delete", "Delete the rows matching a predicate (one commit)");
  delete_cmd->add_option("table", del.table, "ns.table")->required();
  delete_cmd->add_option("--where", del.where, "SQL predicate")->required();
  delete_cmd->add_flag("--json", del.json, "JSON output");

  skade::cli::ChangesArgs changes;
  std::string changes_format = "table";
  auto* changes_cmd = app.add_subcommand("changes", "Rows appended (or, with --changelog, changed) between snapshots");
  changes_cmd->add_option("table", changes.table, "ns.table")->required();
  changes_cmd->add_option("--from", changes.from, "start snapshot (exclusive)")->required();
  changes_cmd->add_option("--to", changes.to, "end snapshot (inclusive; default current)");
  changes_cmd->add_flag("--changelog", changes.changelog, "INSERT/DELETE rows across every kind of commit");
  changes_cmd->add_option("--format", changes_format, "table|csv|json")->check(CLI::IsMember({"table", "csv", "json"}));

  skade::cli::CompactArgs compact;
  auto* compact_cmd = app.add_subcommand("compact", "Rewrite small files and apply delete files");
  compact_cmd->add_option("table", compact.table, "ns.table")->required();
  compact_cmd->add_option("--small-file-bytes", compact.small_file_bytes, "rewrite files smaller than this");
  compact_cmd->add_flag("--json", compact.json, "JSON output");

  skade::cli::SqlArgs sql;
  std::string sql_format = "table";
  auto* sql_cmd = app.add_subcommand("sql", "Run DuckDB SQL over the lake (tables as ns.table, \"a.b\".table)");
  sql_cmd->add_option("sql", sql.sql,
                      "SQL text (statements separated by ';'); '-' reads a script from standard input; none "
                      "opens the interactive shell at a terminal");
  sql_cmd->add_option("-f,--file", sql.file, "run the statements and dot commands of this script file");
  sql_cmd->add_option("--max-rows", sql.max_rows,
                      "rows a table result shows: the first and last halves of this many (default 40; 0 = all)")
      ->check(CLI::NonNegativeNumber);
  sql_cmd->add_option("--format", sql_format, "table|csv|json")->check(CLI::IsMember({"table", "csv", "json"}));
  std::string sql_pushdown = "on";
  sql_cmd->add_option("--pushdown", sql_pushdown, "on|off: plan each table scan with the statement's filters")
      ->check(CLI::IsMember({"on", "off"}));

  skade::cli::ListArgs tables;
  auto* tables_cmd = app.add_subcommand("tables", "List tables");
  tables_cmd->add_option("namespace", tables.target, "only this namespace");
  tables_cmd->add_flag("--json", tables.json, "JSON output");

  skade::cli::ListArgs snapshots;
  auto* snapshots_cmd = app.add_subcommand("snapshots", "List a table's snapshots");
  snapshots_cmd->add_option("table", snapshots.target, "ns.table")->required();
  snapshots_cmd->add_flag("--json", snapshots.json, "JSON output");

  skade::cli::ListArgs log;
  auto* log_cmd = app.add_subcommand("log", "The commit log, one entry per commit with its commit_seq");
  log_cmd->add_option("table", log.target, "only this table's commits (ns.table)");
  log_cmd->add_option("--after", log.after, "the entries after this commit_seq, oldest first (to page forward)");
  log_cmd->add_option("--limit", log.limit, "at most N entries: the newest N, or with --after the first N after it "
                                            "(default 1000)")
      ->check(CLI::PositiveNumber);
  log_cmd->add_flag("--json", log.json, "JSON output");

  int maintenance_exit = -1;
  skade::cli::AddMaintenanceCommands(app, lake, &maintenance_exit);
  skade::cli::AddWatchCommand(app, lake, &maintenance_exit);
  skade::cli::AddServeCommand(app, lake, &maintenance_exit);
  skade::cli::AddLineageCommand(app, lake, &maintenance_exit);

  if (std::optional<std::string> unknown = skade::cli::UnknownSubcommand(app, {argv + 1, argv + argc})) {
    std::cerr << "skade: " << *unknown << "\n";
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  CLI11_PARSE(app, argc, argv);
  if (maintenance_exit >= 0) return maintenance_exit;
  scan.lake = lake;
  inspect.lake = lake;
  if (!log_level.empty()) skade::SetLogLevel(skade::ParseLogLevel(log_level));

  if (*scan_cmd) {
    if (!ParseRelocations(scan_relocate, &scan.relocate)) return 2;
    scan.format = FormatOf(scan_format);
    size_t start = 0;
    while (!columns.empty() && start <= columns.size()) {
      size_t comma = columns.find(',', start);
      std::string c = columns.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!c.empty() && c.front() == ' ') c.erase(c.begin());
      while (!c.empty() && c.back() == ' ') c.pop_back();
      if (!c.empty()) scan.columns.push_back(c);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return skade::cli::RunScan(scan, std::cout, std::cerr);
  }
  if (*inspect_cmd) {
    if (!ParseRelocations(inspect_relocate, &inspect.relocate)) return 2;
    inspect.check_pages = !no_page_check;
    return skade::cli::RunInspect(inspect, std::cout, std::cerr);
  }
  if (*ns_cmd) return skade::cli::RunNs(lake, ns, std::cout, std::cerr);
  if (*create_cmd) return skade::cli::RunCreate(lake, create, std::cout, std::cerr);
  if (*ingest_cmd) return skade::cli::RunIngest(lake, ingest, std::cout, std::cerr);
  if (*register_cmd) return skade::cli::RunRegister(lake, reg, std::cout, std::cerr);
  if (*drop_cmd) return skade::cli::RunDrop(lake, drop, std::cout, std::cerr);
  if (*delete_cmd) return skade::cli::RunDelete(lake, del, std::cout, std::cerr);
  if (*changes_cmd) {
    changes.format = FormatOf(changes_format);
    return skade::cli::RunChanges(lake, changes, std::cout, std::cerr);
  }
  if (*compact_cmd) return skade::cli::RunCompact(lake, compact, std::cout, std::cerr);
  if (*sql_cmd) {
    sql.format = FormatOf(sql_format);
    sql.pushdown = sql_pushdown == "on";
    return skade::cli::RunSql(lake, sql, std::cout, std::cerr);
  }
  if (*tables_cmd) return skade::cli::RunTables(lake, tables, std::cout, std::cerr);
  if (*snapshots_cmd) return skade::cli::RunSnapshots(lake, snapshots, std::cout, std::cerr);
  if (*log_cmd) return skade::cli::RunLog(lake, log, std::cout, std::cerr);
  return 2;
}
