#include "skade/engine/parse_walk_internal.h"

#include <exception>
#include <string>

#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/statement/select_statement.hpp"

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

// Runs `enumerate` (one of DuckDB's iterator calls) with callbacks that walk each expression
// and show each relation to the visitor, until the first error.
template <typename Enumerate>
Status EnumerateWith(const ParseVisitor& visitor, Enumerate&& enumerate) {
  Status status;
  enumerate(
      [&](ParsedExprPtr& child) {
        if (status.ok()) status = WalkExpressionInner(child, visitor);
      },
      [&](duckdb::TableRef& ref) {
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

Status WalkQueryNode(duckdb::QueryNode& node, const ParseVisitor& visitor) {
  try {
    return WalkNodeInner(node, visitor);
  } catch (const std::exception& e) {
    return ParseError(e, "unsupported query shape");
  }
}

Status WalkExpression(ParsedExprPtr& e, const ParseVisitor& visitor) {
  try {
    return WalkExpressionInner(e, visitor);
  } catch (const std::exception& ex) {
    return ParseError(ex, "unsupported query shape");
  }
}

Status WalkTableRef(duckdb::TableRef& ref, const ParseVisitor& visitor) {
  try {
    return WalkRefInner(ref, visitor);
  } catch (const std::exception& e) {
    return ParseError(e, "unsupported relation shape");
  }
}

}  // namespace skade::engine
