#include "skade/engine/schema_convert.h"

#include <algorithm>
#include <cctype>

#include "skade/arrow/builder.h"
#include "skade/engine/iceberg_scan.h"

namespace skade::engine {
namespace {

using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;
using iceberg::TypePtr;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A recursive-descent reader of DuckDB type names.
class TypeParser {
 public:
  TypeParser(std::string_view text, int* next_id) : text_(text), next_id_(next_id) {}

  Result<TypePtr> ParseAll() {
    SKADE_ASSIGN_OR_RETURN(TypePtr t, ParseType());
    SkipSpace();
    if (pos_ != text_.size()) return Bad("unexpected text");
    return t;
  }

 private:
  Status Bad(std::string_view what) const {
    return Status::InvalidArgument("cannot read DuckDB type '" + std::string(text_) + "': " + std::string(what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  // A word or a quoted identifier.
  Result<std::string> Name() {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '"') {
      std::string out;
      ++pos_;
      while (pos_ < text_.size()) {
        if (text_[pos_] == '"') {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
            out += '"';
            pos_ += 2;
            continue;
          }
          ++pos_;
          return out;
        }
        out += text_[pos_++];
      }
      return Bad("unterminated quoted name");
    }
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) return Bad("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  Result<int> Number() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 6) return Bad("expected a number");
    return std::stoi(std::string(text_.substr(start, pos_ - start)));
  }

  Result<TypePtr> ParseType() {
    SKADE_ASSIGN_OR_RETURN(TypePtr t, ParseBase());
    // Trailing [] makes lists (possibly nested: INTEGER[][]); [N] arrays too.
    while (true) {
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '[') {
        ++pos_;
        SkipSpace();
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        if (!Consume(']')) return Bad("expected ]");
        t = Type::List((*next_id_)++, t, false);
        continue;
      }
      return t;
    }
  }

  Result<TypePtr> ParseBase() {
    SKADE_ASSIGN_OR_RETURN(std::string word, Name());
    std::string w = Upper(word);
    // Multi-word names.
    if (w == "TIMESTAMP" || w == "TIME") {
      size_t save = pos_;
      SkipSpace();
      std::string rest = Upper(text_.substr(pos_, 14));
      if (rest.rfind("WITH TIME ZONE", 0) == 0) {
        pos_ += 14;
        return Type::Primitive(w == "TIMESTAMP" ? TypeId::kTimestampTz : TypeId::kTime);
      }
      pos_ = save;
    }
    if (w == "DOUBLE") {
      size_t save = pos_;
      SkipSpace();
      if (Upper(text_.substr(pos_, 9)) == "PRECISION") {
        pos_ += 9;
      } else {
        pos_ = save;
      }
    }
    if (w == "BOOLEAN" || w == "BOOL") return Type::Primitive(TypeId::kBoolean);
    if (w == "TINYINT" || w == "SMALLINT" || w == "INTEGER" || w == "INT" || w == "UTINYINT" ||
        w == "USMALLINT" || w == "INT4" || w == "INT2" || w == "INT1") {
      return Type::Primitive(TypeId::kInt);
    }
    if (w == "BIGINT" || w == "UINTEGER" || w == "INT8" || w == "LONG") return Type::Primitive(TypeId::kLong);
    if (w == "HUGEINT") return Type::Decimal(38, 0);
    if (w == "FLOAT" || w == "REAL" || w == "FLOAT4") return Type::Primitive(TypeId::kFloat);
    if (w == "DOUBLE" || w == "FLOAT8") return Type::Primitive(TypeId::kDouble);
    if (w == "DECIMAL" || w == "NUMERIC") {
      int p = 18, s = 3;  // DuckDB's default DECIMAL
      if (Consume('(')) {
        SKADE_ASSIGN_OR_RETURN(p, Number());
        s = 0;
        if (Consume(',')) {
          SKADE_ASSIGN_OR_RETURN(s, Number());
        }
        if (!Consume(')')) return Bad("expected )");
      }
      if (p < 1 || p > 38 || s > p) return Bad("invalid decimal precision/scale");
      return Type::Decimal(p, s);
    }
    if (w == "DATE") return Type::Primitive(TypeId::kDate);
    if (w == "TIME") return Type::Primitive(TypeId::kTime);
    if (w == "TIMESTAMP" || w == "DATETIME" || w == "TIMESTAMP_MS" || w == "TIMESTAMP_S" || w == "TIMESTAMP_US") {
      return Type::Primitive(TypeId::kTimestamp);
    }
    if (w == "TIMESTAMPTZ") return Type::Primitive(TypeId::kTimestampTz);
    if (w == "TIMESTAMP_NS") return Type::Primitive(TypeId::kTimestampNs);
    if (w == "VARCHAR" || w == "TEXT" || w == "STRING" || w == "CHAR" || w == "BPCHAR" || w == "JSON") {
      if (Consume('(')) {  // VARCHAR(n): length is not kept
        SKADE_RETURN_IF_ERROR(Number());
        if (!Consume(')')) return Bad("expected )");
      }
      return Type::Primitive(TypeId::kString);
    }
    if (w == "UUID") return Type::Primitive(TypeId::kUuid);
    if (w == "BLOB" || w == "BYTEA" || w == "VARBINARY" || w == "BINARY") return Type::Primitive(TypeId::kBinary);
    if (w == "ENUM") {
      // ENUM('a', 'b'): stored as strings.
      int depth = 0;
      SkipSpace();
      while (pos_ < text_.size()) {
        char c = text_[pos_++];
        if (c == '(') ++depth;
        if (c == ')' && --depth == 0) break;
      }
      return Type::Primitive(TypeId::kString);
    }
    if (w == "STRUCT") {
      if (!Consume('(')) return Bad("expected ( after STRUCT");
      std::vector<std::pair<std::string, TypePtr>> children;
      std::vector<int> ids;
      do {
        SKADE_ASSIGN_OR_RETURN(std::string name, Name());
        ids.push_back((*next_id_)++);
        SKADE_ASSIGN_OR_RETURN(TypePtr t, ParseType());
        children.emplace_back(name, t);
      } while (Consume(','));
      if (!Consume(')')) return Bad("expected ) after STRUCT fields");
      std::vector<NestedField> fields;
      for (size_t i = 0; i < children.size(); ++i) {
        fields.push_back(NestedField{ids[i], children[i].first, false, children[i].second, "", {}, {}});
      }
      return Type::Struct(std::move(fields));
    }
    if (w == "MAP") {
      if (!Consume('(')) return Bad("expected ( after MAP");
      int key_id = (*next_id_)++;
      int value_id = (*next_id_)++;
      SKADE_ASSIGN_OR_RETURN(TypePtr k, ParseType());
      if (!Consume(',')) return Bad("expected , in MAP");
      SKADE_ASSIGN_OR_RETURN(TypePtr v, ParseType());
      if (!Consume(')')) return Bad("expected ) after MAP");
      return Type::Map(key_id, k, value_id, v, false);
    }
    if (w == "UBIGINT" || w == "UHUGEINT") return Type::Decimal(38, 0);
    return Bad("type " + word + " has no Iceberg equivalent");
  }

  std::string_view text_;
  size_t pos_ = 0;
  int* next_id_;
};

// Columns → schema: top-level ids 1..n first, nested ids after (as Iceberg assigns).
Result<iceberg::SchemaPtr> FromColumns(const std::vector<ColumnDefinition>& columns,
                                       const std::vector<std::string>& identifier_columns) {
  std::vector<NestedField> fields;
  std::vector<int> identifier_ids;
  int next_id = static_cast<int>(columns.size()) + 1;
  int top = 1;
  for (const ColumnDefinition& c : columns) {
    NestedField f;
    f.id = top++;
    f.name = c.name;
    SKADE_ASSIGN_OR_RETURN(f.type, IcebergTypeFromDuck(c.type, &next_id).WithContext("column '" + f.name + "'"));
    f.required = c.not_null;
    fields.push_back(std::move(f));
  }
  if (fields.empty()) return Status::InvalidArgument("no columns");
  for (const std::string& name : identifier_columns) {
    auto it = std::find_if(fields.begin(), fields.end(), [&](const NestedField& f) { return f.name == name; });
    if (it == fields.end()) return Status::InvalidArgument("key column '" + name + "' does not exist");
    identifier_ids.push_back(it->id);
  }
  auto schema = std::make_shared<const iceberg::Schema>(0, std::move(fields), std::move(identifier_ids));
  SKADE_RETURN_IF_ERROR(schema->Validate());
  return iceberg::SchemaPtr(schema);
}

// DESCRIBE rows (column_name, column_type, null) → columns.
Result<std::vector<ColumnDefinition>> ColumnsOfDescribe(const std::vector<TextRow>& rows) {
  std::vector<ColumnDefinition> out;
  for (const TextRow& r : rows) {
    if (r.size() < 3 || !r[0] || !r[1]) return Status::Internal("unexpected DESCRIBE row");
    out.push_back(ColumnDefinition{*r[0], *r[1], r[2] && *r[2] == "NO"});
  }
  return out;
}

}  // namespace

// The DuckDB name of each Iceberg type, nested ones spelled out with quoted field names.
Result<std::string> DuckTypeName(const Type& type) {
  switch (type.id()) {
    case TypeId::kBoolean: return std::string("BOOLEAN");
    case TypeId::kInt: return std::string("INTEGER");
    case TypeId::kLong: return std::string("BIGINT");
    case TypeId::kFloat: return std::string("FLOAT");
    case TypeId::kDouble: return std::string("DOUBLE");
    case TypeId::kDecimal:
      return "DECIMAL(" + std::to_string(type.precision()) + "," + std::to_string(type.scale()) + ")";
    case TypeId::kDate: return std::string("DATE");
    case TypeId::kTime: return std::string("TIME");
    case TypeId::kTimestamp: return std::string("TIMESTAMP");
    case TypeId::kTimestampTz: return std::string("TIMESTAMP WITH TIME ZONE");
    case TypeId::kTimestampNs: return std::string("TIMESTAMP_NS");
    // DuckDB has no nanosecond TIMESTAMPTZ; values are UTC instants, read at ns precision.
    case TypeId::kTimestampTzNs: return std::string("TIMESTAMP_NS");
    case TypeId::kString: return std::string("VARCHAR");
    case TypeId::kUuid: return std::string("UUID");
    case TypeId::kFixed:
    case TypeId::kBinary: return std::string("BLOB");
    case TypeId::kUnknown: return std::string("INTEGER");  // always null
    case TypeId::kStruct: {
      std::string out = "STRUCT(";
      for (size_t i = 0; i < type.fields().size(); ++i) {
        if (i) out += ", ";
        SKADE_ASSIGN_OR_RETURN(std::string t, DuckTypeName(*type.fields()[i].type));
        out += QuoteIdentifier(type.fields()[i].name) + " " + t;
      }
      return out + ")";
    }
    case TypeId::kList: {
      SKADE_ASSIGN_OR_RETURN(std::string t, DuckTypeName(*type.element().type));
      return t + "[]";
    }
    case TypeId::kMap: {
      SKADE_ASSIGN_OR_RETURN(std::string k, DuckTypeName(*type.key().type));
      SKADE_ASSIGN_OR_RETURN(std::string v, DuckTypeName(*type.value().type));
      return "MAP(" + k + ", " + v + ")";
    }
    default:
      return Status::NotImplemented("type " + type.ToString() + " is not readable by skade yet");
  }
}

namespace {

// The Arrow field DuckDB exports for a column of `type` named `name`; nullopt where this does
// not know it. Every field is nullable as DuckDB exports it (callers apply Iceberg's required).
std::optional<arrow::ArrayBuilder> ArrowField(const std::string& name, const Type& type, bool nullable = true) {
  auto leaf = [&](std::string format) {
    return std::optional<arrow::ArrayBuilder>(arrow::ArrayBuilder(name, std::move(format), nullable));
  };
  switch (type.id()) {
    case TypeId::kBoolean: return leaf("b");
    case TypeId::kInt: return leaf("i");
    case TypeId::kLong: return leaf("l");
    case TypeId::kFloat: return leaf("f");
    case TypeId::kDouble: return leaf("g");
    // DuckDB exports every decimal as a 128-bit one.
    case TypeId::kDecimal:
      return leaf("d:" + std::to_string(type.precision()) + "," + std::to_string(type.scale()) + ",128");
    case TypeId::kDate: return leaf("tdD");
    case TypeId::kTime: return leaf("ttu");
    case TypeId::kTimestamp: return leaf("tsu:");
    case TypeId::kTimestampTz: return leaf("tsu:UTC");
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs: return leaf("tsn:");
    case TypeId::kString: return leaf("u");
    case TypeId::kFixed:
    case TypeId::kBinary: return leaf("z");
    case TypeId::kStruct: {
      std::vector<arrow::ArrayBuilder> children;
      for (const auto& f : type.fields()) {
        auto child = ArrowField(f.name, *f.type);
        if (!child) return std::nullopt;
        children.push_back(std::move(*child));
      }
      return arrow::ArrayBuilder(name, "+s", nullable, std::move(children));
    }
    case TypeId::kList: {
      auto element = ArrowField("l", *type.element().type);
      if (!element) return std::nullopt;
      std::vector<arrow::ArrayBuilder> children;
      children.push_back(std::move(*element));
      return arrow::ArrayBuilder(name, "+l", nullable, std::move(children));
    }
    case TypeId::kMap: {
      const TypeId key_id = type.key().type->id();
      if (key_id == TypeId::kStruct || key_id == TypeId::kList || key_id == TypeId::kMap) {
        return std::nullopt;  // nested keys: DuckDB's to tell
      }
      auto key = ArrowField("key", *type.key().type, false);
      auto value = ArrowField("value", *type.value().type);
      if (!key || !value) return std::nullopt;
      std::vector<arrow::ArrayBuilder> kv;
      kv.push_back(std::move(*key));
      kv.push_back(std::move(*value));
      std::vector<arrow::ArrayBuilder> entries;
      entries.push_back(arrow::ArrayBuilder("entries", "+s", false, std::move(kv)));
      return arrow::ArrayBuilder(name, "+m", nullable, std::move(entries));
    }
    default:
      return std::nullopt;  // UUID, unknown, v3's variant and geo types
  }
}

}  // namespace

std::optional<arrow::SchemaHandle> DirectArrowSchema(const iceberg::Schema& schema) {
  std::vector<arrow::ArrayBuilder> columns;
  for (const auto& f : schema.fields()) {
    auto column = ArrowField(f.name, *f.type);
    if (!column) return std::nullopt;
    columns.push_back(std::move(*column));
  }
  // The top-level struct under the name DuckDB gives its results.
  arrow::ArrayBuilder batch("duckdb_query_result", "+s", false, std::move(columns));
  ArrowSchema out;
  ArrowArray empty;
  if (!batch.Finish(&out, &empty).ok()) return std::nullopt;
  empty.release(&empty);
  return arrow::SchemaHandle(&out);
}

Result<arrow::SchemaHandle> RelationArrowSchema(Database& db, const iceberg::SchemaPtr& schema) {
  if (!schema) return Status::InvalidArgument("no schema");
  if (auto direct = DirectArrowSchema(*schema)) return std::move(*direct);
  IcebergScan empty;
  empty.schema = schema;
  SKADE_ASSIGN_OR_RETURN(std::string sql, BuildTableSql(db, empty));
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, db.QueryArrow(sql));
  arrow::SchemaHandle out;
  if (stream->get_schema(stream.get(), out.get()) != 0) {
    const char* e = stream->get_last_error(stream.get());
    return Status::Internal(std::string("cannot read the relation's schema: ") + (e ? e : "unknown"));
  }
  return out;
}

Result<TypePtr> IcebergTypeFromDuck(std::string_view duck_type, int* next_id) {
  return TypeParser(duck_type, next_id).ParseAll();
}

Result<iceberg::SchemaPtr> SchemaFromDefinition(const TableDefinition& definition) {
  return FromColumns(definition.columns, definition.primary_key);
}

Result<iceberg::SchemaPtr> SchemaFromColumnDefinitions(std::string_view text) {
  SKADE_ASSIGN_OR_RETURN(TableDefinition definition, ParseTableDefinition(text));
  return SchemaFromDefinition(definition);
}

Result<iceberg::SchemaPtr> SchemaFromQuery(Database& db, std::string_view query) {
  SKADE_ASSIGN_OR_RETURN(auto rows, db.QueryRows("DESCRIBE (" + std::string(query) + "\n)"));
  SKADE_ASSIGN_OR_RETURN(auto columns, ColumnsOfDescribe(rows));
  return FromColumns(columns, {});
}

}  // namespace skade::engine
