// Every file a table's metadata references, at any snapshot: what maintenance must never
// delete while the metadata lives (orphan removal, expiry, purge; DESIGN §11).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

// (snapshot id, path) of every statistics and partition-statistics file the metadata lists.
std::vector<std::pair<int64_t, std::string>> StatisticsFiles(const TableMetadata& metadata);

// The normalised locations (io::NormalizeLocation) of the metadata file itself, its metadata
// log, metadata/version-hint.text, every snapshot's manifest list and manifests, every data
// and delete file any manifest lists (whatever the entry status), and the statistics files.
// A file that cannot be read is an error naming it: never a partial set.
Result<std::unordered_set<std::string>> ReferencedFiles(io::FileIO& io, std::string_view metadata_location,
                                                        const TableMetadata& metadata);

}  // namespace skade::iceberg
