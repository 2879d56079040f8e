// IcebergSource::Subscribe: one table's commit events, replayed from the catalog's log after a
// cursor and then tailed live, without the other tables' commits; resuming from cursor().
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skade/events/bus.h"
#include "skade/events/watcher.h"
#include "skade/table/commit_stream.h"
#include "skade/table/table.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using namespace std::chrono_literals;

class TableSubscribeTest : public testing::LakeTest {
 protected:
  void SetUp() override {
    LakeTest::SetUp();
    if (HasFatalFailure()) return;
    Result<std::unique_ptr<events::Watcher>> watcher =
        events::Watcher::Start(*catalog_, "sqlite://" + tmp_.Path("catalog.db"), bus_);
    ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
    watcher_ = std::move(watcher).value();
  }

  void TearDown() override { watcher_.reset(); }

  // Appends `rows` rows; the outcome.
  CommitOutcome AppendRows(Table& t, int rows) {
    Result<CommitOutcome> outcome =
        t.Append({"SELECT range AS id FROM range(" + std::to_string(rows) + ")", nullptr});
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? *outcome : CommitOutcome{};
  }

  // The next `n` events of `stream` (fewer if one does not arrive within 10 s).
  static std::vector<events::CommitEvent> Take(TableCommitStream& stream, size_t n) {
    std::vector<events::CommitEvent> out;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      Result<std::optional<events::CommitEvent>> next = stream.Next(50ms);
      if (!next.ok()) {
        ADD_FAILURE() << next.status().ToString();
        break;
      }
      if (next->has_value()) out.push_back(**next);
    }
    return out;
  }

  static std::vector<int64_t> Seqs(const std::vector<events::CommitEvent>& events) {
    std::vector<int64_t> out;
    for (const events::CommitEvent& e : events) out.push_back(e.commit_seq);
    return out;
  }

  events::Bus bus_;
  std::unique_ptr<events::Watcher> watcher_;
};

TEST_F(TableSubscribeTest, ReplaysThenTailsOnlyThisTable) {
  std::unique_ptr<Table> a = CreateTable("a", "id BIGINT");  // seq 1
  std::unique_ptr<Table> b = CreateTable("b", "id BIGINT");  // seq 2
  ASSERT_TRUE(a && b);
  CommitOutcome a1 = AppendRows(*a, 3);  // 3
  AppendRows(*b, 1);                     // 4
  CommitOutcome a2 = AppendRows(*a, 5);  // 5
  AppendRows(*b, 1);                     // 6
  ASSERT_EQ(a2.commit_seq, 5);

  // From the start of the log: a's creation and both appends, none of b's commits.
  Result<std::unique_ptr<TableCommitStream>> stream = a->Subscribe(bus_, 0);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ((*stream)->table(), Ident("a"));
  std::vector<events::CommitEvent> replayed = Take(**stream, 3);
  EXPECT_EQ(Seqs(replayed), (std::vector<int64_t>{1, a1.commit_seq, a2.commit_seq}));
  ASSERT_EQ(replayed.size(), 3u);
  EXPECT_EQ(replayed[0].operation(), "create");
  EXPECT_EQ(replayed[2].table_name(), "db.a");
  EXPECT_EQ(replayed[2].operation(), "append");
  EXPECT_EQ(replayed[2].snapshot_id, a2.snapshot_id);
  EXPECT_EQ(replayed[2].added_records, 5);
  // Caught up: b's last commit (6) is skipped and nothing else of a's exists yet.
  Result<std::optional<events::CommitEvent>> idle = (*stream)->Next(100ms);
  ASSERT_TRUE(idle.ok());
  EXPECT_FALSE(idle->has_value());
  EXPECT_EQ((*stream)->cursor(), 6);

  // Live: only a's commit arrives, with its snapshot.
  AppendRows(*b, 2);                     // 7
  CommitOutcome a3 = AppendRows(*a, 7);  // 8
  AppendRows(*b, 2);                     // 9
  std::vector<events::CommitEvent> live = Take(**stream, 1);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].commit_seq, a3.commit_seq);
  EXPECT_EQ(live[0].snapshot_id, a3.snapshot_id);
  EXPECT_EQ(live[0].added_records, 7);
  // A metadata-only commit is an event too.
  Result<CommitOutcome> props = a->UpdateProperties({{"owner", "x"}}, {});
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  EXPECT_EQ(Seqs(Take(**stream, 1)), (std::vector<int64_t>{props->commit_seq}));
}

TEST_F(TableSubscribeTest, StartsFromNowAndResumesFromItsCursor) {
  std::unique_ptr<Table> a = CreateTable("a", "id BIGINT");
  std::unique_ptr<Table> b = CreateTable("b", "id BIGINT");
  ASSERT_TRUE(a && b);
  AppendRows(*a, 1);
  // nullopt: history is not replayed.
  Result<std::unique_ptr<TableCommitStream>> live = a->Subscribe(bus_, std::nullopt);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  EXPECT_EQ((*live)->cursor(), 3);
  CommitOutcome a2 = AppendRows(*a, 1);
  EXPECT_EQ(Seqs(Take(**live, 1)), (std::vector<int64_t>{a2.commit_seq}));
  int64_t saved = (*live)->cursor();
  live->reset();

  // While nobody listens: commits to both tables. A stream resumed from the saved cursor gets
  // exactly a's commits after it.
  CommitOutcome a3 = AppendRows(*a, 1);
  AppendRows(*b, 1);
  CommitOutcome a4 = AppendRows(*a, 1);
  Result<std::unique_ptr<TableCommitStream>> resumed = a->Subscribe(bus_, saved);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(Seqs(Take(**resumed, 2)), (std::vector<int64_t>{a3.commit_seq, a4.commit_seq}));
  Result<std::optional<events::CommitEvent>> idle = (*resumed)->Next(100ms);
  ASSERT_TRUE(idle.ok());
  EXPECT_FALSE(idle->has_value());

  EXPECT_EQ(a->Subscribe(bus_, -1).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TableSubscribeTest, ZeroTimeoutStillSkipsOtherTablesCommits) {
  std::unique_ptr<Table> a = CreateTable("a", "id BIGINT");  // seq 1
  std::unique_ptr<Table> b = CreateTable("b", "id BIGINT");  // seq 2
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(b->UpdateProperties({{"k", std::to_string(i)}}, {}).ok());  // 3..22
  }
  Result<CommitOutcome> last = a->UpdateProperties({{"k", "a"}}, {});  // 23
  ASSERT_TRUE(last.ok());
  Result<std::unique_ptr<TableCommitStream>> stream = a->Subscribe(bus_, 1);
  ASSERT_TRUE(stream.ok());
  // Each zero-timeout call examines at least one event, so polling reaches a's commit.
  std::optional<events::CommitEvent> found;
  for (int calls = 0; calls < 100 && !found; ++calls) {
    Result<std::optional<events::CommitEvent>> next = (*stream)->Next(0ns);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    found = *next;
  }
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->commit_seq, last->commit_seq);
  EXPECT_EQ((*stream)->cursor(), last->commit_seq);
}

}  // namespace
}  // namespace skade::table
