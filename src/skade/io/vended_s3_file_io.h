// Object storage whose settings a catalog vends per table: an Iceberg REST server answers
// loadTable with `config` (for the table's location) and `storage-credentials` (each for a
// prefix), holding the S3 FileIO properties of the Iceberg spec's implementations. This module
// turns those maps into S3Options and keeps one S3FileIO per vended prefix.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "skade/base/status.h"
#include "skade/io/file_io.h"
#include "skade/io/s3_file_io.h"

namespace skade::io {

// `base` with the storage keys of `config` over it: s3.access-key-id with s3.secret-access-key
// (and s3.session-token), s3.endpoint, s3.region or client.region, s3.path-style-access
// ("true"/"false"); s3.remote-signing-enabled "true" with a `signer` makes it sign every request
// (no keys of this process are sent then). nullopt when `config` holds none of them (nothing to
// apply). Vended credentials replace the base's entirely (a session token never pairs with
// another key). kInvalidArgument for a key without its secret or a malformed
// s3.path-style-access.
Result<std::optional<S3Options>> S3OptionsFromStorageConfig(const S3Options& base,
                                                            const std::map<std::string, std::string>& config,
                                                            const StorageSigner& signer = nullptr);

// A FileIO for object-store locations. Locations under a prefix given to ApplyStorageConfig go
// through an S3FileIO with that prefix's settings (the longest prefix wins, comparing whole path
// components of the normal forms; a later call for the same prefix with other settings replaces
// them, e.g. renewed credentials; the same settings again keep the connections). Other
// locations go through `fallback`'s options; when `fallback` is an error (the environment's
// configuration is broken) they fail with kInvalidArgument carrying it. Thread-safe.
std::unique_ptr<FileIO> MakeVendedS3FileIO(Result<S3Options> fallback);

}  // namespace skade::io
