// Spec details of the REST catalog that clients rely on, over real HTTP on loopback: a missing
// namespace is 404 before any other check, incremental scans skip snapshots that are not
// appends, a plan id lives until its tasks are fetched or it expires, metrics reports are checked
// against their schema, and unregisterTable (and a drop without purgeRequested) leaves every
// file.
#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

class RestSpecDetailsTest : public RestServerTest {
 protected:
  // A one-file append of ids [first, first + 10) to base.`name`; its outcome.
  table::CommitOutcome AppendIds(table::Table& t, int first) {
    auto done = t.Append({"SELECT range AS id, 'eu' AS region FROM range(" + std::to_string(first) +
                              ", " + std::to_string(first + 10) + ")",
                          nullptr});
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    return done.ok() ? *done : table::CommitOutcome{};
  }

  // The ids in the data files of a planning answer's file scan tasks, sorted.
  std::vector<std::string> IdsOf(const Json& tasks) {
    std::string files;
    for (const Json& task : tasks) {
      std::string path = task["data-file"]["file-path"];
      if (path.rfind("file:", 0) == 0) path = path.substr(5);
      files += (files.empty() ? "'" : ", '") + path + "'";
    }
    std::vector<std::string> ids;
    if (files.empty()) return ids;
    for (const auto& row :
         testing::QueryText(*db_, "SELECT id FROM read_parquet([" + files + "]) ORDER BY id")) {
      ids.push_back(row[0]);
    }
    return ids;
  }

  static std::vector<std::string> Range(int first, int end) {
    std::vector<std::string> out;
    for (int i = first; i < end; ++i) out.push_back(std::to_string(i));
    return out;
  }

  // Every file under the table's location.
  std::set<std::string> FilesOf(const std::string& table) {
    auto state = catalog_->LoadTable(Ident(table));
    EXPECT_TRUE(state.ok());
    if (!state.ok()) return {};
    return FilesUnder(state->metadata->location);
  }

  // The files under `location`, but for the temporary file of a version hint being written at
  // that moment (the catalog writes hints on a thread of its own, through a temporary file it
  // renames): it is there only until the rename.
  std::set<std::string> FilesUnder(const std::string& location) {
    std::set<std::string> out;
    auto files = io_->List(location + "/");
    EXPECT_TRUE(files.ok());
    if (files.ok()) {
      for (const auto& f : *files) {
        if (f.location.find("/version-hint.text.tmp-") == std::string::npos) out.insert(f.location);
      }
    }
    return out;
  }

  static Json ScanReport() {
    return Json::parse(R"({
      "report-type": "scan-report", "table-name": "base.t", "snapshot-id": 3, "filter": true,
      "schema-id": 0, "projected-field-ids": [1, 2], "projected-field-names": ["id", "region"],
      "metrics": {"total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 2644235116},
                  "result-data-files": {"unit": "count", "value": 1}},
      "metadata": {"engine": "spark"}})");
  }
  static Json CommitReport() {
    return Json::parse(R"({
      "report-type": "commit-report", "table-name": "base.t", "snapshot-id": 3, "sequence-number": 2,
      "operation": "append", "metrics": {"added-data-files": {"unit": "count", "value": 1}}})");
  }
};

// Spec: the 404s of createTable, registerTable, listTables, renameTable (its destination) and
// the planning endpoints name NoSuchNamespaceException. The order is Java's: the request body is
// parsed first (RESTCatalogServlet deserialises it and CatalogHandlers call request.validate()
// before the catalog runs), so a malformed body is 400 even for a missing namespace; then the
// namespace, before any check of locations, files, tables, snapshots or plans. Endpoints of one
// table (load, exists, drop, commit, metrics, unregister) answer NoSuchTableException, as their
// spec sections and Iceberg's own catalog tests (testLoadTableWithNonExistingNamespace) say.
TEST_F(RestSpecDetailsTest, AMissingNamespaceIs404BeforeOtherChecks) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  const std::string ghost = "/v1/namespaces/ghost";
  testing::TempDir elsewhere;

  EXPECT_EQ(ErrorType(Get(ghost + "/tables")), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(CreateTable("ghost", "t")), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(CreateTable("ghost", "t", true)), "NoSuchNamespaceException");
  // Checks that need the catalog or the files come after the namespace (before: 400 here).
  Json outside{{"name", "t"}, {"schema", Schema()}, {"location", elsewhere.path() + "/t"}};
  EXPECT_EQ(ErrorType(Post(ghost + "/tables", outside)), "NoSuchNamespaceException");
  Json bad_spec{{"name", "t"}, {"schema", Schema()}};
  bad_spec["partition-spec"] = Json::parse(
      R"({"spec-id":0,"fields":[{"source-id":9,"field-id":1000,"name":"x","transform":"identity"}]})");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables", bad_spec)), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Post(ghost + "/register",
                           Json{{"name", "r"},
                                {"metadata-location", elsewhere.path() + "/v1.metadata.json"}})),
            "NoSuchNamespaceException");
  EXPECT_EQ(
      ErrorType(Post(ghost + "/register",
                     Json{{"name", "r"},
                          {"metadata-location", tmp_.Path("warehouse") + "/none.metadata.json"}})),
      "NoSuchNamespaceException");
  // A body that does not parse, or lacks what its schema requires: 400 first.
  EXPECT_EQ(ErrorType(Post(ghost + "/tables", std::string("{not json"))), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables", Json{{"name", "t"}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(ghost + "/register", Json{{"name", "r"}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/plan", Json{{"snapshot-id", "x"}})),
            "BadRequestException");

  // renameTable: the destination's namespace; a source in a missing namespace is a missing table.
  Json into_ghost{{"source", {{"namespace", {"base"}}, {"name", "t"}}},
                  {"destination", {{"namespace", {"ghost"}}, {"name", "t"}}}};
  EXPECT_EQ(ErrorType(Post("/v1/tables/rename", into_ghost)), "NoSuchNamespaceException");
  Json from_ghost{{"source", {{"namespace", {"ghost"}}, {"name", "t"}}},
                  {"destination", {{"namespace", {"base"}}, {"name", "u"}}}};
  EXPECT_EQ(ErrorType(Post("/v1/tables/rename", from_ghost)), "NoSuchTableException");

  // Planning: NoSuchNamespaceException before the table, the snapshots, the filter's columns
  // and the plan ids.
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/plan", Json::object())), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/plan",
                           Json{{"stats-fields", {"nope"}}, {"snapshot-id", 1}})),
            "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Get(ghost + "/tables/t/plan/some-plan")), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Delete(ghost + "/tables/t/plan/some-plan")), "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/tasks", Json{{"plan-task", "some-plan:1"}})),
            "NoSuchNamespaceException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/tasks", Json{{"plan-task", 1}})),
            "BadRequestException");
  // A missing table in a namespace that exists, and a missing plan of a table that exists.
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/nope/plan", Json::object())),
            "NoSuchTableException");
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/tables/nope/plan/some-plan")),
            "NoSuchTableException");
  EXPECT_EQ(ErrorType(Delete("/v1/namespaces/base/tables/nope/plan/some-plan")),
            "NoSuchTableException");
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/tables/t/plan/some-plan")), "NoSuchPlanIdException");
  EXPECT_EQ(
      ErrorType(Post("/v1/namespaces/base/tables/t/tasks", Json{{"plan-task", "some-plan:1"}})),
      "NoSuchPlanTaskException");

  // One table's endpoints: NoSuchTableException, as the spec lists for them.
  EXPECT_EQ(ErrorType(Get(ghost + "/tables/t")), "NoSuchTableException");
  EXPECT_EQ(Head(ghost + "/tables/t").status, 404);
  EXPECT_EQ(ErrorType(Delete(ghost + "/tables/t")), "NoSuchTableException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t",
                           Json{{"requirements", Json::array()}, {"updates", Json::array()}})),
            "NoSuchTableException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/metrics", ScanReport())), "NoSuchTableException");
  EXPECT_EQ(ErrorType(Post(ghost + "/tables/t/unregister", std::string())), "NoSuchTableException");

  // Nothing was made: no namespace, no folder, no table.
  EXPECT_EQ(Head(ghost).status, 404);
  EXPECT_TRUE(FilesUnder(tmp_.Path("warehouse") + "/ghost").empty());
  EXPECT_EQ(Get("/v1/namespaces/base/tables").body["identifiers"].size(), 1u);
}

// Spec PlanTableScanRequest: start-snapshot-id (exclusive) to end-snapshot-id (inclusive) is an
// incremental scan, which is Iceberg's IncrementalAppendScan: the files the range's appends
// added; replace, overwrite and delete snapshots in the range contribute none (not an error),
// and an end that does not descend from the start is 400.
TEST_F(RestSpecDetailsTest, IncrementalScansSkipSnapshotsThatAreNotAppends) {
  RestOptions options;
  options.plan_async_manifests = 0;
  Start(options);
  ASSERT_EQ(CreateTable("base", "inc").status, 200);
  auto t = LoadTable(Ident("inc"));
  ASSERT_NE(t, nullptr);
  const table::CommitOutcome a0 = AppendIds(*t, 0);
  const table::CommitOutcome a1 = AppendIds(*t, 10);
  auto overwrite =
      t->OverwriteWhere(testing::Where("id < 5"),
                        {"SELECT range + 100 AS id, 'eu' AS region FROM range(5)", nullptr});
  ASSERT_TRUE(overwrite.ok()) << overwrite.status().ToString();
  const table::CommitOutcome a2 = AppendIds(*t, 20);
  auto deleted = t->DeleteWhere(testing::Where("id = 25"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  auto compacted = t->Compact({});
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  const table::CommitOutcome a3 = AppendIds(*t, 30);
  EXPECT_EQ(overwrite->operation, "overwrite");
  EXPECT_NE(deleted->operation, "append");
  EXPECT_EQ(compacted->operation, "replace");
  for (const auto* a : {&a0, &a1, &a2, &a3}) EXPECT_EQ(a->operation, "append");

  const std::string plan = "/v1/namespaces/base/tables/inc/plan";
  auto between = [&](int64_t start, int64_t end) {
    return Post(plan, Json{{"start-snapshot-id", start}, {"end-snapshot-id", end}});
  };
  // After a0 up to a3: the files of a1, a2 and a3 as they were appended (id 25, deleted later in
  // the range, is in a2's file: an append scan lists appended files, not a net change).
  Reply all = between(a0.snapshot_id, a3.snapshot_id);
  ASSERT_EQ(all.status, 200) << all.body.dump();
  EXPECT_EQ(all.body["status"], "completed");
  EXPECT_EQ(all.body["file-scan-tasks"].size(), 3u);
  EXPECT_EQ(IdsOf(all.body["file-scan-tasks"]), Range(10, 40));
  // Ending at the overwrite: a1's file only; the overwrite's own files are not appended rows.
  Reply to_overwrite = between(a0.snapshot_id, overwrite->snapshot_id);
  ASSERT_EQ(to_overwrite.status, 200) << to_overwrite.body.dump();
  EXPECT_EQ(IdsOf(to_overwrite.body["file-scan-tasks"]), Range(10, 20));
  // A range of nothing but a delete and a compaction: no files.
  Reply none = between(a2.snapshot_id, compacted->snapshot_id);
  ASSERT_EQ(none.status, 200) << none.body.dump();
  EXPECT_EQ(none.body["status"], "completed");
  EXPECT_TRUE(none.body["file-scan-tasks"].empty());
  // With a filter, pruned by the appended files' metrics.
  Reply filtered = Post(plan, Json{{"start-snapshot-id", a0.snapshot_id},
                                   {"end-snapshot-id", a3.snapshot_id},
                                   {"filter", {{"type", "gt-eq"}, {"term", "id"}, {"value", 30}}}});
  ASSERT_EQ(filtered.status, 200) << filtered.body.dump();
  EXPECT_EQ(IdsOf(filtered.body["file-scan-tasks"]), Range(30, 40));

  // An end that does not descend from the start: 400. Main rolled back to a1 and appended to
  // makes a sibling of a2 … a3.
  ASSERT_TRUE(t->Rollback(a1.snapshot_id).ok());
  const table::CommitOutcome side = AppendIds(*t, 50);
  EXPECT_EQ(ErrorType(between(a2.snapshot_id, side.snapshot_id)), "BadRequestException");
  EXPECT_EQ(ErrorType(between(a3.snapshot_id, a1.snapshot_id)), "BadRequestException");
  Reply branch = between(a0.snapshot_id, side.snapshot_id);
  ASSERT_EQ(branch.status, 200) << branch.body.dump();
  std::vector<std::string> expected = Range(10, 20);
  for (const auto& id : Range(50, 60)) expected.push_back(id);
  EXPECT_EQ(IdsOf(branch.body["file-scan-tasks"]), expected);

  // Planned in the background, the range is still checked with the request: 400, not a plan
  // that fails later.
  server_->Shutdown();
  options.plan_async_manifests = 1;
  Start(options);
  EXPECT_EQ(ErrorType(between(a2.snapshot_id, side.snapshot_id)), "BadRequestException");
  Reply submitted = between(a0.snapshot_id, a3.snapshot_id);
  ASSERT_EQ(submitted.status, 200) << submitted.body.dump();
  EXPECT_EQ(submitted.body["status"], "submitted");
}

// Spec planTableScan: "Responses that include a plan-id indicate that the service is holding
// state", and a completed answer always has one; cancelPlanning is "not necessary after
// fetchScanTasks has been used to fetch scan tasks for each plan task". So a plan id answers
// fetchPlanningResult and cancelPlanning (and its plan tasks fetchScanTasks) while a task is
// owed or it is used within the time to live, then for a short grace; afterwards 404
// NoSuchPlanIdException / NoSuchPlanTaskException.
TEST_F(RestSpecDetailsTest, APlanIdStaysValidUntilItsTasksAreFetchedOrItExpires) {
  RestOptions options;
  options.plan_page_tasks = 2;
  options.plan_async_manifests = 0;
  // The grace is min(ttl, 60 s): 4 s too. Each use below comes 2.5 s after the one before: 1.5 s
  // of slack for a loaded (sanitized, 2-core) machine.
  options.plan_ttl = std::chrono::seconds(4);
  Start(options);
  ASSERT_EQ(CreateTable("base", "small").status, 200);
  ASSERT_EQ(CreateTable("base", "paged").status, 200);
  auto small = LoadTable(Ident("small"));
  auto paged = LoadTable(Ident("paged"));
  ASSERT_NE(small, nullptr);
  ASSERT_NE(paged, nullptr);
  AppendIds(*small, 0);
  for (int i = 0; i < 5; ++i) AppendIds(*paged, 10 * i);
  const std::string small_plan = "/v1/namespaces/base/tables/small/plan";
  const std::string paged_plan = "/v1/namespaces/base/tables/paged/plan";
  auto tasks = [&](const Json& token) {
    return Post("/v1/namespaces/base/tables/paged/tasks", Json{{"plan-task", token}});
  };

  // Every task in the answer: the id still answers fetch (the same result) and cancel.
  Reply one = Post(small_plan, Json::object());
  ASSERT_EQ(one.status, 200) << one.body.dump();
  ASSERT_TRUE(one.body["plan-id"].is_string());
  EXPECT_FALSE(one.body.contains("plan-tasks"));
  Reply again = Get(small_plan + "/" + one.body["plan-id"].get<std::string>());
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["status"], "completed");
  EXPECT_EQ(again.body["file-scan-tasks"], one.body["file-scan-tasks"]);
  EXPECT_EQ(Delete(small_plan + "/" + one.body["plan-id"].get<std::string>()).status, 204);
  EXPECT_EQ(Get(small_plan + "/" + one.body["plan-id"].get<std::string>()).body["status"],
            "cancelled");
  const std::string finished_at_once = Post(small_plan, Json::object()).body["plan-id"];

  // Plan tasks owed: the id lives while it is used, past the time to live since planning.
  Reply kept = Post(paged_plan, Json::object());
  ASSERT_EQ(kept.status, 200) << kept.body.dump();
  ASSERT_EQ(kept.body["plan-tasks"].size(), 2u) << "5 tasks in pages of 2";
  const std::string kept_id = kept.body["plan-id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(Get(paged_plan + "/" + kept_id).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(tasks(kept.body["plan-tasks"][0]).status, 200) << "used within the time to live";
  EXPECT_EQ(tasks(kept.body["plan-tasks"][1]).status, 200);
  // Every task fetched: a retry and a closing cancel still work, for the grace.
  EXPECT_EQ(tasks(kept.body["plan-tasks"][1]).status, 200);
  EXPECT_EQ(Get(paged_plan + "/" + kept_id).body["status"], "completed");
  Reply finished = Post(paged_plan, Json::object());
  for (const Json& token : finished.body["plan-tasks"]) EXPECT_EQ(tasks(token).status, 200);
  // Never used again.
  Reply forgotten = Post(paged_plan, Json::object());
  ASSERT_EQ(forgotten.status, 200);

  std::this_thread::sleep_for(std::chrono::milliseconds(8500));
  for (const std::string& id : {kept_id, finished.body["plan-id"].get<std::string>(),
                                forgotten.body["plan-id"].get<std::string>()}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(ErrorType(Get(paged_plan + "/" + id)), "NoSuchPlanIdException");
    EXPECT_EQ(ErrorType(Delete(paged_plan + "/" + id)), "NoSuchPlanIdException");
  }
  EXPECT_EQ(ErrorType(Get(small_plan + "/" + finished_at_once)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(Delete(small_plan + "/" + finished_at_once)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(tasks(kept.body["plan-tasks"][0])), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(tasks(forgotten.body["plan-tasks"][0])), "NoSuchPlanTaskException");

  // Finished plans give way to new ones: a client planning small scans one after another is
  // never refused for the plans it holds only for their grace (32 per client).
  for (int i = 0; i < 40; ++i) {
    Reply r = Post(small_plan, Json::object());
    ASSERT_EQ(r.status, 200) << i << ": " << r.body.dump();
  }
}

// Spec ReportMetricsRequest: anyOf ScanReport (table-name, snapshot-id, filter, schema-id,
// projected-field-ids, projected-field-names, metrics) and CommitReport (table-name,
// snapshot-id, sequence-number, operation, metrics), report-type required. A missing or
// mistyped required member is 400; a valid report 204.
TEST_F(RestSpecDetailsTest, MetricsReportsAreCheckedAgainstTheirSchema) {
  Start();
  ASSERT_EQ(CreateTable("base", "t").status, 200);
  const std::string metrics = "/v1/namespaces/base/tables/t/metrics";
  EXPECT_EQ(Post(metrics, ScanReport()).status, 204);
  EXPECT_EQ(Post(metrics, CommitReport()).status, 204);
  Json expression = ScanReport();
  expression["filter"] = Json::parse(R"({"type": "eq", "term": "id", "value": 1})");
  EXPECT_EQ(Post(metrics, expression).status, 204);

  for (const char* key : {"report-type", "table-name", "snapshot-id", "filter", "schema-id",
                          "projected-field-ids", "projected-field-names", "metrics"}) {
    Json missing = ScanReport();
    missing.erase(key);
    Reply r = Post(metrics, missing);
    EXPECT_EQ(r.status, 400) << key;
    EXPECT_EQ(ErrorType(r), "BadRequestException") << key;
  }
  for (const char* key : {"table-name", "snapshot-id", "sequence-number", "operation", "metrics"}) {
    Json missing = CommitReport();
    missing.erase(key);
    EXPECT_EQ(ErrorType(Post(metrics, missing)), "BadRequestException") << key;
  }
  const std::vector<std::pair<std::string, Json>> mistyped = {
      {"report-type", 7},
      {"table-name", 1},
      {"snapshot-id", "3"},
      {"snapshot-id", 1.5},
      {"snapshot-id", Json::parse("18446744073709551615")},
      {"filter", 5},
      {"filter", "true"},
      {"schema-id", Json::parse("4294967296")},
      {"projected-field-ids", Json::array({"id"})},
      {"projected-field-names", Json::array({1})},
      {"metrics", Json::array()},
      {"metrics", Json{{"result-data-files", 1}}},
      {"metrics", Json{{"result-data-files", {{"unit", "count"}}}}},
      {"metrics", Json{{"total-planning-duration", {{"time-unit", "ns"}, {"count", 1}}}}},
      {"metadata", Json{{"engine", 1}}},
  };
  for (const auto& [key, value] : mistyped) {
    Json wrong = ScanReport();
    wrong[key] = value;
    EXPECT_EQ(ErrorType(Post(metrics, wrong)), "BadRequestException")
        << key << " = " << value.dump();
  }
  Json commit = CommitReport();
  commit["sequence-number"] = "2";
  EXPECT_EQ(ErrorType(Post(metrics, commit)), "BadRequestException");
  // The schema ties no shape to other report types: one with a commit report's members passes,
  // one with neither's does not.
  Json other = CommitReport();
  other["report-type"] = "future-report";
  EXPECT_EQ(Post(metrics, other).status, 204);
  EXPECT_EQ(ErrorType(Post(metrics, Json{{"report-type", "future-report"}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post(metrics, std::string("[]"))), "BadRequestException");
  // The body before the table: a bad report for a missing table is 400, a good one 404.
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/nope/metrics",
                           Json{{"report-type", "scan-report"}})),
            "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/nope/metrics", ScanReport())),
            "NoSuchTableException");
}

// Spec unregisterTable (POST …/tables/{table}/unregister): "the underlying data and metadata
// files are left in place"; the answer is the last metadata location and metadata, which
// "must include all commits that happened before the unregister operation", and "all attempted
// commits after the unregister operation in this catalog must fail". dropTable without
// purgeRequested (default false) leaves every file too.
TEST_F(RestSpecDetailsTest, UnregisterAndDropWithoutPurgeLeaveEveryFile) {
  Start();
  Reply config = Get("/v1/config");
  EXPECT_NE(std::find(config.body["endpoints"].begin(), config.body["endpoints"].end(),
                      "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister"),
            config.body["endpoints"].end());
  ASSERT_EQ(CreateTable("base", "u").status, 200);
  auto t = LoadTable(Ident("u"));
  ASSERT_NE(t, nullptr);
  AppendIds(*t, 0);
  AppendIds(*t, 10);
  auto state = catalog_->LoadTable(Ident("u"));
  ASSERT_TRUE(state.ok());
  const std::string location = state->metadata->location;
  const std::set<std::string> files = FilesOf("u");
  ASSERT_GE(files.size(), 7u) << "metadata files, manifest lists, manifests and data files";

  const std::string path = "/v1/namespaces/base/tables/u";
  EXPECT_EQ(Get(path + "/unregister").status, 405);
  Reply gone = Post(path + "/unregister", std::string());
  ASSERT_EQ(gone.status, 200) << gone.body.dump();
  EXPECT_EQ(gone.body["metadata-location"], state->metadata_location);
  EXPECT_EQ(gone.body["metadata"]["current-snapshot-id"], *state->metadata->current_snapshot_id);
  EXPECT_EQ(gone.body["metadata"]["snapshots"].size(), 2u);
  EXPECT_EQ(Head(path).status, 404);
  EXPECT_EQ(ErrorType(Post(path + "/unregister", std::string())), "NoSuchTableException");
  Json commit{
      {"requirements", Json::array()},
      {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"k", "v"}}}}})}};
  EXPECT_EQ(ErrorType(Post(path, commit)), "NoSuchTableException")
      << "commits after the unregister fail";
  EXPECT_EQ(FilesUnder(location), files) << "every file stays";

  // Registered again from the answer, the table is whole.
  Reply back = Post("/v1/namespaces/base/register",
                    Json{{"name", "u"}, {"metadata-location", gone.body["metadata-location"]}});
  ASSERT_EQ(back.status, 200) << back.body.dump();
  EXPECT_EQ(Count("base", "u"), "20");
  // The catalog unregisters only the metadata it was shown: a commit in between is not lost.
  EXPECT_EQ(catalog_->UnregisterTable(Ident("u"), state->metadata_location + ".old").code(),
            StatusCode::kConflict);
  EXPECT_EQ(Head(path).status, 204);

  // dropTable without purgeRequested, or with false: the table goes, every file stays.
  EXPECT_EQ(Delete(path).status, 204);
  EXPECT_EQ(FilesUnder(location), files);
  ASSERT_EQ(Post("/v1/namespaces/base/register",
                 Json{{"name", "u"}, {"metadata-location", state->metadata_location}})
                .status,
            200);
  EXPECT_EQ(Delete(path + "?purgeRequested=false").status, 204);
  EXPECT_EQ(FilesUnder(location), files);
  ASSERT_EQ(Post("/v1/namespaces/base/register",
                 Json{{"name", "u"}, {"metadata-location", state->metadata_location}})
                .status,
            200);
  // A value that is not a boolean is refused, and nothing happens.
  EXPECT_EQ(ErrorType(Delete(path + "?purgeRequested=yes")), "BadRequestException");
  EXPECT_EQ(Head(path).status, 204);
  // A purge as Python clients spell it ("True"): the table's files go.
  EXPECT_EQ(Delete(path + "?purgeRequested=True").status, 204);
  EXPECT_EQ(Head(path).status, 404);
  for (const std::string& f : FilesUnder(location)) EXPECT_EQ(files.count(f), 0u) << f;
}

}  // namespace
}  // namespace skade::rest
