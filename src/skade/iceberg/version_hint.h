// metadata/version-hint.text, the file-system table layout's pointer to the current metadata
// file. skade replaces it after every commit (never before), so a reader of a table folder
// sees exactly a committed version; readers prefer it to listing the folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

// The version number of a metadata file name or of a hint: "v12.metadata.json", "12",
// "00012-<uuid>.metadata.json" and "00012-<uuid>" → 12; -1 when it has none.
int64_t MetadataVersion(std::string_view name);

// The hint text for a metadata file (a location or a file name): "12" for v12.metadata.json
// (Hadoop tables, whose readers expect a number), else the file name without
// ".metadata.json" ("00012-<uuid>"), which DuckDB's iceberg_scan resolves with its default
// version_name_format.
std::string VersionHintText(std::string_view metadata_file);

// Makes <metadata folder>/version-hint.text name `metadata_location` unless it already names
// a newer version (concurrent committers race through FileIO::Update, so the hint only moves
// forward).
Status AdvanceVersionHint(io::FileIO& io, std::string_view metadata_location);

// The current metadata file of a table folder: the one the hint names when that file exists,
// else the highest version in metadata/. kNotFound when the folder has no metadata.
Result<std::string> ResolveMetadataFile(io::FileIO& io, std::string_view table_path);

}  // namespace skade::iceberg
