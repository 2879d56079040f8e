// Small helpers shared by the benchmark programs: timing, medians, Arrow stream draining and
// the process's memory high-water mark (Linux /proc).
#pragma once

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "skade/arrow/c_data.h"
#include "skade/base/clock.h"
#include "skade/base/status.h"

namespace skade::bench {

// Seconds since an arbitrary point (monotonic).
inline double NowSeconds() { return static_cast<double>(MonotonicNanos()) / 1e9; }

// User + system CPU time of the whole process so far (every thread): per operation it varies
// far less than wall time on a machine others share.
inline double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The nearest-rank percentile `p` (0–100) of `values`; 0 when there are none.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<size_t>(rank, 1)) - 1];
}

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Reads every batch of `stream` and returns the number of rows; `first_batch_at`, when given,
// gets NowSeconds() at the first batch.
inline Result<int64_t> DrainStream(arrow::StreamHandle& stream, double* first_batch_at = nullptr) {
  int64_t rows = 0;
  bool first = true;
  while (true) {
    arrow::ArrayHandle batch;
    if (stream->get_next(stream.get(), batch.get()) != 0) {
      const char* e = stream->get_last_error(stream.get());
      return Status::Internal(std::string("stream failed: ") + (e ? e : "unknown"));
    }
    if (!batch.valid()) break;
    if (first && first_batch_at != nullptr) *first_batch_at = NowSeconds();
    first = false;
    rows += batch->length;
  }
  return rows;
}

// A field of /proc/self/status in KiB ("VmHWM", "VmRSS"); -1 if unavailable.
inline int64_t ProcStatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    size_t pos = line.find_first_of("0123456789", field.size() + 1);
    if (pos == std::string::npos) return -1;
    int64_t kb = -1;
    std::from_chars(line.data() + pos, line.data() + line.size(), kb);
    return kb;
  }
  return -1;
}

// Returns freed heap memory to the OS (so an earlier phase's garbage doesn't hide this phase's
// growth), then resets the peak-RSS counter (VmHWM) to the current RSS (Linux "clear_refs"
// value 5).
inline bool ResetPeakRss() {
  malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out);
}

}  // namespace skade::bench
