// What the C interface's .cc files share (capi/ only): the state behind a skade_lake, status
// reporting into skade_last_error, and streams that keep that state alive while read.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/capi/skade.h"
#include "skade/catalog/catalog.h"
#include "skade/engine/database.h"
#include "skade/io/file_io.h"
#include "skade/sql/lake_sql.h"
#include "skade/table/failed_write_spool.h"
#include "skade/table/table.h"

namespace skade::capi {

// One open lake. Shared by its skade_lake handle and by every stream returned from it, so a
// stream read after skade_close still has its catalog and DuckDB. Thread-safe: the catalog,
// Database and LakeSql are; the members are set once at open, except `sql` (guarded by
// sql_mu) and the interrupt count (guarded by wait_mu).
struct LakeState {
  std::string warehouse;
  std::unique_ptr<io::FileIO> io;
  std::unique_ptr<engine::Database> db;
  std::unique_ptr<catalog::Catalog> catalog;
  std::unique_ptr<table::FailedWriteSpool> failed_writes;  // told about every write that fails

  // The lake as DuckDB schemas and views for skade_sql, made at its first call. Declared after
  // what it borrows, so it is destroyed first.
  std::mutex sql_mu;
  std::unique_ptr<sql::LakeSql> sql;

  // skade_interrupt counts here and wakes skade_wait_commit.
  std::mutex wait_mu;
  std::condition_variable wake;
  uint64_t interrupts = 0;
};

// The lake's state; kInvalidArgument for a null handle.
Result<std::shared_ptr<LakeState>> StateOf(skade_lake* lake);

// Records `status` as the calling thread's last error (clears it on success) and returns its
// C code.
int Report(const Status& status);

// A required text argument; kInvalidArgument naming `what` when null.
Result<std::string> Required(const char* text, const char* what);
// An optional text argument: "" for null.
std::string Optional(const char* text);
// `n` names from a C array; kInvalidArgument for a negative count, a null array with a
// positive count, or a null entry.
Result<std::vector<std::string>> Names(const char* const* names, int64_t n, const char* what);

// A table argument "ns.table" ("a.b.table": the last level is the table), parsed and
// validated by the one name rule; kInvalidArgument for null, no namespace or a bad level.
Result<catalog::TableIdent> TableOf(const char* text);
// Loads "ns.table" (TableOf) with the lake's failed-write spool attached.
Result<std::unique_ptr<table::Table>> LoadTable(LakeState& lake, const char* name);

// Hands `stream` to the caller as `out`, wrapped so that it keeps `lake` alive until released.
void Export(std::shared_ptr<LakeState> lake, arrow::StreamHandle stream, ArrowArrayStream* out);

// A stream as one batch built by ArrayBuilder (listings), exported like Export.
Status ExportBuilt(std::shared_ptr<LakeState> lake, arrow::ArrayBuilder& batch, ArrowArrayStream* out);

// Releases an input stream when the call ends, whatever path it takes (inputs are consumed).
class ConsumedStream {
 public:
  explicit ConsumedStream(ArrowArrayStream* stream) : stream_(stream) {}
  ~ConsumedStream() {
    if (stream_ != nullptr && stream_->release != nullptr) stream_->release(stream_);
  }
  ConsumedStream(const ConsumedStream&) = delete;
  ConsumedStream& operator=(const ConsumedStream&) = delete;

 private:
  ArrowArrayStream* stream_;
};

}  // namespace skade::capi

// The C handle: a reference to the shared state.
struct skade_lake {
  std::shared_ptr<skade::capi::LakeState> state;
};
