// Told about writes that started and did not commit, so lineage can report them as failed runs
// (OpenLineage FAIL). Committed writes need no observer: the commit log has them.
#pragma once

#include <cstdint>
#include <string>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/table/snapshot_lineage.h"

namespace skade::table {

struct FailedWrite {
  catalog::TableIdent table;
  std::string operation;  // "append", "overwrite", "delete", "replace"
  int64_t started_at_us = 0;
  int64_t failed_at_us = 0;
  std::string error;  // the write's Status, as Status::ToString() renders it
  SnapshotLineage lineage;  // what the write would have recorded (set_snapshot_lineage)
};

// Implementations must be thread-safe (tables of several threads share one) and must not fail
// the write: OnWriteFailed is called after the write failed and its result is already decided.
class WriteObserver {
 public:
  virtual ~WriteObserver() = default;
  virtual void OnWriteFailed(const FailedWrite& write) = 0;
};

}  // namespace skade::table
