// Private to skade/rest: the REST catalog operations as functions of a parsed request, apart
// from HTTP transport (server.cc routes the requests of http_server here), so they can be driven and
// tested without sockets. Responses carry the spec's bodies: JSON objects, or the error model
// {"error": {"message", "type", "code"}}.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "skade/base/status.h"
#include "skade/catalog/catalog.h"
#include "skade/iceberg/manifest_cache.h"
#include "skade/events/commit_event.h"
#include "skade/iceberg/expression.h"
#include "skade/io/file_io.h"
#include "skade/io/sealer.h"
#include "skade/rest/plan_store_internal.h"
#include "skade/rest/server.h"

namespace skade::rest {

using Json = nlohmann::ordered_json;

struct IdempotencyContext;  // idempotency_internal.h

struct Request {
  std::string method;                         // GET, HEAD, POST, DELETE
  std::string path;                           // percent-decoded, without the query
  std::map<std::string, std::string> query;   // decoded query parameters
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  // Who asks: the authenticated principal, or "address:<client address>" without
  // authentication. Server-held state (scan plans) belongs to it.
  std::string principal;
  // The request's Idempotency-Key while IdempotencyKeys::Run runs its handler; null otherwise.
  IdempotencyContext* idempotency = nullptr;
  // Whether the query has `key` (pagination differs for an absent and an empty pageToken).
  bool has(const std::string& key) const { return query.count(key) > 0; }
  std::string header(const std::string& lower_name) const;
};

struct Response {
  int status = 200;
  std::string body;  // JSON text, or empty (204, 304, HEAD)
  std::vector<std::pair<std::string, std::string>> headers;
};

// The error model response for `status` (spec IcebergErrorResponse): the HTTP status and the
// exception type follow the code, refined by `not_found` (NoSuchNamespaceException vs
// NoSuchTableException …) and `conflict` (CommitFailedException vs NamespaceNotEmptyException).
Response ErrorResponse(const Status& status, std::string_view not_found = "NoSuchTableException",
                       std::string_view conflict = "CommitFailedException");
// An error response with an explicit HTTP status and type.
Response ErrorResponse(int http_status, std::string_view type, std::string message);
// A 200 response with a JSON body.
Response JsonResponse(const Json& body, int status = 200);

// A namespace in a path segment: levels separated by the unit separator 0x1F (spec
// "namespace" path parameter). kInvalidArgument for an empty or invalid level.
Result<catalog::Namespace> NamespaceFromPath(const std::string& segment);
// The table of a "/namespaces/{namespace}/tables/{table}" path, checked by the name rule.
Result<catalog::TableIdent> IdentFromPath(const std::string& ns, const std::string& table);
// Member `key` of the JSON object `j`, or null when absent or JSON null.
const Json* Member(const Json& j, const char* key);

// Request bodies, parsed once by these for every handler: kInvalidArgument (400) naming the
// member for anything missing or mistyped.
Result<Json> ParseBody(const Request& r);  // a JSON object without NUL characters
Result<std::optional<std::string>> OptString(const Json& j, const char* key);
Result<std::string> RequiredString(const Json& j, const char* key);
Result<bool> OptBool(const Json& j, const char* key);  // false when absent
Result<std::map<std::string, std::string>> StringMap(const Json& j, const char* key);  // {} when absent
Result<std::vector<std::string>> StringArray(const Json& j, const char* key);          // [] when absent
// A namespace as the spec sends it: an array of levels, each checked by the one name rule.
Result<catalog::Namespace> NamespaceOf(const Json& levels);
// A TableIdentifier object {"namespace": [...], "name": "..."} (tables and views alike).
Result<catalog::TableIdent> IdentOf(const Json& j, const char* what);
Json LevelsJson(const catalog::Namespace& ns);
Json IdentJson(const catalog::TableIdent& ident);

// ---- pagination (spec PageToken): without pageToken everything in one response; with one
// (even empty), pages of pageSize (default 100) and the name to continue after as the token.

struct Page {
  size_t begin = 0;
  size_t end = 0;
  std::optional<std::string> next;  // set: more follow
  bool paged = false;
};

template <typename T, typename Key>
Result<Page> PageOf(const Request& r, const std::vector<T>& sorted, const Key& key) {
  Page p;
  p.end = sorted.size();
  if (!r.has("pageToken") && !r.has("pageSize")) return p;
  p.paged = r.has("pageToken");
  int64_t size = 100;
  if (r.has("pageSize")) {
    const std::string& text = r.query.at("pageSize");
    try {
      size_t used = 0;
      size = std::stoll(text, &used);
      if (used != text.size() || size <= 0) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      return Status::InvalidArgument("pageSize must be a positive integer");
    }
  }
  const std::string token = r.has("pageToken") ? r.query.at("pageToken") : "";
  if (!token.empty()) {
    while (p.begin < sorted.size() && key(sorted[p.begin]) <= token) ++p.begin;
  }
  p.paged = true;
  p.end = std::min(sorted.size(), p.begin + static_cast<size_t>(size));
  if (p.end < sorted.size()) p.next = key(sorted[p.end - 1]);
  return p;
}

inline void AddPageToken(Json& body, const Page& p) {
  if (!p.paged) return;
  body["next-page-token"] = p.next ? Json(*p.next) : Json(nullptr);
}


// A REST filter predicate (spec Predicate: booleans, and/or/not, unary, comparison and set
// predicates, with references by name or id and bare or typed literals; the deprecated
// term/value form too) bound by name to `schema`'s top-level columns. What planning cannot
// evaluate (transforms, applications, nested fields) becomes true: it prunes nothing.
// kInvalidArgument for a malformed predicate, an unknown column or a value of the wrong type.
Result<iceberg::ExprPtr> ParseRestPredicate(const Json& predicate, const iceberg::Schema& schema, bool case_sensitive);

// Serialized LoadTableResult bodies by metadata file and snapshot mode: a metadata file never
// changes, so its body is serialized once. Bounded in bytes (cleared when full). Thread-safe.
class BodyCache {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  std::optional<std::string> Find(const std::string& key) const;
  void Put(const std::string& key, const std::string& body);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> bodies_;
  size_t bytes_ = 0;
};

// A commit_seq cursor as clients send it (a continuation token, Last-Event-ID, ?after=):
// decimal digits only, at most 18 of them; nullopt otherwise.
std::optional<int64_t> ParseCommitSeq(std::string_view text);

// A commit event as JSON ({"commit-seq", "identifier", "operation", "snapshot-id", …}), and as
// one Server-Sent Events frame ("id: <commit_seq>", "event: commit", "data: <json>").
Json CommitEventJson(const events::CommitEvent& event);
std::string SseFrame(const events::CommitEvent& event);

// The catalog operations. Thread-safe (the catalog is).
class CatalogApi {
 public:
  CatalogApi(catalog::Catalog& catalog, io::FileIO& io, const RestOptions& options);

  Response Config(const Request& r);
  Response ListNamespaces(const Request& r);
  Response CreateNamespace(const Request& r);
  Response LoadNamespace(const Request& r, const std::string& ns);
  Response DropNamespace(const Request& r, const std::string& ns);
  Response UpdateNamespaceProperties(const Request& r, const std::string& ns);
  Response ListTables(const Request& r, const std::string& ns);
  Response CreateTable(const Request& r, const std::string& ns);
  Response RegisterTable(const Request& r, const std::string& ns);
  Response LoadTable(const Request& r, const std::string& ns, const std::string& table);
  Response CommitTable(const Request& r, const std::string& ns, const std::string& table);
  // The answer of a commitTable that committed `metadata_location` (an Idempotency-Key replay):
  // that metadata file's CommitTableResponse, or the table's current one when the file is gone
  // (spec: "The response body may reflect a newer state of the catalog").
  Response CommittedTable(const std::string& metadata_location, const std::string& ns, const std::string& table);
  Response DropTable(const Request& r, const std::string& ns, const std::string& table);
  // unregisterTable: the table leaves the catalog, every file stays; the answer is its last
  // metadata (UnregisterTableResult), which no commit escapes.
  Response UnregisterTable(const Request& r, const std::string& ns, const std::string& table);
  Response ReportMetrics(const Request& r, const std::string& ns, const std::string& table);
  Response RenameTable(const Request& r);
  // api_views.cc: the view routes (spec listViews, createView, loadView, viewExists,
  // replaceView, dropView, renameView, registerView). A catalog without views answers listings
  // with none, a view by name as missing, and changes with 406 UnsupportedOperationException.
  Response ListViews(const Request& r, const std::string& ns);
  Response CreateView(const Request& r, const std::string& ns);
  Response LoadView(const Request& r, const std::string& ns, const std::string& view);
  Response ReplaceView(const Request& r, const std::string& ns, const std::string& view);
  Response DropView(const Request& r, const std::string& ns, const std::string& view);
  Response RenameView(const Request& r);
  Response RegisterView(const Request& r, const std::string& ns);
  Response CommitTransaction(const Request& r);
  // planning.cc: planTableScan (point in time or incremental appends); plans of at least
  // options.plan_async_manifests manifests answer "submitted" and run in the background;
  // results of more than options.plan_page_tasks tasks come as plan tasks.
  Response PlanTableScan(const Request& r, const std::string& ns, const std::string& table);
  Response FetchPlanningResult(const Request& r, const std::string& ns, const std::string& table,
                               const std::string& plan_id);
  Response CancelPlanning(const Request& r, const std::string& ns, const std::string& table,
                          const std::string& plan_id);
  Response FetchScanTasks(const Request& r, const std::string& ns, const std::string& table);

  // api_signing.cc: signRequest (POST …/tables/{table}/sign): signs a client's request to the
  // object store for the table's locations (io/s3_remote_signing.h) when options.remote_signing
  // is set.
  Response SignRequest(const Request& r, const std::string& ns, const std::string& table);
  // The locations a staged table's signing scope (the request's `scope`) admits: kPermissionDenied
  // unless it was sealed for `r`'s principal and `ident` and has not expired.
  Result<std::vector<std::string>> ScopeRoots(const Request& r, const catalog::TableIdent& ident) const;

  // events.cc: queryEvents (the proposed events endpoint) over the commit log.
  Response QueryEvents(const Request& r);

  RestStats stats() const;

 private:
  // What an event says about a table beyond the log row: its uuid and the snapshot a commit
  // added, from the metadata file the commit wrote (cached per file; nullopt once the file is
  // gone).
  struct TableDetail {
    std::string table_uuid;
    Json snapshot;  // null when the commit added none
  };
  std::optional<TableDetail> DetailOf(const std::string& metadata_location, std::optional<int64_t> snapshot_id);

  // api_signing.cc: the members after "metadata" of a LoadTableResult for `ident`: "config",
  // holding, for a table on the signed store, the remote signer's settings (the spec's
  // s3.remote-signing-enabled, the older clients' signer endpoint properties, the store's endpoint
  // and region), and then "remote-signing-config". For a staged create (`staged_by`, the
  // principal that staged it), the signer's route carries a sealed scope: the staged locations
  // that passed the location rule, for that principal and table, until the table exists.
  std::string ConfigMembers(const catalog::TableIdent& ident, const iceberg::TableMetadata& m,
                            const std::string* staged_by = nullptr) const;

  // A commit of one table: requirements and updates from a CommitTableRequest body.
  Result<catalog::TableCommit> ParseCommit(const Json& body, const catalog::TableIdent& ident);
  // The commits of a CommitTransactionRequest body, each checked as CommitTable checks its one;
  // kInvalidArgument naming the change at fault, kNotImplemented for an assert-create.
  Result<std::vector<catalog::TableCommit>> ParseTableChanges(const Json& body);
  // A staged create's answer (spec createTable, stage-create): the metadata `ident` would start
  // from, nothing committed.
  Response StageCreate(const Request& r, const catalog::TableIdent& ident, const catalog::CreateTableRequest& req);
  // Creates a table from a commit that asserts it does not exist (the second half of a staged
  // create): the updates applied to empty metadata, written as the table's first metadata file.
  Result<catalog::CommitResult> CreateFromCommit(const catalog::TableCommit& commit);
  // Where a new table without a requested location goes (catalog placement rules).
  Result<std::string> DefaultLocation(const catalog::TableIdent& ident);
  Response Refused() const;  // a mutation on a read-only server
  // kNotFound ("namespace … does not exist") unless `ns` exists. Handlers whose spec 404 names
  // NoSuchNamespaceException ask it once the request parsed and before any other check
  // (locations, files, tables, snapshots, plans); a malformed body is 400 first, as in Java's
  // REST server, which parses and validates the request before the catalog sees it.
  Status RequireNamespace(const catalog::Namespace& ns);
  // The answer when the plan store does not hold a plan or plan task (`missing`, kNotFound):
  // NoSuchTableException when `ident` itself is gone (the spec lists both), else `type`.
  Response PlanMissing(const Status& missing, const catalog::TableIdent& ident, std::string_view type);
  // planning.cc. Plan ids are sealed (sealer_, the ring all servers share) with what the plan
  // is made from, so that a server that does not hold a plan makes it again on a fetch of its
  // result or of a task (issue 35): kPlanned answers planTableScan (with the plan id),
  // kRemade fetchPlanningResult, kRemadeForTasks a fetchScanTasks (planned at once, whatever
  // its size).
  enum class PlanAnswer { kPlanned, kRemade, kRemadeForTasks };
  // Tasks per page for a request (fewer as its filter, which every task repeats, grows).
  size_t PlanPageTasks(const Json& request) const;
  std::string NewPlanId(const std::string& owner, const std::string& table, const std::string& metadata_location,
                        const Json& request, size_t per_page) const;
  // What a plan id sealed by any server of the ring carries ({"o","t","m","r","p"}: owner, table,
  // metadata file, request, tasks per page) when it is a plan of `r`'s principal for `ident`;
  // nullopt otherwise (not sealed, forged, expired, another owner or table).
  std::optional<Json> OpenPlanId(const Request& r, const catalog::TableIdent& ident, const std::string& plan_id) const;
  // Plans `body` on `state` under `plan_id` and answers as `answer` says.
  Response MakePlan(const Request& r, const Json& body, catalog::TableState state, const std::string& plan_id,
                    size_t per_page, PlanAnswer answer);
  // The plan another server made under `plan_id`, made again here from the metadata file it was
  // planned on (`out` its answer); false when the id opens as no plan of `r`'s for `ident`.
  Result<bool> RemakePlan(const Request& r, const catalog::TableIdent& ident, const std::string& plan_id,
                          PlanAnswer answer, Response* out);
  // A view request on a catalog without views: listings empty, names missing, changes 406.
  Response NoViews(const Request& r, const catalog::Namespace& ns, const std::string* view);
  // kInvalidArgument unless `location` lies in the warehouse or an allowed directory.
  Status CheckLocation(std::string_view location, std::string_view what) const;
  // Every location a commit's updates name (set-location, an added snapshot's manifest list,
  // the manifests in it and v1 manifests, statistics files) passes CheckLocation.
  Status CheckCommitLocations(const catalog::TableCommit& commit) const;
  // The locations metadata names (its location, manifest lists and the manifests in them,
  // statistics files), for a registered file.
  Status CheckMetadataLocations(const iceberg::TableMetadata& m) const;
  // A metadata file to register: its location and those it names pass CheckLocation, and a
  // file that is missing or is not table metadata is kInvalidArgument.
  Status CheckRegisteredMetadata(const std::string& location) const;
  // A snapshot's manifest list and the manifests it lists (read through io_: kInvalidArgument
  // for a list that cannot be read, unless it is missing from a registered table's history,
  // `added` false).
  Status CheckSnapshotLocations(const iceberg::Snapshot& s, bool added) const;
  Response CommitFailure(const Status& st);
  // Commits `commits` in one catalog transaction through `once`; when that is refused only
  // because other commits moved branches since the client's base, each refused commit re-based
  // on its table's current state (commit_rebase.h) and committed again, a few times while others
  // keep landing; the original refusal when one cannot be re-based.
  using CommitFn = std::function<Result<std::vector<catalog::CommitResult>>(const std::vector<catalog::TableCommit>&)>;
  Result<std::vector<catalog::CommitResult>> CommitRebasing(const std::vector<catalog::TableCommit>& commits,
                                                            const CommitFn& once);
  // A metadata file named by table state (a metadata log entry, a sealed plan id), read when it
  // passes the location rule; `what` names it in errors.
  Result<iceberg::TableMetadata> ReadMetadataFile(const std::string& location, std::string_view what);
  // One table's commit (catalog_.CommitTable), re-based as above. With `record` (a request's
  // Idempotency-Key on a catalog that keeps records), the commit that lands stores it in its own
  // transaction (Catalog::CommitTransactionWithRecord).
  Result<catalog::CommitResult> CommitTableRebasing(const catalog::TableCommit& commit,
                                                    const catalog::IdempotencyRecord* record);

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  const RestOptions& options_;
  BodyCache bodies_;
  iceberg::ManifestCache manifests_;
  std::mutex details_mu_;
  std::map<std::string, TableDetail> details_;
  std::atomic<int64_t> commits_{0};
  std::atomic<int64_t> conflicts_{0};
  std::atomic<int64_t> rebased_{0};
  // Last: destroyed first, its destructor cancels and joins the background plans, whose jobs
  // use the members above (the manifest cache, the counters) until they return.
  // Seals plan ids and staged tables' signing scopes (options.sealer, else a key of this process).
  std::shared_ptr<const io::Sealer> sealer_;
  // `payload` sealed for `purpose`, as base64url text (a URL segment or query value).
  std::string SealJson(std::string_view purpose, const Json& payload, std::chrono::seconds lifetime) const;
  // The JSON object a token of SealJson carries; nullopt for anything else (not base64url, forged,
  // expired, another purpose or ring, not an object), never saying which.
  std::optional<Json> OpenSealedJson(std::string_view purpose, const std::string& token) const;
  PlanStore plans_;
};

}  // namespace skade::rest

// Handler error flow, like SKADE_RETURN_IF_ERROR and SKADE_ASSIGN_OR_RETURN (base/status.h) but
// returning a Response: ErrorResponse(error, ...), the optional arguments being its `not_found`
// and `conflict` exception types (as in SKADE_RESPOND_IF_ERROR(st, "NoSuchNamespaceException")).

// Returns the error response for `expr` (a Status or Result) unless it is Ok.
#define SKADE_RESPOND_IF_ERROR(expr, ...)                                                          \
  do {                                                                                             \
    auto&& skade_status_or_result_ = (expr);                                                       \
    if (!skade_status_or_result_.ok()) {                                                           \
      return ::skade::rest::ErrorResponse(                                                         \
          ::skade::internal::AsStatus(skade_status_or_result_) __VA_OPT__(, ) __VA_ARGS__);        \
    }                                                                                              \
  } while (false)

#define SKADE_ASSIGN_OR_RESPOND_IMPL(tmp, lhs, rexpr, ...)                                         \
  auto tmp = (rexpr);                                                                              \
  if (!tmp.ok()) return ::skade::rest::ErrorResponse(tmp.status() __VA_OPT__(, ) __VA_ARGS__);     \
  lhs = std::move(tmp).value()

// `lhs = value of rexpr` (a Result), or return the error response for its Status.
#define SKADE_ASSIGN_OR_RESPOND(lhs, rexpr, ...)                                                   \
  SKADE_ASSIGN_OR_RESPOND_IMPL(SKADE_CONCAT(skade_respond_, __LINE__), lhs, rexpr, __VA_ARGS__)
