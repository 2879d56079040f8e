// What the console's JSON routes share (preview.cc, table_pages.cc): error answers in the REST
// catalog's error model and the parsing of paging parameters.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/console/route_answer.h"

namespace skade::console::internal {

// {"error": {"message", "type", "code"}} with `status`.
inline RouteAnswer Error(int status, std::string_view type, const std::string& message) {
  nlohmann::json body{{"error", {{"message", message}, {"type", type}, {"code", status}}}};
  return RouteAnswer{status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {}};
}

// kNotFound → 404, kInvalidArgument → 400, anything else 500.
inline RouteAnswer Error(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound: return Error(404, "NoSuchTableException", st.message());
    case StatusCode::kInvalidArgument: return Error(400, "BadRequestException", st.message());
    default: return Error(500, "ServerErrorException", st.message());
  }
}

// 405 naming the one method a route is read with.
inline RouteAnswer OnlyGet(std::string_view what) {
  RouteAnswer refused = Error(405, "BadRequestException", std::string(what) + " is read with GET");
  refused.headers.emplace_back("Allow", "GET, HEAD");
  return refused;
}

// The decimal integer `key` in [0, max], `fallback` when absent, or nullopt.
inline std::optional<int64_t> Number(const std::map<std::string, std::string>& query, const char* key,
                                     int64_t fallback, int64_t max) {
  auto it = query.find(key);
  if (it == query.end()) return fallback;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

// The `table` parameter (ns.table) parsed and validated; kInvalidArgument when it is missing
// or not a valid table name.
inline Result<catalog::TableIdent> TableParam(const std::map<std::string, std::string>& query) {
  auto param = query.find("table");
  if (param == query.end()) return Status::InvalidArgument("'table' (ns.table) is required");
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(param->second));
  SKADE_RETURN_IF_ERROR(ident.Validate());
  return ident;
}

// The `snapshot-id` parameter: nullopt when absent; kInvalidArgument when it is not a whole
// 64-bit number.
inline Result<std::optional<int64_t>> SnapshotIdParam(const std::map<std::string, std::string>& query) {
  auto param = query.find("snapshot-id");
  if (param == query.end()) return std::optional<int64_t>();
  int64_t id = 0;
  const std::string& s = param->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return Status::InvalidArgument("'snapshot-id' must be a snapshot id");
  }
  return std::optional<int64_t>(id);
}

}  // namespace skade::console::internal
