// Over Flight SQL, information_schema and SHOW TABLES list every table of the lake (not only
// those queried since the server started), and AT (…) reads past snapshots.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using ::testing::ElementsAre;
using testing::FlightServerTest;
using ::testing::HasSubstr;

TEST_F(FlightServerTest, InformationSchemaListsEveryTableOfTheLake) {
  ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("sales.eu"), {}).ok());
  catalog::CreateTableRequest req;
  auto schema = engine::SchemaFromColumnDefinitions("id BIGINT, amount DOUBLE NOT NULL");
  ASSERT_TRUE(schema.ok());
  req.schema = *schema;
  ASSERT_TRUE(catalog_->CreateTable(*catalog::TableIdent::Parse("sales.eu.orders"), req).ok());
  StartServer();
  Client good(server_->port(), "good");
  // No table has been queried through this server.
  auto tables = good.Strings(
      "SELECT table_schema || '.' || table_name || ' ' || table_type FROM "
      "information_schema.tables "
      "WHERE table_catalog = 'skade' ORDER BY ALL");
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  EXPECT_THAT(*tables, ElementsAre("db.big BASE TABLE", "db.target BASE TABLE",
                                   "sales.eu.orders BASE TABLE"));
  auto columns = good.Strings(
      "SELECT table_schema || '.' || table_name || '.' || column_name || ' ' || data_type || ' ' "
      "|| is_nullable "
      "FROM information_schema.columns WHERE table_catalog = 'skade' ORDER BY table_schema, "
      "table_name, ordinal_position");
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  EXPECT_THAT(*columns,
              ElementsAre("db.big.id BIGINT NO", "db.big.s VARCHAR YES", "db.target.x BIGINT YES",
                          "sales.eu.orders.id BIGINT YES", "sales.eu.orders.amount DOUBLE NO"));
  // SHOW TABLES lists the session schema's tables; DESCRIBE shows NOT NULL.
  ASSERT_TRUE(good.SetSchema("db").ok());
  auto shown = good.Strings("SHOW TABLES");
  ASSERT_TRUE(shown.ok()) << shown.status().ToString();
  EXPECT_THAT(*shown, ElementsAre("big", "target"));
  auto described =
      good.Strings("SELECT column_name || ' ' || \"null\" FROM (DESCRIBE \"sales.eu\".orders)");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  EXPECT_THAT(*described, ElementsAre("id YES", "amount NO"));
  // A typo names the lake's table.
  auto typo = good.Rows("SELECT * FROM targte");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(typo.status().message(), HasSubstr("did you mean db.target?"));
}

TEST_F(FlightServerTest, AtReadsPastSnapshots) {
  auto target = LoadTable(Ident("target"));
  ASSERT_TRUE(target);
  const int64_t first = target->metadata().current_snapshot_id.value_or(0);
  ASSERT_TRUE(target->Append({"SELECT 8 AS x FROM range(3)", nullptr}).ok());
  auto third = target->Append({"SELECT 9 AS x FROM range(4)", nullptr});
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(target->Refresh().ok());
  ASSERT_TRUE(target->CreateTag("five", first).ok());
  StartServer();
  Client good(server_->port(), "good");
  auto count = [&](const std::string& at) -> std::string {
    auto rows = good.Strings(
        "SELECT CAST(count(*) AS VARCHAR) || '/' || CAST(max(x) AS VARCHAR) FROM skade.db.target " +
        at);
    return rows.ok() && rows->size() == 1 ? (*rows)[0] : rows.status().ToString();
  };
  EXPECT_EQ(count(""), "12/9");
  EXPECT_EQ(count("AT (VERSION => " + std::to_string(first) + ")"), "5/7");
  EXPECT_EQ(count("AT (VERSION => 'five')"), "5/7");
  EXPECT_EQ(count("AT (VERSION => " + std::to_string(third->snapshot_id) + ")"), "12/9");
  const int64_t first_ms = target->metadata().SnapshotById(first)->timestamp_ms;
  EXPECT_EQ(count("AT (TIMESTAMP => epoch_ms(" + std::to_string(first_ms) + "))"), "5/7");
  // An unknown snapshot is an error, never the current snapshot.
  auto unknown = good.Rows("SELECT * FROM skade.db.target AT (VERSION => 4242)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
  auto early = good.Rows("SELECT * FROM skade.db.target AT (TIMESTAMP => TIMESTAMP '2000-01-01')");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace skade::flightsql
