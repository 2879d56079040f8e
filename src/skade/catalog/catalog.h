// Catalog: the Iceberg catalog interface (namespaces, tables, atomic commits of requirements +
// updates, multi-table transactions) plus skade's durable, dense commit log. Implementations:
// SqlCatalog (SQLite / PostgreSQL, sql_catalog.h), RestCatalog (rest_catalog.h), NessieCatalog
// (nessie_catalog.h), FileCatalog (file_catalog.h), opened by URI in open_catalog.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/table_update.h"
#include "skade/iceberg/view_metadata.h"

namespace skade::catalog {

// The longest namespace (levels joined with '.') or table name, in bytes: the Iceberg JDBC
// catalog's columns are VARCHAR(255).
inline constexpr size_t kMaxNameBytes = 255;

// The one rule for namespace levels and table names, shared by every front (CLI, C API,
// Flight SQL, REST; DESIGN §11): 1–255 bytes of valid UTF-8 with no '/', '\\', '.', NUL or
// other control character, so a name is always one path component of its own and a dotted
// identifier splits back into the same levels. kInvalidArgument naming `what` and the
// offending character.
Status ValidateName(std::string_view name, std::string_view what);

// A namespace: one or more levels ("a", "b" is shown as "a.b"). Levels never contain '.'.
struct Namespace {
  std::vector<std::string> levels;

  // Splits "a.b" into levels. kInvalidArgument for an empty level.
  static Result<Namespace> Parse(std::string_view dotted);
  // kInvalidArgument if empty, if a level breaks ValidateName, or if the dotted form is
  // longer than kMaxNameBytes.
  Status Validate() const;
  std::string ToString() const;  // levels joined with '.'
  bool empty() const { return levels.empty(); }
  // Whether `other` is this namespace or nested below it.
  bool Contains(const Namespace& other) const;

  friend bool operator==(const Namespace&, const Namespace&) = default;
  friend auto operator<=>(const Namespace&, const Namespace&) = default;
};

struct TableIdent {
  Namespace ns;
  std::string name;

  // "a.b.t" → namespace a.b, table t; "\"a.b\".t" is not supported (dots separate levels).
  static Result<TableIdent> Parse(std::string_view dotted);
  std::string ToString() const;
  // kInvalidArgument unless the namespace is valid and the name passes ValidateName.
  Status Validate() const;

  friend bool operator==(const TableIdent&, const TableIdent&) = default;
  friend auto operator<=>(const TableIdent&, const TableIdent&) = default;
};

// A table as loaded: where its current metadata lives and the parsed metadata.
struct TableState {
  TableIdent ident;
  std::string metadata_location;
  iceberg::TableMetadataPtr metadata;
};

struct CreateTableRequest {
  iceberg::SchemaPtr schema;          // field ids as given
  iceberg::PartitionSpecPtr spec;     // null = unpartitioned
  iceberg::SortOrder sort_order;      // order id 0 = unsorted
  std::map<std::string, std::string> properties;
  std::optional<std::string> location;  // default: <warehouse>/<ns levels…>/<table> when free
};

// A table and the location its current metadata records.
struct TableLocation {
  TableIdent ident;
  std::string location;
};

// A table's name and its current metadata file, as a listing gives them.
struct TablePointer {
  TableIdent ident;
  std::string metadata_location;
};

// One table's part of a commit.
struct TableCommit {
  TableIdent ident;
  std::vector<iceberg::TableRequirement> requirements;
  std::vector<iceberg::TableUpdate> updates;
  // When set, run by the catalog after it wrote the new metadata file (or, for a remote
  // catalog, before it sends the commit) and before the table's pointer can move, once per
  // attempt: lets a writer finish making the files the commit names durable while the catalog
  // writes its metadata. An error ends the commit with that error, nothing swapped. Every
  // catalog that commits calls it.
  std::function<Status()> before_swap;
};

// Views (the Iceberg view spec).
struct ViewState {
  TableIdent ident;
  std::string metadata_location;
  std::shared_ptr<const iceberg::ViewMetadata> metadata;
};

struct CreateViewRequest {
  iceberg::SchemaPtr schema;
  iceberg::ViewVersion version;  // its ids are assigned (version 1, the schema's id)
  std::optional<std::string> location;
  std::map<std::string, std::string> properties;
};

struct ViewCommit {
  TableIdent ident;
  std::vector<iceberg::ViewRequirement> requirements;
  std::vector<iceberg::ViewUpdate> updates;
};

// One row of the commit log (skade_commit_log).
struct CommitLogEntry {
  int64_t commit_seq = 0;
  TableIdent table;
  std::optional<int64_t> snapshot_id;  // the table's current snapshot after the commit
  std::string metadata_location;
  std::string previous_metadata_location;
  std::string operation;  // snapshot summary operation, or "create", "drop", "update"…
  int64_t added_records = 0;
  int64_t deleted_records = 0;
  int64_t committed_at_us = 0;
  std::string txn_id;  // shared by the tables of one multi-table commit
};

// Sets `entry`'s operation and record counts from the snapshot its commit added: the summary's
// operation ("append" when it names none), added-records and deleted-records (0 when absent).
void DescribeAddedSnapshot(const iceberg::Snapshot& added, CommitLogEntry* entry);

// A table commit that adds several snapshots (coalesced appends) logs one entry per added
// snapshot, in the order they were added, with consecutive commit_seqs: first_commit_seq …
// commit_seq. Each entry but the last names its own snapshot; the last names the table's
// current snapshot after the commit, as the one entry of any other commit does. A log kept
// by polling (polled_log.h) sees such a commit as one change and logs it once.
struct CommitResult {
  TableState table;
  int64_t commit_seq = 0;        // the commit's last log entry; 0 from a catalog without a log
  int64_t first_commit_seq = 0;  // its first (== commit_seq when it logged one)
};

enum class DropMode { kKeepFiles, kPurge };

// A mutation's outcome remembered under the key its client sent (the REST catalog's
// Idempotency-Key), so that a retry with the key gets the first answer instead of running again.
// The catalog stores the values; what status and response mean is its caller's business.
struct IdempotencyRecord {
  std::string scope;         // whose key it is (the principal): another scope's key never matches
  std::string key;           // as the caller canonicalised it (a lower-case UUID)
  std::string request_hash;  // digest of the request the key was first sent with
  int status = 0;            // the answer's status
  std::string response;      // the answer as its caller encoded it (empty for a table commit)
  // A commit's record: the first table's new metadata file, set by CommitTransactionWithRecord
  // (the answer is rebuilt from it).
  std::string metadata_location;
  int64_t created_at_us = 0;  // when the first request with the key arrived (wall clock)
  int64_t expires_at_us = 0;  // from then on the key is free again and the record is purged
};

// State a server keeps for its clients that every server sharing the catalog must see (Flight
// SQL's bound parameters too large for a handle, closed prepared statements and sessions,
// cancelled tickets): bytes under a kind, the scope they belong to (the principal) and a key the
// caller makes unguessable, until they expire. A lookup in another scope never finds them.
struct ServerStateRecord {
  std::string kind;           // what the value is, e.g. "flightsql.params" (1-64 bytes)
  std::string scope;          // whose it is (at most 1000 bytes)
  std::string key;            // 1-128 bytes
  std::string value;          // any bytes, at most kMaxServerStateBytes
  int64_t expires_at_us = 0;  // from then on it is gone, and purged
};
inline constexpr size_t kMaxServerStateBytes = size_t{32} << 20;

// Thread-safe. Errors: kNotFound (missing namespace/table), kAlreadyExists, kConflict (a
// requirement failed or another commit won), kCommitUnknown (the outcome could not be
// determined), kInvalidArgument, kIoError, kUnavailable (database down).
class Catalog {
 public:
  virtual ~Catalog() = default;

  // The catalog name stored in catalog_name columns (default "skade").
  virtual const std::string& name() const = 0;
  // The warehouse root new tables are placed under.
  virtual const std::string& warehouse() const = 0;

  // Namespaces. Creating a nested namespace does not require its parents to exist (as in
  // the JDBC catalog); listing shows them as parents.
  virtual Status CreateNamespace(const Namespace& ns, const std::map<std::string, std::string>& properties) = 0;
  // Direct children of `parent` (top level when empty), sorted.
  virtual Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) = 0;
  virtual Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) = 0;
  virtual Status UpdateNamespaceProperties(const Namespace& ns,
                                           const std::map<std::string, std::string>& updates,
                                           const std::vector<std::string>& removals) = 0;
  // kConflict if the namespace still holds tables or child namespaces.
  virtual Status DropNamespace(const Namespace& ns) = 0;
  virtual Result<bool> NamespaceExists(const Namespace& ns) = 0;

  // Tables.
  virtual Result<std::vector<TableIdent>> ListTables(const Namespace& ns) = 0;
  // The tables of `ns` with their current metadata files, sorted by name: what a caller that
  // keeps something per metadata file (a file never changes) needs to find it without loading
  // each table. The default loads every table (one dropped meanwhile is left out); SqlCatalog
  // reads them in one query.
  virtual Result<std::vector<TablePointer>> ListTablePointers(const Namespace& ns);
  // Writes the first metadata file and registers the table (one commit-log entry "create").
  // Without request.location the table goes to the first free place of placement.h's
  // PlaceTable; a given location that overlaps another table or a namespace folder is
  // kInvalidArgument.
  virtual Result<CommitResult> CreateTable(const TableIdent& ident, const CreateTableRequest& request) = 0;
  virtual Result<TableState> LoadTable(const TableIdent& ident) = 0;
  // Removes `ident` from the catalog; kPurge then deletes its files (see SqlCatalog). With
  // `if_metadata_location`, only while the table's metadata pointer is that file: kConflict when
  // a commit moved it on (what a caller checked, e.g. a purge's location, still holds at the
  // drop). SqlCatalog checks in the dropping transaction; a REST catalog, whose protocol has no
  // such precondition, checks by loading first (a commit in between escapes the check).
  virtual Status DropTable(const TableIdent& ident, DropMode mode,
                           const std::optional<std::string>& if_metadata_location) = 0;
  Status DropTable(const TableIdent& ident, DropMode mode) { return DropTable(ident, mode, std::nullopt); }
  // Removes `ident` from the catalog and leaves every file (the REST unregisterTable), but only
  // while its metadata pointer is `metadata_location`: kConflict when a commit moved it on (load
  // the table again), kNotFound when the table is absent. The default is DropTable(ident,
  // kKeepFiles, metadata_location).
  virtual Status UnregisterTable(const TableIdent& ident, const std::string& metadata_location);
  virtual Status RenameTable(const TableIdent& from, const TableIdent& to) = 0;
  // Registers an existing metadata file under `ident`. kInvalidArgument when the table's
  // location overlaps another table's (placement.h).
  virtual Result<CommitResult> RegisterTable(const TableIdent& ident, const std::string& metadata_location) = 0;
  // Every table with its location: what placement and maintenance check against (DESIGN §11).
  // The default loads every table; SqlCatalog keeps an index.
  virtual Result<std::vector<TableLocation>> ListTableLocations();

  // Views. A name in a namespace is a table's or a view's, never both (kAlreadyExists). A
  // view's metadata files live under its location (placed as a table's would be); its changes
  // are not commit-log entries (the log records tables' commits, which carry data). The
  // defaults are kNotImplemented ("this catalog does not support views"); SqlCatalog keeps
  // views as Iceberg's JDBC catalog does (iceberg_type 'VIEW'), so both see the same views.
  //
  // Whether the catalog keeps views (the others answer kNotImplemented).
  virtual bool SupportsViews() const { return false; }
  // The views of `ns`, sorted; kNotFound for a missing namespace.
  virtual Result<std::vector<TableIdent>> ListViews(const Namespace& ns);
  virtual Result<ViewState> CreateView(const TableIdent& ident, const CreateViewRequest& request);
  // kNotFound when `ident` is no view (a table of that name included).
  virtual Result<ViewState> LoadView(const TableIdent& ident);
  // Checks the requirements, applies the updates (iceberg::ApplyViewUpdates), writes the next
  // metadata file and swaps the pointer by compare-and-swap: kConflict when a requirement fails
  // or another replace won.
  virtual Result<ViewState> CommitView(const ViewCommit& commit);
  // Removes the view from the catalog; its metadata files stay (as Iceberg's catalogs drop views).
  virtual Status DropView(const TableIdent& ident);
  virtual Status RenameView(const TableIdent& from, const TableIdent& to);
  // Registers an existing view metadata file under `ident` (read and validated first).
  virtual Result<ViewState> RegisterView(const TableIdent& ident, const std::string& metadata_location);

  // Checks requirements against the current metadata, applies the updates, writes the new
  // metadata file and swaps the pointer by compare-and-swap, appending one commit-log entry
  // (one per added snapshot when it adds several; see CommitResult).
  virtual Result<CommitResult> CommitTable(const TableCommit& commit) = 0;
  // All tables or none; one commit-log entry per table, sharing a txn_id.
  virtual Result<std::vector<CommitResult>> CommitTransaction(const std::vector<TableCommit>& commits) = 0;

  // Commit log: entries with commit_seq > after_seq, ascending, at most `limit`.
  virtual Result<std::vector<CommitLogEntry>> CommitsSince(int64_t after_seq, int64_t limit) = 0;
  // The highest commit_seq (0 when empty).
  virtual Result<int64_t> LatestCommitSeq() = 0;

  // Called once per commit-log entry after its transaction committed, in commit_seq order, on
  // the committing thread with the catalog's writer lock held: it must be quick and must not
  // call into the catalog. Replaces any previous listener; an empty function removes it, and
  // returns only after a call in progress has finished. Catalogs without a log ignore it.
  using CommitListener = std::function<void(const CommitLogEntry&)>;
  virtual void SetCommitListener(CommitListener listener) { (void)listener; }

  // A commit another process made, as a follower of the log (the commit watcher of `serve` and
  // `watch`) read it: a catalog that keeps metadata/version-hint.text for folder readers moves
  // it to the entry's metadata (forward only), in case the committer died before it did.
  // Quick: the hint is written off the caller's thread. Other catalogs ignore it.
  virtual void FollowCommit(const CommitLogEntry& entry) { (void)entry; }

  // Idempotency records (IdempotencyRecord), kept beside the commit log so that they outlive the
  // process and are shared by every server of the catalog. kNotImplemented for catalogs that keep
  // none (read-only ones, those without a database of their own): the caller keeps its records
  // elsewhere, and its commits are not guarded across a crash.
  //
  // The record of `scope` and `key` that has not expired at `now_us`, nullopt if none.
  virtual Result<std::optional<IdempotencyRecord>> LoadIdempotencyRecord(const std::string& scope,
                                                                         const std::string& key, int64_t now_us) {
    (void)scope;
    (void)key;
    (void)now_us;
    return Status::NotImplemented("this catalog keeps no idempotency records");
  }
  // Stores `record` (an expired record of its scope and key is replaced); kAlreadyExists if one
  // that has not expired is there.
  virtual Status StoreIdempotencyRecord(const IdempotencyRecord& record) {
    (void)record;
    return Status::NotImplemented("this catalog keeps no idempotency records");
  }
  // CommitTransaction that stores `record` in the commit's own database transaction, its
  // metadata_location set to the first table's new metadata file: the commit and its record land
  // together or not at all, so a retry finds the commit even when the committing process died
  // before it answered. kAlreadyExists, and nothing committed, when a record of the same scope
  // and key that has not expired is there.
  virtual Result<std::vector<CommitResult>> CommitTransactionWithRecord(const std::vector<TableCommit>& commits,
                                                                        const IdempotencyRecord& record) {
    (void)commits;
    (void)record;
    return Status::NotImplemented("this catalog keeps no idempotency records");
  }
  // Deletes the records expired at `now_us` (bounded storage); how many were deleted.
  virtual Result<int64_t> PurgeIdempotencyRecords(int64_t now_us) {
    (void)now_us;
    return Status::NotImplemented("this catalog keeps no idempotency records");
  }

  // Server state (ServerStateRecord), kept beside the commit log so that every server of the
  // catalog shares it. Catalogs that keep none (read-only ones, those without a database of their
  // own: REST, Nessie, file) say false here and answer kNotImplemented: their servers keep such
  // state in their own memory, seen by one process only.
  virtual bool KeepsServerState() const { return false; }
  // Inserts `record`, replacing the row of its kind, scope and key. kInvalidArgument for a value
  // over kMaxServerStateBytes or a kind, scope or key out of bounds; kResourceExhausted when the
  // unexpired values of its kind and scope would exceed `max_scope_bytes` in all (0 = no limit).
  virtual Status PutServerState(const ServerStateRecord& record, int64_t max_scope_bytes) {
    (void)record;
    (void)max_scope_bytes;
    return Status::NotImplemented("this catalog keeps no server state");
  }
  // The record of `kind`, `scope` and `key` not expired at `now_us`, nullopt if none.
  virtual Result<std::optional<ServerStateRecord>> GetServerState(const std::string& kind, const std::string& scope,
                                                                  const std::string& key, int64_t now_us) {
    (void)kind;
    (void)scope;
    (void)key;
    (void)now_us;
    return Status::NotImplemented("this catalog keeps no server state");
  }
  // Deletes the record of `kind`, `scope` and `key` (nothing when there is none).
  virtual Status DeleteServerState(const std::string& kind, const std::string& scope, const std::string& key) {
    (void)kind;
    (void)scope;
    (void)key;
    return Status::NotImplemented("this catalog keeps no server state");
  }
  // Deletes the records expired at `now_us` (bounded storage); how many were deleted.
  virtual Result<int64_t> PurgeServerState(int64_t now_us) {
    (void)now_us;
    return Status::NotImplemented("this catalog keeps no server state");
  }

  // Durable positions of the commit log's consumers (the lineage emitter's last delivered
  // commit_seq), kept beside the log so that every machine sharing the catalog sees them.
  // LoadConsumerCursor is nullopt for a consumer never stored. kNotImplemented for catalogs
  // that keep no log of their own (the caller then keeps its cursor elsewhere).
  virtual Result<std::optional<int64_t>> LoadConsumerCursor(const std::string& consumer) {
    (void)consumer;
    return Status::NotImplemented("this catalog keeps no consumer cursors");
  }
  virtual Status StoreConsumerCursor(const std::string& consumer, int64_t commit_seq) {
    (void)consumer;
    (void)commit_seq;
    return Status::NotImplemented("this catalog keeps no consumer cursors");
  }
};

// Every namespace nested below `parent` at any depth (not `parent` itself), sorted; the whole
// catalog for an empty `parent`. Errors as ListNamespaces returns them.
Result<std::vector<Namespace>> ListNamespacesBelow(Catalog& catalog, const Namespace& parent);

}  // namespace skade::catalog
