// A commit log for a catalog that keeps none (Nessie, a REST catalog without a change feed, a
// database written by Java's JdbcCatalog or PyIceberg's SqlCatalog, a folder of tables): the
// catalog's tables are polled for a changed metadata location, and each change becomes a
// commit-log entry in a local SQLite file. Commit events, `skade watch` and lineage then work
// over such a catalog as over skade's own, with a cursor that survives restarts.
//
// What polling can and cannot see: one entry per observed change of a table's metadata file
// (several commits between two polls appear as one, with the latest snapshot's operation and
// record counts); a new table is "create", a vanished one "drop" (a rename is a drop and a
// create), a new metadata file with the same current snapshot is "update". Tables that exist
// when the log is first created are its baseline, not events. Changes made through this
// catalog object are logged at once, without waiting for the next poll.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"

namespace skade::catalog {

struct PolledLogOptions {
  // The local log database; created (with its folder) when missing. One per catalog: two
  // catalogs must not share it.
  std::string state_path;
  std::chrono::milliseconds interval{2000};
};

// `inner` with a polled commit log: CommitsSince, LatestCommitSeq and the commit listener
// come from the local log; everything else passes through. A poll that fails (the catalog is
// unreachable) is logged and retried at the next interval; a table that fails to load is left
// as it was. kIoError when the state database cannot be opened.
Result<std::unique_ptr<Catalog>> WithPolledCommitLog(std::unique_ptr<Catalog> inner, PolledLogOptions options);

// A local state file kept for a catalog: $XDG_STATE_HOME/skade (or ~/.local/state/skade)
// /<stem>-<hash of the URI without its query><extension>.
std::string DefaultStatePath(const std::string& catalog_uri, std::string_view stem, std::string_view extension);

// The polled log's: DefaultStatePath(catalog_uri, "polled", ".db").
std::string DefaultPolledLogPath(const std::string& catalog_uri);

}  // namespace skade::catalog
