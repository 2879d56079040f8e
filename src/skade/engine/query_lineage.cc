// DuckDB's C++ planner (allowed in engine/, DESIGN §3: the C API has no bound plan). The query
// is bound, never optimised nor run, and its logical plan walked bottom-up: every column binding
// an operator produces gets the input columns it derives from, so names, aliases, views, CTEs and
// subqueries are resolved exactly as DuckDB resolves them when the statement runs.
#include "skade/engine/query_lineage.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "duckdb.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/planner/column_binding_map.hpp"
#include "duckdb/planner/expression/list.hpp"
#include "duckdb/planner/expression_iterator.hpp"
#include "duckdb/planner/operator/list.hpp"
#include "duckdb/planner/planner.hpp"
#include "skade/base/random.h"
#include "skade/engine/database.h"
#include "skade/engine/query_lineage_internal.h"

namespace skade::engine {
namespace {

using Json = nlohmann::json;
using duckdb::ExpressionClass;
using duckdb::LogicalOperator;
using duckdb::LogicalOperatorType;
using Subtype = LineageSubtype;

constexpr const char* kFunctionName = "__skade_query_lineage";

// The function is skade's own: a statement that calls it must give this process's key. A
// client's SQL cannot (the key is random and never leaves the process), so it cannot bind SQL
// hidden in a string past the checks every front makes on a statement's tree (a configuration
// read named inside the string would otherwise reach DuckDB's binder, and its errors).
const std::string& CallerKey() {
  static const std::string key = RandomHex(16);
  return key;
}

bool IsDirect(Subtype s) {
  return s == Subtype::kIdentity || s == Subtype::kTransformation || s == Subtype::kAggregation;
}

// How an input reaches an output through two steps, `outer` nearer the output: an indirect step
// names the effect (the outer one first: a column filtering rows that a condition was computed
// from filters them); two direct steps give the stronger of the two (identity < transformation
// < aggregation).
Subtype Compose(Subtype outer, Subtype inner) {
  if (!IsDirect(outer)) return outer;
  if (!IsDirect(inner)) return inner;
  return std::max(outer, inner);
}

struct Origin {
  size_t source = 0;
  std::string column;
  Subtype subtype = Subtype::kIdentity;
  bool masking = false;
  auto Key() const { return std::tie(source, column, subtype, masking); }
  bool operator<(const Origin& o) const { return Key() < o.Key(); }
};
using Origins = std::set<Origin>;

// Where an expression sits on its way to an output.
struct Path {
  Subtype subtype = Subtype::kIdentity;
  bool masking = false;
  Path Then(Subtype step, bool masks = false) const { return Path{Compose(subtype, step), masking || masks}; }
};

// Hash functions whose result does not reveal the input.
bool Masks(const std::string& function) {
  static const std::set<std::string> kMasking = {"md5", "md5_number", "md5_number_lower", "md5_number_upper",
                                                 "sha1", "sha256", "hash"};
  return kMasking.count(duckdb::StringUtil::Lower(function)) > 0;
}

class PlanLineage {
 public:
  // Walks the plan; the result columns are the root's bindings.
  void Trace(LogicalOperator& root, const duckdb::vector<duckdb::string>& names) {
    dataset_ = Operator(root);
    const auto bindings = root.GetColumnBindings();
    if (bindings.size() != names.size()) Untraced("result columns");
    columns_.assign(names.begin(), names.end());
    for (size_t i = 0; i < bindings.size() && untraced_.empty(); ++i) origins_.push_back(Lookup(bindings[i]));
    if (!untraced_.empty()) {
      // Partly traced is indistinguishable from wholly traced to a reader: nothing instead.
      origins_.assign(names.size(), {});
      dataset_.clear();
    }
  }

  Json ToJson() const {
    Json sources = Json::array();
    for (const LineageSource& s : sources_) {
      sources.push_back(Json{{"function", s.function}, {"arguments", s.arguments}, {"table", s.table}});
    }
    auto origins = [](const Origins& set) {
      Json out = Json::array();
      for (const Origin& o : set) {
        out.push_back(Json::array({o.source, o.column, static_cast<int>(o.subtype), o.masking}));
      }
      return out;
    };
    Json columns = Json::array();
    for (size_t i = 0; i < columns_.size(); ++i) {
      columns.push_back(Json{{"name", columns_[i]}, {"origins", origins(origins_[i])}});
    }
    return Json{{"sources", std::move(sources)},
                {"columns", std::move(columns)},
                {"dataset", origins(dataset_)},
                {"traced", untraced_.empty()},
                {"untraced", untraced_}};
  }

 private:
  // Notes a plan shape whose column flow is not traced (the first one, for the log); the walk
  // goes on only to name every source.
  Origins Untraced(const std::string& what) {
    if (untraced_.empty()) untraced_ = what;
    return {};
  }

  Origins Lookup(const duckdb::ColumnBinding& b) const {
    auto it = bindings_.find(b);
    return it == bindings_.end() ? Origins{} : it->second;
  }

  size_t SourceIndex(LineageSource source) {
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i] == source) return i;
    }
    sources_.push_back(std::move(source));
    return sources_.size() - 1;
  }

  // The input columns of `e`'s value, each reaching it along `path`.
  void Expression(const duckdb::Expression& e, Path path, Origins& out) {
    switch (e.GetExpressionClass()) {
      case ExpressionClass::BOUND_COLUMN_REF: {
        for (const Origin& o : Lookup(e.Cast<duckdb::BoundColumnRefExpression>().binding)) {
          out.insert(Origin{o.source, o.column, Compose(path.subtype, o.subtype), o.masking || path.masking});
        }
        return;
      }
      case ExpressionClass::BOUND_CONSTANT:
      case ExpressionClass::BOUND_PARAMETER:
      case ExpressionClass::BOUND_DEFAULT:
      case ExpressionClass::BOUND_LAMBDA_REF:
        return;
      case ExpressionClass::BOUND_REF:
      case ExpressionClass::BOUND_SUBQUERY:
        // Neither remains in a planned logical plan (subqueries become joins).
        Untraced("expression " + e.ToString());
        return;
      case ExpressionClass::BOUND_CASE: {
        const auto& c = e.Cast<duckdb::BoundCaseExpression>();
        for (const auto& check : c.case_checks) {
          Expression(*check.when_expr, path.Then(Subtype::kConditional), out);
          Expression(*check.then_expr, path.Then(Subtype::kTransformation), out);
        }
        if (c.else_expr) Expression(*c.else_expr, path.Then(Subtype::kTransformation), out);
        return;
      }
      case ExpressionClass::BOUND_AGGREGATE: {
        const auto& a = e.Cast<duckdb::BoundAggregateExpression>();
        for (const auto& child : a.children) Expression(*child, path.Then(Subtype::kAggregation), out);
        if (a.filter) Expression(*a.filter, path.Then(Subtype::kConditional), out);
        if (a.order_bys) {
          for (const auto& order : a.order_bys->orders) Expression(*order.expression, path.Then(Subtype::kSort), out);
        }
        return;
      }
      case ExpressionClass::BOUND_WINDOW: {
        const auto& w = e.Cast<duckdb::BoundWindowExpression>();
        const Subtype value = w.aggregate ? Subtype::kAggregation : Subtype::kTransformation;
        for (const auto& child : w.children) Expression(*child, path.Then(value), out);
        for (const auto& p : w.partitions) Expression(*p, path.Then(Subtype::kWindow), out);
        for (const auto& order : w.orders) Expression(*order.expression, path.Then(Subtype::kWindow), out);
        for (const auto& order : w.arg_orders) Expression(*order.expression, path.Then(Subtype::kSort), out);
        if (w.filter_expr) Expression(*w.filter_expr, path.Then(Subtype::kConditional), out);
        for (const auto* bound : {&w.start_expr, &w.end_expr, &w.offset_expr, &w.default_expr}) {
          if (*bound) Expression(**bound, path.Then(Subtype::kTransformation), out);
        }
        return;
      }
      case ExpressionClass::BOUND_FUNCTION: {
        const auto& f = e.Cast<duckdb::BoundFunctionExpression>();
        const Path inner = path.Then(Subtype::kTransformation, Masks(f.function.name));
        for (const auto& child : f.children) Expression(*child, inner, out);
        return;
      }
      default: {
        // Casts, operators, comparisons, conjunctions, BETWEEN, lambdas, unnest: the value is
        // computed from every child.
        const Path inner = path.Then(Subtype::kTransformation);
        duckdb::ExpressionIterator::EnumerateChildren(e, [&](const duckdb::Expression& child) {
          Expression(child, inner, out);
        });
        return;
      }
    }
  }

  Origins Of(const duckdb::Expression& e, Path path = {}) {
    Origins out;
    Expression(e, path, out);
    return out;
  }

  // `e`'s input columns as they act on which rows an operator gives (`how`: a filter, join key,
  // grouping or ordering), added to `rows`.
  void Acts(const duckdb::Expression& e, Subtype how, Origins& rows) { Expression(e, Path{how, false}, rows); }

  void Bind(const duckdb::ColumnBinding& b, Origins origins) { bindings_[b] = std::move(origins); }

  // Adds `extra` to the origins of every column `op` gives.
  void AddToColumns(LogicalOperator& op, const Origins& extra) {
    if (extra.empty()) return;
    for (const auto& b : op.GetColumnBindings()) bindings_[b].insert(extra.begin(), extra.end());
  }

  // Each child's row origins, united.
  Origins Children(LogicalOperator& op) {
    Origins rows;
    for (auto& child : op.children) {
      Origins r = Operator(*child);
      rows.insert(r.begin(), r.end());
    }
    return rows;
  }

  Origins Get(duckdb::LogicalGet& get) {
    LineageSource source;
    if (auto table = get.GetTable()) {
      source.table = {table->ParentCatalog().GetName(), table->ParentSchema().name, table->name};
    } else {
      source.function = get.function.name;
      for (const duckdb::Value& v : get.parameters) {
        if (v.IsNull()) continue;
        if (v.type().id() == duckdb::LogicalTypeId::VARCHAR) {
          source.arguments.push_back(duckdb::StringValue::Get(v));
        } else if (v.type().id() == duckdb::LogicalTypeId::LIST &&
                   duckdb::ListType::GetChildType(v.type()).id() == duckdb::LogicalTypeId::VARCHAR) {
          for (const duckdb::Value& item : duckdb::ListValue::GetChildren(v)) {
            if (!item.IsNull()) source.arguments.push_back(duckdb::StringValue::Get(item));
          }
        }
      }
    }
    const size_t index = SourceIndex(std::move(source));
    const auto& ids = get.GetColumnIds();
    const auto bindings = get.GetColumnBindings();
    // Without projection pushdown (an unoptimised plan) the bindings are the column ids in order.
    if (!get.projection_ids.empty()) return Untraced("a scan with a projection");
    for (size_t i = 0; i < bindings.size() && i < ids.size(); ++i) {
      if (ids[i].IsVirtualColumn()) continue;  // rowid, filename, …: no column of the relation
      Bind(bindings[i], Origins{Origin{index, get.GetColumnName(ids[i]), Subtype::kIdentity, false}});
    }
    return {};
  }

  // The bindings of the relations a cross product (nested: `FROM a, b, c`) puts side by side,
  // one set per relation.
  static void CrossLeaves(LogicalOperator& op, std::vector<duckdb::column_binding_set_t>& leaves) {
    if (op.type == LogicalOperatorType::LOGICAL_CROSS_PRODUCT) {
      for (auto& child : op.children) CrossLeaves(*child, leaves);
      return;
    }
    duckdb::column_binding_set_t set;
    for (const auto& b : op.GetColumnBindings()) set.insert(b);
    leaves.push_back(std::move(set));
  }

  // How many of `leaves` the columns of `e` come from.
  static size_t LeavesReferenced(const duckdb::Expression& e, const std::vector<duckdb::column_binding_set_t>& leaves) {
    std::set<size_t> used;
    std::function<void(const duckdb::Expression&)> visit = [&](const duckdb::Expression& x) {
      if (x.GetExpressionClass() == ExpressionClass::BOUND_COLUMN_REF) {
        const auto& ref = x.Cast<duckdb::BoundColumnRefExpression>();
        for (size_t i = 0; i < leaves.size(); ++i) {
          if (leaves[i].count(ref.binding)) used.insert(i);
        }
      }
      duckdb::ExpressionIterator::EnumerateChildren(x, visit);
    };
    visit(e);
    return used.size();
  }

  static void Conjuncts(const duckdb::Expression& e, std::vector<const duckdb::Expression*>& out) {
    if (e.GetExpressionType() == duckdb::ExpressionType::CONJUNCTION_AND) {
      for (const auto& child : e.Cast<duckdb::BoundConjunctionExpression>().children) Conjuncts(*child, out);
      return;
    }
    out.push_back(&e);
  }

  Origins Filter(LogicalOperator& op) {
    Origins rows = Children(op);
    if (op.Cast<duckdb::LogicalFilter>().HasProjectionMap()) return Untraced("a filter with a projection");
    // `FROM a, b WHERE a.k = b.k` binds as a filter over a cross product: a condition relating
    // two of its relations is their join condition.
    std::vector<duckdb::column_binding_set_t> leaves;
    if (op.children.size() == 1 && op.children[0]->type == LogicalOperatorType::LOGICAL_CROSS_PRODUCT) {
      CrossLeaves(*op.children[0], leaves);
    }
    for (const auto& e : op.expressions) {
      std::vector<const duckdb::Expression*> parts;
      Conjuncts(*e, parts);
      for (const duckdb::Expression* part : parts) {
        Acts(*part, LeavesReferenced(*part, leaves) >= 2 ? Subtype::kJoin : Subtype::kFilter, rows);
      }
    }
    return rows;
  }

  // The join kinds that only decide which left rows remain.
  static bool Filters(duckdb::JoinType type) {
    return type == duckdb::JoinType::SEMI || type == duckdb::JoinType::ANTI || type == duckdb::JoinType::MARK;
  }

  Origins Join(LogicalOperator& op) {
    auto& join = op.Cast<duckdb::LogicalJoin>();
    const Subtype how = Filters(join.join_type) ? Subtype::kFilter : Subtype::kJoin;
    Origins left_rows = Operator(*op.children[0]);
    // A duplicate-eliminated join hands the left side's columns to the delim gets on its right.
    const bool delim = op.type == LogicalOperatorType::LOGICAL_DELIM_JOIN;
    if (delim) {
      std::vector<Origins> delimited;
      for (const auto& e : op.Cast<duckdb::LogicalComparisonJoin>().duplicate_eliminated_columns) {
        delimited.push_back(Of(*e));
      }
      delim_columns_.push_back(std::move(delimited));
    }
    Origins right_rows;
    for (size_t i = 1; i < op.children.size(); ++i) {
      Origins r = Operator(*op.children[i]);
      right_rows.insert(r.begin(), r.end());
    }
    if (delim) delim_columns_.pop_back();
    Origins keys, acting;
    auto key = [&](const duckdb::Expression& e) {
      Expression(e, Path{Subtype::kTransformation, false}, keys);
      Acts(e, how, acting);
    };
    if (op.type == LogicalOperatorType::LOGICAL_ANY_JOIN) {
      key(*op.Cast<duckdb::LogicalAnyJoin>().condition);
    } else {
      auto& cmp = op.Cast<duckdb::LogicalComparisonJoin>();
      for (const auto& c : cmp.conditions) {
        key(*c.left);
        key(*c.right);
      }
      if (cmp.predicate) key(*cmp.predicate);
      if (op.type == LogicalOperatorType::LOGICAL_DEPENDENT_JOIN) {
        auto& dep = op.Cast<duckdb::LogicalDependentJoin>();
        if (dep.join_condition) key(*dep.join_condition);
        for (const auto& e : dep.arbitrary_expressions) key(*e);
        for (const auto& e : dep.expression_children) key(*e);
      }
    }
    switch (join.join_type) {
      case duckdb::JoinType::MARK: {
        // The mark (IN / EXISTS as a value) is computed from the keys over the right's rows: all
        // of that acts on the mark's value, and on the rows where a filter tests it.
        Origins mark = keys;
        mark.insert(right_rows.begin(), right_rows.end());
        Bind(duckdb::ColumnBinding(join.mark_index, 0), std::move(mark));
        return left_rows;
      }
      case duckdb::JoinType::SINGLE: {
        // A scalar subquery: which of its rows gives the value acts on its columns only.
        Origins value = acting;
        value.insert(right_rows.begin(), right_rows.end());
        for (size_t i = 1; i < op.children.size(); ++i) AddToColumns(*op.children[i], value);
        return left_rows;
      }
      default:
        left_rows.insert(right_rows.begin(), right_rows.end());
        left_rows.insert(acting.begin(), acting.end());
        return left_rows;
    }
  }

  Origins SetOperation(LogicalOperator& op) {
    auto& set = op.Cast<duckdb::LogicalSetOperation>();
    Origins rows = Operator(*op.children[0]);
    Origins right_rows = Operator(*op.children[1]);
    const auto left = op.children[0]->GetColumnBindings();
    const auto right = op.children[1]->GetColumnBindings();
    if (left.size() != set.column_count || right.size() != set.column_count) return Untraced("a set operation");
    const bool both_flow = op.type == LogicalOperatorType::LOGICAL_UNION;
    for (const Origin& r : right_rows) {
      rows.insert(both_flow ? r : Origin{r.source, r.column, Compose(Subtype::kFilter, r.subtype), r.masking});
    }
    for (size_t i = 0; i < set.column_count; ++i) {
      Origins o = Lookup(left[i]);
      if (both_flow) {
        Origins r = Lookup(right[i]);
        o.insert(r.begin(), r.end());
      } else {
        // EXCEPT / INTERSECT: the right side decides which left rows remain.
        for (const Origin& r : Lookup(right[i])) {
          rows.insert(Origin{r.source, r.column, Compose(Subtype::kFilter, r.subtype), r.masking});
        }
      }
      Bind(duckdb::ColumnBinding(set.table_index, i), std::move(o));
    }
    return rows;
  }

  // Traces `op` and the plan below it; returns its row origins: the input columns acting on
  // which rows it gives (filters, join keys, grouping, ordering), as INDIRECT subtypes.
  Origins Operator(LogicalOperator& op) {
    switch (op.type) {
      case LogicalOperatorType::LOGICAL_GET:
        if (!op.children.empty()) {
          Children(op);
          return Untraced("a table-in-out function");
        }
        return Get(op.Cast<duckdb::LogicalGet>());
      case LogicalOperatorType::LOGICAL_PROJECTION: {
        Origins rows = Children(op);
        auto& p = op.Cast<duckdb::LogicalProjection>();
        for (size_t i = 0; i < op.expressions.size(); ++i) {
          Bind(duckdb::ColumnBinding(p.table_index, i), Of(*op.expressions[i]));
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_FILTER:
        return Filter(op);
      case LogicalOperatorType::LOGICAL_AGGREGATE_AND_GROUP_BY: {
        Origins rows = Children(op);
        auto& a = op.Cast<duckdb::LogicalAggregate>();
        for (size_t i = 0; i < a.groups.size(); ++i) {
          Bind(duckdb::ColumnBinding(a.group_index, i), Of(*a.groups[i]));
          // A subquery decorrelated by DuckDB groups by the outer columns it was correlated
          // with (delim columns): how DuckDB evaluates it, not a grouping of the query's.
          const duckdb::Expression& g = *a.groups[i];
          const bool decorrelation = g.GetExpressionClass() == ExpressionClass::BOUND_COLUMN_REF &&
                                     delim_bindings_.count(g.Cast<duckdb::BoundColumnRefExpression>().binding);
          if (!decorrelation) Acts(g, Subtype::kGroupBy, rows);
        }
        for (size_t i = 0; i < op.expressions.size(); ++i) {
          Bind(duckdb::ColumnBinding(a.aggregate_index, i), Of(*op.expressions[i]));
        }
        // GROUPING(…) tells which grouping set a row is of: derived from the grouped columns.
        for (size_t i = 0; i < a.grouping_functions.size(); ++i) {
          Origins o;
          for (const auto g : a.grouping_functions[i]) {
            if (g < a.groups.size()) Expression(*a.groups[g], Path{Subtype::kTransformation, false}, o);
          }
          Bind(duckdb::ColumnBinding(a.groupings_index, i), std::move(o));
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_WINDOW: {
        Origins rows = Children(op);
        auto& w = op.Cast<duckdb::LogicalWindow>();
        for (size_t i = 0; i < op.expressions.size(); ++i) {
          Bind(duckdb::ColumnBinding(w.window_index, i), Of(*op.expressions[i]));
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_UNNEST: {
        Origins rows = Children(op);
        auto& u = op.Cast<duckdb::LogicalUnnest>();
        for (size_t i = 0; i < op.expressions.size(); ++i) {
          Bind(duckdb::ColumnBinding(u.unnest_index, i), Of(*op.expressions[i]));
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_ORDER_BY: {
        Origins rows = Children(op);
        if (op.Cast<duckdb::LogicalOrder>().HasProjectionMap()) return Untraced("an ordering with a projection");
        for (const auto& order : op.Cast<duckdb::LogicalOrder>().orders) Acts(*order.expression, Subtype::kSort, rows);
        return rows;
      }
      case LogicalOperatorType::LOGICAL_TOP_N: {
        Origins rows = Children(op);
        for (const auto& order : op.Cast<duckdb::LogicalTopN>().orders) Acts(*order.expression, Subtype::kSort, rows);
        return rows;
      }
      case LogicalOperatorType::LOGICAL_DISTINCT: {
        Origins rows = Children(op);
        auto& d = op.Cast<duckdb::LogicalDistinct>();
        for (const auto& e : d.distinct_targets) Acts(*e, Subtype::kGroupBy, rows);
        if (d.order_by) {
          for (const auto& order : d.order_by->orders) Acts(*order.expression, Subtype::kSort, rows);
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_LIMIT:
      case LogicalOperatorType::LOGICAL_SAMPLE:
      case LogicalOperatorType::LOGICAL_CROSS_PRODUCT:
      case LogicalOperatorType::LOGICAL_POSITIONAL_JOIN:
      case LogicalOperatorType::LOGICAL_DUMMY_SCAN:
      case LogicalOperatorType::LOGICAL_EMPTY_RESULT:
      case LogicalOperatorType::LOGICAL_CHUNK_GET:
        return Children(op);
      case LogicalOperatorType::LOGICAL_COMPARISON_JOIN:
      case LogicalOperatorType::LOGICAL_DELIM_JOIN:
      case LogicalOperatorType::LOGICAL_DEPENDENT_JOIN:
      case LogicalOperatorType::LOGICAL_ANY_JOIN:
      case LogicalOperatorType::LOGICAL_ASOF_JOIN:
        return Join(op);
      case LogicalOperatorType::LOGICAL_DELIM_GET: {
        auto& d = op.Cast<duckdb::LogicalDelimGet>();
        const auto bindings = d.GetColumnBindings();
        for (size_t i = 0; i < bindings.size(); ++i) {
          delim_bindings_.insert(bindings[i]);
          if (!delim_columns_.empty() && i < delim_columns_.back().size()) Bind(bindings[i], delim_columns_.back()[i]);
        }
        return {};
      }
      case LogicalOperatorType::LOGICAL_UNION:
      case LogicalOperatorType::LOGICAL_EXCEPT:
      case LogicalOperatorType::LOGICAL_INTERSECT:
        return SetOperation(op);
      case LogicalOperatorType::LOGICAL_MATERIALIZED_CTE: {
        auto& cte = op.Cast<duckdb::LogicalMaterializedCTE>();
        Cte traced;
        traced.rows = Operator(*op.children[0]);
        for (const auto& b : op.children[0]->GetColumnBindings()) traced.columns.push_back(Lookup(b));
        ctes_[cte.table_index] = std::move(traced);
        return Operator(*op.children[1]);
      }
      case LogicalOperatorType::LOGICAL_RECURSIVE_CTE: {
        // The anchor's columns stand for the working table while the recursive part is traced
        // (one round: what the recursion adds beyond that is not followed).
        auto& cte = op.Cast<duckdb::LogicalRecursiveCTE>();
        Cte traced;
        traced.rows = Operator(*op.children[0]);
        const auto anchor = op.children[0]->GetColumnBindings();
        for (const auto& b : anchor) traced.columns.push_back(Lookup(b));
        ctes_[cte.table_index] = traced;
        Origins rows = traced.rows;
        Origins recursive_rows = Operator(*op.children[1]);
        rows.insert(recursive_rows.begin(), recursive_rows.end());
        const auto recursive = op.children[1]->GetColumnBindings();
        if (anchor.size() != cte.column_count || recursive.size() != cte.column_count) {
          return Untraced("a recursive CTE");
        }
        for (size_t i = 0; i < cte.column_count; ++i) {
          Origins o = traced.columns[i];
          Origins r = Lookup(recursive[i]);
          o.insert(r.begin(), r.end());
          Bind(duckdb::ColumnBinding(cte.table_index, i), std::move(o));
        }
        return rows;
      }
      case LogicalOperatorType::LOGICAL_CTE_REF: {
        auto& ref = op.Cast<duckdb::LogicalCTERef>();
        auto it = ctes_.find(ref.cte_index);
        if (it == ctes_.end()) return Untraced("a reference to an unknown CTE");
        const auto bindings = ref.GetColumnBindings();
        for (size_t i = 0; i < bindings.size() && i < it->second.columns.size(); ++i) {
          Bind(bindings[i], it->second.columns[i]);
        }
        return it->second.rows;
      }
      case LogicalOperatorType::LOGICAL_EXPRESSION_GET: {
        Origins rows = Children(op);
        auto& values = op.Cast<duckdb::LogicalExpressionGet>();
        for (size_t i = 0; i < values.expr_types.size(); ++i) {
          Origins o;
          for (const auto& row : values.expressions) {
            if (i < row.size()) Expression(*row[i], Path{}, o);
          }
          Bind(duckdb::ColumnBinding(values.table_index, i), std::move(o));
        }
        return rows;
      }
      default:
        Children(op);
        return Untraced("operator " + duckdb::LogicalOperatorToString(op.type));
    }
  }

  struct Cte {
    std::vector<Origins> columns;
    Origins rows;
  };

  duckdb::column_binding_map_t<Origins> bindings_;
  std::vector<LineageSource> sources_;
  std::map<duckdb::idx_t, Cte> ctes_;                  // by CTE table index
  std::vector<std::vector<Origins>> delim_columns_;    // innermost delim join last
  duckdb::column_binding_set_t delim_bindings_;        // columns of delim gets
  std::vector<std::string> columns_;
  std::vector<Origins> origins_;
  Origins dataset_;
  std::string untraced_;  // the first shape not traced; empty when all was
};

struct LineageBindData final : duckdb::TableFunctionData {
  std::string json;
  bool Equals(const duckdb::FunctionData& other) const override {
    return json == other.Cast<LineageBindData>().json;
  }
  duckdb::unique_ptr<duckdb::FunctionData> Copy() const override {
    auto copy = duckdb::make_uniq<LineageBindData>();
    copy->json = json;
    return copy;
  }
};

duckdb::unique_ptr<duckdb::FunctionData> Bind(duckdb::ClientContext& context, duckdb::TableFunctionBindInput& input,
                                              duckdb::vector<duckdb::LogicalType>& return_types,
                                              duckdb::vector<duckdb::string>& names) {
  if (input.inputs.size() != 2 || input.inputs[0].IsNull() || input.inputs[1].IsNull() ||
      !ConstantTimeEquals(duckdb::StringValue::Get(input.inputs[1]), CallerKey())) {
    throw duckdb::BinderException(std::string(kFunctionName) + " is for skade's own use");
  }
  const std::string sql = duckdb::StringValue::Get(input.inputs[0]);
  duckdb::Parser parser(context.GetParserOptions());
  parser.ParseQuery(sql);
  if (parser.statements.size() != 1 || parser.statements[0]->type != duckdb::StatementType::SELECT_STATEMENT) {
    throw duckdb::BinderException(std::string(kFunctionName) + " traces exactly one query");
  }
  // The planner binds on this connection (its schema and macros) inside this statement's
  // transaction: views and tables resolve as when the query runs. Nothing is optimised: every
  // filter, join key and projection stays where the query put it.
  duckdb::Planner planner(context);
  planner.CreatePlan(std::move(parser.statements[0]));
  if (!planner.plan) throw duckdb::BinderException(std::string(kFunctionName) + ": the query has no plan");
  PlanLineage lineage;
  lineage.Trace(*planner.plan, planner.names);
  auto data = duckdb::make_uniq<LineageBindData>();
  data->json = lineage.ToJson().dump();
  return_types.push_back(duckdb::LogicalType::VARCHAR);
  names.emplace_back("lineage");
  return data;
}

struct LineageState final : duckdb::GlobalTableFunctionState {
  bool done = false;
};

duckdb::unique_ptr<duckdb::GlobalTableFunctionState> Init(duckdb::ClientContext&, duckdb::TableFunctionInitInput&) {
  return duckdb::make_uniq<LineageState>();
}

void Scan(duckdb::ClientContext&, duckdb::TableFunctionInput& input, duckdb::DataChunk& output) {
  auto& state = input.global_state->Cast<LineageState>();
  if (state.done) return;
  output.SetValue(0, 0, duckdb::Value(input.bind_data->Cast<LineageBindData>().json));
  output.SetCardinality(1);
  state.done = true;
}

Result<LineageOrigin> OriginOf(const Json& o, size_t sources) {
  if (!o.is_array() || o.size() != 4 || !o[0].is_number_unsigned() || !o[1].is_string() ||
      !o[2].is_number_integer() || !o[3].is_boolean() || o[0].get<size_t>() >= sources ||
      o[2].get<int>() < static_cast<int>(Subtype::kIdentity) ||
      o[2].get<int>() > static_cast<int>(Subtype::kConditional)) {
    return Status::Internal("query lineage: malformed origin");
  }
  return LineageOrigin{o[0].get<size_t>(), o[1].get<std::string>(), static_cast<Subtype>(o[2].get<int>()),
                       o[3].get<bool>()};
}

}  // namespace

const char* LineageTypeName(LineageSubtype subtype) { return IsDirect(subtype) ? "DIRECT" : "INDIRECT"; }

const char* LineageSubtypeName(LineageSubtype subtype) {
  switch (subtype) {
    case Subtype::kIdentity: return "IDENTITY";
    case Subtype::kTransformation: return "TRANSFORMATION";
    case Subtype::kAggregation: return "AGGREGATION";
    case Subtype::kJoin: return "JOIN";
    case Subtype::kGroupBy: return "GROUP_BY";
    case Subtype::kFilter: return "FILTER";
    case Subtype::kSort: return "SORT";
    case Subtype::kWindow: return "WINDOW";
    case Subtype::kConditional: return "CONDITIONAL";
  }
  return "TRANSFORMATION";
}

Status RegisterQueryLineageFunction(duckdb::DatabaseInstance& instance) {
  try {
    duckdb::TableFunction function(kFunctionName, {duckdb::LogicalType::VARCHAR, duckdb::LogicalType::VARCHAR}, Scan,
                                   Bind, Init);
    duckdb::ExtensionLoader loader(instance, "skade");
    loader.RegisterFunction(function);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot register ") + kFunctionName + ": " + duckdb::ErrorData(e).Message());
  }
  return Status::Ok();
}

Result<QueryLineage> DeriveLineage(Database& db, std::string_view query) {
  SKADE_ASSIGN_OR_RETURN(
      auto rows, db.QueryRows("SELECT lineage FROM " + std::string(kFunctionName) + "(" + QuoteString(query) + ", " +
                              QuoteString(CallerKey()) + ")"));
  if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) return Status::Internal("query lineage: no result");
  Json doc = Json::parse(*rows[0][0], nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Status::Internal("query lineage: malformed result");
  QueryLineage out;
  try {
    for (const Json& s : doc.at("sources")) {
      out.sources.push_back(LineageSource{s.at("function").get<std::string>(),
                                          s.at("arguments").get<std::vector<std::string>>(),
                                          s.at("table").get<std::vector<std::string>>()});
    }
    for (const Json& c : doc.at("columns")) {
      out.columns.push_back(c.at("name").get<std::string>());
      std::vector<LineageOrigin> origins;
      for (const Json& o : c.at("origins")) {
        SKADE_ASSIGN_OR_RETURN(LineageOrigin origin, OriginOf(o, out.sources.size()));
        origins.push_back(std::move(origin));
      }
      out.origins.push_back(std::move(origins));
    }
    for (const Json& o : doc.at("dataset")) {
      SKADE_ASSIGN_OR_RETURN(LineageOrigin origin, OriginOf(o, out.sources.size()));
      out.dataset.push_back(std::move(origin));
    }
    out.columns_traced = doc.at("traced").get<bool>();
    out.untraced = doc.at("untraced").get<std::string>();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("query lineage: malformed result: ") + e.what());
  }
  return out;
}

}  // namespace skade::engine
