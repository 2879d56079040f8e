#include "skade/engine/duck_types_internal.h"

#include "skade/engine/database.h"

namespace skade::engine {
namespace {

// Owns a logical type handed out by the C API.
struct OwnedType {
  duckdb_logical_type type;
  ~OwnedType() {
    if (type) duckdb_destroy_logical_type(&type);
  }
};

// Owns a string handed out by the C API.
std::string TakeString(char* s) {
  std::string out = s ? s : "";
  if (s) duckdb_free(s);
  return out;
}

const char* ScalarSpelling(duckdb_type id) {
  switch (id) {
    case DUCKDB_TYPE_BOOLEAN: return "BOOLEAN";
    case DUCKDB_TYPE_TINYINT: return "TINYINT";
    case DUCKDB_TYPE_SMALLINT: return "SMALLINT";
    case DUCKDB_TYPE_INTEGER: return "INTEGER";
    case DUCKDB_TYPE_BIGINT: return "BIGINT";
    case DUCKDB_TYPE_UTINYINT: return "UTINYINT";
    case DUCKDB_TYPE_USMALLINT: return "USMALLINT";
    case DUCKDB_TYPE_UINTEGER: return "UINTEGER";
    case DUCKDB_TYPE_UBIGINT: return "UBIGINT";
    case DUCKDB_TYPE_FLOAT: return "FLOAT";
    case DUCKDB_TYPE_DOUBLE: return "DOUBLE";
    case DUCKDB_TYPE_TIMESTAMP: return "TIMESTAMP";
    case DUCKDB_TYPE_DATE: return "DATE";
    case DUCKDB_TYPE_TIME: return "TIME";
    case DUCKDB_TYPE_INTERVAL: return "INTERVAL";
    case DUCKDB_TYPE_HUGEINT: return "HUGEINT";
    case DUCKDB_TYPE_UHUGEINT: return "UHUGEINT";
    case DUCKDB_TYPE_VARCHAR: return "VARCHAR";
    case DUCKDB_TYPE_BLOB: return "BLOB";
    case DUCKDB_TYPE_TIMESTAMP_S: return "TIMESTAMP_S";
    case DUCKDB_TYPE_TIMESTAMP_MS: return "TIMESTAMP_MS";
    case DUCKDB_TYPE_TIMESTAMP_NS: return "TIMESTAMP_NS";
    case DUCKDB_TYPE_ENUM: return "ENUM";
    case DUCKDB_TYPE_UUID: return "UUID";
    case DUCKDB_TYPE_BIT: return "BIT";
    case DUCKDB_TYPE_TIME_TZ: return "TIME WITH TIME ZONE";
    case DUCKDB_TYPE_TIMESTAMP_TZ: return "TIMESTAMP WITH TIME ZONE";
    case DUCKDB_TYPE_BIGNUM: return "BIGNUM";
    case DUCKDB_TYPE_SQLNULL: return "NULL";
    case DUCKDB_TYPE_TIME_NS: return "TIME_NS";
    default: return nullptr;
  }
}

// A field name inside STRUCT(…)/UNION(…): quoted unless a plain lower-case identifier.
std::string FieldName(const std::string& name) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) plain = plain && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  return plain ? name : QuoteIdentifier(name);
}

}  // namespace

std::string DuckTypeSpelling(duckdb_logical_type type) {
  if (std::string alias = TakeString(duckdb_logical_type_get_alias(type)); !alias.empty()) return alias;
  const duckdb_type id = duckdb_get_type_id(type);
  if (const char* scalar = ScalarSpelling(id)) return scalar;
  switch (id) {
    case DUCKDB_TYPE_DECIMAL:
      return "DECIMAL(" + std::to_string(duckdb_decimal_width(type)) + "," +
             std::to_string(duckdb_decimal_scale(type)) + ")";
    case DUCKDB_TYPE_LIST: {
      OwnedType child{duckdb_list_type_child_type(type)};
      return DuckTypeSpelling(child.type) + "[]";
    }
    case DUCKDB_TYPE_ARRAY: {
      OwnedType child{duckdb_array_type_child_type(type)};
      return DuckTypeSpelling(child.type) + "[" + std::to_string(duckdb_array_type_array_size(type)) + "]";
    }
    case DUCKDB_TYPE_MAP: {
      OwnedType key{duckdb_map_type_key_type(type)};
      OwnedType value{duckdb_map_type_value_type(type)};
      return "MAP(" + DuckTypeSpelling(key.type) + ", " + DuckTypeSpelling(value.type) + ")";
    }
    case DUCKDB_TYPE_STRUCT: {
      std::string out = "STRUCT(";
      const idx_t n = duckdb_struct_type_child_count(type);
      for (idx_t i = 0; i < n; ++i) {
        OwnedType child{duckdb_struct_type_child_type(type, i)};
        out += (i ? ", " : "") + FieldName(TakeString(duckdb_struct_type_child_name(type, i))) + " " +
               DuckTypeSpelling(child.type);
      }
      return out + ")";
    }
    case DUCKDB_TYPE_UNION: {
      std::string out = "UNION(";
      const idx_t n = duckdb_union_type_member_count(type);
      for (idx_t i = 0; i < n; ++i) {
        OwnedType member{duckdb_union_type_member_type(type, i)};
        out += (i ? ", " : "") + FieldName(TakeString(duckdb_union_type_member_name(type, i))) + " " +
               DuckTypeSpelling(member.type);
      }
      return out + ")";
    }
    default:
      return "UNKNOWN";
  }
}

}  // namespace skade::engine
