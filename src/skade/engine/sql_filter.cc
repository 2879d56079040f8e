#include "skade/engine/sql_filter.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "duckdb.hpp"
#include "duckdb/parser/expression/list.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
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
using duckdb::ExpressionClass;
using duckdb::ExpressionType;
using duckdb::ParsedExpression;

// A constant of the SQL that must be converted to a column's Iceberg type.
struct PendingConstant {
  const ParsedExpression* node;
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

  std::unique_ptr<Node> Convert(const ParsedExpression& e) {
    switch (e.GetExpressionClass()) {
      case ExpressionClass::CONJUNCTION: {
        const auto& c = e.Cast<duckdb::ConjunctionExpression>();
        if (c.children.empty()) return Unknown();
        if (e.type != ExpressionType::CONJUNCTION_AND && e.type != ExpressionType::CONJUNCTION_OR) return Unknown();
        auto node = std::make_unique<Node>();
        node->kind = e.type == ExpressionType::CONJUNCTION_AND ? Node::Kind::kAnd : Node::Kind::kOr;
        for (const auto& k : c.children) node->children.push_back(Convert(*k));
        return node;
      }
      case ExpressionClass::OPERATOR: {
        const auto& kids = e.Cast<duckdb::OperatorExpression>().children;
        if (kids.empty()) return Unknown();
        if (e.type == ExpressionType::OPERATOR_NOT) {
          auto node = std::make_unique<Node>();
          node->kind = Node::Kind::kNot;
          node->children.push_back(Convert(*kids[0]));
          return node;
        }
        if (e.type == ExpressionType::OPERATOR_IS_NULL || e.type == ExpressionType::OPERATOR_IS_NOT_NULL) {
          const iceberg::NestedField* f = Column(*kids[0]);
          if (f == nullptr) return Unknown();
          return Predicate(e.type == ExpressionType::OPERATOR_IS_NULL ? Operation::kIsNull : Operation::kNotNull, f, {});
        }
        if (e.type == ExpressionType::COMPARE_IN || e.type == ExpressionType::COMPARE_NOT_IN) {
          const iceberg::NestedField* f = Column(*kids[0]);
          if (f == nullptr || kids.size() < 2) return Unknown();
          std::vector<size_t> consts;
          for (size_t i = 1; i < kids.size(); ++i) {
            if (!IsConstant(*kids[i])) return Unknown();
            consts.push_back(AddConstant(*kids[i], f));
          }
          return Predicate(e.type == ExpressionType::COMPARE_IN ? Operation::kIn : Operation::kNotIn, f, consts);
        }
        return Unknown();
      }
      case ExpressionClass::COMPARISON: {
        std::optional<Operation> op = ComparisonOf(e.type);
        if (!op) return Unknown();
        const auto& c = e.Cast<duckdb::ComparisonExpression>();
        const iceberg::NestedField* f = Column(*c.left);
        const ParsedExpression* constant = c.right.get();
        if (f == nullptr) {
          f = Column(*c.right);
          constant = c.left.get();
          op = Flip(*op);
        }
        if (f == nullptr || !IsConstant(*constant)) return Unknown();
        return Predicate(*op, f, {AddConstant(*constant, f)});
      }
      case ExpressionClass::BETWEEN: {
        const auto& b = e.Cast<duckdb::BetweenExpression>();
        const iceberg::NestedField* f = Column(*b.input);
        if (f == nullptr || !IsConstant(*b.lower) || !IsConstant(*b.upper)) return Unknown();
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kAnd;
        node->children.push_back(Predicate(Operation::kGtEq, f, {AddConstant(*b.lower, f)}));
        node->children.push_back(Predicate(Operation::kLtEq, f, {AddConstant(*b.upper, f)}));
        return node;
      }
      case ExpressionClass::FUNCTION: {
        const auto& fn = e.Cast<duckdb::FunctionExpression>();
        // DuckDB's own functions only, not one of the same name in a schema of the database.
        if (!fn.schema.empty() || !fn.catalog.empty()) return Unknown();
        const std::string& name = fn.function_name;
        const auto& kids = fn.children;
        if ((name == "~~" || name == "!~~") && kids.size() == 2) {
          // LIKE 'prefix%' with no other wildcard is starts-with.
          const iceberg::NestedField* f = Column(*kids[0]);
          if (f == nullptr || f->type->id() != TypeId::kString) return Unknown();
          if (kids[1]->GetExpressionClass() != ExpressionClass::CONSTANT) return Unknown();
          const duckdb::Value& v = kids[1]->Cast<duckdb::ConstantExpression>().value;
          if (v.IsNull() || v.type().id() != duckdb::LogicalTypeId::VARCHAR) return Unknown();
          std::string p = duckdb::StringValue::Get(v);
          if (p.empty() || p.back() != '%') return Unknown();
          std::string prefix = p.substr(0, p.size() - 1);
          if (prefix.find_first_of("%_\\") != std::string::npos) return Unknown();
          auto node = Predicate(name == "~~" ? Operation::kStartsWith : Operation::kNotStartsWith, f, {});
          node->predicate.prefix = prefix;
          return node;
        }
        if (name == "isnan" && kids.size() == 1) {
          const iceberg::NestedField* f = Column(*kids[0]);
          if (f != nullptr && (f->type->id() == TypeId::kFloat || f->type->id() == TypeId::kDouble)) {
            return Predicate(Operation::kIsNan, f, {});
          }
        }
        return Unknown();
      }
      default:
        return Unknown();
    }
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

  static std::optional<Operation> ComparisonOf(ExpressionType type) {
    switch (type) {
      case ExpressionType::COMPARE_EQUAL: return Operation::kEq;
      case ExpressionType::COMPARE_NOTEQUAL: return Operation::kNotEq;
      case ExpressionType::COMPARE_LESSTHAN: return Operation::kLt;
      case ExpressionType::COMPARE_GREATERTHAN: return Operation::kGt;
      case ExpressionType::COMPARE_LESSTHANOREQUALTO: return Operation::kLtEq;
      case ExpressionType::COMPARE_GREATERTHANOREQUALTO: return Operation::kGtEq;
      default: return std::nullopt;
    }
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
  const iceberg::NestedField* Column(const ParsedExpression& e) const {
    if (e.GetExpressionClass() != ExpressionClass::COLUMN_REF) return nullptr;
    // A bare name only: `s.x` may be field x of a struct column s, not a column x.
    const auto& names = e.Cast<duckdb::ColumnRefExpression>().column_names;
    if (names.size() != 1) return nullptr;
    const iceberg::NestedField* f = schema_.FindFieldByName(names.back(), true);
    if (f == nullptr) f = schema_.FindFieldByName(names.back(), false);
    if (f == nullptr || !f->type->is_primitive()) return nullptr;
    // Only top-level columns are visible by bare name in the scan relation.
    for (const auto& top : schema_.fields()) {
      if (top.id == f->id) return f;
    }
    return nullptr;
  }

  // Constants and casts of constants (DATE '2020-01-01' parses as a cast).
  static bool IsConstant(const ParsedExpression& e) {
    if (e.GetExpressionClass() == ExpressionClass::CONSTANT) return true;
    if (e.GetExpressionClass() == ExpressionClass::CAST) return IsConstant(*e.Cast<duckdb::CastExpression>().child);
    return false;
  }

  size_t AddConstant(const ParsedExpression& node, const iceberg::NestedField* f) {
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
std::optional<Literal> PlainLiteral(const ParsedExpression& node, const iceberg::Type& t) {
  if (node.GetExpressionClass() != ExpressionClass::CONSTANT) return std::nullopt;
  const duckdb::Value& v = node.Cast<duckdb::ConstantExpression>().value;
  if (v.IsNull()) return std::nullopt;
  using duckdb::LogicalTypeId;
  const LogicalTypeId type = v.type().id();
  if (type == LogicalTypeId::TINYINT || type == LogicalTypeId::SMALLINT || type == LogicalTypeId::INTEGER ||
      type == LogicalTypeId::BIGINT) {
    const int64_t n = v.GetValue<int64_t>();
    if (t.id() == TypeId::kLong) return Literal::Long(n);
    if (t.id() == TypeId::kInt && n >= std::numeric_limits<int32_t>::min() &&
        n <= std::numeric_limits<int32_t>::max()) {
      return Literal::Int(static_cast<int32_t>(n));
    }
    return std::nullopt;
  }
  if (type == LogicalTypeId::VARCHAR && t.id() == TypeId::kString) return Literal::String(duckdb::StringValue::Get(v));
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
  // DuckDB's own parser, in process (no statement runs): the predicate as the statement that
  // applies it will read it.
  duckdb::Parser parser;
  try {
    parser.ParseQuery("SELECT 1 WHERE " + where.sql());
  } catch (const std::exception& e) {
    return Status::InvalidArgument(duckdb::ErrorData(e).RawMessage());
  }
  if (parser.statements.size() != 1 || parser.statements[0]->type != duckdb::StatementType::SELECT_STATEMENT) {
    return Status::InvalidArgument("expected one boolean expression");
  }
  const auto& select = parser.statements[0]->Cast<duckdb::SelectStatement>();
  if (select.node == nullptr || select.node->type != duckdb::QueryNodeType::SELECT_NODE) {
    return Status::InvalidArgument("expected one boolean expression");
  }
  const auto& where_clause = select.node->Cast<duckdb::SelectNode>().where_clause;
  if (where_clause == nullptr) return Status::InvalidArgument("expected one boolean expression");
  Converter converter(schema);
  std::unique_ptr<Node> tree = converter.Convert(*where_clause);

  // Every constant converted exactly to its column's type: a plain one (an integer, a string)
  // as the parser holds it, any other by DuckDB itself.
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
    // Each constant's SQL as the parser rendered it, converted by DuckDB.
    std::string convert = "SELECT ";
    for (size_t k = 0; k < evaluated.size(); ++k) {
      const PendingConstant& c = constants[evaluated[k]];
      convert += (k ? ", " : "") + std::string("CAST(") + ConversionSql(c.node->ToString(), *c.field->type) +
                 " AS VARCHAR)";
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
