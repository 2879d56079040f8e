// Runs a Transform from one table into another (DESIGN §7): the source is read as Arrow
// batches, each batch goes through the transform, and the output is appended to the sink in
// one snapshot. That snapshot records its lineage (snapshot_lineage.h): the source table at
// the snapshot read and, per output column, the source columns Transform::ColumnLineage()
// names, so the OpenLineage events of the commit carry inputs and column lineage.
#pragma once

#include "skade/base/status.h"
#include "skade/table/interfaces.h"
#include "skade/table/table.h"

namespace skade::table {

// kInvalidArgument when the transform's column lineage names an output column its output
// schema lacks or a source column the source's schema lacks; the transform's own errors as it
// reports them (nothing is committed then). The sink's snapshot lineage is restored after.
Result<CommitOutcome> RunTransform(Table& source, Transform& transform, Table& sink, const ReadOptions& read = {});

}  // namespace skade::table
