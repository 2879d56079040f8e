#include "skade/flightsql/metadata_internal.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "flight_sql.pb.h"
#include "skade/arrow/builder.h"
#include "skade/arrow/ipc.h"
#include "skade/base/json_parse_internal.h"
#include "skade/engine/database.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/sql/like.h"

namespace skade::flightsql {

namespace pbsql = ::arrow::flight::protocol::sql;
using arrow::ArrayBuilder;

namespace {


ArrayBuilder Utf8(std::string name, bool nullable) { return ArrayBuilder(std::move(name), "u", nullable); }

// Finishes a record batch builder into a one-batch stream (or a schema-only one).
Result<arrow::StreamHandle> ToStream(ArrayBuilder& batch, bool schema_only) {
  arrow::SchemaHandle schema;
  arrow::ArrayHandle array;
  SKADE_RETURN_IF_ERROR(batch.Finish(schema.get(), array.get()));
  std::vector<arrow::ArrayHandle> batches;
  if (!schema_only) batches.push_back(std::move(array));
  return arrow::MakeBatchStream(std::move(schema), std::move(batches));
}

template <typename T>
Result<T> Unpack(const google::protobuf::Any& any, std::string_view name) {
  T out;
  if (!any.UnpackTo(&out)) return Status::InvalidArgument("malformed " + std::string(name) + " command");
  return out;
}

// ---- GetSqlInfo: info_name uint32 + value dense_union<string, bool, int64, int32, list<utf8>, map<int32, list<int32>>>

ArrayBuilder SqlInfoBuilder() {
  std::vector<ArrayBuilder> members;
  members.emplace_back("string_value", "u", true);
  members.emplace_back("bool_value", "b", true);
  members.emplace_back("bigint_value", "l", true);
  members.emplace_back("int32_bitmask", "i", true);
  members.emplace_back("string_list", "+l", true, std::vector<ArrayBuilder>{ArrayBuilder("item", "u", true)});
  members.emplace_back(
      "int32_to_int32_list_map", "+m", true,
      std::vector<ArrayBuilder>{ArrayBuilder(
          "entries", "+s", false,
          {ArrayBuilder("key", "i", false),
           ArrayBuilder("value", "+l", true, std::vector<ArrayBuilder>{ArrayBuilder("item", "i", true)})})});
  std::vector<ArrayBuilder> columns;
  columns.emplace_back("info_name", "I", false);
  columns.emplace_back("value", "+ud:0,1,2,3,4,5", false, std::move(members));
  return arrow::RecordBatchBuilder(std::move(columns));
}

struct InfoValue {
  enum Kind { kString, kBool, kBigint, kInt32, kStringList, kConvertMap } kind;
  std::string s;
  bool b = false;
  int64_t i = 0;
  std::vector<std::string> list;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> map;
};

std::vector<std::pair<uint32_t, InfoValue>> SqlInfoValues(const ServerFacts& f) {
  using K = InfoValue::Kind;
  auto str = [](std::string v) { return InfoValue{K::kString, std::move(v), false, 0, {}, {}}; };
  auto boolean = [](bool v) { return InfoValue{K::kBool, "", v, 0, {}, {}}; };
  auto bigint = [](int64_t v) { return InfoValue{K::kBigint, "", false, v, {}, {}}; };
  auto int32 = [](int64_t v) { return InfoValue{K::kInt32, "", false, v, {}, {}}; };
  auto list = [](std::vector<std::string> v) { return InfoValue{K::kStringList, "", false, 0, std::move(v), {}}; };
  // Conversions DuckDB's CAST supports between the XDBC-ish families (SqlSupportsConvert).
  std::vector<int32_t> all_scalars = {0, 2, 3, 4, 5, 6, 7, 11, 12, 13, 14, 15, 16, 17, 19};
  std::vector<std::pair<int32_t, std::vector<int32_t>>> convert;
  for (int32_t from : all_scalars) convert.emplace_back(from, all_scalars);
  InfoValue convert_map{K::kConvertMap, "", false, 0, {}, convert};
  bool rw = !f.read_only;
  return {
      {0, str("skade")},
      {1, str(f.version)},
      {2, str("Arrow columnar format 1.5 (IPC metadata V5)")},
      {3, boolean(f.read_only)},
      {4, boolean(true)},
      {5, boolean(false)},
      {8, int32(0)},    // SqlSupportedTransaction NONE: every statement commits on its own
      {9, boolean(true)},
      {10, boolean(rw)},
      {11, boolean(false)},
      {100, int32(f.statement_timeout_ms)},
      {101, int32(0)},
      {500, boolean(false)},
      {501, boolean(rw)},
      {502, boolean(rw)},
      {503, int32(1)},  // identifiers: case insensitive
      {504, str("\"")},
      {505, int32(1)},
      {506, boolean(true)},
      {507, int32(3)},  // NULLs sorted at the end (DuckDB's default order)
      {508, list({"ANTI", "ASOF", "ATTACH", "COLUMNS", "DESCRIBE", "EXCLUDE", "GLOB", "ILIKE", "MACRO", "PIVOT",
                  "POSITIONAL", "QUALIFY", "REPLACE", "SEMI", "SIMILAR", "SUMMARIZE", "UNPIVOT"})},
      {509, list({"abs", "ceil", "floor", "round", "sqrt", "pow", "ln", "log10", "exp", "mod", "sign", "pi",
                  "random", "trunc"})},
      {510, list({"concat", "length", "lower", "upper", "trim", "ltrim", "rtrim", "substring", "replace",
                  "position", "left", "right", "lpad", "rpad", "regexp_matches", "split_part"})},
      {511, list({"current_database", "current_schema", "current_user", "version"})},
      {512, list({"current_date", "current_timestamp", "date_part", "date_trunc", "date_diff", "date_add",
                  "extract", "now", "strftime", "strptime", "make_date", "make_timestamp"})},
      {513, str("\\")},
      {514, str("")},
      {515, boolean(true)},
      {516, boolean(true)},
      {517, convert_map},
      {518, boolean(true)},
      {519, boolean(false)},
      {520, boolean(true)},
      {521, boolean(true)},
      {522, int32(3)},   // GROUP BY unrelated | beyond select
      {523, boolean(true)},
      {524, boolean(true)},
      {525, int32(7)},   // minimum | core | extended grammar
      {526, int32(3)},   // ANSI-92 entry | intermediate
      {527, boolean(false)},
      {528, int32(2)},  // full outer joins
      {529, str("schema")},
      {530, str("procedure")},
      {531, str("catalog")},
      {532, boolean(true)},
      {533, int32(0)},
      {534, int32(0)},
      {535, int32(0)},
      {536, boolean(false)},
      {537, boolean(false)},
      {538, int32(15)},  // subqueries in comparisons, EXISTS, IN, quantified
      {539, boolean(true)},
      {540, int32(3)},   // UNION and UNION ALL
      {541, bigint(0)}, {542, bigint(0)}, {543, bigint(0)}, {544, bigint(0)}, {545, bigint(0)},
      {546, bigint(0)}, {547, bigint(0)}, {548, bigint(0)}, {549, bigint(0)}, {550, bigint(0)},
      {551, bigint(0)}, {552, bigint(0)}, {553, bigint(0)}, {554, bigint(0)}, {555, bigint(0)},
      {556, boolean(true)},
      {557, bigint(0)}, {558, bigint(0)}, {559, bigint(0)}, {560, bigint(0)}, {561, bigint(0)},
      {562, int32(0)},  // no transactions
      {563, boolean(false)},
      {564, int32(0)},
      {565, boolean(false)},
      {566, boolean(false)},
      {567, int32(2)},   // forward only
      {568, int32(0)}, {569, int32(2)}, {570, int32(0)}, {571, int32(0)},
      {572, boolean(false)},
      {573, boolean(false)},
      {574, boolean(false)},
      {575, boolean(false)},
      {576, boolean(false)},
  };
}

Result<arrow::StreamHandle> SqlInfo(const pbsql::CommandGetSqlInfo& cmd, const ServerFacts& facts, bool schema_only) {
  ArrayBuilder b = SqlInfoBuilder();
  if (!schema_only) {
    std::set<uint32_t> wanted(cmd.info().begin(), cmd.info().end());
    ArrayBuilder& value = b.child(1);
    for (const auto& [id, v] : SqlInfoValues(facts)) {
      if (!wanted.empty() && !wanted.count(id)) continue;
      b.AppendStruct();
      b.child(0).AppendInt(id);
      value.AppendUnion(static_cast<int8_t>(v.kind));
      ArrayBuilder& member = value.child(static_cast<size_t>(v.kind));
      switch (v.kind) {
        case InfoValue::kString: member.AppendString(v.s); break;
        case InfoValue::kBool: member.AppendBool(v.b); break;
        case InfoValue::kBigint:
        case InfoValue::kInt32: member.AppendInt(v.i); break;
        case InfoValue::kStringList:
          for (const auto& item : v.list) member.child(0).AppendString(item);
          member.AppendList(static_cast<int64_t>(v.list.size()));
          break;
        case InfoValue::kConvertMap: {
          ArrayBuilder& entries = member.child(0);
          for (const auto& [from, tos] : v.map) {
            entries.AppendStruct();
            entries.child(0).AppendInt(from);
            for (int32_t to : tos) entries.child(1).child(0).AppendInt(to);
            entries.child(1).AppendList(static_cast<int64_t>(tos.size()));
          }
          member.AppendList(static_cast<int64_t>(v.map.size()));
          break;
        }
      }
    }
  }
  return ToStream(b, schema_only);
}

// ---- GetXdbcTypeInfo

struct XdbcType {
  const char* name;
  int32_t data_type;      // XdbcDataType
  int32_t column_size;
  const char* prefix;
  const char* suffix;
  const char* create_params;  // comma-separated, or null
  bool case_sensitive;
  int32_t searchable;     // Searchable
  std::optional<bool> is_unsigned;
  bool fixed_prec_scale;
  std::optional<int32_t> min_scale, max_scale;
  std::optional<int32_t> radix;
  std::optional<int32_t> datetime_subcode;
};

const std::vector<XdbcType>& XdbcTypes() {
  static const std::vector<XdbcType> kTypes = [] {
    std::vector<XdbcType> types = {
      {"BOOLEAN", -7, 1, nullptr, nullptr, nullptr, false, 2, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
      {"TINYINT", -6, 3, nullptr, nullptr, nullptr, false, 2, false, false, 0, 0, 10, std::nullopt},
      {"SMALLINT", 5, 5, nullptr, nullptr, nullptr, false, 2, false, false, 0, 0, 10, std::nullopt},
      {"INTEGER", 4, 10, nullptr, nullptr, nullptr, false, 2, false, false, 0, 0, 10, std::nullopt},
      {"BIGINT", -5, 19, nullptr, nullptr, nullptr, false, 2, false, false, 0, 0, 10, std::nullopt},
      {"FLOAT", 6, 7, nullptr, nullptr, nullptr, false, 2, false, false, std::nullopt, std::nullopt, 2, std::nullopt},
      {"DOUBLE", 8, 15, nullptr, nullptr, nullptr, false, 2, false, false, std::nullopt, std::nullopt, 2, std::nullopt},
      {"DECIMAL", 3, 38, nullptr, nullptr, "precision,scale", false, 2, false, true, 0, 38, 10, std::nullopt},
      {"VARCHAR", 12, 2147483647, "'", "'", nullptr, true, 3, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
      {"BLOB", -3, 2147483647, "'", "'::BLOB", nullptr, false, 0, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
      {"DATE", 91, 10, "DATE '", "'", nullptr, false, 2, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, 1},
      {"TIME", 92, 15, "TIME '", "'", nullptr, false, 2, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt, 2},
      {"TIMESTAMP", 93, 26, "TIMESTAMP '", "'", nullptr, false, 2, std::nullopt, false, 0, 6, std::nullopt, 3},
      {"TIMESTAMP WITH TIME ZONE", 93, 32, "TIMESTAMPTZ '", "'", nullptr, false, 2, std::nullopt, false, 0, 6, std::nullopt, 5},
    };
    // Ordered by data_type, then type name (as JDBC's getTypeInfo is).
    std::sort(types.begin(), types.end(), [](const XdbcType& a, const XdbcType& b) {
      return a.data_type != b.data_type ? a.data_type < b.data_type : std::string_view(a.name) < b.name;
    });
    return types;
  }();
  return kTypes;
}

Result<arrow::StreamHandle> XdbcTypeInfo(const pbsql::CommandGetXdbcTypeInfo& cmd, bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("type_name", false));
  cols.emplace_back("data_type", "i", false);
  cols.emplace_back("column_size", "i", true);
  cols.push_back(Utf8("literal_prefix", true));
  cols.push_back(Utf8("literal_suffix", true));
  cols.emplace_back("create_params", "+l", true, std::vector<ArrayBuilder>{ArrayBuilder("item", "u", false)});
  cols.emplace_back("nullable", "i", false);
  cols.emplace_back("case_sensitive", "b", false);
  cols.emplace_back("searchable", "i", false);
  cols.emplace_back("unsigned_attribute", "b", true);
  cols.emplace_back("fixed_prec_scale", "b", false);
  cols.emplace_back("auto_increment", "b", true);
  cols.push_back(Utf8("local_type_name", true));
  cols.emplace_back("minimum_scale", "i", true);
  cols.emplace_back("maximum_scale", "i", true);
  cols.emplace_back("sql_data_type", "i", false);
  cols.emplace_back("datetime_subcode", "i", true);
  cols.emplace_back("num_prec_radix", "i", true);
  cols.emplace_back("interval_precision", "i", true);
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  auto opt = [](ArrayBuilder& col, const auto& v) {
    if (v) {
      if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, bool>) {
        col.AppendBool(*v);
      } else {
        col.AppendInt(*v);
      }
    } else {
      col.AppendNull();
    }
  };
  if (!schema_only) {
    for (const XdbcType& t : XdbcTypes()) {
      if (cmd.has_data_type() && cmd.data_type() != t.data_type) continue;
      b.AppendStruct();
      b.child(0).AppendString(t.name);
      b.child(1).AppendInt(t.data_type);
      b.child(2).AppendInt(t.column_size);
      t.prefix ? b.child(3).AppendString(t.prefix) : b.child(3).AppendNull();
      t.suffix ? b.child(4).AppendString(t.suffix) : b.child(4).AppendNull();
      if (t.create_params) {
        b.child(5).child(0).AppendString("precision");
        b.child(5).child(0).AppendString("scale");
        b.child(5).AppendList(2);
      } else {
        b.child(5).AppendNull();
      }
      b.child(6).AppendInt(1);  // NULLABILITY_NULLABLE
      b.child(7).AppendBool(t.case_sensitive);
      b.child(8).AppendInt(t.searchable);
      opt(b.child(9), t.is_unsigned);
      b.child(10).AppendBool(t.fixed_prec_scale);
      b.child(11).AppendBool(false);
      b.child(12).AppendString(t.name);
      opt(b.child(13), t.min_scale);
      opt(b.child(14), t.max_scale);
      // sql_data_type is the verbose (ODBC SQL_DESC_TYPE) code: the date/time types share
      // XDBC_DATETIME and are told apart by datetime_subcode (DATE 1, TIME 2, TIMESTAMP 3,
      // TIMESTAMP_WITH_TIMEZONE 5); every other type's verbose code is its concise one.
      const bool datetime = t.data_type == 91 || t.data_type == 92 || t.data_type == 93;
      b.child(15).AppendInt(datetime ? 9 : t.data_type);
      opt(b.child(16), t.datetime_subcode);
      opt(b.child(17), t.radix);
      b.child(18).AppendNull();
    }
  }
  return ToStream(b, schema_only);
}

// ---- catalogs, schemas, tables

Result<arrow::StreamHandle> Catalogs(sql::LakeSql& lake, bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("catalog_name", false));
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  if (!schema_only) {
    b.AppendStruct();
    b.child(0).AppendString(lake.catalog_name());
  }
  return ToStream(b, schema_only);
}

bool CatalogMatches(sql::LakeSql& lake, bool has, const std::string& catalog) {
  return !has || catalog == lake.catalog_name();  // "" = schemas without a catalog: none here
}

Result<arrow::StreamHandle> DbSchemas(const pbsql::CommandGetDbSchemas& cmd, sql::LakeSql& lake, bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("catalog_name", true));
  cols.push_back(Utf8("db_schema_name", false));
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  if (!schema_only && CatalogMatches(lake, cmd.has_catalog(), cmd.catalog())) {
    SKADE_ASSIGN_OR_RETURN(auto namespaces, lake.ListNamespaces());
    for (const auto& ns : namespaces) {
      std::string name = ns.ToString();
      if (cmd.has_db_schema_filter_pattern() && !sql::LikeMatch(cmd.db_schema_filter_pattern(), name)) continue;
      b.AppendStruct();
      b.child(0).AppendString(lake.catalog_name());
      b.child(1).AppendString(name);
    }
  }
  return ToStream(b, schema_only);
}

Result<arrow::StreamHandle> Tables(const pbsql::CommandGetTables& cmd, sql::LakeSql& lake, const ServerFacts& facts,
                                   bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("catalog_name", true));
  cols.push_back(Utf8("db_schema_name", true));
  cols.push_back(Utf8("table_name", false));
  cols.push_back(Utf8("table_type", false));
  if (cmd.include_schema()) cols.emplace_back("table_schema", "z", false);
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  bool tables_wanted = cmd.table_types().empty(), views_wanted = cmd.table_types().empty();
  for (const auto& t : cmd.table_types()) {
    tables_wanted = tables_wanted || t == "TABLE";
    views_wanted = views_wanted || t == "VIEW";
  }
  views_wanted = views_wanted && lake.catalog().SupportsViews();
  if (!schema_only && (tables_wanted || views_wanted) && CatalogMatches(lake, cmd.has_catalog(), cmd.catalog())) {
    SKADE_ASSIGN_OR_RETURN(auto namespaces, lake.ListNamespaces());
    for (const auto& ns : namespaces) {
      std::string schema = ns.ToString();
      if (cmd.has_db_schema_filter_pattern() && !sql::LikeMatch(cmd.db_schema_filter_pattern(), schema)) continue;
      // Ordered by name as FlightSql.proto asks (then by type): tables and views together.
      // A table's entry carries its metadata file when its schema is wanted (the cache's key).
      struct Entry {
        catalog::TableIdent ident;
        bool is_view = false;
        std::string metadata_location;
        bool operator<(const Entry& o) const { return std::tie(ident, is_view) < std::tie(o.ident, o.is_view); }
      };
      std::vector<Entry> entries;
      if (tables_wanted && cmd.include_schema()) {
        SKADE_ASSIGN_OR_RETURN(auto tables, lake.catalog().ListTablePointers(ns));
        for (auto& t : tables) entries.push_back(Entry{std::move(t.ident), false, std::move(t.metadata_location)});
      } else if (tables_wanted) {
        SKADE_ASSIGN_OR_RETURN(auto tables, lake.catalog().ListTables(ns));
        for (auto& t : tables) entries.push_back(Entry{std::move(t), false, {}});
      }
      if (views_wanted) {
        SKADE_ASSIGN_OR_RETURN(auto views, lake.catalog().ListViews(ns));
        for (auto& v : views) entries.push_back(Entry{std::move(v), true, {}});
      }
      std::sort(entries.begin(), entries.end());
      for (const auto& [ident, is_view, metadata_location] : entries) {
        if (cmd.has_table_name_filter_pattern() && !sql::LikeMatch(cmd.table_name_filter_pattern(), ident.name)) continue;
        std::string schema_bytes;
        if (cmd.include_schema() && is_view) {
          SKADE_ASSIGN_OR_RETURN(auto view, lake.catalog().LoadView(ident));
          SKADE_ASSIGN_OR_RETURN(auto annotated, AnnotatedViewSchema(lake.db(), view, lake.catalog_name()));
          SKADE_ASSIGN_OR_RETURN(schema_bytes, SerializeSchema(*annotated.get()));
        } else if (cmd.include_schema()) {
          std::optional<std::string> cached;
          if (facts.schema_cache) cached = facts.schema_cache->Find(ident, metadata_location);
          if (cached) {
            schema_bytes = std::move(*cached);
          } else {
            auto t = lake.LoadTable(ident);
            if (!t.ok() && t.status().code() == StatusCode::kNotFound) continue;  // dropped since the listing
            SKADE_RETURN_IF_ERROR(t.status());
            SKADE_ASSIGN_OR_RETURN(auto annotated, AnnotatedTableSchema(**t, lake.catalog_name(), facts.read_only));
            SKADE_ASSIGN_OR_RETURN(schema_bytes, SerializeSchema(*annotated.get()));
            if (facts.schema_cache) facts.schema_cache->Put(ident, (*t)->metadata_location(), schema_bytes);
          }
        }
        b.AppendStruct();
        b.child(0).AppendString(lake.catalog_name());
        b.child(1).AppendString(schema);
        b.child(2).AppendString(ident.name);
        b.child(3).AppendString(is_view ? "VIEW" : "TABLE");
        if (cmd.include_schema()) b.child(4).AppendString(schema_bytes);
      }
    }
  }
  return ToStream(b, schema_only);
}

Result<arrow::StreamHandle> TableTypes(sql::LakeSql& lake, bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("table_type", false));
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  if (!schema_only) {
    b.AppendStruct();
    b.child(0).AppendString("TABLE");
    if (lake.catalog().SupportsViews()) {
      b.AppendStruct();
      b.child(0).AppendString("VIEW");
    }
  }
  return ToStream(b, schema_only);
}

// The tables a key command names. As FlightSql.proto has it, an omitted catalog or db_schema
// does not narrow the search (every namespace's table of that name, in namespace order) and an
// empty one names those without one (none here). A name no table can have names none.
Result<std::vector<catalog::TableIdent>> KeyTables(sql::LakeSql& lake, bool has_catalog, const std::string& catalog,
                                                   bool has_schema, const std::string& schema,
                                                   const std::string& table) {
  std::vector<catalog::TableIdent> out;
  if (!CatalogMatches(lake, has_catalog, catalog) || table.empty()) return out;
  if (!has_schema) {
    SKADE_ASSIGN_OR_RETURN(auto namespaces, lake.ListNamespaces());
    for (const auto& ns : namespaces) {
      SKADE_ASSIGN_OR_RETURN(auto tables, lake.catalog().ListTables(ns));
      for (auto& t : tables) {
        if (t.name == table) out.push_back(std::move(t));
      }
    }
    return out;
  }
  // A nested namespace is one schema "a.b", as GetDbSchemas and GetTables name it.
  auto ns = sql::LakeSql::NamespaceOf(schema);
  if (!ns.ok()) return out;
  catalog::TableIdent ident{*ns, table};
  if (ident.Validate().ok()) out.push_back(std::move(ident));
  return out;
}

// Iceberg's identifier fields are the closest thing to a primary key (spec "Identifier Field
// IDs": the fields that identify a row), so they answer as one: key_sequence in the order of
// identifier-field-ids, a field nested in a struct by its dotted name. An unknown table is a
// search that finds nothing (an empty result, as JDBC's getPrimaryKeys answers), not an error.
Result<arrow::StreamHandle> PrimaryKeys(const pbsql::CommandGetPrimaryKeys& cmd, sql::LakeSql& lake, bool schema_only) {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("catalog_name", true));
  cols.push_back(Utf8("db_schema_name", true));
  cols.push_back(Utf8("table_name", false));
  cols.push_back(Utf8("column_name", false));
  cols.push_back(Utf8("key_name", true));
  cols.emplace_back("key_sequence", "i", false);
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  if (!schema_only) {
    SKADE_ASSIGN_OR_RETURN(auto idents, KeyTables(lake, cmd.has_catalog(), cmd.catalog(), cmd.has_db_schema(),
                                                  cmd.db_schema(), cmd.table()));
    for (const auto& ident : idents) {
      auto state = lake.catalog().LoadTable(ident);
      if (!state.ok() && state.status().code() == StatusCode::kNotFound) continue;  // dropped, or never there
      if (!state.ok()) return state.status().WithContext("primary keys of " + ident.ToString());
      iceberg::SchemaPtr schema = state->metadata->CurrentSchema();
      if (!schema) continue;
      int32_t sequence = 1;
      for (int id : schema->identifier_field_ids()) {
        std::string column = schema->FindColumnName(id);
        if (column.empty()) continue;  // an id of no field: Schema::Validate refuses such schemas
        b.AppendStruct();
        b.child(0).AppendString(lake.catalog_name());
        b.child(1).AppendString(ident.ns.ToString());
        b.child(2).AppendString(ident.name);
        b.child(3).AppendString(column);
        b.child(4).AppendNull();
        b.child(5).AppendInt(sequence++);
      }
    }
  }
  return ToStream(b, schema_only);
}

// Iceberg has no foreign keys: the key commands answer with their schema and no rows.
Result<arrow::StreamHandle> ForeignKeys() {
  std::vector<ArrayBuilder> cols;
  cols.push_back(Utf8("pk_catalog_name", true));
  cols.push_back(Utf8("pk_db_schema_name", true));
  cols.push_back(Utf8("pk_table_name", false));
  cols.push_back(Utf8("pk_column_name", false));
  cols.push_back(Utf8("fk_catalog_name", true));
  cols.push_back(Utf8("fk_db_schema_name", true));
  cols.push_back(Utf8("fk_table_name", false));
  cols.push_back(Utf8("fk_column_name", false));
  cols.emplace_back("key_sequence", "i", false);
  cols.push_back(Utf8("fk_key_name", true));
  cols.push_back(Utf8("pk_key_name", true));
  cols.emplace_back("update_rule", "C", false);
  cols.emplace_back("delete_rule", "C", false);
  ArrayBuilder b = arrow::RecordBatchBuilder(std::move(cols));
  return ToStream(b, true);
}

// DuckDB-style SQL type name, precision and scale of an Arrow format.
struct TypeFacts {
  std::string name;
  std::optional<int> precision, scale;
};

TypeFacts TypeFactsOf(const ArrowSchema& column);

// The Arrow extension a column carries: "arrow.uuid", "arrow.json", …, or for DuckDB's own types
// (arrow.opaque with {"type_name": …}) that type name.
std::string ExtensionTypeOf(const ArrowSchema& column) {
  if (column.metadata == nullptr) return "";
  auto kv = arrow::DecodeMetadata(column.metadata);
  if (!kv.ok()) return "";
  std::string name, extension_metadata;
  for (const auto& [k, v] : *kv) {
    if (k == "ARROW:extension:name") name = v;
    if (k == "ARROW:extension:metadata") extension_metadata = v;
  }
  if (name != "arrow.opaque") return name;
  auto parsed = ParseJson(extension_metadata, "extension metadata").ValueOr(nlohmann::json());
  if (parsed.is_object() && parsed.contains("type_name") && parsed["type_name"].is_string()) {
    return parsed["type_name"].get<std::string>();
  }
  return name;
}

// A UNION member's name as a type spelling writes it: plain when it is a simple identifier,
// else quoted (DuckDB also quotes keywords; its own spelling, when known, is used instead).
std::string MemberName(std::string_view name) {
  const bool simple = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                      std::all_of(name.begin(), name.end(), [](char c) {
                        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                      });
  return simple ? std::string(name) : engine::QuoteIdentifier(name);
}

TypeFacts TypeFactsOf(const ArrowSchema& column) {
  const std::string_view f = column.format;
  const std::string extension = ExtensionTypeOf(column);
  if (extension == "arrow.uuid") return {"UUID", std::nullopt, std::nullopt};
  if (extension == "arrow.json") return {"JSON", std::nullopt, std::nullopt};
  if (extension == "arrow.bool8") return {"BOOLEAN", 1, std::nullopt};
  if (extension == "hugeint") return {"HUGEINT", 39, 0};
  if (extension == "uhugeint") return {"UHUGEINT", 39, 0};
  if (extension == "time_tz") return {"TIME WITH TIME ZONE", 15, 6};
  if (extension == "bit") return {"BIT", std::nullopt, std::nullopt};
  if (extension == "bignum") return {"BIGNUM", std::nullopt, std::nullopt};
  // DuckDB exports an ENUM as a dictionary of strings; the column holds indices.
  if (column.dictionary != nullptr) return {"ENUM", std::nullopt, std::nullopt};
  if (f == "b") return {"BOOLEAN", 1, std::nullopt};
  if (f == "c") return {"TINYINT", 3, 0};
  if (f == "s") return {"SMALLINT", 5, 0};
  if (f == "i") return {"INTEGER", 10, 0};
  if (f == "l") return {"BIGINT", 19, 0};
  if (f == "C") return {"UTINYINT", 3, 0};
  if (f == "S") return {"USMALLINT", 5, 0};
  if (f == "I") return {"UINTEGER", 10, 0};
  if (f == "L") return {"UBIGINT", 20, 0};
  if (f == "e") return {"FLOAT", 3, std::nullopt};
  if (f == "f") return {"FLOAT", 7, std::nullopt};
  if (f == "g") return {"DOUBLE", 15, std::nullopt};
  if (f == "u" || f == "U" || f == "vu") return {"VARCHAR", std::nullopt, std::nullopt};
  if (f == "z" || f == "Z" || f == "vz") return {"BLOB", std::nullopt, std::nullopt};
  if (f == "tdD" || f == "tdm") return {"DATE", 10, std::nullopt};
  if (f.starts_with("tt")) return {"TIME", 15, 6};
  if (f.starts_with("ts")) return {f.size() > 4 ? "TIMESTAMP WITH TIME ZONE" : "TIMESTAMP", 26, 6};
  if (f.starts_with("ti")) return {"INTERVAL", std::nullopt, std::nullopt};
  if (f.starts_with("tD")) return {"INTERVAL", std::nullopt, std::nullopt};
  if (f.starts_with("d:")) {
    int p = 0, s = 0;
    std::sscanf(std::string(f).c_str(), "d:%d,%d", &p, &s);
    return {"DECIMAL(" + std::to_string(p) + "," + std::to_string(s) + ")", p, s};
  }
  if (f.starts_with("w:")) return {"BLOB", std::nullopt, std::nullopt};
  if (f.starts_with("+w:") && column.n_children == 1) {  // DuckDB's ARRAY: element type[N]
    return {TypeFactsOf(*column.children[0]).name + "[" + std::string(f.substr(3)) + "]", std::nullopt, std::nullopt};
  }
  if ((f == "+l" || f == "+L" || f == "+vl" || f == "+vL") && column.n_children == 1) {
    return {TypeFactsOf(*column.children[0]).name + "[]", std::nullopt, std::nullopt};
  }
  if (f == "+s") return {"STRUCT", std::nullopt, std::nullopt};
  if (f == "+m") return {"MAP", std::nullopt, std::nullopt};
  if (f.starts_with("+u")) {  // DuckDB's UNION: a sparse union whose children are its members
    std::string name = "UNION(";
    for (int64_t i = 0; i < column.n_children; ++i) {
      const ArrowSchema& member = *column.children[i];
      name += (i == 0 ? "" : ", ") + MemberName(member.name ? member.name : "") + " " + TypeFactsOf(member).name;
    }
    return {name + ")", std::nullopt, std::nullopt};
  }
  if (f == "n") return {"NULL", std::nullopt, std::nullopt};
  return {"UNKNOWN", std::nullopt, std::nullopt};
}

}  // namespace

namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Whether `sql_type` (DuckDB's spelling) names a type of `column`'s kind: a statement whose
// result types follow its bound parameters may have another type than DESCRIBE gave.
bool SpellsKindOf(const ArrowSchema& column, std::string_view sql_type) {
  if (sql_type.size() > kMaxSqlTypeBytes) return false;
  if (column.dictionary != nullptr) return sql_type.starts_with("ENUM(");
  return std::string_view(column.format).starts_with("+u") && sql_type.starts_with("UNION(");
}

// TYPE_NAME, IS_NULLABLE, PRECISION and SCALE of one column; `sql_type` is DuckDB's spelling of
// its type, if known.
KeyValues TypeMetadata(const ArrowSchema& column, bool nullable, std::string_view sql_type = {}) {
  TypeFacts facts = TypeFactsOf(column);
  if (NeedsSqlType(column) && SpellsKindOf(column, sql_type)) facts.name = std::string(sql_type);
  KeyValues kv = {
      {"ARROW:FLIGHT:SQL:TYPE_NAME", facts.name},
      {"ARROW:FLIGHT:SQL:IS_NULLABLE", nullable ? "1" : "0"},
  };
  if (facts.precision) kv.emplace_back("ARROW:FLIGHT:SQL:PRECISION", std::to_string(*facts.precision));
  if (facts.scale) kv.emplace_back("ARROW:FLIGHT:SQL:SCALE", std::to_string(*facts.scale));
  return kv;
}

}  // namespace

namespace {

// `base` (the Arrow schema DuckDB gives the Iceberg schema `iceberg_schema` of the table or view
// `ident`) with the Flight SQL column metadata.
arrow::SchemaHandle AnnotatedSchema(const ArrowSchema& base_schema, const iceberg::Schema& iceberg_schema,
                                    const std::string& catalog_name, const catalog::TableIdent& ident, bool read_only) {
  const ArrowSchema* base = &base_schema;
  std::vector<KeyValues> meta;
  std::vector<bool> required;
  for (int64_t i = 0; i < base->n_children; ++i) {
    const ArrowSchema& child = *base->children[i];
    const auto* field = iceberg_schema.FindFieldByName(child.name ? child.name : "");
    required.push_back(field != nullptr && field->required);
    bool nullable = field ? !field->required : (child.flags & ARROW_FLAG_NULLABLE) != 0;
    KeyValues kv = {
        {"ARROW:FLIGHT:SQL:CATALOG_NAME", catalog_name},
        {"ARROW:FLIGHT:SQL:SCHEMA_NAME", ident.ns.ToString()},     // what Arrow's libraries read
        {"ARROW:FLIGHT:SQL:DB_SCHEMA_NAME", ident.ns.ToString()},  // the name FlightSql.proto gives
        {"ARROW:FLIGHT:SQL:TABLE_NAME", ident.name},
    };
    KeyValues type = TypeMetadata(child, nullable);
    kv.insert(kv.end(), type.begin(), type.end());
    bool is_text = TypeFactsOf(child).name == "VARCHAR";
    kv.insert(kv.end(), {{"ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT", "0"},
                         {"ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE", is_text ? "1" : "0"},
                         {"ARROW:FLIGHT:SQL:IS_READ_ONLY", read_only ? "1" : "0"},
                         {"ARROW:FLIGHT:SQL:IS_SEARCHABLE", "1"}});
    meta.push_back(std::move(kv));
  }
  ArrowSchema out;
  arrow::CopySchema(*base, &out, &meta);
  // Nullability as the Iceberg schema says (required columns are not nullable).
  for (int64_t i = 0; i < out.n_children; ++i) {
    if (required[i]) out.children[i]->flags &= ~ARROW_FLAG_NULLABLE;
  }
  return arrow::SchemaHandle(&out);
}

}  // namespace

Result<arrow::SchemaHandle> AnnotatedTableSchema(table::Table& table, const std::string& catalog_name, bool read_only) {
  SKADE_ASSIGN_OR_RETURN(arrow::SchemaHandle base, table.ArrowSchema());
  return AnnotatedSchema(*base.get(), *table.metadata().CurrentSchema(), catalog_name, table.ident(), read_only);
}

Result<arrow::SchemaHandle> AnnotatedViewSchema(engine::Database& db, const catalog::ViewState& view,
                                                const std::string& catalog_name) {
  iceberg::SchemaPtr schema = view.metadata->CurrentSchema();
  if (!schema) return Status::Corruption("view " + view.ident.ToString() + " has no current schema");
  // The Arrow schema of a relation of the view's columns, as for a table.
  SKADE_ASSIGN_OR_RETURN(arrow::SchemaHandle base, engine::RelationArrowSchema(db, schema));
  return AnnotatedSchema(*base.get(), *schema, catalog_name, view.ident, true);
}

bool NeedsSqlType(const ArrowSchema& column) {
  return column.dictionary != nullptr || std::string_view(column.format).starts_with("+u");
}

void AnnotateResultSchema(const ArrowSchema& schema, ArrowSchema* out, const ResultColumns& columns) {
  std::vector<KeyValues> meta;
  const std::vector<bool>& required = columns.required;
  const bool traced = static_cast<int64_t>(required.size()) == schema.n_children;
  const bool spelled = static_cast<int64_t>(columns.sql_types.size()) == schema.n_children;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    const ArrowSchema& child = *schema.children[i];
    const bool nullable = (child.flags & ARROW_FLAG_NULLABLE) != 0 && !(traced && required[i]);
    meta.push_back(TypeMetadata(child, nullable, spelled ? std::string_view(columns.sql_types[i]) : ""));
  }
  arrow::CopySchema(schema, out, &meta);
  if (!traced) return;
  for (int64_t i = 0; i < out->n_children; ++i) {
    if (required[i]) out->children[i]->flags &= ~ARROW_FLAG_NULLABLE;
  }
}

std::string TableSchemaCache::Key(const catalog::TableIdent& ident, const std::string& metadata_location) {
  // Names hold no NUL (TableIdent::Validate), so the parts cannot run into each other.
  std::string key = metadata_location;
  for (const std::string& level : ident.ns.levels) key.append(1, '\0').append(level);
  key.append(1, '\0').append(1, '\0').append(ident.name);
  return key;
}

std::optional<std::string> TableSchemaCache::Find(const catalog::TableIdent& ident,
                                                  const std::string& metadata_location) {
  const std::string key = Key(ident, metadata_location);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = bytes_.find(key);
  if (it == bytes_.end()) return std::nullopt;
  return it->second;
}

void TableSchemaCache::Put(const catalog::TableIdent& ident, const std::string& metadata_location,
                           std::string schema_bytes) {
  std::string key = Key(ident, metadata_location);
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_.size() >= kMaxEntries) bytes_.clear();
  bytes_[std::move(key)] = std::move(schema_bytes);
}

Result<std::string> SerializeSchema(const ArrowSchema& schema) {
  SKADE_ASSIGN_OR_RETURN(auto encoder, arrow::ipc::StreamEncoder::Make(schema));
  return encoder->SchemaMessage().ToString();
}

bool IsFlightSqlCommand(const google::protobuf::Any& any, std::string_view name) {
  return any.type_url().size() == kFlightSqlTypePrefix.size() + name.size() &&
         any.type_url().compare(0, kFlightSqlTypePrefix.size(), kFlightSqlTypePrefix) == 0 &&
         any.type_url().compare(kFlightSqlTypePrefix.size(), std::string::npos, name) == 0;
}

bool IsMetadataCommand(const google::protobuf::Any& c) {
  for (std::string_view n : {"CommandGetSqlInfo", "CommandGetXdbcTypeInfo", "CommandGetCatalogs", "CommandGetDbSchemas",
                             "CommandGetTables", "CommandGetTableTypes", "CommandGetPrimaryKeys",
                             "CommandGetExportedKeys", "CommandGetImportedKeys", "CommandGetCrossReference"}) {
    if (IsFlightSqlCommand(c, n)) return true;
  }
  return false;
}

Result<arrow::StreamHandle> MetadataResult(const google::protobuf::Any& c, sql::LakeSql& lake, const ServerFacts& facts,
                                           bool schema_only) {
  if (IsFlightSqlCommand(c, "CommandGetSqlInfo")) {
    SKADE_ASSIGN_OR_RETURN(auto cmd, Unpack<pbsql::CommandGetSqlInfo>(c, "CommandGetSqlInfo"));
    return SqlInfo(cmd, facts, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetXdbcTypeInfo")) {
    SKADE_ASSIGN_OR_RETURN(auto cmd, Unpack<pbsql::CommandGetXdbcTypeInfo>(c, "CommandGetXdbcTypeInfo"));
    return XdbcTypeInfo(cmd, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetCatalogs")) {
    SKADE_RETURN_IF_ERROR(Unpack<pbsql::CommandGetCatalogs>(c, "CommandGetCatalogs"));
    return Catalogs(lake, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetDbSchemas")) {
    SKADE_ASSIGN_OR_RETURN(auto cmd, Unpack<pbsql::CommandGetDbSchemas>(c, "CommandGetDbSchemas"));
    return DbSchemas(cmd, lake, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetTables")) {
    SKADE_ASSIGN_OR_RETURN(auto cmd, Unpack<pbsql::CommandGetTables>(c, "CommandGetTables"));
    return Tables(cmd, lake, facts, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetTableTypes")) {
    SKADE_RETURN_IF_ERROR(Unpack<pbsql::CommandGetTableTypes>(c, "CommandGetTableTypes"));
    return TableTypes(lake, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetPrimaryKeys")) {
    SKADE_ASSIGN_OR_RETURN(auto cmd, Unpack<pbsql::CommandGetPrimaryKeys>(c, "CommandGetPrimaryKeys"));
    return PrimaryKeys(cmd, lake, schema_only);
  }
  if (IsFlightSqlCommand(c, "CommandGetExportedKeys")) {
    SKADE_RETURN_IF_ERROR(Unpack<pbsql::CommandGetExportedKeys>(c, "CommandGetExportedKeys"));
    return ForeignKeys();
  }
  if (IsFlightSqlCommand(c, "CommandGetImportedKeys")) {
    SKADE_RETURN_IF_ERROR(Unpack<pbsql::CommandGetImportedKeys>(c, "CommandGetImportedKeys"));
    return ForeignKeys();
  }
  if (IsFlightSqlCommand(c, "CommandGetCrossReference")) {
    SKADE_RETURN_IF_ERROR(Unpack<pbsql::CommandGetCrossReference>(c, "CommandGetCrossReference"));
    return ForeignKeys();
  }
  return Status::InvalidArgument("not a metadata command: " + c.type_url());
}


}  // namespace skade::flightsql
