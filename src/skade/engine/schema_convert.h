// Type conversions between Iceberg and DuckDB. Iceberg schemas from DuckDB types: parsed column definitions ("id BIGINT NOT NULL, tags
// VARCHAR[]", user_sql.h) or the result columns of a query (e.g. read_parquet of a sample file), with field ids assigned
// as Iceberg does for a new table (top-level fields first, then nested, from 1).
#pragma once

#include <optional>
#include <string_view>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/schema.h"

namespace skade::engine {

// kInvalidArgument for types Iceberg can't hold (e.g. UBIGINT, INTERVAL); the PRIMARY KEY
// columns become the identifier fields.
Result<iceberg::SchemaPtr> SchemaFromDefinition(const TableDefinition& definition);
// Column definitions from a user ("id BIGINT NOT NULL, …"): ParseTableDefinition, then
// SchemaFromDefinition. Nothing is executed.
Result<iceberg::SchemaPtr> SchemaFromColumnDefinitions(std::string_view text);
// The result columns of `query` (SQL built by skade or a Query's rendering). kInvalidArgument
// for SQL DuckDB rejects or types Iceberg can't hold.
Result<iceberg::SchemaPtr> SchemaFromQuery(Database& db, std::string_view query);

// The DuckDB type name for an Iceberg type ("DECIMAL(9,2)", "STRUCT(\"a\" INTEGER)", …).
// kNotImplemented for types DuckDB can't represent (variant, geometry, geography).
Result<std::string> DuckTypeName(const iceberg::Type& type);

// The Arrow schema of a relation of `schema`'s columns (the types DuckTypeName gives them): made
// here, as DuckDB's Arrow export would give it, for the types whose export is settled; nullopt
// for any other (UUID, unknown, nested ones holding them). RelationArrowSchema asks DuckDB then.
std::optional<arrow::SchemaHandle> DirectArrowSchema(const iceberg::Schema& schema);
// The Arrow schema of a relation of `schema`'s columns: DirectArrowSchema, else DuckDB's own of an
// empty relation (a query, ~0.5 ms: GetTables over thousands of tables felt it).
Result<arrow::SchemaHandle> RelationArrowSchema(Database& db, const iceberg::SchemaPtr& schema);

// An Iceberg type from a DuckDB type name (as DESCRIBE prints it); nested field ids are
// assigned from *next_id onward.
Result<iceberg::TypePtr> IcebergTypeFromDuck(std::string_view duck_type, int* next_id);

}  // namespace skade::engine
