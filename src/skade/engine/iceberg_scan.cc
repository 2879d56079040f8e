#include "skade/engine/iceberg_scan.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "skade/base/hex.h"
#include "skade/base/log.h"
#include "skade/engine/data_file_checks.h"
#include "skade/engine/database_internal.h"
#include "skade/engine/deletion_vectors_internal.h"
#include "skade/engine/position_deletes_internal.h"
#include "skade/engine/schema_convert.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/literal.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

using iceberg::DataFileContent;
using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;

// Reserved field ids of the row-lineage metadata columns (spec v3 "Row Lineage"), and the names
// they carry inside the relation until the last projection.
constexpr int kRowIdId = 2147483540;
constexpr int kLastUpdatedId = 2147483539;
constexpr const char* kRowIdInner = "__skade_row_id";
constexpr const char* kLastUpdatedInner = "__skade_last_seq";


// Identifies a partition (spec id + values) as SQL-safe text; same partition ⇔ same key.
std::string PartitionKey(const iceberg::DataFile& f) {
  std::string key = std::to_string(f.spec_id);
  for (const auto& v : f.partition) key += v ? "|" + HexEncode(v->ToBinary()) : "|N";
  return key;
}

std::string SqlList(const std::vector<std::string>& paths) {
  std::string out = "[";
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i) out += ", ";
    out += QuoteString(paths[i]);
  }
  return out + "]";
}

// A literal as text DuckDB casts to its type ('42', '2024-01-02', '14.20', '\x00' for bytes).
std::string LiteralText(const iceberg::Literal& lit) {
  if (lit.type_id() == TypeId::kBinary || lit.type_id() == TypeId::kFixed) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : lit.as_bytes()) {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
    return out;
  }
  return lit.ToString();
}

struct ColumnDef {
  const NestedField* field;
  std::string duck_type;
  // "NULL::VARCHAR" or a VARCHAR literal that DuckDB casts to duck_type (read_parquet's schema
  // map needs one value type for all defaults).
  std::string default_sql;
  bool has_default = false;
};

Result<std::vector<ColumnDef>> Columns(const iceberg::Schema& schema) {
  std::vector<ColumnDef> out;
  for (const NestedField& f : schema.fields()) {
    ColumnDef c{&f, "", "NULL::VARCHAR", false};
    SKADE_ASSIGN_OR_RETURN(c.duck_type, DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    // Spec: a column added with an initial-default reads that value from files without it.
    if (f.initial_default_json && *f.initial_default_json != "null" && f.type->is_primitive()) {
      SKADE_ASSIGN_OR_RETURN(auto lit, iceberg::Literal::FromJson(f.type, *f.initial_default_json)
                                           .WithContext("initial-default of '" + f.name + "'"));
      c.default_sql = QuoteString(LiteralText(lit));
      c.has_default = true;
    }
    out.push_back(std::move(c));
  }
  return out;
}

// schema=MAP{id: {name, type, default_value}, …} for read_parquet.
std::string SchemaMap(const std::vector<std::tuple<int, std::string, std::string, std::string>>& cols) {
  std::string out = "MAP {";
  for (size_t i = 0; i < cols.size(); ++i) {
    const auto& [id, name, type, def] = cols[i];
    if (i) out += ", ";
    out += std::to_string(id) + ": {name: " + QuoteString(name) + ", type: " + QuoteString(type) +
           ", default_value: " + def + "}";
  }
  return out + "}";
}

struct FileShape {
  bool has_field_ids = false;
  std::set<std::string> top_level_names;
  std::set<int> top_level_ids;
  // Field id → name of every nested (not top-level) field that carries an id in the file.
  std::map<int, std::string> nested_names;
};

// Builds a FileShape from a footer's schema elements, given in the footer's order (depth first,
// the root first).
class ShapeBuilder {
 public:
  explicit ShapeBuilder(int64_t root_children) : remaining_(1, root_children) {}

  void Add(const std::string& name, std::optional<int> field_id, int64_t children) {
    while (!remaining_.empty() && remaining_.back() == 0) remaining_.pop_back();
    if (remaining_.empty()) return;
    const bool top_level = remaining_.size() == 1;
    --remaining_.back();
    if (top_level) {
      shape_.top_level_names.insert(name);
      if (field_id) {
        shape_.has_field_ids = true;
        shape_.top_level_ids.insert(*field_id);
      }
    } else if (field_id) {
      shape_.nested_names[*field_id] = name;
    }
    if (children > 0) remaining_.push_back(children);
  }

  FileShape shape() && { return std::move(shape_); }

 private:
  FileShape shape_;
  std::vector<int64_t> remaining_;  // children left to visit at each open level
};

FileShape ShapeOf(const std::vector<iceberg::ParquetSchemaElement>& schema) {
  ShapeBuilder builder(schema.empty() ? 0 : schema.front().num_children);
  for (size_t i = 1; i < schema.size(); ++i) {
    const iceberg::ParquetSchemaElement& e = schema[i];
    builder.Add(e.name, e.field_id ? std::optional<int>(*e.field_id) : std::nullopt, e.num_children);
  }
  return std::move(builder).shape();
}

// Reads the Parquet footers of `paths` (one DuckDB query) and reports, per file, whether its
// top-level columns carry field ids, and their names.
Result<std::unordered_map<std::string, FileShape>> InspectFiles(Database& db,
                                                                const std::vector<std::string>& paths) {
  std::unordered_map<std::string, FileShape> shapes;
  if (paths.empty()) return shapes;
  SKADE_ASSIGN_OR_RETURN(
      auto rows, db.QueryRows("SELECT file_name, name, field_id, num_children FROM parquet_schema(" +
                              SqlList(paths) + ")"));
  // Rows come per file in schema pre-order; the first row of a file is its root.
  std::string current;
  std::optional<ShapeBuilder> builder;
  for (const auto& row : rows) {
    if (!row[0] || !row[1]) continue;
    const std::string& file = *row[0];
    int64_t children = row[3] ? std::stoll(*row[3]) : 0;
    if (file != current) {
      if (builder) shapes[current] = std::move(*builder).shape();
      current = file;
      builder.emplace(children);
      continue;
    }
    builder->Add(*row[1], row[2] ? std::optional<int>(std::stoi(*row[2])) : std::nullopt, children);
  }
  if (builder) shapes[current] = std::move(*builder).shape();
  return shapes;
}

// The shape of each of `paths`: from its footer schema where the page check read one
// (`schemas`, same order), from DuckDB's reading of the footers for the others.
Result<std::unordered_map<std::string, FileShape>> ShapesOf(Database& db, const std::vector<std::string>& paths,
                                                            const std::vector<FileSchema>& schemas) {
  std::unordered_map<std::string, FileShape> shapes;
  std::vector<std::string> unknown;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i < schemas.size() && schemas[i] != nullptr) {
      shapes.emplace(paths[i], ShapeOf(*schemas[i]));
    } else {
      unknown.push_back(paths[i]);
    }
  }
  SKADE_ASSIGN_OR_RETURN(auto inspected, InspectFiles(db, unknown));
  shapes.merge(inspected);
  return shapes;
}

// The names `mapping` gives field `id` that occur in `names`, in mapping order (how a file without
// field ids stores that field, if at all).
std::vector<std::string> MappedNamesIn(const iceberg::NameMapping& mapping, int id,
                                       const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& mf : mapping.fields) {
    if (mf.field_id != id) continue;
    for (const std::string& n : mf.names) {
      if (names.count(n)) out.push_back(n);
    }
  }
  return out;
}

struct DeleteRef {
  std::string local;
  const iceberg::DeleteFileTask* task;
};

// DuckDB matches nested struct fields by name only (read_parquet's schema map covers top-level
// ids). A file whose nested field ids carry other names than the current schema (a renamed or
// dropped-and-re-added nested field) is read with its own names and rebuilt by id.
bool NeedsNestedRemap(const FileShape& shape, const iceberg::Schema& schema) {
  for (const auto& [id, name] : shape.nested_names) {
    const NestedField* f = schema.FindField(id);
    if (f == nullptr || f->name != name) return true;
  }
  return false;
}

// The file-shaped DuckDB type of `field`: current types, the file's names, and only the nested
// fields the file has.
Result<std::string> FileShapedType(const NestedField& field, const FileShape& shape);

Result<std::string> FileShapedChildren(const iceberg::Type& type, const FileShape& shape) {
  std::string out = "STRUCT(";
  bool first = true;
  for (const NestedField& child : type.fields()) {
    auto it = shape.nested_names.find(child.id);
    if (it == shape.nested_names.end()) continue;
    SKADE_ASSIGN_OR_RETURN(std::string t, FileShapedType(child, shape));
    out += std::string(first ? "" : ", ") + QuoteIdentifier(it->second) + " " + t;
    first = false;
  }
  if (first) return std::string();  // no child present
  return out + ")";
}

Result<std::string> FileShapedType(const NestedField& field, const FileShape& shape) {
  const iceberg::Type& t = *field.type;
  switch (t.id()) {
    case TypeId::kStruct: {
      SKADE_ASSIGN_OR_RETURN(std::string inner, FileShapedChildren(t, shape));
      // A struct none of whose fields the file has is read as NULL of the current type.
      if (inner.empty()) return DuckTypeName(t);
      return inner;
    }
    case TypeId::kList: {
      SKADE_ASSIGN_OR_RETURN(std::string e, FileShapedType(t.element(), shape));
      return e + "[]";
    }
    case TypeId::kMap: {
      SKADE_ASSIGN_OR_RETURN(std::string k, FileShapedType(t.key(), shape));
      SKADE_ASSIGN_OR_RETURN(std::string v, FileShapedType(t.value(), shape));
      return "MAP(" + k + ", " + v + ")";
    }
    default:
      return DuckTypeName(t);
  }
}

// An expression turning `expr` (of the file-shaped type) into the current type of `field`.
Result<std::string> RebuildByIds(const NestedField& field, const std::string& expr, const FileShape& shape,
                                 int depth) {
  const iceberg::Type& t = *field.type;
  switch (t.id()) {
    case TypeId::kStruct: {
      std::string packed;
      bool any = false;
      for (const NestedField& child : t.fields()) {
        auto it = shape.nested_names.find(child.id);
        std::string value;
        if (it == shape.nested_names.end()) {
          SKADE_ASSIGN_OR_RETURN(std::string ct, DuckTypeName(*child.type));
          value = "CAST(NULL AS " + ct + ")";
        } else {
          any = true;
          SKADE_ASSIGN_OR_RETURN(value, RebuildByIds(child, "(" + expr + ")." + QuoteIdentifier(it->second), shape,
                                                     depth + 1));
        }
        packed += (packed.empty() ? "" : ", ") + QuoteIdentifier(child.name) + " := " + value;
      }
      SKADE_ASSIGN_OR_RETURN(std::string cur, DuckTypeName(t));
      if (!any) return "CAST(NULL AS " + cur + ")";
      return "CASE WHEN (" + expr + ") IS NULL THEN NULL ELSE CAST(struct_pack(" + packed + ") AS " + cur + ") END";
    }
    case TypeId::kList: {
      std::string var = "__skade_x" + std::to_string(depth);
      SKADE_ASSIGN_OR_RETURN(std::string inner, RebuildByIds(t.element(), var, shape, depth + 1));
      return "list_transform(" + expr + ", " + var + " -> " + inner + ")";
    }
    case TypeId::kMap: {
      std::string var = "__skade_e" + std::to_string(depth);
      SKADE_ASSIGN_OR_RETURN(std::string k, RebuildByIds(t.key(), var + ".key", shape, depth + 1));
      SKADE_ASSIGN_OR_RETURN(std::string v, RebuildByIds(t.value(), var + ".value", shape, depth + 1));
      return "map_from_entries(list_transform(map_entries(" + expr + "), " + var + " -> {'key': " + k +
             ", 'value': " + v + "}))";
    }
    default:
      return expr;
  }
}

}  // namespace

namespace {

Result<std::string> TableSql(Database& db, const IcebergScan& scan, RowOrigin origin, RowLineage row_lineage) {
  SKADE_ASSIGN_OR_RETURN(std::vector<ColumnDef> columns, Columns(*scan.schema));
  const bool lineage = row_lineage == RowLineage::kIncluded;
  if (lineage && scan.format_version < 3) {
    return Status::InvalidArgument("row lineage (" + std::string(kRowIdColumn) + ", " +
                                   std::string(kLastUpdatedSequenceNumberColumn) +
                                   ") exists only in format v3 tables; this table is v" +
                                   std::to_string(scan.format_version));
  }
  const std::string lineage_visible = ", d.__skade_row_id AS " + QuoteIdentifier(std::string(kRowIdColumn)) +
                                      ", d.__skade_last_seq AS " +
                                      QuoteIdentifier(std::string(kLastUpdatedSequenceNumberColumn));

  if (scan.tasks.empty()) {
    std::string sql = "SELECT ";
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i) sql += ", ";
      sql += "CAST(NULL AS " + columns[i].duck_type + ") AS " + QuoteIdentifier(columns[i].field->name);
    }
    if (columns.empty()) sql += "NULL AS \"__empty\"";
    if (lineage) {
      sql += ", CAST(NULL AS BIGINT) AS " + QuoteIdentifier(std::string(kRowIdColumn)) + ", CAST(NULL AS BIGINT) AS " +
             QuoteIdentifier(std::string(kLastUpdatedSequenceNumberColumn));
    }
    if (origin == RowOrigin::kExposed) sql += ", CAST(NULL AS VARCHAR) AS __skade_file, CAST(NULL AS BIGINT) AS __skade_pos";
    return sql + " WHERE false";
  }

  auto local = [&](const std::string& stored) { return io::LocalPath(scan.locations.Apply(stored)); };

  // Data files, with their stored and local paths; every one must exist.
  std::vector<std::string> data_paths;
  data_paths.reserve(scan.tasks.size());
  for (const auto& t : scan.tasks) {
    if (t.file.file_format != iceberg::FileFormat::kParquet) {
      return Status::NotImplemented("data file '" + t.file.file_path + "' is " +
                                    std::string(iceberg::FileFormatName(t.file.file_format)) +
                                    "; skade reads Parquet data files only");
    }
    std::string p = local(t.file.file_path);
    std::error_code ec;
    // Objects are not checked one by one here (a request each); a missing one fails the footer
    // read below with the store's message naming it.
    if (!io::IsObjectStoreLocation(p) && !std::filesystem::exists(p, ec)) {
      return Status::NotFound("data file '" + t.file.file_path + "' does not exist" +
                              (p != t.file.file_path ? " (looked for '" + p + "')" : ""));
    }
    data_paths.push_back(std::move(p));
  }

  // Equality-delete key columns (by field id) that the data side must expose.
  std::set<int> eq_ids;
  std::map<std::string, DeleteRef> delete_files;  // local path → delete file
  // Deletion vectors (v3): at most one per data file; several share a Puffin file, so they
  // are told apart by (file, offset), never by path alone.
  std::vector<DeletionVectorRequest> vector_requests;
  std::vector<size_t> vector_tasks;  // index into scan.tasks, per request
  for (size_t i = 0; i < scan.tasks.size(); ++i) {
    const auto& t = scan.tasks[i];
    for (const auto& d : t.deletes) {
      if (d->file.file_format == iceberg::FileFormat::kPuffin) {
        if (d->file.content != DataFileContent::kPositionDeletes) {
          return Status::Corruption("delete file '" + d->file.file_path + "' is a Puffin file but not a position delete");
        }
        // Spec: a vector names its one data file (referenced_data_file) and its blob; one that
        // names another file, or none, would delete rows of the wrong file.
        if (!d->file.referenced_data_file || !d->file.content_offset || !d->file.content_size_in_bytes) {
          return Status::Corruption("deletion vector in '" + d->file.file_path +
                                    "' has no referenced_data_file, content_offset or content_size_in_bytes");
        }
        if (io::ComparableLocation(*d->file.referenced_data_file) != io::ComparableLocation(t.file.file_path)) {
          return Status::Corruption("deletion vector in '" + d->file.file_path + "' is for '" +
                                    *d->file.referenced_data_file + "', not for data file '" + t.file.file_path + "'");
        }
        if (!vector_tasks.empty() && vector_tasks.back() == i) {
          return Status::Corruption("data file '" + t.file.file_path + "' has two deletion vectors ('" +
                                    vector_requests.back().vector->file_path + "' and '" + d->file.file_path +
                                    "'); the spec allows one");
        }
        vector_requests.push_back({local(d->file.file_path), &d->file, &t.file});
        vector_tasks.push_back(i);
        continue;
      }
      if (d->file.file_format != iceberg::FileFormat::kParquet) {
        return Status::NotImplemented("delete file '" + d->file.file_path + "' is " +
                                      std::string(iceberg::FileFormatName(d->file.file_format)) +
                                      "; skade reads Parquet delete files only");
      }
      std::string p = local(d->file.file_path);
      std::error_code ec;
      if (!io::IsObjectStoreLocation(p) && !std::filesystem::exists(p, ec)) {
        return Status::NotFound("delete file '" + d->file.file_path + "' does not exist");
      }
      if (d->file.content == DataFileContent::kEqualityDeletes) {
        if (d->file.equality_ids.empty()) {
          return Status::Corruption("equality delete file '" + d->file.file_path +
                                    "' has no equality_ids");
        }
        eq_ids.insert(d->file.equality_ids.begin(), d->file.equality_ids.end());
      }
      delete_files.emplace(p, DeleteRef{p, d.get()});
    }
  }
  // A damaged page must fail the read rather than give wrong rows, and DuckDB does not check
  // Parquet page checksums: they are checked here, before any row is read, once per file
  // (data_file_checks.h).
  std::vector<DataFileRef> to_check;
  to_check.reserve(scan.tasks.size() + delete_files.size());
  for (size_t i = 0; i < scan.tasks.size(); ++i) {
    to_check.push_back({data_paths[i], scan.tasks[i].file.file_path, scan.tasks[i].file.file_size_in_bytes});
  }
  for (const auto& [p, ref] : delete_files) {
    to_check.push_back({p, ref.task->file.file_path, ref.task->file.file_size_in_bytes});
  }
  SKADE_ASSIGN_OR_RETURN(std::vector<FileSchema> schemas, db.data_file_checks().Check(to_check));
  SKADE_ASSIGN_OR_RETURN(auto shapes, ShapesOf(db, data_paths, schemas));
  // The SQL carries a mark of its files: a DuckDB error without a file name is traced back to
  // the damaged one (DataFileChecks::Explain, called where statements run).
  const std::string mark = db.data_file_checks().MarkScan(std::move(to_check));
  // Name of the data-side column holding field `id`.
  auto data_column = [&](int id) -> std::string {
    for (const ColumnDef& c : columns) {
      if (c.field->id == id) return c.field->name;
    }
    return "__skade_f" + std::to_string(id);
  };
  std::vector<int> hidden_eq_ids;  // equality columns dropped from the read schema
  for (int id : eq_ids) {
    if (data_column(id).rfind("__skade_f", 0) == 0) hidden_eq_ids.push_back(id);
  }

  std::vector<std::string> id_files, noid_files, remap_files;
  std::set<std::string> noid_names;
  for (const std::string& p : data_paths) {
    const FileShape& shape = shapes[p];
    if (shape.has_field_ids && NeedsNestedRemap(shape, *scan.schema)) {
      remap_files.push_back(p);
    } else if (shape.has_field_ids) {
      id_files.push_back(p);
    } else {
      noid_files.push_back(p);
      noid_names.insert(shape.top_level_names.begin(), shape.top_level_names.end());
    }
  }

  // Row-position deletes are applied inside the reads: skade_read_parquet drops the rows each
  // data file's bitmap holds (delete_scan_internal.h). Each read is given the deletes of its
  // own files only (RowDeletesFor), so the SQL grows with the files, not with reads × files.
  struct PositionUse {
    std::string location;              // the data file's path as its manifest spells it
    std::vector<std::string> deletes;  // local paths of its position delete files
  };
  struct VectorUse {
    std::string puffin;
    int64_t offset = 0, length = 0, rows = 0;
  };
  std::map<std::string, PositionUse> position_uses;  // by the data file's local path
  std::map<std::string, VectorUse> vector_uses;
  {
    std::vector<std::string> pos_files;
    for (const auto& [p, ref] : delete_files) {
      if (ref.task->file.content == DataFileContent::kPositionDeletes) pos_files.push_back(p);
    }
    if (!pos_files.empty()) {
      // Spec: a position delete applies to the data file named by file_path when the data
      // file's sequence number is <= the delete file's (the planner chose the delete files of
      // each data file by that rule and by partition). Writers spell that path their own way
      // (hdfs://nn:8020/w/f for /w/f, s3a:// for s3://): each file_path is matched through one
      // normal form (io::ComparableLocation), never as text. The files are read into bitmaps
      // here (cached), so a damaged one fails now and the read's bind finds them decoded.
      SKADE_ASSIGN_OR_RETURN(std::vector<PositionDeletesPtr> loaded,
                             LoadPositionDeletes(DatabaseAccess::Raw(db), pos_files, db.object_store()));
      std::set<std::string> named;  // comparable paths of the data files read with deletes
      for (size_t i = 0; i < scan.tasks.size(); ++i) {
        const auto& t = scan.tasks[i];
        PositionUse use{t.file.file_path, {}};
        for (const auto& d : t.deletes) {
          if (d->file.content != DataFileContent::kPositionDeletes ||
              d->file.file_format == iceberg::FileFormat::kPuffin) {
            continue;
          }
          use.deletes.push_back(local(d->file.file_path));
        }
        if (use.deletes.empty()) continue;
        named.insert(io::ComparableLocation(t.file.file_path));
        position_uses[data_paths[i]] = std::move(use);
      }
      int64_t unmatched_rows = 0;
      for (const PositionDeletesPtr& file : loaded) {
        for (const auto& [location, vector] : file->by_location) {
          if (!named.count(location)) unmatched_rows += vector.cardinality();
        }
      }
      if (unmatched_rows > 0) {
        std::string message = std::to_string(unmatched_rows) +
                              " position delete row(s) name no data file of this read (files pruned by the "
                              "filter, or already gone from the table)";
        if (scan.note) {
          scan.note(message);
        } else {
          SKADE_LOG_DEBUG("{}", message);
        }
      }
    }
    if (!vector_requests.empty()) {
      // Checked here (footer, CRC, cardinality, positions within the data file) so a damaged
      // vector is a Corruption naming its file; the read's bind finds them decoded in the cache.
      SKADE_RETURN_IF_ERROR(LoadDeletionVectors(vector_requests, db.object_store()).status());
      for (size_t k = 0; k < vector_requests.size(); ++k) {
        const iceberg::DataFile& dv = *vector_requests[k].vector;
        vector_uses[data_paths[vector_tasks[k]]] = {vector_requests[k].puffin, *dv.content_offset,
                                                    *dv.content_size_in_bytes, vector_requests[k].data->record_count};
      }
    }
  }
  // skade_read_parquet's delete parameters for a read of `files` (empty: none of them has any).
  auto row_deletes_for = [&](const std::vector<std::string>& files) {
    std::vector<std::string> pos_files;
    std::map<std::string, size_t> pos_index;
    std::string paths, locations, uses, puffins, offsets, lengths, targets, counts;
    for (const std::string& file : files) {
      if (auto it = position_uses.find(file); it != position_uses.end()) {
        std::string mine;
        for (const std::string& d : it->second.deletes) {
          auto [at, added] = pos_index.emplace(d, pos_files.size());
          if (added) pos_files.push_back(d);
          mine += std::string(mine.empty() ? "" : ", ") + std::to_string(at->second);
        }
        const std::string sep = paths.empty() ? "" : ", ";
        paths += sep + QuoteString(file);
        locations += sep + QuoteString(it->second.location);
        uses += sep + "[" + mine + "]";
      }
      if (auto it = vector_uses.find(file); it != vector_uses.end()) {
        const std::string sep = puffins.empty() ? "" : ", ";
        puffins += sep + QuoteString(it->second.puffin);
        offsets += sep + std::to_string(it->second.offset);
        lengths += sep + std::to_string(it->second.length);
        targets += sep + QuoteString(file);
        counts += sep + std::to_string(it->second.rows);
      }
    }
    std::string sql;
    if (!pos_files.empty()) {
      sql += ", position_delete_files = " + SqlList(pos_files) + "::VARCHAR[], position_data_paths = [" + paths +
             "]::VARCHAR[], position_data_locations = [" + locations + "]::VARCHAR[], position_data_deletes = [" +
             uses + "]::BIGINT[][]";
    }
    if (!puffins.empty()) {
      sql += ", vector_puffins = [" + puffins + "]::VARCHAR[], vector_offsets = [" + offsets +
             "]::BIGINT[], vector_lengths = [" + lengths + "]::BIGINT[], vector_data_paths = [" + targets +
             "]::VARCHAR[], vector_row_counts = [" + counts + "]::BIGINT[]";
    }
    return sql;
  };
  // The reader of data files: skade's around DuckDB's read_parquet, which drops deleted rows
  // and reads the row groups of a single file on every thread (delete_scan_internal.h).
  const std::string read_parquet = "skade_read_parquet(";

  std::vector<std::string> parts;
  if (!id_files.empty()) {
    std::vector<std::tuple<int, std::string, std::string, std::string>> map;
    for (const ColumnDef& c : columns) {
      map.emplace_back(c.field->id, c.field->name, c.duck_type, c.default_sql);
    }
    for (int id : hidden_eq_ids) {
      // Spec: equality deletes on a dropped column still apply; read it by id.
      map.emplace_back(id, data_column(id), "VARCHAR", "NULL::VARCHAR");
    }
    if (lineage) {
      map.emplace_back(kRowIdId, kRowIdInner, "BIGINT", "NULL::VARCHAR");
      map.emplace_back(kLastUpdatedId, kLastUpdatedInner, "BIGINT", "NULL::VARCHAR");
    }
    const std::string deletes = row_deletes_for(id_files);
    parts.push_back("SELECT * FROM " + read_parquet + SqlList(id_files) + ", schema = " + SchemaMap(map) +
                    ", filename = true, file_row_number = true" + deletes + ")");
  }
  for (const std::string& file : remap_files) {
    const FileShape& shape = shapes[file];
    std::vector<std::tuple<int, std::string, std::string, std::string>> map;
    std::string select;
    for (const ColumnDef& c : columns) {
      SKADE_ASSIGN_OR_RETURN(std::string type, FileShapedType(*c.field, shape));
      map.emplace_back(c.field->id, c.field->name, type, c.default_sql);
      SKADE_ASSIGN_OR_RETURN(std::string expr, RebuildByIds(*c.field, QuoteIdentifier(c.field->name), shape, 0));
      select += expr + " AS " + QuoteIdentifier(c.field->name) + ", ";
    }
    for (int id : hidden_eq_ids) {
      map.emplace_back(id, data_column(id), "VARCHAR", "NULL::VARCHAR");
      select += QuoteIdentifier(data_column(id)) + ", ";
    }
    if (lineage) {
      map.emplace_back(kRowIdId, kRowIdInner, "BIGINT", "NULL::VARCHAR");
      map.emplace_back(kLastUpdatedId, kLastUpdatedInner, "BIGINT", "NULL::VARCHAR");
      select += std::string(kRowIdInner) + ", " + kLastUpdatedInner + ", ";
    }
    const std::string deletes = row_deletes_for({file});
    parts.push_back("SELECT " + select + "filename, file_row_number FROM " + read_parquet + SqlList({file}) +
                    ", schema = " + SchemaMap(map) + ", filename = true, file_row_number = true" + deletes + ")");
  }
  // Spec "Column Projection": files without ids are mapped by schema.name-mapping.default.
  iceberg::NameMapping mapping;
  if (!noid_files.empty()) {
    if (scan.name_mapping) {
      mapping = *scan.name_mapping;
    } else {
      SKADE_LOG_WARN("{} data file(s) have no Parquet field ids and the table has no name mapping;"
                     " mapping columns by their current names", noid_files.size());
      mapping = iceberg::NameMapping::FromSchema(*scan.schema);
    }
    std::string select;
    for (const ColumnDef& c : columns) {
      std::vector<std::string> present;
      for (const std::string& n : MappedNamesIn(mapping, c.field->id, noid_names)) present.push_back(QuoteIdentifier(n));
      std::string expr;
      if (present.empty()) {
        expr = "CAST(" + c.default_sql + " AS " + c.duck_type + ")";
      } else {
        std::string inner = present.size() == 1 ? present[0] : "COALESCE(";
        if (present.size() > 1) {
          for (size_t i = 0; i < present.size(); ++i) inner += (i ? ", " : "") + present[i];
          inner += ")";
        }
        expr = "CAST(" + inner + " AS " + c.duck_type + ")";
      }
      select += expr + " AS " + QuoteIdentifier(c.field->name) + ", ";
    }
    for (int id : hidden_eq_ids) {
      select += "CAST(NULL AS VARCHAR) AS " + QuoteIdentifier(data_column(id)) + ", ";
    }
    // Files without field ids store no row lineage: every row inherits it.
    if (lineage) {
      select += std::string("CAST(NULL AS BIGINT) AS ") + kRowIdInner + ", CAST(NULL AS BIGINT) AS " +
                kLastUpdatedInner + ", ";
    }
    const std::string deletes = row_deletes_for(noid_files);
    parts.push_back("SELECT " + select + "filename, file_row_number FROM " + read_parquet +
                    SqlList(noid_files) + ", union_by_name = true, filename = true, file_row_number = true" + deletes +
                    ")");
  }
  if (parts.empty()) return Status::Internal("no data file could be read");
  std::string data_sql = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) data_sql += "\nUNION ALL BY NAME\n" + parts[i];

  // Spec "Column Projection": a field a data file does not store takes the file's identity
  // partition value from the manifest (then its initial-default, then null). Many writers
  // (DuckDB, Impala, Hive migrations, add_files) keep identity partition columns out of the
  // files. The values join by file name; a file that stores the column keeps its own values.
  auto stores = [&](const std::string& path, int id) {
    const FileShape& shape = shapes[path];
    if (shape.has_field_ids) return shape.top_level_ids.count(id) > 0;
    return !MappedNamesIn(mapping, id, shape.top_level_names).empty();
  };
  // Per column: the files that take its value from their partition, with the value's SQL.
  std::vector<std::map<std::string, std::string>> from_partition(columns.size());
  for (size_t i = 0; i < scan.tasks.size(); ++i) {
    const iceberg::DataFile& file = scan.tasks[i].file;
    iceberg::PartitionSpecPtr spec;
    for (const auto& candidate : scan.specs) {
      if (candidate && candidate->spec_id() == file.spec_id) spec = candidate;
    }
    if (!spec) continue;
    for (size_t f = 0; f < spec->fields().size() && f < file.partition.size(); ++f) {
      const iceberg::PartitionField& pf = spec->fields()[f];
      if (pf.transform.kind() != iceberg::TransformKind::kIdentity) continue;
      for (size_t c = 0; c < columns.size(); ++c) {
        if (columns[c].field->id != pf.source_id || stores(data_paths[i], pf.source_id)) continue;
        const auto& value = file.partition[f];
        from_partition[c][data_paths[i]] =
            value ? "CAST(" + QuoteString(LiteralText(*value)) + " AS " + columns[c].duck_type + ")"
                  : "CAST(NULL AS " + columns[c].duck_type + ")";
      }
    }
  }
  std::set<std::string> valued_files;
  for (const auto& per_column : from_partition) {
    for (const auto& [path, sql] : per_column) valued_files.insert(path);
  }
  if (!valued_files.empty()) {
    std::string values, aliases = "__skade_path";
    for (size_t c = 0; c < columns.size(); ++c) {
      if (from_partition[c].empty()) continue;
      aliases += ", __skade_has" + std::to_string(c) + ", __skade_value" + std::to_string(c);
    }
    for (const std::string& path : valued_files) {
      values += std::string(values.empty() ? "" : ", ") + "(" + QuoteString(path);
      for (size_t c = 0; c < columns.size(); ++c) {
        if (from_partition[c].empty()) continue;
        auto it = from_partition[c].find(path);
        values += it == from_partition[c].end()
                      ? ", false, CAST(NULL AS " + columns[c].duck_type + ")"
                      : ", true, " + it->second;
      }
      values += ")";
    }
    std::string select;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string name = QuoteIdentifier(columns[c].field->name);
      select += select.empty() ? "" : ", ";
      if (from_partition[c].empty()) {
        select += "__skade_d." + name;
      } else {
        const std::string n = std::to_string(c);
        select += "CASE WHEN __skade_p.__skade_has" + n + " THEN __skade_p.__skade_value" + n + " ELSE __skade_d." +
                  name + " END AS " + name;
      }
    }
    for (int id : hidden_eq_ids) select += ", __skade_d." + QuoteIdentifier(data_column(id));
    if (lineage) select += std::string(", __skade_d.") + kRowIdInner + ", __skade_d." + kLastUpdatedInner;
    select += ", __skade_d.filename, __skade_d.file_row_number";
    data_sql = "SELECT " + select + " FROM (" + data_sql + ") __skade_d LEFT JOIN (VALUES " + values +
               ") __skade_p(" + aliases + ") ON __skade_d.filename = __skade_p.__skade_path";
  }

  if (lineage) {
    // Spec "Row Lineage": a null _row_id is the file's first_row_id (inherited, see
    // iceberg/manifest.cc) plus the row's position; a null _last_updated_sequence_number is
    // the data sequence number of the file's manifest entry.
    std::string values;
    for (size_t i = 0; i < scan.tasks.size(); ++i) {
      const auto& first = scan.tasks[i].file.first_row_id;
      values += std::string(i ? ", " : "") + "(" + QuoteString(data_paths[i]) + ", " +
                (first ? std::to_string(*first) : std::string("NULL")) + "::BIGINT, " +
                std::to_string(scan.tasks[i].sequence_number) + "::BIGINT)";
    }
    data_sql = std::string("SELECT __skade_r.* REPLACE (COALESCE(__skade_r.") + kRowIdInner +
               ", __skade_l.first_row_id + __skade_r.file_row_number) AS " + kRowIdInner +
               ", COALESCE(__skade_r." + kLastUpdatedInner + ", __skade_l.seq) AS " + kLastUpdatedInner +
               ") FROM (" + data_sql + ") __skade_r LEFT JOIN (VALUES " + values +
               ") __skade_l(path, first_row_id, seq) ON __skade_r.filename = __skade_l.path";
  }

  std::string visible;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) visible += ", ";
    visible += "d." + QuoteIdentifier(columns[i].field->name);
  }
  if (lineage) visible += visible.empty() ? lineage_visible.substr(2) : lineage_visible;
  if (origin == RowOrigin::kExposed) {
    // Map local paths back to the stored paths manifests use.
    std::string cases;
    for (size_t i = 0; i < scan.tasks.size(); ++i) {
      if (data_paths[i] == scan.tasks[i].file.file_path) continue;
      cases += " WHEN " + QuoteString(data_paths[i]) + " THEN " + QuoteString(scan.tasks[i].file.file_path);
    }
    cases = cases.empty() ? "d.filename" : "CASE d.filename" + cases + " ELSE d.filename END";
    visible += (visible.empty() ? "" : ", ") + cases + " AS __skade_file, d.file_row_number AS __skade_pos";
  }
  if (eq_ids.empty()) {
    return mark + "SELECT " + visible + " FROM (" + data_sql + ") d";
  }

  // Equality delete files grouped by their key columns (position deletes were applied by the
  // reads above).
  std::map<std::vector<int>, std::vector<std::string>> eq_groups;
  std::string del_values;  // equality delete files: local path, sequence number, partition key (NULL = global)
  for (const auto& [p, ref] : delete_files) {
    if (ref.task->file.content == DataFileContent::kPositionDeletes) continue;
    const bool global = ref.task->file.partition.empty();
    del_values += std::string(del_values.empty() ? "" : ", ") + "(" + QuoteString(p) + ", " +
                  std::to_string(ref.task->sequence_number) + ", " +
                  (global ? std::string("NULL") : QuoteString(PartitionKey(ref.task->file))) + ")";
    std::vector<int> ids = ref.task->file.equality_ids;
    std::sort(ids.begin(), ids.end());
    eq_groups[ids].push_back(p);
  }

  std::string sql = "WITH __skade_data AS (" + data_sql + ")";
  std::string body = "SELECT " + visible + " FROM __skade_data d";
  if (!eq_groups.empty()) {
    // Files with deletes: local path, stored path, data sequence number, partition key.
    sql += ",\n__skade_files(path, stored, seq, part) AS (VALUES ";
    bool first = true;
    for (size_t i = 0; i < scan.tasks.size(); ++i) {
      const auto& t = scan.tasks[i];
      if (t.deletes.empty()) continue;
      sql += std::string(first ? "" : ", ") + "(" + QuoteString(data_paths[i]) + ", " +
             QuoteString(t.file.file_path) + ", " + std::to_string(t.sequence_number) + ", " +
             QuoteString(PartitionKey(t.file)) + ")";
      first = false;
    }
    sql += "),\n__skade_deletes(path, seq, part) AS (VALUES " + del_values + ")";
    body = "SELECT " + visible + " FROM (SELECT __skade_data.*, f.seq AS __skade_seq, " +
           "f.part AS __skade_part FROM __skade_data LEFT JOIN __skade_files f ON " +
           "__skade_data.filename = f.path) d";
  }
  int group = 0;
  for (const auto& [ids, files] : eq_groups) {
    std::string name = "__skade_eq" + std::to_string(group++);
    std::vector<std::tuple<int, std::string, std::string, std::string>> map;
    std::string on;
    for (int id : ids) {
      std::string col = "k" + std::to_string(id);
      const NestedField* f = scan.schema->FindField(id);
      std::string type = "VARCHAR";
      if (f != nullptr) {
        SKADE_ASSIGN_OR_RETURN(type, DuckTypeName(*f->type));
      }
      map.emplace_back(id, col, type, "NULL::VARCHAR");
      // Spec: equality deletes compare with null-safe equality.
      on += "d." + QuoteIdentifier(data_column(id)) + " IS NOT DISTINCT FROM e." + col + " AND ";
    }
    sql += ",\n" + name + " AS (SELECT e.*, dl.seq AS __skade_dseq, dl.part AS __skade_dpart " +
           "FROM " + read_parquet + SqlList(files) + ", schema = " + SchemaMap(map) +
           ", filename = true) e JOIN __skade_deletes dl ON e.filename = dl.path)";
    // Spec: an equality delete applies to data files with a strictly smaller sequence number
    // in the same partition, or everywhere when its spec is unpartitioned.
    body += "\nANTI JOIN " + name + " e ON " + on +
            "e.__skade_dseq > d.__skade_seq AND (e.__skade_dpart IS NULL OR " +
            "e.__skade_dpart = d.__skade_part)";
  }
  return mark + sql + "\n" + body;
}

}  // namespace

Result<std::string> BuildTableSql(Database& db, const IcebergScan& scan, RowOrigin origin) {
  return TableSql(db, scan, origin, scan.row_lineage);
}

Result<std::string> BuildScanSql(Database& db, const IcebergScan& scan, const ScanQuery& query) {
  if (query.where && scan.schema && !query.where_checked) {
    SKADE_RETURN_IF_ERROR(CheckBooleanPredicate(db, *query.where, *scan.schema));
  }
  std::string projection;
  RowLineage lineage = scan.row_lineage;
  if (query.columns.empty()) {
    projection = "*";
  } else {
    for (const std::string& c : query.columns) {
      bool found = false;
      for (const NestedField& f : scan.schema->fields()) found = found || f.name == c;
      // A schema field of that name wins over the metadata column (as in Iceberg's readers).
      if (!found && (c == kRowIdColumn || c == kLastUpdatedSequenceNumberColumn)) {
        lineage = RowLineage::kIncluded;
        found = true;
      }
      if (!found) return Status::InvalidArgument("unknown column '" + c + "'");
      projection += (projection.empty() ? "" : ", ") + QuoteIdentifier(c);
    }
  }
  SKADE_ASSIGN_OR_RETURN(std::string table, TableSql(db, scan, RowOrigin::kHidden, lineage));
  std::string sql = "SELECT " + projection + " FROM (" + table + "\n) __skade_t";
  if (query.where) sql += " WHERE " + query.where->sql();
  if (query.limit) sql += " LIMIT " + std::to_string(*query.limit);
  return sql;
}

Result<arrow::StreamHandle> ScanToArrow(Database& db, const IcebergScan& scan, const ScanQuery& query) {
  SKADE_ASSIGN_OR_RETURN(std::string sql, BuildScanSql(db, scan, query));
  return db.QueryArrow(sql);
}

Result<int64_t> CountRows(Database& db, const IcebergScan& scan, const ScanQuery& query) {
  SKADE_ASSIGN_OR_RETURN(std::string rows_sql, BuildScanSql(db, scan, query));
  SKADE_ASSIGN_OR_RETURN(auto rows, db.QueryRows("SELECT count(*) FROM (" + rows_sql + "\n) __skade_c"));
  if (rows.size() != 1 || !rows[0][0]) return Status::Internal("count returned no row");
  return std::stoll(*rows[0][0]);
}

}  // namespace skade::engine
