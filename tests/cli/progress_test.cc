// The progress reporter: a bar redrawn in place on a terminal, plain lines at most every 5 s
// elsewhere, nothing when quiet.
#include "skade/cli/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

engine::QueryProgress At(double percent, uint64_t rows, double seconds) {
  engine::QueryProgress p;
  p.percent = percent;
  p.rows_processed = rows;
  p.total_rows = 10'000'000;
  p.seconds = seconds;
  return p;
}

TEST(ProgressReporterTest, BarIsRedrawnInPlaceAndCleared) {
  std::ostringstream err;
  {
    ProgressReporter bar("ingest demo.t", err, ProgressReporter::Style::kBar);
    bar.Update(At(25, 2'500'000, 1));
    bar.Update(At(50, 5'000'000, 2));
    bar.set_input_bytes(1'500'000'000);
    bar.Update(At(75, 7'500'000, 3));
    EXPECT_THAT(err.str(), HasSubstr("\r\033[Kingest demo.t [############............]  50%, 2s, ETA 2s"));
    EXPECT_THAT(err.str(), HasSubstr("[##################......]  75% of 1.5 GB, 3s, ETA 1s"));
    EXPECT_THAT(err.str(), Not(HasSubstr("rows")));  // DuckDB's "rows" are not rows
    bar.Done();
    EXPECT_EQ(err.str().substr(err.str().size() - 4), "\r\033[K");  // cleared before a summary
    const size_t size = err.str().size();
    bar.Update(At(90, 9, 4));
    EXPECT_EQ(err.str().size(), size);  // nothing drawn after Done
  }
}

TEST(ProgressReporterTest, WithoutAPercentageTheBarMovesAndTellsTheTime) {
  std::ostringstream err;
  ProgressReporter bar("ingest demo.t", err, ProgressReporter::Style::kBar);
  bar.Update(At(-1, 0, 0.5));
  bar.Update(At(-1, 0, 1.0));
  const std::string text = err.str();
  EXPECT_THAT(text, HasSubstr("[..####..................] 1s"));
  EXPECT_THAT(text, HasSubstr("[....####................] 1s"));
  EXPECT_THAT(text, Not(HasSubstr("%")));
  EXPECT_THAT(text, Not(HasSubstr("rows")));
}

TEST(ProgressReporterTest, PlainLinesAtMostEveryFiveSeconds) {
  std::ostringstream err;
  ProgressReporter lines("compact", err, ProgressReporter::Style::kLines);
  lines.Update(At(10, 1'000'000, 1));
  lines.Update(At(20, 2'000'000, 4));
  EXPECT_EQ(err.str(), "");
  lines.Update(At(60, 6'000'000, 6));
  lines.Update(At(70, 7'000'000, 7));
  EXPECT_EQ(err.str(), "skade: compact:  60%, 6s, ETA 4s\n");
  EXPECT_THAT(err.str(), Not(HasSubstr("\r")));
}

TEST(ProgressReporterTest, QuietSaysNothing) {
  std::ostringstream err;
  EXPECT_EQ(ProgressReporter::StyleFor(true), ProgressReporter::Style::kNone);
  ProgressReporter none("scan", err, ProgressReporter::Style::kNone);
  none.Update(At(50, 5, 60));
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace skade::cli
