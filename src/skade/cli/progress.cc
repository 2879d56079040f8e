#include "skade/cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace skade::cli {
namespace {

std::string Count(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.1fG", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  } else if (n >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", n);
  }
  return buf;
}

// "45% 4.5M/10.0M rows 1.2M rows/s ETA 4s" (the parts DuckDB can tell).
std::string Describe(const engine::QueryProgress& p) {
  std::string out;
  char buf[64];
  if (p.percent >= 0) {
    std::snprintf(buf, sizeof buf, "%3.0f%% ", p.percent);
    out += buf;
  }
  out += Count(static_cast<double>(p.rows_processed));
  if (p.total_rows > 0) out += "/" + Count(static_cast<double>(p.total_rows));
  out += " rows";
  if (p.seconds > 0) out += " " + Count(static_cast<double>(p.rows_processed) / p.seconds) + " rows/s";
  if (p.percent > 0 && p.percent < 100) {
    double eta = p.seconds * (100 - p.percent) / p.percent;
    std::snprintf(buf, sizeof buf, " ETA %.0fs", std::ceil(eta));
    out += buf;
  }
  return out;
}

}  // namespace

ProgressReporter::Style ProgressReporter::StyleFor(bool quiet) {
  if (quiet) return Style::kNone;
  return ::isatty(STDERR_FILENO) ? Style::kBar : Style::kLines;
}

ProgressReporter::ProgressReporter(std::string label, std::ostream& err, Style style)
    : label_(std::move(label)), err_(err), style_(style) {}

ProgressReporter::~ProgressReporter() {
  if (db_ != nullptr) (void)db_->SetProgressListener({});
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_ && style_ == Style::kBar) err_ << "\r\033[K" << std::flush;
}

Status ProgressReporter::Attach(engine::Database& db) {
  if (style_ == Style::kNone) return Status::Ok();
  db_ = &db;
  return db.SetProgressListener([this](const engine::QueryProgress& p) { Update(p); });
}

void ProgressReporter::Update(const engine::QueryProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (style_ == Style::kBar) {
    constexpr int kWidth = 24;
    int filled = p.percent < 0 ? 0 : static_cast<int>(std::min(100.0, p.percent) * kWidth / 100);
    err_ << "\r\033[K" << label_ << " [" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
         << Describe(p) << std::flush;
    drawn_ = true;
  } else if (style_ == Style::kLines && p.seconds - last_line_seconds_ >= 5) {
    err_ << "skade: " << label_ << ": " << Describe(p) << "\n" << std::flush;
    last_line_seconds_ = p.seconds;
  }
}

}  // namespace skade::cli
