// Iceberg schemas from DuckDB types: column definitions ("id BIGINT NOT NULL, tags VARCHAR[]")
// or the result columns of a query (e.g. read_parquet of a sample file), with field ids assigned
// as Iceberg does for a new table (top-level fields first, then nested, from 1).
#pragma once

#include <string_view>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/schema.h"

namespace skade::engine {

// kInvalidArgument for SQL DuckDB rejects or types Iceberg can't hold (e.g. UBIGINT, INTERVAL).
Result<iceberg::SchemaPtr> SchemaFromColumnDefinitions(Database& db, std::string_view columns_sql);
Result<iceberg::SchemaPtr> SchemaFromQuery(Database& db, std::string_view query);

// An Iceberg type from a DuckDB type name (as DESCRIBE prints it); nested field ids are
// assigned from *next_id onward.
Result<iceberg::TypePtr> IcebergTypeFromDuck(std::string_view duck_type, int* next_id);

}  // namespace skade::engine
