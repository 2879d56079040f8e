#include "skade/engine/arrow_feed_internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
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
#include "duckdb/main/client_config.hpp"
#include "duckdb/main/pending_query_result.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "skade/engine/arrow_batches_internal.h"
#include "skade/engine/arrow_flat_batch_internal.h"
#include "skade/engine/duck_query_internal.h"

namespace skade::engine {

namespace {

// How the collector keeps the order (arrow_feed_internal.h).
enum class FeedOrder {
  kAny,      // batches as they are made, by every thread
  kMorsels,  // every thread; each morsel's batches handed out after the earlier morsels'
  kSerial,   // one thread (a source without batch indexes that must keep its order)
};

// What the collector's threads and the reader share. Guarded by `mu`.
struct Channel {
  explicit Channel(const FeedOptions& options) : batching(options.batching), max_waiting(options.max_waiting) {}

  // One morsel's batches (kMorsels), until they can be handed out.
  struct Morsel {
    std::deque<arrow::ArrayHandle> batches;
    bool done = false;  // its thread has moved on: no batch will join
  };

  const ArrowBatching batching;
  const int64_t max_waiting;

  std::mutex mu;
  std::condition_variable made;       // a batch became ready, or the query's sink finished
  bool collector_made = false;        // the statement got the collector (set while it is planned)
  FeedOrder order = FeedOrder::kAny;
  std::deque<arrow::ArrayHandle> ready;  // for the reader, in order
  std::map<duckdb::idx_t, Morsel> morsels;  // kMorsels: batches not yet ready, by batch index
  // kMorsels: no thread holds a morsel below this one, nor will: DuckDB hands morsels out in
  // increasing order. The highest of the minima the threads were told (they only grow).
  duckdb::idx_t lowest_active = 0;
  int64_t waiting = 0;                // batches in `ready` and `morsels`
  bool finished = false;              // the sink's Finalize ran: every batch is in
  // The reader found every task waiting and nothing to hand out: threads may pass
  // max_waiting until a batch is ready again (a safety valve; see ArrowFeed::State::Advance).
  bool let_through = false;
  bool closed = false;                // the reader is gone: the threads stop
  std::thread::id reader;             // the thread in ArrowFeed::Next (it runs tasks too)
  std::vector<duckdb::InterruptState> blocked;  // threads waiting for room

  // Moves the batches that may now be handed out to `ready`: the first morsel's while nothing
  // earlier can come, whole morsels while they are done.
  void Promote() {
    while (!morsels.empty()) {
      auto first = morsels.begin();
      if (!finished && first->first > lowest_active) return;
      for (auto& batch : first->second.batches) ready.push_back(std::move(batch));
      first->second.batches.clear();
      if (!finished && !first->second.done) return;
      morsels.erase(first);
    }
  }

  // Raises lowest_active to what a thread was told (`told`: its partition_info's
  // min_batch_index), promoting what that frees. True when it rose: a waiting thread may now
  // hold the earliest morsel, and must be woken.
  bool Raise(duckdb::optional_idx told) {
    if (!told.IsValid() || told.GetIndex() <= lowest_active) return false;
    lowest_active = told.GetIndex();
    Promote();
    if (!ready.empty()) made.notify_all();
    return true;
  }

  // The threads waiting for room, to wake after the lock is released.
  std::vector<duckdb::InterruptState> TakeBlocked() {
    std::vector<duckdb::InterruptState> out;
    out.swap(blocked);
    return out;
  }
};

void Wake(const std::vector<duckdb::InterruptState>& states) {
  for (const auto& state : states) state.Callback();
}

// The query's last operator: converts what reaches it into Arrow batches in the thread that
// runs it, and hands them to the Channel.
class FeedCollector final : public duckdb::PhysicalResultCollector {
 public:
  FeedCollector(duckdb::PhysicalPlan& plan, duckdb::PreparedStatementData& data, std::shared_ptr<Channel> channel,
                FeedOrder order, std::shared_ptr<const FlatBatchLayout> flat, std::shared_ptr<PagePool> pool,
                duckdb::ClientProperties properties)
      : duckdb::PhysicalResultCollector(plan, data),
        channel_(std::move(channel)),
        order_(order),
        flat_(std::move(flat)),
        pool_(std::move(pool)),
        properties_(std::move(properties)) {}

  struct LocalState : duckdb::LocalSinkState {
    std::unique_ptr<FlatBatchBuilder> flat;
    duckdb::unique_ptr<duckdb::ArrowAppender> appender;
    int64_t rows = 0;      // in the batch being built
    int64_t bytes = 0;     // its Arrow size, estimated (batching.first_rows > 0 only)
    int64_t target = 0;    // rows the batch being built aims at
    int64_t next_target = 0;
    duckdb::optional_idx morsel;  // kMorsels: the batch index the rows come from
  };

  bool ParallelSink() const override { return order_ != FeedOrder::kSerial; }
  bool SinkOrderDependent() const override { return order_ != FeedOrder::kAny; }
  duckdb::OperatorPartitionInfo RequiredPartitionInfo() const override {
    return order_ == FeedOrder::kMorsels ? duckdb::OperatorPartitionInfo::BatchIndex()
                                         : duckdb::OperatorPartitionInfo::NoPartitionInfo();
  }

  duckdb::unique_ptr<duckdb::GlobalSinkState> GetGlobalSinkState(duckdb::ClientContext&) const override {
    return duckdb::make_uniq<duckdb::GlobalSinkState>();
  }

  duckdb::unique_ptr<duckdb::LocalSinkState> GetLocalSinkState(duckdb::ExecutionContext&) const override {
    auto local = duckdb::make_uniq<LocalState>();
    local->next_target = channel_->batching.first_rows;
    return local;
  }

  duckdb::SinkResultType Sink(duckdb::ExecutionContext& context, duckdb::DataChunk& chunk,
                              duckdb::OperatorSinkInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (order_ == FeedOrder::kMorsels) {
      const duckdb::idx_t morsel = input.local_state.partition_info.batch_index.GetIndex();
      if (local.morsel.IsValid() && local.morsel.GetIndex() != morsel) EndMorsel(local);
      local.morsel = morsel;
    }
    {
      std::vector<duckdb::InterruptState> wake;
      std::unique_lock<std::mutex> lock(channel_->mu);
      if (channel_->closed) return duckdb::SinkResultType::FINISHED;
      // DuckDB updates a thread's minimum after its NextBatch: it is fresh here.
      if (channel_->Raise(input.local_state.partition_info.min_batch_index)) wake = channel_->TakeBlocked();
      if (MustWait(local)) {
        channel_->blocked.push_back(input.interrupt_state);
        lock.unlock();
        Wake(wake);
        return duckdb::SinkResultType::BLOCKED;
      }
      lock.unlock();
      Wake(wake);
    }
    const ArrowBatching& batching = channel_->batching;
    const auto count = static_cast<int64_t>(chunk.size());
    int64_t done = 0;
    while (done < count) {
      if (local.rows == 0) StartBatch(context, local);
      int64_t rows = std::min(local.target - local.rows, count - done);
      if (rows == count) {
        if (batching.first_rows > 0 && !Fits(local, chunk)) continue;
        Append(local, chunk);
      } else {
        duckdb::DataChunk part;
        part.Initialize(duckdb::Allocator::Get(context.client), chunk.GetTypes(), static_cast<duckdb::idx_t>(rows));
        chunk.Copy(part, *duckdb::FlatVector::IncrementalSelectionVector(), static_cast<duckdb::idx_t>(done + rows),
                   static_cast<duckdb::idx_t>(done));
        if (batching.first_rows > 0 && !Fits(local, part)) continue;
        Append(local, part);
      }
      done += rows;
      if (local.rows >= local.target) FinishBatch(local);
    }
    return duckdb::SinkResultType::NEED_MORE_INPUT;
  }

  duckdb::SinkNextBatchType NextBatch(duckdb::ExecutionContext&,
                                      duckdb::OperatorSinkNextBatchInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    // The thread's minimum is not yet updated for the morsel it moves to (DuckDB does that
    // after this call); its next Sink or its Combine reports it.
    if (local.morsel.IsValid()) EndMorsel(local);
    return duckdb::SinkNextBatchType::READY;
  }

  duckdb::SinkCombineResultType Combine(duckdb::ExecutionContext&,
                                        duckdb::OperatorSinkCombineInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (local.rows > 0) FinishBatch(local);
    if (local.morsel.IsValid()) EndMorsel(local);
    std::vector<duckdb::InterruptState> wake;
    {
      // The thread left its last morsel: its minimum is the other threads'.
      std::lock_guard<std::mutex> lock(channel_->mu);
      if (channel_->Raise(input.local_state.partition_info.min_batch_index)) wake = channel_->TakeBlocked();
    }
    Wake(wake);
    return duckdb::SinkCombineResultType::FINISHED;
  }

  duckdb::SinkFinalizeType Finalize(duckdb::Pipeline&, duckdb::Event&, duckdb::ClientContext&,
                                    duckdb::OperatorSinkFinalizeInput&) const override {
    std::vector<duckdb::InterruptState> wake;
    {
      std::lock_guard<std::mutex> lock(channel_->mu);
      channel_->finished = true;
      channel_->Promote();
      wake = channel_->TakeBlocked();
      channel_->made.notify_all();
    }
    Wake(wake);
    return duckdb::SinkFinalizeType::READY;
  }

  // Every batch went to the reader: the result DuckDB hands back at the end holds none.
  duckdb::unique_ptr<duckdb::QueryResult> GetResult(duckdb::GlobalSinkState&) override {
    return duckdb::make_uniq<duckdb::ArrowQueryResult>(statement_type, properties, names, types, properties_,
                                                       STANDARD_VECTOR_SIZE);
  }

 private:
  // Whether the thread of `local` waits for room before its next chunk (under the lock): when
  // max_waiting batches wait, unless it holds the earliest morsel (the reader waits for it); and
  // when it is the reader's own thread and a batch is ready (the reader takes it first).
  bool MustWait(const LocalState& local) const {
    Channel& ch = *channel_;
    if (!ch.ready.empty() && std::this_thread::get_id() == ch.reader) return true;
    if (ch.waiting < ch.max_waiting || ch.let_through) return false;
    return !(order_ == FeedOrder::kMorsels && local.morsel.IsValid() && local.morsel.GetIndex() <= ch.lowest_active);
  }

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

  // Whether `chunk` joins the batch within its byte bound; if not, the batch is finished
  // (a batch's first chunk always joins).
  bool Fits(LocalState& local, duckdb::DataChunk& chunk) const {
    const int64_t size = ChunkJoiner::ArrowBytes(reinterpret_cast<duckdb_data_chunk>(&chunk));
    if (local.rows > 0 && local.bytes + size > channel_->batching.max_bytes) {
      FinishBatch(local);
      return false;
    }
    local.bytes += size;
    return true;
  }

  static void Append(LocalState& local, duckdb::DataChunk& chunk) {
    if (local.flat) {
      if (Status appended = local.flat->Append(chunk); !appended.ok()) {
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
    std::lock_guard<std::mutex> lock(channel_->mu);
    if (channel_->closed) return;  // the batch is released here
    ++channel_->waiting;
    if (order_ == FeedOrder::kMorsels) {
      channel_->morsels[local.morsel.GetIndex()].batches.push_back(std::move(batch));
      channel_->Promote();
    } else {
      channel_->ready.push_back(std::move(batch));
    }
    if (!channel_->ready.empty()) channel_->made.notify_all();
  }

  // The thread leaves its morsel: its last batch is finished, and the morsel is done.
  void EndMorsel(LocalState& local) const {
    if (local.rows > 0) FinishBatch(local);
    std::lock_guard<std::mutex> lock(channel_->mu);
    auto it = channel_->morsels.find(local.morsel.GetIndex());
    if (it != channel_->morsels.end()) {
      it->second.done = true;
      channel_->Promote();
      if (!channel_->ready.empty()) channel_->made.notify_all();
    }
    local.morsel = duckdb::optional_idx();
  }

  std::shared_ptr<Channel> channel_;
  FeedOrder order_;
  std::shared_ptr<const FlatBatchLayout> flat_;
  std::shared_ptr<PagePool> pool_;
  duckdb::ClientProperties properties_;
};

// The collector for one plan of the statement (DuckDB calls this while it plans).
duckdb::PhysicalOperator& MakeCollector(duckdb::ClientContext& context, duckdb::PreparedStatementData& data,
                                        const std::shared_ptr<Channel>& channel, bool any_order,
                                        const std::shared_ptr<PagePool>& pool) {
  auto& root = data.physical_plan->Root();
  FeedOrder order = FeedOrder::kAny;
  const bool fixed = duckdb::PhysicalPlanGenerator::OrderPreservationRecursive(root) ==
                     duckdb::OrderPreservationType::FIXED_ORDER;
  if ((fixed || !any_order) && duckdb::PhysicalPlanGenerator::PreserveInsertionOrder(context, root)) {
    order = duckdb::PhysicalPlanGenerator::UseBatchIndex(context, root) ? FeedOrder::kMorsels : FeedOrder::kSerial;
  }
  duckdb::ClientProperties properties = context.GetClientProperties();
  auto flat = pool ? FlatBatchLayout::For(data.types, properties) : nullptr;
  {
    std::lock_guard<std::mutex> lock(channel->mu);
    channel->collector_made = true;
    channel->order = order;
  }
  return data.physical_plan->template Make<FeedCollector>(data, channel, order, std::move(flat), pool,
                                                           std::move(properties));
}

// Sets the connection's result collector while the statement is planned, and puts the default
// back after it, whatever happens.
class CollectorScope {
 public:
  CollectorScope(duckdb::ClientContext& context, std::shared_ptr<Channel> channel, bool any_order,
                 std::shared_ptr<PagePool> pool)
      : config_(duckdb::ClientConfig::GetConfig(context)) {
    config_.get_result_collector = [channel = std::move(channel), any_order, pool = std::move(pool)](
                                       duckdb::ClientContext& c,
                                       duckdb::PreparedStatementData& data) -> duckdb::PhysicalOperator& {
      return MakeCollector(c, data, channel, any_order, pool);
    };
  }
  ~CollectorScope() { config_.get_result_collector = nullptr; }
  CollectorScope(const CollectorScope&) = delete;
  CollectorScope& operator=(const CollectorScope&) = delete;

 private:
  duckdb::ClientConfig& config_;
};

}  // namespace

struct ArrowFeed::State {
  std::shared_ptr<Channel> channel;
  duckdb::unique_ptr<duckdb::PendingQueryResult> pending;
  duckdb::vector<duckdb::LogicalType> types;
  duckdb::vector<std::string> names;
  duckdb::ClientProperties properties;
  bool ended = false;        // DuckDB's result was fetched: the query is over
  std::optional<Status> failed;

  // Runs the query until a batch is ready (moved to `out` when given) or the query is over.
  Status Advance(ArrowArray* out) {
    if (failed) return *failed;
    Channel& ch = *channel;
    while (true) {
      {
        std::vector<duckdb::InterruptState> wake;
        std::unique_lock<std::mutex> lock(ch.mu);
        ch.reader = std::this_thread::get_id();
        if (!ch.ready.empty()) {
          ch.let_through = false;
          if (out == nullptr) return Status::Ok();
          ch.ready.front().MoveTo(out);
          ch.ready.pop_front();
          --ch.waiting;
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
          // Other threads run the query's tasks (or wait for I/O): wait for a batch, and look
          // for a task of our own again soon (a finished pipeline schedules the next one's).
          std::vector<duckdb::InterruptState> wake;
          std::unique_lock<std::mutex> lock(ch.mu);
          if (step == duckdb::PendingExecutionResult::BLOCKED && ch.ready.empty() && !ch.blocked.empty()) {
            // Every task waits and nothing can be handed out: the morsel the reader waits for
            // is not yet known to be the earliest (a thread's minimum is reported at its next
            // chunk). Let the waiting threads pass the bound rather than wait forever.
            ch.let_through = true;
            wake = ch.TakeBlocked();
            lock.unlock();
            Wake(wake);
            break;
          }
          ch.made.wait_for(lock, std::chrono::milliseconds(1), [&] { return !ch.ready.empty(); });
          break;
        }
      }
    }
  }

  Status Fail(const std::string& message) {
    failed = DuckError(message.c_str(), "query failed");
    return *failed;
  }

  ~State() {
    std::vector<duckdb::InterruptState> wake;
    if (channel) {
      std::lock_guard<std::mutex> lock(channel->mu);
      channel->closed = true;
      channel->ready.clear();
      channel->morsels.clear();
      wake = channel->TakeBlocked();
    }
    Wake(wake);
    // The query's tasks end when the connection cleans it up: at its next statement or when
    // it closes (each task's next chunk finds the channel closed).
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
  auto state = std::make_unique<State>();
  state->channel = std::make_shared<Channel>(options);
  if (options.max_waiting < 1) return Status::InvalidArgument("a feed needs room for at least one batch");
  try {
    duckdb::PreparedStatement& statement = *wrapper->statement;
    {
      CollectorScope scope(*statement.context, state->channel, options.any_order, options.pool);
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
  return std::unique_ptr<ArrowFeed>(new ArrowFeed(std::move(state)));
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

}  // namespace skade::engine
