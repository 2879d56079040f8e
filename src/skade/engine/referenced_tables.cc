#include "skade/engine/referenced_tables_internal.h"

#include <exception>
#include <functional>
#include <utility>

#include "duckdb.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"

namespace skade::engine {

namespace {

// Walks the forms it knows; anything else (DESCRIBE and SHOW, PIVOT, a table function taking a
// query, a form of a later DuckDB) marks the walk incomplete, and the caller asks DuckDB. A
// table missed here would be read at its last sync: not knowing a form must never mean not
// looking inside it.
class TableWalk {
 public:
  std::vector<std::vector<std::string>> tables;
  bool complete = true;

  // (DuckDB's iterator walks the node's CTE bodies too.)
  void Node(duckdb::QueryNode& node) {
    duckdb::ParsedExpressionIterator::EnumerateQueryNodeChildren(
        node,
        [this](duckdb::unique_ptr<duckdb::ParsedExpression>& child) {
          if (child) Expression(*child);
        },
        [this](duckdb::TableRef& ref) {
          switch (ref.type) {
            case duckdb::TableReferenceType::BASE_TABLE:
              break;
            case duckdb::TableReferenceType::SUBQUERY:
            case duckdb::TableReferenceType::JOIN:
            case duckdb::TableReferenceType::EXPRESSION_LIST:
            case duckdb::TableReferenceType::EMPTY_FROM:
              return;  // (their children are walked)
            case duckdb::TableReferenceType::TABLE_FUNCTION:
              if (ref.Cast<duckdb::TableFunctionRef>().subquery) complete = false;
              return;
            default:
              complete = false;
              return;
          }
          const auto& table = ref.Cast<duckdb::BaseTableRef>();
          std::vector<std::string> parts;
          for (const std::string* part : {&table.catalog_name, &table.schema_name, &table.table_name}) {
            if (!part->empty()) parts.push_back(*part);
          }
          if (!parts.empty()) tables.push_back(std::move(parts));
        });
  }

  void Expression(duckdb::ParsedExpression& expr) {
    if (expr.GetExpressionClass() == duckdb::ExpressionClass::SUBQUERY) {
      auto& subquery = expr.Cast<duckdb::SubqueryExpression>();
      if (subquery.subquery && subquery.subquery->node) Node(*subquery.subquery->node);
    }
    duckdb::ParsedExpressionIterator::EnumerateChildren(
        expr, [this](duckdb::ParsedExpression& child) { Expression(child); });
  }
};

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
    TableWalk walk;
    walk.Node(*select.node);
    if (!walk.complete) return std::nullopt;
    return std::move(walk.tables);
  } catch (const std::exception&) {
    return std::nullopt;  // a form the walk does not know: the binder answers
  }
}

}  // namespace skade::engine
