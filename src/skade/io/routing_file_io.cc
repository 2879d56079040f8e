#include "skade/io/routing_file_io.h"

#include <string>
#include <utility>

#include "skade/io/location.h"
#include "skade/io/s3_file_io.h"
#include "skade/io/vended_s3_file_io.h"

namespace skade::io {
namespace {

class RoutingFileIO final : public FileIO {
 public:
  RoutingFileIO(std::unique_ptr<FileIO> local, std::unique_ptr<FileIO> s3)
      : local_(std::move(local)), s3_(std::move(s3)) {}

  Result<std::string> Read(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->Read(location);
  }
  Result<std::string> ReadRange(std::string_view location, int64_t offset,
                                int64_t length) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->ReadRange(location, offset, length);
  }
  Result<FileInfo> Stat(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->Stat(location);
  }
  Status CreateExclusive(std::string_view location, std::string_view data) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->CreateExclusive(location, data);
  }
  Status CreateUnpublished(std::string_view location, std::string_view data) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->CreateUnpublished(location, data);
  }
  Status SyncFolders(const std::vector<std::string>& locations) override {
    std::vector<std::string> local, remote;
    for (const std::string& location : locations) {
      (IsObjectStoreLocation(location) ? remote : local).push_back(location);
    }
    for (const auto* group : {&local, &remote}) {
      if (group->empty()) continue;
      SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(group->front()));
      SKADE_RETURN_IF_ERROR(io->SyncFolders(*group));
    }
    return Status::Ok();
  }
  Status Overwrite(std::string_view location, std::string_view data) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->Overwrite(location, data);
  }
  Status Update(std::string_view location, const Change& change) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->Update(location, change);
  }
  Result<std::vector<FileInfo>> List(std::string_view prefix) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(prefix));
    return io->List(prefix);
  }
  Status Delete(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Route(location));
    return io->Delete(location);
  }
  void ApplyStorageConfig(std::string_view prefix, const std::map<std::string, std::string>& config) override {
    if (IsObjectStoreLocation(prefix) && s3_ != nullptr) s3_->ApplyStorageConfig(prefix, config);
  }

 private:
  Result<FileIO*> Route(std::string_view location) const {
    if (IsObjectStoreLocation(location)) {
      if (s3_ == nullptr) {
        return Status::InvalidArgument("no object store configured for '" + std::string(location) +
                                       "'");
      }
      return s3_.get();
    }
    const std::string scheme = LocationScheme(location);
    if (!scheme.empty() && scheme != "file") {
      return Status::InvalidArgument("unsupported location scheme '" + scheme + "://' in '" +
                                     std::string(location) +
                                     "' (supported: local paths, file:, s3://, s3a://, s3n://)");
    }
    if (local_ == nullptr) {
      return Status::InvalidArgument("no local file system configured for '" +
                                     std::string(location) + "'");
    }
    return local_.get();
  }

  const std::unique_ptr<FileIO> local_;
  const std::unique_ptr<FileIO> s3_;
};

}  // namespace

std::unique_ptr<FileIO> MakeRoutingFileIO(std::unique_ptr<FileIO> local,
                                          std::unique_ptr<FileIO> s3) {
  return std::make_unique<RoutingFileIO>(std::move(local), std::move(s3));
}

std::unique_ptr<FileIO> MakeEnvironmentFileIO() {
  return std::make_unique<RoutingFileIO>(MakeLocalFileIO(), MakeVendedS3FileIO(S3OptionsFromEnvironment()));
}

}  // namespace skade::io
