#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <deque>
#include <set>

#include <nlohmann/json.hpp>

#include "skade/base/clock.h"
#include "skade/base/log.h"
#include "skade/catalog/open_catalog.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"
#include "skade/io/routing_file_io.h"
#include "skade/cli/lake.h"
#include "skade/sql/lake_sql.h"
#include "skade/table/failed_write_spool.h"
#include "skade/io/confined_file_io.h"
#include "skade/cli/table_location.h"
#include "skade/cli/input_files.h"
#include "skade/cli/messages.h"
#include "skade/cli/output.h"
#include "skade/cli/result_box.h"
#include "skade/cli/progress.h"
#include "skade/engine/data_writer.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/lossless_cast.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/spill_folder.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/version_hint.h"
#include "skade/table/drop.h"
#include "skade/table/table.h"

namespace skade::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

int Fail(std::ostream& err, const Status& st) {
  err << ErrorLine(st) << "\n";
  return 1;
}

// The JDBC catalog's marker row of a namespace ("exists" = "true"): storage, not a property
// (the REST catalog hides it the same way).
constexpr const char* kExistsMarker = "exists";

Status ExistsIsNotAProperty() {
  return Status::InvalidArgument("'exists' marks a namespace in the catalog; it is not a property to set");
}

std::string Dump(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace); }


// A small aligned table for listings.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << r[i] << (i + 1 < r.size() ? std::string(w[i] - r[i].size() + 2, ' ') : "");
    }
    out << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

}  // namespace

Result<std::map<std::string, std::string>> ParseKeyValues(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("expected KEY=VALUE, got '" + item + "'");
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

Result<std::string> ResolveTableArgument(const LakeArgs& lake_args, const std::string& table,
                                         std::shared_ptr<io::FileIO> io) {
  std::error_code ec;
  if (fs::exists(table, ec) || table.find('/') != std::string::npos) return table;
  auto ident = catalog::TableIdent::Parse(table);
  if (!ident.ok() || ident->ns.empty()) return table;  // let the path loader report it
  LakeOpenOptions options;
  options.use = LakeOpenOptions::Use::kRead;
  options.io = std::move(io);
  SKADE_ASSIGN_OR_RETURN(Lake lake, OpenLake(lake_args, options));
  SKADE_ASSIGN_OR_RETURN(catalog::TableState state, lake.catalog->LoadTable(*ident));
  return state.metadata_location;
}

Result<Lake> OpenLake(const LakeArgs& args, const LakeOpenOptions& open_options) {
  Lake lake;
  lake.warehouse = args.warehouse;
  if (lake.warehouse.empty()) {
    const char* env = std::getenv("SKADE_WAREHOUSE");
    lake.warehouse = env && *env ? env : "lake";
  }
  std::error_code ec;
  // A warehouse on object storage (s3://bucket/prefix) keeps data and metadata there; its
  // catalog is named (catalog::DefaultCatalogUri refuses a default one).
  lake.warehouse = io::NormalizeLocation(lake.warehouse);
  const bool object_store = io::IsObjectStoreLocation(lake.warehouse);
  using Use = LakeOpenOptions::Use;
  const bool default_catalog = args.catalog_uri.empty();
  std::string catalog_uri = args.catalog_uri;
  if (default_catalog) {
    SKADE_ASSIGN_OR_RETURN(catalog_uri, catalog::DefaultCatalogUri(lake.warehouse));
  } else {
    SKADE_ASSIGN_OR_RETURN(lake.kind, catalog::CatalogKindOf(args.catalog_uri));
  }
  // Catalogs that name their own warehouse (a service's, or the folder of tables itself).
  const bool remote = lake.kind != catalog::CatalogKind::kSql;
  if (open_options.use == Use::kCreate && !remote && !object_store) {
    SKADE_RETURN_IF_ERROR(io::CreateFoldersDurably(lake.warehouse).WithContext("create the warehouse"));
  } else if (default_catalog && !fs::exists(io::JoinLocation(lake.warehouse, "catalog.db"), ec)) {
    // Only commands that create something make a lake; the others say there is none.
    return Status::NotFound("no lake at " + lake.warehouse + " (no catalog.db there); `skade ns create NS` or "
                            "`skade serve` creates one, --warehouse/--catalog point elsewhere");
  }
  lake.io = open_options.io ? open_options.io : std::shared_ptr<io::FileIO>(io::MakeEnvironmentFileIO());
  // A server's files: only below the warehouse and the allowed directories, whatever a request
  // or a metadata file names (DESIGN §11, one location rule for every source).
  std::shared_ptr<io::ConfinedFileIO> confined;
  if (open_options.lock_down) {
    std::vector<std::string> roots;
    if (!remote || !args.warehouse.empty()) roots.push_back(lake.warehouse);
    // A folder of tables (file://, s3://) is its own warehouse, read before it names it.
    if (lake.kind == catalog::CatalogKind::kFile) roots.push_back(io::NormalizeLocation(args.catalog_uri));
    for (const std::string& dir : open_options.allowed_directories) roots.push_back(io::NormalizeLocation(dir));
    confined = std::make_shared<io::ConfinedFileIO>(lake.io, std::move(roots));
    lake.io = confined;
  }
  catalog::SqlCatalogOptions options;
  options.uri = catalog_uri;
  lake.catalog_uri = catalog_uri;
  // A REST catalog names its own warehouse (its /v1/config); --warehouse asks for one only
  // when given.
  options.warehouse = remote && args.warehouse.empty() ? "" : lake.warehouse;
  options.access = open_options.use == Use::kRead ? catalog::SqlCatalogOptions::Access::kReadOnly
                                                   : catalog::SqlCatalogOptions::Access::kReadWrite;
  options.if_missing = open_options.use == Use::kCreate ? catalog::SqlCatalogOptions::IfMissing::kCreate
                                                         : catalog::SqlCatalogOptions::IfMissing::kFail;
  catalog::PolledLogOptions poll;
  poll.state_path = args.poll_state.empty() ? catalog::DefaultPolledLogPath(options.uri) : args.poll_state;
  poll.interval = std::chrono::milliseconds(static_cast<int64_t>(args.poll_interval_s * 1000));
  SKADE_ASSIGN_OR_RETURN(lake.catalog, catalog::OpenCatalog(options, *lake.io, open_options.commit_events ? &poll : nullptr));
  if (remote && !lake.catalog->warehouse().empty()) {
    lake.warehouse = io::LocalPath(lake.catalog->warehouse());
    while (lake.warehouse.size() > 1 && lake.warehouse.back() == '/') lake.warehouse.pop_back();
  }
  if (confined && remote && args.warehouse.empty()) {
    // A REST catalog's warehouse may be a name ("prod") rather than a location: only a location
    // (a scheme, or an absolute path) is a root. With no root at all (Nessie, or a named
    // warehouse) and no --allow-dir, there is nothing to confine to.
    const std::string named = lake.catalog->warehouse();
    const bool location = !named.empty() && (!io::LocationScheme(named).empty() || named.front() == '/');
    if (location) {
      confined->AddRoot(named);
    } else if (lake.kind != catalog::CatalogKind::kFile && open_options.allowed_directories.empty()) {
      SKADE_LOG_WARN("the catalog names no warehouse location; files are read wherever its metadata points: pass "
                     "--allow-dir for the folders or prefixes of its tables to confine them");
      confined->AllowEverything();
    }
  }

  engine::DatabaseOptions db_options;
  db_options.lock_down = open_options.lock_down;
  db_options.allowed_directories = {lake.warehouse};
  for (const std::string& dir : open_options.allowed_directories) {
    db_options.allowed_directories.push_back(io::IsObjectStoreLocation(dir) ? dir
                                                                             : fs::absolute(dir, ec).lexically_normal().string());
  }
  db_options.object_store = lake.io.get();
  db_options.attach_in_memory = open_options.attach_in_memory;
  if (!open_options.memory_limit.empty()) db_options.memory_limit = open_options.memory_limit;
  // Spills go to a private folder outside the warehouse that no query may reach
  // (engine/spill_folder.h).
  if (open_options.lock_down) {
    SKADE_ASSIGN_OR_RETURN(db_options.temp_directory, engine::NewSpillFolder());
  }
  SKADE_ASSIGN_OR_RETURN(lake.db, engine::Database::Open(db_options));
  if (open_options.use != Use::kRead) {
    lake.write_observer = std::make_shared<table::FailedWriteSpool>(table::FailedWriteSpool::DefaultPath(catalog_uri));
  }
  return lake;
}

Result<std::unique_ptr<table::Table>> LoadLakeTable(Lake& lake, const catalog::TableIdent& ident) {
  SKADE_ASSIGN_OR_RETURN(auto table, table::Table::Load(*lake.catalog, *lake.io, *lake.db, ident));
  table->set_write_observer(lake.write_observer.get());
  return table;
}

Result<std::string> ResolveLakeQuery(Lake& lake, const std::string& sql, std::unique_ptr<sql::LakeSql>* views,
                                     bool pushdown) {
  // DuckDB names its in-memory default catalog "memory". One statement plans each table once:
  // no manifest cache.
  SKADE_ASSIGN_OR_RETURN(*views, sql::LakeSql::Open(*lake.catalog, *lake.io, *lake.db, "memory", 0));
  (*views)->set_pushdown(pushdown);
  return (*views)->ResolveQuery(sql, "");
}

int RunNs(const LakeArgs& lake_args, const NsArgs& args, std::ostream& out, std::ostream& err) {
  // Arguments first: a refused command must not create a lake.
  catalog::Namespace ns;
  if (!args.ns.empty()) {
    auto parsed = catalog::Namespace::Parse(args.ns);
    if (!parsed.ok()) return Fail(err, parsed.status());
    ns = *parsed;
  }
  if (args.action == "create") {
    Status valid = ns.Validate();
    if (!valid.ok()) return Fail(err, valid);
  }
  using Use = LakeOpenOptions::Use;
  const bool reads = args.action == "list" || (args.action == "props" && args.set.empty() && args.unset.empty());
  auto lake = OpenLakeFor(lake_args, args.action == "create" ? Use::kCreate : reads ? Use::kRead : Use::kWrite);
  if (!lake.ok()) return Fail(err, lake.status());
  catalog::Catalog& cat = *lake->catalog;
  if (args.action == "create") {
    auto props = ParseKeyValues(args.set);
    if (!props.ok()) return Fail(err, props.status());
    if (props->count(kExistsMarker)) {
      return Fail(err, ExistsIsNotAProperty());
    }
    Status st = cat.CreateNamespace(ns, *props);
    if (!st.ok()) return Fail(err, st);
    out << "created namespace " << ns.ToString() << "\n";
    return 0;
  }
  if (args.action == "drop") {
    Status st = cat.DropNamespace(ns);
    if (!st.ok()) return Fail(err, st);
    out << "dropped namespace " << ns.ToString() << "\n";
    return 0;
  }
  if (args.action == "list") {
    auto all = catalog::ListNamespacesBelow(cat, ns);
    if (!all.ok()) return Fail(err, all.status());
    if (args.json) {
      Json j = Json::array();
      for (const auto& n : *all) j.push_back(n.levels);
      out << Dump(j) << "\n";
    } else {
      for (const auto& n : *all) out << n.ToString() << "\n";
    }
    return 0;
  }
  if (args.action == "props") {
    if (!args.set.empty() || !args.unset.empty()) {
      auto props = ParseKeyValues(args.set);
      if (!props.ok()) return Fail(err, props.status());
      if (props->count(kExistsMarker)) {
        return Fail(err, ExistsIsNotAProperty());
      }
      std::vector<std::string> unset = args.unset;
      std::erase(unset, std::string(kExistsMarker));  // the marker stays
      Status st = cat.UpdateNamespaceProperties(ns, *props, unset);
      if (!st.ok()) return Fail(err, st);
    }
    auto props = cat.LoadNamespaceProperties(ns);
    if (!props.ok()) return Fail(err, props.status());
    props->erase(kExistsMarker);
    if (args.json) {
      Json j = Json::object();
      for (const auto& [k, v] : *props) j[k] = v;
      out << Dump(j) << "\n";
    } else {
      for (const auto& [k, v] : *props) out << k << "=" << v << "\n";
    }
    return 0;
  }
  return Fail(err, Status::InvalidArgument("unknown ns action '" + args.action + "'"));
}

int RunCreate(const LakeArgs& lake_args, const CreateArgs& args, std::ostream& out, std::ostream& err) {
  // Arguments first: a refused command must not create a lake.
  auto ident = catalog::TableIdent::Parse(args.table);
  if (!ident.ok()) return Fail(err, ident.status());
  Status valid = ident->Validate();
  if (!valid.ok()) return Fail(err, valid);
  if (args.schema.empty() == args.like.empty()) {
    return Fail(err, Status::InvalidArgument("give exactly one of --schema and --like"));
  }
  Result<iceberg::SchemaPtr> schema = Status::Internal("unset");
  if (!args.schema.empty()) {
    schema = engine::SchemaFromColumnDefinitions(args.schema);
    if (!schema.ok()) return Fail(err, schema.status());
  }
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kCreate);
  if (!lake.ok()) return Fail(err, lake.status());
  if (args.schema.empty()) {
    auto source = engine::FileSourceSql({args.like}, engine::FileValues::kSniffed);
    if (!source.ok()) return Fail(err, source.status());
    schema = engine::SchemaFromQuery(*lake->db, *source + " LIMIT 0");
    if (!schema.ok()) return Fail(err, engine::ExplainInputFailure({args.like}, schema.status()));
  }
  if (!schema.ok()) return Fail(err, schema.status());
  auto spec = iceberg::ParsePartitionSpec(args.partition_by, **schema, 0);
  if (!spec.ok()) return Fail(err, spec.status());
  auto props = ParseKeyValues(args.properties);
  if (!props.ok()) return Fail(err, props.status());
  catalog::CreateTableRequest req;
  req.schema = *schema;
  req.spec = *spec;
  req.properties = *props;
  req.properties.emplace("write.parquet.compression-codec", "zstd");
  auto created = lake->catalog->CreateTable(*ident, req);
  if (!created.ok()) return Fail(err, created.status());
  out << "created table " << ident->ToString() << " at " << created->table.metadata->location << "\n";
  return 0;
}

int RunDrop(const LakeArgs& lake_args, const DropArgs& args, std::ostream& out, std::ostream& err) {
  auto ident = catalog::TableIdent::Parse(args.table);
  if (!ident.ok() || ident->ns.empty()) {
    return Fail(err, Status::InvalidArgument("table '" + TerminalText(args.table) + "' must be written ns.table"));
  }
  Status valid = ident->Validate();
  if (!valid.ok()) return Fail(err, valid);
  if (args.force && !args.purge) {
    return Fail(err, Status::InvalidArgument("--force is for --purge (a drop without it deletes no file)"));
  }
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kWrite);
  if (!lake.ok()) return Fail(err, lake.status());
  table::DropOptions options;
  options.mode = args.purge ? catalog::DropMode::kPurge : catalog::DropMode::kKeepFiles;
  options.scope = args.force ? table::DropOptions::Scope::kAnywhere : table::DropOptions::Scope::kWarehouse;
  auto dropped = table::DropTable(*lake->catalog, *lake->io, *ident, options);
  if (!dropped.ok()) return Fail(err, dropped.status());
  if (args.json) {
    Json j = Json::object();
    j["table"] = ident->ToString();
    j["location"] = dropped->location;
    j["purged"] = args.purge;
    j["listed"] = dropped->listed;
    j["files_before"] = dropped->files_before;
    j["bytes_before"] = dropped->bytes_before;
    j["removed_files"] = dropped->removed_files;
    j["removed_bytes"] = dropped->removed_bytes;
    j["left_files"] = dropped->left_files;
    j["outside_files"] = dropped->outside_files ? Json(*dropped->outside_files) : Json(nullptr);
    j["removed_folders"] = dropped->removed_folders;
    out << Dump(j) << "\n";
    return 0;
  }
  // Its lines name files: each made safe to print (control characters escaped).
  out << TerminalLines(table::DescribeDrop(*dropped));
  return 0;
}

int RunRegister(const LakeArgs& lake_args, const RegisterArgs& args, std::ostream& out, std::ostream& err) {
  auto lake = OpenLake(lake_args);
  if (!lake.ok()) return Fail(err, lake.status());
  auto ident = catalog::TableIdent::Parse(args.table);
  if (!ident.ok()) return Fail(err, ident.status());
  std::string metadata = args.metadata;
  std::error_code ec;
  if (fs::is_directory(metadata, ec)) {
    auto file = iceberg::ResolveMetadataFile(*lake->io, metadata);
    if (!file.ok()) return Fail(err, file.status());
    metadata = *file;
  }
  metadata = fs::absolute(metadata, ec).lexically_normal().string();
  auto registered = lake->catalog->RegisterTable(*ident, metadata);
  if (!registered.ok()) return Fail(err, registered.status());
  out << "registered " << ident->ToString() << " at " << metadata << "\n";
  return 0;
}

namespace {

// What a commit took away, in plain words: data files removed (or rewritten) count the physical
// records they held, which a rewrite partly writes again; delete files count the rows they
// delete.
std::string RemovedText(const table::CommitOutcome& o) {
  if (o.deleted_files == 0 && o.deleted_records > 0) {
    return "-" + std::to_string(o.deleted_records) + " rows by delete files";
  }
  return "-" + std::to_string(o.deleted_records) + " records in " + std::to_string(o.deleted_files) + " files";
}

void PrintOutcome(std::ostream& out, const catalog::TableIdent& ident, const table::CommitOutcome& o, double secs,
                  bool json) {
  if (json) {
    Json j = Json::object();
    j["table"] = ident.ToString();
    // Nothing to do (a compaction of compacted files, say) commits nothing: no commit_seq.
    j["committed"] = o.commit_seq > 0;
    j["snapshot_id"] = o.snapshot_id;
    j["commit_seq"] = o.commit_seq > 0 ? Json(o.commit_seq) : Json(nullptr);
    j["operation"] = o.operation;
    j["added_records"] = o.added_records;
    j["added_files"] = o.added_files;
    j["added_bytes"] = o.added_bytes;
    j["deleted_records"] = o.deleted_records;
    j["deleted_files"] = o.deleted_files;
    j["attempts"] = o.attempts;
    j["seconds"] = secs;
    out << Dump(j) << "\n";
    return;
  }
  if (o.snapshot_id == 0 || o.commit_seq == 0) {
    out << "nothing to commit on " << ident.ToString() << "\n";
    return;
  }
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.0f", secs > 0 ? static_cast<double>(o.added_records) / secs : 0.0);
  out << o.operation << " " << ident.ToString() << ": +" << o.added_records << " records in " << o.added_files
      << " files (" << o.added_bytes << " bytes), " << RemovedText(o) << "; snapshot " << o.snapshot_id << ", commit "
      << o.commit_seq << ", " << rate << " records/s\n";
}

Result<std::unique_ptr<table::Table>> OpenTable(Lake& lake, const std::string& name) {
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(name));
  return LoadLakeTable(lake, ident);
}

}  // namespace

namespace {

// Key columns of an upsert or delete by key: --key, else the table's identifier fields.
Result<std::vector<std::string>> KeyColumns(const IngestArgs& args, const table::Table& t) {
  if (!args.key.empty()) return args.key;
  std::vector<std::string> keys;
  const iceberg::SchemaPtr schema = t.metadata().CurrentSchema();
  if (schema) {
    for (int id : schema->identifier_field_ids()) keys.push_back(schema->FindColumnName(id));
  }
  if (keys.empty()) {
    return Status::InvalidArgument("--mode " + args.mode + " needs key columns: give --key COL[,COL…], or set " +
                                   "the table's identifier fields (skade alter " + args.table +
                                   " identifier-fields COL…)");
  }
  return keys;
}

// A --where predicate DuckDB could not bind (a misspelt column, mismatched types): the
// predicate as given and the table's columns, instead of the scan SQL it was bound in.
Status WhereFailure(const Status& failure, const std::string& where, const table::Table& t) {
  if (failure.message().find("Binder Error") == std::string::npos) return failure;
  std::string columns;
  if (const iceberg::SchemaPtr schema = t.metadata().CurrentSchema()) {
    for (const auto& field : schema->fields()) columns += (columns.empty() ? "" : ", ") + field.name;
  }
  return Status(failure.code(), "--where '" + where + "': " + PublicMessage(failure.message()) +
                                    "\nthe table's columns: " + columns);
}

// A value refused by the lossless conversion: the way around it that ingest offers.
Status WithCastHint(const Status& failure) {
  if (failure.message().find(engine::kLossyConversion) == std::string::npos) return failure;
  return Status(failure.code(), std::string(failure.message()) +
                                    "; or ingest with --cast lenient (values convert as DuckDB casts them)");
}

}  // namespace

namespace {

// The bytes of the local input files (object-store inputs count nothing: their size costs a
// request each).
uint64_t InputBytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(f, ec);
    if (!ec) total += size;
  }
  return total;
}

}  // namespace

int RunIngest(const LakeArgs& lake_args, const IngestArgs& args, std::ostream& out, std::ostream& err) {
  auto ident = catalog::TableIdent::Parse(args.table);
  if (!ident.ok()) return Fail(err, ident.status());
  if (!args.query.empty() == !args.files.empty()) {
    return Fail(err, Status::InvalidArgument("give input files or --sql (not both)"));
  }
  if (!args.where.empty() && args.mode != "overwrite") {
    return Fail(err, Status::InvalidArgument("--where applies to --mode overwrite only"));
  }
  std::optional<char> delimiter;
  if (!args.delimiter.empty()) {
    if (args.files.empty()) return Fail(err, Status::InvalidArgument("--delimiter applies to input files, not --sql"));
    auto parsed = ParseDelimiter(args.delimiter);
    if (!parsed.ok()) return Fail(err, parsed.status());
    delimiter = *parsed;
  }
  InputFiles inputs;
  if (!args.files.empty()) {
    auto expanded = ExpandInputs(args.files);
    if (!expanded.ok()) return Fail(err, expanded.status());
    inputs = std::move(*expanded);
    for (const std::string& repeat : inputs.repeats) {
      err << "skade: warning: '" << repeat << "' is given more than once; it is ingested once\n";
    }
  }
  const std::vector<std::string>& files = inputs.files;
  auto lake = OpenLake(lake_args);
  if (!lake.ok()) return Fail(err, lake.status());
  engine::WriteSource source;
  std::unique_ptr<sql::LakeSql> views;  // what a --sql source reads; destroyed before the lake
  if (!args.query.empty()) {
    auto query = engine::Query::Parse(args.query);
    if (!query.ok()) return Fail(err, query.status().WithContext("--sql"));
    // As skade sql reads it: lake tables, AT (…) snapshots, the lake's listings.
    auto resolved = ResolveLakeQuery(*lake, query->sql(), &views);
    if (!resolved.ok()) return Fail(err, resolved.status());
    source.sql = *resolved;
  } else {
    auto sql = engine::FileSourceSql(files, engine::FileValues::kAsWritten, delimiter);
    if (!sql.ok()) return Fail(err, sql.status());
    source.sql = *sql;
  }
  source.cast = args.cast == "lenient" ? engine::CastPolicy::kLenient : engine::CastPolicy::kStrict;
  auto table = LoadLakeTable(*lake, *ident);
  if (!table.ok() && table.status().code() == StatusCode::kNotFound && args.create) {
    // --create: the table takes the input's columns and types (for files, as DuckDB sniffs
    // them; the values then convert to those types exactly, as into any table).
    std::string typed = source.sql;
    if (!files.empty()) {
      auto sniffed = engine::FileSourceSql(files, engine::FileValues::kSniffed, delimiter);
      if (!sniffed.ok()) return Fail(err, sniffed.status());
      typed = *sniffed;
    }
    auto schema = engine::SchemaFromQuery(*lake->db, "SELECT * FROM (" + typed + "\n) LIMIT 0");
    if (!schema.ok()) return Fail(err, engine::ExplainInputFailure(files, schema.status(), delimiter));
    catalog::CreateTableRequest req;
    req.schema = *schema;
    req.properties.emplace("write.parquet.compression-codec", "zstd");
    auto created = lake->catalog->CreateTable(*ident, req);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return Fail(err, created.status());
    if (created.ok()) {
      // A summary, not an error: on stdout, unless stdout carries the JSON outcome alone.
      const std::string line = "created table " + ident->ToString() + " at " + created->table.metadata->location;
      if (args.json) {
        err << "skade: " << line << "\n";
      } else {
        out << line << "\n";
      }
    }
    table = LoadLakeTable(*lake, *ident);
  }
  if (!table.ok()) return Fail(err, table.status());
  std::optional<engine::Predicate> where;
  if (!args.where.empty()) {
    auto parsed = engine::Predicate::Parse(args.where);
    if (!parsed.ok()) return Fail(err, parsed.status().WithContext("--where"));
    where = std::move(parsed).value();
  }
  table::Table& t = **table;
  std::vector<std::string> keys;
  if (args.mode == "upsert" || args.mode == "delete-keys") {
    auto key_columns = KeyColumns(args, t);
    if (!key_columns.ok()) return Fail(err, key_columns.status());
    keys = std::move(*key_columns);
  }
  ProgressReporter progress("ingest " + args.table, err, ProgressReporter::StyleFor(lake_args.quiet));
  progress.set_input_bytes(InputBytes(files));
  Status attached = progress.Attach(*lake->db);
  if (!attached.ok()) return Fail(err, attached);
  int64_t start = MonotonicNanos();
  Result<table::CommitOutcome> outcome = Status::Internal("unset");
  if (args.mode == "append") {
    outcome = t.Append(source);
  } else if (args.mode == "overwrite") {
    outcome = where ? t.OverwriteWhere(*where, source) : t.OverwriteAll(source);
    if (where && !outcome.ok()) outcome = WhereFailure(outcome.status(), args.where, t);
  } else if (args.mode == "overwrite-partitions") {
    outcome = t.OverwritePartitions(source);
  } else if (args.mode == "upsert") {
    outcome = t.Upsert(source, keys);
  } else if (args.mode == "delete-keys") {
    outcome = t.DeleteKeys(source, keys);
  } else {
    return Fail(err, Status::InvalidArgument("unknown --mode '" + args.mode + "'"));
  }
  progress.Done();  // the bar's line is cleared before the summary or the error
  if (!outcome.ok()) return Fail(err, WithCastHint(engine::ExplainInputFailure(files, outcome.status(), delimiter)));
  PrintOutcome(out, t.ident(), *outcome, static_cast<double>(MonotonicNanos() - start) / 1e9, args.json);
  return 0;
}

namespace {

// Opens the lake and table, runs one committing operation, prints its outcome.
int RunCommit(const LakeArgs& lake_args, const std::string& name, bool json, std::ostream& out,
              std::ostream& err, const std::function<Result<table::CommitOutcome>(table::Table&)>& op) {
  auto lake = OpenLake(lake_args);
  if (!lake.ok()) return Fail(err, lake.status());
  auto table = OpenTable(*lake, name);
  if (!table.ok()) return Fail(err, table.status());
  ProgressReporter progress(name, err, ProgressReporter::StyleFor(lake_args.quiet));
  Status attached = progress.Attach(*lake->db);
  if (!attached.ok()) return Fail(err, attached);
  int64_t start = MonotonicNanos();
  auto outcome = op(**table);
  progress.Done();  // the bar's line is cleared before the summary or the error
  if (!outcome.ok()) return Fail(err, outcome.status());
  PrintOutcome(out, (*table)->ident(), *outcome, static_cast<double>(MonotonicNanos() - start) / 1e9, json);
  return 0;
}

}  // namespace

int RunDelete(const LakeArgs& lake_args, const DeleteArgs& args, std::ostream& out, std::ostream& err) {
  auto where = engine::Predicate::Parse(args.where);
  if (!where.ok()) return Fail(err, where.status().WithContext("--where"));
  return RunCommit(lake_args, args.table, args.json, out, err, [&](table::Table& t) -> Result<table::CommitOutcome> {
    auto deleted = t.DeleteWhere(*where);
    if (!deleted.ok()) return WhereFailure(deleted.status(), args.where, t);
    return deleted;
  });
}

namespace {

// Without --changelog, `changes` lists appended rows only: a snapshot of another kind in the
// range is refused with the option that shows it.
Status CheckAppendsOnly(const iceberg::TableMetadata& m, int64_t from, std::optional<int64_t> to) {
  const iceberg::Snapshot* last = to ? m.SnapshotById(*to) : m.CurrentSnapshot();
  if (last == nullptr) return Status::Ok();  // ChangesSql says which is missing
  SKADE_ASSIGN_OR_RETURN(std::vector<const iceberg::Snapshot*> range, iceberg::SnapshotsBetween(m, from, *last));
  for (const iceberg::Snapshot* s : range) {
    if (s->operation() == "append") continue;
    return Status::InvalidArgument("snapshot " + std::to_string(s->snapshot_id) + " is " +
                                   (s->operation() == "overwrite" ? "an " : "a ") + s->operation() +
                                   ", not an append: `changes` lists appended rows only; add --changelog for the "
                                   "rows every kind of commit inserted and deleted");
  }
  return Status::Ok();
}

}  // namespace

int RunChanges(const LakeArgs& lake_args, const ChangesArgs& args, std::ostream& out, std::ostream& err) {
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kRead);
  if (!lake.ok()) return Fail(err, lake.status());
  auto table = OpenTable(*lake, args.table);
  if (!table.ok()) return Fail(err, table.status());
  if (!args.changelog) {
    Status appends = CheckAppendsOnly((*table)->metadata(), args.from, args.to);
    if (!appends.ok()) return Fail(err, appends);
  }
  auto sql = (*table)->ChangesSql(args.from, args.to,
                                  args.changelog ? table::Table::ChangeMode::kChangelog
                                                 : table::Table::ChangeMode::kAppendsOnly);
  if (!sql.ok()) return Fail(err, sql.status());
  auto rows = WriteQuery(*lake->db, *sql, args.format, out);
  if (!rows.ok()) return Fail(err, rows.status());
  return 0;
}

int RunCompact(const LakeArgs& lake_args, const CompactArgs& args, std::ostream& out, std::ostream& err) {
  table::Table::CompactOptions options;
  if (args.small_file_bytes <= 0) {
    return Fail(err, Status::InvalidArgument("--small-file-bytes " + std::to_string(args.small_file_bytes) +
                                             ": must be positive"));
  }
  options.small_file_bytes = args.small_file_bytes;
  return RunCommit(lake_args, args.table, args.json, out, err,
                   [&](table::Table& t) { return t.Compact(options); });
}

int RunTables(const LakeArgs& lake_args, const ListArgs& args, std::ostream& out, std::ostream& err) {
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kRead);
  if (!lake.ok()) return Fail(err, lake.status());
  catalog::Catalog& cat = *lake->catalog;
  std::vector<catalog::Namespace> namespaces;
  if (!args.target.empty()) {
    auto ns = catalog::Namespace::Parse(args.target);
    if (!ns.ok()) return Fail(err, ns.status());
    namespaces.push_back(*ns);
  } else {
    auto all = catalog::ListNamespacesBelow(cat, catalog::Namespace{});
    if (!all.ok()) return Fail(err, all.status());
    namespaces = std::move(*all);
  }
  std::vector<catalog::TableIdent> tables;
  for (const auto& ns : namespaces) {
    auto t = cat.ListTables(ns);
    if (!t.ok()) return Fail(err, t.status());
    tables.insert(tables.end(), t->begin(), t->end());
  }
  std::sort(tables.begin(), tables.end());
  // Views too (as SHOW TABLES lists them), marked as such.
  std::vector<catalog::TableIdent> views;
  if (cat.SupportsViews()) {
    for (const auto& ns : namespaces) {
      auto v = cat.ListViews(ns);
      if (!v.ok()) return Fail(err, v.status());
      views.insert(views.end(), v->begin(), v->end());
    }
    std::sort(views.begin(), views.end());
  }
  if (args.json) {
    Json j = Json::array();
    // Tables as they always were; views carry "type" (scripts that take every entry for a table
    // can skip them).
    for (const auto& t : tables) j.push_back({{"namespace", t.ns.levels}, {"name", t.name}});
    for (const auto& v : views) j.push_back({{"namespace", v.ns.levels}, {"name", v.name}, {"type", "view"}});
    out << Dump(j) << "\n";
  } else {
    for (const auto& t : tables) out << t.ToString() << "\n";
    for (const auto& v : views) out << v.ToString() << " (view)\n";
  }
  return 0;
}

namespace {

int64_t SummaryCount(const iceberg::Snapshot& s, const std::string& key) {
  const std::optional<std::string> value = s.SummaryValue(key);
  if (!value) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(value->c_str(), &end, 10);
  return end != value->c_str() && *end == '\0' ? n : 0;
}

}  // namespace

int RunSnapshots(const LakeArgs& lake_args, const ListArgs& args, std::ostream& out, std::ostream& err) {
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kRead);
  if (!lake.ok()) return Fail(err, lake.status());
  auto ident = catalog::TableIdent::Parse(args.target);
  if (!ident.ok()) return Fail(err, ident.status());
  auto state = lake->catalog->LoadTable(*ident);
  if (!state.ok()) return Fail(err, state.status());
  const iceberg::TableMetadata& m = *state->metadata;
  if (args.json) {
    Json j = Json::array();
    for (const auto& s : m.snapshots) {
      Json sj = Json::object();
      sj["snapshot_id"] = s.snapshot_id;
      if (s.parent_snapshot_id) sj["parent_snapshot_id"] = *s.parent_snapshot_id;
      sj["sequence_number"] = s.sequence_number;
      sj["timestamp_ms"] = s.timestamp_ms;
      sj["operation"] = s.operation();
      sj["current"] = m.current_snapshot_id == s.snapshot_id;
      Json summary = Json::object();
      for (const auto& [k, v] : s.summary) summary[k] = v;
      sj["summary"] = summary;
      j.push_back(sj);
    }
    out << Dump(j) << "\n";
    return 0;
  }
  // The summaries count records: rows stored in data files, before delete files apply.
  std::vector<std::vector<std::string>> rows;
  bool any_deletes = false;
  for (const auto& s : m.snapshots) {
    const int64_t deletes = SummaryCount(s, "total-position-deletes") + SummaryCount(s, "total-equality-deletes");
    any_deletes = any_deletes || deletes > 0;
    rows.push_back({std::to_string(s.snapshot_id) + (m.current_snapshot_id == s.snapshot_id ? " *" : ""),
                    std::to_string(s.sequence_number), FormatMillis(s.timestamp_ms), s.operation(),
                    s.SummaryValue("added-records").value_or("0"), s.SummaryValue("deleted-records").value_or("0"),
                    s.SummaryValue("total-records").value_or("?"), std::to_string(deletes)});
  }
  PrintTable(out,
             {"snapshot_id", "seq", "committed_at", "operation", "added_records", "deleted_records", "total_records",
              "delete_records"},
             rows);
  if (any_deletes) {
    out << "records are physical rows in data files; delete_records (rows of position/equality delete files) "
           "hide some of them: `skade scan "
        << args.target << " --count` counts the live rows\n";
  }
  return 0;
}

namespace {

// The log entries `log` shows (of `table` only, when set), oldest first: with `after`, the
// first `limit` after it; without, the newest `limit`. Without a table the log's head bounds
// the read (commit_seq is dense); with one, the pages are read and filtered.
Result<std::vector<catalog::CommitLogEntry>> LogEntries(catalog::Catalog& cat, std::optional<int64_t> after,
                                                        int64_t limit,
                                                        const std::optional<catalog::TableIdent>& table) {
  constexpr int64_t kPage = 1000;
  int64_t cursor = after.value_or(0);
  if (!table && !after) {
    SKADE_ASSIGN_OR_RETURN(int64_t head, cat.LatestCommitSeq());
    cursor = std::max<int64_t>(0, head - limit);
  }
  std::deque<catalog::CommitLogEntry> newest;
  while (!after || static_cast<int64_t>(newest.size()) < limit) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::CommitLogEntry> page, cat.CommitsSince(cursor, kPage));
    for (catalog::CommitLogEntry& e : page) {
      cursor = e.commit_seq;
      if (table && !(e.table == *table)) continue;
      if (after && static_cast<int64_t>(newest.size()) == limit) break;
      newest.push_back(std::move(e));
      if (static_cast<int64_t>(newest.size()) > limit) newest.pop_front();
    }
    if (static_cast<int64_t>(page.size()) < kPage) break;
  }
  return std::vector<catalog::CommitLogEntry>(std::make_move_iterator(newest.begin()),
                                              std::make_move_iterator(newest.end()));
}

}  // namespace

int RunLog(const LakeArgs& lake_args, const ListArgs& args, std::ostream& out, std::ostream& err) {
  std::optional<catalog::TableIdent> table;
  if (!args.target.empty()) {
    auto ident = catalog::TableIdent::Parse(args.target);
    if (!ident.ok()) return Fail(err, ident.status());
    if (ident->ns.empty()) {
      return Fail(err, Status::InvalidArgument("log: the table '" + args.target + "' must be ns.table"));
    }
    table = *ident;
  }
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kRead);
  if (!lake.ok()) return Fail(err, lake.status());
  auto entries = LogEntries(*lake->catalog, args.after, args.limit, table);
  if (!entries.ok()) return Fail(err, entries.status());
  if (args.json) {
    Json j = Json::array();
    for (const auto& e : *entries) {
      Json ej = Json::object();
      ej["commit_seq"] = e.commit_seq;
      ej["table"] = e.table.ToString();
      ej["namespace"] = e.table.ns.levels;
      ej["name"] = e.table.name;
      if (e.snapshot_id) ej["snapshot_id"] = *e.snapshot_id;
      ej["operation"] = e.operation;
      ej["added_records"] = e.added_records;
      ej["deleted_records"] = e.deleted_records;
      ej["committed_at_us"] = e.committed_at_us;
      ej["metadata_location"] = e.metadata_location;
      ej["previous_metadata_location"] = e.previous_metadata_location;
      ej["txn_id"] = e.txn_id;
      j.push_back(ej);
    }
    out << Dump(j) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : *entries) {
    rows.push_back({std::to_string(e.commit_seq), FormatMillis(e.committed_at_us / 1000), e.table.ToString(),
                    e.operation, e.snapshot_id ? std::to_string(*e.snapshot_id) : "-",
                    std::to_string(e.added_records), std::to_string(e.deleted_records)});
  }
  PrintTable(out, {"commit_seq", "committed_at", "table", "operation", "snapshot_id", "added", "deleted"}, rows);
  return 0;
}

}  // namespace skade::cli
