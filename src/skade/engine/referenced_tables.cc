#include "skade/engine/referenced_tables_internal.h"

#include <exception>
#include <utility>

#include "duckdb.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"
#include "skade/engine/parse_walk_internal.h"

namespace skade::engine {

namespace {

// The relations the walk knows; anything else (DESCRIBE and SHOW, PIVOT, a table function
// taking a query, a form of a later DuckDB) stops the walk, and the caller asks DuckDB. A table
// missed here would be read at its last sync: not knowing a form must never mean not looking
// inside it. (The walk covers CTE bodies and subqueries anywhere.)
Status CollectBaseTable(duckdb::TableRef& ref, std::vector<std::vector<std::string>>& tables) {
  switch (ref.type) {
    case duckdb::TableReferenceType::BASE_TABLE:
      break;
    case duckdb::TableReferenceType::SUBQUERY:
    case duckdb::TableReferenceType::JOIN:
    case duckdb::TableReferenceType::EXPRESSION_LIST:
    case duckdb::TableReferenceType::EMPTY_FROM:
      return Status::Ok();  // (their children are walked)
    case duckdb::TableReferenceType::TABLE_FUNCTION:
      if (ref.Cast<duckdb::TableFunctionRef>().subquery) return Status::NotImplemented("a table function of a query");
      return Status::Ok();
    default:
      return Status::NotImplemented("a relation the walk does not know");
  }
  const auto& table = ref.Cast<duckdb::BaseTableRef>();
  std::vector<std::string> parts;
  for (const std::string* part : {&table.catalog_name, &table.schema_name, &table.table_name}) {
    if (!part->empty()) parts.push_back(*part);
  }
  if (!parts.empty()) tables.push_back(std::move(parts));
  return Status::Ok();
}

}  // namespace

std::optional<std::vector<std::vector<std::string>>> SelectBaseTables(const std::string& sql) {
  try {
    duckdb::Parser parser;
    parser.ParseQuery(sql);
    if (parser.statements.size() != 1 || parser.statements[0]->type != duckdb::StatementType::SELECT_STATEMENT) {
      return std::nullopt;
    }
    auto& select = parser.statements[0]->Cast<duckdb::SelectStatement>();
    if (!select.node) return std::nullopt;
    std::vector<std::vector<std::string>> tables;
    Status walked = WalkQueryNode(
        *select.node, {.relation = [&tables](duckdb::TableRef& ref) { return CollectBaseTable(ref, tables); }});
    if (!walked.ok()) return std::nullopt;
    return tables;
  } catch (const std::exception&) {
    return std::nullopt;  // a form the walk does not know: the binder answers
  }
}

}  // namespace skade::engine
