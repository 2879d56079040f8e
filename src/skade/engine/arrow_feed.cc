#include "skade/engine/arrow_feed_internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/common/arrow/arrow_appender.hpp"
#include "duckdb/common/arrow/arrow_converter.hpp"
#include "duckdb/common/arrow/arrow_query_result.hpp"
#include "duckdb/execution/operator/helper/physical_result_collector.hpp"
#include "duckdb/execution/physical_plan_generator.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"
#include "duckdb/main/capi/capi_internal.hpp"
#include "duckdb/main/pending_query_result.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "skade/engine/arrow_batches_internal.h"
#include "skade/engine/arrow_flat_batch_internal.h"
#include "skade/engine/collector_scope_internal.h"
#include "skade/engine/duck_query_internal.h"
#include "skade/engine/morsel_order_internal.h"

namespace skade::engine {

namespace {

// A batch made, with the bytes it is counted for.
struct MadeBatch {
  arrow::ArrayHandle batch;
  int64_t bytes = 0;
};

// What the collector's threads and the reader share (the order kept: morsel_order_internal.h).
// Guarded by `mu`.
struct Channel : MorselOrder<MadeBatch> {
  explicit Channel(const FeedOptions& options)
      : batching(options.batching), max_waiting(options.max_waiting), max_waiting_bytes(options.max_waiting_bytes) {}

  const ArrowBatching batching;
  const int64_t max_waiting;
  const int64_t max_waiting_bytes;

  bool collector_made = false;           // the statement got the collector (set while it is planned)
  std::optional<Status> sink_error;      // the first failure of a Sink of ours
  std::thread::id reader;                // the thread in ArrowFeed::Next (it runs tasks too)
  std::vector<duckdb::InterruptState> parked;   // the reader's own tasks, left for a ready batch
};

// The query's last operator: converts what reaches it into Arrow batches in the thread that
// runs it, and hands them to the Channel.
class FeedCollector final : public OrderedCollector<Channel> {
 public:
  FeedCollector(duckdb::PhysicalPlan& plan, duckdb::PreparedStatementData& data, std::shared_ptr<Channel> channel,
                FeedOrder order, std::shared_ptr<const FlatBatchLayout> flat, std::shared_ptr<PagePool> pool,
                duckdb::ClientProperties properties)
      : OrderedCollector<Channel>(plan, data, std::move(channel), order),
        flat_(std::move(flat)),
        pool_(std::move(pool)),
        properties_(std::move(properties)) {}

  struct LocalState : duckdb::LocalSinkState {
    std::unique_ptr<FlatBatchBuilder> flat;
    duckdb::unique_ptr<duckdb::ArrowAppender> appender;
    int64_t rows = 0;      // in the batch being built
    int64_t bytes = 0;     // its size, estimated (Fits)
    int64_t target = 0;    // rows the batch being built aims at
    int64_t next_target = 0;
    MorselPlace place;
  };

  duckdb::unique_ptr<duckdb::LocalSinkState> GetLocalSinkState(duckdb::ExecutionContext&) const override {
    auto local = duckdb::make_uniq<LocalState>();
    local->next_target = channel_->batching.first_rows;
    Pin(local->place);
    return local;
  }

  duckdb::SinkResultType Sink(duckdb::ExecutionContext& context, duckdb::DataChunk& chunk,
                              duckdb::OperatorSinkInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (const duckdb::optional_idx to = MovesTo(local.place, input); to.IsValid()) MoveTo(local, to);
    {
      std::lock_guard<std::mutex> lock(channel_->mu);
      if (channel_->closed) return duckdb::SinkResultType::FINISHED;
      if (!channel_->ready.empty() && std::this_thread::get_id() == channel_->reader) {
        // The reader's own thread: the reader takes the ready batch first, then wakes it.
        channel_->parked.push_back(input.interrupt_state);
        return duckdb::SinkResultType::BLOCKED;
      }
      if (channel_->MustWait(order_, local.place.morsel, channel_->max_waiting, channel_->max_waiting_bytes)) {
        channel_->blocked.push_back(input.interrupt_state);
        return duckdb::SinkResultType::BLOCKED;
      }
    }
    const auto count = static_cast<int64_t>(chunk.size());
    int64_t done = 0;
    while (done < count) {
      if (local.rows == 0) StartBatch(context, local);
      int64_t rows = std::min(local.target - local.rows, count - done);
      if (rows == count) {
        if (!Fits(local, chunk)) continue;
        Append(local, chunk);
      } else {
        duckdb::DataChunk part;
        part.Initialize(duckdb::Allocator::Get(context.client), chunk.GetTypes(), static_cast<duckdb::idx_t>(rows));
        chunk.Copy(part, *duckdb::FlatVector::IncrementalSelectionVector(), static_cast<duckdb::idx_t>(done + rows),
                   static_cast<duckdb::idx_t>(done));
        if (!Fits(local, part)) continue;
        Append(local, part);
      }
      done += rows;
      if (local.rows >= local.target) FinishBatch(local);
    }
    return duckdb::SinkResultType::NEED_MORE_INPUT;
  }

  duckdb::SinkNextBatchType NextBatch(duckdb::ExecutionContext&,
                                      duckdb::OperatorSinkNextBatchInput& input) const override {
    // DuckDB has set the thread's new batch index already (its minimum only after this call).
    MoveTo(input.local_state.Cast<LocalState>(), input.local_state.partition_info.batch_index);
    return duckdb::SinkNextBatchType::READY;
  }

  duckdb::SinkCombineResultType Combine(duckdb::ExecutionContext&,
                                        duckdb::OperatorSinkCombineInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (order_ == FeedOrder::kMorsels) {
      MoveTo(local, duckdb::optional_idx());
    } else if (local.rows > 0) {
      FinishBatch(local);
    }
    return duckdb::SinkCombineResultType::FINISHED;
  }

  // Every batch went to the reader: the result DuckDB hands back at the end holds none.
  duckdb::unique_ptr<duckdb::QueryResult> GetResult(duckdb::GlobalSinkState&) override {
    return duckdb::make_uniq<duckdb::ArrowQueryResult>(statement_type, properties, names, types, properties_,
                                                       STANDARD_VECTOR_SIZE);
  }

 private:
  void StartBatch(duckdb::ExecutionContext& context, LocalState& local) const {
    const ArrowBatching& batching = channel_->batching;
    if (batching.first_rows > 0) {
      local.target = local.next_target;
      local.next_target = std::min(local.target * 2, std::max(batching.max_rows, batching.first_rows));
    } else {
      local.target = STANDARD_VECTOR_SIZE;  // chunks joined up to one full chunk's rows
    }
    local.bytes = 0;
    if (flat_) {
      local.flat = std::make_unique<FlatBatchBuilder>(flat_, pool_, local.target);
    } else {
      local.appender = duckdb::make_uniq<duckdb::ArrowAppender>(
          types, static_cast<duckdb::idx_t>(local.target), properties_,
          duckdb::ArrowTypeExtensionData::GetExtensionTypes(context.client, types));
    }
  }

  // Whether `chunk` joins the batch (counting its size); if not, the batch is finished first (a
  // batch's first chunk always joins). Growing batches count Arrow's bytes, which their byte
  // bound is on; 2,048-row batches count DuckDB's size of the chunk (cheaper: no pass over the
  // strings), which only the bound on waiting batches uses.
  bool Fits(LocalState& local, duckdb::DataChunk& chunk) const {
    if (channel_->batching.first_rows == 0) {
      local.bytes += static_cast<int64_t>(chunk.GetAllocationSize());
      return true;
    }
    const int64_t size = ChunkArrowBytes(chunk);
    if (local.rows > 0 && local.bytes + size > channel_->batching.max_bytes) {
      FinishBatch(local);
      return false;
    }
    local.bytes += size;
    return true;
  }

  void Append(LocalState& local, duckdb::DataChunk& chunk) const {
    if (local.flat) {
      if (Status appended = local.flat->Append(chunk); !appended.ok()) {
        {
          // The reader reports this Status, its code kept, rather than DuckDB's rendering of it.
          std::lock_guard<std::mutex> lock(channel_->mu);
          if (!channel_->sink_error) channel_->sink_error = appended;
        }
        if (appended.code() == StatusCode::kResourceExhausted) throw duckdb::OutOfMemoryException(appended.message());
        throw duckdb::InvalidInputException(appended.message());
      }
    } else {
      local.appender->Append(chunk, 0, chunk.size(), chunk.size());
    }
    local.rows += static_cast<int64_t>(chunk.size());
  }

  void FinishBatch(LocalState& local) const {
    arrow::ArrayHandle batch;
    if (local.flat) {
      auto finished = local.flat->Finish();
      if (!finished.ok()) throw duckdb::InternalException(finished.status().message());
      batch = std::move(finished).value();
      local.flat.reset();
    } else {
      ArrowArray raw = local.appender->Finalize();
      batch = arrow::ArrayHandle(&raw);
      local.appender.reset();
    }
    local.rows = 0;
    const int64_t bytes = std::exchange(local.bytes, 0);
    std::lock_guard<std::mutex> lock(channel_->mu);
    if (channel_->closed) return;  // the batch is released here
    channel_->Add(order_, local.place.morsel, MadeBatch{std::move(batch), bytes});
  }

  // The thread of `local` leaves its morsel (its last batch is finished, and the morsel is
  // done) for `to` (none: the thread ends).
  void MoveTo(LocalState& local, duckdb::optional_idx to) const {
    if (local.rows > 0) FinishBatch(local);
    Move(local.place, to);
  }

  std::shared_ptr<const FlatBatchLayout> flat_;
  std::shared_ptr<PagePool> pool_;
  duckdb::ClientProperties properties_;
};

// The collector for one plan of the statement (DuckDB calls this while it plans).
duckdb::PhysicalOperator& MakeCollector(duckdb::ClientContext& context, duckdb::PreparedStatementData& data,
                                        const std::shared_ptr<Channel>& channel, bool any_order,
                                        const std::shared_ptr<PagePool>& pool) {
  const FeedOrder order = OrderFor(context, data.physical_plan->Root(), any_order);
  duckdb::ClientProperties properties = context.GetClientProperties();
  // Pooled pages pay off for large batches (growing ones); 2,048-row batches come and go too
  // fast for a madvise per release, and malloc reuses their memory anyway (RESULTS ar).
  auto flat = pool && channel->batching.first_rows > 0 ? FlatBatchLayout::For(data.types, properties) : nullptr;
  {
    std::lock_guard<std::mutex> lock(channel->mu);
    channel->collector_made = true;
  }
  return data.physical_plan->template Make<FeedCollector>(data, channel, order, std::move(flat), pool,
                                                           std::move(properties));
}

}  // namespace

struct ArrowFeed::State {
  std::shared_ptr<Channel> channel;
  duckdb::shared_ptr<duckdb::ClientContext> context;  // the statement's connection
  duckdb::unique_ptr<duckdb::PendingQueryResult> pending;
  duckdb::vector<duckdb::LogicalType> types;
  duckdb::vector<std::string> names;
  duckdb::ClientProperties properties;
  bool ended = false;  // DuckDB's result was fetched: the query is over
  std::optional<Status> failed;

  // Runs the query until a batch is ready (moved to `out` when given) or the query is over.
  // The reader's own tasks left for a ready batch are woken on the way out.
  Status Advance(ArrowArray* out) {
    if (failed) return *failed;
    Status status = Step(out);
    std::vector<duckdb::InterruptState> parked;
    {
      std::lock_guard<std::mutex> lock(channel->mu);
      parked.swap(channel->parked);
    }
    Wake(parked);  // (descheduled already: ExecuteTask returned)
    return status;
  }

  Status Step(ArrowArray* out) {
    Channel& ch = *channel;
    while (true) {
      {
        std::vector<duckdb::InterruptState> wake;
        std::unique_lock<std::mutex> lock(ch.mu);
        ch.reader = std::this_thread::get_id();
        if (!ch.ready.empty()) {
          if (out == nullptr) return Status::Ok();
          ch.PopReady().batch.MoveTo(out);
          wake = ch.TakeBlocked();
          lock.unlock();
          Wake(wake);
          return Status::Ok();
        }
        if (ended) {
          if (out != nullptr) out->release = nullptr;
          return Status::Ok();
        }
      }
      duckdb::PendingExecutionResult step;
      try {
        step = pending->ExecuteTask();
      } catch (const std::exception& e) {
        return Fail(duckdb::ErrorData(e).Message());
      }
      switch (step) {
        case duckdb::PendingExecutionResult::RESULT_NOT_READY:
          break;
        case duckdb::PendingExecutionResult::EXECUTION_ERROR:
          return Fail(pending->GetError());
        case duckdb::PendingExecutionResult::RESULT_READY:
        case duckdb::PendingExecutionResult::EXECUTION_FINISHED: {
          duckdb::unique_ptr<duckdb::QueryResult> result;
          try {
            result = pending->Execute();
          } catch (const std::exception& e) {
            return Fail(duckdb::ErrorData(e).Message());
          }
          if (result->HasError()) return Fail(result->GetError());
          std::lock_guard<std::mutex> lock(ch.mu);
          ch.Promote();  // (Finalize ran: every batch is ready)
          ended = true;
          break;
        }
        case duckdb::PendingExecutionResult::BLOCKED:
        case duckdb::PendingExecutionResult::NO_TASKS_AVAILABLE: {
          // Other threads run the query's tasks, or wait for room (then a batch is ready, or
          // one of them holds the earliest morsel and runs), or for I/O: wait for a batch, and
          // look for a task of our own again soon (a finished pipeline schedules the next).
          std::unique_lock<std::mutex> lock(ch.mu);
          ch.made.wait_for(lock, std::chrono::milliseconds(1), [&] { return !ch.ready.empty(); });
          break;
        }
      }
    }
  }

  // The query's failure: a Sink's own Status when one failed (its code kept), else DuckDB's.
  Status Fail(const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(channel->mu);
      if (channel->sink_error) failed = *channel->sink_error;
    }
    if (!failed) failed = DuckError(message.c_str(), "query failed");
    return *failed;
  }

  ~State() {
    std::vector<duckdb::InterruptState> wake;
    if (channel) {
      std::lock_guard<std::mutex> lock(channel->mu);
      wake = channel->CloseReader();
      for (auto& parked : channel->parked) wake.push_back(parked);
      channel->parked.clear();
    }
    Wake(wake);
    // A query still running stops at its tasks' next chunk, in every pipeline (a sort or a
    // join's build too): DuckDB clears the flag when the connection's next statement starts.
    if (!ended && !failed && context) context->Interrupt();
    if (pending) pending->Close();
  }
};

ArrowFeed::ArrowFeed(std::unique_ptr<State> state) : state_(std::move(state)) {}

ArrowFeed::~ArrowFeed() = default;

Result<std::unique_ptr<ArrowFeed>> ArrowFeed::Start(duckdb_prepared_statement prepared, FeedOptions options) {
  // The C API's statement handle is a PreparedStatementWrapper (duckdb/main/capi/capi_internal.hpp).
  auto* wrapper = reinterpret_cast<duckdb::PreparedStatementWrapper*>(prepared);
  if (wrapper == nullptr || !wrapper->statement || wrapper->statement->HasError()) {
    return Status::Internal("the statement was not prepared");
  }
  if (options.max_waiting < 1 || options.max_waiting_bytes < 1) {
    return Status::InvalidArgument("a feed needs room for at least one batch");
  }
  auto state = std::make_unique<State>();
  state->channel = std::make_shared<Channel>(options);
  try {
    duckdb::PreparedStatement& statement = *wrapper->statement;
    state->context = statement.context;
    {
      CollectorScope scope(*statement.context,
                           [channel = state->channel, any_order = options.any_order, pool = options.pool](
                               duckdb::ClientContext& c, duckdb::PreparedStatementData& data)
                               -> duckdb::PhysicalOperator& { return MakeCollector(c, data, channel, any_order, pool); });
      // Named or positional values bound through the C API (duckdb_bind_*).
      state->pending = statement.PendingQuery(wrapper->values, /*allow_stream_result=*/false);
    }
    if (state->pending->HasError()) return DuckError(state->pending->GetError().c_str(), "query failed");
    {
      std::lock_guard<std::mutex> lock(state->channel->mu);
      if (!state->channel->collector_made) return Status::Internal("DuckDB planned the statement without a collector");
    }
    state->types = state->pending->types;
    state->names = state->pending->names;
    state->properties = statement.context->GetClientProperties();
  } catch (const std::exception& e) {
    return DuckError(duckdb::ErrorData(e).Message().c_str(), "query failed");
  }
  SKADE_RETURN_IF_ERROR(state->Advance(nullptr));
  return std::make_unique<ArrowFeed>(std::move(state));
}

Result<arrow::SchemaHandle> ArrowFeed::Schema() const {
  ArrowSchema schema;
  try {
    duckdb::ArrowConverter::ToArrowSchema(&schema, state_->types, state_->names, state_->properties);
  } catch (const std::exception& e) {
    return Status::Internal("cannot render the result's Arrow schema: " + duckdb::ErrorData(e).Message());
  }
  return arrow::SchemaHandle(&schema);
}

Status ArrowFeed::Next(ArrowArray* out) { return state_->Advance(out); }

int64_t ArrowFeed::Waiting() const {
  std::lock_guard<std::mutex> lock(state_->channel->mu);
  return state_->channel->waiting;
}

int64_t ArrowFeed::WaitingBytes() const {
  std::lock_guard<std::mutex> lock(state_->channel->mu);
  return state_->channel->waiting_bytes;
}

}  // namespace skade::engine
