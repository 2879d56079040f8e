// Test helpers: small Iceberg schemas of primitive columns, spelled in one line.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "skade/iceberg/schema.h"

namespace skade::testing {

struct Column {
  int id;
  std::string name;
  iceberg::TypeId type;
  bool required = false;
};

// Schema 0 with the given top-level primitive columns, in order.
inline iceberg::SchemaPtr SchemaOf(std::initializer_list<Column> columns) {
  std::vector<iceberg::NestedField> fields;
  for (const auto& c : columns) {
    iceberg::NestedField f;
    f.id = c.id;
    f.name = c.name;
    f.required = c.required;
    f.type = iceberg::Type::Primitive(c.type);
    fields.push_back(std::move(f));
  }
  return std::make_shared<const iceberg::Schema>(0, std::move(fields));
}

}  // namespace skade::testing
