// The web console's downstream lineage: the commits whose recorded inputs include a table (each
// snapshot summary's skade.lineage, table/snapshot_lineage.h) and the tables they wrote. An index
// kept from the catalog's commit log answers it: each request first reads the log past where the
// last one stopped and indexes again only the tables those commits wrote.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "skade/catalog/catalog.h"
#include "skade/console/route_answer.h"

namespace skade::console {

// The route's path (beside the REST catalog's /v1/…).
inline constexpr std::string_view kDownstreamPath = "/console/v1/downstream";

// Thread-safe (requests take turns on the index); borrows the catalog, which must outlive it.
class Downstream {
 public:
  explicit Downstream(catalog::Catalog& catalog) : catalog_(catalog) {}

  // Commits per page at most.
  static constexpr int64_t kMaxLimit = 1000;

  // Answers GET kDownstreamPath?table=NS.T[&offset=N][&limit=N] (nullopt for any other path):
  // {"table", "total", "offset", "indexed-through" (the commit_seq the index has read to),
  // "commits": [{"table": the table written, "snapshot": {"snapshot-id", "timestamp-ms",
  // "summary": {"operation", "skade.lineage"}}}]}: every snapshot still in a table's metadata
  // whose lineage names NS.T as an input, newest first (timestamp, then table, then snapshot id).
  // A catalog without a commit log answers no commits and says so in "note". 400 for a bad
  // parameter, 405 for another method, 500 when the log cannot be read.
  std::optional<RouteAnswer> Serve(std::string_view method, std::string_view path,
                                     const std::map<std::string, std::string>& query) const;

 private:
  struct Commit {
    std::string table;  // the table written
    int64_t snapshot_id = 0;
    int64_t timestamp_ms = 0;
    std::string operation;
    std::string lineage;  // the summary's skade.lineage, as recorded
    std::set<std::string> inputs;  // the lake tables it read
  };
  // Reads the log past through_seq_ and indexes the tables its commits wrote again (every
  // indexed table after a rename, which the log names by the new name only). The tables read
  // before a failed log read are indexed all the same.
  Status CatchUp() const;
  // Indexes `ident` from its metadata now: a table gone (kNotFound) leaves the index; one that
  // cannot be read now keeps its entries and is tried again at the next request.
  void Reindex(const catalog::TableIdent& ident) const;

  catalog::Catalog& catalog_;
  mutable std::mutex mu_;
  mutable int64_t through_seq_ = 0;
  mutable std::optional<Status> no_log_;  // set once the catalog said it keeps no log
  // A table → its commits with lineage; an input table → the tables written from it.
  mutable std::map<std::string, std::vector<Commit>> by_writer_;
  mutable std::map<std::string, std::set<std::string>> readers_;
  mutable std::map<std::string, catalog::TableIdent> writers_;  // by_writer_'s tables
  mutable std::map<std::string, catalog::TableIdent> retry_;    // unreadable at their last Reindex
};

}  // namespace skade::console
