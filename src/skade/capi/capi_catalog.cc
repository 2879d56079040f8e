// skade.h: namespaces, tables (list, create from an Arrow schema, drop, schema) and a table's
// snapshots, as Arrow listings.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "skade/arrow/builder.h"
#include "skade/capi/capi_internal.h"
#include "skade/capi/skade.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/user_sql.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/table/drop.h"

namespace skade::capi {
namespace {

// A namespace argument; `required` refuses an empty one.
Result<catalog::Namespace> NamespaceOf(const char* text, bool required) {
  const std::string dotted = Optional(text);
  if (dotted.empty()) {
    if (required) return Status::InvalidArgument("empty namespace");
    return catalog::Namespace{};
  }
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, catalog::Namespace::Parse(dotted));
  SKADE_RETURN_IF_ERROR(ns.Validate());
  return ns;
}

Status Namespaces(skade_lake* lake, const char* parent, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace below, NamespaceOf(parent, false));
  SKADE_ASSIGN_OR_RETURN(std::vector<catalog::Namespace> all, catalog::ListNamespacesBelow(*state->catalog, below));
  std::sort(all.begin(), all.end());
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("namespace", "u", false);
  arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(columns));
  for (const catalog::Namespace& ns : all) {
    b.AppendStruct();
    b.child(0).AppendString(ns.ToString());
  }
  return ExportBuilt(std::move(state), b, out);
}

Status Tables(skade_lake* lake, const char* ns_text, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, NamespaceOf(ns_text, false));
  std::vector<catalog::Namespace> namespaces;
  if (!ns.empty()) {
    namespaces.push_back(ns);
  } else {
    SKADE_ASSIGN_OR_RETURN(namespaces, catalog::ListNamespacesBelow(*state->catalog, catalog::Namespace{}));
  }
  std::vector<catalog::TableIdent> tables;
  for (const catalog::Namespace& n : namespaces) {
    SKADE_ASSIGN_OR_RETURN(std::vector<catalog::TableIdent> found, state->catalog->ListTables(n));
    tables.insert(tables.end(), found.begin(), found.end());
  }
  std::sort(tables.begin(), tables.end());
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("namespace", "u", false);
  columns.emplace_back("name", "u", false);
  columns.emplace_back("table", "u", false);
  arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(columns));
  for (const catalog::TableIdent& t : tables) {
    b.AppendStruct();
    b.child(0).AppendString(t.ns.ToString());
    b.child(1).AppendString(t.name);
    b.child(2).AppendString(t.ToString());
  }
  return ExportBuilt(std::move(state), b, out);
}

Status CreateTable(skade_lake* lake, const char* table, ArrowSchema* schema, const char* const* identifier_fields,
                   int64_t n_identifier_fields, const char* partition_by) {
  if (schema == nullptr || schema->release == nullptr) return Status::InvalidArgument("null schema");
  arrow::SchemaHandle owned(schema);  // consumed on every path
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, TableOf(table));
  SKADE_ASSIGN_OR_RETURN(std::vector<std::string> identifiers,
                         Names(identifier_fields, n_identifier_fields, "identifier fields"));
  if (owned->format == nullptr || std::string_view(owned->format) != "+s") {
    return Status::InvalidArgument("the schema must be an Arrow struct schema (a record batch's)");
  }
  if (owned->n_children == 0) return Status::InvalidArgument("the schema has no columns");
  // The types DuckDB gives the columns of a stream of this schema: the same mapping the rows
  // written later go through.
  SKADE_ASSIGN_OR_RETURN(std::vector<engine::ColumnType> types, state->db->ArrowInputColumns(*owned.get()));
  if (static_cast<int64_t>(types.size()) != owned->n_children) {
    return Status::Internal("DuckDB read " + std::to_string(types.size()) + " columns of a schema of " +
                            std::to_string(owned->n_children));
  }
  engine::TableDefinition definition;
  for (int64_t i = 0; i < owned->n_children; ++i) {
    const ArrowSchema& field = *owned->children[i];
    engine::ColumnDefinition column;
    column.name = types[i].name;
    column.type = types[i].type;
    const bool identifier = std::find(identifiers.begin(), identifiers.end(), column.name) != identifiers.end();
    // Iceberg identifier fields are required columns.
    column.not_null = identifier || (field.flags & ARROW_FLAG_NULLABLE) == 0;
    definition.columns.push_back(std::move(column));
  }
  for (const std::string& name : identifiers) {
    const bool found = std::any_of(definition.columns.begin(), definition.columns.end(),
                                   [&](const engine::ColumnDefinition& c) { return c.name == name; });
    if (!found) return Status::InvalidArgument("identifier field '" + name + "' is not a column of the schema");
  }
  definition.primary_key = identifiers;
  SKADE_ASSIGN_OR_RETURN(iceberg::SchemaPtr iceberg_schema, engine::SchemaFromDefinition(definition));
  catalog::CreateTableRequest request;
  request.schema = iceberg_schema;
  SKADE_ASSIGN_OR_RETURN(request.spec, iceberg::ParsePartitionSpec(Optional(partition_by), *iceberg_schema, 0));
  request.properties.emplace("write.parquet.compression-codec", "zstd");  // as `skade create` makes tables
  return state->catalog->CreateTable(ident, request).status();
}

Status DropTable(skade_lake* lake, const char* table, int flags) {
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, TableOf(table));
  if ((flags & ~SKADE_DROP_PURGE) != 0) return Status::InvalidArgument("unknown drop flags");
  table::DropOptions options;
  options.mode = (flags & SKADE_DROP_PURGE) != 0 ? catalog::DropMode::kPurge : catalog::DropMode::kKeepFiles;
  options.count = table::DropOptions::Count::kNothing;
  return table::DropTable(*state->catalog, *state->io, ident, options).status();
}

Status TableSchema(skade_lake* lake, const char* table, ArrowSchema* out) {
  if (out == nullptr) return Status::InvalidArgument("null output schema");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(auto t, LoadTable(*state, table));
  SKADE_ASSIGN_OR_RETURN(arrow::SchemaHandle schema, t->ArrowSchema());
  schema.MoveTo(out);
  return Status::Ok();
}

Status Snapshots(skade_lake* lake, const char* table, ArrowArrayStream* out) {
  if (out == nullptr) return Status::InvalidArgument("null output stream");
  SKADE_ASSIGN_OR_RETURN(std::shared_ptr<LakeState> state, StateOf(lake));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, TableOf(table));
  SKADE_ASSIGN_OR_RETURN(catalog::TableState loaded, state->catalog->LoadTable(ident));
  const iceberg::TableMetadata& m = *loaded.metadata;
  std::vector<arrow::ArrayBuilder> columns;
  columns.emplace_back("snapshot_id", "l", false);
  columns.emplace_back("parent_snapshot_id", "l", true);
  columns.emplace_back("sequence_number", "l", false);
  columns.emplace_back("timestamp_ms", "l", false);
  columns.emplace_back("operation", "u", false);
  columns.emplace_back("current", "b", false);
  columns.emplace_back("summary", "+m", false,
                       std::vector<arrow::ArrayBuilder>{arrow::ArrayBuilder(
                           "entries", "+s", false,
                           {arrow::ArrayBuilder("key", "u", false), arrow::ArrayBuilder("value", "u", true)})});
  arrow::ArrayBuilder b = arrow::RecordBatchBuilder(std::move(columns));
  for (const iceberg::Snapshot& s : m.snapshots) {
    b.AppendStruct();
    b.child(0).AppendInt(s.snapshot_id);
    s.parent_snapshot_id ? b.child(1).AppendInt(*s.parent_snapshot_id) : b.child(1).AppendNull();
    b.child(2).AppendInt(s.sequence_number);
    b.child(3).AppendInt(s.timestamp_ms);
    b.child(4).AppendString(s.operation());
    b.child(5).AppendBool(m.current_snapshot_id == s.snapshot_id);
    arrow::ArrayBuilder& entries = b.child(6).child(0);
    for (const auto& [key, value] : s.summary) {
      entries.AppendStruct();
      entries.child(0).AppendString(key);
      entries.child(1).AppendString(value);
    }
    b.child(6).AppendList(static_cast<int64_t>(s.summary.size()));
  }
  return ExportBuilt(std::move(state), b, out);
}

}  // namespace
}  // namespace skade::capi

using skade::capi::Report;

extern "C" {

int skade_namespaces(skade_lake* lake, const char* parent, ArrowArrayStream* out) {
  return Report(skade::capi::Namespaces(lake, parent, out));
}

int skade_namespace_create(skade_lake* lake, const char* ns) {
  auto state = skade::capi::StateOf(lake);
  if (!state.ok()) return Report(state.status());
  auto parsed = skade::capi::NamespaceOf(ns, true);
  if (!parsed.ok()) return Report(parsed.status());
  return Report((*state)->catalog->CreateNamespace(*parsed, {}));
}

int skade_namespace_drop(skade_lake* lake, const char* ns) {
  auto state = skade::capi::StateOf(lake);
  if (!state.ok()) return Report(state.status());
  auto parsed = skade::capi::NamespaceOf(ns, true);
  if (!parsed.ok()) return Report(parsed.status());
  return Report((*state)->catalog->DropNamespace(*parsed));
}

int skade_tables(skade_lake* lake, const char* ns, ArrowArrayStream* out) {
  return Report(skade::capi::Tables(lake, ns, out));
}

int skade_table_create(skade_lake* lake, const char* table, ArrowSchema* schema, const char* const* identifier_fields,
                       int64_t n_identifier_fields, const char* partition_by) {
  return Report(skade::capi::CreateTable(lake, table, schema, identifier_fields, n_identifier_fields, partition_by));
}

int skade_table_drop(skade_lake* lake, const char* table, int flags) {
  return Report(skade::capi::DropTable(lake, table, flags));
}

int skade_table_schema(skade_lake* lake, const char* table, ArrowSchema* out) {
  return Report(skade::capi::TableSchema(lake, table, out));
}

int skade_snapshots(skade_lake* lake, const char* table, ArrowArrayStream* out) {
  return Report(skade::capi::Snapshots(lake, table, out));
}

}  // extern "C"
