// libFuzzer target: arbitrary bytes as the SQL a Flight SQL client or `skade sql` sends, and as
// the `--where` / `--schema` / `ingest --sql` texts of the CLI: engine::ParseStatement,
// Predicate::Parse, Query::Parse and ParseTableDefinition, DuckDB's parser underneath. What
// they accept is re-rendered SQL that must parse again to the same rendering (user_sql.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "skade/engine/user_sql.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "sql_classifier_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto st = skade::engine::ParseStatement(text); st.ok()) {
    // A write's rendered parts are single expressions or queries of their own.
    if (st->where) {
      auto again = skade::engine::Predicate::Parse(st->where->sql(), skade::engine::Predicate::Subqueries::kAllow);
      if (!again.ok()) Fail("a rendered WHERE does not parse", st->where->sql() + ": " + again.status().ToString());
    }
    if (st->query) {
      auto again = skade::engine::Query::Parse(st->query->sql());
      if (!again.ok()) Fail("a rendered query does not parse", st->query->sql() + ": " + again.status().ToString());
    }
  }
  if (auto p = skade::engine::Predicate::Parse(text); p.ok()) {
    auto again = skade::engine::Predicate::Parse(p->sql());
    if (!again.ok() || again->sql() != p->sql()) Fail("a predicate's rendering is not stable", p->sql());
  }
  if (auto q = skade::engine::Query::Parse(text); q.ok()) {
    auto again = skade::engine::Query::Parse(q->sql());
    if (!again.ok() || again->sql() != q->sql()) Fail("a query's rendering is not stable", q->sql());
  }
  (void)skade::engine::ParseTableDefinition(text);
  return 0;
}
