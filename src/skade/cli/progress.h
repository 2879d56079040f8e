// Progress of long CLI work (ingest, compact, scan to a file) on stderr: a bar redrawn in
// place on a terminal, a plain line every few seconds otherwise, nothing with --quiet. It says
// only what is known: DuckDB's percentage where it can tell one (with the input's size when the
// input is files of known size), else the time so far and a bar that moves to show work goes on.
// DuckDB's "rows" of a statement are not rows (for files they count files or bytes), so none
// are shown.
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

  // Makes `db` report here until Done or the end of this object's lifetime.
  Status Attach(engine::Database& db);
  // The size of the input the work reads (its files), shown with the percentage.
  void set_input_bytes(uint64_t bytes);
  void Update(const engine::QueryProgress& p);
  // Stops reporting and clears the bar: call before printing a summary or an error.
  void Done();

 private:
  std::string label_;
  std::ostream& err_;
  Style style_;
  engine::Database* db_ = nullptr;
  std::mutex mu_;
  uint64_t input_bytes_ = 0;                        // guarded by mu_
  bool drawn_ = false;                              // guarded by mu_
  bool done_ = false;                               // guarded by mu_
  double last_line_seconds_ = 0;                    // guarded by mu_
};

}  // namespace skade::cli
