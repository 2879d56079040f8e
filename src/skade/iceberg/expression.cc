#include "skade/iceberg/expression.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "skade/iceberg/transform.h"

namespace skade::iceberg {
namespace {

// Beyond this many values an in-predicate is not checked against bounds (evaluating it is
// more expensive than reading a manifest or file it might have pruned).
constexpr size_t kInPredicateLimit = 200;

bool IsUnary(Operation op) {
  return op == Operation::kIsNull || op == Operation::kNotNull || op == Operation::kIsNan ||
         op == Operation::kNotNan;
}

bool IsSet(Operation op) { return op == Operation::kIn || op == Operation::kNotIn; }

bool IsFloating(TypeId id) { return id == TypeId::kFloat || id == TypeId::kDouble; }

Operation Negate(Operation op) {
  switch (op) {
    case Operation::kTrue:
      return Operation::kFalse;
    case Operation::kFalse:
      return Operation::kTrue;
    case Operation::kIsNull:
      return Operation::kNotNull;
    case Operation::kNotNull:
      return Operation::kIsNull;
    case Operation::kIsNan:
      return Operation::kNotNan;
    case Operation::kNotNan:
      return Operation::kIsNan;
    case Operation::kLt:
      return Operation::kGtEq;
    case Operation::kLtEq:
      return Operation::kGt;
    case Operation::kGt:
      return Operation::kLtEq;
    case Operation::kGtEq:
      return Operation::kLt;
    case Operation::kEq:
      return Operation::kNotEq;
    case Operation::kNotEq:
      return Operation::kEq;
    case Operation::kIn:
      return Operation::kNotIn;
    case Operation::kNotIn:
      return Operation::kIn;
    case Operation::kStartsWith:
      return Operation::kNotStartsWith;
    case Operation::kNotStartsWith:
      return Operation::kStartsWith;
    default:
      return op;  // and/or/not are rewritten structurally
  }
}

const char* OperatorText(Operation op) {
  switch (op) {
    case Operation::kLt:
      return "<";
    case Operation::kLtEq:
      return "<=";
    case Operation::kGt:
      return ">";
    case Operation::kGtEq:
      return ">=";
    case Operation::kEq:
      return "==";
    case Operation::kNotEq:
      return "!=";
    case Operation::kIn:
      return "in";
    case Operation::kNotIn:
      return "not in";
    case Operation::kStartsWith:
      return "startsWith";
    case Operation::kNotStartsWith:
      return "notStartsWith";
    default:
      return "?";
  }
}

// Literal text for display: numbers bare, everything else quoted.
std::string LiteralText(const Literal& v) {
  switch (v.type_id()) {
    case TypeId::kBoolean:
    case TypeId::kInt:
    case TypeId::kLong:
    case TypeId::kFloat:
    case TypeId::kDouble:
    case TypeId::kDecimal:
      return v.ToString();
    default:
      return "'" + v.ToString() + "'";
  }
}

ExprPtr MakePredicate(Operation op, int field_id, std::string column, std::vector<Literal> lits) {
  return std::make_shared<const Expression>(op, std::vector<ExprPtr>{}, std::move(column), field_id,
                                            std::move(lits));
}

// Sorted and without duplicates, so in-lists have one canonical form.
std::vector<Literal> Dedupe(std::vector<Literal> lits) {
  std::sort(lits.begin(), lits.end(),
            [](const Literal& a, const Literal& b) { return CompareLiterals(a, b) < 0; });
  lits.erase(
      std::unique(lits.begin(), lits.end(),
                  [](const Literal& a, const Literal& b) { return CompareLiterals(a, b) == 0; }),
      lits.end());
  return lits;
}

// An in/not-in over a literal set, simplified when the set is empty or a single value.
ExprPtr MakeSetPredicate(Operation op, int field_id, std::string column,
                         std::vector<Literal> lits) {
  lits = Dedupe(std::move(lits));
  if (lits.empty()) return op == Operation::kIn ? AlwaysFalse() : AlwaysTrue();
  if (lits.size() == 1) {
    return MakePredicate(op == Operation::kIn ? Operation::kEq : Operation::kNotEq, field_id,
                         std::move(column), std::move(lits));
  }
  return MakePredicate(op, field_id, std::move(column), std::move(lits));
}

// ---- binding ----

enum class OutOfRange { kNo, kAboveMax, kBelowMin };

// Whether a literal that failed to convert lies beyond the target type's range (a long
// literal against an int column, a double beyond float range). Such comparisons have a
// constant answer rather than being errors.
OutOfRange RangeOf(const Literal& lit, const Type& target) {
  if ((target.id() == TypeId::kInt || target.id() == TypeId::kDate) &&
      lit.type_id() == TypeId::kLong) {
    if (lit.as_long() > std::numeric_limits<int32_t>::max()) return OutOfRange::kAboveMax;
    if (lit.as_long() < std::numeric_limits<int32_t>::min()) return OutOfRange::kBelowMin;
  }
  if (target.id() == TypeId::kFloat && lit.type_id() == TypeId::kDouble) {
    if (lit.as_double() > std::numeric_limits<float>::max()) return OutOfRange::kAboveMax;
    if (lit.as_double() < -std::numeric_limits<float>::max()) return OutOfRange::kBelowMin;
  }
  return OutOfRange::kNo;
}

ExprPtr FoldOutOfRange(Operation op, OutOfRange range) {
  bool above = range == OutOfRange::kAboveMax;
  switch (op) {
    case Operation::kLt:
    case Operation::kLtEq:
      return above ? AlwaysTrue() : AlwaysFalse();
    case Operation::kGt:
    case Operation::kGtEq:
      return above ? AlwaysFalse() : AlwaysTrue();
    case Operation::kEq:
      return AlwaysFalse();
    default:  // not-eq
      return AlwaysTrue();
  }
}

// Whether a field can never be null: it and every enclosing struct are required. Fields
// inside lists and maps are never treated as such.
bool NeverNull(const std::vector<NestedField>& fields, int field_id, bool* found) {
  for (const NestedField& f : fields) {
    if (f.id == field_id) {
      *found = true;
      return f.required;
    }
    if (f.type->id() == TypeId::kStruct) {
      bool inner = NeverNull(f.type->fields(), field_id, found);
      if (*found) return inner && f.required;
    }
  }
  return false;
}

Result<ExprPtr> BindPredicate(const Expression& pred, const Schema& schema,
                              const NestedField& field) {
  const Operation op = pred.op();
  const TypePtr& type = field.type;
  std::string column = schema.FindColumnName(field.id);
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument("can't bind " + pred.ToString() + ": " + why);
  };
  if (IsUnary(op)) {
    if (!pred.literals().empty()) return invalid("unexpected literal");
    if (op == Operation::kIsNan || op == Operation::kNotNan) {
      if (!IsFloating(type->id())) return invalid("column is " + type->ToString());
    } else {
      bool found = false;
      if (NeverNull(schema.fields(), field.id, &found)) {
        return op == Operation::kIsNull ? AlwaysFalse() : AlwaysTrue();
      }
    }
    return MakePredicate(op, field.id, column, {});
  }
  if (op == Operation::kStartsWith || op == Operation::kNotStartsWith) {
    if (type->id() != TypeId::kString) return invalid("column is " + type->ToString());
  }
  if (IsSet(op)) {
    std::vector<Literal> cast;
    for (const Literal& lit : pred.literals()) {
      if (lit.IsNaN()) return invalid("NaN in a set; use is_nan");
      auto converted = lit.CastTo(type);
      if (converted.ok()) {
        cast.push_back(std::move(converted).value());
      } else if (RangeOf(lit, *type) == OutOfRange::kNo) {
        return converted.status().WithContext("bind " + column);
      }
      // Values outside the column's range can never be equal to a value: drop them.
    }
    return MakeSetPredicate(op, field.id, column, std::move(cast));
  }
  if (pred.literals().size() != 1) return invalid("needs exactly one literal");
  const Literal& lit = pred.literals()[0];
  if (lit.IsNaN()) return invalid("comparison with NaN; use is_nan");
  auto converted = lit.CastTo(type);
  if (!converted.ok()) {
    OutOfRange range = RangeOf(lit, *type);
    if (range != OutOfRange::kNo) return FoldOutOfRange(op, range);
    return converted.status().WithContext("bind " + column);
  }
  return MakePredicate(op, field.id, column, {std::move(converted).value()});
}

// ---- inclusive projection (spec "Scan Planning"; per-transform rules as the reference
// implementations apply them) ----

// v + delta in the value's own unit, or nullopt on overflow.
std::optional<Literal> Adjacent(const Literal& v, int delta) {
  switch (v.value().index()) {
    case 1: {
      int32_t out = 0;
      if (__builtin_add_overflow(v.as_int(), delta, &out)) return std::nullopt;
      return Literal(v.type(), out);
    }
    case 2: {
      int64_t out = 0;
      if (__builtin_add_overflow(v.as_long(), int64_t{delta}, &out)) return std::nullopt;
      return Literal(v.type(), out);
    }
    case 5: {
      __int128 out = 0;
      if (__builtin_add_overflow(v.as_decimal(), static_cast<__int128>(delta), &out)) {
        return std::nullopt;
      }
      return Literal(v.type(), out);
    }
    default:
      return std::nullopt;
  }
}

bool HasDiscreteSuccessor(TypeId id) {
  switch (id) {
    case TypeId::kInt:
    case TypeId::kLong:
    case TypeId::kDecimal:
    case TypeId::kDate:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz:
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return true;
    default:
      return false;
  }
}

bool IsTimeTransform(TransformKind kind) {
  return kind == TransformKind::kYear || kind == TransformKind::kMonth ||
         kind == TransformKind::kDay || kind == TransformKind::kHour;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
  return n;
}

// Older writers computed year/month/day/hour of pre-epoch values by truncating toward zero,
// so a partition value p < 0 may hold rows whose correct value is p - 1 (their files carry
// p where we expect p - 1). Like the reference implementation, widen projections that
// touch negative values by one unit so those files are not pruned.
ExprPtr FixNegativeTimeProjection(const ExprPtr& projected) {
  if (!projected->is_predicate() || projected->literals().empty()) return projected;
  auto value_of = [](const Literal& l) { return l.as_int(); };
  const Literal& first = projected->literals()[0];
  switch (projected->op()) {
    case Operation::kLt:
    case Operation::kLtEq:
      if (value_of(first) < 0) {
        return MakePredicate(projected->op(), projected->field_id(), projected->column(),
                             {Literal::Int(value_of(first) + 1)});
      }
      return projected;
    case Operation::kEq:
      if (value_of(first) < 0) {
        return MakePredicate(Operation::kIn, projected->field_id(), projected->column(),
                             {first, Literal::Int(value_of(first) + 1)});
      }
      return projected;
    case Operation::kIn: {
      std::vector<Literal> values = projected->literals();
      for (const Literal& l : projected->literals()) {
        if (value_of(l) < 0) values.push_back(Literal::Int(value_of(l) + 1));
      }
      return MakeSetPredicate(Operation::kIn, projected->field_id(), projected->column(),
                              std::move(values));
    }
    default:
      return projected;
  }
}

ExprPtr ProjectPredicate(const Expression& pred, const PartitionField& pf, const Type& source) {
  const Transform& t = pf.transform;
  const Operation op = pred.op();
  if (t.kind() == TransformKind::kVoid || t.kind() == TransformKind::kUnknown ||
      !t.CanTransform(source)) {
    return AlwaysTrue();
  }
  auto make = [&](Operation o, std::vector<Literal> lits) {
    return MakePredicate(o, pf.field_id, pf.name, std::move(lits));
  };
  if (op == Operation::kIsNull || op == Operation::kNotNull) return make(op, {});
  if (t.kind() == TransformKind::kIdentity) return make(op, pred.literals());
  if (op == Operation::kIsNan || op == Operation::kNotNan) return AlwaysTrue();

  // Applies the transform; a failure (never expected for a bound literal) projects to true.
  bool failed = false;
  auto apply = [&](const Literal& v) -> Literal {
    auto r = t.Apply(v);
    if (!r.ok() || !r->has_value()) {
      failed = true;
      return v;
    }
    return **r;
  };
  auto apply_all = [&](const std::vector<Literal>& lits) {
    std::vector<Literal> out;
    for (const Literal& v : lits) out.push_back(apply(v));
    return out;
  };

  ExprPtr projected;
  if (t.kind() == TransformKind::kBucket) {
    if (op == Operation::kEq) {
      projected = make(Operation::kEq, {apply(pred.literals()[0])});
    } else if (op == Operation::kIn) {
      projected =
          MakeSetPredicate(Operation::kIn, pf.field_id, pf.name, apply_all(pred.literals()));
    } else {
      return AlwaysTrue();
    }
    return failed ? AlwaysTrue() : projected;
  }

  // Truncate and the time transforms preserve order: t(a) <= t(b) whenever a <= b.
  const bool discrete = HasDiscreteSuccessor(source.id());
  switch (op) {
    case Operation::kLt:
      if (discrete) {
        // v < x  ⇔  v <= x - 1  ⇒  t(v) <= t(x - 1); nothing is below the type's minimum.
        auto prev = Adjacent(pred.literals()[0], -1);
        if (!prev) return AlwaysFalse();
        projected = make(Operation::kLtEq, {apply(*prev)});
      } else {
        projected = make(Operation::kLtEq, {apply(pred.literals()[0])});
      }
      break;
    case Operation::kLtEq:
      projected = make(Operation::kLtEq, {apply(pred.literals()[0])});
      break;
    case Operation::kGt:
      if (discrete) {
        auto next = Adjacent(pred.literals()[0], 1);
        if (!next) return AlwaysFalse();
        projected = make(Operation::kGtEq, {apply(*next)});
      } else {
        projected = make(Operation::kGtEq, {apply(pred.literals()[0])});
      }
      break;
    case Operation::kGtEq:
      projected = make(Operation::kGtEq, {apply(pred.literals()[0])});
      break;
    case Operation::kEq:
      projected = make(Operation::kEq, {apply(pred.literals()[0])});
      break;
    case Operation::kIn:
      projected =
          MakeSetPredicate(Operation::kIn, pf.field_id, pf.name, apply_all(pred.literals()));
      break;
    case Operation::kStartsWith: {
      if (t.kind() != TransformKind::kTruncate || source.id() != TypeId::kString) {
        return AlwaysTrue();
      }
      // A prefix at least W long fixes t(v) completely; a shorter one is also a prefix of
      // t(v).
      const Literal& prefix = pred.literals()[0];
      if (CodePoints(prefix.as_bytes()) >= static_cast<size_t>(t.param())) {
        projected = make(Operation::kEq, {apply(prefix)});
      } else {
        projected = make(Operation::kStartsWith, {prefix});
      }
      break;
    }
    default:  // not-eq, not-in, not-starts-with: no inclusive projection
      return AlwaysTrue();
  }
  if (failed) return AlwaysTrue();
  if (IsTimeTransform(t.kind())) projected = FixNegativeTimeProjection(projected);
  return projected;
}

ExprPtr ProjectNode(const ExprPtr& e, const PartitionSpec& spec, const Schema& schema) {
  switch (e->op()) {
    case Operation::kTrue:
    case Operation::kFalse:
      return e;
    case Operation::kAnd:
      return And(ProjectNode(e->children()[0], spec, schema),
                 ProjectNode(e->children()[1], spec, schema));
    case Operation::kOr:
      return Or(ProjectNode(e->children()[0], spec, schema),
                ProjectNode(e->children()[1], spec, schema));
    case Operation::kNot:
      return AlwaysTrue();  // not reached after RewriteNot
    default:
      break;
  }
  const NestedField* source = schema.FindField(e->field_id());
  if (source == nullptr || !e->is_bound()) return AlwaysTrue();
  ExprPtr result = AlwaysTrue();
  for (const PartitionField& pf : spec.fields()) {
    bool single_source =
        pf.source_ids.empty() || (pf.source_ids.size() == 1 && pf.source_ids[0] == pf.source_id);
    if (pf.source_id != e->field_id() || !single_source) continue;
    result = And(result, ProjectPredicate(*e, pf, *source->type));
  }
  return result;
}

// ---- evaluation helpers ----

// Orders a stored value against a predicate literal. Types may differ in storage (a date
// partition vs an int literal, an int bound of a column promoted to long); values are
// converted to the literal's type first. nullopt when they can't be compared.
std::optional<int> CompareValue(const Literal& value, const Literal& lit) {
  const TypeId a = value.type_id(), b = lit.type_id();
  // Day partitions are int in the current spec and date in older manifests: same days.
  const bool days =
      (a == TypeId::kInt || a == TypeId::kDate) && (b == TypeId::kInt || b == TypeId::kDate);
  if (a == b || days) return CompareLiterals(value, lit);
  auto converted = value.CastTo(lit.type());
  if (!converted.ok()) return std::nullopt;
  return CompareLiterals(*converted, lit);
}

bool IsStringLike(const Literal& v) { return std::holds_alternative<std::string>(v.value()); }

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Evaluates and/or/true/false over `leaf` for predicates (expressions are NOT-free here).
bool EvalTree(const ExprPtr& e, const std::function<bool(const Expression&)>& leaf) {
  switch (e->op()) {
    case Operation::kTrue:
      return true;
    case Operation::kFalse:
      return false;
    case Operation::kAnd:
      return EvalTree(e->children()[0], leaf) && EvalTree(e->children()[1], leaf);
    case Operation::kOr:
      return EvalTree(e->children()[0], leaf) || EvalTree(e->children()[1], leaf);
    case Operation::kNot:
      return true;  // not reached after RewriteNot; "might match" is the safe answer
    default:
      return leaf(*e);
  }
}

std::vector<int> FieldIds(const PartitionSpec& spec) {
  std::vector<int> ids;
  for (const PartitionField& f : spec.fields()) ids.push_back(f.field_id);
  return ids;
}

int PositionOf(const std::vector<int>& ids, int field_id) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == field_id) return static_cast<int>(i);
  }
  return -1;
}

// A bound decoded from its Appendix D bytes. `unreadable` means the bytes were there but
// can't be interpreted, which must count as "anything may match".
struct Bound {
  std::optional<Literal> value;
  bool unreadable = false;
};

Bound DecodeBound(const TypePtr& type, const std::optional<std::string>& bytes) {
  Bound b;
  if (!bytes) return b;
  auto v = Literal::FromBinary(type, *bytes);
  if (v.ok()) {
    b.value = std::move(v).value();
  } else {
    b.unreadable = true;
  }
  return b;
}

// Whether the bytes of `bound` truncated to the prefix length compare below (<0) or above
// (>0) the prefix; the spec's bound truncation keeps prefixes, so a truncated bound still
// orders correctly against a prefix.
int ComparePrefix(const std::string& bound, const std::string& prefix) {
  std::string head = bound.substr(0, std::min(bound.size(), prefix.size()));
  return CompareLiterals(Literal::Binary(head), Literal::Binary(prefix));
}

// Replaces predicates on fields under a list or map with true: their column metrics
// aggregate over all elements, which makes per-row reasoning unreliable.
std::set<int> StructReachableIds(const Schema& schema) {
  std::set<int> ids;
  std::function<void(const std::vector<NestedField>&)> walk =
      [&](const std::vector<NestedField>& fields) {
        for (const NestedField& f : fields) {
          ids.insert(f.id);
          if (f.type->id() == TypeId::kStruct) walk(f.type->fields());
        }
      };
  walk(schema.fields());
  return ids;
}

ExprPtr DropUnreliable(const ExprPtr& e, const std::set<int>& reliable) {
  switch (e->op()) {
    case Operation::kTrue:
    case Operation::kFalse:
      return e;
    case Operation::kAnd:
      return And(DropUnreliable(e->children()[0], reliable),
                 DropUnreliable(e->children()[1], reliable));
    case Operation::kOr:
      return Or(DropUnreliable(e->children()[0], reliable),
                DropUnreliable(e->children()[1], reliable));
    case Operation::kNot:
      return AlwaysTrue();
    default:
      return reliable.count(e->field_id()) ? e : AlwaysTrue();
  }
}

template <typename Map>
std::optional<int64_t> Lookup(const Map& m, int id) {
  auto it = m.find(id);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace

// ---- Expression ----

Expression::Expression(Operation op, std::vector<ExprPtr> children, std::string column,
                       int field_id, std::vector<Literal> literals)
    : op_(op),
      children_(std::move(children)),
      column_(std::move(column)),
      field_id_(field_id),
      literals_(std::move(literals)) {}

bool Expression::is_predicate() const {
  switch (op_) {
    case Operation::kTrue:
    case Operation::kFalse:
    case Operation::kAnd:
    case Operation::kOr:
    case Operation::kNot:
      return false;
    default:
      return true;
  }
}

std::string Expression::ToString() const {
  switch (op_) {
    case Operation::kTrue:
      return "true";
    case Operation::kFalse:
      return "false";
    case Operation::kAnd:
      return "(" + children_[0]->ToString() + " and " + children_[1]->ToString() + ")";
    case Operation::kOr:
      return "(" + children_[0]->ToString() + " or " + children_[1]->ToString() + ")";
    case Operation::kNot:
      return "not(" + children_[0]->ToString() + ")";
    default:
      break;
  }
  std::string name = column_.empty() ? "field#" + std::to_string(field_id_) : column_;
  switch (op_) {
    case Operation::kIsNull:
      return name + " is null";
    case Operation::kNotNull:
      return name + " is not null";
    case Operation::kIsNan:
      return "is_nan(" + name + ")";
    case Operation::kNotNan:
      return "not_nan(" + name + ")";
    case Operation::kIn:
    case Operation::kNotIn: {
      std::string s = name + " " + OperatorText(op_) + " (";
      for (size_t i = 0; i < literals_.size(); ++i) {
        if (i) s += ", ";
        s += LiteralText(literals_[i]);
      }
      return s + ")";
    }
    default:
      return name + " " + OperatorText(op_) + " " +
             (literals_.empty() ? std::string("?") : LiteralText(literals_[0]));
  }
}

ExprPtr AlwaysTrue() {
  static const ExprPtr kTrue = std::make_shared<const Expression>(
      Operation::kTrue, std::vector<ExprPtr>{}, "", -1, std::vector<Literal>{});
  return kTrue;
}

ExprPtr AlwaysFalse() {
  static const ExprPtr kFalse = std::make_shared<const Expression>(
      Operation::kFalse, std::vector<ExprPtr>{}, "", -1, std::vector<Literal>{});
  return kFalse;
}

ExprPtr And(ExprPtr a, ExprPtr b) {
  if (a->op() == Operation::kFalse || b->op() == Operation::kFalse) return AlwaysFalse();
  if (a->op() == Operation::kTrue) return b;
  if (b->op() == Operation::kTrue) return a;
  return std::make_shared<const Expression>(Operation::kAnd, std::vector<ExprPtr>{a, b}, "", -1,
                                            std::vector<Literal>{});
}

ExprPtr Or(ExprPtr a, ExprPtr b) {
  if (a->op() == Operation::kTrue || b->op() == Operation::kTrue) return AlwaysTrue();
  if (a->op() == Operation::kFalse) return b;
  if (b->op() == Operation::kFalse) return a;
  return std::make_shared<const Expression>(Operation::kOr, std::vector<ExprPtr>{a, b}, "", -1,
                                            std::vector<Literal>{});
}

ExprPtr Not(ExprPtr a) {
  if (a->op() == Operation::kTrue) return AlwaysFalse();
  if (a->op() == Operation::kFalse) return AlwaysTrue();
  if (a->op() == Operation::kNot) return a->children()[0];
  return std::make_shared<const Expression>(Operation::kNot, std::vector<ExprPtr>{a}, "", -1,
                                            std::vector<Literal>{});
}

ExprPtr Predicate(Operation op, std::string column, std::vector<Literal> literals) {
  if (IsSet(op) && literals.empty()) return op == Operation::kIn ? AlwaysFalse() : AlwaysTrue();
  return MakePredicate(op, -1, std::move(column), std::move(literals));
}

ExprPtr BoundPredicate(Operation op, int field_id, std::string column,
                       std::vector<Literal> literals) {
  if (IsSet(op)) return MakeSetPredicate(op, field_id, std::move(column), std::move(literals));
  return MakePredicate(op, field_id, std::move(column), std::move(literals));
}

Result<ExprPtr> Bind(const ExprPtr& expr, const Schema& schema, bool case_sensitive) {
  switch (expr->op()) {
    case Operation::kTrue:
    case Operation::kFalse:
      return expr;
    case Operation::kAnd:
    case Operation::kOr: {
      SKADE_ASSIGN_OR_RETURN(ExprPtr a, Bind(expr->children()[0], schema, case_sensitive));
      SKADE_ASSIGN_OR_RETURN(ExprPtr b, Bind(expr->children()[1], schema, case_sensitive));
      return expr->op() == Operation::kAnd ? And(a, b) : Or(a, b);
    }
    case Operation::kNot: {
      SKADE_ASSIGN_OR_RETURN(ExprPtr a, Bind(expr->children()[0], schema, case_sensitive));
      return Not(a);
    }
    default:
      break;
  }
  const NestedField* field = expr->is_bound()
                                 ? schema.FindField(expr->field_id())
                                 : schema.FindFieldByName(expr->column(), case_sensitive);
  if (field == nullptr) {
    return Status::InvalidArgument("can't bind " + expr->ToString() + ": no such column");
  }
  if (!field->type->is_primitive()) {
    return Status::InvalidArgument("can't bind " + expr->ToString() + ": column is " +
                                   field->type->ToString() + ", not a primitive");
  }
  return BindPredicate(*expr, schema, *field);
}

ExprPtr RewriteNot(const ExprPtr& expr) {
  switch (expr->op()) {
    case Operation::kAnd:
      return And(RewriteNot(expr->children()[0]), RewriteNot(expr->children()[1]));
    case Operation::kOr:
      return Or(RewriteNot(expr->children()[0]), RewriteNot(expr->children()[1]));
    case Operation::kNot: {
      const ExprPtr& child = expr->children()[0];
      switch (child->op()) {
        case Operation::kTrue:
          return AlwaysFalse();
        case Operation::kFalse:
          return AlwaysTrue();
        case Operation::kNot:
          return RewriteNot(child->children()[0]);
        case Operation::kAnd:  // De Morgan
          return Or(RewriteNot(Not(child->children()[0])), RewriteNot(Not(child->children()[1])));
        case Operation::kOr:
          return And(RewriteNot(Not(child->children()[0])), RewriteNot(Not(child->children()[1])));
        default:
          return std::make_shared<const Expression>(Negate(child->op()), std::vector<ExprPtr>{},
                                                    child->column(), child->field_id(),
                                                    child->literals());
      }
    }
    default:
      return expr;
  }
}

ExprPtr ProjectInclusive(const ExprPtr& bound_expr, const PartitionSpec& spec,
                         const Schema& schema) {
  return ProjectNode(RewriteNot(bound_expr), spec, schema);
}

// ---- PartitionEvaluator ----

PartitionEvaluator::PartitionEvaluator(ExprPtr projected, const PartitionSpec& spec)
    : expr_(RewriteNot(projected)), field_ids_(FieldIds(spec)) {}

bool PartitionEvaluator::Eval(const std::vector<std::optional<Literal>>& partition) const {
  return EvalTree(expr_, [&](const Expression& pred) {
    int pos = PositionOf(field_ids_, pred.field_id());
    if (pos < 0 || static_cast<size_t>(pos) >= partition.size()) return true;
    const std::optional<Literal>& v = partition[static_cast<size_t>(pos)];
    const Operation op = pred.op();
    switch (op) {
      case Operation::kIsNull:
        return !v.has_value();
      case Operation::kNotNull:
        return v.has_value();
      case Operation::kIsNan:
        return v.has_value() && v->IsNaN();
      case Operation::kNotNan:
        return !(v.has_value() && v->IsNaN());
      default:
        break;
    }
    if (!v.has_value()) {
      // Null satisfies only the negative forms (matching "not (x = 5)" rewritten).
      return op == Operation::kNotEq || op == Operation::kNotIn || op == Operation::kNotStartsWith;
    }
    if (op == Operation::kStartsWith || op == Operation::kNotStartsWith) {
      if (!IsStringLike(*v) || !IsStringLike(pred.literals()[0])) return true;
      bool starts = StartsWith(v->as_bytes(), pred.literals()[0].as_bytes());
      return op == Operation::kStartsWith ? starts : !starts;
    }
    if (IsSet(op)) {
      bool any_equal = false;
      for (const Literal& lit : pred.literals()) {
        std::optional<int> c = CompareValue(*v, lit);
        if (!c) return true;
        any_equal = any_equal || *c == 0;
      }
      return op == Operation::kIn ? any_equal : !any_equal;
    }
    std::optional<int> c = CompareValue(*v, pred.literals()[0]);
    if (!c) return true;
    switch (op) {
      case Operation::kLt:
        return *c < 0;
      case Operation::kLtEq:
        return *c <= 0;
      case Operation::kGt:
        return *c > 0;
      case Operation::kGtEq:
        return *c >= 0;
      case Operation::kEq:
        return *c == 0;
      case Operation::kNotEq:
        return *c != 0;
      default:
        return true;
    }
  });
}

// ---- ManifestEvaluator (partition field summaries of a manifest list entry) ----

ManifestEvaluator::ManifestEvaluator(ExprPtr projected, const PartitionSpec& spec,
                                     TypePtr partition_type)
    : expr_(RewriteNot(projected)),
      field_ids_(FieldIds(spec)),
      partition_type_(std::move(partition_type)) {}

bool ManifestEvaluator::MightMatch(const ManifestFile& manifest) const {
  return EvalTree(expr_, [&](const Expression& pred) {
    int pos = PositionOf(field_ids_, pred.field_id());
    if (pos < 0 || static_cast<size_t>(pos) >= manifest.partitions.size() || !partition_type_ ||
        static_cast<size_t>(pos) >= partition_type_->fields().size()) {
      return true;
    }
    const FieldSummary& s = manifest.partitions[static_cast<size_t>(pos)];
    const TypePtr& type = partition_type_->fields()[static_cast<size_t>(pos)].type;
    // Summary bounds cover the non-null, non-NaN values; none means there are no such values.
    const bool no_bounds = !s.lower_bound && !s.upper_bound;
    const bool all_null = s.contains_null && no_bounds && s.contains_nan != true;
    const Operation op = pred.op();
    switch (op) {
      case Operation::kIsNull:
        return s.contains_null;
      case Operation::kNotNull:
        return !all_null;
      case Operation::kIsNan:
        return s.contains_nan != false && !all_null;
      case Operation::kNotNan:
        // Only NaN values: NaN present, no nulls, no ordinary bounds.
        return !(s.contains_nan == true && !s.contains_null && no_bounds);
      case Operation::kNotEq:
      case Operation::kNotIn:
        return true;
      default:
        break;
    }
    // NaN sorts above every number (CompareLiterals, and the engine's SQL semantics), but
    // summary bounds leave NaN out: a field that may hold NaN may satisfy > and >=.
    if ((op == Operation::kGt || op == Operation::kGtEq) && IsFloating(type->id()) &&
        s.contains_nan != false) {
      return true;
    }
    Bound lower = DecodeBound(type, s.lower_bound);
    Bound upper = DecodeBound(type, s.upper_bound);
    if (lower.unreadable || upper.unreadable) return true;
    if (op == Operation::kNotStartsWith) {
      if (s.contains_null || !lower.value || !upper.value) return true;
      const std::string& prefix = pred.literals()[0].as_bytes();
      if (!IsStringLike(*lower.value) || !IsStringLike(*upper.value)) return true;
      // Every value lies between two bounds that both start with the prefix.
      return !(StartsWith(lower.value->as_bytes(), prefix) &&
               StartsWith(upper.value->as_bytes(), prefix));
    }
    // Every remaining predicate needs a non-null, non-NaN value (NaN sorts above all, so a
    // NaN-only field cannot satisfy a bounded comparison either).
    if (!lower.value || !upper.value) {
      if (lower.value || upper.value) return true;  // half a summary: don't guess
      return false;
    }
    const Literal& lo = *lower.value;
    const Literal& hi = *upper.value;
    if (op == Operation::kStartsWith) {
      const Literal& prefix = pred.literals()[0];
      if (!IsStringLike(lo) || !IsStringLike(hi) || !IsStringLike(prefix)) return true;
      return ComparePrefix(lo.as_bytes(), prefix.as_bytes()) <= 0 &&
             ComparePrefix(hi.as_bytes(), prefix.as_bytes()) >= 0;
    }
    if (op == Operation::kIn) {
      if (pred.literals().size() > kInPredicateLimit) return true;
      for (const Literal& lit : pred.literals()) {
        std::optional<int> lo_cmp = CompareValue(lo, lit);
        std::optional<int> hi_cmp = CompareValue(hi, lit);
        if (!lo_cmp || !hi_cmp) return true;
        if (*lo_cmp <= 0 && *hi_cmp >= 0) return true;
      }
      return false;
    }
    const Literal& lit = pred.literals()[0];
    std::optional<int> lo_cmp = CompareValue(lo, lit);
    std::optional<int> hi_cmp = CompareValue(hi, lit);
    if (!lo_cmp || !hi_cmp) return true;
    switch (op) {
      case Operation::kLt:
        return *lo_cmp < 0;
      case Operation::kLtEq:
        return *lo_cmp <= 0;
      case Operation::kGt:
        return *hi_cmp > 0;
      case Operation::kGtEq:
        return *hi_cmp >= 0;
      case Operation::kEq:
        return *lo_cmp <= 0 && *hi_cmp >= 0;
      default:
        return true;
    }
  });
}

// ---- MetricsEvaluator (inclusive metrics evaluation of one data file) ----

MetricsEvaluator::MetricsEvaluator(ExprPtr bound_expr, SchemaPtr schema)
    : expr_(DropUnreliable(RewriteNot(bound_expr), StructReachableIds(*schema))),
      schema_(std::move(schema)) {}

bool MetricsEvaluator::MightMatch(const DataFile& file) const {
  if (file.record_count == 0) return false;  // an empty file holds no matching row
  if (file.record_count < 0) return true;    // unknown count (imported files)
  return EvalTree(expr_, [&](const Expression& pred) {
    const int id = pred.field_id();
    const NestedField* field = schema_->FindField(id);
    if (field == nullptr) return true;
    std::optional<int64_t> values = Lookup(file.value_counts, id);
    std::optional<int64_t> nulls = Lookup(file.null_value_counts, id);
    std::optional<int64_t> nans = Lookup(file.nan_value_counts, id);
    // Value counts include nulls and NaNs.
    const bool nulls_only = values && nulls && *values - *nulls == 0;
    const bool nans_only = values && nans && *nans == *values;
    const bool may_contain_null = !nulls || *nulls != 0;
    const Operation op = pred.op();
    switch (op) {
      case Operation::kIsNull:
        return !(nulls && *nulls == 0);
      case Operation::kNotNull:
        return !nulls_only;
      case Operation::kIsNan:
        return !(nans && *nans == 0) && !nulls_only;
      case Operation::kNotNan:
        return !nans_only;
      case Operation::kNotEq:
      case Operation::kNotIn:
        return true;
      default:
        break;
    }
    auto lo_it = file.lower_bounds.find(id);
    auto hi_it = file.upper_bounds.find(id);
    Bound lower = DecodeBound(field->type, lo_it == file.lower_bounds.end()
                                               ? std::nullopt
                                               : std::optional<std::string>(lo_it->second));
    Bound upper = DecodeBound(field->type, hi_it == file.upper_bounds.end()
                                               ? std::nullopt
                                               : std::optional<std::string>(hi_it->second));
    if (op == Operation::kNotStartsWith) {
      if (may_contain_null || lower.unreadable || upper.unreadable || !lower.value ||
          !upper.value || !IsStringLike(*lower.value) || !IsStringLike(*upper.value)) {
        return true;
      }
      // Both bounds start with the prefix, so every value in between does too. (A truncated
      // lower bound shorter than the prefix, or a rounded-up upper bound, fails this test.)
      const std::string& prefix = pred.literals()[0].as_bytes();
      return !(StartsWith(lower.value->as_bytes(), prefix) &&
               StartsWith(upper.value->as_bytes(), prefix));
    }
    // As for summaries: bounds exclude NaN, which sorts above every number.
    if ((op == Operation::kGt || op == Operation::kGtEq) && IsFloating(field->type->id()) &&
        !(nans && *nans == 0)) {
      return true;
    }
    if (nulls_only || nans_only) return false;
    if (lower.unreadable) lower.value.reset();
    if (upper.unreadable) upper.value.reset();
    // A NaN lower bound means the writer's bounds were NaN-polluted: don't trust them.
    if (lower.value && lower.value->IsNaN()) return true;
    const std::optional<Literal>& lo = lower.value;
    const std::optional<Literal>& hi = upper.value;
    if (op == Operation::kStartsWith) {
      const Literal& prefix = pred.literals()[0];
      if (!IsStringLike(prefix)) return true;
      // Bounds may be truncated; comparing only the prefix-length head keeps this correct
      // for a lower bound that is a prefix of the real minimum and an upper bound that was
      // rounded up.
      if (lo && IsStringLike(*lo) && ComparePrefix(lo->as_bytes(), prefix.as_bytes()) > 0) {
        return false;
      }
      if (hi && IsStringLike(*hi) && ComparePrefix(hi->as_bytes(), prefix.as_bytes()) < 0) {
        return false;
      }
      return true;
    }
    if (op == Operation::kIn) {
      if (pred.literals().size() > kInPredicateLimit) return true;
      for (const Literal& lit : pred.literals()) {
        bool above_lower = true, below_upper = true;
        if (lo) {
          std::optional<int> c = CompareValue(*lo, lit);
          above_lower = !c || *c <= 0;
        }
        if (hi) {
          std::optional<int> c = CompareValue(*hi, lit);
          below_upper = !c || *c >= 0;
        }
        if (above_lower && below_upper) return true;
      }
      return false;
    }
    const Literal& lit = pred.literals()[0];
    // Plain ints rather than optionals: g++ 12 -O2 misreports optional<int> as uninitialized.
    std::optional<int> lo_opt = lo ? CompareValue(*lo, lit) : std::nullopt;
    std::optional<int> hi_opt = hi ? CompareValue(*hi, lit) : std::nullopt;
    const bool has_lo = lo_opt.has_value();
    const bool has_hi = hi_opt.has_value();
    const int lo_cmp = lo_opt.value_or(0);
    const int hi_cmp = hi_opt.value_or(0);
    switch (op) {
      case Operation::kLt:
        return !(has_lo && lo_cmp >= 0);
      case Operation::kLtEq:
        return !(has_lo && lo_cmp > 0);
      case Operation::kGt:
        return !(has_hi && hi_cmp <= 0);
      case Operation::kGtEq:
        return !(has_hi && hi_cmp < 0);
      case Operation::kEq:
        return !(has_lo && lo_cmp > 0) && !(has_hi && hi_cmp < 0);
      default:
        return true;
    }
  });
}

}  // namespace skade::iceberg
