// Manifest lists and manifests (spec "Manifests", "Manifest Lists"): the values, a streaming
// reader with sequence-number inheritance, and writers for the v1 and v2 layouts with the
// spec's field ids and header keys (schema, partition-spec, partition-spec-id,
// format-version, content).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"
#include "skade/io/file_io.h"

namespace skade::iceberg {

enum class ManifestContent { kData = 0, kDeletes = 1 };

// Summary of one partition field over a manifest's files (bounds in Appendix D binary form).
struct FieldSummary {
  bool contains_null = false;
  std::optional<bool> contains_nan;
  std::optional<std::string> lower_bound;
  std::optional<std::string> upper_bound;
};

// One row of a manifest list.
struct ManifestFile {
  std::string manifest_path;
  int64_t manifest_length = 0;
  int partition_spec_id = 0;
  ManifestContent content = ManifestContent::kData;
  int64_t sequence_number = 0;      // v1: 0
  int64_t min_sequence_number = 0;  // v1: 0
  int64_t added_snapshot_id = 0;
  std::optional<int> added_files_count;
  std::optional<int> existing_files_count;
  std::optional<int> deleted_files_count;
  std::optional<int64_t> added_rows_count;
  std::optional<int64_t> existing_rows_count;
  std::optional<int64_t> deleted_rows_count;
  std::vector<FieldSummary> partitions;
  std::optional<std::string> key_metadata;
  std::optional<int64_t> first_row_id;  // v3
};

enum class DataFileContent { kData = 0, kPositionDeletes = 1, kEqualityDeletes = 2 };
enum class FileFormat { kParquet, kAvro, kOrc, kPuffin };

std::string_view FileFormatName(FileFormat format);  // "PARQUET", …

struct DataFile {
  DataFileContent content = DataFileContent::kData;
  std::string file_path;
  FileFormat file_format = FileFormat::kParquet;
  int spec_id = 0;  // from the manifest (not stored per entry)
  // Partition tuple in spec field order; nullopt = null value.
  std::vector<std::optional<Literal>> partition;
  int64_t record_count = 0;
  int64_t file_size_in_bytes = 0;
  std::map<int, int64_t> column_sizes;
  std::map<int, int64_t> value_counts;
  std::map<int, int64_t> null_value_counts;
  std::map<int, int64_t> nan_value_counts;
  std::map<int, std::string> lower_bounds;  // Appendix D binary
  std::map<int, std::string> upper_bounds;
  std::optional<std::string> key_metadata;
  std::vector<int64_t> split_offsets;
  std::vector<int> equality_ids;
  std::optional<int> sort_order_id;
  std::optional<int64_t> first_row_id;              // v3
  std::optional<std::string> referenced_data_file;  // v3 / position deletes
  std::optional<int64_t> content_offset;            // v3 deletion vectors
  std::optional<int64_t> content_size_in_bytes;     // v3 deletion vectors
};

enum class ManifestEntryStatus { kExisting = 0, kAdded = 1, kDeleted = 2 };

struct ManifestEntry {
  ManifestEntryStatus status = ManifestEntryStatus::kAdded;
  std::optional<int64_t> snapshot_id;
  // After reading: inherited per the spec (null + ADDED → the manifest's sequence number;
  // v1 → 0), so always set on read. On write: nullopt means "inherit".
  std::optional<int64_t> sequence_number;
  std::optional<int64_t> file_sequence_number;
  DataFile data_file;
};

// Reads a manifest list. `location` is read through `io`. kCorruption naming the file on
// malformed content.
Result<std::vector<ManifestFile>> ReadManifestList(io::FileIO& io, std::string_view location);
Result<std::vector<ManifestFile>> ParseManifestList(std::string data, std::string_view name);

// What a manifest reader decodes of each entry; the rest is stepped over. By default
// everything.
struct ManifestReadOptions {
  // The field ids whose column metrics (sizes, value/null/NaN counts, bounds) are decoded;
  // nullopt decodes all of them.
  std::optional<std::vector<int>> metric_field_ids;
  bool split_offsets = true;
};

// Streams the entries of one manifest, decoding them straight from the Avro bytes into
// ManifestEntry (a decoder compiled from the file's own schema: fields found by name or id in
// any order, optional unions either way round, unknown fields skipped). Not thread-safe.
class ManifestReader {
 public:
  // `manifest` supplies the spec id, sequence number and snapshot id entries inherit;
  // partition types are taken from the file's own partition schema. Reads the file through
  // `io` at `location` (which may differ from manifest.manifest_path after relocation).
  static Result<std::unique_ptr<ManifestReader>> Open(io::FileIO& io, std::string_view location,
                                                      const ManifestFile& manifest,
                                                      ManifestReadOptions options = {});
  static Result<std::unique_ptr<ManifestReader>> FromBytes(std::string data, std::string name,
                                                           const ManifestFile& manifest,
                                                           ManifestReadOptions options = {});
  ~ManifestReader();

  // The header keys (schema, partition-spec, partition-spec-id, format-version, content).
  std::optional<std::string> Metadata(std::string_view key) const;
  int format_version() const;
  // The partition tuple type as the manifest's Avro schema declares it.
  const TypePtr& partition_type() const;

  // The next entry, or nullopt at the end. kCorruption naming the file and field for a
  // malformed entry (and every call after it).
  Result<std::optional<ManifestEntry>> Next();
  // The same into `*entry`, which is overwritten (a loop over many entries reuses one instead
  // of moving each out); false at the end.
  Result<bool> NextInto(ManifestEntry* entry);

 private:
  struct Impl;
  explicit ManifestReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads the manifest at manifest.manifest_path and calls `fn` for every live entry (ADDED or
// EXISTING; DELETED entries are skipped), stopping at the first error `fn` returns.
Status ForEachLiveEntry(io::FileIO& io, const ManifestFile& manifest,
                        const std::function<Status(ManifestEntry&)>& fn, const ManifestReadOptions& options = {});

struct ManifestWriterOptions {
  int format_version = 2;
  ManifestContent content = ManifestContent::kData;
  int64_t snapshot_id = 0;
  // Sequence number assigned at commit; written into the manifest-list row. Entries added in
  // this snapshot leave theirs null (inherited). When nullopt (v2+), the row's
  // sequence_number (and min_sequence_number if no entry has an explicit one) is -1, which
  // WriteManifestList replaces with the snapshot's sequence number.
  std::optional<int64_t> sequence_number;
};

// Writes a manifest for one partition spec into memory. Not thread-safe.
class ManifestWriter {
 public:
  static Result<std::unique_ptr<ManifestWriter>> Create(SchemaPtr schema, PartitionSpecPtr spec,
                                                        ManifestWriterOptions options);
  ~ManifestWriter();

  // Adds one entry (its data_file.partition must have one value per spec field).
  Status Add(const ManifestEntry& entry);
  // Finishes the Avro file. Returns its bytes and the manifest-list row for it (path and
  // length filled from `manifest_path` and the byte size).
  struct Output {
    std::string bytes;
    ManifestFile manifest;
  };
  Result<Output> Finish(std::string manifest_path);

 private:
  struct Impl;
  explicit ManifestWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Spec "Row Lineage" (v3): when a manifest list is written, every data manifest without a
// first_row_id gets the next unused ids, in list order, starting at `next_row_id` (the table's
// next-row-id, the snapshot's first-row-id); each takes added_rows_count + existing_rows_count
// ids. Returns how many ids were handed out (the snapshot's added-rows). kInvalidArgument for
// a data manifest without row counts.
Result<int64_t> AssignFirstRowIds(std::vector<ManifestFile>& manifests, int64_t next_row_id);

// Writes a manifest list (v1 or v2 layout; v3 adds first_row_id) into memory. Header keys:
// snapshot-id, parent-snapshot-id ("null" when absent), sequence-number (v2+),
// format-version. Rows with sequence numbers of -1 get `sequence_number`. kInvalidArgument when
// a v2 row lacks its counts or a v1 list would hold a delete manifest.
Result<std::string> WriteManifestList(int format_version, int64_t snapshot_id,
                                      std::optional<int64_t> parent_snapshot_id,
                                      int64_t sequence_number,
                                      const std::vector<ManifestFile>& manifests);

}  // namespace skade::iceberg
