// The web console's list of a snapshot's data files or delete files, a page at a time: each page
// reads the manifests it needs from where the last one stopped (a sealed next-page token), so a
// snapshot of 100,000 files costs a page of them per request, never all of them in one answer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/catalog/catalog.h"
#include "skade/console/route_answer.h"
#include "skade/io/file_io.h"
#include "skade/io/sealer.h"

namespace skade::console {

// The route's path (beside the REST catalog's /v1/…).
inline constexpr std::string_view kFilesPath = "/console/v1/files";

// Thread-safe as the catalog and the FileIO are; borrows both, which must outlive it.
class FilePages {
 public:
  // Next-page tokens are sealed with `sealer` (every server sharing its keys accepts the tokens
  // of the others); null seals with a key of this process only. Errors name each of
  // `private_paths` (absolute folder, name; longer first) by its name (sql::RedactPaths).
  FilePages(catalog::Catalog& catalog, io::FileIO& io, std::shared_ptr<const io::Sealer> sealer,
            std::vector<std::pair<std::string, std::string>> private_paths = {});

  // Files per page at most, and by default.
  static constexpr int64_t kMaxPageSize = 1000;
  static constexpr int64_t kDefaultPageSize = 100;

  // Answers GET kFilesPath?table=NS.T[&snapshot-id=ID][&content=data|deletes][&page-size=N]
  // [&page-token=T] (nullopt for any other path): {"table", "snapshot-id", "content", "total"
  // (the files of that content in the snapshot, from the manifest list's counts; null when a
  // manifest has none), "files": [{"file-path", "content" (data, position-deletes,
  // equality-deletes), "file-format", "record-count", "file-size-in-bytes", "spec-id",
  // "partition": {field name: value as text or null}, and for deletes "referenced-data-file",
  // "content-offset" when set}], "next-page-token": a token for the next page, null after the
  // last}. Files come in manifest-list order, then manifest order. Without snapshot-id the
  // current snapshot (no files when the table has none). 400 for a bad parameter or a page token
  // that is garbage, altered, expired or of another table, snapshot or content; 404 for a
  // missing table or snapshot; 405 for another method.
  std::optional<RouteAnswer> Serve(std::string_view method, std::string_view path,
                                     const std::map<std::string, std::string>& query) const;

 private:
  catalog::Catalog& catalog_;
  io::FileIO& io_;
  std::shared_ptr<const io::Sealer> sealer_;
  std::vector<std::pair<std::string, std::string>> private_paths_;
};

}  // namespace skade::console
