#include "skade/cli/sql_session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "skade/catalog/catalog.h"
#include "skade/cli/output.h"
#include "skade/engine/user_sql.h"
#include "skade/sql/like.h"

namespace skade::cli {
namespace {

constexpr const char* kDotHelp =
    ".tables [PATTERN]     the lake's tables (as ns.table; PATTERN as in LIKE: % and _)\n"
    ".schema TABLE         a table's columns and types (also .describe TABLE)\n"
    ".mode table|csv|json  how results are shown (now: {mode})\n"
    ".maxrows N            rows a table result shows: its first and last N/2 (0 = all)\n"
    ".timer on|off         print each statement's run time\n"
    ".pushdown on|off      plan each table scan with the statement's filters (off: list every file)\n"
    ".read FILE            run the statements in FILE\n"
    ".help                 this list\n"
    ".quit, .exit          leave (also Ctrl-D)\n"
    "Statements end with ';' and may span lines; Ctrl-C cancels the running one, or the typed text.\n";

const char* FormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv: return "csv";
    case OutputFormat::kJson: return "json";
    case OutputFormat::kTable: break;
  }
  return "table";
}

// "ns.t" (or "a.b".t spelled as the CLI takes it: a.b.t with the last level the table) as
// DuckDB names the table's view: "a.b"."t". Parsed and re-rendered, never pasted.
Result<std::string> TableSqlName(const std::string& text) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(text));
  if (ident.ns.empty()) return Status::InvalidArgument("'" + text + "': name a table as namespace.table");
  std::string schema;
  for (const std::string& level : ident.ns.levels) schema += (schema.empty() ? "" : ".") + level;
  return engine::QuoteIdentifier(schema) + "." + engine::QuoteIdentifier(ident.name);
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

Result<bool> OnOff(const std::vector<std::string>& words) {
  if (words.size() == 2 && words[1] == "on") return true;
  if (words.size() == 2 && words[1] == "off") return false;
  return Status::InvalidArgument(words[0] + " takes on or off");
}

}  // namespace

Result<std::unique_ptr<SqlSession>> SqlSession::Open(const LakeArgs& lake_args, LakeOpenOptions::Use use,
                                                     SqlSessionOptions options) {
  SKADE_ASSIGN_OR_RETURN(Lake lake, OpenLakeFor(lake_args, use));
  // DuckDB names its in-memory default catalog "memory"; the views and the manifest cache
  // live as long as the session.
  SKADE_ASSIGN_OR_RETURN(auto views, sql::LakeSql::Open(*lake.catalog, *lake.io, *lake.db, "memory"));
  views->set_write_observer(lake.write_observer.get());
  views->set_pushdown(options.pushdown);
  return std::unique_ptr<SqlSession>(new SqlSession(std::move(lake), std::move(views), options));
}

SqlSession::SqlSession(Lake lake, std::unique_ptr<sql::LakeSql> views, SqlSessionOptions options)
    : lake_(std::move(lake)), views_(std::move(views)), options_(options) {}

SqlSession::~SqlSession() {
  // The views borrow the lake's catalog and database: they go first.
  views_.reset();
}

void SqlSession::Interrupt() { lake_.db->InterruptRunning(); }

Status SqlSession::Run(const std::string& sql, std::ostream& out) {
  if (!options_.timer) return Execute(sql, out);
  const auto start = std::chrono::steady_clock::now();
  Status status = Execute(sql, out);
  char line[64];
  std::snprintf(line, sizeof line, "Run Time: %.3f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  out << line;
  return status;
}

Status SqlSession::Execute(const std::string& sql, std::ostream& out) {
  // One statement, classified from DuckDB's parse tree: queries run as they are; the Iceberg
  // write statements commit through the same path as Flight SQL's; nothing else runs.
  SKADE_ASSIGN_OR_RETURN(engine::Statement statement, engine::ParseStatement(sql));
  if (statement.is_write()) {
    SKADE_ASSIGN_OR_RETURN(sql::LakeSql::WriteReport report,
                           views_->ExecuteWriteReporting(statement, sql::Session{schema_, ""}));
    out << statement.type_name << " " << report.rows << "\n";
    // DROP TABLE says what became of the table's files (kept, or purged and what stayed).
    // Its lines name files, made safe to print one by one.
    out << TerminalLines(report.note);
    return Status::Ok();
  }
  if (statement.use_schema) return Use(*statement.use_schema);
  if (statement.kind == engine::Statement::Kind::kOther) {
    return Status::InvalidArgument(statement.type_name +
                                   " statements do not run here: skade sql runs queries, COPY … TO exports and the "
                                   "Iceberg write statements (INSERT, UPDATE, DELETE, CREATE/DROP TABLE, "
                                   "CREATE/DROP SCHEMA)");
  }
  // The lake's tables as views, AT (…) snapshots and the lake's listings (SHOW TABLES, DESCRIBE,
  // information_schema) substituted: the same resolution as Flight SQL's (LakeSql::ResolveQuery).
  views_->set_pushdown(options_.pushdown);
  SKADE_ASSIGN_OR_RETURN(std::string query, views_->ResolveQuery(sql, schema_));
  // After USE, queries run on connections whose DuckDB schema is the namespace's (unqualified
  // names then find its tables' views), as a Flight SQL session's do.
  engine::Database& db = schema_db_ ? *schema_db_ : *lake_.db;
  return WriteQuery(db, query, options_.format, options_.box, out).status();
}

Status SqlSession::Use(const std::string& name) {
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, catalog::Namespace::Parse(name));
  SKADE_RETURN_IF_ERROR(ns.Validate());
  SKADE_ASSIGN_OR_RETURN(bool exists, lake_.catalog->NamespaceExists(ns));
  // USE skade.sales names the lake's catalog first, as DuckDB's USE database.schema does (the
  // name Flight SQL clients see, or the DuckDB catalog the session's views live in).
  const std::string& first = ns.levels.front();
  if (!exists && ns.levels.size() > 1 && (first == "skade" || first == views_->catalog_name())) {
    catalog::Namespace rest{std::vector<std::string>(ns.levels.begin() + 1, ns.levels.end())};
    SKADE_ASSIGN_OR_RETURN(bool rest_exists, lake_.catalog->NamespaceExists(rest));
    if (rest_exists) {
      ns = std::move(rest);
      exists = true;
    }
  }
  if (!exists) {
    return Status::NotFound("namespace " + TerminalText(ns.ToString()) +
                            " does not exist (`skade ns list` or SHOW ALL TABLES shows the lake's)");
  }
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> setup, views_->SessionSetup(sql::Session{ns.ToString(), ""}, ""));
  schema_db_ = lake_.db->WithConnectionSetup(std::move(setup));
  schema_ = ns.ToString();
  return Status::Ok();
}

Status SqlSession::ListTables(const std::string& pattern, std::ostream& out) {
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> namespaces,
                         catalog::ListNamespacesBelow(*lake_.catalog, catalog::Namespace{}));
  std::vector<std::string> names;
  for (const catalog::Namespace& ns : namespaces) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> tables, lake_.catalog->ListTables(ns));
    for (const catalog::TableIdent& t : tables) {
      std::string name = TerminalText(t.ToString());
      if (pattern.empty() || sql::LikeMatch(pattern, name)) names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());
  // In columns across the width, as DuckDB's .tables prints them.
  size_t width = 1;
  for (const std::string& n : names) width = std::max(width, DisplayWidth(n));
  const size_t columns = std::max<size_t>(1, (options_.box.max_width > 0 ? options_.box.max_width : 80) / (width + 2));
  const size_t rows = (names.size() + columns - 1) / columns;
  for (size_t r = 0; r < rows; ++r) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      const size_t i = c * rows + r;
      if (i >= names.size()) break;
      line += names[i] + std::string(width + 2 - DisplayWidth(names[i]), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  return Status::Ok();
}

Result<bool> SqlSession::RunDotCommand(const std::string& line, std::ostream& out) {
  const std::vector<std::string> words = Words(line);
  if (words.empty()) return true;
  const std::string& command = words[0];
  if (command == ".quit" || command == ".exit") return false;
  if (command == ".help") {
    std::string text = kDotHelp;
    text.replace(text.find("{mode}"), 6, FormatName(options_.format));
    out << text;
    return true;
  }
  if (command == ".tables") {
    if (words.size() > 2) return Status::InvalidArgument(".tables takes at most one pattern");
    SKADE_RETURN_IF_ERROR(ListTables(words.size() == 2 ? words[1] : "", out));
    return true;
  }
  if (command == ".schema" || command == ".describe") {
    if (words.size() != 2) return Status::InvalidArgument(command + " takes one table (ns.table)");
    SKADE_ASSIGN_OR_RETURN(std::string name, TableSqlName(words[1]));
    SKADE_RETURN_IF_ERROR(Run("DESCRIBE " + name, out));
    return true;
  }
  if (command == ".mode") {
    if (words.size() == 2 && words[1] == "table") {
      options_.format = OutputFormat::kTable;
    } else if (words.size() == 2 && words[1] == "csv") {
      options_.format = OutputFormat::kCsv;
    } else if (words.size() == 2 && words[1] == "json") {
      options_.format = OutputFormat::kJson;
    } else {
      return Status::InvalidArgument(".mode takes table, csv or json");
    }
    return true;
  }
  if (command == ".maxrows") {
    char* end = nullptr;
    const long long n = words.size() == 2 ? std::strtoll(words[1].c_str(), &end, 10) : -1;
    if (words.size() != 2 || end == words[1].c_str() || *end != '\0' || n < 0) {
      return Status::InvalidArgument(".maxrows takes a number of rows (0 = all)");
    }
    options_.box.max_rows = n;
    return true;
  }
  if (command == ".timer") {
    SKADE_ASSIGN_OR_RETURN(options_.timer, OnOff(words));
    return true;
  }
  if (command == ".pushdown") {
    SKADE_ASSIGN_OR_RETURN(options_.pushdown, OnOff(words));
    return true;
  }
  return Status::InvalidArgument("unknown command " + TerminalText(command) + " (.help lists them)");
}

}  // namespace skade::cli
