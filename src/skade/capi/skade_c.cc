// The C interface (skade.h) over the table layer.
#include "skade/capi/skade.h"

#include <filesystem>
#include <memory>
#include <string>

#include "skade/catalog/open_catalog.h"
#include "skade/engine/database.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"
#include "skade/io/routing_file_io.h"
#include "skade/table/failed_write_spool.h"
#include "skade/table/table.h"

struct skade_lake {
  std::string warehouse;
  std::unique_ptr<skade::io::FileIO> io;
  std::unique_ptr<skade::engine::Database> db;
  std::unique_ptr<skade::catalog::Catalog> catalog;
  std::unique_ptr<skade::table::FailedWriteSpool> failed_writes;  // told about every write that fails
};

namespace {

thread_local std::string last_error;

// The C codes are an ABI: each is mapped by name, never by the C++ enum's numbering.
int CodeOf(skade::StatusCode code) {
  using C = skade::StatusCode;
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

int Report(const skade::Status& st) {
  if (st.ok()) {
    last_error.clear();
    return SKADE_OK;
  }
  last_error = st.ToString();
  return CodeOf(st.code());
}

skade::Result<std::unique_ptr<skade::table::Table>> Open(skade_lake* lake, const char* table) {
  if (lake == nullptr || table == nullptr) return skade::Status::InvalidArgument("null lake or table name");
  SKADE_ASSIGN_OR_RETURN(auto ident, skade::catalog::TableIdent::Parse(table));
  SKADE_ASSIGN_OR_RETURN(auto t, skade::table::Table::Load(*lake->catalog, *lake->io, *lake->db, ident));
  t->set_write_observer(lake->failed_writes.get());
  return t;
}

}  // namespace

extern "C" {

int skade_open(const char* warehouse, const char* catalog_uri, skade_lake** out) {
  if (warehouse == nullptr || out == nullptr) return Report(skade::Status::InvalidArgument("null argument"));
  *out = nullptr;
  auto lake = std::make_unique<skade_lake>();
  lake->warehouse = skade::io::NormalizeLocation(warehouse);
  skade::catalog::SqlCatalogOptions options;
  if (catalog_uri && *catalog_uri) {
    options.uri = catalog_uri;
  } else {
    auto uri = skade::catalog::DefaultCatalogUri(lake->warehouse);
    if (!uri.ok()) return Report(uri.status());
    options.uri = *uri;
  }
  if (!skade::io::IsObjectStoreLocation(lake->warehouse)) {
    skade::Status created = skade::io::CreateFoldersDurably(lake->warehouse);
    if (!created.ok()) return Report(created.WithContext("create the warehouse"));
  }
  lake->io = skade::io::MakeEnvironmentFileIO();
  skade::engine::DatabaseOptions db_options;
  db_options.object_store = lake->io.get();
  auto db = skade::engine::Database::Open(db_options);
  if (!db.ok()) return Report(db.status());
  lake->db = std::move(db).value();
  options.warehouse = lake->warehouse;
  auto catalog = skade::catalog::OpenCatalog(options, *lake->io);
  if (!catalog.ok()) return Report(catalog.status());
  lake->catalog = std::move(catalog).value();
  lake->failed_writes =
      std::make_unique<skade::table::FailedWriteSpool>(skade::table::FailedWriteSpool::DefaultPath(options.uri));
  *out = lake.release();
  return Report(skade::Status::Ok());
}

void skade_close(skade_lake* lake) { delete lake; }

int skade_scan(skade_lake* lake, const char* table, const char* where_sql, struct ArrowArrayStream* out) {
  if (out == nullptr) return Report(skade::Status::InvalidArgument("null output stream"));
  auto t = Open(lake, table);
  if (!t.ok()) return Report(t.status());
  skade::table::ReadOptions options;
  if (where_sql != nullptr && *where_sql != '\0') {
    auto where = skade::engine::Predicate::Parse(where_sql);
    if (!where.ok()) return Report(where.status().WithContext("where"));
    options.where = std::move(where).value();
  }
  auto stream = (*t)->Read(options);
  if (!stream.ok()) return Report(stream.status());
  stream->MoveTo(out);
  return Report(skade::Status::Ok());
}

int skade_append(skade_lake* lake, const char* table, struct ArrowArrayStream* rows, int64_t* snapshot_id,
                 int64_t* commit_seq) {
  if (rows == nullptr || rows->release == nullptr) return Report(skade::Status::InvalidArgument("null input stream"));
  // The stream is consumed on every path, failures included.
  struct ReleaseStream {
    ArrowArrayStream* s;
    ~ReleaseStream() {
      if (s->release != nullptr) s->release(s);
    }
  } release{rows};
  auto t = Open(lake, table);
  if (!t.ok()) return Report(t.status());
  auto outcome = (*t)->AppendStream(rows);
  if (!outcome.ok()) return Report(outcome.status());
  if (snapshot_id) *snapshot_id = outcome->snapshot_id;
  if (commit_seq) *commit_seq = outcome->commit_seq;
  return Report(skade::Status::Ok());
}

int skade_commit_log(skade_lake* lake, int64_t after_commit_seq, int64_t limit, struct ArrowArrayStream* out) {
  if (lake == nullptr || out == nullptr) return Report(skade::Status::InvalidArgument("null argument"));
  auto entries = lake->catalog->CommitsSince(after_commit_seq, limit);
  if (!entries.ok()) return Report(entries.status());
  using skade::engine::QuoteString;
  std::string sql =
      "SELECT * FROM (VALUES (0::BIGINT, ''::VARCHAR, NULL::BIGINT, ''::VARCHAR, 0::BIGINT, 0::BIGINT, 0::BIGINT, "
      "''::VARCHAR)";
  for (const auto& e : *entries) {
    sql += ", (" + std::to_string(e.commit_seq) + ", " + QuoteString(e.table.ToString()) + ", " +
           (e.snapshot_id ? std::to_string(*e.snapshot_id) : "NULL") + ", " + QuoteString(e.operation) + ", " +
           std::to_string(e.added_records) + ", " + std::to_string(e.deleted_records) + ", " +
           std::to_string(e.committed_at_us) + ", " + QuoteString(e.metadata_location) + ")";
  }
  sql += ") v(commit_seq, \"table\", snapshot_id, operation, added_records, deleted_records, committed_at_us, "
         "metadata_location) WHERE commit_seq > 0 ORDER BY commit_seq";
  auto stream = lake->db->QueryArrow(sql);
  if (!stream.ok()) return Report(stream.status());
  stream->MoveTo(out);
  return Report(skade::Status::Ok());
}

const char* skade_last_error(void) { return last_error.c_str(); }

}  // extern "C"
