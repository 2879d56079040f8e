// Private to skade/rest: scan plans the server holds between planTableScan and the calls that
// fetch their results (fetchPlanningResult, fetchScanTasks, cancelPlanning). A plan is split
// into pages of file scan tasks; the first page goes out with the planning result and each
// further page is one plan task. Plans over many manifests run on a background worker and
// answer "submitted" until done. A plan id stays valid until its result and every plan task
// were fetched (then for a short grace, min(ttl, 60 s)) or it was not touched for the time to
// live; the store is bounded in plans and bytes, finished plans giving way first, so clients
// that never fetch or cancel cannot exhaust the server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/status.h"

namespace skade::rest {

struct PlanStoreOptions {
  std::chrono::seconds ttl{600};  // since the plan was last touched
  size_t max_plans = 256;
  // Plans one owner (a principal, or a client address without authentication) may hold: past
  // it that owner's new plans are refused, so no client fills the store for the others.
  size_t max_plans_per_owner = 32;
  size_t max_bytes = size_t{256} << 20;  // serialized pages held
  // A plan task of a plan this store is still making in the background (another server listed
  // it first) waits this long for it.
  std::chrono::seconds task_wait{30};
};

// One page: a ScanTasks object ({"file-scan-tasks", "delete-files"}) as JSON text.
using PlanPage = std::string;

// What a planning job produces, page by page; Add fails with kCancelled once the plan was
// cancelled (the job then stops) and with kResourceExhausted past the byte bound.
class PlanSink {
 public:
  virtual ~PlanSink() = default;
  virtual Status Add(PlanPage page) = 0;
};

// The state of a plan as fetchPlanningResult reports it.
struct PlanView {
  enum class State { kSubmitted, kCompleted, kFailed, kCancelled };
  State state = State::kSubmitted;
  std::optional<PlanPage> first_page;   // completed: tasks sent with the result
  std::vector<std::string> plan_tasks;  // completed: tokens of the further pages
  Status error;                         // failed
};

// Thread-safe. Owns one worker thread for background plans.
class PlanStore {
 public:
  explicit PlanStore(PlanStoreOptions options);
  ~PlanStore();  // cancels running jobs and joins the worker
  PlanStore(const PlanStore&) = delete;
  PlanStore& operator=(const PlanStore&) = delete;

  using Job = std::function<Status(PlanSink& sink)>;

  // Runs `job` now, on the caller's thread, for the plan of `table` (any stable string naming
  // it) made by `owner`, and holds the result under `plan_id`: its further pages until fetched,
  // and the whole while the id is valid (a plan whose answer carried every task is finished at
  // once, and kept for the grace). A failed job holds nothing.
  // kResourceExhausted when the owner holds max_plans_per_owner plans or the store is full.
  Result<PlanView> PlanNow(const std::string& plan_id, const std::string& owner, const std::string& table,
                           const Job& job);
  // Queues `job` for the worker; the plan is "submitted" until it finishes.
  Status Submit(const std::string& plan_id, const std::string& owner, const std::string& table, Job job);

  // kNotFound unless `plan_id` is a held plan of `table` made by `owner`: a plan id is a
  // capability of its owner only, like a Flight SQL handle.
  Result<PlanView> View(const std::string& plan_id, const std::string& owner, const std::string& table);
  // Cancels a plan (a running job stops at its next page) and frees its pages; the plan then
  // reports "cancelled" until it expires. kNotFound as View.
  Status Cancel(const std::string& plan_id, const std::string& owner, const std::string& table);
  // The page a plan task names (waiting up to task_wait while its plan is still being made).
  // kNotFound when the task is unknown, of another owner or table, or of a cancelled, failed or
  // expired plan.
  Result<PlanPage> Fetch(const std::string& plan_task, const std::string& owner, const std::string& table);

  // Whether the store holds plan `plan_id` (of anyone, in any state): a plan another server
  // made is re-made here only when it is not.
  bool Holds(const std::string& plan_id);
  // Holds `plan_id` as a cancelled plan of `owner` and `table` (a plan another server made,
  // cancelled here): it reports "cancelled" here until it expires, and is not re-made here.
  // kResourceExhausted as PlanNow.
  Status HoldCancelled(const std::string& plan_id, const std::string& owner, const std::string& table);

  // The plan id a plan task names (the text before its last ':'), empty when it names none.
  static std::string PlanOfTask(const std::string& plan_task);

  size_t plans() const;
  size_t bytes() const;

 private:
  struct Plan;
  static std::shared_ptr<Plan> NewPlan(const std::string& id, const std::string& owner, const std::string& table);
  class Sink;
  void Work();
  void ExpireLocked(std::chrono::steady_clock::time_point now);
  PlanView ViewLocked(const Plan& plan) const;
  // Makes room for a plan of `owner`: expired plans go, then finished ones (FinishedLocked) of
  // that owner past its share and of anyone past the store's bound; kResourceExhausted when
  // plans a client still needs fill it.
  Status ReserveLocked(const std::string& owner);
  // Whether nothing of `plan` is still owed to its client: its result delivered and every plan
  // task fetched, or it was cancelled.
  static bool FinishedLocked(const Plan& plan);
  // Extends `plan`'s life from `now`: by the time to live, or by a short grace once finished.
  void TouchLocked(Plan& plan, std::chrono::steady_clock::time_point now) const;
  // Drops the finished plan (of `owner` when not null) that would expire first; false if none.
  bool EvictFinishedLocked(const std::string* owner);
  // The plan `id` when it is `owner`'s plan of `table`, else nullptr.
  Plan* FindLocked(const std::string& id, const std::string& owner, const std::string& table);

  const PlanStoreOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;  // a background plan finished
  std::map<std::string, std::shared_ptr<Plan>> plans_;
  std::deque<std::pair<std::shared_ptr<Plan>, Job>> queue_;
  size_t bytes_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace skade::rest
