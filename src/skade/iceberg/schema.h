// Iceberg schemas: a struct of fields with unique ids, identifier fields, lookup by id and by
// (dotted) name, and the name mapping used for data files written without field ids.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skade/base/status.h"
#include "skade/iceberg/types.h"

namespace skade::iceberg {

// Immutable; share as std::shared_ptr<const Schema>. Thread-safe.
class Schema {
 public:
  Schema(int schema_id, std::vector<NestedField> fields, std::vector<int> identifier_field_ids = {});

  int schema_id() const { return schema_id_; }
  const std::vector<NestedField>& fields() const { return struct_->fields(); }
  const TypePtr& as_struct() const { return struct_; }
  const std::vector<int>& identifier_field_ids() const { return identifier_field_ids_; }

  // Any field at any depth by id; nullptr if absent.
  const NestedField* FindField(int field_id) const;
  // Field by full dotted name ("a.b", list elements as "a.element", map parts "m.key" /
  // "m.value"); nullptr if absent. Case-insensitive lookup falls back to lower-case match.
  const NestedField* FindFieldByName(std::string_view name, bool case_sensitive = true) const;
  // Full dotted name of a field id, or empty.
  std::string FindColumnName(int field_id) const;
  // Highest field id used anywhere (0 for an empty schema).
  int HighestFieldId() const;

  // Types nest at most this deep (a struct in a list in a map … counts each): deeper schemas
  // would write metadata JSON beyond the nesting every reader of it accepts (256 levels here).
  static constexpr int kMaxTypeNesting = 64;

  // Checks ids are unique and positive, identifier fields exist and are required primitives,
  // and types nest at most kMaxTypeNesting deep.
  Status Validate() const;

 private:
  int schema_id_;
  TypePtr struct_;
  std::vector<int> identifier_field_ids_;
  std::unordered_map<int, const NestedField*> by_id_;
  std::unordered_map<std::string, int> by_name_;
  std::unordered_map<std::string, int> by_lower_name_;
  std::unordered_map<int, std::string> name_of_id_;
};

using SchemaPtr = std::shared_ptr<const Schema>;

// One entry of `schema.name-mapping.default` (spec "Column Projection"): the names a field
// may have in a file without ids, and the mappings of its nested fields.
struct MappedField {
  std::optional<int> field_id;
  std::vector<std::string> names;
  std::vector<MappedField> fields;
};

struct NameMapping {
  std::vector<MappedField> fields;

  // Parses the JSON text of the property. kInvalidArgument on malformed input.
  static Result<NameMapping> Parse(std::string_view json);
  // A mapping that maps every current field name (at every depth) to its id.
  static NameMapping FromSchema(const Schema& schema);
  std::string ToJson() const;
  // Field id for a top-level column name in a file, if mapped.
  std::optional<int> FindTopLevel(std::string_view name) const;
};

}  // namespace skade::iceberg
