// What one client can hold on the Flight SQL server (limits_internal.h): the byte budget and
// the stream monitor alone, then a real server on loopback driven by a gRPC client of the
// FlightService — clients that open DoGets and never read, DoPuts that never finish or are cut
// off, and a compressed message that claims far more memory than it carries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "skade/flightsql/limits_internal.h"
#include "tests/flightsql/flight_server_test.h"

namespace skade::flightsql {
namespace {

namespace pb = ::arrow::flight::protocol;
using Clock = std::chrono::steady_clock;

TEST(MemoryBudgetTest, ReservesWithinItsLimitAndGivesBack) {
  MemoryBudget budget(100);
  auto a = budget.Reserve(60, "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(budget.Reserve(41, "b").status().code(), StatusCode::kResourceExhausted);
  {
    auto b = budget.Reserve(40, "b");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(budget.available(), 0);
  }
  EXPECT_EQ(budget.used(), 60);
  {
    // Progress for a stream that holds nothing: past the limit, and given back all the same.
    auto c = budget.ReserveAnyway(500);
    EXPECT_EQ(budget.used(), 560);
  }
  MemoryBudget::Reservation moved = std::move(*a);
  EXPECT_EQ(budget.used(), 60);
  moved.Release();
  EXPECT_EQ(budget.used(), 0);
  EXPECT_EQ(budget.peak(), 560);
}

TEST(StreamMonitorTest, AdmitsPerOwnerAndInAllAndEndsWatchersOnce) {
  StreamMonitor monitor(StreamLimits{2, 3, std::chrono::milliseconds(10)});
  auto a1 = monitor.Admit("a", nullptr);
  auto a2 = monitor.Admit("a", nullptr);
  ASSERT_TRUE(a1.ok() && a2.ok());
  EXPECT_EQ(monitor.Admit("a", nullptr).status().code(), StatusCode::kResourceExhausted);
  auto b1 = monitor.Admit("b", nullptr);
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(monitor.Admit("c", nullptr).status().code(), StatusCode::kResourceExhausted) << "server limit";
  a1->reset();
  EXPECT_TRUE(monitor.Admit("c", nullptr).ok()) << "a finished stream frees its place";
  int ended = 0;
  {
    auto watch = (*b1)->OnEnd([&] { ++ended; });
    monitor.EndAll();
    monitor.EndAll();
  }
  EXPECT_EQ(ended, 1);
  EXPECT_EQ((*b1)->ended(), StreamEnd::kShutdown);
  // A watch registered after the end runs at once.
  auto late = (*b1)->OnEnd([&] { ++ended; });
  EXPECT_EQ(ended, 2);
}

using testing::Client;
using testing::EncodedBatch;
using testing::FlightServerTest;

// Tight limits: four streams per client, cut off after `stall` without progress.
class StreamLimitsServerTest : public FlightServerTest {
 protected:
  void StartLimited(int64_t budget = int64_t{1} << 30,
                    std::chrono::milliseconds stall = std::chrono::milliseconds(1500)) {
    StartServer([&](ServerOptions& o) {
      o.max_streams_per_client = 4;
      o.stall_timeout = stall;
      o.buffer_budget_bytes = budget;
    });
  }
};

TEST_F(StreamLimitsServerTest, ClientsThatNeverReadAreBoundedThenCutOffWhileOthersRun) {
  // A first stalled stream's clock starts at once, and the checks below must run before it is
  // cut off (and before a refused one could take its place), also under the sanitizers.
  StartLimited(int64_t{1} << 30, std::chrono::milliseconds(8000));
  Client good(server_->port(), "good"), stall(server_->port(), "stall");
  const std::string big = "SELECT * FROM skade.db.big";
  auto idle_start = Clock::now();
  ASSERT_EQ(*good.Rows("SELECT count(*), sum(id) FROM skade.db.big"), 1);
  const auto idle = Clock::now() - idle_start;

  std::vector<std::unique_ptr<Client::StalledGet>> stalled;
  for (int i = 0; i < 6; ++i) {
    auto ticket = stall.Ticket(big);
    ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
    stalled.push_back(stall.StartGet(*ticket));
  }
  // Four are admitted (they hold the schema message and wait); the fifth and sixth are refused.
  for (int i = 4; i < 6; ++i) {
    pb::FlightData unused;
    while (stalled[i]->reader->Read(&unused)) {
    }
    EXPECT_EQ(stalled[i]->reader->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(server_->stats().streams, 4u);
  // Another user's query runs beside them (the strict timing ratio is in bench/RESULTS.md).
  auto busy_start = Clock::now();
  ASSERT_EQ(*good.Rows("SELECT count(*), sum(id) FROM skade.db.big"), 1);
  EXPECT_LT(Clock::now() - busy_start, 10 * idle + std::chrono::seconds(3));
  EXPECT_LT(server_->stats().buffered_peak_bytes, int64_t{64} << 20);

  // Past the stall timeout the four are ended and their owner can query again.
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 0; }, std::chrono::seconds(30)))
      << server_->stats().streams;
  for (int i = 0; i < 4; ++i) {
    stalled[i]->ctx.TryCancel();
    EXPECT_FALSE(stalled[i]->reader->Finish().ok());
  }
  EXPECT_EQ(*stall.Rows("SELECT 42"), 1);
  EXPECT_EQ(server_->stats().buffered_bytes, 0);
}

TEST_F(StreamLimitsServerTest, DoPutsThatStallOrAreCutOffWriteNothing) {
  StartLimited();
  Client stall(server_->port(), "stall");
  const EncodedBatch batch = testing::Zeros(1000, arrow::ipc::Compression::kNone);
  // Sends its schema and then nothing, never finishing: ended after the stall timeout.
  auto idle = stall.StartIngest("never_finished", batch.schema);
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 1; }));
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 0; }));
  EXPECT_EQ(idle->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_FALSE(catalog_->LoadTable(Ident("never_finished")).ok()) << "no table from a DoPut that never finished";

  // Sends three batches and goes away before finishing: nothing of them is appended.
  auto cut = stall.StartIngest("target", batch.schema);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cut->stream->Write(testing::BatchMessage(batch)));
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 1; }));
  cut->ctx.TryCancel();
  cut->Finish();
  ASSERT_TRUE(Eventually([&] { return server_->stats().streams == 0; }));
  EXPECT_EQ(Count("target"), "5");

  // The same DoPut finished properly appends its rows.
  auto done = stall.StartIngest("target", batch.schema);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(done->stream->Write(testing::BatchMessage(batch)));
  ASSERT_TRUE(done->stream->WritesDone());
  grpc::Status st = done->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(Count("target"), "3005");
}

TEST_F(StreamLimitsServerTest, CompressedMessagesClaimingMoreThanTheBudgetAreRefusedBeforeAllocating) {
  StartLimited(int64_t{16} << 20);
  Client stall(server_->port(), "stall");
  // 4M zeros: 32 MiB once decompressed, a few KiB on the wire.
  const EncodedBatch bomb = testing::Zeros(int64_t{4} << 20, arrow::ipc::Compression::kZstd);
  ASSERT_LT(bomb.body.size(), size_t{1} << 20);
  auto put = stall.StartIngest("bombed", bomb.schema);
  put->stream->Write(testing::BatchMessage(bomb));
  put->stream->WritesDone();
  grpc::Status st = put->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_FALSE(catalog_->LoadTable(Ident("bombed")).ok());
  // One that fits the budget goes through, and the server keeps serving.
  const EncodedBatch fits = testing::Zeros(int64_t{1} << 20, arrow::ipc::Compression::kZstd);
  auto ok = stall.StartIngest("target", fits.schema);
  ok->stream->Write(testing::BatchMessage(fits));
  ok->stream->WritesDone();
  st = ok->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(Count("target"), std::to_string(5 + (1 << 20)));
}

}  // namespace
}  // namespace skade::flightsql
