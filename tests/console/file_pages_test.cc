// The console's paged file lists: every data file (and delete file) of a snapshot exactly once
// for every page size, across manifest boundaries, as the scan planner sees them; page tokens
// that are garbage, altered, sealed by another key or meant for another table, snapshot or
// content are refused as bad requests; the route is read with the REST catalog's authentication.
#include "skade/console/file_pages.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "skade/console/preview.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/scan.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/lake_test.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;

class FilePagesTest : public testing::LakeTest {
 protected:
  void SetUp() override {
    LakeTest::SetUp();
    sealer_ = io::Sealer::Ephemeral();
  }

  Json Get(std::map<std::string, std::string> query, int want_status = 200) {
    FilePages pages(*catalog_, *io_, sealer_);
    auto answer = pages.Serve("GET", kFilesPath, query);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return Json();
    EXPECT_EQ(answer->status, want_status) << answer->body;
    return Json::parse(answer->body);
  }

  // Every file path of `content` page by page, following the tokens; the pages' sizes in `sizes`.
  std::vector<std::string> AllPaths(const std::string& content, int page_size, std::vector<size_t>* sizes = nullptr,
                                    const std::string& snapshot = "") {
    std::vector<std::string> paths;
    std::map<std::string, std::string> q{{"table", "db.t"}, {"content", content},
                                         {"page-size", std::to_string(page_size)}};
    if (!snapshot.empty()) q["snapshot-id"] = snapshot;
    for (int pages = 0; pages < 1000; pages++) {
      Json page = Get(q);
      if (sizes) sizes->push_back(page["files"].size());
      for (const Json& f : page["files"]) paths.push_back(f["file-path"].get<std::string>());
      if (page["next-page-token"].is_null()) break;
      q["page-token"] = page["next-page-token"].get<std::string>();
    }
    return paths;
  }

  // A table partitioned by region: four appends of three regions each (a manifest of three data
  // files per append), then a delete of some rows as position delete files.
  std::unique_ptr<table::Table> MakeTable() {
    auto t = CreateTable("t", "id BIGINT, region VARCHAR", "region", {{"write.delete.mode", "merge-on-read"}});
    if (t == nullptr) return nullptr;
    for (int i = 0; i < 4; i++) {
      const std::string from = std::to_string(i * 30);
      const std::string to = std::to_string(i * 30 + 30);
      auto appended = t->Append({"SELECT range AS id, ['north', 'south', '<b>east</b>'][range % 3 + 1] AS region "
                                 "FROM range(" + from + ", " + to + ")",
                                 nullptr});
      EXPECT_TRUE(appended.ok()) << appended.status().ToString();
    }
    return t;
  }

  // The data files the scan planner plans at the current snapshot, in its order.
  std::vector<std::string> PlannedPaths() {
    auto loaded = catalog_->LoadTable(Ident("t"));
    EXPECT_TRUE(loaded.ok());
    if (!loaded.ok()) return {};
    iceberg::ScanPlanner planner(*io_, *loaded->metadata);
    planner.set_threads(1);
    auto tasks = planner.PlanAll(*loaded->metadata->CurrentSnapshot(), *loaded->metadata->CurrentSchema(), nullptr);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    std::vector<std::string> out;
    if (tasks.ok()) {
      for (const auto& task : *tasks) out.push_back(task.file.file_path);
    }
    return out;
  }

  std::shared_ptr<const io::Sealer> sealer_;
};

TEST_F(FilePagesTest, PagesEveryDataFileOnceForEveryPageSize) {
  auto t = MakeTable();
  ASSERT_NE(t, nullptr);
  const std::vector<std::string> planned = PlannedPaths();
  ASSERT_EQ(planned.size(), 12u);
  Json whole = Get({{"table", "db.t"}, {"page-size", "1000"}});
  EXPECT_EQ(whole["total"], 12);
  EXPECT_EQ(whole["content"], "data");
  EXPECT_TRUE(whole["next-page-token"].is_null());
  ASSERT_EQ(whole["files"].size(), 12u);
  std::vector<std::string> listed;
  for (const Json& f : whole["files"]) listed.push_back(f["file-path"].get<std::string>());
  EXPECT_EQ(std::multiset<std::string>(listed.begin(), listed.end()),
            std::multiset<std::string>(planned.begin(), planned.end()));
  // A file's facts: format, counts and its partition value as text.
  const Json& f = whole["files"][0];
  EXPECT_EQ(f["content"], "data");
  EXPECT_EQ(f["file-format"], "PARQUET");
  EXPECT_EQ(f["record-count"], 10);
  EXPECT_GT(f["file-size-in-bytes"].get<int64_t>(), 0);
  ASSERT_TRUE(f["partition"].contains("region"));
  std::set<std::string> regions;
  for (const Json& file : whole["files"]) regions.insert(file["partition"]["region"].get<std::string>());
  EXPECT_EQ(regions, (std::set<std::string>{"north", "south", "<b>east</b>"}));

  // Pages of every size list the same files in the same order, full pages but the last, and a
  // last page that ends exactly (no empty page after it).
  for (int size = 1; size <= 13; size++) {
    std::vector<size_t> sizes;
    EXPECT_EQ(AllPaths("data", size, &sizes), listed) << "page size " << size;
    ASSERT_FALSE(sizes.empty());
    for (size_t i = 0; i + 1 < sizes.size(); i++) EXPECT_EQ(sizes[i], static_cast<size_t>(size)) << size;
    EXPECT_GT(sizes.back(), 0u) << size;
    EXPECT_EQ(sizes.size(), static_cast<size_t>((12 + size - 1) / size)) << size;
  }
}

TEST_F(FilePagesTest, PagesDeleteFilesAndOlderSnapshots) {
  auto t = MakeTable();
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->Refresh().ok());
  const int64_t before = *t->CurrentSnapshotId();
  EXPECT_TRUE(AllPaths("deletes", 5).empty());
  auto where = engine::Predicate::Parse("id % 7 = 0");
  ASSERT_TRUE(where.ok());
  ASSERT_TRUE(t->DeleteWhere(*where).ok());
  Json deletes = Get({{"table", "db.t"}, {"content", "deletes"}, {"page-size", "1000"}});
  ASSERT_FALSE(deletes["files"].empty());
  for (const Json& d : deletes["files"]) EXPECT_EQ(d["content"], "position-deletes");
  std::vector<std::string> all;
  for (const Json& d : deletes["files"]) all.push_back(d["file-path"].get<std::string>());
  EXPECT_EQ(AllPaths("deletes", 1), all);
  // The snapshot before the delete still has its twelve files and no delete files.
  EXPECT_EQ(AllPaths("data", 5, nullptr, std::to_string(before)).size(), 12u);
  EXPECT_TRUE(AllPaths("deletes", 5, nullptr, std::to_string(before)).empty());
  Get({{"table", "db.t"}, {"snapshot-id", "12345"}}, 404);
}

TEST_F(FilePagesTest, RefusesGarbageAlteredForeignAndMisdirectedTokens) {
  auto t = MakeTable();
  ASSERT_NE(t, nullptr);
  ASSERT_NE(CreateTable("other", "id BIGINT"), nullptr);
  Json first = Get({{"table", "db.t"}, {"page-size", "5"}});
  const std::string token = first["next-page-token"].get<std::string>();
  // The token works, also for a server sharing the key.
  EXPECT_EQ(Get({{"table", "db.t"}, {"page-size", "5"}, {"page-token", token}})["files"].size(), 5u);

  auto refused = [&](std::map<std::string, std::string> q) {
    Json answer = Get(q, 400);
    EXPECT_EQ(answer["error"]["code"], 400);
    EXPECT_NE(answer["error"]["message"].get<std::string>().find("page-token"), std::string::npos);
  };
  for (const std::string& garbage : {std::string(""), std::string("x"), std::string("!!!"), std::string(5000, 'A'),
                                    std::string("U0FBQUFBQUFB"), token.substr(0, token.size() / 2), token + "A"}) {
    refused({{"table", "db.t"}, {"page-token", garbage}});
  }
  // Every single character changed.
  for (size_t i = 0; i < token.size(); i++) {
    std::string altered = token;
    altered[i] = altered[i] == 'A' ? 'B' : 'A';
    refused({{"table", "db.t"}, {"page-token", altered}});
  }
  // A token has one spelling: with the unused low bits of its last character set it decodes to
  // the same bytes, and is refused all the same.
  std::string sealed;
  ASSERT_TRUE(io::DecodeBase64Url(token, &sealed));
  if (sealed.size() % 3 != 0) {
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string respelled = token;
    respelled.back() = alphabet[alphabet.find(respelled.back()) | 1];
    std::string same;
    ASSERT_TRUE(io::DecodeBase64Url(respelled, &same));
    EXPECT_EQ(same, sealed);
    refused({{"table", "db.t"}, {"page-token", respelled}});
  }
  // Sealed by another key, or for another table, snapshot or content.
  FilePages elsewhere(*catalog_, *io_, io::Sealer::Ephemeral());
  auto foreign = elsewhere.Serve("GET", kFilesPath, {{"table", "db.t"}, {"page-token", token}});
  ASSERT_TRUE(foreign.has_value());
  EXPECT_EQ(foreign->status, 400);
  refused({{"table", "db.other"}, {"page-token", token}});
  refused({{"table", "db.t"}, {"content", "deletes"}, {"page-token", token}});
  ASSERT_TRUE(t->Append({"SELECT 1000 AS id, 'west' AS region", nullptr}).ok());
  refused({{"table", "db.t"}, {"page-token", token}});  // now the current snapshot is another
  ASSERT_TRUE(t->Refresh().ok());

  Get({{"table", "db.t"}, {"content", "everything"}}, 400);
  Get({{"table", "db.t"}, {"page-size", "0"}}, 400);
  Get({{"table", "db.t"}, {"page-size", "1001"}}, 400);
  Get({{"table", "db.t"}, {"snapshot-id", "x"}}, 400);
  Get({}, 400);
  Get({{"table", "db.missing"}}, 404);
  FilePages pages(*catalog_, *io_, sealer_);
  EXPECT_EQ(pages.Serve("POST", kFilesPath, {})->status, 405);
  EXPECT_FALSE(pages.Serve("GET", "/console/v1/other", {}).has_value());
}

TEST_F(FilePagesTest, TableWithoutSnapshotsHasNoFiles) {
  ASSERT_NE(CreateTable("t", "id BIGINT"), nullptr);
  Json page = Get({{"table", "db.t"}});
  EXPECT_TRUE(page["snapshot-id"].is_null());
  EXPECT_EQ(page["total"], 0);
  EXPECT_TRUE(page["files"].empty());
  EXPECT_TRUE(page["next-page-token"].is_null());
  Get({{"table", "db.t"}, {"page-token", "abc"}}, 400);
}

}  // namespace
}  // namespace skade::console

namespace skade::rest {
namespace {

// The console's routes through the REST server: only for a request the catalog authenticates.
class ConsoleRoutesAuthTest : public RestServerTest {};

TEST_F(ConsoleRoutesAuthTest, FilesAndDownstreamNeedTheCatalogsToken) {
  ASSERT_NE(LakeTest::CreateTable("t", "id BIGINT"), nullptr);
  console::Preview preview(*catalog_, *io_, *db_);
  RestOptions options;
  options.static_tokens = {"s3cr3t"};
  options.extra_routes = [&preview](const ExtraRequest& r) {
    std::optional<console::RouteAnswer> answer = preview.Serve(r.method, r.path, r.query);
    if (!answer) return std::optional<PublicResponse>();
    return std::optional<PublicResponse>(PublicResponse{answer->status, "application/json", {}, answer->body});
  };
  Start(options);
  for (const char* path : {"/console/v1/files?table=base.t", "/console/v1/downstream?table=base.t"}) {
    EXPECT_EQ(Get(path).status, 401) << path;
    token_ = "wrong";
    EXPECT_EQ(Get(path).status, 401) << path;
    token_ = "s3cr3t";
    auto ok = Get(path);
    EXPECT_EQ(ok.status, 200) << path;
    EXPECT_EQ(ok.body["table"], "base.t") << path;
    token_.clear();
  }
  token_ = "s3cr3t";
  EXPECT_EQ(Get("/console/v1/files?table=base.t&page-token=garbage").status, 400);
}

}  // namespace
}  // namespace skade::rest
