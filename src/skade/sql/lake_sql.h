// LakeSql: a catalog seen as one DuckDB catalog (DESIGN §10). Each namespace is a schema named
// by its levels joined with '.' ("a.b"), each table a view over its current snapshot. Views are
// made lazily, for the tables a statement references, and re-made when the table's metadata
// location moved, so the next statement after any commit (this process or another) sees it
// and each statement reads one pinned snapshot per table.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/table/write_observer.h"
#include "skade/engine/database.h"
#include "skade/io/file_io.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/manifest_cache.h"
#include "skade/table/drop.h"
#include "skade/table/parted_read.h"
#include "skade/table/table.h"

namespace skade::sql {

// Lets another thread stop a write (LakeSql::ExecuteWrite, given in its Session) while it runs
// in DuckDB: the statement running then fails ("Interrupted") and the write with it, before
// its commit; a write already committing finishes. DuckDB forgets an interrupt that comes
// between two of the write's statements, so a caller interrupts again until the write ends.
// Thread-safe.
class WriteInterrupt {
 public:
  void Interrupt();

 private:
  friend class LakeSql;
  // The Database the write runs its statements on, while it runs (null after).
  void Attach(engine::Database* db);

  std::mutex mu_;
  engine::Database* db_ = nullptr;
};

// Who runs SQL through a LakeSql: a client's session. Every DuckDB connection that runs a
// session's SQL — its queries' (LakeSql::SetUp) and all that its writes run
// (LakeSql::ExecuteWrite) — is set up alike from it (LakeSql::SessionSetup), so a statement
// means the same whether it reads or writes.
struct Session {
  std::string schema;  // where unqualified names resolve ("" = none: tables need their schema)
  std::string user;    // whom current_user, user, session_user and current_role name ("" = DuckDB's own)
  WriteInterrupt* interrupt = nullptr;  // borrowed, for ExecuteWrite; null = not interruptible
};

// Thread-safe. Borrows the catalog, FileIO and Database, which must outlive it.
class LakeSql {
 public:
  // Uses (or attaches) the in-memory DuckDB catalog `catalog_name` of `db`; a locked-down
  // database must have attached it before the lock-down (engine::DatabaseOptions), since
  // ATTACH is refused afterwards.
  static Result<std::unique_ptr<LakeSql>> Open(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db,
                                               std::string catalog_name,
                                               int64_t manifest_cache_bytes = kManifestCacheBytes);

  // Retires the scan sources of its views (engine::ScanSources::Retire).
  ~LakeSql();
  LakeSql(const LakeSql&) = delete;
  LakeSql& operator=(const LakeSql&) = delete;

  const std::string& catalog_name() const { return catalog_name_; }
  catalog::Catalog& catalog() { return catalog_; }
  engine::Database& db() { return db_; }
  // Views plan each statement's scan with the filters and columns DuckDB pushes into it
  // (engine/pushdown_scan.h; the default), or list every file of the snapshot when made (off:
  // the oracle of the pushdown tests and benchmarks). Applies to views made from now on.
  void set_pushdown(bool on);
  // With pushdown, a snapshot of more data files than this (or that does not say how many) is
  // read in parts planned while they are read (table/parted_read.h): a LIMIT reads a few
  // manifests, and no statement holds the whole file list; such plans are not kept.
  // kPartedReadFiles unless set; applies to views made from now on.
  void set_parted_read_files(int64_t files);
  static constexpr int64_t kPartedReadFiles = table::kPartedReadFiles;
  // Told about every write through this object that fails (borrowed; null for none).
  void set_write_observer(table::WriteObserver* observer) { write_observer_ = observer; }
  // The decoded manifest lists and manifests that views' scans plan with, shared by every
  // table and snapshot (iceberg/manifest_cache.h): after a commit, a query plans reading only
  // what the commit added. kManifestCacheBytes unless Open was told otherwise; null when told
  // 0 (a process running one statement plans each table once: keeping what it decoded would
  // only cost it time and memory, 0.2 s and ~400 MB planning 100,000 files with metrics).
  iceberg::ManifestCache* manifest_cache() { return manifest_cache_.get(); }
  static constexpr int64_t kManifestCacheBytes = int64_t{256} << 20;

  // "a.b" for namespace [a, b]; nullopt when a level contains '.' (it cannot be a schema).
  static std::optional<std::string> SchemaName(const catalog::Namespace& ns);
  // The namespace of a schema name. kInvalidArgument for an empty name or level.
  static Result<catalog::Namespace> NamespaceOf(std::string_view schema);

  // Every namespace at any depth, sorted; those with a '.' inside a level are skipped with a
  // log line naming them.
  Result<std::vector<catalog::Namespace>> ListNamespaces();

  // A table name as written (table, schema.table or catalog.schema.table) resolved against
  // `default_schema`. kNotFound for another catalog's name, kInvalidArgument for a name
  // without a schema when there is no default.
  Result<catalog::TableIdent> Resolve(const std::vector<std::string>& parts, const std::string& default_schema) const;

  // Makes the views of the catalog tables `sql` references current. Names that are no catalog
  // table are left to DuckDB (which reports them). kInvalidArgument if the SQL does not parse.
  // `scan_marks`, when given, gets the scan marks of those views (without pushdown a view's SQL
  // holds its table's scan, engine::DataFileChecks::Marks), for the statement to carry.
  Status SyncViews(std::string_view sql, const std::string& default_schema, std::string* scan_marks = nullptr);

  // The SQL to run for a query statement (engine::ParseStatement kinds kQuery, kExplain and
  // kExport) of a session whose schema is `default_schema`, resolved against the lake:
  // - the views of the lake tables it names are made current (SyncViews);
  // - `t AT (VERSION => <snapshot id>)`, `AT (VERSION => '<branch or tag>')` and
  //   `AT (TIMESTAMP => <time>)` read that snapshot, chosen by the rule `skade scan --snapshot /
  //   --ref / --as-of` uses (iceberg::SelectSnapshot): kNotFound for an unknown snapshot or ref
  //   and for a time before the first snapshot, never the current snapshot instead;
  // - SHOW TABLES, SHOW ALL TABLES, DESCRIBE of a table and information_schema.tables and
  //   .columns answer from the catalog: every table of the lake, names from the catalog's
  //   listings (no metadata file read for them), columns from each table's current schema with
  //   required columns NOT NULL; SHOW SCHEMAS / SHOW NAMESPACES and information_schema.schemata
  //   list the lake's namespaces at every depth. DuckDB's own functions (duckdb_tables(),
  //   duckdb_schemas(), …) keep describing the session's DuckDB objects (its temporary tables);
  //   the lake's tables are not among them;
  // - a table name that is neither a lake table nor one of DuckDB's is kNotFound naming the
  //   lake's nearest tables (kInvalidArgument), and catalog.schema.table whose first two parts are a nested
  //   namespace kInvalidArgument naming the quoted form ("a.b".t).
  // Returns `sql` itself when nothing was substituted; otherwise its re-rendered parse tree.
  Result<std::string> ResolveQuery(std::string_view sql, const std::string& default_schema);

  // Loads a table (no view involved).
  Result<std::unique_ptr<table::Table>> LoadTable(const catalog::TableIdent& ident) {
    return table::Table::Load(catalog_, io_, db_, ident);
  }

  // Makes one table's view current and returns the table as loaded.
  Result<std::unique_ptr<table::Table>> SyncView(const catalog::TableIdent& ident);

  // Removes a table's view (after DROP TABLE).
  Status DropView(const catalog::TableIdent& ident);
  // Removes a namespace's DuckDB schema and its views (after DROP SCHEMA).
  Status DropSchema(const std::string& schema);

  // The qualified SQL name of a table's view: "catalog"."a.b"."t".
  std::string ViewName(const catalog::TableIdent& ident) const;

  // Runs a write statement (engine::Statement::is_write()) as Iceberg commits: INSERT appends,
  // DELETE deletes, UPDATE overwrites the matching rows, CREATE/DROP TABLE, VIEW and SCHEMA go
  // to the catalog. DROP TABLE keeps the table's files, DROP TABLE … PURGE deletes them
  // (table::DropTable: only under the table's location, which must lie in the warehouse).
  // CREATE OR REPLACE TABLE of an existing table replaces it in one commit, as Iceberg's replace
  // transaction does (table::Table::Replace): the same table at the same location, its history
  // kept until its snapshots expire. Returns the rows inserted, deleted or updated
  // (0 for DDL). kNotFound for a missing table or schema, kAlreadyExists for CREATE of an
  // existing one without IF NOT EXISTS / OR REPLACE, kInvalidArgument for a statement that is
  // not a write or still has unbound parameter markers.
  // Everything the write runs in DuckDB — its query, condition and assignments, and the writes'
  // own statements over them — runs on connections set up for `session` (SessionSetup).
  Result<int64_t> ExecuteWrite(const engine::Statement& statement, const Session& session);
  // The same for a session of `default_schema` and no user.
  Result<int64_t> ExecuteWrite(const engine::Statement& statement, const std::string& default_schema);

  // What ExecuteWriteReporting tells: the rows ExecuteWrite returns, and for DROP TABLE what
  // became of the table's files, in words (table::DescribeDrop; empty for other statements and
  // a DROP TABLE IF EXISTS of no table).
  struct WriteReport {
    int64_t rows = 0;
    std::string note;
  };
  // ExecuteWrite with the report; a DROP TABLE without PURGE lists the table's location to
  // count the files it leaves (ExecuteWrite does not).
  Result<WriteReport> ExecuteWriteReporting(const engine::Statement& statement, const Session& session);

  // The parameters of the write statement `sql` (parsed as `statement`), as an Arrow struct
  // schema of fields "1".."n": for INSERT, UPDATE and DELETE the types DuckDB gives their
  // markers — the statement prepared (never run) against an empty table of the target's
  // columns (engine::RenderParameterProbe) on a connection set up for `session`. A marker DuckDB
  // cannot type (`INSERT … SELECT ?`, `SET v = ? + 1`), and every marker of another statement or
  // of one the probe cannot render or prepare, has the null type: it takes a value of any type.
  // kNotFound when the target table does not exist.
  Result<arrow::SchemaHandle> WriteParameters(std::string_view sql, const engine::Statement& statement,
                                              const Session& session);

  enum class IngestMode { kCreate, kAppend, kReplace, kCreateAppend };
  // Bulk ingest of an Arrow stream (consumed) into a table: kCreate fails if it exists,
  // kAppend fails if it does not, kReplace overwrites (creating if missing), kCreateAppend
  // creates if missing then appends. Returns the rows written.
  Result<int64_t> Ingest(const catalog::TableIdent& ident, ArrowArrayStream* rows, IngestMode mode);

  // Points `connection` at `schema` of this catalog (USE); the schema is created if missing.
  Status Use(engine::Connection& connection, const std::string& schema);

  // The statements that set a connection up to run `sql` for `session`, in order: USE of its
  // schema (this catalog's "main" when it has none; created in DuckDB if missing) and, when the
  // session has a user and `sql` could call one of them (its text holds "user" or "role"),
  // temporary macros current_user, user, session_user and current_role naming the user. A
  // macro counts only where a name does not bind to a column (DuckDB's rule for these names).
  Result<std::vector<std::string>> SessionSetup(const Session& session, std::string_view sql);
  // Runs SessionSetup(session, sql) on `connection`.
  Status SetUp(engine::Connection& connection, const Session& session, std::string_view sql);

 private:
  // Appends `source` to the table just created as `ident`. If that fails, the table is dropped
  // with its files: a CREATE … AS or a creating ingest whose rows fail leaves the catalog as it
  // was. Its SQL runs on `db` (db_ or a session's view of it).
  // `lineage`, when not empty, is what its snapshot records (lake_sql_lineage.cc).
  Result<int64_t> FillNewTable(engine::Database& db, const catalog::TableIdent& ident,
                               const engine::WriteSource& source, const table::SnapshotLineage& lineage = {});
  // DROP TABLE [… PURGE] (table::DropTable), counting the files left behind as `count` says.
  Result<WriteReport> DropTableStatement(const engine::Statement& w, const Session& session,
                                         table::DropOptions::Count count);
  // UPDATE … FROM and MERGE into `t` (loaded over `db`, a session's view of db_), as one commit
  // (lake_sql_merge.cc). Returns the rows updated, deleted and inserted.
  Result<int64_t> ExecuteJoinedWrite(const engine::Statement& w, const catalog::TableIdent& ident, table::Table& t,
                                     engine::Database& db, const std::string& default_schema);
  // The lineage a write records (DESIGN §9; lake_sql_lineage.cc): `query`, the query whose rows
  // the write writes (as the statement names its relations), bound on `db` with each lake table
  // it names standing for the snapshot it reads, gives the inputs — lake tables at those
  // snapshots, and the files read_parquet / read_csv / read_json read — and, for each of
  // `columns` (the written columns, one per result column in order), the input columns it
  // derives from. kInvalidArgument when DuckDB cannot bind the query.
  Result<table::SnapshotLineage> WriteLineage(engine::Database& db, std::string_view query,
                                              const std::string& default_schema,
                                              const std::vector<std::string>& columns);
  // WriteLineage's result set on `t` for the commit it makes; when there is none, a log line
  // says why and the write goes ahead without lineage (lineage never fails a write).
  void RecordLineage(table::Table& t, engine::Database& db, std::string_view query,
                     const std::string& default_schema, const std::vector<std::string>& columns);
  // The snapshot an AT clause selects (a TIMESTAMP evaluated to milliseconds, in UTC).
  Result<iceberg::SnapshotSelector> SelectorOf(const engine::TimeTravel& at);
  LakeSql(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db, std::string catalog_name,
          int64_t manifest_cache_bytes)
      : catalog_(catalog),
        io_(io),
        db_(db),
        catalog_name_(std::move(catalog_name)),
        manifest_cache_(manifest_cache_bytes > 0 ? std::make_shared<iceberg::ManifestCache>(manifest_cache_bytes)
                                                 : nullptr) {}
  // A scan source of `table` at the snapshot `selector` selects (its schema by Iceberg's
  // time-travel rule); the token `skade_scan('<token>')` reads, registered in db_.scans().
  Result<std::string> RegisterSnapshotScan(const table::Table& table, const iceberg::SnapshotSelector& selector);
  // What ResolveQuery reads in place of one relation (engine::SubstituteRelations); nullopt
  // keeps the relation (lake_sql_query.cc, as the helpers below).
  // `depth` counts the views being read around the relation (ViewRelation).
  Result<std::optional<std::string>> Substitute(const engine::RelationReference& relation,
                                                const std::string& default_schema, int depth);
  // What a query reads for the catalog's view `ident` (lake_sql_views.cc): its query, taken from
  // the current version's DuckDB or Spark SQL, with the relations it names resolved against the
  // version's default namespace, its columns named by the view's schema; nullopt when `ident` is
  // no view. kInvalidArgument for a view without SQL of those dialects (naming the dialects it
  // has), SQL DuckDB cannot run, a column count other than the schema's, or views nested deeper
  // than a bound (a cycle).
  Result<std::optional<std::string>> ViewRelation(const catalog::TableIdent& ident, int depth);
  // CREATE [OR REPLACE] VIEW … AS and DROP VIEW (lake_sql_views.cc): the catalog's views. The
  // query, as written, is the view's DuckDB SQL; it must run now, and its columns (renamed by
  // the statement's column list) are the view's schema; unqualified names in it mean the
  // session's schema. OR REPLACE adds a version to the existing view. kAlreadyExists for a
  // table or (without OR REPLACE / IF NOT EXISTS) a view of the name.
  Result<int64_t> ViewStatement(const engine::Statement& w, const Session& session);
  // The pinned scan of `ident` at the snapshot `at` selects; kNotFound for none.
  Result<std::string> TimeTravelScan(const catalog::TableIdent& ident, const engine::TimeTravel& at);
  // A relation of the rows `sql` (made by skade from catalog values) gives, read through a scan
  // source that lives only as long as statements binding it now (ScanSources::Retire).
  Result<std::string> RowsRelation(const std::string& sql);
  // The query of a listing (SHOW TABLES, SHOW ALL TABLES, DESCRIBE, information_schema.tables or
  // .columns); "" for a DESCRIBE of something that is no lake table.
  Result<std::string> ListingRelation(const engine::RelationReference& relation, const std::string& default_schema);
  // Every table of every listed namespace, sorted (catalog listings only).
  Result<std::vector<catalog::TableIdent>> ListAllTables();
  // Every view likewise (none when the catalog keeps no views).
  Result<std::vector<catalog::TableIdent>> ListAllViews();
  // kNotFound (with the nearest lake tables) for a plain table name that names nothing: neither
  // a lake table whose view is current nor a relation of DuckDB's; kInvalidArgument for a
  // nested namespace written unquoted.
  Status CheckNamed(const std::vector<std::string>& name, const std::string& default_schema);
  // Whether SyncView made a view of `ident` (it is a lake table).
  bool HasView(const catalog::TableIdent& ident);

  // Creates the DuckDB schema once (DDL from many sessions at once would conflict in DuckDB's
  // catalog, so it runs under mu_).
  Status EnsureSchemaLocked(const std::string& schema);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  engine::Database& db_;
  std::string catalog_name_;
  // Shared with the views' scan sources, which statements may hold after this object is gone.
  std::shared_ptr<iceberg::ManifestCache> manifest_cache_;
  table::WriteObserver* write_observer_ = nullptr;
  std::set<std::string> skipped_namespaces_;  // logged once each (guarded by mu_)
  std::mutex mu_;
  struct View {
    std::string metadata_location;  // of the table the view reads
    std::string scan_token;         // its engine::ScanSources entry ("" without pushdown)
    std::string scan_marks;         // without pushdown: the marks of the scan in its SQL
  };
  std::map<catalog::TableIdent, View> views_;
  bool pushdown_ = true;
  int64_t parted_read_files_ = kPartedReadFiles;
  std::set<std::string> schemas_;                     // DuckDB schemas made so far
};

}  // namespace skade::sql
