// HintWriter: version-hint.text follows a table's commits, at most once per interval while they
// keep coming, and Drain and the destructor write what is pending at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "skade/catalog/hint_writer_internal.h"
#include "skade/io/delegating_file_io.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/temp_dir.h"

namespace skade::catalog::internal {
namespace {

using std::chrono::milliseconds;

// Counts the hint replacements that reach the file system.
class CountingFileIO final : public io::DelegatingFileIO {
 public:
  explicit CountingFileIO(io::FileIO& base) : base_(base) {}
  int updates() const { return updates_; }
  Status Update(std::string_view location, const Change& change) override {
    ++updates_;
    return base_.Update(location, change);
  }

 private:
  Result<Target> Route(std::string_view l) override {
    return Target{&base_, std::string(l), nullptr};
  }

  io::FileIO& base_;
  std::atomic<int> updates_{0};
};

class HintWriterTest : public ::testing::Test {
 protected:
  std::string Metadata(int version) const {
    char name[16];
    std::snprintf(name, sizeof name, "%05d", version);
    // The file exists, as a committed one does (a missing one moves no hint).
    const std::string location = tmp_.Path("t/metadata/" + std::string(name) + "-0192.metadata.json");
    testing::WriteFileOrDie(location, "{}");
    return location;
  }
  std::string Hint() const {
    Result<std::string> text = local_->Read(tmp_.Path("t/metadata/version-hint.text"));
    return text.ok() ? *text : "";
  }
  static std::string HintOf(int version) {
    char name[16];
    std::snprintf(name, sizeof name, "%05d", version);
    return std::string(name) + "-0192\n";
  }

  testing::TempDir tmp_;
  std::unique_ptr<io::FileIO> local_ = io::MakeLocalFileIO();
  CountingFileIO counting_{*local_};
};

TEST_F(HintWriterTest, TheFirstCommitAfterAQuietSpellIsHintedAtOnce) {
  HintWriter hints(counting_, std::chrono::hours(1));
  hints.Advance("t", Metadata(1));
  // Not Drain (which hurries): the writer alone writes it, without waiting for the interval.
  ASSERT_TRUE(testing::PollUntil([&] { return Hint() == HintOf(1); }));
  EXPECT_EQ(counting_.updates(), 1);
}

TEST_F(HintWriterTest, AStreamOfCommitsIsHintedOncePerIntervalAndEndsOnTheLast) {
  const milliseconds interval(200);
  HintWriter hints(counting_, interval);
  const auto start = std::chrono::steady_clock::now();
  int version = 0;
  while (std::chrono::steady_clock::now() - start < milliseconds(1000)) {
    hints.Advance("t", Metadata(++version));
    std::this_thread::sleep_for(milliseconds(2));
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_GE(version, 10);
  // The last one is written within the interval, without a Drain.
  ASSERT_TRUE(testing::PollUntil([&] { return Hint() == HintOf(version); }));
  // At most one write per interval of the stream, plus the first and the last.
  const int most = static_cast<int>(elapsed / interval) + 2;
  EXPECT_LE(counting_.updates(), most) << version << " commits";
  EXPECT_GE(counting_.updates(), 2);
}

TEST_F(HintWriterTest, DrainWritesWhatIsPendingWithoutWaitingForTheInterval) {
  // Shared with the thread that drains, so that a Drain that waits for the interval fails the
  // test instead of hanging it.
  auto hints = std::make_shared<HintWriter>(counting_, std::chrono::hours(1));
  hints->Advance("t", Metadata(1));
  ASSERT_TRUE(testing::PollUntil([&] { return Hint() == HintOf(1); }));
  hints->Advance("t", Metadata(2));
  // Within the hour's interval: only Drain's hurry writes it.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> drained = done->get_future();
  std::thread([hints, done] {
    hints->Drain();
    done->set_value();
  }).detach();
  ASSERT_EQ(drained.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "Drain waited for the interval";
  EXPECT_EQ(Hint(), HintOf(2));
}

TEST_F(HintWriterTest, TheDestructorWritesWhatIsPending) {
  {
    HintWriter hints(counting_, std::chrono::hours(1));
    hints.Advance("t", Metadata(1));
    ASSERT_TRUE(testing::PollUntil([&] { return Hint() == HintOf(1); }));
    hints.Advance("t", Metadata(3));
  }
  EXPECT_EQ(Hint(), HintOf(3));
  EXPECT_EQ(counting_.updates(), 2);
}

TEST_F(HintWriterTest, TablesArePacedEachOnItsOwn) {
  HintWriter hints(counting_, std::chrono::hours(1));
  hints.Advance("t", Metadata(1));
  ASSERT_TRUE(testing::PollUntil([&] { return Hint() == HintOf(1); }));
  // Another table's first hint is not held back by t's interval.
  const std::string other = tmp_.Path("u/metadata/00001-0192.metadata.json");
  testing::WriteFileOrDie(other, "{}");
  hints.Advance("u", other);
  ASSERT_TRUE(testing::PollUntil(
      [&] { return local_->Read(tmp_.Path("u/metadata/version-hint.text")).ok(); }));
}

// A hint asked for after its metadata file was deleted (a table dropped with purge while a
// follower of the log was late) is not written: it would bring back the purged folder.
TEST_F(HintWriterTest, AMetadataFileThatIsGoneMovesNoHint) {
  HintWriter hints(counting_, std::chrono::hours(1));
  hints.Advance("gone", tmp_.Path("gone/metadata/00002-0192.metadata.json"));
  hints.Drain();
  EXPECT_FALSE(std::filesystem::exists(tmp_.Path("gone")));
  EXPECT_EQ(counting_.updates(), 0);
}

}  // namespace
}  // namespace skade::catalog::internal
