#include "skade/engine/spill_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "skade/base/uuid.h"

namespace skade::engine {

Result<std::string> NewSpillFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = tmp != nullptr && *tmp == '/' ? tmp : "/tmp";
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  parent += "/skade-" + std::to_string(::getuid());
  if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::IoError("create spill parent '" + parent + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(parent.c_str(), &st) != 0) {
    return Status::IoError("stat spill parent '" + parent + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
    return Status::PermissionDenied("'" + parent +
                                    "' is not a folder of this user that only it can enter: DuckDB would "
                                    "spill where others can read; remove it or set TMPDIR");
  }
  return parent + "/spill-" + std::to_string(::getpid()) + "-" + Uuid::NewV7().ToString();
}

}  // namespace skade::engine
