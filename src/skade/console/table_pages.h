// The web console's paged reads of the lake: the namespace tree with its tables as rows (any
// slice of them), a table's metadata without its history, and its snapshots a page at a time, so
// that a lake of 10,000 tables or a table of 100,000 snapshots costs the browser what it shows.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "skade/catalog/catalog.h"
#include "skade/console/route_answer.h"

namespace skade::console {

// The routes' paths (beside the REST catalog's /v1/…).
inline constexpr std::string_view kTreePath = "/console/v1/tree";
inline constexpr std::string_view kTablePath = "/console/v1/table";
inline constexpr std::string_view kSnapshotsPath = "/console/v1/snapshots";

// Thread-safe as the catalog is; borrows it, which must outlive the pages.
class TablePages {
 public:
  explicit TablePages(catalog::Catalog& catalog) : catalog_(catalog) {}

  // Rows per page at most (tree rows, snapshots).
  static constexpr int64_t kMaxLimit = 1000;

  // Answers GET for the three paths (nullopt for any other path); 400 for a bad parameter, 404 for
  // a table that does not exist, 405 for another method (with Allow). Offsets past the end give
  // no rows.
  //  - kTreePath?offset=N&limit=N: {"total", "namespaces", "tables", "offset", "rows": [{"namespace":
  //    [levels], "depth"} or {"namespace", "name", "depth"}]}: every namespace, depth first and
  //    sorted, each followed by its tables, then by its children.
  //  - kTablePath?table=NS.T: {"metadata-location", "snapshot-count", "metadata": the metadata
  //    JSON with only the current snapshot and those refs name, and empty snapshot and metadata
  //    logs}.
  //  - kSnapshotsPath?table=NS.T&offset=N&limit=N[&summary-key=K]: {"total", "offset",
  //    "snapshots": [snapshot JSON, newest first (timestamp, then order in the metadata)]}; with
  //    summary-key, only the snapshots whose summary has K (e.g. skade.lineage), counted so.
  std::optional<RouteAnswer> Serve(std::string_view method, std::string_view path,
                                     const std::map<std::string, std::string>& query) const;

 private:
  RouteAnswer Tree(int64_t offset, int64_t limit) const;
  RouteAnswer Table(const catalog::TableIdent& ident) const;
  RouteAnswer Snapshots(const catalog::TableIdent& ident, int64_t offset, int64_t limit,
                        std::string_view summary_key) const;

  catalog::Catalog& catalog_;
};

}  // namespace skade::console
