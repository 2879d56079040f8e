#include "skade/engine/chunk_feed_internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/execution/executor.hpp"
#include "duckdb/execution/operator/helper/physical_result_collector.hpp"
#include "duckdb/main/materialized_query_result.hpp"
#include "duckdb/main/pending_query_result.hpp"
#include "duckdb/main/prepared_statement_data.hpp"
#include "duckdb/parallel/task_scheduler.hpp"
#include "skade/engine/collector_scope_internal.h"
#include "skade/engine/morsel_order_internal.h"

namespace skade::engine {

namespace {

// A chunk copied out of the query, with its bytes as DuckDB counts them.
struct MadeChunk {
  duckdb::unique_ptr<duckdb::DataChunk> chunk;
  int64_t bytes = 0;
};

// What the collector's threads and the takers share. Guarded by `mu`.
struct Channel : MorselOrder<MadeChunk> {
  explicit Channel(int64_t max_bytes) : max_waiting_bytes(max_bytes) {}
  const int64_t max_waiting_bytes;
  bool collector_made = false;  // the statement got the collector (set while it is planned)

  // Whether a run of `chunks` chunks or `bytes` bytes is ready to take: or, when fewer are,
  // whether nothing more can come before one is taken (every chunk is in, or threads wait for
  // room).
  bool RunReady(size_t chunks, size_t bytes) const {
    if (ready.empty()) return false;
    if (finished || !blocked.empty() || ready.size() >= chunks) return true;
    size_t sum = 0;
    for (const MadeChunk& made : ready) {
      sum += static_cast<size_t>(made.bytes);
      if (sum >= bytes) return true;
    }
    return false;
  }
};

// A taker running one of the query's tasks (ChunkFeed::Take): its Sink steps back as soon as
// the taker's run is ready, so that the taker can take it; the tasks it parked so are woken
// once their Execute returned.
struct Helping {
  const Channel* channel = nullptr;
  size_t chunks = 0;  // the run the taker waits for
  size_t bytes = 0;
  std::vector<duckdb::InterruptState> parked;
};
thread_local Helping* helping = nullptr;

// The query's last operator: copies what reaches it, in the thread that runs it, and hands the
// copies to the Channel in the query's order.
class ChunkCollector final : public OrderedCollector<Channel> {
 public:
  ChunkCollector(duckdb::PhysicalPlan& plan, duckdb::PreparedStatementData& data, std::shared_ptr<Channel> channel,
                 FeedOrder order, duckdb::ClientProperties properties)
      : OrderedCollector<Channel>(plan, data, std::move(channel), order), properties_(std::move(properties)) {}

  struct LocalState : duckdb::LocalSinkState {
    MorselPlace place;
  };

  duckdb::unique_ptr<duckdb::LocalSinkState> GetLocalSinkState(duckdb::ExecutionContext&) const override {
    auto local = duckdb::make_uniq<LocalState>();
    Pin(local->place);
    return local;
  }

  duckdb::SinkResultType Sink(duckdb::ExecutionContext&, duckdb::DataChunk& chunk,
                              duckdb::OperatorSinkInput& input) const override {
    auto& local = input.local_state.Cast<LocalState>();
    if (const duckdb::optional_idx to = MovesTo(local.place, input); to.IsValid()) Move(local.place, to);
    {
      std::lock_guard<std::mutex> lock(channel_->mu);
      if (channel_->closed) return duckdb::SinkResultType::FINISHED;
      if (helping != nullptr && helping->channel == channel_.get() &&
          channel_->RunReady(helping->chunks, helping->bytes)) {
        helping->parked.push_back(input.interrupt_state);
        return duckdb::SinkResultType::BLOCKED;
      }
      if (channel_->MustWait(order_, local.place.morsel, INT64_MAX, channel_->max_waiting_bytes)) {
        channel_->blocked.push_back(input.interrupt_state);
        channel_->made.notify_all();  // a run short of its size may be taken now (RunReady)
        return duckdb::SinkResultType::BLOCKED;
      }
    }
    auto copy = duckdb::make_uniq<duckdb::DataChunk>();
    copy->Initialize(duckdb::Allocator::DefaultAllocator(), chunk.GetTypes(), std::max<duckdb::idx_t>(chunk.size(), 1));
    chunk.Copy(*copy, 0);
    const auto bytes = static_cast<int64_t>(copy->GetAllocationSize());
    std::lock_guard<std::mutex> lock(channel_->mu);
    if (channel_->closed) return duckdb::SinkResultType::FINISHED;
    channel_->Add(order_, local.place.morsel, MadeChunk{std::move(copy), bytes});
    return duckdb::SinkResultType::NEED_MORE_INPUT;
  }

  duckdb::SinkNextBatchType NextBatch(duckdb::ExecutionContext&,
                                      duckdb::OperatorSinkNextBatchInput& input) const override {
    Move(input.local_state.Cast<LocalState>().place, input.local_state.partition_info.batch_index);
    return duckdb::SinkNextBatchType::READY;
  }

  duckdb::SinkCombineResultType Combine(duckdb::ExecutionContext&,
                                        duckdb::OperatorSinkCombineInput& input) const override {
    if (order_ == FeedOrder::kMorsels) Move(input.local_state.Cast<LocalState>().place, duckdb::optional_idx());
    return duckdb::SinkCombineResultType::FINISHED;
  }

  // Every chunk went to the takers: the result DuckDB hands back at the end holds none.
  duckdb::unique_ptr<duckdb::QueryResult> GetResult(duckdb::GlobalSinkState&) override {
    return duckdb::make_uniq<duckdb::MaterializedQueryResult>(
        statement_type, properties, names,
        duckdb::make_uniq<duckdb::ColumnDataCollection>(duckdb::Allocator::DefaultAllocator(), types), properties_);
  }

 private:
  duckdb::ClientProperties properties_;
};

}  // namespace

// How long a taker that found no task waits before it looks again: the first time, and at most.
constexpr std::chrono::microseconds kFirstIdle(20);
constexpr std::chrono::microseconds kLongestIdle(1000);

struct ChunkFeed::State {
  enum class Phase {
    kRunning,  // the query runs; takers may run its tasks
    kClosing,  // one taker ends the query (no taker runs its tasks any more)
    kClosed,   // the query is over
  };

  std::shared_ptr<Channel> channel;
  duckdb::shared_ptr<duckdb::ClientContext> context;  // the feed's connection
  duckdb::unique_ptr<duckdb::PendingQueryResult> pending;
  duckdb::Executor* executor = nullptr;  // the query's, while kRunning or kClosing
  // Under channel->mu:
  Phase phase = Phase::kRunning;
  int helpers = 0;  // takers running one of the query's tasks now
  int64_t next_sequence = 0;
  std::optional<Status> failed;

  Result<ChunkRun> Take(size_t max_chunks, size_t max_bytes, const std::atomic<bool>& interrupted) {
    Channel& ch = *channel;
    max_chunks = std::max<size_t>(max_chunks, 1);
    std::chrono::microseconds idle(0);  // the last wait for a task, when none was found
    std::unique_lock<std::mutex> lock(ch.mu);
    while (true) {
      if (failed) return *failed;
      if (ch.RunReady(max_chunks, max_bytes)) {
        ChunkRun run;
        size_t bytes = 0;
        while (!ch.ready.empty() && run.chunks.size() < max_chunks && bytes < max_bytes) {
          MadeChunk made = ch.PopReady();
          bytes += static_cast<size_t>(made.bytes);
          run.chunks.push_back(std::move(made.chunk));
        }
        run.sequence = next_sequence++;
        // The threads waiting for room, when there is room (or nothing is ready: one of them
        // may hold the earliest morsel).
        std::vector<duckdb::InterruptState> wake;
        if (ch.waiting_bytes < ch.max_waiting_bytes || ch.ready.empty()) wake = ch.TakeBlocked();
        lock.unlock();
        Wake(wake);
        return run;
      }
      switch (phase) {
        case Phase::kClosed: {
          ChunkRun end;
          end.sequence = next_sequence;
          return end;
        }
        case Phase::kClosing:
          ch.made.wait(lock, [&] { return phase != Phase::kClosing; });
          continue;
        case Phase::kRunning:
          break;
      }
      if (ch.finished || executor->HasError()) {
        Close(lock);
        continue;
      }
      if (interrupted.load()) return Status::Cancelled("interrupted");
      bool ran = false;
      {
        // Counted while this thread may use the executor, whatever happens in the task.
        ++helpers;
        lock.unlock();
        struct Leave {
          State& state;
          std::unique_lock<std::mutex>& lock;
          ~Leave() {
            lock.lock();
            if (--state.helpers == 0) state.channel->made.notify_all();
          }
        } leave{*this, lock};
        ran = RunTask(max_chunks, max_bytes);
      }
      if (ran) {
        idle = std::chrono::microseconds(0);
      } else {
        // Other threads run the query's tasks, or it waits for I/O or for room: wait for a
        // chunk, and look for a task again soon. Nothing tells this thread when DuckDB
        // schedules one (a pipeline that finished schedules the next, its Finalize among
        // them), so the waits start short and grow to 1 ms: a fixed 1 ms wait put 2.6 ms on
        // a small query's 4.9 through Flight.
        idle = std::clamp(idle * 2, kFirstIdle, kLongestIdle);
        ch.made.wait_for(lock, idle, [&] { return ch.RunReady(max_chunks, max_bytes) || ch.finished; });
      }
    }
  }

  // Runs a step of one of the query's tasks in this thread, for a taker waiting for a run of
  // `chunks` or `bytes`; false when no task waits to run.
  bool RunTask(size_t chunks, size_t bytes) {
    auto& scheduler = duckdb::TaskScheduler::GetScheduler(*context);
    duckdb::shared_ptr<duckdb::Task> task;
    if (!scheduler.GetTaskFromProducer(executor->GetToken(), task)) return false;
    Helping here{channel.get(), chunks, bytes, {}};
    struct Restore {
      Helping* outer;
      ~Restore() { helping = outer; }
    } restore{std::exchange(helping, &here)};
    // (A task reports its own failures to its executor: TASK_ERROR.)
    switch (task->Execute(duckdb::TaskExecutionMode::PROCESS_PARTIAL)) {
      case duckdb::TaskExecutionResult::TASK_NOT_FINISHED:
        scheduler.ScheduleTask(executor->GetToken(), std::move(task));
        break;
      case duckdb::TaskExecutionResult::TASK_BLOCKED:
        task->Deschedule();
        Wake(here.parked);  // (descheduled already: a wake before would wait for it forever)
        break;
      case duckdb::TaskExecutionResult::TASK_FINISHED:
      case duckdb::TaskExecutionResult::TASK_ERROR:
        break;
    }
    return true;
  }

  // Ends the query, its result fetched (an error becomes `failed`), once no taker runs its
  // tasks. Under the lock, which it releases meanwhile.
  void Close(std::unique_lock<std::mutex>& lock) {
    phase = Phase::kClosing;
    channel->made.wait(lock, [&] { return helpers == 0; });
    lock.unlock();
    std::optional<Status> error;
    try {
      duckdb::unique_ptr<duckdb::QueryResult> result = pending->Execute();
      if (result->HasError()) error = Status::InvalidArgument(result->GetError());
    } catch (const std::exception& e) {
      error = Status::InvalidArgument(duckdb::ErrorData(e).Message());
    }
    lock.lock();
    executor = nullptr;
    phase = Phase::kClosed;
    if (error) failed = std::move(error);
    channel->made.notify_all();
  }

  ~State() {
    std::vector<duckdb::InterruptState> wake;
    if (channel) {
      std::lock_guard<std::mutex> lock(channel->mu);
      wake = channel->CloseReader();
    }
    Wake(wake);
    if (phase != Phase::kClosed && context) context->Interrupt();
    if (pending) pending->Close();
  }
};

ChunkFeed::ChunkFeed(std::unique_ptr<State> state) : state_(std::move(state)) {}

ChunkFeed::~ChunkFeed() = default;

Result<std::unique_ptr<ChunkFeed>> ChunkFeed::Start(duckdb::Connection& connection, const std::string& sql,
                                                    int64_t max_waiting_bytes) {
  if (max_waiting_bytes < 1) return Status::InvalidArgument("a feed needs room for at least one chunk");
  auto state = std::make_unique<State>();
  state->channel = std::make_shared<Channel>(max_waiting_bytes);
  state->context = connection.context;
  try {
    CollectorScope scope(*connection.context,
                         [channel = state->channel](duckdb::ClientContext& c,
                                                    duckdb::PreparedStatementData& data) -> duckdb::PhysicalOperator& {
                           const FeedOrder order = OrderFor(c, data.physical_plan->Root(), /*any_order=*/false);
                           {
                             std::lock_guard<std::mutex> lock(channel->mu);
                             channel->collector_made = true;
                           }
                           return data.physical_plan->template Make<ChunkCollector>(data, channel, order,
                                                                                    c.GetClientProperties());
                         });
    state->pending = connection.context->PendingQuery(sql, /*allow_stream_result=*/false);
    if (state->pending->HasError()) return Status::InvalidArgument(state->pending->GetError());
    {
      std::lock_guard<std::mutex> lock(state->channel->mu);
      if (!state->channel->collector_made) return Status::Internal("DuckDB planned the query without a collector");
    }
    state->executor = &connection.context->GetExecutor();
  } catch (const std::exception& e) {
    return Status::InvalidArgument(duckdb::ErrorData(e).Message());
  }
  return std::make_unique<ChunkFeed>(std::move(state));
}

Result<ChunkRun> ChunkFeed::Take(size_t max_chunks, size_t max_bytes, const std::atomic<bool>& interrupted) {
  return state_->Take(max_chunks, max_bytes, interrupted);
}

}  // namespace skade::engine
