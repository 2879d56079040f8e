#include "skade/iceberg/table_metadata.h"

#include <algorithm>
#include <charconv>

namespace skade::iceberg {

std::string Snapshot::operation() const { return SummaryValue("operation").value_or(""); }

std::optional<std::string> Snapshot::SummaryValue(std::string_view key) const {
  for (const auto& [k, v] : summary) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::optional<int64_t> Snapshot::SummaryLong(std::string_view key) const {
  auto v = SummaryValue(key);
  if (!v) return std::nullopt;
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return out;
}

SchemaPtr TableMetadata::CurrentSchema() const { return SchemaById(current_schema_id); }

SchemaPtr TableMetadata::SchemaById(int schema_id) const {
  for (const SchemaPtr& s : schemas) {
    if (s->schema_id() == schema_id) return s;
  }
  return nullptr;
}

PartitionSpecPtr TableMetadata::DefaultSpec() const { return SpecById(default_spec_id); }

PartitionSpecPtr TableMetadata::SpecById(int spec_id) const {
  for (const PartitionSpecPtr& s : partition_specs) {
    if (s->spec_id() == spec_id) return s;
  }
  return nullptr;
}

const SortOrder* TableMetadata::SortOrderById(int order_id) const {
  for (const SortOrder& o : sort_orders) {
    if (o.order_id == order_id) return &o;
  }
  return nullptr;
}

const Snapshot* TableMetadata::SnapshotById(int64_t snapshot_id) const {
  for (const Snapshot& s : snapshots) {
    if (s.snapshot_id == snapshot_id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::CurrentSnapshot() const {
  if (!current_snapshot_id) return nullptr;
  return SnapshotById(*current_snapshot_id);
}

Result<const Snapshot*> TableMetadata::SnapshotForRef(std::string_view ref) const {
  auto it = refs.find(std::string(ref));
  if (it == refs.end()) {
    if (ref == "main" && current_snapshot_id) {
      if (const Snapshot* s = CurrentSnapshot()) return s;
    }
    return Status::NotFound("no branch or tag named '" + std::string(ref) + "'");
  }
  const Snapshot* s = SnapshotById(it->second.snapshot_id);
  if (s == nullptr) {
    return Status::NotFound("ref '" + std::string(ref) + "' points at missing snapshot " +
                            std::to_string(it->second.snapshot_id));
  }
  return s;
}

Result<const Snapshot*> TableMetadata::SnapshotAsOf(int64_t timestamp_ms) const {
  // The snapshot log records which snapshot became current when (spec "Table Metadata
  // Fields", snapshot-log); without it, fall back to the snapshots' own timestamps along the
  // current ancestry.
  std::optional<int64_t> found;
  if (!snapshot_log.empty()) {
    for (const SnapshotLogEntry& e : snapshot_log) {
      if (e.timestamp_ms <= timestamp_ms) found = e.snapshot_id;
    }
  } else {
    const Snapshot* s = CurrentSnapshot();
    while (s != nullptr) {
      if (s->timestamp_ms <= timestamp_ms) {
        found = s->snapshot_id;
        break;
      }
      s = s->parent_snapshot_id ? SnapshotById(*s->parent_snapshot_id) : nullptr;
    }
  }
  if (!found) {
    return Status::NotFound("no snapshot was current at " + std::to_string(timestamp_ms) + " ms");
  }
  const Snapshot* s = SnapshotById(*found);
  if (s == nullptr) {
    return Status::NotFound("snapshot " + std::to_string(*found) +
                            " (current at the requested time) has expired");
  }
  return s;
}

SchemaPtr TableMetadata::SchemaForSnapshot(const Snapshot& snapshot) const {
  if (snapshot.schema_id) {
    if (SchemaPtr s = SchemaById(*snapshot.schema_id)) return s;
  }
  return CurrentSchema();
}

std::optional<NameMapping> TableMetadata::DefaultNameMapping() const {
  auto it = properties.find("schema.name-mapping.default");
  if (it == properties.end()) return std::nullopt;
  auto parsed = NameMapping::Parse(it->second);
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

std::string TableMetadata::Property(std::string_view key, std::string_view fallback) const {
  auto it = properties.find(std::string(key));
  return it == properties.end() ? std::string(fallback) : it->second;
}

}  // namespace skade::iceberg
