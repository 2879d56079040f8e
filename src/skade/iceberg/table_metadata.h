// Table metadata (spec "Table Metadata"): snapshots, refs, logs and the whole metadata file as
// one immutable value, plus JSON parsing/serialisation of v1, v2 (and v3, with fields skade
// doesn't act on kept as raw JSON). Unknown fields and all properties survive a round trip.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/iceberg/schema.h"

namespace skade::iceberg {

// JSON members a parser did not recognise, as (key, raw JSON text) in document order.
using UnknownFields = std::vector<std::pair<std::string, std::string>>;

struct Snapshot {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;  // 0 for v1
  int64_t timestamp_ms = 0;
  std::string manifest_list;           // empty for v1 snapshots using `manifests`
  std::vector<std::string> manifests;  // v1 only
  // "operation" is the first entry when present. Kept in document order.
  std::vector<std::pair<std::string, std::string>> summary;
  std::optional<int> schema_id;
  std::optional<int64_t> first_row_id;  // v3
  std::optional<int64_t> added_rows;    // v3
  std::optional<std::string> key_id;    // v3
  UnknownFields unknown;

  // summary["operation"], or empty.
  std::string operation() const;
  // A summary value, if present.
  std::optional<std::string> SummaryValue(std::string_view key) const;
  // A summary value that is an integer (the whole text); nullopt when absent or not one.
  std::optional<int64_t> SummaryLong(std::string_view key) const;
};

// A table's snapshots, oldest first. A snapshot is immutable once it joins the list and is
// shared, not copied, by every metadata version that keeps it: copying a TableMetadata copies
// pointers, and each snapshot renders its JSON once per format version (Json), so a commit
// writes its table's history as bytes it already has. Changes go only through push_back and
// EraseIf (to change a snapshot, erase it and push the changed copy).
class SnapshotList {
  struct Node {
    explicit Node(Snapshot s) : snapshot(std::move(s)) {}
    Snapshot snapshot;
    // The JSON per format version 1-3, rendered under its once_flag.
    mutable std::once_flag rendered[3];
    mutable std::string json[3];
  };
  using Nodes = std::vector<std::shared_ptr<const Node>>;

 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Snapshot;
    using difference_type = std::ptrdiff_t;
    using pointer = const Snapshot*;
    using reference = const Snapshot&;

    const_iterator() = default;
    reference operator*() const { return (*it_)->snapshot; }
    pointer operator->() const { return &**this; }
    reference operator[](difference_type n) const { return *(*this + n); }
    const_iterator& operator++() { ++it_; return *this; }
    const_iterator operator++(int) { return const_iterator(it_++); }
    const_iterator& operator--() { --it_; return *this; }
    const_iterator operator--(int) { return const_iterator(it_--); }
    const_iterator& operator+=(difference_type n) { it_ += n; return *this; }
    const_iterator& operator-=(difference_type n) { it_ -= n; return *this; }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) { return a.it_ - b.it_; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.it_ == b.it_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.it_ <=> b.it_; }

   private:
    friend class SnapshotList;
    explicit const_iterator(Nodes::const_iterator it) : it_(it) {}
    Nodes::const_iterator it_;
  };
  using iterator = const_iterator;
  using value_type = Snapshot;

  SnapshotList() = default;
  SnapshotList(std::initializer_list<Snapshot> snapshots);

  const_iterator begin() const { return const_iterator(nodes_.begin()); }
  const_iterator end() const { return const_iterator(nodes_.end()); }
  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  const Snapshot& operator[](size_t i) const { return *(begin() + static_cast<std::ptrdiff_t>(i)); }
  const Snapshot& front() const { return *begin(); }
  const Snapshot& back() const { return *(end() - 1); }

  void push_back(Snapshot snapshot);
  void reserve(size_t n) { nodes_.reserve(n); }
  void clear() { nodes_.clear(); }
  // Removes the snapshots `remove` holds true for; returns how many.
  template <typename Pred>
  size_t EraseIf(Pred remove) {
    return std::erase_if(nodes_, [&](const std::shared_ptr<const Node>& n) { return remove(n->snapshot); });
  }

  // The i-th snapshot as a metadata file of `format_version` (1-3) writes it (SnapshotToJson),
  // rendered on first use and kept with the snapshot. Safe to call from several threads.
  std::string_view Json(size_t i, int format_version) const;

 private:
  Nodes nodes_;
};

enum class RefType { kBranch, kTag };

struct SnapshotRef {
  int64_t snapshot_id = 0;
  RefType type = RefType::kBranch;
  std::optional<int> min_snapshots_to_keep;
  std::optional<int64_t> max_snapshot_age_ms;
  std::optional<int64_t> max_ref_age_ms;
};

struct SnapshotLogEntry {
  int64_t timestamp_ms = 0;
  int64_t snapshot_id = 0;
};

struct MetadataLogEntry {
  int64_t timestamp_ms = 0;
  std::string metadata_file;
};

struct TableMetadata {
  int format_version = 2;
  std::string table_uuid;  // may be empty in old v1 files
  std::string location;
  int64_t last_sequence_number = 0;
  int64_t last_updated_ms = 0;
  int last_column_id = 0;
  std::vector<SchemaPtr> schemas;
  int current_schema_id = 0;
  std::vector<PartitionSpecPtr> partition_specs;
  int default_spec_id = 0;
  int last_partition_id = 999;
  std::map<std::string, std::string> properties;
  std::optional<int64_t> current_snapshot_id;
  SnapshotList snapshots;
  std::vector<SnapshotLogEntry> snapshot_log;
  std::vector<MetadataLogEntry> metadata_log;
  std::vector<SortOrder> sort_orders;
  int default_sort_order_id = 0;
  std::map<std::string, SnapshotRef> refs;
  std::optional<int64_t> next_row_id;  // v3
  // Carried through untouched (raw JSON arrays): statistics, partition-statistics and v3
  // encryption-keys; empty string when absent.
  std::string statistics_json;
  std::string partition_statistics_json;
  std::string encryption_keys_json;
  UnknownFields unknown;

  SchemaPtr CurrentSchema() const;
  SchemaPtr SchemaById(int schema_id) const;
  PartitionSpecPtr DefaultSpec() const;
  PartitionSpecPtr SpecById(int spec_id) const;
  const SortOrder* SortOrderById(int order_id) const;
  const Snapshot* SnapshotById(int64_t snapshot_id) const;
  const Snapshot* CurrentSnapshot() const;
  // Snapshot a ref points at; kNotFound naming the ref.
  Result<const Snapshot*> SnapshotForRef(std::string_view ref) const;
  // The snapshot that was current at `timestamp_ms` (from the snapshot log, or the snapshots'
  // timestamps when the log is empty); kNotFound if none was current then.
  Result<const Snapshot*> SnapshotAsOf(int64_t timestamp_ms) const;
  // The schema to read `snapshot` with: its schema-id when present, else the current schema.
  SchemaPtr SchemaForSnapshot(const Snapshot& snapshot) const;
  // The name mapping from `schema.name-mapping.default`, if set and valid.
  std::optional<NameMapping> DefaultNameMapping() const;
  // A table property, or `fallback`.
  std::string Property(std::string_view key, std::string_view fallback = "") const;
};

using TableMetadataPtr = std::shared_ptr<const TableMetadata>;

// Parses a metadata JSON document. kInvalidArgument (naming the field) for a malformed or
// inconsistent document, kNotImplemented for a format version above 3.
Result<TableMetadata> ParseTableMetadata(std::string_view json);
// Parses the bytes of a metadata file: gzip-compressed files (".gz.metadata.json", or any file
// starting with the gzip magic bytes) are inflated first. kCorruption for a broken gzip stream.
Result<TableMetadata> ParseTableMetadataFile(std::string_view bytes);
// Serialises to JSON in the layout of `format_version` (v1 also writes `schema` and
// `partition-spec`). Unknown fields are written back.
std::string TableMetadataToJson(const TableMetadata& metadata);

// JSON helpers shared with the REST layer: a schema / partition spec / sort order object.
Result<SchemaPtr> ParseSchemaJson(std::string_view json);
std::string SchemaToJson(const Schema& schema);
Result<TypePtr> ParseTypeJson(std::string_view json);
std::string TypeToJson(const Type& type);
// A partition spec object ({"spec-id", "fields": [{"source-id", "field-id", "transform",
// "name"}]}; spec-id defaults to 0). Source ids are checked when the spec joins a table.
Result<PartitionSpecPtr> ParsePartitionSpecJson(std::string_view json);
std::string PartitionSpecToJson(const PartitionSpec& spec);
// A sort order object ({"order-id", "fields": [{"transform", "source-id", "direction",
// "null-order"}]}).
Result<SortOrder> ParseSortOrderJson(std::string_view json);
std::string SortOrderToJson(const SortOrder& order);
// A snapshot object as a metadata file of `format_version` writes it.
std::string SnapshotToJson(const Snapshot& snapshot, int format_version);

}  // namespace skade::iceberg
