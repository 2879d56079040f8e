// LakeSql's write side: SQL write statements and bulk ingest as Iceberg commits.
#include <set>

#include "skade/arrow/builder.h"
#include "skade/arrow/c_data.h"
#include "skade/base/log.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/sql_filter.h"
#include "skade/engine/schema_convert.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {

using engine::QuoteIdentifier;
using Kind = engine::Statement::Kind;

namespace {

std::vector<std::string> ColumnNames(const table::Table& t) {
  std::vector<std::string> out;
  for (const auto& f : t.metadata().CurrentSchema()->fields()) out.push_back(f.name);
  return out;
}

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + QuoteIdentifier(n);
  return out;
}

// The Iceberg schema of an Arrow schema, via DuckDB's own Arrow type mapping.
Result<iceberg::SchemaPtr> SchemaOfArrow(engine::Database& db, const ArrowSchema& schema) {
  SKADE_ASSIGN_OR_RETURN(std::vector<engine::ColumnType> columns, db.ArrowInputColumns(schema));
  engine::TableDefinition definition;
  for (engine::ColumnType& c : columns) {
    definition.columns.push_back(engine::ColumnDefinition{std::move(c.name), std::move(c.type), false});
  }
  if (definition.columns.empty()) return Status::InvalidArgument("the ingested stream has no columns");
  return engine::SchemaFromDefinition(definition);
}

// The SQL of a write's own parts, as they run (for SessionSetup's look at what they may call).
std::string PartsText(const engine::Statement& w) {
  std::string text = w.query ? w.query->sql() : "";
  if (w.where) text += "\n" + w.where->sql();
  for (const auto& [column, value] : w.assignments) text += "\n" + value;
  return text;
}

// `n` parameters "1".."n" of the null type: DuckDB's stand-in for a type it cannot tell.
Result<arrow::SchemaHandle> UntypedParameters(int64_t n) {
  std::vector<arrow::ArrayBuilder> columns;
  for (int64_t i = 0; i < n; ++i) columns.emplace_back(std::to_string(i + 1), "n", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  arrow::SchemaHandle schema;
  arrow::ArrayHandle unused;
  SKADE_RETURN_IF_ERROR(b.Finish(schema.get(), unused.get()));
  return schema;
}

}  // namespace

void WriteInterrupt::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ != nullptr) db_->InterruptOwnStatements();
}

void WriteInterrupt::Attach(engine::Database* db) {
  std::lock_guard<std::mutex> lock(mu_);
  db_ = db;
}

Result<int64_t> LakeSql::ExecuteWrite(const engine::Statement& w, const std::string& default_schema) {
  return ExecuteWrite(w, Session{default_schema, ""});
}

Result<int64_t> LakeSql::ExecuteWrite(const engine::Statement& w, const Session& session) {
  const std::string& default_schema = session.schema;
  if (!w.is_write()) return Status::InvalidArgument(w.type_name + " is not a write statement");
  if (!w.unsupported.empty()) return Status::NotImplemented(w.unsupported);
  if (w.unbound) return Status::InvalidArgument("the statement's parameters have no values");
  if (w.kind == Kind::kCreateSchema || w.kind == Kind::kDropSchema) {
    if (w.target.size() > 2 || (w.target.size() == 2 && w.target[0] != catalog_name_)) {
      return Status::NotFound("unknown catalog '" + w.target[0] + "'");
    }
    SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, NamespaceOf(w.target.back()));
    SKADE_ASSIGN_OR_RETURN(bool exists, catalog_.NamespaceExists(ns));
    if (w.kind == Kind::kCreateSchema) {
      if (exists && w.if_not_exists) return 0;
      SKADE_RETURN_IF_ERROR(catalog_.CreateNamespace(ns, {}));
      return 0;
    }
    if (!exists && w.if_exists) return 0;
    SKADE_RETURN_IF_ERROR(catalog_.DropNamespace(ns));
    SKADE_RETURN_IF_ERROR(DropSchema(ns.ToString()));
    return 0;
  }

  if (w.kind == Kind::kDropTable) {
    SKADE_ASSIGN_OR_RETURN(WriteReport dropped, DropTableStatement(w, session, table::DropOptions::Count::kNothing));
    return dropped.rows;
  }
  if (w.kind == Kind::kCreateView || w.kind == Kind::kDropView) return ViewStatement(w, session);

  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, Resolve(w.target, default_schema));
  // The statement's own SQL resolves names and current_user as a query of the session would:
  // it runs on connections set up alike (views stay db_'s: they are the catalog's, not the
  // session's).
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> setup, SessionSetup(session, PartsText(w)));
  std::unique_ptr<engine::Database> session_db = db_.WithConnectionSetup(std::move(setup));
  engine::Database& db = *session_db;
  // What runs on `db` is the write's alone: an interrupt stops it and nothing of other sessions.
  struct Attached {
    WriteInterrupt* interrupt;
    ~Attached() {
      if (interrupt != nullptr) interrupt->Attach(nullptr);
    }
  } attached{session.interrupt};
  if (session.interrupt != nullptr) session.interrupt->Attach(&db);
  if (w.kind == Kind::kCreateTable) {
    SKADE_ASSIGN_OR_RETURN(bool ns_exists, catalog_.NamespaceExists(ident.ns));
    if (!ns_exists) return Status::NotFound("schema '" + ident.ns.ToString() + "' does not exist");
    auto existing = catalog_.LoadTable(ident);
    if (existing.ok()) {
      if (w.if_not_exists) return 0;
      if (!w.or_replace) return Status::AlreadyExists("table " + ident.ToString() + " already exists");
    }
    // The query as a query of the session reads (AT (…) snapshots and listings substituted).
    std::string query;
    if (w.query) {
      SKADE_ASSIGN_OR_RETURN(query, ResolveQuery(w.query->sql(), default_schema));
    }
    Result<iceberg::SchemaPtr> schema = !w.query ? engine::SchemaFromDefinition(w.definition)
                                                 : engine::SchemaFromQuery(db, "SELECT * FROM (" + query + "\n) LIMIT 0");
    if (!schema.ok()) return schema.status();
    // The lineage of the query, read before the table it fills exists (or is replaced).
    table::SnapshotLineage lineage;
    if (w.query) {
      std::vector<std::string> names;
      for (const iceberg::NestedField& f : (*schema)->fields()) names.push_back(f.name);
      auto traced = WriteLineage(db, w.query->sql(), default_schema, names);
      if (traced.ok()) {
        lineage = std::move(*traced);
      } else {
        SKADE_LOG_DEBUG("sql: {} records no lineage: {}", ident.ToString(), traced.status().ToString());
      }
    }
    if (existing.ok()) {
      // OR REPLACE of an existing table: Iceberg's replace transaction, as Spark runs it — the
      // same table at the same location takes the new schema and rows in one commit, its
      // history kept until its snapshots expire. Dropping it and creating another instead would
      // leave the old folder behind (the new table cannot have it while it holds files) with
      // nothing referencing it, and readers would see no table in between.
      SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(catalog_, io_, db, ident));
      t->set_write_observer(write_observer_);
      t->set_snapshot_lineage(lineage);
      const engine::WriteSource source{query, nullptr};
      SKADE_ASSIGN_OR_RETURN(table::CommitOutcome replaced, t->Replace(*schema, w.query ? &source : nullptr));
      return replaced.added_records;
    }
    catalog::CreateTableRequest req;
    req.schema = *schema;
    SKADE_RETURN_IF_ERROR(catalog_.CreateTable(ident, req));
    if (!w.query) return 0;
    return FillNewTable(db, ident, engine::WriteSource{query, nullptr}, lineage);
  }

  SKADE_ASSIGN_OR_RETURN(auto synced, SyncView(ident));
  std::unique_ptr<table::Table> t = synced->CloneOn(db);
  t->set_write_observer(write_observer_);
  std::vector<std::string> columns = ColumnNames(*t);
  if (w.kind == Kind::kInsert) {
    if (!w.query) return Status::InvalidArgument("INSERT needs a SELECT or VALUES source");
    const std::vector<std::string>& names = w.columns.empty() ? columns : w.columns;
    RecordLineage(*t, db, w.query->sql(), default_schema, names);
    // A past snapshot may be the source (INSERT … SELECT … FROM t AT (…)); the target is always
    // the current snapshot.
    SKADE_ASSIGN_OR_RETURN(std::string query, ResolveQuery(w.query->sql(), default_schema));
    std::string source = "SELECT * FROM (" + query + "\n) AS __skade_insert(" + QuotedList(names) + ")";
    SKADE_ASSIGN_OR_RETURN(auto outcome, t->Append(engine::WriteSource{source, nullptr}));
    return outcome.added_records;
  }
  if (w.kind == Kind::kMerge || (w.kind == Kind::kUpdate && !w.from.empty())) {
    return ExecuteJoinedWrite(w, ident, *t, db, default_schema);
  }
  std::string where = w.where ? w.where->sql() : "true";
  // Subqueries in the predicate and in the assigned values may read other tables.
  std::string reads;
  for (const auto& [column, value] : w.assignments) reads += value + ", ";
  SKADE_RETURN_IF_ERROR(
      SyncViews("SELECT " + reads + "1 FROM " + ViewName(ident) + " WHERE " + where, default_schema));
  // Before anything counts or runs: DuckDB would take `WHERE x` as `WHERE x::BOOLEAN`.
  if (w.where) SKADE_RETURN_IF_ERROR(engine::CheckBooleanOver(db, *w.where, ViewName(ident)));
  // The rows the predicate matches in the snapshot being changed: what DELETE and UPDATE
  // report (the operations' own counters also count rows of rewritten files).
  SKADE_ASSIGN_OR_RETURN(auto counted, db.QueryRows("SELECT count(*) FROM " + ViewName(ident) + " WHERE " + where));
  int64_t matching = counted.empty() || !counted[0][0] ? 0 : std::stoll(*counted[0][0]);
  if (w.kind == Kind::kDelete) {
    // What a DELETE reads: its own table and the tables of its condition's subqueries; it
    // writes no column.
    RecordLineage(*t, db, "SELECT 1 FROM " + ViewName(ident) + " WHERE " + where, default_schema, {});
    SKADE_ASSIGN_OR_RETURN(engine::Predicate all, engine::Predicate::Parse("true"));
    SKADE_RETURN_IF_ERROR(t->DeleteWhere(w.where ? *w.where : all));
    return matching;
  }
  // UPDATE: the matching rows are replaced by their updated selves in one overwrite.
  std::set<std::string> known(columns.begin(), columns.end());
  std::map<std::string, std::string> assigned;
  for (const auto& [column, expr] : w.assignments) {
    if (!known.count(column)) return Status::InvalidArgument("UPDATE: table " + ident.ToString() + " has no column '" + column + "'");
    assigned[column] = expr;
  }
  std::string select;
  for (const auto& c : columns) {
    auto it = assigned.find(c);
    select += (select.empty() ? "" : ", ") +
              (it == assigned.end() ? QuoteIdentifier(c) : "(" + it->second + ") AS " + QuoteIdentifier(c));
  }
  std::string source = "SELECT " + select + " FROM " + ViewName(ident) + " WHERE " + where;
  if (matching == 0) return 0;
  RecordLineage(*t, db, source, default_schema, columns);
  SKADE_RETURN_IF_ERROR(w.where ? t->OverwriteWhere(*w.where, engine::WriteSource{source, nullptr})
                                : t->OverwriteAll(engine::WriteSource{source, nullptr}));
  return matching;
}

Result<LakeSql::WriteReport> LakeSql::ExecuteWriteReporting(const engine::Statement& w, const Session& session) {
  if (w.kind == Kind::kDropTable && w.unsupported.empty() && !w.unbound) {
    return DropTableStatement(w, session, table::DropOptions::Count::kFiles);
  }
  SKADE_ASSIGN_OR_RETURN(int64_t rows, ExecuteWrite(w, session));
  return WriteReport{rows, ""};
}

Result<LakeSql::WriteReport> LakeSql::DropTableStatement(const engine::Statement& w, const Session& session,
                                                         table::DropOptions::Count count) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, Resolve(w.target, session.schema));
  table::DropOptions options;
  options.mode = w.purge ? catalog::DropMode::kPurge : catalog::DropMode::kKeepFiles;
  options.count = count;
  Result<table::DropReport> dropped = table::DropTable(catalog_, io_, ident, options);
  if (!dropped.ok()) {
    if (dropped.status().code() == StatusCode::kNotFound && w.if_exists) return WriteReport{};
    return dropped.status();
  }
  SKADE_RETURN_IF_ERROR(DropView(ident));
  WriteReport report;
  report.note = table::DescribeDrop(*dropped);
  if (w.purge) SKADE_LOG_INFO("sql: {}", report.note);
  return report;
}

Result<arrow::SchemaHandle> LakeSql::WriteParameters(std::string_view sql, const engine::Statement& w,
                                                     const Session& session) {
  if (w.parameter_count == 0) return UntypedParameters(0);
  if ((w.kind != Kind::kInsert && w.kind != Kind::kUpdate && w.kind != Kind::kDelete) || !w.unsupported.empty() ||
      !w.from.empty()) {
    return UntypedParameters(w.parameter_count);
  }
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, Resolve(w.target, session.schema));
  SKADE_ASSIGN_OR_RETURN(auto t, SyncView(ident));
  // The stand-in is a temporary table of the connection: it has the target's columns with the
  // types its view gives them, and nobody else sees it.
  const std::string stand_in = "temp.main.__skade_write_target";
  auto probe = engine::RenderParameterProbe(sql, stand_in);
  if (!probe.ok()) {
    SKADE_LOG_DEBUG("sql: parameters of a write left untyped: {}", probe.status().ToString());
    return UntypedParameters(w.parameter_count);
  }
  // The statement's other tables (subqueries, INSERT … SELECT).
  SKADE_RETURN_IF_ERROR(SyncViews(probe->reads, session.schema));
  iceberg::SchemaPtr schema = t->metadata().CurrentSchema();
  if (!schema) return Status::Corruption("table " + ident.ToString() + " has no current schema");
  std::string columns;
  for (const auto& f : schema->fields()) {
    SKADE_ASSIGN_OR_RETURN(std::string type, engine::DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    columns += (columns.empty() ? "" : ", ") + QuoteIdentifier(f.name) + " " + type;
  }
  SKADE_ASSIGN_OR_RETURN(auto con, db_.Connect());
  SKADE_RETURN_IF_ERROR(SetUp(*con, session, sql));
  SKADE_RETURN_IF_ERROR(con->Execute("CREATE TEMP TABLE " + stand_in + " (" + columns + ")"));
  // Prepared, never run. A statement DuckDB cannot bind here fails when it runs, through the
  // write path, with its own error: here its markers only go untyped.
  auto prepared = con->Prepare(probe->statement);
  if (!prepared.ok()) {
    SKADE_LOG_DEBUG("sql: parameters of a write left untyped: {}", prepared.status().ToString());
    return UntypedParameters(w.parameter_count);
  }
  if ((*prepared)->parameter_count() != w.parameter_count) return UntypedParameters(w.parameter_count);
  return (*prepared)->ParameterSchema();
}

Result<int64_t> LakeSql::FillNewTable(engine::Database& db, const catalog::TableIdent& ident,
                                      const engine::WriteSource& source, const table::SnapshotLineage& lineage) {
  auto filled = [&]() -> Result<int64_t> {
    SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(catalog_, io_, db, ident));
    t->set_write_observer(write_observer_);
    t->set_snapshot_lineage(lineage);
    SKADE_ASSIGN_OR_RETURN(auto outcome, t->Append(source));
    return outcome.added_records;
  }();
  if (filled.ok()) return filled;
  // Undo: the new table goes, with its files.
  Status dropped = catalog_.DropTable(ident, catalog::DropMode::kPurge);
  if (!dropped.ok()) SKADE_LOG_WARN("sql: cannot remove {} after its query failed: {}", ident.ToString(), dropped.ToString());
  (void)DropView(ident);
  return filled.status();
}

Result<int64_t> LakeSql::Ingest(const catalog::TableIdent& ident, ArrowArrayStream* rows, IngestMode mode) {
  auto existing = catalog_.LoadTable(ident);
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) return existing.status();
  bool exists = existing.ok();
  if (exists && mode == IngestMode::kCreate) return Status::AlreadyExists("table " + ident.ToString() + " already exists");
  if (!exists && mode == IngestMode::kAppend) return Status::NotFound("table " + ident.ToString() + " does not exist");
  if (!exists) {
    SKADE_ASSIGN_OR_RETURN(bool ns_exists, catalog_.NamespaceExists(ident.ns));
    if (!ns_exists) return Status::NotFound("schema '" + ident.ns.ToString() + "' does not exist");
    ArrowSchema schema;
    if (rows->get_schema(rows, &schema) != 0) {
      const char* err = rows->get_last_error(rows);
      return Status::InvalidArgument(std::string("cannot read the ingested schema: ") + (err ? err : "unknown error"));
    }
    arrow::SchemaHandle owned(&schema);
    SKADE_ASSIGN_OR_RETURN(auto iceberg_schema, SchemaOfArrow(db_, *owned.get()));
    catalog::CreateTableRequest req;
    req.schema = iceberg_schema;
    SKADE_RETURN_IF_ERROR(catalog_.CreateTable(ident, req));
    return FillNewTable(db_, ident, engine::WriteSource{"SELECT * FROM __skade_input", rows});
  }
  SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(catalog_, io_, db_, ident));
  t->set_write_observer(write_observer_);
  engine::WriteSource source{"SELECT * FROM __skade_input", rows};
  SKADE_ASSIGN_OR_RETURN(auto outcome, mode == IngestMode::kReplace && exists ? t->OverwriteAll(source) : t->Append(source));
  return outcome.added_records;
}

}  // namespace skade::sql
