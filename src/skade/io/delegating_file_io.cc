#include "skade/io/delegating_file_io.h"

#include <utility>

namespace skade::io {

Result<std::string> DelegatingFileIO::Read(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->Read(t.location);
}

Result<std::string> DelegatingFileIO::ReadRange(std::string_view location, int64_t offset,
                                                int64_t length) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->ReadRange(t.location, offset, length);
}

Result<FileInfo> DelegatingFileIO::Stat(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->Stat(t.location);
}

Status DelegatingFileIO::CreateExclusive(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->CreateExclusive(t.location, data);
}

Status DelegatingFileIO::CreateUnpublished(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->CreateUnpublished(t.location, data);
}

Status DelegatingFileIO::CreateUnsynced(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->CreateUnsynced(t.location, data);
}

Status DelegatingFileIO::SyncFiles(const std::vector<std::string>& locations) {
  return ForwardGroups(locations, &FileIO::SyncFiles);
}

Status DelegatingFileIO::SyncFolders(const std::vector<std::string>& locations) {
  return ForwardGroups(locations, &FileIO::SyncFolders);
}

Status DelegatingFileIO::Overwrite(std::string_view location, std::string_view data) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->Overwrite(t.location, data);
}

Status DelegatingFileIO::Update(std::string_view location, const Change& change) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->Update(t.location, change);
}

Result<std::vector<FileInfo>> DelegatingFileIO::List(std::string_view prefix) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(prefix));
  return t.io->List(t.location);
}

Status DelegatingFileIO::Delete(std::string_view location) {
  SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
  return t.io->Delete(t.location);
}

std::string DelegatingFileIO::ResolvedLocation(std::string_view location) {
  Result<Target> t = Route(location);
  return t.ok() ? t->io->ResolvedLocation(t->location) : std::string(location);
}

void DelegatingFileIO::ApplyStorageConfig(std::string_view prefix, const std::map<std::string, std::string>& config,
                                          const StorageSigner& signer) {
  Result<Target> t = Route(prefix);
  if (t.ok()) t->io->ApplyStorageConfig(t->location, config, signer);
}

Status DelegatingFileIO::ForwardGroups(const std::vector<std::string>& locations, GroupCall call) {
  // Groups in the order their first location came, each with its FileIO kept alive.
  std::vector<Target> targets;
  std::vector<std::vector<std::string>> groups;
  for (const std::string& location : locations) {
    SKADE_ASSIGN_OR_RETURN(Target t, Route(location));
    size_t g = 0;
    while (g < targets.size() && targets[g].io != t.io) ++g;
    if (g == targets.size()) {
      groups.emplace_back();
      targets.push_back(t);
    }
    groups[g].push_back(std::move(t.location));
  }
  for (size_t g = 0; g < targets.size(); ++g)
    SKADE_RETURN_IF_ERROR((targets[g].io->*call)(groups[g]));
  return Status::Ok();
}

}  // namespace skade::io
