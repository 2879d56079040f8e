#include "skade/engine/arrow_collect_internal.h"

#include <exception>
#include <memory>
#include <utility>

#include "duckdb.hpp"
#include "duckdb/common/arrow/arrow_appender.hpp"
#include "duckdb/common/arrow/arrow_converter.hpp"
#include "duckdb/common/arrow/arrow_query_result.hpp"
#include "duckdb/common/arrow/physical_arrow_collector.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/execution/physical_plan_generator.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "skade/engine/arrow_flat_batch_internal.h"
#include "skade/engine/collector_scope_internal.h"

namespace skade::engine {

namespace {

// The collector for one plan. A plan that fixes its order (ORDER BY) gets DuckDB's own choice,
// which keeps that order. Any other plan gets the parallel collector: each worker thread
// converts what it scans into its own Arrow batches, and the rows come in no particular order.
// DuckDB's own choice would keep the insertion order (file by file) with its batch collector,
// which in DuckDB 1.4 first copies every chunk into a ColumnDataCollection and converts at the
// end: on a 10M-row, 10-column table that doubled the CPU and the wall time of the read
// (bench/RESULTS.md, section an). An Iceberg scan promises no row order.
// DuckDB's parallel Arrow collector, with three changes to its Sink:
// - A result of flat columns only (numbers, strings, dates, timestamps, decimals…) is built by
//   skade (arrow_flat_batch_internal.h) into pages the Database keeps for the next read. With
//   malloc'd buffers every read of 10M rows × 10 columns faulted in ~740 MB of fresh pages
//   (190,000 faults, about a quarter of its CPU; RESULTS aq).
// - Each batch's buffers are made at the batch's size (DuckDB's appender, for the other
//   results, is made at it too). DuckDB 1.4 makes them at one chunk's rows
//   (2,048) and doubles them up to the batch's 122,880 rows: six reallocs of every buffer of
//   every batch, each copying what was appended and touching new pages. On a 10M-row,
//   10-column read that was 13 % of the CPU in realloc and a quarter in page faults.
// - A chunk is appended whole. Part of a chunk that does not fit its batch is first copied into
//   a chunk of its own: DuckDB 1.4's ArrowAppender::Append of rows that do not start at the
//   chunk's first row gives a struct column's fields values from the wrong rows (test
//   ArrowWholeTest.HoldsTheStreamedRowsInBoundedBatchesAndKeepsOrder).
class SizedArrowCollector final : public duckdb::PhysicalArrowCollector {
 public:
  // `flat`: how skade builds the result's batches itself, into `pool`'s pages; null when some
  // column is not flat (DuckDB's ArrowAppender builds every batch then).
  SizedArrowCollector(duckdb::PhysicalPlan& plan, duckdb::PreparedStatementData& data, duckdb::idx_t batch_rows,
                      std::shared_ptr<const FlatBatchLayout> flat, std::shared_ptr<PagePool> pool)
      : duckdb::PhysicalArrowCollector(plan, data, /*parallel=*/true, batch_rows),
        flat_(std::move(flat)),
        pool_(std::move(pool)) {}

  struct LocalState : duckdb::ArrowCollectorLocalState {
    std::unique_ptr<FlatBatchBuilder> flat;
  };

  duckdb::unique_ptr<duckdb::LocalSinkState> GetLocalSinkState(duckdb::ExecutionContext&) const override {
    auto state = duckdb::make_uniq<LocalState>();
    if (flat_) state->flat = std::make_unique<FlatBatchBuilder>(flat_, pool_, static_cast<int64_t>(record_batch_size));
    return state;
  }

  duckdb::SinkResultType Sink(duckdb::ExecutionContext& context, duckdb::DataChunk& chunk,
                              duckdb::OperatorSinkInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    const duckdb::idx_t count = chunk.size();
    duckdb::idx_t processed = 0;
    while (processed < count) {
      if (!local.flat && !local.appender) {
        local.appender = duckdb::make_uniq<duckdb::ArrowAppender>(
            types, record_batch_size, context.client.GetClientProperties(),
            duckdb::ArrowTypeExtensionData::GetExtensionTypes(context.client, types));
      }
      const duckdb::idx_t held = local.flat ? static_cast<duckdb::idx_t>(local.flat->rows()) : local.appender->RowCount();
      const duckdb::idx_t rows = duckdb::MinValue(record_batch_size - held, count - processed);
      if (rows == count) {
        Append(local, chunk);
      } else {
        duckdb::DataChunk part;
        part.Initialize(duckdb::Allocator::Get(context.client), chunk.GetTypes(), rows);
        chunk.Copy(part, *duckdb::FlatVector::IncrementalSelectionVector(), processed + rows, processed);
        Append(local, part);
      }
      processed += rows;
      if (held + rows >= record_batch_size) Finish(local);
    }
    return duckdb::SinkResultType::NEED_MORE_INPUT;
  }

  duckdb::SinkCombineResultType Combine(duckdb::ExecutionContext& context,
                                        duckdb::OperatorSinkCombineInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (local.flat && local.flat->rows() > 0) Finish(local);
    return duckdb::PhysicalArrowCollector::Combine(context, input);
  }

 private:
  static void Append(LocalState& local, duckdb::DataChunk& chunk) {
    if (!local.flat) {
      local.appender->Append(chunk, 0, chunk.size(), chunk.size());
      return;
    }
    if (Status appended = local.flat->Append(chunk); !appended.ok()) {
      if (appended.code() == StatusCode::kResourceExhausted) throw duckdb::OutOfMemoryException(appended.message());
      throw duckdb::InvalidInputException(appended.message());
    }
  }

  static void Finish(LocalState& local) {
    if (!local.flat) {
      local.FinishArray();
      return;
    }
    const auto rows = static_cast<duckdb::idx_t>(local.flat->rows());
    auto batch = local.flat->Finish();
    if (!batch.ok()) throw duckdb::InternalException(batch.status().message());
    auto finished = duckdb::make_uniq<duckdb::ArrowArrayWrapper>();
    batch->MoveTo(&finished->arrow_array);
    local.finished_arrays.push_back(std::move(finished));
    local.tuple_count += rows;
  }

  std::shared_ptr<const FlatBatchLayout> flat_;
  std::shared_ptr<PagePool> pool_;
};

duckdb::PhysicalOperator& ChooseCollector(duckdb::ClientContext& context, duckdb::PreparedStatementData& data,
                                          duckdb::idx_t batch_rows, const std::shared_ptr<PagePool>& pool) {
  auto& root = data.physical_plan->Root();
  if (duckdb::PhysicalPlanGenerator::OrderPreservationRecursive(root) == duckdb::OrderPreservationType::FIXED_ORDER) {
    return duckdb::PhysicalArrowCollector::Create(context, data, batch_rows);
  }
  auto flat = pool && batch_rows <= static_cast<duckdb::idx_t>(FlatBatchBuilder::kMaxCapacity)
                  ? FlatBatchLayout::For(data.types, context.GetClientProperties())
                  : nullptr;
  return data.physical_plan->template Make<SizedArrowCollector>(data, batch_rows, std::move(flat), pool);
}

}  // namespace

std::optional<std::string> CollectArrow(duckdb_prepared_statement prepared, int64_t batch_rows,
                                        std::shared_ptr<PagePool> pool, CollectedArrow* out) {
  // The C API's statement handle is a PreparedStatementWrapper (duckdb/main/capi/capi_internal.hpp).
  auto* wrapper = reinterpret_cast<duckdb::PreparedStatementWrapper*>(prepared);
  if (wrapper == nullptr || !wrapper->statement || wrapper->statement->HasError()) {
    return std::string("the statement was not prepared");
  }
  try {
    duckdb::PreparedStatement& statement = *wrapper->statement;
    duckdb::unique_ptr<duckdb::QueryResult> result;
    {
      // Only this execution: the connection's next statements stream again.
      CollectorScope scope(*statement.context,
                           [rows = static_cast<duckdb::idx_t>(batch_rows), pool = std::move(pool)](
                               duckdb::ClientContext& c, duckdb::PreparedStatementData& data)
                               -> duckdb::PhysicalOperator& { return ChooseCollector(c, data, rows, pool); });
      // Named or positional values bound through the C API (duckdb_bind_*), as
      // duckdb_execute_prepared passes them.
      result = statement.Execute(wrapper->values, false);
    }
    if (result->HasError()) return result->GetError();
    if (result->type != duckdb::QueryResultType::ARROW_RESULT) {
      return std::string("DuckDB did not collect the result as Arrow");
    }
    auto& arrow_result = result->Cast<duckdb::ArrowQueryResult>();
    ArrowSchema schema;
    duckdb::ArrowConverter::ToArrowSchema(&schema, arrow_result.types, arrow_result.names,
                                          arrow_result.client_properties);
    out->schema = arrow::SchemaHandle(&schema);
    for (auto& wrapped : arrow_result.ConsumeArrays()) {
      out->batches.emplace_back(&wrapped->arrow_array);  // takes it over (release moves)
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    duckdb::ErrorData error(e);
    return error.Message();
  }
}

}  // namespace skade::engine
