// The console's SQL route: read queries through the locked-down client-SQL path (what Flight SQL
// runs), on a locked-down database like `skade serve`'s: answers equal the library's reading,
// every write and every other statement kind is refused, no file outside the warehouse or of
// the catalog is read, the timeout and the caller's own cancel interrupt DuckDB, answers are
// bounded, and hostile text comes back as data.
#include "skade/console/query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "skade/sql/lake_sql.h"
#include "tests/testing/lake_test.h"

namespace skade::console {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class QueryRouteTest : public testing::LakeTest {
 protected:
  void SetUp() override {
    LakeTest::SetUp();
    // As `skade serve` opens it: files only below the warehouse, configuration locked.
    engine::DatabaseOptions options;
    options.lock_down = true;
    options.allowed_directories = {tmp_.Path("warehouse")};
    options.attach_in_memory = {"skade"};
    auto db = engine::Database::Open(options);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    auto t = CreateTable("t", "id BIGINT, s VARCHAR, st STRUCT(a INTEGER), l INTEGER[]");
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->Append({"SELECT range AS id, CASE WHEN range % 7 = 0 THEN NULL ELSE 'v' || range END AS s, "
                           "{'a': range::INT} AS st, [range::INT, 2] AS l FROM range(100)",
                           nullptr})
                    .ok());
    auto lake = sql::LakeSql::Open(*catalog_, *io_, *db_, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  void MakeRoute(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    RunningQueries::Limits limits;
    limits.timeout = timeout;
    running_ = std::make_unique<RunningQueries>(limits);
    QueryOptions options;
    options.private_paths = {{tmp_.Path("warehouse"), "<warehouse>"}};
    route_ = std::make_unique<QueryRoute>(*lake_, *running_, options);
  }

  // POST kQueryPath with `request` as `principal`; the answer's status and JSON body.
  std::pair<int, Json> Post(const Json& request, const std::string& principal = "alice") {
    return PostText(request.dump(), principal);
  }
  std::pair<int, Json> PostText(const std::string& body, const std::string& principal = "alice") {
    auto answer = route_->Serve("POST", kQueryPath, body, "application/json", principal);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return {0, Json()};
    Json parsed = Json::parse(answer->body, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << answer->body;
    return {answer->status, parsed};
  }
  int Cancel(const std::string& id, const std::string& principal) {
    auto answer = route_->Serve("DELETE", std::string(kQueryPath) + "/" + id, "", "", principal);
    return answer ? answer->status : 0;
  }
  std::string Count() {
    auto rows = Rows(*LoadTable(Ident("t")), "SELECT count(*) FROM t");
    return rows.empty() ? "?" : rows[0][0];
  }

  std::unique_ptr<sql::LakeSql> lake_;
  std::unique_ptr<RunningQueries> running_;
  std::unique_ptr<QueryRoute> route_;
};

TEST_F(QueryRouteTest, AnswersWhatTheLibraryReads) {
  MakeRoute();
  auto [status, body] = Post({{"sql", "SELECT id, s, st, l FROM db.t ORDER BY id"}, {"limit", 1000}});
  ASSERT_EQ(status, 200) << body.dump();
  std::vector<std::vector<std::string>> shown;
  for (const Json& row : body["rows"]) {
    std::vector<std::string> r;
    for (const Json& v : row) r.push_back(v.is_null() ? "NULL" : v.get<std::string>());
    shown.push_back(std::move(r));
  }
  EXPECT_EQ(shown, Rows(*LoadTable(Ident("t")), "SELECT id, s, st, l FROM t ORDER BY id"));
  ASSERT_EQ(body["columns"].size(), 4u);
  EXPECT_EQ(body["columns"][0], (Json{{"name", "id"}, {"type", "BIGINT"}}));
  EXPECT_EQ(body["columns"][3]["type"], "INTEGER[]");
  EXPECT_FALSE(body["more"].get<bool>());
  EXPECT_TRUE(body["rows"][0][1].is_null());
  // The catalog's name works too, and so does a query of no table.
  EXPECT_EQ(Post({{"sql", "SELECT count(*) FROM skade.db.t"}}).second["rows"], Json::parse(R"([["100"]])"));
  EXPECT_EQ(Post({{"sql", "SELECT 1 + 1 AS two"}}).second["rows"], Json::parse(R"([["2"]])"));
  // A closing ';' (and blanks, and a line comment after it) is part of the one statement.
  EXPECT_EQ(Post({{"sql", "SELECT 2 AS two; \n"}}).second["rows"], Json::parse(R"([["2"]])"));
  EXPECT_EQ(Post({{"sql", "SELECT 3 -- three;"}}).second["rows"], Json::parse(R"([["3"]])"));
}

TEST_F(QueryRouteTest, StopsAtTheRowLimitSayingThereIsMore) {
  MakeRoute();
  auto [status, body] = Post({{"sql", "SELECT id FROM db.t ORDER BY id"}, {"limit", 10}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(body["rows"].size(), 10u);
  EXPECT_TRUE(body["more"].get<bool>());
  EXPECT_EQ(body["limited-by"], "rows");
  auto exact = Post({{"sql", "SELECT id FROM db.t"}, {"limit", 100}}).second;
  EXPECT_EQ(exact["rows"].size(), 100u);
  EXPECT_FALSE(exact["more"].get<bool>());
  // A huge result is not read to its end: the answer is the first rows, at once.
  const auto start = Clock::now();
  auto huge = Post({{"sql", "SELECT range FROM range(10000000000)"}, {"limit", 5}}).second;
  EXPECT_EQ(huge["rows"].size(), 5u);
  EXPECT_TRUE(huge["more"].get<bool>());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST_F(QueryRouteTest, RefusesWritesAndEveryStatementThatIsNoQuery) {
  MakeRoute();
  const std::string outside = tmp_.Path("outside.csv");
  for (const std::string& sql : {
           std::string("INSERT INTO db.t (id) VALUES (1)"), std::string("DELETE FROM db.t"),
           std::string("UPDATE db.t SET s = 'x'"), std::string("CREATE TABLE db.u (x INT)"),
           std::string("DROP TABLE db.t"), std::string("CREATE SCHEMA db2"),
           std::string("MERGE INTO db.t USING (SELECT 1 AS id) s ON s.id = t.id WHEN MATCHED THEN DELETE"),
           "COPY (SELECT 1) TO '" + outside + "'", "COPY db.t FROM '" + outside + "'",
           std::string("ATTACH ':memory:' AS other"), std::string("DETACH skade"),
           std::string("PRAGMA threads=1"), std::string("SET threads = 1"), std::string("RESET threads"),
           std::string("INSTALL httpfs"), std::string("LOAD httpfs"),
           std::string("CREATE TEMP TABLE x AS SELECT 1"), std::string("CREATE MACRO m() AS 1"),
           std::string("SELECT * FROM duckdb_settings()"), std::string("SELECT current_setting('allowed_directories')"),
           std::string("CHECKPOINT"), std::string("VACUUM")}) {
    SCOPED_TRACE(sql);
    auto [status, body] = Post({{"sql", sql}});
    EXPECT_EQ(status, 403) << body.dump();
    EXPECT_EQ(body["error"]["type"], "ForbiddenException");
    EXPECT_EQ(body["error"]["code"], 403);
  }
  // Several statements, or one that does not parse: a bad request; none of it ran.
  EXPECT_EQ(Post({{"sql", "SELECT 1; DROP TABLE db.t"}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELEKT 1"}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELECT * FROM db.nope"}}).first, 400);
  EXPECT_FALSE(std::ifstream(outside).good());
  EXPECT_EQ(Count(), "100");
}

TEST_F(QueryRouteTest, ReadsNoFileOutsideTheWarehouseNorTheCatalogs) {
  MakeRoute();
  std::ofstream(tmp_.Path("outside.csv")) << "secret\n42\n";
  for (const std::string& sql :
       {"SELECT * FROM read_csv('" + tmp_.Path("outside.csv") + "')", std::string("SELECT * FROM read_text('/etc/hostname')"),
        "SELECT size FROM read_blob('" + tmp_.Path("catalog.db") + "')",
        "SELECT size FROM read_blob('" + tmp_.Path("warehouse/../catalog.db") + "')",
        "SELECT * FROM read_text('" + tmp_.path() + "/*')"}) {
    SCOPED_TRACE(sql);
    auto [status, body] = Post({{"sql", sql}});
    EXPECT_TRUE(status == 403 || status == 400) << status << " " << body.dump();
    EXPECT_THAT(body.dump(), ::testing::Not(::testing::HasSubstr("secret")));
  }
  // A file in the warehouse is the lake's own (the data files): readable, its path redacted in
  // errors.
  auto missing = Post({{"sql", "SELECT * FROM read_parquet('" + tmp_.Path("warehouse/nope.parquet") + "')"}});
  EXPECT_EQ(missing.first, 400);
  EXPECT_THAT(missing.second["error"]["message"].get<std::string>(), ::testing::HasSubstr("<warehouse>/nope.parquet"));
  EXPECT_THAT(missing.second["error"]["message"].get<std::string>(), ::testing::Not(::testing::HasSubstr(tmp_.path())));
}

TEST_F(QueryRouteTest, TheTimeoutInterruptsALongQuery) {
  MakeRoute(std::chrono::milliseconds(500));
  const auto start = Clock::now();
  auto [status, body] = Post({{"sql", "SELECT count(*) FROM range(10000000000)"}});
  const auto took = Clock::now() - start;
  EXPECT_EQ(status, 504) << body.dump();
  EXPECT_EQ(body["error"]["type"], "QueryTimeoutException");
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_GE(took, std::chrono::milliseconds(450));
  EXPECT_EQ(running_->running(), 0u);
  // The connection pool is fine afterwards.
  EXPECT_EQ(Post({{"sql", "SELECT 1"}}).first, 200);
}

TEST_F(QueryRouteTest, OnlyItsOwnPrincipalCancelsAQuery) {
  MakeRoute();
  auto long_query = std::async(std::launch::async, [&] {
    return Post({{"sql", "SELECT count(*) FROM range(10000000000)"}, {"id", "q-1"}}, "alice");
  });
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (running_->running() == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(running_->running(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Another principal neither cancels it nor learns that it exists; its own id is its own.
  EXPECT_EQ(Cancel("q-1", "bob"), 404);
  EXPECT_EQ(long_query.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"id", "q-1"}}, "alice").first, 409);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"id", "q-1"}}, "bob").first, 200);
  // Its own principal's cancel interrupts DuckDB: the answer comes at once.
  const auto cancelled_at = Clock::now();
  EXPECT_EQ(Cancel("q-1", "alice"), 200);
  ASSERT_EQ(long_query.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto [status, body] = long_query.get();
  EXPECT_EQ(status, 499) << body.dump();
  EXPECT_EQ(body["error"]["type"], "QueryCancelledException");
  EXPECT_LT(Clock::now() - cancelled_at, std::chrono::seconds(2));
  EXPECT_EQ(Cancel("q-1", "alice"), 404);  // over
  EXPECT_EQ(Cancel("bad id!", "alice"), 400);
}

// What the preview relies on: a statement of the console's own (no id) is timed like a query,
// but counts against no limit and nobody cancels it.
TEST_F(QueryRouteTest, StatementsWithoutAnIdAreTimedOnly) {
  RunningQueries::Limits limits;
  limits.timeout = std::chrono::milliseconds(300);
  limits.per_principal = 1;
  limits.total = 1;
  RunningQueries running(limits);
  auto con = db_->Connect();
  ASSERT_TRUE(con.ok());
  auto other = db_->Connect();
  ASSERT_TRUE(other.ok());
  auto own = running.Start("", "", **con);
  ASSERT_TRUE(own.ok());
  auto query = running.Start("alice", "q", **other);
  ASSERT_TRUE(query.ok()) << query.status().ToString();
  EXPECT_EQ(running.Start("bob", "q2", **other).status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(running.Cancel("", ""));
  const auto start = Clock::now();
  Status ran = (*con)->QueryTypedText(
      "SELECT count(*) FROM range(10000000000)", [](const std::vector<engine::ColumnType>&) {},
      [](const engine::TextRow&) { return Status::Ok(); });
  EXPECT_FALSE(ran.ok());
  EXPECT_EQ((*own)->stop(), RunningQueries::Stop::kTimedOut);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(running.running(), 2u);
  own->reset();
  query->reset();
  EXPECT_EQ(running.running(), 0u);
}

TEST_F(QueryRouteTest, RefusesOversizeAndMalformedRequests) {
  MakeRoute();
  const std::string big = Json{{"sql", "SELECT '" + std::string(2 << 20, 'x') + "'"}}.dump();
  EXPECT_EQ(PostText(big).first, 413);
  const std::string long_sql = Json{{"sql", "SELECT '" + std::string((1 << 20) + 5000, 'x') + "'"}}.dump();
  EXPECT_EQ(PostText(long_sql).first, 413);
  const std::string just_over = "SELECT '" + std::string((1 << 20) - 5, 'x') + "'";
  EXPECT_EQ(PostText(Json{{"sql", just_over}}.dump()).first, 400);  // the SQL text's own bound
  EXPECT_EQ(PostText("not json").first, 400);
  EXPECT_EQ(PostText("[]").first, 400);
  EXPECT_EQ(Post({{"sqll", "SELECT 1"}}).first, 400);
  EXPECT_EQ(Post({{"sql", 1}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"limit", 0}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"limit", 10001}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"limit", "5; DROP"}}).first, 400);
  EXPECT_EQ(Post({{"sql", "SELECT 1"}, {"id", "../x"}}).first, 400);
  EXPECT_EQ(Post({{"sql", std::string("SELECT 1") + '\0' + "; DROP TABLE db.t"}}).first, 400);
  auto get = route_->Serve("GET", kQueryPath, "", "", "alice");
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->status, 405);
  EXPECT_THAT(get->headers, ::testing::Contains(std::make_pair(std::string("Allow"), std::string("POST"))));
  EXPECT_FALSE(route_->Serve("POST", "/console/v1/queryx", "", "application/json", "alice").has_value());
  EXPECT_FALSE(route_->Serve("POST", "/console/v1/preview", "", "application/json", "alice").has_value());
  // What a page of another site may POST without asking first (a form, text/plain) is refused;
  // JSON with parameters is JSON.
  const std::string select = Json{{"sql", "SELECT 1"}}.dump();
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    auto refused = route_->Serve("POST", kQueryPath, select, type, "alice");
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->status, 415) << type;
  }
  EXPECT_EQ(route_->Serve("POST", kQueryPath, select, "Application/JSON; charset=utf-8", "alice")->status, 200);
  EXPECT_EQ(Count(), "100");
}

TEST_F(QueryRouteTest, HostileTextComesBackAsData) {
  MakeRoute();
  const std::string hostile = "<img src=x onerror=alert(1)>\"'; DROP TABLE db.t; --";
  auto [status, body] = Post({{"sql", "SELECT $q$" + hostile + "$q$ AS \"<b onclick=x>c</b>\", "
                                      "'</script><script>alert(2)</script>' AS s"}});
  ASSERT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["columns"][0]["name"], "<b onclick=x>c</b>");
  EXPECT_EQ(body["rows"][0][0], hostile);
  EXPECT_EQ(body["rows"][0][1], "</script><script>alert(2)</script>");
  EXPECT_EQ(Count(), "100");
}

}  // namespace
}  // namespace skade::console
