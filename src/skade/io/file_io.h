// FileIO: the storage interface Iceberg metadata and data go through. Locations are strings
// ("/abs/path", "file:///abs/path", "s3://bucket/key"); each implementation says which schemes
// it accepts. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"

namespace skade::io {

struct FileInfo {
  std::string location;
  int64_t size = 0;
  int64_t modified_ms = 0;
};

// A request to object storage about to be sent, and the same request signed by someone who
// holds the store's credentials (the Iceberg REST spec's remote signing: a catalog signs for the
// tables it serves, so that its clients hold no keys).
struct StorageRequest {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<std::string> body;  // where the store must see exactly this body (DeleteObjects)
};
struct SignedStorageRequest {
  std::string url;  // send to this URL…
  std::vector<std::pair<std::string, std::string>> headers;  // …with every one of these headers
};
// Thread-safe; kPermissionDenied when the signer refuses.
using StorageSigner = std::function<Result<SignedStorageRequest>(const StorageRequest&)>;

class FileIO {
 public:
  virtual ~FileIO() = default;

  // Whole file. kNotFound if absent, kIoError on other failures.
  virtual Result<std::string> Read(std::string_view location) = 0;
  // `length` bytes from `offset` (fewer at end of file). kNotFound if absent.
  virtual Result<std::string> ReadRange(std::string_view location, int64_t offset,
                                        int64_t length) = 0;
  // Size and modification time. kNotFound if absent.
  virtual Result<FileInfo> Stat(std::string_view location) = 0;
  // Writes `data` to a new file atomically: readers see the whole file or nothing, and an
  // existing file is never replaced (kAlreadyExists). Parent folders are created (local: each
  // new folder's entry made durable, local_folders.h).
  virtual Status CreateExclusive(std::string_view location, std::string_view data) = 0;
  // Writes `data` to a new file that no reader looks for until a later commit names it (a
  // manifest or manifest list with a name of its own): like CreateExclusive (kAlreadyExists
  // for an existing file, parent folders created, the bytes durable on return), except that
  // a reader listing the folder may see it half written, and that its folder entry is durable
  // only after SyncFolders. Cheaper where that matters (local: one fsync instead of two, one
  // name instead of two). The default is CreateExclusive.
  virtual Status CreateUnpublished(std::string_view location, std::string_view data) {
    return CreateExclusive(location, data);
  }
  // Like CreateUnpublished, except that the bytes too may not be durable until SyncFiles names
  // the file: for a writer that makes many files durable together, just before a commit names
  // them. The default is CreateUnpublished.
  virtual Status CreateUnsynced(std::string_view location, std::string_view data) {
    return CreateUnpublished(location, data);
  }
  // Makes the bytes of the files at `locations` durable (files written by CreateUnsynced, or by
  // another writer on this machine; local: one fsync each), not their folder entries
  // (SyncFolders). kIoError naming the file that failed. The default does nothing
  // (CreateUnsynced already did it).
  virtual Status SyncFiles(const std::vector<std::string>& locations) {
    (void)locations;
    return Status::Ok();
  }
  // Makes the entries of `locations` in their folders durable (local: one fsync per distinct
  // parent folder), before a commit names them: files created by CreateUnpublished or
  // CreateUnsynced, and folders another program created for them (local_folders.h). Folders
  // this FileIO creates are durable when it returns. The default does nothing (CreateExclusive
  // already did it).
  virtual Status SyncFolders(const std::vector<std::string>& locations) {
    (void)locations;
    return Status::Ok();
  }
  // Writes `data`, replacing any existing file atomically (for mutable hints such as
  // version-hint.text; never for metadata or data files).
  virtual Status Overwrite(std::string_view location, std::string_view data) = 0;
  // Replaces a small mutable file (a hint, never the only record of anything) with what
  // `change` makes of its current content (nullopt when absent); `change` returning nullopt
  // leaves it as it is. Readers see the old or the new content, never a torn file; after a
  // crash either may remain. Concurrent Updates of one location, from any process, run one
  // after another, so a change decided on the content it saw is never overwritten by one
  // decided on older content.
  using Change = std::function<std::optional<std::string>(const std::optional<std::string>& current)>;
  virtual Status Update(std::string_view location, const Change& change) = 0;
  // Files (not folders) under `prefix`, recursively. An absent prefix lists nothing; files
  // and folders that vanish while the listing runs are left out (never an error).
  virtual Result<std::vector<FileInfo>> List(std::string_view prefix) = 0;
  // Deletes a file; deleting an absent file is Ok.
  virtual Status Delete(std::string_view location) = 0;

  // Where this FileIO reads `location` (after any relocation or routing): two locations with
  // the same answer are the same file. The default is `location` itself.
  virtual std::string ResolvedLocation(std::string_view location) { return std::string(location); }
  // Storage settings a catalog vends for the locations under `prefix` (an Iceberg REST
  // loadTable's `config` and `storage-credentials`; vended_s3_file_io.h names the keys used).
  // A FileIO that reaches such storage uses them for those locations from then on; the others
  // ignore them (the default).
  // With s3.remote-signing-enabled in `config`, `signer` (the catalog's) signs the requests to
  // those locations instead of keys of this process.
  virtual void ApplyStorageConfig(std::string_view prefix, const std::map<std::string, std::string>& config,
                                  const StorageSigner& signer = nullptr) {
    (void)prefix;
    (void)config;
    (void)signer;
  }
};

// Local writes go to `<file>.tmp-<uuid>` beside their target and are renamed into place; a
// crash may leave one behind. True for such a name (a write in flight, or one that died).
bool IsTemporaryWrite(std::string_view location);
std::string TemporaryWriteName(std::string_view location, std::string_view unique);

// Local file system. Accepts absolute or relative paths and `file:` URIs
// ("file:/a", "file:///a").
std::unique_ptr<FileIO> MakeLocalFileIO();

// Strips a `file:` scheme ("file:///a" and "file:/a" become "/a"); other strings unchanged.
std::string LocalPath(std::string_view location);

// Joins two location parts with exactly one '/' between them.
std::string JoinLocation(std::string_view base, std::string_view name);

}  // namespace skade::io
