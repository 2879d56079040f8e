// The base tables one SELECT names, read from DuckDB's parse tree in process (views are not
// expanded): what Database::ReferencedTables answers for a query without running a statement.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace skade::engine {

// Each base table the statement names, anywhere in it (joins, subqueries, CTE bodies, set
// operations, table function arguments), as the parts given: [catalog,] [schema,] table. CTE
// names appear too (the parse does not know them from tables). nullopt when `sql` is not one
// SELECT statement, does not parse, or holds a form the walk does not know (DESCRIBE, PIVOT…):
// the caller then asks DuckDB.
std::optional<std::vector<std::vector<std::string>>> SelectBaseTables(const std::string& sql);

}  // namespace skade::engine
