// The console's read queries. What runs is decided by sql/client_query.h (the rules Flight SQL's
// statements meet), never by looking at the text here; a query runs on a connection of its own,
// registered in RunningQueries so that the timeout and its principal's cancel interrupt exactly
// it. Answers are bounded in rows and bytes: the query stops reading once they are reached.
#include "skade/console/query.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "skade/base/media_type.h"
#include "skade/sql/client_query.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// How often the watcher looks at deadlines and interrupts stopped statements again.
constexpr std::chrono::milliseconds kWatchPeriod{50};

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

RouteAnswer Error(int status, std::string_view type, const std::string& message) {
  return RouteAnswer{status, Dump(Json{{"error", {{"message", message}, {"type", type}, {"code", status}}}}), {}};
}

RouteAnswer MethodNotAllowed(std::string_view allowed, const std::string& message) {
  RouteAnswer refused = Error(405, "BadRequestException", message);
  refused.headers.emplace_back("Allow", std::string(allowed));
  return refused;
}

// An id names a query in a path and a log line: short, and letters, digits, '-' and '_' only.
bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

}  // namespace

// ---- RunningQueries

RunningQueries::RunningQueries(Limits limits) : limits_(limits) {
  watcher_ = std::thread([this] { Watch(); });
}

RunningQueries::~RunningQueries() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

void RunningQueries::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Idle (nothing registered) until Start or the destructor wakes it.
    if (entries_.empty()) {
      wake_.wait(lock);
    } else {
      wake_.wait_for(lock, kWatchPeriod);
    }
    const auto now = Clock::now();
    for (auto& [serial, e] : entries_) {
      if (e.stop == Stop::kNone && now >= e.deadline) e.stop = Stop::kTimedOut;
      // Again on every round until the statement ends: an interrupt that came while the
      // connection was between statements (preparing, setting up) is forgotten by DuckDB.
      if (e.stop != Stop::kNone) e.con->Interrupt();
    }
  }
}

Result<std::unique_ptr<RunningQueries::Run>> RunningQueries::Start(std::string principal, std::string id,
                                                                   engine::Connection& con) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!id.empty()) {
    int mine = 0, all = 0;
    for (const auto& [serial, e] : entries_) {
      if (e.id.empty()) continue;
      ++all;
      if (e.principal == principal) {
        ++mine;
        if (e.id == id) return Status::AlreadyExists("a query with id '" + id + "' is running already");
      }
    }
    if (mine >= limits_.per_principal) {
      return Status::ResourceExhausted("you run " + std::to_string(mine) + " queries already (the limit)");
    }
    if (all >= limits_.total) {
      return Status::ResourceExhausted("the server runs " + std::to_string(all) + " console queries already (the limit)");
    }
  }
  const uint64_t serial = next_serial_++;
  entries_.emplace(serial, Entry{std::move(principal), std::move(id), &con, Clock::now() + limits_.timeout, Stop::kNone});
  wake_.notify_all();
  return std::unique_ptr<Run>(new Run(*this, serial));
}

bool RunningQueries::Cancel(std::string_view principal, std::string_view id) {
  if (id.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [serial, e] : entries_) {
    if (e.principal != principal || e.id != id) continue;
    if (e.stop == Stop::kNone) e.stop = Stop::kCancelled;
    e.con->Interrupt();
    return true;
  }
  return false;
}

void RunningQueries::End(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(serial);
}

RunningQueries::Stop RunningQueries::StopOf(uint64_t serial) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(serial);
  return it == entries_.end() ? Stop::kNone : it->second.stop;
}

size_t RunningQueries::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

RunningQueries::Run::~Run() { owner_.End(serial_); }

RunningQueries::Stop RunningQueries::Run::stop() const { return owner_.StopOf(serial_); }

// ---- QueryRoute

QueryRoute::QueryRoute(sql::LakeSql& lake, RunningQueries& running, QueryOptions options)
    : lake_(lake), running_(running), options_(std::move(options)) {}

std::optional<RouteAnswer> QueryRoute::Serve(std::string_view method, std::string_view path, std::string_view body,
                                             std::string_view content_type, std::string_view principal) const {
  if (path == kQueryPath) {
    if (method != "POST") return MethodNotAllowed("POST", "queries are sent with POST");
    // A form or a text/plain POST is what a page of another site may send without a CORS
    // preflight; a JSON one it may not.
    if (!IsJsonContentType(content_type)) {
      return Error(415, "BadRequestException", "queries are sent as application/json");
    }
    return Run(body, principal);
  }
  if (path.size() <= kQueryPath.size() + 1 || path.substr(0, kQueryPath.size()) != kQueryPath ||
      path[kQueryPath.size()] != '/') {
    return std::nullopt;
  }
  const std::string_view id = path.substr(kQueryPath.size() + 1);
  if (method != "DELETE") return MethodNotAllowed("DELETE", "a running query is cancelled with DELETE");
  if (!ValidId(id)) return Error(400, "BadRequestException", "a query id is 1 to 64 letters, digits, '-' or '_'");
  if (!running_.Cancel(principal, id)) {
    return Error(404, "NoSuchQueryException", "you run no query with id '" + std::string(id) + "'");
  }
  return RouteAnswer{200, Dump(Json{{"cancelled", std::string(id)}}), {}};
}

RouteAnswer QueryRoute::Run(std::string_view body, std::string_view principal) const {
  const auto started = Clock::now();
  if (body.size() > kMaxRequestBytes) {
    return Error(413, "BadRequestException",
                 "the request is " + std::to_string(body.size()) + " bytes; the limit is " +
                     std::to_string(kMaxRequestBytes));
  }
  Json request = Json::parse(body, nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    return Error(400, "BadRequestException", "the request must be a JSON object {\"sql\": …}");
  }
  auto sql_field = request.find("sql");
  if (sql_field == request.end() || !sql_field->is_string()) {
    return Error(400, "BadRequestException", "'sql' (the query's text) is required");
  }
  const std::string sql = sql_field->get<std::string>();
  int64_t limit = options_.default_rows;
  if (auto l = request.find("limit"); l != request.end() && !l->is_null()) {
    if (!l->is_number_integer() || l->get<int64_t>() < 1 || l->get<int64_t>() > options_.max_rows) {
      return Error(400, "BadRequestException", "'limit' must be 1…" + std::to_string(options_.max_rows));
    }
    limit = l->get<int64_t>();
  }
  std::string id;
  if (auto i = request.find("id"); i != request.end() && !i->is_null()) {
    if (!i->is_string() || !ValidId(i->get<std::string>())) {
      return Error(400, "BadRequestException", "'id' is 1 to 64 letters, digits, '-' or '_'");
    }
    id = i->get<std::string>();
  }

  // Every failure from here on may come from DuckDB or the lake and name a file: the server's
  // folders are replaced by their names.
  auto fail = [&](const Status& st) {
    const std::string message = sql::RedactPaths(st.message(), options_.private_paths);
    switch (st.code()) {
      case StatusCode::kPermissionDenied: return Error(403, "ForbiddenException", message);
      case StatusCode::kInvalidArgument:
      case StatusCode::kNotFound: return Error(400, "BadRequestException", message);
      case StatusCode::kAlreadyExists: return Error(409, "BadRequestException", message);
      case StatusCode::kResourceExhausted: return Error(429, "TooManyQueriesException", message);
      case StatusCode::kUnavailable: return Error(503, "ServiceUnavailableException", message);
      default: return Error(500, "ServerErrorException", message);
    }
  };
  // One statement, classified from DuckDB's parse tree; the console writes nothing, whoever asks
  // and whether or not the server is read-only.
  auto statement = sql::ClassifyClientSql(sql);
  if (!statement.ok()) return fail(statement.status());
  if (statement->is_write()) {
    return Error(403, "ForbiddenException",
                 "permission denied: the console runs read queries only (" + statement->type_name +
                     " writes; use skade sql, Flight SQL or the REST catalog)");
  }
  auto con = lake_.db().Connect();
  if (!con.ok()) return fail(con.status());
  // The session setup a Flight SQL client's statements get (its schema: none, so tables are
  // named with their namespace).
  if (Status set_up = lake_.SetUp(**con, sql::Session{}, sql); !set_up.ok()) return fail(set_up);
  auto run = running_.Start(std::string(principal), id, **con);
  if (!run.ok()) return fail(run.status());
  // Stopped by the timeout or a cancel: that is the answer, whatever the statement said.
  auto stopped = [&]() -> std::optional<RouteAnswer> {
    switch ((*run)->stop()) {
      case RunningQueries::Stop::kTimedOut:
        return Error(504, "QueryTimeoutException",
                     "the query ran longer than the statement timeout (" +
                         std::to_string(running_.timeout().count()) + " ms) and was stopped");
      case RunningQueries::Stop::kCancelled: return Error(499, "QueryCancelledException", "the query was cancelled");
      case RunningQueries::Stop::kNone: break;
    }
    return std::nullopt;
  };
  auto read = sql::PrepareReadQuery(lake_, **con, "", sql, *statement);
  if (auto s = stopped()) return *s;
  if (!read.ok()) return fail(read.status());

  Json columns = Json::array();
  Json rows = Json::array();
  size_t bytes = 0;
  std::optional<std::string> limited_by;
  // Returned by the row callback to stop reading: the answer is full.
  const Status enough = Status::Cancelled("the answer is full");
  Status ran = (*con)->QueryTypedText(
      read->resolved,
      [&](const std::vector<engine::ColumnType>& header) {
        for (const auto& c : header) columns.push_back(Json{{"name", c.name}, {"type", c.type}});
      },
      [&](const engine::TextRow& row) {
        if (static_cast<int64_t>(rows.size()) >= limit) {
          limited_by = "rows";
          return enough;
        }
        size_t row_bytes = 0;
        for (const auto& v : row) row_bytes += (v ? v->size() : 0) + 8;
        if (bytes + row_bytes > options_.max_answer_bytes && !rows.empty()) {
          limited_by = "bytes";
          return enough;
        }
        bytes += row_bytes;
        Json r = Json::array();
        for (const auto& v : row) r.push_back(v ? Json(*v) : Json(nullptr));
        rows.push_back(std::move(r));
        return Status::Ok();
      });
  if (auto s = stopped()) return *s;
  if (!ran.ok() && !limited_by) return fail(lake_.db().data_file_checks().Explain(read->resolved, ran));
  Json answer;
  answer["id"] = id.empty() ? Json(nullptr) : Json(id);
  answer["columns"] = std::move(columns);
  answer["rows"] = std::move(rows);
  answer["more"] = limited_by.has_value();
  answer["limited-by"] = limited_by ? Json(*limited_by) : Json(nullptr);
  answer["elapsed-ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  return RouteAnswer{200, Dump(answer), {}};
}

}  // namespace skade::console
