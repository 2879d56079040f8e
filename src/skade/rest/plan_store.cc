#include "skade/rest/plan_store_internal.h"

#include <atomic>

#include "skade/base/log.h"

namespace skade::rest {

struct PlanStore::Plan {
  std::string id;
  std::string owner;
  std::string table;
  PlanView::State state = PlanView::State::kSubmitted;
  Status error;
  std::vector<PlanPage> pages;
  size_t bytes = 0;
  std::vector<bool> fetched;  // per page after the first
  size_t unfetched = 0;
  // The completed result (its first page and plan tasks) reached the client: at once for a plan
  // made in the request, at the first fetchPlanningResult that saw it completed otherwise.
  bool result_delivered = false;
  bool cancelled = false;
  std::chrono::steady_clock::time_point expires_at;
};

// Collects a job's pages into its plan, counting them against the store's byte bound.
class PlanStore::Sink : public PlanSink {
 public:
  Sink(PlanStore& store, Plan& plan) : store_(store), plan_(plan) {}
  Status Add(PlanPage page) override {
    std::lock_guard<std::mutex> lock(store_.mu_);
    if (plan_.cancelled) return Status(StatusCode::kCancelled, "the scan plan was cancelled");
    while (store_.bytes_ + page.size() > store_.options_.max_bytes && store_.EvictFinishedLocked(nullptr)) {
    }
    if (store_.bytes_ + page.size() > store_.options_.max_bytes) {
      return Status(StatusCode::kResourceExhausted,
                    "the server holds too many scan planning results; fetch or cancel earlier plans, or retry later");
    }
    store_.bytes_ += page.size();
    plan_.bytes += page.size();
    plan_.pages.push_back(std::move(page));
    return Status::Ok();
  }

 private:
  PlanStore& store_;
  Plan& plan_;
};

namespace {

std::string TaskToken(const std::string& plan_id, size_t page) { return plan_id + ":" + std::to_string(page); }

}  // namespace

std::shared_ptr<PlanStore::Plan> PlanStore::NewPlan(const std::string& id, const std::string& owner,
                                                    const std::string& table) {
  auto plan = std::make_shared<Plan>();
  plan->id = id;
  plan->owner = owner;
  plan->table = table;
  return plan;
}

PlanStore::PlanStore(PlanStoreOptions options) : options_(options), worker_([this] { Work(); }) {}

PlanStore::~PlanStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [id, plan] : plans_) plan->cancelled = true;
  }
  wake_.notify_all();
  done_.notify_all();
  worker_.join();
}

void PlanStore::ExpireLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = plans_.begin(); it != plans_.end();) {
    const Plan& p = *it->second;
    if (p.state != PlanView::State::kSubmitted && p.expires_at <= now) {
      bytes_ -= p.bytes;
      it = plans_.erase(it);
    } else {
      ++it;
    }
  }
}

bool PlanStore::FinishedLocked(const Plan& plan) {
  if (plan.state == PlanView::State::kCancelled) return true;
  // A failure told to its client holds nothing that client still needs.
  if (plan.state == PlanView::State::kFailed) return plan.result_delivered;
  return plan.state == PlanView::State::kCompleted && plan.result_delivered && plan.unfetched == 0;
}

void PlanStore::TouchLocked(Plan& plan, std::chrono::steady_clock::time_point now) const {
  // A finished plan is kept only a little longer, for a retry of the request that finished it
  // (the last fetch, a cancel whose answer was lost) and for a client's closing cancel.
  const auto grace = std::min<std::chrono::steady_clock::duration>(options_.ttl, std::chrono::seconds(60));
  plan.expires_at = now + (FinishedLocked(plan) ? grace : std::chrono::steady_clock::duration(options_.ttl));
}

bool PlanStore::EvictFinishedLocked(const std::string* owner) {
  auto victim = plans_.end();
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    const Plan& p = *it->second;
    if (!FinishedLocked(p) || (owner != nullptr && p.owner != *owner)) continue;
    if (victim == plans_.end() || p.expires_at < victim->second->expires_at) victim = it;
  }
  if (victim == plans_.end()) return false;
  bytes_ -= victim->second->bytes;
  plans_.erase(victim);
  return true;
}

Status PlanStore::ReserveLocked(const std::string& owner) {
  ExpireLocked(std::chrono::steady_clock::now());
  size_t mine = 0;
  for (const auto& [id, plan] : plans_) mine += plan->owner == owner ? 1 : 0;
  // Finished plans make room before anyone is refused: they hold nothing a client still needs.
  while (mine >= options_.max_plans_per_owner && EvictFinishedLocked(&owner)) --mine;
  while (plans_.size() >= options_.max_plans && EvictFinishedLocked(nullptr)) {
  }
  if (mine >= options_.max_plans_per_owner) {
    return Status(StatusCode::kResourceExhausted,
                  "you hold " + std::to_string(mine) + " scan plans; fetch or cancel earlier plans, or retry later");
  }
  if (plans_.size() >= options_.max_plans) {
    return Status(StatusCode::kResourceExhausted,
                  "the server holds " + std::to_string(plans_.size()) +
                      " scan plans; fetch or cancel earlier plans, or retry later");
  }
  return Status::Ok();
}

PlanStore::Plan* PlanStore::FindLocked(const std::string& id, const std::string& owner, const std::string& table) {
  auto it = plans_.find(id);
  if (it == plans_.end() || it->second->owner != owner || it->second->table != table) return nullptr;
  return it->second.get();
}

PlanView PlanStore::ViewLocked(const Plan& plan) const {
  PlanView v;
  v.state = plan.state;
  v.error = plan.error;
  if (plan.state == PlanView::State::kCompleted) {
    if (!plan.pages.empty()) v.first_page = plan.pages.front();
    for (size_t i = 1; i < plan.pages.size(); ++i) v.plan_tasks.push_back(TaskToken(plan.id, i));
  }
  return v;
}

Result<PlanView> PlanStore::PlanNow(const std::string& plan_id, const std::string& owner, const std::string& table,
                                    const Job& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    SKADE_RETURN_IF_ERROR(ReserveLocked(owner));
  }
  auto plan = NewPlan(plan_id, owner, table);
  Sink sink(*this, *plan);
  Status st = job(sink);
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok()) {
    bytes_ -= plan->bytes;
    return st;
  }
  // Held even when the answer carries every task: spec planTableScan, "Responses that include a
  // plan-id indicate that the service is holding state", so the id answers fetchPlanningResult
  // and cancelPlanning until its plan tasks are fetched (none here: at once) and a grace passed.
  plan->state = PlanView::State::kCompleted;
  plan->result_delivered = true;
  plan->fetched.assign(plan->pages.size(), false);
  plan->unfetched = plan->pages.empty() ? 0 : plan->pages.size() - 1;
  TouchLocked(*plan, std::chrono::steady_clock::now());
  PlanView v = ViewLocked(*plan);
  plans_[plan_id] = std::move(plan);
  return v;
}

Status PlanStore::Submit(const std::string& plan_id, const std::string& owner, const std::string& table, Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  SKADE_RETURN_IF_ERROR(ReserveLocked(owner));
  auto plan = NewPlan(plan_id, owner, table);
  plans_[plan_id] = plan;
  queue_.emplace_back(std::move(plan), std::move(job));
  wake_.notify_one();
  return Status::Ok();
}

void PlanStore::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [plan, job] = std::move(queue_.front());
    queue_.pop_front();
    if (plan->cancelled) continue;
    lock.unlock();
    Sink sink(*this, *plan);
    Status st = job(sink);
    lock.lock();
    if (plan->cancelled) {  // Cancel already freed it and reports "cancelled"
      done_.notify_all();
      continue;
    }
    plan->expires_at = std::chrono::steady_clock::now() + options_.ttl;
    if (!st.ok()) {
      bytes_ -= plan->bytes;
      plan->bytes = 0;
      plan->pages.clear();
      plan->state = PlanView::State::kFailed;
      plan->error = st;
      SKADE_LOG_WARN("rest: scan plan {} failed: {}", plan->id, st.ToString());
      done_.notify_all();
      continue;
    }
    plan->state = PlanView::State::kCompleted;
    plan->fetched.assign(plan->pages.size(), false);
    plan->unfetched = plan->pages.empty() ? 0 : plan->pages.size() - 1;
    done_.notify_all();
  }
}

Result<PlanView> PlanStore::View(const std::string& plan_id, const std::string& owner, const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(std::chrono::steady_clock::now());
  Plan* plan = FindLocked(plan_id, owner, table);
  if (plan == nullptr) return Status::NotFound("scan plan '" + plan_id + "' does not exist (it may have expired)");
  if (plan->state == PlanView::State::kCompleted || plan->state == PlanView::State::kFailed) {
    plan->result_delivered = true;
  }
  if (plan->state != PlanView::State::kSubmitted) TouchLocked(*plan, std::chrono::steady_clock::now());
  return ViewLocked(*plan);
}

Status PlanStore::Cancel(const std::string& plan_id, const std::string& owner, const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(std::chrono::steady_clock::now());  // an expired plan is gone, not cancelled
  Plan* plan = FindLocked(plan_id, owner, table);
  if (plan == nullptr) return Status::NotFound("scan plan '" + plan_id + "' does not exist (it may have expired)");
  Plan& p = *plan;
  p.cancelled = true;
  p.state = PlanView::State::kCancelled;
  bytes_ -= p.bytes;
  p.bytes = 0;
  p.pages.clear();
  p.pages.shrink_to_fit();
  TouchLocked(p, std::chrono::steady_clock::now());
  done_.notify_all();
  return Status::Ok();
}

Result<PlanPage> PlanStore::Fetch(const std::string& plan_task, const std::string& owner, const std::string& table) {
  const size_t colon = plan_task.rfind(':');
  auto unknown = [&] { return Status::NotFound("plan task '" + plan_task + "' does not exist (its plan may have expired)"); };
  if (colon == std::string::npos || colon + 1 >= plan_task.size()) return unknown();
  size_t page = 0;
  for (size_t i = colon + 1; i < plan_task.size(); ++i) {
    const char c = plan_task[i];
    if (c < '0' || c > '9' || page > 1'000'000'000) return unknown();
    page = page * 10 + static_cast<size_t>(c - '0');
  }
  std::unique_lock<std::mutex> lock(mu_);
  ExpireLocked(std::chrono::steady_clock::now());
  const std::string plan_id = plan_task.substr(0, colon);
  Plan* plan = FindLocked(plan_id, owner, table);
  if (plan != nullptr && plan->state == PlanView::State::kSubmitted) {
    // Another server listed this task (it made the plan again and finished first); this one is
    // still making it: the client waits for it rather than hearing the task does not exist.
    std::shared_ptr<Plan> held = plans_[plan_id];
    done_.wait_for(lock, options_.task_wait, [&] { return stopping_ || held->state != PlanView::State::kSubmitted; });
    plan = FindLocked(plan_id, owner, table);
  }
  if (plan == nullptr) return unknown();
  Plan& p = *plan;
  if (p.state != PlanView::State::kCompleted || page == 0 || page >= p.pages.size()) return unknown();
  if (!p.fetched[page]) {
    p.fetched[page] = true;
    --p.unfetched;
  }
  // Every task fetched: the client needs the plan no more (spec cancelPlanning: "Cancellation is
  // not necessary when scan tasks for each plan task have been fetched"), so it stays only for
  // the grace (a retry of the last fetch), also when fetched again.
  TouchLocked(p, std::chrono::steady_clock::now());
  return p.pages[page];
}

bool PlanStore::Holds(const std::string& plan_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(std::chrono::steady_clock::now());
  return plans_.count(plan_id) != 0;
}

Status PlanStore::HoldCancelled(const std::string& plan_id, const std::string& owner, const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  SKADE_RETURN_IF_ERROR(ReserveLocked(owner));
  auto plan = NewPlan(plan_id, owner, table);
  plan->cancelled = true;
  plan->state = PlanView::State::kCancelled;
  TouchLocked(*plan, std::chrono::steady_clock::now());
  plans_[plan_id] = std::move(plan);
  return Status::Ok();
}

std::string PlanStore::PlanOfTask(const std::string& plan_task) {
  const size_t colon = plan_task.rfind(':');
  return colon == std::string::npos ? std::string() : plan_task.substr(0, colon);
}

size_t PlanStore::plans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

size_t PlanStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace skade::rest
