// Issue 34, item 1: the REST catalog re-bases an append refused only because other commits
// moved its branch (rest/append_rebase.h): the client's snapshot lands on the branch's head
// with the next sequence number, a manifest list of its new manifests and the head's, and
// totals counted from the head; anything not provably safe keeps its 409.
#include "tests/rest/rest_fixture.h"

namespace skade::rest {
namespace {

class RestRebaseTest : public RestServerTest {
 protected:
  const std::string kPath = "/v1/namespaces/base/tables/facts";

  // facts with two snapshots appended by the library (their summaries carry totals).
  void CreateWithHistory(RestOptions options = {}) {
    Start(options);
    ASSERT_EQ(CreateTable("base", "facts").status, 200);
    auto t = LoadTable(Ident("facts"));
    ASSERT_TRUE(t);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(t->Append({"SELECT range + " + std::to_string(i * 10) + " AS id, 'eu' AS region FROM range(10)",
                             nullptr})
                      .ok());
    }
  }

  iceberg::TableMetadata Current() {
    auto state = catalog_->LoadTable(Ident("facts"));
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
  auto t = LoadTable(Ident("facts"));
  ASSERT_TRUE(t->Append({"SELECT range + 50 AS id, 'us' AS region FROM range(7)", nullptr}).ok());
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

TEST_F(RestRebaseTest, RebasingOffAnswersTheConflict) {
  RestOptions options;
  options.rebase_appends = false;
  CreateWithHistory(options);
  const iceberg::TableMetadata stale = Current();
  auto t = LoadTable(Ident("facts"));
  ASSERT_TRUE(t->Append({"SELECT 99 AS id, 'us' AS region", nullptr}).ok());
  EXPECT_EQ(ErrorType(Post(kPath, AppendCommit(stale, 100, 2, "late"))), "CommitFailedException");
  EXPECT_EQ(Count("base", "facts"), "21");
}

}  // namespace
}  // namespace skade::rest
