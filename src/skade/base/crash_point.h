// Test-only crash points for fault injection: with SKADE_CRASH_POINT=<name> in the environment
// the process kills itself (SIGKILL, no cleanup) when it reaches CrashPoint("<name>"), so a
// test can stop a writer exactly between two steps. Without the variable it costs one
// comparison. Thread-safe.
#pragma once

#include <string_view>

namespace skade {

// Named points: "commit.after_metadata_write" (metadata file written, catalog not yet swapped),
// "commit.after_log" (a table commit logged, its version-hint.text not yet asked for).
void CrashPoint(std::string_view name);

}  // namespace skade
