#include "skade/catalog/rest_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "skade/base/clock.h"
#include "skade/base/json_text.h"
#include "skade/base/log.h"
#include "skade/base/url.h"
#include "skade/catalog/json_internal.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/table_update.h"
#include "skade/io/sigv4.h"
#include "skade/base/json_parse_internal.h"

namespace skade::catalog {
namespace {

using internal::Dump;
using internal::Json;
using internal::Member;

// A namespace as one path segment or query value: levels joined by the unit separator,
// percent-encoded.
std::string NamespaceSegment(const Namespace& ns) {
  std::string joined;
  for (size_t i = 0; i < ns.levels.size(); ++i) joined += (i ? "\x1f" : "") + ns.levels[i];
  return io::UriEncode(joined);
}

Json IdentJson(const TableIdent& t) { return Json{{"namespace", t.ns.levels}, {"name", t.name}}; }

// The spec's error model of a response, as a status. `commit`: the request changed the
// catalog, so an answer that does not say whether it happened is kCommitUnknown.
Status ErrorOf(const io::HttpResponse& r, const std::string& what, bool commit) {
  std::string type, message;
  Json body = ParseOrderedJson(r.body, what).ValueOr(Json());
  if (const Json* e = Member(body, "error")) {
    type = internal::StringMember(*e, "type");
    message = internal::StringMember(*e, "message");
  }
  if (message.empty()) message = r.body.substr(0, 200);
  const std::string text = what + ": HTTP " + std::to_string(r.status) + (type.empty() ? "" : " " + type) +
                           (message.empty() ? "" : ": " + message);
  switch (r.status) {
    case 400:
    case 422: return Status::InvalidArgument(text);
    case 401:
    case 419: return Status(StatusCode::kUnauthorized, text);
    case 403: return Status(StatusCode::kPermissionDenied, text);
    case 404: return Status::NotFound(text);
    case 406: return Status::NotImplemented(text);
    case 409:
      if (type == "AlreadyExistsException") return Status::AlreadyExists(text);
      return Status::Conflict(text);
    case 503: return Status::Unavailable(text);
    default: break;
  }
  if (commit && r.status >= 500) return Status(StatusCode::kCommitUnknown, text);
  if (r.status >= 500) return Status::Unavailable(text);
  return Status::IoError(text);
}

// What talks to the server: the HTTP client and the bearer token (renewed as it expires).
// Shared by the catalog and the remote signers it hands to the FileIO, which may outlive it.
struct Connection {
  explicit Connection(RestCatalogOptions o) : options(std::move(o)), http(io::HttpClient::Make(options.http)) {}

  Result<io::HttpResponse> SendTo(const std::string& method, const std::string& url, const std::string& body,
                                  const io::HttpHeaders& extra, bool commit, const std::string& what) {
    for (int attempt = 0;; ++attempt) {
      io::HttpRequest req;
      req.method = method;
      req.url = url;
      req.body = body;
      req.timeout = options.timeout;
      // A mutation is sent once: a repeat after a lost answer could apply it twice.
      req.retry = commit ? io::RetryMode::kNever : io::RetryMode::kIfIdempotent;
      if (method == "POST" && !commit) req.retry = io::RetryMode::kAlways;  // reads sent as POST (events)
      for (const auto& [k, v] : extra.entries()) req.headers.Set(k, v);
      for (const auto& [k, v] : options.headers) req.headers.Set(k, v);
      // Every POST and PUT says JSON, bodiless ones too (the server refuses others: rest/server.cc).
      if (!body.empty() || method == "POST" || method == "PUT") req.headers.Set("Content-Type", "application/json");
      req.headers.Set("X-Iceberg-Access-Delegation", "vended-credentials");
      SKADE_ASSIGN_OR_RETURN(std::string token, BearerToken());
      if (!token.empty()) req.headers.Set("Authorization", "Bearer " + token);
      auto r = http->Send(req);
      if (!r.ok()) {
        if (commit) {
          return Status(StatusCode::kCommitUnknown,
                        what + ": no answer from the REST catalog, so whether it happened is unknown: " +
                            r.status().message());
        }
        return r.status().WithContext(what);
      }
      // An expired token: renew it and send once more (safe: the server refused the request).
      if (r->status == 401 && attempt == 0 && !options.credential.empty()) {
        SKADE_RETURN_IF_ERROR(RefreshToken());
        continue;
      }
      return std::move(*r);
    }
  }

  // The token to send: a static one, or the OAuth2 token renewed a minute before it expires.
  Result<std::string> BearerToken() {
    if (options.credential.empty()) return options.token;
    {
      std::lock_guard<std::mutex> lock(token_mu);
      if (!access_token.empty() && (token_expires_us == 0 || NowMicros() < token_expires_us - 60'000'000)) {
        return access_token;
      }
    }
    SKADE_RETURN_IF_ERROR(RefreshToken());
    std::lock_guard<std::mutex> lock(token_mu);
    return access_token;
  }

  // OAuth2 client credentials (RFC 6749 §4.4), as the REST spec's token endpoint takes them.
  Status RefreshToken() {
    std::string id, secret = options.credential;
    if (size_t colon = options.credential.find(':'); colon != std::string::npos) {
      id = options.credential.substr(0, colon);
      secret = options.credential.substr(colon + 1);
    }
    std::string form = "grant_type=client_credentials&client_secret=" + io::UriEncode(secret);
    if (!id.empty()) form += "&client_id=" + io::UriEncode(id);
    if (!options.scope.empty()) form += "&scope=" + io::UriEncode(options.scope);
    io::HttpRequest req;
    req.method = "POST";
    req.url = options.oauth2_server_uri.empty() ? options.uri + "/v1/oauth/tokens" : options.oauth2_server_uri;
    req.body = form;
    req.timeout = options.timeout;
    req.retry = io::RetryMode::kAlways;  // asking for a token twice is harmless
    req.headers.Set("Content-Type", "application/x-www-form-urlencoded");
    auto r = http->Send(req);
    if (!r.ok()) return r.status().WithContext("get an OAuth2 token from " + io::RedactUrl(req.url));
    Json body = ParseOrderedJson(r->body, "the token answer").ValueOr(Json());
    if (r->status != 200) {
      std::string error = body.is_object() ? body.value("error", "") + " " + body.value("error_description", "") : r->body;
      return Status(r->status == 400 || r->status == 401 ? StatusCode::kUnauthorized : StatusCode::kUnavailable,
                    "the OAuth2 token endpoint refused the client credentials (HTTP " + std::to_string(r->status) +
                        "): " + error);
    }
    const Json* token = Member(body, "access_token");
    if (token == nullptr || !token->is_string()) return Status::Corruption("the OAuth2 token answer has no access_token");
    std::lock_guard<std::mutex> lock(token_mu);
    access_token = token->get<std::string>();
    const Json* expires = Member(body, "expires_in");
    token_expires_us = expires && expires->is_number_integer() ? NowMicros() + expires->get<int64_t>() * 1'000'000 : 0;
    return Status::Ok();
  }

  const RestCatalogOptions options;
  const std::unique_ptr<io::HttpClient> http;
  std::mutex token_mu;
  std::string access_token;
  int64_t token_expires_us = 0;
};

class RestCatalog final : public Catalog {
 public:
  explicit RestCatalog(RestCatalogOptions options) : options_(std::move(options)) {
    while (!options_.uri.empty() && options_.uri.back() == '/') options_.uri.pop_back();
    conn_ = std::make_shared<Connection>(options_);
  }

  Status Connect() {
    if (!options_.credential.empty()) SKADE_RETURN_IF_ERROR(conn_->RefreshToken());
    std::string path = "/v1/config";
    if (!options_.warehouse.empty()) path += "?warehouse=" + io::UriEncode(options_.warehouse);
    SKADE_ASSIGN_OR_RETURN(Json config, Call("GET", path, "", false, "load the catalog configuration"));
    if (!config.is_object()) return Status::Corruption("the REST catalog's /v1/config is not a JSON object");
    // Properties: the server's defaults, then the client's (its warehouse), then the
    // server's overrides (spec getConfig).
    std::map<std::string, std::string> props;
    auto merge = [&](const char* part) {
      if (const Json* p = Member(config, part); p && p->is_object()) {
        for (const auto& [k, v] : p->items()) {
          if (v.is_string()) props[k] = v.get<std::string>();
        }
      }
    };
    merge("defaults");
    if (!options_.warehouse.empty()) props["warehouse"] = options_.warehouse;
    merge("overrides");
    prefix_ = props.count("prefix") ? props["prefix"] : "";
    warehouse_ = props.count("warehouse") ? props["warehouse"] : "";
    if (const Json* endpoints = Member(config, "endpoints"); endpoints && endpoints->is_array()) {
      for (const Json& e : *endpoints) {
        if (e.is_string()) endpoints_.insert(e.get<std::string>());
      }
      has_endpoints_ = true;
    }
    base_ = "/v1" + (prefix_.empty() ? std::string() : "/" + io::UriEncode(prefix_));
    return Status::Ok();
  }

  const std::string& name() const override { return options_.name; }
  const std::string& warehouse() const override { return warehouse_; }

  Status CreateNamespace(const Namespace& ns, const std::map<std::string, std::string>& properties) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    Json body{{"namespace", ns.levels}, {"properties", Json::object()}};
    for (const auto& [k, v] : properties) body["properties"][k] = v;
    return Call("POST", base_ + "/namespaces", Dump(body), true, "create namespace " + ns.ToString()).status();
  }

  Result<std::vector<Namespace>> ListNamespaces(const Namespace& parent) override {
    const std::string query = parent.empty() ? std::string() : "parent=" + NamespaceSegment(parent);
    std::vector<Namespace> out;
    SKADE_RETURN_IF_ERROR(Paged(base_ + "/namespaces", query, "namespaces", "list namespaces", [&](const Json& item) {
      if (!item.is_array()) return;
      Namespace ns;
      for (const Json& level : item) {
        if (level.is_string()) ns.levels.push_back(level.get<std::string>());
      }
      if (!ns.Validate().ok()) {
        SKADE_LOG_WARN("rest catalog: skipping namespace {} (a level is empty or contains '.')", Dump(item));
        return;
      }
      out.push_back(std::move(ns));
    }));
    std::sort(out.begin(), out.end(), [](const Namespace& a, const Namespace& b) { return a.levels < b.levels; });
    return out;
  }

  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    SKADE_ASSIGN_OR_RETURN(Json body, Call("GET", NamespacePath(ns), "", false, "load namespace " + ns.ToString()));
    std::map<std::string, std::string> out;
    if (const Json* props = Member(body, "properties"); props && props->is_object()) {
      for (const auto& [k, v] : props->items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
    }
    return out;
  }

  Status UpdateNamespaceProperties(const Namespace& ns, const std::map<std::string, std::string>& updates,
                                   const std::vector<std::string>& removals) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    Json body{{"removals", removals}, {"updates", Json::object()}};
    for (const auto& [k, v] : updates) body["updates"][k] = v;
    return Call("POST", NamespacePath(ns) + "/properties", Dump(body), true,
                "update the properties of namespace " + ns.ToString())
        .status();
  }

  Status DropNamespace(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    return Call("DELETE", NamespacePath(ns), "", true, "drop namespace " + ns.ToString()).status();
  }

  Result<bool> NamespaceExists(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    auto r = Call("HEAD", NamespacePath(ns), "", false, "check namespace " + ns.ToString());
    if (r.ok()) return true;
    if (r.status().code() == StatusCode::kNotFound) return false;
    return r.status();
  }

  Result<std::vector<TableIdent>> ListTables(const Namespace& ns) override {
    SKADE_RETURN_IF_ERROR(ns.Validate());
    std::vector<TableIdent> out;
    SKADE_RETURN_IF_ERROR(Paged(NamespacePath(ns) + "/tables", "", "identifiers", "list the tables of " + ns.ToString(),
                                [&](const Json& item) {
                                  auto ident = IdentOf(item);
                                  if (!ident.ok()) {
                                    SKADE_LOG_WARN("rest catalog: skipping table {}: {}", Dump(item),
                                                   ident.status().message());
                                    return;
                                  }
                                  out.push_back(std::move(*ident));
                                }));
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<CommitResult> CreateTable(const TableIdent& ident, const CreateTableRequest& request) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    if (!request.schema) return Status::InvalidArgument("a table needs a schema");
    Json body;
    body["name"] = ident.name;
    if (request.location) body["location"] = *request.location;
    body["schema"] = ParseOrderedJson(iceberg::SchemaToJson(*request.schema), "a request part").ValueOr(Json());
    if (request.spec) body["partition-spec"] = ParseOrderedJson(iceberg::PartitionSpecToJson(*request.spec), "a request part").ValueOr(Json());
    body["write-order"] = ParseOrderedJson(iceberg::SortOrderToJson(request.sort_order), "a request part").ValueOr(Json());
    body["stage-create"] = false;
    body["properties"] = Json::object();
    for (const auto& [k, v] : request.properties) body["properties"][k] = v;
    const std::string what = "create table " + ident.ToString();
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, CallRaw("POST", NamespacePath(ident.ns) + "/tables", Dump(body), true, what));
    SKADE_ASSIGN_OR_RETURN(auto answer, TableAnswer(ident, r, what));
    ApplyVendedStorage(answer.first, answer.second);
    return CommitResult{std::move(answer.second), 0};
  }

  Result<TableState> LoadTable(const TableIdent& ident) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    const std::string path = TablePath(ident);
    std::optional<Cached> cached;
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      if (auto it = cache_.find(path); it != cache_.end()) cached = it->second;
    }
    io::HttpHeaders extra;
    if (cached) extra.Set("If-None-Match", cached->etag);
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, Send("GET", path, "", extra, false, "load table " + ident.ToString()));
    if (r.status == 304 && cached) return cached->state;
    if (r.status != 200) return ErrorOf(r, "load table " + ident.ToString(), false);
    SKADE_ASSIGN_OR_RETURN(auto answer, TableAnswer(ident, r, "load table " + ident.ToString()));
    ApplyVendedStorage(answer.first, answer.second);
    Remember(path, r, answer.second);
    return std::move(answer.second);
  }

  // The spec's unregisterTable where the server lists it (files stay whatever the server's drop
  // would do), else a drop that keeps files. Either checks the metadata pointer first: the
  // protocol has no precondition, so a commit in between is unregistered with the table (its
  // files stay too).
  Status UnregisterTable(const TableIdent& ident, const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    if (!has_endpoints_ || !endpoints_.count("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister")) {
      return Catalog::UnregisterTable(ident, metadata_location);
    }
    // The load revalidates any cached answer with the server (ETag).
    SKADE_ASSIGN_OR_RETURN(TableState state, LoadTable(ident));
    if (state.metadata_location != metadata_location) {
      return Status::Conflict("table " + ident.ToString() + " changed since it was loaded: its metadata is now " +
                              state.metadata_location);
    }
    Status unregistered =
        Call("POST", TablePath(ident) + "/unregister", "", true, "unregister table " + ident.ToString()).status();
    Forget(ident);
    return unregistered;
  }

  Status DropTable(const TableIdent& ident, DropMode mode,
                   const std::optional<std::string>& if_metadata_location) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    Forget(ident);
    if (if_metadata_location) {
      // The protocol's drop has no precondition: check first (a commit in between escapes it).
      SKADE_ASSIGN_OR_RETURN(TableState state, LoadTable(ident));
      if (state.metadata_location != *if_metadata_location) {
        return Status::Conflict("table " + ident.ToString() + " changed since it was loaded: its metadata is now " +
                                state.metadata_location);
      }
    }
    return Call("DELETE", TablePath(ident) + (mode == DropMode::kPurge ? "?purgeRequested=true" : "?purgeRequested=false"),
                "", true, "drop table " + ident.ToString())
        .status();
  }

  Status RenameTable(const TableIdent& from, const TableIdent& to) override {
    SKADE_RETURN_IF_ERROR(from.Validate());
    SKADE_RETURN_IF_ERROR(to.Validate());
    Forget(from);
    Json body{{"source", IdentJson(from)}, {"destination", IdentJson(to)}};
    return Call("POST", base_ + "/tables/rename", Dump(body), true,
                "rename table " + from.ToString() + " to " + to.ToString())
        .status();
  }

  Result<CommitResult> RegisterTable(const TableIdent& ident, const std::string& metadata_location) override {
    SKADE_RETURN_IF_ERROR(ident.Validate());
    Json body{{"name", ident.name}, {"metadata-location", metadata_location}};
    const std::string what = "register table " + ident.ToString();
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, CallRaw("POST", NamespacePath(ident.ns) + "/register", Dump(body), true, what));
    SKADE_ASSIGN_OR_RETURN(auto answer, TableAnswer(ident, r, what));
    ApplyVendedStorage(answer.first, answer.second);
    return CommitResult{std::move(answer.second), 0};
  }

  Result<CommitResult> CommitTable(const TableCommit& commit) override {
    SKADE_RETURN_IF_ERROR(commit.ident.Validate());
    const std::string what = "commit to table " + commit.ident.ToString();
    if (commit.before_swap) SKADE_RETURN_IF_ERROR(commit.before_swap());
    const std::string path = TablePath(commit.ident);
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, CallRaw("POST", path, Dump(CommitJson(commit)), true, what));
    SKADE_ASSIGN_OR_RETURN(auto answer, TableAnswer(commit.ident, r, what));
    // An ETag on the answer tags the table as it now stands, so the next load revalidates this
    // state instead of fetching the metadata just received (skade's server tags both answers
    // alike; a server whose commit tags mean something else only costs a full answer later).
    Remember(path, r, answer.second);
    return CommitResult{std::move(answer.second), 0};
  }

  Result<std::vector<CommitResult>> CommitTransaction(const std::vector<TableCommit>& commits) override {
    Json changes = Json::array();
    for (const auto& c : commits) {
      SKADE_RETURN_IF_ERROR(c.ident.Validate());
      changes.push_back(CommitJson(c));
    }
    for (const auto& c : commits) {
      if (c.before_swap) SKADE_RETURN_IF_ERROR(c.before_swap());
    }
    SKADE_RETURN_IF_ERROR(Call("POST", base_ + "/transactions/commit", Dump(Json{{"table-changes", changes}}), true,
                               "commit a transaction of " + std::to_string(commits.size()) + " tables")
                              .status());
    std::vector<CommitResult> out;
    for (const auto& c : commits) {
      SKADE_ASSIGN_OR_RETURN(TableState state, LoadTable(c.ident));
      out.push_back(CommitResult{std::move(state), 0});
    }
    return out;
  }

  // The change feed of a server that serves it with commit_seq tokens (skade's events
  // endpoint, whose events carry x-skade-commit): the commit log, read remotely.
  Result<std::vector<CommitLogEntry>> CommitsSince(int64_t after_seq, int64_t limit) override {
    SKADE_RETURN_IF_ERROR(RequireEvents());
    std::vector<CommitLogEntry> out;
    int64_t cursor = after_seq;
    while (static_cast<int64_t>(out.size()) < limit) {
      Json req{{"continuation-token", std::to_string(cursor)},
               {"page-size", std::min<int64_t>(limit - static_cast<int64_t>(out.size()), 1000)}};
      SKADE_ASSIGN_OR_RETURN(Json page, Call("POST", base_ + "/events", Dump(req), false, "read the change feed"));
      const Json* events = Member(page, "events");
      if (events == nullptr || !events->is_array()) return Status::Corruption("the change feed answered no events array");
      for (const Json& e : *events) {
        SKADE_ASSIGN_OR_RETURN(CommitLogEntry entry, EntryOf(e));
        if (entry.commit_seq <= cursor) return Status::Corruption("the change feed went backwards");
        cursor = entry.commit_seq;
        out.push_back(std::move(entry));
      }
      const Json* token = Member(page, "continuation-token");
      const int64_t next = token && token->is_string() ? std::atoll(token->get<std::string>().c_str()) : cursor;
      if (events->empty() && next <= cursor) break;  // the end of the log
      cursor = std::max(cursor, next);
    }
    return out;
  }

  Result<int64_t> LatestCommitSeq() override {
    SKADE_RETURN_IF_ERROR(RequireEvents());
    SKADE_ASSIGN_OR_RETURN(Json page, Call("POST", base_ + "/events", Dump(Json{{"page-size", 1}, {"object-types", {"view"}}}),
                                           false, "read the change feed's head"));
    const Json* head = Member(page, "x-skade-log-head");
    if (head == nullptr || !head->is_number_integer()) {
      return Status::NotImplemented("the REST catalog's change feed does not say where its log ends");
    }
    return head->get<int64_t>();
  }

 private:
  struct Cached {
    std::string etag;
    TableState state;
  };

  std::string NamespacePath(const Namespace& ns) const { return base_ + "/namespaces/" + NamespaceSegment(ns); }
  std::string TablePath(const TableIdent& t) const {
    return NamespacePath(t.ns) + "/tables/" + io::UriEncode(t.name);
  }

  void Forget(const TableIdent& ident) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    cache_.erase(TablePath(ident));
  }

  Status RequireEvents() const {
    if (has_endpoints_ && endpoints_.count("POST /v1/{prefix}/events")) return Status::Ok();
    return Status::NotImplemented("the REST catalog at " + options_.uri +
                                  " serves no change feed (POST /v1/{prefix}/events), so it has no commit log");
  }

  static Json CommitJson(const TableCommit& c) {
    Json j{{"identifier", IdentJson(c.ident)}, {"requirements", Json::array()}, {"updates", Json::array()}};
    for (const auto& r : c.requirements) j["requirements"].push_back(ParseOrderedJson(iceberg::TableRequirementToJson(r), "a request part").ValueOr(Json()));
    for (const auto& u : c.updates) j["updates"].push_back(ParseOrderedJson(iceberg::TableUpdateToJson(u), "a request part").ValueOr(Json()));
    return j;
  }

  static Result<TableIdent> IdentOf(const Json& j) {
    const Json* ns = Member(j, "namespace");
    const Json* name = Member(j, "name");
    if (ns == nullptr || !ns->is_array() || name == nullptr || !name->is_string()) {
      return Status::Corruption("a table identifier must have a namespace array and a name");
    }
    TableIdent t;
    for (const Json& level : *ns) {
      if (!level.is_string()) return Status::Corruption("a namespace level is not a string");
      t.ns.levels.push_back(level.get<std::string>());
    }
    t.name = name->get<std::string>();
    SKADE_RETURN_IF_ERROR(t.Validate());
    return t;
  }

  // The storage settings a LoadTableResult vends (REST spec: `config` for the table's location,
  // `storage-credentials` each for its prefix) handed to the FileIO, which uses them from now on;
  // with s3.remote-signing-enabled, requests to the table's locations are signed by the catalog.
  void ApplyVendedStorage(const Json& body, const TableState& state) const {
    if (options_.storage == nullptr) return;
    auto strings = [](const Json* object) {
      std::map<std::string, std::string> out;
      if (object == nullptr || !object->is_object()) return out;
      for (const auto& [k, v] : object->items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
      return out;
    };
    if (auto config = strings(Member(body, "config")); !config.empty()) {
      io::StorageSigner signer;
      if (auto it = config.find("s3.remote-signing-enabled"); it != config.end() && it->second == "true") {
        signer = SignerFor(state.ident, body, config);
      }
      options_.storage->ApplyStorageConfig(state.metadata->location, config, signer);
    }
    const Json* credentials = Member(body, "storage-credentials");
    if (credentials == nullptr || !credentials->is_array()) return;
    for (const Json& c : *credentials) {
      const Json* prefix = Member(c, "prefix");
      if (prefix == nullptr || !prefix->is_string()) continue;
      options_.storage->ApplyStorageConfig(prefix->get<std::string>(), strings(Member(c, "config")));
    }
  }

  // What signs a table's requests (spec "Remote Signing"): with remote-signing-config, the
  // table's own route with its properties and headers; else the older signer.uri and
  // signer.endpoint (PyIceberg's s3.signer.*), relative to the catalog's URI; else the route.
  io::StorageSigner SignerFor(const TableIdent& ident, const Json& body,
                              const std::map<std::string, std::string>& config) const {
    std::string url = options_.uri + TablePath(ident) + "/sign";
    Json properties = Json::object();
    io::HttpHeaders headers;
    const Json* signing = Member(body, "remote-signing-config");
    if (signing != nullptr && signing->is_object()) {
      if (const Json* p = Member(*signing, "properties"); p && p->is_object()) {
        for (const auto& [k, v] : p->items()) {
          if (v.is_string()) properties[k] = v;
        }
      }
      if (const Json* h = Member(*signing, "headers"); h && h->is_object()) {
        for (const auto& [k, values] : h->items()) {
          if (!values.is_array()) continue;
          std::string joined;
          for (const Json& v : values) {
            if (v.is_string()) joined += (joined.empty() ? "" : ",") + v.get<std::string>();
          }
          headers.Set(k, joined);
        }
      }
    } else {
      auto get = [&](const char* a, const char* b) -> std::string {
        if (auto it = config.find(a); it != config.end() && !it->second.empty()) return it->second;
        if (auto it = config.find(b); it != config.end() && !it->second.empty()) return it->second;
        return "";
      };
      const std::string endpoint = get("signer.endpoint", "s3.signer.endpoint");
      if (!endpoint.empty()) {
        std::string base = get("signer.uri", "s3.signer.uri");
        if (base.empty()) base = options_.uri;
        while (!base.empty() && base.back() == '/') base.pop_back();
        const bool absolute = endpoint.find("://") != std::string::npos;
        url = absolute ? endpoint : base + "/" + (endpoint.front() == '/' ? endpoint.substr(1) : endpoint);
      }
    }
    std::string region = "us-east-1";
    for (const char* key : {"client.region", "s3.region"}) {
      if (auto it = config.find(key); it != config.end() && !it->second.empty()) {
        region = it->second;
        break;
      }
    }
    std::shared_ptr<Connection> conn = conn_;
    const std::string what = "sign a request for " + ident.ToString();
    return [conn, url, properties, headers, region, what](const io::StorageRequest& request)
               -> Result<io::SignedStorageRequest> {
      Json sign = {{"region", region}, {"uri", request.url}, {"method", request.method},
                   {"headers", Json::object()}, {"properties", properties}};
      for (const auto& [name, value] : request.headers) sign["headers"][name].push_back(value);
      if (request.body) sign["body"] = *request.body;
      return Sign(*conn, url, Dump(sign), headers, what);
    };
  }

  static Result<io::SignedStorageRequest> Sign(Connection& conn, const std::string& url, const std::string& body,
                                               const io::HttpHeaders& headers, const std::string& what) {
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, conn.SendTo("POST", url, body, headers, false, what));
    if (r.status != 200) return ErrorOf(r, what, false);
    SKADE_ASSIGN_OR_RETURN(Json answer, ParseBody(r, what));
    const Json* uri = Member(answer, "uri");
    const Json* signed_headers = Member(answer, "headers");
    if (uri == nullptr || !uri->is_string() || signed_headers == nullptr || !signed_headers->is_object()) {
      return Status::Corruption(what + ": the answer is not a RemoteSignResult");
    }
    io::SignedStorageRequest out;
    out.url = uri->get<std::string>();
    for (const auto& [name, values] : signed_headers->items()) {
      if (!values.is_array()) return Status::Corruption(what + ": header " + name + " is not an array");
      std::string joined;
      for (const Json& v : values) {
        if (!v.is_string()) return Status::Corruption(what + ": header " + name + " holds a non-string");
        joined += (joined.empty() ? "" : ",") + v.get<std::string>();
      }
      out.headers.emplace_back(name, std::move(joined));
    }
    return out;
  }

  // A LoadTableResult / CommitTableResponse: its members other than "metadata" (as a tree, for
  // the config and credentials) and the table state. The metadata, megabytes with a long history,
  // is parsed once straight from its text, not into a tree first and again from the tree's text;
  // an answer the split cannot vouch for takes the ordinary way (SplitJsonMember).
  static Result<std::pair<Json, TableState>> TableAnswer(const TableIdent& ident, const io::HttpResponse& r,
                                                         const std::string& what) {
    if (std::optional<JsonMemberSplit> split = SplitJsonMember(r.body, "metadata")) {
      auto rest = ParseOrderedJson(split->rest, what);
      auto parsed = rest.ok() ? iceberg::ParseTableMetadata(split->value) : Result<iceberg::TableMetadata>(rest.status());
      if (parsed.ok() && rest->is_object() && rest->contains("metadata") && rest->at("metadata").is_null()) {
        TableState state;
        state.ident = ident;
        if (const Json* loc = Member(*rest, "metadata-location"); loc && loc->is_string()) {
          state.metadata_location = *loc;
        }
        state.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(*parsed));
        return std::make_pair(std::move(*rest), std::move(state));
      }
    }
    SKADE_ASSIGN_OR_RETURN(Json body, ParseBody(r, what));
    SKADE_ASSIGN_OR_RETURN(TableState state, StateOf(ident, body, what));
    return std::make_pair(std::move(body), std::move(state));
  }

  // Keeps `state` to revalidate with the answer's ETag (LoadTable's If-None-Match).
  void Remember(const std::string& path, const io::HttpResponse& r, const TableState& state) {
    auto etag = r.headers.Get("ETag");
    if (!etag || etag->empty()) return;
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= 1024) cache_.clear();
    cache_[path] = Cached{*etag, state};
  }

  // A LoadTableResult / CommitTableResponse as a TableState.
  static Result<TableState> StateOf(const TableIdent& ident, const Json& body, const std::string& what) {
    const Json* metadata = Member(body, "metadata");
    if (metadata == nullptr || !metadata->is_object()) {
      return Status::Corruption(what + ": the answer has no table metadata");
    }
    auto parsed = iceberg::ParseTableMetadata(Dump(*metadata));
    if (!parsed.ok()) return parsed.status().WithContext(what + ": the table metadata in the answer");
    TableState state;
    state.ident = ident;
    if (const Json* loc = Member(body, "metadata-location"); loc && loc->is_string()) state.metadata_location = *loc;
    state.metadata = std::make_shared<const iceberg::TableMetadata>(std::move(*parsed));
    return state;
  }

  static Result<CommitLogEntry> EntryOf(const Json& e) {
    const Json* commit = Member(e, "x-skade-commit");
    const Json* op = Member(e, "operation");
    if (commit == nullptr || op == nullptr) {
      return Status::NotImplemented("the change feed's events carry no commit sequence (not a skade server)");
    }
    CommitLogEntry entry;
    const Json* seq = Member(*commit, "commit-seq");
    if (seq == nullptr || !seq->is_number_integer()) return Status::Corruption("an event without a commit-seq");
    entry.commit_seq = seq->get<int64_t>();
    const Json* ident = Member(*op, "identifier");
    if (ident == nullptr) return Status::Corruption("an event without an identifier");
    SKADE_ASSIGN_OR_RETURN(entry.table, IdentOf(*ident));
    if (const Json* s = Member(*commit, "snapshot-id"); s && s->is_number_integer()) entry.snapshot_id = s->get<int64_t>();
    if (const Json* o = Member(*commit, "operation"); o && o->is_string()) entry.operation = *o;
    if (const Json* a = Member(*commit, "added-records"); a && a->is_number_integer()) entry.added_records = *a;
    if (const Json* d = Member(*commit, "deleted-records"); d && d->is_number_integer()) entry.deleted_records = *d;
    if (const Json* l = Member(*op, "metadata-location"); l && l->is_string()) entry.metadata_location = *l;
    if (const Json* t = Member(e, "timestamp-ms"); t && t->is_number_integer()) entry.committed_at_us = t->get<int64_t>() * 1000;
    const Json* count = Member(e, "request-event-count");
    const Json* request = Member(e, "request-id");
    if (count && count->is_number_integer() && count->get<int64_t>() > 1 && request && request->is_string()) {
      entry.txn_id = *request;
    }
    return entry;
  }

  static Result<Json> ParseBody(const io::HttpResponse& r, const std::string& what) {
    if (r.body.empty()) return Json();
    auto body = ParseOrderedJson(r.body, what + ": the answer");
    if (!body.ok()) return Status::Corruption(body.status().message());
    return body;
  }

  // Every page of a listing: `key`'s items of each page, following next-page-token.
  Status Paged(const std::string& path, const std::string& query, const char* key, const std::string& what,
               const std::function<void(const Json&)>& item) {
    std::string token;
    for (int page = 0; page < 100000; ++page) {
      std::string q = query;
      q += (q.empty() ? "" : "&") + std::string("pageToken=") + io::UriEncode(token);
      SKADE_ASSIGN_OR_RETURN(Json body, Call("GET", path + "?" + q, "", false, what));
      const Json* items = Member(body, key);
      if (items == nullptr || !items->is_array()) return Status::Corruption(what + ": the answer has no '" + key + "' array");
      for (const Json& i : *items) item(i);
      const Json* next = Member(body, "next-page-token");
      if (next == nullptr || !next->is_string() || next->get<std::string>().empty()) return Status::Ok();
      if (next->get<std::string>() == token) return Status::Corruption(what + ": the server repeated a page token");
      token = next->get<std::string>();
    }
    return Status::Corruption(what + ": too many pages");
  }

  // Sends and maps a non-2xx answer to a status; a 2xx answer unparsed.
  Result<io::HttpResponse> CallRaw(const std::string& method, const std::string& path, const std::string& body,
                                   bool commit, const std::string& what) {
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, Send(method, path, body, {}, commit, what));
    if (r.status < 200 || r.status >= 300) return ErrorOf(r, what, commit);
    return r;
  }

  // The same, with the JSON body of the 2xx answer.
  Result<Json> Call(const std::string& method, const std::string& path, const std::string& body, bool commit,
                    const std::string& what) {
    SKADE_ASSIGN_OR_RETURN(io::HttpResponse r, CallRaw(method, path, body, commit, what));
    return ParseBody(r, what);
  }

  Result<io::HttpResponse> Send(const std::string& method, const std::string& path, const std::string& body,
                                const io::HttpHeaders& extra, bool commit, const std::string& what) {
    return conn_->SendTo(method, options_.uri + path, body, extra, commit, what);
  }

  RestCatalogOptions options_;
  std::shared_ptr<Connection> conn_;
  std::string prefix_;
  std::string base_ = "/v1";
  std::string warehouse_;
  std::set<std::string> endpoints_;
  bool has_endpoints_ = false;
  std::mutex cache_mu_;
  std::map<std::string, Cached> cache_;
};

}  // namespace

Result<RestCatalogOptions> ParseRestCatalogUri(std::string_view uri) {
  RestCatalogOptions o;
  std::string_view rest;
  if (uri.rfind("rest+http://", 0) == 0 || uri.rfind("rest+https://", 0) == 0) {
    rest = uri.substr(5);
  } else {
    return Status::InvalidArgument("a REST catalog URI starts with rest+http:// or rest+https://, not '" +
                                   std::string(uri.substr(0, uri.find(':'))) + "'");
  }
  const size_t q = rest.find('?');
  o.uri = std::string(rest.substr(0, q));
  if (q != std::string_view::npos) {
    for (const auto& [key, value] : ParseQueryString(rest.substr(q + 1))) {
      if (key == "warehouse") {
        o.warehouse = value;
      } else if (key == "credential") {
        o.credential = value;
      } else if (key == "token") {
        o.token = value;
      } else if (key == "scope") {
        o.scope = value;
      } else if (key == "oauth2-server-uri") {
        o.oauth2_server_uri = value;
      } else if (key == "name") {
        o.name = value;
      } else if (!key.empty()) {
        return Status::InvalidArgument("unknown REST catalog URI parameter '" + key +
                                       "' (known: warehouse, credential, token, scope, oauth2-server-uri, name)");
      }
    }
  }
  if (o.credential.empty()) {
    if (const char* c = std::getenv("SKADE_REST_CREDENTIAL")) o.credential = c;
  }
  if (o.token.empty()) {
    if (const char* t = std::getenv("SKADE_REST_TOKEN")) o.token = t;
  }
  return o;
}

Result<std::unique_ptr<Catalog>> OpenRestCatalog(RestCatalogOptions options) {
  if (options.uri.rfind("http://", 0) != 0 && options.uri.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("the REST catalog URI must be http:// or https://, not '" + options.uri + "'");
  }
  auto catalog = std::make_unique<RestCatalog>(std::move(options));
  SKADE_RETURN_IF_ERROR(catalog->Connect());
  return std::unique_ptr<Catalog>(std::move(catalog));
}

}  // namespace skade::catalog
