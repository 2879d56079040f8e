// Engine-internal access to the DuckDB under a Database, for code that reads through a
// connection of its own (e.g. delete files loaded while a scan is built).
#pragma once

#include "duckdb.h"
#include "skade/engine/database.h"

namespace skade::engine {

struct DatabaseAccess {
  // Borrowed: valid while the Database (or the one it views) lives.
  static duckdb_database Raw(const Database& db);
};

}  // namespace skade::engine
