// An independent oracle for reads (Iceberg issue #10). For the five fixture tables, for tables
// skade writes (merge-on-read position deletes, upserts and equality deletes, v3 deletion
// vectors, partition-spec and schema evolution, a migrated table whose files have no field ids)
// and for foreign copies of them whose locations are spelled as other writers spell them, the
// rows skade's read path returns must equal the rows an oracle computes file by file: DuckDB's
// read_parquet on each live data file, columns projected by field id (spec "Column Projection")
// and deletes applied by hand (spec "Scan Planning"). The oracle shares no code with
// engine/iceberg_scan.cc; it reuses only the manifest reader, the deletion-vector decoder and the
// location normal form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "skade/engine/iceberg_scan.h"
#include "skade/engine/sql_filter.h"
#include "skade/iceberg/deletion_vector.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/relocation.h"
#include "skade/iceberg/scan.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/version_hint.h"
#include "skade/io/location.h"
#include "skade/io/location_map.h"
#include "tests/testing/foreign_table.h"
#include "tests/testing/lake_test.h"

namespace skade::table {
namespace {

using engine::QuoteIdentifier;
using engine::QuoteString;
using iceberg::DataFile;
using iceberg::DataFileContent;
using iceberg::TypeId;
using testing::LocationRole;

// ---------------------------------------------------------------------------------------------
// Where the oracle finds files: stored location prefixes → local folders, matched as plain
// string prefixes on whole path components (deliberately not io::LocationMap, which is under
// test).

class Resolver {
 public:
  Resolver() = default;
  Resolver(std::initializer_list<std::pair<std::string, std::string>> rules) : rules_(rules) {}

  std::string operator()(std::string_view stored) const {
    for (const auto& [from, to] : rules_) {
      if (stored.size() >= from.size() && stored.substr(0, from.size()) == from &&
          (stored.size() == from.size() || stored[from.size()] == '/')) {
        return to + std::string(stored.substr(from.size()));
      }
    }
    return std::string(stored);
  }

 private:
  std::vector<std::pair<std::string, std::string>> rules_;
};

// A read-only FileIO over local files at the paths a Resolver gives stored locations.
class ResolvingFileIO : public io::FileIO {
 public:
  explicit ResolvingFileIO(Resolver resolve)
      : resolve_(std::move(resolve)), local_(io::MakeLocalFileIO()) {}

  Result<std::string> Read(std::string_view location) override {
    return local_->Read(resolve_(location));
  }
  Result<std::string> ReadRange(std::string_view location, int64_t offset,
                                int64_t length) override {
    return local_->ReadRange(resolve_(location), offset, length);
  }
  Result<io::FileInfo> Stat(std::string_view location) override {
    return local_->Stat(resolve_(location));
  }
  Status CreateExclusive(std::string_view, std::string_view) override { return ReadOnly(); }
  Status Overwrite(std::string_view, std::string_view) override { return ReadOnly(); }
  Status Update(std::string_view, const Change&) override { return ReadOnly(); }
  Result<std::vector<io::FileInfo>> List(std::string_view) override { return ReadOnly(); }
  Status Delete(std::string_view) override { return ReadOnly(); }

 private:
  static Status ReadOnly() { return Status::NotImplemented("the oracle's FileIO is read-only"); }
  Resolver resolve_;
  std::unique_ptr<io::FileIO> local_;
};

// ---------------------------------------------------------------------------------------------
// The oracle.

// The DuckDB type the oracle reads an Iceberg type as.
std::string OracleType(const iceberg::Type& t) {
  switch (t.id()) {
    case TypeId::kBoolean:
      return "BOOLEAN";
    case TypeId::kInt:
      return "INTEGER";
    case TypeId::kLong:
      return "BIGINT";
    case TypeId::kFloat:
      return "FLOAT";
    case TypeId::kDouble:
      return "DOUBLE";
    case TypeId::kDecimal:
      return "DECIMAL(" + std::to_string(t.precision()) + ", " + std::to_string(t.scale()) + ")";
    case TypeId::kDate:
      return "DATE";
    case TypeId::kTime:
      return "TIME";
    case TypeId::kTimestamp:
      return "TIMESTAMP";
    case TypeId::kTimestampTz:
      return "TIMESTAMPTZ";
    case TypeId::kTimestampNs:
    case TypeId::kTimestampTzNs:
      return "TIMESTAMP_NS";
    case TypeId::kString:
      return "VARCHAR";
    case TypeId::kUuid:
      return "UUID";
    case TypeId::kFixed:
    case TypeId::kBinary:
      return "BLOB";
    case TypeId::kStruct: {
      std::string out;
      for (const auto& f : t.fields())
        out += (out.empty() ? "" : ", ") + QuoteIdentifier(f.name) + " " + OracleType(*f.type);
      return "STRUCT(" + out + ")";
    }
    case TypeId::kList:
      return OracleType(*t.element().type) + "[]";
    case TypeId::kMap:
      return "MAP(" + OracleType(*t.key().type) + ", " + OracleType(*t.value().type) + ")";
    default:
      return "VARCHAR";  // not in any table read here
  }
}

// A partition value or default as a SQL constant of type `type`.
std::string ConstantSql(const iceberg::Literal& value, const std::string& type) {
  switch (value.type_id()) {
    case TypeId::kString:
      return "CAST(" + QuoteString(value.as_bytes()) + " AS " + type + ")";
    case TypeId::kFixed:
    case TypeId::kBinary:
      return "CAST(unhex(" + QuoteString(value.ToString()) + ") AS " + type + ")";
    default:
      return "CAST(" + QuoteString(value.ToString()) + " AS " + type + ")";
  }
}

// Same spec id and the same partition values (spec "Scan Planning": "both spec and partition
// values").
bool SamePartition(const DataFile& a, const DataFile& b) {
  if (a.spec_id != b.spec_id || a.partition.size() != b.partition.size()) return false;
  for (size_t i = 0; i < a.partition.size(); ++i) {
    const auto& x = a.partition[i];
    const auto& y = b.partition[i];
    if (x.has_value() != y.has_value()) return false;
    if (x && (x->type_id() != y->type_id() || x->ToBinary() != y->ToBinary())) return false;
  }
  return true;
}

struct LiveFile {
  DataFile file;
  int64_t sequence_number = 0;  // data sequence number
};

// The top-level columns of a Parquet file: their names, and their field ids when it has them.
struct ParquetColumns {
  std::map<std::string, std::optional<int>> by_name;
  bool has_field_ids = false;
  std::set<int> ids;
};

Result<ParquetColumns> TopLevelColumns(engine::Database& db, const std::string& path) {
  SKADE_ASSIGN_OR_RETURN(auto rows,
                         db.QueryRows("SELECT name, field_id, num_children FROM parquet_schema(" +
                                      QuoteString(path) + ")"));
  // Rows come in schema pre-order, the root first: a child is top-level while the root's
  // children are being listed at depth one.
  ParquetColumns out;
  std::vector<int64_t> open;  // children still to come at each depth
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t children = rows[i][2] ? std::stoll(*rows[i][2]) : 0;
    if (i == 0) {
      open.push_back(children);
      continue;
    }
    while (!open.empty() && open.back() == 0) open.pop_back();
    if (open.empty()) break;
    const bool top_level = open.size() == 1;
    --open.back();
    if (top_level) {
      std::optional<int> id;
      if (rows[i][1]) id = std::stoi(*rows[i][1]);
      out.by_name[*rows[i][0]] = id;
      if (id) {
        out.has_field_ids = true;
        out.ids.insert(*id);
      }
    }
    if (children > 0) open.push_back(children);
  }
  return out;
}

// Computes a snapshot's rows by hand.
class Oracle {
 public:
  // `io` reads manifests and Puffin files by stored location; `local` gives DuckDB the local
  // path of a stored location.
  Oracle(engine::Database& db, const iceberg::TableMetadata& metadata, io::FileIO& io,
         Resolver local)
      : db_(db), metadata_(metadata), io_(io), local_(std::move(local)) {}

  // The relation of `snapshot` (current when nullopt) read with the schema Iceberg's time-travel
  // rule picks: the current schema for the current snapshot, the snapshot's own otherwise.
  Result<std::string> Sql(std::optional<int64_t> snapshot_id = std::nullopt);
  // The schema of that read.
  iceberg::SchemaPtr SchemaFor(std::optional<int64_t> snapshot_id) const;

 private:
  Result<std::string> FileSql(const iceberg::Schema& schema, const LiveFile& data,
                              const std::vector<LiveFile>& deletes);
  Result<std::vector<std::string>> FilePathsNamed(const std::string& delete_local);

  engine::Database& db_;
  const iceberg::TableMetadata& metadata_;
  io::FileIO& io_;
  Resolver local_;
  std::map<std::string, std::vector<std::string>> named_;  // delete file → distinct file_path
};

iceberg::SchemaPtr Oracle::SchemaFor(std::optional<int64_t> snapshot_id) const {
  if (!snapshot_id) return metadata_.CurrentSchema();
  const iceberg::Snapshot* s = metadata_.SnapshotById(*snapshot_id);
  if (s != nullptr && s->schema_id) {
    if (auto schema = metadata_.SchemaById(*s->schema_id)) return schema;
  }
  return metadata_.CurrentSchema();
}

Result<std::vector<std::string>> Oracle::FilePathsNamed(const std::string& delete_local) {
  if (auto it = named_.find(delete_local); it != named_.end()) return it->second;
  // Spec "Position Delete Files": the columns are named file_path and pos.
  SKADE_ASSIGN_OR_RETURN(auto rows, db_.QueryRows("SELECT DISTINCT file_path FROM read_parquet(" +
                                                  QuoteString(delete_local) + ")"));
  std::vector<std::string> out;
  for (const auto& r : rows) {
    if (r[0]) out.push_back(*r[0]);
  }
  return named_[delete_local] = out;
}

Result<std::string> Oracle::Sql(std::optional<int64_t> snapshot_id) {
  const iceberg::Snapshot* snapshot =
      snapshot_id ? metadata_.SnapshotById(*snapshot_id) : metadata_.CurrentSnapshot();
  if (snapshot == nullptr) return Status::NotFound("no such snapshot");
  const iceberg::SchemaPtr schema = SchemaFor(snapshot_id);
  SKADE_ASSIGN_OR_RETURN(auto manifests, iceberg::ReadManifestList(io_, snapshot->manifest_list));
  std::vector<LiveFile> data, deletes;
  for (const auto& m : manifests) {
    SKADE_RETURN_IF_ERROR(iceberg::ForEachLiveEntry(io_, m, [&](iceberg::ManifestEntry& e) {
      (m.content == iceberg::ManifestContent::kData ? data : deletes)
          .push_back({e.data_file, *e.sequence_number});
      return Status::Ok();
    }));
  }
  std::string sql;
  for (const LiveFile& d : data) {
    SKADE_ASSIGN_OR_RETURN(std::string part,
                           FileSql(*schema, d, deletes).WithContext(d.file.file_path));
    sql += (sql.empty() ? "" : "\nUNION ALL\n") + part;
  }
  if (sql.empty()) {
    for (const auto& f : schema->fields()) {
      sql += std::string(sql.empty() ? "SELECT " : ", ") + "CAST(NULL AS " + OracleType(*f.type) +
             ") AS " + QuoteIdentifier(f.name);
    }
    sql += " WHERE false";
  }
  return sql;
}

Result<std::string> Oracle::FileSql(const iceberg::Schema& schema, const LiveFile& data,
                                    const std::vector<LiveFile>& deletes) {
  const DataFile& file = data.file;
  const std::string path = local_(file.file_path);
  const std::string data_key = io::ComparableLocation(file.file_path);

  // The delete files that apply to this data file (spec "Scan Planning").
  std::vector<const LiveFile*> positional, vectors, equality;
  for (const LiveFile& d : deletes) {
    const DataFile& f = d.file;
    if (f.content == DataFileContent::kEqualityDeletes) {
      auto spec = metadata_.SpecById(f.spec_id);
      if (!spec) return Status::Corruption("delete file with unknown spec");
      if (d.sequence_number > data.sequence_number &&
          (spec->is_unpartitioned() || SamePartition(f, file))) {
        equality.push_back(&d);
      }
      continue;
    }
    if (d.sequence_number < data.sequence_number || !SamePartition(f, file)) continue;
    if (f.referenced_data_file && io::ComparableLocation(*f.referenced_data_file) != data_key)
      continue;
    if (f.file_format == iceberg::FileFormat::kPuffin) {
      if (!f.referenced_data_file)
        return Status::Corruption("deletion vector without referenced_data_file");
      vectors.push_back(&d);
    } else {
      positional.push_back(&d);
    }
  }
  // A deletion vector replaces the file's position delete files.
  if (!vectors.empty()) positional.clear();

  // Field ids the data side must expose: the schema's columns, and equality keys the schema
  // dropped.
  std::map<int, std::string> key_column;  // equality field id → column in `d`
  for (const auto& f : schema.fields()) key_column[f.id] = QuoteIdentifier(f.name);
  std::vector<std::pair<int, iceberg::TypePtr>> hidden;
  for (const LiveFile* e : equality) {
    for (int id : e->file.equality_ids) {
      if (key_column.count(id)) continue;
      iceberg::TypePtr type;
      for (const auto& s : metadata_.schemas) {
        if (const auto* f = s->FindField(id); f != nullptr && !type) type = f->type;
      }
      if (!type)
        return Status::Corruption("equality field " + std::to_string(id) + " is in no schema");
      key_column[id] = "__eq" + std::to_string(id);
      hidden.emplace_back(id, type);
    }
  }

  SKADE_ASSIGN_OR_RETURN(ParquetColumns columns, TopLevelColumns(db_, path));
  iceberg::PartitionSpecPtr spec = metadata_.SpecById(file.spec_id);
  // Names a file without field ids may give a field (schema.name-mapping.default, else the
  // current names).
  std::optional<iceberg::NameMapping> mapping = metadata_.DefaultNameMapping();
  if (!mapping) mapping = iceberg::NameMapping::FromSchema(*metadata_.CurrentSchema());
  auto stored_name = [&](int id) -> std::optional<std::string> {
    for (const auto& mf : mapping->fields) {
      if (mf.field_id != id) continue;
      for (const auto& n : mf.names) {
        if (columns.by_name.count(n)) return n;
      }
    }
    return std::nullopt;
  };

  std::string schema_map, select;
  auto project = [&](int id, const iceberg::NestedField* field, const iceberg::Type& type,
                     const std::string& alias) {
    const std::string t = OracleType(type);
    std::string expr;
    if (columns.has_field_ids && columns.ids.count(id)) {
      const std::string inner = "__c" + std::to_string(id);
      schema_map += (schema_map.empty() ? "" : ", ") + std::to_string(id) +
                    ": {name: " + QuoteString(inner) + ", type: " + QuoteString(t) +
                    ", default_value: NULL::VARCHAR}";
      expr = inner;
    } else if (!columns.has_field_ids && stored_name(id)) {
      expr = "CAST(" + QuoteIdentifier(*stored_name(id)) + " AS " + t + ")";
    } else {
      // Spec "Column Projection": a field the file does not store is the file's identity
      // partition value, else the field's initial-default, else null.
      expr = "CAST(NULL AS " + t + ")";
      bool from_partition = false;
      for (size_t i = 0; spec && i < spec->fields().size() && i < file.partition.size(); ++i) {
        const auto& pf = spec->fields()[i];
        if (pf.source_id != id || pf.transform.kind() != iceberg::TransformKind::kIdentity)
          continue;
        from_partition = true;
        if (file.partition[i]) expr = ConstantSql(*file.partition[i], t);
      }
      if (!from_partition && field && field->initial_default_json &&
          *field->initial_default_json != "null") {
        auto lit = iceberg::Literal::FromJson(field->type, *field->initial_default_json);
        if (!lit.ok()) return lit.status();
        expr = ConstantSql(*lit, t);
      }
    }
    select += expr + " AS " + alias + ", ";
    return Status::Ok();
  };
  for (const auto& f : schema.fields())
    SKADE_RETURN_IF_ERROR(project(f.id, &f, *f.type, QuoteIdentifier(f.name)));
  for (const auto& [id, type] : hidden)
    SKADE_RETURN_IF_ERROR(project(id, nullptr, *type, key_column[id]));
  std::string read = "read_parquet(" + QuoteString(path) + ", file_row_number = true" +
                     (schema_map.empty() ? "" : ", schema = MAP {" + schema_map + "}") + ")";
  std::string base = "SELECT " + select + "file_row_number AS __pos FROM " + read;

  std::vector<std::string> keep;
  for (const LiveFile* p : positional) {
    const std::string del = local_(p->file.file_path);
    SKADE_ASSIGN_OR_RETURN(auto named, FilePathsNamed(del));
    std::string raws;
    for (const std::string& n : named) {
      if (io::ComparableLocation(n) == data_key)
        raws += (raws.empty() ? "" : ", ") + QuoteString(n);
    }
    if (raws.empty()) continue;
    keep.push_back("NOT EXISTS (SELECT 1 FROM read_parquet(" + QuoteString(del) +
                   ") p WHERE p.pos = d.__pos AND p.file_path IN (" + raws + "))");
  }
  for (const LiveFile* v : vectors) {
    const DataFile& f = v->file;
    if (!f.content_offset || !f.content_size_in_bytes)
      return Status::Corruption("deletion vector without its blob");
    SKADE_ASSIGN_OR_RETURN(std::string blob,
                           io_.ReadRange(f.file_path, *f.content_offset, *f.content_size_in_bytes));
    SKADE_ASSIGN_OR_RETURN(auto dv, iceberg::DeletionVector::Deserialize(blob));
    std::string positions;
    dv.ForEach(
        [&](int64_t pos) { positions += (positions.empty() ? "" : ", ") + std::to_string(pos); });
    if (!positions.empty())
      keep.push_back("NOT list_contains([" + positions + "]::BIGINT[], d.__pos)");
  }
  for (const LiveFile* e : equality) {
    const std::string del = local_(e->file.file_path);
    SKADE_ASSIGN_OR_RETURN(ParquetColumns stored, TopLevelColumns(db_, del));
    std::string map, on;
    for (int id : e->file.equality_ids) {
      iceberg::TypePtr type;
      std::string name;
      for (const auto& s : metadata_.schemas) {
        if (const auto* f = s->FindField(id)) {
          type = f->type;
          name = f->name;
        }
      }
      const std::string k = "__k" + std::to_string(id);
      std::string value = k;
      if (stored.has_field_ids) {
        map += (map.empty() ? "" : ", ") + std::to_string(id) + ": {name: " + QuoteString(k) +
               ", type: " + QuoteString(OracleType(*type)) + ", default_value: NULL::VARCHAR}";
      } else {
        value = "CAST(e." + QuoteIdentifier(name) + " AS " + OracleType(*type) + ")";
      }
      // Spec "Equality Delete Files": null-safe equality on every key column.
      on += std::string(on.empty() ? "" : " AND ") + "d." + key_column[id] +
            " IS NOT DISTINCT FROM " + (stored.has_field_ids ? "e." + k : value);
    }
    keep.push_back("NOT EXISTS (SELECT 1 FROM read_parquet(" + QuoteString(del) +
                   (map.empty() ? "" : ", schema = MAP {" + map + "}") + ") e WHERE " + on + ")");
  }

  std::string visible;
  for (const auto& f : schema.fields())
    visible += (visible.empty() ? "" : ", ") + ("d." + QuoteIdentifier(f.name));
  std::string where;
  for (const auto& k : keep) where += (where.empty() ? " WHERE " : " AND ") + k;
  return "SELECT " + visible + " FROM (" + base + ") d" + where;
}

// ---------------------------------------------------------------------------------------------
// Reading through skade.

struct Fixture {
  std::string dir;
  std::string stored_prefix;
  iceberg::TableMetadata metadata;
  Resolver resolve;
};

Fixture LoadFixture(const std::string& table, const std::string& stored_prefix,
                    const std::string& metadata_file) {
  Fixture f;
  f.dir = testing::FixturePath("iceberg/" + table);
  f.stored_prefix = stored_prefix;
  auto parsed =
      iceberg::ParseTableMetadata(testing::ReadFileOrDie(f.dir + "/metadata/" + metadata_file));
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (parsed.ok()) f.metadata = std::move(parsed).value();
  f.resolve = Resolver{{stored_prefix, f.dir}};
  return f;
}

// The outcome of comparing two relations as multisets.
struct Comparison {
  int64_t left = -1;
  int64_t right = -1;
  int64_t differing = -1;  // rows in one and not the other, counting duplicates
  std::string sample;      // a few differing rows
};

class ReadOracleTest : public testing::LakeTest {
 protected:
  // The relation skade's read path gives a fixture (planned and built as `skade scan` does).
  std::string SkadeSql(const iceberg::TableMetadata& metadata, const io::LocationMap& locations,
                       std::optional<int64_t> snapshot_id = std::nullopt,
                       const std::string& where = "") {
    auto table_io = io::MakeRelocatingFileIO(*io_, locations);
    iceberg::SnapshotSelector selector;
    selector.snapshot_id = snapshot_id;
    auto selected = iceberg::SelectSnapshot(metadata, selector);
    EXPECT_TRUE(selected.ok()) << selected.status().ToString();
    if (!selected.ok()) return "SELECT 1 WHERE false";
    engine::IcebergScan scan;
    scan.schema = selected->schema;
    scan.locations = locations;
    scan.name_mapping = metadata.DefaultNameMapping();
    scan.specs = metadata.partition_specs;
    scan.format_version = metadata.format_version;
    iceberg::ExprPtr filter;
    if (!where.empty()) {
      auto f = engine::SqlToIcebergFilter(*db_, testing::Where(where), *selected->schema);
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      if (f.ok()) filter = *f;
    }
    iceberg::ScanPlanner planner(*table_io, metadata);
    auto tasks = planner.PlanAll(*selected->snapshot, *selected->schema, filter);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    if (!tasks.ok()) return "SELECT 1 WHERE false";
    last_planned_files_ = static_cast<int64_t>(tasks->size());
    scan.tasks = std::move(tasks).value();
    auto sql = engine::BuildTableSql(*db_, scan);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  }

  std::string SkadeSql(const Fixture& f, std::optional<int64_t> snapshot_id = std::nullopt,
                       const std::string& where = "") {
    io::LocationMap locations;
    locations.Add(f.stored_prefix, f.dir);
    return SkadeSql(f.metadata, locations, snapshot_id, where);
  }

  // A foreign copy read from its folder as `skade scan DIR` reads a table folder: the hint's
  // metadata file, and the relocation DetectRelocation finds for it.
  std::string SkadeFolderSql(const std::string& dir, iceberg::TableMetadata* metadata_out,
                             const std::string& where = "") {
    auto file = iceberg::ResolveMetadataFile(*io_, dir);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (!file.ok()) return "SELECT 1 WHERE false";
    auto bytes = io_->Read(*file);
    EXPECT_TRUE(bytes.ok());
    auto metadata = iceberg::ParseTableMetadataFile(*bytes);
    EXPECT_TRUE(metadata.ok()) << metadata.status().ToString();
    if (!metadata.ok()) return "SELECT 1 WHERE false";
    *metadata_out = *metadata;
    iceberg::Relocation relocation = iceberg::DetectRelocation(*metadata_out, dir);
    return SkadeSql(*metadata_out, relocation.map, std::nullopt, where);
  }

  // The oracle's relation; fails the test on error.
  std::string OracleSql(const iceberg::TableMetadata& metadata, const Resolver& resolve,
                        std::optional<int64_t> snapshot_id = std::nullopt) {
    ResolvingFileIO oracle_io(resolve);
    Oracle oracle(*db_, metadata, oracle_io, resolve);
    auto sql = oracle.Sql(snapshot_id);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  }
  std::string OracleSql(const Fixture& f, std::optional<int64_t> snapshot_id = std::nullopt) {
    return OracleSql(f.metadata, f.resolve, snapshot_id);
  }
  std::string OracleSql(Table& t, std::optional<int64_t> snapshot_id = std::nullopt) {
    return OracleSql(t.metadata(), Resolver{}, snapshot_id);
  }

  // skade's relation of a lake table.
  std::string SkadeSql(Table& t, std::optional<int64_t> snapshot_id = std::nullopt,
                       const std::string& where = "") {
    ReadOptions options;
    options.snapshot.snapshot_id = snapshot_id;
    if (!where.empty()) {
      options.where = testing::Where(where);
      auto plan = t.PlanRead(options);
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
      if (plan.ok()) last_planned_files_ = static_cast<int64_t>(plan->tasks.size());
    }
    auto sql = t.ReadSql(options);
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    return sql.ok() ? *sql : "SELECT 1 WHERE false";
  }

  // Compares the rows of two relations over `schema`'s columns as multisets of text rows, each
  // side filtered by `where` when given.
  Comparison Compare(const std::string& left, const std::string& right,
                     const iceberg::Schema& schema, const std::string& where = "") {
    std::string columns;
    for (const auto& f : schema.fields()) {
      columns += (columns.empty() ? "" : ", ") +
                 ("CAST(" + QuoteIdentifier(f.name) + " AS VARCHAR) AS " + QuoteIdentifier(f.name));
    }
    const std::string filter = where.empty() ? "" : " WHERE " + where;
    // Each side is computed once (MATERIALIZED), not once per reference.
    const std::string with =
        "WITH __a AS MATERIALIZED (SELECT " + columns + " FROM (" + left + "\n) __l" + filter +
        "), __b AS MATERIALIZED (SELECT " + columns + " FROM (" + right + "\n) __r" + filter +
        "), __diff AS MATERIALIZED ((SELECT 'only left' AS side, * FROM (SELECT * FROM __a EXCEPT "
        "ALL "
        "SELECT * FROM __b)) UNION ALL (SELECT 'only right' AS side, * FROM (SELECT * FROM "
        "__b EXCEPT ALL SELECT * FROM __a))) ";
    Comparison c;
    auto counts = testing::QueryText(
        *db_, with +
                  "SELECT (SELECT count(*) FROM __a), (SELECT count(*) FROM __b), "
                  "(SELECT count(*) FROM __diff)");
    if (counts.size() != 1 || counts[0].size() != 3) return c;
    c.left = std::stoll(counts[0][0]);
    c.right = std::stoll(counts[0][1]);
    c.differing = std::stoll(counts[0][2]);
    if (c.differing > 0) {
      for (const auto& row : testing::QueryText(*db_, with + "SELECT * FROM __diff LIMIT 6")) {
        for (const auto& v : row) c.sample += v + " | ";
        c.sample += "\n";
      }
    }
    return c;
  }

  // Expects equal rows and returns their count.
  int64_t ExpectSameRows(const std::string& skade, const std::string& oracle,
                         const iceberg::Schema& schema, const std::string& where = "") {
    Comparison c = Compare(skade, oracle, schema, where);
    EXPECT_EQ(c.left, c.right) << "skade rows vs oracle rows"
                               << (where.empty() ? "" : " where " + where);
    EXPECT_EQ(c.differing, 0) << "rows differ" << (where.empty() ? "" : " where " + where)
                              << " (left = skade):\n"
                              << c.sample;
    return c.right;
  }

  int64_t Count(const std::string& relation) {
    auto rows = testing::QueryText(*db_, "SELECT count(*) FROM (" + relation + "\n) __t");
    return rows.size() == 1 ? std::stoll(rows[0][0]) : -1;
  }

  void Append(Table& t, const std::string& sql) {
    auto r = t.Append({sql, nullptr});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  void Delete(Table& t, const std::string& where) {
    auto r = t.DeleteWhere(testing::Where(where));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_NE(r->snapshot_id, 0) << where << " deleted nothing";
  }

  // Every snapshot of a lake table matches the oracle (each read with its own schema).
  void ExpectEverySnapshotMatches(Table& t) {
    ResolvingFileIO oracle_io(Resolver{});
    for (const auto& s : t.metadata().snapshots) {
      SCOPED_TRACE("snapshot " + std::to_string(s.snapshot_id));
      Oracle oracle(*db_, t.metadata(), oracle_io, Resolver{});
      ExpectSameRows(SkadeSql(t, s.snapshot_id), OracleSql(t, s.snapshot_id),
                     *oracle.SchemaFor(s.snapshot_id));
    }
  }

  // The ids 0 ≤ id < n for which `keep` is true.
  static int64_t CountIds(int64_t n, const std::function<bool(int64_t)>& keep) {
    int64_t count = 0;
    for (int64_t id = 0; id < n; ++id) count += keep(id) ? 1 : 0;
    return count;
  }

  int64_t last_planned_files_ = -1;
};

// ---------------------------------------------------------------------------------------------
// Fixture tables (counts quoted from their sources, fixtures/README.md).

TEST_F(ReadOracleTest, LineitemMatchesTheOracleAtBothSnapshots) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f = LoadFixture("lineitem_iceberg", "lineitem_iceberg", "v2.metadata.json");
  const auto& schema = *f.metadata.CurrentSchema();
  EXPECT_EQ(ExpectSameRows(SkadeSql(f), OracleSql(f), schema), 51793);
  EXPECT_EQ(
      ExpectSameRows(SkadeSql(f, 7817332053627255703), OracleSql(f, 7817332053627255703), schema),
      60175);
  // The copy-on-write DELETE left no row below 10000: the current file's bounds prune it.
  const std::string where = "l_extendedprice < 10000";
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, std::nullopt, where), OracleSql(f), schema, where), 0);
  EXPECT_EQ(last_planned_files_, 0);
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, 7817332053627255703, where),
                           OracleSql(f, 7817332053627255703), schema, where),
            8382);
}

TEST_F(ReadOracleTest, ImpalaHourAndIdentityPartitionedV1MatchesTheOracle) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f = LoadFixture("iceberg_partitioned", "/test-warehouse/iceberg_test/iceberg_partitioned",
                          "v2.metadata.json");
  const auto& schema = *f.metadata.CurrentSchema();
  EXPECT_EQ(ExpectSameRows(SkadeSql(f), OracleSql(f), schema), 20);
  const std::string where = "event_time > TIMESTAMPTZ '2020-01-01 09:00:00+00'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, std::nullopt, where), OracleSql(f), schema, where), 6);
  EXPECT_EQ(last_planned_files_, 6) << "hour partitions prune to the six download files";
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, std::nullopt, "action = 'click'"), OracleSql(f), schema,
                           "action = 'click'"),
            6);
}

TEST_F(ReadOracleTest, BucketPartitionedMatchesTheOracle) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f = LoadFixture("partition_bucket_test", "data/persistent/partition_bucket_test",
                          "v2.metadata.json");
  const auto& schema = *f.metadata.CurrentSchema();
  EXPECT_EQ(ExpectSameRows(SkadeSql(f), OracleSql(f), schema), 100);
  const std::string where = "partition_col = 'partition_5'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, std::nullopt, where), OracleSql(f), schema, where), 10);
  EXPECT_EQ(last_planned_files_, 1) << "bucket 4 holds partition_4 and partition_5";
}

TEST_F(ReadOracleTest, SparkPositionDeletesAndSchemaEvolutionMatchTheOracleAtEverySnapshot) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f =
      LoadFixture("generated_spec2_0_001/pyspark_iceberg_table",
                  "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table", "v9.metadata.json");
  const auto& schema = *f.metadata.CurrentSchema();
  const std::string oracle = OracleSql(f);
  EXPECT_EQ(ExpectSameRows(SkadeSql(f), oracle, schema), 6592);
  // The oracle itself agrees with the rows Spark wrote out from the same session.
  const std::string spark =
      "SELECT * FROM read_parquet(" +
      QuoteString(
          testing::FixturePath("iceberg/generated_spec2_0_001/expected_results/last/data/") +
          "*.parquet") +
      ")";
  // (Compared as the values DuckDB reads, since Spark's output files use Spark's own types.)
  EXPECT_EQ(Count("SELECT * FROM (" + oracle + ") EXCEPT ALL " + spark), 0);
  EXPECT_EQ(Count(spark + " EXCEPT ALL SELECT * FROM (" + oracle + ")"), 0);
  EXPECT_EQ(Count(spark), 6592);
  const std::string where = "l_extendedprice_double < 30000";
  const int64_t cheap = ExpectSameRows(SkadeSql(f, std::nullopt, where), oracle, schema, where);
  EXPECT_GT(cheap, 0);
  EXPECT_LT(cheap, 6592);
  // Logical row counts at every snapshot, each read with its own schema.
  const std::vector<std::pair<int64_t, int64_t>> per_snapshot = {
      {764624380497366583, 6005},  {4037069315291880534, 6005}, {6287117141668015642, 7690},
      {6585012225877417653, 7690}, {4440319347650982524, 6592}, {3119545726281138740, 6592},
      {4786266686210019019, 6592}};
  ResolvingFileIO oracle_io(f.resolve);
  Oracle schemas(*db_, f.metadata, oracle_io, f.resolve);
  for (const auto& [id, count] : per_snapshot) {
    SCOPED_TRACE("snapshot " + std::to_string(id));
    EXPECT_EQ(ExpectSameRows(SkadeSql(f, id), OracleSql(f, id), *schemas.SchemaFor(id)), count);
  }
}

TEST_F(ReadOracleTest, JavaEqualityDeletesMatchTheOracleAtEverySnapshot) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f =
      LoadFixture("equality_deletes_mytable",
                  "data/persistent/equality_deletes/warehouse/mydb/mytable", "v7.metadata.json");
  const auto& schema = *f.metadata.CurrentSchema();
  EXPECT_EQ(ExpectSameRows(SkadeSql(f), OracleSql(f), schema), 2);
  EXPECT_THAT(
      testing::QueryText(*db_, "SELECT id, name, bir FROM (" + OracleSql(f) + ") ORDER BY ALL"),
      ::testing::ElementsAre(::testing::ElementsAre("4", "d", "2025-01-04"),
                             ::testing::ElementsAre("5", "e", "2025-01-05")));
  // Snapshot 7342794868382145167's manifest list is missing from the source repository.
  const std::vector<std::pair<int64_t, int64_t>> per_snapshot = {{853766660775201079, 4},
                                                                 {1584331123492059582, 2},
                                                                 {842401149381792626, 1},
                                                                 {3340507003387467420, 3},
                                                                 {1916084761853986166, 2}};
  for (const auto& [id, count] : per_snapshot) {
    SCOPED_TRACE("snapshot " + std::to_string(id));
    EXPECT_EQ(ExpectSameRows(SkadeSql(f, id), OracleSql(f, id), schema), count);
  }
  const std::string where = "bir >= DATE '2025-01-05'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(f, std::nullopt, where), OracleSql(f), schema, where), 1);
}

// ---------------------------------------------------------------------------------------------
// Tables skade writes.

// (a) Identity partitions, merge-on-read position deletes (a null partition among them), rows
// appended after the deletes.

TEST_F(ReadOracleTest, MergeOnReadPositionDeletesInIdentityPartitionsMatchTheOracle) {
  auto t = CreateTable("mor", "id BIGINT, region VARCHAR, v VARCHAR", "region",
                       {{"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  Append(*t,
         "SELECT range AS id, ['eu', 'us', 'ap'][range % 3 + 1] AS region, 'v' || range AS v FROM "
         "range(150)");
  // A null partition: 1001 goes with the first delete (1001 = 7 · 143), 1002 on its own.
  Append(*t,
         "SELECT range AS id, NULL::VARCHAR AS region, 'n' || range AS v FROM range(1000, 1003)");
  Delete(*t, "id % 7 = 0");
  const int64_t after_first_delete = *t->metadata().current_snapshot_id;
  Delete(*t, "region = 'eu' AND id < 60");
  Delete(*t, "id = 1002");
  Append(*t,
         "SELECT range AS id, ['eu', 'us'][range % 2 + 1] AS region, 'w' || range AS v FROM "
         "range(150, 180)");
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_GT(
      std::stoll(
          t->metadata().CurrentSnapshot()->SummaryValue("total-position-deletes").value_or("0")),
      0);

  const auto& schema = *t->metadata().CurrentSchema();
  const std::string oracle = OracleSql(*t);
  const int64_t expected =
      CountIds(150, [](int64_t id) { return id % 7 != 0 && !(id % 3 == 0 && id < 60); }) +
      1 /* 1000 */ + 30;
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), expected);
  const std::string where = "region = 'eu'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t, std::nullopt, where), oracle, schema, where),
            CountIds(150, [](int64_t id) { return id % 3 == 0 && id % 7 != 0 && id >= 60; }) + 15);
  EXPECT_EQ(last_planned_files_, 2) << "the eu files of both appends; other partitions pruned";
  ExpectEverySnapshotMatches(*t);
  // The comparison notices a missing delete: the read before the later deletes differs.
  Comparison stale = Compare(SkadeSql(*t, after_first_delete), oracle, schema);
  EXPECT_GT(stale.differing, 0);
}

// (b) Upserts and deletes by key on an identity-partitioned table: equality deletes scoped by
// partition and sequence number.
TEST_F(ReadOracleTest, UpsertsAndEqualityDeletesMatchTheOracle) {
  auto t = CreateTable("cdc", "id BIGINT NOT NULL, region VARCHAR NOT NULL, name VARCHAR", "region",
                       {}, {1, 2});
  ASSERT_NE(t, nullptr);
  Append(*t,
         "SELECT range AS id, ['eu', 'us'][range % 2 + 1] AS region, 'v1' AS name FROM range(20)");
  auto u = t->Upsert({"SELECT 2 AS id, 'eu' AS region, 'v2' AS name UNION ALL SELECT 3, 'us', 'v2' "
                      "UNION ALL SELECT 3, 'eu', 'new' UNION ALL SELECT 40, 'us', 'v2'",
                      nullptr},
                     {"id", "region"});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_TRUE(
      t->Upsert({"SELECT 2 AS id, 'eu' AS region, 'v3' AS name", nullptr}, {"id", "region"}).ok());
  ASSERT_TRUE(
      t->DeleteKeys({"SELECT 5 AS id, 'us' AS region UNION ALL SELECT 6, 'us' AS region", nullptr},
                    {"id", "region"})
          .ok());
  Append(*t, "SELECT 5 AS id, 'us' AS region, 'again' AS name");
  ASSERT_TRUE(t->Refresh().ok());
  EXPECT_GT(
      std::stoll(
          t->metadata().CurrentSnapshot()->SummaryValue("total-equality-deletes").value_or("0")),
      0);

  const auto& schema = *t->metadata().CurrentSchema();
  const std::string oracle = OracleSql(*t);
  // 20 rows, + (3, eu) + (40, us); (6, us) does not exist (6 is eu), (5, us) deleted and re-added.
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), 22);
  EXPECT_THAT(
      testing::QueryText(*db_, "SELECT id, region, name FROM (" + oracle +
                                   ") WHERE id IN (2, 3, 5, 6, 40) "
                                   "ORDER BY ALL"),
      ::testing::ElementsAre(
          ::testing::ElementsAre("2", "eu", "v3"), ::testing::ElementsAre("3", "eu", "new"),
          ::testing::ElementsAre("3", "us", "v2"), ::testing::ElementsAre("5", "us", "again"),
          ::testing::ElementsAre("6", "eu", "v1"), ::testing::ElementsAre("40", "us", "v2")));
  const std::string where = "region = 'us'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t, std::nullopt, where), oracle, schema, where), 11);
  ExpectEverySnapshotMatches(*t);
}

// (c) Format v3: merge-on-read deletes as deletion vectors, a later delete replacing a vector.

TEST_F(ReadOracleTest, DeletionVectorsMatchTheOracle) {
  auto t = CreateTable("dv", "id BIGINT NOT NULL, region VARCHAR", "region",
                       {{"format-version", "3"}, {"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  Append(
      *t,
      "SELECT range AS id, CASE WHEN range < 50 THEN 'eu' ELSE 'us' END AS region FROM range(100)");
  Append(*t, "SELECT range AS id, 'ap' AS region FROM range(100, 120)");
  Delete(*t, "id % 10 = 1");
  Delete(*t, "id IN (2, 3, 55)");
  ASSERT_TRUE(t->Refresh().ok());
  ASSERT_EQ(t->metadata().format_version, 3);
  EXPECT_THAT(t->metadata().CurrentSnapshot()->summary,
              ::testing::Contains(::testing::Key("added-dvs")));

  const auto& schema = *t->metadata().CurrentSchema();
  const std::string oracle = OracleSql(*t);
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), CountIds(120, [](int64_t id) {
              return id % 10 != 1 && id != 2 && id != 3 && id != 55;
            }));
  const std::string where = "region = 'us'";
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t, std::nullopt, where), oracle, schema, where), 50 - 5 - 1);
  EXPECT_EQ(last_planned_files_, 1);
  ExpectEverySnapshotMatches(*t);
}

// (d) The partition spec evolves between appends (region → region, bucket(4, id) →
// unpartitioned); position deletes then hit files of every spec, and a delete by key in the
// unpartitioned spec applies everywhere.
TEST_F(ReadOracleTest, EvolvedPartitionSpecWithDeletesMatchesTheOracle) {
  auto t = CreateTable("evolved", "id BIGINT NOT NULL, region VARCHAR NOT NULL, v INTEGER",
                       "region", {{"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  Append(*t, "SELECT range AS id, ['eu', 'us'][range % 2 + 1] AS region, 1 AS v FROM range(60)");
  ASSERT_TRUE(t->UpdatePartitionSpec("region, bucket(4, id)").ok());
  Append(*t,
         "SELECT range AS id, ['eu', 'us'][range % 2 + 1] AS region, 2 AS v FROM range(60, 120)");
  Delete(*t, "id % 5 = 0");
  ASSERT_TRUE(t->UpdatePartitionSpec("").ok());
  Append(*t, "SELECT range AS id, 'ap' AS region, 3 AS v FROM range(120, 140)");
  Delete(*t, "id % 5 = 1");
  ASSERT_TRUE(
      t->DeleteKeys({"SELECT 3 AS id UNION ALL SELECT 77 UNION ALL SELECT 133", nullptr}, {"id"})
          .ok());
  ASSERT_TRUE(t->Refresh().ok());
  ASSERT_EQ(t->metadata().partition_specs.size(), 3u);

  const auto& schema = *t->metadata().CurrentSchema();
  const std::string oracle = OracleSql(*t);
  // Ids 120..139 came after the first delete.
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), CountIds(140, [](int64_t id) {
              return (id < 120 ? id % 5 > 1 : id % 5 != 1) && id != 3 && id != 77 && id != 133;
            }));
  const std::string where = "region = 'us'";
  EXPECT_EQ(
      ExpectSameRows(SkadeSql(*t, std::nullopt, where), oracle, schema, where),
      CountIds(120, [](int64_t id) { return id % 2 == 1 && id % 5 > 1 && id != 3 && id != 77; }));
  ExpectEverySnapshotMatches(*t);
}

// (e) Equality deletes written while the key columns had their old names; the columns were
// renamed afterwards (deletes match by field id, spec "Equality Delete Files").
TEST_F(ReadOracleTest, EqualityDeletesOnARenamedKeyColumnMatchTheOracle) {
  auto t = CreateTable("renamed", "id BIGINT NOT NULL, name VARCHAR", "", {}, {1});
  ASSERT_NE(t, nullptr);
  Append(*t, "SELECT range AS id, 'n' || range AS name FROM range(1, 11)");
  ASSERT_TRUE(
      t->Upsert({"SELECT 2 AS id, 'u2' AS name UNION ALL SELECT 11, 'u11'", nullptr}, {"id"}).ok());
  ASSERT_TRUE(t->DeleteKeys({"SELECT 'n5' AS name", nullptr}, {"name"}).ok());
  const int64_t before_rename = *t->metadata().current_snapshot_id;
  SchemaChange rename_id;
  rename_id.kind = SchemaChange::Kind::kRenameColumn;
  rename_id.column = "id";
  rename_id.new_name = "key";
  SchemaChange rename_name = rename_id;
  rename_name.column = "name";
  rename_name.new_name = "label";
  auto renamed = t->UpdateSchema({rename_id, rename_name});
  ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
  Append(*t, "SELECT 20 AS key, 'n5' AS label");
  ASSERT_TRUE(t->Refresh().ok());

  const auto& schema = *t->metadata().CurrentSchema();
  ASSERT_EQ(schema.fields()[0].name, "key");
  const std::string oracle = OracleSql(*t);
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), 11);
  EXPECT_EQ(testing::QueryText(
                *db_, "SELECT string_agg(\"key\" || ':' || label, ',' ORDER BY \"key\") FROM (" +
                          oracle + ")"),
            (std::vector<std::vector<std::string>>{
                {"1:n1,2:u2,3:n3,4:n4,6:n6,7:n7,8:n8,9:n9,10:n10,11:u11,20:n5"}}));
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t, std::nullopt, "key > 5"), oracle, schema, "key > 5"), 7);
  // The snapshot before the rename reads with its own (old) names.
  ResolvingFileIO oracle_io(Resolver{});
  Oracle old(*db_, t->metadata(), oracle_io, Resolver{});
  EXPECT_EQ(old.SchemaFor(before_rename)->fields()[0].name, "id");
  ExpectEverySnapshotMatches(*t);
}

// (f) A migrated table, as Hive migrations and add_files leave one: data files without field ids
// (read through schema.name-mapping.default, one under a column's old name) that do not store
// the identity partition column (read from the manifest's partition value, spec "Column
// Projection"); then skade's own merge-on-read delete and append on top.
TEST_F(ReadOracleTest, MigratedFilesWithoutFieldIdsMatchTheOracle) {
  const std::string mapping =
      R"([{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["label", "name"]}, )"
      R"({"field-id": 3, "names": ["region"]}])";
  auto t = CreateTable(
      "migrated", "id BIGINT, label VARCHAR, region VARCHAR", "region",
      {{"write.delete.mode", "merge-on-read"}, {"schema.name-mapping.default", mapping}});
  ASSERT_NE(t, nullptr);
  iceberg::TableMetadata m = t->metadata();
  const std::string location = io::LocalPath(m.location);
  std::filesystem::create_directories(location + "/data");
  // eu: no region column, the label under its old name; us: stores its region.
  const std::map<std::string, std::string> files = {
      {"eu", "SELECT range AS id, 'e' || range AS name FROM range(0, 10)"},
      {"us", "SELECT range AS id, 'u' || range AS label, 'us' AS region FROM range(10, 20)"}};
  const int64_t snapshot_id = 4242;
  iceberg::ManifestWriterOptions options;
  options.snapshot_id = snapshot_id;
  options.sequence_number = 1;
  auto writer = iceberg::ManifestWriter::Create(m.CurrentSchema(), m.DefaultSpec(), options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (const auto& [region, sql] : files) {
    const std::string path = location + "/data/migrated-" + region + ".parquet";
    ASSERT_TRUE(
        db_->Execute("COPY (" + sql + ") TO " + QuoteString(path) + " (FORMAT parquet)").ok());
    ASSERT_EQ(testing::QueryText(
                  *db_, "SELECT count(field_id) FROM parquet_schema(" + QuoteString(path) + ")"),
              (std::vector<std::vector<std::string>>{{"0"}}));
    iceberg::ManifestEntry e;
    e.snapshot_id = snapshot_id;
    e.data_file.file_path = path;
    e.data_file.partition = {iceberg::Literal::String(region)};
    e.data_file.record_count = 10;
    e.data_file.file_size_in_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
    ASSERT_TRUE((*writer)->Add(e).ok());
  }
  auto manifest = (*writer)->Finish(location + "/metadata/migrated-m0.avro");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  ASSERT_TRUE(io_->CreateExclusive(manifest->manifest.manifest_path, manifest->bytes).ok());
  auto list = iceberg::WriteManifestList(2, snapshot_id, std::nullopt, 1, {manifest->manifest});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  iceberg::Snapshot snap;
  snap.snapshot_id = snapshot_id;
  snap.sequence_number = 1;
  snap.timestamp_ms = m.last_updated_ms + 1;
  snap.manifest_list = location + "/metadata/snap-migrated.avro";
  snap.summary = {{"operation", "append"}};
  snap.schema_id = m.current_schema_id;
  ASSERT_TRUE(io_->CreateExclusive(snap.manifest_list, *list).ok());
  m.snapshots = {snap};
  m.current_snapshot_id = snapshot_id;
  m.refs["main"].snapshot_id = snapshot_id;
  m.snapshot_log = {{snap.timestamp_ms, snapshot_id}};
  m.last_sequence_number = 1;
  m.last_updated_ms = snap.timestamp_ms;
  const std::string metadata_path = location + "/metadata/00001-migrated.metadata.json";
  ASSERT_TRUE(io_->CreateExclusive(metadata_path, iceberg::TableMetadataToJson(m)).ok());
  ASSERT_TRUE(catalog_->DropTable(Ident("migrated"), catalog::DropMode::kKeepFiles).ok());
  ASSERT_TRUE(catalog_->RegisterTable(Ident("migrated"), metadata_path).ok());
  t = LoadTable(Ident("migrated"));
  ASSERT_NE(t, nullptr);

  const auto& schema = *t->metadata().CurrentSchema();
  std::string oracle = OracleSql(*t);
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), 20);
  EXPECT_THAT(testing::QueryText(*db_, "SELECT id, label, region FROM (" + oracle +
                                           ") WHERE id IN (3, 13) ORDER BY id"),
              ::testing::ElementsAre(::testing::ElementsAre("3", "e3", "eu"),
                                     ::testing::ElementsAre("13", "u13", "us")));
  Delete(*t, "id IN (3, 4, 13)");
  Append(*t, "SELECT 30 AS id, 'x' AS label, 'eu' AS region");
  ASSERT_TRUE(t->Refresh().ok());
  oracle = OracleSql(*t);
  EXPECT_EQ(ExpectSameRows(SkadeSql(*t), oracle, schema), 18);
  EXPECT_EQ(
      ExpectSameRows(SkadeSql(*t, std::nullopt, "region = 'eu'"), oracle, schema, "region = 'eu'"),
      9);
  EXPECT_EQ(last_planned_files_, 2);
  ExpectEverySnapshotMatches(*t);
}

// ---------------------------------------------------------------------------------------------
// Foreign copies: the same table with locations spelled as HDFS- and S3-based writers spell
// them, read from a local folder.

// HDFS: the metadata says hdfs://namenode:8020/…, the manifest list a bare path, manifests
// file:///…, delete files file:/…, and position deletes name their data files by bare path.
testing::LocationSpelling HdfsSpelling() {
  return testing::PrefixSpelling(
      {{LocationRole::kTableLocation, "hdfs://namenode:8020/warehouse/db/t"},
       {LocationRole::kManifestList, "/warehouse/db/t"},
       {LocationRole::kManifest, "file:///warehouse/db/t"},
       {LocationRole::kDataFile, "hdfs://namenode:8020/warehouse/db/t"},
       {LocationRole::kDeleteFile, "file:/warehouse/db/t"},
       {LocationRole::kDeleteTarget, "/warehouse/db/t"}});
}
Resolver HdfsResolver(const std::string& dir) {
  return Resolver{{"hdfs://namenode:8020/warehouse/db/t", dir},
                  {"file:///warehouse/db/t", dir},
                  {"file:/warehouse/db/t", dir},
                  {"/warehouse/db/t", dir}};
}

// S3: s3:// in the metadata, manifest list and delete files; s3a:// for manifests, data files
// and the data files position deletes name.
testing::LocationSpelling S3Spelling() {
  return testing::PrefixSpelling({{LocationRole::kTableLocation, "s3://bucket/wh/t"},
                                  {LocationRole::kManifestList, "s3://bucket/wh/t"},
                                  {LocationRole::kManifest, "s3a://bucket/wh/t"},
                                  {LocationRole::kDataFile, "s3a://bucket/wh/t"},
                                  {LocationRole::kDeleteFile, "s3://bucket/wh/t"},
                                  {LocationRole::kDeleteTarget, "s3a://bucket/wh/t"}});
}
Resolver S3Resolver(const std::string& dir) {
  return Resolver{{"s3://bucket/wh/t", dir}, {"s3a://bucket/wh/t", dir}};
}

class ForeignCopyTest : public ReadOracleTest {
 protected:
  // Writes both foreign copies of the table (`io` reads its files, `resolve` for the oracle)
  // and expects each, read as `skade scan DIR` reads it, to give the oracle's rows of the copy
  // and of the original, `expected` of them; and the same for a read filtered by `where`.
  void ExpectCopiesReadTheSameRows(const iceberg::TableMetadata& original, io::FileIO& io,
                                   const Resolver& resolve, int64_t expected,
                                   const std::string& where) {
    const std::string original_oracle = OracleSql(original, resolve);
    const auto& schema = *original.CurrentSchema();
    ASSERT_EQ(Count(original_oracle), expected);
    struct Copy {
      std::string name;
      testing::LocationSpelling spelling;
      std::function<Resolver(const std::string&)> resolver;
      std::string data_prefix;
      std::string target_prefix;
    };
    const std::vector<Copy> copies = {
        {"hdfs", HdfsSpelling(), HdfsResolver, "hdfs://namenode:8020/warehouse/db/t/",
         "/warehouse/db/t/"},
        {"s3", S3Spelling(), S3Resolver, "s3a://bucket/wh/t/", "s3a://bucket/wh/t/"}};
    for (const Copy& copy : copies) {
      SCOPED_TRACE(copy.name + " copy");
      const std::string dir = tmp_.Path("copy-" + copy.name + "-" + std::to_string(++copies_));
      auto written = testing::WriteForeignCopy(original, io, *db_, dir, copy.spelling);
      ASSERT_TRUE(written.ok()) << written.status().ToString();
      const Resolver resolve_copy = copy.resolver(dir);
      ExpectSpelledAsAsked(*written, resolve_copy, copy.data_prefix, copy.target_prefix);

      iceberg::TableMetadata metadata;
      const std::string skade = SkadeFolderSql(dir, &metadata);
      const std::string copy_oracle = OracleSql(metadata, resolve_copy);
      EXPECT_EQ(Count(copy_oracle), expected) << "the oracle applies the copy's deletes";
      SCOPED_TRACE("skade on the copy vs the oracle on the copy");
      EXPECT_EQ(ExpectSameRows(skade, copy_oracle, schema), expected);
      SCOPED_TRACE("skade on the copy vs the oracle on the original");
      EXPECT_EQ(ExpectSameRows(skade, original_oracle, schema), expected);
      const std::string filtered = SkadeFolderSql(dir, &metadata, where);
      const int64_t matching = ExpectSameRows(filtered, original_oracle, schema, where);
      EXPECT_GT(matching, 0) << where;
      EXPECT_LT(matching, expected) << where;
    }
  }

  // The copy's manifests really spell data files and delete targets with the given prefixes,
  // and it has deletes.
  void ExpectSpelledAsAsked(const std::string& metadata_file, const Resolver& resolve,
                            const std::string& data_prefix, const std::string& target_prefix) {
    auto metadata = iceberg::ParseTableMetadataFile(testing::ReadFileOrDie(metadata_file));
    ASSERT_TRUE(metadata.ok()) << metadata.status().ToString();
    ResolvingFileIO copy_io(resolve);
    auto manifests = iceberg::ReadManifestList(copy_io, metadata->CurrentSnapshot()->manifest_list);
    ASSERT_TRUE(manifests.ok()) << manifests.status().ToString();
    int deletes = 0;
    for (const auto& m : *manifests) {
      ASSERT_TRUE(iceberg::ForEachLiveEntry(copy_io, m, [&](iceberg::ManifestEntry& e) {
                    const DataFile& f = e.data_file;
                    if (f.content == DataFileContent::kData) {
                      EXPECT_TRUE(f.file_path.starts_with(data_prefix)) << f.file_path;
                      return Status::Ok();
                    }
                    ++deletes;
                    if (f.referenced_data_file) {
                      EXPECT_TRUE(f.referenced_data_file->starts_with(target_prefix))
                          << *f.referenced_data_file;
                    }
                    if (f.content == DataFileContent::kPositionDeletes &&
                        f.file_format == iceberg::FileFormat::kParquet) {
                      auto rows = testing::QueryText(
                          *db_, "SELECT count(*) FILTER (WHERE NOT starts_with(file_path, " +
                                    QuoteString(target_prefix) + ")), count(*) FROM read_parquet(" +
                                    QuoteString(resolve(f.file_path)) + ")");
                      EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{
                                          {"0", std::to_string(f.record_count)}}));
                    }
                    return Status::Ok();
                  }).ok());
    }
    EXPECT_GT(deletes, 0) << "a copy without delete files proves nothing";
  }

  int copies_ = 0;
};

TEST_F(ForeignCopyTest, PositionDeletesApplyInForeignCopies) {
  auto t = CreateTable("mor", "id BIGINT, region VARCHAR", "region",
                       {{"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  Append(*t, "SELECT range AS id, ['eu', 'us', 'ap'][range % 3 + 1] AS region FROM range(90)");
  Delete(*t, "id % 4 = 0");
  Append(*t, "SELECT range AS id, 'eu' AS region FROM range(90, 100)");
  Delete(*t, "id > 95");
  ASSERT_TRUE(t->Refresh().ok());
  // The first delete came before ids 90..99 were appended; the second took 96..99.
  ExpectCopiesReadTheSameRows(t->metadata(), *io_, Resolver{},
                              CountIds(90, [](int64_t id) { return id % 4 != 0; }) + 6,
                              "region = 'eu'");
}

TEST_F(ForeignCopyTest, DeletionVectorsApplyInForeignCopies) {
  auto t = CreateTable("dv", "id BIGINT NOT NULL, region VARCHAR", "region",
                       {{"format-version", "3"}, {"write.delete.mode", "merge-on-read"}});
  ASSERT_NE(t, nullptr);
  Append(
      *t,
      "SELECT range AS id, CASE WHEN range < 50 THEN 'eu' ELSE 'us' END AS region FROM range(100)");
  Delete(*t, "id % 10 = 1");
  Delete(*t, "id IN (2, 3, 55)");
  ASSERT_TRUE(t->Refresh().ok());
  ExpectCopiesReadTheSameRows(
      t->metadata(), *io_, Resolver{},
      CountIds(100, [](int64_t id) { return id % 10 != 1 && id != 2 && id != 3 && id != 55; }),
      "region = 'us'");
}

TEST_F(ForeignCopyTest, SparkPositionDeletesApplyInForeignCopies) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  Fixture f =
      LoadFixture("generated_spec2_0_001/pyspark_iceberg_table",
                  "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table", "v9.metadata.json");
  ResolvingFileIO fixture_io(f.resolve);
  ExpectCopiesReadTheSameRows(f.metadata, fixture_io, f.resolve, 6592,
                              "l_extendedprice_double < 30000");
}

}  // namespace
}  // namespace skade::table
