// Schema, partition-spec, sort-order and property evolution: each change is computed against
// the current metadata, committed as add-X + set-default-X with requirements that pin what it
// was computed from, and recomputed on fresh metadata when another commit wins.
#include <algorithm>
#include <cctype>
#include <set>

#include "skade/engine/schema_convert.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/table_update.h"
#include "skade/table/commit_internal.h"
#include "skade/table/table.h"

namespace skade::table {
namespace {

using iceberg::NestedField;
using iceberg::PartitionField;
using iceberg::PartitionSpec;
using iceberg::PartitionSpecPtr;
using iceberg::Schema;
using iceberg::SchemaPtr;
using iceberg::TableMetadata;
using iceberg::TableRequirement;
using iceberg::TableUpdate;
using iceberg::Type;
using iceberg::TypeId;
using iceberg::TypePtr;

Status Bad(std::string message) { return Status::InvalidArgument(std::move(message)); }

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// ---- schema changes on a mutable tree ----

// One field with its nested fields unpacked, so changes can edit any depth; the immutable
// Type values are rebuilt at the end.
struct Node {
  NestedField field;  // field.type is authoritative only for primitives
  TypeId kind = TypeId::kStruct;
  std::vector<Node> children;  // struct: its fields; list: [element]; map: [key, value]
};

Node ToNode(const NestedField& f) {
  Node n;
  n.field = f;
  n.kind = f.type->id();
  if (f.type->is_nested()) {
    for (const NestedField& child : f.type->fields()) n.children.push_back(ToNode(child));
  }
  return n;
}

NestedField ToField(const Node& n) {
  NestedField f = n.field;
  if (n.kind == TypeId::kStruct) {
    std::vector<NestedField> fields;
    for (const Node& c : n.children) fields.push_back(ToField(c));
    f.type = Type::Struct(std::move(fields));
  } else if (n.kind == TypeId::kList) {
    NestedField e = ToField(n.children[0]);
    f.type = Type::List(e.id, e.type, e.required);
  } else if (n.kind == TypeId::kMap) {
    NestedField k = ToField(n.children[0]);
    NestedField v = ToField(n.children[1]);
    f.type = Type::Map(k.id, k.type, v.id, v.type, v.required);
  }
  return f;
}

void CollectIds(const Node& n, std::set<int>* ids) {
  ids->insert(n.field.id);
  for (const Node& c : n.children) CollectIds(c, ids);
}

// Where a dotted path points: the vector holding the node and its index there.
struct Located {
  std::vector<Node>* siblings = nullptr;
  size_t index = 0;
  TypeId parent_kind = TypeId::kStruct;  // kStruct for top-level columns
  bool in_collection = false;            // below a list element or a map key/value
  bool in_map_key = false;               // the node is a map key or below one
  Node& node() const { return (*siblings)[index]; }
};

std::vector<std::string> SplitDotted(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.emplace_back(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// Resolves "a.b", "l.element.x", "m.key", "m.value.y" (spec "Column Projection" naming of
// nested fields). kInvalidArgument for an unknown column.
Result<Located> Locate(std::vector<Node>& root, std::string_view path) {
  if (path.empty()) return Bad("empty column name");
  std::vector<std::string> parts = SplitDotted(path);
  Located at;
  at.siblings = &root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    std::optional<size_t> found;
    if (at.parent_kind == TypeId::kStruct) {
      for (size_t j = 0; j < at.siblings->size(); ++j) {
        if ((*at.siblings)[j].field.name == part) found = j;
      }
    } else if (at.parent_kind == TypeId::kList) {
      if (part == "element") found = 0;
    } else if (part == "key" || part == "value") {
      found = part == "key" ? 0 : 1;
      if (part == "key") at.in_map_key = true;
    }
    if (!found) return Bad("unknown column '" + std::string(path) + "'");
    at.index = *found;
    if (i + 1 == parts.size()) return at;
    Node& n = at.node();
    if (!n.field.type || n.field.type->is_primitive()) {
      return Bad("column '" + std::string(path) + "': '" + part + "' has no nested fields");
    }
    if (n.kind == TypeId::kList || n.kind == TypeId::kMap) at.in_collection = true;
    at.parent_kind = n.kind;
    at.siblings = &n.children;
  }
  return at;
}

// The struct fields a column is added to: the top level, a struct, or the struct element of a
// list / value of a map (as Iceberg resolves "parent" for additions).
Result<std::vector<Node>*> StructFieldsOf(std::vector<Node>& root, std::string_view parent_path) {
  if (parent_path.empty()) return &root;
  SKADE_ASSIGN_OR_RETURN(Located at, Locate(root, parent_path));
  if (at.in_map_key)
    return Bad("cannot add fields to a map key ('" + std::string(parent_path) + "')");
  Node* n = &at.node();
  if (n->kind == TypeId::kList) n = &n->children[0];
  if (n->kind == TypeId::kMap) n = &n->children[1];
  if (n->kind != TypeId::kStruct) return Bad("'" + std::string(parent_path) + "' is not a struct");
  return &n->children;
}

bool NameTaken(const std::vector<Node>& siblings, std::string_view name, const Node* except) {
  for (const Node& s : siblings) {
    if (&s != except && s.field.name == name) return true;
  }
  return false;
}

Status CheckNewName(std::string_view name) {
  if (name.empty()) return Bad("empty column name");
  // Dotted names would be ambiguous in the dotted paths used everywhere else.
  if (name.find('.') != std::string_view::npos)
    return Bad("column name '" + std::string(name) + "' contains '.'");
  return Status::Ok();
}

// "BIGINT NOT NULL" → ("BIGINT", required).
std::pair<std::string, bool> SplitNotNull(std::string_view type) {
  std::string t = Trim(type);
  std::string u = Upper(t);
  const std::string suffix = "NOT NULL";
  if (u.size() > suffix.size() && u.compare(u.size() - suffix.size(), suffix.size(), suffix) == 0 &&
      std::isspace(static_cast<unsigned char>(u[u.size() - suffix.size() - 1]))) {
    return {Trim(std::string_view(t).substr(0, t.size() - suffix.size())), true};
  }
  return {t, false};
}

class SchemaEditor {
 public:
  SchemaEditor(const TableMetadata& base, const Schema& schema)
      : base_(base), last_column_id_(base.last_column_id) {
    for (const NestedField& f : schema.fields()) root_.push_back(ToNode(f));
    identifier_ids_ = schema.identifier_field_ids();
    if (PartitionSpecPtr spec = base.DefaultSpec()) {
      for (const PartitionField& f : spec->fields()) {
        if (f.transform.kind() == iceberg::TransformKind::kVoid) continue;
        protected_ids_[f.source_id] = "partition field '" + f.name + "'";
        for (int id : f.source_ids) protected_ids_[id] = "partition field '" + f.name + "'";
      }
    }
    if (const iceberg::SortOrder* order = base.SortOrderById(base.default_sort_order_id)) {
      for (const iceberg::SortField& f : order->fields)
        protected_ids_.emplace(f.source_id, "the default sort order");
    }
  }

  Status Apply(const SchemaChange& c) {
    using Kind = SchemaChange::Kind;
    switch (c.kind) {
      case Kind::kAddColumn:
        return Add(c);
      case Kind::kDropColumn:
        return Drop(c.column);
      case Kind::kRenameColumn:
        return Rename(c.column, c.new_name);
      case Kind::kUpdateType:
        return UpdateType(c.column, c.type);
      case Kind::kMakeOptional:
        return MakeOptional(c.column);
      case Kind::kMoveFirst:
      case Kind::kMoveBefore:
      case Kind::kMoveAfter:
        return Move(c);
      case Kind::kSetDoc: {
        SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, c.column));
        at.node().field.doc = c.doc;
        return Status::Ok();
      }
      case Kind::kSetIdentifierFields:
        return SetIdentifierFields(c.identifier_fields);
    }
    return Bad("unknown schema change");
  }

  // The resulting schema (id -1: the catalog assigns the next id, or reuses an identical one).
  Result<SchemaPtr> Finish() const {
    std::vector<NestedField> fields;
    for (const Node& n : root_) fields.push_back(ToField(n));
    auto schema = std::make_shared<const Schema>(-1, std::move(fields), identifier_ids_);
    SKADE_RETURN_IF_ERROR(schema->Validate());
    // The current spec must still apply to the (possibly promoted) source types.
    if (PartitionSpecPtr spec = base_.DefaultSpec()) {
      for (const PartitionField& f : spec->fields()) {
        if (f.transform.kind() == iceberg::TransformKind::kVoid) continue;
        const NestedField* source = schema->FindField(f.source_id);
        if (source == nullptr || !f.transform.ResultType(source->type).ok()) {
          return Bad("partition field '" + f.name + "' would no longer apply to its source column");
        }
      }
    }
    return SchemaPtr(schema);
  }

  int last_column_id() const { return last_column_id_; }

 private:
  Status Add(const SchemaChange& c) {
    std::string_view path = c.column;
    size_t dot = path.rfind('.');
    std::string_view parent =
        dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
    std::string name(dot == std::string_view::npos ? path : path.substr(dot + 1));
    SKADE_RETURN_IF_ERROR(CheckNewName(name));
    SKADE_ASSIGN_OR_RETURN(std::vector<Node> * siblings, StructFieldsOf(root_, parent));
    if (NameTaken(*siblings, name, nullptr))
      return Bad("cannot add column '" + c.column + "': it already exists");
    auto [type_text, required] = SplitNotNull(c.type);
    if (type_text.empty()) return Bad("cannot add column '" + c.column + "': no type");
    // Spec "Schema Evolution": new columns take ids above last-column-id; the column first,
    // then its nested fields.
    int next_id = last_column_id_ + 1;
    NestedField f;
    f.id = next_id++;
    f.name = name;
    f.required = required;
    f.doc = c.doc;
    SKADE_ASSIGN_OR_RETURN(
        f.type,
        engine::IcebergTypeFromDuck(type_text, &next_id).WithContext("column '" + c.column + "'"));
    if (c.default_json) {
      // Default values are a v3 feature (spec "Default values").
      if (base_.format_version < 3) {
        return Bad("cannot add column '" + c.column +
                   "' with a default: defaults need table format v3 (table is v" +
                   std::to_string(base_.format_version) + ")");
      }
      const std::string& json = *c.default_json;
      if (f.type->is_primitive()) {
        SKADE_RETURN_IF_ERROR(iceberg::Literal::FromJson(f.type, json)
                                  .status()
                                  .WithContext("default of '" + c.column + "'"));
      } else if (Trim(json) != "null") {
        return Bad("default of nested column '" + c.column + "' must be null");
      }
      if (Trim(json) != "null") {
        f.initial_default_json = json;
        f.write_default_json = json;
      }
    }
    // Spec: a required field can only be added with a non-null initial default, so rows in
    // existing files have a value.
    if (f.required && !f.initial_default_json) {
      return Bad("cannot add required column '" + c.column +
                 "' without a default (needs format v3 and a default)");
    }
    last_column_id_ = next_id - 1;
    siblings->push_back(ToNode(f));
    return Status::Ok();
  }

  Status Drop(const std::string& column) {
    SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, column));
    if (at.parent_kind != TypeId::kStruct) {
      return Bad("cannot drop '" + column +
                 "': list elements and map keys/values can't be dropped");
    }
    std::set<int> ids;
    CollectIds(at.node(), &ids);
    for (int id : identifier_ids_) {
      if (ids.count(id))
        return Bad("cannot drop '" + column + "': it is (or holds) an identifier field");
    }
    for (const auto& [id, what] : protected_ids_) {
      if (ids.count(id)) return Bad("cannot drop '" + column + "': it is the source of " + what);
    }
    at.siblings->erase(at.siblings->begin() + static_cast<std::ptrdiff_t>(at.index));
    return Status::Ok();
  }

  Status Rename(const std::string& column, const std::string& new_name) {
    SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, column));
    if (at.parent_kind != TypeId::kStruct)
      return Bad("cannot rename '" + column + "': not a struct field");
    SKADE_RETURN_IF_ERROR(CheckNewName(new_name));
    if (NameTaken(*at.siblings, new_name, &at.node())) {
      return Bad("cannot rename '" + column + "' to '" + new_name + "': the name is taken");
    }
    at.node().field.name = new_name;
    return Status::Ok();
  }

  Status UpdateType(const std::string& column, const std::string& type) {
    SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, column));
    NestedField& f = at.node().field;
    if (!f.type->is_primitive())
      return Bad("cannot change the type of nested column '" + column + "'");
    if (at.in_map_key) return Bad("cannot change the type of map key '" + column + "'");
    int scratch_id = 1;
    SKADE_ASSIGN_OR_RETURN(TypePtr to, engine::IcebergTypeFromDuck(Trim(type), &scratch_id)
                                           .WithContext("column '" + column + "'"));
    if (!to->is_primitive())
      return Bad("cannot change primitive column '" + column + "' to " + to->ToString());
    // Spec "Schema Evolution": only int→long, float→double, decimal precision widening, and
    // (v3) date→timestamp.
    bool allowed = iceberg::CanPromote(*f.type, *to);
    if (f.type->id() == TypeId::kDate && !iceberg::TypeEquals(*f.type, *to) &&
        base_.format_version < 3) {
      allowed = false;
    }
    if (!allowed) {
      return Bad("cannot change the type of '" + column + "' from " + f.type->ToString() + " to " +
                 to->ToString());
    }
    f.type = to;
    return Status::Ok();
  }

  Status MakeOptional(const std::string& column) {
    SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, column));
    if (at.parent_kind == TypeId::kMap && at.index == 0) return Bad("map keys are always required");
    NestedField& f = at.node().field;
    if (std::find(identifier_ids_.begin(), identifier_ids_.end(), f.id) != identifier_ids_.end()) {
      return Bad("cannot make identifier field '" + column + "' optional");
    }
    f.required = false;
    return Status::Ok();
  }

  Status Move(const SchemaChange& c) {
    SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, c.column));
    if (at.parent_kind != TypeId::kStruct)
      return Bad("cannot move '" + c.column + "': not a struct field");
    std::vector<Node>& siblings = *at.siblings;
    const int moving_id = siblings[at.index].field.id;
    if (c.kind == SchemaChange::Kind::kMoveFirst) {
      std::rotate(siblings.begin(), siblings.begin() + static_cast<std::ptrdiff_t>(at.index),
                  siblings.begin() + static_cast<std::ptrdiff_t>(at.index) + 1);
      return Status::Ok();
    }
    // The reference is a sibling: its plain name, or its full dotted path.
    std::optional<size_t> ref;
    for (size_t i = 0; i < siblings.size(); ++i) {
      if (siblings[i].field.name == c.reference) ref = i;
    }
    if (!ref && c.reference.find('.') != std::string::npos) {
      auto other = Locate(root_, c.reference);
      if (other.ok() && other->siblings == at.siblings) ref = other->index;
      if (other.ok() && other->siblings != at.siblings) {
        return Bad("cannot move '" + c.column + "' next to '" + c.reference +
                   "': not in the same struct");
      }
    }
    if (!ref) return Bad("unknown column '" + c.reference + "' (move reference)");
    if (siblings[*ref].field.id == moving_id)
      return Bad("cannot move '" + c.column + "' relative to itself");
    const int ref_id = siblings[*ref].field.id;
    Node moving = std::move(siblings[at.index]);
    siblings.erase(siblings.begin() + static_cast<std::ptrdiff_t>(at.index));
    size_t pos = 0;
    while (siblings[pos].field.id != ref_id) ++pos;
    if (c.kind == SchemaChange::Kind::kMoveAfter) ++pos;
    siblings.insert(siblings.begin() + static_cast<std::ptrdiff_t>(pos), std::move(moving));
    return Status::Ok();
  }

  Status SetIdentifierFields(const std::vector<std::string>& names) {
    std::vector<int> ids;
    for (const std::string& name : names) {
      SKADE_ASSIGN_OR_RETURN(Located at, Locate(root_, name));
      const NestedField& f = at.node().field;
      // Spec "Identifier Field IDs": required primitive fields, not float/double, not nested in
      // a list or map.
      if (at.in_collection) return Bad("identifier field '" + name + "' is inside a list or map");
      if (!f.type->is_primitive() || f.type->id() == TypeId::kFloat ||
          f.type->id() == TypeId::kDouble) {
        return Bad("identifier field '" + name +
                   "' must be a primitive, non-floating-point column");
      }
      if (!f.required) return Bad("identifier field '" + name + "' must be required (NOT NULL)");
      if (std::find(ids.begin(), ids.end(), f.id) == ids.end()) ids.push_back(f.id);
    }
    identifier_ids_ = std::move(ids);
    return Status::Ok();
  }

  const TableMetadata& base_;
  int last_column_id_;
  std::vector<Node> root_;
  std::vector<int> identifier_ids_;
  std::map<int, std::string> protected_ids_;  // source columns of the current spec / sort order
};

// ---- sort order text ----

// Splits on commas outside parentheses.
std::vector<std::string> SplitTopLevelCommas(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(Trim(cur));
      cur.clear();
      continue;
    }
    cur += ch;
  }
  out.push_back(Trim(cur));
  return out;
}

// Whitespace-separated words, keeping "bucket(16, id)" (and "bucket (16, id)") as one word.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    if (cur.front() == '(' && !out.empty()) {
      out.back() += cur;
    } else {
      out.push_back(cur);
    }
    cur.clear();
  };
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (depth == 0 && std::isspace(static_cast<unsigned char>(ch))) {
      flush();
      continue;
    }
    cur += ch;
  }
  flush();
  return out;
}

Result<iceberg::SortOrder> ParseSortOrder(std::string_view text, const Schema& schema) {
  iceberg::SortOrder order;
  if (Trim(text).empty()) return order;  // unsorted
  for (const std::string& item : SplitTopLevelCommas(text)) {
    if (item.empty()) return Bad("empty sort field in '" + std::string(text) + "'");
    std::vector<std::string> words = Words(item);
    iceberg::SortField sf;
    size_t i = 1;
    bool desc = false;
    std::optional<iceberg::NullOrder> nulls;
    if (i < words.size() && (Upper(words[i]) == "ASC" || Upper(words[i]) == "DESC")) {
      desc = Upper(words[i]) == "DESC";
      ++i;
    }
    if (i + 1 < words.size() && Upper(words[i]) == "NULLS" &&
        (Upper(words[i + 1]) == "FIRST" || Upper(words[i + 1]) == "LAST")) {
      nulls = Upper(words[i + 1]) == "FIRST" ? iceberg::NullOrder::kNullsFirst
                                             : iceberg::NullOrder::kNullsLast;
      i += 2;
    }
    if (i != words.size())
      return Bad("cannot read sort field '" + item +
                 "' (expected: expr [ASC|DESC] [NULLS FIRST|LAST])");
    // The expression is a column or transform(column), written as in a partition spec.
    SKADE_ASSIGN_OR_RETURN(
        PartitionSpecPtr one,
        iceberg::ParsePartitionSpec(words[0], schema, 0).WithContext("sort field '" + item + "'"));
    if (one->fields().size() != 1) return Bad("cannot read sort field '" + item + "'");
    sf.source_id = one->fields()[0].source_id;
    sf.transform = one->fields()[0].transform;
    sf.direction = desc ? iceberg::SortDirection::kDesc : iceberg::SortDirection::kAsc;
    // Iceberg's defaults: ASC sorts nulls first, DESC nulls last.
    sf.null_order =
        nulls.value_or(desc ? iceberg::NullOrder::kNullsLast : iceberg::NullOrder::kNullsFirst);
    for (const iceberg::SortField& other : order.fields) {
      if (other.source_id == sf.source_id && other.transform == sf.transform) {
        return Bad("duplicate sort field '" + item + "'");
      }
    }
    order.fields.push_back(sf);
  }
  return order;
}

}  // namespace

Result<CommitOutcome> Table::UpdateSchema(const std::vector<SchemaChange>& changes) {
  if (changes.empty()) return Bad("no schema changes");
  return CommitMetadata("update-schema", [&](const TableMetadata& base) -> Result<MetadataCommit> {
    SchemaPtr current = base.CurrentSchema();
    if (current == nullptr) return Status::Corruption("table metadata has no current schema");
    SchemaEditor editor(base, *current);
    for (const SchemaChange& c : changes) SKADE_RETURN_IF_ERROR(editor.Apply(c));
    SKADE_ASSIGN_OR_RETURN(SchemaPtr schema, editor.Finish());
    MetadataCommit mc;
    // The change was computed from this schema and these ids (REST spec requirements for
    // schema updates).
    mc.requirements.push_back(TableRequirement::AssertCurrentSchemaId(base.current_schema_id));
    mc.requirements.push_back(TableRequirement::AssertLastAssignedFieldId(base.last_column_id));
    TableUpdate add = TableUpdate::AddSchema(schema);
    add.last_column_id = std::max(base.last_column_id, editor.last_column_id());
    mc.updates.push_back(std::move(add));
    mc.updates.push_back(TableUpdate::SetCurrentSchema(-1));
    return mc;
  });
}

namespace {

// The name of a new partition field: one no field of any spec of the table has had under
// another field id. Engines see all specs' fields at once (Spark's `files` and `_partition`
// union the partition types of every spec, by field id) and refuse a name that two field ids
// share. As Iceberg's own evolution names them, a bucket or truncate field carries its width
// ("id_bucket_4", "s_trunc_3"); a name still taken gets "_2", "_3", ….
std::string UnusedPartitionName(const TableMetadata& base, const PartitionField& f) {
  auto taken = [&](const std::string& name) {
    for (const PartitionSpecPtr& spec : base.partition_specs) {
      for (const PartitionField& other : spec->fields()) {
        if (other.name == name && other.field_id != f.field_id) return true;
      }
    }
    return false;
  };
  if (!taken(f.name)) return f.name;
  std::string name = f.name;
  const iceberg::TransformKind kind = f.transform.kind();
  if (kind == iceberg::TransformKind::kBucket || kind == iceberg::TransformKind::kTruncate) {
    name += "_" + std::to_string(f.transform.param());
    if (!taken(name)) return name;
  }
  for (int n = 2;; ++n) {
    if (!taken(name + "_" + std::to_string(n))) return name + "_" + std::to_string(n);
  }
}

}  // namespace

Result<CommitOutcome> Table::UpdatePartitionSpec(const std::string& partition_by) {
  return CommitMetadata(
      "update-partition-spec", [&](const TableMetadata& base) -> Result<MetadataCommit> {
        SchemaPtr schema = base.CurrentSchema();
        PartitionSpecPtr current = base.DefaultSpec();
        if (schema == nullptr || current == nullptr)
          return Status::Corruption("table metadata has no current schema or spec");
        SKADE_ASSIGN_OR_RETURN(
            PartitionSpecPtr parsed,
            iceberg::ParsePartitionSpec(partition_by, *schema, 0, base.last_partition_id));
        auto same = [](const PartitionField& a, const PartitionField& b) {
          return a.source_id == b.source_id && a.transform == b.transform &&
                 a.source_ids == b.source_ids;
        };
        // Spec "Partition Evolution": fields that stay keep their field ids (and names); a field
        // that existed in an earlier spec gets its old id back (v2), so identical specs coincide;
        // new fields get ids after last-partition-id.
        int next_field_id = base.last_partition_id + 1;
        std::vector<PartitionField> kept_or_new;
        for (const PartitionField& pf : parsed->fields()) {
          PartitionField f = pf;
          const PartitionField* match = nullptr;
          for (const PartitionField& cf : current->fields()) {
            if (same(cf, pf)) match = &cf;
          }
          if (match == nullptr && base.format_version >= 2) {
            for (const PartitionSpecPtr& old : base.partition_specs) {
              for (const PartitionField& of : old->fields()) {
                if (match == nullptr && same(of, pf)) match = &of;
              }
            }
          }
          if (match != nullptr) {
            f.field_id = match->field_id;
            f.name = match->name;
          } else {
            f.field_id = next_field_id++;
            f.name = UnusedPartitionName(base, f);
          }
          kept_or_new.push_back(std::move(f));
        }
        std::vector<PartitionField> fields;
        if (base.format_version >= 2) {
          // v2: removed fields are simply left out.
          fields = std::move(kept_or_new);
        } else {
          // v1: spec fields can't be removed; a removed field becomes void in place, and fields
          // keep their order.
          for (const PartitionField& cf : current->fields()) {
            auto it =
                std::find_if(kept_or_new.begin(), kept_or_new.end(),
                             [&](const PartitionField& f) { return f.field_id == cf.field_id; });
            if (it != kept_or_new.end()) {
              fields.push_back(*it);
              kept_or_new.erase(it);
            } else {
              PartitionField v = cf;
              v.transform = iceberg::Transform::Void();
              fields.push_back(std::move(v));
            }
          }
          for (PartitionField& f : kept_or_new) fields.push_back(std::move(f));
        }
        std::set<std::string> names;
        for (const PartitionField& f : fields) {
          if (!names.insert(f.name).second)
            return Bad("duplicate partition field name '" + f.name + "'");
          // Spec: a partition field name may equal a schema column only for identity of that
          // column.
          const NestedField* col = schema->FindFieldByName(f.name);
          if (col != nullptr &&
              !(f.transform.kind() == iceberg::TransformKind::kIdentity &&
                col->id == f.source_id) &&
              f.transform.kind() != iceberg::TransformKind::kVoid) {
            return Bad("partition field name '" + f.name + "' clashes with a column");
          }
        }
        MetadataCommit mc;
        mc.requirements.push_back(TableRequirement::AssertDefaultSpecId(base.default_spec_id));
        mc.requirements.push_back(
            TableRequirement::AssertLastAssignedPartitionId(base.last_partition_id));
        mc.requirements.push_back(TableRequirement::AssertCurrentSchemaId(base.current_schema_id));
        mc.updates.push_back(
            TableUpdate::AddSpec(std::make_shared<const PartitionSpec>(-1, std::move(fields))));
        mc.updates.push_back(TableUpdate::SetDefaultSpec(-1));
        return mc;
      });
}

Result<CommitOutcome> Table::UpdateSortOrder(const std::string& sort_by) {
  return CommitMetadata(
      "update-sort-order", [&](const TableMetadata& base) -> Result<MetadataCommit> {
        SchemaPtr schema = base.CurrentSchema();
        if (schema == nullptr) return Status::Corruption("table metadata has no current schema");
        SKADE_ASSIGN_OR_RETURN(iceberg::SortOrder order, ParseSortOrder(sort_by, *schema));
        MetadataCommit mc;
        mc.requirements.push_back(
            TableRequirement::AssertDefaultSortOrderId(base.default_sort_order_id));
        mc.requirements.push_back(TableRequirement::AssertCurrentSchemaId(base.current_schema_id));
        mc.updates.push_back(TableUpdate::AddSortOrder(std::move(order)));
        mc.updates.push_back(TableUpdate::SetDefaultSortOrder(-1));
        return mc;
      });
}

Result<CommitOutcome> Table::UpdateProperties(const std::map<std::string, std::string>& set,
                                              const std::vector<std::string>& unset) {
  if (set.empty() && unset.empty()) return Bad("no properties to set or remove");
  for (const std::string& k : unset) {
    if (set.count(k)) return Bad("property '" + k + "' is both set and removed");
  }
  for (const auto& [k, v] : set) {
    if (k.empty()) return Bad("empty property name");
    // Spec "Reserved table properties": format-version is not stored as a property.
    if (k == "format-version")
      return Bad("format-version is reserved; it can't be set as a property");
  }
  return CommitMetadata("update-properties", [&](const TableMetadata&) -> Result<MetadataCommit> {
    MetadataCommit mc;
    if (!set.empty()) mc.updates.push_back(TableUpdate::SetProperties(set));
    if (!unset.empty()) mc.updates.push_back(TableUpdate::RemoveProperties(unset));
    return mc;
  });
}

}  // namespace skade::table
