// Table: one Iceberg table of a catalog, with the read path (plan + DuckDB scan as Arrow
// streams) and the write path (each operation writes data files, manifests and a manifest list,
// then commits one snapshot through the catalog, retrying rebasable operations on conflict).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/engine/data_writer.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/iceberg/scan.h"
#include "skade/io/file_io.h"

namespace skade::table {

// What to read.
struct ReadOptions {
  iceberg::SnapshotSelector snapshot;
  std::vector<std::string> columns;  // empty = all
  std::string where_sql;             // DuckDB predicate; prunes files where Iceberg can
  std::optional<int64_t> limit;
};

// What a commit produced.
struct CommitOutcome {
  int64_t snapshot_id = 0;
  int64_t sequence_number = 0;
  int64_t commit_seq = 0;
  std::string operation;
  int64_t added_records = 0;
  int64_t added_files = 0;
  int64_t added_bytes = 0;
  int64_t deleted_records = 0;
  int64_t deleted_files = 0;
  int attempts = 1;
};

// Not thread-safe (one writer per Table object; concurrent writers use separate objects and
// the catalog's optimistic concurrency). The catalog, FileIO and Database are borrowed and
// must outlive the table.
class Table {
 public:
  static Result<std::unique_ptr<Table>> Load(catalog::Catalog& catalog, io::FileIO& io,
                                             engine::Database& db, const catalog::TableIdent& ident);

  const catalog::TableIdent& ident() const { return state_.ident; }
  const iceberg::TableMetadata& metadata() const { return *state_.metadata; }
  const std::string& metadata_location() const { return state_.metadata_location; }
  // Reloads the current metadata from the catalog.
  Status Refresh();

  // Plans a read (snapshot selection, pruning by the Iceberg-expressible part of where_sql).
  Result<engine::IcebergScan> PlanRead(const ReadOptions& options);
  // The DuckDB SQL of a read (columns, where, limit applied).
  Result<std::string> ReadSql(const ReadOptions& options);
  // Rows as an Arrow C stream (bounded memory).
  Result<arrow::StreamHandle> Read(const ReadOptions& options);
  // Row count (from manifests when no filter and no delete files).
  Result<int64_t> Count(const ReadOptions& options);

  // Fast append: new data files in one snapshot; retried on conflicts (rebasable).
  Result<CommitOutcome> Append(const engine::WriteSource& source);
  // Replaces the whole table content with the source in one snapshot ("overwrite").
  Result<CommitOutcome> OverwriteAll(const engine::WriteSource& source);

  // Commit attempts for rebasable operations unless the table property
  // commit.retry.num-retries says otherwise (attempts = retries + 1).
  static constexpr int kMaxAttempts = 30;

 private:
  Table(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db, catalog::TableState state)
      : catalog_(catalog), io_(io), db_(db), state_(std::move(state)) {}

  enum class Mode { kAppend, kReplace };
  Result<CommitOutcome> WriteAndCommit(const engine::WriteSource& source, Mode mode);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  engine::Database& db_;
  catalog::TableState state_;
};

// A new random positive snapshot id.
int64_t NewSnapshotId();

}  // namespace skade::table
