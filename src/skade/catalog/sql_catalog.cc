#include "skade/catalog/sql_catalog.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "skade/base/ascii.h"
#include "skade/base/clock.h"
#include "skade/base/crash_point.h"
#include "skade/base/log.h"
#include "skade/catalog/deletion_guard.h"
#include "skade/catalog/hint_writer_internal.h"
#include "skade/catalog/placement.h"
#include "skade/catalog/sql_catalog_internal.h"
#include "skade/catalog/sql_writer_internal.h"
#include "skade/iceberg/table_update.h"
#include "skade/iceberg/version_hint.h"
#include "skade/io/location.h"

namespace skade::catalog {

namespace internal {

Result<int64_t> ParseInt64(const std::optional<std::string>& text, std::string_view what) {
  if (!text) return Status::Corruption(std::string(what) + " is NULL");
  int64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) {
    return Status::Corruption(std::string(what) + " is not an integer: '" + *text + "'");
  }
  return value;
}

}  // namespace internal

namespace {

using internal::Backfill;
using internal::Dialect;
using internal::SqlConnection;
using internal::SqlParam;
using internal::SqlResult;
using internal::Text;

// A commit whose compare-and-swap lost to a concurrent commit is re-prepared on the new
// metadata (requirements checked again) at most this many times.
// Retries while the commit's requirements still hold: each lost race means another commit
// landed, so the system as a whole progresses; backoff spreads the contenders out.
constexpr int kMaxCommitAttempts = 100;
constexpr size_t kMaxIdleReaders = 4;
constexpr size_t kMetadataCacheEntries = 256;
// Serialises the placement check and the insert of a table location between PostgreSQL
// transactions (SQLite's write lock already does).
constexpr int64_t kPlacementLockKey = 0x736b616466;
// A create whose location a concurrent create took first is placed again at most this often.
constexpr int kMaxPlacementAttempts = 3;

// Rows whose iceberg_type is NULL predate the JDBC catalog's V1 schema and are tables.
constexpr std::string_view kIsTable = "(iceberg_type = 'TABLE' OR iceberg_type IS NULL)";

// Number of UTF-8 code points: SQL substr() counts characters in both dialects.
int64_t CharCount(std::string_view text) {
  int64_t count = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++count;
  }
  return count;
}

// A table row of iceberg_tables.
struct TableRow {
  std::optional<std::string> metadata_location;
  bool is_table = true;  // false for views (iceberg_type 'VIEW')
};

Result<std::optional<TableRow>> SelectTable(SqlConnection& conn, const std::string& catalog,
                                            const TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(
      SqlResult result,
      conn.Exec("SELECT metadata_location, iceberg_type FROM iceberg_tables "
                "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                {Text(catalog), Text(ident.ns.ToString()), Text(ident.name)}));
  if (result.rows.empty()) return std::optional<TableRow>();
  TableRow row;
  row.metadata_location = result.rows[0][0];
  row.is_table = !result.rows[0][1] || *result.rows[0][1] == "TABLE";
  return std::optional<TableRow>(std::move(row));
}

// A namespace exists if a property row or a table names it or a namespace below it (the
// JDBC catalog and PyIceberg both treat implied parents as existing).
Result<bool> NamespaceExistsOn(SqlConnection& conn, const std::string& catalog,
                               const Namespace& ns) {
  std::string name = ns.ToString();
  std::string prefix = name + ".";
  std::vector<SqlParam> params = {Text(catalog), Text(name), SqlParam(CharCount(prefix)),
                                  Text(prefix)};
  SKADE_ASSIGN_OR_RETURN(
      SqlResult props,
      conn.Exec("SELECT 1 FROM iceberg_namespace_properties WHERE catalog_name = ? AND "
                "(namespace = ? OR substr(namespace, 1, ?) = ?) LIMIT 1",
                params));
  if (!props.rows.empty()) return true;
  SKADE_ASSIGN_OR_RETURN(
      SqlResult tables,
      conn.Exec("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND "
                "(table_namespace = ? OR substr(table_namespace, 1, ?) = ?) LIMIT 1",
                params));
  return !tables.rows.empty();
}

Status ValidateIdent(const TableIdent& ident) { return ident.Validate(); }

// A table commit prepared outside the database: its new metadata file is already written.
struct PreparedCommit {
  TableIdent ident;
  std::string base_table_location;  // the location the base metadata records
  std::string base_location;
  std::string new_location;
  iceberg::TableMetadataPtr metadata;
  std::vector<iceberg::Snapshot> added_snapshots;  // in the order the commit added them
};

// One entry per added snapshot (one "update" entry when none was added); the last names the
// current snapshot after the commit (catalog.h, CommitResult).
std::vector<CommitLogEntry> LogEntriesFor(const PreparedCommit& p) {
  std::vector<CommitLogEntry> entries;
  const size_t n = std::max<size_t>(1, p.added_snapshots.size());
  for (size_t i = 0; i < n; ++i) {
    CommitLogEntry entry;
    entry.table = p.ident;
    const bool last = i + 1 == n;
    entry.snapshot_id = last ? p.metadata->current_snapshot_id
                             : std::optional<int64_t>(p.added_snapshots[i].snapshot_id);
    entry.metadata_location = p.new_location;
    entry.previous_metadata_location = p.base_location;
    if (!p.added_snapshots.empty()) {
      DescribeAddedSnapshot(p.added_snapshots[i], &entry);
    } else {
      entry.operation = "update";
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// Thread-safe. Writes go through one writer connection (internal::SqlWriter: group commit);
// reads use a small pool of separate connections.
class SqlCatalog final : public Catalog {
 public:
  using WriteFn = internal::SqlWriter::WriteFn;

  using Opener = std::function<Result<std::unique_ptr<SqlConnection>>()>;

  // `writer` is null for a read-only catalog: then every write is kPermissionDenied.
  // `has_log` is false for a foreign database (Java JdbcCatalog, PyIceberg SqlCatalog) opened
  // read-only: it has no skade_commit_log, so the commit log calls are kNotImplemented.
  SqlCatalog(SqlCatalogOptions options, Dialect dialect, Opener open, io::FileIO& io,
             std::unique_ptr<SqlConnection> writer, bool has_log = true)
      : options_(std::move(options)),
        dialect_(dialect),
        open_(std::move(open)),
        io_(io),
        has_log_(has_log) {
    if (writer) {
      writer_ = std::make_unique<internal::SqlWriter>(
          options_.catalog_name, dialect_, std::move(writer), options_.group_commit,
          [this](const std::vector<const CommitLogEntry*>& entries) {
            // One hold for the transaction: a listener set meanwhile gets none of it or all.
            std::lock_guard<std::mutex> lock(listener_mu_);
            if (!listener_) return;
            for (const CommitLogEntry* entry : entries) listener_(*entry);
          });
    }
  }

  // The queued writes run before the catalog goes.
  ~SqlCatalog() override { writer_.reset(); }

  const std::string& name() const override { return options_.catalog_name; }
  const std::string& warehouse() const override { return options_.warehouse; }

  // ---- namespaces ----

  Status CreateNamespace(const Namespace& ns,
                         const std::map<std::string, std::string>& properties) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    // The JDBC catalog marks a namespace without properties by an `exists` row.
    std::map<std::string, std::string> rows = properties;
    rows.emplace("exists", "true");
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ns));
             if (exists) {
               return Status::AlreadyExists("namespace " + ns.ToString() + " already exists");
             }
             for (const auto& [key, value] : rows) {
               SKADE_RETURN_IF_ERROR(conn.Exec(
                   "INSERT INTO iceberg_namespace_properties "
                   "(catalog_name, namespace, property_key, property_value) VALUES (?, ?, ?, ?)",
                   {Text(name()), Text(ns.ToString()), Text(key), Text(value)}));
             }
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override {
    if (!parent.empty()) {
      SKADE_RETURN_IF_ERROR(parent.Validate());
      SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExists(parent));
      if (!exists) return Status::NotFound("namespace " + parent.ToString() + " does not exist");
    }
    SKADE_ASSIGN_OR_RETURN(
        SqlResult result, Read<SqlResult>([&](SqlConnection& conn) {
          return conn.Exec(
              "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? "
              "UNION SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?",
              {Text(name()), Text(name())});
        }));
    std::set<Namespace> children;
    for (const auto& row : result.rows) {
      if (!row[0]) continue;
      Result<Namespace> ns = Namespace::Parse(*row[0]);
      if (!ns.ok() || ns->empty()) {
        SKADE_LOG_WARN("catalog {}: skipping namespace '{}' that skade cannot represent", name(),
                       *row[0]);
        continue;
      }
      if (ns->levels.size() <= parent.levels.size() || !parent.Contains(*ns)) continue;
      Namespace child;
      child.levels.assign(ns->levels.begin(), ns->levels.begin() + static_cast<std::ptrdiff_t>(
                                                                       parent.levels.size() + 1));
      children.insert(std::move(child));
    }
    return std::vector<Namespace>(children.begin(), children.end());
  }

  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    return Read<std::map<std::string, std::string>>(
        [&](SqlConnection& conn) -> Result<std::map<std::string, std::string>> {
          SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ns));
          if (!exists) return Status::NotFound("namespace " + ns.ToString() + " does not exist");
          SKADE_ASSIGN_OR_RETURN(
              SqlResult result,
              conn.Exec("SELECT property_key, property_value FROM iceberg_namespace_properties "
                        "WHERE catalog_name = ? AND namespace = ?",
                        {Text(name()), Text(ns.ToString())}));
          std::map<std::string, std::string> out;
          for (const auto& row : result.rows) {
            if (row[0]) out[*row[0]] = row[1].value_or("");
          }
          return out;
        });
  }

  Status UpdateNamespaceProperties(const Namespace& ns,
                                   const std::map<std::string, std::string>& updates,
                                   const std::vector<std::string>& removals) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    for (const std::string& key : removals) {
      if (updates.count(key)) {
        return Status::InvalidArgument("property '" + key + "' is both updated and removed");
      }
    }
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ns));
             if (!exists) {
               return Status::NotFound("namespace " + ns.ToString() + " does not exist");
             }
             for (const std::string& key : removals) {
               SKADE_RETURN_IF_ERROR(
                   conn.Exec("DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? "
                             "AND namespace = ? AND property_key = ?",
                             {Text(name()), Text(ns.ToString()), Text(key)}));
             }
             for (const auto& [key, value] : updates) {
               // ON CONFLICT … DO UPDATE is the same upsert syntax in SQLite and PostgreSQL.
               SKADE_RETURN_IF_ERROR(conn.Exec(
                   "INSERT INTO iceberg_namespace_properties "
                   "(catalog_name, namespace, property_key, property_value) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (catalog_name, namespace, property_key) "
                   "DO UPDATE SET property_value = excluded.property_value",
                   {Text(name()), Text(ns.ToString()), Text(key), Text(value)}));
             }
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Status DropNamespace(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ns));
             if (!exists) {
               return Status::NotFound("namespace " + ns.ToString() + " does not exist");
             }
             std::string prefix = ns.ToString() + ".";
             SKADE_ASSIGN_OR_RETURN(
                 SqlResult tables,
                 conn.Exec("SELECT 1 FROM iceberg_tables WHERE catalog_name = ? AND "
                           "(table_namespace = ? OR substr(table_namespace, 1, ?) = ?) LIMIT 1",
                           {Text(name()), Text(ns.ToString()), SqlParam(CharCount(prefix)),
                            Text(prefix)}));
             if (!tables.rows.empty()) {
               return Status::Conflict("namespace " + ns.ToString() + " is not empty (tables)");
             }
             SKADE_ASSIGN_OR_RETURN(
                 SqlResult children,
                 conn.Exec("SELECT 1 FROM iceberg_namespace_properties WHERE catalog_name = ? "
                           "AND substr(namespace, 1, ?) = ? LIMIT 1",
                           {Text(name()), SqlParam(CharCount(prefix)), Text(prefix)}));
             if (!children.rows.empty()) {
               return Status::Conflict("namespace " + ns.ToString() +
                                       " is not empty (child namespaces)");
             }
             SKADE_RETURN_IF_ERROR(
                 conn.Exec("DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND "
                           "namespace = ?",
                           {Text(name()), Text(ns.ToString())}));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Result<bool> NamespaceExists(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    return Read<bool>([&](SqlConnection& conn) { return NamespaceExistsOn(conn, name(), ns); });
  }

  // ---- tables ----

  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override { return ListNames(ns, kIsTable); }

  Result<std::vector<TablePointer>> ListTablePointers(const Namespace& ns) override {
    SKADE_ASSIGN_OR_RETURN(SqlResult result, SelectInNamespace(ns, "table_name, metadata_location", kIsTable));
    std::vector<TablePointer> out;
    out.reserve(result.rows.size());
    for (auto& row : result.rows) {
      if (!row[0]) continue;
      TableIdent ident{ns, *row[0]};
      if (!row[1] || row[1]->empty()) {
        // As LoadTable answers for this table.
        return Status::Corruption("table " + ident.ToString() + " has no metadata location");
      }
      out.push_back(TablePointer{std::move(ident), std::move(*row[1])});
    }
    std::sort(out.begin(), out.end(), [](const TablePointer& a, const TablePointer& b) { return a.ident < b.ident; });
    return out;
  }

  Result<CommitResult> CreateTable(const TableIdent& ident,
                                   const CreateTableRequest& request) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_RETURN_IF_ERROR(Writable());
    if (request.schema == nullptr) return Status::InvalidArgument("create table: no schema");
    // Cheap checks before writing any file; repeated inside the transaction.
    SKADE_RETURN_IF_ERROR(CheckCreatable(ident));
    Status raced;
    for (int attempt = 0; attempt < kMaxPlacementAttempts; ++attempt) {
      Result<CommitResult> created = CreateTableOnce(ident, request);
      if (created.ok() || created.status().code() != StatusCode::kConflict) return created;
      raced = created.status();
    }
    return raced.WithContext("create table " + ident.ToString());
  }

  Result<std::vector<TableLocation>> ListTableLocations() override {
    return Read<std::vector<TableLocation>>(
        [&](SqlConnection& conn) { return LocationsOn(conn, Backfill::kNo); });
  }

  Result<TableState> LoadTable(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row,
                           Read<std::optional<TableRow>>([&](SqlConnection& conn) {
                             return SelectTable(conn, name(), ident);
                           }));
    if (!row || !row->is_table) {
      return Status::NotFound("table " + ident.ToString() + " does not exist");
    }
    if (!row->metadata_location || row->metadata_location->empty()) {
      return Status::Corruption("table " + ident.ToString() + " has no metadata location");
    }
    SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadataPtr metadata,
                           LoadMetadata(*row->metadata_location));
    return TableState{ident, *row->metadata_location, std::move(metadata)};
  }

  Status DropTable(const TableIdent& ident, DropMode mode,
                   const std::optional<std::string>& if_metadata_location) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    std::optional<std::string> purge_root;
    std::optional<std::string> purged_metadata = if_metadata_location;
    std::vector<std::string> deletable;
    if (mode == DropMode::kPurge) {
      SKADE_ASSIGN_OR_RETURN(TableState state, LoadTable(ident));
      if (if_metadata_location && state.metadata_location != *if_metadata_location) {
        return Status::Conflict("table " + ident.ToString() + " changed since it was loaded: its metadata is now " +
                                state.metadata_location);
      }
      purge_root = state.metadata->location;
      purged_metadata = state.metadata_location;
      // Everything that can refuse the purge is asked before the table is dropped: a purge
      // that cannot start leaves the table as it was. The other tables' locations are read
      // while this one is still listed among them; the hints of its last commits go first.
      SKADE_ASSIGN_OR_RETURN(std::unique_ptr<DeletionGuard> guard, DeletionGuard::Open(*this, io_, ident, *purge_root));
      hints_.Drain();
      SKADE_ASSIGN_OR_RETURN(std::vector<io::FileInfo> files,
                             io_.List(io::JoinLocation(*purge_root, "")).WithContext("purge " + ident.ToString()));
      std::vector<std::string> candidates;
      for (const io::FileInfo& file : files) candidates.push_back(file.location);
      SKADE_ASSIGN_OR_RETURN(deletable, guard->Filter(candidates).WithContext("purge " + ident.ToString()));
    }
    // The files listed for the purge are those of the metadata read above: a commit in between
    // (a set-location, say) makes the purge start over rather than delete by a stale location.
    SKADE_RETURN_IF_ERROR(RemoveTableRow(ident, purged_metadata, "changed since it was loaded; load it again")
                              .WithContext("drop table " + ident.ToString()));
    // The table is gone from the catalog; now remove what lies under its location, except what
    // belongs to another table (DeletionGuard). The drop has happened and is the answer: a file
    // that cannot be removed does not stop the others and is logged (an orphan now, for
    // `skade gc` or by hand), as Iceberg's own catalogs purge.
    Status first_failure;
    size_t failed = 0;
    for (const std::string& file : deletable) {
      Status st = io_.Delete(file);
      if (st.ok()) continue;
      if (failed++ == 0) first_failure = st;
    }
    if (failed > 0) {
      SKADE_LOG_WARN("purge {}: the table was dropped, but {} of its files could not be removed (first: {})",
                     ident.ToString(), failed, first_failure.ToString());
    }
    return Status::Ok();
  }

  Status UnregisterTable(const TableIdent& ident, const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    return RemoveTableRow(ident, metadata_location, "changed since it was loaded; load it again")
        .WithContext("unregister table " + ident.ToString());
  }

  // ---- views (rows of iceberg_type 'VIEW', as Iceberg's JDBC catalog keeps them) ----

  bool SupportsViews() const override { return true; }

  Result<std::vector<TableIdent>> ListViews(const Namespace& ns) override {
    return ListNames(ns, "iceberg_type = 'VIEW'");
  }

  Result<ViewState> CreateView(const TableIdent& ident, const CreateViewRequest& request) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_RETURN_IF_ERROR(Writable());
    const std::string what = "create view " + ident.ToString();
    if (request.schema == nullptr) return Status::InvalidArgument(what + ": no schema");
    SKADE_RETURN_IF_ERROR(CheckCreatable(ident));
    // Placed as a table would be: never inside a table's location (whose purge would delete
    // the view's files) nor onto a folder that holds files.
    SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
    std::string location;
    if (request.location && !request.location->empty()) {
      location = *request.location;
      SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, ident, location).WithContext(what));
    } else {
      SKADE_ASSIGN_OR_RETURN(location, PlaceTable(inputs, ident, [&](const std::string& candidate) -> Result<bool> {
                               SKADE_ASSIGN_OR_RETURN(auto files, io_.List(io::JoinLocation(candidate, "")));
                               return !files.empty();
                             }));
    }
    SKADE_ASSIGN_OR_RETURN(iceberg::ViewMetadata created,
                           iceberg::NewViewMetadata(request.schema, request.version, location, request.properties,
                                                    NowMillis())
                               .WithContext(what));
    auto metadata = std::make_shared<const iceberg::ViewMetadata>(std::move(created));
    const std::string metadata_location =
        io::JoinLocation(io::JoinLocation(location, "metadata"), iceberg::NextMetadataFileName(""));
    SKADE_RETURN_IF_ERROR(io_.CreateExclusive(metadata_location, iceberg::ViewMetadataToJson(*metadata)));
    Result<std::vector<CommitLogEntry>> written = Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
      SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, ident));
      SKADE_RETURN_IF_ERROR(InsertRow(conn, ident, metadata_location, "VIEW"));
      return std::vector<CommitLogEntry>();
    });
    if (!written.ok()) {
      DiscardUnlessUnknown(written.status(), {metadata_location});
      return written.status().WithContext(what);
    }
    return ViewState{ident, metadata_location, std::move(metadata)};
  }

  Result<ViewState> LoadView(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, Read<std::optional<TableRow>>([&](SqlConnection& conn) {
                             return SelectTable(conn, name(), ident);
                           }));
    if (!row || row->is_table) return Status::NotFound("view " + ident.ToString() + " does not exist");
    if (!row->metadata_location || row->metadata_location->empty()) {
      return Status::Corruption("view " + ident.ToString() + " has no metadata location");
    }
    SKADE_ASSIGN_OR_RETURN(auto metadata, LoadViewMetadata(*row->metadata_location));
    return ViewState{ident, *row->metadata_location, std::move(metadata)};
  }

  Result<ViewState> CommitView(const ViewCommit& commit) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(commit.ident));
    SKADE_RETURN_IF_ERROR(Writable());
    const std::string what = "replace view " + commit.ident.ToString();
    // Like a table commit: a lost race is retried on the new metadata while the requirements
    // still hold there.
    for (int attempt = 0;; ++attempt) {
      SKADE_ASSIGN_OR_RETURN(ViewState base, LoadView(commit.ident));
      for (const iceberg::ViewRequirement& requirement : commit.requirements) {
        SKADE_RETURN_IF_ERROR(iceberg::CheckViewRequirement(*base.metadata, requirement).WithContext(what));
      }
      SKADE_ASSIGN_OR_RETURN(iceberg::ViewMetadata applied,
                             iceberg::ApplyViewUpdates(*base.metadata, commit.updates, NowMillis()).WithContext(what));
      auto next = std::make_shared<const iceberg::ViewMetadata>(std::move(applied));
      if (next->location != base.metadata->location) {
        SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
        SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, commit.ident, next->location).WithContext(what));
      }
      const std::string next_location = io::JoinLocation(io::JoinLocation(next->location, "metadata"),
                                                         iceberg::NextMetadataFileName(base.metadata_location));
      Status created = io_.CreateExclusive(next_location, iceberg::ViewMetadataToJson(*next));
      Status outcome = created;
      if (created.ok()) {
        outcome = Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
                    SKADE_ASSIGN_OR_RETURN(
                        SqlResult swapped,
                        conn.Exec("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                                  "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND "
                                  "iceberg_type = 'VIEW' AND metadata_location = ?",
                                  {Text(next_location), Text(base.metadata_location), Text(name()),
                                   Text(commit.ident.ns.ToString()), Text(commit.ident.name),
                                   Text(base.metadata_location)}));
                    if (swapped.affected != 1) {
                      return Status::Conflict("view " + commit.ident.ToString() + " was changed by a concurrent commit");
                    }
                    return std::vector<CommitLogEntry>();
                  }).status();
        if (outcome.ok()) return ViewState{commit.ident, next_location, std::move(next)};
        DiscardUnlessUnknown(outcome, {next_location});
      }
      const bool raced = outcome.code() == StatusCode::kConflict || outcome.code() == StatusCode::kAlreadyExists;
      if (!raced || attempt + 1 >= kMaxCommitAttempts) return outcome.WithContext(what);
      BackOff(attempt);
    }
  }

  Status DropView(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, SelectTable(conn, name(), ident));
             if (!row || row->is_table) return Status::NotFound("view " + ident.ToString() + " does not exist");
             SKADE_RETURN_IF_ERROR(conn.Exec("DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? "
                                             "AND table_name = ? AND iceberg_type = 'VIEW'",
                                             {Text(name()), Text(ident.ns.ToString()), Text(ident.name)}));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Status RenameView(const TableIdent& from, const TableIdent& to) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(from));
    SKADE_RETURN_IF_ERROR(ValidateIdent(to));
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, SelectTable(conn, name(), from));
             if (!row || row->is_table) return Status::NotFound("view " + from.ToString() + " does not exist");
             SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, to));
             SKADE_RETURN_IF_ERROR(conn.Exec("UPDATE iceberg_tables SET table_namespace = ?, table_name = ? "
                                             "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
                                             "AND iceberg_type = 'VIEW'",
                                             {Text(to.ns.ToString()), Text(to.name), Text(name()),
                                              Text(from.ns.ToString()), Text(from.name)}));
             return std::vector<CommitLogEntry>();
           })
        .status()
        .WithContext("rename view " + from.ToString() + " to " + to.ToString());
  }

  Result<ViewState> RegisterView(const TableIdent& ident, const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_RETURN_IF_ERROR(Writable());
    const std::string what = "register view " + ident.ToString();
    SKADE_ASSIGN_OR_RETURN(auto metadata, LoadViewMetadata(metadata_location).WithContext(what));
    SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
    SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, ident, metadata->location).WithContext(what));
    SKADE_RETURN_IF_ERROR(Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
                            SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, ident));
                            SKADE_RETURN_IF_ERROR(InsertRow(conn, ident, metadata_location, "VIEW"));
                            return std::vector<CommitLogEntry>();
                          })
                              .status()
                              .WithContext(what));
    return ViewState{ident, metadata_location, std::move(metadata)};
  }

  Status RenameTable(const TableIdent& from, const TableIdent& to) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(from));
    SKADE_RETURN_IF_ERROR(ValidateIdent(to));
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, SelectTable(conn, name(), from));
             if (!row || !row->is_table) {
               return Status::NotFound("table " + from.ToString() + " does not exist");
             }
             SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, to));
             SKADE_RETURN_IF_ERROR(
                 conn.Exec("UPDATE iceberg_tables SET table_namespace = ?, table_name = ? "
                           "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                           {Text(to.ns.ToString()), Text(to.name), Text(name()),
                            Text(from.ns.ToString()), Text(from.name)}));
             // The location stays (Iceberg renames never move files).
             SKADE_RETURN_IF_ERROR(internal::RenameTableLocation(conn, name(), from, to));
             CommitLogEntry entry;
             entry.table = to;
             entry.metadata_location = row->metadata_location.value_or("");
             entry.previous_metadata_location = entry.metadata_location;
             entry.operation = "rename";
             return std::vector<CommitLogEntry>{std::move(entry)};
           })
        .status()
        .WithContext("rename " + from.ToString() + " to " + to.ToString());
  }

  Result<CommitResult> RegisterTable(const TableIdent& ident,
                                     const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(ValidateIdent(ident));
    SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadataPtr metadata, LoadMetadata(metadata_location));
    const std::string& location = metadata->location;
    if (!location.empty()) {
      SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
      SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, ident, location).WithContext("register table " + ident.ToString()));
    }
    SKADE_ASSIGN_OR_RETURN(std::vector<CommitLogEntry> logged,
                           Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
                             SKADE_RETURN_IF_ERROR(LockPlacement(conn));
                             SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, ident));
                             if (!location.empty()) {
                               SKADE_ASSIGN_OR_RETURN(PlacementInputs now, PlacementInputsOn(conn, Backfill::kYes));
                               SKADE_RETURN_IF_ERROR(CheckLocationFree(now, ident, location));
                               SKADE_RETURN_IF_ERROR(internal::PutTableLocation(conn, name(), ident, location));
                             }
                             SKADE_RETURN_IF_ERROR(InsertTable(conn, ident, metadata_location));
                             CommitLogEntry entry;
                             entry.table = ident;
                             entry.snapshot_id = metadata->current_snapshot_id;
                             entry.metadata_location = metadata_location;
                             entry.operation = "register";
                             return std::vector<CommitLogEntry>{std::move(entry)};
                           }).WithContext("register table " + ident.ToString()));
    return CommitResult{TableState{ident, metadata_location, metadata}, logged.at(0).commit_seq,
                        logged.at(0).commit_seq};
  }

  // ---- commits ----

  Result<CommitResult> CommitTable(const TableCommit& commit) override {
    SKADE_ASSIGN_OR_RETURN(std::vector<CommitResult> results, CommitTransaction({commit}));
    return std::move(results.at(0));
  }

  Result<std::vector<CommitResult>> CommitTransaction(
      const std::vector<TableCommit>& commits) override {
    return Commit(commits, nullptr);
  }

  Result<std::vector<CommitResult>> CommitTransactionWithRecord(const std::vector<TableCommit>& commits,
                                                                const IdempotencyRecord& record) override {
    SKADE_RETURN_IF_ERROR(RequireRecords());
    return Commit(commits, &record);
  }

  // ---- idempotency records ----

  Result<std::optional<IdempotencyRecord>> LoadIdempotencyRecord(const std::string& scope, const std::string& key,
                                                                 int64_t now_us) override {
    SKADE_RETURN_IF_ERROR(RequireRecords());
    return Read<std::optional<IdempotencyRecord>>([&](SqlConnection& conn) {
      return internal::SelectIdempotencyRecord(conn, name(), scope, key, now_us);
    });
  }

  Status StoreIdempotencyRecord(const IdempotencyRecord& record) override {
    SKADE_RETURN_IF_ERROR(RequireRecords());
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_RETURN_IF_ERROR(internal::InsertIdempotencyRecord(conn, name(), record, NowMicros()));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Result<int64_t> PurgeIdempotencyRecords(int64_t now_us) override {
    SKADE_RETURN_IF_ERROR(RequireRecords());
    int64_t purged = 0;
    SKADE_RETURN_IF_ERROR(Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
                            SKADE_ASSIGN_OR_RETURN(purged,
                                                   internal::DeleteExpiredIdempotencyRecords(conn, name(), now_us));
                            return std::vector<CommitLogEntry>();
                          }).status());
    return purged;
  }

  // ---- server state (skade_server_state; the same rule as idempotency records) ----

  bool KeepsServerState() const override { return writer_ && has_log_; }

  Status RequireServerState() const {
    if (KeepsServerState()) return Status::Ok();
    return Status::NotImplemented("catalog " + name() + " is open read-only and keeps no server state");
  }

  Status PutServerState(const ServerStateRecord& record, int64_t max_scope_bytes) override {
    SKADE_RETURN_IF_ERROR(RequireServerState());
    SKADE_RETURN_IF_ERROR(internal::CheckServerStateKey(record.kind, record.scope, record.key));
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_RETURN_IF_ERROR(internal::PutServerStateRow(conn, name(), record, max_scope_bytes, NowMicros()));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Result<std::optional<ServerStateRecord>> GetServerState(const std::string& kind, const std::string& scope,
                                                          const std::string& key, int64_t now_us) override {
    SKADE_RETURN_IF_ERROR(RequireServerState());
    return Read<std::optional<ServerStateRecord>>([&](SqlConnection& conn) {
      return internal::SelectServerState(conn, name(), kind, scope, key, now_us);
    });
  }

  Status DeleteServerState(const std::string& kind, const std::string& scope, const std::string& key) override {
    SKADE_RETURN_IF_ERROR(RequireServerState());
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_RETURN_IF_ERROR(internal::DeleteServerStateRow(conn, name(), kind, scope, key));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Result<int64_t> PurgeServerState(int64_t now_us) override {
    SKADE_RETURN_IF_ERROR(RequireServerState());
    int64_t purged = 0;
    SKADE_RETURN_IF_ERROR(Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
                            SKADE_ASSIGN_OR_RETURN(purged, internal::DeleteExpiredServerState(conn, name(), now_us));
                            return std::vector<CommitLogEntry>();
                          }).status());
    return purged;
  }

  // Records live in skade's own tables, written through the writer: a read-only catalog, or a
  // foreign one without skade's tables, keeps none.
  Status RequireRecords() const {
    if (writer_ && has_log_) return Status::Ok();
    return Status::NotImplemented("catalog " + name() + " is open read-only and keeps no idempotency records");
  }

  // CommitTransaction, storing `record` (when given) in the transaction that swaps the pointers.
  Result<std::vector<CommitResult>> Commit(const std::vector<TableCommit>& commits, const IdempotencyRecord* record) {
    if (commits.empty()) return Status::InvalidArgument("commit: no tables");
    SKADE_RETURN_IF_ERROR(Writable());
    std::set<TableIdent> seen;
    for (const TableCommit& commit : commits) {
      SKADE_RETURN_IF_ERROR(ValidateIdent(commit.ident));
      if (!seen.insert(commit.ident).second) {
        return Status::InvalidArgument("commit names table " + commit.ident.ToString() + " twice");
      }
    }
    Status last_conflict;
    for (int attempt = 0; attempt < kMaxCommitAttempts; ++attempt) {
      if (attempt >= 2) BackOff(attempt);
      std::vector<PreparedCommit> prepared;
      Status status;
      for (const TableCommit& commit : commits) {
        Result<PreparedCommit> p = Prepare(commit, attempt > 0);
        if (!p.ok()) {
          status = p.status();
          break;
        }
        prepared.push_back(std::move(p).value());
      }
      std::vector<std::string> written;
      for (const PreparedCommit& p : prepared) written.push_back(p.new_location);
      // The writers' files are durable before any pointer can move (TableCommit::before_swap).
      for (size_t i = 0; i < commits.size() && status.ok(); ++i) {
        if (commits[i].before_swap) status = commits[i].before_swap();
      }
      if (!status.ok()) {
        DiscardUnlessUnknown(status, written);
        return status;
      }
      CrashPoint("commit.after_metadata_write");
      Result<std::vector<CommitLogEntry>> logged =
          Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
            std::vector<CommitLogEntry> entries;
            for (const PreparedCommit& p : prepared) {
              // The optimistic protocol's compare-and-swap: the pointer moves only if it still
              // names the metadata the updates were applied to (as JdbcCatalog's commit).
              SKADE_ASSIGN_OR_RETURN(
                  SqlResult swapped,
                  conn.Exec(
                      "UPDATE iceberg_tables SET metadata_location = ?, "
                      "previous_metadata_location = ? WHERE catalog_name = ? AND "
                      "table_namespace = ? AND table_name = ? AND metadata_location = ?",
                      {Text(p.new_location), Text(p.base_location), Text(name()),
                       Text(p.ident.ns.ToString()), Text(p.ident.name), Text(p.base_location)}));
              if (swapped.affected != 1) {
                return Status::Conflict("table " + p.ident.ToString() +
                                        " was changed by a concurrent commit");
              }
              if (p.metadata->location != p.base_table_location) {
                // set-location: the new location must be as free as a new table's.
                SKADE_RETURN_IF_ERROR(LockPlacement(conn));
                SKADE_ASSIGN_OR_RETURN(PlacementInputs now, PlacementInputsOn(conn, Backfill::kYes));
                SKADE_RETURN_IF_ERROR(CheckLocationFree(now, p.ident, p.metadata->location)
                                          .WithContext("commit " + p.ident.ToString()));
                SKADE_RETURN_IF_ERROR(internal::PutTableLocation(conn, name(), p.ident, p.metadata->location));
              }
              for (CommitLogEntry& entry : LogEntriesFor(p)) entries.push_back(std::move(entry));
            }
            if (record != nullptr) {
              // In the same transaction as the swaps: a crash after COMMIT leaves both, one
              // before leaves neither, so a retry of the request either finds the commit or
              // makes it (kAlreadyExists: another request with the key won; nothing swapped).
              IdempotencyRecord stored = *record;
              stored.metadata_location = prepared.front().new_location;
              SKADE_RETURN_IF_ERROR(internal::InsertIdempotencyRecord(conn, name(), stored, NowMicros()));
            }
            return entries;
          });
      if (logged.ok()) {
        CrashPoint("commit.after_log");
        std::vector<CommitResult> results;
        size_t next_entry = 0;
        for (size_t i = 0; i < prepared.size(); ++i) {
          CacheMetadata(prepared[i].new_location, prepared[i].metadata);
          AdvanceVersionHint(prepared[i].ident, prepared[i].new_location);
          const size_t n = std::max<size_t>(1, prepared[i].added_snapshots.size());
          CommitResult r{TableState{prepared[i].ident, prepared[i].new_location, prepared[i].metadata},
                         logged->at(next_entry + n - 1).commit_seq, logged->at(next_entry).commit_seq};
          next_entry += n;
          results.push_back(std::move(r));
        }
        return results;
      }
      DiscardUnlessUnknown(logged.status(), written);
      if (logged.status().code() != StatusCode::kConflict) return logged.status();
      last_conflict = logged.status();
    }
    return last_conflict.WithContext("commit gave up after " + std::to_string(kMaxCommitAttempts) +
                                     " attempts");
  }

  // ---- commit log ----

  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t after_seq, int64_t limit) override {
    SKADE_RETURN_IF_ERROR(RequireLog());
    if (limit <= 0) return std::vector<CommitLogEntry>();
    return Read<std::vector<CommitLogEntry>>(
        [&](SqlConnection& conn) { return internal::SelectCommitsSince(conn, name(), after_seq, limit); });
  }

  Result<int64_t> LatestCommitSeq() override {
    SKADE_RETURN_IF_ERROR(RequireLog());
    return Read<int64_t>(
        [&](SqlConnection& conn) { return internal::SelectLastCommitSeq(conn, internal::LockRow::kNo); });
  }

  Result<std::optional<int64_t>> LoadConsumerCursor(const std::string& consumer) override {
    SKADE_RETURN_IF_ERROR(RequireLog());
    return Read<std::optional<int64_t>>(
        [&](SqlConnection& conn) { return internal::SelectConsumerCursor(conn, consumer); });
  }

  Status StoreConsumerCursor(const std::string& consumer, int64_t commit_seq) override {
    SKADE_RETURN_IF_ERROR(RequireLog());
    if (consumer.empty() || consumer.size() > 200) return Status::InvalidArgument("a consumer name has 1 to 200 characters");
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_RETURN_IF_ERROR(internal::PutConsumerCursor(conn, consumer, commit_seq));
             return std::vector<CommitLogEntry>();
           })
        .status();
  }

  Status RequireLog() const {
    if (has_log_) return Status::Ok();
    return Status::NotImplemented("catalog " + options_.uri +
                                  " keeps no commit log (an Iceberg JDBC/SQL catalog written by another library)");
  }

  void SetCommitListener(CommitListener listener) override {
    std::lock_guard<std::mutex> lock(listener_mu_);
    listener_ = std::move(listener);
  }

 private:
  // ---- placement (placement.h) ----

  Result<std::vector<TableLocation>> LocationsOn(SqlConnection& conn, Backfill backfill) {
    return internal::SelectTableLocations(
        conn, name(),
        [&](const std::string& metadata_location) -> Result<std::string> {
          SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadataPtr metadata, LoadMetadata(metadata_location));
          return metadata->location;
        },
        backfill);
  }

  Result<PlacementInputs> PlacementInputsOn(SqlConnection& conn, Backfill backfill) {
    PlacementInputs inputs;
    inputs.warehouse = options_.warehouse;
    SKADE_ASSIGN_OR_RETURN(inputs.tables, LocationsOn(conn, backfill));
    SKADE_ASSIGN_OR_RETURN(inputs.namespaces, internal::SelectAllNamespaces(conn, name()));
    return inputs;
  }

  Result<PlacementInputs> ReadPlacementInputs() {
    return Read<PlacementInputs>([&](SqlConnection& conn) { return PlacementInputsOn(conn, Backfill::kNo); });
  }

  // Inside a write transaction: no other placement runs until it ends.
  Status LockPlacement(SqlConnection& conn) {
    if (conn.dialect() != Dialect::kPostgres) return Status::Ok();
    return conn.Exec("SELECT pg_advisory_xact_lock(?)", {SqlParam(kPlacementLockKey)}).status();
  }

  // One placement and create; kConflict when a concurrent create took the location between
  // the check and the transaction (the caller places again).
  Result<CommitResult> CreateTableOnce(const TableIdent& ident, const CreateTableRequest& request) {
    SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
    std::string location;
    if (request.location && !request.location->empty()) {
      location = *request.location;
      SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, ident, location).WithContext("create table " + ident.ToString()));
    } else {
      SKADE_ASSIGN_OR_RETURN(location, PlaceTable(inputs, ident, [&](const std::string& candidate) -> Result<bool> {
                               SKADE_ASSIGN_OR_RETURN(auto files, io_.List(io::JoinLocation(candidate, "")));
                               return !files.empty();
                             }));
    }
    SKADE_ASSIGN_OR_RETURN(
        iceberg::TableMetadata created,
        iceberg::NewTableMetadata(request.schema, request.spec, request.sort_order, location,
                                  request.properties, NowMillis()));
    auto metadata = std::make_shared<const iceberg::TableMetadata>(std::move(created));
    SKADE_ASSIGN_OR_RETURN(std::string metadata_folder,
                           MetadataFolder(*metadata).WithContext("create table " + ident.ToString()));
    std::string metadata_location = io::JoinLocation(metadata_folder, iceberg::NextMetadataFileName(""));
    SKADE_RETURN_IF_ERROR(
        io_.CreateExclusive(metadata_location, iceberg::TableMetadataToJson(*metadata)));
    Result<std::vector<CommitLogEntry>> logged =
        Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
          SKADE_RETURN_IF_ERROR(LockPlacement(conn));
          SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, ident));
          SKADE_ASSIGN_OR_RETURN(PlacementInputs now, PlacementInputsOn(conn, Backfill::kYes));
          Status free = CheckLocationFree(now, ident, location);
          if (!free.ok()) return Status::Conflict("a concurrent create took the location: " + free.message());
          SKADE_RETURN_IF_ERROR(InsertTable(conn, ident, metadata_location));
          SKADE_RETURN_IF_ERROR(internal::PutTableLocation(conn, name(), ident, location));
          CommitLogEntry entry;
          entry.table = ident;
          entry.metadata_location = metadata_location;
          entry.operation = "create";
          return std::vector<CommitLogEntry>{std::move(entry)};
        });
    if (!logged.ok()) {
      DiscardUnlessUnknown(logged.status(), {metadata_location});
      return logged.status().WithContext("create table " + ident.ToString());
    }
    CacheMetadata(metadata_location, metadata);
    AdvanceVersionHint(ident, metadata_location);
    return CommitResult{TableState{ident, metadata_location, metadata}, logged->at(0).commit_seq,
                        logged->at(0).commit_seq};
  }

  // After a commit: folder readers follow metadata/version-hint.text to the committed file
  // (written by hints_ off the commit's path).
  void AdvanceVersionHint(const TableIdent& ident, const std::string& metadata_location) {
    hints_.Advance(ident.ToString(), metadata_location);
  }

  void FollowCommit(const CommitLogEntry& entry) override {
    // A reader writes nothing; a dropped table keeps no hint (its folder may be purged).
    if (options_.access == SqlCatalogOptions::Access::kReadOnly) return;
    if (entry.operation == "drop" || entry.metadata_location.empty()) return;
    hints_.Advance(entry.table.ToString(), entry.metadata_location);
  }

  // ---- connections ----

  Result<std::unique_ptr<SqlConnection>> OpenConnection() const { return open_(); }

  template <typename T>
  Result<T> Read(const std::function<Result<T>(SqlConnection&)>& fn) {
    std::unique_ptr<SqlConnection> conn;
    {
      std::lock_guard<std::mutex> lock(readers_mu_);
      if (!idle_readers_.empty()) {
        conn = std::move(idle_readers_.back());
        idle_readers_.pop_back();
      }
    }
    if (!conn) {
      SKADE_ASSIGN_OR_RETURN(conn, OpenConnection());
    }
    Result<T> result = fn(*conn);
    bool healthy = result.ok() || result.status().code() != StatusCode::kUnavailable;
    if (healthy && !conn->InTransaction()) {
      std::lock_guard<std::mutex> lock(readers_mu_);
      if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(conn));
    }
    return result;
  }

  // ---- writes ----

  Status Writable() const {
    if (!writer_) return Status::PermissionDenied("catalog " + name() + " is open read-only");
    return Status::Ok();
  }

  // Runs `fn` in a write transaction (sql_writer_internal.h): its log entries come back with
  // commit_seq, committed_at_us and txn_id filled in.
  Result<std::vector<CommitLogEntry>> Write(WriteFn fn) {
    SKADE_RETURN_IF_ERROR(Writable());
    return writer_->Write(std::move(fn));
  }

  // Deletes the table's row and recorded location in one transaction that logs a "drop"; with
  // `expected`, only while the row still names that metadata file (kConflict, the table
  // "<ident> `changed`", otherwise). Leaves every file.
  Status RemoveTableRow(const TableIdent& ident, const std::optional<std::string>& expected, std::string_view changed) {
    return Write([&](SqlConnection& conn) -> Result<std::vector<CommitLogEntry>> {
             SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, SelectTable(conn, name(), ident));
             if (!row || !row->is_table) {
               return Status::NotFound("table " + ident.ToString() + " does not exist");
             }
             if (expected && row->metadata_location != expected) {
               return Status::Conflict("table " + ident.ToString() + " " + std::string(changed) +
                                       " (its metadata is now " + row->metadata_location.value_or("") + ")");
             }
             SKADE_RETURN_IF_ERROR(
                 conn.Exec("DELETE FROM iceberg_tables WHERE catalog_name = ? AND "
                           "table_namespace = ? AND table_name = ?",
                           {Text(name()), Text(ident.ns.ToString()), Text(ident.name)}));
             SKADE_RETURN_IF_ERROR(internal::DeleteTableLocation(conn, name(), ident));
             CommitLogEntry entry;
             entry.table = ident;
             entry.previous_metadata_location = row->metadata_location.value_or("");
             entry.operation = "drop";
             return std::vector<CommitLogEntry>{std::move(entry)};
           })
        .status();
  }

  // The names in `ns` of the rows meeting `condition` (kIsTable, or views'), sorted; kNotFound
  // for a namespace that does not exist.
  Result<std::vector<TableIdent>> ListNames(const Namespace& ns, std::string_view condition) {
    SKADE_ASSIGN_OR_RETURN(SqlResult result, SelectInNamespace(ns, "table_name", condition));
    std::vector<TableIdent> out;
    for (const auto& row : result.rows) {
      if (row[0]) out.push_back(TableIdent{ns, *row[0]});
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // `columns` (constant SQL, table_name first) of the rows in `ns` meeting `condition`;
  // kNotFound for a namespace that does not exist.
  Result<SqlResult> SelectInNamespace(const Namespace& ns, std::string_view columns, std::string_view condition) {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    return Read<SqlResult>([&](SqlConnection& conn) -> Result<SqlResult> {
      SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ns));
      if (!exists) return Status::NotFound("namespace " + ns.ToString() + " does not exist");
      return conn.Exec("SELECT " + std::string(columns) + " FROM iceberg_tables WHERE catalog_name = ? AND "
                       "table_namespace = ? AND " + std::string(condition),
                       {Text(name()), Text(ns.ToString())});
    });
  }

  Status InsertTable(SqlConnection& conn, const TableIdent& ident,
                     const std::string& metadata_location) {
    return InsertRow(conn, ident, metadata_location, "TABLE");
  }

  // `type` is 'TABLE' or 'VIEW' (iceberg_type).
  Status InsertRow(SqlConnection& conn, const TableIdent& ident, const std::string& metadata_location,
                   const std::string& type) {
    return conn
        .Exec(
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
            "metadata_location, previous_metadata_location, iceberg_type) "
            "VALUES (?, ?, ?, ?, NULL, ?)",
            {Text(name()), Text(ident.ns.ToString()), Text(ident.name), Text(metadata_location), Text(type)})
        .status();
  }

  // A view's metadata file, parsed (not cached: views are loaded seldom).
  Result<std::shared_ptr<const iceberg::ViewMetadata>> LoadViewMetadata(const std::string& location) {
    Result<std::string> json = io_.Read(location);
    if (!json.ok()) {
      if (json.status().code() == StatusCode::kNotFound) {
        return Status::IoError("view metadata file " + location + " is missing");
      }
      return json.status().WithContext("read view metadata " + location);
    }
    SKADE_ASSIGN_OR_RETURN(iceberg::ViewMetadata parsed, iceberg::ParseViewMetadata(*json).WithContext(location));
    return std::make_shared<const iceberg::ViewMetadata>(std::move(parsed));
  }

  // kAlreadyExists if `ident` is taken (by a table or a view), kNotFound if its namespace
  // does not exist.
  Status CheckCreatableOn(SqlConnection& conn, const TableIdent& ident) {
    SKADE_ASSIGN_OR_RETURN(std::optional<TableRow> row, SelectTable(conn, name(), ident));
    if (row) return Status::AlreadyExists((row->is_table ? "table " : "view ") + ident.ToString() + " already exists");
    SKADE_ASSIGN_OR_RETURN(bool exists, NamespaceExistsOn(conn, name(), ident.ns));
    if (!exists) return Status::NotFound("namespace " + ident.ns.ToString() + " does not exist");
    return Status::Ok();
  }

  Status CheckCreatable(const TableIdent& ident) {
    return Read<bool>([&](SqlConnection& conn) -> Result<bool> {
             SKADE_RETURN_IF_ERROR(CheckCreatableOn(conn, ident));
             return true;
           })
        .status();
  }

  // Metadata files of a commit that did not happen are removed; when the outcome is unknown
  // they stay (the pointer may name them).
  void DiscardUnlessUnknown(const Status& status, const std::vector<std::string>& locations) {
    if (status.code() == StatusCode::kCommitUnknown) return;
    for (const std::string& location : locations) {
      Status deleted = io_.Delete(location);
      if (!deleted.ok()) {
        SKADE_LOG_WARN("could not delete orphan metadata file {}: {}", location,
                       deleted.ToString());
      }
    }
  }

  static void BackOff(int attempt) {
    thread_local std::minstd_rand random(static_cast<unsigned>(MonotonicNanos()));
    int max_ms = 1 << std::min(attempt, 7);
    std::this_thread::sleep_for(std::chrono::microseconds(random() % (max_ms * 1000)));
  }

  // `write.metadata.path` relocates metadata files (Iceberg table property); default
  // <location>/metadata.
  // The folder must lie within the table's own location: elsewhere (another table's metadata
  // folder, say) its files and version hint would be another table's to read, gc or overwrite.
  static Result<std::string> MetadataFolder(const iceberg::TableMetadata& metadata) {
    std::string folder = metadata.Property("write.metadata.path");
    if (folder.empty()) return io::JoinLocation(metadata.location, "metadata");
    if (!io::IsWithin(folder, metadata.location) || io::NormalizeLocation(folder) == io::NormalizeLocation(metadata.location)) {
      return Status::InvalidArgument("write.metadata.path '" + folder + "' must be a folder inside the table's location " +
                                     metadata.location);
    }
    return folder;
  }

  // Loads the current metadata, checks the requirements, applies the updates and writes the
  // new metadata file. On a retry (`rebase`), updates that no longer apply are a conflict.
  Result<PreparedCommit> Prepare(const TableCommit& commit, bool rebase) {
    SKADE_ASSIGN_OR_RETURN(TableState base, LoadTable(commit.ident));
    for (const iceberg::TableRequirement& requirement : commit.requirements) {
      SKADE_RETURN_IF_ERROR(
          requirement.Check(base.metadata.get()).WithContext("commit " + commit.ident.ToString()));
    }
    Result<iceberg::TableMetadata> next =
        iceberg::ApplyUpdates(*base.metadata, base.metadata_location, commit.updates, NowMillis());
    if (!next.ok()) {
      if (rebase) {
        return Status::Conflict(
            "commit " + commit.ident.ToString() +
            ": updates no longer apply after a concurrent commit: " + next.status().message());
      }
      return next.status().WithContext("commit " + commit.ident.ToString());
    }
    PreparedCommit prepared;
    prepared.ident = commit.ident;
    prepared.base_table_location = base.metadata->location;
    prepared.base_location = base.metadata_location;
    for (const iceberg::TableUpdate& update : commit.updates) {
      if (update.kind == iceberg::TableUpdate::Kind::kAddSnapshot) {
        prepared.added_snapshots.push_back(update.snapshot);
      }
    }
    prepared.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(next).value());
    if (prepared.metadata->location != prepared.base_table_location) {
      // set-location: checked before the metadata file makes folders there (checked again in
      // the swap's transaction, which decides a race), so a refused one leaves nothing behind.
      SKADE_ASSIGN_OR_RETURN(PlacementInputs inputs, ReadPlacementInputs());
      SKADE_RETURN_IF_ERROR(CheckLocationFree(inputs, commit.ident, prepared.metadata->location)
                                .WithContext("commit " + commit.ident.ToString()));
    }
    SKADE_ASSIGN_OR_RETURN(std::string metadata_folder,
                           MetadataFolder(*prepared.metadata).WithContext("commit " + commit.ident.ToString()));
    prepared.new_location = io::JoinLocation(metadata_folder,
                                             iceberg::NextMetadataFileName(base.metadata_location));
    // Published whole (CreateExclusive): readers without a version hint take the highest
    // version in the folder, and must never find a half-written file under a metadata name.
    Status written = io_.CreateExclusive(prepared.new_location,
                                         iceberg::TableMetadataToJson(*prepared.metadata));
    if (written.code() == StatusCode::kAlreadyExists) {
      // Someone else holds this metadata file name: another committer is ahead of us.
      return Status::Conflict("commit " + commit.ident.ToString() + ": " + written.message());
    }
    SKADE_RETURN_IF_ERROR(written.WithContext("commit " + commit.ident.ToString()));
    return prepared;
  }

  // Metadata files are immutable, so a parsed file can be cached by location.
  Result<iceberg::TableMetadataPtr> LoadMetadata(const std::string& location) {
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = metadata_cache_.find(location);
      if (it != metadata_cache_.end()) return it->second;
    }
    Result<std::string> json = io_.Read(location);
    if (!json.ok()) {
      if (json.status().code() == StatusCode::kNotFound) {
        return Status::IoError("metadata file " + location + " is missing");
      }
      return json.status().WithContext("read metadata " + location);
    }
    SKADE_ASSIGN_OR_RETURN(iceberg::TableMetadata parsed,
                           iceberg::ParseTableMetadataFile(*json).WithContext(location));
    auto metadata = std::make_shared<const iceberg::TableMetadata>(std::move(parsed));
    CacheMetadata(location, metadata);
    return iceberg::TableMetadataPtr(metadata);
  }

  void CacheMetadata(const std::string& location, iceberg::TableMetadataPtr metadata) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (metadata_cache_.size() >= kMetadataCacheEntries) metadata_cache_.clear();
    metadata_cache_[location] = std::move(metadata);
  }

  const SqlCatalogOptions options_;
  const Dialect dialect_;
  const Opener open_;  // a new connection (read-only ones for a read-only catalog)
  io::FileIO& io_;

  const bool has_log_ = true;

  internal::HintWriter hints_{io_};

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<SqlConnection>> idle_readers_;

  std::mutex cache_mu_;
  std::unordered_map<std::string, iceberg::TableMetadataPtr> metadata_cache_;

  // Held while the listener runs, so removing it waits for a call in progress.
  std::mutex listener_mu_;
  CommitListener listener_;

  // Null for a read-only catalog. Last, and reset first: its thread tells the listener.
  std::unique_ptr<internal::SqlWriter> writer_;
};

}  // namespace

Result<std::unique_ptr<Catalog>> OpenSqlCatalog(const SqlCatalogOptions& options, io::FileIO& io) {
  if (options.catalog_name.empty()) return Status::InvalidArgument("empty catalog name");
  std::string_view uri = options.uri;
  Dialect dialect = Dialect::kSqlite;
  std::string target;
  size_t scheme_end = uri.find("://");
  if (scheme_end != std::string_view::npos) {
    const std::string scheme = AsciiLower(uri.substr(0, scheme_end));
    if (scheme == "postgresql" || scheme == "postgres") {
      dialect = Dialect::kPostgres;
      target = std::string(uri);
    } else if (scheme == "sqlite") {
      uri.remove_prefix(scheme_end + 3);
    } else {
      // A typo must not become a new lake in a folder named after it.
      return Status::InvalidArgument("unknown catalog URI scheme '" + scheme + "' in '" + std::string(options.uri) +
                                     "' (use sqlite:///PATH/catalog.db, a file path, or postgresql://…)");
    }
  }
  const bool read_only = options.access == SqlCatalogOptions::Access::kReadOnly;
  if (dialect == Dialect::kSqlite) {
    if (uri.empty()) return Status::InvalidArgument("sqlite catalog: empty path");
    target = std::string(uri);
    std::error_code ec;
    if (!std::filesystem::exists(target, ec)) {
      if (read_only || options.if_missing == SqlCatalogOptions::IfMissing::kFail) {
        return Status::NotFound("no catalog database at " + target);
      }
      std::filesystem::path parent = std::filesystem::path(target).parent_path();
      if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
        return Status::NotFound("folder " + parent.string() + " of the catalog database does not exist");
      }
    }
  }
  auto open = [dialect, read_only, target]() -> Result<std::unique_ptr<SqlConnection>> {
    if (dialect == Dialect::kSqlite) {
      return read_only ? internal::OpenSqliteConnectionReadOnly(target) : internal::OpenSqliteConnection(target);
    }
    return internal::OpenPostgresConnection(
        target, read_only ? internal::Access::kReadOnly : internal::Access::kReadWrite);
  };
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<SqlConnection> first, open());
  bool has_log = true;
  if (read_only) {
    SKADE_RETURN_IF_ERROR(internal::CheckSchema(*first, &has_log).WithContext("open catalog"));
    first.reset();  // readers come from the pool; there is no writer
  } else {
    SKADE_RETURN_IF_ERROR(internal::SetUpSchema(*first).WithContext("open catalog"));
  }
  return std::unique_ptr<Catalog>(
      std::make_unique<SqlCatalog>(options, dialect, std::move(open), io, std::move(first), has_log));
}

}  // namespace skade::catalog
