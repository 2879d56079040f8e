// Internal to engine/: DuckDB logical types (C API handles) spelled as DuckDB's SQL writes them.
#pragma once

#include <string>

#include "duckdb.h"

namespace skade::engine {

// "BIGINT", "DECIMAL(18,3)", "TIMESTAMP WITH TIME ZONE", "INTEGER[]", "VARCHAR[3]",
// "STRUCT(a INTEGER, \"b c\" VARCHAR)", "MAP(VARCHAR, DOUBLE)", "UNION(i INTEGER, s VARCHAR)";
// an alias (a user type) by its name. Borrows `type`.
std::string DuckTypeSpelling(duckdb_logical_type type);

}  // namespace skade::engine
