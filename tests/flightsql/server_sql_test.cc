// What queries see of the server they run on: current_user is the authenticated user, and
// nothing that shows the server's own configuration (settings naming its folders, secrets,
// attached databases) reaches a client.
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
                          "SELECT path FROM duckdb_databases()", "EXPLAIN SELECT * FROM duckdb_settings()"}) {
    auto rows = good.Rows(sql);
    EXPECT_FALSE(rows.ok()) << sql;
    EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::PERMISSION_DENIED) << sql;
  }
  // Data queries are untouched, and the refusal names no folder of the server.
  EXPECT_EQ(*good.Rows("SELECT * FROM skade.db.target"), 5);
  auto refused = good.Rows("SELECT * FROM duckdb_settings()");
  EXPECT_THAT(refused.status().message(), ::testing::Not(::testing::HasSubstr(tmp_.path())));
}

}  // namespace
}  // namespace skade::flightsql
