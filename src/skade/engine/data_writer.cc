#include "skade/engine/data_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <map>

#include "skade/base/fd.h"
#include "skade/base/log.h"
#include "skade/base/uuid.h"
#include "skade/arrow/c_data.h"
#include "skade/engine/iceberg_scan.h"
#include "skade/engine/copy_stats_internal.h"
#include "skade/engine/duck_text_internal.h"
#include "skade/engine/input_check.h"
#include "skade/engine/new_file_checksums.h"
#include "skade/engine/lossless_cast.h"
#include "skade/engine/schema_convert.h"
#include "skade/io/file_io.h"
#include "skade/io/local_folders.h"
#include "skade/io/location.h"

namespace skade::engine {
namespace {

namespace fs = std::filesystem;
using iceberg::NestedField;
using iceberg::TransformKind;
using iceberg::Type;
using iceberg::TypeId;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// FIELD_IDS {…} for COPY: nested structs/lists/maps carry __duckdb_field_id.
std::string FieldIdsSql(const std::vector<NestedField>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    const NestedField& f = fields[i];
    if (i) out += ", ";
    out += QuoteString(f.name) + ": ";
    if (f.type->is_primitive()) {
      out += std::to_string(f.id);
    } else {
      std::string inner = FieldIdsSql(f.type->fields());
      out += "{'__duckdb_field_id': " + std::to_string(f.id) + (inner == "{}" ? "" : ", " + inner.substr(1, inner.size() - 2)) + "}";
    }
  }
  return out + "}";
}

// Removes the files a failed or empty write left under `folder` whose names start with
// `prefix` (the write's own, unique per call).
void DeleteWithPrefix(Database& db, const std::string& folder, const std::string& prefix) {
  if (io::IsObjectStoreLocation(folder)) {
    io::FileIO* store = db.object_store();
    if (store == nullptr) return;
    auto listed = store->List(folder + "/");
    if (!listed.ok()) {
      SKADE_LOG_WARN("cannot list {} to remove a failed write's files: {}", folder, listed.status().ToString());
      return;
    }
    for (const io::FileInfo& f : *listed) {
      const size_t slash = f.location.rfind('/');
      if (f.location.compare(slash + 1, prefix.size(), prefix) == 0) (void)store->Delete(f.location);
    }
    return;
  }
  std::error_code ec;
  if (!fs::exists(folder, ec)) return;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().filename().string().rfind(prefix, 0) == 0) {
      fs::remove(it->path(), ec);
    }
  }
}

void DeleteFile(Database& db, const std::string& path) {
  if (!io::IsObjectStoreLocation(path)) {
    std::error_code ec;
    fs::remove(path, ec);
  } else if (db.object_store() != nullptr) {
    (void)db.object_store()->Delete(path);
  }
}

}  // namespace

Status SyncFiles(const std::vector<std::string>& paths, const std::vector<std::string>& folders) {
  std::vector<std::string> entries;
  for (const std::string& p : paths) {
    // An object exists only once its upload completed: nothing to flush.
    if (io::IsObjectStoreLocation(p)) continue;
    Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return Status::IoError("open '" + p + "' to sync: " + std::strerror(errno));
    if (::fsync(fd.get()) != 0) return Status::IoError("fsync '" + p + "': " + std::strerror(errno));
    entries.push_back(p);
  }
  for (const std::string& f : folders) {
    if (!io::IsObjectStoreLocation(f)) entries.push_back(f);
  }
  return io::SyncFolderEntries(entries);
}

WriteOptions WriteOptionsFromProperties(const std::map<std::string, std::string>& properties,
                                        std::string data_location) {
  WriteOptions o;
  o.data_location = std::move(data_location);
  auto num = [&](const char* key, int64_t* out) {
    auto it = properties.find(key);
    if (it == properties.end()) return;
    if (auto v = ParseInt<int64_t>(it->second); v && *v > 0) *out = *v;
  };
  num("write.target-file-size-bytes", &o.target_file_size_bytes);
  num("write.parquet.row-group-size-bytes", &o.row_group_size_bytes);
  if (auto it = properties.find(std::string(kPageChecksumsProperty)); it != properties.end()) {
    o.page_checksums = Lower(it->second) != "false";
  }
  if (auto it = properties.find("write.parquet.compression-codec"); it != properties.end()) {
    o.compression = Lower(it->second);
  }
  if (auto it = properties.find("write.metadata.metrics.default"); it != properties.end()) {
    const std::string& v = it->second;
    if (v.rfind("truncate(", 0) == 0 && v.back() == ')') {
      if (auto n = ParseInt<int>(std::string_view(v).substr(9, v.size() - 10)); n && *n > 0) {
        o.metrics_truncate_length = *n;
      }
    }
  }
  return o;
}

Result<std::string> FileSourceSql(const std::vector<std::string>& paths, FileValues values,
                                  std::optional<char> delimiter) {
  if (paths.empty()) return Status::InvalidArgument("no input files");
  std::string kind;
  for (const std::string& p : paths) {
    std::string name = Lower(p);
    for (const char* z : {".gz", ".zst"}) {
      if (EndsWith(name, z)) name.resize(name.size() - std::string_view(z).size());
    }
    std::string k;
    if (EndsWith(name, ".parquet")) {
      k = "parquet";
    } else if (EndsWith(name, ".csv")) {
      k = "csv";
    } else if (EndsWith(name, ".tsv")) {
      k = "tsv";
    } else if (EndsWith(name, ".json") || EndsWith(name, ".ndjson") || EndsWith(name, ".jsonl")) {
      k = "json";
    } else {
      return Status::InvalidArgument("'" + p + "': unknown file type (expected .parquet, .csv, .tsv, .json, .ndjson, .jsonl)");
    }
    if (!kind.empty() && k != kind) return Status::InvalidArgument("input files mix formats (" + kind + " and " + k + ")");
    kind = k;
    std::error_code ec;
    if (!fs::exists(p, ec)) return Status::NotFound("input file '" + p + "' does not exist");
    if (fs::is_directory(p, ec)) return Status::InvalidArgument("input '" + p + "' is a folder, not a file");
    if (fs::file_size(p, ec) == 0 && !ec) return Status::InvalidArgument("input file '" + p + "' is empty");
    if (k == "json") SKADE_RETURN_IF_ERROR(CheckJsonDepth(p));
  }
  if (delimiter && kind != "csv" && kind != "tsv") {
    return Status::InvalidArgument("a delimiter applies to CSV/TSV input only");
  }
  std::string list = "[";
  for (size_t i = 0; i < paths.size(); ++i) list += (i ? ", " : "") + QuoteString(paths[i]);
  list += "]";
  if (kind == "parquet") return "SELECT * FROM read_parquet(" + list + ", union_by_name = true)";
  // RFC 4180, strictly: DuckDB's sniffer would otherwise guess another dialect for a file with
  // ragged rows or an unterminated quote (reading a quote as data, or skipping leading rows).
  const bool as_written = values == FileValues::kAsWritten;
  if (kind == "csv" || kind == "tsv") {
    const char delim = delimiter.value_or(kind == "csv" ? ',' : '\t');
    return "SELECT * FROM read_csv(" + list + ", union_by_name = true, header = true, delim = " +
           QuoteString(std::string(1, delim)) + ", quote = '\"', escape = '\"', strict_mode = true, skip = 0" +
           (as_written ? ", all_varchar = true)" : ")");
  }
  // maximum_depth = 1: the members of each record are columns, their values JSON.
  return "SELECT * FROM read_json(" + list + ", union_by_name = true" + (as_written ? ", maximum_depth = 1)" : ")");
}

Status ExplainInputFailure(const std::vector<std::string>& paths, const Status& failure,
                           std::optional<char> delimiter) {
  if (failure.ok() || failure.message().find("CSV") == std::string::npos) return failure;
  for (const std::string& p : paths) {
    std::string name = Lower(p);
    for (const char* z : {".gz", ".zst"}) {
      if (EndsWith(name, z)) name.resize(name.size() - std::string_view(z).size());
    }
    if (!EndsWith(name, ".csv") && !EndsWith(name, ".tsv")) continue;
    Status diagnosed = DiagnoseCsv(p, delimiter.value_or(EndsWith(name, ".tsv") ? '\t' : ','));
    if (!diagnosed.ok()) return diagnosed;
  }
  return failure;
}

Result<std::string> PartitionValueSql(const iceberg::PartitionField& field, const Type& source,
                                      const std::string& c) {
  const TypeId id = source.id();
  const int64_t w = field.transform.param();
  auto unscaled = [&]() {
    std::string pow = "1";
    for (int i = 0; i < source.scale(); ++i) pow += "0";
    return "CAST(" + c + " * " + pow + " AS HUGEINT)";
  };
  // Micro- (or nano-) seconds since the epoch of temporal values.
  auto epoch = [&]() -> std::string {
    switch (id) {
      case TypeId::kTime: return "datediff('microsecond', TIME '00:00:00', " + c + ")";
      case TypeId::kTimestampNs:
      case TypeId::kTimestampTzNs: return "epoch_ns(" + c + ")";
      default: return "epoch_us(" + c + ")";
    }
  };
  auto floor_div = [](const std::string& x, const std::string& d) {
    return "((" + x + " - (((" + x + ") % " + d + " + " + d + ") % " + d + ")) // " + d + ")";
  };
  auto unsupported = [&]() {
    return Status::InvalidArgument("transform " + field.transform.ToString() + " does not apply to " +
                                   source.ToString() + " (partition field '" + field.name + "')");
  };
  switch (field.transform.kind()) {
    case TransformKind::kIdentity:
      switch (id) {
        case TypeId::kDate: return "(" + c + " - DATE '1970-01-01')";
        case TypeId::kTime:
        case TypeId::kTimestamp:
        case TypeId::kTimestampTz:
        case TypeId::kTimestampNs:
        case TypeId::kTimestampTzNs: return epoch();
        case TypeId::kDecimal: return unscaled();
        case TypeId::kBinary:
        case TypeId::kFixed: return "hex(" + c + ")";
        case TypeId::kBoolean:
        case TypeId::kFloat:
        case TypeId::kDouble:
        case TypeId::kUuid: return "CAST(" + c + " AS VARCHAR)";
        case TypeId::kInt:
        case TypeId::kLong:
        case TypeId::kString: return c;
        default: return unsupported();
      }
    case TransformKind::kBucket:
      switch (id) {
        case TypeId::kInt:
        case TypeId::kLong: return "iceberg_bucket(CAST(" + c + " AS BIGINT), " + std::to_string(w) + ")";
        case TypeId::kDate:
          return "iceberg_bucket(CAST(" + c + " - DATE '1970-01-01' AS BIGINT), " + std::to_string(w) + ")";
        case TypeId::kTime:
        case TypeId::kTimestamp:
        case TypeId::kTimestampTz:
          return "iceberg_bucket(" + epoch() + ", " + std::to_string(w) + ")";
        case TypeId::kTimestampNs:
        case TypeId::kTimestampTzNs:
          // Spec: nanosecond timestamps are hashed as microseconds.
          return "iceberg_bucket(" + floor_div("epoch_ns(" + c + ")", "1000") + ", " + std::to_string(w) + ")";
        case TypeId::kString: return "iceberg_bucket(" + c + ", " + std::to_string(w) + ")";
        case TypeId::kBinary:
        case TypeId::kFixed: return "iceberg_bucket(CAST(" + c + " AS BLOB), " + std::to_string(w) + ")";
        case TypeId::kDecimal: return "iceberg_bucket(" + unscaled() + ", " + std::to_string(w) + ")";
        case TypeId::kUuid: return "iceberg_bucket_uuid(CAST(" + c + " AS VARCHAR), " + std::to_string(w) + ")";
        default: return unsupported();
      }
    case TransformKind::kTruncate:
      switch (id) {
        case TypeId::kInt:
        case TypeId::kLong: return "(" + c + " - (((" + c + " % " + std::to_string(w) + ") + " + std::to_string(w) + ") % " + std::to_string(w) + "))";
        case TypeId::kDecimal: {
          std::string u = unscaled();
          return "(" + u + " - (((" + u + " % " + std::to_string(w) + ") + " + std::to_string(w) + ") % " + std::to_string(w) + "))";
        }
        case TypeId::kString: return "left(" + c + ", " + std::to_string(w) + ")";
        case TypeId::kBinary: return "hex(" + c + "[1:" + std::to_string(w) + "])";
        default: return unsupported();
      }
    case TransformKind::kYear:
    case TransformKind::kMonth:
      if (id != TypeId::kDate && id != TypeId::kTimestamp && id != TypeId::kTimestampTz &&
          id != TypeId::kTimestampNs && id != TypeId::kTimestampTzNs) {
        return unsupported();
      }
      if (field.transform.kind() == TransformKind::kYear) return "(year(" + c + ") - 1970)";
      return "((year(" + c + ") - 1970) * 12 + month(" + c + ") - 1)";
    case TransformKind::kDay:
      if (id == TypeId::kDate) return "(" + c + " - DATE '1970-01-01')";
      if (id == TypeId::kTimestamp || id == TypeId::kTimestampTz) return floor_div(epoch(), "86400000000");
      if (id == TypeId::kTimestampNs || id == TypeId::kTimestampTzNs) return floor_div(epoch(), "86400000000000");
      return unsupported();
    case TransformKind::kHour:
      if (id == TypeId::kTimestamp || id == TypeId::kTimestampTz) return floor_div(epoch(), "3600000000");
      if (id == TypeId::kTimestampNs || id == TypeId::kTimestampTzNs) return floor_div(epoch(), "3600000000000");
      return unsupported();
    case TransformKind::kVoid:
      return std::string("NULL");
    case TransformKind::kUnknown:
      return unsupported();
  }
  return unsupported();
}

Result<WriteResult> WriteDataFiles(Database& db, const WriteSource& source, const iceberg::Schema& schema,
                                   const iceberg::PartitionSpec& spec, const WriteOptions& options) {
  // Source columns with their DuckDB types (an Arrow stream's as DuckDB maps its schema,
  // without reading the stream).
  std::vector<ColumnType> described;
  if (source.arrow != nullptr) {
    arrow::SchemaHandle s;
    if (source.arrow->get_schema(source.arrow, s.get()) != 0) {
      const char* e = source.arrow->get_last_error(source.arrow);
      return Status::InvalidArgument(std::string("cannot read the input Arrow schema: ") + (e ? e : "unknown error"));
    }
    if (std::string_view(s->format) != "+s") return Status::InvalidArgument("the input Arrow stream is not a struct stream");
    SKADE_ASSIGN_OR_RETURN(described, db.ArrowInputColumns(*s.get()));
  } else {
    SKADE_ASSIGN_OR_RETURN(described, db.QueryColumns(source.sql));
  }
  std::vector<std::string> source_columns;
  std::map<std::string, std::string> source_types;  // name → DuckDB type
  for (ColumnType& c : described) {
    source_columns.push_back(c.name);
    source_types[c.name] = std::move(c.type);
  }
  std::map<std::string, std::string> by_lower;
  for (const std::string& c : source_columns) {
    if (!by_lower.emplace(Lower(c), c).second) return Status::InvalidArgument("input has two columns named '" + c + "'");
  }
  for (const std::string& c : source_columns) {
    bool known = false;
    for (const NestedField& f : schema.fields()) known = known || Lower(f.name) == Lower(c);
    if (!known) return Status::InvalidArgument("input column '" + c + "' is not in the table schema");
  }

  // Projection: every schema column, converted to its type losslessly (lossless_cast.h);
  // required columns checked for nulls.
  std::string projection;
  std::vector<std::pair<std::string, std::string>> checks;  // column SQL, exact condition
  for (const NestedField& f : schema.fields()) {
    SKADE_ASSIGN_OR_RETURN(std::string type, DuckTypeName(*f.type).WithContext("column '" + f.name + "'"));
    auto it = by_lower.find(Lower(f.name));
    std::string expr;
    if (it == by_lower.end()) {
      if (f.required) return Status::InvalidArgument("required column '" + f.name + "' is missing from the input");
      expr = "CAST(NULL AS " + type + ")";
    } else {
      std::string col = "__skade_src." + QuoteIdentifier(it->second);
      LosslessCast converted = LosslessCastSql(col, source_types[it->second], type, f.name, source.cast);
      expr = converted.sql;
      if (converted.exact) checks.emplace_back(col, *converted.exact);
      if (f.required) {
        expr = "CASE WHEN " + col + " IS NULL THEN error(" +
               QuoteString("null value in required column '" + f.name + "'") + ") ELSE " + expr + " END";
      }
    }
    projection += (projection.empty() ? "" : ", ") + expr + " AS " + QuoteIdentifier(f.name);
  }
  std::string select = "SELECT " + projection + " FROM (" + source.sql + "\n) __skade_src";

  // Partition columns, named after the partition fields unless that clashes with a column.
  std::vector<std::string> part_cols;
  std::vector<iceberg::TypePtr> part_types;
  std::string part_select;
  std::string folder_select;              // date-text partition columns, from the ordinals
  std::vector<std::string> ordinal_cols;  // the ordinal columns they are made from
  for (size_t i = 0; i < spec.fields().size(); ++i) {
    const iceberg::PartitionField& pf = spec.fields()[i];
    const NestedField* src = schema.FindField(pf.source_id);
    if (src == nullptr) {
      return Status::InvalidArgument("partition field '" + pf.name + "' refers to missing column id " +
                                     std::to_string(pf.source_id));
    }
    SKADE_ASSIGN_OR_RETURN(iceberg::TypePtr ptype, pf.transform.ResultType(src->type));
    part_types.push_back(ptype);
    if (pf.transform.kind() == TransformKind::kVoid) {
      part_cols.emplace_back();
      continue;
    }
    std::string column_ref = QuoteIdentifier(schema.FindColumnName(pf.source_id));
    if (schema.FindColumnName(pf.source_id).find('.') != std::string::npos) {
      return Status::NotImplemented("partitioning by nested field '" + schema.FindColumnName(pf.source_id) + "'");
    }
    SKADE_ASSIGN_OR_RETURN(std::string expr, PartitionValueSql(pf, *src->type, column_ref));
    std::string name = pf.name;
    bool clash = false;
    for (const NestedField& f : schema.fields()) clash = clash || Lower(f.name) == Lower(name);
    for (const std::string& c : part_cols) clash = clash || Lower(c) == Lower(name);
    if (clash || name.empty()) name = name + "_p" + std::to_string(i);
    part_cols.push_back(name);
    if (HasPartitionFolderText(pf.transform.kind(), src->type->id())) {
      // Folders named by date text (ts_day=2024-01-31): the ordinal is computed once, in a
      // column of its own, and turned into that text a level up (CopyStatsReader reads it back).
      const std::string ordinal = "__skade_ordinal_" + std::to_string(i);
      part_select += ", " + expr + " AS " + ordinal;
      folder_select += ", " + PartitionFolderTextSql(pf.transform.kind(), ordinal) + " AS " + QuoteIdentifier(name);
      ordinal_cols.push_back(ordinal);
    } else {
      part_select += ", " + expr + " AS " + QuoteIdentifier(name);
    }
  }
  std::vector<std::string> partition_by;
  for (const std::string& c : part_cols) {
    if (!c.empty()) partition_by.push_back(QuoteIdentifier(c));
  }
  if (!part_select.empty()) select = "SELECT *" + part_select + " FROM (" + select + ") __skade_rows";
  if (!ordinal_cols.empty()) {
    std::string excluded;
    for (const std::string& c : ordinal_cols) excluded += (excluded.empty() ? "" : ", ") + c;
    select = "SELECT * EXCLUDE (" + excluded + ")" + folder_select + " FROM (" + select + ") __skade_ordinals";
  }

  if (!io::IsObjectStoreLocation(options.data_location)) {
    SKADE_RETURN_IF_ERROR(io::CreateFoldersDurably(options.data_location));
  }
  const std::string prefix = options.file_prefix.empty() ? Uuid::NewV7().ToString() + "-" : options.file_prefix;
  std::string copy = "COPY (" + select + "\n) TO " + QuoteString(options.data_location) +
                     " (FORMAT parquet, FIELD_IDS " + FieldIdsSql(schema.fields()) + ", COMPRESSION " +
                     QuoteString(options.compression) +
                     // DuckDB can't roll files by size while partitioning: partitioned writes
                     // make one file per partition and write.
                     (partition_by.empty() ? ", FILE_SIZE_BYTES " + std::to_string(options.target_file_size_bytes) : "") +
                     ", FILENAME_PATTERN " +
                     QuoteString(prefix + "{uuid}") + ", RETURN_STATS true, APPEND";
  if (!partition_by.empty()) {
    copy += ", PARTITION_BY (";
    for (size_t i = 0; i < partition_by.size(); ++i) copy += (i ? ", " : "") + partition_by[i];
    copy += ")";
  }
  copy += ")";

  Result<std::vector<TextRow>> rows = source.arrow != nullptr
                                          ? db.QueryRowsWithArrow("__skade_input", source.arrow, copy)
                                          : db.QueryRows(copy);
  if (!rows.ok()) {
    DeleteWithPrefix(db, options.data_location, prefix);
    Status failed = rows.status();
    // A refused value: name its row when the input can be read again.
    if (failed.message().find(kLossyConversion) != std::string::npos && source.arrow == nullptr && !checks.empty()) {
      std::string bad;
      for (const auto& [col, exact] : checks) bad += (bad.empty() ? "" : " OR ") + ("(" + col + " IS NOT NULL AND NOT (" + exact + "))");
      auto row = db.QueryRows("SELECT __skade_row FROM (SELECT row_number() OVER () AS __skade_row, * FROM (" +
                              source.sql + "\n) __skade_src) __skade_src WHERE " + bad + " ORDER BY 1 LIMIT 1");
      if (row.ok() && row->size() == 1 && (*row)[0][0]) {
        failed = Status(failed.code(), failed.message() + " (row " + *(*row)[0][0] + " of the input)");
      }
    }
    return failed.WithContext("write data files");
  }

  CopyStatsReader stats(schema, spec, part_cols, part_types, options.metrics_truncate_length);
  WriteResult result;
  auto fail = [&](Status st) {
    DeleteWithPrefix(db, options.data_location, prefix);
    return st;
  };
  for (const TextRow& r : *rows) {
    Result<iceberg::DataFile> read = stats.Read(r);
    if (!read.ok()) return fail(read.status());
    iceberg::DataFile& df = *read;
    if (df.record_count == 0) {
      DeleteFile(db, df.file_path);
      continue;
    }
    if (options.page_checksums) {
      Result<ChecksummedFile> checksummed = AddPageChecksumsToNewFile(df.file_path, options.object_store);
      if (!checksummed.ok()) return fail(checksummed.status().WithContext("write data files"));
      df.file_size_in_bytes = checksummed->size;
      for (const auto& [field_id, growth] : checksummed->growth_by_field_id) {
        if (auto it = df.column_sizes.find(field_id); it != df.column_sizes.end()) it->second += growth;
      }
    }
    result.records += df.record_count;
    result.bytes += df.file_size_in_bytes;
    result.files.push_back(std::move(df));
  }
  std::vector<std::string> paths;
  for (const auto& f : result.files) paths.push_back(f.file_path);
  if (!partition_by.empty() && !io::IsObjectStoreLocation(options.data_location)) {
    result.folders = io::FoldersBetween(options.data_location, paths);
    if (result.folders.empty() && !paths.empty()) {
      // DuckDB wrote partition files outside the folders it was given: their folders'
      // entries would go unsynced.
      return fail(Status::Internal("partitioned write put its files outside " + options.data_location + ": " +
                                   paths.front()));
    }
  }
  if (options.sync == WriteOptions::Sync::kNow) {
    Status synced = SyncFiles(paths, result.folders);
    if (!synced.ok()) return fail(synced);
  }
  return result;
}

}  // namespace skade::engine
