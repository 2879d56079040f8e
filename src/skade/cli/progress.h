// Progress of long CLI work (ingest, compact, scan to a file) on stderr: a bar redrawn in
// place on a terminal, a plain line every few seconds otherwise, nothing with --quiet.
#pragma once

#include <chrono>
#include <iosfwd>
#include <mutex>
#include <string>

#include "skade/engine/database.h"

namespace skade::cli {

// Thread-safe (Update comes from the database's progress thread).
class ProgressReporter {
 public:
  enum class Style { kBar, kLines, kNone };
  // kBar when `err` is a terminal, kLines otherwise, kNone when quiet.
  static Style StyleFor(bool quiet);

  ProgressReporter(std::string label, std::ostream& err, Style style);
  ~ProgressReporter();  // clears the bar
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Makes `db` report here for this object's lifetime.
  Status Attach(engine::Database& db);
  void Update(const engine::QueryProgress& p);

 private:
  std::string label_;
  std::ostream& err_;
  Style style_;
  engine::Database* db_ = nullptr;
  std::mutex mu_;
  bool drawn_ = false;                              // guarded by mu_
  double last_line_seconds_ = 0;                    // guarded by mu_
};

}  // namespace skade::cli
