// The Flight SQL metadata commands (GetSqlInfo, GetXdbcTypeInfo, GetCatalogs, GetDbSchemas,
// GetTables, GetTableTypes, GetPrimaryKeys, GetExportedKeys, GetImportedKeys,
// GetCrossReference): their result schemas as the Flight SQL specification fixes them and
// their rows, computed from the lake's catalog.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <google/protobuf/any.pb.h>

#include "skade/arrow/c_data.h"
#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/sql/lake_sql.h"

namespace skade::flightsql {

// GetTables' serialized table schemas by table name and metadata location: a metadata file never
// changes, and the name is part of the key because the schema's column metadata carries it (a
// renamed table keeps its file). Thread-safe; bounded (cleared when it reaches `kMaxEntries`).
class TableSchemaCache {
 public:
  static constexpr size_t kMaxEntries = 100000;
  std::optional<std::string> Find(const catalog::TableIdent& ident, const std::string& metadata_location);
  void Put(const catalog::TableIdent& ident, const std::string& metadata_location, std::string schema_bytes);

 private:
  static std::string Key(const catalog::TableIdent& ident, const std::string& metadata_location);
  std::mutex mu_;
  std::unordered_map<std::string, std::string> bytes_;
};

struct ServerFacts {
  std::string version;
  bool read_only = false;
  int statement_timeout_ms = 0;  // SqlInfo 100 and 101 are in milliseconds (FlightSql.proto)
  TableSchemaCache* schema_cache = nullptr;  // optional, borrowed
};

// The type URL prefix of Flight SQL messages packed in google.protobuf.Any.
inline constexpr std::string_view kFlightSqlTypePrefix = "type.googleapis.com/arrow.flight.protocol.sql.";

// Whether `any` holds the Flight SQL message `name` (e.g. "CommandStatementQuery").
bool IsFlightSqlCommand(const google::protobuf::Any& any, std::string_view name);

// Whether `command` is one of the metadata commands above.
bool IsMetadataCommand(const google::protobuf::Any& command);

// The command's result as a stream; with `schema_only` the stream has the schema and no rows
// (nothing is read from the catalog). kInvalidArgument if the Any does not unpack.
Result<arrow::StreamHandle> MetadataResult(const google::protobuf::Any& command, sql::LakeSql& lake,
                                           const ServerFacts& facts, bool schema_only);

// The Arrow schema of a table with the ARROW:FLIGHT:SQL:* column metadata (CATALOG_NAME,
// SCHEMA_NAME, TABLE_NAME, TYPE_NAME, PRECISION, SCALE, IS_NULLABLE, IS_AUTO_INCREMENT,
// IS_CASE_SENSITIVE, IS_READ_ONLY, IS_SEARCHABLE).
Result<arrow::SchemaHandle> AnnotatedTableSchema(table::Table& table, const std::string& catalog_name, bool read_only);
// The same for a view of the catalog: its current schema's columns, read-only.
Result<arrow::SchemaHandle> AnnotatedViewSchema(engine::Database& db, const catalog::ViewState& view,
                                                const std::string& catalog_name);

// What is known of a query's result columns beyond their Arrow types, one entry per column
// (a vector of another length is ignored).
struct ResultColumns {
  // Columns known to hold no nulls (a NOT NULL table column passed through unchanged).
  std::vector<bool> required;
  // DuckDB's spelling of each column's type (DESCRIBE's column_type) where NeedsSqlType says
  // the Arrow type does not tell it; empty elsewhere.
  std::vector<std::string> sql_types;
};

// Whether TYPE_NAME of a result column is DuckDB's spelling of its type: an ENUM (a dictionary:
// its members are in the data, not in the schema) or a UNION (member names quoted as DuckDB
// quotes them).
bool NeedsSqlType(const ArrowSchema& column);

// A copy of a query result schema with ARROW:FLIGHT:SQL:TYPE_NAME, PRECISION, SCALE and
// IS_NULLABLE on each column (what JDBC/ODBC drivers show as column type metadata). Required
// columns lose the nullable flag; TYPE_NAME is `columns.sql_types` where NeedsSqlType and that
// spelling is of the column's kind (at most kMaxSqlTypeBytes), else derived from the Arrow type.
void AnnotateResultSchema(const ArrowSchema& schema, ArrowSchema* out, const ResultColumns& columns = {});

// The longest DuckDB type spelling used as a TYPE_NAME (an ENUM of many members is "ENUM").
inline constexpr size_t kMaxSqlTypeBytes = 4096;

// An IPC-encapsulated Schema message for `schema` (FlightInfo.schema, SchemaResult.schema,
// GetTables' table_schema).
Result<std::string> SerializeSchema(const ArrowSchema& schema);

}  // namespace skade::flightsql
