// Column lineage of a query from the plan DuckDB binds for it (never from its text): the relations
// it reads and, per result column, their columns it derives from and how (OpenLineage's
// columnLineage 1-2-0 transformations). No DuckDB type here (DESIGN §3).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::engine {

class Database;

// A relation a query reads: a table function call (a lake table's view reads
// skade_scan('<token>'), a file read_parquet('<path>')) or a table of DuckDB's own.
struct LineageSource {
  std::string function;                // the table function; empty for a DuckDB table
  std::vector<std::string> arguments;  // its text arguments in order (each element of a list)
  std::vector<std::string> table;      // a DuckDB table: catalog, schema, name
  friend bool operator==(const LineageSource&, const LineageSource&) = default;
};

// How an input column reaches an output (OpenLineage's transformation subtypes). The first
// three are DIRECT (the value flows into the output), the others INDIRECT (it decides which
// rows or which value, without flowing in).
enum class LineageSubtype {
  kIdentity,        // copied as it is
  kTransformation,  // computed from it row by row (functions, casts, CASE branches)
  kAggregation,     // aggregated over rows
  kJoin,            // a join condition
  kGroupBy,         // a grouping key (GROUP BY, DISTINCT)
  kFilter,          // a filter (WHERE, HAVING, QUALIFY, semi and anti joins, EXCEPT)
  kSort,            // an ordering (ORDER BY)
  kWindow,          // a window's partition or order
  kConditional,     // a condition choosing the value (CASE WHEN, FILTER of an aggregate)
};

// "DIRECT" or "INDIRECT"; and the subtype's name ("IDENTITY", "GROUP_BY", …).
const char* LineageTypeName(LineageSubtype subtype);
const char* LineageSubtypeName(LineageSubtype subtype);

// One input column of an output: source column `column` of sources[source].
struct LineageOrigin {
  size_t source = 0;
  std::string column;
  LineageSubtype subtype = LineageSubtype::kIdentity;
  bool masking = false;  // passed through a hash (md5, sha1, sha256, hash): the value is not recoverable
  friend bool operator==(const LineageOrigin&, const LineageOrigin&) = default;
};

struct QueryLineage {
  std::vector<LineageSource> sources;  // each distinct relation read, in plan order
  std::vector<std::string> columns;    // the result columns' names
  // Per result column, its input columns: each (source, column, subtype) once, sorted.
  std::vector<std::vector<LineageOrigin>> origins;
  // Input columns that act on the whole result (filters, join keys, grouping, ordering).
  std::vector<LineageOrigin> dataset;
  // False when the plan holds an operator whose column flow is not traced: `origins` and
  // `dataset` are then left empty rather than incomplete (the sources are still all named).
  bool columns_traced = true;
  std::string untraced;  // what was not traced, when columns_traced is false (for a log line)
};

// Binds `query` (one SELECT, VALUES, WITH … or set operation; rendered by skade, e.g.
// Query::sql()) on a connection of `db` — with its setup, so names resolve as they do for a
// session (Database::WithConnectionSetup) — and derives its lineage from the bound plan before
// any optimisation. Nothing runs and no table function is planned or read. kInvalidArgument for
// SQL DuckDB cannot bind or that is not one query.
Result<QueryLineage> DeriveLineage(Database& db, std::string_view query);

}  // namespace skade::engine
