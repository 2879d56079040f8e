// Filter expressions (spec "Scan Planning"): and/or/not, comparisons, in/not in, null and NaN
// checks, starts-with; binding to a schema; inclusive projection through partition
// transforms; evaluators over partition tuples, manifest partition summaries and data-file
// column metrics. Expressions are immutable trees shared as ExprPtr.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"

namespace skade::iceberg {

enum class Operation {
  kTrue, kFalse,
  kAnd, kOr, kNot,
  kIsNull, kNotNull, kIsNan, kNotNan,
  kLt, kLtEq, kGt, kGtEq, kEq, kNotEq,
  kIn, kNotIn,
  kStartsWith, kNotStartsWith,
};

class Expression;
using ExprPtr = std::shared_ptr<const Expression>;

class Expression {
 public:
  Operation op() const { return op_; }
  // And/Or: two children; Not: one.
  const std::vector<ExprPtr>& children() const { return children_; }
  // Predicates: the column name (unbound), or the field id once bound (-1 when unbound).
  const std::string& column() const { return column_; }
  int field_id() const { return field_id_; }
  bool is_bound() const { return field_id_ >= 0; }
  // Comparison/starts-with: one literal; in/not in: one or more.
  const std::vector<Literal>& literals() const { return literals_; }
  bool is_predicate() const;

  std::string ToString() const;

  Expression(Operation op, std::vector<ExprPtr> children, std::string column, int field_id,
             std::vector<Literal> literals);

 private:
  Operation op_;
  std::vector<ExprPtr> children_;
  std::string column_;
  int field_id_ = -1;
  std::vector<Literal> literals_;
};

ExprPtr AlwaysTrue();
ExprPtr AlwaysFalse();
// And/Or simplify constant children (And(true, x) = x, Or(true, x) = true, …).
ExprPtr And(ExprPtr a, ExprPtr b);
ExprPtr Or(ExprPtr a, ExprPtr b);
ExprPtr Not(ExprPtr a);
// An unbound predicate on a column name.
ExprPtr Predicate(Operation op, std::string column, std::vector<Literal> literals = {});
// A predicate bound to a field id (column kept for display).
ExprPtr BoundPredicate(Operation op, int field_id, std::string column,
                       std::vector<Literal> literals = {});

// Binds every predicate to `schema`: names resolve to field ids (kInvalidArgument if a column
// is missing or not primitive), literals convert to the field's type (kInvalidArgument when
// they can't). Comparisons against a value outside the type's range are not an error here:
// callers that want pruning only may treat a failed bind as "no filter".
Result<ExprPtr> Bind(const ExprPtr& expr, const Schema& schema, bool case_sensitive = true);

// Pushes NOT down to the predicates (Not(a < 5) → a >= 5).
ExprPtr RewriteNot(const ExprPtr& expr);

// Inclusive projection: an expression on the partition tuple (predicates bound to partition
// field ids) that every partition holding a row matching `bound_expr` satisfies. Parts that
// can't be projected become true. `bound_expr` must be bound to the schema the spec refers to.
ExprPtr ProjectInclusive(const ExprPtr& bound_expr, const PartitionSpec& spec, const Schema& schema);

// Evaluates a projected expression (from ProjectInclusive) on one partition tuple.
class PartitionEvaluator {
 public:
  PartitionEvaluator(ExprPtr projected, const PartitionSpec& spec);
  bool Eval(const std::vector<std::optional<Literal>>& partition) const;

 private:
  ExprPtr expr_;
  std::vector<int> field_ids_;  // partition field id per tuple position
};

// Decides from a manifest's partition summaries whether it may hold matching files.
class ManifestEvaluator {
 public:
  // `projected` from ProjectInclusive; `partition_type` is the spec's partition struct type.
  ManifestEvaluator(ExprPtr projected, const PartitionSpec& spec, TypePtr partition_type);
  bool MightMatch(const ManifestFile& manifest) const;

 private:
  ExprPtr expr_;
  std::vector<int> field_ids_;
  TypePtr partition_type_;
};

// Decides from a data file's column metrics (value/null/NaN counts, lower/upper bounds)
// whether it may hold rows matching a bound expression (spec "Scan Planning", inclusive
// metrics evaluation).
class MetricsEvaluator {
 public:
  MetricsEvaluator(ExprPtr bound_expr, SchemaPtr schema);
  bool MightMatch(const DataFile& file) const;

 private:
  ExprPtr expr_;
  SchemaPtr schema_;
};

}  // namespace skade::iceberg
