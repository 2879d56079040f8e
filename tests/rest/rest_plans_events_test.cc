// The REST catalog's paged, asynchronous and incremental scan planning, and its change feed
// (the proposed events endpoint and the Server-Sent Events stream), on loopback: every page of
// a plan together equals the library's own plan, cancelled and foreign plans are refused, and
// the feed carries every commit once, in order, resumable from its token.
#include <atomic>
#include <set>
#include <thread>

#include "skade/events/bus.h"
#include "skade/events/commit_event.h"
#include "skade/iceberg/scan.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/poll_until.h"

namespace skade::rest {
namespace {

using ::testing::HasSubstr;

class RestPlansEventsTest : public RestServerTest {
 protected:
  // A merge-on-read table of `appends` one-file appends (ids 10*i … 10*i+9), then a delete of
  // id 7 when `with_delete`.
  void MakeTable(const std::string& name, int appends, bool with_delete) {
    ASSERT_EQ(CreateTable("base", name).status, 200);
    auto table = LoadTable(Ident(name));
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->UpdateProperties({{"write.delete.mode", "merge-on-read"}}, {}).ok());
    for (int i = 0; i < appends; ++i) {
      ASSERT_TRUE(table->Append({"SELECT range AS id, 'eu' AS region FROM range(" + std::to_string(10 * i) + ", " +
                                     std::to_string(10 * i + 10) + ")",
                                 nullptr})
                      .ok());
    }
    if (with_delete) {
      ASSERT_TRUE(table->DeleteWhere(testing::Where("id = 7")).ok());
    }
  }

  // The library's plan of the table's current snapshot: data file path → delete file paths.
  std::map<std::string, std::set<std::string>> LibraryPlan(const std::string& name) {
    auto state = catalog_->LoadTable(Ident(name));
    EXPECT_TRUE(state.ok());
    iceberg::ScanPlanner planner(*io_, *state->metadata);
    auto tasks = planner.PlanAll(*state->metadata->CurrentSnapshot(), *state->metadata->CurrentSchema(), nullptr);
    EXPECT_TRUE(tasks.ok());
    std::map<std::string, std::set<std::string>> out;
    for (const auto& t : *tasks) {
      auto& deletes = out[t.file.file_path];
      for (const auto& d : t.deletes) deletes.insert(d->file.file_path);
    }
    return out;
  }

  // Adds a ScanTasks page's tasks to `plan`, resolving delete references within the page.
  static void Collect(const Json& page, std::map<std::string, std::set<std::string>>* plan) {
    for (const Json& task : page["file-scan-tasks"]) {
      auto [it, added] = plan->emplace(task["data-file"]["file-path"].get<std::string>(), std::set<std::string>());
      EXPECT_TRUE(added) << "a file planned twice: " << it->first;
      if (!task.contains("delete-file-references")) continue;
      for (const Json& ref : task["delete-file-references"]) {
        ASSERT_LT(ref.get<size_t>(), page["delete-files"].size()) << "a reference outside its page's delete files";
        it->second.insert(page["delete-files"][ref.get<size_t>()]["file-path"].get<std::string>());
      }
    }
  }

  Reply FetchTasks(const std::string& table, const Json& token) {
    return Post("/v1/namespaces/base/tables/" + table + "/tasks", Json{{"plan-task", token}});
  }
};

TEST_F(RestPlansEventsTest, LargePlansComeInPagesThatTogetherAreTheLibrarysPlan) {
  RestOptions options;
  options.plan_page_tasks = 3;
  options.plan_async_manifests = 0;
  Start(options);
  MakeTable("paged", 8, true);
  const std::string plan = "/v1/namespaces/base/tables/paged/plan";
  Reply first = Post(plan, Json::object());
  ASSERT_EQ(first.status, 200) << first.body.dump();
  EXPECT_EQ(first.body["status"], "completed");
  EXPECT_TRUE(first.body["plan-id"].is_string());
  EXPECT_EQ(first.body["file-scan-tasks"].size(), 3u);
  ASSERT_EQ(first.body["plan-tasks"].size(), 2u) << "8 tasks in pages of 3: 3 inline, then two plan tasks";
  std::map<std::string, std::set<std::string>> planned;
  Collect(first.body, &planned);
  for (const Json& token : first.body["plan-tasks"]) {
    Reply page = FetchTasks("paged", token);
    ASSERT_EQ(page.status, 200) << page.body.dump();
    EXPECT_FALSE(page.body.contains("status"));
    Collect(page.body, &planned);
  }
  EXPECT_EQ(planned, LibraryPlan("paged"));
  int with_deletes = 0;
  for (const auto& [file, deletes] : planned) with_deletes += deletes.empty() ? 0 : 1;
  EXPECT_EQ(with_deletes, 1);

  // A retried fetch gets the same page; another table's path, a made-up task and a bad body do not.
  const Json token = first.body["plan-tasks"][0];
  EXPECT_EQ(FetchTasks("paged", token).status, 200);
  MakeTable("other", 1, false);
  EXPECT_EQ(ErrorType(FetchTasks("other", token)), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(FetchTasks("paged", "nope")), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(FetchTasks("paged", token.get<std::string>() + "9")), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/paged/tasks", Json{{"plan-task", 3}})), "BadRequestException");
  // Cancelling frees the pages: the tasks are gone, and the plan reports "cancelled".
  const std::string id = first.body["plan-id"];
  EXPECT_EQ(Delete(plan + "/" + id).status, 204);
  EXPECT_EQ(ErrorType(FetchTasks("paged", token)), "NoSuchPlanTaskException");
  EXPECT_EQ(Get(plan + "/" + id).body["status"], "cancelled");
  EXPECT_EQ(ErrorType(Delete(plan + "/no-such-plan")), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(Get("/v1/namespaces/base/tables/other/plan/" + id)), "NoSuchPlanIdException");

  // min-rows-requested: planning may stop once that many rows surely come back.
  Reply few = Post(plan, Json{{"min-rows-requested", 15}});
  ASSERT_EQ(few.status, 200);
  size_t few_tasks = few.body["file-scan-tasks"].size() + 3 * few.body.value("plan-tasks", Json::array()).size();
  EXPECT_LT(few_tasks, 8u);
}

// Issue 35: behind a load balancer, the calls of one plan land on any server. A plan id sealed
// under the ring the servers share carries what the plan is made from; a server that does not
// hold the plan makes it again from the same metadata file, cut into the same pages (the page
// size travels in the id), so its plan tasks and result are those of the server that planned it.
TEST_F(RestPlansEventsTest, PlanIdsAndPlanTasksWorkOnEveryServerOfTheRing) {
  auto ring = io::Sealer::FromKeys({std::string(32, 'k')});
  ASSERT_TRUE(ring.ok());
  RestOptions options;
  options.sealer = *ring;
  options.plan_page_tasks = 3;
  options.plan_async_manifests = 0;
  Start(options);
  MakeTable("paged", 8, true);
  MakeTable("big", 6, false);
  // Two more servers of the ring, configured apart (pages of 5, background from 3 manifests),
  // and one holding another key; the second trusts this host as a proxy.
  auto start = [&](RestOptions o) {
    o.port = 0;
    auto server = RestServer::Start(*catalog_, *io_, o);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(*server) : nullptr;
  };
  RestOptions other = options;
  other.plan_page_tasks = 5;
  other.plan_async_manifests = 3;
  other.trusted_proxies = {"127.0.0.1"};
  auto b = start(other);
  auto c = start(other);
  RestOptions foreign = options;
  foreign.sealer = io::Sealer::Ephemeral();
  auto d = start(foreign);
  ASSERT_TRUE(b && c && d);
  auto call = [](RestServer& server, const std::string& method, const std::string& path, const Json* body = nullptr,
                 httplib::Headers headers = {}) {
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(60, 0);
    if (method == "GET") return Of(client.Get(path, headers));
    if (method == "DELETE") return Of(client.Delete(path, headers));
    return Of(client.Post(path, headers, body->dump(), "application/json"));
  };
  auto tasks_on = [&](RestServer& server, const std::string& table, const Json& token, httplib::Headers headers = {}) {
    const Json body{{"plan-task", token}};
    return call(server, "POST", "/v1/namespaces/base/tables/" + table + "/tasks", &body, std::move(headers));
  };

  const std::string plan = "/v1/namespaces/base/tables/paged/plan";
  Reply first = Post(plan, Json::object());
  ASSERT_EQ(first.status, 200) << first.body.dump();
  ASSERT_EQ(first.body["plan-tasks"].size(), 2u);
  const std::string id = first.body["plan-id"];
  const auto expected = LibraryPlan("paged");
  // A commit after planning changes nothing of the plan: it stays that of its metadata file.
  auto table = LoadTable(Ident("paged"));
  ASSERT_TRUE(table->Append({"SELECT 999 AS id, 'us' AS region", nullptr}).ok());

  // Every plan task on the second server, the result on the third: the same plan.
  std::map<std::string, std::set<std::string>> planned;
  Collect(first.body, &planned);
  for (const Json& token : first.body["plan-tasks"]) {
    Reply page = tasks_on(*b, "paged", token);
    ASSERT_EQ(page.status, 200) << page.body.dump();
    Collect(page.body, &planned);
  }
  EXPECT_EQ(planned, expected);
  // The third server makes plans of 3 manifests or more in the background: it answers
  // "submitted" until it has made this one again.
  auto poll = [&](RestServer& server, const std::string& path) {
    Reply r;
    for (int i = 0; i < 1000; ++i) {
      r = call(server, "GET", path);
      if (r.status != 200 || r.body["status"] != "submitted") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return r;
  };
  Reply result = poll(*c, plan + "/" + id);
  ASSERT_EQ(result.status, 200) << result.body.dump();
  EXPECT_EQ(result.body["status"], "completed");
  EXPECT_EQ(result.body["plan-tasks"], first.body["plan-tasks"]);
  EXPECT_EQ(result.body["file-scan-tasks"], first.body["file-scan-tasks"]);

  // Refused alike everywhere: another client (forwarded by a trusted proxy), another table, a
  // changed id, a server of another ring.
  const httplib::Headers someone_else{{"X-Forwarded-For", "203.0.113.7"}};
  EXPECT_EQ(ErrorType(tasks_on(*b, "paged", first.body["plan-tasks"][0], someone_else)), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(call(*b, "GET", plan + "/" + id, nullptr, someone_else)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(call(*b, "GET", "/v1/namespaces/base/tables/big/plan/" + id)), "NoSuchPlanIdException");
  std::string changed = id;
  changed[changed.size() / 2] = changed[changed.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_EQ(ErrorType(call(*b, "GET", plan + "/" + changed)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(call(*d, "GET", plan + "/" + id)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(tasks_on(*d, "paged", first.body["plan-tasks"][1])), "NoSuchPlanTaskException");
  EXPECT_EQ(id.find(io::EncodeBase64Url("paged")), std::string::npos) << "nothing of the request shows in the id";

  // A cancel on a server that did not plan it holds there: its tasks are not made again there.
  EXPECT_EQ(call(*d, "DELETE", plan + "/" + id).status, 404);
  Reply cancel = call(*c, "DELETE", plan + "/" + id);
  EXPECT_EQ(cancel.status, 204);
  EXPECT_EQ(call(*c, "GET", plan + "/" + id).body["status"], "cancelled");
  EXPECT_EQ(ErrorType(tasks_on(*c, "paged", first.body["plan-tasks"][0])), "NoSuchPlanTaskException");

  // A plan another server runs in the background: polled on the second server, which makes it
  // again (itself in the background, by its own bound) until it completes there.
  const std::string big = "/v1/namespaces/base/tables/big/plan";
  const Json no_filter = Json::object();
  Reply big_first = call(*c, "POST", big, &no_filter);
  ASSERT_EQ(big_first.status, 200) << big_first.body.dump();
  ASSERT_EQ(big_first.body["status"], "submitted");
  const std::string big_id = big_first.body["plan-id"];
  Reply done = poll(*b, big + "/" + big_id);
  ASSERT_EQ(done.status, 200) << done.body.dump();
  ASSERT_EQ(done.body["status"], "completed");
  std::map<std::string, std::set<std::string>> big_planned;
  Collect(done.body, &big_planned);
  // Its tasks, as the second server listed them, fetched where the plan began (which may still
  // be making it: the fetch waits for it).
  for (const Json& token : done.body.value("plan-tasks", Json::array())) {
    Reply page = tasks_on(*c, "big", token);
    ASSERT_EQ(page.status, 200) << page.body.dump();
    Collect(page.body, &big_planned);
  }
  EXPECT_EQ(big_planned, LibraryPlan("big"));
}

TEST_F(RestPlansEventsTest, PlansOverManyManifestsRunInTheBackground) {
  RestOptions options;
  options.plan_page_tasks = 4;
  options.plan_async_manifests = 3;
  Start(options);
  MakeTable("big", 6, false);
  const std::string plan = "/v1/namespaces/base/tables/big/plan";
  Reply submitted = Post(plan, Json::object());
  ASSERT_EQ(submitted.status, 200) << submitted.body.dump();
  ASSERT_EQ(submitted.body["status"], "submitted");
  EXPECT_FALSE(submitted.body.contains("file-scan-tasks")) << "no tasks with a submitted status";
  const std::string id = submitted.body["plan-id"];
  Reply result;
  skade::testing::PollUntil([&] {
    result = Get(plan + "/" + id);
    return result.status != 200 || result.body["status"] != "submitted";
  }, std::chrono::seconds(20), std::chrono::milliseconds(10));
  ASSERT_EQ(result.status, 200) << result.body.dump();
  ASSERT_EQ(result.body["status"], "completed") << result.body.dump();
  EXPECT_FALSE(result.body.contains("plan-id"));
  std::map<std::string, std::set<std::string>> planned;
  Collect(result.body, &planned);
  for (const Json& token : result.body["plan-tasks"]) Collect(FetchTasks("big", token).body, &planned);
  EXPECT_EQ(planned, LibraryPlan("big"));

  // A plan over a table that is not there fails before it is submitted; one over a small
  // table completes at once.
  EXPECT_EQ(ErrorType(Post("/v1/namespaces/base/tables/nope/plan", Json::object())), "NoSuchTableException");
  MakeTable("small", 1, false);
  EXPECT_EQ(Post("/v1/namespaces/base/tables/small/plan", Json::object()).body["status"], "completed");
}

// A plan id is its owner's capability (like a Flight SQL handle), and one client that never
// fetches its plans fills only its own share of the store, never everyone's.
TEST_F(RestPlansEventsTest, PlansBelongToTheirPrincipalAndOneClientCannotFillTheStore) {
  RestOptions options;
  options.plan_page_tasks = 1;
  options.plan_async_manifests = 0;
  options.static_tokens = {"token-a", "token-b"};
  Start(options);
  token_ = "token-a";
  MakeTable("paged", 3, false);
  const std::string plan = "/v1/namespaces/base/tables/paged/plan";
  Reply mine = Post(plan, Json::object());
  ASSERT_EQ(mine.status, 200) << mine.body.dump();
  const std::string id = mine.body["plan-id"];
  const Json task = mine.body["plan-tasks"][0];
  // Client A fills its share with plans it never fetches.
  int refused = 0;
  for (int i = 0; i < 40; ++i) refused += Post(plan, Json::object()).status == 503 ? 1 : 0;
  EXPECT_GT(refused, 0) << "one client's plans are bounded";
  token_ = "token-b";
  EXPECT_EQ(ErrorType(Get(plan + "/" + id)), "NoSuchPlanIdException");
  EXPECT_EQ(ErrorType(FetchTasks("paged", task)), "NoSuchPlanTaskException");
  EXPECT_EQ(ErrorType(Delete(plan + "/" + id)), "NoSuchPlanIdException");
  Reply theirs = Post(plan, Json::object());
  EXPECT_EQ(theirs.status, 200) << "another client still plans: " << theirs.body.dump();
  token_ = "token-a";
  EXPECT_EQ(FetchTasks("paged", task).status, 200);
  EXPECT_EQ(Delete(plan + "/" + id).status, 204);
}

// Behind a trusted balancer, a server without authentication tells clients apart by the address
// the balancer forwards; from any other peer the header is ignored.
TEST_F(RestPlansEventsTest, PlansBelongToTheForwardedClientBehindATrustedProxy) {
  for (bool trusted : {true, false}) {
    SCOPED_TRACE(trusted ? "trusted proxy" : "untrusted peer");
    RestOptions options;
    options.plan_page_tasks = 1;
    options.plan_async_manifests = 0;
    if (trusted) options.trusted_proxies = {"127.0.0.1"};
    Start(options);
    const std::string table = trusted ? "fwd_a" : "fwd_b";
    MakeTable(table, 3, false);
    const std::string plan = "/v1/namespaces/base/tables/" + table + "/plan";
    auto as = [&](const char* address) {
      return httplib::Headers{{"X-Forwarded-For", std::string("203.0.113.1, ") + address}};
    };
    auto mine = Of(client_->Post(plan, as("198.51.100.1"), "{}", "application/json"));
    ASSERT_EQ(mine.status, 200) << mine.body.dump();
    const std::string id = mine.body["plan-id"];
    auto other = Of(client_->Get(plan + "/" + id, as("198.51.100.2")));
    auto same = Of(client_->Get(plan + "/" + id, as("198.51.100.1")));
    EXPECT_EQ(same.status, 200);
    if (trusted) {
      EXPECT_EQ(ErrorType(other), "NoSuchPlanIdException") << "another client behind the balancer";
    } else {
      EXPECT_EQ(other.status, 200) << "the header of an untrusted peer is ignored: one client";
    }
    server_.reset();
  }
}

TEST_F(RestPlansEventsTest, IncrementalPlansListTheFilesAppendedInTheRange) {
  Start();
  MakeTable("inc", 4, false);
  auto state = catalog_->LoadTable(Ident("inc"));
  ASSERT_TRUE(state.ok());
  const auto& snaps = state->metadata->snapshots;
  ASSERT_EQ(snaps.size(), 4u);
  const std::string plan = "/v1/namespaces/base/tables/inc/plan";
  Reply two = Post(plan, Json{{"start-snapshot-id", snaps[1].snapshot_id}, {"end-snapshot-id", snaps[3].snapshot_id}});
  ASSERT_EQ(two.status, 200) << two.body.dump();
  ASSERT_EQ(two.body["file-scan-tasks"].size(), 2u) << "the files of the third and fourth appends";
  int64_t rows = 0;
  for (const Json& t : two.body["file-scan-tasks"]) rows += t["data-file"]["record-count"].get<int64_t>();
  EXPECT_EQ(rows, 20);
  // With a filter: the metrics of the fourth append's file (ids 30…39) rule it out.
  Reply filtered = Post(plan, Json{{"start-snapshot-id", snaps[1].snapshot_id},
                                   {"end-snapshot-id", snaps[3].snapshot_id},
                                   {"filter", {{"type", "lt"}, {"term", "id"}, {"value", 25}}}});
  ASSERT_EQ(filtered.status, 200);
  EXPECT_EQ(filtered.body["file-scan-tasks"].size(), 1u);
  EXPECT_EQ(Post(plan, Json{{"start-snapshot-id", snaps[3].snapshot_id}, {"end-snapshot-id", snaps[3].snapshot_id}})
                .body["file-scan-tasks"]
                .size(),
            0u);
  // Not an ancestor, half a range, both kinds at once: 400.
  EXPECT_EQ(ErrorType(Post(plan, Json{{"start-snapshot-id", snaps[3].snapshot_id}, {"end-snapshot-id", snaps[1].snapshot_id}})),
            "BadRequestException");
  // A delete in the range adds nothing (IncrementalAppendScan skips what is not an append).
  auto table = LoadTable(Ident("inc"));
  ASSERT_TRUE(table->DeleteWhere(testing::Where("id = 1")).ok());
  state = catalog_->LoadTable(Ident("inc"));
  Reply over_delete = Post(plan, Json{{"start-snapshot-id", snaps[0].snapshot_id},
                                      {"end-snapshot-id", *state->metadata->current_snapshot_id}});
  ASSERT_EQ(over_delete.status, 200) << over_delete.body.dump();
  EXPECT_EQ(over_delete.body["file-scan-tasks"].size(), 3u) << "the second to fourth appends' files";
  EXPECT_EQ(ErrorType(Post(plan, Json{{"start-snapshot-id", snaps[0].snapshot_id}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post(plan, Json{{"snapshot-id", snaps[0].snapshot_id},
                                      {"start-snapshot-id", snaps[0].snapshot_id},
                                      {"end-snapshot-id", snaps[1].snapshot_id}})),
            "BadRequestException");
}

TEST_F(RestPlansEventsTest, TheEventsEndpointPagesThroughEveryCommitInOrder) {
  Start();
  ASSERT_EQ(CreateTable("base", "facts").status, 200);
  auto state = catalog_->LoadTable(Ident("facts"));
  ASSERT_EQ(Post("/v1/namespaces/base/tables/facts", AppendCommit(*state->metadata, 0, 5, "e1")).status, 200);
  ASSERT_EQ(CreateTable("base", "dims").status, 200);
  // A multi-table commit: one request, two events.
  auto facts = catalog_->LoadTable(Ident("facts"));
  auto dims = catalog_->LoadTable(Ident("dims"));
  Json a = AppendCommit(*facts->metadata, 10, 2, "t1"), b = AppendCommit(*dims->metadata, 0, 3, "t2");
  a["identifier"] = {{"namespace", {"base"}}, {"name", "facts"}};
  b["identifier"] = {{"namespace", {"base"}}, {"name", "dims"}};
  ASSERT_EQ(Post("/v1/transactions/commit", Json{{"table-changes", {a, b}}}).status, 204);
  ASSERT_EQ(Delete("/v1/namespaces/base/tables/dims").status, 204);
  auto latest = catalog_->LatestCommitSeq();
  ASSERT_TRUE(latest.ok());

  // Pages of two until the log ends; the token resumes exactly after the last event.
  std::vector<Json> events;
  Json token = nullptr;
  for (int i = 0; i < 10; ++i) {
    Json req{{"page-size", 2}};
    if (!token.is_null()) req["continuation-token"] = token;
    Reply page = Post("/v1/events", req);
    ASSERT_EQ(page.status, 200) << page.body.dump();
    ASSERT_TRUE(page.body["continuation-token"].is_string());
    EXPECT_TRUE(page.body["highest-processed-timestamp-ms"].is_number_integer());
    if (page.body["events"].empty()) break;
    for (const Json& e : page.body["events"]) events.push_back(e);
    token = page.body["continuation-token"];
  }
  ASSERT_EQ(events.size(), static_cast<size_t>(*latest));
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["event-id"], std::to_string(i + 1)) << "dense, in commit order";
    types.push_back(events[i]["operation"]["operation-type"]);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"create-table", "update-table", "create-table", "update-table",
                                             "update-table", "drop-table"}));
  // The append's event names the snapshot it added, and the table's uuid.
  const Json& append = events[1]["operation"];
  EXPECT_EQ(append["identifier"], Json::parse(R"({"namespace":["base"],"name":"facts"})"));
  EXPECT_EQ(append["table-uuid"], state->metadata->table_uuid);
  ASSERT_EQ(append["updates"].size(), 2u);
  EXPECT_EQ(append["updates"][0]["action"], "add-snapshot");
  EXPECT_EQ(append["updates"][0]["snapshot"]["snapshot-id"], events[1]["x-skade-commit"]["snapshot-id"]);
  EXPECT_EQ(events[1]["x-skade-commit"]["added-records"], 5);
  // The transaction's two events share a request and count it.
  EXPECT_EQ(events[3]["request-id"], events[4]["request-id"]);
  EXPECT_EQ(events[3]["request-event-count"], 2);
  EXPECT_EQ(events[1]["request-event-count"], 1);
  // Once at the end, the token stays put until something new happens.
  Reply tail = Post("/v1/events", Json{{"continuation-token", token}});
  EXPECT_TRUE(tail.body["events"].empty());
  EXPECT_EQ(tail.body["continuation-token"], token);

  // Filters: by operation and by table (a namespace selects its tables).
  Reply creates = Post("/v1/events", Json{{"operation-types", {"create-table"}}});
  EXPECT_EQ(creates.body["events"].size(), 2u);
  Reply of_dims = Post("/v1/events", Json{{"catalog-objects-by-name", Json::parse(R"([["base", "dims"]])")}});
  EXPECT_EQ(of_dims.body["events"].size(), 3u);
  EXPECT_EQ(Post("/v1/events", Json{{"catalog-objects-by-name", Json::parse(R"([["base"]])")}}).body["events"].size(), 6u);
  EXPECT_TRUE(Post("/v1/events", Json{{"object-types", {"namespace"}}}).body["events"].empty());
  EXPECT_EQ(ErrorType(Post("/v1/events", Json{{"continuation-token", "x1"}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/events", Json{{"page-size", 0}})), "BadRequestException");
  EXPECT_EQ(ErrorType(Post("/v1/events", Json{{"catalog-objects-by-id", {"u"}}})), "UnsupportedOperationException");
  EXPECT_EQ(ErrorType(Post("/v1/events", std::string("{"))), "BadRequestException");
}

// The ids of the commit frames in a Server-Sent Events text.
std::vector<std::string> Ids(const std::string& sse) {
  std::vector<std::string> ids;
  for (size_t pos = 0; (pos = sse.find("id: ", pos)) != std::string::npos; pos += 4) {
    ids.push_back(sse.substr(pos + 4, sse.find('\n', pos) - pos - 4));
  }
  return ids;
}

// Reads a Server-Sent Events stream on its own thread until `frames` frames arrived.
class SseReader {
 public:
  SseReader(int port, std::string path, httplib::Headers headers, size_t frames) {
    thread_ = std::thread([this, port, path, headers, frames] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(30, 0);
      auto r = client.Get(path.c_str(), headers, [&](const char* data, size_t len) {
        std::lock_guard<std::mutex> lock(mu_);
        text_.append(data, len);
        return !stop_ && Ids(text_).size() < frames;
      });
      std::lock_guard<std::mutex> lock(mu_);
      status_ = r ? r->status : 0;
      done_ = true;
    });
  }
  // A reader still waiting (a failed test) hangs up at the server's next heartbeat.
  ~SseReader() {
    stop_ = true;
    thread_.join();
  }
  bool WaitDone(std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (done_) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::string text_;
  int status_ = 0;
  bool done_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(RestPlansEventsTest, TheServerSentEventsStreamReplaysThenTailsLive) {
  events::Bus bus;
  catalog_->SetCommitListener([&](const catalog::CommitLogEntry& e) { bus.Publish(events::CommitEvent::FromLogEntry(e)); });
  RestOptions options;
  options.max_event_streams = 2;
  Start(options, &bus);
  ASSERT_EQ(CreateTable("base", "live").status, 200);  // commit 1
  ASSERT_EQ(CreateTable("base", "quiet").status, 200);  // commit 2
  {
    // From the start: the two creates replayed from the log, then one live append.
    SseReader reader(server_->port(), "/v1/events/stream?after=0&tables=base.live", Headers(), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto state = catalog_->LoadTable(Ident("live"));
    ASSERT_EQ(Post("/v1/namespaces/base/tables/live", AppendCommit(*state->metadata, 0, 4, "s1")).status, 200);
    ASSERT_TRUE(reader.WaitDone(std::chrono::seconds(20)));
    const std::string text = reader.text();
    EXPECT_EQ(Ids(text), (std::vector<std::string>{"1", "3"})) << "only base.live, replayed then live:\n" << text;
    EXPECT_THAT(text, HasSubstr("event: commit\ndata: {\"commit-seq\":3,"));
    EXPECT_THAT(text, HasSubstr("\"added-records\":4"));
  }
  {
    // An EventSource reconnecting sends Last-Event-ID: the stream resumes after it.
    SseReader reader(server_->port(), "/v1/events/stream", {{"Last-Event-ID", "1"}}, 2);
    ASSERT_TRUE(reader.WaitDone(std::chrono::seconds(20)));
    EXPECT_EQ(Ids(reader.text()), (std::vector<std::string>{"2", "3"}));
  }
  // The server notices the readers above went away (at its next heartbeat) and frees their
  // streams; past the limit a stream is refused with 503; a bad cursor is 400.
  ASSERT_TRUE(skade::testing::PollUntil([&] { return server_->stats().event_streams == 0; },
                                         std::chrono::seconds(20), std::chrono::milliseconds(10)));
  {
    // From the head as it is now: a stream "from now" counts itself before it reads the head,
    // so the commit below could land before a slow one's start and never reach it.
    Result<int64_t> head = catalog_->LatestCommitSeq();
    ASSERT_TRUE(head.ok());
    const std::string from_head = "/v1/events/stream?after=" + std::to_string(*head);
    SseReader one(server_->port(), from_head, Headers(), 1);
    SseReader two(server_->port(), from_head, Headers(), 1);
    ASSERT_TRUE(skade::testing::PollUntil([&] { return server_->stats().event_streams == 2; },
                                          std::chrono::seconds(20), std::chrono::milliseconds(10)));
    EXPECT_EQ(ErrorType(Get("/v1/events/stream")), "ServiceUnavailableException");
    EXPECT_EQ(Post("/v1/namespaces", Json{{"namespace", {"more"}}}).status, 200)
        << "catalog calls are still served while streams are open";
    ASSERT_EQ(CreateTable("base", "third").status, 200);  // ends both streams (one frame each)
    EXPECT_TRUE(one.WaitDone(std::chrono::seconds(20)));
    EXPECT_TRUE(two.WaitDone(std::chrono::seconds(20)));
  }
  EXPECT_EQ(ErrorType(Get("/v1/events/stream?after=abc")), "BadRequestException");
  catalog_->SetCommitListener({});
  server_->Shutdown();  // before the bus its streams read goes away
}

TEST_F(RestPlansEventsTest, WithoutABusTheStreamIsUnsupported) {
  Start();
  EXPECT_EQ(ErrorType(Get("/v1/events/stream")), "UnsupportedOperationException");
  EXPECT_EQ(Post("/v1/events", Json::object()).status, 200);
}

}  // namespace
}  // namespace skade::rest
