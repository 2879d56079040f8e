// The REST spec's error model, and the one mapping of skade status codes to HTTP statuses and
// Iceberg exception types (STYLE.md: codes become HTTP errors only here).
#include "skade/rest/api_internal.h"

namespace skade::rest {

std::string Request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

Response ErrorResponse(int http_status, std::string_view type, std::string message) {
  Json body;
  body["error"] = Json{{"message", std::move(message)}, {"type", std::string(type)}, {"code", http_status}};
  Response r;
  r.status = http_status;
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

Response ErrorResponse(const Status& status, std::string_view not_found, std::string_view conflict) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return ErrorResponse(400, "BadRequestException", status.message());
    case StatusCode::kNotFound: return ErrorResponse(404, not_found, status.message());
    case StatusCode::kAlreadyExists: return ErrorResponse(409, "AlreadyExistsException", status.message());
    case StatusCode::kConflict: return ErrorResponse(409, conflict, status.message());
    // Spec: only when the server cannot tell whether the commit happened.
    case StatusCode::kCommitUnknown: return ErrorResponse(500, "CommitStateUnknownException", status.message());
    case StatusCode::kNotImplemented: return ErrorResponse(406, "UnsupportedOperationException", status.message());
    case StatusCode::kUnauthorized: return ErrorResponse(401, "NotAuthorizedException", status.message());
    case StatusCode::kPermissionDenied: return ErrorResponse(403, "ForbiddenException", status.message());
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kCancelled: return ErrorResponse(503, "ServiceUnavailableException", status.message());
    case StatusCode::kOk:
    case StatusCode::kIoError:
    case StatusCode::kCorruption:
    case StatusCode::kInternal: break;
  }
  return ErrorResponse(500, "ServerErrorException", status.message());
}

Response JsonResponse(const Json& body, int status) {
  Response r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

}  // namespace skade::rest
