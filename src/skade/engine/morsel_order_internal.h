// The order a result collector of skade's hands out what DuckDB's threads make: the Arrow
// batches of a stream (arrow_feed.cc) and the chunks of skade_scan's source (chunk_feed.cc).
// - kMorsels: every thread sinks; what a thread makes from a morsel (DuckDB's batch index: a
//   row group of a Parquet file) is handed out once every earlier morsel's has been. DuckDB
//   hands morsels out in increasing order, so nothing below the lowest morsel a thread holds can
//   come any more.
// - kSerial: one thread sinks (a source without batch indexes that must keep its order).
// - kAny: every thread sinks, items are handed out as they are made.
// Thread-compatible: every member is used under `mu`.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/execution/operator/helper/physical_result_collector.hpp"
#include "duckdb/execution/physical_plan_generator.hpp"

namespace skade::engine {

enum class FeedOrder {
  kAny,      // items as they are made, by every thread
  kMorsels,  // every thread; each morsel's items handed out after the earlier morsels'
  kSerial,   // one thread (a source without batch indexes that must keep its order)
};

// The order a collector at the root of `plan` keeps: the plan's own (an ORDER BY's) or, unless
// `any_order`, the sources' (DuckDB's preserve_insertion_order), by morsels where DuckDB numbers
// them.
inline FeedOrder OrderFor(duckdb::ClientContext& context, duckdb::PhysicalOperator& plan, bool any_order) {
  const bool fixed = duckdb::PhysicalPlanGenerator::OrderPreservationRecursive(plan) ==
                     duckdb::OrderPreservationType::FIXED_ORDER;
  if ((fixed || !any_order) && duckdb::PhysicalPlanGenerator::PreserveInsertionOrder(context, plan)) {
    return duckdb::PhysicalPlanGenerator::UseBatchIndex(context, plan) ? FeedOrder::kMorsels : FeedOrder::kSerial;
  }
  return FeedOrder::kAny;
}

// Wakes DuckDB tasks that returned BLOCKED (after the lock is released).
inline void Wake(const std::vector<duckdb::InterruptState>& states) {
  for (const auto& state : states) state.Callback();
}

// `Item` is movable and has an `int64_t bytes`.
template <typename Item>
struct MorselOrder {
  // One morsel's items (kMorsels), until they can be handed out.
  struct Morsel {
    std::deque<Item> items;
    bool done = false;  // its thread has moved on: no item will join
  };

  std::mutex mu;
  std::condition_variable made;               // an item became ready
  std::deque<Item> ready;                     // for the reader, in order
  std::map<duckdb::idx_t, Morsel> morsels;    // kMorsels: items not yet ready, by batch index
  std::multiset<duckdb::idx_t> held;          // kMorsels: the morsel each thread holds now
  duckdb::idx_t highest_seen = 0;             // kMorsels: the highest batch index a thread moved to
  int64_t waiting = 0;                        // items in `ready` and `morsels`
  int64_t waiting_bytes = 0;                  // their bytes
  bool finished = false;                      // the sink's Finalize ran: every item is in
  bool closed = false;                        // the reader is gone: the threads stop
  std::vector<duckdb::InterruptState> blocked;  // threads waiting for room

  // The lowest morsel a thread holds (none: every item in `morsels` is final).
  std::optional<duckdb::idx_t> Lowest() const {
    if (held.empty()) return std::nullopt;
    return *held.begin();
  }

  // Moves the items that may now be handed out to `ready`: the first morsel's while no thread
  // holds an earlier one, and whole morsels while they are done.
  void Promote() {
    const std::optional<duckdb::idx_t> lowest = Lowest();
    while (!morsels.empty()) {
      auto first = morsels.begin();
      if (!finished && lowest && first->first > *lowest) break;
      for (auto& item : first->second.items) ready.push_back(std::move(item));
      first->second.items.clear();
      if (!finished && !first->second.done) break;
      morsels.erase(first);
    }
    if (!ready.empty()) made.notify_all();
  }

  // Where a thread starting now stands until its first morsel (as DuckDB pins a new thread's
  // batch index): at the lowest morsel held, or, when none is, at the highest index seen (every
  // morsel still to be handed out is above it). Holds back every item above it meanwhile.
  duckdb::idx_t Pin() {
    const duckdb::idx_t pin = held.empty() ? highest_seen : *held.begin();
    held.insert(pin);
    return pin;
  }

  // A thread leaves `from` (a morsel it held, then done: no item of it will come; or where it
  // was pinned) for morsel `to` (none: it ends). Returns the threads to wake when the lowest
  // morsel held changed: one of them may hold it.
  std::vector<duckdb::InterruptState> Move(duckdb::optional_idx from, bool from_pin, duckdb::optional_idx to) {
    const std::optional<duckdb::idx_t> before = Lowest();
    if (from.IsValid()) {
      if (!from_pin) {
        if (auto it = morsels.find(from.GetIndex()); it != morsels.end()) it->second.done = true;
      }
      if (auto it = held.find(from.GetIndex()); it != held.end()) held.erase(it);
    }
    if (to.IsValid()) {
      held.insert(to.GetIndex());
      highest_seen = std::max(highest_seen, to.GetIndex());
    }
    Promote();
    if (Lowest() == before) return {};
    return TakeBlocked();
  }

  // An item made from `morsel` (kMorsels) or, without one, ready at once.
  void Add(FeedOrder order, duckdb::optional_idx morsel, Item item) {
    ++waiting;
    waiting_bytes += item.bytes;
    if (order == FeedOrder::kMorsels) {
      morsels[morsel.GetIndex()].items.push_back(std::move(item));
      Promote();
    } else {
      ready.push_back(std::move(item));
      made.notify_all();
    }
  }

  // The first ready item, taken (`ready` is not empty).
  Item PopReady() {
    Item item = std::move(ready.front());
    ready.pop_front();
    --waiting;
    waiting_bytes -= item.bytes;
    return item;
  }

  // Whether a thread sinking into `morsel` waits for room before its next chunk: when
  // `max_waiting` items or `max_waiting_bytes` wait, unless the reader waits for it (nothing is
  // ready, and it holds the earliest morsel).
  bool MustWait(FeedOrder order, duckdb::optional_idx morsel, int64_t max_waiting, int64_t max_waiting_bytes) const {
    if (waiting < max_waiting && waiting_bytes < max_waiting_bytes) return false;
    if (order != FeedOrder::kMorsels || !ready.empty()) return true;
    const std::optional<duckdb::idx_t> lowest = Lowest();
    return morsel.IsValid() && lowest && morsel.GetIndex() > *lowest;
  }

  // The reader is gone: what waits is dropped, and the threads stop at their next sink (the
  // ones waiting for room are returned, to wake after the lock is released).
  std::vector<duckdb::InterruptState> CloseReader() {
    closed = true;
    ready.clear();
    morsels.clear();
    waiting = 0;
    waiting_bytes = 0;
    return TakeBlocked();
  }

  // The threads waiting for room, to wake after the lock is released.
  std::vector<duckdb::InterruptState> TakeBlocked() {
    std::vector<duckdb::InterruptState> out;
    out.swap(blocked);
    return out;
  }
};

// Where a thread of an ordered collector stands (kMorsels).
struct MorselPlace {
  duckdb::optional_idx morsel;  // the batch index the thread's rows come from
  bool pinned = false;          // `morsel` is where the thread was pinned (no rows yet)
};

// What skade's result collectors share to keep the order: how DuckDB runs their sink, and where
// each thread stands in `channel_` (a MorselOrder).
template <typename ChannelT>
class OrderedCollector : public duckdb::PhysicalResultCollector {
 public:
  OrderedCollector(duckdb::PhysicalPlan& plan, duckdb::PreparedStatementData& data, std::shared_ptr<ChannelT> channel,
                   FeedOrder order)
      : duckdb::PhysicalResultCollector(plan, data), channel_(std::move(channel)), order_(order) {}

  bool ParallelSink() const override { return order_ != FeedOrder::kSerial; }
  bool SinkOrderDependent() const override { return order_ != FeedOrder::kAny; }
  duckdb::OperatorPartitionInfo RequiredPartitionInfo() const override {
    return order_ == FeedOrder::kMorsels ? duckdb::OperatorPartitionInfo::BatchIndex()
                                         : duckdb::OperatorPartitionInfo::NoPartitionInfo();
  }
  duckdb::unique_ptr<duckdb::GlobalSinkState> GetGlobalSinkState(duckdb::ClientContext&) const override {
    return duckdb::make_uniq<duckdb::GlobalSinkState>();
  }
  duckdb::SinkFinalizeType Finalize(duckdb::Pipeline&, duckdb::Event&, duckdb::ClientContext&,
                                    duckdb::OperatorSinkFinalizeInput&) const override {
    Finish();
    return duckdb::SinkFinalizeType::READY;
  }

 protected:
  // A new thread's place: DuckDB makes a thread's state before the thread takes its first morsel.
  void Pin(MorselPlace& place) const {
    if (order_ != FeedOrder::kMorsels) return;
    std::lock_guard<std::mutex> lock(channel_->mu);
    place.morsel = channel_->Pin();
    place.pinned = true;
  }
  // The morsel a chunk sinking from `input` comes from, when the thread has not moved to it yet
  // (DuckDB calls NextBatch first; this only guards).
  duckdb::optional_idx MovesTo(const MorselPlace& place, const duckdb::OperatorSinkInput& input) const {
    if (order_ != FeedOrder::kMorsels) return duckdb::optional_idx();
    const duckdb::optional_idx morsel = input.local_state.partition_info.batch_index;
    if (morsel.IsValid() && (place.pinned || !place.morsel.IsValid() || place.morsel.GetIndex() != morsel.GetIndex())) {
      return morsel;
    }
    return duckdb::optional_idx();
  }
  // The thread leaves its morsel (done: nothing more will come from it) for `to` (none: it ends).
  void Move(MorselPlace& place, duckdb::optional_idx to) const {
    std::vector<duckdb::InterruptState> wake;
    {
      std::lock_guard<std::mutex> lock(channel_->mu);
      wake = channel_->Move(place.morsel, place.pinned, to);
    }
    place.morsel = to;
    place.pinned = false;
    Wake(wake);
  }
  // Every item is in: all of them are ready.
  void Finish() const {
    std::vector<duckdb::InterruptState> wake;
    {
      std::lock_guard<std::mutex> lock(channel_->mu);
      channel_->finished = true;
      channel_->Promote();
      channel_->made.notify_all();
      wake = channel_->TakeBlocked();
    }
    Wake(wake);
  }

  std::shared_ptr<ChannelT> channel_;
  const FeedOrder order_;
};

}  // namespace skade::engine
