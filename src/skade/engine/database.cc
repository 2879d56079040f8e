#include "skade/engine/database.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "duckdb.h"
#include <functional>
#include <nlohmann/json.hpp>
#include "skade/arrow/builder.h"
#include "skade/engine/arrow_batches_internal.h"
#include "skade/engine/arrow_collect_internal.h"
#include "skade/engine/database_internal.h"
#include "skade/engine/delete_scan_internal.h"
#include "skade/engine/duck_handles_internal.h"
#include "skade/engine/duck_types_internal.h"
#include "skade/engine/file_guard_internal.h"
#include "skade/engine/functions_internal.h"
#include "skade/engine/object_store_fs_internal.h"
#include "skade/engine/pushdown_scan_internal.h"

namespace skade::engine {
namespace {

// SQL text for DuckDB's C API, which reads C strings: with an embedded NUL it would prepare
// only the text before it, so such text is refused (DESIGN §11), never cut.
Result<std::string> CText(std::string_view sql) {
  if (sql.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("the SQL text contains a NUL byte");
  }
  return std::string(sql);
}


// Long lines of DuckDB messages are cut (a CSV error quotes the offending line, which may be
// 50 MB long), and so is the whole message; the lines after a cut one (the reason) stay.
constexpr size_t kMaxErrorLineBytes = 300;
constexpr size_t kMaxErrorBytes = 4000;

std::string Cut(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
  return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size() - cut) + " more bytes)";
}

// A DuckDB error as a Status: DuckDB reports refusals of the lock-down (files outside the
// allowed folders, settings, extensions) as "Permission Error: …"; those are kPermissionDenied,
// everything else the caller's SQL got wrong is kInvalidArgument.
Status DuckError(const char* message, const char* fallback) {
  std::string text = message != nullptr && *message != '\0' ? message : fallback;
  if (text.size() > kMaxErrorLineBytes) {
    std::string lines;
    for (size_t start = 0; start <= text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      lines += Cut(std::string_view(text).substr(start, end - start), kMaxErrorLineBytes);
      if (end < text.size()) lines += '\n';
      start = end + 1;
    }
    text = Cut(lines, kMaxErrorBytes);
  }
  if (text.rfind("Permission Error", 0) == 0) return Status::PermissionDenied(std::move(text));
  // An object store that could not be reached (engine/object_store_fs.cc throws these).
  if (text.rfind("Connection Error", 0) == 0) return Status::Unavailable(std::move(text));
  return Status::InvalidArgument(std::move(text));
}

}  // namespace

namespace {

// RAII over the DuckDB C handles used here.
// The connections statements run on now, of one Database (what InterruptOwnStatements
// interrupts); each is registered in `all` too, which the Databases over one DuckDB share
// (WithConnectionSetup; what InterruptRunning interrupts).
class RunningConnections {
 public:
  explicit RunningConnections(std::shared_ptr<RunningConnections> all = nullptr) : all_(std::move(all)) {}
  void Add(duckdb_connection con) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.insert(con);
    }
    if (all_) all_->Add(con);
  }
  void Remove(duckdb_connection con) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(con);
    }
    if (all_) all_->Remove(con);
  }
  void InterruptAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (duckdb_connection con : running_) duckdb_interrupt(con);
  }
  const std::shared_ptr<RunningConnections>& all() const { return all_; }

 private:
  std::shared_ptr<RunningConnections> all_;
  std::mutex mu_;
  std::set<duckdb_connection> running_;  // guarded by mu_
};

struct RawConnection {
  duckdb_connection con = nullptr;
  RunningConnections* running = nullptr;  // where `con` is registered, if anywhere
  ~RawConnection() {
    if (running && con) running->Remove(con);
    if (con) duckdb_disconnect(&con);
  }
};

struct ArrowOptions {
  duckdb_arrow_options options = nullptr;
  ~ArrowOptions() {
    if (options) duckdb_destroy_arrow_options(&options);
  }
};

struct LogicalType {
  duckdb_logical_type type = nullptr;
  ~LogicalType() {
    if (type) duckdb_destroy_logical_type(&type);
  }
};

// A running streaming query: connection, statement and result.
struct StreamingQuery {
  RawConnection con;  // owned connection (unset when borrowing)
  RawPrepared stmt;
  QueryResult result;

  // Runs on a connection of its own, set up with `setup` first (OpenConnection).
  static Result<std::unique_ptr<StreamingQuery>> Start(duckdb_database db, const std::vector<std::string>& setup,
                                                       RunningConnections* running, std::string_view sql);

  // Runs on a borrowed connection that must outlive the query.
  static Result<std::unique_ptr<StreamingQuery>> StartOn(duckdb_connection con, std::string_view sql) {
    auto q = std::make_unique<StreamingQuery>();
    SKADE_RETURN_IF_ERROR(q->Run(con, sql));
    return q;
  }

  // Runs a prepared statement owned by the caller (it must outlive the query).
  static Result<std::unique_ptr<StreamingQuery>> StartPrepared(duckdb_prepared_statement prepared) {
    auto q = std::make_unique<StreamingQuery>();
    SKADE_RETURN_IF_ERROR(q->RunPrepared(prepared));
    return q;
  }

  Status Run(duckdb_connection con, std::string_view sql) {
    SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
    if (duckdb_prepare(con, text.c_str(), &stmt.stmt) != DuckDBSuccess) {
      return DuckError(duckdb_prepare_error(stmt.stmt), "cannot prepare the statement");
    }
    return RunPrepared(stmt.stmt);
  }

  Status RunPrepared(duckdb_prepared_statement prepared) {
    PendingResult pending;
    if (duckdb_pending_prepared_streaming(prepared, &pending.pending) != DuckDBSuccess) {
      return DuckError(duckdb_pending_error(pending.pending), "query failed");
    }
    if (duckdb_execute_pending(pending.pending, &result.result) != DuckDBSuccess) {
      result.valid = true;
      const char* err = duckdb_result_error(&result.result);
      return DuckError(err, "query failed");
    }
    result.valid = true;
    return Status::Ok();
  }

  // Next chunk, or nullptr at the end. Errors raised while streaming come back as Status.
  Result<DataChunk> Next() {
    DataChunk c;
    c.chunk = duckdb_fetch_chunk(result.result);
    if (c.chunk == nullptr) {
      const char* err = duckdb_result_error(&result.result);
      if (err != nullptr && *err != '\0') return DuckError(err, "query failed");
    }
    return c;
  }
};

// ---- ArrowArrayStream over a streaming query ----

struct ArrowStreamState {
  std::unique_ptr<StreamingQuery> query;
  ArrowOptions options;
  ArrowBatching batching;
  int64_t next_rows = 0;  // rows the next joined batch aims at (batching.first_rows on)
  std::optional<DataChunk> held;  // read, but left for the next batch (its byte bound)
  bool ended = false;     // the last chunk was read into a batch already returned
  std::string last_error;
  // Names the damaged file behind a read error (DataFileChecks::Explain); null when the
  // statement reads no table scan.
  DataFileChecks* checks = nullptr;
  std::string sql;
};

int StreamGetSchema(ArrowArrayStream* stream, ArrowSchema* out) {
  auto* st = static_cast<ArrowStreamState*>(stream->private_data);
  duckdb_result* r = &st->query->result.result;
  idx_t n = duckdb_column_count(r);
  std::vector<LogicalType> holders(n);
  std::vector<duckdb_logical_type> types(n);
  std::vector<const char*> names(n);
  for (idx_t i = 0; i < n; ++i) {
    holders[i].type = duckdb_column_logical_type(r, i);
    types[i] = holders[i].type;
    names[i] = duckdb_column_name(r, i);
  }
  ErrorData err;
  err.error = duckdb_to_arrow_schema(st->options.options, types.data(), names.data(), n, out);
  if (err.has_error()) {
    st->last_error = err.message();
    return EINVAL;
  }
  return 0;
}

// Sets the stream's error from a failed chunk read; EIO.
int ChunkFailure(ArrowStreamState* st, const Status& status) {
  const Status error = st->checks != nullptr ? st->checks->Explain(st->sql, status) : status;
  st->last_error = error.code() == StatusCode::kInvalidArgument ? error.message() : error.ToString();
  return EIO;
}

// One batch of chunks joined (ArrowBatching): the first of first_rows rows, each next twice
// the last up to max_rows; a chunk that would take a batch past max_bytes of Arrow buffers
// starts the next one instead.
int JoinedNext(ArrowStreamState* st, ArrowArray* out) {
  const int64_t target = st->next_rows > 0 ? st->next_rows : st->batching.first_rows;
  ChunkJoiner joiner(st->options.options);
  int64_t bytes = 0;
  while (joiner.rows() < target) {
    DataChunk chunk;
    if (st->held) {
      chunk = DataChunk(std::move(*st->held));
      st->held.reset();
    } else if (!st->ended) {
      auto next = st->query->Next();
      if (!next.ok()) return ChunkFailure(st, next.status());
      chunk = DataChunk(std::move(*next));
    }
    if (chunk.chunk == nullptr) {
      st->ended = true;
      break;
    }
    const int64_t size = ChunkJoiner::ArrowBytes(chunk.chunk);
    if (joiner.rows() > 0 && bytes + size > st->batching.max_bytes) {
      st->held.emplace(std::move(chunk));
      break;
    }
    if (Status appended = joiner.Append(chunk.chunk, target); !appended.ok()) {
      st->last_error = appended.message();
      return EIO;
    }
    bytes += size;
  }
  if (joiner.rows() == 0) {
    out->release = nullptr;  // end of stream
    return 0;
  }
  if (Status finished = joiner.Finish(out); !finished.ok()) {
    st->last_error = finished.message();
    return EIO;
  }
  st->next_rows = std::min(target * 2, std::max(st->batching.max_rows, st->batching.first_rows));
  return 0;
}

int StreamGetNext(ArrowArrayStream* stream, ArrowArray* out) {
  auto* st = static_cast<ArrowStreamState*>(stream->private_data);
  if (st->batching.first_rows > 0) return JoinedNext(st, out);
  auto chunk = st->query->Next();
  if (!chunk.ok()) return ChunkFailure(st, chunk.status());
  if (chunk->chunk == nullptr) {
    out->release = nullptr;  // end of stream
    return 0;
  }
  ErrorData err;
  err.error = duckdb_data_chunk_to_arrow(st->options.options, chunk->chunk, out);
  if (err.has_error()) {
    st->last_error = err.message();
    return EIO;
  }
  return 0;
}

const char* StreamLastError(ArrowArrayStream* stream) {
  auto* st = static_cast<ArrowStreamState*>(stream->private_data);
  return st->last_error.empty() ? nullptr : st->last_error.c_str();
}

void StreamRelease(ArrowArrayStream* stream) {
  delete static_cast<ArrowStreamState*>(stream->private_data);
  stream->private_data = nullptr;
  stream->release = nullptr;
}

std::string ReadVarchar(duckdb_vector vec, idx_t row) {
  auto* data = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vec));
  duckdb_string_t* s = &data[row];
  return std::string(duckdb_string_t_data(s), duckdb_string_t_length(*s));
}

// Renders one value of a vector as JSON text: strings quoted, numbers and booleans bare,
// LIST as arrays, STRUCT and MAP as objects (map keys rendered as strings). Covers the nested
// results of non-SELECT statements such as COPY … RETURN_STATS.
std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string RenderJson(duckdb_vector vec, idx_t row) {
  uint64_t* validity = duckdb_vector_get_validity(vec);
  if (validity && !duckdb_validity_row_is_valid(validity, row)) return "null";
  LogicalType type;
  type.type = duckdb_vector_get_column_type(vec);
  switch (duckdb_get_type_id(type.type)) {
    case DUCKDB_TYPE_VARCHAR:
      return JsonQuote(ReadVarchar(vec, row));
    case DUCKDB_TYPE_BOOLEAN:
      return static_cast<bool*>(duckdb_vector_get_data(vec))[row] ? "true" : "false";
    case DUCKDB_TYPE_INTEGER:
      return std::to_string(static_cast<int32_t*>(duckdb_vector_get_data(vec))[row]);
    case DUCKDB_TYPE_BIGINT:
      return std::to_string(static_cast<int64_t*>(duckdb_vector_get_data(vec))[row]);
    case DUCKDB_TYPE_UBIGINT:
      return std::to_string(static_cast<uint64_t*>(duckdb_vector_get_data(vec))[row]);
    case DUCKDB_TYPE_LIST:
    case DUCKDB_TYPE_MAP: {
      auto* entries = static_cast<duckdb_list_entry*>(duckdb_vector_get_data(vec));
      duckdb_vector child = duckdb_list_vector_get_child(vec);
      bool is_map = duckdb_get_type_id(type.type) == DUCKDB_TYPE_MAP;
      std::string out = is_map ? "{" : "[";
      for (idx_t i = 0; i < entries[row].length; ++i) {
        idx_t at = entries[row].offset + i;
        if (i) out += ",";
        if (is_map) {
          std::string key = RenderJson(duckdb_struct_vector_get_child(child, 0), at);
          if (key.empty() || key[0] != '"') key = JsonQuote(key);
          out += key + ":" + RenderJson(duckdb_struct_vector_get_child(child, 1), at);
        } else {
          out += RenderJson(child, at);
        }
      }
      return out + (is_map ? "}" : "]");
    }
    case DUCKDB_TYPE_STRUCT: {
      idx_t n = duckdb_struct_type_child_count(type.type);
      std::string out = "{";
      for (idx_t i = 0; i < n; ++i) {
        char* name = duckdb_struct_type_child_name(type.type, i);
        if (i) out += ",";
        out += JsonQuote(name ? name : "") + ":" + RenderJson(duckdb_struct_vector_get_child(vec, i), row);
        if (name) duckdb_free(name);
      }
      return out + "}";
    }
    default:
      return "null";
  }
}

}  // namespace

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

Status ExecuteOn(duckdb_connection con, std::string_view sql);

// Opens a connection of `db` into `con` and runs `setup` on it, in order; registers it in
// `running` (when given) until `con` closes.
Status OpenConnection(duckdb_database db, const std::vector<std::string>& setup, RawConnection& con,
                      RunningConnections* running = nullptr) {
  if (duckdb_connect(db, &con.con) != DuckDBSuccess) return Status::Internal("cannot open a DuckDB connection");
  if (running) {
    running->Add(con.con);
    con.running = running;
  }
  for (const std::string& statement : setup) {
    SKADE_RETURN_IF_ERROR(ExecuteOn(con.con, statement).WithContext("setting up the connection"));
  }
  return Status::Ok();
}

Result<std::unique_ptr<StreamingQuery>> StreamingQuery::Start(duckdb_database db,
                                                              const std::vector<std::string>& setup,
                                                              RunningConnections* running, std::string_view sql) {
  auto q = std::make_unique<StreamingQuery>();
  SKADE_RETURN_IF_ERROR(OpenConnection(db, setup, q->con, running));
  SKADE_RETURN_IF_ERROR(q->Run(q->con.con, sql));
  return q;
}

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
  impl->progress = impl_->progress;
  impl->running = std::make_shared<RunningConnections>(impl_->running->all());
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

Result<std::unique_ptr<Database>> Database::Open(const DatabaseOptions& options) {
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

namespace {

// Runs one statement on `con`, discarding its result. Prepared, never duckdb_query: DuckDB
// refuses to prepare more than one statement, so no text can smuggle a second one in.
Status ExecuteOn(duckdb_connection con, std::string_view sql) {
  RawPrepared stmt;
  SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
  if (duckdb_prepare(con, text.c_str(), &stmt.stmt) != DuckDBSuccess) {
    return DuckError(duckdb_prepare_error(stmt.stmt), "cannot prepare the statement");
  }
  QueryResult r;
  duckdb_state state = duckdb_execute_prepared(stmt.stmt, &r.result);
  r.valid = true;
  if (state != DuckDBSuccess) {
    const char* err = duckdb_result_error(&r.result);
    return DuckError(err, "statement failed");
  }
  return Status::Ok();
}

}  // namespace

Status Database::Execute(std::string_view sql) {
  RawConnection con;
  SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con, impl_->running.get()));
  return ExecuteOn(con.con, sql);
}

namespace {

arrow::StreamHandle ArrowStreamOf(std::unique_ptr<StreamingQuery> query, DataFileChecks* checks = nullptr,
                                  std::string_view sql = {}, ArrowBatching batching = {}) {
  auto state = std::make_unique<ArrowStreamState>();
  state->batching = batching;
  state->options.options = duckdb_result_get_arrow_options(&query->result.result);
  state->query = std::move(query);
  if (checks != nullptr && DataFileChecks::HasMark(sql)) {
    state->checks = checks;
    state->sql = std::string(sql);
  }
  ArrowArrayStream raw;
  raw.get_schema = StreamGetSchema;
  raw.get_next = StreamGetNext;
  raw.get_last_error = StreamLastError;
  raw.release = StreamRelease;
  raw.private_data = state.release();
  return arrow::StreamHandle(&raw);
}

}  // namespace

Result<arrow::StreamHandle> Database::QueryArrow(std::string_view sql) {
  auto query = StreamingQuery::Start(impl_->db, impl_->connection_setup, impl_->running.get(), sql);
  if (!query.ok()) return impl_->data_file_checks->Explain(sql, query.status());
  return ArrowStreamOf(std::move(query).value(), impl_->data_file_checks.get(), sql);
}

Result<arrow::StreamHandle> Database::QueryArrowWhole(std::string_view sql, int64_t batch_rows) {
  if (batch_rows < 1) return Status::InvalidArgument("a whole result's batches need at least one row each");
  CollectedArrow collected;
  Status run = [&]() -> Status {
    RawConnection con;
    SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con, impl_->running.get()));
    SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
    RawPrepared stmt;
    if (duckdb_prepare(con.con, text.c_str(), &stmt.stmt) != DuckDBSuccess) {
      return DuckError(duckdb_prepare_error(stmt.stmt), "cannot prepare the statement");
    }
    if (std::optional<std::string> error = CollectArrow(stmt.stmt, batch_rows, &collected)) {
      return DuckError(error->c_str(), "query failed");
    }
    return Status::Ok();
  }();
  if (!run.ok()) return impl_->data_file_checks->Explain(sql, run);
  return arrow::MakeBatchStream(std::move(collected.schema), std::move(collected.batches));
}

namespace {

// SELECTs stream with values cast to VARCHAR by DuckDB itself; other statements that return
// rows (COPY … RETURN_STATS, PRAGMAs, EXPLAIN) are materialised and rendered value by value.
Status QueryTextOn(duckdb_connection connection, std::string_view sql,
                   const std::function<void(const std::vector<ColumnType>&)>& on_header,
                   const std::function<Status(const TextRow&)>& on_row) {
  // A SELECT's columns as DuckDB types them (the streamed values are VARCHAR casts).
  std::vector<ColumnType> select_columns;
  {
    RawPrepared stmt;
    SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
    if (duckdb_prepare(connection, text.c_str(), &stmt.stmt) != DuckDBSuccess) {
      return DuckError(duckdb_prepare_error(stmt.stmt), "cannot prepare the statement");
    }
    if (duckdb_prepared_statement_type(stmt.stmt) == DUCKDB_STATEMENT_TYPE_SELECT) {
      const idx_t n = duckdb_prepared_statement_column_count(stmt.stmt);
      for (idx_t i = 0; i < n; ++i) {
        LogicalType type;
        type.type = duckdb_prepared_statement_column_logical_type(stmt.stmt, i);
        // The C API hands the name over: it must be freed (duckdb_free).
        const char* name = duckdb_prepared_statement_column_name(stmt.stmt, i);
        std::string column = name ? name : "";
        if (name != nullptr) duckdb_free(const_cast<char*>(name));
        select_columns.push_back(ColumnType{std::move(column), DuckTypeSpelling(type.type)});
      }
    } else {
      QueryResult r;
      duckdb_state state = duckdb_execute_prepared(stmt.stmt, &r.result);
      r.valid = true;
      if (state != DuckDBSuccess) {
        const char* err = duckdb_result_error(&r.result);
        return DuckError(err, "statement failed");
      }
      idx_t ncols = duckdb_column_count(&r.result);
      std::vector<ColumnType> columns;
      for (idx_t i = 0; i < ncols; ++i) {
        LogicalType type;
        type.type = duckdb_column_logical_type(&r.result, i);
        columns.push_back(ColumnType{duckdb_column_name(&r.result, i), DuckTypeSpelling(type.type)});
      }
      on_header(columns);
      // Values: scalars through DuckDB's own VARCHAR rendering, nested ones as JSON.
      idx_t chunks = duckdb_result_chunk_count(r.result);
      TextRow row(ncols);
      for (idx_t ci = 0; ci < chunks; ++ci) {
        DataChunk chunk;
        chunk.chunk = duckdb_result_get_chunk(r.result, ci);
        if (chunk.chunk == nullptr) break;
        idx_t n = duckdb_data_chunk_get_size(chunk.chunk);
        for (idx_t i = 0; i < n; ++i) {
          for (idx_t c = 0; c < ncols; ++c) {
            duckdb_vector vec = duckdb_data_chunk_get_vector(chunk.chunk, c);
            uint64_t* validity = duckdb_vector_get_validity(vec);
            LogicalType type;
            type.type = duckdb_vector_get_column_type(vec);
            duckdb_type id = duckdb_get_type_id(type.type);
            if (validity && !duckdb_validity_row_is_valid(validity, i)) {
              row[c].reset();
            } else if (id == DUCKDB_TYPE_VARCHAR) {
              row[c] = ReadVarchar(vec, i);
            } else if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_MAP || id == DUCKDB_TYPE_STRUCT ||
                       id == DUCKDB_TYPE_BOOLEAN || id == DUCKDB_TYPE_INTEGER ||
                       id == DUCKDB_TYPE_BIGINT || id == DUCKDB_TYPE_UBIGINT) {
              row[c] = RenderJson(vec, i);
            } else {
              char* v = duckdb_value_varchar(&r.result, c, ci * duckdb_vector_size() + i);
              row[c] = v ? std::string(v) : std::string();
              if (v) duckdb_free(v);
            }
          }
          SKADE_RETURN_IF_ERROR(on_row(row));
        }
      }
      return Status::Ok();
    }
  }
  // The SELECT just prepared, as a subquery: without the ';' and blanks that may close it (a
  // ';' there ends the one statement, or sits in a line comment that "\n" ends either way).
  std::string_view select = sql;
  while (!select.empty() && (select.back() == ';' || std::isspace(static_cast<unsigned char>(select.back())))) {
    select.remove_suffix(1);
  }
  std::string wrapped = "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (" + std::string(select) + "\n)";
  SKADE_ASSIGN_OR_RETURN(auto query, StreamingQuery::StartOn(connection, wrapped));
  duckdb_result* r = &query->result.result;
  idx_t ncols = duckdb_column_count(r);
  if (select_columns.size() != ncols) {
    // Not expected (the cast keeps every column); the names are the result's then.
    select_columns.clear();
    for (idx_t i = 0; i < ncols; ++i) select_columns.push_back(ColumnType{duckdb_column_name(r, i), "VARCHAR"});
  }
  on_header(select_columns);
  TextRow row(ncols);
  while (true) {
    SKADE_ASSIGN_OR_RETURN(DataChunk chunk, query->Next());
    if (chunk.chunk == nullptr) break;
    idx_t n = duckdb_data_chunk_get_size(chunk.chunk);
    std::vector<duckdb_vector> vecs(ncols);
    std::vector<uint64_t*> validity(ncols);
    for (idx_t c = 0; c < ncols; ++c) {
      vecs[c] = duckdb_data_chunk_get_vector(chunk.chunk, c);
      validity[c] = duckdb_vector_get_validity(vecs[c]);
    }
    for (idx_t i = 0; i < n; ++i) {
      for (idx_t c = 0; c < ncols; ++c) {
        if (validity[c] && !duckdb_validity_row_is_valid(validity[c], i)) {
          row[c].reset();
        } else {
          row[c] = ReadVarchar(vecs[c], i);
        }
      }
      SKADE_RETURN_IF_ERROR(on_row(row));
    }
  }
  return Status::Ok();
}

}  // namespace

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
  RawConnection con;
  if (duckdb_connect(impl_->db, &con.con) != DuckDBSuccess) {
    return Status::Internal("cannot open a DuckDB connection");
  }
  // Parse first, so that syntax errors come back as errors rather than as an empty list.
  {
    RawPrepared stmt;
    SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
    duckdb_extracted_statements extracted = nullptr;
    idx_t n = duckdb_extract_statements(con.con, text.c_str(), &extracted);
    std::string error = n == 0 ? std::string(duckdb_extract_statements_error(extracted)) : "";
    duckdb_destroy_extracted(&extracted);
    if (n == 0) return Status::InvalidArgument(error);
  }
  std::string text(sql);
  std::vector<std::vector<std::string>> out;
  // Purely syntactic for queries (views are not expanded): the parse tree's base tables.
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

}  // namespace skade::engine

// ---- Connection and PreparedStatement ----

namespace skade::engine {

struct Connection::Impl {
  duckdb_connection con = nullptr;
  ~Impl() {
    if (con) duckdb_disconnect(&con);
  }
};

struct PreparedStatement::Impl {
  duckdb_connection con = nullptr;  // borrowed from the Connection
  duckdb_prepared_statement stmt = nullptr;
  ~Impl() {
    if (stmt) duckdb_destroy_prepare(&stmt);
  }
};

Result<std::unique_ptr<Connection>> Database::Connect() {
  RawConnection con;
  SKADE_RETURN_IF_ERROR(OpenConnection(impl_->db, impl_->connection_setup, con));
  auto impl = std::make_unique<Connection::Impl>();
  std::swap(impl->con, con.con);
  return std::make_unique<Connection>(std::move(impl));
}

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::~Connection() = default;

Status Connection::Execute(std::string_view sql) { return ExecuteOn(impl_->con, sql); }

Result<std::unique_ptr<PreparedStatement>> Connection::Prepare(std::string_view sql) {
  auto impl = std::make_unique<PreparedStatement::Impl>();
  impl->con = impl_->con;
  SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
  if (duckdb_prepare(impl_->con, text.c_str(), &impl->stmt) != DuckDBSuccess) {
    const char* err = duckdb_prepare_error(impl->stmt);
    return DuckError(err, "cannot prepare the statement");
  }
  return std::make_unique<PreparedStatement>(std::move(impl));
}

void Connection::Interrupt() { duckdb_interrupt(impl_->con); }

Status Connection::QueryTypedText(std::string_view sql,
                                  const std::function<void(const std::vector<ColumnType>&)>& on_header,
                                  const std::function<Status(const TextRow&)>& on_row) {
  return QueryTextOn(impl_->con, sql, on_header, on_row);
}

PreparedStatement::PreparedStatement(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreparedStatement::~PreparedStatement() = default;

StatementKind PreparedStatement::kind() const {
  switch (duckdb_prepared_statement_type(impl_->stmt)) {
    case DUCKDB_STATEMENT_TYPE_SELECT: return StatementKind::kSelect;
    case DUCKDB_STATEMENT_TYPE_EXPLAIN: return StatementKind::kExplain;
    case DUCKDB_STATEMENT_TYPE_INSERT: return StatementKind::kInsert;
    case DUCKDB_STATEMENT_TYPE_UPDATE: return StatementKind::kUpdate;
    case DUCKDB_STATEMENT_TYPE_DELETE: return StatementKind::kDelete;
    case DUCKDB_STATEMENT_TYPE_CREATE: return StatementKind::kCreate;
    case DUCKDB_STATEMENT_TYPE_DROP: return StatementKind::kDrop;
    case DUCKDB_STATEMENT_TYPE_ALTER: return StatementKind::kAlter;
    default: return StatementKind::kOther;
  }
}

std::string PreparedStatement::kind_name() const {
  static const char* const kNames[] = {
      "INVALID", "SELECT", "INSERT", "UPDATE", "EXPLAIN", "DELETE", "PREPARE", "CREATE", "EXECUTE",
      "ALTER", "TRANSACTION", "COPY", "ANALYZE", "VARIABLE SET", "CREATE FUNCTION", "DROP", "EXPORT",
      "PRAGMA", "VACUUM", "CALL", "SET", "LOAD", "RELATION", "EXTENSION", "LOGICAL PLAN", "ATTACH",
      "DETACH", "MULTI"};
  auto t = static_cast<size_t>(duckdb_prepared_statement_type(impl_->stmt));
  return t < sizeof(kNames) / sizeof(kNames[0]) ? kNames[t] : "UNKNOWN";
}

int64_t PreparedStatement::parameter_count() const {
  return static_cast<int64_t>(duckdb_nparams(impl_->stmt));
}

namespace {

// A type DuckDB cannot tell before binding (unresolved parameter) becomes the null type.
// (DuckDB cannot export SQLNULL to Arrow: a VARCHAR stands in and its format becomes "n".)
bool UnknownAsNull(LogicalType& t) {
  duckdb_type id = t.type ? duckdb_get_type_id(t.type) : DUCKDB_TYPE_INVALID;
  if (id == DUCKDB_TYPE_INVALID || id == DUCKDB_TYPE_ANY || id == DUCKDB_TYPE_SQLNULL) {
    if (t.type) duckdb_destroy_logical_type(&t.type);
    t.type = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    return true;
  }
  return false;
}

// The Arrow struct schema of columns `names` with DuckDB types `holders` (each owned here);
// types DuckDB cannot tell yet become the null type.
Result<arrow::SchemaHandle> ArrowSchemaOf(duckdb_connection con, std::vector<LogicalType>& holders,
                                          const std::vector<std::string>& names) {
  std::vector<bool> unknown;
  for (LogicalType& t : holders) unknown.push_back(UnknownAsNull(t));
  if (holders.empty()) {  // DuckDB refuses zero columns: an empty struct schema
    static const char* const kEmpty = "+s";
    ArrowSchema raw{};
    raw.format = kEmpty;
    raw.name = "";
    raw.release = [](ArrowSchema* s) { s->release = nullptr; };
    return arrow::SchemaHandle(&raw);
  }
  ArrowOptions options;
  duckdb_connection_get_arrow_options(con, &options.options);
  std::vector<duckdb_logical_type> types;
  std::vector<const char*> cnames;
  for (size_t i = 0; i < holders.size(); ++i) {
    types.push_back(holders[i].type);
    cnames.push_back(names[i].c_str());
  }
  ArrowSchema raw;
  ErrorData err;
  err.error = duckdb_to_arrow_schema(options.options, types.data(), cnames.data(), types.size(), &raw);
  if (err.has_error()) return Status::InvalidArgument("cannot describe the result: " + err.message());
  for (size_t i = 0; i < unknown.size() && static_cast<int64_t>(i) < raw.n_children; ++i) {
    if (unknown[i]) raw.children[i]->format = "n";
  }
  return arrow::SchemaHandle(&raw);
}

}  // namespace

Result<arrow::SchemaHandle> PreparedStatement::ResultSchema() const {
  idx_t n = duckdb_prepared_statement_column_count(impl_->stmt);
  std::vector<LogicalType> holders(n);
  std::vector<std::string> names(n);
  for (idx_t i = 0; i < n; ++i) {
    holders[i].type = duckdb_prepared_statement_column_logical_type(impl_->stmt, i);
    // The C API hands out a copy of the name, which the caller frees.
    const char* name = duckdb_prepared_statement_column_name(impl_->stmt, i);
    names[i] = name ? name : "";
    if (name) duckdb_free(const_cast<char*>(name));
  }
  return ArrowSchemaOf(impl_->con, holders, names);
}

Result<arrow::SchemaHandle> PreparedStatement::ParameterSchema() const {
  idx_t n = duckdb_nparams(impl_->stmt);
  std::vector<LogicalType> holders(n);
  std::vector<std::string> names(n);
  for (idx_t i = 0; i < n; ++i) {
    holders[i].type = duckdb_param_logical_type(impl_->stmt, i + 1);
    names[i] = std::to_string(i + 1);
  }
  return ArrowSchemaOf(impl_->con, holders, names);
}

namespace {

bool ArrowBit(const void* bits, int64_t i) {
  return (static_cast<const uint8_t*>(bits)[i >> 3] >> (i & 7)) & 1;
}

// One value of an Arrow array as a DuckDB value; nullptr + error for unsupported types.
Result<duckdb_value> ValueAt(const ArrowSchema& field, const ArrowArray& a, int64_t row) {
  std::string_view f = field.format;
  int64_t i = a.offset + row;
  if (f == "n" || (a.null_count != 0 && a.buffers[0] != nullptr && !ArrowBit(a.buffers[0], i))) {
    return duckdb_create_null_value();
  }
  const void* data = a.n_buffers > 1 ? a.buffers[1] : nullptr;
  auto fixed = [&](auto tag) { return static_cast<const decltype(tag)*>(data)[i]; };
  if (field.dictionary != nullptr) {
    // The array holds indices into its dictionary: bind the value the index names.
    int64_t index = -1;
    if (f == "c") index = fixed(int8_t{});
    else if (f == "C") index = fixed(uint8_t{});
    else if (f == "s") index = fixed(int16_t{});
    else if (f == "S") index = fixed(uint16_t{});
    else if (f == "i") index = fixed(int32_t{});
    else if (f == "I") index = fixed(uint32_t{});
    else if (f == "l") index = fixed(int64_t{});
    else if (f == "L") index = static_cast<int64_t>(std::min<uint64_t>(fixed(uint64_t{}), INT64_MAX));
    if (a.dictionary == nullptr || index < 0 || index >= a.dictionary->length) {
      return Status::InvalidArgument("parameter " + std::string(field.name ? field.name : "") +
                                     ": dictionary index out of range or of a non-integer type");
    }
    return ValueAt(*field.dictionary, *a.dictionary, index);
  }
  if (f == "tdm") return duckdb_create_date(duckdb_date{static_cast<int32_t>(fixed(int64_t{}) / 86400000)});
  if (f == "tts" || f == "ttm") {
    int64_t v = fixed(int32_t{});
    return duckdb_create_time(duckdb_time{f == "tts" ? v * 1000000 : v * 1000});
  }
  if (f == "ttu" || f == "ttn") {
    int64_t v = fixed(int64_t{});
    return duckdb_create_time(duckdb_time{f == "ttu" ? v : v / 1000});
  }
  if (f.size() > 2 && f.substr(0, 2) == "w:") {
    int width = std::atoi(std::string(f.substr(2)).c_str());
    if (width <= 0) return Status::InvalidArgument("parameter with a bad fixed-size binary width");
    return duckdb_create_blob(static_cast<const uint8_t*>(data) + i * width, static_cast<idx_t>(width));
  }
  if (f == "b") return duckdb_create_bool(ArrowBit(data, i));
  if (f == "c") return duckdb_create_int8(fixed(int8_t{}));
  if (f == "C") return duckdb_create_uint8(fixed(uint8_t{}));
  if (f == "s") return duckdb_create_int16(fixed(int16_t{}));
  if (f == "S") return duckdb_create_uint16(fixed(uint16_t{}));
  if (f == "i") return duckdb_create_int32(fixed(int32_t{}));
  if (f == "I") return duckdb_create_uint32(fixed(uint32_t{}));
  if (f == "l") return duckdb_create_int64(fixed(int64_t{}));
  if (f == "L") return duckdb_create_uint64(fixed(uint64_t{}));
  if (f == "f") return duckdb_create_float(fixed(float{}));
  if (f == "g") return duckdb_create_double(fixed(double{}));
  if (f == "tdD") return duckdb_create_date(duckdb_date{fixed(int32_t{})});
  if (f == "u" || f == "z" || f == "U" || f == "Z") {
    bool wide = f == "U" || f == "Z";
    int64_t begin = wide ? static_cast<const int64_t*>(data)[i] : static_cast<const int32_t*>(data)[i];
    int64_t end = wide ? static_cast<const int64_t*>(data)[i + 1] : static_cast<const int32_t*>(data)[i + 1];
    const char* bytes = static_cast<const char*>(a.buffers[2]) + begin;
    if (f == "u" || f == "U") return duckdb_create_varchar_length(bytes, static_cast<idx_t>(end - begin));
    return duckdb_create_blob(reinterpret_cast<const uint8_t*>(bytes), static_cast<idx_t>(end - begin));
  }
  if (f.size() >= 4 && f.substr(0, 2) == "ts") {
    int64_t v = fixed(int64_t{});
    bool zoned = f.size() > 4;
    int64_t micros = f[2] == 's' ? v * 1000000 : f[2] == 'm' ? v * 1000 : f[2] == 'n' ? v / 1000 : v;
    return zoned ? duckdb_create_timestamp_tz(duckdb_timestamp{micros}) : duckdb_create_timestamp(duckdb_timestamp{micros});
  }
  if (f.substr(0, 2) == "d:") {
    int p = 0, sc = 0, w = 128;
    if (std::sscanf(std::string(f).c_str(), "d:%d,%d,%d", &p, &sc, &w) < 2 || w != 128 || p > 38) {
      return Status::InvalidArgument("decimal parameter " + std::string(f) + " cannot bind (only 128-bit decimals up to precision 38)");
    }
    duckdb_decimal d;
    d.width = static_cast<uint8_t>(p);
    d.scale = static_cast<uint8_t>(sc);
    const auto* words = static_cast<const uint64_t*>(data) + 2 * i;
    d.value.lower = words[0];
    d.value.upper = static_cast<int64_t>(words[1]);
    return duckdb_create_decimal(d);
  }
  return Status::InvalidArgument("parameter " + std::string(field.name ? field.name : "") +
                                 " has an Arrow type that cannot bind to a SQL parameter ('" + std::string(f) +
                                 "'): send numbers, booleans, text, binary, dates, times, timestamps or decimals");
}

}  // namespace

Status PreparedStatement::BindRow(const ArrowSchema& schema, const ArrowArray& batch, int64_t row) {
  int64_t n = parameter_count();
  if (schema.n_children != n || batch.n_children != n) {
    return Status::InvalidArgument("the statement has " + std::to_string(n) + " parameters; the batch has " +
                                   std::to_string(schema.n_children) + " columns");
  }
  if (row < 0 || row >= batch.length) return Status::InvalidArgument("parameter row out of range");
  duckdb_clear_bindings(impl_->stmt);
  for (int64_t c = 0; c < n; ++c) {
    SKADE_ASSIGN_OR_RETURN(duckdb_value v, ValueAt(*schema.children[c], *batch.children[c], batch.offset + row));
    duckdb_state st = duckdb_bind_value(impl_->stmt, static_cast<idx_t>(c + 1), v);
    duckdb_destroy_value(&v);
    if (st != DuckDBSuccess) {
      const char* err = duckdb_prepare_error(impl_->stmt);
      return Status::InvalidArgument("cannot bind parameter " + std::to_string(c + 1) +
                                     (err && *err ? std::string(": ") + err : std::string()));
    }
  }
  return Status::Ok();
}

Result<arrow::StreamHandle> PreparedStatement::ExecuteArrow(ArrowBatching batching) {
  SKADE_ASSIGN_OR_RETURN(auto query, StreamingQuery::StartPrepared(impl_->stmt));
  return ArrowStreamOf(std::move(query), nullptr, {}, batching);
}

Result<int64_t> PreparedStatement::ExecuteUpdate() {
  QueryResult r;
  duckdb_state state = duckdb_execute_prepared(impl_->stmt, &r.result);
  r.valid = true;
  if (state != DuckDBSuccess) {
    const char* err = duckdb_result_error(&r.result);
    return DuckError(err, "statement failed");
  }
  return static_cast<int64_t>(duckdb_rows_changed(&r.result));
}

}  // namespace skade::engine
