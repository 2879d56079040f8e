// The lineage a snapshot records about where its rows came from (DESIGN §9): the input tables
// (at the snapshots read) and, per output column, the input columns it is derived from. It is
// kept in the snapshot summary under kSnapshotLineageKey, so it is as durable as the commit and
// every process that reads the table's metadata (the OpenLineage emitter included) sees it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/table_metadata.h"

namespace skade::table {

inline constexpr const char* kSnapshotLineageKey = "skade.lineage";

struct LineageInput {
  catalog::TableIdent table;
  std::optional<int64_t> snapshot_id;  // the snapshot read; nullopt for an empty table
  friend bool operator==(const LineageInput&, const LineageInput&) = default;
};

struct LineageField {
  size_t input = 0;  // index into SnapshotLineage::inputs
  std::string field;  // the input column (dotted for a nested field)
  friend bool operator==(const LineageField&, const LineageField&) = default;
};

struct SnapshotLineage {
  std::vector<LineageInput> inputs;
  // Output column → the input columns it reads.
  std::map<std::string, std::vector<LineageField>> columns;
  bool empty() const { return inputs.empty(); }
  friend bool operator==(const SnapshotLineage&, const SnapshotLineage&) = default;
};

// Compact JSON: {"inputs":[{"table":"ns.t","snapshot-id":1}],"columns":{"out":[[0,"in"]]}}.
std::string EncodeSnapshotLineage(const SnapshotLineage& lineage);
// kInvalidArgument for text that is not such JSON, names an invalid table or an input index out
// of range.
Result<SnapshotLineage> DecodeSnapshotLineage(std::string_view json);
// The lineage `snapshot` records; nullopt when it records none. One that does not decode is
// reported (a foreign writer used the key) as kInvalidArgument.
Result<std::optional<SnapshotLineage>> SnapshotLineageOf(const iceberg::Snapshot& snapshot);

}  // namespace skade::table
