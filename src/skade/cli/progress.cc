#include "skade/cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace skade::cli {
namespace {

std::string Bytes(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.1f GB", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f MB", n / 1e6);
  } else if (n >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f kB", n / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", n);
  }
  return buf;
}

std::string Duration(double seconds) {
  char buf[32];
  const long s = static_cast<long>(std::ceil(seconds));
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", s);
  }
  return buf;
}

// Whether DuckDB tells how far the statement is: sources it cannot measure (range(), a
// query's own rows) report -1 or stay at 0.
bool Known(const engine::QueryProgress& p) { return p.percent > 0; }

// " 45% of 1.2 GB, 12s, ETA 15s" where DuckDB tells a percentage; "12s" where it cannot.
std::string Describe(const engine::QueryProgress& p, uint64_t input_bytes) {
  std::string out;
  if (Known(p)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%3.0f%%", std::min(100.0, p.percent));
    out += buf;
    if (input_bytes > 0) out += " of " + Bytes(static_cast<double>(input_bytes));
    out += ", ";
  }
  out += Duration(p.seconds);
  if (p.percent > 0 && p.percent < 100) out += ", ETA " + Duration(p.seconds * (100 - p.percent) / p.percent);
  return out;
}

}  // namespace

ProgressReporter::Style ProgressReporter::StyleFor(bool quiet) {
  if (quiet) return Style::kNone;
  return ::isatty(STDERR_FILENO) ? Style::kBar : Style::kLines;
}

ProgressReporter::ProgressReporter(std::string label, std::ostream& err, Style style)
    : label_(std::move(label)), err_(err), style_(style) {}

ProgressReporter::~ProgressReporter() { Done(); }

void ProgressReporter::Done() {
  if (db_ != nullptr) (void)db_->SetProgressListener({});
  db_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  if (drawn_ && style_ == Style::kBar) err_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

void ProgressReporter::set_input_bytes(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  input_bytes_ = bytes;
}

Status ProgressReporter::Attach(engine::Database& db) {
  if (style_ == Style::kNone) return Status::Ok();
  db_ = &db;
  return db.SetProgressListener([this](const engine::QueryProgress& p) { Update(p); });
}

void ProgressReporter::Update(const engine::QueryProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  if (style_ == Style::kBar) {
    constexpr int kWidth = 24;
    std::string bar(kWidth, '.');
    if (Known(p)) {
      const int filled = static_cast<int>(std::min(100.0, p.percent) * kWidth / 100);
      bar.replace(0, filled, std::string(filled, '#'));
    } else {
      // No percentage: a block that sweeps back and forth, four steps a second.
      constexpr int kBlock = 4;
      constexpr int kTravel = kWidth - kBlock;
      const int step = static_cast<int>(p.seconds * 4) % (2 * kTravel);
      const int at = step <= kTravel ? step : 2 * kTravel - step;
      bar.replace(at, kBlock, std::string(kBlock, '#'));
    }
    err_ << "\r\033[K" << label_ << " [" << bar << "] " << Describe(p, input_bytes_) << std::flush;
    drawn_ = true;
  } else if (style_ == Style::kLines && p.seconds - last_line_seconds_ >= 5) {
    err_ << "skade: " << label_ << ": " << Describe(p, input_bytes_) << "\n" << std::flush;
    last_line_seconds_ = p.seconds;
  }
}

}  // namespace skade::cli
