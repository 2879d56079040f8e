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

#include "duckdb.hpp"
#include "duckdb/parser/constraints/not_null_constraint.hpp"
#include "duckdb/parser/constraints/unique_constraint.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/columnref_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/star_expression.hpp"
#include "duckdb/parser/expression/parameter_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_data/create_schema_info.hpp"
#include "duckdb/parser/parsed_data/create_table_info.hpp"
#include "duckdb/parser/parsed_data/drop_info.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/statement/copy_statement.hpp"
#include "duckdb/parser/statement/create_statement.hpp"
#include "duckdb/parser/statement/delete_statement.hpp"
#include "duckdb/parser/statement/drop_statement.hpp"
#include "duckdb/parser/statement/explain_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/statement/update_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "duckdb/parser/tableref/expressionlistref.hpp"
#include "duckdb/parser/tableref/joinref.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "skade/engine/database.h"

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
using ExprFn = std::function<Status(ExprPtr&)>;

// DuckDB reports parse errors as exceptions; the message is in ErrorData (e.what() is JSON).
Status ParseError(const std::exception& e, std::string_view what) {
  return Status::InvalidArgument(std::string(what) + ": " + duckdb::ErrorData(e).Message());
}

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

// Calls `fn` on every expression of the tree below `e` (pre-order; `fn` may replace the node
// it is given), descending into subqueries, which ParsedExpressionIterator leaves out.
Status WalkExpression(ExprPtr& e, const ExprFn& fn);

Status WalkNode(QueryNode& node, const ExprFn& fn) {
  Status status;
  try {
    ParsedExpressionIterator::EnumerateQueryNodeChildren(
        node,
        [&](ExprPtr& child) {
          if (status.ok()) status = WalkExpression(child, fn);
        },
        [](duckdb::TableRef&) {});
  } catch (const std::exception& e) {
    return ParseError(e, "unsupported query shape");
  }
  return status;
}

Status WalkExpression(ExprPtr& e, const ExprFn& fn) {
  if (!e) return Status::Ok();
  SKADE_RETURN_IF_ERROR(fn(e));
  if (e->GetExpressionClass() == ExpressionClass::SUBQUERY) {
    auto& sub = e->Cast<duckdb::SubqueryExpression>();
    if (sub.subquery && sub.subquery->node) SKADE_RETURN_IF_ERROR(WalkNode(*sub.subquery->node, fn));
  }
  Status status;
  ParsedExpressionIterator::EnumerateChildren(*e, [&](ExprPtr& child) {
    if (status.ok()) status = WalkExpression(child, fn);
  });
  return status;
}

// Every expression of a statement that may carry parameter markers.
Status WalkStatement(SQLStatement& stmt, const ExprFn& fn) {
  switch (stmt.type) {
    case StatementType::SELECT_STATEMENT:
      return WalkNode(*stmt.Cast<duckdb::SelectStatement>().node, fn);
    case StatementType::INSERT_STATEMENT: {
      auto& ins = stmt.Cast<duckdb::InsertStatement>();
      if (ins.select_statement) return WalkNode(*ins.select_statement->node, fn);
      return Status::Ok();
    }
    case StatementType::DELETE_STATEMENT:
      return WalkExpression(stmt.Cast<duckdb::DeleteStatement>().condition, fn);
    case StatementType::UPDATE_STATEMENT: {
      auto& upd = stmt.Cast<duckdb::UpdateStatement>();
      if (!upd.set_info) return Status::Ok();
      for (auto& value : upd.set_info->expressions) SKADE_RETURN_IF_ERROR(WalkExpression(value, fn));
      return WalkExpression(upd.set_info->condition, fn);
    }
    case StatementType::CREATE_STATEMENT: {
      auto& info = *stmt.Cast<duckdb::CreateStatement>().info;
      if (info.type == duckdb::CatalogType::TABLE_ENTRY) {
        auto& table = info.Cast<duckdb::CreateTableInfo>();
        if (table.query) return WalkNode(*table.query->node, fn);
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

// Functions whose results describe the server rather than the data: settings (whose values
// name folders, e.g. allowed_directories), secrets, files, attached databases, extensions.
bool ReadsConfiguration(std::string name) {
  static const char* const kNames[] = {
      "duckdb_settings",  "current_setting",      "duckdb_secrets",         "which_secret",
      "duckdb_databases", "pragma_database_list", "duckdb_extensions",      "duckdb_temporary_files",
      "duckdb_logs",      "duckdb_log_contexts",  "duckdb_external_file_cache", "duckdb_variables",
      "getvariable",      "getenv"};
  name = duckdb::StringUtil::Lower(name);
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

// A constant whose SQL rendering parses back to another type (a DOUBLE 1e9 renders as
// "1000000000.0", which parses as a DECIMAL) becomes CAST('<value>' AS <type>), which parses
// back to itself and means the same value. Applied before anything is rendered.
Status MakeConstantsRenderable(ExprPtr& e) {
  return WalkExpression(e, [](ExprPtr& node) -> Status {
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
  });
}

Status MakeConstantsRenderable(QueryNode& node) {
  return WalkNode(node, [](ExprPtr& e) -> Status {
    return e->GetExpressionClass() == ExpressionClass::CONSTANT ? MakeConstantsRenderable(e) : Status::Ok();
  });
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
  return WalkExpression(where, [&](ExprPtr& e) -> Status {
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
  });
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
  (void)WalkNode(node, [](ExprPtr& e) -> Status {
    if (e->GetExpressionClass() == ExpressionClass::SUBQUERY) {
      auto& sub = e->Cast<duckdb::SubqueryExpression>();
      if (sub.subquery && sub.subquery->node) CollapseValuesWrappers(*sub.subquery->node);
    }
    return Status::Ok();
  });
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
  return WalkStatement(stmt, [&](ExprPtr& e) -> Status {
    if (e->GetExpressionClass() != ExpressionClass::PARAMETER) return Status::Ok();
    const std::string& id = e->Cast<duckdb::ParameterExpression>().identifier;
    auto it = stmt.named_param_map.find(id);
    if (it == stmt.named_param_map.end() || it->second < 1 || it->second > literals.size()) {
      return Status::InvalidArgument("parameter '" + id + "' has no value");
    }
    e = literals[it->second - 1]->Copy();
    return Status::Ok();
  });
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

Status FillUpdate(duckdb::UpdateStatement& upd, Markers markers, Statement& out) {
  if (!upd.returning_list.empty()) return NotImplemented("UPDATE", "RETURNING");
  if (upd.from_table) return NotImplemented("UPDATE", "FROM");
  if (!upd.cte_map.map.empty()) return NotImplemented("UPDATE", "WITH");
  if (!upd.set_info) return Status::InvalidArgument("UPDATE without SET");
  SKADE_ASSIGN_OR_RETURN(const duckdb::BaseTableRef* target, TargetTable(upd.table.get(), "UPDATE"));
  out.target = NameParts(target->catalog_name, target->schema_name, target->table_name);
  auto& set = *upd.set_info;
  if (set.columns.size() != set.expressions.size()) return Status::InvalidArgument("UPDATE … SET is malformed");
  for (size_t i = 0; i < set.columns.size(); ++i) {
    SKADE_RETURN_IF_ERROR(CheckPredicateTree(set.expressions[i], Predicate::Subqueries::kAllow, "UPDATE … SET", markers));
    StripTargetQualifier(set.expressions[i], *target);
    SKADE_RETURN_IF_ERROR(MakeConstantsRenderable(set.expressions[i]));
    SKADE_ASSIGN_OR_RETURN(std::string value, RenderExpression(*set.expressions[i]));
    out.assignments.emplace_back(set.columns[i], "(" + value + ")");
  }
  if (set.condition) {
    SKADE_RETURN_IF_ERROR(CheckPredicateTree(set.condition, Predicate::Subqueries::kAllow, "UPDATE … WHERE", markers));
    StripTargetQualifier(set.condition, *target);
    SKADE_ASSIGN_OR_RETURN(Predicate p, PredicateOf(set.condition, "UPDATE … WHERE"));
    out.where = std::move(p);
  }
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
  SKADE_ASSIGN_OR_RETURN(auto statements, ParseAll(std::string(sql), "SQL"));
  if (statements.empty()) return Status::InvalidArgument("empty SQL");
  if (statements.size() > 1) return Status::InvalidArgument("only one SQL statement per request");
  SQLStatement& stmt = *statements[0];
  Statement out;
  out.type_name = duckdb::StatementTypeToString(stmt.type);
  out.parameter_count = static_cast<int64_t>(stmt.named_param_map.size());
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
    case StatementType::CREATE_STATEMENT:
      filled = FillCreate(stmt.Cast<duckdb::CreateStatement>(), out);
      break;
    case StatementType::DROP_STATEMENT:
      filled = FillDrop(stmt.Cast<duckdb::DropStatement>(), out);
      break;
    case StatementType::COPY_STATEMENT:
      out.kind = stmt.Cast<duckdb::CopyStatement>().info->is_from ? Statement::Kind::kOther : Statement::Kind::kExport;
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
    return out;
  }
  SKADE_RETURN_IF_ERROR(filled);
  SKADE_RETURN_IF_ERROR(WalkStatement(stmt, [&out](ExprPtr& e) {
    if (out.reads_configuration.empty() && e->GetExpressionClass() == ExpressionClass::FUNCTION) {
      const auto& f = e->Cast<duckdb::FunctionExpression>();
      if (ReadsConfiguration(f.function_name)) out.reads_configuration = f.function_name;
    }
    return Status::Ok();
  }));
  if (out.is_write() && parameters.empty() && out.parameter_count > 0) {
    // Unbound markers would otherwise reach a rendering that runs without values.
    out.unbound = true;
    out.query.reset();
    out.where.reset();
    out.assignments.clear();
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

}  // namespace skade::engine
