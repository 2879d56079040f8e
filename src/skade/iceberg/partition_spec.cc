#include "skade/iceberg/partition_spec.h"

#include <algorithm>

namespace skade::iceberg {

bool PartitionSpec::is_unpartitioned() const {
  return std::all_of(fields_.begin(), fields_.end(), [](const PartitionField& f) {
    return f.transform.kind() == TransformKind::kVoid;
  });
}

int PartitionSpec::last_assigned_field_id() const {
  int highest = 999;
  for (const PartitionField& f : fields_) highest = std::max(highest, f.field_id);
  return highest;
}

Result<TypePtr> PartitionSpec::PartitionType(const Schema& schema) const {
  std::vector<NestedField> out;
  out.reserve(fields_.size());
  for (const PartitionField& f : fields_) {
    const NestedField* source = schema.FindField(f.source_id);
    NestedField pf;
    pf.id = f.field_id;
    pf.name = f.name;
    pf.required = false;
    if (source == nullptr) {
      // A void transform of a dropped column still has a (null) value; spec v2 keeps such
      // fields. Its type is not knowable from the schema; use int as a harmless placeholder.
      if (f.transform.kind() == TransformKind::kVoid) {
        pf.type = Type::Primitive(TypeId::kInt);
        out.push_back(std::move(pf));
        continue;
      }
      return Status::InvalidArgument("partition field '" + f.name + "' refers to missing column id " +
                                     std::to_string(f.source_id));
    }
    SKADE_ASSIGN_OR_RETURN(pf.type, f.transform.ResultType(source->type));
    out.push_back(std::move(pf));
  }
  return Type::Struct(std::move(out));
}

}  // namespace skade::iceberg
