// The console's data preview: pages of a table's rows at a snapshot (what a scan reads, deletes
// applied, in a stable order), parameter checks, and errors in the REST error model's shape.
#include "skade/console/preview.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <set>

#include "skade/engine/user_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;

class PreviewTest : public testing::LakeTest {
 protected:
  Json Get(std::map<std::string, std::string> query, int want_status = 200) {
    Preview preview(*catalog_, *io_, *db_);
    auto answer = preview.Serve("GET", kPreviewPath, query);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return Json();
    EXPECT_EQ(answer->status, want_status) << answer->body;
    return Json::parse(answer->body);
  }

  // The first column of every page at `snapshot` (empty = current).
  std::vector<std::string> AllIds(const std::string& snapshot, int64_t limit) {
    std::vector<std::string> ids;
    for (int64_t offset = 0; offset < 10'000; offset += limit) {
      std::map<std::string, std::string> q{{"table", "db.t"}, {"offset", std::to_string(offset)},
                                           {"limit", std::to_string(limit)}};
      if (!snapshot.empty()) q["snapshot-id"] = snapshot;
      Json page = Get(q);
      for (const Json& row : page["rows"]) ids.push_back(row[0].get<std::string>());
      if (!page["more"].get<bool>()) break;
    }
    return ids;
  }
};

TEST_F(PreviewTest, PagesEveryRowOnceAtEachSnapshotWithDeletesApplied) {
  auto t = CreateTable("t", "id BIGINT, s VARCHAR, st STRUCT(a INTEGER)", "",
                       {{"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  auto first = t->Append({"SELECT range AS id, 'v' || range AS s, {'a': range::INT} AS st FROM range(0, 70)", nullptr});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(t->Append({"SELECT range AS id, NULL AS s, NULL AS st FROM range(70, 100)", nullptr}).ok());
  auto where = engine::Predicate::Parse("id % 10 = 0");
  ASSERT_TRUE(where.ok());
  ASSERT_TRUE(t->DeleteWhere(*where).ok());

  std::vector<std::string> now = AllIds("", 7);
  EXPECT_EQ(now.size(), 90u);
  EXPECT_EQ(std::set<std::string>(now.begin(), now.end()).size(), 90u);
  EXPECT_EQ(std::count(now.begin(), now.end(), "10"), 0);
  std::vector<std::string> then = AllIds(std::to_string(first->snapshot_id), 25);
  EXPECT_EQ(then.size(), 70u);
  EXPECT_EQ(std::set<std::string>(then.begin(), then.end()).size(), 70u);

  Json page = Get({{"table", "db.t"}, {"limit", "2"}});
  ASSERT_EQ(page["columns"].size(), 3u);
  EXPECT_EQ(page["columns"][0]["name"], "id");
  EXPECT_EQ(page["columns"][0]["type"], "BIGINT");
  EXPECT_EQ(page["rows"].size(), 2u);
  EXPECT_TRUE(page["more"].get<bool>());
  EXPECT_TRUE(page["snapshot-id"].is_number_integer());
}

TEST_F(PreviewTest, ATableWithoutSnapshotsHasNoRows) {
  ASSERT_NE(CreateTable("t", "x INTEGER"), nullptr);
  Json page = Get({{"table", "db.t"}});
  EXPECT_TRUE(page["rows"].empty());
  EXPECT_FALSE(page["more"].get<bool>());
  EXPECT_TRUE(page["snapshot-id"].is_null());
}

TEST_F(PreviewTest, RefusesBadParameters) {
  ASSERT_NE(CreateTable("t", "x INTEGER"), nullptr);
  EXPECT_EQ(Get({}, 400)["error"]["code"], 400);
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"offset", "-1"}, {"offset", "1e3"}, {"offset", "99999999999"}, {"limit", "0"},
           {"limit", "501"}, {"limit", "5; DROP"}, {"snapshot-id", "x"}, {"snapshot-id", "1 OR 1=1"}}) {
    Get({{"table", "db.t"}, {key, value}}, 400);
  }
  Get({{"table", "db.nope"}}, 404);
  Get({{"table", "db.t"}, {"snapshot-id", "12345"}}, 404);
  Get({{"table", "db.t/../x"}}, 400);
}

// A data file gone from under the table fails the page, and the error names the warehouse by its
// name, not its path.
TEST_F(PreviewTest, ErrorsNameNoPrivateFolder) {
  auto t = CreateTable("t", "id BIGINT");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->Append({"SELECT range AS id FROM range(10)", nullptr}).ok());
  for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp_.Path("warehouse"))) {
    if (entry.path().extension() == ".parquet") std::filesystem::remove(entry.path());
  }
  Preview preview(*catalog_, *io_, *db_, nullptr, {{tmp_.Path("warehouse"), "<warehouse>"}});
  auto answer = preview.Serve("GET", kPreviewPath, {{"table", "db.t"}});
  ASSERT_TRUE(answer.has_value());
  EXPECT_GE(answer->status, 400);
  EXPECT_THAT(answer->body, ::testing::HasSubstr("<warehouse>/"));
  EXPECT_THAT(answer->body, ::testing::Not(::testing::HasSubstr(tmp_.path())));
}

TEST_F(PreviewTest, AnswersOnlyItsPathAndGet) {
  Preview preview(*catalog_, *io_, *db_);
  EXPECT_FALSE(preview.Serve("GET", "/console/v1/other", {}).has_value());
  EXPECT_FALSE(preview.Serve("GET", "/v1/namespaces", {}).has_value());
  auto post = preview.Serve("POST", kPreviewPath, {{"table", "db.t"}});
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(post->status, 405);
  EXPECT_THAT(post->headers, ::testing::Contains(std::make_pair(std::string("Allow"), std::string("GET, HEAD"))));
}

}  // namespace
}  // namespace skade::console
