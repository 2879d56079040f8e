// Turns a SQL boolean expression (DuckDB dialect, a checked Predicate) into an Iceberg filter
// for pruning. DuckDB's parser reads the SQL, in process; the parts Iceberg can express — comparisons, IN,
// IS [NOT] NULL, BETWEEN, LIKE 'prefix%', AND/OR/NOT over columns and constants of every type
// — are converted, and anything else becomes "true" so pruning stays conservative. The whole
// predicate must still be applied exactly by DuckDB.
#pragma once

#include <string_view>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/expression.h"
#include "skade/iceberg/schema.h"

namespace skade::engine {

// kInvalidArgument unless `where` is a boolean expression over `schema`'s columns (and the
// row-lineage columns): DuckDB would cast anything to BOOLEAN in a WHERE clause — a column
// `amount`, `1`, `'yes'` — so a predicate missing its comparison would match every row.
// A predicate this relation cannot bind (a name qualified by the table, a correlated subquery)
// passes: it is bound, and fails if it must, where it runs.
Status CheckBooleanPredicate(Database& db, const Predicate& where, const iceberg::Schema& schema);

// The same over the SQL relation `relation` (a view or table name, or a parenthesised query),
// strictly: a predicate that does not bind is an error too.
Status CheckBooleanOver(Database& db, const Predicate& where, const std::string& relation);

// Returns an expression bound to `schema` (AlwaysTrue when nothing is convertible); first
// checks that `where` is boolean (CheckBooleanPredicate).
Result<iceberg::ExprPtr> SqlToIcebergFilter(Database& db, const Predicate& where,
                                            const iceberg::Schema& schema);

}  // namespace skade::engine
