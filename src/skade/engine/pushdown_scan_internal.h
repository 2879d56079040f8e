// Registers the skade_scan table function (pushdown_scan.h) in a database.
#pragma once

#include <memory>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/pushdown_scan.h"

namespace skade::engine {

// Before any query runs. kInternal if DuckDB refuses.
Status RegisterPushdownScanFunction(duckdb_database db, std::shared_ptr<ScanSources> sources);

}  // namespace skade::engine
