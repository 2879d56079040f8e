// The console's paged reads. The tree is walked from the catalog on each request (namespaces and
// table names only: no metadata is read), so a page of it costs the catalog's listings, not one
// load per table. A table's page reads its metadata once per request and answers only what the
// page shows: the history is sent a page of snapshots at a time, each as the JSON the metadata
// file holds (SnapshotList::Json, rendered once per snapshot).
#include "skade/console/table_pages.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

#include "skade/console/answers_internal.h"
#include "skade/iceberg/table_metadata.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using internal::Error;
using internal::Number;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json Levels(const catalog::Namespace& ns) {
  Json levels = Json::array();
  for (const auto& l : ns.levels) levels.push_back(l);
  return levels;
}

// The tree's rows, depth first: a namespace, its tables, then its children.
struct TreeWalk {
  catalog::Catalog& catalog;
  int64_t offset;
  int64_t limit;
  int64_t total = 0;
  int64_t namespaces = 0;
  int64_t tables = 0;
  Json rows = Json::array();

  bool Wanted() const { return total >= offset && total < offset + limit; }

  Status Walk(const catalog::Namespace& parent, int depth) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> children, catalog.ListNamespaces(parent));
    for (const catalog::Namespace& ns : children) {
      namespaces++;
      if (Wanted()) rows.push_back(Json{{"namespace", Levels(ns)}, {"depth", depth}});
      total++;
      SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> idents, catalog.ListTables(ns));
      for (const catalog::TableIdent& t : idents) {
        tables++;
        if (Wanted()) rows.push_back(Json{{"namespace", Levels(ns)}, {"name", t.name}, {"depth", depth + 1}});
        total++;
      }
      SKADE_RETURN_IF_ERROR(Walk(ns, depth + 1));
    }
    return Status::Ok();
  }
};

}  // namespace

std::optional<RouteAnswer> TablePages::Serve(std::string_view method, std::string_view path,
                                               const std::map<std::string, std::string>& query) const {
  if (path != kTreePath && path != kTablePath && path != kSnapshotsPath) return std::nullopt;
  if (method != "GET") return internal::OnlyGet("this page");
  const std::optional<int64_t> offset = Number(query, "offset", 0, INT64_MAX / 2);
  const std::optional<int64_t> limit = Number(query, "limit", 100, kMaxLimit);
  if (!offset || !limit || *limit == 0) {
    return Error(400, "BadRequestException",
                 "'offset' must be a count and 'limit' 1…" + std::to_string(kMaxLimit));
  }
  if (path == kTreePath) return Tree(*offset, *limit);
  auto ident = internal::TableParam(query);
  if (!ident.ok()) return Error(ident.status());
  if (path == kTablePath) return Table(*ident);
  auto key = query.find("summary-key");
  return Snapshots(*ident, *offset, *limit, key == query.end() ? std::string_view() : std::string_view(key->second));
}

RouteAnswer TablePages::Tree(int64_t offset, int64_t limit) const {
  TreeWalk walk{catalog_, offset, limit};
  if (Status st = walk.Walk(catalog::Namespace{}, 0); !st.ok()) return Error(st);
  Json body{{"total", walk.total}, {"namespaces", walk.namespaces}, {"tables", walk.tables},
            {"offset", offset}, {"rows", std::move(walk.rows)}};
  return RouteAnswer{200, Dump(body), {}};
}

RouteAnswer TablePages::Table(const catalog::TableIdent& ident) const {
  auto loaded = catalog_.LoadTable(ident);
  if (!loaded.ok()) return Error(loaded.status());
  const iceberg::TableMetadata& full = *loaded->metadata;
  // A copy shares the snapshots (SnapshotList holds pointers); the history the page pages
  // through (kSnapshotsPath) and the logs are dropped from it. The current snapshot and those
  // the refs name stay, so that the document is still consistent metadata.
  iceberg::TableMetadata shown = full;
  shown.snapshots.EraseIf([&](const iceberg::Snapshot& s) {
    if (s.snapshot_id == full.current_snapshot_id) return false;
    return std::none_of(full.refs.begin(), full.refs.end(),
                        [&](const auto& ref) { return ref.second.snapshot_id == s.snapshot_id; });
  });
  shown.snapshot_log.clear();
  shown.metadata_log.clear();
  // The metadata is spliced in as the text TableMetadataToJson writes (its 64-bit ids as written).
  Json head{{"metadata-location", loaded->metadata_location},
            {"snapshot-count", full.snapshots.size()},
            {"snapshot-log-count", full.snapshot_log.size()},
            {"metadata-log-count", full.metadata_log.size()}};
  std::string body = Dump(head);
  body.pop_back();
  body += ",\"metadata\":";
  body += iceberg::TableMetadataToJson(shown);
  body += "}";
  return RouteAnswer{200, std::move(body), {}};
}

RouteAnswer TablePages::Snapshots(const catalog::TableIdent& ident, int64_t offset, int64_t limit,
                                  std::string_view summary_key) const {
  auto loaded = catalog_.LoadTable(ident);
  if (!loaded.ok()) return Error(loaded.status());
  const iceberg::TableMetadata& m = *loaded->metadata;
  const iceberg::SnapshotList& snapshots = m.snapshots;
  // Newest first: by timestamp, and among equal timestamps the later in the metadata first.
  std::vector<size_t> order(snapshots.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (!summary_key.empty()) {
    std::erase_if(order, [&](size_t i) { return !snapshots[i].SummaryValue(summary_key).has_value(); });
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (snapshots[a].timestamp_ms != snapshots[b].timestamp_ms) {
      return snapshots[a].timestamp_ms > snapshots[b].timestamp_ms;
    }
    return a > b;
  });
  std::string body = Dump(Json{{"total", order.size()}, {"offset", offset}});
  body.pop_back();
  body += ",\"snapshots\":[";
  const int64_t size = static_cast<int64_t>(order.size());
  for (int64_t i = offset; i < size && i < offset + limit; i++) {
    if (i > offset) body += ",";
    body += snapshots.Json(order[static_cast<size_t>(i)], m.format_version);
  }
  body += "]}";
  return RouteAnswer{200, std::move(body), {}};
}

}  // namespace skade::console
