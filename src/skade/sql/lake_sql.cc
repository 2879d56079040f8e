#include "skade/sql/lake_sql.h"

#include "skade/engine/iceberg_scan.h"

#include <algorithm>
#include <cctype>
#include <list>
#include <set>

#include "skade/base/log.h"
#include "skade/engine/schema_convert.h"
#include "skade/iceberg/scan.h"
#include "skade/table/parted_read.h"

namespace skade::sql {

using engine::QuoteIdentifier;

Result<std::unique_ptr<LakeSql>> LakeSql::Open(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db,
                                               std::string catalog_name, int64_t manifest_cache_bytes) {
  if (catalog_name.empty()) return Status::InvalidArgument("empty SQL catalog name");
  SKADE_ASSIGN_OR_RETURN(auto attached, db.QueryRows("SELECT 1 FROM duckdb_databases() WHERE database_name = " +
                                                     engine::QuoteString(catalog_name)));
  if (attached.empty()) {
    SKADE_RETURN_IF_ERROR(db.Execute("ATTACH ':memory:' AS " + QuoteIdentifier(catalog_name)));
  }
  return std::unique_ptr<LakeSql>(new LakeSql(catalog, io, db, std::move(catalog_name), manifest_cache_bytes));
}

std::optional<std::string> LakeSql::SchemaName(const catalog::Namespace& ns) {
  std::string out;
  for (const std::string& level : ns.levels) {
    if (level.find('.') != std::string::npos) return std::nullopt;
    out += (out.empty() ? "" : ".") + level;
  }
  return out;
}

Result<catalog::Namespace> LakeSql::NamespaceOf(std::string_view schema) { return catalog::Namespace::Parse(schema); }

Result<std::vector<catalog::Namespace>> LakeSql::ListNamespaces() {
  SKADE_ASSIGN_OR_RETURN(auto all, catalog::ListNamespacesBelow(catalog_, catalog::Namespace{}));
  std::vector<catalog::Namespace> out;
  for (auto& ns : all) {
    if (SchemaName(ns)) {
      out.push_back(std::move(ns));
    } else {
      // Once per namespace and LakeSql (a server lists namespaces on every metadata call).
      std::lock_guard<std::mutex> lock(mu_);
      if (skipped_namespaces_.insert(ns.ToString()).second) {
        SKADE_LOG_WARN("namespace level with a '.' cannot be a SQL schema; skipped: {}", ns.ToString());
      }
    }
  }
  return out;
}

Result<catalog::TableIdent> LakeSql::Resolve(const std::vector<std::string>& parts,
                                             const std::string& default_schema) const {
  if (parts.empty() || parts.size() > 3) return Status::InvalidArgument("bad table name");
  if (parts.size() == 3 && parts[0] != catalog_name_) {
    return Status::NotFound("unknown catalog '" + parts[0] + "' (this server's catalog is '" + catalog_name_ + "')");
  }
  std::string schema = parts.size() >= 2 ? parts[parts.size() - 2] : default_schema;
  if (schema.empty()) {
    return Status::InvalidArgument("table '" + parts.back() + "' needs a schema (or set the session schema)");
  }
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, NamespaceOf(schema));
  return catalog::TableIdent{ns, parts.back()};
}

std::string LakeSql::ViewName(const catalog::TableIdent& ident) const {
  return QuoteIdentifier(catalog_name_) + "." + QuoteIdentifier(ident.ns.ToString()) + "." +
         QuoteIdentifier(ident.name);
}

Status LakeSql::EnsureSchemaLocked(const std::string& schema) {
  if (schemas_.count(schema)) return Status::Ok();
  SKADE_RETURN_IF_ERROR(
      db_.Execute("CREATE SCHEMA IF NOT EXISTS " + QuoteIdentifier(catalog_name_) + "." + QuoteIdentifier(schema)));
  schemas_.insert(schema);
  return Status::Ok();
}

Status LakeSql::DropSchema(const std::string& schema) {
  std::lock_guard<std::mutex> lock(mu_);
  schemas_.erase(schema);
  for (auto it = views_.begin(); it != views_.end();) {
    if (it->first.ns.ToString() != schema) {
      ++it;
      continue;
    }
    if (!it->second.scan_token.empty()) db_.scans().Retire(it->second.scan_token);
    it = views_.erase(it);
  }
  return db_.Execute("DROP SCHEMA IF EXISTS " + QuoteIdentifier(catalog_name_) + "." + QuoteIdentifier(schema) +
                     " CASCADE");
}

Status LakeSql::SyncViews(std::string_view sql, const std::string& default_schema, std::string* scan_marks) {
  SKADE_ASSIGN_OR_RETURN(auto refs, db_.ReferencedTables(sql));
  std::set<catalog::TableIdent> done;
  for (const auto& parts : refs) {
    if (parts.size() == 3 && parts[0] != catalog_name_) continue;  // another DuckDB catalog
    auto ident = Resolve(parts, default_schema);
    if (!ident.ok()) continue;  // not ours; DuckDB reports it
    if (!done.insert(*ident).second) continue;
    auto loaded = SyncView(*ident);
    if (loaded.ok()) {
      if (scan_marks != nullptr) {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = views_.find(*ident); it != views_.end()) *scan_marks += it->second.scan_marks;
      }
      continue;
    }
    // A name that is no table of the catalog is DuckDB's to report; a table that cannot be
    // read (a missing data file, manifest or manifest list) is an error naming the file.
    if (loaded.status().code() == StatusCode::kNotFound) {
      auto exists = catalog_.LoadTable(*ident);
      if (!exists.ok() && exists.status().code() == StatusCode::kNotFound) continue;
    }
    return loaded.status().WithContext("table " + ident->ToString());
  }
  return Status::Ok();
}

namespace {

// How a table's scan source plans: with what DuckDB pushes into the scan, or every file of its
// snapshot (LakeSql::set_pushdown(false)).
enum class ScanPlanning { kPushdown, kWholeSnapshot };

// The parts of a table read planned while it is read (table/parted_read.h).
class TableScanParts final : public engine::ScanParts {
 public:
  TableScanParts(std::unique_ptr<table::PartedRead> read, std::shared_ptr<iceberg::ManifestCache> cache)
      : cache_(std::move(cache)), read_(std::move(read)) {}
  Result<std::optional<std::string>> Next() override { return read_->Next(); }

 private:
  std::shared_ptr<iceberg::ManifestCache> cache_;  // the read's planner reads through it
  std::unique_ptr<table::PartedRead> read_;
};

// One table at one snapshot as the source of a pushdown scan: each statement's scan is
// planned with its columns and filter (manifest, partition and metrics pruning). The snapshot
// never changes under a source, so plans are kept by (columns, filter): the same BI query
// again plans without reading a manifest. Bounded by kCacheBytes of plan text per source.
// A snapshot of more than `parted_read_files` data files (or that does not say how many) is
// read in parts planned as they are read instead (LakeSql::set_parted_read_files).
class TableScanSource final : public engine::ScanSource {
 public:
  static constexpr size_t kCacheBytes = size_t{8} << 20;

  // Plans `table` at the snapshot `selector` selects through `cache` (kept alive as long as
  // this source); kWholeSnapshot lists every file of it whatever the scan pushes; kPushdown
  // reads a snapshot of more than `parted_read_files` files in parts.
  TableScanSource(std::unique_ptr<table::Table> table, std::shared_ptr<iceberg::ManifestCache> cache,
                  iceberg::SnapshotSelector selector, ScanPlanning planning, int64_t parted_read_files)
      : cache_(std::move(cache)), table_(std::move(table)), selector_(std::move(selector)), planning_(planning) {
    table_->set_manifest_cache(cache_.get());
    table::ReadOptions options;
    options.snapshot = selector_;
    options.parted_read_files = parted_read_files;
    auto parted = table_->ReadsInParts(options);
    parted_ = planning_ == ScanPlanning::kPushdown && parted.ok() && *parted;
  }
  Result<engine::ScanPlan> Plan(const engine::PushedScan& pushed) override {
    engine::PushedScan scan;
    if (planning_ == ScanPlanning::kPushdown) scan = pushed;
    std::string key = scan.filter ? scan.filter->sql() : std::string();
    for (const std::string& c : scan.columns) key += '\n' + c;
    std::lock_guard<std::mutex> lock(mu_);  // a Table is not thread-safe
    if (auto it = plans_.find(key); it != plans_.end()) {
      order_.splice(order_.begin(), order_, it->second.position);
      return it->second.plan;
    }
    engine::ScanPlan plan;
    if (scan.columns.empty() && planning_ == ScanPlanning::kPushdown) {
      // No column read (count(*)): from manifests when the snapshot has no delete files; else
      // the rows are counted, a large snapshot's part by part.
      table::ReadOptions options;
      options.snapshot = selector_;
      if (parted_) {
        SKADE_ASSIGN_OR_RETURN(std::optional<int64_t> counted, table_->CountFromManifests(options));
        if (!counted) return PartedPlan(options);
        plan.row_count = counted;
      } else {
        SKADE_ASSIGN_OR_RETURN(plan.row_count, table_->Count(options));
      }
    } else {
      table::ReadOptions options;
      options.snapshot = selector_;
      options.columns = scan.columns;
      options.where = scan.filter;
      if (parted_) return PartedPlan(options);
      SKADE_ASSIGN_OR_RETURN(plan.sql, table_->ReadSql(options));
    }
    Remember(std::move(key), plan);
    return plan;
  }

 private:
  // A plan read in parts; not kept (each statement plans while it reads).
  Result<engine::ScanPlan> PartedPlan(const table::ReadOptions& options) {
    SKADE_ASSIGN_OR_RETURN(auto read, table_->ReadInParts(options));
    engine::ScanPlan plan;
    plan.parts = std::make_shared<TableScanParts>(std::move(read), cache_);
    return plan;
  }

  struct Cached {
    engine::ScanPlan plan;
    std::list<std::string>::iterator position;  // in order_, most recent first
  };
  void Remember(std::string key, const engine::ScanPlan& plan) {
    const size_t bytes = key.size() + plan.sql.size();
    if (bytes > kCacheBytes) return;
    while (!order_.empty() && cached_bytes_ + bytes > kCacheBytes) {
      auto victim = plans_.find(order_.back());
      cached_bytes_ -= victim->first.size() + victim->second.plan.sql.size();
      plans_.erase(victim);
      order_.pop_back();
    }
    order_.push_front(key);
    plans_.emplace(std::move(key), Cached{plan, order_.begin()});
    cached_bytes_ += bytes;
  }

  std::shared_ptr<iceberg::ManifestCache> cache_;
  std::mutex mu_;
  std::unique_ptr<table::Table> table_;
  const iceberg::SnapshotSelector selector_;
  const ScanPlanning planning_;
  bool parted_ = false;  // read in parts (kPushdown only)
  std::map<std::string, Cached> plans_;
  std::list<std::string> order_;
  size_t cached_bytes_ = 0;
};

// The columns of the snapshot `selector` selects (Iceberg's time-travel schema rule,
// iceberg::SelectSnapshot) and an estimate of its rows.
Result<engine::ScanSourceInfo> ScanSourceOf(const table::Table& table, const iceberg::SnapshotSelector& selector) {
  engine::ScanSourceInfo info;
  SKADE_ASSIGN_OR_RETURN(iceberg::SelectedSnapshot selected, iceberg::SelectSnapshot(table.metadata(), selector));
  for (const iceberg::NestedField& f : selected.schema->fields()) {
    info.names.push_back(f.name);
    SKADE_ASSIGN_OR_RETURN(std::string type, engine::DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    info.types.push_back(std::move(type));
  }
  const iceberg::Snapshot* snapshot = selected.snapshot;
  info.estimated_rows = snapshot ? snapshot->SummaryLong("total-records") : std::optional<int64_t>(0);
  return info;
}

}  // namespace

LakeSql::~LakeSql() {
  for (const auto& [ident, view] : views_) {
    if (!view.scan_token.empty()) db_.scans().Retire(view.scan_token);
  }
}

void LakeSql::set_parted_read_files(int64_t files) {
  std::lock_guard<std::mutex> lock(mu_);
  if (parted_read_files_ == files) return;
  parted_read_files_ = files;
  for (auto& [ident, view] : views_) view.metadata_location.clear();  // remade at next use
}

void LakeSql::set_pushdown(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pushdown_ == on) return;
  pushdown_ = on;
  for (auto& [ident, view] : views_) view.metadata_location.clear();  // remade at next use
}

Result<std::unique_ptr<table::Table>> LakeSql::SyncView(const catalog::TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(auto table, table::Table::Load(catalog_, io_, db_, ident));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = views_.find(ident);
  if (it != views_.end() && it->second.metadata_location == table->metadata_location()) return table;
  View view{table->metadata_location(), "", ""};
  std::string view_sql;
  if (pushdown_) {
    SKADE_ASSIGN_OR_RETURN(engine::ScanSourceInfo info, ScanSourceOf(*table, {}));
    info.source = std::make_shared<TableScanSource>(table->Clone(), manifest_cache_, iceberg::SnapshotSelector{},
                                                    ScanPlanning::kPushdown, parted_read_files_);
    view.scan_token = db_.scans().Register(std::move(info));
    view_sql = engine::PushdownScanSql(view.scan_token);
  } else {
    SKADE_ASSIGN_OR_RETURN(view_sql, table->ReadSql({}));
    view.scan_marks = engine::DataFileChecks::Marks(view_sql);
  }
  Status made = EnsureSchemaLocked(ident.ns.ToString());
  if (made.ok()) made = db_.Execute("CREATE OR REPLACE VIEW " + ViewName(ident) + " AS " + view_sql);
  if (!made.ok()) {
    if (!view.scan_token.empty()) db_.scans().Retire(view.scan_token);
    return made;
  }
  // Statements bound to the old view keep its source (shared); new ones cannot reach it.
  if (it != views_.end() && !it->second.scan_token.empty()) db_.scans().Retire(it->second.scan_token);
  views_[ident] = std::move(view);
  return table;
}

Result<std::string> LakeSql::RegisterSnapshotScan(const table::Table& table,
                                                  const iceberg::SnapshotSelector& selector) {
  SKADE_ASSIGN_OR_RETURN(engine::ScanSourceInfo info, ScanSourceOf(table, selector));
  ScanPlanning planning;
  int64_t parted_read_files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    planning = pushdown_ ? ScanPlanning::kPushdown : ScanPlanning::kWholeSnapshot;
    parted_read_files = parted_read_files_;
  }
  info.source =
      std::make_shared<TableScanSource>(table.Clone(), manifest_cache_, selector, planning, parted_read_files);
  return db_.scans().Register(std::move(info));
}

Status LakeSql::DropView(const catalog::TableIdent& ident) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = views_.find(ident); it != views_.end() && !it->second.scan_token.empty()) {
    db_.scans().Retire(it->second.scan_token);
  }
  views_.erase(ident);
  return db_.Execute("DROP VIEW IF EXISTS " + ViewName(ident));
}

Status LakeSql::Use(engine::Connection& connection, const std::string& schema) {
  return SetUp(connection, Session{schema, ""}, "");
}

Result<std::vector<std::string>> LakeSql::SessionSetup(const Session& session, std::string_view sql) {
  std::vector<std::string> setup;
  if (session.schema.empty()) {
    setup.push_back("USE " + QuoteIdentifier(catalog_name_) + ".main");
  } else {
    {
      std::lock_guard<std::mutex> lock(mu_);
      SKADE_RETURN_IF_ERROR(EnsureSchemaLocked(session.schema));
    }
    setup.push_back("USE " + QuoteIdentifier(catalog_name_) + "." + QuoteIdentifier(session.schema));
  }
  // current_user and its synonyms name the session's user, not DuckDB's "duckdb": temporary
  // macros of the connection come before the built-in functions. Only SQL whose text could
  // name one of them pays for the four macros (every such name holds "user" or "role").
  auto mentions = [&sql](std::string_view word) {
    return std::search(sql.begin(), sql.end(), word.begin(), word.end(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           }) != sql.end();
  };
  if (!session.user.empty() && (mentions("user") || mentions("role"))) {
    const std::string user = engine::QuoteString(session.user);
    for (const char* name : {"current_user", "user", "session_user", "current_role"}) {
      setup.push_back("CREATE OR REPLACE TEMP MACRO " + std::string(name) + "() AS " + user);
    }
  }
  return setup;
}

Status LakeSql::SetUp(engine::Connection& connection, const Session& session, std::string_view sql) {
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> setup, SessionSetup(session, sql));
  for (const std::string& statement : setup) SKADE_RETURN_IF_ERROR(connection.Execute(statement));
  return Status::Ok();
}

}  // namespace skade::sql
