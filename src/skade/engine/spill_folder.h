// Where a locked-down DuckDB spills: a folder of its own per process, outside the warehouse
// and every other allowed directory, in a parent only this user can enter. DuckDB lets every
// query reach its temp_directory, so the spill folder guard (file_guard_internal.h) refuses
// queries there; outside the warehouse no glob spelled from an allowed folder reaches it, and
// the private parent keeps other local users out.
#pragma once

#include <string>

#include "skade/base/status.h"

namespace skade::engine {

// A new spill folder name, `<TMPDIR or /tmp>/skade-<uid>/spill-<pid>-<uuid>`. The parent is
// created mode 0700 when absent; DuckDB creates the folder itself on its first spill and removes
// it when the database closes. kPermissionDenied when the parent exists but is not a folder
// owned by this user that only this user can enter (never spill where others can look).
Result<std::string> NewSpillFolder();

}  // namespace skade::engine
