// The preview reads exactly as `skade scan` does (Table::PlanRead, then the engine's SQL of the
// planned scan, deletes applied), and pages it with LIMIT/OFFSET over that relation ordered by
// each row's origin. Every parameter is parsed into a number or a checked name first; what runs
// is SQL the engine built, around two integers.
#include "skade/console/preview.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "skade/console/answers_internal.h"
#include "skade/console/query.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/sql/client_query.h"
#include "skade/table/table.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using internal::Error;
using internal::Number;

}  // namespace

Preview::Preview(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db, RunningQueries* running,
                 std::vector<std::pair<std::string, std::string>> private_paths,
                 std::shared_ptr<const io::Sealer> sealer)
    : catalog_(catalog),
      io_(io),
      db_(db),
      running_(running),
      private_paths_(std::move(private_paths)),
      pages_(catalog),
      files_(catalog, io, std::move(sealer), private_paths_),
      downstream_(catalog) {}

RouteAnswer Preview::Failed(const Status& st) const {
  // A failed read names files (a data file missing or damaged): the server's folders are shown
  // by their names.
  return Error(Status(st.code(), sql::RedactPaths(st.message(), private_paths_)));
}

std::optional<RouteAnswer> Preview::Serve(std::string_view method, std::string_view path,
                                            const std::map<std::string, std::string>& query) const {
  if (path == kFilesPath) return files_.Serve(method, path, query);
  if (path == kDownstreamPath) return downstream_.Serve(method, path, query);
  if (path != kPreviewPath) return pages_.Serve(method, path, query);
  if (method != "GET") return internal::OnlyGet("the preview");
  auto ident = internal::TableParam(query);
  if (!ident.ok()) return Failed(ident.status());
  const std::optional<int64_t> offset = Number(query, "offset", 0, kMaxOffset);
  const std::optional<int64_t> limit = Number(query, "limit", 50, kMaxLimit);
  if (!offset || !limit || *limit == 0) {
    return Error(400, "BadRequestException",
                 "'offset' must be 0…" + std::to_string(kMaxOffset) + " and 'limit' 1…" + std::to_string(kMaxLimit));
  }
  table::ReadOptions read;
  auto snapshot_param = internal::SnapshotIdParam(query);
  if (!snapshot_param.ok()) return Error(snapshot_param.status());
  if (*snapshot_param) read.snapshot.snapshot_id = **snapshot_param;

  auto table = table::Table::Load(catalog_, io_, db_, *ident);
  if (!table.ok()) return Failed(table.status());
  auto scan = (*table)->PlanRead(read);
  if (!scan.ok()) return Failed(scan.status());
  // Rows in file order (each row's data file and position in it), so that pages of one snapshot
  // neither repeat nor skip rows (a scan with deletes applied has no stable order of its own);
  // one row past the page says whether there is more.
  auto sql = engine::BuildTableSql(db_, *scan, engine::RowOrigin::kExposed);
  if (!sql.ok()) return Failed(sql.status());
  const std::string paged = "SELECT * EXCLUDE (__skade_file, __skade_pos) FROM (" + *sql +
                            ") ORDER BY __skade_file, __skade_pos LIMIT " + std::to_string(*limit + 1) +
                            " OFFSET " + std::to_string(*offset);
  Json columns = Json::array();
  Json rows = Json::array();
  auto con = db_.Connect();
  if (!con.ok()) return Failed(con.status());
  std::unique_ptr<RunningQueries::Run> run;
  if (running_ != nullptr) {
    auto started = running_->Start("", "", **con);
    if (!started.ok()) return Failed(started.status());
    run = std::move(*started);
  }
  Status ran = (*con)->QueryTypedText(
      paged,
      [&](const std::vector<engine::ColumnType>& header) {
        for (const auto& c : header) columns.push_back(Json{{"name", c.name}, {"type", c.type}});
      },
      [&](const engine::TextRow& row) {
        Json r = Json::array();
        for (const auto& v : row) r.push_back(v ? Json(*v) : Json(nullptr));
        rows.push_back(std::move(r));
        return Status::Ok();
      });
  if (run && run->stop() == RunningQueries::Stop::kTimedOut) {
    return Error(504, "QueryTimeoutException",
                 "the preview ran longer than the statement timeout (" +
                     std::to_string(running_->timeout().count()) + " ms) and was stopped");
  }
  if (!ran.ok()) return Failed(db_.data_file_checks().Explain(paged, ran));
  const bool more = static_cast<int64_t>(rows.size()) > *limit;
  if (more) rows.erase(rows.end() - 1);
  Json body;
  body["table"] = ident->ToString();
  std::optional<int64_t> snapshot_id = read.snapshot.snapshot_id;
  if (!snapshot_id) snapshot_id = (*table)->CurrentSnapshotId();
  body["snapshot-id"] = snapshot_id ? Json(*snapshot_id) : Json(nullptr);
  body["offset"] = *offset;
  body["limit"] = *limit;
  body["columns"] = std::move(columns);
  body["rows"] = std::move(rows);
  body["more"] = more;
  return RouteAnswer{200, body.dump(-1, ' ', false, Json::error_handler_t::replace), {}};
}

}  // namespace skade::console
