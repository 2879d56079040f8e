// The Iceberg REST catalog server on loopback, driven over real HTTP (cpp-httplib's client):
// config, namespaces, tables (create, staged create, load with ETag, commit with requirements,
// rename, drop), an append made by skade's library and committed through REST, multi-table
// transactions, eight concurrent committers, OAuth2 tokens and bad input — each answer checked
// for its status, its error model and that nothing changed.
#include <atomic>
#include <thread>

#include "skade/catalog/file_catalog.h"
#include "skade/engine/data_writer.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_metadata.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/run_process.h"

namespace skade::rest {
namespace {

using ::testing::HasSubstr;

TEST_F(RestServerTest, ConfigListsTheEndpointsAndNamespacesNest) {
  Start();
  Reply config = Get("/v1/config");
  ASSERT_EQ(config.status, 200);
  EXPECT_TRUE(config.body["defaults"].is_object());
  EXPECT_TRUE(config.body["overrides"].is_object());
  EXPECT_THAT(config.body["endpoints"].dump(), HasSubstr("POST /v1/{prefix}/transactions/commit"));

  for (const char* levels : {R"(["sales"])", R"(["sales","eu"])", R"(["sales","us"])"}) {
    Reply r = Post("/v1/namespaces", Json{{"namespace", Json::parse(levels)}, {"properties", {{"owner", "ana"}}}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["properties"]["owner"], "ana");
  }
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", Json{{"namespace", {"sales"}}})), "AlreadyExistsException");
  Reply top = Get("/v1/namespaces");
  ASSERT_EQ(top.status, 200);
  EXPECT_EQ(top.body["namespaces"], Json::parse(R"([["base"],["sales"]])"));
  Reply nested = Get("/v1/namespaces?parent=sales");
  EXPECT_EQ(nested.body["namespaces"], Json::parse(R"([["sales","eu"],["sales","us"]])"));
  // Paged: one per page, the token continues after the last one returned.
  Reply first = Get("/v1/namespaces?parent=sales&pageToken=&pageSize=1");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body["namespaces"], Json::parse(R"([["sales","eu"]])"));
  ASSERT_TRUE(first.body["next-page-token"].is_string());
  Reply second = Get("/v1/namespaces?parent=sales&pageSize=1&pageToken=" + first.body["next-page-token"].get<std::string>());
  EXPECT_EQ(second.body["namespaces"], Json::parse(R"([["sales","us"]])"));
  EXPECT_TRUE(second.body["next-page-token"].is_null());

  EXPECT_EQ(Get("/v1/namespaces/sales%1Feu").body["namespace"], Json::parse(R"(["sales","eu"])"));
  EXPECT_EQ(Head("/v1/namespaces/sales%1Feu").status, 204);
  EXPECT_EQ(Head("/v1/namespaces/nope").status, 404);
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/nope")), "NoSuchNamespaceException");

  Reply props = Post("/v1/namespaces/sales/properties",
                     Json{{"removals", {"owner", "absent"}}, {"updates", {{"tier", "gold"}}}});
  ASSERT_EQ(props.status, 200) << props.body.dump();
  EXPECT_EQ(props.body["updated"], Json::parse(R"(["tier"])"));
  EXPECT_EQ(props.body["removed"], Json::parse(R"(["owner"])"));
  EXPECT_EQ(props.body["missing"], Json::parse(R"(["absent"])"));
  EXPECT_EQ(Get("/v1/namespaces/sales").body["properties"], Json::parse(R"({"tier":"gold"})"));
  EXPECT_EQ(Post("/v1/namespaces/sales/properties", Json{{"removals", {"tier"}}, {"updates", {{"tier", "x"}}}}).status, 422);

  ASSERT_EQ(CreateTable("sales%1Feu", "orders").status, 200);
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/sales%1Feu")), "NamespaceNotEmptyException");
  EXPECT_EQ(Delete("/v1/namespaces/sales%1Feu/tables/orders").status, 204);
  EXPECT_EQ(Delete("/v1/namespaces/sales%1Feu").status, 204);
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/sales%1Feu")), "NoSuchNamespaceException");
}

// A path served with other methods answers 405 with an Allow header (not 404 "no route"); an
// unknown path stays 404.
TEST_F(RestServerTest, AWrongMethodOnAKnownPathIs405WithAllow) {
  Start();
  httplib::Result put = client_->Put("/v1/namespaces", Headers(), R"({"namespace":["x"]})", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD, POST");
  Json body = Json::parse(put->body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], 405);
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("PUT is not allowed on /v1/namespaces"));
  EXPECT_EQ(Head("/v1/namespaces/x").status, 404) << "the refused PUT created nothing";

  httplib::Result patch = client_->Patch("/v1/namespaces/base", Headers(), "{}", "application/json");
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->status, 405);
  EXPECT_EQ(patch->get_header_value("Allow"), "GET, HEAD, DELETE");
  EXPECT_EQ(Get("/v1/no/such/path").status, 404);
}

// A web page of another site can make a browser POST text/plain, form data or no body at all
// without asking first (a CORS "simple request"); only a JSON body changes the catalog.
TEST_F(RestServerTest, MutationsFromAWebPageOfAnotherSiteAreRefused) {
  Start();
  const std::string body = R"({"namespace":["csrf"]})";
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                           "text/plain; charset=application/json", "application/jsonx"}) {
    httplib::Result r = client_->Post("/v1/namespaces", Headers(), body, type);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << type;  // the spec's status for a malformed request
    EXPECT_THAT(r->body, HasSubstr("needs Content-Type: application/json")) << type;
  }
  httplib::Headers no_type = Headers();
  httplib::Result bare = client_->Post("/v1/namespaces/base/tables/events/unregister", no_type);
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 400) << "a bodiless POST without a type";
  EXPECT_EQ(Head("/v1/namespaces/csrf").status, 404) << "nothing was created";
  // What clients send passes (parameters and case as they come).
  httplib::Result json = client_->Post("/v1/namespaces", Headers(), body, "Application/JSON; charset=utf-8");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200) << json->body;
}

TEST_F(RestServerTest, TablesLoadWithEtagsCommitWithRequirementsRenameAndDrop) {
  Start();
  Reply created = CreateTable("base", "events");
  ASSERT_EQ(created.status, 200) << created.body.dump();
  ASSERT_TRUE(created.body["metadata-location"].is_string());
  EXPECT_EQ(created.body["metadata"]["partition-specs"][0]["fields"][0]["name"], "region");
  // No snapshot yet: the member is left out (the spec's TableMetadata types it as a non-null integer).
  EXPECT_FALSE(created.body["metadata"].contains("current-snapshot-id")) << created.body["metadata"].dump();
  EXPECT_EQ(ErrorType(CreateTable("base", "events")), "AlreadyExistsException");
  EXPECT_EQ(ErrorType(CreateTable("nope", "events")), "NoSuchNamespaceException");

  Reply listed = Get("/v1/namespaces/base/tables");
  EXPECT_EQ(listed.body["identifiers"], Json::parse(R"([{"namespace":["base"],"name":"events"}])"));
  Reply loaded = Get("/v1/namespaces/base/tables/events");
  ASSERT_EQ(loaded.status, 200);
  ASSERT_FALSE(loaded.etag.empty());
  EXPECT_EQ(Get("/v1/namespaces/base/tables/events", {{"If-None-Match", loaded.etag}}).status, 304);
  EXPECT_EQ(Head("/v1/namespaces/base/tables/events").status, 204);
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/tables/nope")), "NoSuchTableException");

  const std::string uuid = loaded.body["metadata"]["table-uuid"];
  Json commit{{"requirements", Json::array({Json{{"type", "assert-table-uuid"}, {"uuid", uuid}}})},
              {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"owner", "ana"}}}}})}};
  Reply committed = Post("/v1/namespaces/base/tables/events", commit);
  ASSERT_EQ(committed.status, 200) << committed.body.dump();
  EXPECT_EQ(committed.body["metadata"]["properties"]["owner"], "ana");
  EXPECT_NE(committed.body["metadata-location"], loaded.body["metadata-location"]);
  // The ETag follows the metadata: the old one no longer matches.
  EXPECT_EQ(Get("/v1/namespaces/base/tables/events", {{"If-None-Match", loaded.etag}}).status, 200);

  // A requirement that no longer holds: 409 and nothing changes.
  Json stale{{"requirements", Json::array({Json{{"type", "assert-current-schema-id"}, {"current-schema-id", 7}}})},
             {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"owner", "eve"}}}}})}};
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/events", stale)), "CommitFailedException");
  EXPECT_EQ(Get("/v1/namespaces/base/tables/events").body["metadata"]["properties"]["owner"], "ana");
  EXPECT_EQ(server_->stats().conflicts, 1);

  ASSERT_EQ(Post("/v1/namespaces", Json{{"namespace", {"archive"}}}).status, 200);
  Json rename{{"source", {{"namespace", {"base"}}, {"name", "events"}}},
              {"destination", {{"namespace", {"archive"}}, {"name", "old_events"}}}};
  EXPECT_EQ(Post("/v1/tables/rename", rename).status, 204);
  EXPECT_EQ(Head("/v1/namespaces/base/tables/events").status, 404);
  EXPECT_EQ(Get("/v1/namespaces/archive/tables/old_events").body["metadata"]["properties"]["owner"], "ana");
  EXPECT_EQ(ErrorType(Post("/v1/tables/rename", rename)), "NoSuchTableException");
  EXPECT_EQ(Delete("/v1/namespaces/archive/tables/old_events?purgeRequested=true").status, 204);
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/archive/tables/old_events")), "NoSuchTableException");
}

TEST_F(RestServerTest, AnAppendWrittenBySkadeAndCommittedThroughRestReadsInTheLibrary) {
  RestOptions options;
  options.rebase_commits = false;  // the stale append below is refused, not re-based
  Start(options);
  ASSERT_EQ(CreateTable("base", "facts").status, 200);
  int64_t seen = 0;
  catalog_->SetCommitListener([&](const catalog::CommitLogEntry&) { ++seen; });
  auto state = catalog_->LoadTable(Ident("facts"));
  ASSERT_TRUE(state.ok());
  Reply first = Post("/v1/namespaces/base/tables/facts", AppendCommit(*state->metadata, 0, 5, "a1"));
  ASSERT_EQ(first.status, 200) << first.body.dump();
  EXPECT_EQ(Count("base", "facts"), "5");
  // A second append on the new base, and one on the stale base: the stale one is refused.
  state = catalog_->LoadTable(Ident("facts"));
  const iceberg::TableMetadata after_first = *state->metadata;
  ASSERT_EQ(Post("/v1/namespaces/base/tables/facts", AppendCommit(after_first, 5, 3, "a2")).status, 200);
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/facts", AppendCommit(after_first, 100, 3, "a3"))),
            "CommitFailedException");
  EXPECT_EQ(Count("base", "facts"), "8");
  EXPECT_EQ(seen, 2) << "REST commits reach the catalog's commit listener (events, lineage)";
  catalog_->SetCommitListener({});
  // The REST view of the table is the library's.
  Reply loaded = Get("/v1/namespaces/base/tables/facts?snapshots=refs");
  ASSERT_EQ(loaded.status, 200);
  state = catalog_->LoadTable(Ident("facts"));
  EXPECT_EQ(loaded.body["metadata"]["current-snapshot-id"], *state->metadata->current_snapshot_id);
  EXPECT_EQ(loaded.body["metadata"]["snapshots"].size(), 1u) << "refs: only the snapshot main points at";
  EXPECT_EQ(Get("/v1/namespaces/base/tables/facts").body["metadata"]["snapshots"].size(), 2u);
}

// Server-side scan planning: the REST predicate bound and planned by skade's planner (identity
// partition pruning here), delete files attached and referenced by index, stats only for the
// fields asked for; a malformed or mistyped filter is 400.
TEST_F(RestServerTest, PlanTableScanPrunesByTheFilterAndAttachesDeleteFiles) {
  Start();
  auto t = CreateTable("base", "planned");
  ASSERT_EQ(t.status, 200);
  auto table = LoadTable(Ident("planned"));
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->Append({"SELECT range AS id, CASE WHEN range < 5 THEN 'eu' ELSE 'us' END AS region FROM range(10)",
                             nullptr})
                  .ok());
  ASSERT_TRUE(table->UpdateProperties({{"write.delete.mode", "merge-on-read"}}, {}).ok());
  ASSERT_TRUE(table->DeleteWhere(testing::Where("id = 7")).ok());
  const std::string plan = "/v1/namespaces/base/tables/planned/plan";
  auto tasks = [](const Reply& r) { return r.body["file-scan-tasks"].size(); };

  Reply all = Post(plan, Json::object());
  ASSERT_EQ(all.status, 200) << all.body.dump();
  EXPECT_EQ(all.body["status"], "completed");
  EXPECT_TRUE(all.body["plan-id"].is_string());
  EXPECT_EQ(tasks(all), 2u);
  ASSERT_EQ(all.body["delete-files"].size(), 1u);
  EXPECT_EQ(all.body["delete-files"][0]["content"], "position-deletes");
  int with_deletes = 0;
  for (const auto& task : all.body["file-scan-tasks"]) {
    EXPECT_EQ(task["data-file"]["content"], "data");
    EXPECT_EQ(task["data-file"]["file-format"], "parquet");
    EXPECT_FALSE(task["data-file"].contains("lower-bounds")) << "stats only when asked for";
    if (task.contains("delete-file-references")) {
      ++with_deletes;
      EXPECT_EQ(task["delete-file-references"], Json::parse("[0]"));
      EXPECT_EQ(task["data-file"]["partition"], Json::parse(R"(["us"])"));
    }
  }
  EXPECT_EQ(with_deletes, 1);

  // The current predicate form and the deprecated one prune alike.
  Reply eu = Post(plan, Json{{"filter", {{"type", "eq"}, {"left", {{"type", "reference"}, {"name", "region"}}}, {"right", "eu"}}}});
  ASSERT_EQ(eu.status, 200) << eu.body.dump();
  ASSERT_EQ(tasks(eu), 1u);
  EXPECT_EQ(eu.body["file-scan-tasks"][0]["data-file"]["partition"], Json::parse(R"(["eu"])"));
  EXPECT_TRUE(eu.body["delete-files"].empty());
  Reply legacy = Post(plan, Json{{"filter", {{"type", "and"},
                                              {"left", {{"type", "eq"}, {"term", "region"}, {"value", "us"}}},
                                              {"right", {{"type", "gt-eq"}, {"term", "id"}, {"value", 0}}}}}});
  ASSERT_EQ(legacy.status, 200) << legacy.body.dump();
  EXPECT_EQ(tasks(legacy), 1u);
  EXPECT_EQ(tasks(Post(plan, Json{{"filter", {{"type", "in"}, {"child", {{"type", "reference"}, {"name", "region"}}},
                                              {"values", Json::array({"ap", "xx"})}}}})),
            0u);
  EXPECT_EQ(tasks(Post(plan, Json{{"filter", false}})), 0u);
  // A transform the planner cannot evaluate prunes nothing (the client applies the filter).
  EXPECT_EQ(tasks(Post(plan, Json{{"filter", {{"type", "eq"}, {"left", {{"type", "apply"}, {"function", "bucket"}, {"arguments", Json::array()}}},
                                              {"right", 3}}}})),
            2u);
  // Stats for the fields asked for, with bounds as JSON values.
  Reply stats = Post(plan, Json{{"stats-fields", {"id"}}});
  ASSERT_EQ(stats.status, 200);
  const Json& bounds = stats.body["file-scan-tasks"][0]["data-file"]["lower-bounds"];
  EXPECT_EQ(bounds["keys"], Json::parse("[1]"));
  EXPECT_TRUE(bounds["values"][0].is_number_integer());
  // Time travel to the snapshot before the delete: no delete files.
  auto first = catalog_->LoadTable(Ident("planned"));
  ASSERT_TRUE(first.ok());
  Reply before = Post(plan, Json{{"snapshot-id", first->metadata->snapshots.front().snapshot_id}});
  EXPECT_TRUE(before.body["delete-files"].empty());
  EXPECT_EQ(ErrorType(Post(plan, Json{{"snapshot-id", 12345}})), "NoSuchSnapshotException");

  EXPECT_EQ(ErrorType(Post(plan, Json{{"filter", {{"type", "eq"}, {"term", "nope"}, {"value", 1}}}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(plan, Json{{"filter", {{"type", "eq"}, {"term", "id"}, {"value", "not a number"}}}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post(plan, Json{{"filter", {{"type", "frobnicate"}}}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(plan, Json{{"start-snapshot-id", 1}, {"end-snapshot-id", 2}})), "NoSuchSnapshotException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/missing/plan", Json::object())), "NoSuchTableException");
}

TEST_F(RestServerTest, StagedCreateCommitsWithAssertCreate) {
  Start();
  Reply staged = CreateTable("base", "staged", true);
  ASSERT_EQ(staged.status, 200) << staged.body.dump();
  EXPECT_FALSE(staged.body.contains("metadata-location")) << "nothing is committed yet";
  EXPECT_EQ(Head("/v1/namespaces/base/tables/staged").status, 404);
  const Json& m = staged.body["metadata"];
  Json updates = Json::array({Json{{"action", "assign-uuid"}, {"uuid", m["table-uuid"]}},
                              Json{{"action", "upgrade-format-version"}, {"format-version", 2}},
                              Json{{"action", "add-schema"}, {"schema", m["schemas"][0]}, {"last-column-id", 2}},
                              Json{{"action", "set-current-schema"}, {"schema-id", -1}},
                              Json{{"action", "add-spec"}, {"spec", m["partition-specs"][0]}},
                              Json{{"action", "set-default-spec"}, {"spec-id", -1}},
                              Json{{"action", "add-sort-order"}, {"sort-order", m["sort-orders"][0]}},
                              Json{{"action", "set-default-sort-order"}, {"sort-order-id", -1}},
                              Json{{"action", "set-location"}, {"location", m["location"]}},
                              Json{{"action", "set-properties"}, {"updates", {{"created-by", "a staged create"}}}}});
  Json commit{{"requirements", Json::array({Json{{"type", "assert-create"}}})}, {"updates", updates}};
  Reply created = Post("/v1/namespaces/base/tables/staged", commit);
  ASSERT_EQ(created.status, 200) << created.body.dump();
  EXPECT_EQ(created.body["metadata"]["table-uuid"], m["table-uuid"]);
  EXPECT_EQ(Get("/v1/namespaces/base/tables/staged").body["metadata"]["properties"]["created-by"], "a staged create");
  // The table exists now: a second create-commit fails its requirement.
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/staged", commit)), "CommitFailedException");
}

TEST_F(RestServerTest, CreatedTablesGetTheCatalogsColumnIds) {
  Start();
  // Ids as a client may send them; the table numbers its columns from 1, each struct's fields
  // before their children (as Java's TableMetadata.newTableMetadata does), and the spec, the
  // order and the identifier fields follow their columns.
  Json schema = Json::parse(R"({"type": "struct", "schema-id": 7, "identifier-field-ids": [3],
    "fields": [
      {"id": 3, "name": "id", "required": true, "type": "long"},
      {"id": 20, "name": "region", "required": false, "type": "string", "doc": "where"},
      {"id": 10, "name": "s", "required": false, "type": {"type": "struct", "fields": [
        {"id": 11, "name": "a", "required": false,
         "type": {"type": "list", "element-id": 12, "element": "string", "element-required": false}}]}},
      {"id": 4, "name": "m", "required": false, "type": {"type": "map", "key-id": 5, "key": "string",
        "value-id": 6, "value": "long", "value-required": true}}]})");
  Json spec = Json::parse(R"({"spec-id": 3, "fields": [
    {"source-id": 20, "field-id": 1005, "name": "region", "transform": "identity"},
    {"source-id": 3, "field-id": 1009, "name": "id_bucket", "transform": "bucket[16]"}]})");
  Json order = Json::parse(R"({"order-id": 4, "fields": [
    {"source-id": 20, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]})");
  Json fresh = Json::parse(R"([
    {"id": 1, "name": "id", "required": true, "type": "long"},
    {"id": 2, "name": "region", "required": false, "type": "string", "doc": "where"},
    {"id": 3, "name": "s", "required": false, "type": {"type": "struct", "fields": [
      {"id": 5, "name": "a", "required": false,
       "type": {"type": "list", "element-id": 6, "element": "string", "element-required": false}}]}},
    {"id": 4, "name": "m", "required": false, "type": {"type": "map", "key-id": 7, "key": "string",
      "value-id": 8, "value": "long", "value-required": true}}])");
  for (bool staged : {true, false}) {
    SCOPED_TRACE(staged ? "staged" : "created");
    Json body{{"name", staged ? "ids_staged" : "ids"}, {"schema", schema}, {"partition-spec", spec},
              {"write-order", order}, {"stage-create", staged}};
    Reply r = Post("/v1/namespaces/base/tables", body);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    const Json& m = r.body["metadata"];
    EXPECT_EQ(m["last-column-id"], 8);
    ASSERT_EQ(m["schemas"].size(), 1u);
    EXPECT_EQ(m["schemas"][0]["schema-id"], 0);
    EXPECT_EQ(m["schemas"][0]["fields"], fresh);
    EXPECT_EQ(m["schemas"][0]["identifier-field-ids"], Json::parse("[1]"));
    EXPECT_EQ(m["partition-specs"][0]["fields"], Json::parse(R"([
      {"source-id": 2, "field-id": 1000, "name": "region", "transform": "identity"},
      {"source-id": 1, "field-id": 1001, "name": "id_bucket", "transform": "bucket[16]"}])"));
    EXPECT_EQ(m["last-partition-id"], 1001);
    const int order_id = m["default-sort-order-id"].get<int>();
    for (const Json& o : m["sort-orders"]) {
      if (o["order-id"] == order_id) {
        EXPECT_EQ(o["fields"][0]["source-id"], 2) << o.dump();
      }
    }
  }
  // A spec naming a column the schema lacks is the client's error, and creates nothing.
  spec["fields"][0]["source-id"] = 99;
  Reply bad = Post("/v1/namespaces/base/tables",
                   Json{{"name", "ids_bad"}, {"schema", schema}, {"partition-spec", spec}});
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_EQ(Head("/v1/namespaces/base/tables/ids_bad").status, 404);
}

TEST_F(RestServerTest, TransactionsCommitAllTablesOrNone) {
  Start();
  ASSERT_EQ(CreateTable("base", "a").status, 200);
  ASSERT_EQ(CreateTable("base", "b").status, 200);
  auto change = [](const std::string& table, int schema_id, const std::string& value) {
    return Json{{"identifier", {{"namespace", {"base"}}, {"name", table}}},
                {"requirements", Json::array({Json{{"type", "assert-current-schema-id"}, {"current-schema-id", schema_id}}})},
                {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"v", value}}}}})}};
  };
  // One table's requirement fails: neither changes.
  Reply refused = Post("/v1/transactions/commit", Json{{"table-changes", Json::array({change("a", 0, "1"), change("b", 9, "1")})}});
  EXPECT_EQ(ErrorType(refused), "CommitFailedException");
  EXPECT_FALSE(Get("/v1/namespaces/base/tables/a").body["metadata"]["properties"].contains("v"));
  EXPECT_EQ(Post("/v1/transactions/commit", Json{{"table-changes", Json::array({change("a", 0, "2"), change("b", 0, "2")})}}).status,
            204);
  EXPECT_EQ(Get("/v1/namespaces/base/tables/a").body["metadata"]["properties"]["v"], "2");
  EXPECT_EQ(Get("/v1/namespaces/base/tables/b").body["metadata"]["properties"]["v"], "2");
  // Both commit-log entries share one transaction id.
  auto log = catalog_->CommitsSince(0, 100);
  ASSERT_TRUE(log.ok());
  ASSERT_GE(log->size(), 2u);
  EXPECT_FALSE(log->back().txn_id.empty());
  EXPECT_EQ(log->back().txn_id, (*log)[log->size() - 2].txn_id);
}

// Eight clients appending to one table, each retrying on 409 as REST clients do: with the
// server re-basing appends none needs a retry; without, they retry; either way no commit is
// lost or doubled and the commit log stays dense.
class EightAppenders : public RestServerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(EightAppenders, AppendingToOneTableLosesNoCommit) {
  const bool rebase = GetParam();
  RestOptions options;
  options.threads = 8;
  options.rebase_commits = rebase;
  Start(options);
  ASSERT_EQ(CreateTable("base", "busy").status, 200);
  constexpr int kClients = 8, kAppends = 4;
  std::atomic<int> retries{0};
  std::vector<std::thread> clients;
  std::vector<std::string> failures(kClients);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client http("127.0.0.1", server_->port());
      http.set_read_timeout(120, 0);
      for (int k = 0; k < kAppends; ++k) {
        for (int attempt = 0;; ++attempt) {
          // What a REST client does on 409: reload, rebuild the commit on the new base, retry.
          auto state = catalog_->LoadTable(Ident("busy"));
          if (!state.ok()) return void(failures[c] = state.status().ToString());
          const std::string tag = "c" + std::to_string(c) + "-" + std::to_string(k) + "-" + std::to_string(attempt);
          auto res = http.Post("/v1/namespaces/base/tables/busy",
                               AppendCommit(*state->metadata, (c * kAppends + k) * 10, 10, tag).dump(), "application/json");
          if (res && res->status == 200) break;
          if (!res || res->status != 409 || attempt > 50) {
            return void(failures[c] = res ? res->body : "no response");
          }
          ++retries;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(Count("base", "busy"), std::to_string(kClients * kAppends * 10));
  auto t = LoadTable(Ident("busy"));
  ASSERT_TRUE(t);
  EXPECT_EQ(Rows(*t, "SELECT count(DISTINCT id) FROM t"),
            (std::vector<std::vector<std::string>>{{std::to_string(kClients * kAppends * 10)}}));
  auto state = catalog_->LoadTable(Ident("busy"));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->metadata->snapshots.size(), static_cast<size_t>(kClients * kAppends));
  // One chain: every snapshot's sequence number one more than its parent's.
  for (const auto& s : state->metadata->snapshots) {
    if (!s.parent_snapshot_id) continue;
    const iceberg::Snapshot* parent = state->metadata->SnapshotById(*s.parent_snapshot_id);
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(s.sequence_number, parent->sequence_number + 1);
  }
  // The commit log is dense: one entry per commit, no gap.
  auto log = catalog_->CommitsSince(0, 1000);
  ASSERT_TRUE(log.ok());
  for (size_t i = 1; i < log->size(); ++i) EXPECT_EQ((*log)[i].commit_seq, (*log)[i - 1].commit_seq + 1);
  EXPECT_EQ(server_->stats().commits, kClients * kAppends + 0);
  EXPECT_EQ(server_->stats().conflicts, retries.load());
  if (rebase) {
    EXPECT_EQ(retries.load(), 0) << "every append landed on its first request";
  } else {
    EXPECT_EQ(server_->stats().rebased, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(RebaseOnOff, EightAppenders, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Rebased" : "Retried"; });

TEST_F(RestServerTest, BadInputGetsTheErrorModelAndChangesNothing) {
  RestOptions options;
  options.max_body_bytes = 64 << 10;
  Start(options);
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  const std::string before = Get("/v1/namespaces/base/tables/t").body["metadata-location"];
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", std::string("{not json"))), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", Json{{"namespace", "flat"}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", Json{{"namespace", {"a", 7}}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t",
                           Json{{"requirements", Json::array()}, {"updates", Json::array({Json{{"action", "do-magic"}}})}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t", Json{{"requirements", 1}, {"updates", Json::array()}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t",
                           Json{{"requirements", Json::array({Json{{"type", "assert-table-uuid"}, {"uuid", "x"}}})},
                                {"updates", Json::array()}})),
            "CommitFailedException");
  // Names that could leave the warehouse or split differently: refused by the one name rule.
  for (const std::string& name : std::vector<std::string>{"..", std::string("a\0b", 3), "a\\b", "a/b", ".hidden", ""}) {
    SCOPED_TRACE(name);
    Reply r = CreateTable("base", name);
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_EQ(ErrorType(r), "BadRequestException");
  }
  EXPECT_EQ(Post("/v1/namespaces", Json{{"namespace", {".."}}}).status, 400);
  // Locations outside the warehouse: no client makes the server write, read or purge there.
  testing::TempDir elsewhere;
  Json outside{{"name", "outside"}, {"schema", Schema()}, {"location", elsewhere.path() + "/t"}};
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables", outside)), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables", Json{{"name", "sneaky"}, {"schema", Schema()},
                                                                {"location", tmp_.Path("warehouse") + "/../x"}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/register",
                           Json{{"name", "etc"}, {"metadata-location", elsewhere.path() + "/v1.metadata.json"}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t",
                           Json{{"requirements", Json::array()},
                                {"updates", Json::array({Json{{"action", "set-location"}, {"location", "/etc"}}})}})),
            "BadRequestException");
  EXPECT_EQ(Head("/v1/namespaces/base/tables/outside").status, 404);
  EXPECT_EQ(Get("/v1/namespaces/..%1Fx/tables").status, 400);
  Reply big = Post("/v1/namespaces", Json{{"namespace", {"x"}}, {"properties", {{"p", std::string(100 << 10, 'x')}}}});
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(Get("/v1/namespaces/base/tables/t").body["metadata-location"], before);
  EXPECT_EQ(Head("/v1/namespaces/x").status, 404);
  EXPECT_EQ(ErrorType(Get("/v1/nothing/here")), "NotFoundException");
}

TEST_F(RestServerTest, OAuth2ClientCredentialsIssueExpiringTokens) {
  RestOptions options;
  options.clients = {{"spark", "s3cret"}};
  options.static_tokens = {"static-token"};
  // Long enough that issuing and first using a token never outlasts it on a loaded machine.
  options.token_lifetime = std::chrono::seconds(3);
  Start(options);
  EXPECT_EQ(ErrorType(Get("/v1/config")), "NotAuthorizedException");
  EXPECT_EQ(Get("/healthz").status, 200);
  auto token = client_->Post("/v1/oauth/tokens", "grant_type=client_credentials&client_id=spark&client_secret=wrong",
                             "application/x-www-form-urlencoded");
  ASSERT_TRUE(token);
  EXPECT_EQ(token->status, 401);
  EXPECT_EQ(Json::parse(token->body)["error"], "invalid_client");
  token = client_->Post("/v1/oauth/tokens", "grant_type=client_credentials&client_id=spark&client_secret=s3cret&scope=catalog",
                        "application/x-www-form-urlencoded");
  ASSERT_TRUE(token);
  ASSERT_EQ(token->status, 200) << token->body;
  Json issued = Json::parse(token->body);
  EXPECT_EQ(issued["token_type"], "bearer");
  EXPECT_EQ(issued["expires_in"], 3);
  token_ = issued["access_token"];
  EXPECT_EQ(Get("/v1/config").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  EXPECT_EQ(ErrorType(Get("/v1/config")), "NotAuthorizedException") << "expired";
  token_ = "static-token";
  EXPECT_EQ(Get("/v1/config").status, 200);
  token_ = "forged";
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", Json{{"namespace", {"x"}}})), "NotAuthorizedException");
  token_ = "static-token";
  EXPECT_EQ(Head("/v1/namespaces/x").status, 404) << "the unauthorized create changed nothing";
}

TEST_F(RestServerTest, ReadOnlyRefusesEveryMutationAndMetricsCount) {
  RestOptions options;
  options.read_only = true;
  Start(options);
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", Json{{"namespace", {"x"}}})), "ForbiddenException");
  EXPECT_EQ(ErrorType(CreateTable("base", "t")), "ForbiddenException");
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/base")), "ForbiddenException");
  EXPECT_EQ(Get("/v1/namespaces").status, 200);
  // A request is counted once its response is written (the server's logger), so the last
  // ones may show a moment later.
  std::string body;
  EXPECT_TRUE(skade::testing::PollUntil([&] {
    auto metrics = client_->Get("/metrics");
    body = metrics ? metrics->body : "";
    return body.find("skade_rest_requests_total{method=\"POST\",status=\"403\"} 2") != std::string::npos &&
           body.find("skade_rest_requests_total{method=\"DELETE\",status=\"403\"} 1") != std::string::npos;
  }, std::chrono::seconds(20), std::chrono::milliseconds(10))) << body;
  EXPECT_THAT(body, HasSubstr("skade_rest_request_duration_seconds_count"));
}

// A catalog without views: none listed, none found, none created — never a 404 "no route".
TEST_F(RestServerTest, ViewRoutesOfACatalogWithoutViewsAnswerThatThereAreNone) {
  // A folder of tables keeps no views.
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  catalog::FileCatalogOptions folder;
  folder.root = tmp_.Path("warehouse");
  auto files = catalog::OpenFileCatalog(folder, *io_);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  server_.reset();
  auto server = RestServer::Start(**files, *io_, RestOptions{});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server_ = std::move(*server);
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  EXPECT_THAT(Get("/v1/config").body["endpoints"].dump(), ::testing::Not(HasSubstr("views")));
  Reply listed = Get("/v1/namespaces/base/views");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body["identifiers"], Json::array());
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/nope/views")), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/views/v")), "NoSuchViewException");
  EXPECT_EQ(Head("/v1/namespaces/base/views/v").status, 404);
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/views", Json{{"name", "v"}})), "UnsupportedOperationException");
  EXPECT_EQ(ErrorType(Post("/v1/views/rename", Json::object())), "UnsupportedOperationException");
  server_.reset();  // before the catalog it serves
}

// HTTPS with a self-signed certificate (made by the openssl command): a client trusting it
// talks to the catalog; plain HTTP on the same port gets no answer.
TEST_F(RestServerTest, TlsServesHttps) {
  const std::string cert = tmp_.Path("cert.pem"), key = tmp_.Path("key.pem");
  auto made = testing::RunProcess("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                                  "-addext subjectAltName=IP:127.0.0.1 -keyout " + testing::ShellQuote(key) +
                                  " -out " + testing::ShellQuote(cert) + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  RestOptions options;
  options.port = 0;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  auto server = RestServer::Start(*catalog_, *io_, options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  httplib::SSLClient tls("127.0.0.1", (*server)->port());
  tls.set_ca_cert_path(cert.c_str());
  tls.enable_server_certificate_verification(true);
  auto config = tls.Get("/v1/config");
  ASSERT_TRUE(config) << httplib::to_string(config.error());
  EXPECT_EQ(config->status, 200);
  EXPECT_THAT(config->body, HasSubstr("endpoints"));
  httplib::Client plain("127.0.0.1", (*server)->port());
  plain.set_read_timeout(2, 0);
  auto refused = plain.Get("/v1/config");
  EXPECT_TRUE(!refused || refused->status >= 400);
  // A half-configured pair is refused at start.
  options.tls_key_file.clear();
  EXPECT_EQ(RestServer::Start(*catalog_, *io_, options).status().code(), StatusCode::kInvalidArgument);
}

// A body nested 100,000 levels crashed the server (a stack overflow after parsing) in every
// operation that walks its tree; each is now a 400 and the server answers the next request.
TEST_F(RestServerTest, DeeplyNestedBodiesAreRefusedAndTheServerLives) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  const std::string before = Get("/v1/namespaces/base/tables/t").body["metadata-location"];
  const std::string deep_array = std::string(100000, '[') + std::string(100000, ']');
  std::string deep_object;
  for (int i = 0; i < 100000; ++i) deep_object += "{\"a\":";
  deep_object += "1" + std::string(100000, '}');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/namespaces/base/tables/t", R"({"requirements":)" + deep_array + R"(,"updates":[]})"},
      {"/v1/namespaces/base/tables/t",
       R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"k":)" + deep_object + "}}]}"},
      {"/v1/transactions/commit", R"({"table-changes":)" + deep_array + "}"},
      {"/v1/namespaces/base/tables", R"({"name":"n","schema":)" + deep_object + "}"},
      {"/v1/namespaces/base/tables/t/plan", R"({"filter":)" + deep_object + "}"},
      {"/v1/events", R"({"catalog-objects-by-name":)" + deep_array + "}"},
      {"/v1/namespaces", R"({"namespace":["n"],"properties":)" + deep_object + "}"},
      {"/v1/namespaces/base/register", R"({"name":"r","metadata-location":)" + deep_array + "}"},
  };
  for (const auto& [path, body] : cases) {
    SCOPED_TRACE(path);
    Reply r = Post(path, body);
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_EQ(ErrorType(r), "BadRequestException");
    ASSERT_EQ(Get("/v1/config").status, 200);
  }
  EXPECT_EQ(Get("/v1/namespaces/base/tables/t").body["metadata-location"], before);
}

// NUL characters would be cut wherever a value becomes a C string (SQL, paths, PostgreSQL).
TEST_F(RestServerTest, NulCharactersInRequestsAreRefused) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  const std::string before = Get("/v1/namespaces/base/tables/t").body["metadata-location"];
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t",
                           std::string(R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"a\u0000b"}}]})"))),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces", std::string(R"({"namespace":["x"],"properties":{"a\u0000":"v"}})"))),
            "BadRequestException");
  EXPECT_EQ(Head("/v1/namespaces/x").status, 404);
  EXPECT_EQ(Get("/v1/namespaces/base/tables/t").body["metadata-location"], before);
  // An escaped backslash before "u0000" is not a NUL.
  Reply ok = Post("/v1/namespaces/base/tables/t",
                  std::string(R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"a\\u0000b"}}]})"));
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["metadata"]["properties"]["k"], "a\\u0000b");
}

// 300,000 properties in one 4 MB request pinned a core for minutes (ordered objects built by
// a linear search per key); they now commit like any other request.
TEST_F(RestServerTest, ManyPropertiesCommitInLinearTime) {
  RestOptions options;
  options.max_body_bytes = 32 << 20;
  Start(options);
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  std::string updates;
  for (int i = 0; i < 300000; ++i) updates += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":\"v\"";
  Reply r = Post("/v1/namespaces/base/tables/t",
                 R"({"requirements":[],"updates":[{"action":"set-properties","updates":{)" + updates + "}}]}");
  ASSERT_EQ(r.status, 200) << r.body.dump().substr(0, 300);
  EXPECT_GE(r.body["metadata"]["properties"].size(), 300000u);
  EXPECT_EQ(r.body["metadata"]["properties"]["p299999"], "v");
}

// Locations inside what a client sends — a registered file's own location, a snapshot's
// manifest list — obey the same rule as the locations of the request itself.
TEST_F(RestServerTest, LocationsInsideMetadataAndSnapshotsObeyTheLocationRule) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  Reply loaded = Get("/v1/namespaces/base/tables/t");
  const std::string before = loaded.body["metadata-location"];
  // A metadata file inside the warehouse whose table location is elsewhere.
  testing::TempDir elsewhere;
  Json metadata = loaded.body["metadata"];
  metadata["location"] = elsewhere.path() + "/victim";
  const std::string planted = tmp_.Path("warehouse") + "/base/planted/metadata/v1.metadata.json";
  testing::WriteFileOrDie(planted, metadata.dump());
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/register", Json{{"name", "planted"}, {"metadata-location", planted}})),
            "BadRequestException");
  EXPECT_EQ(Head("/v1/namespaces/base/tables/planted").status, 404);
  // A snapshot whose manifest list is any file of the machine, or another table's.
  for (const std::string& list : {std::string("/etc/passwd"), elsewhere.path() + "/snap.avro",
                                  tmp_.Path("warehouse") + "/../outside/snap.avro"}) {
    SCOPED_TRACE(list);
    Json snapshot{{"snapshot-id", 42},
                  {"sequence-number", 1},
                  {"timestamp-ms", 1},
                  {"manifest-list", list},
                  {"summary", {{"operation", "append"}}}};
    Json commit{{"requirements", Json::array()},
                {"updates", Json::array({Json{{"action", "add-snapshot"}, {"snapshot", snapshot}},
                                         Json{{"action", "set-snapshot-ref"}, {"ref-name", "main"}, {"type", "branch"},
                                              {"snapshot-id", 42}}})}};
    EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/t", commit)), "BadRequestException");
    Json txn{{"table-changes", Json::array({Json{{"identifier", {{"namespace", {"base"}}, {"name", "t"}}},
                                               {"requirements", commit["requirements"]},
                                               {"updates", commit["updates"]}}})}};
    EXPECT_EQ(ErrorType(Post("/v1/transactions/commit", txn)), "BadRequestException");
  }
  // A manifest list inside the table that names manifests outside it, or that is no list: the
  // manifests enter with the commit and are checked there, not when a reader opens them.
  const std::string table_location = loaded.body["metadata"]["location"];
  iceberg::ManifestFile stray;
  stray.manifest_path = elsewhere.path() + "/m.avro";
  stray.manifest_length = 100;
  stray.added_snapshot_id = 43;
  stray.added_files_count = stray.existing_files_count = stray.deleted_files_count = 0;
  stray.added_rows_count = stray.existing_rows_count = stray.deleted_rows_count = 0;
  auto list_bytes = iceberg::WriteManifestList(2, 43, std::nullopt, 1, {stray});
  ASSERT_TRUE(list_bytes.ok()) << list_bytes.status().ToString();
  const std::string stray_list = table_location + "/metadata/snap-43.avro";
  const std::string not_a_list = table_location + "/metadata/snap-44.avro";
  testing::WriteFileOrDie(stray_list, *list_bytes);
  testing::WriteFileOrDie(not_a_list, "not avro");
  for (const auto& [id, list] : {std::pair<int, std::string>{43, stray_list}, {44, not_a_list}}) {
    SCOPED_TRACE(list);
    Json snapshot{{"snapshot-id", id},
                  {"sequence-number", 1},
                  {"timestamp-ms", 1},
                  {"manifest-list", list},
                  {"summary", {{"operation", "append"}}}};
    Reply r = Post("/v1/namespaces/base/tables/t",
                   Json{{"requirements", Json::array()},
                        {"updates", Json::array({Json{{"action", "add-snapshot"}, {"snapshot", snapshot}}})}});
    EXPECT_EQ(r.status, 400) << r.body.dump();
  }
  EXPECT_EQ(Get("/v1/namespaces/base/tables/t").body["metadata-location"], before);
}

// write.metadata.path moves where the server writes metadata files and the version hint: only
// into a folder of the table's own location, never another table's metadata folder.
TEST_F(RestServerTest, MetadataPathsStayInsideTheirTable) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  ASSERT_EQ(CreateTable("base", "victim").status, 200);
  const std::string victim = Get("/v1/namespaces/base/tables/victim").body["metadata"]["location"];
  const std::string before = Get("/v1/namespaces/base/tables/t").body["metadata-location"];
  for (const std::string& path : {victim + "/metadata", std::string("/tmp"), tmp_.Path("warehouse")}) {
    SCOPED_TRACE(path);
    Reply r = Post("/v1/namespaces/base/tables/t",
                   Json{{"requirements", Json::array()},
                        {"updates", Json::array({Json{{"action", "set-properties"},
                                                      {"updates", {{"write.metadata.path", path}}}}})}});
    EXPECT_EQ(r.status, 400) << r.body.dump();
  }
  EXPECT_EQ(Get("/v1/namespaces/base/tables/t").body["metadata-location"], before);
  Json inside = Json{{"requirements", Json::array()},
                     {"updates", Json::array({Json{{"action", "set-properties"},
                                                   {"updates", {{"write.metadata.path",
                                                                 Get("/v1/namespaces/base/tables/t").body["metadata"]["location"].get<std::string>() + "/meta2"}}}}})}};
  Reply ok = Post("/v1/namespaces/base/tables/t", inside);
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_NE(ok.body["metadata-location"].get<std::string>().find("/meta2/"), std::string::npos);
}

TEST_F(RestServerTest, APortInUseFailsToBind) {
  Start();
  RestOptions second;
  second.port = server_->port();
  auto again = RestServer::Start(*catalog_, *io_, second);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Get("/v1/config").status, 200);
}

}  // namespace
}  // namespace skade::rest
