// Several servers behind a load balancer with no affinity: given one shared key, a ticket,
// prepared-statement handle (with its bound parameters) or session cookie issued by one server
// is served by another; a server with another key, or another user, gets nothing from them.
#include <gtest/gtest.h>

#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

using testing::Client;
using testing::Encode;
using testing::FlightServerTest;
using testing::View;
namespace pb = testing::pb;
namespace pbsql = testing::pbsql;

testing::EncodedBatch OneBigint(int64_t v) {
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("1", "l", true);
  auto b = arrow::RecordBatchBuilder(std::move(columns));
  b.AppendStruct();
  b.child(0).AppendInt(v);
  return Encode(std::move(b));
}

// The first column of the first row of a DoGet, a BIGINT.
Result<int64_t> FirstBigint(Client& client, const pb::Ticket& ticket) {
  SKADE_ASSIGN_OR_RETURN(auto fetched, client.Get(ticket));
  if (fetched.batches.empty() || fetched.batches[0]->length == 0) return Status::Internal("no rows");
  const ArrowArray& column = *fetched.batches[0]->children[0];
  if (std::string_view(fetched.schema->children[0]->format) != "l") return Status::Internal("not a BIGINT");
  return static_cast<const int64_t*>(column.buffers[1])[column.offset];
}

class SharedKeyTest : public FlightServerTest {
 protected:
  void SetUp() override {
    FlightServerTest::SetUp();
    auto key = io::Sealer::FromText(std::string(64, '5'));
    ASSERT_TRUE(key.ok());
    key_ = *key;
    StartServer([&](ServerOptions& o) { Share(o); });
    auto second = Start(true);
    ASSERT_NE(second, nullptr);
    second_ = std::move(second);
    auto stranger = Start(false);
    ASSERT_NE(stranger, nullptr);
    stranger_ = std::move(stranger);
  }

  void Share(ServerOptions& o) {
    o.sealer = key_;
    AuthOptions auth;
    auth.users = {{"stall", "pw"}, {"good", "pw"}};
    auth.sealer = key_;
    o.authenticator = std::make_shared<Authenticator>(auth);
  }

  std::unique_ptr<FlightSqlServer> Start(bool shared) {
    ServerOptions o;
    o.port = 0;
    if (shared) {
      Share(o);
    } else {
      AuthOptions auth;
      auth.users = {{"stall", "pw"}, {"good", "pw"}};
      o.authenticator = std::make_shared<Authenticator>(auth);
    }
    auto server = FlightSqlServer::Start(*lake_, o);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(*server) : nullptr;
  }

  std::shared_ptr<const io::Sealer> key_;
  std::unique_ptr<FlightSqlServer> second_;
  std::unique_ptr<FlightSqlServer> stranger_;
};

TEST_F(SharedKeyTest, ATicketOfOneServerIsFetchedFromAnother) {
  Client one(server_->port(), "good");
  Client two(second_->port(), "good");
  Client other_user(second_->port(), "stall");
  Client stranger(stranger_->port(), "good");
  auto info = one.Info("SELECT count(*) AS n FROM db.big");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const pb::Ticket& ticket = info->endpoint(0).ticket();
  auto n = FirstBigint(two, ticket);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 200000);
  EXPECT_FALSE(other_user.Get(ticket).ok());
  EXPECT_EQ(other_user.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(stranger.Get(ticket).ok());
  EXPECT_EQ(stranger.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SharedKeyTest, ASessionCookieCarriesItsSchemaToAnotherServer) {
  Client one(server_->port(), "good");
  ASSERT_TRUE(one.SetSchema("db").ok());
  ASSERT_FALSE(one.cookie().empty());
  Client two(second_->port(), "good");
  two.set_cookie(one.cookie());
  auto count = two.Strings("SELECT CAST(count(*) AS VARCHAR) FROM target");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, std::vector<std::string>{"5"});
  Client stranger(stranger_->port(), "good");
  stranger.set_cookie(one.cookie());
  EXPECT_FALSE(stranger.Strings("SELECT 1").ok());
  EXPECT_EQ(stranger.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SharedKeyTest, APreparedQueryAndItsParametersMoveBetweenServers) {
  Client one(server_->port(), "good");
  Client two(second_->port(), "good");
  auto prepared = one.CreatePrepared("SELECT x + ? AS y FROM db.target LIMIT 1");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(prepared->prepared_statement_handle());
  auto param = OneBigint(35);
  pb::PutResult put;
  auto answered = one.PutParameters(command, View(param), &put);
  ASSERT_TRUE(answered.ok() && *answered) << answered.status().ToString();
  pbsql::DoPutPreparedStatementResult bound;
  ASSERT_TRUE(bound.ParseFromString(put.app_metadata()));
  ASSERT_TRUE(bound.has_prepared_statement_handle());
  EXPECT_NE(bound.prepared_statement_handle(), prepared->prepared_statement_handle());

  // The new handle carries the parameter: the second server runs the statement with it.
  pbsql::CommandPreparedStatementQuery with_params;
  with_params.set_prepared_statement_handle(bound.prepared_statement_handle());
  auto info = two.InfoFor(with_params);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto y = FirstBigint(two, info->endpoint(0).ticket());
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(*y, 42);
  // The first handle has no parameters on the second server: refused, not run with none.
  auto unbound = two.InfoFor(command);
  ASSERT_TRUE(unbound.ok()) << unbound.status().ToString();
  EXPECT_FALSE(two.Get(unbound->endpoint(0).ticket()).ok());
  EXPECT_EQ(two.code_of_last_failure(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SharedKeyTest, APreparedWriteIsExecutedOnAnotherServer) {
  Client one(server_->port(), "good");
  Client two(second_->port(), "good");
  Client other_user(second_->port(), "stall");
  auto prepared = one.CreatePrepared("INSERT INTO db.target VALUES (?)");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  auto param = OneBigint(9);
  EXPECT_FALSE(other_user.PreparedUpdate(prepared->prepared_statement_handle(), View(param)).ok());
  EXPECT_EQ(other_user.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Count("target"), "5");
  auto changed = two.PreparedUpdate(prepared->prepared_statement_handle(), View(param));
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(*changed, 1);
  EXPECT_EQ(Count("target"), "6");
}

}  // namespace
}  // namespace skade::flightsql
