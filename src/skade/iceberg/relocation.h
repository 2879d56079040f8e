// Relocation: a table copied or registered away from where it was written still records its
// original locations (table location, manifest lists, manifests, data files). These helpers
// find the rewrites that let it be read where its metadata file actually is.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/iceberg/table_metadata.h"
#include "skade/io/location_map.h"

namespace skade::iceberg {

struct Relocation {
  io::LocationMap map;             // stored location prefix → local table folder
  std::vector<std::string> notes;  // one human-readable line per rewrite
};

// The table folder of a metadata file location ("<root>/metadata/<file>" → "<root>"; a file
// elsewhere → its folder), as a local path without a trailing '/'.
std::string TableDirOfMetadataFile(std::string_view metadata_file);

// The rewrites for reading `metadata` from `table_dir`: the recorded table location and the
// roots implied by the recorded manifest-list paths (some writers record relative ones) map to
// `table_dir`, unless `explicit_rules` (applied first) already cover them. Empty when the
// table is where its metadata says.
Relocation DetectRelocation(const TableMetadata& metadata, const std::string& table_dir,
                            const std::vector<std::pair<std::string, std::string>>& explicit_rules = {});

}  // namespace skade::iceberg
