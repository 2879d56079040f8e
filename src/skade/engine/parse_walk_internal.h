// One walk over DuckDB's parse tree (allowed in engine/, DESIGN §3), for every reader of a parsed
// statement: the checks and renderings of user_sql.cc and the table names of
// referenced_tables.cc. DuckDB's ParsedExpressionIterator stops at subqueries inside
// expressions; this walk descends into them, so no check and no table lookup misses one.
#pragma once

#include <functional>
#include <string_view>

#include "duckdb.hpp"
#include "duckdb/parser/parsed_expression.hpp"
#include "duckdb/parser/query_node.hpp"
#include "duckdb/parser/tableref.hpp"
#include "skade/base/status.h"

namespace skade::engine {

using ParsedExprPtr = duckdb::unique_ptr<duckdb::ParsedExpression>;

// What a walk calls. `expression` sees every expression, a parent before its children, and may
// replace the node it is given (the walk then descends into the replacement). `relation` sees
// every relation (base table, join, subquery, table function, VALUES…) after its children; it
// may be empty. A callback's error stops the walk and is its answer.
struct ParseVisitor {
  std::function<Status(ParsedExprPtr&)> expression = {};
  std::function<Status(duckdb::TableRef&)> relation = {};
};

// Every expression and relation of a query node: its select list, FROM, WHERE, GROUP BY,
// HAVING, QUALIFY, modifiers, set operations and CTE bodies, every subquery below, and the parts
// of relations DuckDB's iterator leaves out (the query of DESCRIBE and SUMMARIZE, a table
// function's query argument, PIVOT's ON expressions and IN (SELECT …), UNPIVOT's expressions).
// Not an AT clause's expression (user_sql.cc checks those on their own). Exceptions end the
// walk (at these three entries): a shape DuckDB's iterator does not know is an InvalidArgument
// ("unsupported query shape: …"), running out of memory ResourceExhausted, a failure inside
// DuckDB Internal.
Status WalkQueryNode(duckdb::QueryNode& node, const ParseVisitor& visitor);

// `e` and everything below it (nothing when `e` is null).
Status WalkExpression(ParsedExprPtr& e, const ParseVisitor& visitor);

// Every expression of a relation (subqueries in FROM, join conditions, table function
// arguments, VALUES lists) and its inner relations, then the relation itself.
Status WalkTableRef(duckdb::TableRef& ref, const ParseVisitor& visitor);

// DuckDB's parse errors are exceptions whose what() is JSON; this is the message, after `what`.
Status ParseError(const std::exception& e, std::string_view what);

}  // namespace skade::engine
