// Partition specs and sort orders (spec "Partitioning" and "Sorting").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/schema.h"
#include "skade/iceberg/transform.h"

namespace skade::iceberg {

struct PartitionField {
  int source_id = 0;
  std::vector<int> source_ids;  // v3 multi-argument transforms; empty when single source
  int field_id = 0;
  std::string name;
  Transform transform = Transform::Identity();
};

// Immutable; share as PartitionSpecPtr.
class PartitionSpec {
 public:
  PartitionSpec(int spec_id, std::vector<PartitionField> fields)
      : spec_id_(spec_id), fields_(std::move(fields)) {}

  int spec_id() const { return spec_id_; }
  const std::vector<PartitionField>& fields() const { return fields_; }
  // Unpartitioned when no field or all fields are void.
  bool is_unpartitioned() const;
  // Highest partition field id, or 999 (the spec's starting point) when there is none.
  int last_assigned_field_id() const;

  // The partition tuple type against `schema` (field ids = partition field ids, all optional).
  // A field whose source column was dropped gets the type recorded in the manifest instead;
  // here it is kInvalidArgument.
  Result<TypePtr> PartitionType(const Schema& schema) const;

 private:
  int spec_id_;
  std::vector<PartitionField> fields_;
};

using PartitionSpecPtr = std::shared_ptr<const PartitionSpec>;

// Parses a partition spec written as transforms over column names, the way Spark's
// PARTITIONED BY reads: "day(ts), bucket(16, id), truncate(4, name), region, void(x)"
// ("identity(c)" or a bare column name is identity). Field names follow Spark's convention
// (ts_day, id_bucket, name_trunc, ts_year, ts_month, ts_hour, the column name for identity);
// field ids start after `last_partition_id`. kInvalidArgument naming the problem (unknown
// column or transform, transform not applicable to the column's type, duplicate field).
Result<PartitionSpecPtr> ParsePartitionSpec(std::string_view text, const Schema& schema, int spec_id,
                                            int last_partition_id = 999);

enum class SortDirection { kAsc, kDesc };
enum class NullOrder { kNullsFirst, kNullsLast };

struct SortField {
  Transform transform = Transform::Identity();
  int source_id = 0;
  SortDirection direction = SortDirection::kAsc;
  NullOrder null_order = NullOrder::kNullsFirst;
};

struct SortOrder {
  int order_id = 0;  // 0 is reserved for the unsorted order
  std::vector<SortField> fields;
};

}  // namespace skade::iceberg
