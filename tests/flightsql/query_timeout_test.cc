// Flight SQL statement timeouts over gRPC on loopback (issue 35): a query or an update past the
// server's timeout is interrupted in DuckDB and answered DEADLINE_EXCEEDED, nothing of it keeps
// running (an update commits nothing), and the server answers the next call; the timeout rule
// `skade serve` applies (sql::ClientStatementTimeout) and the server's default.
#include <time.h>

#include "skade/sql/client_query.h"
#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql::testing {
namespace {

using namespace std::chrono_literals;

// CPU time this process has used, all threads (DuckDB's workers included).
std::chrono::nanoseconds ProcessCpuTime() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// A cross join of a million rows by a million: hours of work, interruptible at any point.
constexpr const char* kEndlessQuery =
    "SELECT count(*) FROM range(1000000) a CROSS JOIN range(1000000) b WHERE (a.range + b.range) % 7 = 3";

// Nothing of a stopped statement runs on: DuckDB's threads stay idle for half a second (the
// endless join would keep both cores busy).
void ExpectNothingRuns() {
  const auto cpu_before = ProcessCpuTime();
  std::this_thread::sleep_for(500ms);
  EXPECT_LT(ProcessCpuTime() - cpu_before, 200ms);
}

// The server answers the next query (db.target holds 5 rows).
void ExpectTheNextQueryAnswered(Client& client) {
  auto rows = client.Rows("SELECT x FROM db.target");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, 5);
}

TEST(ClientStatementTimeoutTest, GivenSecondsElseSixty) {
  EXPECT_EQ(sql::ClientStatementTimeout(5), 5s);
  EXPECT_EQ(sql::ClientStatementTimeout(0), 60s);
  EXPECT_EQ(sql::ClientStatementTimeout(-1), 60s);
  EXPECT_EQ(ServerOptions().query_timeout, 60s);
}

TEST_F(FlightServerTest, AQueryPastTheTimeoutIsDeadlineExceededAndStopsRunning) {
  StartServer([](ServerOptions& o) { o.query_timeout = 1s; });
  Client client(server_->port(), "good");
  const auto started = Clock::now();
  Status st = client.Fetch(kEndlessQuery, [](const ArrowArray&) {});
  const auto took = Clock::now() - started;
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(client.code_of_last_failure(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.ToString();
  // The server looks for statements past their timeout every 100 ms.
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 10s);
  // Nothing of the query runs on: its stream is gone and DuckDB's threads are idle (the join
  // would keep both cores busy).
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 0; }));
  ExpectNothingRuns();
  ExpectTheNextQueryAnswered(client);
}

TEST_F(FlightServerTest, APreparedQueryPastTheTimeoutIsDeadlineExceeded) {
  StartServer([](ServerOptions& o) { o.query_timeout = 1s; });
  Client client(server_->port(), "good");
  auto prepared = client.CreatePrepared(kEndlessQuery);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(prepared->prepared_statement_handle());
  auto info = client.InfoFor(command);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto fetched = client.Get(info->endpoint(0).ticket());
  ASSERT_FALSE(fetched.ok());
  EXPECT_EQ(client.code_of_last_failure(), grpc::StatusCode::DEADLINE_EXCEEDED) << fetched.status().ToString();
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 0; }));
  ExpectTheNextQueryAnswered(client);
}

// An update (CommandStatementUpdate) is stopped alike, inside DuckDB, before it commits.
TEST_F(FlightServerTest, AnUpdatePastTheTimeoutIsDeadlineExceededAndCommitsNothing) {
  StartServer([](ServerOptions& o) { o.query_timeout = 1s; });
  Client client(server_->port(), "good");
  const auto started = Clock::now();
  auto changed = client.Update(std::string("INSERT INTO db.target ") + kEndlessQuery);
  const auto took = Clock::now() - started;
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(client.code_of_last_failure(), grpc::StatusCode::DEADLINE_EXCEEDED) << changed.status().ToString();
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 10s);
  ExpectNothingRuns();
  EXPECT_EQ(Count("target"), "5");
  // The server goes on writing.
  auto inserted = client.Update("INSERT INTO db.target VALUES (8)");
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(*inserted, 1);
  EXPECT_EQ(Count("target"), "6");
}

}  // namespace
}  // namespace skade::flightsql::testing
