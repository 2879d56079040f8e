#include "skade/engine/sql_filter.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "skade/engine/duck_text_internal.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/iceberg/literal.h"

namespace skade::engine {
namespace {

using iceberg::ExprPtr;
using iceberg::Literal;
using iceberg::Operation;
using iceberg::TypeId;
using Json = nlohmann::json;

// A constant of the SQL that must be converted to a column's Iceberg type.
struct PendingConstant {
  const Json* node;
  const iceberg::NestedField* field;
};

// A predicate whose literals are filled in once the constants are evaluated.
struct PendingPredicate {
  Operation op;
  const iceberg::NestedField* field;
  std::vector<size_t> constants;  // indices into the constants list
  std::string prefix;             // starts-with
};

// Expression tree before constants are known; nullptr children mean "not convertible".
struct Node {
  enum class Kind { kAnd, kOr, kNot, kPredicate, kUnknown } kind = Kind::kUnknown;
  std::vector<std::unique_ptr<Node>> children;
  PendingPredicate predicate{};
};

class Converter {
 public:
  explicit Converter(const iceberg::Schema& schema) : schema_(schema) {}

  std::unique_ptr<Node> Convert(const Json& e) {
    const std::string cls = e.value("class", "");
    const std::string type = e.value("type", "");
    if (cls == "CONJUNCTION") {
      const Json& kids = e["children"];
      if (!kids.is_array() || kids.empty()) return Unknown();
      auto node = std::make_unique<Node>();
      node->kind = type == "CONJUNCTION_AND" ? Node::Kind::kAnd : Node::Kind::kOr;
      if (type != "CONJUNCTION_AND" && type != "CONJUNCTION_OR") return Unknown();
      for (const Json& k : kids) node->children.push_back(Convert(k));
      return node;
    }
    if (cls == "OPERATOR") {
      const Json& kids = e["children"];
      if (!kids.is_array() || kids.empty()) return Unknown();
      if (type == "OPERATOR_NOT") {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kNot;
        node->children.push_back(Convert(kids[0]));
        return node;
      }
      if (type == "OPERATOR_IS_NULL" || type == "OPERATOR_IS_NOT_NULL") {
        const iceberg::NestedField* f = Column(kids[0]);
        if (f == nullptr) return Unknown();
        return Predicate(type == "OPERATOR_IS_NULL" ? Operation::kIsNull : Operation::kNotNull, f, {});
      }
      if (type == "COMPARE_IN" || type == "COMPARE_NOT_IN") {
        const iceberg::NestedField* f = Column(kids[0]);
        if (f == nullptr || kids.size() < 2) return Unknown();
        std::vector<size_t> consts;
        for (size_t i = 1; i < kids.size(); ++i) {
          if (!IsConstant(kids[i])) return Unknown();
          consts.push_back(AddConstant(kids[i], f));
        }
        return Predicate(type == "COMPARE_IN" ? Operation::kIn : Operation::kNotIn, f, consts);
      }
      return Unknown();
    }
    if (cls == "COMPARISON") {
      static const std::map<std::string, Operation> kOps = {
          {"COMPARE_EQUAL", Operation::kEq},         {"COMPARE_NOTEQUAL", Operation::kNotEq},
          {"COMPARE_LESSTHAN", Operation::kLt},      {"COMPARE_GREATERTHAN", Operation::kGt},
          {"COMPARE_LESSTHANOREQUALTO", Operation::kLtEq},
          {"COMPARE_GREATERTHANOREQUALTO", Operation::kGtEq}};
      auto it = kOps.find(type);
      if (it == kOps.end()) return Unknown();
      Operation op = it->second;
      const Json& left = e["left"];
      const Json& right = e["right"];
      const iceberg::NestedField* f = Column(left);
      const Json* constant = &right;
      if (f == nullptr) {
        f = Column(right);
        constant = &left;
        op = Flip(op);
      }
      if (f == nullptr || !IsConstant(*constant)) return Unknown();
      return Predicate(op, f, {AddConstant(*constant, f)});
    }
    if (cls == "BETWEEN") {
      const iceberg::NestedField* f = Column(e["input"]);
      if (f == nullptr || !IsConstant(e["lower"]) || !IsConstant(e["upper"])) return Unknown();
      auto node = std::make_unique<Node>();
      node->kind = Node::Kind::kAnd;
      node->children.push_back(Predicate(Operation::kGtEq, f, {AddConstant(e["lower"], f)}));
      node->children.push_back(Predicate(Operation::kLtEq, f, {AddConstant(e["upper"], f)}));
      return node;
    }
    if (cls == "FUNCTION") {
      const std::string name = e.value("function_name", "");
      const Json& kids = e["children"];
      if (!kids.is_array()) return Unknown();
      if ((name == "~~" || name == "!~~") && kids.size() == 2) {
        // LIKE 'prefix%' with no other wildcard is starts-with.
        const iceberg::NestedField* f = Column(kids[0]);
        const Json& pat = kids[1];
        if (f == nullptr || f->type->id() != TypeId::kString || pat.value("class", "") != "CONSTANT") {
          return Unknown();
        }
        const Json& v = pat["value"];
        if (!v.is_object() || !v["value"].is_string()) return Unknown();
        std::string p = v["value"].get<std::string>();
        if (p.empty() || p.back() != '%') return Unknown();
        std::string prefix = p.substr(0, p.size() - 1);
        if (prefix.find_first_of("%_\\") != std::string::npos) return Unknown();
        auto node = Predicate(name == "~~" ? Operation::kStartsWith : Operation::kNotStartsWith, f, {});
        node->predicate.prefix = prefix;
        return node;
      }
      if ((name == "isnan" || name == "prefix" || name == "starts_with") && !kids.empty()) {
        const iceberg::NestedField* f = Column(kids[0]);
        if (f == nullptr) return Unknown();
        if (name == "isnan" && kids.size() == 1 &&
            (f->type->id() == TypeId::kFloat || f->type->id() == TypeId::kDouble)) {
          return Predicate(Operation::kIsNan, f, {});
        }
      }
      return Unknown();
    }
    return Unknown();
  }

  std::vector<PendingConstant>& constants() { return constants_; }

 private:
  static std::unique_ptr<Node> Unknown() { return std::make_unique<Node>(); }

  std::unique_ptr<Node> Predicate(Operation op, const iceberg::NestedField* f, std::vector<size_t> c) {
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kPredicate;
    node->predicate.op = op;
    node->predicate.field = f;
    node->predicate.constants = std::move(c);
    return node;
  }

  static Operation Flip(Operation op) {
    switch (op) {
      case Operation::kLt: return Operation::kGt;
      case Operation::kGt: return Operation::kLt;
      case Operation::kLtEq: return Operation::kGtEq;
      case Operation::kGtEq: return Operation::kLtEq;
      default: return op;
    }
  }

  // A top-level primitive column (DuckDB identifiers are case-insensitive).
  const iceberg::NestedField* Column(const Json& e) const {
    if (e.value("class", "") != "COLUMN_REF") return nullptr;
    const Json& names = e["column_names"];
    if (!names.is_array() || names.empty() || !names.back().is_string()) return nullptr;
    if (names.size() > 2) return nullptr;
    const iceberg::NestedField* f = schema_.FindFieldByName(names.back().get<std::string>(), true);
    if (f == nullptr) f = schema_.FindFieldByName(names.back().get<std::string>(), false);
    if (f == nullptr || !f->type->is_primitive()) return nullptr;
    // Only top-level columns are visible by bare name in the scan relation.
    for (const auto& top : schema_.fields()) {
      if (top.id == f->id) return f;
    }
    return nullptr;
  }

  // Constants and casts of constants (DATE '2020-01-01' parses as a cast).
  static bool IsConstant(const Json& e) {
    const std::string cls = e.value("class", "");
    if (cls == "CONSTANT") return true;
    if (cls == "CAST") return e.contains("child") && IsConstant(e["child"]);
    return false;
  }

  size_t AddConstant(const Json& node, const iceberg::NestedField* f) {
    constants_.push_back({&node, f});
    return constants_.size() - 1;
  }

  const iceberg::Schema& schema_;
  std::vector<PendingConstant> constants_;
};

// SQL that converts constant expression `e` (SQL text) exactly to the column type's Iceberg
// representation as text, or NULL when it is not exactly representable (then the predicate
// is not used for pruning).
std::string ConversionSql(const std::string& e, const iceberg::Type& t) {
  // `render` receives the SQL of the constant cast to `duck_type`.
  auto exact = [&](const std::string& duck_type, auto render) {
    std::string cast = "TRY_CAST((" + e + ") AS " + duck_type + ")";
    return "CASE WHEN " + cast + " = (" + e + ") THEN " + render(cast) + " END";
  };
  auto plain = [](const std::string& x) { return x; };
  auto fn = [](const char* name) {
    return [name](const std::string& x) { return std::string(name) + "(" + x + ")"; };
  };
  switch (t.id()) {
    case TypeId::kBoolean: return exact("BOOLEAN", plain);
    case TypeId::kInt: return exact("INTEGER", plain);
    case TypeId::kLong: return exact("BIGINT", plain);
    case TypeId::kFloat: return exact("FLOAT", plain);
    case TypeId::kDouble: return exact("DOUBLE", plain);
    case TypeId::kDecimal:
      return exact("DECIMAL(" + std::to_string(t.precision()) + "," + std::to_string(t.scale()) + ")",
                   plain);
    case TypeId::kDate:
      return exact("DATE", [](const std::string& x) { return "(" + x + " - DATE '1970-01-01')"; });
    case TypeId::kTime:
      return exact("TIME", [](const std::string& x) {
        return "datediff('microsecond', TIME '00:00:00', " + x + ")";
      });
    case TypeId::kTimestamp: return exact("TIMESTAMP", fn("epoch_us"));
    case TypeId::kTimestampTz: return exact("TIMESTAMPTZ", fn("epoch_us"));
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs: return exact("TIMESTAMP_NS", fn("epoch_ns"));
    case TypeId::kString:
      return "CASE WHEN typeof((" + e + ")) = 'VARCHAR' THEN CAST((" + e + ") AS VARCHAR) END";
    case TypeId::kUuid: return exact("UUID", plain);
    case TypeId::kBinary:
    case TypeId::kFixed: return exact("BLOB", fn("hex"));
    default: return "NULL";
  }
}

// The literal of a plain constant whose value the parser's JSON holds exactly and whose
// conversion to the column's type `t` leaves nothing to decide: an integer into an int or long
// column (when in range), a string into a string column. nullopt for any other (DuckDB converts
// those, ConversionSql).
std::optional<Literal> PlainLiteral(const Json& node, const iceberg::Type& t) {
  if (node.value("class", "") != "CONSTANT" || node.value("type", "") != "VALUE_CONSTANT") return std::nullopt;
  const Json* value = node.contains("value") ? &node["value"] : nullptr;
  if (value == nullptr || !value->is_object() || value->value("is_null", true) || !value->contains("value") ||
      !value->contains("type") || !(*value)["type"].is_object()) {
    return std::nullopt;
  }
  const std::string type = (*value)["type"].value("id", "");
  const Json& v = (*value)["value"];
  const bool integer = type == "TINYINT" || type == "SMALLINT" || type == "INTEGER" || type == "BIGINT";
  if (integer && v.is_number_integer()) {
    // The JSON parser keeps non-negative integers unsigned.
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    const int64_t n = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
    if (t.id() == TypeId::kLong) return Literal::Long(n);
    if (t.id() == TypeId::kInt && n >= std::numeric_limits<int32_t>::min() &&
        n <= std::numeric_limits<int32_t>::max()) {
      return Literal::Int(static_cast<int32_t>(n));
    }
    return std::nullopt;
  }
  if (type == "VARCHAR" && v.is_string() && t.id() == TypeId::kString) return Literal::String(v.get<std::string>());
  return std::nullopt;
}

// Builds the literal of type `t` from the text ConversionSql produced.
std::optional<Literal> ToLiteral(const std::string& text, const iceberg::TypePtr& t) {
  if (IsIntegerEncoded(t->id())) return LiteralFromEncodedInteger(t, text);
  switch (t->id()) {
    case TypeId::kBoolean: return Literal::Boolean(text == "true");
    case TypeId::kFloat:
    case TypeId::kDouble: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) return std::nullopt;
      if (t->id() == TypeId::kFloat) return Literal::Float(static_cast<float>(v));
      return Literal::Double(v);
    }
    case TypeId::kDecimal: {
      // "-123.45" → unscaled -12345 at the type's scale (DuckDB prints exactly `scale` digits).
      std::string digits;
      bool negative = false;
      for (char c : text) {
        if (c == '-') {
          negative = true;
        } else if (c >= '0' && c <= '9') {
          digits.push_back(c);
        } else if (c != '.') {
          return std::nullopt;
        }
      }
      __int128 v = 0;
      for (char c : digits) v = v * 10 + (c - '0');
      return Literal::Decimal(negative ? -v : v, t->precision(), t->scale());
    }
    default: return LiteralFromDuckText(t, text);  // strings, UUIDs, hex of binary as DuckDB prints them
  }
}

// Builds the Iceberg expression; nullptr = not convertible.
ExprPtr Build(const Node& n, const std::vector<std::optional<Literal>>& values) {
  switch (n.kind) {
    case Node::Kind::kUnknown: return nullptr;
    case Node::Kind::kAnd: {
      ExprPtr out;
      for (const auto& c : n.children) {
        ExprPtr e = Build(*c, values);
        if (e) out = out ? iceberg::And(out, e) : e;  // unknown parts of an AND drop out
      }
      return out;
    }
    case Node::Kind::kOr: {
      ExprPtr out;
      for (const auto& c : n.children) {
        ExprPtr e = Build(*c, values);
        if (!e) return nullptr;  // one unknown branch makes the OR unknown
        out = out ? iceberg::Or(out, e) : e;
      }
      return out;
    }
    case Node::Kind::kNot: {
      ExprPtr e = Build(*n.children[0], values);
      return e ? iceberg::Not(e) : nullptr;
    }
    case Node::Kind::kPredicate: {
      const PendingPredicate& p = n.predicate;
      std::vector<Literal> lits;
      if (p.op == Operation::kStartsWith || p.op == Operation::kNotStartsWith) {
        lits.push_back(Literal::String(p.prefix));
      }
      for (size_t i : p.constants) {
        if (!values[i]) return nullptr;
        lits.push_back(*values[i]);
      }
      return iceberg::Predicate(p.op, p.field->name, std::move(lits));
    }
  }
  return nullptr;
}

// Whether every part of the tree converted.
bool Whole(const Node& n) {
  if (n.kind == Node::Kind::kUnknown) return false;
  return std::all_of(n.children.begin(), n.children.end(), [](const auto& c) { return c != nullptr && Whole(*c); });
}

}  // namespace

namespace {

// DuckDB's type of `where` over `relation` (DESCRIBE binds it without reading a row).
Result<std::string> PredicateType(Database& db, const Predicate& where, const std::string& relation) {
  SKADE_ASSIGN_OR_RETURN(auto rows,
                         db.QueryRows("DESCRIBE SELECT " + where.sql() + " AS __skade_predicate FROM " + relation));
  if (rows.empty() || rows[0].size() < 2 || !rows[0][1]) return Status::Internal("DESCRIBE of a predicate returned nothing");
  return *rows[0][1];
}

Status RequireBoolean(const Predicate& where, const std::string& type) {
  if (type == "BOOLEAN") return Status::Ok();
  return Status::InvalidArgument("the filter " + where.sql() + " is of type " + type +
                                 ", not BOOLEAN: a filter is a condition such as \"amount < 0\"");
}

}  // namespace

Status CheckBooleanPredicate(Database& db, const Predicate& where, const iceberg::Schema& schema) {
  // The predicate over an empty relation of the schema's columns, typed but never read: DuckDB
  // binds it (names resolve, functions pick their overloads) and DESCRIBE tells its type.
  std::string columns;
  bool row_id = false, sequence_number = false;
  for (const iceberg::NestedField& f : schema.fields()) {
    SKADE_ASSIGN_OR_RETURN(std::string type, DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    columns += (columns.empty() ? "" : ", ") + std::string("CAST(NULL AS ") + type + ") AS " + QuoteIdentifier(f.name);
    row_id = row_id || f.name == kRowIdColumn;
    sequence_number = sequence_number || f.name == kLastUpdatedSequenceNumberColumn;
  }
  if (!row_id) columns += (columns.empty() ? "" : ", ") + std::string("CAST(NULL AS BIGINT) AS ") + QuoteIdentifier(kRowIdColumn);
  if (!sequence_number) {
    columns += ", CAST(NULL AS BIGINT) AS " + QuoteIdentifier(kLastUpdatedSequenceNumberColumn);
  }
  Result<std::string> type = PredicateType(db, where, "(SELECT " + columns + ")");
  // Names this relation cannot bind are for the statement that runs the predicate to report.
  if (!type.ok()) return Status::Ok();
  return RequireBoolean(where, *type);
}

Status CheckBooleanOver(Database& db, const Predicate& where, const std::string& relation) {
  SKADE_ASSIGN_OR_RETURN(std::string type, PredicateType(db, where, relation));
  return RequireBoolean(where, type);
}

Result<ExprPtr> SqlToIcebergFilter(Database& db, const Predicate& where, const iceberg::Schema& schema) {
  std::string statement = "SELECT 1 WHERE " + where.sql();
  SKADE_ASSIGN_OR_RETURN(auto rows, db.QueryRows("SELECT json_serialize_sql(" + QuoteString(statement) + ")"));
  if (rows.size() != 1 || !rows[0][0]) return Status::Internal("json_serialize_sql returned nothing");
  Json parsed = Json::parse(*rows[0][0], nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return Status::Internal("cannot read the parsed SQL");
  if (parsed.value("error", false)) {
    return Status::InvalidArgument(parsed.value("error_message", std::string("syntax error")));
  }
  const Json& stmts = parsed["statements"];
  if (!stmts.is_array() || stmts.size() != 1 || !stmts[0].is_object()) {
    return Status::InvalidArgument("expected one boolean expression");
  }
  const Json& node = stmts[0]["node"];
  if (!node.is_object() || !node.contains("where_clause") || node["where_clause"].is_null()) {
    return Status::InvalidArgument("expected one boolean expression");
  }
  Converter converter(schema);
  std::unique_ptr<Node> tree = converter.Convert(node["where_clause"]);

  // Evaluate every constant with DuckDB itself, converted exactly to its column's type: the
  // SQL text of each comes back from json_deserialize_sql.
  const auto& constants = converter.constants();
  std::vector<std::optional<Literal>> values(constants.size());
  std::vector<size_t> evaluated;  // the constants DuckDB converts
  for (size_t i = 0; i < constants.size(); ++i) {
    values[i] = PlainLiteral(*constants[i].node, *constants[i].field->type);
    if (!values[i]) evaluated.push_back(i);
  }
  // A predicate that converted whole, every constant taken as the parser gave it, is boolean by
  // its form: comparisons, IN, IS [NOT] NULL, LIKE 'prefix%' and isnan of the schema's columns
  // with constants of their own kind, under AND, OR and NOT. Any other is bound by DuckDB to
  // check it (a statement fewer for the common filters).
  if (!evaluated.empty() || !Whole(*tree)) SKADE_RETURN_IF_ERROR(CheckBooleanPredicate(db, where, schema));
  if (!evaluated.empty()) {
    std::string deserialize = "SELECT ";
    for (size_t k = 0; k < evaluated.size(); ++k) {
      Json one = parsed;
      Json& n = one["statements"][0]["node"];
      n["select_list"] = Json::array({*constants[evaluated[k]].node});
      n["where_clause"] = nullptr;
      deserialize += (k ? ", " : "") + std::string("json_deserialize_sql(") +
                     QuoteString(one.dump(-1, ' ', false, Json::error_handler_t::replace)) + "::JSON)";
    }
    SKADE_ASSIGN_OR_RETURN(auto texts, db.QueryRows(deserialize));
    if (texts.size() != 1 || texts[0].size() != evaluated.size()) {
      return Status::Internal("json_deserialize_sql returned an unexpected shape");
    }
    std::string convert = "SELECT ";
    for (size_t k = 0; k < evaluated.size(); ++k) {
      std::string text = texts[0][k].value_or("SELECT NULL");
      if (text.rfind("SELECT ", 0) == 0) text = text.substr(7);
      convert += (k ? ", " : "") + std::string("CAST(") +
                 ConversionSql(text, *constants[evaluated[k]].field->type) + " AS VARCHAR)";
    }
    auto converted = db.QueryRows(convert);
    // A constant DuckDB can't evaluate makes the filter invalid for DuckDB too; pruning then
    // simply uses nothing and DuckDB reports the error when it runs the predicate.
    if (converted.ok() && converted->size() == 1) {
      for (size_t k = 0; k < evaluated.size(); ++k) {
        const PendingConstant& c = constants[evaluated[k]];
        if ((*converted)[0][k]) values[evaluated[k]] = ToLiteral(*(*converted)[0][k], c.field->type);
      }
    }
  }
  ExprPtr e = Build(*tree, values);
  return e ? e : iceberg::AlwaysTrue();
}

}  // namespace skade::engine
