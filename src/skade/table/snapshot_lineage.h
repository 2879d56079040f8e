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
// What skade's commit records about itself in each snapshot summary it writes, for the
// OpenLineage commit report (Iceberg's CommitMetrics): the attempt that committed (1 = first try)
// and when the commit began (µs since the epoch: after the data was written, before the first
// attempt), so the commit log's committed_at_us minus it is the commit's duration.
inline constexpr const char* kCommitAttemptKey = "skade.commit-attempt";
inline constexpr const char* kCommitStartedAtKey = "skade.commit-started-at-us";

struct LineageInput {
  catalog::TableIdent table;  // a table of the lake (unset when `location` is set)
  std::optional<int64_t> snapshot_id;  // the snapshot read; nullopt for an empty table
  // Files read that are no table of the lake (read_parquet('…') in SQL): their location as
  // given (a file, folder or glob), normalised; empty for a lake table.
  std::string location;
  friend bool operator==(const LineageInput&, const LineageInput&) = default;
};

// How an input column reaches an output, in OpenLineage's columnLineage terms (facet 1-2-0):
// type DIRECT (IDENTITY, TRANSFORMATION, AGGREGATION) or INDIRECT (JOIN, GROUP_BY, FILTER,
// SORT, WINDOW, CONDITIONAL); masking when the value passed through a hash.
struct LineageTransformation {
  std::string type;
  std::string subtype;
  bool masking = false;
  friend bool operator==(const LineageTransformation&, const LineageTransformation&) = default;
};

struct LineageField {
  size_t input = 0;  // index into SnapshotLineage::inputs
  std::string field;  // the input column (dotted for a nested field)
  // How it reaches the output; empty when the writer did not say (a Transform's lineage).
  std::vector<LineageTransformation> transformations;
  friend bool operator==(const LineageField&, const LineageField&) = default;
};

struct SnapshotLineage {
  std::vector<LineageInput> inputs;
  // Output column → the input columns it reads.
  std::map<std::string, std::vector<LineageField>> columns;
  // Input columns that act on all of the rows written rather than on one column (join keys,
  // filters, grouping: OpenLineage's dataset-level lineage), each with its transformations.
  std::vector<LineageField> dataset;
  bool empty() const { return inputs.empty(); }
  friend bool operator==(const SnapshotLineage&, const SnapshotLineage&) = default;
};

// The scan a write planned of its own table before writing (a copy-on-write delete or
// overwrite, a compaction), in the terms of Iceberg's ScanReport; kept in the snapshot summary
// under kScanReportKey so the OpenLineage emitter can report it. Counts are of that one plan.
inline constexpr const char* kScanReportKey = "skade.scan-report";

struct ScanReport {
  int64_t snapshot_id = 0;  // the snapshot planned
  int schema_id = 0;
  std::string filter;  // the row filter as the write was given it; empty: every row
  std::vector<std::string> projected_field_names;
  int64_t planning_duration_us = 0;
  int64_t result_data_files = 0;
  int64_t result_delete_files = 0;  // distinct delete files that apply to the result
  int64_t skipped_data_files = 0;   // pruned by partition values or column bounds
  int64_t total_file_size_in_bytes = 0;         // of the result data files
  int64_t total_delete_file_size_in_bytes = 0;  // of the result delete files
  int64_t indexed_delete_files = 0;             // delete files the planner indexed
  friend bool operator==(const ScanReport&, const ScanReport&) = default;
};

// Compact JSON with the spec-style keys ("snapshot-id", "result-data-files", …).
std::string EncodeScanReport(const ScanReport& report);
// kInvalidArgument for text that is not such JSON.
Result<ScanReport> DecodeScanReport(std::string_view json);
// The scan report `snapshot` records; nullopt when none. One that does not decode:
// kInvalidArgument.
Result<std::optional<ScanReport>> ScanReportOf(const iceberg::Snapshot& snapshot);

// Compact JSON: {"inputs":[{"table":"ns.t","snapshot-id":1},{"location":"/data/x.parquet"}],
// "columns":{"out":[[0,"in"],[0,"k",[["INDIRECT","FILTER"],["DIRECT","TRANSFORMATION",true]]]]},
// "dataset":[[0,"k",[["INDIRECT","JOIN"]]]]}: a field is [input, column] or [input, column,
// transformations], a transformation [type, subtype] or [type, subtype, masking]; "dataset" only
// when not empty.
std::string EncodeSnapshotLineage(const SnapshotLineage& lineage);
// kInvalidArgument for text that is not such JSON, names an invalid table or an input index out
// of range, or a transformation type other than DIRECT and INDIRECT.
Result<SnapshotLineage> DecodeSnapshotLineage(std::string_view json);
// The lineage `snapshot` records; nullopt when it records none. One that does not decode is
// reported (a foreign writer used the key) as kInvalidArgument.
Result<std::optional<SnapshotLineage>> SnapshotLineageOf(const iceberg::Snapshot& snapshot);

}  // namespace skade::table
