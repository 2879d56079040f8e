// Iceberg transforms as DuckDB scalar functions, so partition values computed in SQL match the
// spec exactly (bucket needs the spec's Murmur3; the others are plain SQL, see PartitionSql).
#pragma once

#include "duckdb.h"
#include "skade/base/status.h"

namespace skade::engine {

// Registers iceberg_bucket(x, n) for BIGINT (ints, dates, times, timestamps as their long
// value), VARCHAR (UTF-8 bytes), BLOB and HUGEINT (decimal unscaled values), and
// iceberg_bucket_uuid(VARCHAR, n) (canonical UUID text, hashed as its 16 bytes). Database-wide.
Status RegisterIcebergFunctions(duckdb_connection con);

}  // namespace skade::engine
