// Runs tests/lineage/validate_events.py over a file of OpenLineage events (lineage tests).
#pragma once

#include <string>

#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade::lineage {

// Runs tests/lineage/validate_events.py (Python jsonschema, pinned in the "openlineage" interop
// suite, installed by scripts/setup_interop.sh) over a JSON-lines file against the schemas
// pinned in tests/lineage/schemas; "" when every event is valid, else its report. A missing
// virtualenv is a failure, never a skip.
inline std::string ValidatePinned(const std::string& path, int min_events = 1) {
  using testing::RunProcess;
  using testing::ShellQuote;
  auto venv = RunProcess(ShellQuote(skade::testing::SourcePath("scripts/interop_env.sh")) + " openlineage venv");
  if (venv.exit_code != 0) return "no validator: " + venv.err;
  std::string python = venv.out;
  while (!python.empty() && (python.back() == '\n' || python.back() == ' ')) python.pop_back();
  auto r = RunProcess(ShellQuote(python + "/bin/python") + " " +
                      ShellQuote(skade::testing::SourcePath("tests/lineage/validate_events.py")) + " --schemas " +
                      ShellQuote(skade::testing::SourcePath("tests/lineage/schemas")) + " --events " +
                      ShellQuote(path) + " --min-events " + std::to_string(min_events));
  return r.exit_code == 0 && r.out.rfind("ok ", 0) == 0 ? "" : r.out + r.err;
}

}  // namespace skade::lineage
