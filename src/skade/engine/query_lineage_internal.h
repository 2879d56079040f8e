// Registers the table function behind DeriveLineage (query_lineage.h) in a database.
#pragma once

#include "duckdb.hpp"
#include "skade/base/status.h"

namespace skade::engine {

// __skade_query_lineage('<query>', '<key>'): one row, one VARCHAR column holding the query's
// lineage as JSON, for DeriveLineage only (the key is a secret of the process: any other caller
// is refused). Before any query runs. kInternal if DuckDB refuses.
Status RegisterQueryLineageFunction(duckdb::DatabaseInstance& instance);

}  // namespace skade::engine
