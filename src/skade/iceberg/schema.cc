#include "skade/iceberg/schema.h"
#include "skade/base/json_parse_internal.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

namespace skade::iceberg {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Schema::Schema(int schema_id, std::vector<NestedField> fields, std::vector<int> identifier_field_ids)
    : schema_id_(schema_id),
      struct_(Type::Struct(std::move(fields))),
      identifier_field_ids_(std::move(identifier_field_ids)) {
  // Index every field at every depth. Pointers point into the immutable struct type.
  struct Visitor {
    Schema* self;
    void Visit(const NestedField& f, const std::string& prefix) {
      std::string name = prefix.empty() ? f.name : prefix + "." + f.name;
      self->by_id_.emplace(f.id, &f);
      self->by_name_.emplace(name, f.id);
      self->by_lower_name_.emplace(Lower(name), f.id);
      self->name_of_id_.emplace(f.id, name);
      for (const NestedField& child : f.type->fields()) Visit(child, name);
    }
  };
  Visitor v{this};
  for (const NestedField& f : struct_->fields()) v.Visit(f, "");
}

const NestedField* Schema::FindField(int field_id) const {
  auto it = by_id_.find(field_id);
  return it == by_id_.end() ? nullptr : it->second;
}

const NestedField* Schema::FindFieldByName(std::string_view name, bool case_sensitive) const {
  if (case_sensitive) {
    auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : FindField(it->second);
  }
  auto it = by_lower_name_.find(Lower(name));
  return it == by_lower_name_.end() ? nullptr : FindField(it->second);
}

std::string Schema::FindColumnName(int field_id) const {
  auto it = name_of_id_.find(field_id);
  return it == name_of_id_.end() ? std::string() : it->second;
}

int Schema::HighestFieldId() const {
  int highest = 0;
  for (const auto& [id, field] : by_id_) highest = std::max(highest, id);
  return highest;
}

Status Schema::Validate() const {
  std::set<int> seen;
  struct Walker {
    std::set<int>* seen;
    Status Walk(const std::vector<NestedField>& fields, int depth) {
      for (const NestedField& f : fields) {
        if (f.id < 0) return Status::InvalidArgument("field '" + f.name + "' has a negative id");
        if (!f.type) return Status::InvalidArgument("field '" + f.name + "' has no type");
        if (!seen->insert(f.id).second) {
          return Status::InvalidArgument("duplicate field id " + std::to_string(f.id));
        }
        if (!f.type->fields().empty() && depth >= kMaxTypeNesting) {
          return Status::InvalidArgument("field '" + f.name + "': types nest more than " +
                                         std::to_string(kMaxTypeNesting) + " levels deep");
        }
        SKADE_RETURN_IF_ERROR(Walk(f.type->fields(), depth + 1));
      }
      return Status::Ok();
    }
  };
  SKADE_RETURN_IF_ERROR(Walker{&seen}.Walk(fields(), 0));
  for (int id : identifier_field_ids_) {
    const NestedField* f = FindField(id);
    if (f == nullptr) {
      return Status::InvalidArgument("identifier field id " + std::to_string(id) + " not in schema");
    }
    if (!f->type->is_primitive() || f->type->id() == TypeId::kFloat ||
        f->type->id() == TypeId::kDouble) {
      return Status::InvalidArgument("identifier field '" + f->name +
                                     "' must be a primitive non-floating type");
    }
  }
  return Status::Ok();
}

// --- name mapping (spec "Column Projection", property schema.name-mapping.default) ---

namespace {

Result<MappedField> ParseMappedField(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("name mapping entry is not an object");
  MappedField m;
  if (auto it = j.find("field-id"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return Status::InvalidArgument("name mapping field-id is not an integer");
    m.field_id = it->get<int>();
  }
  if (auto it = j.find("names"); it != j.end()) {
    if (!it->is_array()) return Status::InvalidArgument("name mapping names is not an array");
    for (const auto& n : *it) {
      if (!n.is_string()) return Status::InvalidArgument("name mapping name is not a string");
      m.names.push_back(n.get<std::string>());
    }
  }
  if (auto it = j.find("fields"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("name mapping fields is not an array");
    for (const auto& f : *it) {
      SKADE_ASSIGN_OR_RETURN(MappedField child, ParseMappedField(f));
      m.fields.push_back(std::move(child));
    }
  }
  return m;
}

nlohmann::json MappedFieldToJson(const MappedField& m) {
  nlohmann::json j = nlohmann::json::object();
  if (m.field_id) j["field-id"] = *m.field_id;
  j["names"] = m.names;
  if (!m.fields.empty()) {
    j["fields"] = nlohmann::json::array();
    for (const auto& f : m.fields) j["fields"].push_back(MappedFieldToJson(f));
  }
  return j;
}

MappedField MapField(const NestedField& f) {
  MappedField m;
  m.field_id = f.id;
  m.names.push_back(f.name);
  for (const NestedField& child : f.type->fields()) m.fields.push_back(MapField(child));
  return m;
}

}  // namespace

Result<NameMapping> NameMapping::Parse(std::string_view json) {
  SKADE_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, "name mapping"));
  if (!j.is_array()) {
    return Status::InvalidArgument("name mapping is not a JSON array");
  }
  NameMapping mapping;
  for (const auto& f : j) {
    SKADE_ASSIGN_OR_RETURN(MappedField m, ParseMappedField(f));
    mapping.fields.push_back(std::move(m));
  }
  return mapping;
}

NameMapping NameMapping::FromSchema(const Schema& schema) {
  NameMapping mapping;
  for (const NestedField& f : schema.fields()) mapping.fields.push_back(MapField(f));
  return mapping;
}

std::string NameMapping::ToJson() const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& f : fields) j.push_back(MappedFieldToJson(f));
  return j.dump();
}

std::optional<int> NameMapping::FindTopLevel(std::string_view name) const {
  for (const MappedField& f : fields) {
    for (const std::string& n : f.names) {
      if (n == name) return f.field_id;
    }
  }
  return std::nullopt;
}

}  // namespace skade::iceberg
