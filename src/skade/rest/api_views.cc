// The REST catalog's view routes (Iceberg REST spec: listViews, createView, loadView,
// viewExists, replaceView, dropView, renameView, registerView) over Catalog's views. Every
// location a request names (a view's location, a set-location, a registered metadata file and
// the location it records) passes CheckLocation, as tables' do.
#include <algorithm>
#include <string>
#include <vector>

#include "skade/iceberg/view_metadata.h"
#include "skade/rest/api_internal.h"

namespace skade::rest {
namespace {

constexpr std::string_view kNoSuchView = "NoSuchViewException";

// A LoadViewResult body: the metadata file, the metadata and the (empty) client config.
Response ViewResponse(const catalog::ViewState& state) {
  std::string body = "{\"metadata-location\":" + Json(state.metadata_location).dump() +
                     ",\"metadata\":" + iceberg::ViewMetadataToJson(*state.metadata) + ",\"config\":{}}";
  return Response{200, std::move(body), {{"Content-Type", "application/json"}}};
}

// The members of a JSON array `key` of `body` (required or not) as their JSON texts.
Result<std::vector<std::string>> ArrayTexts(const Json& body, const char* key, bool required) {
  const Json* v = Member(body, key);
  if (v == nullptr) {
    if (required) return Status::InvalidArgument(std::string("'") + key + "' is required");
    return std::vector<std::string>();
  }
  if (!v->is_array()) return Status::InvalidArgument(std::string("'") + key + "' must be an array");
  std::vector<std::string> out;
  for (const Json& e : *v) out.push_back(e.dump());
  return out;
}

}  // namespace

Response CatalogApi::NoViews(const Request& r, const catalog::Namespace& ns, const std::string* view) {
  if (view == nullptr && r.method == "GET") {
    if (Status st = RequireNamespace(ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
    return JsonResponse(Json{{"identifiers", Json::array()}});
  }
  if (view != nullptr && (r.method == "GET" || r.method == "HEAD" || r.method == "DELETE")) {
    return ErrorResponse(404, kNoSuchView, "view " + ns.ToString() + "." + *view + " does not exist");
  }
  return ErrorResponse(406, "UnsupportedOperationException", "this catalog does not support views");
}

Response CatalogApi::ListViews(const Request& r, const std::string& segment) {
  auto ns = NamespaceFromPath(segment);
  if (!ns.ok()) return ErrorResponse(ns.status());
  if (!catalog_.SupportsViews()) return NoViews(r, *ns, nullptr);
  auto views = catalog_.ListViews(*ns);
  if (!views.ok()) return ErrorResponse(views.status(), "NoSuchNamespaceException");
  std::sort(views->begin(), views->end());
  auto page = PageOf(r, *views, [](const catalog::TableIdent& t) { return t.name; });
  if (!page.ok()) return ErrorResponse(page.status());
  Json body;
  body["identifiers"] = Json::array();
  for (size_t i = page->begin; i < page->end; ++i) body["identifiers"].push_back(IdentJson((*views)[i]));
  AddPageToken(body, *page);
  return JsonResponse(body);
}

Response CatalogApi::CreateView(const Request& r, const std::string& segment) {
  if (options_.read_only) return Refused();
  auto ns = NamespaceFromPath(segment);
  if (!ns.ok()) return ErrorResponse(ns.status());
  if (!catalog_.SupportsViews()) return NoViews(r, *ns, nullptr);
  auto body = ParseBody(r);
  if (!body.ok()) return ErrorResponse(body.status());
  auto name = RequiredString(*body, "name");
  if (!name.ok()) return ErrorResponse(name.status());
  catalog::TableIdent ident{*ns, *name};
  if (Status v = ident.Validate(); !v.ok()) return ErrorResponse(v);
  const Json* schema = Member(*body, "schema");
  if (schema == nullptr) return ErrorResponse(400, "BadRequestException", "'schema' is required");
  const Json* version = Member(*body, "view-version");
  if (version == nullptr) return ErrorResponse(400, "BadRequestException", "'view-version' is required");
  catalog::CreateViewRequest req;
  auto parsed_schema = iceberg::ParseSchemaJson(schema->dump());
  if (!parsed_schema.ok()) return ErrorResponse(parsed_schema.status());
  req.schema = *parsed_schema;
  auto parsed_version = iceberg::ParseViewVersionJson(version->dump());
  if (!parsed_version.ok()) return ErrorResponse(parsed_version.status());
  req.version = std::move(parsed_version).value();
  auto properties = StringMap(*body, "properties");
  if (!properties.ok()) return ErrorResponse(properties.status());
  req.properties = *properties;
  auto location = OptString(*body, "location");
  if (!location.ok()) return ErrorResponse(location.status());
  req.location = *location;

  if (Status st = RequireNamespace(*ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  if (req.location) {
    if (Status st = CheckLocation(*req.location, "location"); !st.ok()) return ErrorResponse(st);
  }
  auto created = catalog_.CreateView(ident, req);
  if (!created.ok()) return ErrorResponse(created.status(), "NoSuchNamespaceException");
  return ViewResponse(*created);
}

Response CatalogApi::LoadView(const Request& r, const std::string& segment, const std::string& view) {
  auto ident = IdentFromPath(segment, view);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (!catalog_.SupportsViews()) return NoViews(r, ident->ns, &view);
  auto state = catalog_.LoadView(*ident);
  if (!state.ok()) return ErrorResponse(state.status(), kNoSuchView);
  if (r.method == "HEAD") return Response{204, "", {}};
  return ViewResponse(*state);
}

Response CatalogApi::ReplaceView(const Request& r, const std::string& segment, const std::string& view) {
  if (options_.read_only) return Refused();
  auto ident = IdentFromPath(segment, view);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (!catalog_.SupportsViews()) return NoViews(r, ident->ns, &view);
  auto body = ParseBody(r);
  if (!body.ok()) return ErrorResponse(body.status());
  if (const Json* named = Member(*body, "identifier")) {
    auto given = IdentOf(*named, "identifier");
    if (!given.ok()) return ErrorResponse(given.status());
    if (!(*given == *ident)) {
      return ErrorResponse(400, "BadRequestException",
                           "the identifier " + given->ToString() + " is not the view of the path, " + ident->ToString());
    }
  }
  catalog::ViewCommit commit;
  commit.ident = *ident;
  auto requirements = ArrayTexts(*body, "requirements", false);
  if (!requirements.ok()) return ErrorResponse(requirements.status());
  for (const std::string& text : *requirements) {
    auto requirement = iceberg::ParseViewRequirement(text);
    if (!requirement.ok()) return ErrorResponse(requirement.status());
    commit.requirements.push_back(std::move(requirement).value());
  }
  auto updates = ArrayTexts(*body, "updates", true);
  if (!updates.ok()) return ErrorResponse(updates.status());
  for (const std::string& text : *updates) {
    auto update = iceberg::ParseViewUpdate(text);
    if (!update.ok()) return ErrorResponse(update.status());
    if (update->kind == iceberg::ViewUpdate::Kind::kSetLocation) {
      if (Status st = CheckLocation(update->location, "location"); !st.ok()) return ErrorResponse(st);
    }
    commit.updates.push_back(std::move(update).value());
  }
  if (Status st = RequireNamespace(ident->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  auto committed = catalog_.CommitView(commit);
  if (!committed.ok()) {
    if (committed.status().code() == StatusCode::kConflict) ++conflicts_;
    return ErrorResponse(committed.status(), kNoSuchView, "CommitFailedException");
  }
  return ViewResponse(*committed);
}

Response CatalogApi::DropView(const Request& r, const std::string& segment, const std::string& view) {
  if (options_.read_only) return Refused();
  auto ident = IdentFromPath(segment, view);
  if (!ident.ok()) return ErrorResponse(ident.status());
  if (!catalog_.SupportsViews()) return NoViews(r, ident->ns, &view);
  if (Status st = catalog_.DropView(*ident); !st.ok()) return ErrorResponse(st, kNoSuchView);
  return Response{204, "", {}};
}

Response CatalogApi::RenameView(const Request& r) {
  if (options_.read_only) return Refused();
  if (!catalog_.SupportsViews()) return NoViews(r, catalog::Namespace{}, nullptr);
  auto body = ParseBody(r);
  if (!body.ok()) return ErrorResponse(body.status());
  const Json* source = Member(*body, "source");
  const Json* destination = Member(*body, "destination");
  if (source == nullptr || destination == nullptr) {
    return ErrorResponse(400, "BadRequestException", "'source' and 'destination' are required");
  }
  auto from = IdentOf(*source, "source");
  if (!from.ok()) return ErrorResponse(from.status());
  auto to = IdentOf(*destination, "destination");
  if (!to.ok()) return ErrorResponse(to.status());
  if (Status st = RequireNamespace(to->ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  if (Status st = catalog_.RenameView(*from, *to); !st.ok()) return ErrorResponse(st, kNoSuchView);
  return Response{204, "", {}};
}

Response CatalogApi::RegisterView(const Request& r, const std::string& segment) {
  if (options_.read_only) return Refused();
  auto ns = NamespaceFromPath(segment);
  if (!ns.ok()) return ErrorResponse(ns.status());
  if (!catalog_.SupportsViews()) return NoViews(r, *ns, nullptr);
  auto body = ParseBody(r);
  if (!body.ok()) return ErrorResponse(body.status());
  auto name = RequiredString(*body, "name");
  if (!name.ok()) return ErrorResponse(name.status());
  auto location = RequiredString(*body, "metadata-location");
  if (!location.ok()) return ErrorResponse(location.status());
  catalog::TableIdent ident{*ns, *name};
  if (Status v = ident.Validate(); !v.ok()) return ErrorResponse(v);
  if (Status st = RequireNamespace(*ns); !st.ok()) return ErrorResponse(st, "NoSuchNamespaceException");
  if (Status st = CheckLocation(*location, "metadata-location"); !st.ok()) return ErrorResponse(st);
  {
    // The location the file records must lie within the same bounds as the file itself.
    auto bytes = io_.Read(*location);
    if (!bytes.ok()) {
      return ErrorResponse(bytes.status().code() == StatusCode::kNotFound
                               ? Status::InvalidArgument(bytes.status().message())
                               : bytes.status());
    }
    auto metadata = iceberg::ParseViewMetadata(*bytes);
    if (!metadata.ok()) return ErrorResponse(Status::InvalidArgument(metadata.status().message()));
    if (Status st = CheckLocation(metadata->location, "the view's location"); !st.ok()) return ErrorResponse(st);
  }
  auto registered = catalog_.RegisterView(ident, *location);
  if (!registered.ok()) return ErrorResponse(registered.status(), "NoSuchNamespaceException");
  return ViewResponse(*registered);
}

}  // namespace skade::rest
