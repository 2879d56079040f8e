// DelegatingFileIO: a FileIO that hands every call to another FileIO chosen per location, the
// location possibly rewritten on the way — the shape shared by routing by scheme, relocation
// and per-prefix storage credentials. A subclass says where a location goes; every operation,
// present and future, is forwarded by this one class.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skade/io/file_io.h"

namespace skade::io {

class DelegatingFileIO : public FileIO {
 public:
  Result<std::string> Read(std::string_view location) override;
  Result<std::string> ReadRange(std::string_view location, int64_t offset, int64_t length) override;
  Result<FileInfo> Stat(std::string_view location) override;
  Status CreateExclusive(std::string_view location, std::string_view data) override;
  Status CreateUnpublished(std::string_view location, std::string_view data) override;
  Status CreateUnsynced(std::string_view location, std::string_view data) override;
  // Locations going to different FileIOs are handed to each in a group of their own.
  Status SyncFiles(const std::vector<std::string>& locations) override;
  Status SyncFolders(const std::vector<std::string>& locations) override;
  Status Overwrite(std::string_view location, std::string_view data) override;
  Status Update(std::string_view location, const Change& change) override;
  Result<std::vector<FileInfo>> List(std::string_view prefix) override;
  Status Delete(std::string_view location) override;
  // The target's answer for the routed location; `location` itself when it goes nowhere.
  std::string ResolvedLocation(std::string_view location) override;
  // Forwarded to where `prefix` goes; a prefix that goes nowhere is ignored.
  void ApplyStorageConfig(std::string_view prefix, const std::map<std::string, std::string>& config,
                          const StorageSigner& signer = nullptr) override;

 protected:
  // Where one location goes: the FileIO (kept alive by `hold` when it may be replaced while a
  // call is in flight) and the location as that FileIO is to see it.
  struct Target {
    FileIO* io = nullptr;
    std::string location;
    std::shared_ptr<FileIO> hold;
  };
  // Where `location` goes; an error fails the call that asked.
  virtual Result<Target> Route(std::string_view location) = 0;

 private:
  using GroupCall = Status (FileIO::*)(const std::vector<std::string>&);
  Status ForwardGroups(const std::vector<std::string>& locations, GroupCall call);
};

}  // namespace skade::io
