// The index holds, per table that skade committed to, the snapshots of its current metadata that
// record lineage, and per input table the tables written from it. A commit log entry says only
// which table changed, so a table named by new entries is loaded once per request however many
// commits it had, and its snapshots indexed again from its metadata (which also drops snapshots
// that were expired). Tables the log never names (written by other engines) record no skade
// lineage and are not read at all.
#include "skade/console/downstream.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

#include "skade/console/answers_internal.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/table/snapshot_lineage.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using internal::Error;
using internal::Number;

// Log entries read per query of the log.
constexpr int64_t kLogBatch = 10'000;

}  // namespace

Status Downstream::CatchUp() const {
  if (no_log_) return Status::Ok();
  std::map<std::string, catalog::TableIdent> touched = std::move(retry_);
  retry_.clear();
  bool renamed = false;
  Status failed = Status::Ok();
  while (true) {
    auto batch = catalog_.CommitsSince(through_seq_, kLogBatch);
    if (!batch.ok()) {
      if (batch.status().code() == StatusCode::kNotImplemented) {
        no_log_ = batch.status();
        return Status::Ok();
      }
      failed = batch.status().WithContext("the commit log");
      break;
    }
    if (batch->empty()) break;
    for (const catalog::CommitLogEntry& e : *batch) {
      touched.emplace(e.table.ToString(), e.table);
      renamed = renamed || e.operation == "rename";
    }
    through_seq_ = batch->back().commit_seq;
    if (static_cast<int64_t>(batch->size()) < kLogBatch) break;
  }
  if (renamed) touched.insert(writers_.begin(), writers_.end());
  for (const auto& [name, ident] : touched) Reindex(ident);
  return failed;
}

void Downstream::Reindex(const catalog::TableIdent& ident) const {
  const std::string writer = ident.ToString();
  auto loaded = catalog_.LoadTable(ident);
  if (!loaded.ok() && loaded.status().code() != StatusCode::kNotFound) {
    retry_.emplace(writer, ident);
    return;
  }
  if (auto old = by_writer_.find(writer); old != by_writer_.end()) {
    for (const Commit& c : old->second) {
      for (const std::string& input : c.inputs) {
        auto readers = readers_.find(input);
        if (readers == readers_.end()) continue;
        readers->second.erase(writer);
        if (readers->second.empty()) readers_.erase(readers);
      }
    }
    by_writer_.erase(old);
    writers_.erase(writer);
  }
  if (!loaded.ok()) return;  // dropped, or renamed away
  std::vector<Commit> commits;
  for (const iceberg::Snapshot& s : loaded->metadata->snapshots) {
    std::optional<std::string> raw = s.SummaryValue(table::kSnapshotLineageKey);
    if (!raw) continue;
    // A summary another writer put under the key, not skade's lineage, is left out.
    auto lineage = table::DecodeSnapshotLineage(*raw);
    if (!lineage.ok()) continue;
    Commit c{writer, s.snapshot_id, s.timestamp_ms, s.operation(), *raw, {}};
    for (const table::LineageInput& input : lineage->inputs) {
      if (input.location.empty()) c.inputs.insert(input.table.ToString());
    }
    if (c.inputs.empty()) continue;
    for (const std::string& input : c.inputs) readers_[input].insert(writer);
    commits.push_back(std::move(c));
  }
  if (!commits.empty()) {
    by_writer_.emplace(writer, std::move(commits));
    writers_.emplace(writer, ident);
  }
}

std::optional<RouteAnswer> Downstream::Serve(std::string_view method, std::string_view path,
                                               const std::map<std::string, std::string>& query) const {
  if (path != kDownstreamPath) return std::nullopt;
  if (method != "GET") return internal::OnlyGet("downstream lineage");
  const std::optional<int64_t> offset = Number(query, "offset", 0, INT64_MAX / 2);
  const std::optional<int64_t> limit = Number(query, "limit", 50, kMaxLimit);
  if (!offset || !limit || *limit == 0) {
    return Error(400, "BadRequestException",
                 "'offset' must be a count and 'limit' 1…" + std::to_string(kMaxLimit));
  }
  auto ident = internal::TableParam(query);
  if (!ident.ok()) return Error(ident.status());
  const std::string name = ident->ToString();

  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = CatchUp(); !st.ok()) return Error(500, "ServerErrorException", st.message());
  std::vector<const Commit*> found;
  if (auto readers = readers_.find(name); readers != readers_.end()) {
    for (const std::string& writer : readers->second) {
      auto commits = by_writer_.find(writer);
      if (commits == by_writer_.end()) continue;
      for (const Commit& c : commits->second) {
        if (c.inputs.count(name) != 0) found.push_back(&c);
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const Commit* a, const Commit* b) {
    if (a->timestamp_ms != b->timestamp_ms) return a->timestamp_ms > b->timestamp_ms;
    if (a->table != b->table) return a->table < b->table;
    return a->snapshot_id > b->snapshot_id;
  });
  Json commits = Json::array();
  const int64_t size = static_cast<int64_t>(found.size());
  for (int64_t i = *offset; i < size && i < *offset + *limit; i++) {
    const Commit& c = *found[static_cast<size_t>(i)];
    Json summary{{"operation", c.operation}, {table::kSnapshotLineageKey, c.lineage}};
    Json snapshot{{"snapshot-id", c.snapshot_id}, {"timestamp-ms", c.timestamp_ms}, {"summary", std::move(summary)}};
    commits.push_back(Json{{"table", c.table}, {"snapshot", std::move(snapshot)}});
  }
  Json body{{"table", name}, {"total", size}, {"offset", *offset}, {"indexed-through", through_seq_},
            {"commits", std::move(commits)}};
  if (no_log_) {
    body["note"] = "this catalog keeps no commit log: downstream lineage is not known (" + no_log_->message() + ")";
  }
  return RouteAnswer{200, body.dump(-1, ' ', false, Json::error_handler_t::replace), {}};
}

}  // namespace skade::console
