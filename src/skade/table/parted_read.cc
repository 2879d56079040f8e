#include "skade/table/parted_read.h"

#include <utility>

namespace skade::table {

Result<std::unique_ptr<PartedRead>> Table::ReadInParts(const ReadOptions& options) const {
  std::unique_ptr<Table> table = Clone();
  table->manifest_cache_ = manifest_cache_;
  SKADE_ASSIGN_OR_RETURN(PreparedRead prepared, table->PrepareRead(options));
  engine::ScanQuery query;
  query.columns = options.columns;
  query.where = options.where;
  return std::unique_ptr<PartedRead>(new PartedRead(std::move(table), std::move(prepared), std::move(query)));
}

PartedRead::PartedRead(std::unique_ptr<Table> table, Table::PreparedRead prepared, engine::ScanQuery query)
    : table_(std::move(table)),
      scan_(std::move(prepared.scan)),
      snapshot_(prepared.snapshot),
      filter_(std::move(prepared.filter)),
      query_(std::move(query)) {
  if (snapshot_ == nullptr) {
    planned_ = true;
    return;
  }
  planner_ = std::thread([this] { Plan(); });
}

PartedRead::~PartedRead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (planner_.joinable()) planner_.join();
}

void PartedRead::Plan() {
  iceberg::ScanPlanner planner(table_->read_io(), table_->metadata());
  planner.set_cache(table_->manifest_cache_);
  std::vector<iceberg::FileScanTask> part;
  size_t part_files = kFirstPartFiles;
  // The planner is one part ahead of the reader at most: it starts a part once the reader has
  // taken the one before. kCancelled once the reader is gone.
  auto wait_for_reader = [&]() -> Status {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return stopping_ || ready_.empty(); });
    if (stopping_) return Status::Cancelled("the read stopped");
    return Status::Ok();
  };
  auto hand_on = [&]() -> Status {
    SKADE_RETURN_IF_ERROR(wait_for_reader());
    std::lock_guard<std::mutex> lock(mu_);
    files_planned_ += static_cast<int64_t>(part.size());
    ready_.push_back(std::move(part));
    part.clear();
    part_files = std::min(part_files * kGrowth, kMaxPartFiles);
    changed_.notify_all();
    return Status::Ok();
  };
  Status status = planner.PlanFiles(*snapshot_, *scan_.schema, filter_, [&](iceberg::FileScanTask task) -> Status {
    if (part.empty()) SKADE_RETURN_IF_ERROR(wait_for_reader());
    part.push_back(std::move(task));
    if (part.size() < part_files) return Status::Ok();
    return hand_on();
  });
  if (status.ok() && !part.empty()) status = hand_on();
  std::lock_guard<std::mutex> lock(mu_);
  if (!status.ok() && !stopping_) plan_status_ = std::move(status);
  planned_ = true;
  changed_.notify_all();
}

Result<std::optional<std::string>> PartedRead::Next() {
  std::vector<iceberg::FileScanTask> part;
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !ready_.empty() || planned_; });
    if (ready_.empty()) {
      if (!plan_status_.ok()) return plan_status_;
      return std::optional<std::string>();
    }
    part = std::move(ready_.front());
    ready_.pop_front();
  }
  changed_.notify_all();  // the planner may go on with the next part
  engine::IcebergScan scan = scan_;
  scan.tasks = std::move(part);
  SKADE_ASSIGN_OR_RETURN(std::string sql, engine::BuildScanSql(table_->db_, scan, query_));
  return std::optional<std::string>(std::move(sql));
}

int64_t PartedRead::files_planned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_planned_;
}

}  // namespace skade::table
