// Tables exposed to SQL as a DuckDB table function that is planned per statement with what
// DuckDB pushes into its scan (DESIGN §10): the filters on its columns and the columns the
// statement reads. A view `SELECT * FROM skade_scan('<token>')` stands for a registered
// ScanSource; when the statement runs, the source is asked for the SQL of exactly that scan
// (files pruned by the filter, only the columns read) and its rows stream through. That query
// decodes on every thread (engine/chunk_feed_internal.h), and every thread of the statement
// takes its rows, in runs of chunks (morsels) numbered in the source's order as DuckDB's batch
// indexes: what the statement does with them (its filters, joins, Arrow conversion) runs in
// parallel, and a statement that keeps its sources' order keeps it.
//
// Soundness: the filters handed to the source are a conjunction DuckDB itself applies above
// the scan (none is removed from the plan), rendered from DuckDB's bound expressions into SQL
// that engine::Predicate parses again. Only comparisons, BETWEEN, IN, IS [NOT] NULL, prefix
// LIKE, AND and OR over columns (nested fields too) and constants are rendered; any other
// conjunct is left out, which only weakens the filter. A source must return every row that
// may match; DuckDB then filters exactly.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skade/base/status.h"
#include "skade/engine/user_sql.h"

namespace skade::engine {

// What one scan of a statement needs.
struct PushedScan {
  // The top-level columns read, in table order; empty when none is (count(*)).
  std::vector<std::string> columns;
  std::optional<Predicate> filter;
};

// A scan's rows in parts, each a query over some of its files, planned as they are asked for:
// a statement that stops early (a LIMIT) plans and reads no more than the parts it took.
// Called from one thread at a time.
class ScanParts {
 public:
  virtual ~ScanParts() = default;
  // The next part's query (as ScanPlan::sql), nullopt after the last.
  virtual Result<std::optional<std::string>> Next() = 0;
};

struct ScanPlan {
  // A query giving `columns` (by name; cast to the declared types here) for every row that
  // may match the filter.
  std::string sql;
  // For a scan that reads no column: the number of rows, and no query runs.
  std::optional<int64_t> row_count;
  // Instead of `sql`: the rows come from these parts, one after the other.
  std::shared_ptr<ScanParts> parts;
};

// Thread-safe implementations: statements of several connections plan at once.
class ScanSource {
 public:
  virtual ~ScanSource() = default;
  virtual Result<ScanPlan> Plan(const PushedScan& scan) = 0;
};

struct ScanSourceInfo {
  std::vector<std::string> names;  // top-level columns
  std::vector<std::string> types;  // their DuckDB types ("BIGINT", "STRUCT(a INTEGER)")
  std::optional<int64_t> estimated_rows;
  std::shared_ptr<ScanSource> source;
};

// The sources of one Database. Thread-safe. A statement bound while a source was registered
// keeps it (shared) after Retire.
class ScanSources {
 public:
  // A retired source stays findable this long: a statement whose transaction began before
  // its view was replaced still binds the old view (DuckDB's catalog is versioned).
  static constexpr std::chrono::seconds kRetiredGrace{120};

  // A new token; `skade_scan('<token>')` reads the source.
  std::string Register(ScanSourceInfo info);
  // The source's view was replaced or dropped: found for kRetiredGrace more, then forgotten.
  void Retire(const std::string& token);
  std::optional<ScanSourceInfo> Find(const std::string& token) const;

 private:
  void PurgeLocked(std::chrono::steady_clock::time_point now);
  mutable std::mutex mu_;
  std::map<std::string, ScanSourceInfo> sources_;
  std::map<std::string, std::chrono::steady_clock::time_point> retired_;  // token → when it goes
};

// The table function a view of a registered source reads: skade_scan('<token>').
inline constexpr const char* kPushdownScanFunction = "skade_scan";

// The SQL of the view standing for a registered source.
std::string PushdownScanSql(const std::string& token);

}  // namespace skade::engine
