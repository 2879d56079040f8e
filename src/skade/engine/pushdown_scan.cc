#include "skade/engine/pushdown_scan.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <mutex>
#include <utility>

#include "duckdb.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parallel/task_scheduler.hpp"
#include "duckdb/planner/expression/list.hpp"
#include "duckdb/planner/operator/logical_get.hpp"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/engine/chunk_feed_internal.h"
#include "skade/engine/database.h"
#include "skade/engine/pushdown_scan_internal.h"
#include "skade/engine/query_lineage_internal.h"

namespace skade::engine {

std::string ScanSources::Register(ScanSourceInfo info) {
  std::string token = Uuid::NewV7().ToString();
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(std::chrono::steady_clock::now());
  sources_.emplace(token, std::move(info));
  return token;
}

void ScanSources::Retire(const std::string& token) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  PurgeLocked(now);
  if (sources_.count(token)) retired_.emplace(token, now + kRetiredGrace);
}

void ScanSources::PurgeLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    sources_.erase(it->first);
    it = retired_.erase(it);
  }
}

std::optional<ScanSourceInfo> ScanSources::Find(const std::string& token) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(token);
  if (it == sources_.end()) return std::nullopt;
  return it->second;
}

std::string PushdownScanSql(const std::string& token) { return "SELECT * FROM skade_scan(" + QuoteString(token) + ")"; }

namespace {

constexpr const char* kFunctionName = kPushdownScanFunction;

struct SourcesInfo final : duckdb::TableFunctionInfo {
  SourcesInfo(std::shared_ptr<ScanSources> s, DataFileChecks* c) : sources(std::move(s)), checks(c) {}
  std::shared_ptr<ScanSources> sources;
  DataFileChecks* checks;  // names the file behind a read error (DataFileChecks::Explain)
};

struct ScanBindData final : duckdb::TableFunctionData {
  ScanSourceInfo info;
  DataFileChecks* checks = nullptr;
  std::vector<duckdb::LogicalType> types;
  // The conjuncts rendered at the last filter pushdown (DuckDB may push twice: the list is
  // replaced, never appended to).
  std::vector<std::string> conjuncts;

  duckdb::unique_ptr<duckdb::FunctionData> Copy() const override {
    auto copy = duckdb::make_uniq<ScanBindData>();
    copy->info = info;
    copy->checks = checks;
    copy->types = types;
    copy->conjuncts = conjuncts;
    return copy;
  }
  bool Equals(const duckdb::FunctionData& other) const override {
    const auto& o = other.Cast<ScanBindData>();
    return info.source == o.info.source && conjuncts == o.conjuncts;
  }
};

// ---------------------------------------------------------------- filter rendering

// The SQL of a column (or a nested field of one) of this scan; nullopt for anything else.
std::optional<std::string> ColumnPath(const duckdb::Expression& e, const duckdb::LogicalGet& get) {
  using duckdb::ExpressionClass;
  if (e.GetExpressionClass() == ExpressionClass::BOUND_COLUMN_REF) {
    const auto& ref = e.Cast<duckdb::BoundColumnRefExpression>();
    if (ref.depth != 0 || ref.binding.table_index != get.table_index) return std::nullopt;
    const auto& ids = get.GetColumnIds();
    if (ref.binding.column_index >= ids.size()) return std::nullopt;
    const duckdb::ColumnIndex& index = ids[ref.binding.column_index];
    if (index.IsRowIdColumn() || index.IsVirtualColumn() || index.IsEmptyColumn()) return std::nullopt;
    const auto primary = index.GetPrimaryIndex();
    if (primary >= get.names.size()) return std::nullopt;
    return QuoteIdentifier(get.names[primary]);
  }
  if (e.GetExpressionClass() == ExpressionClass::BOUND_FUNCTION) {
    const auto& f = e.Cast<duckdb::BoundFunctionExpression>();
    if (f.function.name != "struct_extract" || f.children.size() != 2) return std::nullopt;
    if (f.children[1]->GetExpressionClass() != ExpressionClass::BOUND_CONSTANT) return std::nullopt;
    const duckdb::Value& key = f.children[1]->Cast<duckdb::BoundConstantExpression>().value;
    if (key.IsNull() || key.type().id() != duckdb::LogicalTypeId::VARCHAR) return std::nullopt;
    auto parent = ColumnPath(*f.children[0], get);
    if (!parent) return std::nullopt;
    return *parent + "." + QuoteIdentifier(key.GetValue<std::string>());
  }
  return std::nullopt;
}

// A constant as SQL, for the types whose rendering DuckDB parses back to the same value.
std::optional<std::string> Constant(const duckdb::Expression& e) {
  if (e.GetExpressionClass() != duckdb::ExpressionClass::BOUND_CONSTANT) return std::nullopt;
  const duckdb::Value& v = e.Cast<duckdb::BoundConstantExpression>().value;
  if (v.IsNull()) return std::nullopt;
  using duckdb::LogicalTypeId;
  switch (v.type().id()) {
    case LogicalTypeId::BOOLEAN:
    case LogicalTypeId::TINYINT:
    case LogicalTypeId::SMALLINT:
    case LogicalTypeId::INTEGER:
    case LogicalTypeId::BIGINT:
    case LogicalTypeId::HUGEINT:
    case LogicalTypeId::UTINYINT:
    case LogicalTypeId::USMALLINT:
    case LogicalTypeId::UINTEGER:
    case LogicalTypeId::UBIGINT:
    case LogicalTypeId::DECIMAL:
    case LogicalTypeId::DATE:
    case LogicalTypeId::TIME:
    case LogicalTypeId::TIMESTAMP:
    case LogicalTypeId::TIMESTAMP_TZ:
    case LogicalTypeId::UUID:
      break;
    case LogicalTypeId::VARCHAR:
      // A NUL would end the text a parser reads: such a constant is not pushed.
      if (v.GetValue<std::string>().find('\0') != std::string::npos) return std::nullopt;
      break;
    case LogicalTypeId::FLOAT:
    case LogicalTypeId::DOUBLE: {
      const double d = v.GetValue<double>();
      if (!std::isfinite(d)) return std::nullopt;
      break;
    }
    default:
      return std::nullopt;
  }
  // Typed, so the constant keeps its type when parsed again ('…'::DATE, 1.5::DECIMAL(3,1)).
  return "CAST(" + v.ToSQLString() + " AS " + v.type().ToString() + ")";
}

const char* ComparisonOperator(duckdb::ExpressionType type) {
  using duckdb::ExpressionType;
  switch (type) {
    case ExpressionType::COMPARE_EQUAL: return "=";
    case ExpressionType::COMPARE_NOTEQUAL: return "<>";
    case ExpressionType::COMPARE_LESSTHAN: return "<";
    case ExpressionType::COMPARE_GREATERTHAN: return ">";
    case ExpressionType::COMPARE_LESSTHANOREQUALTO: return "<=";
    case ExpressionType::COMPARE_GREATERTHANOREQUALTO: return ">=";
    default: return nullptr;
  }
}

const char* Flipped(const char* op) {
  const std::string o(op);
  if (o == "<") return ">";
  if (o == ">") return "<";
  if (o == "<=") return ">=";
  if (o == ">=") return "<=";
  return op;
}

// The SQL of a filter expression, or nullopt when it is not one this scan renders. An AND
// keeps the parts it can render (a weaker filter); an OR needs all of them.
std::optional<std::string> Render(const duckdb::Expression& e, const duckdb::LogicalGet& get) {
  using duckdb::ExpressionClass;
  using duckdb::ExpressionType;
  switch (e.GetExpressionClass()) {
    case ExpressionClass::BOUND_COMPARISON: {
      const auto& c = e.Cast<duckdb::BoundComparisonExpression>();
      const char* op = ComparisonOperator(c.type);
      if (op == nullptr) return std::nullopt;
      if (auto col = ColumnPath(*c.left, get)) {
        if (auto value = Constant(*c.right)) return "(" + *col + " " + op + " " + *value + ")";
      }
      if (auto col = ColumnPath(*c.right, get)) {
        if (auto value = Constant(*c.left)) return "(" + *col + " " + Flipped(op) + " " + *value + ")";
      }
      return std::nullopt;
    }
    case ExpressionClass::BOUND_BETWEEN: {
      const auto& b = e.Cast<duckdb::BoundBetweenExpression>();
      auto col = ColumnPath(*b.input, get);
      auto lower = Constant(*b.lower);
      auto upper = Constant(*b.upper);
      if (!col || !lower || !upper) return std::nullopt;
      return "(" + *col + (b.lower_inclusive ? " >= " : " > ") + *lower + " AND " + *col +
             (b.upper_inclusive ? " <= " : " < ") + *upper + ")";
    }
    case ExpressionClass::BOUND_OPERATOR: {
      const auto& o = e.Cast<duckdb::BoundOperatorExpression>();
      if (o.children.empty()) return std::nullopt;
      auto col = ColumnPath(*o.children[0], get);
      if (!col) return std::nullopt;
      if (e.type == ExpressionType::OPERATOR_IS_NULL && o.children.size() == 1) return "(" + *col + " IS NULL)";
      if (e.type == ExpressionType::OPERATOR_IS_NOT_NULL && o.children.size() == 1) return "(" + *col + " IS NOT NULL)";
      if (e.type == ExpressionType::COMPARE_IN && o.children.size() >= 2) {
        std::string list;
        for (size_t i = 1; i < o.children.size(); ++i) {
          auto value = Constant(*o.children[i]);
          if (!value) return std::nullopt;  // a NULL in the list, or a type not rendered
          list += (i > 1 ? ", " : "") + *value;
        }
        return "(" + *col + " IN (" + list + "))";
      }
      return std::nullopt;
    }
    case ExpressionClass::BOUND_FUNCTION: {
      const auto& f = e.Cast<duckdb::BoundFunctionExpression>();
      // LIKE 'ab%' is bound as prefix(col, 'ab').
      if ((f.function.name == "prefix" || f.function.name == "starts_with") && f.children.size() == 2) {
        auto col = ColumnPath(*f.children[0], get);
        auto value = Constant(*f.children[1]);
        if (col && value) return "starts_with(" + *col + ", " + *value + ")";
      }
      return std::nullopt;
    }
    case ExpressionClass::BOUND_CONJUNCTION: {
      const auto& c = e.Cast<duckdb::BoundConjunctionExpression>();
      const bool is_and = e.type == ExpressionType::CONJUNCTION_AND;
      if (!is_and && e.type != ExpressionType::CONJUNCTION_OR) return std::nullopt;
      std::vector<std::string> parts;
      for (const auto& child : c.children) {
        auto part = Render(*child, get);
        if (!part) {
          if (is_and) continue;
          return std::nullopt;
        }
        parts.push_back(std::move(*part));
      }
      if (parts.empty()) return std::nullopt;
      std::string out = "(";
      for (size_t i = 0; i < parts.size(); ++i) out += (i ? (is_and ? " AND " : " OR ") : "") + parts[i];
      return out + ")";
    }
    default:
      return std::nullopt;
  }
}

// ---------------------------------------------------------------- the table function

duckdb::unique_ptr<duckdb::FunctionData> Bind(duckdb::ClientContext& context, duckdb::TableFunctionBindInput& input,
                                              duckdb::vector<duckdb::LogicalType>& return_types,
                                              duckdb::vector<duckdb::string>& names) {
  if (input.inputs.size() != 1 || input.inputs[0].IsNull()) throw duckdb::BinderException("skade_scan needs a token");
  const auto& sources = input.info->Cast<SourcesInfo>().sources;
  auto found = sources->Find(input.inputs[0].GetValue<std::string>());
  if (!found) throw duckdb::BinderException("skade_scan: no such table source (the view is stale; run the statement again)");
  auto data = duckdb::make_uniq<ScanBindData>();
  data->info = std::move(*found);
  data->checks = input.info->Cast<SourcesInfo>().checks;
  for (size_t i = 0; i < data->info.names.size(); ++i) {
    names.push_back(data->info.names[i]);
    data->types.push_back(duckdb::TransformStringToLogicalType(data->info.types[i], context));
    return_types.push_back(data->types.back());
  }
  return data;
}

void PushdownFilters(duckdb::ClientContext&, duckdb::LogicalGet& get, duckdb::FunctionData* bind_data,
                     duckdb::vector<duckdb::unique_ptr<duckdb::Expression>>& filters) {
  auto& data = bind_data->Cast<ScanBindData>();
  std::vector<std::string> conjuncts;
  try {
    for (const auto& f : filters) {
      if (auto sql = Render(*f, get)) conjuncts.push_back(std::move(*sql));
    }
  } catch (const std::exception& e) {
    // Pruning is an optimisation: without it the scan is whole, never wrong.
    SKADE_LOG_WARN("skade_scan: filters not pushed down: {}", e.what());
    conjuncts.clear();
  }
  data.conjuncts = std::move(conjuncts);
  // `filters` is left as it is: DuckDB applies every one of them above the scan.
}

duckdb::virtual_column_map_t VirtualColumns(duckdb::ClientContext&, duckdb::optional_ptr<duckdb::FunctionData>) {
  duckdb::virtual_column_map_t columns;
  // count(*) then reads no column at all.
  columns.insert(std::make_pair(duckdb::COLUMN_IDENTIFIER_EMPTY, duckdb::TableColumn("", duckdb::LogicalType::BOOLEAN)));
  return columns;
}

duckdb::unique_ptr<duckdb::NodeStatistics> Cardinality(duckdb::ClientContext&, const duckdb::FunctionData* bind_data) {
  const auto& data = bind_data->Cast<ScanBindData>();
  if (!data.info.estimated_rows) return duckdb::make_uniq<duckdb::NodeStatistics>();
  return duckdb::make_uniq<duckdb::NodeStatistics>(static_cast<duckdb::idx_t>(*data.info.estimated_rows));
}

// What one thread of a scan emits next: a run of the source's rows in its order (a morsel,
// DuckDB's batch index), taken from the source at once so that the threads' runs never
// interleave.
struct ScanLocal final : duckdb::LocalTableFunctionState {
  struct Piece {
    duckdb::unique_ptr<duckdb::DataChunk> chunk;  // null: `rows` rows of no column
    duckdb::idx_t rows = 0;
  };
  std::deque<Piece> pieces;
  duckdb::idx_t morsel = 0;  // the batch index of the run `pieces` holds
};

// The source's rows are one stream (the inner query, part after part: a ChunkFeed each, whose
// query decodes on every thread), taken in morsels by every thread of the statement: a thread
// takes the next run of ready chunks (running the inner query's tasks while none is ready) and
// leaves; what the statement does with them (filters, projections, its Arrow conversion) runs
// in that thread, in parallel with the others. Morsels grow from one chunk (first rows at once)
// to kMaxMorselChunks or kMaxMorselBytes.
struct ScanState final : duckdb::GlobalTableFunctionState {
  static constexpr size_t kMaxMorselChunks = 60;  // 122,880 rows: a Parquet row group
  static constexpr size_t kMaxMorselBytes = size_t{16} << 20;
  static constexpr int64_t kMaxWaitingBytes = int64_t{32} << 20;  // decoded ahead of the takers

  std::mutex mu;
  duckdb::unique_ptr<duckdb::Connection> connection;
  std::shared_ptr<ChunkFeed> feed;         // the part running now (after `connection`: ends first)
  std::string sql;                         // its query, for DataFileChecks::Explain
  DataFileChecks* checks = nullptr;
  std::string select;                      // the scan's columns over a query of the source
  std::shared_ptr<ScanParts> parts;        // the source's further queries, when it has parts
  duckdb::ClientContext* context = nullptr;
  bool from_count = false;  // a scan of no column, its rows counted without a query
  int64_t rows_left = 0;    // from_count: rows still to emit
  // A scan of no column whose rows come from a query: its one column of NULLs is not the
  // scan's (whose type DuckDB chose), so only the row count is taken from it.
  bool counts_only = false;
  bool done = false;
  std::optional<std::string> failed;  // the source's error, thrown again to every later take
  duckdb::idx_t threads = 1;
  duckdb::idx_t next_morsel = 0;  // from_count: the next batch index; else the running part's first
  size_t morsel_chunks = 1;       // chunks the next morsel takes at most

  duckdb::idx_t MaxThreads() const override { return threads; }

  // Runs `query` (the whole scan, or its next part). Under `mu` (or before any thread takes).
  void Start(std::string query) {
    if (connection == nullptr) connection = duckdb::make_uniq<duckdb::Connection>(*context->db);
    sql = std::move(query);
    Result<std::unique_ptr<ChunkFeed>> started =
        ChunkFeed::Start(*connection, "SELECT " + select + " FROM (" + sql + ")", kMaxWaitingBytes);
    if (!started.ok()) Throw(started.status());
    feed = std::move(*started);
  }
  // Starts the next part; false when there is none.
  bool StartNextPart() {
    if (parts == nullptr) return false;
    Result<std::optional<std::string>> next = parts->Next();
    if (!next.ok()) throw duckdb::IOException(next.status().ToString());
    if (!*next) {
      parts.reset();  // lets the planner go
      return false;
    }
    Start(std::move(**next));
    return true;
  }
  // Fills `local` with the next morsel; leaves it empty when the scan is over.
  void TakeMorsel(ScanLocal& local) {
    if (from_count) {
      std::lock_guard<std::mutex> lock(mu);
      TakeCounted(local);
      return;
    }
    while (true) {
      std::shared_ptr<ChunkFeed> running;
      duckdb::idx_t first = 0;
      size_t chunks = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (failed) throw duckdb::IOException(*failed);
        if (done) return;
        running = feed;
        first = next_morsel;
        chunks = morsel_chunks;
        morsel_chunks = std::min(morsel_chunks * 2, kMaxMorselChunks);
      }
      Result<ChunkRun> run = running->Take(chunks, kMaxMorselBytes, context->interrupted);
      std::lock_guard<std::mutex> lock(mu);
      if (!run.ok()) {
        if (run.status().code() == StatusCode::kCancelled) throw duckdb::InterruptException();
        if (failed) throw duckdb::IOException(*failed);  // explained once, by the first thread
        try {
          Throw(run.status());
        } catch (const std::exception& e) {
          // The threads still to take get the same error.
          failed = duckdb::ErrorData(e).RawMessage();
          throw;
        }
      }
      if (!run->chunks.empty()) {
        for (auto& chunk : run->chunks) {
          const duckdb::idx_t rows = chunk->size();
          local.pieces.push_back(ScanLocal::Piece{counts_only ? nullptr : std::move(chunk), rows});
        }
        local.morsel = first + static_cast<duckdb::idx_t>(run->sequence);
        return;
      }
      // The part is over (its sequence: how many runs it gave). The first thread to see it
      // starts the next; the others take from that one.
      if (feed != running || done) continue;
      next_morsel += static_cast<duckdb::idx_t>(run->sequence);
      feed.reset();
      try {
        if (!StartNextPart()) done = true;
      } catch (const std::exception& e) {
        failed = duckdb::ErrorData(e).RawMessage();
        throw;
      }
    }
  }

 private:
  // The inner query's error, with the damaged file named where DuckDB's message does not.
  [[noreturn]] void Throw(const Status& status) const {
    Status error = status;
    if (checks != nullptr) error = checks->Explain(sql, error);
    throw duckdb::IOException(error.code() == StatusCode::kInvalidArgument ? error.message() : error.ToString());
  }
  // from_count: one chunk's worth of rows per morsel. Under `mu`.
  void TakeCounted(ScanLocal& local) {
    const auto n = static_cast<duckdb::idx_t>(std::min<int64_t>(rows_left, STANDARD_VECTOR_SIZE));
    rows_left -= static_cast<int64_t>(n);
    if (n == 0) {
      done = true;
      return;
    }
    local.pieces.push_back(ScanLocal::Piece{nullptr, n});
    local.morsel = next_morsel++;
  }
};

duckdb::unique_ptr<duckdb::GlobalTableFunctionState> Init(duckdb::ClientContext& context,
                                                          duckdb::TableFunctionInitInput& input) {
  const auto& data = input.bind_data->Cast<ScanBindData>();
  PushedScan scan;
  std::vector<size_t> projected;
  for (const duckdb::column_t id : input.column_ids) {
    if (id == duckdb::COLUMN_IDENTIFIER_EMPTY || id >= data.info.names.size()) continue;
    projected.push_back(id);
  }
  // The source is asked in table order, and the result is put back in the scan's order.
  std::vector<size_t> sorted = projected;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (size_t id : sorted) scan.columns.push_back(data.info.names[id]);
  if (!data.conjuncts.empty() && !scan.columns.empty()) {
    std::string where;
    for (size_t i = 0; i < data.conjuncts.size(); ++i) where += (i ? " AND " : "") + data.conjuncts[i];
    auto parsed = Predicate::Parse(where);
    if (parsed.ok()) {
      scan.filter = std::move(*parsed);
    } else {
      SKADE_LOG_WARN("skade_scan: pushed filter not used ({}): {}", parsed.status().ToString(), where);
    }
  }
  SKADE_LOG_DEBUG("skade_scan: {} columns, filter {}", scan.columns.size(),
                  scan.filter ? scan.filter->sql() : std::string("none"));
  Result<ScanPlan> plan = data.info.source->Plan(scan);
  if (!plan.ok()) throw duckdb::IOException(plan.status().ToString());
  auto state = duckdb::make_uniq<ScanState>();
  if (scan.columns.empty() && plan->row_count) {
    state->from_count = true;
    state->rows_left = *plan->row_count;
    return state;
  }
  if (plan->sql.empty() && plan->parts == nullptr) {
    throw duckdb::InternalException("skade_scan: the source planned no query");
  }
  // The columns in the scan's order and types, whatever the source's SQL gives.
  std::string select;
  for (size_t i = 0; i < projected.size(); ++i) {
    const size_t id = projected[i];
    select += (i ? ", " : "") + std::string("CAST(") + QuoteIdentifier(data.info.names[id]) + " AS " +
              data.info.types[id] + ")";
  }
  if (select.empty()) {  // a scan of no column whose source has no count
    select = "NULL";
    state->counts_only = true;
  }
  state->select = std::move(select);
  state->context = &context;
  state->checks = data.checks;
  state->threads = static_cast<duckdb::idx_t>(std::max(1, duckdb::TaskScheduler::GetScheduler(context).NumberOfThreads()));
  if (plan->parts == nullptr) {
    state->Start(std::move(plan->sql));
  } else {
    state->parts = std::move(plan->parts);
    if (!state->StartNextPart()) state->done = true;  // no file to read
  }
  return state;
}

// Every column of a scan that reads none (count(*)): constant NULL, only the row count matters.
void NullColumns(duckdb::DataChunk& output) {
  for (auto& column : output.data) {
    column.SetVectorType(duckdb::VectorType::CONSTANT_VECTOR);
    duckdb::ConstantVector::SetNull(column, true);
  }
}

duckdb::unique_ptr<duckdb::LocalTableFunctionState> InitLocal(duckdb::ExecutionContext&,
                                                              duckdb::TableFunctionInitInput&,
                                                              duckdb::GlobalTableFunctionState*) {
  return duckdb::make_uniq<ScanLocal>();
}

void Scan(duckdb::ClientContext&, duckdb::TableFunctionInput& input, duckdb::DataChunk& output) {
  auto& state = input.global_state->Cast<ScanState>();
  auto& local = input.local_state->Cast<ScanLocal>();
  if (local.pieces.empty()) state.TakeMorsel(local);
  if (local.pieces.empty()) {
    output.SetCardinality(0);
    return;
  }
  ScanLocal::Piece piece = std::move(local.pieces.front());
  local.pieces.pop_front();
  if (piece.chunk != nullptr && output.ColumnCount() == piece.chunk->ColumnCount()) {
    output.Reference(*piece.chunk);  // the inner result's buffers, not a copy
  } else {
    // A scan of no column: only the count matters.
    NullColumns(output);
    output.SetCardinality(piece.rows);
  }
}

// The morsel a thread emits from: DuckDB keeps the statement's order across threads by it.
duckdb::OperatorPartitionData PartitionData(duckdb::ClientContext&, duckdb::TableFunctionGetPartitionInput& input) {
  return duckdb::OperatorPartitionData(input.local_state->Cast<ScanLocal>().morsel);
}

}  // namespace

Status RegisterPushdownScanFunction(duckdb_database db, std::shared_ptr<ScanSources> sources,
                                    DataFileChecks* checks) {
  try {
    auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
    duckdb::DatabaseInstance& instance = *wrapper->database->instance;
    duckdb::TableFunction function(kFunctionName, {duckdb::LogicalType::VARCHAR}, Scan, Bind, Init, InitLocal);
    function.get_partition_data = PartitionData;
    function.projection_pushdown = true;
    function.filter_pushdown = false;  // every filter stays in the plan, above the scan
    function.pushdown_complex_filter = PushdownFilters;
    function.get_virtual_columns = VirtualColumns;
    function.cardinality = Cardinality;
    function.function_info = duckdb::make_shared_ptr<SourcesInfo>(std::move(sources), checks);
    duckdb::ExtensionLoader loader(instance, "skade");
    loader.RegisterFunction(function);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot register skade_scan: ") + duckdb::ErrorData(e).Message());
  }
  // Its companion: the lineage of a query, traced through the skade_scan sources it reads.
  auto* wrapper = reinterpret_cast<duckdb::DatabaseWrapper*>(db);
  return RegisterQueryLineageFunction(*wrapper->database->instance);
}

}  // namespace skade::engine
