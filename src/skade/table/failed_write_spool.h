// Failed writes of one catalog waiting for a consumer (the OpenLineage emitter sends each as a
// START and a FAIL event; DESIGN §9). A write that started and did not commit never reaches the
// commit log, so the processes that write (CLI, C API, servers) append it to a local JSON-lines
// file kept for the catalog. Writers append only while the file exists, i.e. once a consumer
// has enabled it: a lake nobody follows collects nothing. Local files only; one spool per
// catalog URI and one consumer per spool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/table/write_observer.h"

namespace skade::table {

class FailedWriteSpool final : public table::WriteObserver {
 public:
  // Past this size the spool takes no more writes (each dropped one is logged): a consumer
  // that stopped for good must not fill the disk.
  static constexpr int64_t kMaxBytes = int64_t{16} << 20;

  explicit FailedWriteSpool(std::string path) : path_(std::move(path)) {}
  // catalog::DefaultStatePath(catalog_uri, "failed-writes", ".jsonl").
  static std::string DefaultPath(const std::string& catalog_uri);
  const std::string& path() const { return path_; }

  // Appends the write (one line, under an exclusive lock, fsynced) when the spool exists.
  // Never fails the caller: problems are logged. Thread- and process-safe.
  void OnWriteFailed(const FailedWrite& write) override;

  // --- the consumer's side ---
  // Creates the spool (and its folder) when missing.
  Status Enable();
  // Moves what the spool holds behind the writes earlier takes left unsent (in path + ".sending"),
  // empties the spool, and returns every write not yet marked sent, oldest first. A line that
  // does not decode is logged and skipped.
  Result<std::vector<FailedWrite>> TakePending();
  // Every write TakePending returned was delivered.
  Status MarkSent();

 private:
  std::string path_;
};

// One spool line and back (exposed for tests).
std::string EncodeFailedWrite(const FailedWrite& write);
Result<FailedWrite> DecodeFailedWrite(const std::string& line);

}  // namespace skade::table
