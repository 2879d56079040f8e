#include "skade/engine/duck_query_internal.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "duckdb.h"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "skade/arrow/stream_of.h"
#include "skade/engine/duck_types_internal.h"

namespace skade::engine {
namespace {

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

}  // namespace

Result<std::string> CText(std::string_view sql) {
  if (sql.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("the SQL text contains a NUL byte");
  }
  return std::string(sql);
}

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


namespace {

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

Status OpenConnection(duckdb_database db, const std::vector<std::string>& setup, RawConnection& con,
                      RunningConnections* running) {
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

Status PrepareOn(duckdb_connection con, std::string_view sql, duckdb_prepared_statement* out) {
  SKADE_ASSIGN_OR_RETURN(std::string text, CText(sql));
  if (duckdb_prepare(con, text.c_str(), out) != DuckDBSuccess) {
    return DuckError(duckdb_prepare_error(*out), "cannot prepare the statement");
  }
  return Status::Ok();
}

Status PrepareOnce(duckdb_connection con, std::string_view sql, duckdb_prepared_statement* out) {
  SKADE_RETURN_IF_ERROR(PrepareOn(con, sql, out));
  // The C API's statement handle is a PreparedStatementWrapper (duckdb/main/capi/capi_internal.hpp).
  auto* wrapper = reinterpret_cast<duckdb::PreparedStatementWrapper*>(*out);
  if (wrapper != nullptr && wrapper->statement && !wrapper->statement->HasError() && wrapper->statement->data) {
    wrapper->statement->data->properties.always_require_rebind = false;
  }
  return Status::Ok();
}

Status ExecutePreparedInto(duckdb_prepared_statement stmt, QueryResult* result) {
  duckdb_state state = duckdb_execute_prepared(stmt, &result->result);
  result->valid = true;
  if (state != DuckDBSuccess) return DuckError(duckdb_result_error(&result->result), "statement failed");
  return Status::Ok();
}

Status ExecuteOn(duckdb_connection con, std::string_view sql) {
  RawPrepared stmt;
  SKADE_RETURN_IF_ERROR(PrepareOnce(con, sql, &stmt.stmt));
  QueryResult r;
  return ExecutePreparedInto(stmt.stmt, &r);
}

namespace {

// A feed as a C stream: read errors name the damaged file where the feed's do not.
class FeedStream {
 public:
  FeedStream(std::unique_ptr<ArrowFeed> feed, std::unique_ptr<OwnedStatement> owner, DataFileChecks* checks,
             std::string sql)
      : owner_(std::move(owner)), feed_(std::move(feed)), checks_(checks), sql_(std::move(sql)) {}

  int GetSchema(ArrowSchema* out) { return arrow::MoveSchemaOrFail(feed_->Schema(), out, last_error_); }
  int GetNext(ArrowArray* out) {
    Status next = feed_->Next(out);
    if (next.ok()) return 0;
    const Status error = checks_ != nullptr ? checks_->Explain(sql_, next) : next;
    last_error_ = error.code() == StatusCode::kInvalidArgument ? error.message() : error.ToString();
    return EIO;
  }
  const char* LastError() const { return last_error_.empty() ? nullptr : last_error_.c_str(); }

 private:
  std::unique_ptr<OwnedStatement> owner_;  // declared first: released after the feed
  std::unique_ptr<ArrowFeed> feed_;
  std::string last_error_;
  DataFileChecks* checks_;  // null unless the statement reads files it checked
  std::string sql_;
};

}  // namespace

arrow::StreamHandle FeedStreamOf(std::unique_ptr<ArrowFeed> feed, std::unique_ptr<OwnedStatement> owner,
                                 DataFileChecks* checks, std::string_view sql) {
  const bool explain = checks != nullptr && DataFileChecks::HasMark(sql);
  return arrow::StreamOf(std::make_unique<FeedStream>(std::move(feed), std::move(owner), explain ? checks : nullptr,
                                                      explain ? std::string(sql) : std::string()));
}

Status QueryTextOn(duckdb_connection connection, std::string_view sql,
                   const std::function<void(const std::vector<ColumnType>&)>& on_header,
                   const std::function<Status(const TextRow&)>& on_row) {
  // A SELECT's columns as DuckDB types them (the streamed values are VARCHAR casts).
  std::vector<ColumnType> select_columns;
  {
    RawPrepared stmt;
    SKADE_RETURN_IF_ERROR(PrepareOnce(connection, sql, &stmt.stmt));
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
      SKADE_RETURN_IF_ERROR(ExecutePreparedInto(stmt.stmt, &r));
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

}  // namespace skade::engine
