// The console's paged reads: the namespace tree as rows in any slice, a table's metadata without
// its history, its snapshots newest first a page at a time, and parameter errors.
#include "skade/console/table_pages.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/testing/lake_test.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;

class TablePagesTest : public testing::LakeTest {
 protected:
  Json Get(std::string_view path, std::map<std::string, std::string> query, int want_status = 200) {
    TablePages pages(*catalog_);
    auto answer = pages.Serve("GET", path, query);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return Json();
    EXPECT_EQ(answer->status, want_status) << answer->body;
    return Json::parse(answer->body);
  }
};

TEST_F(TablePagesTest, TreeRowsAreNamespacesEachFollowedByItsTablesThenItsChildren) {
  ASSERT_NE(CreateTable("b", "id BIGINT"), nullptr);
  ASSERT_NE(CreateTable("a", "id BIGINT"), nullptr);
  ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse(ns_ + ".inner"), {}).ok());
  Json all = Get(kTreePath, {{"limit", "1000"}});
  EXPECT_EQ(all["total"], 4);
  EXPECT_EQ(all["namespaces"], 2);
  EXPECT_EQ(all["tables"], 2);
  ASSERT_EQ(all["rows"].size(), 4u);
  EXPECT_EQ(all["rows"][0], (Json{{"namespace", {ns_}}, {"depth", 0}}));
  EXPECT_EQ(all["rows"][1], (Json{{"namespace", {ns_}}, {"name", "a"}, {"depth", 1}}));
  EXPECT_EQ(all["rows"][2]["name"], "b");
  EXPECT_EQ(all["rows"][3], (Json{{"namespace", {ns_, "inner"}}, {"depth", 1}}));
  // A slice is those rows, and the counts are the whole tree's.
  Json slice = Get(kTreePath, {{"offset", "2"}, {"limit", "1"}});
  EXPECT_EQ(slice["total"], 4);
  ASSERT_EQ(slice["rows"].size(), 1u);
  EXPECT_EQ(slice["rows"][0]["name"], "b");
  EXPECT_TRUE(Get(kTreePath, {{"offset", "9"}})["rows"].empty());
}

TEST_F(TablePagesTest, TableHasNoHistoryAndSnapshotsComeNewestFirstInPages) {
  auto t = CreateTable("t", "id BIGINT");
  ASSERT_NE(t, nullptr);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; i++) {
    auto appended = t->Append({"SELECT " + std::to_string(i) + "::BIGINT AS id", nullptr});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    ASSERT_TRUE(t->Refresh().ok());
    ids.push_back(*t->CurrentSnapshotId());
  }
  Json table = Get(kTablePath, {{"table", ns_ + ".t"}});
  EXPECT_EQ(table["snapshot-count"], 5);
  ASSERT_EQ(table["metadata"]["snapshots"].size(), 1u);
  EXPECT_EQ(table["metadata"]["snapshots"][0]["snapshot-id"], ids.back());
  EXPECT_EQ(table["metadata"]["current-snapshot-id"], ids.back());
  EXPECT_TRUE(table["metadata"]["snapshot-log"].empty());
  EXPECT_FALSE(table["metadata-location"].get<std::string>().empty());

  std::vector<int64_t> paged;
  for (int offset = 0; offset < 6; offset += 2) {
    Json page = Get(kSnapshotsPath, {{"table", ns_ + ".t"}, {"offset", std::to_string(offset)}, {"limit", "2"}});
    EXPECT_EQ(page["total"], 5);
    for (const Json& s : page["snapshots"]) paged.push_back(s["snapshot-id"].get<int64_t>());
  }
  EXPECT_EQ(paged, std::vector<int64_t>(ids.rbegin(), ids.rend()));

  // Only the snapshots whose summary has a key: every append has added-records, none a made-up key.
  Json with = Get(kSnapshotsPath, {{"table", ns_ + ".t"}, {"summary-key", "added-records"}, {"limit", "1"}});
  EXPECT_EQ(with["total"], 5);
  ASSERT_EQ(with["snapshots"].size(), 1u);
  EXPECT_EQ(with["snapshots"][0]["snapshot-id"], ids.back());
  Json without = Get(kSnapshotsPath, {{"table", ns_ + ".t"}, {"summary-key", "no.such-key"}});
  EXPECT_EQ(without["total"], 0);
  EXPECT_TRUE(without["snapshots"].empty());
}

TEST_F(TablePagesTest, RefusesBadParametersMissingTablesAndOtherMethods) {
  Get(kSnapshotsPath, {{"table", ns_ + ".missing"}}, 404);
  Get(kTablePath, {}, 400);
  Get(kTablePath, {{"table", "no-namespace"}}, 400);
  Get(kTreePath, {{"limit", "0"}}, 400);
  Get(kTreePath, {{"limit", "1001"}}, 400);
  Get(kTreePath, {{"offset", "-1"}}, 400);
  TablePages pages(*catalog_);
  auto post = pages.Serve("POST", kTreePath, {});
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(post->status, 405);
  EXPECT_FALSE(pages.Serve("GET", "/console/v1/other", {}).has_value());
}

}  // namespace
}  // namespace skade::console
