// A FileIO that reaches only below given roots (a server's warehouse and its allowed
// directories): every location, wherever it came from — a request, a registered metadata file,
// a manifest list or manifest that names another file — passes this one rule before any byte is
// read, written or deleted.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "skade/io/delegating_file_io.h"

namespace skade::io {

// Whether `location` lies within one of `roots` (io::IsWithin, after one normalisation: "..",
// "//", file: forms and s3a:/s3n: aliases cannot step out). Empty roots contain nothing.
bool IsWithinAnyRoot(std::string_view location, const std::vector<std::string>& roots);

// Forwards to `inner` the calls whose locations lie within one of the roots; anything else is
// kPermissionDenied naming the location. Thread-safe.
class ConfinedFileIO final : public DelegatingFileIO {
 public:
  ConfinedFileIO(std::shared_ptr<FileIO> inner, std::vector<std::string> roots);

  // Adds a root (e.g. the warehouse a remote catalog names once it is opened).
  void AddRoot(std::string root);
  // Lifts the confinement: every location is forwarded (a catalog that names no warehouse and
  // no allowed directory was given; the caller says so to the operator).
  void AllowEverything();

 protected:
  Result<Target> Route(std::string_view location) override;

 private:
  const std::shared_ptr<FileIO> inner_;
  std::mutex mu_;
  std::vector<std::string> roots_;
  bool everything_ = false;
};

}  // namespace skade::io
