#include "skade/io/vended_s3_file_io.h"

#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "skade/base/log.h"
#include "skade/io/delegating_file_io.h"
#include "skade/io/location.h"

namespace skade::io {

Result<std::optional<S3Options>> S3OptionsFromStorageConfig(const S3Options& base,
                                                            const std::map<std::string, std::string>& config,
                                                            const StorageSigner& signer) {
  auto get = [&](const char* key) -> const std::string* {
    auto it = config.find(key);
    return it == config.end() ? nullptr : &it->second;
  };
  S3Options o = base;
  bool applied = false;
  const std::string* key = get("s3.access-key-id");
  const std::string* secret = get("s3.secret-access-key");
  if ((key == nullptr) != (secret == nullptr)) {
    return Status::InvalidArgument(std::string("vended storage settings give ") +
                                   (key ? "s3.access-key-id without s3.secret-access-key"
                                        : "s3.secret-access-key without s3.access-key-id"));
  }
  if (key != nullptr) {
    o.access_key_id = *key;
    o.secret_access_key = *secret;
    const std::string* token = get("s3.session-token");
    o.session_token = token ? *token : "";
    applied = true;
  }
  if (const std::string* endpoint = get("s3.endpoint"); endpoint && !endpoint->empty()) {
    o.endpoint = *endpoint;
    applied = true;
  }
  for (const char* region_key : {"client.region", "s3.region"}) {
    if (const std::string* region = get(region_key); region && !region->empty()) {
      o.region = *region;
      applied = true;
      break;
    }
  }
  if (const std::string* path_style = get("s3.path-style-access")) {
    if (*path_style != "true" && *path_style != "false") {
      return Status::InvalidArgument("vended s3.path-style-access is '" + *path_style + "', not true or false");
    }
    o.path_style = *path_style == "true";
    applied = true;
  }
  if (const std::string* remote = get("s3.remote-signing-enabled"); remote && *remote == "true" && signer) {
    // The catalog signs: no key of this process goes to the store for these locations.
    o.remote_signer = signer;
    o.access_key_id.clear();
    o.secret_access_key.clear();
    o.session_token.clear();
    applied = true;
  }
  if (!applied) return std::optional<S3Options>();
  return std::optional<S3Options>(std::move(o));
}

namespace {

class VendedS3FileIO final : public DelegatingFileIO {
 public:
  explicit VendedS3FileIO(Result<S3Options> fallback) {
    if (fallback.ok()) {
      base_ = *fallback;
      fallback_ = MakeS3FileIO(*fallback);
    } else {
      // Its own code: a missing profile (kNotFound) must not read as a missing file.
      fallback_error_ = Status::InvalidArgument("object storage is not configured: " + fallback.status().message());
    }
  }

  void ApplyStorageConfig(std::string_view prefix, const std::map<std::string, std::string>& config,
                          const StorageSigner& signer) override {
    if (!IsObjectStoreLocation(prefix)) return;
    const std::string normal = NormalizeLocation(prefix);
    {
      std::shared_lock lock(mu_);
      auto it = scopes_.find(normal);
      // Renewed with the same settings (a signer is the catalog's for the table: the same one).
      if (it != scopes_.end() && it->second.config == config && static_cast<bool>(it->second.signer) == static_cast<bool>(signer)) {
        return;
      }
    }
    auto options = S3OptionsFromStorageConfig(base_, config, signer);
    if (!options.ok()) {
      SKADE_LOG_WARN("ignoring the storage settings vended for {}: {}", normal, options.status().ToString());
      return;
    }
    if (!*options) return;
    auto io = S3FileIO::Open(**options);
    if (!io.ok()) {
      SKADE_LOG_WARN("ignoring the storage settings vended for {}: {}", normal, io.status().ToString());
      return;
    }
    std::unique_lock lock(mu_);
    scopes_[normal] = Scope{config, signer, std::shared_ptr<FileIO>(std::move(*io))};
  }

 private:
  struct Scope {
    std::map<std::string, std::string> config;
    StorageSigner signer;
    std::shared_ptr<FileIO> io;
  };

  // The FileIO of the longest vended prefix holding `location`, else the fallback. Shared, so
  // settings replaced meanwhile do not pull it from under a call in flight.
  Result<Target> Route(std::string_view location) override {
    SKADE_ASSIGN_OR_RETURN(std::shared_ptr<FileIO> io, Pick(location));
    FileIO* raw = io.get();
    return Target{raw, std::string(location), std::move(io)};
  }

  Result<std::shared_ptr<FileIO>> Pick(std::string_view location) const {
    {
      std::shared_lock lock(mu_);
      const Scope* best = nullptr;
      size_t best_size = 0;
      for (const auto& [prefix, scope] : scopes_) {
        if (prefix.size() >= best_size && IsWithin(location, prefix)) {
          best = &scope;
          best_size = prefix.size();
        }
      }
      if (best != nullptr) return best->io;
    }
    if (fallback_ == nullptr) {
      return Status(fallback_error_.code(),
                    fallback_error_.message() + " (so '" + std::string(location) + "' cannot be reached)");
    }
    return fallback_;
  }

  S3Options base_;  // what vended settings are laid over
  std::shared_ptr<FileIO> fallback_;
  Status fallback_error_;
  mutable std::shared_mutex mu_;
  std::map<std::string, Scope> scopes_;  // by normalised prefix
};

}  // namespace

std::unique_ptr<FileIO> MakeVendedS3FileIO(Result<S3Options> fallback) {
  return std::make_unique<VendedS3FileIO>(std::move(fallback));
}

}  // namespace skade::io
