#include "skade/io/routing_file_io.h"

#include <string>
#include <utility>

#include "skade/io/delegating_file_io.h"
#include "skade/io/location.h"
#include "skade/io/s3_file_io.h"
#include "skade/io/vended_s3_file_io.h"

namespace skade::io {
namespace {

class RoutingFileIO final : public DelegatingFileIO {
 public:
  RoutingFileIO(std::unique_ptr<FileIO> local, std::unique_ptr<FileIO> s3)
      : local_(std::move(local)), s3_(std::move(s3)) {}

 private:
  Result<Target> Route(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(FileIO * io, Pick(location));
    return Target{io, std::string(location), nullptr};
  }

  Result<FileIO*> Pick(std::string_view location) const {
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
