// Server-side rebase of REST appends (issue 34): a commit that adds one append snapshot to a
// branch, refused only because other commits moved that branch since the client loaded the
// table, is re-based by the server on the branch's current snapshot instead of answering 409
// — what the client's own retry would do (an append validates nothing against concurrent
// commits), minus a reload, a new manifest list and a round trip per conflict.
//
// Provably safe only, anything else keeps its 409:
// - the updates are one add-snapshot whose operation is "append" and set-snapshot-ref updates of
//   branches to it; every requirement holds on the current metadata except assert-ref-snapshot-id
//   of such a branch, whose asserted snapshot is an ancestor of the branch's current one (the
//   branch only moved forward) or absent;
// - the snapshot's manifest list holds the manifests of its asserted parent, unchanged, plus data
//   manifests the snapshot added that hold ADDED entries only (no existing or deleted entry, no
//   delete manifest): checked from the list's counts, or by reading the manifest;
// - format version 1 or 2 (v3's row ids would have to move), a snapshot id the table has not
//   seen.
// The rebased snapshot keeps the client's id and manifests; it gets the branch's current
// snapshot as parent, the next sequence number, a new manifest list (its added manifests
// first, then the current snapshot's) and summary totals counted from the current snapshot.
#pragma once

#include <optional>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::rest {

struct RebasedAppend {
  catalog::TableCommit commit;  // requirements asserting the current branch head, updates rebased
  std::string manifest_list;    // written by RebaseAppend; delete it if the commit does not happen
};

// The rebase of `commit` onto `current` (the table's metadata now), writing its manifest list
// through `io`; nullopt when the commit is not an append that can be rebased safely (answer the
// original conflict). Errors reading the client's or the current manifest lists, or writing the
// new one, as they come.
Result<std::optional<RebasedAppend>> RebaseAppend(const catalog::TableCommit& commit,
                                                  const iceberg::TableMetadata& current, io::FileIO& io);

}  // namespace skade::rest
