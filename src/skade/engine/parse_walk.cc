#include "skade/engine/parse_walk_internal.h"

#include <exception>
#include <new>
#include <string>

#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/pivotref.hpp"
#include "duckdb/parser/tableref/showref.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"

namespace skade::engine {

namespace {

// The walk of a node without the catch: the public entries catch once, at the top, so a nested
// node's error is not wrapped again.
Status WalkNodeInner(duckdb::QueryNode& node, const ParseVisitor& visitor);

Status WalkExpressionInner(ParsedExprPtr& e, const ParseVisitor& visitor) {
  if (!e) return Status::Ok();
  if (visitor.expression) SKADE_RETURN_IF_ERROR(visitor.expression(e));
  if (!e) return Status::Ok();
  if (e->GetExpressionClass() == duckdb::ExpressionClass::SUBQUERY) {
    auto& sub = e->Cast<duckdb::SubqueryExpression>();
    if (sub.subquery && sub.subquery->node) SKADE_RETURN_IF_ERROR(WalkNodeInner(*sub.subquery->node, visitor));
  }
  Status status;
  duckdb::ParsedExpressionIterator::EnumerateChildren(*e, [&](ParsedExprPtr& child) {
    if (status.ok()) status = WalkExpressionInner(child, visitor);
  });
  return status;
}

// The parts of a relation DuckDB's iterator leaves out: the query of DESCRIBE and SUMMARIZE
// (a SHOW relation), a table function's query argument, and PIVOT's ON expressions, IN
// (SELECT …) and UNPIVOT's expressions. A check that missed them would let `SUMMARIZE SELECT
// current_setting(…)` show a setting's value.
Status WalkHiddenParts(duckdb::TableRef& ref, const ParseVisitor& visitor) {
  switch (ref.type) {
    case duckdb::TableReferenceType::SHOW_REF: {
      auto& show = ref.Cast<duckdb::ShowRef>();
      return show.query ? WalkNodeInner(*show.query, visitor) : Status::Ok();
    }
    case duckdb::TableReferenceType::TABLE_FUNCTION: {
      auto& function = ref.Cast<duckdb::TableFunctionRef>();
      if (function.subquery && function.subquery->node) return WalkNodeInner(*function.subquery->node, visitor);
      return Status::Ok();
    }
    case duckdb::TableReferenceType::PIVOT: {
      for (duckdb::PivotColumn& column : ref.Cast<duckdb::PivotRef>().pivots) {
        for (ParsedExprPtr& e : column.pivot_expressions) SKADE_RETURN_IF_ERROR(WalkExpressionInner(e, visitor));
        for (duckdb::PivotColumnEntry& entry : column.entries) SKADE_RETURN_IF_ERROR(WalkExpressionInner(entry.expr, visitor));
        if (column.subquery) SKADE_RETURN_IF_ERROR(WalkNodeInner(*column.subquery, visitor));
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

// Runs `enumerate` (one of DuckDB's iterator calls) with callbacks that walk each expression
// and each relation's hidden parts, and show each relation to the visitor, until the first
// error.
template <typename Enumerate>
Status EnumerateWith(const ParseVisitor& visitor, Enumerate&& enumerate) {
  Status status;
  enumerate(
      [&](ParsedExprPtr& child) {
        if (status.ok()) status = WalkExpressionInner(child, visitor);
      },
      [&](duckdb::TableRef& ref) {
        if (status.ok()) status = WalkHiddenParts(ref, visitor);
        if (status.ok() && visitor.relation) status = visitor.relation(ref);
      });
  return status;
}

// DuckDB's iterator calls its relation callback after a relation's children, for every
// relation of the node, those inside joins and FROM subqueries included.
Status WalkNodeInner(duckdb::QueryNode& node, const ParseVisitor& visitor) {
  return EnumerateWith(visitor, [&](const auto& on_expression, const auto& on_relation) {
    duckdb::ParsedExpressionIterator::EnumerateQueryNodeChildren(node, on_expression, on_relation);
  });
}

Status WalkRefInner(duckdb::TableRef& ref, const ParseVisitor& visitor) {
  return EnumerateWith(visitor, [&](const auto& on_expression, const auto& on_relation) {
    duckdb::ParsedExpressionIterator::EnumerateTableRefChildren(ref, on_expression, on_relation);
  });
}

}  // namespace

Status ParseError(const std::exception& e, std::string_view what) {
  return Status::InvalidArgument(std::string(what) + ": " + duckdb::ErrorData(e).Message());
}

namespace {

// An exception out of a walk: DuckDB's iterator refusing a shape it does not know is the
// statement's fault; running out of memory is not, nor is DuckDB failing inside.
Status WalkFailure(const std::exception& e, std::string_view what) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return Status::ResourceExhausted(std::string(what) + ": out of memory");
  }
  const duckdb::ErrorData error(e);
  switch (error.Type()) {
    case duckdb::ExceptionType::OUT_OF_MEMORY:
      return Status::ResourceExhausted(std::string(what) + ": " + error.Message());
    case duckdb::ExceptionType::INTERNAL:
    case duckdb::ExceptionType::FATAL:
      return Status::Internal(std::string(what) + ": " + error.Message());
    default:
      return ParseError(e, what);
  }
}

}  // namespace

Status WalkQueryNode(duckdb::QueryNode& node, const ParseVisitor& visitor) {
  try {
    return WalkNodeInner(node, visitor);
  } catch (const std::exception& e) {
    return WalkFailure(e, "unsupported query shape");
  }
}

Status WalkExpression(ParsedExprPtr& e, const ParseVisitor& visitor) {
  try {
    return WalkExpressionInner(e, visitor);
  } catch (const std::exception& ex) {
    return WalkFailure(ex, "unsupported query shape");
  }
}

Status WalkTableRef(duckdb::TableRef& ref, const ParseVisitor& visitor) {
  try {
    return WalkRefInner(ref, visitor);
  } catch (const std::exception& e) {
    return WalkFailure(e, "unsupported relation shape");
  }
}

}  // namespace skade::engine
