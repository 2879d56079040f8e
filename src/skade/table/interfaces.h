// The three small shapes every consumer talks to (DESIGN §7): IcebergSource (read a table as
// Arrow streams, incrementally too, and follow its commits), IcebergSink (write Arrow streams
// and files into a table), and Transform (batch in, batch out, with column lineage). Table
// implements the first two.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"

namespace skade::events {
class Bus;
}

namespace skade::table {

struct ReadOptions;
struct CommitOutcome;
class TableCommitStream;  // commit_stream.h

class IcebergSource {
 public:
  virtual ~IcebergSource() = default;
  // "ns.table".
  virtual std::string name() const = 0;
  // The current schema as an Arrow schema (struct of the top-level columns).
  virtual Result<arrow::SchemaHandle> ArrowSchema() = 0;
  virtual std::optional<int64_t> CurrentSnapshotId() const = 0;
  // Rows as an Arrow C stream (bounded memory).
  virtual Result<arrow::StreamHandle> Scan(const ReadOptions& options) = 0;
  // Rows appended after `from_snapshot` up to `to_snapshot` (default current); kInvalidArgument
  // when the range holds a commit that is not an append.
  virtual Result<arrow::StreamHandle> ScanDelta(int64_t from_snapshot, std::optional<int64_t> to_snapshot) = 0;
  // This table's commit events (DESIGN §8): every catalog commit on it with commit_seq >
  // `after_commit_seq` (nullopt = commits from now on), replayed from the catalog's log, then
  // tailed live from `bus`, which an events::Watcher on the same catalog must feed and which
  // must outlive the stream. kInvalidArgument for a negative cursor.
  virtual Result<std::unique_ptr<TableCommitStream>> Subscribe(
      events::Bus& bus, std::optional<int64_t> after_commit_seq) = 0;
};

class IcebergSink {
 public:
  virtual ~IcebergSink() = default;
  // Appends the stream's rows (columns matched by name) in one snapshot. Consumes the stream.
  virtual Result<CommitOutcome> AppendStream(ArrowArrayStream* rows) = 0;
  // Appends Parquet/CSV/JSON files in one snapshot.
  virtual Result<CommitOutcome> IngestFiles(const std::vector<std::string>& paths) = 0;
  // Equality deletes for the key rows of the stream.
  virtual Result<CommitOutcome> DeleteEquality(ArrowArrayStream* keys, const std::vector<std::string>& columns) = 0;
  // Upsert on `key_columns` (default identifier fields): deletes + inserts in one snapshot.
  virtual Result<CommitOutcome> UpsertStream(ArrowArrayStream* rows, std::vector<std::string> key_columns) = 0;
};

// A transformation between tables: batch in, batch out, plus which input columns each output
// column is derived from (for lineage).
class Transform {
 public:
  virtual ~Transform() = default;
  // The output schema for an input schema.
  virtual Result<arrow::SchemaHandle> OutputSchema(const ArrowSchema& input) = 0;
  // Transforms one batch (a struct array of `input` schema) into one output batch. Takes the
  // batch, so an output may keep the input's buffers instead of copying them.
  virtual Result<arrow::ArrayHandle> Apply(const ArrowSchema& input, arrow::ArrayHandle batch) = 0;
  // Output column → the input columns it reads.
  virtual std::map<std::string, std::vector<std::string>> ColumnLineage() const = 0;
};

}  // namespace skade::table
