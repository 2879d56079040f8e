// Server-side rebase of REST commits (issue 34): a commit refused only because other commits
// moved a branch since the client loaded the table is applied by the server on the table's
// current state instead of answering 409 — what the client's own retry would do, minus a
// reload, a new manifest list and a round trip per conflict. commitTable and each table of a
// transactions/commit go through it.
//
// Provably safe only; anything else keeps its 409:
// - the updates are at most one add-snapshot whose operation is "append" with set-snapshot-ref
//   updates of branches to it, and any number of blind metadata updates: set/remove-properties,
//   set/remove-statistics, set/remove-partition-statistics;
// - every requirement holds on the current metadata except assert-ref-snapshot-id of branches
//   that only moved forward since (the asserted snapshot is an ancestor of the current head, or
//   the branch did not exist); with an append, only branches the append sets, all at one head;
// - an append's manifest list holds the manifests of its asserted parent, unchanged, plus data
//   manifests it added holding ADDED entries only (no existing or deleted entry, no delete
//   manifest; in v3 no entry with a first_row_id of its own); its snapshot id is new to the table;
// - the property keys and statistics snapshots the commit sets or removes were not changed by
//   other commits since the client's base: the oldest metadata version (from the metadata log)
//   in which every refused branch stood at its asserted snapshot. Where that version cannot be
//   found for certain (a trimmed log, too long a history), the commit keeps its 409.
// A rebased append keeps the client's snapshot id and manifests; it gets the branch's current
// head as parent, the next sequence number, a new manifest list (its added manifests first, then
// the head's), summary totals counted from the head and, in v3, first-row-id at the table's
// next-row-id with row ids handed out again to its manifests.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::rest {

struct RebasedCommit {
  catalog::TableCommit commit;  // requirements asserting the current heads, updates rebased
  std::string manifest_list;    // written by RebaseCommit (empty if none); delete it if the commit does not happen
};

// Reads a metadata file named by the metadata log (the caller applies its location rule).
using MetadataReader = std::function<Result<iceberg::TableMetadata>(const std::string& location)>;

// The rebase of `commit` onto `current` (the table's metadata now), writing an append's
// manifest list through `io` and reading earlier metadata versions through `read_metadata`
// where the commit changes properties or statistics; nullopt when the commit cannot be rebased
// safely (answer the original conflict). Errors reading manifest lists or writing the new one,
// as they come.
Result<std::optional<RebasedCommit>> RebaseCommit(const catalog::TableCommit& commit,
                                                  const iceberg::TableMetadata& current, io::FileIO& io,
                                                  const MetadataReader& read_metadata);

}  // namespace skade::rest
