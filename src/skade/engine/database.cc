#include "skade/engine/database.h"

#include <atomic>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "duckdb.h"
#include <functional>
#include <nlohmann/json.hpp>
#include "skade/arrow/builder.h"
#include "skade/engine/arrow_collect_internal.h"
#include "skade/engine/database_internal.h"
#include "skade/engine/zstd_pages_internal.h"
#include "skade/engine/delete_scan_internal.h"
#include "skade/engine/duck_handles_internal.h"
#include "skade/engine/duck_query_internal.h"
#include "skade/engine/file_guard_internal.h"
#include "skade/engine/functions_internal.h"
#include "skade/engine/object_store_fs_internal.h"
#include "skade/engine/page_pool_internal.h"
#include "skade/engine/pushdown_scan_internal.h"
#include "skade/engine/referenced_tables_internal.h"

namespace skade::engine {

namespace {

// The progress listener of a Database. Thread-safe.
class ProgressSlot {
 public:
  void Set(std::function<void(const QueryProgress&)> listener) {
    std::lock_guard<std::mutex> lock(mu_);
    listener_ = std::move(listener);
  }
  std::function<void(const QueryProgress&)> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return listener_;
  }

 private:
  std::mutex mu_;
  std::function<void(const QueryProgress&)> listener_;  // guarded by mu_
};

}  // namespace

struct Database::Impl {
  duckdb_database db = nullptr;
  // False for a view of another Database (WithConnectionSetup), which closes the DuckDB.
  bool owns_db = true;
  // Run on every connection this Database opens, first (WithConnectionSetup).
  std::vector<std::string> connection_setup;
  io::FileIO* object_store = nullptr;
  std::shared_ptr<ScanSources> scans = std::make_shared<ScanSources>();
  std::shared_ptr<DataFileChecks> data_file_checks;
  // The pages of whole results' batches, reused from one read to the next (QueryArrowWhole).
  std::shared_ptr<PagePool> page_pool = PagePool::Make();
  std::shared_ptr<ProgressSlot> progress = std::make_shared<ProgressSlot>();
  std::shared_ptr<RunningConnections> running =
      std::make_shared<RunningConnections>(std::make_shared<RunningConnections>());
  // ArrowInputColumns: schema key → columns; emptied when full (schemas seen are few).
  std::mutex described_mu;
  std::unordered_map<std::string, std::vector<ColumnType>> described;
  ~Impl() {
    if (db && owns_db) duckdb_close(&db);
  }
};

duckdb_database DatabaseAccess::Raw(const Database& db) { return db.impl_->db; }

namespace {

// While alive, polls the progress of the statement running on `con` and reports it.
class ProgressWatch {
 public:
  ProgressWatch(std::function<void(const QueryProgress&)> listener, duckdb_connection con)
      : listener_(std::move(listener)) {
    if (!listener_) return;
    // DuckDB tracks progress only with its progress bar on (a per-connection setting); it
    // prints nothing with printing off. A failure only means no progress.
    for (const char* set : {"SET enable_progress_bar = true", "SET enable_progress_bar_print = false",
                            "SET progress_bar_time = 100"}) {
      if (!ExecuteOn(con, set).ok()) return;
    }
    thread_ = std::thread([this, con] {
      const auto start = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
        duckdb_query_progress_type p = duckdb_query_progress(con);
        QueryProgress out;
        out.percent = p.percentage;
        out.rows_processed = p.rows_processed;
        out.total_rows = p.total_rows_to_process;
        out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        listener_(out);
      }
    });
  }
  ~ProgressWatch() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

 private:
  std::function<void(const QueryProgress&)> listener_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace

Status Database::SetProgressListener(std::function<void(const QueryProgress&)> listener) {
  impl_->progress->Set(std::move(listener));
  return Status::Ok();
}

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;

ScanSources& Database::scans() { return *impl_->scans; }

DataFileChecks& Database::data_file_checks() { return *impl_->data_file_checks; }

io::FileIO* Database::object_store() const { return impl_->object_store; }

std::unique_ptr<Database> Database::WithConnectionSetup(std::vector<std::string> setup) {
  auto impl = std::make_unique<Impl>();
  impl->db = impl_->db;
  impl->owns_db = false;
  impl->connection_setup = impl_->connection_setup;
  impl->connection_setup.insert(impl->connection_setup.end(), std::make_move_iterator(setup.begin()),
                                std::make_move_iterator(setup.end()));
  impl->object_store = impl_->object_store;
  impl->scans = impl_->scans;
  impl->data_file_checks = impl_->data_file_checks;
  impl->page_pool = impl_->page_pool;
  impl->progress = impl_->progress;
  impl->running = std::make_shared<RunningConnections>(impl_->running->all());
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

Result<std::unique_ptr<Database>> Database::Open(const DatabaseOptions& options) {
  KeepZstdPages();  // DuckDB's ZSTD pages decompress through the system's libzstd
  duckdb_config config = nullptr;
  if (duckdb_create_config(&config) != DuckDBSuccess) {
    return Status::Internal("cannot create DuckDB config");
  }
  struct ConfigGuard {
    duckdb_config* c;
    ~ConfigGuard() { duckdb_destroy_config(c); }
  } guard{&config};
  // No network: never download extensions (TOOLCHAIN.md §2).
  std::vector<std::pair<std::string, std::string>> settings = {
      {"autoinstall_known_extensions", "false"},
      {"autoload_known_extensions", "false"},
      {"memory_limit", options.memory_limit},
  };
  if (options.threads > 0) settings.emplace_back("threads", std::to_string(options.threads));
  if (!options.temp_directory.empty()) settings.emplace_back("temp_directory", options.temp_directory);
  for (const auto& [k, v] : settings) {
    if (duckdb_set_config(config, k.c_str(), v.c_str()) != DuckDBSuccess) {
      return Status::InvalidArgument("invalid DuckDB setting " + k + "=" + v);
    }
  }
  auto impl = std::make_unique<Impl>();
  char* error = nullptr;
  if (duckdb_open_ext(nullptr, &impl->db, config, &error) != DuckDBSuccess) {
    std::string msg = error ? error : "unknown error";
    if (error) duckdb_free(error);
    return Status::Internal("cannot open DuckDB: " + msg);
  }
  impl->object_store = options.object_store;
  impl->data_file_checks = std::make_unique<DataFileChecks>(
      DataFileCheckOptions{options.object_store, options.lock_down, options.allowed_directories});
  auto db = std::unique_ptr<Database>(new Database(std::move(impl)));
  if (options.object_store != nullptr) {
    SKADE_RETURN_IF_ERROR(
        RegisterObjectStoreFileSystem(db->impl_->db, *options.object_store, options.temp_directory));
  }
  // Before any query: no statement may open the catalog's own files (io/reserved_files.h).
  SKADE_RETURN_IF_ERROR(RegisterReservedFileGuard(db->impl_->db));
  if (options.lock_down && !options.temp_directory.empty()) {
    SKADE_RETURN_IF_ERROR(RegisterSpillFolderGuard(db->impl_->db, options.temp_directory));
  }
  SKADE_RETURN_IF_ERROR(
      RegisterPushdownScanFunction(db->impl_->db, db->impl_->scans, db->impl_->data_file_checks.get()));
  // Timestamps with time zone render and compare in UTC unless a caller changes it.
  SKADE_RETURN_IF_ERROR(db->Execute("SET GLOBAL TimeZone = 'UTC'"));
  RawConnection con;
  if (duckdb_connect(db->impl_->db, &con.con) != DuckDBSuccess) {
    return Status::Internal("cannot open a DuckDB connection");
  }
  SKADE_RETURN_IF_ERROR(RegisterIcebergFunctions(con.con));
  SKADE_RETURN_IF_ERROR(RegisterDeleteScanFunction(db->impl_->db, options));
  for (const std::string& name : options.attach_in_memory) {
    SKADE_RETURN_IF_ERROR(db->Execute("ATTACH IF NOT EXISTS ':memory:' AS " + QuoteIdentifier(name)));
  }
  if (options.lock_down) {
    std::string dirs;
    for (const std::string& d : options.allowed_directories) {
      std::string dir = d.empty() || d.back() == '/' ? d : d + "/";
      dirs += (dirs.empty() ? "" : ", ") + QuoteString(dir);
    }
    SKADE_RETURN_IF_ERROR(db->Execute("SET GLOBAL allowed_directories = [" + dirs + "]"));
    SKADE_RETURN_IF_ERROR(db->Execute("SET GLOBAL enable_external_access = false"));
    SKADE_RETURN_IF_ERROR(db->Execute("SET GLOBAL lock_configuration = true"));
  }
  return db;
}

Status Database::Execute(std::string_view sql) {
  RawConnection con;
  SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con, impl_->running.get()));
  return ExecuteOn(con.con, sql);
}

Result<arrow::StreamHandle> Database::QueryArrow(std::string_view sql) {
  auto owner = std::make_unique<OwnedStatement>();
  std::unique_ptr<ArrowFeed> feed;
  Status started = [&]() -> Status {
    SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, owner->con, impl_->running.get()));
    SKADE_RETURN_IF_ERROR(PrepareOnce(owner->con.con, sql, &owner->stmt.stmt));
    SKADE_ASSIGN_OR_RETURN(feed, ArrowFeed::Start(owner->stmt.stmt, FeedOptions{.batching = {}, .pool = impl_->page_pool}));
    return Status::Ok();
  }();
  if (!started.ok()) return impl_->data_file_checks->Explain(sql, started);
  return FeedStreamOf(std::move(feed), std::move(owner), impl_->data_file_checks.get(), sql);
}

Result<arrow::StreamHandle> Database::QueryArrowWhole(std::string_view sql, int64_t batch_rows) {
  if (batch_rows < 1) return Status::InvalidArgument("a whole result's batches need at least one row each");
  CollectedArrow collected;
  Status run = [&]() -> Status {
    RawConnection con;
    SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con, impl_->running.get()));
    RawPrepared stmt;
    SKADE_RETURN_IF_ERROR(PrepareOnce(con.con, sql, &stmt.stmt));
    if (std::optional<std::string> error = CollectArrow(stmt.stmt, batch_rows, impl_->page_pool, &collected)) {
      return DuckError(error->c_str(), "query failed");
    }
    return Status::Ok();
  }();
  if (!run.ok()) return impl_->data_file_checks->Explain(sql, run);
  return arrow::MakeBatchStream(std::move(collected.schema), std::move(collected.batches));
}

Status Database::QueryTypedText(std::string_view sql,
                                const std::function<void(const std::vector<ColumnType>&)>& on_header,
                                const std::function<Status(const TextRow&)>& on_row) {
  RawConnection con;
  SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con, impl_->running.get()));
  ProgressWatch watch(impl_->progress->Get(), con.con);
  return impl_->data_file_checks->Explain(sql, QueryTextOn(con.con, sql, on_header, on_row));
}

Status Database::QueryText(std::string_view sql,
                           const std::function<void(const std::vector<std::string>&)>& on_header,
                           const std::function<Status(const TextRow&)>& on_row) {
  return QueryTypedText(
      sql,
      [&](const std::vector<ColumnType>& columns) {
        std::vector<std::string> names;
        for (const ColumnType& c : columns) names.push_back(c.name);
        on_header(names);
      },
      on_row);
}

void Database::InterruptRunning() { impl_->running->all()->InterruptAll(); }

void Database::InterruptOwnStatements() { impl_->running->InterruptAll(); }

Result<std::vector<TextRow>> Database::QueryRowsWithArrow(std::string_view view_name, ArrowArrayStream* input,
                                                          std::string_view sql) {
  RawConnection con;
  if (duckdb_connect(impl_->db, &con.con) != DuckDBSuccess) {
    return Status::Internal("cannot open a DuckDB connection");
  }
  // duckdb_arrow_scan registers the stream as a view of the database's default schema, seen by
  // every connection (DuckDB's C API makes it non-temporary): two calls at once under one name
  // would replace each other's view, and one would fail on the catalog conflict or read the
  // other's rows. So the stream goes under a name no other call uses, which this connection
  // reaches through a temporary view named as the caller asked; it is dropped afterwards.
  static std::atomic<uint64_t> next_view{0};
  const std::string registered = "__skade_arrow_input_" + std::to_string(next_view.fetch_add(1));
  if (duckdb_arrow_scan(con.con, registered.c_str(), reinterpret_cast<duckdb_arrow_stream>(input)) != DuckDBSuccess) {
    return Status::InvalidArgument("cannot read the Arrow stream");
  }
  struct DropView {
    duckdb_connection con;
    const std::string& name;
    ~DropView() { (void)ExecuteOn(con, "DROP VIEW IF EXISTS " + QuoteIdentifier(name)); }
  } drop{con.con, registered};
  SKADE_RETURN_IF_ERROR(ExecuteOn(con.con, "CREATE TEMPORARY VIEW " + QuoteIdentifier(view_name) +
                                               " AS SELECT * FROM " + QuoteIdentifier(registered)));
  std::vector<TextRow> rows;
  ProgressWatch watch(impl_->progress->Get(), con.con);
  SKADE_RETURN_IF_ERROR(QueryTextOn(
      con.con, sql, [](const std::vector<ColumnType>&) {},
      [&](const TextRow& row) {
        rows.push_back(row);
        return Status::Ok();
      }));
  return rows;
}

namespace {

// DESCRIBE's rows (column_name, column_type, …) as columns.
Result<std::vector<ColumnType>> ColumnsOfDescribe(const std::vector<TextRow>& rows) {
  std::vector<ColumnType> columns;
  for (const TextRow& r : rows) {
    if (r.size() < 2 || !r[0] || !r[1]) return Status::Internal("DESCRIBE returned no column name or type");
    columns.push_back(ColumnType{*r[0], *r[1]});
  }
  return columns;
}

}  // namespace

Result<std::vector<ColumnType>> Database::QueryColumns(std::string_view query) {
  SKADE_ASSIGN_OR_RETURN(std::vector<TextRow> rows, QueryRows("DESCRIBE (" + std::string(query) + "\n)"));
  return ColumnsOfDescribe(rows);
}

Result<std::vector<ColumnType>> Database::ArrowInputColumns(const ArrowSchema& schema) {
  std::string key = arrow::SchemaKey(schema);
  {
    std::lock_guard<std::mutex> lock(impl_->described_mu);
    if (auto it = impl_->described.find(key); it != impl_->described.end()) return it->second;
  }
  // DuckDB describes an empty stream of a copy of the schema (the caller's stream is not read).
  ArrowSchema copy;
  arrow::CopySchema(schema, &copy);
  arrow::StreamHandle empty = arrow::MakeBatchStream(arrow::SchemaHandle(&copy), {});
  SKADE_ASSIGN_OR_RETURN(std::vector<TextRow> rows,
                         QueryRowsWithArrow("__skade_described", empty.get(), "DESCRIBE SELECT * FROM __skade_described"));
  SKADE_ASSIGN_OR_RETURN(std::vector<ColumnType> columns, ColumnsOfDescribe(rows));
  std::lock_guard<std::mutex> lock(impl_->described_mu);
  if (impl_->described.size() >= kArrowSchemasRemembered) impl_->described.clear();
  impl_->described.emplace(std::move(key), columns);
  return columns;
}

Result<std::vector<std::vector<std::string>>> Database::ReferencedTables(std::string_view sql) {
  SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
  // Purely syntactic for queries (views are not expanded): the parse tree's base tables, walked
  // in process for the forms SelectBaseTables knows (no connection, no statement), else from
  // DuckDB's JSON rendering of the tree (two prepares and a run).
  if (auto tables = SelectBaseTables(text)) return std::move(*tables);
  RawConnection con;
  if (duckdb_connect(impl_->db, &con.con) != DuckDBSuccess) {
    return Status::Internal("cannot open a DuckDB connection");
  }
  // Parse first, so that syntax errors come back as errors rather than as an empty list.
  {
    duckdb_extracted_statements extracted = nullptr;
    idx_t n = duckdb_extract_statements(con.con, text.c_str(), &extracted);
    std::string error = n == 0 ? std::string(duckdb_extract_statements_error(extracted)) : "";
    duckdb_destroy_extracted(&extracted);
    if (n == 0) return Status::InvalidArgument(error);
  }
  std::vector<std::vector<std::string>> out;
  {
    // json_serialize_sql takes only a constant: the text goes in as a quoted literal, and the
    // statement is prepared (one statement, never more).
    QueryResult r;
    RawPrepared serialize;
    bool ran = false;
    std::string q = "SELECT json_serialize_sql(" + QuoteString(text) + ")";
    if (duckdb_prepare(con.con, q.c_str(), &serialize.stmt) == DuckDBSuccess) {
      ran = duckdb_execute_prepared(serialize.stmt, &r.result) == DuckDBSuccess;
      r.valid = true;
    }
    if (ran) {
      char* raw = duckdb_value_varchar(&r.result, 0, 0);
      std::string json_text = raw ? raw : "";
      if (raw) duckdb_free(raw);
      auto tree = nlohmann::json::parse(json_text, nullptr, false);
      if (!tree.is_discarded() && !tree.value("error", false)) {
        std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& node) {
          if (node.is_object()) {
            auto type = node.find("type");
            if (type != node.end() && type->is_string() && *type == "BASE_TABLE") {
              std::vector<std::string> parts;
              for (const char* key : {"catalog_name", "schema_name", "table_name"}) {
                auto v = node.find(key);
                if (v != node.end() && v->is_string() && !v->get<std::string>().empty()) parts.push_back(*v);
              }
              if (!parts.empty()) out.push_back(parts);
            }
            for (const auto& [k, v] : node.items()) walk(v);
          } else if (node.is_array()) {
            for (const auto& v : node) walk(v);
          }
        };
        walk(tree);
        return out;
      }
    }
  }
  duckdb_value names = duckdb_get_table_names(con.con, text.c_str(), false);
  if (names == nullptr) return out;
  idx_t n = duckdb_get_list_size(names);
  for (idx_t i = 0; i < n; ++i) {
    duckdb_value child = duckdb_get_list_child(names, i);
    char* raw = duckdb_get_varchar(child);
    std::string name = raw ? raw : "";
    if (raw) duckdb_free(raw);
    duckdb_destroy_value(&child);
    out.push_back({name});
  }
  duckdb_destroy_value(&names);
  // Qualified names (schema.table), parsed with double-quote escaping.
  duckdb_value qualified = duckdb_get_table_names(con.con, text.c_str(), true);
  if (qualified != nullptr && duckdb_get_list_size(qualified) == out.size()) {
    for (idx_t i = 0; i < out.size(); ++i) {
      duckdb_value child = duckdb_get_list_child(qualified, i);
      char* raw = duckdb_get_varchar(child);
      std::string q = raw ? raw : "";
      if (raw) duckdb_free(raw);
      duckdb_destroy_value(&child);
      std::vector<std::string> parts;
      std::string cur;
      bool quoted = false;
      for (size_t k = 0; k < q.size(); ++k) {
        char c = q[k];
        if (quoted) {
          if (c == '"' && k + 1 < q.size() && q[k + 1] == '"') {
            cur += '"';
            ++k;
          } else if (c == '"') {
            quoted = false;
          } else {
            cur += c;
          }
        } else if (c == '"') {
          quoted = true;
        } else if (c == ' ') {
          break;  // DuckDB appends " AS alias"
        } else if (c == '.') {
          parts.push_back(cur);
          cur.clear();
        } else {
          cur += c;
        }
      }
      parts.push_back(cur);
      out[i] = parts;
    }
  }
  if (qualified != nullptr) duckdb_destroy_value(&qualified);
  return out;
}

Result<std::vector<TextRow>> Database::QueryRows(std::string_view sql) {
  std::vector<TextRow> rows;
  SKADE_RETURN_IF_ERROR(QueryText(
      sql, [](const std::vector<std::string>&) {},
      [&](const TextRow& row) {
        rows.push_back(row);
        return Status::Ok();
      }));
  return rows;
}

Result<std::unique_ptr<Connection>> Database::Connect() {
  RawConnection con;
  SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con));
  auto impl = std::make_unique<Connection::Impl>();
  std::swap(impl->con, con.con);
  impl->pool = impl_->page_pool;
  return std::make_unique<Connection>(std::move(impl));
}

}  // namespace skade::engine
