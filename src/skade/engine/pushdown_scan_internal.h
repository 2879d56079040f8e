// Registers the skade_scan table function (pushdown_scan.h) in a database, and with it the
// lineage function that traces queries through its sources (query_lineage_internal.h).
#pragma once

#include <memory>

#include "duckdb.h"
#include "skade/base/status.h"
#include "skade/engine/data_file_checks.h"
#include "skade/engine/pushdown_scan.h"

namespace skade::engine {

// Before any query runs. `checks` (borrowed, may be null, must outlive the database) names the
// damaged file behind a read error of a source's query. kInternal if DuckDB refuses.
Status RegisterPushdownScanFunction(duckdb_database db, std::shared_ptr<ScanSources> sources,
                                    DataFileChecks* checks);

}  // namespace skade::engine
