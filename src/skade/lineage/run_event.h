// OpenLineage RunEvents for catalog commits (DESIGN §9; OpenLineage spec 2-0-2 and its facets,
// ../shared/fixtures/openlineage/). One commit is one run: a START and a COMPLETE event with
// the same runId, derived from the commit so that a resend carries the same id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "skade/base/uuid.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/table/write_observer.h"

namespace skade::lineage {

// The spec version events are written to, and skade's producer URI (with its version).
inline constexpr const char* kSchemaUrl = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";
std::string ProducerUri();

struct LineageNaming {
  std::string job_namespace = "skade";
  // The datasets' namespace; DefaultDatasetNamespace(warehouse) when empty.
  std::string dataset_namespace;
  std::string catalog_name = "skade";  // dataSource and catalog facet name
  std::string catalog_uri;             // catalog facet metadataUri (no secrets: the caller redacts)
  std::string warehouse;               // catalog facet warehouseUri
  // Add a symlinks facet naming the table's storage location, so events other engines emit
  // for the same table by location (Spark names Iceberg tables by their folder) meet skade's.
  bool storage_symlink = true;
};

// "skade://<host name>/<warehouse without its leading '/'>", e.g. "skade://lake1/srv/lake".
std::string DefaultDatasetNamespace(std::string_view warehouse);

// The run id of a commit: a version-7 UUID whose time is the commit's and whose other bits are
// a hash of the dataset namespace, the commit_seq and the table, so every build of the events
// of one commit carries the same id, and commits of different lakes differ.
Uuid CommitRunId(const LineageNaming& naming, const catalog::CommitLogEntry& entry);

// The job name of a commit: "<operation>:<table>", e.g. "append:sales.orders".
std::string CommitJobName(const catalog::CommitLogEntry& entry);

// The run a commit's run belongs to (ParentRunFacet): the transaction of a multi-table commit.
struct ParentRun {
  std::string run_id;
  std::string job_name;  // in LineageNaming::job_namespace
};

// The START and COMPLETE events of one commit, as compact JSON (in that order). `metadata` is
// the table as the commit left it (null when the commit removed it: a drop). The output
// dataset carries schema, dataSource, catalog, version (the snapshot id), lifecycleStateChange
// (create, drop, overwrite, schema changes), symlinks and, for a snapshot, outputStatistics
// (rows, bytes and data files the snapshot added). On COMPLETE, a commit that added a snapshot
// also carries the icebergCommitReport output facet (snapshot id, sequence number, operation and
// the commit metrics its summary records; a value skade does not know is left out). A write
// that planned a scan of its own table (copy-on-write, compaction) names the table as its input
// with the icebergScanReport input facet; tables a transform read are inputs with their
// snapshot in icebergScanReport. `parent`, when given, adds a parent run facet to both events.
std::vector<std::string> CommitRunEvents(const catalog::CommitLogEntry& entry, const iceberg::TableMetadata* metadata,
                                         const LineageNaming& naming, const ParentRun* parent = nullptr);

// Whether consecutive log entries sharing a txn_id are a multi-table commit (two or more tables).
bool IsMultiTableCommit(const std::vector<catalog::CommitLogEntry>& entries);
// The parent run of a multi-table commit: a version-7 UUID at the commit's time whose other bits
// hash the dataset namespace and the txn_id, and the job "transaction:<tables, sorted, joined
// with ','>".
ParentRun TransactionParentRun(const LineageNaming& naming, const std::vector<catalog::CommitLogEntry>& entries);
// The parent run's START and COMPLETE events (no datasets: each table's child run names its own).
std::vector<std::string> TransactionRunEvents(const LineageNaming& naming,
                                              const std::vector<catalog::CommitLogEntry>& entries);

// The START and FAIL events of a write that started and did not commit (its error in an
// errorMessage facet; the output names the table, with no version: nothing was committed; the
// inputs are the write's lineage). The run id is a version-7 UUID at the write's start whose
// other bits hash the table, operation and times, so one failed write always gives one id.
std::vector<std::string> FailedWriteRunEvents(const table::FailedWrite& write, const LineageNaming& naming);

// CommitRunEvents for commits as the log records them: the table metadata each commit left is
// read through `io` (borrowed); one that cannot be read any more (expired, removed) gives
// events without schema and statistics, with a log line. The default dataset namespace is
// resolved once. Thread-compatible.
class CommitEventBuilder {
 public:
  CommitEventBuilder(io::FileIO& io, LineageNaming naming);
  std::vector<std::string> Build(const catalog::CommitLogEntry& entry, const ParentRun* parent = nullptr) const;
  // The events of the log entries of one catalog transaction (consecutive, sharing a txn_id),
  // in delivery order: for a multi-table commit the parent's START, then each table's START and
  // COMPLETE (each with the parent facet), then the parent's COMPLETE; otherwise each entry's
  // own events in turn.
  std::vector<std::string> BuildTransaction(const std::vector<catalog::CommitLogEntry>& entries) const;

 private:
  io::FileIO& io_;
  LineageNaming naming_;
};

}  // namespace skade::lineage
