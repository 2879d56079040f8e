// The table-location index of SqlCatalog (sql_catalog_internal.h).
#include <set>

#include "skade/base/log.h"
#include "skade/catalog/sql_catalog_internal.h"

namespace skade::catalog::internal {

const std::string_view kCreateTableLocationsSql =
    "CREATE TABLE IF NOT EXISTS skade_table_locations ("
    "catalog_name VARCHAR(255) NOT NULL, "
    "table_namespace VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, "
    "location VARCHAR(1000) NOT NULL, "
    "PRIMARY KEY (catalog_name, table_namespace, table_name))";

Result<std::vector<TableLocation>> SelectTableLocations(
    SqlConnection& conn, const std::string& catalog,
    const std::function<Result<std::string>(const std::string& metadata_location)>& location_of, Backfill backfill) {
  // Rows of dropped or renamed tables that another program left in the index match no table
  // and are ignored.
  SKADE_ASSIGN_OR_RETURN(
      SqlResult rows,
      conn.Exec("SELECT t.table_namespace, t.table_name, t.metadata_location, l.location FROM iceberg_tables t "
                "LEFT JOIN skade_table_locations l ON l.catalog_name = t.catalog_name AND "
                "l.table_namespace = t.table_namespace AND l.table_name = t.table_name "
                "WHERE t.catalog_name = ? AND (t.iceberg_type = 'TABLE' OR t.iceberg_type IS NULL)",
                {SqlParam(catalog)}));
  std::vector<TableLocation> out;
  for (const SqlRow& row : rows.rows) {
    if (!row[0] || !row[1]) continue;
    Result<Namespace> ns = Namespace::Parse(*row[0]);
    if (!ns.ok() || ns->empty()) continue;
    TableLocation t{TableIdent{std::move(ns).value(), *row[1]}, row[3].value_or("")};
    if (!row[3]) {
      Result<std::string> location = row[2] ? location_of(*row[2]) : Status::Corruption("no metadata location");
      if (!location.ok()) {
        SKADE_LOG_WARN("catalog {}: cannot tell where table {} lives: {}", catalog, t.ident.ToString(),
                       location.status().ToString());
      } else {
        t.location = *location;
        if (backfill == Backfill::kYes) SKADE_RETURN_IF_ERROR(PutTableLocation(conn, catalog, t.ident, t.location));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

Status PutTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& ident,
                        const std::string& location) {
  return conn
      .Exec("INSERT INTO skade_table_locations (catalog_name, table_namespace, table_name, location) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (catalog_name, table_namespace, table_name) "
            "DO UPDATE SET location = excluded.location",
            {SqlParam(catalog), SqlParam(ident.ns.ToString()), SqlParam(ident.name), SqlParam(location)})
      .status();
}

Status DeleteTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& ident) {
  return conn
      .Exec("DELETE FROM skade_table_locations WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
            {SqlParam(catalog), SqlParam(ident.ns.ToString()), SqlParam(ident.name)})
      .status();
}

Status RenameTableLocation(SqlConnection& conn, const std::string& catalog, const TableIdent& from,
                           const TableIdent& to) {
  SKADE_RETURN_IF_ERROR(DeleteTableLocation(conn, catalog, to));  // a stale row of a dropped table
  return conn
      .Exec("UPDATE skade_table_locations SET table_namespace = ?, table_name = ? "
            "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
            {SqlParam(to.ns.ToString()), SqlParam(to.name), SqlParam(catalog), SqlParam(from.ns.ToString()),
             SqlParam(from.name)})
      .status();
}

Result<std::vector<Namespace>> SelectAllNamespaces(SqlConnection& conn, const std::string& catalog) {
  SKADE_ASSIGN_OR_RETURN(SqlResult rows,
                         conn.Exec("SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? "
                                   "UNION SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?",
                                   {SqlParam(catalog), SqlParam(catalog)}));
  std::set<Namespace> out;
  for (const SqlRow& row : rows.rows) {
    if (!row[0]) continue;
    Result<Namespace> ns = Namespace::Parse(*row[0]);
    if (ns.ok() && !ns->empty()) out.insert(std::move(ns).value());
  }
  return std::vector<Namespace>(out.begin(), out.end());
}

}  // namespace skade::catalog::internal
