// Remote signing (the REST spec's signRequest, RemoteSignRequest, RemoteSignResult and
// remote-signing-config): what loadTable tells clients, and the route that signs their requests
// to the object store for the table's locations only.

#include <chrono>
#include <string>
#include <vector>

#include "skade/base/clock.h"
#include "skade/base/json_parse_internal.h"
#include "skade/io/location.h"
#include "skade/io/s3_remote_signing.h"
#include "skade/io/sigv4.h"
#include "skade/rest/api_internal.h"

namespace skade::rest {
namespace {

// The route of a table's signer, relative to the catalog's base URI (clients resolve it there),
// its namespace and name encoded as path segments (levels joined by the unit separator).
std::string SignerEndpoint(const std::string& prefix, const catalog::TableIdent& ident) {
  std::string levels;
  for (size_t i = 0; i < ident.ns.levels.size(); ++i) levels += (i == 0 ? "" : "\x1f") + ident.ns.levels[i];
  return "v1/" + (prefix.empty() ? std::string() : io::UriEncode(prefix) + "/") + "namespaces/" +
         io::UriEncode(levels) + "/tables/" + io::UriEncode(ident.name) + "/sign";
}

// The locations a table's files lie under: its location and the folders its properties name
// for data and metadata (a commit's locations pass the server's location rule first).
std::vector<std::string> TableRoots(const iceberg::TableMetadata& m) {
  std::vector<std::string> roots{m.location};
  for (const char* property : {"write.data.path", "write.metadata.path", "write.object-storage.path"}) {
    if (auto it = m.properties.find(property); it != m.properties.end() && !it->second.empty()) {
      roots.push_back(it->second);
    }
  }
  return roots;
}

// A staged table's signing scope (sealed, base64url in the signer route's query): what a client
// that staged a create may have signed before the table exists.
constexpr char kScopePurpose[] = "rest.sign-scope";
// A staged create is committed within this long (a CTAS writing for hours stages once).
constexpr std::chrono::hours kScopeLifetime{24};

}  // namespace

std::string CatalogApi::ConfigMembers(const catalog::TableIdent& ident, const iceberg::TableMetadata& m,
                                      const std::string* staged_by) const {
  if (!options_.remote_signing || !io::IsObjectStoreLocation(m.location)) return ",\"config\":{}";
  const io::S3Options& s3 = *options_.remote_signing;
  std::string endpoint = SignerEndpoint(options_.prefix, ident);
  if (staged_by != nullptr) {
    // The staged locations (a custom location is not the one the catalog would give the table),
    // those the location rule admits only; clients keep the route's query when they call it.
    Json roots = Json::array();
    for (const std::string& root : TableRoots(m)) {
      if (CheckLocation(root, "a staged table's location").ok()) roots.push_back(root);
    }
    const Json scope{{"p", *staged_by}, {"t", ident.ToString()}, {"r", std::move(roots)}};
    endpoint += "?scope=" + SealJson(kScopePurpose, scope, kScopeLifetime);
  }
  Json config = Json::object();
  config["s3.remote-signing-enabled"] = "true";
  // Clients that predate remote-signing-config: PyIceberg picks its signer by name and finds it
  // at s3.signer.endpoint, Java's S3FileIO at signer.endpoint, both relative to the catalog URI.
  config["s3.signer"] = "S3V4RestSigner";
  config["s3.signer.endpoint"] = endpoint;
  config["signer.endpoint"] = endpoint;
  if (!s3.endpoint.empty()) config["s3.endpoint"] = s3.endpoint;
  config["client.region"] = s3.region;
  config["s3.region"] = s3.region;
  if (s3.path_style) config["s3.path-style-access"] = *s3.path_style ? "true" : "false";
  else if (!s3.endpoint.empty()) config["s3.path-style-access"] = "true";
  Json signing = {{"properties", Json::object()}, {"headers", Json::object()}};
  return ",\"config\":" + config.dump() + ",\"remote-signing-config\":" + signing.dump();
}

Result<std::vector<std::string>> CatalogApi::ScopeRoots(const Request& r, const catalog::TableIdent& ident) const {
  const auto refused = [] {
    return Status(StatusCode::kPermissionDenied,
                  "the signing scope is not valid (expired, or of another table or client): stage the create again");
  };
  std::optional<Json> scope = OpenSealedJson(kScopePurpose, r.query.at("scope"));
  if (!scope) return refused();
  const Json* principal = Member(*scope, "p");
  const Json* table = Member(*scope, "t");
  const Json* roots = Member(*scope, "r");
  if (principal == nullptr || table == nullptr || roots == nullptr || !principal->is_string() || !table->is_string() ||
      !roots->is_array() || principal->get<std::string>() != r.principal || table->get<std::string>() != ident.ToString()) {
    return refused();
  }
  std::vector<std::string> out;
  for (const Json& root : *roots) {
    if (!root.is_string()) return refused();
    out.push_back(root.get<std::string>());
  }
  return out;
}

Response CatalogApi::SignRequest(const Request& r, const std::string& segment, const std::string& table) {
  auto ident = IdentFromPath(segment, table);
  if (!ident.ok()) return ErrorResponse(ident.status());
  auto body = ParseBody(r);
  if (!body.ok()) return ErrorResponse(body.status());
  // The region is required but not used: requests are signed for the store's own region.
  auto region = RequiredString(*body, "region");
  if (!region.ok()) return ErrorResponse(region.status());
  auto uri = RequiredString(*body, "uri");
  if (!uri.ok()) return ErrorResponse(uri.status());
  auto method = RequiredString(*body, "method");
  if (!method.ok()) return ErrorResponse(method.status());
  io::S3SignInput input;
  input.uri = *uri;
  input.method = *method;
  const Json* headers = Member(*body, "headers");
  if (headers == nullptr || !headers->is_object()) {
    return ErrorResponse(400, "BadRequestException", "'headers' must be an object of string arrays");
  }
  for (const auto& [name, values] : headers->items()) {
    if (!values.is_array()) return ErrorResponse(400, "BadRequestException", "header '" + name + "' must be an array");
    for (const Json& value : values) {
      if (!value.is_string()) {
        return ErrorResponse(400, "BadRequestException", "header '" + name + "' must hold strings");
      }
      input.headers.emplace_back(name, value.get<std::string>());
    }
  }
  auto properties = StringMap(*body, "properties");
  if (!properties.ok()) return ErrorResponse(properties.status());
  auto payload = OptString(*body, "body");
  if (!payload.ok()) return ErrorResponse(payload.status());
  input.body = *payload;
  auto provider = OptString(*body, "provider");
  if (!provider.ok()) return ErrorResponse(provider.status());
  if (*provider && **provider != "s3") {
    return ErrorResponse(400, "BadRequestException", "requests for the storage provider '" + **provider +
                                                         "' are not signed here (only s3)");
  }
  if (!options_.remote_signing) {
    return ErrorResponse(400, "BadRequestException", "this server does not sign requests (serve --remote-signing)");
  }

  // The table's locations; a table not created yet (a staged create writes before its commit)
  // gets those of its signing scope (the route's query, from the staged create's answer), or
  // without one the location the catalog would give it.
  std::vector<std::string> roots;
  auto state = catalog_.LoadTable(*ident);
  if (state.ok()) {
    roots = TableRoots(*state->metadata);
  } else if (state.status().code() == StatusCode::kNotFound && !options_.read_only) {
    if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
    if (r.has("scope")) {
      auto scoped = ScopeRoots(r, *ident);
      if (!scoped.ok()) return ErrorResponse(scoped.status());
      roots = std::move(*scoped);
    } else {
      auto placed = DefaultLocation(*ident);
      if (!placed.ok()) return ErrorResponse(placed.status());
      roots.push_back(*placed);
    }
  } else {
    return ErrorResponse(state.status());
  }
  const auto access = options_.read_only ? io::S3SignAccess::kRead : io::S3SignAccess::kReadWrite;
  auto signed_request = io::SignS3Request(*options_.remote_signing, roots, access, input, NowMicros() / 1'000'000);
  if (!signed_request.ok()) return ErrorResponse(signed_request.status());

  Json out_headers = Json::object();
  for (const auto& [name, value] : signed_request->headers) out_headers[name].push_back(value);
  Response out = JsonResponse(Json{{"uri", signed_request->uri}, {"headers", std::move(out_headers)}});
  // Spec RemoteSignResponse: "private" lets a client reuse the answer of a read for a while,
  // "no-cache" a write's not at all.
  out.headers.emplace_back("Cache-Control", signed_request->read ? "private" : "no-cache");
  return out;
}

}  // namespace skade::rest
