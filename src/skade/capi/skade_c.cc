// The C interface (skade.h) over the table layer: lake lifetime, errors, reads and appends,
// the commit log and waiting for commits. Catalog listings are in capi_catalog.cc, the other
// writes in capi_write.cc, SQL in capi_sql.cc.
#include "skade/capi/skade.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "skade/arrow/stream_of.h"
#include "skade/capi/capi_internal.h"
#include "skade/catalog/open_catalog.h"
#include "skade/engine/database.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"
#include "skade/io/routing_file_io.h"

namespace skade::capi {
namespace {

thread_local std::string last_error;

// The C codes are an ABI: each is mapped by name, never by the C++ enum's numbering.
int CodeOf(StatusCode code) {
  using C = StatusCode;
  switch (code) {
    case C::kOk: return SKADE_OK;
    case C::kInvalidArgument: return SKADE_E_INVALID_ARGUMENT;
    case C::kNotFound: return SKADE_E_NOT_FOUND;
    case C::kAlreadyExists: return SKADE_E_ALREADY_EXISTS;
    case C::kConflict: return SKADE_E_CONFLICT;
    case C::kCommitUnknown: return SKADE_E_COMMIT_UNKNOWN;
    case C::kNotImplemented: return SKADE_E_NOT_IMPLEMENTED;
    case C::kUnauthorized: return SKADE_E_UNAUTHORIZED;
    case C::kPermissionDenied: return SKADE_E_PERMISSION_DENIED;
    case C::kResourceExhausted: return SKADE_E_RESOURCE_EXHAUSTED;
    case C::kCancelled: return SKADE_E_CANCELLED;
    case C::kIoError: return SKADE_E_IO;
    case C::kCorruption: return SKADE_E_CORRUPTION;
    case C::kUnavailable: return SKADE_E_UNAVAILABLE;
    case C::kInternal: return SKADE_E_INTERNAL;
  }
  return SKADE_E_INTERNAL;
}

// A stream handed to the caller: the producer's stream plus a reference to the lake it reads.
struct KeptStream {
  std::shared_ptr<LakeState> lake;  // declared first: released after the stream that uses it
  arrow::StreamHandle inner;

  // The C stream's calls (arrow::StreamOf), handed to the producer's.
  int GetSchema(ArrowSchema* out) { return inner->get_schema(inner.get(), out); }
  int GetNext(ArrowArray* out) { return inner->get_next(inner.get(), out); }
  const char* LastError() { return inner->get_last_error(inner.get()); }
};

// How often skade_wait_commit looks at the log's head: a commit of another process is seen
// within this (a SQLite catalog answers the look in microseconds).
constexpr std::chrono::milliseconds kCommitPollInterval{20};

}  // namespace

Result<std::shared_ptr<LakeState>> StateOf(skade_lake* lake) {
  if (lake == nullptr || lake->state == nullptr) return Status::InvalidArgument("null lake");
  return lake->state;
}

int Report(const Status& status) {
  if (status.ok()) {
    last_error.clear();
    return SKADE_OK;
  }
  last_error = status.ToString();
  return CodeOf(status.code());
}

Result<std::string> Required(const char* text, const char* what) {
  if (text == nullptr) return Status::InvalidArgument(std::string("null ") + what);
  return std::string(text);
}

std::string Optional(const char* text) { return text == nullptr ? std::string() : std::string(text); }

Result<std::vector<std::string>> Names(const char* const* names, int64_t n, const char* what) {
  if (n < 0) return Status::InvalidArgument(std::string("negative count of ") + what);
  if (n > 0 && names == nullptr) return Status::InvalidArgument(std::string("null ") + what);
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    if (names[i] == nullptr) return Status::InvalidArgument(std::string("null entry in ") + what);
    out.emplace_back(names[i]);
  }
  return out;
}

Result<catalog::TableIdent> TableOf(const char* text) {
  SKADE_ASSIGN_OR_RETURN(std::string name, Required(text, "table name"));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(name));
  if (ident.ns.empty()) return Status::InvalidArgument("table '" + name + "' must be written ns.table");
  SKADE_RETURN_IF_ERROR(ident.Validate());
  return ident;
}

Result<std::unique_ptr<table::Table>> LoadTable(LakeState& lake, const char* name) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, TableOf(name));
  SKADE_ASSIGN_OR_RETURN(auto t, table::Table::Load(*lake.catalog, *lake.io, *lake.db, ident));
  t->set_write_observer(lake.failed_writes.get());
  return t;
}

void Export(std::shared_ptr<LakeState> lake, arrow::StreamHandle stream, ArrowArrayStream* out) {
  auto kept = std::make_unique<KeptStream>();
  kept->lake = std::move(lake);
  kept->inner = std::move(stream);
  arrow::StreamOf(std::move(kept)).MoveTo(out);
}

Status ExportBuilt(std::shared_ptr<LakeState> lake, arrow::ArrayBuilder& batch, ArrowArrayStream* out) {
  arrow::SchemaHandle schema;
  arrow::ArrayHandle array;
  SKADE_RETURN_IF_ERROR(batch.Finish(schema.get(), array.get()));
  std::vector<arrow::ArrayHandle> batches;
  batches.push_back(std::move(array));
  Export(std::move(lake), arrow::MakeBatchStream(std::move(schema), std::move(batches)), out);
  return Status::Ok();
}

}  // namespace skade::capi

using skade::Result;
using skade::Status;
using skade::capi::LakeState;
using skade::capi::Report;
using skade::capi::StateOf;

namespace {

Status Open(const char* warehouse, const char* catalog_uri, skade_lake** out) {
  auto lake = std::make_shared<LakeState>();
  lake->warehouse = skade::io::NormalizeLocation(warehouse);
  skade::catalog::SqlCatalogOptions options;
  if (catalog_uri && *catalog_uri) {
    options.uri = catalog_uri;
  } else {
    SKADE_ASSIGN_OR_RETURN(options.uri, skade::catalog::DefaultCatalogUri(lake->warehouse));
  }
  if (!skade::io::IsObjectStoreLocation(lake->warehouse)) {
    SKADE_RETURN_IF_ERROR(skade::io::CreateFoldersDurably(lake->warehouse).WithContext("create the warehouse"));
  }
  lake->io = skade::io::MakeEnvironmentFileIO();
  skade::engine::DatabaseOptions db_options;
  db_options.object_store = lake->io.get();
  SKADE_ASSIGN_OR_RETURN(lake->db, skade::engine::Database::Open(db_options));
  options.warehouse = lake->warehouse;
  SKADE_ASSIGN_OR_RETURN(lake->catalog, skade::catalog::OpenCatalog(options, *lake->io));
  lake->failed_writes =
      std::make_unique<skade::table::FailedWriteSpool>(skade::table::FailedWriteSpool::DefaultPath(options.uri));
  auto handle = std::make_unique<skade_lake>();
  handle->state = std::move(lake);
  *out = handle.release();
  return Status::Ok();
}

Status Read(skade_lake* lake, const char* table, const char* const* columns, int64_t n_columns,
            const char* where_sql, const int64_t* snapshot_id, const int64_t* as_of_ms, const int64_t* limit,
            bool whole, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  skade::table::ReadOptions options;
  SKADE_ASSIGN_OR_RETURN(options.columns, skade::capi::Names(columns, n_columns, "columns"));
  if (where_sql != nullptr && *where_sql != '\0') {
    auto where = skade::engine::Predicate::Parse(where_sql);
    if (!where.ok()) return where.status().WithContext("where");
    options.where = std::move(where).value();
  }
  if (snapshot_id != nullptr) options.snapshot.snapshot_id = *snapshot_id;
  if (as_of_ms != nullptr) options.snapshot.as_of_ms = *as_of_ms;
  if (limit != nullptr) {
    if (*limit < 0) return Status::InvalidArgument("negative limit");
    options.limit = *limit;
  }
  options.whole = whole;
  SKADE_ASSIGN_OR_RETURN(auto t, skade::capi::LoadTable(*state, table));
  SKADE_ASSIGN_OR_RETURN(skade::arrow::StreamHandle stream, t->Read(options));
  skade::capi::Export(std::move(state), std::move(stream), out);
  return Status::Ok();
}

Status Append(skade_lake* lake, const char* table, ArrowArrayStream* rows, int64_t* snapshot_id,
              int64_t* commit_seq) {
  if (rows == nullptr || rows->release == nullptr) return Status::InvalidArgument("null input stream");
  skade::capi::ConsumedStream consumed(rows);
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(auto t, skade::capi::LoadTable(*state, table));
  SKADE_ASSIGN_OR_RETURN(skade::table::CommitOutcome outcome, t->AppendStream(rows));
  if (snapshot_id) *snapshot_id = outcome.snapshot_id;
  if (commit_seq) *commit_seq = outcome.commit_seq;
  return Status::Ok();
}

Status CommitLog(skade_lake* lake, int64_t after_commit_seq, int64_t limit, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  if (limit < 0) return Status::InvalidArgument("negative limit");
  SKADE_ASSIGN_OR_RETURN(auto entries, state->catalog->CommitsSince(after_commit_seq, limit));
  using skade::arrow::ArrayBuilder;
  std::vector<ArrayBuilder> columns;
  columns.emplace_back("commit_seq", "l", false);
  columns.emplace_back("table", "u", false);
  columns.emplace_back("snapshot_id", "l", true);
  columns.emplace_back("operation", "u", false);
  columns.emplace_back("added_records", "l", false);
  columns.emplace_back("deleted_records", "l", false);
  columns.emplace_back("committed_at_us", "l", false);
  columns.emplace_back("metadata_location", "u", false);
  ArrayBuilder b = skade::arrow::RecordBatchBuilder(std::move(columns));
  for (const auto& e : entries) {
    b.AppendStruct();
    b.child(0).AppendInt(e.commit_seq);
    b.child(1).AppendString(e.table.ToString());
    e.snapshot_id ? b.child(2).AppendInt(*e.snapshot_id) : b.child(2).AppendNull();
    b.child(3).AppendString(e.operation);
    b.child(4).AppendInt(e.added_records);
    b.child(5).AppendInt(e.deleted_records);
    b.child(6).AppendInt(e.committed_at_us);
    b.child(7).AppendString(e.metadata_location);
  }
  return skade::capi::ExportBuilt(std::move(state), b, out);
}

Status WaitCommit(skade_lake* lake, int64_t after_commit_seq, int64_t timeout_ms, int64_t* commit_seq) {
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  if (timeout_ms < 0) return Status::InvalidArgument("negative timeout");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint64_t interrupts;
  {
    std::lock_guard<std::mutex> lock(state->wait_mu);
    interrupts = state->interrupts;
  }
  while (true) {
    SKADE_ASSIGN_OR_RETURN(int64_t head, state->catalog->LatestCommitSeq());
    const auto now = std::chrono::steady_clock::now();
    if (head > after_commit_seq || now >= deadline) {
      if (commit_seq) *commit_seq = head;
      return Status::Ok();
    }
    std::unique_lock<std::mutex> lock(state->wait_mu);
    const auto until = std::min(deadline, now + skade::capi::kCommitPollInterval);
    if (state->wake.wait_until(lock, until, [&] { return state->interrupts != interrupts; })) {
      return Status::Cancelled("the wait for a commit was interrupted");
    }
  }
}

}  // namespace

extern "C" {

int skade_abi_version(void) { return SKADE_ABI_VERSION; }

int skade_open(const char* warehouse, const char* catalog_uri, skade_lake** out) {
  if (warehouse == nullptr || out == nullptr) return Report(Status::InvalidArgument("null argument"));
  *out = nullptr;
  return Report(Open(warehouse, catalog_uri, out));
}

void skade_close(skade_lake* lake) {
  // Adopted back and destroyed; streams still open hold their own reference to the state.
  std::unique_ptr<skade_lake> owned(lake);
}

int skade_scan(skade_lake* lake, const char* table, const char* where_sql, ArrowArrayStream* out) {
  return Report(Read(lake, table, nullptr, 0, where_sql, nullptr, nullptr, nullptr, false, out));
}

int skade_read(skade_lake* lake, const char* table, const char* const* columns, int64_t n_columns,
               const char* where_sql, const int64_t* snapshot_id, const int64_t* as_of_ms, const int64_t* limit,
               ArrowArrayStream* out) {
  return Report(Read(lake, table, columns, n_columns, where_sql, snapshot_id, as_of_ms, limit, false, out));
}

int skade_read_all(skade_lake* lake, const char* table, const char* const* columns, int64_t n_columns,
                   const char* where_sql, const int64_t* snapshot_id, const int64_t* as_of_ms, const int64_t* limit,
                   ArrowArrayStream* out) {
  return Report(Read(lake, table, columns, n_columns, where_sql, snapshot_id, as_of_ms, limit, true, out));
}

int skade_append(skade_lake* lake, const char* table, ArrowArrayStream* rows, int64_t* snapshot_id,
                 int64_t* commit_seq) {
  return Report(Append(lake, table, rows, snapshot_id, commit_seq));
}

int skade_commit_log(skade_lake* lake, int64_t after_commit_seq, int64_t limit, ArrowArrayStream* out) {
  return Report(CommitLog(lake, after_commit_seq, limit, out));
}

int skade_commit_head(skade_lake* lake, int64_t* commit_seq) {
  return Report(WaitCommit(lake, INT64_MAX, 0, commit_seq));
}

int skade_wait_commit(skade_lake* lake, int64_t after_commit_seq, int64_t timeout_ms, int64_t* commit_seq) {
  return Report(WaitCommit(lake, after_commit_seq, timeout_ms, commit_seq));
}

void skade_interrupt(skade_lake* lake) {
  if (lake == nullptr || lake->state == nullptr) return;
  LakeState& state = *lake->state;
  state.db->InterruptRunning();
  {
    std::lock_guard<std::mutex> lock(state.wait_mu);
    ++state.interrupts;
  }
  state.wake.notify_all();
}

const char* skade_last_error(void) { return skade::capi::last_error.c_str(); }

}  // extern "C"
