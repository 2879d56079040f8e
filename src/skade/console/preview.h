// The web console's data preview: one page of a table's rows at a snapshot, as JSON, read through
// the table layer (planned scan, deletes applied) — the rows `skade scan` shows. The route's
// request names a table, a snapshot, an offset and a page size, all parsed; no user text becomes
// SQL. Served by `skade serve` on the REST port with the catalog's authentication.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/catalog/catalog.h"
#include "skade/console/downstream.h"
#include "skade/console/file_pages.h"
#include "skade/console/route_answer.h"
#include "skade/console/table_pages.h"
#include "skade/engine/database.h"
#include "skade/io/file_io.h"
#include "skade/io/sealer.h"

namespace skade::console {

// The route's path (beside the REST catalog's /v1/…).
inline constexpr std::string_view kPreviewPath = "/console/v1/preview";

class RunningQueries;  // query.h

// Thread-safe (each call reads on its own DuckDB connection); borrows the catalog, the FileIO,
// the Database and `running`, which must outlive it.
class Preview {
 public:
  // With `running`, each page's statement is registered there and so stopped by its timeout
  // (504); without, pages are not timed. Errors name each of `private_paths` (absolute folder,
  // name; longer first) by its name (sql::RedactPaths). The file list's page tokens are sealed
  // with `sealer` (file_pages.h; null: a key of this process only).
  Preview(catalog::Catalog& catalog, io::FileIO& io, engine::Database& db, RunningQueries* running = nullptr,
          std::vector<std::pair<std::string, std::string>> private_paths = {},
          std::shared_ptr<const io::Sealer> sealer = nullptr);

  // Pages of at most this many rows; offsets at most kMaxOffset (a preview, not an export).
  static constexpr int64_t kMaxLimit = 500;
  static constexpr int64_t kMaxOffset = 1'000'000;

  // Answers GET kPreviewPath?table=NS.TABLE[&snapshot-id=ID][&offset=N][&limit=N] (nullopt for
  // any other path but the table pages'): {"table", "snapshot-id", "offset", "limit", "columns": [{"name", "type"}],
  // "rows": [[text or null, …]], "more"} — values as DuckDB renders them as text. 400 for a bad
  // parameter, 404 for a table or snapshot that does not exist, 405 for another method (with
  // Allow), 504 past the statement timeout. The table pages' routes (table_pages.h), the file
  // list (file_pages.h) and downstream lineage (downstream.h) are answered here too, so that
  // whoever serves the preview serves them.
  std::optional<RouteAnswer> Serve(std::string_view method, std::string_view path,
                                     const std::map<std::string, std::string>& query) const;

 private:
  RouteAnswer Failed(const Status& st) const;

  catalog::Catalog& catalog_;
  io::FileIO& io_;
  engine::Database& db_;
  RunningQueries* running_;
  std::vector<std::pair<std::string, std::string>> private_paths_;
  TablePages pages_;
  FilePages files_;
  Downstream downstream_;
};

}  // namespace skade::console
