// Issue 34, item 1: the REST catalog re-bases a commit refused only because other commits
// moved its branch (rest/commit_rebase.h): the client's append lands on the branch's head with
// the next sequence number, a manifest list of its new manifests and the head's, totals counted
// from the head and, in v3, row ids from the table's next-row-id; blind property and statistics
// updates ride along or land alone unless another commit changed the same key since the
// client's base; each table of a transactions/commit likewise; anything not provably safe
// keeps its 409.
#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

class RestRebaseTest : public RestServerTest {
 protected:
  const std::string kPath = "/v1/namespaces/base/tables/facts";

  // `name` (facts by default) with two snapshots appended by the library (their summaries
  // carry totals), in format `version`.
  void CreateWithHistory(RestOptions options = {}, int version = 2, const std::string& name = "facts") {
    if (!server_) Start(options);
    Json body{{"name", name}, {"schema", Schema()}, {"properties", {{"format-version", std::to_string(version)}}}};
    ASSERT_EQ(Post("/v1/namespaces/base/tables", body).status, 200);
    auto t = LoadTable(Ident(name));
    ASSERT_TRUE(t);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(t->Append({"SELECT range + " + std::to_string(i * 10) + " AS id, 'eu' AS region FROM range(10)",
                             nullptr})
                      .ok());
    }
  }

  iceberg::TableMetadata Current(const std::string& name = "facts") {
    auto state = catalog_->LoadTable(Ident(name));
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return *state->metadata;
  }

  // The add-snapshot update of a commit body.
  static Json& Snapshot(Json& body) {
    for (Json& u : body["updates"]) {
      if (u["action"] == "add-snapshot") return u["snapshot"];
    }
    ADD_FAILURE() << "no add-snapshot in " << body.dump();
    static Json none;
    return none;
  }

  // Another writer's commit of `updates` on the table's current state (no requirements).
  void CommitMeanwhile(std::vector<iceberg::TableUpdate> updates, const std::string& name = "facts") {
    catalog::TableCommit commit;
    commit.ident = Ident(name);
    commit.updates = std::move(updates);
    auto done = catalog_->CommitTable(commit);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
  }
  void AppendMeanwhile(const std::string& name = "facts", int rows = 7) {
    auto t = LoadTable(Ident(name));
    ASSERT_TRUE(t);
    ASSERT_TRUE(
        t->Append({"SELECT range + 50 AS id, 'us' AS region FROM range(" + std::to_string(rows) + ")", nullptr}).ok());
  }

  int64_t ManifestCount(const std::string& list) {
    auto manifests = iceberg::ReadManifestList(*io_, list);
    EXPECT_TRUE(manifests.ok()) << manifests.status().ToString();
    return manifests.ok() ? static_cast<int64_t>(manifests->size()) : -1;
  }
};

TEST_F(RestRebaseTest, AStaleAppendLandsOnTheHeadWithTheNextSequenceNumber) {
  CreateWithHistory();
  const iceberg::TableMetadata stale = Current();
  // The client's append, made on `stale`, with the totals it counted there.
  Json body = AppendCommit(stale, 100, 4, "late");
  Json& snapshot = Snapshot(body);
  snapshot["summary"]["total-records"] = std::to_string(20 + 4);
  snapshot["summary"]["total-data-files"] = "3";
  const int64_t id = snapshot["snapshot-id"];
  // Meanwhile another writer appends: main moved.
  AppendMeanwhile();
  const iceberg::TableMetadata head = Current();
  ASSERT_NE(head.current_snapshot_id, stale.current_snapshot_id);

  Reply r = Post(kPath, body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const iceberg::TableMetadata after = Current();
  ASSERT_EQ(after.current_snapshot_id, std::optional<int64_t>(id)) << "the client's snapshot id is kept";
  const iceberg::Snapshot* landed = after.SnapshotById(id);
  ASSERT_NE(landed, nullptr);
  EXPECT_EQ(landed->parent_snapshot_id, head.current_snapshot_id);
  EXPECT_EQ(landed->sequence_number, head.last_sequence_number + 1);
  EXPECT_EQ(after.last_sequence_number, head.last_sequence_number + 1);
  // Totals from the head (27 rows, its files), not from the client's stale view.
  EXPECT_EQ(landed->SummaryValue("total-records"), std::optional<std::string>("31"));
  EXPECT_EQ(landed->SummaryValue("added-records"), std::optional<std::string>("4"));
  EXPECT_EQ(ManifestCount(landed->manifest_list), ManifestCount(head.CurrentSnapshot()->manifest_list) + 1);
  EXPECT_EQ(r.body["metadata"]["current-snapshot-id"], id) << "the response carries the rebased metadata";
  EXPECT_EQ(Count("base", "facts"), "31");
  EXPECT_EQ(server_->stats().rebased, 1);
  EXPECT_EQ(server_->stats().conflicts, 0);
  // The rows of every append, each once.
  auto table = LoadTable(Ident("facts"));
  EXPECT_EQ(Rows(*table, "SELECT count(DISTINCT id), min(id), max(id) FROM t"),
            (std::vector<std::vector<std::string>>{{"31", "0", "103"}}));
}

TEST_F(RestRebaseTest, WhatIsNotProvablySafeKeepsItsConflict) {
  CreateWithHistory();
  const iceberg::TableMetadata stale = Current();
  auto t = LoadTable(Ident("facts"));
  ASSERT_TRUE(t->Append({"SELECT 99 AS id, 'us' AS region", nullptr}).ok());
  const iceberg::TableMetadata head = Current();

  // Not an append.
  Json overwrite = AppendCommit(stale, 100, 2, "overwrite");
  Snapshot(overwrite)["summary"]["operation"] = "overwrite";
  EXPECT_EQ(ErrorType(Post(kPath, overwrite)), "CommitFailedException");
  // Another requirement fails too.
  Json schema = AppendCommit(stale, 100, 2, "schema");
  schema["requirements"].push_back(Json{{"type", "assert-current-schema-id"}, {"current-schema-id", 7}});
  EXPECT_EQ(ErrorType(Post(kPath, schema)), "CommitFailedException");
  // A list that does not hold its asserted parent's manifests (it would drop or add data the
  // parent did not have): made on the first snapshot, claiming the second as its parent.
  const iceberg::Snapshot* first = nullptr;
  for (const auto& s : stale.snapshots) {
    if (!s.parent_snapshot_id) first = &s;
  }
  ASSERT_NE(first, nullptr);
  iceberg::TableMetadata older = stale;
  older.current_snapshot_id = first->snapshot_id;
  older.refs["main"].snapshot_id = first->snapshot_id;
  Json mismatched = AppendCommit(older, 100, 2, "mismatched");
  Snapshot(mismatched)["parent-snapshot-id"] = *stale.current_snapshot_id;
  for (Json& req : mismatched["requirements"]) {
    if (req["type"] == "assert-ref-snapshot-id") req["snapshot-id"] = *stale.current_snapshot_id;
  }
  EXPECT_EQ(ErrorType(Post(kPath, mismatched)), "CommitFailedException");
  // Main moved back (not forward) past the asserted snapshot.
  Json rolled_back_body = AppendCommit(head, 100, 2, "rolled");
  Reply back = Post(kPath, Json{{"requirements", Json::array()},
                                {"updates", Json::array({Json{{"action", "set-snapshot-ref"},
                                                              {"ref-name", "main"},
                                                              {"type", "branch"},
                                                              {"snapshot-id", *stale.current_snapshot_id}}})}});
  ASSERT_EQ(back.status, 200) << back.body.dump();
  EXPECT_EQ(ErrorType(Post(kPath, rolled_back_body)), "CommitFailedException");

  EXPECT_EQ(server_->stats().rebased, 0);
  EXPECT_EQ(Current().current_snapshot_id, stale.current_snapshot_id) << "nothing landed";
  EXPECT_EQ(Count("base", "facts"), "20");
}

TEST_F(RestRebaseTest, AV3AppendTakesRowIdsFromTheTablesNextRowId) {
  CreateWithHistory({}, 3);
  const iceberg::TableMetadata stale = Current();
  ASSERT_EQ(stale.format_version, 3);
  ASSERT_EQ(stale.next_row_id, std::optional<int64_t>(20));
  Json body = AppendCommit(stale, 100, 4, "v3");
  ASSERT_EQ(Snapshot(body)["first-row-id"], 20) << "the client counted ids from its own base";
  const int64_t id = Snapshot(body)["snapshot-id"];
  AppendMeanwhile();  // takes ids 20..26
  const iceberg::TableMetadata head = Current();
  ASSERT_EQ(head.next_row_id, std::optional<int64_t>(27));

  Reply r = Post(kPath, body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const iceberg::TableMetadata after = Current();
  const iceberg::Snapshot* landed = after.SnapshotById(id);
  ASSERT_NE(landed, nullptr);
  EXPECT_EQ(landed->first_row_id, std::optional<int64_t>(27));
  EXPECT_EQ(landed->added_rows, std::optional<int64_t>(4));
  EXPECT_EQ(after.next_row_id, std::optional<int64_t>(31));
  // The new manifest's ids follow the head's, none handed out twice.
  auto manifests = iceberg::ReadManifestList(*io_, landed->manifest_list);
  ASSERT_TRUE(manifests.ok()) << manifests.status().ToString();
  std::vector<std::pair<int64_t, int64_t>> ranges;  // first id, rows
  for (const auto& m : *manifests) {
    ASSERT_TRUE(m.first_row_id) << m.manifest_path;
    ranges.emplace_back(*m.first_row_id, m.added_rows_count.value_or(0) + m.existing_rows_count.value_or(0));
    if (m.added_snapshot_id == id) {
      EXPECT_EQ(*m.first_row_id, 27);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first) << "row ids overlap";
  }
  EXPECT_EQ(Count("base", "facts"), "31");
  EXPECT_EQ(server_->stats().rebased, 1);
}

TEST_F(RestRebaseTest, BlindPropertyAndStatisticsUpdatesRideAlongOrLandAlone) {
  CreateWithHistory();
  const iceberg::TableMetadata stale = Current();
  // An append carrying a property of its own, while another writer appended and set another key.
  Json body = AppendCommit(stale, 100, 4, "props");
  body["updates"].push_back(Json{{"action", "set-properties"}, {"updates", {{"owner", "late"}}}});
  body["updates"].push_back(Json{{"action", "remove-properties"}, {"removals", {"gone"}}});
  AppendMeanwhile();
  CommitMeanwhile({iceberg::TableUpdate::SetProperties({{"other", "x"}})});
  Reply r = Post(kPath, body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  iceberg::TableMetadata after = Current();
  EXPECT_EQ(after.properties["owner"], "late");
  EXPECT_EQ(after.properties["other"], "x");
  EXPECT_EQ(Count("base", "facts"), "31");

  // Properties and statistics alone, asserting a branch head that moved since.
  const int64_t stale_head = *after.current_snapshot_id;
  AppendMeanwhile();
  Json stats{{"snapshot-id", stale_head},
             {"statistics-path", after.location + "/metadata/stats-" + std::to_string(stale_head) + ".puffin"},
             {"file-size-in-bytes", 10},
             {"file-footer-size-in-bytes", 4},
             {"blob-metadata", Json::array()}};
  Json alone{{"requirements", Json::array({Json{{"type", "assert-ref-snapshot-id"}, {"ref", "main"}, {"snapshot-id", stale_head}}})},
             {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"comment", "nightly"}}}},
                                      Json{{"action", "set-statistics"}, {"snapshot-id", stale_head}, {"statistics", stats}}})}};
  Reply r2 = Post(kPath, alone);
  ASSERT_EQ(r2.status, 200) << r2.body.dump();
  after = Current();
  EXPECT_EQ(after.properties["comment"], "nightly");
  EXPECT_NE(after.statistics_json.find(std::to_string(stale_head)), std::string::npos) << after.statistics_json;
  EXPECT_EQ(server_->stats().rebased, 2);
  EXPECT_EQ(server_->stats().conflicts, 0);
}

TEST_F(RestRebaseTest, AKeyChangedSinceTheClientsBaseKeepsItsConflict) {
  CreateWithHistory();
  CommitMeanwhile({iceberg::TableUpdate::SetProperties({{"owner", "first"}, {"gone", "1"}})});
  const iceberg::TableMetadata stale = Current();
  // Another writer changes the key, then appends: main moved past the client's base.
  CommitMeanwhile({iceberg::TableUpdate::SetProperties({{"owner", "second"}})});
  CommitMeanwhile({iceberg::TableUpdate::RemoveProperties({"gone"})});
  AppendMeanwhile();

  Json set = AppendCommit(stale, 100, 4, "owner");
  set["updates"].push_back(Json{{"action", "set-properties"}, {"updates", {{"owner", "third"}}}});
  EXPECT_EQ(ErrorType(Post(kPath, set)), "CommitFailedException");
  Json remove{{"requirements", Json::array({Json{{"type", "assert-ref-snapshot-id"},
                                                 {"ref", "main"},
                                                 {"snapshot-id", *stale.current_snapshot_id}}})},
              {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"gone", "2"}}}}})}};
  EXPECT_EQ(ErrorType(Post(kPath, remove)), "CommitFailedException");
  // A key nobody touched since still lands.
  remove["updates"][0]["updates"] = {{"fresh", "1"}};
  EXPECT_EQ(Post(kPath, remove).status, 200);

  const iceberg::TableMetadata after = Current();
  EXPECT_EQ(after.properties.at("owner"), "second");
  EXPECT_EQ(after.properties.count("gone"), 0u);
  EXPECT_EQ(after.properties.at("fresh"), "1");
  EXPECT_EQ(Count("base", "facts"), "27") << "the refused append did not land";
  EXPECT_EQ(server_->stats().rebased, 1);
}

TEST_F(RestRebaseTest, ATransactionIsRebasedTableByTable) {
  CreateWithHistory();
  CreateWithHistory({}, 2, "dims");
  const iceberg::TableMetadata facts = Current("facts");
  const iceberg::TableMetadata dims = Current("dims");
  auto change = [](Json body, const std::string& name) {
    body["identifier"] = Json{{"namespace", {"base"}}, {"name", name}};
    return body;
  };
  Json tx{{"table-changes", Json::array({change(AppendCommit(facts, 100, 4, "tx-facts"), "facts"),
                                          change(AppendCommit(dims, 200, 3, "tx-dims"), "dims")})}};
  AppendMeanwhile("facts");  // only facts moved; dims' commit still holds
  Reply r = Post("/v1/transactions/commit", tx);
  ASSERT_EQ(r.status, 204) << r.body.dump();
  EXPECT_EQ(Count("base", "facts"), "31");
  EXPECT_EQ(Count("base", "dims"), "23");
  EXPECT_EQ(server_->stats().rebased, 1);

  // One table's commit cannot be re-based (an overwrite): the whole transaction keeps its 409.
  const iceberg::TableMetadata facts2 = Current("facts");
  const iceberg::TableMetadata dims2 = Current("dims");
  Json overwrite = AppendCommit(dims2, 300, 2, "tx-overwrite");
  Snapshot(overwrite)["summary"]["operation"] = "overwrite";
  Json tx2{{"table-changes", Json::array({change(AppendCommit(facts2, 400, 4, "tx-facts2"), "facts"),
                                           change(overwrite, "dims")})}};
  AppendMeanwhile("facts");
  AppendMeanwhile("dims");
  EXPECT_EQ(ErrorType(Post("/v1/transactions/commit", tx2)), "CommitFailedException");
  EXPECT_EQ(Count("base", "facts"), "38") << "nothing of the refused transaction landed";
  EXPECT_EQ(Count("base", "dims"), "30");
  EXPECT_EQ(server_->stats().rebased, 1);
}

TEST_F(RestRebaseTest, RebasingOffAnswersTheConflict) {
  RestOptions options;
  options.rebase_commits = false;
  CreateWithHistory(options);
  const iceberg::TableMetadata stale = Current();
  auto t = LoadTable(Ident("facts"));
  ASSERT_TRUE(t->Append({"SELECT 99 AS id, 'us' AS region", nullptr}).ok());
  EXPECT_EQ(ErrorType(Post(kPath, AppendCommit(stale, 100, 2, "late"))), "CommitFailedException");
  EXPECT_EQ(Count("base", "facts"), "21");
}

}  // namespace
}  // namespace skade::rest
