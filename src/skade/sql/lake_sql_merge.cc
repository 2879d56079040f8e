// LakeSql's joined writes: UPDATE … FROM and MERGE, each one Iceberg commit over its target — an
// overwrite that removes the target rows they update or delete and writes the updated and the
// inserted rows (an append when they only insert, a delete when they only delete). The SQL that
// runs is made from the statement's checked renderings (engine::ParseStatement), the target's
// view and quoted column names, and is parsed again before it runs.
//
// The rows to remove are named by their values: the overwrite's predicate holds for a target row
// whose columns are all equal (IS NOT DISTINCT FROM) to those of a row an UPDATE or DELETE
// clause applies to. Target rows with equal values are alike to the statement too (its ON and
// WHEN conditions see only values), so each has the same clause applied.
#include <algorithm>
#include <map>
#include <set>

#include "skade/base/log.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/schema_convert.h"
#include "skade/sql/lake_sql.h"

namespace skade::sql {

using engine::MergeAction;
using engine::QuoteIdentifier;
using Kind = engine::Statement::Kind;

namespace {

// One WHEN clause made runnable: the (target, source) rows it applies to.
struct Branch {
  const MergeAction* action = nullptr;
  std::string from;   // the relation of its rows ("<target> JOIN <source> ON (…)", …)
  std::string where;  // its condition holds and no earlier clause of its kind applied
};

std::string JoinedAnd(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " AND ") + p;
  return out.empty() ? "true" : out;
}

std::string CountOf(const std::string& from, const std::string& where) {
  return "SELECT count(*) FROM " + from + " WHERE " + where;
}

}  // namespace

Result<int64_t> LakeSql::ExecuteJoinedWrite(const engine::Statement& w, const catalog::TableIdent& ident,
                                            table::Table& t, engine::Database& db,
                                            const std::string& default_schema) {
  const char* what = w.kind == Kind::kMerge ? "MERGE" : "UPDATE … FROM";
  if (w.from.empty() || w.target_alias.empty() || (w.kind == Kind::kMerge && !w.on)) {
    return Status::InvalidArgument(std::string(what) + ": the statement was not parsed as one");
  }
  iceberg::SchemaPtr schema = t.metadata().CurrentSchema();
  if (!schema) return Status::Corruption("table " + ident.ToString() + " has no current schema");
  std::vector<std::string> columns;
  std::map<std::string, std::string> types;  // column → DuckDB type, for the NULLs of an INSERT
  for (const iceberg::NestedField& f : schema->fields()) {
    columns.push_back(f.name);
    SKADE_ASSIGN_OR_RETURN(types[f.name], engine::DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
  }
  const std::string alias = QuoteIdentifier(w.target_alias);
  const std::string target = ViewName(ident) + " AS " + alias;
  auto qualified = [&](const std::string& column) { return alias + "." + QuoteIdentifier(column); };

  // The relations of each kind of clause, and the count of target rows with a match.
  std::vector<MergeAction> update_from;
  const std::vector<MergeAction>* actions = &w.merge_actions;
  std::string matched_from, matched_where = "true", matched_targets;
  if (w.kind == Kind::kUpdate) {
    MergeAction a;
    a.when = MergeAction::When::kMatched;
    a.action = MergeAction::Do::kUpdate;
    a.assignments = w.assignments;
    update_from.push_back(std::move(a));
    actions = &update_from;
    matched_from = target + ", " + w.from;
    if (w.where) matched_where = w.where->sql();
    matched_targets = "SELECT count(*) FROM " + target + " WHERE EXISTS (SELECT 1 FROM " + w.from + " WHERE " +
                      matched_where + ")";
  } else {
    const std::string& on = w.on->sql();
    matched_from = target + " JOIN " + w.from + " ON " + on;
    matched_targets = "SELECT count(*) FROM " + target + " SEMI JOIN " + w.from + " ON " + on;
  }
  const std::string by_source_from = w.on ? target + " ANTI JOIN " + w.from + " ON " + w.on->sql() : "";
  const std::string by_target_from = w.on ? w.from + " ANTI JOIN " + target + " ON " + w.on->sql() : "";

  // Each clause applies where its condition holds and no earlier one of its kind applied (SQL's
  // first-match rule); a clause after one without a condition never applies.
  std::vector<Branch> branches;
  std::map<MergeAction::When, std::vector<std::string>> earlier;  // negated conditions so far
  std::set<MergeAction::When> closed;                              // an unconditional clause seen
  for (const MergeAction& a : *actions) {
    if (closed.count(a.when)) continue;
    Branch b;
    b.action = &a;
    std::vector<std::string> where = earlier[a.when];
    switch (a.when) {
      case MergeAction::When::kMatched:
        b.from = matched_from;
        where.insert(where.begin(), matched_where);
        break;
      case MergeAction::When::kNotMatchedBySource:
        b.from = by_source_from;
        break;
      case MergeAction::When::kNotMatchedByTarget:
        b.from = by_target_from;
        break;
    }
    if (a.condition) {
      where.push_back(a.condition->sql() + " IS TRUE");
      earlier[a.when].push_back(a.condition->sql() + " IS NOT TRUE");
    } else {
      closed.insert(a.when);
    }
    b.where = JoinedAnd(where);
    if (a.action != MergeAction::Do::kNothing) branches.push_back(std::move(b));
  }

  // The rows each clause writes, as the table's columns in order.
  const std::set<std::string> known(columns.begin(), columns.end());
  std::vector<std::string> writes;  // SELECTs of updated and inserted rows
  std::vector<std::string> removes;  // SELECTs of the values of target rows to remove
  std::string keys;
  for (size_t i = 0; i < columns.size(); ++i) {
    keys += (i ? ", " : "") + qualified(columns[i]) + " AS __skade_k" + std::to_string(i);
  }
  for (const Branch& b : branches) {
    const MergeAction& a = *b.action;
    if (a.action == MergeAction::Do::kUpdate || a.action == MergeAction::Do::kDelete) {
      removes.push_back("SELECT " + keys + " FROM " + b.from + " WHERE " + b.where);
    }
    std::map<std::string, std::string> values;
    if (a.action == MergeAction::Do::kUpdate) {
      for (const auto& [column, value] : a.assignments) {
        if (!known.count(column)) {
          return Status::InvalidArgument(std::string(what) + ": table " + ident.ToString() + " has no column '" +
                                         column + "'");
        }
        if (!values.emplace(column, value).second) {
          return Status::InvalidArgument(std::string(what) + ": column '" + column + "' is set twice");
        }
      }
    } else if (a.action == MergeAction::Do::kInsert) {
      if (a.columns.empty() && a.values.size() != columns.size()) {
        return Status::InvalidArgument(std::string(what) + ": INSERT gives " + std::to_string(a.values.size()) +
                                       " values for the " + std::to_string(columns.size()) + " columns of " +
                                       ident.ToString());
      }
      for (size_t i = 0; i < a.values.size(); ++i) {
        const std::string& column = a.columns.empty() ? columns[i] : a.columns[i];
        if (!known.count(column)) {
          return Status::InvalidArgument(std::string(what) + ": table " + ident.ToString() + " has no column '" +
                                         column + "'");
        }
        if (!values.emplace(column, a.values[i]).second) {
          return Status::InvalidArgument(std::string(what) + ": column '" + column + "' is inserted twice");
        }
      }
    } else {
      continue;
    }
    std::string select;
    for (const std::string& c : columns) {
      auto it = values.find(c);
      std::string value = it != values.end() ? it->second
                          : a.action == MergeAction::Do::kUpdate ? qualified(c)
                                                                  : "CAST(NULL AS " + types[c] + ")";
      select += (select.empty() ? "" : ", ") + value + " AS " + QuoteIdentifier(c);
    }
    writes.push_back("SELECT " + select + " FROM " + b.from + " WHERE " + b.where);
  }
  auto union_all = [](const std::vector<std::string>& queries) {
    std::string out;
    for (const std::string& q : queries) out += (out.empty() ? "" : "\nUNION ALL\n") + q;
    return out;
  };
  // What runs is a re-rendering of the parse tree of what was composed, resolved against the
  // lake (views current, AT clauses and listings substituted) as a query of the session.
  auto runnable = [&](const std::string& composed) -> Result<std::string> {
    SKADE_ASSIGN_OR_RETURN(engine::Query q, engine::Query::Parse(composed).WithContext(what));
    return ResolveQuery(q.sql(), default_schema);
  };
  auto count = [&](const std::string& query) -> Result<int64_t> {
    SKADE_ASSIGN_OR_RETURN(std::string sql, runnable(query));
    SKADE_ASSIGN_OR_RETURN(auto rows, db.QueryRows(sql));
    if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) return Status::Internal("unexpected count");
    return std::stoll(*rows[0][0]);
  };

  // A target row that several source rows match would be changed by each of them (SQL's
  // cardinality rule: an error, never an arbitrary pick).
  const bool any_matched = std::any_of(branches.begin(), branches.end(), [](const Branch& b) {
    return b.action->when == MergeAction::When::kMatched;
  });
  if (any_matched) {
    SKADE_ASSIGN_OR_RETURN(int64_t pairs, count(CountOf(matched_from, matched_where)));
    SKADE_ASSIGN_OR_RETURN(int64_t targets, count(matched_targets));
    if (pairs != targets) {
      return Status::InvalidArgument(std::string(what) + ": a row of " + ident.ToString() +
                                     " matches more than one source row (" + std::to_string(pairs) + " matches for " +
                                     std::to_string(targets) + " rows)");
    }
  }
  int64_t removed = 0, inserted = 0;
  for (const Branch& b : branches) {
    SKADE_ASSIGN_OR_RETURN(int64_t n, count(CountOf(b.from, b.where)));
    (b.action->action == MergeAction::Do::kInsert ? inserted : removed) += n;
  }
  if (removed + inserted == 0) return 0;

  // Lineage: the rows written come from the write queries; a MERGE that only deletes writes no
  // column, and what it read is that of the rows it removes.
  RecordLineage(t, db, writes.empty() ? union_all(removes) : union_all(writes), default_schema,
                writes.empty() ? std::vector<std::string>{} : columns);
  std::optional<engine::WriteSource> source;
  if (!writes.empty()) {
    SKADE_ASSIGN_OR_RETURN(std::string sql, runnable(union_all(writes)));
    source = engine::WriteSource{sql, nullptr};
  }
  if (removed == 0) {
    SKADE_RETURN_IF_ERROR(t.Append(*source).status());
    return inserted;
  }
  SKADE_ASSIGN_OR_RETURN(std::string matched_rows, runnable(union_all(removes)));
  std::string same;
  for (size_t i = 0; i < columns.size(); ++i) {
    same += (i ? " AND " : "") + std::string("__skade_m.__skade_k") + std::to_string(i) + " IS NOT DISTINCT FROM " +
            QuoteIdentifier(columns[i]);
  }
  SKADE_ASSIGN_OR_RETURN(engine::Predicate remove,
                         engine::Predicate::Parse("EXISTS (SELECT 1 FROM (" + matched_rows + "\n) AS __skade_m WHERE " +
                                                      same + ")",
                                                  engine::Predicate::Subqueries::kAllow)
                             .WithContext(what));
  if (source) {
    SKADE_RETURN_IF_ERROR(t.OverwriteWhere(remove, *source).status());
  } else {
    SKADE_RETURN_IF_ERROR(t.DeleteWhere(remove).status());
  }
  return removed + inserted;
}

}  // namespace skade::sql
