// Iceberg views in SQL. CREATE [OR REPLACE] VIEW and DROP VIEW change the catalog's views (the
// query kept as DuckDB SQL, as written). A query naming a view of the catalog reads the view's query, taken from
// its current version's DuckDB or Spark SQL (what DuckDB's parser accepts), with every relation
// it names resolved against the version's default namespace — lake tables as pinned scans of
// their current snapshots, other views the same way, at most kMaxViewDepth deep — and its
// columns named by the view's schema.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/ascii.h"
#include "skade/base/clock.h"
#include "skade/engine/pushdown_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/user_sql.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {

namespace {

using Kind = engine::RelationReference::Kind;

// Views within views (a cycle among them included) stop here.
constexpr int kMaxViewDepth = 16;

// The dialects whose SQL DuckDB runs, preferred first.
constexpr const char* kReadableDialects[] = {"duckdb", "spark"};

}  // namespace

Result<std::optional<std::string>> LakeSql::ViewRelation(const catalog::TableIdent& ident, int depth) {
  if (!catalog_.SupportsViews()) return std::optional<std::string>();
  auto loaded = catalog_.LoadView(ident);
  if (!loaded.ok()) {
    if (loaded.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return loaded.status();
  }
  const std::string what = "view " + ident.ToString();
  if (depth >= kMaxViewDepth) {
    return Status::InvalidArgument(what + ": views nest deeper than " + std::to_string(kMaxViewDepth) +
                                   " (does a view read itself?)");
  }
  const iceberg::ViewMetadata& metadata = *loaded->metadata;
  const iceberg::ViewVersion* version = metadata.CurrentVersion();
  iceberg::SchemaPtr schema = metadata.CurrentSchema();
  if (version == nullptr || schema == nullptr) return Status::Corruption(what + ": no current version or schema");
  const iceberg::ViewRepresentation* sql = nullptr;
  for (const char* dialect : kReadableDialects) {
    if ((sql = version->Representation(dialect)) != nullptr) break;
  }
  if (sql == nullptr) {
    std::string dialects;
    for (const iceberg::ViewRepresentation& r : version->representations) {
      dialects += (dialects.empty() ? "" : ", ") + r.dialect;
    }
    return Status::InvalidArgument(what + " has no SQL skade can run (dialect duckdb or spark); it has " +
                                   (dialects.empty() ? std::string("none") : dialects));
  }
  // The view's SQL runs inside the statement that names it, unseen by the checks a server
  // makes on that statement: it must be one query, and (a view being anyone's to write through
  // the catalog) it may not read the server's configuration, on any front.
  // What DuckDB's parser cannot read is said so (Spark's four-part names, catalog.a.b.t).
  auto unreadable = [&](const Status& st) {
    if (st.message().find("Parser Error") == std::string::npos) {
      return st.WithContext(what + " (" + sql->dialect + " SQL)");
    }
    return Status::InvalidArgument(what + ": its " + sql->dialect +
                                   " SQL does not parse as DuckDB SQL (names of more than three parts, "
                                   "catalog.a.b.table, cannot be read; write the view with names relative to its "
                                   "namespace): " + st.message());
  };
  auto parsed_or = engine::ParseStatement(sql->sql);
  if (!parsed_or.ok()) return unreadable(parsed_or.status());
  const engine::Statement& parsed = *parsed_or;
  if (parsed.kind != engine::Statement::Kind::kQuery) {
    return Status::InvalidArgument(what + ": its " + sql->dialect + " SQL is a " + parsed.type_name +
                                   " statement, not a query");
  }
  if (!parsed.runs_sql_text.empty()) {
    return Status::PermissionDenied(what + ": its SQL calls " + parsed.runs_sql_text +
                                    ", which runs SQL given as a value, past every check");
  }
  if (!parsed.reads_configuration.empty()) {
    return Status::PermissionDenied(what + ": its SQL calls " + parsed.reads_configuration +
                                    ", which shows the server's configuration");
  }
  // Unqualified names in the view's SQL mean its default namespace (the view's own when the
  // version names none), whatever the session's schema is.
  catalog::Namespace home = version->default_namespace.empty() ? ident.ns : catalog::Namespace{version->default_namespace};
  std::optional<std::string> home_schema = SchemaName(home);
  if (!home_schema) return Status::InvalidArgument(what + ": its default namespace " + home.ToString() + " cannot be a schema");
  auto rewritten = engine::SubstituteRelations(sql->sql, [&](const engine::RelationReference& relation)
                                                             -> Result<std::optional<std::string>> {
    // A lake table is read as a pinned scan (its DuckDB view would be found by the session's
    // schema, not the view's); what names no table or view of the lake goes the way of every
    // query's relations (listings, AT, DuckDB's own, "does not exist").
    if (relation.kind == Kind::kTable && !relation.cte && !relation.at) {
      // catalog.schema.table naming the version's default catalog (Spark writes its own
      // catalog's name) means this lake.
      std::vector<std::string> parts = relation.name;
      if (parts.size() == 3 && version->default_catalog && EqualsIgnoreAsciiCase(parts[0], *version->default_catalog)) {
        parts.erase(parts.begin());
      }
      if (auto named = Resolve(parts, *home_schema); named.ok()) {
        auto table = LoadTable(*named);
        if (table.ok()) {
          SKADE_ASSIGN_OR_RETURN(std::string token, RegisterSnapshotScan(**table, iceberg::SnapshotSelector{}));
          db_.scans().Retire(token);
          return std::optional<std::string>(engine::PushdownScanSql(token));
        }
        if (table.status().code() != StatusCode::kNotFound) return table.status().WithContext("table " + named->ToString());
      }
    }
    return Substitute(relation, *home_schema, depth + 1);
  });
  if (!rewritten.ok()) return unreadable(rewritten.status());
  const std::string query = rewritten->value_or(sql->sql);
  // The view's columns are its schema's: the query must give as many, which take their names.
  SKADE_ASSIGN_OR_RETURN(std::vector<engine::ColumnType> columns,
                         db_.QueryColumns(query).WithContext(what + " (" + sql->dialect + " SQL)"));
  const auto& fields = schema->fields();
  if (columns.size() != fields.size()) {
    return Status::InvalidArgument(what + ": its SQL gives " + std::to_string(columns.size()) +
                                   " columns, its schema has " + std::to_string(fields.size()));
  }
  std::string names;
  for (const iceberg::NestedField& f : fields) names += (names.empty() ? "" : ", ") + engine::QuoteIdentifier(f.name);
  SKADE_ASSIGN_OR_RETURN(std::string scan, RowsRelation("SELECT * FROM (" + query + ") AS v(" + names + ")"));
  return std::optional<std::string>(std::move(scan));
}

Result<int64_t> LakeSql::ViewStatement(const engine::Statement& w, const Session& session) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, Resolve(w.target, session.schema));
  const std::string what = "view " + ident.ToString();
  if (!catalog_.SupportsViews()) return Status::NotImplemented("this catalog does not support views");
  if (w.kind == engine::Statement::Kind::kDropView) {
    Status dropped = catalog_.DropView(ident);
    if (dropped.code() == StatusCode::kNotFound && w.if_exists) return 0;
    SKADE_RETURN_IF_ERROR(dropped);
    return 0;
  }
  SKADE_ASSIGN_OR_RETURN(bool ns_exists, catalog_.NamespaceExists(ident.ns));
  if (!ns_exists) return Status::NotFound("schema '" + ident.ns.ToString() + "' does not exist");
  if (catalog_.LoadTable(ident).ok()) return Status::AlreadyExists("table " + ident.ToString() + " already exists");
  auto existing = catalog_.LoadView(ident);
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) return existing.status();
  if (existing.ok()) {
    if (w.if_not_exists) return 0;
    if (!w.or_replace) return Status::AlreadyExists(what + " already exists");
  }
  // The query must run now, as a query of the session (its relations exist, its types are
  // Iceberg's); its columns, renamed by the statement's column list, are the view's schema.
  const std::string& sql = w.query->sql();
  SKADE_ASSIGN_OR_RETURN(std::string resolved, ResolveQuery(sql, session.schema));
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> setup, SessionSetup(session, sql));
  std::unique_ptr<engine::Database> session_db = db_.WithConnectionSetup(std::move(setup));
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr schema,
                         engine::SchemaFromQuery(*session_db, "SELECT * FROM (" + resolved + "\n) LIMIT 0")
                             .WithContext(what));
  std::vector<iceberg::NestedField> fields = schema->fields();
  if (w.columns.size() > fields.size()) {
    return Status::InvalidArgument(what + ": " + std::to_string(w.columns.size()) + " column names for a query of " +
                                   std::to_string(fields.size()) + " columns");
  }
  for (size_t i = 0; i < w.columns.size(); ++i) fields[i].name = w.columns[i];
  schema = std::make_shared<const iceberg::Schema>(0, std::move(fields), std::vector<int>{});
  // Unqualified names in the query mean the session's schema (the view's own without one).
  iceberg::ViewVersion version;
  version.timestamp_ms = NowMicros() / 1000;
  version.summary = {{"engine-name", "skade"}, {"engine-version", SKADE_VERSION}};
  version.representations.push_back(iceberg::ViewRepresentation{sql, "duckdb"});
  version.default_catalog = catalog_name_;
  if (!session.schema.empty()) {
    SKADE_ASSIGN_OR_RETURN(catalog::Namespace home, NamespaceOf(session.schema));
    version.default_namespace = home.levels;
  } else {
    version.default_namespace = ident.ns.levels;
  }
  if (!existing.ok()) {
    catalog::CreateViewRequest request;
    request.schema = schema;
    request.version = std::move(version);
    SKADE_RETURN_IF_ERROR(catalog_.CreateView(ident, request).status().WithContext("create " + what));
    return 0;
  }
  // OR REPLACE: a new version of the same view (its history kept), as Spark replaces one.
  catalog::ViewCommit commit;
  commit.ident = ident;
  commit.requirements.push_back(iceberg::ViewRequirement{existing->metadata->view_uuid});
  iceberg::ViewUpdate add_schema;
  add_schema.kind = iceberg::ViewUpdate::Kind::kAddSchema;
  add_schema.schema = schema;
  iceberg::ViewUpdate add_version;
  add_version.kind = iceberg::ViewUpdate::Kind::kAddViewVersion;
  add_version.version = std::move(version);
  add_version.version.schema_id = -1;
  iceberg::ViewUpdate set_current;
  set_current.kind = iceberg::ViewUpdate::Kind::kSetCurrentViewVersion;
  set_current.version_id = -1;
  commit.updates = {std::move(add_schema), std::move(add_version), std::move(set_current)};
  SKADE_RETURN_IF_ERROR(catalog_.CommitView(commit).status());
  return 0;
}

}  // namespace skade::sql
