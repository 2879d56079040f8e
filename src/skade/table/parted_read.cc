#include "skade/table/parted_read.h"

#include <cerrno>
#include <utility>

#include "skade/arrow/stream_of.h"

namespace skade::table {

Result<std::unique_ptr<PartedRead>> Table::ReadInParts(const ReadOptions& options) const {
  std::shared_ptr<Table> table = Clone();
  table->manifest_cache_ = manifest_cache_;
  SKADE_ASSIGN_OR_RETURN(PreparedRead prepared, table->PrepareRead(options));
  PartedReadPlan plan;
  plan.io = &table->read_io();
  plan.metadata = &table->metadata();
  plan.snapshot = prepared.snapshot;
  plan.query.where_checked = prepared.where_checked();
  plan.filter = std::move(prepared.filter);
  plan.cache = manifest_cache_;
  plan.scan = std::move(prepared.scan);
  plan.query.columns = options.columns;
  plan.query.where = options.where;
  plan.owner = std::move(table);
  return std::make_unique<PartedRead>(db_, std::move(plan));
}

PartedRead::PartedRead(engine::Database& db, PartedReadPlan plan) : db_(db), plan_(std::move(plan)) {
  plan_.scan.tasks.clear();
  if (plan_.snapshot == nullptr) {
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
  iceberg::ScanPlanner planner(*plan_.io, *plan_.metadata);
  planner.set_cache(plan_.cache);
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
  Status status = planner.PlanFiles(*plan_.snapshot, *plan_.scan.schema, plan_.filter, [&](iceberg::FileScanTask task) -> Status {
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
  engine::IcebergScan scan = plan_.scan;
  scan.tasks = std::move(part);
  SKADE_ASSIGN_OR_RETURN(std::string sql, engine::BuildScanSql(db_, scan, plan_.query));
  return std::optional<std::string>(std::move(sql));
}

Result<std::string> PartedRead::EmptySql() {
  return engine::BuildScanSql(db_, plan_.scan, plan_.query);
}

namespace {

// A schema's shape as text (formats and names, depth first), to check that parts agree.
std::string Shape(const ArrowSchema& s) {
  std::string out = std::string(s.format ? s.format : "") + ":" + (s.name ? s.name : "") + "(";
  for (int64_t i = 0; i < s.n_children; ++i) out += Shape(*s.children[i]) + ",";
  return out + ")";
}

Result<std::string> ShapeOf(ArrowArrayStream& stream) {
  arrow::SchemaHandle schema;
  if (stream.get_schema(&stream, schema.get()) != 0) {
    const char* e = stream.get_last_error(&stream);
    return Status::Internal(std::string("no schema for a part of a read: ") + (e ? e : "unknown error"));
  }
  return Shape(*schema.get());
}

// The chained stream's state: the part being read, the ones read (kept until the end, so that
// arrays handed out never outlive the stream that made them), and the rows still allowed.
struct Chain {
  std::unique_ptr<PartedRead> read;
  engine::Database* db = nullptr;
  std::vector<arrow::StreamHandle> streams;  // the last is the part being read
  std::string shape;                         // the first part's
  std::optional<int64_t> left;
  bool ended = false;
  std::string error;

  // Opens the query of the next part; false at the end.
  Result<bool> OpenNext() {
    SKADE_ASSIGN_OR_RETURN(std::optional<std::string> sql, read->Next());
    if (!sql) return false;
    std::string query = std::move(*sql);
    if (left) query = "SELECT * FROM (" + query + ") LIMIT " + std::to_string(*left);
    SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, db->QueryArrow(query));
    SKADE_ASSIGN_OR_RETURN(std::string shape_now, ShapeOf(*stream.get()));
    if (shape.empty()) {
      shape = std::move(shape_now);
    } else if (shape_now != shape) {
      return Status::Internal("a part of a read gives other columns than the first (" + shape_now + " vs " + shape + ")");
    }
    streams.push_back(std::move(stream));
    return true;
  }

  int Fail(const Status& status) {
    error = status.ToString();
    return EIO;
  }

  int GetNext(ArrowArray* out) {
    out->release = nullptr;
    while (!ended) {
      if (left && *left <= 0) break;
      ArrowArrayStream& current = *streams.back().get();
      if (current.get_next(&current, out) != 0) {
        const char* e = current.get_last_error(&current);
        error = e ? e : "a part of a read failed";
        return EIO;
      }
      if (out->release != nullptr) {
        if (left) *left -= out->length;
        return 0;
      }
      Result<bool> opened = OpenNext();
      if (!opened.ok()) return Fail(opened.status());
      if (!*opened) break;
    }
    ended = true;
    read.reset();  // lets the planner go
    return 0;
  }

  // The C stream's other calls (arrow::StreamOf).
  int GetSchema(ArrowSchema* schema) {
    ArrowArrayStream& first = *streams.front().get();
    if (first.get_schema(&first, schema) != 0) {
      const char* e = first.get_last_error(&first);
      error = e ? e : "no schema";
      return EIO;
    }
    return 0;
  }
  const char* LastError() const { return error.empty() ? nullptr : error.c_str(); }
};

}  // namespace

Result<arrow::StreamHandle> PartedRead::Stream(std::unique_ptr<PartedRead> read, std::optional<int64_t> limit) {
  auto chain = std::make_unique<Chain>();
  chain->db = &read->db_;
  chain->left = limit;
  chain->read = std::move(read);
  SKADE_ASSIGN_OR_RETURN(bool any, chain->OpenNext());
  if (!any) {
    // No file to read: the typed empty result.
    SKADE_ASSIGN_OR_RETURN(std::string sql, chain->read->EmptySql());
    SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle empty, chain->db->QueryArrow(sql));
    chain->streams.push_back(std::move(empty));
    chain->ended = true;
    chain->read.reset();
  }
  return arrow::StreamOf(std::move(chain));
}

int64_t PartedRead::files_planned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_planned_;
}

}  // namespace skade::table
