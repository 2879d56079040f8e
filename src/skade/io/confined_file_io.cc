#include "skade/io/confined_file_io.h"

#include "skade/io/location.h"

namespace skade::io {

bool IsWithinAnyRoot(std::string_view location, const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    if (!root.empty() && IsWithin(location, root)) return true;
  }
  return false;
}

ConfinedFileIO::ConfinedFileIO(std::shared_ptr<FileIO> inner, std::vector<std::string> roots)
    : inner_(std::move(inner)), roots_(std::move(roots)) {}

void ConfinedFileIO::AddRoot(std::string root) {
  std::lock_guard<std::mutex> lock(mu_);
  roots_.push_back(std::move(root));
}

void ConfinedFileIO::AllowEverything() {
  std::lock_guard<std::mutex> lock(mu_);
  everything_ = true;
}

Result<DelegatingFileIO::Target> ConfinedFileIO::Route(std::string_view location) {
  bool within = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    within = everything_ || IsWithinAnyRoot(location, roots_);
  }
  if (!within) {
    return Status::PermissionDenied("'" + std::string(location) +
                                    "' is outside the warehouse and the allowed directories");
  }
  // What was checked is what is opened: the normal form ("..", "//" and file: forms resolved
  // the same way as for the check), for a local path; object-store keys are passed as given.
  return Target{inner_.get(), IsObjectStoreLocation(location) ? std::string(location) : NormalizeLocation(location),
                nullptr};
}

}  // namespace skade::io
