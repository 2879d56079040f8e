// Connection and PreparedStatement (database.h): statements prepared once on a connection of
// their own, described, bound and run.
#include "skade/engine/database.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "duckdb.h"
#include "skade/engine/duck_query_internal.h"

namespace skade::engine {

struct PreparedStatement::Impl {
  duckdb_connection con = nullptr;  // borrowed from the Connection
  duckdb_prepared_statement stmt = nullptr;
  std::shared_ptr<PagePool> pool;  // the Database's
  ~Impl() {
    if (stmt) duckdb_destroy_prepare(&stmt);
  }
};

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::~Connection() = default;

Status Connection::Execute(std::string_view sql) { return ExecuteOn(impl_->con, sql); }

Result<std::unique_ptr<PreparedStatement>> Connection::Prepare(std::string_view sql) {
  auto impl = std::make_unique<PreparedStatement::Impl>();
  impl->con = impl_->con;
  impl->pool = impl_->pool;
  SKADE_RETURN_IF_ERROR(PrepareOn(impl_->con, sql, &impl->stmt));
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
  SKADE_ASSIGN_OR_RETURN(std::unique_ptr<ArrowFeed> feed,
                         ArrowFeed::Start(impl_->stmt, FeedOptions{.batching = batching, .pool = impl_->pool}));
  return FeedStreamOf(std::move(feed), nullptr);
}

Result<int64_t> PreparedStatement::ExecuteUpdate() {
  QueryResult r;
  SKADE_RETURN_IF_ERROR(ExecutePreparedInto(impl_->stmt, &r));
  return static_cast<int64_t>(duckdb_rows_changed(&r.result));
}

}  // namespace skade::engine
