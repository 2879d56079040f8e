// Wall-clock helpers in the units Iceberg uses (milliseconds and microseconds since the epoch).
#pragma once

#include <cstdint>

namespace skade {

// Milliseconds since 1970-01-01T00:00:00Z.
int64_t NowMillis();
// Microseconds since 1970-01-01T00:00:00Z.
int64_t NowMicros();
// Monotonic nanoseconds (for durations only).
int64_t MonotonicNanos();

}  // namespace skade
