// A read planned while it is read. The planner streams the snapshot's data files on a thread of
// its own; the reader takes them in parts, each the SQL of a few files, and turns a part into
// SQL only when it asks for it. The planner runs at most one part ahead of the reader (plus the
// few manifests iceberg::ScanPlanner reads ahead), so a reader that stops early (a LIMIT
// satisfied by the first rows) has read the manifests of the part after its last, not the
// table's: a LIMIT 10 over 100,000 files costs what it costs over a few hundred. Memory holds
// two parts' files at most, whatever the number of manifests. Delete manifests are all read
// first, as every scan of the table needs them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/pushdown_scan.h"
#include "skade/iceberg/manifest_cache.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"
#include "skade/table/table.h"

namespace skade::table {

// What a parted read reads: a snapshot of a table, planned through `io`.
struct PartedReadPlan {
  // Keeps what io, metadata, snapshot and cache point to alive as long as the read (null when
  // they outlive it anyway).
  std::shared_ptr<const void> owner;
  io::FileIO* io = nullptr;  // reads manifest lists and manifests
  const iceberg::TableMetadata* metadata = nullptr;
  const iceberg::Snapshot* snapshot = nullptr;  // null: the read has no part
  iceberg::ExprPtr filter;                      // prunes manifests and files (may be null)
  iceberg::ManifestCache* cache = nullptr;      // optional
  engine::IcebergScan scan;                     // the read, without tasks
  engine::ScanQuery query;                      // columns and where of each part; limit unused
};

// Made by Table::ReadInParts, or from a plan. One reader thread at a time; destroying it stops
// the planner. As engine::ScanParts, it is what a skade_scan source plans (pushdown_scan.h).
class PartedRead final : public engine::ScanParts {
 public:
  // Starts the planner. `db` runs the parts' SQL; it must outlive the read.
  PartedRead(engine::Database& db, PartedReadPlan plan);
  // Files of the first part; each next part holds kGrowth times more, up to kMaxPartFiles. The
  // first is small so that the first rows come at once; the later ones are large so that a
  // whole read pays the set-up of a query (footers, checksums) over many files at a time.
  static constexpr size_t kFirstPartFiles = 8;
  static constexpr size_t kGrowth = 4;
  static constexpr size_t kMaxPartFiles = 2048;

  ~PartedRead() override;
  PartedRead(const PartedRead&) = delete;
  PartedRead& operator=(const PartedRead&) = delete;

  // The SQL of the next part's rows (as ReadSql over only that part's files, without the
  // limit), nullopt after the last. A read of a table without files has no part. A planning
  // error (a missing manifest) comes from the call that would have needed its files.
  Result<std::optional<std::string>> Next() override;

  // The SQL of no rows with the read's columns and types (for a read without parts).
  Result<std::string> EmptySql();

  // The rows of every part as one Arrow stream (bounded memory), at most `limit` of them: each
  // part's query runs once the one before is exhausted, and none after the limit is reached.
  // Errors of a later part (a missing manifest or file) come from the get_next that needed it.
  static Result<arrow::StreamHandle> Stream(std::unique_ptr<PartedRead> read, std::optional<int64_t> limit);

  // Data files the planner has handed on so far (taken or waiting), for tests and benchmarks.
  int64_t files_planned() const;

 private:
  void Plan();  // the planner thread

  engine::Database& db_;
  PartedReadPlan plan_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::vector<iceberg::FileScanTask>> ready_;  // planned parts not yet taken
  bool planned_ = false;    // the planner has handed on its last part
  bool stopping_ = false;   // the reader is gone: the planner stops at its next file
  Status plan_status_;      // the planner's error, given once the parts before it are taken
  int64_t files_planned_ = 0;
  std::thread planner_;
};

}  // namespace skade::table
