// Writes as SQL clients send them: a prepared write announces the types its parameter markers
// take (the Flight SQL JDBC driver builds its parameter vectors from them, and a parameter of
// the null type takes only NULL there), and a write sees the caller's session as its queries
// do: current_user is the authenticated user, unqualified names resolve in the session schema.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using testing::Encode;
using testing::FlightServerTest;
using testing::View;
using ::testing::ElementsAre;
namespace pbsql = testing::pbsql;

// The formats of the fields of an IPC-encapsulated schema, in order.
std::vector<std::string> Formats(const std::string& ipc_schema) {
  auto reader = arrow::ipc::StreamReader::Open(ipc_schema);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  auto schema = (*reader)->ExportSchema();
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  if (!schema.ok()) return {};
  std::vector<std::string> out;
  for (int64_t i = 0; i < (*schema)->n_children; ++i) out.emplace_back((*schema)->children[i]->format);
  return out;
}

// The parameter formats CreatePreparedStatement announces for `sql` (empty when it fails).
std::vector<std::string> ParameterFormats(Client& client, const std::string& sql) {
  auto prepared = client.CreatePrepared(sql);
  EXPECT_TRUE(prepared.ok()) << sql << ": " << prepared.status().ToString();
  return prepared.ok() ? Formats(prepared->parameter_schema()) : std::vector<std::string>{};
}

// One parameter row as the JDBC driver makes it for `k INTEGER, v VARCHAR`: in the announced
// types, int32 and utf8.
testing::EncodedBatch IntAndText(int64_t k, const std::string& v) {
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "i", true);
  columns.emplace_back("2", "u", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(k);
  b.child(1).AppendString(v);
  return Encode(std::move(b));
}

class PreparedWriteTest : public FlightServerTest {
 protected:
  void SetUp() override {
    FlightServerTest::SetUp();
    ASSERT_NE(CreateTable("typed", "k INTEGER, v VARCHAR, d DECIMAL(12,3), day DATE, ts TIMESTAMPTZ, b BIGINT, u UUID"),
              nullptr);
    ASSERT_NE(CreateTable("kv", "k INTEGER, v VARCHAR"), nullptr);
  }

  std::vector<std::string> Values(Client& client, const std::string& sql) {
    auto got = client.Strings(sql);
    EXPECT_TRUE(got.ok()) << sql << ": " << got.status().ToString();
    return got.ok() ? *got : std::vector<std::string>{};
  }
};

// Every marker was announced with the null type, so the JDBC driver could bind nothing but
// NULL ("Can't set non-null value on NullVector").
TEST_F(PreparedWriteTest, APreparedWriteAnnouncesTheTypesOfItsMarkers) {
  StartServer();
  Client good(server_->port(), "good");
  EXPECT_THAT(ParameterFormats(good, "INSERT INTO skade.db.typed VALUES (?, ?, ?, ?, ?, ?, ?)"),
              ElementsAre("i", "u", "d:12,3", "tdD", "tsm:UTC", "l", "u"));
  EXPECT_THAT(ParameterFormats(good, "INSERT INTO skade.db.typed (b, v) VALUES (?, ?), (1, ?)"),
              ElementsAre("l", "u", "u"));
  EXPECT_THAT(ParameterFormats(good, "UPDATE skade.db.typed SET v = ?, d = ? WHERE k = ? AND ts > ?"),
              ElementsAre("u", "d:12,3", "i", "tsm:UTC"));
  EXPECT_THAT(ParameterFormats(good, "DELETE FROM skade.db.typed WHERE typed.day < ? OR b IN (SELECT x FROM "
                                     "skade.db.target WHERE x > ?)"),
              ElementsAre("tdD", "l"));
  EXPECT_THAT(ParameterFormats(good, "UPDATE skade.db.typed t SET b = $2 WHERE t.k = $1"), ElementsAre("i", "l"));
  // Markers DuckDB cannot type stay of the null type (they take a value of any type), as a
  // query's do (SELECT ?).
  EXPECT_THAT(ParameterFormats(good, "INSERT INTO skade.db.typed (k) SELECT ?"), ElementsAre("n"));
  EXPECT_THAT(ParameterFormats(good, "UPDATE skade.db.typed SET b = ? + 1 WHERE k = ?"), ElementsAre("n", "i"));
  EXPECT_THAT(ParameterFormats(good, "CREATE TABLE skade.db.made AS SELECT ? AS a"), ElementsAre("n"));
  EXPECT_THAT(ParameterFormats(good, "INSERT INTO skade.db.typed VALUES (1, 'a', 2, DATE '2024-01-01', NULL, 3, NULL)"),
              ElementsAre());
  // A write into a table that does not exist fails when prepared, as a query of it does.
  EXPECT_FALSE(good.CreatePrepared("INSERT INTO skade.db.nope VALUES (?)").ok());
  EXPECT_EQ(good.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Count("typed"), "0");  // preparing ran nothing
}

// The JDBC driver's way: a parameter batch in the announced types, bound to INSERT, UPDATE and
// DELETE, each run once per bound row.
TEST_F(PreparedWriteTest, ValuesInTheAnnouncedTypesBindAndWrite) {
  StartServer();
  Client good(server_->port(), "good");
  auto insert = good.CreatePrepared("INSERT INTO skade.db.kv VALUES (?, ?)");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  ASSERT_THAT(Formats(insert->parameter_schema()), ElementsAre("i", "u"));
  for (int64_t k : {1, 2}) {
    auto n = good.PreparedUpdate(insert->prepared_statement_handle(), View(IntAndText(k, "v" + std::to_string(k))));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 1);
  }
  auto update = good.CreatePrepared("UPDATE skade.db.kv SET v = ? WHERE k = ?");
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  ASSERT_THAT(Formats(update->parameter_schema()), ElementsAre("u", "i"));
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "u", true);
  columns.emplace_back("2", "i", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendString("edited");
  b.child(1).AppendInt(2);
  auto updated = good.PreparedUpdate(update->prepared_statement_handle(), View(Encode(std::move(b))));
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(*updated, 1);
  auto remove = good.CreatePrepared("DELETE FROM skade.db.kv WHERE k = ?");
  ASSERT_TRUE(remove.ok()) << remove.status().ToString();
  ASSERT_THAT(Formats(remove->parameter_schema()), ElementsAre("i"));
  std::vector<arrow::ArrayBuilder> key;
  key.emplace_back("1", "i", true);
  auto k = arrow::RecordBatchBuilder(std::move(key));
  k.AppendStruct();
  k.child(0).AppendInt(1);
  auto removed = good.PreparedUpdate(remove->prepared_statement_handle(), View(Encode(std::move(k))));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 1);
  EXPECT_THAT(Values(good, "SELECT k || '=' || v FROM skade.db.kv ORDER BY k"), ElementsAre("2=edited"));
}

// A write stored DuckDB's own "duckdb" for current_user: its SQL ran on connections without the
// session's macros.
TEST_F(PreparedWriteTest, AWriteSeesTheAuthenticatedUser) {
  StartServer();
  Client good(server_->port(), "good"), stall(server_->port(), "stall");
  ASSERT_EQ(*good.Update("INSERT INTO skade.db.kv VALUES (1, current_user), (2, 'x')"), 2);
  EXPECT_THAT(Values(good, "SELECT v FROM skade.db.kv ORDER BY k"), ElementsAre("good", "x"));
  ASSERT_EQ(*stall.Update("UPDATE skade.db.kv SET v = concat_ws(',', user, session_user, current_role) WHERE k = 2"),
            1);
  EXPECT_THAT(Values(good, "SELECT v FROM skade.db.kv ORDER BY k"), ElementsAre("good", "stall,stall,stall"));
  // In a condition: each user deletes only the row naming them.
  ASSERT_EQ(*stall.Update("DELETE FROM skade.db.kv WHERE v = current_user"), 0);
  ASSERT_EQ(*good.Update("DELETE FROM skade.db.kv WHERE v = current_user"), 1);
  EXPECT_THAT(Values(good, "SELECT CAST(k AS VARCHAR) FROM skade.db.kv"), ElementsAre("2"));
  // A write statement sent as a query, CREATE TABLE … AS, and a prepared write with parameters.
  pbsql::CommandStatementQuery as_query;
  as_query.set_query("INSERT INTO skade.db.kv SELECT 3, current_user");
  ASSERT_TRUE(stall.InfoFor(as_query).ok());
  ASSERT_EQ(*good.Update("CREATE TABLE skade.db.made AS SELECT current_user AS who"), 1);
  EXPECT_THAT(Values(good, "SELECT who FROM skade.db.made"), ElementsAre("good"));
  auto prepared = stall.CreatePrepared("INSERT INTO skade.db.kv VALUES (?, current_user || ?)");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  ASSERT_TRUE(stall.PreparedUpdate(prepared->prepared_statement_handle(), View(IntAndText(4, "!"))).ok());
  EXPECT_THAT(Values(good, "SELECT k || '=' || v FROM skade.db.kv ORDER BY k"),
              ElementsAre("2=stall,stall,stall", "3=stall", "4=stall!"));
}

// DuckDB's rule holds in writes as in queries: a name such as `user` is a column where the
// statement has one, and the session's user only where it has none.
TEST_F(PreparedWriteTest, AColumnNamedUserIsTheColumnInWritesToo) {
  ASSERT_NE(CreateTable("logins", "\"user\" VARCHAR, note VARCHAR"), nullptr);
  StartServer();
  Client good(server_->port(), "good");
  ASSERT_EQ(*good.Update("INSERT INTO skade.db.logins VALUES ('carol', NULL), ('dave', NULL)"), 2);
  ASSERT_EQ(*good.Update("UPDATE skade.db.logins SET note = user || ' by ' || current_user WHERE user = 'carol'"), 1);
  ASSERT_EQ(*good.Update("INSERT INTO skade.db.kv SELECT 1, user FROM skade.db.logins WHERE note IS NULL"), 1);
  ASSERT_EQ(*good.Update("INSERT INTO skade.db.kv SELECT 2, user"), 1);
  EXPECT_THAT(Values(good, "SELECT coalesce(note, '-') FROM skade.db.logins ORDER BY \"user\""),
              ElementsAre("carol by good", "-"));
  EXPECT_THAT(Values(good, "SELECT v FROM skade.db.kv ORDER BY k"), ElementsAre("dave", "good"));
}

// Unqualified names in a write's query, condition and assigned values did not resolve in the
// session schema (only its target's did).
TEST_F(PreparedWriteTest, AWriteResolvesNamesInTheSessionSchema) {
  StartServer();
  Client good(server_->port(), "good");
  ASSERT_TRUE(good.SetSchema("db").ok());
  auto copied = good.Update("INSERT INTO target SELECT x + 1 FROM target");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(*copied, 5);
  auto deleted = good.Update("DELETE FROM target WHERE x < (SELECT max(x) FROM target)");
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(*deleted, 5);
  ASSERT_EQ(*good.Update("INSERT INTO kv VALUES (1, 'a')"), 1);
  auto updated = good.Update("UPDATE kv SET v = (SELECT CAST(min(x) AS VARCHAR) FROM target)");
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_THAT(Values(good, "SELECT v FROM kv"), ElementsAre("8"));
  // A prepared write's markers are typed against the table the session's name means.
  auto insert = good.CreatePrepared("INSERT INTO kv SELECT ?, v FROM kv WHERE k = ?");
  ASSERT_TRUE(insert.ok()) << insert.status().ToString();
  EXPECT_THAT(Formats(insert->parameter_schema()), ElementsAre("n", "i"));
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "l", true);
  columns.emplace_back("2", "i", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(2);
  b.child(1).AppendInt(1);
  auto n = good.PreparedUpdate(insert->prepared_statement_handle(), View(Encode(std::move(b))));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_THAT(Values(good, "SELECT k || '=' || v FROM kv ORDER BY k"), ElementsAre("1=8", "2=8"));
}

}  // namespace
}  // namespace skade::flightsql
