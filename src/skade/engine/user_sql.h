// User SQL, parsed once by DuckDB's own parser and re-rendered from the parse tree (DESIGN §11):
// predicates (`--where`, DELETE/UPDATE conditions), queries (`ingest --sql`, INSERT … SELECT,
// CREATE TABLE … AS), column definitions (`create --schema`, CREATE TABLE) and the statements
// SQL clients send. What skade runs is always a rendering of a checked tree, never the user's
// text; every rendering is exactly one expression or one statement, and re-parses to the same
// tree (checked). Refusals are kInvalidArgument naming the problem. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"

namespace skade::engine {

struct UserSqlAccess;  // user_sql.cc: builds values from checked parse trees

// A boolean expression over a table's columns ("amount < 0 AND region = 'eu'").
class Predicate {
 public:
  enum class Subqueries { kRefuse, kAllow };
  // Exactly one expression: no second statement, no clause after it (ORDER BY, LIMIT, GROUP
  // BY…), no parameter marker, no comment that swallows the rest; subqueries only if allowed.
  static Result<Predicate> Parse(std::string_view text, Subqueries subqueries = Subqueries::kRefuse);

  // The rendering, parenthesised: it may stand wherever a boolean operand may.
  const std::string& sql() const { return sql_; }

 private:
  friend struct UserSqlAccess;
  explicit Predicate(std::string sql) : sql_(std::move(sql)) {}
  std::string sql_;
};

// One query: SELECT, VALUES, FROM-first, WITH …, set operations (UNION…), with its ORDER BY /
// LIMIT. Never any other kind of statement.
class Query {
 public:
  // kInvalidArgument for anything but exactly one query, or one with parameter markers.
  static Result<Query> Parse(std::string_view text);

  // The rendering (no trailing ';'): it may be wrapped as a subquery, "(" + sql() + ")".
  const std::string& sql() const { return sql_; }

 private:
  friend struct UserSqlAccess;
  explicit Query(std::string sql) : sql_(std::move(sql)) {}
  std::string sql_;
};

// One column of `create --schema` / CREATE TABLE.
struct ColumnDefinition {
  std::string name;
  std::string type;  // a built-in DuckDB type as rendered from the tree ("DECIMAL(10,2)", "INTEGER[]")
  bool not_null = false;

  friend bool operator==(const ColumnDefinition&, const ColumnDefinition&) = default;
};

// The columns of a table definition.
struct TableDefinition {
  std::vector<ColumnDefinition> columns;
  std::vector<std::string> primary_key;  // PRIMARY KEY columns → Iceberg identifier fields
};

// "id BIGINT NOT NULL, ts TIMESTAMPTZ, PRIMARY KEY (id)" → columns. NOT NULL and PRIMARY KEY
// are the constraints Iceberg can hold; DEFAULT, generated columns, CHECK, UNIQUE, FOREIGN KEY,
// COLLATE and unknown type names are refused by name.
Result<TableDefinition> ParseTableDefinition(std::string_view text);

// One WHEN … THEN … clause of a MERGE.
struct MergeAction {
  enum class When {
    kMatched,             // WHEN MATCHED: a target row with its source row
    kNotMatchedByTarget,  // WHEN NOT MATCHED [BY TARGET]: a source row no target row matches
    kNotMatchedBySource,  // WHEN NOT MATCHED BY SOURCE: a target row no source row matches
  };
  enum class Do { kUpdate, kDelete, kInsert, kNothing };
  When when = When::kMatched;
  Do action = Do::kNothing;
  std::optional<Predicate> condition;  // WHEN … AND condition
  // UPDATE SET column = value (rendered, parenthesised; names keep their qualifiers).
  std::vector<std::pair<std::string, std::string>> assignments;
  // INSERT [(columns)] VALUES (values): the values rendered; no columns = every column in order.
  std::vector<std::string> columns;
  std::vector<std::string> values;
};

// A statement a SQL client sent (`skade sql`, Flight SQL), classified from its parse tree. The
// write statements carry their parts as renderings; everything else is only classified.
struct Statement {
  enum class Kind {
    kQuery,         // SELECT, VALUES, FROM, WITH, set operations, DESCRIBE/SHOW, SUMMARIZE
    kExplain,       // EXPLAIN of a query
    kInsert,        // INSERT INTO target [(columns)] query
    kDelete,        // DELETE FROM target [WHERE where]
    kUpdate,        // UPDATE target SET assignments [FROM from] [WHERE where]
    kMerge,         // MERGE INTO target USING from ON on WHEN … THEN merge_actions
    kCreateTable,   // CREATE [OR REPLACE] TABLE [IF NOT EXISTS] target (definition) | AS query
    kDropTable,     // DROP TABLE [IF EXISTS] target [PURGE]
    kCreateSchema,  // CREATE SCHEMA [IF NOT EXISTS] target
    kDropSchema,    // DROP SCHEMA [IF EXISTS] target
    kCreateView,    // CREATE [OR REPLACE] VIEW [IF NOT EXISTS] target [(columns)] AS query
    kDropView,      // DROP VIEW [IF EXISTS] target
    kExport,        // COPY (query | table) TO file
    kOther,         // anything else (COPY FROM, ATTACH, SET, PRAGMA, CREATE TEMP VIEW, MACRO, …)
  };
  Kind kind = Kind::kOther;
  std::string type_name;        // DuckDB's statement type ("SELECT", "COPY", …), for messages
  int64_t parameter_count = 0;  // '?' / '$n' markers before binding
  // A write statement with markers parsed without values: classified only; its renderings
  // are left empty and it must not run.
  bool unbound = false;
  // Why a write statement cannot run (a clause skade cannot honour: RETURNING, ON CONFLICT,
  // INSERT BY NAME / DEFAULT VALUES, DELETE … USING, TEMP tables, WITH before INSERT, CASCADE,
  // MERGE's THEN ERROR / INSERT * / UPDATE SET *); empty when it can. Its renderings are then
  // left empty.
  std::string unsupported;
  // The first function called anywhere in the statement that shows how the server is set up
  // (its settings, files and attached databases: duckdb_settings, current_setting,
  // duckdb_databases, …), by its name; empty when none is. A server for untrusted clients
  // refuses such statements (the settings name the server's folders).
  std::string reads_configuration;
  // The first function called anywhere in the statement that runs SQL given to it as data
  // (query, query_table, json_execute_serialized_sql), by its name; empty when none is. skade
  // never parses that SQL, so no check of this statement's applies to it: a server for
  // untrusted clients refuses such statements too.
  std::string runs_sql_text;
  // A query over one table alone (SELECT … FROM t: no join, set operation, CTE, subquery in
  // FROM or grouping sets): the table's name as written (1–3 parts), and per result column the
  // table column it passes through unchanged — "*" for all of the table's columns in order, ""
  // for anything computed. Both empty for other statements. (What a result column may inherit
  // from its table, e.g. NOT NULL.)
  std::vector<std::string> source_table;
  std::vector<std::string> passthrough_columns;

  std::vector<std::string> target;  // the name as written: 1–3 parts, unquoted
  std::vector<std::string> columns;  // INSERT column list; CREATE VIEW's column names
  std::optional<Query> query;        // INSERT source, CREATE TABLE … AS, CREATE VIEW … AS
  std::optional<Predicate> where;    // DELETE / UPDATE condition (subqueries allowed)
  std::vector<std::pair<std::string, std::string>> assignments;  // UPDATE column, rendered value
  // UPDATE … FROM and MERGE read other relations beside their target: `from` renders them as
  // the list of a FROM clause (UPDATE's FROM list; MERGE's USING source, with its alias), and
  // `target_alias` is the name their expressions call the target by (its alias, else its table
  // name). Their assignments, conditions and values keep their qualifiers: they run in queries
  // over `<target> AS target_alias, from`. Both empty for other statements; a plain UPDATE's
  // parts name the target's columns unqualified.
  std::string from;
  std::string target_alias;
  std::optional<Predicate> on;  // MERGE … ON (or USING (columns), spelled out as equalities)
  std::vector<MergeAction> merge_actions;  // in the order they are tried
  TableDefinition definition;        // CREATE TABLE (…)
  bool if_exists = false;
  bool if_not_exists = false;
  bool or_replace = false;
  // DROP TABLE … PURGE (Spark's clause; DuckDB's grammar has none): the table's files go too.
  bool purge = false;
  // USE x / USE x.y (and SET schema = 'x'), which DuckDB parses as setting "schema": the name's
  // parts unquoted, joined by '.' (USE "Sales".eu → "Sales.eu"); a kOther statement that a
  // session runs by changing where its unqualified names resolve.
  std::optional<std::string> use_schema;

  bool is_write() const {
    return kind != Kind::kQuery && kind != Kind::kExplain && kind != Kind::kExport && kind != Kind::kOther;
  }
};

// Parses exactly one statement (kInvalidArgument for none, several, or a syntax error). A
// statement DuckDB's parser refuses whose last word is an unquoted PURGE (comments and a closing
// ';' after it aside) is parsed again without that word; when the rest is one DROP TABLE it is
// that DROP TABLE with `purge` set (DuckDB's grammar knows no PURGE; the text before the word is
// parsed as it is, nothing is pasted). With
// `parameters` (one SQL literal per marker, in order: a constant, optionally cast, e.g.
// "CAST('x' AS VARCHAR)"), the markers of a write statement are replaced by those literals in
// the tree before its parts are rendered; kInvalidArgument when the counts differ or a literal
// is not a constant.
Result<Statement> ParseStatement(std::string_view sql, std::span<const std::string> parameters = {});

// A table reference's AT clause (`FROM t AT (VERSION => …)` / `AT (TIMESTAMP => …)`, DuckDB's
// syntax; its parser knows no other units). Exactly one member is set.
struct TimeTravel {
  std::optional<int64_t> snapshot_id;  // VERSION => <integer>
  std::optional<std::string> ref;      // VERSION => '<branch or tag>'
  // TIMESTAMP => <expression>: rendered from its checked tree (one expression without columns,
  // subqueries, parameter markers or configuration reads); the caller evaluates it.
  std::string timestamp_sql;
};

// A relation a query names, as SubstituteRelations hands it over.
struct RelationReference {
  enum class Kind {
    kTable,          // FROM name [AT (…)]
    kShowTables,     // SHOW TABLES
    kShowAllTables,  // SHOW ALL TABLES
    kDescribe,       // DESCRIBE name (SHOW name): the columns of one table
  };
  Kind kind = Kind::kTable;
  std::vector<std::string> name;  // kTable, kDescribe: as written, 1–3 parts
  std::optional<TimeTravel> at;   // kTable only
  bool cte = false;               // kTable: a one-part name of a WITH query in scope
};

// The caller's answer for one relation: nullopt keeps it; otherwise a query made by the caller
// (never from user text) of the form `SELECT * FROM <table function>(…)` (e.g.
// engine::PushdownScanSql) whose table function is read in the relation's place.
using RelationSubstitution = std::function<Result<std::optional<std::string>>(const RelationReference&)>;

// For a query statement (SELECT, VALUES, WITH, SHOW/DESCRIBE/SUMMARIZE, EXPLAIN of a query; a
// COPY … TO only when nothing is substituted): calls `substitute` for every relation it names,
// in FROM clauses, joins, subqueries and WITH queries alike, and returns the statement rendered
// from its tree with each substituted relation replaced (its alias and column aliases kept),
// checked to re-parse to that tree; nullopt when nothing was substituted (run `sql` as it is).
// An AT clause left unsubstituted is kInvalidArgument (only lake tables have versions), as is
// a malformed one, a statement that does not parse or cannot be rendered faithfully.
Result<std::optional<std::string>> SubstituteRelations(std::string_view sql, const RelationSubstitution& substitute);

// A write statement re-rendered to type its parameter markers (RenderParameterProbe).
struct ParameterProbe {
  std::string statement;  // INSERT INTO / UPDATE / DELETE FROM the stand-in …
  // One query over the stand-in that reads every table the statement reads (its subqueries, an
  // INSERT's query), to find the tables to make current before preparing (DuckDB names the
  // tables of queries only).
  std::string reads;
};

// For typing the parameter markers of a write statement (INSERT, UPDATE or DELETE): the
// statement rendered against `stand_in` (a table name as SQL, quoted by the caller) instead of
// its target, from the same checked parts ParseStatement renders — the INSERT's column list and
// VALUES rows or query, the UPDATE's assignments, the condition — with the markers kept ("$1").
// Prepared (never run) against a table of the target's columns, DuckDB types each marker as
// the write uses it. kInvalidArgument for other statements, a part that does not render
// faithfully, or what ParseStatement refuses; kNotImplemented for Statement::unsupported
// clauses.
Result<ParameterProbe> RenderParameterProbe(std::string_view sql, std::string_view stand_in);

}  // namespace skade::engine
