// LakeSql::ResolveQuery: time travel (AT clauses), the lake's table listings (SHOW TABLES, SHOW
// ALL TABLES, SHOW SCHEMAS, DESCRIBE, information_schema) and "did you mean" for unknown tables, each done by
// substituting one relation of the query's parse tree (engine::SubstituteRelations). What a
// substitute reads is SQL made here from catalog values (quoted literals), never user text.
#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/ascii.h"
#include "skade/base/log.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/pushdown_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/iceberg/scan.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {

namespace {

using engine::QuoteIdentifier;
using engine::QuoteString;
using Kind = engine::RelationReference::Kind;

std::string JoinName(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ".") + p;
  return out;
}

// A name as it would be written in SQL: bare when it is a plain lower-case identifier, quoted
// otherwise (a nested namespace "a.b" must be quoted to be one schema).
std::string SqlName(std::string_view name) {
  bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    plain = plain && (std::islower(static_cast<unsigned char>(c)) ||
                      std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  }
  return plain ? std::string(name) : QuoteIdentifier(name);
}

std::string SqlName(const catalog::TableIdent& ident) {
  return SqlName(ident.ns.ToString()) + "." + SqlName(ident.name);
}

// Levenshtein distance, case-insensitive.
size_t EditDistance(std::string_view a_text, std::string_view b_text) {
  const std::string a = AsciiLower(a_text), b = AsciiLower(b_text);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// One column of a listing relation: its name and DuckDB type.
struct ListingColumn {
  std::string name;
  std::string type;
};

// `rows` (one SQL literal per column, made from catalog values) as a query with named, typed
// columns; no rows gives an empty relation of the same columns.
std::string LiteralRows(const std::vector<ListingColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows) {
  std::string select, names, empty;
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string c = "c" + std::to_string(i);
    const std::string sep = i ? ", " : "";
    select += sep + c + " AS " + QuoteIdentifier(columns[i].name);
    names += sep + c;
    empty += sep + "CAST(NULL AS " + columns[i].type + ") AS " + QuoteIdentifier(columns[i].name);
  }
  if (rows.empty()) return "SELECT " + empty + " WHERE false";
  std::string values;
  for (const auto& row : rows) {
    std::string rendered;
    for (size_t i = 0; i < columns.size(); ++i) {
      rendered += (i ? ", " : "") + std::string("CAST(") + row[i] + " AS " + columns[i].type + ")";
    }
    values += (values.empty() ? "(" : ", (") + rendered + ")";
  }
  return "SELECT " + select + " FROM (VALUES " + values + ") AS v(" + names + ")";
}

std::string StringList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + QuoteString(item);
  return "[" + out + "]";
}

// The top-level columns of a table's current schema as SQL shows them.
struct ColumnFacts {
  std::string name;
  std::string type;  // DuckDB's type name, as the table's view has it
  bool required = false;
  bool key = false;  // an identifier field (Iceberg's primary key)
};

Result<std::vector<ColumnFacts>> ColumnsOf(catalog::Catalog& catalog,
                                           const catalog::TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, catalog.LoadTable(ident));
  iceberg::SchemaPtr schema = state.metadata->CurrentSchema();
  if (!schema)
    return Status::Corruption("table " + ident.ToString() + ": metadata has no current schema");
  const std::vector<int>& keys = schema->identifier_field_ids();
  std::vector<ColumnFacts> out;
  for (const iceberg::NestedField& f : schema->fields()) {
    SKADE_ASSIGN_OR_RETURN(std::string type,
                           engine::DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    out.push_back({f.name, std::move(type), f.required,
                   std::find(keys.begin(), keys.end(), f.id) != keys.end()});
  }
  return out;
}

// "tables", "columns" or "schemata" for information_schema.tables / .columns / .schemata
// (optionally with this lake's catalog or DuckDB's "system" in front); empty for any other name.
std::string InformationSchemaTable(const std::vector<std::string>& name,
                                   const std::string& catalog_name) {
  if (name.size() < 2) return "";
  if (name.size() == 3 && !EqualsIgnoreAsciiCase(name[0], catalog_name) && !EqualsIgnoreAsciiCase(name[0], "system"))
    return "";
  if (!EqualsIgnoreAsciiCase(name[name.size() - 2], "information_schema")) return "";
  const std::string table = AsciiLower(name.back());
  return table == "tables" || table == "columns" || table == "schemata" ? table : "";
}

// "table x does not exist" with the lake's tables nearest to the name as written: by the edit
// distance of the table name, plus one for a schema other than the one written.
std::string UnknownTableMessage(const std::vector<std::string>& name,
                                const std::vector<catalog::TableIdent>& tables) {
  const std::string& wanted = name.back();
  const std::string schema = name.size() >= 2 ? name[name.size() - 2] : "";
  size_t best = std::numeric_limits<size_t>::max();
  std::vector<const catalog::TableIdent*> nearest;
  for (const catalog::TableIdent& t : tables) {
    const size_t d = EditDistance(t.name, wanted) +
                     (!schema.empty() && !EqualsIgnoreAsciiCase(t.ns.ToString(), schema) ? 1 : 0);
    if (d < best) {
      best = d;
      nearest.clear();
    }
    if (d == best) nearest.push_back(&t);
  }
  std::string written;
  for (const std::string& part : name) written += (written.empty() ? "" : ".") + SqlName(part);
  std::string message = "table " + written + " does not exist";
  const size_t limit = std::max<size_t>(2, wanted.size() / 3);
  if (nearest.empty() || best > limit) {
    return message + (tables.empty() ? " (the lake has no tables)"
                                     : " (SHOW ALL TABLES lists the lake's tables)");
  }
  message += "; did you mean ";
  for (size_t i = 0; i < nearest.size() && i < 3; ++i)
    message += (i ? " or " : "") + SqlName(*nearest[i]);
  return message + "?";
}

// The rows of a fixed query as a scan source (what a listing relation reads).
class RowsSource final : public engine::ScanSource {
 public:
  explicit RowsSource(std::string sql) : sql_(std::move(sql)) {}
  Result<engine::ScanPlan> Plan(const engine::PushedScan&) override {
    return engine::ScanPlan{sql_, std::nullopt, nullptr};
  }

 private:
  const std::string sql_;
};

}  // namespace

Result<std::string> LakeSql::ResolveQuery(std::string_view sql, const std::string& default_schema) {
  std::string marks;
  SKADE_RETURN_IF_ERROR(SyncViews(sql, default_schema, &marks));
  SKADE_ASSIGN_OR_RETURN(
      std::optional<std::string> rewritten,
      engine::SubstituteRelations(sql, [&](const engine::RelationReference& relation) {
        return Substitute(relation, default_schema, 0);
      }));
  std::string resolved = rewritten ? std::move(*rewritten) : std::string(sql);
  // Without pushdown the tables' scans sit in their views, whose comments DuckDB drops: the
  // statement carries their marks, so that a read error names the damaged file.
  if (!marks.empty()) resolved += "\n" + marks;
  return resolved;
}

Result<std::optional<std::string>> LakeSql::Substitute(const engine::RelationReference& relation,
                                                       const std::string& default_schema, int depth) {
  if (relation.kind != Kind::kTable) {
    SKADE_ASSIGN_OR_RETURN(std::string listing, ListingRelation(relation, default_schema));
    if (listing.empty()) return std::optional<std::string>();
    SKADE_ASSIGN_OR_RETURN(std::string scan, RowsRelation(listing));
    return std::optional<std::string>(std::move(scan));
  }
  if (relation.cte) return std::optional<std::string>();
  if (!InformationSchemaTable(relation.name, catalog_name_).empty()) {
    if (relation.at)
      return Status::InvalidArgument("AT (…) reads the snapshots of the lake's tables, not " +
                                     JoinName(relation.name));
    SKADE_ASSIGN_OR_RETURN(std::string listing, ListingRelation(relation, default_schema));
    SKADE_ASSIGN_OR_RETURN(std::string scan, RowsRelation(listing));
    return std::optional<std::string>(std::move(scan));
  }
  if (!relation.at) {
    // A name that is no lake table may be one of the catalog's views.
    if (auto ident = Resolve(relation.name, default_schema); ident.ok() && !HasView(*ident)) {
      SKADE_ASSIGN_OR_RETURN(std::optional<std::string> view, ViewRelation(*ident, depth));
      if (view) return view;
    }
    SKADE_RETURN_IF_ERROR(CheckNamed(relation.name, default_schema));
    return std::optional<std::string>();
  }
  auto ident = Resolve(relation.name, default_schema);
  if (!ident.ok()) return ident.status().WithContext("AT (…)");
  SKADE_ASSIGN_OR_RETURN(std::string scan, TimeTravelScan(*ident, *relation.at));
  return std::optional<std::string>(std::move(scan));
}

Result<iceberg::SnapshotSelector> LakeSql::SelectorOf(const engine::TimeTravel& at) {
  iceberg::SnapshotSelector selector;
  selector.snapshot_id = at.snapshot_id;
  selector.ref = at.ref;
  if (!at.timestamp_sql.empty()) {
    // Milliseconds since the epoch, the unit of Iceberg's snapshot log; a time without a zone
    // is UTC (the database's time zone), as `skade scan --as-of` reads it.
    const std::string what = "AT (TIMESTAMP => " + at.timestamp_sql + ")";
    SKADE_ASSIGN_OR_RETURN(auto rows,
                           db_.QueryRows("SELECT CAST(epoch_ms(CAST((" + at.timestamp_sql +
                                         ") AS TIMESTAMPTZ)) AS VARCHAR)")
                               .WithContext(what));
    if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) {
      return Status::InvalidArgument(what + ": not a time");
    }
    selector.as_of_ms = std::stoll(*rows[0][0]);
  }
  return selector;
}

Result<std::string> LakeSql::TimeTravelScan(const catalog::TableIdent& ident,
                                            const engine::TimeTravel& at) {
  SKADE_ASSIGN_OR_RETURN(iceberg::SnapshotSelector selector, SelectorOf(at));
  const std::string context = "table " + ident.ToString();
  auto loaded = table::Table::Load(catalog_, io_, db_, ident);
  if (!loaded.ok() && loaded.status().code() == StatusCode::kNotFound) {
    // A table the lake does not have is a mistake in the statement, as without AT.
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> tables, ListAllTables());
    if (std::find(tables.begin(), tables.end(), ident) == tables.end()) {
      return Status::InvalidArgument(UnknownTableMessage({ident.ns.ToString(), ident.name}, tables));
    }
  }
  SKADE_ASSIGN_OR_RETURN(auto table, std::move(loaded).WithContext(context));
  // An unknown snapshot or ref, or a time before the first snapshot, is an error here: the
  // scan source would otherwise fail only when the query runs.
  SKADE_RETURN_IF_ERROR(
      iceberg::SelectSnapshot(table->metadata(), selector).status().WithContext(context));
  SKADE_ASSIGN_OR_RETURN(std::string token, RegisterSnapshotScan(*table, selector));
  // Statements bind it now; retired, it stays findable for that (ScanSources::kRetiredGrace).
  db_.scans().Retire(token);
  return engine::PushdownScanSql(token);
}

Result<std::string> LakeSql::RowsRelation(const std::string& sql) {
  SKADE_ASSIGN_OR_RETURN(std::vector<engine::ColumnType> columns, db_.QueryColumns(sql));
  engine::ScanSourceInfo info;
  for (engine::ColumnType& c : columns) {
    info.names.push_back(std::move(c.name));
    info.types.push_back(std::move(c.type));
  }
  info.source = std::make_shared<RowsSource>(sql);
  std::string token = db_.scans().Register(std::move(info));
  db_.scans().Retire(token);
  return engine::PushdownScanSql(token);
}

Result<std::vector<catalog::TableIdent>> LakeSql::ListAllTables() {
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> namespaces, ListNamespaces());
  std::vector<catalog::TableIdent> out;
  for (const catalog::Namespace& ns : namespaces) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> tables, catalog_.ListTables(ns));
    out.insert(out.end(), tables.begin(), tables.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<catalog::TableIdent>> LakeSql::ListAllViews() {
  std::vector<catalog::TableIdent> out;
  if (!catalog_.SupportsViews()) return out;
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> namespaces, ListNamespaces());
  for (const catalog::Namespace& ns : namespaces) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> views, catalog_.ListViews(ns));
    out.insert(out.end(), views.begin(), views.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> LakeSql::ListingRelation(const engine::RelationReference& relation,
                                             const std::string& default_schema) {
  const std::string info_table = InformationSchemaTable(relation.name, catalog_name_);
  const std::string catalog_literal = QuoteString(catalog_name_);
  // Listings of columns read each table's metadata; a table that cannot be read is left out
  // (with a log line) rather than failing the listing of all the others.
  auto columns_of =
      [this](const catalog::TableIdent& ident) -> std::optional<std::vector<ColumnFacts>> {
    auto columns = ColumnsOf(catalog_, ident);
    if (columns.ok()) return std::move(*columns);
    SKADE_LOG_WARN("table {} left out of a listing: {}", ident.ToString(),
                   columns.status().ToString());
    return std::nullopt;
  };
  std::vector<std::vector<std::string>> rows;
  switch (relation.kind) {
    case Kind::kShowTables: {
      // The session schema's tables, as DuckDB's SHOW TABLES; without one (skade sql), every
      // table of the lake with its schema.
      if (!default_schema.empty()) {
        SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, NamespaceOf(default_schema));
        auto tables = catalog_.ListTables(ns);
        if (!tables.ok() && tables.status().code() != StatusCode::kNotFound) return tables.status();
        if (tables.ok() && catalog_.SupportsViews()) {
          SKADE_ASSIGN_OR_RETURN(auto views, catalog_.ListViews(ns));
          tables->insert(tables->end(), views.begin(), views.end());
        }
        if (tables.ok()) std::sort(tables->begin(), tables->end());
        for (const auto& t : tables.ok() ? *tables : std::vector<catalog::TableIdent>{})
          rows.push_back({QuoteString(t.name)});
        return LiteralRows({{"name", "VARCHAR"}}, rows);
      }
      SKADE_ASSIGN_OR_RETURN(auto tables, ListAllTables());
      SKADE_ASSIGN_OR_RETURN(auto views, ListAllViews());
      tables.insert(tables.end(), views.begin(), views.end());
      std::sort(tables.begin(), tables.end());
      for (const auto& t : tables)
        rows.push_back({QuoteString(t.ns.ToString()), QuoteString(t.name)});
      return LiteralRows({{"schema", "VARCHAR"}, {"name", "VARCHAR"}}, rows);
    }
    case Kind::kShowAllTables: {
      SKADE_ASSIGN_OR_RETURN(auto tables, ListAllTables());
      for (const auto& t : tables) {
        auto columns = columns_of(t);
        if (!columns) continue;
        std::vector<std::string> names, types;
        for (const ColumnFacts& c : *columns) {
          names.push_back(c.name);
          types.push_back(c.type);
        }
        rows.push_back({catalog_literal, QuoteString(t.ns.ToString()), QuoteString(t.name),
                        StringList(names), StringList(types), "false"});
      }
      return LiteralRows({{"database", "VARCHAR"},
                          {"schema", "VARCHAR"},
                          {"name", "VARCHAR"},
                          {"column_names", "VARCHAR[]"},
                          {"column_types", "VARCHAR[]"},
                          {"temporary", "BOOLEAN"}},
                         rows);
    }
    case Kind::kDescribe: {
      // SHOW SCHEMAS / SHOW NAMESPACES (Spark's words; DuckDB reads them as DESCRIBE of a table
      // so named): the lake's namespaces, unless a lake table of that name is meant.
      auto ident = Resolve(relation.name, default_schema);
      auto columns = ident.ok() ? ColumnsOf(catalog_, *ident) : Result<std::vector<ColumnFacts>>(ident.status());
      const bool lists_schemas = relation.name.size() == 1 &&
                                 (EqualsIgnoreAsciiCase(relation.name[0], "schemas") || EqualsIgnoreAsciiCase(relation.name[0], "namespaces"));
      if (lists_schemas && !columns.ok()) {
        SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> namespaces, ListNamespaces());
        for (const catalog::Namespace& ns : namespaces) rows.push_back({QuoteString(ns.ToString())});
        return LiteralRows({{"name", "VARCHAR"}}, rows);
      }
      if (!ident.ok()) return std::string();  // not a lake table: DuckDB describes it
      if (!columns.ok() && columns.status().code() == StatusCode::kNotFound) return std::string();
      if (!columns.ok()) return columns.status();
      for (const ColumnFacts& c : *columns) {
        rows.push_back({QuoteString(c.name), QuoteString(c.type), c.required ? "'NO'" : "'YES'",
                        c.key ? "'PRI'" : "NULL", "NULL", "NULL"});
      }
      return LiteralRows({{"column_name", "VARCHAR"},
                          {"column_type", "VARCHAR"},
                          {"null", "VARCHAR"},
                          {"key", "VARCHAR"},
                          {"default", "VARCHAR"},
                          {"extra", "VARCHAR"}},
                         rows);
    }
    case Kind::kTable:
      break;
  }
  // information_schema: DuckDB's own rows of every other catalog, the lake's from the catalog
  // (its views in DuckDB would list only the tables queried so far).
  if (info_table == "schemata") {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> namespaces, ListNamespaces());
    for (const catalog::Namespace& ns : namespaces) rows.push_back({catalog_literal, QuoteString(ns.ToString())});
    return "SELECT * FROM system.information_schema.schemata WHERE catalog_name <> " + catalog_literal +
           " UNION ALL BY NAME " + LiteralRows({{"catalog_name", "VARCHAR"}, {"schema_name", "VARCHAR"}}, rows);
  }
  SKADE_ASSIGN_OR_RETURN(auto tables, ListAllTables());
  std::string lake_rows;
  if (info_table == "tables") {
    for (const auto& t : tables) {
      rows.push_back({catalog_literal, QuoteString(t.ns.ToString()), QuoteString(t.name),
                      "'BASE TABLE'", "'YES'", "'NO'"});
    }
    SKADE_ASSIGN_OR_RETURN(auto views, ListAllViews());
    for (const auto& v : views) {
      rows.push_back({catalog_literal, QuoteString(v.ns.ToString()), QuoteString(v.name), "'VIEW'", "'NO'", "'NO'"});
    }
    lake_rows = LiteralRows({{"table_catalog", "VARCHAR"},
                             {"table_schema", "VARCHAR"},
                             {"table_name", "VARCHAR"},
                             {"table_type", "VARCHAR"},
                             {"is_insertable_into", "VARCHAR"},
                             {"is_typed", "VARCHAR"}},
                            rows);
  } else {
    for (const auto& t : tables) {
      auto columns = columns_of(t);
      if (!columns) continue;
      for (size_t i = 0; i < columns->size(); ++i) {
        const ColumnFacts& c = (*columns)[i];
        rows.push_back({catalog_literal, QuoteString(t.ns.ToString()), QuoteString(t.name),
                        QuoteString(c.name), std::to_string(i + 1), c.required ? "'NO'" : "'YES'",
                        QuoteString(c.type)});
      }
    }
    lake_rows = LiteralRows({{"table_catalog", "VARCHAR"},
                             {"table_schema", "VARCHAR"},
                             {"table_name", "VARCHAR"},
                             {"column_name", "VARCHAR"},
                             {"ordinal_position", "INTEGER"},
                             {"is_nullable", "VARCHAR"},
                             {"data_type", "VARCHAR"}},
                            rows);
  }
  return "SELECT * FROM system.information_schema." + info_table + " WHERE table_catalog <> " +
         catalog_literal + " UNION ALL BY NAME " + lake_rows;
}

bool LakeSql::HasView(const catalog::TableIdent& ident) {
  std::lock_guard<std::mutex> lock(mu_);
  return views_.count(ident) > 0;
}

Status LakeSql::CheckNamed(const std::vector<std::string>& name,
                           const std::string& default_schema) {
  if (name.empty()) return Status::Ok();
  // DuckDB reads a.b.t as catalog a, schema b: a nested namespace written without quotes.
  if (name.size() == 3 && !EqualsIgnoreAsciiCase(name[0], catalog_name_)) {
    catalog::TableIdent nested{catalog::Namespace{{name[0], name[1]}}, name[2]};
    auto exists = catalog_.NamespaceExists(nested.ns);
    if (exists.ok() && *exists) {
      return Status::InvalidArgument(JoinName(name) + " reads as catalog '" + name[0] +
                                     "', schema '" + name[1] + "'; the namespace " +
                                     nested.ns.ToString() + " is one schema, quoted: write " +
                                     SqlName(nested));
    }
    return Status::Ok();  // another catalog: DuckDB's to report
  }
  auto ident = Resolve(name, default_schema);
  if (ident.ok() && HasView(*ident)) return Status::Ok();
  // Names DuckDB resolves itself: its own views and tables (information_schema, pg_catalog,
  // duckdb_tables, …) and file paths read by its replacement scans ('data.parquet').
  const std::string& table = name.back();
  if (table.find_first_of("./\\:") != std::string::npos) return Status::Ok();
  std::string where = "lower(n) = lower(" + QuoteString(table) + ")";
  if (name.size() == 1) {
    // DuckDB's search path: the session's schema, then the main schemas and pg_catalog.
    where += " AND (lower(s) IN ('main', 'pg_catalog') OR s = " + QuoteString(default_schema) + ")";
  } else if (name.size() == 2) {
    const std::string schema = QuoteString(name[0]);
    where += " AND (lower(s) = lower(" + schema + ") OR (lower(d) = lower(" + schema +
             ") AND s = 'main'))";
  } else if (name.size() == 3) {
    where += " AND lower(d) = lower(" + QuoteString(name[0]) + ") AND lower(s) = lower(" +
             QuoteString(name[1]) + ")";
  }
  SKADE_ASSIGN_OR_RETURN(
      auto known,
      db_.QueryRows("SELECT count(*) FROM (SELECT database_name AS d, schema_name AS s, "
                    "view_name AS n FROM duckdb_views() UNION ALL SELECT database_name, "
                    "schema_name, table_name FROM duckdb_tables()) WHERE " +
                    where));
  if (!known.empty() && !known[0].empty() && known[0][0] && *known[0][0] != "0")
    return Status::Ok();
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> tables, ListAllTables());
  // A mistake in the statement, as DuckDB's own catalog errors are (INVALID_ARGUMENT over
  // Flight SQL), not a missing snapshot of a table that exists (NOT_FOUND).
  return Status::InvalidArgument(UnknownTableMessage(name, tables));
}

}  // namespace skade::sql
