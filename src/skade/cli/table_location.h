// Finds and loads a table given on the command line: a table folder (current metadata from
// version-hint.text, else the highest version) or a *.metadata.json file. Detects tables
// copied from elsewhere whose metadata records another location and maps those locations to
// where the table was found.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"
#include "skade/io/location_map.h"

namespace skade::cli {

struct LoadedTable {
  std::string metadata_file;  // local path of the metadata JSON that was read
  std::string table_dir;      // local table root (parent of metadata/)
  iceberg::TableMetadata metadata;
  io::LocationMap locations;  // stored location prefix → local folder
  // Human-readable notes about relocation, for stderr.
  std::vector<std::string> notes;
};

// Loads the table at `path`. `relocate` adds explicit OLD=NEW prefix rules. Errors name the
// file and the problem.
Result<LoadedTable> LoadTable(io::FileIO& io, std::string_view path,
                              const std::vector<std::pair<std::string, std::string>>& relocate);

}  // namespace skade::cli
