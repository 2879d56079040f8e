// Test helper: a "foreign copy" of an Iceberg table — the rows of its current snapshot in a
// local folder, with every location its metadata, manifests and delete files store spelled the
// way another writer would (hdfs://nn:8020/w/t, file:///w/t, s3a://b/t, …), for reads that have
// to relocate.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "skade/base/status.h"
#include "skade/engine/database.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/io/file_io.h"

namespace skade::testing {

// What a stored location names.
enum class LocationRole {
  kTableLocation,  // the metadata's `location`
  kManifestList,   // a snapshot's manifest-list
  kManifest,       // a manifest-list row's manifest_path
  kDataFile,       // a data file entry's file_path
  kDeleteFile,     // a delete file entry's file_path (Parquet, Puffin)
  kDeleteTarget,   // a data file named by a position delete: the file_path column,
                   // referenced_data_file and the file_path bounds
};

// The stored spelling of the file at `relative` (below the table root, without a leading '/';
// empty for the table location itself) in `role`.
using LocationSpelling = std::function<std::string(LocationRole role, std::string_view relative)>;

// A spelling that puts each role's prefix (no trailing '/') before the relative path, e.g.
// {kDataFile: "hdfs://nn:8020/w/t"} → "hdfs://nn:8020/w/t/data/f.parquet". Every role needs a
// prefix.
LocationSpelling PrefixSpelling(std::map<LocationRole, std::string> prefixes);

// Writes a copy of the current snapshot of the table `metadata` describes into the local folder
// `dir` (created; it should be empty): data/…, metadata/… at each file's path relative to the
// table root, metadata/v1.metadata.json and metadata/version-hint.text = "1". `io` reads the
// table's files by their stored locations (pass a relocating FileIO for a moved table); `db`
// rewrites position delete files. Data files, equality delete files and Puffin files are copied
// byte for byte; position delete Parquet files are rewritten with their file_path values in
// kDeleteTarget spelling (sorted by file_path, pos); manifests keep every entry with its
// sequence numbers, snapshot id and first_row_id (live entries become EXISTING, DELETED stay);
// the metadata keeps only the current snapshot and its `main` ref. Returns the metadata file's
// local path. kInvalidArgument for a table without a current snapshot or a stored location
// outside its table location; errors of reading or writing otherwise.
Result<std::string> WriteForeignCopy(const iceberg::TableMetadata& metadata, io::FileIO& io,
                                     engine::Database& db, const std::string& dir,
                                     const LocationSpelling& spelling);

// A table on an object store: WriteForeignCopy into the local staging folder `dir` with every
// location spelled under `root` (e.g. "s3://bucket/prefix/t"), then each file of the copy
// written to `store` at root/<its relative path>. Returns the number of files written.
Result<int> UploadForeignCopy(const iceberg::TableMetadata& metadata, io::FileIO& io, engine::Database& db,
                              const std::string& dir, const std::string& root, io::FileIO& store);

}  // namespace skade::testing
