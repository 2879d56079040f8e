// DuckDB's C++ parser (allowed in engine/, DESIGN §3: the C API has no parse tree). Every
// check here runs on the tree, and every string handed back is rendered from a tree that was
// re-parsed and compared with the original, so the rendering means exactly what was checked.
#include "skade/engine/user_sql.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "duckdb.hpp"
#include "duckdb/parser/constraints/not_null_constraint.hpp"
#include "duckdb/parser/constraints/unique_constraint.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/columnref_expression.hpp"
#include "duckdb/parser/expression/comparison_expression.hpp"
#include "duckdb/parser/expression/conjunction_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/star_expression.hpp"
#include "duckdb/parser/expression/parameter_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_data/create_schema_info.hpp"
#include "duckdb/parser/parsed_data/create_table_info.hpp"
#include "duckdb/parser/parsed_data/create_view_info.hpp"
#include "duckdb/parser/parsed_data/drop_info.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/qualified_name.hpp"
#include "duckdb/parser/simplified_token.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/statement/copy_statement.hpp"
#include "duckdb/parser/statement/create_statement.hpp"
#include "duckdb/parser/statement/set_statement.hpp"
#include "duckdb/parser/statement/delete_statement.hpp"
#include "duckdb/parser/statement/drop_statement.hpp"
#include "duckdb/parser/statement/explain_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/merge_into_statement.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/statement/update_statement.hpp"
#include "duckdb/parser/query_node/cte_node.hpp"
#include "duckdb/parser/query_node/recursive_cte_node.hpp"
#include "duckdb/parser/tableref/at_clause.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "duckdb/parser/tableref/pivotref.hpp"
#include "duckdb/parser/tableref/showref.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"
#include "duckdb/parser/tableref/expressionlistref.hpp"
#include "duckdb/parser/tableref/joinref.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "skade/engine/database.h"
#include "skade/engine/parse_walk_internal.h"

namespace skade::engine {

struct UserSqlAccess {
  static Predicate MakePredicate(std::string sql) { return Predicate(std::move(sql)); }
  static Query MakeQuery(std::string sql) { return Query(std::move(sql)); }
};

namespace {

using duckdb::ExpressionClass;
using duckdb::ParsedExpression;
using duckdb::ParsedExpressionIterator;
using duckdb::QueryNode;
using duckdb::SQLStatement;
using duckdb::StatementType;
using ExprPtr = duckdb::unique_ptr<ParsedExpression>;

Result<duckdb::vector<duckdb::unique_ptr<SQLStatement>>> ParseAll(const std::string& sql, std::string_view what) {
  // DuckDB's parser reads a C string: it would see only the text before a NUL, and what runs
  // would not be what was sent (DESIGN §11: text with an embedded NUL is refused everywhere).
  if (sql.find('\0') != std::string::npos) {
    return Status::InvalidArgument(std::string(what) + ": the text contains a NUL byte");
  }
  try {
    duckdb::Parser parser;
    parser.ParseQuery(sql);
    return std::move(parser.statements);
  } catch (const std::exception& e) {
    return ParseError(e, what);
  }
}

bool Blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

// Every expression of a statement that may carry parameter markers.
Status WalkStatement(SQLStatement& stmt, const ParseVisitor& fn) {
  switch (stmt.type) {
    case StatementType::SELECT_STATEMENT:
      return WalkQueryNode(*stmt.Cast<duckdb::SelectStatement>().node, fn);
    case StatementType::INSERT_STATEMENT: {
      auto& ins = stmt.Cast<duckdb::InsertStatement>();
      if (ins.select_statement) return WalkQueryNode(*ins.select_statement->node, fn);
      return Status::Ok();
    }
    case StatementType::DELETE_STATEMENT:
      return WalkExpression(stmt.Cast<duckdb::DeleteStatement>().condition, fn);
    case StatementType::UPDATE_STATEMENT: {
      auto& upd = stmt.Cast<duckdb::UpdateStatement>();
      if (upd.from_table) SKADE_RETURN_IF_ERROR(WalkTableRef(*upd.from_table, fn));
      if (!upd.set_info) return Status::Ok();
      for (auto& value : upd.set_info->expressions) SKADE_RETURN_IF_ERROR(WalkExpression(value, fn));
      return WalkExpression(upd.set_info->condition, fn);
    }
    case StatementType::MERGE_INTO_STATEMENT: {
      auto& merge = stmt.Cast<duckdb::MergeIntoStatement>();
      if (merge.source) SKADE_RETURN_IF_ERROR(WalkTableRef(*merge.source, fn));
      SKADE_RETURN_IF_ERROR(WalkExpression(merge.join_condition, fn));
      for (auto& [when, actions] : merge.actions) {
        for (auto& action : actions) {
          SKADE_RETURN_IF_ERROR(WalkExpression(action->condition, fn));
          if (action->update_info) {
            for (auto& value : action->update_info->expressions) SKADE_RETURN_IF_ERROR(WalkExpression(value, fn));
            SKADE_RETURN_IF_ERROR(WalkExpression(action->update_info->condition, fn));
          }
          for (auto& value : action->expressions) SKADE_RETURN_IF_ERROR(WalkExpression(value, fn));
        }
      }
      return Status::Ok();
    }
    case StatementType::CREATE_STATEMENT: {
      auto& info = *stmt.Cast<duckdb::CreateStatement>().info;
      if (info.type == duckdb::CatalogType::TABLE_ENTRY) {
        auto& table = info.Cast<duckdb::CreateTableInfo>();
        if (table.query) return WalkQueryNode(*table.query->node, fn);
      }
      if (info.type == duckdb::CatalogType::VIEW_ENTRY) {
        auto& view = info.Cast<duckdb::CreateViewInfo>();
        if (view.query) return WalkQueryNode(*view.query->node, fn);
      }
      return Status::Ok();
    }
    case StatementType::EXPLAIN_STATEMENT: {
      auto& inner = stmt.Cast<duckdb::ExplainStatement>().stmt;
      return inner ? WalkStatement(*inner, fn) : Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

// Whether `name` is one of `names`, case aside (DuckDB's function names are).
bool NamedAmong(std::string name, std::span<const char* const> names) {
  name = duckdb::StringUtil::Lower(name);
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

// Functions whose results describe the server rather than the data: settings (whose values
// name folders, e.g. allowed_directories), secrets, files, attached databases, extensions.
bool ReadsConfiguration(const std::string& name) {
  static const char* const kNames[] = {
      "duckdb_settings",  "current_setting",      "duckdb_secrets",         "which_secret",
      "duckdb_databases", "pragma_database_list", "duckdb_extensions",      "duckdb_temporary_files",
      "duckdb_logs",      "duckdb_log_contexts",  "duckdb_external_file_cache", "duckdb_variables",
      "getvariable",      "getenv",               "pragma_database_size"};
  return NamedAmong(name, kNames);
}

// Functions that run SQL handed to them as a value (a string, a name, a serialized statement):
// what they run is never parsed here, so none of the checks on the statement reach it.
bool RunsSqlText(const std::string& name) {
  static const char* const kNames[] = {"query", "query_table", "json_execute_serialized_sql"};
  return NamedAmong(name, kNames);
}

// A constant whose SQL rendering parses back to another type (a DOUBLE 1e9 renders as
// "1000000000.0", which parses as a DECIMAL) becomes CAST('<value>' AS <type>), which parses
// back to itself and means the same value. Applied before anything is rendered.
Status MakeConstantsRenderable(ExprPtr& e) {
  return WalkExpression(e, {.expression = [](ExprPtr& node) -> Status {
    if (node->GetExpressionClass() != ExpressionClass::CONSTANT) return Status::Ok();
    const duckdb::Value& value = node->Cast<duckdb::ConstantExpression>().value;
    if (value.IsNull()) return Status::Ok();
    try {
      auto again = duckdb::Parser::ParseExpressionList(node->ToString());
      if (again.size() == 1 && again[0]->Equals(*node)) return Status::Ok();
      auto text = duckdb::make_uniq<duckdb::ConstantExpression>(duckdb::Value(value.ToString()));
      node = duckdb::make_uniq<duckdb::CastExpression>(value.type(), std::move(text));
    } catch (const std::exception& ex) {
      return ParseError(ex, "constant " + node->ToString());
    }
    return Status::Ok();
  }});
}

Status MakeConstantsRenderable(QueryNode& node) {
  return WalkQueryNode(node, {.expression = [](ExprPtr& e) -> Status {
    return e->GetExpressionClass() == ExpressionClass::CONSTANT ? MakeConstantsRenderable(e) : Status::Ok();
  }});
}

bool IsConstant(const ParsedExpression& e) {
  if (e.GetExpressionClass() == ExpressionClass::CONSTANT) return true;
  if (e.GetExpressionClass() == ExpressionClass::CAST) return IsConstant(*e.Cast<duckdb::CastExpression>().child);
  return false;
}

// The rendering of one expression, checked to re-parse to the same tree.
Result<std::string> RenderExpression(const ParsedExpression& e) {
  std::string rendered = e.ToString();
  try {
    auto again = duckdb::Parser::ParseExpressionList(rendered);
    if (again.size() != 1 || !again[0]->Equals(e)) {
      return Status::InvalidArgument("the expression '" + rendered + "' cannot be rendered faithfully");
    }
  } catch (const std::exception& ex) {
    return ParseError(ex, "the expression '" + rendered + "' cannot be rendered faithfully");
  }
  return rendered;
}

// The WHERE clause of "SELECT 1 WHERE <text>", when that is all the statement holds.
Result<ExprPtr> WhereOfMock(const std::string& text, std::string_view what) {
  SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll("SELECT 1 WHERE " + text, what));
  if (statements.size() != 1) {
    return Status::InvalidArgument(std::string(what) + ": expected one boolean expression, found " +
                                   (statements.empty() ? std::string("nothing") : "more than one statement"));
  }
  SQLStatement& stmt = *statements[0];
  auto fail = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(what) + ": expected one boolean expression, " + why);
  };
  if (stmt.type != StatementType::SELECT_STATEMENT) return fail("not a statement");
  QueryNode& node = *stmt.Cast<duckdb::SelectStatement>().node;
  if (node.type != duckdb::QueryNodeType::SELECT_NODE) return fail("not a set operation (UNION, EXCEPT…)");
  auto& select = node.Cast<duckdb::SelectNode>();
  if (!node.modifiers.empty()) return fail("not ORDER BY, LIMIT or OFFSET");
  if (!node.cte_map.map.empty()) return fail("not WITH");
  if (!select.groups.group_expressions.empty() || !select.groups.grouping_sets.empty()) return fail("not GROUP BY");
  if (select.having) return fail("not HAVING");
  if (select.qualify) return fail("not QUALIFY");
  if (select.sample) return fail("not USING SAMPLE");
  if (select.from_table && select.from_table->type != duckdb::TableReferenceType::EMPTY_FROM) return fail("not FROM");
  if (select.select_list.size() != 1 || !select.where_clause) return fail("got something else");
  return std::move(select.where_clause);
}

// Renders a checked condition as a Predicate (it must re-parse to the same tree).
Result<Predicate> PredicateOf(ExprPtr& condition, std::string_view what) {
  SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(condition));
  std::string rendered = "(" + condition->ToString() + ")";
  SKADE_ASSIGN_OR_RETURN(ExprPtr again, WhereOfMock(rendered, what));
  if (!again->Equals(*condition)) {
    return Status::InvalidArgument(std::string(what) + ": the predicate cannot be rendered faithfully");
  }
  return UserSqlAccess::MakePredicate(std::move(rendered));
}

// Whether parameter markers may remain in a tree: only while a statement is classified for a
// prepared statement, before its values are known (its renderings are then dropped).
enum class Markers { kRefuse, kAllow };

Status CheckPredicateTree(ExprPtr& where, Predicate::Subqueries subqueries, std::string_view what,
                          Markers markers = Markers::kRefuse) {
  return WalkExpression(where, {.expression = [&](ExprPtr& e) -> Status {
    switch (e->GetExpressionClass()) {
      case ExpressionClass::PARAMETER:
        if (markers == Markers::kAllow) return Status::Ok();
        return Status::InvalidArgument(std::string(what) + ": parameter markers ('?', '$1') are not allowed");
      case ExpressionClass::SUBQUERY:
        if (subqueries == Predicate::Subqueries::kRefuse) {
          return Status::InvalidArgument(std::string(what) + ": subqueries are not allowed (a filter is one " +
                                         "boolean expression over the table's columns)");
        }
        return Status::Ok();
      case ExpressionClass::DEFAULT:
        return Status::InvalidArgument(std::string(what) + ": DEFAULT is not a value");
      default:
        return Status::Ok();
    }
  }});
}

void CollapseValuesWrappers(QueryNode& node);

// A VALUES list in FROM renders as "(VALUES …) AS valueslist", which parses back as a
// subquery "SELECT * FROM" that list: the same relation one level deeper. This folds such
// wrappers away so a re-parsed rendering compares equal to the tree it came from.
void CollapseValuesWrappers(duckdb::unique_ptr<duckdb::TableRef>& ref) {
  if (!ref) return;
  switch (ref->type) {
    case duckdb::TableReferenceType::SUBQUERY: {
      auto& sub = ref->Cast<duckdb::SubqueryRef>();
      if (!sub.subquery || !sub.subquery->node) return;
      CollapseValuesWrappers(*sub.subquery->node);
      QueryNode& inner = *sub.subquery->node;
      if (sub.alias != "valueslist" || !sub.column_name_alias.empty() ||
          inner.type != duckdb::QueryNodeType::SELECT_NODE || !inner.modifiers.empty() ||
          !inner.cte_map.map.empty()) {
        return;
      }
      auto& sel = inner.Cast<duckdb::SelectNode>();
      if (sel.from_table && sel.from_table->type == duckdb::TableReferenceType::EXPRESSION_LIST &&
          sel.select_list.size() == 1 && sel.select_list[0]->GetExpressionClass() == ExpressionClass::STAR &&
          !sel.where_clause && !sel.having && !sel.qualify && !sel.sample && sel.groups.group_expressions.empty()) {
        auto values = std::move(sel.from_table);
        ref = std::move(values);
      }
      return;
    }
    case duckdb::TableReferenceType::JOIN: {
      auto& join = ref->Cast<duckdb::JoinRef>();
      CollapseValuesWrappers(join.left);
      CollapseValuesWrappers(join.right);
      return;
    }
    default:
      return;
  }
}

void CollapseValuesWrappers(QueryNode& node) {
  switch (node.type) {
    case duckdb::QueryNodeType::SELECT_NODE:
      CollapseValuesWrappers(node.Cast<duckdb::SelectNode>().from_table);
      break;
    case duckdb::QueryNodeType::SET_OPERATION_NODE: {
      auto& setop = node.Cast<duckdb::SetOperationNode>();
      if (setop.left) CollapseValuesWrappers(*setop.left);
      if (setop.right) CollapseValuesWrappers(*setop.right);
      break;
    }
    default:
      break;
  }
  for (auto& kv : node.cte_map.map) {
    if (kv.second && kv.second->query && kv.second->query->node) CollapseValuesWrappers(*kv.second->query->node);
  }
  // Subqueries inside expressions.
  (void)WalkQueryNode(node, {.expression = [](ExprPtr& e) -> Status {
    if (e->GetExpressionClass() == ExpressionClass::SUBQUERY) {
      auto& sub = e->Cast<duckdb::SubqueryExpression>();
      if (sub.subquery && sub.subquery->node) CollapseValuesWrappers(*sub.subquery->node);
    }
    return Status::Ok();
  }});
}

// The rendering of a SELECT statement, checked to re-parse to an equal statement (up to the
// VALUES wrappers above).
Result<Query> QueryOf(duckdb::SelectStatement& select, std::string_view what) {
  SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(*select.node));
  CollapseValuesWrappers(*select.node);
  auto faithful = [&](const std::string& rendered) -> Result<bool> {
    SKADE_ASSIGN_OR_RETURN(auto again, ParseAll(rendered, what));
    if (again.size() != 1 || again[0]->type != StatementType::SELECT_STATEMENT) return false;
    auto& reparsed = again[0]->Cast<duckdb::SelectStatement>();
    CollapseValuesWrappers(*reparsed.node);
    return reparsed.Equals(select);
  };
  std::string rendered = select.ToString();
  while (!rendered.empty() && (rendered.back() == ';' || std::isspace(static_cast<unsigned char>(rendered.back())))) {
    rendered.pop_back();
  }
  SKADE_ASSIGN_OR_RETURN(bool same, faithful(rendered));
  if (!same) return Status::InvalidArgument(std::string(what) + ": the query cannot be rendered faithfully");
  return UserSqlAccess::MakeQuery(std::move(rendered));
}

// The rendering of relations as the list of a FROM clause ("s AS x", "a JOIN b ON (…)"): that of
// `SELECT * FROM <ref>`, checked by QueryOf to re-parse to the same query, without its head.
Result<std::string> RenderRelations(duckdb::TableRef& ref, std::string_view what) {
  auto select = duckdb::make_uniq<duckdb::SelectStatement>();
  auto node = duckdb::make_uniq<duckdb::SelectNode>();
  node->select_list.push_back(duckdb::make_uniq<duckdb::StarExpression>());
  node->from_table = ref.Copy();
  select->node = std::move(node);
  SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(*select, what));
  static constexpr std::string_view kHead = "SELECT * FROM ";
  if (q.sql().compare(0, kHead.size(), kHead) != 0 || q.sql().size() == kHead.size()) {
    return Status::InvalidArgument(std::string(what) + ": the relation cannot be rendered faithfully");
  }
  return q.sql().substr(kHead.size());
}

// Whether a type (or a type nested in it) is a name DuckDB did not resolve while parsing.
bool HasUnknownType(const duckdb::LogicalType& type) {
  using Id = duckdb::LogicalTypeId;
  switch (type.id()) {
    case Id::USER:
      return true;
    case Id::STRUCT:
      for (const auto& child : duckdb::StructType::GetChildTypes(type)) {
        if (HasUnknownType(child.second)) return true;
      }
      return false;
    case Id::LIST:
      return HasUnknownType(duckdb::ListType::GetChildType(type));
    case Id::ARRAY:
      return HasUnknownType(duckdb::ArrayType::GetChildType(type));
    case Id::MAP:
      return HasUnknownType(duckdb::MapType::KeyType(type)) || HasUnknownType(duckdb::MapType::ValueType(type));
    default:
      return false;
  }
}

Result<TableDefinition> DefinitionOf(const duckdb::CreateTableInfo& info) {
  TableDefinition out;
  std::map<std::string, size_t> by_name;
  for (const auto& column : info.columns.Logical()) {
    const std::string& name = column.Name();
    auto refuse = [&](const std::string& why) {
      return Status::InvalidArgument("column '" + name + "': " + why);
    };
    if (column.Category() == duckdb::TableColumnType::GENERATED) return refuse("generated columns are not supported");
    if (column.HasDefaultValue()) {
      return refuse("DEFAULT values are not supported (Iceberg v2 columns have no defaults)");
    }
    if (HasUnknownType(column.Type())) return refuse("unknown type '" + column.Type().ToString() + "'");
    if (column.Type().id() == duckdb::LogicalTypeId::VARCHAR && !duckdb::StringType::GetCollation(column.Type()).empty()) {
      return refuse("COLLATE is not supported");
    }
    by_name[name] = out.columns.size();
    out.columns.push_back(ColumnDefinition{name, column.Type().ToString(), false});
  }
  if (out.columns.empty()) return Status::InvalidArgument("a table needs at least one column");
  for (const auto& constraint : info.constraints) {
    switch (constraint->type) {
      case duckdb::ConstraintType::NOT_NULL: {
        auto index = constraint->Cast<duckdb::NotNullConstraint>().index.index;
        if (index >= out.columns.size()) return Status::InvalidArgument("NOT NULL on an unknown column");
        out.columns[index].not_null = true;
        break;
      }
      case duckdb::ConstraintType::UNIQUE: {
        const auto& unique = constraint->Cast<duckdb::UniqueConstraint>();
        if (!unique.IsPrimaryKey()) {
          return Status::InvalidArgument("UNIQUE constraints are not supported (Iceberg has none)");
        }
        if (!out.primary_key.empty()) return Status::InvalidArgument("more than one PRIMARY KEY");
        std::vector<std::string> names;
        if (unique.HasIndex()) {
          auto index = unique.GetIndex().index;
          if (index >= out.columns.size()) return Status::InvalidArgument("PRIMARY KEY on an unknown column");
          names.push_back(out.columns[index].name);
        } else {
          for (const auto& n : unique.GetColumnNames()) names.push_back(n);
        }
        for (const std::string& n : names) {
          auto it = by_name.find(n);
          if (it == by_name.end()) return Status::InvalidArgument("PRIMARY KEY names unknown column '" + n + "'");
          out.columns[it->second].not_null = true;  // key columns are required
          out.primary_key.push_back(n);
        }
        break;
      }
      default:
        return Status::InvalidArgument(constraint->ToString() + ": only NOT NULL and PRIMARY KEY constraints are supported");
    }
  }
  return out;
}

// The name parts as written ([catalog,] [schema,] name), leaving out the empty ones.
std::vector<std::string> NameParts(const std::string& catalog, const std::string& schema, const std::string& name) {
  std::vector<std::string> out;
  if (!catalog.empty()) out.push_back(catalog);
  if (!schema.empty()) out.push_back(schema);
  out.push_back(name);
  return out;
}

// A DELETE/UPDATE target: a plain table, maybe with an alias.
Result<const duckdb::BaseTableRef*> TargetTable(const duckdb::TableRef* ref, std::string_view statement) {
  if (ref == nullptr || ref->type != duckdb::TableReferenceType::BASE_TABLE) {
    return Status::InvalidArgument(std::string(statement) + " needs a table name as its target");
  }
  return &ref->Cast<duckdb::BaseTableRef>();
}

bool SameName(const std::string& a, const std::string& b) { return duckdb::StringUtil::CIEquals(a, b); }

// Column references qualified by the target's name or alias ("t.id") become plain column
// references: the condition runs against a rendering of the table that has no such name.
// Subqueries keep theirs (their own tables may be named the same).
void StripTargetQualifier(ExprPtr& e, const duckdb::BaseTableRef& target) {
  if (!e) return;
  if (e->GetExpressionClass() == ExpressionClass::SUBQUERY) return;
  if (e->GetExpressionClass() == ExpressionClass::COLUMN_REF) {
    auto& ref = e->Cast<duckdb::ColumnRefExpression>();
    const auto& names = ref.column_names;
    const std::string& qualifier = target.alias.empty() ? target.table_name : target.alias;
    if (names.size() == 2 && SameName(names[0], qualifier)) {
      ref.column_names = {names[1]};
    }
    return;
  }
  ParsedExpressionIterator::EnumerateChildren(*e, [&](ExprPtr& child) { StripTargetQualifier(child, target); });
}

// Parses each literal (a constant, maybe cast) and puts it in place of its marker.
Status BindLiterals(SQLStatement& stmt, std::span<const std::string> parameters) {
  std::vector<ExprPtr> literals;
  for (size_t i = 0; i < parameters.size(); ++i) {
    try {
      auto parsed = duckdb::Parser::ParseExpressionList(parameters[i]);
      if (parsed.size() != 1 || !IsConstant(*parsed[0])) {
        return Status::InvalidArgument("parameter " + std::to_string(i + 1) + " is not a literal");
      }
      literals.push_back(std::move(parsed[0]));
    } catch (const std::exception& e) {
      return ParseError(e, "parameter " + std::to_string(i + 1));
    }
  }
  return WalkStatement(stmt, {.expression = [&](ExprPtr& e) -> Status {
    if (e->GetExpressionClass() != ExpressionClass::PARAMETER) return Status::Ok();
    const std::string& id = e->Cast<duckdb::ParameterExpression>().identifier;
    auto it = stmt.named_param_map.find(id);
    if (it == stmt.named_param_map.end() || it->second < 1 || it->second > literals.size()) {
      return Status::InvalidArgument("parameter '" + id + "' has no value");
    }
    e = literals[it->second - 1]->Copy();
    return Status::Ok();
  }});
}

Status NotImplemented(std::string_view statement, std::string_view clause) {
  return Status::NotImplemented(std::string(statement) + " with " + std::string(clause) + " is not supported");
}

// The table and pass-through columns of a query over one table (Statement::source_table).
void FillPassthrough(const duckdb::SelectStatement& select, Statement& out) {
  if (!select.node || select.node->type != duckdb::QueryNodeType::SELECT_NODE) return;
  const auto& node = select.node->Cast<duckdb::SelectNode>();
  if (!node.cte_map.map.empty() || node.groups.grouping_sets.size() > 1) return;
  if (!node.from_table || node.from_table->type != duckdb::TableReferenceType::BASE_TABLE) return;
  const auto& table = node.from_table->Cast<duckdb::BaseTableRef>();
  if (table.at_clause) return;  // a past snapshot, whose schema may not be the current one
  const std::string& alias = table.alias.empty() ? table.table_name : table.alias;
  std::vector<std::string> columns;
  for (const auto& e : node.select_list) {
    if (e->GetExpressionClass() == ExpressionClass::STAR) {
      const auto& star = e->Cast<duckdb::StarExpression>();
      // EXCLUDE, REPLACE, RENAME and COLUMNS(…) change which columns come out: not traced.
      if (!star.exclude_list.empty() || !star.replace_list.empty() || !star.rename_list.empty() || star.expr ||
          star.columns) {
        return;
      }
      if (!star.relation_name.empty() && !SameName(star.relation_name, alias)) return;
      columns.push_back("*");
    } else if (e->GetExpressionClass() == ExpressionClass::COLUMN_REF) {
      const auto& names = e->Cast<duckdb::ColumnRefExpression>().column_names;
      // "c" or "t.c"; anything longer is a struct field or another catalog's name.
      if (names.size() == 1) {
        columns.push_back(names[0]);
      } else if (names.size() == 2 && SameName(names[0], alias)) {
        columns.push_back(names[1]);
      } else {
        columns.push_back("");
      }
    } else {
      columns.push_back("");
    }
  }
  out.source_table = NameParts(table.catalog_name, table.schema_name, table.table_name);
  out.passthrough_columns = std::move(columns);
}

Status FillInsert(duckdb::InsertStatement& ins, Statement& out) {
  if (!ins.returning_list.empty()) return NotImplemented("INSERT", "RETURNING");
  if (ins.on_conflict_info) return NotImplemented("INSERT", "ON CONFLICT");
  if (ins.default_values) return NotImplemented("INSERT", "DEFAULT VALUES");
  if (ins.column_order == duckdb::InsertColumnOrder::INSERT_BY_NAME) return NotImplemented("INSERT", "BY NAME");
  if (!ins.cte_map.map.empty()) return NotImplemented("INSERT", "WITH before INSERT (put the WITH in the query)");
  if (!ins.select_statement) return Status::InvalidArgument("INSERT needs a SELECT or VALUES source");
  out.target = NameParts(ins.catalog, ins.schema, ins.table);
  out.columns.assign(ins.columns.begin(), ins.columns.end());
  SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(*ins.select_statement, "INSERT source"));
  out.query = std::move(q);
  return Status::Ok();
}

Status FillDelete(duckdb::DeleteStatement& del, Markers markers, Statement& out) {
  if (!del.returning_list.empty()) return NotImplemented("DELETE", "RETURNING");
  if (!del.using_clauses.empty()) return NotImplemented("DELETE", "USING");
  if (!del.cte_map.map.empty()) return NotImplemented("DELETE", "WITH");
  SKADE_ASSIGN_OR_RETURN(const duckdb::BaseTableRef* target, TargetTable(del.table.get(), "DELETE"));
  out.target = NameParts(target->catalog_name, target->schema_name, target->table_name);
  if (del.condition) {
    SKADE_RETURN_IF_ERROR(CheckPredicateTree(del.condition, Predicate::Subqueries::kAllow, "DELETE … WHERE", markers));
    StripTargetQualifier(del.condition, *target);
    SKADE_ASSIGN_OR_RETURN(Predicate p, PredicateOf(del.condition, "DELETE … WHERE"));
    out.where = std::move(p);
  }
  return Status::Ok();
}

// The assignments of SET, rendered; the target's qualifier is dropped when `strip` (the target)
// is given (a plain UPDATE runs against the table alone) and kept otherwise (UPDATE … FROM,
// MERGE, whose parts run over the target and the relations they read).
Result<std::vector<std::pair<std::string, std::string>>> Assignments(duckdb::UpdateSetInfo& set,
                                                                     const duckdb::BaseTableRef* strip,
                                                                     std::string_view what, Markers markers) {
  if (set.columns.size() != set.expressions.size()) {
    return Status::InvalidArgument(std::string(what) + " is malformed");
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < set.columns.size(); ++i) {
    SKADE_RETURN_IF_ERROR(CheckPredicateTree(set.expressions[i], Predicate::Subqueries::kAllow, what, markers));
    if (strip != nullptr) StripTargetQualifier(set.expressions[i], *strip);
    SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(set.expressions[i]));
    SKADE_ASSIGN_OR_RETURN(std::string value, RenderExpression(*set.expressions[i]));
    out.emplace_back(set.columns[i], "(" + value + ")");
  }
  return out;
}

// A condition (subqueries allowed), rendered as a Predicate; the target's qualifier dropped as
// for Assignments.
Result<Predicate> Condition(ExprPtr& condition, const duckdb::BaseTableRef* strip, std::string_view what,
                            Markers markers) {
  SKADE_RETURN_IF_ERROR(CheckPredicateTree(condition, Predicate::Subqueries::kAllow, what, markers));
  if (strip != nullptr) StripTargetQualifier(condition, *strip);
  return PredicateOf(condition, what);
}

Status FillUpdate(duckdb::UpdateStatement& upd, Markers markers, Statement& out) {
  if (!upd.returning_list.empty()) return NotImplemented("UPDATE", "RETURNING");
  if (!upd.cte_map.map.empty()) return NotImplemented("UPDATE", "WITH");
  if (!upd.set_info) return Status::InvalidArgument("UPDATE without SET");
  SKADE_ASSIGN_OR_RETURN(const duckdb::BaseTableRef* target, TargetTable(upd.table.get(), "UPDATE"));
  out.target = NameParts(target->catalog_name, target->schema_name, target->table_name);
  // With FROM, the parts run in a query that names the target as the statement does.
  const duckdb::BaseTableRef* strip = upd.from_table ? nullptr : target;
  if (upd.from_table) {
    out.target_alias = target->alias.empty() ? target->table_name : target->alias;
    SKADE_ASSIGN_OR_RETURN(out.from, RenderRelations(*upd.from_table, "UPDATE … FROM"));
  }
  auto& set = *upd.set_info;
  SKADE_ASSIGN_OR_RETURN(out.assignments, Assignments(set, strip, "UPDATE … SET", markers));
  if (set.condition) {
    SKADE_ASSIGN_OR_RETURN(Predicate p, Condition(set.condition, strip, "UPDATE … WHERE", markers));
    out.where = std::move(p);
  }
  return Status::Ok();
}

// The name a relation is called by in expressions: its alias, or a table's name; empty for an
// unnamed subquery or function.
std::string RelationName(const duckdb::TableRef& ref) {
  if (!ref.alias.empty()) return ref.alias;
  if (ref.type == duckdb::TableReferenceType::BASE_TABLE) return ref.Cast<duckdb::BaseTableRef>().table_name;
  return "";
}

Status FillMerge(duckdb::MergeIntoStatement& merge, Markers markers, Statement& out) {
  if (!merge.returning_list.empty()) return NotImplemented("MERGE", "RETURNING");
  if (!merge.cte_map.map.empty()) return NotImplemented("MERGE", "WITH (put the WITH in the USING query)");
  SKADE_ASSIGN_OR_RETURN(const duckdb::BaseTableRef* target, TargetTable(merge.target.get(), "MERGE"));
  if (target->at_clause) {
    return Status::InvalidArgument("MERGE: the target is written at its current snapshot; AT (…) is for reading");
  }
  out.target = NameParts(target->catalog_name, target->schema_name, target->table_name);
  out.target_alias = target->alias.empty() ? target->table_name : target->alias;
  if (!merge.source) return Status::InvalidArgument("MERGE needs a USING source");
  if (merge.source->type == duckdb::TableReferenceType::JOIN) {
    return NotImplemented("MERGE", "a join as the USING source (put it in a subquery)");
  }
  SKADE_ASSIGN_OR_RETURN(out.from, RenderRelations(*merge.source, "MERGE … USING"));
  if (!merge.using_columns.empty()) {
    // USING (k, …) joins on equal columns of the same name: spelled out on both names.
    const std::string source_name = RelationName(*merge.source);
    if (source_name.empty()) return NotImplemented("MERGE", "USING (columns) on an unnamed source (give it an alias)");
    duckdb::vector<ExprPtr> equalities;
    for (const std::string& column : merge.using_columns) {
      equalities.push_back(duckdb::make_uniq<duckdb::ComparisonExpression>(
          duckdb::ExpressionType::COMPARE_EQUAL,
          duckdb::make_uniq<duckdb::ColumnRefExpression>(duckdb::vector<std::string>{out.target_alias, column}),
          duckdb::make_uniq<duckdb::ColumnRefExpression>(duckdb::vector<std::string>{source_name, column})));
    }
    merge.join_condition =
        equalities.size() == 1
            ? std::move(equalities[0])
            : duckdb::make_uniq<duckdb::ConjunctionExpression>(duckdb::ExpressionType::CONJUNCTION_AND,
                                                               std::move(equalities));
  }
  if (!merge.join_condition) return Status::InvalidArgument("MERGE needs an ON condition");
  SKADE_ASSIGN_OR_RETURN(Predicate on, Condition(merge.join_condition, nullptr, "MERGE … ON", markers));
  out.on = std::move(on);
  for (auto& [when, actions] : merge.actions) {
    for (auto& action : actions) {
      MergeAction a;
      std::string what;
      switch (when) {
        case duckdb::MergeActionCondition::WHEN_MATCHED:
          a.when = MergeAction::When::kMatched;
          what = "MERGE … WHEN MATCHED";
          break;
        case duckdb::MergeActionCondition::WHEN_NOT_MATCHED_BY_TARGET:
          a.when = MergeAction::When::kNotMatchedByTarget;
          what = "MERGE … WHEN NOT MATCHED";
          break;
        case duckdb::MergeActionCondition::WHEN_NOT_MATCHED_BY_SOURCE:
          a.when = MergeAction::When::kNotMatchedBySource;
          what = "MERGE … WHEN NOT MATCHED BY SOURCE";
          break;
      }
      if (action->condition) {
        SKADE_ASSIGN_OR_RETURN(Predicate c, Condition(action->condition, nullptr, what + " AND", markers));
        a.condition = std::move(c);
      }
      const bool inserts = a.when == MergeAction::When::kNotMatchedByTarget;
      switch (action->action_type) {
        case duckdb::MergeActionType::MERGE_UPDATE: {
          if (inserts) return Status::InvalidArgument(what + " cannot UPDATE: there is no target row");
          if (!action->update_info || action->update_info->columns.empty()) {
            return NotImplemented("MERGE", "UPDATE SET * (name the columns)");
          }
          if (action->update_info->condition) return NotImplemented("MERGE", "UPDATE … WHERE");
          a.action = MergeAction::Do::kUpdate;
          SKADE_ASSIGN_OR_RETURN(a.assignments,
                                 Assignments(*action->update_info, nullptr, what + " THEN UPDATE", markers));
          break;
        }
        case duckdb::MergeActionType::MERGE_DELETE:
          if (inserts) return Status::InvalidArgument(what + " cannot DELETE: there is no target row");
          a.action = MergeAction::Do::kDelete;
          break;
        case duckdb::MergeActionType::MERGE_INSERT: {
          if (!inserts) return Status::InvalidArgument(what + " cannot INSERT: only a source row without a match can");
          if (action->default_values) return NotImplemented("MERGE", "INSERT DEFAULT VALUES");
          if (action->column_order == duckdb::InsertColumnOrder::INSERT_BY_NAME) {
            return NotImplemented("MERGE", "INSERT BY NAME");
          }
          if (action->expressions.empty()) return NotImplemented("MERGE", "INSERT * (name the values)");
          if (!action->insert_columns.empty() && action->insert_columns.size() != action->expressions.size()) {
            return Status::InvalidArgument(what + " THEN INSERT names " +
                                           std::to_string(action->insert_columns.size()) + " columns and " +
                                           std::to_string(action->expressions.size()) + " values");
          }
          a.action = MergeAction::Do::kInsert;
          a.columns.assign(action->insert_columns.begin(), action->insert_columns.end());
          for (auto& value : action->expressions) {
            SKADE_RETURN_IF_ERROR(
                CheckPredicateTree(value, Predicate::Subqueries::kAllow, what + " THEN INSERT", markers));
            SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(value));
            SKADE_ASSIGN_OR_RETURN(std::string rendered, RenderExpression(*value));
            a.values.push_back("(" + rendered + ")");
          }
          break;
        }
        case duckdb::MergeActionType::MERGE_DO_NOTHING:
          a.action = MergeAction::Do::kNothing;
          break;
        case duckdb::MergeActionType::MERGE_ERROR:
          return NotImplemented("MERGE", "THEN ERROR");
      }
      out.merge_actions.push_back(std::move(a));
    }
  }
  if (out.merge_actions.empty()) return Status::InvalidArgument("MERGE needs at least one WHEN … THEN clause");
  return Status::Ok();
}

void FillConflict(const duckdb::CreateInfo& info, Statement& out) {
  out.if_not_exists = info.on_conflict == duckdb::OnCreateConflict::IGNORE_ON_CONFLICT;
  out.or_replace = info.on_conflict == duckdb::OnCreateConflict::REPLACE_ON_CONFLICT;
}

Status FillCreate(duckdb::CreateStatement& create, Statement& out) {
  auto& info = *create.info;
  if (info.type == duckdb::CatalogType::SCHEMA_ENTRY) {
    out.kind = Statement::Kind::kCreateSchema;
    FillConflict(info, out);
    out.target = NameParts("", info.catalog, info.schema);
    return Status::Ok();
  }
  if (info.type == duckdb::CatalogType::VIEW_ENTRY && !info.temporary) {
    // A view of the catalog (an Iceberg view); a TEMP view stays the session's own (kOther).
    auto& view = info.Cast<duckdb::CreateViewInfo>();
    if (!view.query) return Status::InvalidArgument("CREATE VIEW needs a query");
    out.kind = Statement::Kind::kCreateView;
    FillConflict(info, out);
    out.target = NameParts(info.catalog, info.schema, view.view_name);
    for (const auto& alias : view.aliases) out.columns.push_back(alias);
    SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(*view.query, "CREATE VIEW … AS"));
    out.query = std::move(q);
    return Status::Ok();
  }
  if (info.type != duckdb::CatalogType::TABLE_ENTRY) return Status::Ok();  // kOther
  out.kind = Statement::Kind::kCreateTable;
  auto& table = info.Cast<duckdb::CreateTableInfo>();
  if (info.temporary) return NotImplemented("CREATE TABLE", "TEMPORARY");
  FillConflict(info, out);
  out.target = NameParts(info.catalog, info.schema, table.table);
  if (table.query) {
    SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(*table.query, "CREATE TABLE … AS"));
    out.query = std::move(q);
    return Status::Ok();
  }
  SKADE_ASSIGN_OR_RETURN(out.definition, DefinitionOf(table));
  return Status::Ok();
}

Status FillDrop(duckdb::DropStatement& drop, Statement& out) {
  auto& info = *drop.info;
  if (info.type == duckdb::CatalogType::VIEW_ENTRY) {
    out.kind = Statement::Kind::kDropView;
    if (info.cascade) return NotImplemented("DROP VIEW", "CASCADE");
    out.if_exists = info.if_not_found == duckdb::OnEntryNotFound::RETURN_NULL;
    out.target = NameParts(info.catalog, info.schema, info.name);
    return Status::Ok();
  }
  if (info.type != duckdb::CatalogType::TABLE_ENTRY && info.type != duckdb::CatalogType::SCHEMA_ENTRY) {
    return Status::Ok();  // kOther
  }
  bool schema = info.type == duckdb::CatalogType::SCHEMA_ENTRY;
  out.kind = schema ? Statement::Kind::kDropSchema : Statement::Kind::kDropTable;
  if (info.cascade) return NotImplemented(schema ? "DROP SCHEMA" : "DROP TABLE", "CASCADE");
  out.if_exists = info.if_not_found == duckdb::OnEntryNotFound::RETURN_NULL;
  out.target = schema ? NameParts("", info.catalog, info.name) : NameParts(info.catalog, info.schema, info.name);
  return Status::Ok();
}

// Whether only blanks, ';' and comments (-- to the line's end, /* … */) follow `from` in `sql`.
bool OnlyClosingTextAfter(std::string_view sql, size_t from) {
  size_t i = from;
  while (i < sql.size()) {
    if (std::isspace(static_cast<unsigned char>(sql[i])) || sql[i] == ';') {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      i = sql.find('\n', i);
      if (i == std::string_view::npos) i = sql.size();
    } else if (sql.substr(i, 2) == "/*") {
      const size_t close = sql.find("*/", i + 2);
      if (close == std::string_view::npos) return false;
      i = close + 2;
    } else {
      return false;
    }
  }
  return true;
}

// Spark's `DROP TABLE t PURGE`, which DuckDB's grammar lacks: when the last word of `sql`
// (comments and closing ';' after it aside) is PURGE, unquoted, in any case, and no ';' comes
// before it, the text before that word; nullopt otherwise. The caller parses what is returned
// as it is: the user's own text, cut at a token boundary, never anything pasted to it.
std::optional<std::string> WithoutTrailingPurge(const std::string& sql) {
  duckdb::vector<duckdb::SimplifiedToken> tokens;
  try {
    tokens = duckdb::Parser::Tokenize(sql);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  // DuckDB's tokenizer leaves comments out and gives each token's start only: a ';' token is
  // one whose text starts with ';'.
  auto is_semicolon = [&](size_t i) {
    return tokens[i].type == duckdb::SimplifiedTokenType::SIMPLIFIED_TOKEN_OPERATOR && tokens[i].start < sql.size() &&
           sql[tokens[i].start] == ';';
  };
  size_t n = tokens.size();
  while (n > 0 && (tokens[n - 1].type == duckdb::SimplifiedTokenType::SIMPLIFIED_TOKEN_COMMENT || is_semicolon(n - 1))) {
    --n;
  }
  if (n == 0) return std::nullopt;
  const duckdb::SimplifiedToken& last = tokens[n - 1];
  if (last.type != duckdb::SimplifiedTokenType::SIMPLIFIED_TOKEN_KEYWORD &&
      last.type != duckdb::SimplifiedTokenType::SIMPLIFIED_TOKEN_IDENTIFIER) {
    return std::nullopt;
  }
  // "DROP TABLE t; PURGE" is two statements, not a purge: the word must follow the DROP itself.
  for (size_t i = 0; i + 1 < n; ++i) {
    if (is_semicolon(i)) return std::nullopt;
  }
  constexpr std::string_view kPurge = "purge";
  const size_t at = last.start;
  if (at + kPurge.size() > sql.size()) return std::nullopt;
  const std::string_view word(sql.data() + at, kPurge.size());
  if (!std::equal(word.begin(), word.end(), kPurge.begin(),
                  [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; })) {
    return std::nullopt;
  }
  // The whole word (not PURGED), then nothing but the statement's end.
  if (!OnlyClosingTextAfter(sql, at + kPurge.size())) return std::nullopt;
  return sql.substr(0, at);
}

bool IsDropTable(const SQLStatement& stmt) {
  if (stmt.type != StatementType::DROP_STATEMENT) return false;
  const auto& drop = stmt.Cast<duckdb::DropStatement>();
  return drop.info && drop.info->type == duckdb::CatalogType::TABLE_ENTRY;
}

// The schema of USE x[.y] (DuckDB: SET schema = 'x[.y]', the name dotted) or SET schema =
// 'name' in this session (not GLOBAL); nullopt for any other SET.
std::optional<std::string> UsedSchema(const duckdb::SetStatement& set) {
  if (set.set_type != duckdb::SetType::SET || set.scope == duckdb::SetScope::GLOBAL) return std::nullopt;
  if (duckdb::StringUtil::Lower(set.name) != "schema") return std::nullopt;
  const auto& variable = set.Cast<duckdb::SetVariableStatement>();
  if (!variable.value || variable.value->GetExpressionClass() != ExpressionClass::CONSTANT) return std::nullopt;
  const duckdb::Value& value = variable.value->Cast<duckdb::ConstantExpression>().value;
  if (value.IsNull() || value.type().id() != duckdb::LogicalTypeId::VARCHAR) return std::nullopt;
  // USE renders its name as SQL (a part quoted where it must be: USE "Sales" gives "\"Sales\""):
  // split by SQL's rules, unquoted, joined by '.'.
  std::vector<std::string> parts;
  try {
    parts = duckdb::QualifiedName::ParseComponents(value.GetValue<std::string>());
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string dotted;
  for (const std::string& part : parts) dotted += (dotted.empty() ? "" : ".") + part;
  return dotted;
}

// DuckDB's grammar has AT (…) on table references in queries only: a write target with one is
// a syntax error "at or near "AT"", which gets the reason added.
Status WithTimeTravelHint(const Status& error) {
  const std::string& message = error.message();
  if (message.find("at or near \"AT\"") == std::string::npos &&
      message.find("at or near \"at\"") == std::string::npos) {
    return error;
  }
  return Status(error.code(), message +
                                  " (AT (VERSION => …) / AT (TIMESTAMP => …) time travel is for reading: writes always "
                                  "apply to the table's current snapshot)");
}

}  // namespace

Result<Predicate> Predicate::Parse(std::string_view text, Subqueries subqueries) {
  if (Blank(text)) return Status::InvalidArgument("empty predicate");
  SKADE_ASSIGN_OR_RETURN(ExprPtr where, WhereOfMock(std::string(text), "predicate"));
  SKADE_RETURN_IF_ERROR(CheckPredicateTree(where, subqueries, "predicate"));
  return PredicateOf(where, "predicate");
}

Result<Query> Query::Parse(std::string_view text) {
  if (Blank(text)) return Status::InvalidArgument("empty query");
  SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll(std::string(text), "query"));
  if (statements.size() != 1) return Status::InvalidArgument("expected exactly one query");
  SQLStatement& stmt = *statements[0];
  if (stmt.type != StatementType::SELECT_STATEMENT) {
    return Status::InvalidArgument("expected a query, got a " + duckdb::StatementTypeToString(stmt.type) +
                                   " statement");
  }
  if (!stmt.named_param_map.empty()) return Status::InvalidArgument("parameter markers are not allowed here");
  return QueryOf(stmt.Cast<duckdb::SelectStatement>(), "query");
}

Result<TableDefinition> ParseTableDefinition(std::string_view text) {
  if (Blank(text)) return Status::InvalidArgument("empty column definitions");
  SKADE_ASSIGN_OR_RETURN(auto statements,
                         ParseAll("CREATE TABLE __skade_definition (" + std::string(text) + ")", "column definitions"));
  if (statements.size() != 1 || statements[0]->type != StatementType::CREATE_STATEMENT) {
    return Status::InvalidArgument("column definitions: expected a list of columns, not statements");
  }
  auto& info = *statements[0]->Cast<duckdb::CreateStatement>().info;
  if (info.type != duckdb::CatalogType::TABLE_ENTRY) {
    return Status::InvalidArgument("column definitions: expected a list of columns");
  }
  auto& table = info.Cast<duckdb::CreateTableInfo>();
  if (table.query || table.table != "__skade_definition" || !table.schema.empty() || !table.catalog.empty()) {
    return Status::InvalidArgument("column definitions: expected a list of columns");
  }
  return DefinitionOf(table);
}

Result<Statement> ParseStatement(std::string_view sql, std::span<const std::string> parameters) {
  if (Blank(sql)) return Status::InvalidArgument("empty SQL");
  auto parsed = ParseAll(std::string(sql), "SQL");
  bool purge = false;
  if (!parsed.ok()) {
    // DROP TABLE … PURGE: DuckDB refuses the clause; the statement before it must be one DROP
    // TABLE, else the first error stands.
    if (std::optional<std::string> rest = WithoutTrailingPurge(std::string(sql))) {
      auto again = ParseAll(*rest, "SQL");
      if (again.ok() && again->size() == 1 && IsDropTable(*(*again)[0])) {
        parsed = std::move(again);
        purge = true;
      }
    }
  }
  if (!parsed.ok()) return WithTimeTravelHint(parsed.status());
  auto statements = std::move(parsed).value();
  if (statements.empty()) return Status::InvalidArgument("empty SQL");
  if (statements.size() > 1) return Status::InvalidArgument("only one SQL statement per request");
  SQLStatement& stmt = *statements[0];
  Statement out;
  out.type_name = duckdb::StatementTypeToString(stmt.type);
  out.parameter_count = static_cast<int64_t>(stmt.named_param_map.size());
  out.purge = purge;
  if (!parameters.empty()) {
    if (static_cast<int64_t>(parameters.size()) != out.parameter_count) {
      return Status::InvalidArgument("the statement has " + std::to_string(out.parameter_count) + " parameters; got " +
                                     std::to_string(parameters.size()) + " values");
    }
    SKADE_RETURN_IF_ERROR(BindLiterals(stmt, parameters));
  }
  const Markers markers = parameters.empty() ? Markers::kAllow : Markers::kRefuse;
  Status filled;
  switch (stmt.type) {
    case StatementType::SELECT_STATEMENT:
      out.kind = Statement::Kind::kQuery;
      FillPassthrough(stmt.Cast<duckdb::SelectStatement>(), out);
      break;
    case StatementType::EXPLAIN_STATEMENT: {
      auto& inner = stmt.Cast<duckdb::ExplainStatement>().stmt;
      out.kind = inner && inner->type == StatementType::SELECT_STATEMENT ? Statement::Kind::kExplain
                                                                         : Statement::Kind::kOther;
      break;
    }
    case StatementType::INSERT_STATEMENT:
      out.kind = Statement::Kind::kInsert;
      filled = FillInsert(stmt.Cast<duckdb::InsertStatement>(), out);
      break;
    case StatementType::DELETE_STATEMENT:
      out.kind = Statement::Kind::kDelete;
      filled = FillDelete(stmt.Cast<duckdb::DeleteStatement>(), markers, out);
      break;
    case StatementType::UPDATE_STATEMENT:
      out.kind = Statement::Kind::kUpdate;
      filled = FillUpdate(stmt.Cast<duckdb::UpdateStatement>(), markers, out);
      break;
    case StatementType::MERGE_INTO_STATEMENT:
      out.kind = Statement::Kind::kMerge;
      filled = FillMerge(stmt.Cast<duckdb::MergeIntoStatement>(), markers, out);
      break;
    case StatementType::CREATE_STATEMENT:
      filled = FillCreate(stmt.Cast<duckdb::CreateStatement>(), out);
      break;
    case StatementType::DROP_STATEMENT:
      filled = FillDrop(stmt.Cast<duckdb::DropStatement>(), out);
      break;
    case StatementType::COPY_STATEMENT:
      out.kind = stmt.Cast<duckdb::CopyStatement>().info->is_from ? Statement::Kind::kOther : Statement::Kind::kExport;
      break;
    case StatementType::SET_STATEMENT:
      out.kind = Statement::Kind::kOther;
      out.use_schema = UsedSchema(stmt.Cast<duckdb::SetStatement>());
      break;
    default:
      out.kind = Statement::Kind::kOther;
      break;
  }
  if (filled.code() == StatusCode::kNotImplemented) {
    // Still a write (so a read-only server refuses it as such), but one that never runs.
    out.unsupported = filled.message();
    out.query.reset();
    out.where.reset();
    out.assignments.clear();
    out.definition = {};
    out.from.clear();
    out.on.reset();
    out.merge_actions.clear();
    return out;
  }
  SKADE_RETURN_IF_ERROR(filled);
  SKADE_RETURN_IF_ERROR(WalkStatement(stmt, {.expression = [&out](ExprPtr& e) {
    if (e->GetExpressionClass() == ExpressionClass::FUNCTION) {
      const auto& f = e->Cast<duckdb::FunctionExpression>();
      if (out.reads_configuration.empty() && ReadsConfiguration(f.function_name)) {
        out.reads_configuration = f.function_name;
      }
      if (out.runs_sql_text.empty() && RunsSqlText(f.function_name)) out.runs_sql_text = f.function_name;
    }
    return Status::Ok();
  }}));
  if (out.is_write() && parameters.empty() && out.parameter_count > 0) {
    // Unbound markers would otherwise reach a rendering that runs without values.
    out.unbound = true;
    out.query.reset();
    out.where.reset();
    out.assignments.clear();
    out.from.clear();
    out.on.reset();
    out.merge_actions.clear();
  }
  return out;
}

Result<ParameterProbe> RenderParameterProbe(std::string_view sql, std::string_view stand_in) {
  if (Blank(sql)) return Status::InvalidArgument("empty SQL");
  SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll(std::string(sql), "SQL"));
  if (statements.size() != 1) return Status::InvalidArgument("only one SQL statement per request");
  SQLStatement& stmt = *statements[0];
  // The parts are checked and rendered by the same functions as ParseStatement's, markers
  // allowed: each is one expression or one query that re-parses to its own tree.
  Statement parts;
  ParameterProbe probe;
  const std::string target(stand_in);
  switch (stmt.type) {
    case StatementType::INSERT_STATEMENT: {
      auto& ins = stmt.Cast<duckdb::InsertStatement>();
      SKADE_RETURN_IF_ERROR(FillInsert(ins, parts));
      probe.statement = "INSERT INTO " + target;
      if (!parts.columns.empty()) {
        std::string columns;
        for (const std::string& c : parts.columns) columns += (columns.empty() ? "" : ", ") + QuoteIdentifier(c);
        probe.statement += " (" + columns + ")";
      }
      // DuckDB types the markers of a VALUES list that is the INSERT's source by the columns
      // they go to; wrapped in a query ("SELECT * FROM (VALUES …)") they stay untyped.
      if (auto values = ins.GetValuesList()) {
        std::string rows, all;
        for (auto& row : values->values) {
          std::string rendered;
          for (auto& e : row) {
            SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(e));
            SKADE_ASSIGN_OR_RETURN(std::string value, RenderExpression(*e));
            rendered += (rendered.empty() ? "" : ", ") + value;
          }
          rows += (rows.empty() ? "" : ", ") + ("(" + rendered + ")");
          all += (all.empty() ? "" : ", ") + rendered;
        }
        probe.statement += " VALUES " + rows;
        probe.reads = "SELECT " + all + " FROM " + target;
      } else {
        probe.statement += " " + parts.query->sql();
        probe.reads = parts.query->sql();
      }
      break;
    }
    case StatementType::UPDATE_STATEMENT: {
      SKADE_RETURN_IF_ERROR(FillUpdate(stmt.Cast<duckdb::UpdateStatement>(), Markers::kAllow, parts));
      if (!parts.from.empty()) {
        return Status::InvalidArgument("UPDATE … FROM: its parameters are not typed by a probe");
      }
      std::string set, values;
      for (const auto& [column, value] : parts.assignments) {
        set += (set.empty() ? "" : ", ") + QuoteIdentifier(column) + " = " + value;
        values += (values.empty() ? "" : ", ") + value;
      }
      std::string where = parts.where ? " WHERE " + parts.where->sql() : "";
      probe.statement = "UPDATE " + target + " SET " + set + where;
      probe.reads = "SELECT " + values + " FROM " + target + where;
      break;
    }
    case StatementType::DELETE_STATEMENT: {
      SKADE_RETURN_IF_ERROR(FillDelete(stmt.Cast<duckdb::DeleteStatement>(), Markers::kAllow, parts));
      std::string where = parts.where ? " WHERE " + parts.where->sql() : "";
      probe.statement = "DELETE FROM " + target + where;
      probe.reads = "SELECT 1 FROM " + target + where;
      break;
    }
    default:
      return Status::InvalidArgument("only INSERT, UPDATE and DELETE statements have parameters typed by a probe");
  }
  // Each one statement of its kind, whatever the stand-in's text.
  SKADE_ASSIGN_OR_RETURN(auto again, ParseAll(probe.statement, "parameter probe"));
  SKADE_ASSIGN_OR_RETURN(auto reads, ParseAll(probe.reads, "parameter probe"));
  if (again.size() != 1 || again[0]->type != stmt.type || reads.size() != 1 ||
      reads[0]->type != StatementType::SELECT_STATEMENT) {
    return Status::InvalidArgument("the parameter probe does not render as one statement");
  }
  return probe;
}

namespace {

// Whether an AT (TIMESTAMP => …) expression stands alone: no column, subquery, marker or
// configuration read (it is evaluated before the query, outside it).
Status CheckAtExpression(ExprPtr& e) {
  return WalkExpression(e, {.expression = [](ExprPtr& node) -> Status {
    bool refused = false;
    switch (node->GetExpressionClass()) {
      case ExpressionClass::COLUMN_REF:
      case ExpressionClass::SUBQUERY:
      case ExpressionClass::PARAMETER:
      case ExpressionClass::STAR:
      case ExpressionClass::DEFAULT:
      case ExpressionClass::WINDOW:
        refused = true;
        break;
      case ExpressionClass::FUNCTION:
        refused = ReadsConfiguration(node->Cast<duckdb::FunctionExpression>().function_name);
        break;
      default:
        break;
    }
    if (!refused) return Status::Ok();
    return Status::InvalidArgument(
        "AT (TIMESTAMP => …) takes a time (a literal or an expression of constants), not '" + node->ToString() + "'");
  }});
}

// The AT clause of a table reference. Only DuckDB's two units parse: VERSION names a snapshot
// (an integer id) or a branch or tag (a string), TIMESTAMP a time.
Result<TimeTravel> TimeTravelOf(duckdb::AtClause& at) {
  TimeTravel out;
  ExprPtr& e = at.ExpressionMutable();
  const std::string unit = duckdb::StringUtil::Upper(at.Unit());
  if (!e) return Status::InvalidArgument("AT (" + unit + " => …) without a value");
  if (unit == "TIMESTAMP") {
    SKADE_RETURN_IF_ERROR(CheckAtExpression(e));
    SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(e));
    SKADE_ASSIGN_OR_RETURN(out.timestamp_sql, RenderExpression(*e));
    return out;
  }
  if (unit != "VERSION") return Status::InvalidArgument("AT (" + unit + " => …): only VERSION and TIMESTAMP exist");
  const std::string refusal =
      "AT (VERSION => …) takes a snapshot id (an integer) or a branch or tag name (a string), not '" + e->ToString() +
      "'";
  if (e->GetExpressionClass() != ExpressionClass::CONSTANT) return Status::InvalidArgument(refusal);
  const duckdb::Value& value = e->Cast<duckdb::ConstantExpression>().value;
  if (value.IsNull()) return Status::InvalidArgument(refusal);
  if (value.type().id() == duckdb::LogicalTypeId::VARCHAR) {
    out.ref = duckdb::StringValue::Get(value);
    return out;
  }
  if (!value.type().IsIntegral()) return Status::InvalidArgument(refusal);
  try {
    out.snapshot_id = value.GetValue<int64_t>();
  } catch (const std::exception&) {
    return Status::InvalidArgument("AT (VERSION => " + value.ToString() + "): not a snapshot id (out of range)");
  }
  return out;
}

std::string JoinName(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ".") + p;
  return out;
}

// The table `DESCRIBE name` describes: DuckDB parses it as DESCRIBE (SELECT * FROM name).
std::optional<std::vector<std::string>> DescribedTable(const duckdb::ShowRef& show) {
  if (show.show_type != duckdb::ShowType::DESCRIBE || !show.query) return std::nullopt;
  const QueryNode& node = *show.query;
  if (node.type != duckdb::QueryNodeType::SELECT_NODE || !node.modifiers.empty() || !node.cte_map.map.empty()) {
    return std::nullopt;
  }
  const auto& select = node.Cast<duckdb::SelectNode>();
  if (select.select_list.size() != 1 || select.select_list[0]->GetExpressionClass() != ExpressionClass::STAR) {
    return std::nullopt;
  }
  const auto& star = select.select_list[0]->Cast<duckdb::StarExpression>();
  if (!star.relation_name.empty() || !star.exclude_list.empty() || !star.replace_list.empty() ||
      !star.rename_list.empty() || star.expr || star.columns) {
    return std::nullopt;
  }
  if (select.where_clause || select.having || select.qualify || select.sample ||
      !select.groups.group_expressions.empty() || !select.from_table ||
      select.from_table->type != duckdb::TableReferenceType::BASE_TABLE) {
    return std::nullopt;
  }
  const auto& table = select.from_table->Cast<duckdb::BaseTableRef>();
  if (table.at_clause || !table.alias.empty() || !table.column_name_alias.empty()) return std::nullopt;
  return NameParts(table.catalog_name, table.schema_name, table.table_name);
}

// Walks every relation of a query (FROM, joins, subqueries anywhere, WITH queries, SHOW and
// DESCRIBE) and replaces those the substitution answers, in place.
class RelationWalker {
 public:
  explicit RelationWalker(const RelationSubstitution& substitute) : substitute_(substitute) {}

  Status Node(QueryNode& node) {
    std::vector<std::string> names;
    for (auto& kv : node.cte_map.map) names.push_back(kv.first);
    if (node.type == duckdb::QueryNodeType::CTE_NODE) names.push_back(node.Cast<duckdb::CTENode>().ctename);
    ctes_.push_back(std::move(names));
    Status status = NodeInScope(node);
    ctes_.pop_back();
    return status;
  }
  bool substituted() const { return substituted_; }

 private:
  Status NodeInScope(QueryNode& node) {
    for (auto& kv : node.cte_map.map) {
      if (kv.second && kv.second->query && kv.second->query->node) SKADE_RETURN_IF_ERROR(Node(*kv.second->query->node));
    }
    switch (node.type) {
      case duckdb::QueryNodeType::SELECT_NODE: {
        auto& select = node.Cast<duckdb::SelectNode>();
        SKADE_RETURN_IF_ERROR(Ref(select.from_table));
        for (auto& e : select.select_list) SKADE_RETURN_IF_ERROR(Expression(e));
        for (auto& e : select.groups.group_expressions) SKADE_RETURN_IF_ERROR(Expression(e));
        SKADE_RETURN_IF_ERROR(Expression(select.where_clause));
        SKADE_RETURN_IF_ERROR(Expression(select.having));
        SKADE_RETURN_IF_ERROR(Expression(select.qualify));
        break;
      }
      case duckdb::QueryNodeType::SET_OPERATION_NODE: {
        auto& set = node.Cast<duckdb::SetOperationNode>();
        if (set.left) SKADE_RETURN_IF_ERROR(Node(*set.left));
        if (set.right) SKADE_RETURN_IF_ERROR(Node(*set.right));
        break;
      }
      case duckdb::QueryNodeType::RECURSIVE_CTE_NODE: {
        auto& cte = node.Cast<duckdb::RecursiveCTENode>();
        if (cte.left) SKADE_RETURN_IF_ERROR(Node(*cte.left));
        if (cte.right) SKADE_RETURN_IF_ERROR(Node(*cte.right));
        break;
      }
      case duckdb::QueryNodeType::CTE_NODE: {
        auto& cte = node.Cast<duckdb::CTENode>();
        if (cte.query) SKADE_RETURN_IF_ERROR(Node(*cte.query));
        if (cte.child) SKADE_RETURN_IF_ERROR(Node(*cte.child));
        break;
      }
      default:
        break;
    }
    Status status;
    ParsedExpressionIterator::EnumerateQueryNodeModifiers(node, [&](ExprPtr& e) {
      if (status.ok()) status = Expression(e);
    });
    return status;
  }

  // Subqueries inside expressions (EnumerateChildren does not enter them).
  Status Expression(ExprPtr& e) {
    if (!e) return Status::Ok();
    if (e->GetExpressionClass() == ExpressionClass::SUBQUERY) {
      auto& sub = e->Cast<duckdb::SubqueryExpression>();
      if (sub.subquery && sub.subquery->node) SKADE_RETURN_IF_ERROR(Node(*sub.subquery->node));
    }
    Status status;
    ParsedExpressionIterator::EnumerateChildren(*e, [&](ExprPtr& child) {
      if (status.ok()) status = Expression(child);
    });
    return status;
  }

  Status Ref(duckdb::unique_ptr<duckdb::TableRef>& ref) {
    if (!ref) return Status::Ok();
    switch (ref->type) {
      case duckdb::TableReferenceType::BASE_TABLE:
        return BaseTable(ref);
      case duckdb::TableReferenceType::SHOW_REF:
        return Show(ref);
      case duckdb::TableReferenceType::JOIN: {
        auto& join = ref->Cast<duckdb::JoinRef>();
        SKADE_RETURN_IF_ERROR(Ref(join.left));
        SKADE_RETURN_IF_ERROR(Ref(join.right));
        return Expression(join.condition);
      }
      case duckdb::TableReferenceType::SUBQUERY: {
        auto& sub = ref->Cast<duckdb::SubqueryRef>();
        return sub.subquery && sub.subquery->node ? Node(*sub.subquery->node) : Status::Ok();
      }
      case duckdb::TableReferenceType::TABLE_FUNCTION:
        return Expression(ref->Cast<duckdb::TableFunctionRef>().function);
      case duckdb::TableReferenceType::EXPRESSION_LIST:
        for (auto& row : ref->Cast<duckdb::ExpressionListRef>().values) {
          for (auto& e : row) SKADE_RETURN_IF_ERROR(Expression(e));
        }
        return Status::Ok();
      case duckdb::TableReferenceType::PIVOT:
        return Ref(ref->Cast<duckdb::PivotRef>().source);
      default:
        return Status::Ok();
    }
  }

  bool IsCte(const std::string& name) const {
    for (const auto& scope : ctes_) {
      for (const std::string& cte : scope) {
        if (SameName(cte, name)) return true;
      }
    }
    return false;
  }

  Status BaseTable(duckdb::unique_ptr<duckdb::TableRef>& ref) {
    auto& table = ref->Cast<duckdb::BaseTableRef>();
    RelationReference relation;
    relation.name = NameParts(table.catalog_name, table.schema_name, table.table_name);
    if (table.at_clause) {
      SKADE_ASSIGN_OR_RETURN(TimeTravel at, TimeTravelOf(*table.at_clause).WithContext(JoinName(relation.name)));
      relation.at = std::move(at);
    }
    relation.cte = relation.name.size() == 1 && IsCte(relation.name[0]);
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> query, Answer(relation));
    if (!query) {
      if (!relation.at) return Status::Ok();
      return Status::InvalidArgument("AT (…) reads the snapshots of the lake's tables; '" + JoinName(relation.name) +
                                     "' is not one of them");
    }
    return Replace(ref, *query, table.alias.empty() ? table.table_name : table.alias);
  }

  Status Show(duckdb::unique_ptr<duckdb::TableRef>& ref) {
    auto& show = ref->Cast<duckdb::ShowRef>();
    RelationReference relation;
    // DuckDB's parser names SHOW TABLES' relation "\"tables\"" and SHOW ALL TABLES'
    // "__show_tables_expanded".
    if (!show.query && show.table_name == "\"tables\"") {
      relation.kind = RelationReference::Kind::kShowTables;
    } else if (!show.query && show.table_name == "__show_tables_expanded") {
      relation.kind = RelationReference::Kind::kShowAllTables;
    } else if (auto described = DescribedTable(show)) {
      relation.kind = RelationReference::Kind::kDescribe;
      relation.name = std::move(*described);
    } else {
      return show.query ? Node(*show.query) : Status::Ok();
    }
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> query, Answer(relation));
    if (query) return Replace(ref, *query, "");
    return show.query ? Node(*show.query) : Status::Ok();
  }

  // The substitution's answer, asked once per distinct relation of the statement: DuckDB keeps
  // a WITH query twice in the tree (in the node's CTE map and as a CTE node), and both copies
  // must render alike.
  Result<std::optional<std::string>> Answer(const RelationReference& relation) {
    std::string key = std::to_string(static_cast<int>(relation.kind)) + (relation.cte ? "c" : "t");
    for (const std::string& part : relation.name) key += std::to_string(part.size()) + ':' + part;
    if (relation.at) {
      const TimeTravel& at = *relation.at;
      if (at.snapshot_id) key += "@v" + std::to_string(*at.snapshot_id);
      if (at.ref) key += "@r" + std::to_string(at.ref->size()) + ':' + *at.ref;
      if (!at.timestamp_sql.empty()) key += "@t" + at.timestamp_sql;
    }
    if (auto it = answers_.find(key); it != answers_.end()) return it->second;
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> answer, substitute_(relation));
    answers_.emplace(std::move(key), answer);
    return answer;
  }

  // `ref` becomes the table function of `query` (SELECT * FROM f(…)), named `alias`.
  Status Replace(duckdb::unique_ptr<duckdb::TableRef>& ref, const std::string& query, const std::string& alias) {
    SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll(query, "substituted relation"));
    auto refuse = [] { return Status::Internal("a substituted relation must be SELECT * FROM a table function"); };
    if (statements.size() != 1 || statements[0]->type != StatementType::SELECT_STATEMENT) return refuse();
    QueryNode& node = *statements[0]->Cast<duckdb::SelectStatement>().node;
    if (node.type != duckdb::QueryNodeType::SELECT_NODE || !node.modifiers.empty() || !node.cte_map.map.empty()) {
      return refuse();
    }
    auto& select = node.Cast<duckdb::SelectNode>();
    if (!select.from_table || select.from_table->type != duckdb::TableReferenceType::TABLE_FUNCTION ||
        select.where_clause || select.select_list.size() != 1 ||
        select.select_list[0]->GetExpressionClass() != ExpressionClass::STAR) {
      return refuse();
    }
    duckdb::unique_ptr<duckdb::TableRef> replacement = std::move(select.from_table);
    replacement->alias = alias;
    replacement->column_name_alias = ref->column_name_alias;
    replacement->sample = std::move(ref->sample);
    ref = std::move(replacement);
    substituted_ = true;
    return Status::Ok();
  }

  const RelationSubstitution& substitute_;
  std::vector<std::vector<std::string>> ctes_;  // the WITH names in scope, innermost last
  std::map<std::string, std::optional<std::string>> answers_;  // by relation (Answer)
  bool substituted_ = false;
};

bool HasSubquery(ParsedExpression& e) {
  if (e.GetExpressionClass() == ExpressionClass::SUBQUERY) return true;
  bool found = false;
  ParsedExpressionIterator::EnumerateChildren(e, [&](ParsedExpression& child) { found = found || HasSubquery(child); });
  return found;
}

// DuckDB names an unnamed result column by its expression's text. Those holding a subquery get
// that name as their alias, so a substituted relation inside does not rename the column.
std::vector<std::pair<ParsedExpression*, std::string>> ResultNamesWithSubqueries(QueryNode& root) {
  QueryNode* node = &root;
  while (node->type == duckdb::QueryNodeType::SET_OPERATION_NODE || node->type == duckdb::QueryNodeType::CTE_NODE) {
    node = node->type == duckdb::QueryNodeType::CTE_NODE ? node->Cast<duckdb::CTENode>().child.get()
                                                          : node->Cast<duckdb::SetOperationNode>().left.get();
    if (node == nullptr) return {};
  }
  std::vector<std::pair<ParsedExpression*, std::string>> out;
  if (node->type != duckdb::QueryNodeType::SELECT_NODE) return out;
  for (auto& e : node->Cast<duckdb::SelectNode>().select_list) {
    if (e->GetAlias().empty() && HasSubquery(*e)) out.emplace_back(e.get(), e->ToString());
  }
  return out;
}

}  // namespace

Result<std::optional<std::string>> SubstituteRelations(std::string_view sql, const RelationSubstitution& substitute) {
  if (Blank(sql)) return Status::InvalidArgument("empty SQL");
  SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll(std::string(sql), "SQL"));
  if (statements.size() != 1) return Status::InvalidArgument("only one SQL statement per request");
  SQLStatement& stmt = *statements[0];
  RelationWalker walker(substitute);
  switch (stmt.type) {
    case StatementType::SELECT_STATEMENT: {
      auto& select = stmt.Cast<duckdb::SelectStatement>();
      auto names = ResultNamesWithSubqueries(*select.node);
      SKADE_RETURN_IF_ERROR(walker.Node(*select.node));
      if (!walker.substituted()) return std::optional<std::string>();
      for (auto& [e, name] : names) e->SetAlias(std::move(name));
      SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(select, "query"));
      return std::optional<std::string>(q.sql());
    }
    case StatementType::EXPLAIN_STATEMENT: {
      auto& explain = stmt.Cast<duckdb::ExplainStatement>();
      if (!explain.stmt || explain.stmt->type != StatementType::SELECT_STATEMENT) return std::optional<std::string>();
      auto& inner = explain.stmt->Cast<duckdb::SelectStatement>();
      SKADE_RETURN_IF_ERROR(walker.Node(*inner.node));
      if (!walker.substituted()) return std::optional<std::string>();
      if (explain.explain_format != duckdb::ExplainFormat::DEFAULT) {
        return Status::NotImplemented("EXPLAIN with a FORMAT of a query with AT (…) or lake listings");
      }
      SKADE_ASSIGN_OR_RETURN(Query q, QueryOf(inner, "EXPLAIN"));
      const bool analyze = explain.explain_type == duckdb::ExplainType::EXPLAIN_ANALYZE;
      return std::optional<std::string>((analyze ? "EXPLAIN ANALYZE " : "EXPLAIN ") + q.sql());
    }
    case StatementType::COPY_STATEMENT: {
      auto& info = *stmt.Cast<duckdb::CopyStatement>().info;
      if (info.is_from || !info.select_statement) return std::optional<std::string>();
      SKADE_RETURN_IF_ERROR(walker.Node(*info.select_statement));
      if (walker.substituted()) {
        return Status::NotImplemented(
            "COPY … TO of a query with AT (…) or lake listings is not supported; run the query on its own");
      }
      return std::optional<std::string>();
    }
    default:
      return std::optional<std::string>();
  }
}

}  // namespace skade::engine
