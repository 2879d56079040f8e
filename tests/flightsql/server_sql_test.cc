// What queries see of the server they run on: current_user is the authenticated user, and
// nothing that shows the server's own configuration (settings naming its folders, secrets,
// attached databases) reaches a client.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using testing::FlightServerTest;
using ::testing::ElementsAre;

TEST_F(FlightServerTest, CurrentUserIsTheAuthenticatedUser) {
  StartServer();
  Client good(server_->port(), "good"), stall(server_->port(), "stall");
  auto who = good.Strings("SELECT current_user");
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_THAT(*who, ElementsAre("good"));
  auto all = stall.Strings("SELECT concat_ws(',', current_user, user, session_user, current_role)");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(*all, ElementsAre("stall,stall,stall,stall"));
}

// A column that passes a NOT NULL Iceberg field through unchanged is not nullable, in
// GetFlightInfo's schema and in the stream's; anything the server cannot trace stays nullable.
TEST_F(FlightServerTest, PlainReferencesToNotNullColumnsAreNotNullable) {
  StartServer();
  Client good(server_->port(), "good");
  auto expect = [&](const std::string& sql, std::vector<bool> nullable) {
    SCOPED_TRACE(sql);
    auto got = good.Nullability(sql);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->first, nullable);
    EXPECT_EQ(got->second, nullable);
  };
  expect("SELECT * FROM skade.db.big LIMIT 3", {false, true});
  expect("SELECT s, id AS key, id + 1, b.ID FROM skade.db.big b WHERE id > 3", {true, false, true, false});
  expect("SELECT big.* FROM skade.db.big ORDER BY id LIMIT 1", {false, true});
  expect("SELECT id FROM skade.db.big UNION ALL SELECT NULL", {true});
  expect("SELECT x.id FROM skade.db.big x LEFT JOIN skade.db.target t ON false", {true});
  expect("SELECT * EXCLUDE (s) FROM skade.db.big", {true});
  expect("SELECT id FROM skade.db.big GROUP BY ROLLUP (id)", {true});
}

TEST_F(FlightServerTest, QueriesThatReadTheServersConfigurationAreRefused) {
  StartServer();
  Client good(server_->port(), "good");
  for (const char* sql : {"SELECT * FROM duckdb_settings()", "SELECT current_setting('allowed_directories')",
                          "SELECT name, value FROM system.main.duckdb_settings()",
                          "WITH s AS (SELECT value FROM duckdb_settings()) SELECT * FROM s",
                          "SELECT path FROM duckdb_databases()", "EXPLAIN SELECT * FROM duckdb_settings()",
                          "SUMMARIZE SELECT current_setting('allowed_directories') AS d",
                          // SQL run from a value is never checked: refused whatever it holds.
                          "SELECT * FROM query('SELECT current_setting(''allowed_directories'')')",
                          "SELECT * FROM query('SELECT 1')",
                          "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))"}) {
    auto rows = good.Rows(sql);
    EXPECT_FALSE(rows.ok()) << sql;
    EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::PERMISSION_DENIED) << sql;
  }
  // Data queries are untouched, and the refusal names no folder of the server.
  EXPECT_EQ(*good.Rows("SELECT * FROM skade.db.target"), 5);
  auto refused = good.Rows("SELECT * FROM duckdb_settings()");
  EXPECT_THAT(refused.status().message(), ::testing::Not(::testing::HasSubstr(tmp_.path())));
}

// Reading the catalog's SQLite files from a query opened and closed them in the server's
// process, which drops the catalog's POSIX locks (fcntl(2)); the next writer elsewhere then
// re-initialised the shared memory under the server. No spelling of those paths reaches them.
TEST_F(FlightServerTest, QueriesNeverOpenTheCatalogsOwnFiles) {
  StartServer();
  Client good(server_->port(), "good");
  const std::string db = tmp_.Path("catalog.db");
  ASSERT_EQ(::symlink(db.c_str(), tmp_.Path("warehouse/alias.db").c_str()), 0);
  for (const std::string& sql :
       {"SELECT size FROM read_blob('" + db + "')", "SELECT size FROM read_blob('" + db + "-wal')",
        "SELECT max(octet_length(content)) FROM read_blob('" + tmp_.path() + "/catalog.db*')",
        "SELECT max(length(content)) FROM read_text('" + tmp_.path() + "/*')",
        "SELECT size FROM read_blob('" + tmp_.Path("warehouse/../catalog.db") + "')",
        "SELECT size FROM read_blob('file://" + db + "')",
        "SELECT size FROM read_blob('" + tmp_.Path("warehouse/alias.db") + "')",
        "SELECT * FROM read_csv('" + db + "')"}) {
    SCOPED_TRACE(sql);
    auto rows = good.Rows(sql);
    ASSERT_FALSE(rows.ok());
    EXPECT_THAT(rows.status().message(), ::testing::HasSubstr("catalog's own file"));
  }
  // The catalog still commits and reads (its locks held throughout).
  EXPECT_EQ(*good.Update("INSERT INTO skade.db.target VALUES (8)"), 1);
  EXPECT_EQ(Count("target"), "6");
}

// Everything after a NUL in a statement was dropped and the rest ran (a DELETE with a NUL
// before its second condition deleted every row the first matched).
TEST_F(FlightServerTest, StatementsWithANulByteAreRefused) {
  StartServer();
  Client good(server_->port(), "good");
  const std::string sql = std::string("DELETE FROM skade.db.target WHERE x = 7") + '\0' + " AND x = 8";
  auto deleted = good.Update(sql);
  ASSERT_FALSE(deleted.ok());
  EXPECT_THAT(deleted.status().message(), ::testing::HasSubstr("NUL"));
  EXPECT_FALSE(good.Rows(std::string("SELECT * FROM skade.db.target") + '\0' + " WHERE false").ok());
  EXPECT_EQ(Count("target"), "5");
  EXPECT_EQ(*good.Update("DELETE FROM skade.db.target WHERE x = 7 AND x = 8"), 0);
}

// A predicate must be a condition: "x" alone (or 1, or 'yes') would match every row.
TEST_F(FlightServerTest, NonBooleanConditionsChangeNothing) {
  StartServer();
  Client good(server_->port(), "good");
  for (const char* sql : {"DELETE FROM skade.db.target WHERE x", "DELETE FROM skade.db.target WHERE 1",
                          "DELETE FROM skade.db.target WHERE 'yes'", "UPDATE skade.db.target SET x = 0 WHERE x"}) {
    SCOPED_TRACE(sql);
    auto changed = good.Update(sql);
    ASSERT_FALSE(changed.ok());
    EXPECT_THAT(changed.status().message(), ::testing::HasSubstr("not BOOLEAN"));
  }
  EXPECT_EQ(Count("target"), "5");
  EXPECT_EQ(*good.Update("DELETE FROM skade.db.target WHERE x = 7"), 5);
}

// An update statement carries no data; a first message whose IPC header is garbage is a
// malformed request, refused before the statement runs.
TEST_F(FlightServerTest, AnUpdateWithAGarbageIpcHeaderDoesNotRun) {
  StartServer();
  Client good(server_->port(), "good");
  auto garbage = good.Update("DELETE FROM skade.db.target WHERE x = 7", std::string("\xff\xff\xff\xff garbage", 12));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Count("target"), "5");
}

TEST_F(FlightServerTest, APortInUseFailsToBind) {
  StartServer();
  ServerOptions o;
  o.port = server_->port();
  auto second = FlightSqlServer::Start(*lake_, o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  Client good(server_->port(), "good");
  EXPECT_EQ(*good.Rows("SELECT * FROM skade.db.target"), 5);
}

// Errors name the server's folders by stand-ins; a sibling folder whose name merely starts with
// the warehouse's ("warehouse2") is private too, not "<warehouse>2".
TEST_F(FlightServerTest, ErrorsNameNoPrivateFolder) {
  StartServer([&](ServerOptions& o) { o.private_paths = {{tmp_.Path("warehouse"), "<warehouse>"}}; });
  Client good(server_->port(), "good");
  auto inside = good.Rows("SELECT * FROM read_csv('" + tmp_.Path("warehouse/x/s.csv") + "')");
  ASSERT_FALSE(inside.ok());
  EXPECT_THAT(inside.status().message(), ::testing::HasSubstr("<warehouse>/x/s.csv"));
  auto sibling = good.Rows("SELECT * FROM read_csv('" + tmp_.Path("warehouse2/s.csv") + "')");
  ASSERT_FALSE(sibling.ok());
  EXPECT_THAT(sibling.status().message(), ::testing::Not(::testing::HasSubstr("<warehouse>2")));
  EXPECT_THAT(sibling.status().message(), ::testing::Not(::testing::HasSubstr(tmp_.path())));
  EXPECT_THAT(sibling.status().message(), ::testing::HasSubstr("<private path>"));
}

}  // namespace
}  // namespace skade::flightsql
