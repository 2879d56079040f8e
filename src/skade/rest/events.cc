// The change feed over HTTP: the events endpoint proposed for the REST catalog spec
// (apache/iceberg#12584, still open: POST /v1/{prefix}/events with a QueryEventsRequest,
// answered with events and a continuation token), fed by the durable commit log. The token
// is the commit_seq of the last log entry examined, so a client resumes exactly after it, and
// the feed has no gap and no repeat. Server-Sent Events frames of the same events are built
// here too (server.cc streams them).
#include <algorithm>
#include <set>

#include "skade/base/log.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/rest/api_internal.h"
#include "skade/base/json_parse_internal.h"

namespace skade::rest {
namespace {

constexpr int64_t kDefaultPageSize = 100;
constexpr int64_t kMaxPageSize = 1000;
// Log entries examined per request at most (filters may skip many): the token then points
// past them and the client continues.
constexpr int64_t kMaxExamined = 20000;
constexpr int64_t kLogBatch = 1000;

// The proposal's operation type of a commit-log entry.
std::string OperationType(const std::string& op) {
  if (op == "create") return "create-table";
  if (op == "register") return "register-table";
  if (op == "drop") return "drop-table";
  if (op == "rename") return "rename-table";
  return "update-table";  // snapshots (append, overwrite, delete, replace) and metadata updates
}

Json IdentifierJson(const catalog::TableIdent& t) {
  return Json{{"namespace", t.ns.levels}, {"name", t.name}};
}

}  // namespace

std::optional<int64_t> ParseCommitSeq(std::string_view text) {
  if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(std::string(text));
}

Json CommitEventJson(const events::CommitEvent& e) {
  Json j;
  j["commit-seq"] = e.commit_seq;
  j["identifier"] = IdentifierJson(e.table());
  j["operation"] = e.operation();
  j["snapshot-id"] = e.snapshot_id ? Json(*e.snapshot_id) : Json(nullptr);
  j["added-records"] = e.added_records;
  j["deleted-records"] = e.deleted_records;
  j["committed-at-us"] = e.committed_at_us;
  j["metadata-location"] = e.metadata_location();
  return j;
}

std::string SseFrame(const events::CommitEvent& e) {
  // One line of data (JSON has no raw newlines when dumped compactly); the id is the cursor an
  // EventSource sends back as Last-Event-ID when it reconnects.
  return "id: " + std::to_string(e.commit_seq) + "\nevent: commit\ndata: " +
         CommitEventJson(e).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

std::optional<CatalogApi::TableDetail> CatalogApi::DetailOf(const std::string& metadata_location,
                                                            std::optional<int64_t> snapshot_id) {
  if (metadata_location.empty()) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(details_mu_);
    auto it = details_.find(metadata_location);
    if (it != details_.end()) return it->second;
  }
  auto bytes = io_.Read(metadata_location);
  if (!bytes.ok()) return std::nullopt;  // expired and cleaned up: the event goes out without details
  auto parsed = iceberg::ParseTableMetadataFile(*bytes);
  if (!parsed.ok()) {
    SKADE_LOG_WARN("rest: events: cannot read {}: {}", metadata_location, parsed.status().ToString());
    return std::nullopt;
  }
  TableDetail d;
  d.table_uuid = parsed->table_uuid;
  if (const iceberg::Snapshot* added = snapshot_id ? parsed->SnapshotById(*snapshot_id) : nullptr) {
    d.snapshot = ParseOrderedJson(iceberg::SnapshotToJson(*added, parsed->format_version), "a snapshot").ValueOr(Json());
  }
  std::lock_guard<std::mutex> lock(details_mu_);
  if (details_.size() >= 4096) details_.clear();
  details_.emplace(metadata_location, d);
  return d;
}

Response CatalogApi::QueryEvents(const Request& r) {
  if (Status nul = CheckJsonHasNoNul(r.body, "the request body"); !nul.ok()) return ErrorResponse(nul);
  auto parsed = r.body.empty() ? Result<Json>(Json::object()) : ParseOrderedJson(r.body, "the request body");
  if (!parsed.ok()) return ErrorResponse(parsed.status());
  Json body = std::move(parsed).value();
  if (!body.is_object()) {
    return ErrorResponse(400, "BadRequestException", "the request body must be a JSON object");
  }
  auto bad = [](const std::string& m) { return ErrorResponse(400, "BadRequestException", m); };
  int64_t cursor = 0;
  if (const Json* token = Member(body, "continuation-token")) {
    auto seq = token->is_string() ? ParseCommitSeq(token->get<std::string>()) : std::nullopt;
    if (!seq) return bad("'continuation-token' must be a token from an earlier events response");
    cursor = *seq;
  }
  int64_t page_size = kDefaultPageSize;
  if (const Json* ps = Member(body, "page-size")) {
    if (!ps->is_number_integer() || ps->get<int64_t>() <= 0) return bad("'page-size' must be a positive integer");
    page_size = std::min(ps->get<int64_t>(), kMaxPageSize);
  }
  std::optional<int64_t> after_ms;
  if (const Json* a = Member(body, "after-timestamp-ms")) {
    if (!a->is_number_integer()) return bad("'after-timestamp-ms' must be an integer");
    after_ms = a->get<int64_t>();
  }
  auto string_set = [&](const char* key, std::optional<std::set<std::string>>* out) -> bool {
    const Json* v = Member(body, key);
    if (v == nullptr) return true;
    if (!v->is_array()) return false;
    out->emplace();
    for (const Json& s : *v) {
      if (!s.is_string()) return false;
      (*out)->insert(s.get<std::string>());
    }
    return true;
  };
  std::optional<std::set<std::string>> operation_types, object_types;
  if (!string_set("operation-types", &operation_types)) return bad("'operation-types' must be an array of strings");
  if (!string_set("object-types", &object_types)) return bad("'object-types' must be an array of strings");
  // Tables by name: [namespace levels..., table]. A namespace (all levels) selects its tables.
  std::optional<std::vector<std::vector<std::string>>> objects;
  if (const Json* by_name = Member(body, "catalog-objects-by-name")) {
    if (!by_name->is_array()) return bad("'catalog-objects-by-name' must be an array of name arrays");
    objects.emplace();
    for (const Json& name : *by_name) {
      if (!name.is_array() || name.empty() ||
          !std::all_of(name.begin(), name.end(), [](const Json& s) { return s.is_string(); })) {
        return bad("'catalog-objects-by-name' must be an array of name arrays");
      }
      objects->push_back(name.get<std::vector<std::string>>());
    }
  }
  if (Member(body, "catalog-objects-by-id") != nullptr) {
    return ErrorResponse(406, "UnsupportedOperationException",
                         "events by object id are not supported: select tables by name");
  }
  // Only table changes are logged.
  const bool tables_wanted = !object_types || object_types->count("table") > 0;
  auto selected = [&](const catalog::CommitLogEntry& e) {
    if (after_ms && e.committed_at_us / 1000 <= *after_ms) return false;
    if (operation_types && !operation_types->count(OperationType(e.operation))) return false;
    if (!objects) return true;
    std::vector<std::string> full = e.table.ns.levels;
    full.push_back(e.table.name);
    return std::any_of(objects->begin(), objects->end(), [&](const std::vector<std::string>& o) {
      return o.size() <= full.size() && std::equal(o.begin(), o.end(), full.begin()) &&
             (o.size() == full.size() || o.size() == e.table.ns.levels.size());
    });
  };

  Json events = Json::array();
  int64_t examined = 0;
  int64_t last_ms = 0;
  std::vector<catalog::CommitLogEntry> page;
  std::string last_txn;  // of the last entry examined
  bool done = !tables_wanted;
  while (!done) {
    auto batch = catalog_.CommitsSince(cursor, kLogBatch);
    if (!batch.ok()) {
      if (batch.status().code() == StatusCode::kNotImplemented) {
        return ErrorResponse(406, "UnsupportedOperationException", "this catalog keeps no commit log to serve events from");
      }
      return ErrorResponse(batch.status());
    }
    for (auto& e : *batch) {
      // A page ends when full (or after enough entries), but never inside a multi-table
      // commit: its events share a request id and count.
      const bool stop = static_cast<int64_t>(page.size()) >= page_size || examined >= kMaxExamined;
      if (stop && (e.txn_id.empty() || e.txn_id != last_txn)) {
        done = true;
        break;
      }
      cursor = e.commit_seq;
      last_txn = e.txn_id;
      last_ms = std::max(last_ms, e.committed_at_us / 1000);
      ++examined;
      if (selected(e)) page.push_back(std::move(e));
    }
    if (static_cast<int64_t>(batch->size()) < kLogBatch) done = true;  // the end of the log
  }
  if (!tables_wanted) {
    auto latest = catalog_.LatestCommitSeq();
    if (latest.ok()) cursor = std::max(cursor, *latest);
  }
  std::map<std::string, int64_t> per_request;
  for (const auto& e : page) {
    if (!e.txn_id.empty()) ++per_request[e.txn_id];
  }
  for (const auto& e : page) {
    Json ev;
    ev["event-id"] = std::to_string(e.commit_seq);
    ev["request-id"] = e.txn_id.empty() ? std::to_string(e.commit_seq) : e.txn_id;
    ev["request-event-count"] = e.txn_id.empty() ? 1 : per_request[e.txn_id];
    ev["timestamp-ms"] = e.committed_at_us / 1000;
    Json op;
    const std::string type = OperationType(e.operation);
    op["operation-type"] = type;
    op["identifier"] = IdentifierJson(e.table);
    auto detail = type == "drop-table" ? std::nullopt : DetailOf(e.metadata_location, e.snapshot_id);
    if (detail && !detail->table_uuid.empty()) op["table-uuid"] = detail->table_uuid;
    if (type == "update-table") {
      Json updates = Json::array();
      if (detail && detail->snapshot.is_object()) {
        updates.push_back(Json{{"action", "add-snapshot"}, {"snapshot", detail->snapshot}});
        updates.push_back(Json{{"action", "set-snapshot-ref"}, {"ref-name", "main"}, {"type", "branch"},
                               {"snapshot-id", *e.snapshot_id}});
      }
      op["updates"] = std::move(updates);
    }
    if (!e.metadata_location.empty() && type != "drop-table") op["metadata-location"] = e.metadata_location;
    ev["operation"] = std::move(op);
    // skade's own fields (the commit log row), which the proposal leaves to extensions.
    ev["x-skade-commit"] = Json{{"commit-seq", e.commit_seq},
                                {"operation", e.operation},
                                {"snapshot-id", e.snapshot_id ? Json(*e.snapshot_id) : Json(nullptr)},
                                {"added-records", e.added_records},
                                {"deleted-records", e.deleted_records}};
    events.push_back(std::move(ev));
  }
  Json out;
  out["events"] = std::move(events);
  out["continuation-token"] = std::to_string(cursor);
  out["highest-processed-timestamp-ms"] = last_ms;
  // skade's extension: where the log ends now (so a client knows its lag without paging).
  if (auto head = catalog_.LatestCommitSeq(); head.ok()) out["x-skade-log-head"] = *head;
  return JsonResponse(out);
}

}  // namespace skade::rest
