// The console's downstream lineage: the commits whose recorded lineage reads a table, and the
// tables they wrote, newest first in exact pages; the index follows later commits (and a table
// dropped since); a cycle of tables reading each other is answered like any other edge.
#include "skade/console/downstream.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "skade/table/snapshot_lineage.h"
#include "tests/testing/lake_test.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using Found = std::vector<std::pair<std::string, int64_t>>;

class DownstreamTest : public testing::LakeTest {
 protected:
  Json Get(const Downstream& downstream, std::map<std::string, std::string> query, int want_status = 200) {
    auto answer = downstream.Serve("GET", kDownstreamPath, query);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return Json();
    EXPECT_EQ(answer->status, want_status) << answer->body;
    return Json::parse(answer->body);
  }

  // Appends a row to `writer` recording that it read each of `inputs`; returns the snapshot id.
  int64_t WriteFrom(const std::string& writer, const std::vector<std::string>& inputs) {
    auto t = LoadTable(Ident(writer));
    if (t == nullptr) return 0;
    table::SnapshotLineage lineage;
    for (const std::string& input : inputs) lineage.inputs.push_back({Ident(input), std::nullopt, ""});
    // A file read besides the tables is no lake table: never a downstream edge.
    lineage.inputs.push_back({catalog::TableIdent{}, std::nullopt, "/data/raw.parquet"});
    t->set_snapshot_lineage(lineage);
    auto appended = t->Append({"SELECT 1::BIGINT AS id", nullptr});
    EXPECT_TRUE(appended.ok()) << appended.status().ToString();
    EXPECT_TRUE(t->Refresh().ok());
    return t->CurrentSnapshotId().value_or(0);
  }

  // (table written, snapshot id) of every commit in the answer.
  static std::vector<std::pair<std::string, int64_t>> Commits(const Json& page) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const Json& c : page["commits"]) {
      out.emplace_back(c["table"].get<std::string>(), c["snapshot"]["snapshot-id"].get<int64_t>());
    }
    return out;
  }
};

TEST_F(DownstreamTest, CommitsThatReadATableNewestFirstInExactPages) {
  for (const char* name : {"src", "a", "b", "unrelated"}) ASSERT_NE(CreateTable(name, "id BIGINT"), nullptr);
  Downstream downstream(*catalog_);
  EXPECT_EQ(Get(downstream, {{"table", "db.src"}})["total"], 0);

  const int64_t a1 = WriteFrom("a", {"src"});
  const int64_t b1 = WriteFrom("b", {"src", "a"});
  const int64_t a2 = WriteFrom("a", {"src"});
  WriteFrom("unrelated", {"b"});
  ASSERT_TRUE(LoadTable(Ident("src"))->Append({"SELECT 2::BIGINT AS id", nullptr}).ok());  // no lineage

  Json all = Get(downstream, {{"table", "db.src"}, {"limit", "1000"}});
  EXPECT_EQ(all["total"], 3);
  EXPECT_GT(all["indexed-through"].get<int64_t>(), 0);
  auto commits = Commits(all);
  ASSERT_EQ(commits.size(), 3u);
  using FoundSet = std::set<std::pair<std::string, int64_t>>;
  const FoundSet want{{"db.a", a1}, {"db.b", b1}, {"db.a", a2}};
  EXPECT_EQ(FoundSet(commits.begin(), commits.end()), want);
  for (size_t i = 1; i < all["commits"].size(); i++) {
    EXPECT_GE(all["commits"][i - 1]["snapshot"]["timestamp-ms"].get<int64_t>(),
              all["commits"][i]["snapshot"]["timestamp-ms"].get<int64_t>());
  }
  // The page can draw the commit as the upstream side does: its operation and lineage as recorded.
  const Json& summary = all["commits"][0]["snapshot"]["summary"];
  EXPECT_EQ(summary["operation"], "append");
  auto decoded = table::DecodeSnapshotLineage(summary[table::kSnapshotLineageKey].get<std::string>());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();

  // Pages of one and two are the whole answer in the same order.
  for (int limit : {1, 2}) {
    std::vector<std::pair<std::string, int64_t>> paged;
    for (int offset = 0; offset < 5; offset += limit) {
      Json page = Get(downstream, {{"table", "db.src"}, {"offset", std::to_string(offset)},
                                   {"limit", std::to_string(limit)}});
      EXPECT_EQ(page["total"], 3);
      for (auto& c : Commits(page)) paged.push_back(c);
    }
    EXPECT_EQ(paged, commits) << limit;
  }
  EXPECT_EQ(Commits(Get(downstream, {{"table", "db.a"}})), (Found{{"db.b", b1}}));
  EXPECT_EQ(Get(downstream, {{"table", "db.unrelated"}})["total"], 0);

  // A later commit is found by the same index; a table dropped since no longer is.
  const int64_t b2 = WriteFrom("b", {"a"});
  EXPECT_EQ(Get(downstream, {{"table", "db.a"}})["total"], 2);
  EXPECT_EQ(Commits(Get(downstream, {{"table", "db.a"}, {"limit", "1"}}))[0], std::make_pair(std::string("db.b"), b2));
  ASSERT_TRUE(catalog_->DropTable(Ident("b"), catalog::DropMode::kKeepFiles).ok());
  EXPECT_EQ(Get(downstream, {{"table", "db.a"}})["total"], 0);
  EXPECT_EQ(Get(downstream, {{"table", "db.src"}})["total"], 2);
}

TEST_F(DownstreamTest, ACycleIsTwoEdges) {
  ASSERT_NE(CreateTable("x", "id BIGINT"), nullptr);
  ASSERT_NE(CreateTable("y", "id BIGINT"), nullptr);
  const int64_t y1 = WriteFrom("y", {"x"});
  const int64_t x1 = WriteFrom("x", {"y", "x"});
  Downstream downstream(*catalog_);
  EXPECT_EQ(Commits(Get(downstream, {{"table", "db.x"}})),
            (Found{{"db.x", x1}, {"db.y", y1}}));
  EXPECT_EQ(Commits(Get(downstream, {{"table", "db.y"}})), (Found{{"db.x", x1}}));
}

// A rename is logged under the new name only: the table's commits move to that name, once.
TEST_F(DownstreamTest, ARenamedWriterIsFoundUnderItsNewNameOnly) {
  ASSERT_NE(CreateTable("src", "id BIGINT"), nullptr);
  ASSERT_NE(CreateTable("old", "id BIGINT"), nullptr);
  const int64_t s1 = WriteFrom("old", {"src"});
  Downstream downstream(*catalog_);
  EXPECT_EQ(Commits(Get(downstream, {{"table", "db.src"}})), (Found{{"db.old", s1}}));
  ASSERT_TRUE(catalog_->RenameTable(Ident("old"), Ident("new")).ok());
  Json after = Get(downstream, {{"table", "db.src"}});
  EXPECT_EQ(after["total"], 1);
  EXPECT_EQ(Commits(after), (Found{{"db.new", s1}}));
}

TEST_F(DownstreamTest, RefusesBadParametersAndOtherMethods) {
  Downstream downstream(*catalog_);
  Get(downstream, {}, 400);
  Get(downstream, {{"table", "nonamespace"}}, 400);
  Get(downstream, {{"table", "db.t"}, {"limit", "0"}}, 400);
  Get(downstream, {{"table", "db.t"}, {"limit", "1001"}}, 400);
  Get(downstream, {{"table", "db.t"}, {"offset", "-3"}}, 400);
  // A table that does not exist has nothing downstream (it may have been read before a drop).
  EXPECT_EQ(Get(downstream, {{"table", "db.t"}})["total"], 0);
  EXPECT_EQ(downstream.Serve("POST", kDownstreamPath, {})->status, 405);
  EXPECT_FALSE(downstream.Serve("GET", "/console/v1/other", {}).has_value());
}

}  // namespace
}  // namespace skade::console
