#include "bench/table_generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "skade/arrow/c_data.h"
#include "skade/base/clock.h"
#include "skade/base/uuid.h"
#include "skade/iceberg/literal.h"
#include "skade/iceberg/manifest.h"
#include "skade/iceberg/table_metadata.h"
#include "skade/iceberg/transform.h"
#include "skade/io/file_io.h"

namespace skade::bench {
namespace {

using iceberg::DataFile;
using iceberg::Literal;
using iceberg::NestedField;
using iceberg::Type;
using iceberg::TypeId;
using iceberg::TypePtr;

constexpr int64_t kMicrosPerDay = 86'400'000'000;
constexpr int32_t kBaseDays = 18262;  // 2020-01-01
constexpr int64_t kBaseMicros = int64_t{kBaseDays} * kMicrosPerDay;
constexpr int kSampleRowsPerFakeFile = 32;

// ---- Arrow C Data access for the COPY … RETURN_STATS result --------------------------------

bool IsValid(const ArrowArray& a, int64_t i) {
  if (a.null_count == 0 || a.n_buffers == 0 || a.buffers[0] == nullptr) return true;
  int64_t j = a.offset + i;
  const auto* bits = static_cast<const uint8_t*>(a.buffers[0]);
  return (bits[j >> 3] >> (j & 7)) & 1;
}

std::string_view StringAt(const ArrowSchema& s, const ArrowArray& a, int64_t i) {
  int64_t j = a.offset + i;
  const char* data = static_cast<const char*>(a.buffers[2]);
  if (std::string_view(s.format) == "U") {
    const auto* off = static_cast<const int64_t*>(a.buffers[1]);
    return {data + off[j], static_cast<size_t>(off[j + 1] - off[j])};
  }
  const auto* off = static_cast<const int32_t*>(a.buffers[1]);
  return {data + off[j], static_cast<size_t>(off[j + 1] - off[j])};
}

Result<int64_t> IntAt(const ArrowSchema& s, const ArrowArray& a, int64_t i) {
  int64_t j = a.offset + i;
  std::string_view f = s.format;
  if (f == "l") return static_cast<const int64_t*>(a.buffers[1])[j];
  if (f == "L") return static_cast<int64_t>(static_cast<const uint64_t*>(a.buffers[1])[j]);
  if (f == "i") return int64_t{static_cast<const int32_t*>(a.buffers[1])[j]};
  return Status::Internal("unexpected Arrow integer format '" + std::string(f) + "'");
}

bool IsStringFormat(const ArrowSchema& s) {
  std::string_view f = s.format;
  return f == "u" || f == "U";
}

// Entry range [begin, end) of row i of a map array (indexes into the entries struct's children).
std::pair<int64_t, int64_t> MapEntries(const ArrowArray& m, int64_t i) {
  const auto* off = static_cast<const int32_t*>(m.buffers[1]);
  int64_t j = m.offset + i;
  int64_t base = m.children[0]->offset;
  return {base + off[j], base + off[j + 1]};
}

using ColumnStats = std::map<std::string, std::string>;

struct CopyStats {
  int64_t count = 0;
  int64_t file_size_bytes = 0;
  std::map<std::string, ColumnStats> columns;  // by (unquoted) column path
};

std::string Unquote(std::string_view key) {
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"' &&
      key.find("\".\"") == std::string_view::npos) {
    std::string out;
    for (size_t k = 1; k + 1 < key.size(); ++k) {
      out.push_back(key[k]);
      if (key[k] == '"' && key[k + 1] == '"') ++k;
    }
    return out;
  }
  return std::string(key);
}

// Reads the one row COPY … (RETURN_STATS true) returns for a single-file write.
Result<CopyStats> ReadCopyStats(arrow::StreamHandle& stream) {
  arrow::SchemaHandle schema;
  if (stream->get_schema(stream.get(), schema.get()) != 0) {
    return Status::Internal("COPY stats: get_schema failed");
  }
  int count_col = -1, size_col = -1, stats_col = -1;
  for (int64_t c = 0; c < schema->n_children; ++c) {
    std::string_view name = schema->children[c]->name;
    if (name == "count") count_col = static_cast<int>(c);
    if (name == "file_size_bytes") size_col = static_cast<int>(c);
    if (name == "column_statistics") stats_col = static_cast<int>(c);
  }
  if (count_col < 0 || size_col < 0 || stats_col < 0) {
    return Status::Internal("COPY stats: missing count/file_size_bytes/column_statistics");
  }
  const ArrowSchema& map_schema = *schema->children[stats_col];
  if (std::string_view(map_schema.format) != "+m") {
    return Status::Internal("COPY stats: column_statistics is not a map");
  }
  const ArrowSchema& entries_schema = *map_schema.children[0];
  const ArrowSchema& key_schema = *entries_schema.children[0];
  const ArrowSchema& inner_schema = *entries_schema.children[1];
  const ArrowSchema& inner_entries_schema = *inner_schema.children[0];
  if (!IsStringFormat(key_schema) || std::string_view(inner_schema.format) != "+m" ||
      !IsStringFormat(*inner_entries_schema.children[0]) ||
      !IsStringFormat(*inner_entries_schema.children[1])) {
    return Status::Internal("COPY stats: unexpected column_statistics layout");
  }

  std::optional<CopyStats> out;
  while (true) {
    arrow::ArrayHandle chunk;
    if (stream->get_next(stream.get(), chunk.get()) != 0) {
      const char* e = stream->get_last_error(stream.get());
      return Status::InvalidArgument(std::string("COPY failed: ") + (e ? e : "unknown error"));
    }
    if (!chunk.valid()) break;
    for (int64_t row = 0; row < chunk->length; ++row) {
      if (out) return Status::Internal("COPY stats: more than one file written");
      int64_t r = chunk->offset + row;
      CopyStats s;
      SKADE_ASSIGN_OR_RETURN(s.count,
                             IntAt(*schema->children[count_col], *chunk->children[count_col], r));
      SKADE_ASSIGN_OR_RETURN(s.file_size_bytes,
                             IntAt(*schema->children[size_col], *chunk->children[size_col], r));
      const ArrowArray& map = *chunk->children[stats_col];
      const ArrowArray& entries = *map.children[0];
      const ArrowArray& keys = *entries.children[0];
      const ArrowArray& inner = *entries.children[1];
      auto [begin, end] = MapEntries(map, r);
      for (int64_t e = begin; e < end; ++e) {
        ColumnStats& cs = s.columns[Unquote(StringAt(key_schema, keys, e))];
        if (!IsValid(inner, e)) continue;
        const ArrowArray& inner_entries = *inner.children[0];
        auto [ib, ie] = MapEntries(inner, e);
        for (int64_t k = ib; k < ie; ++k) {
          const ArrowArray& ik = *inner_entries.children[0];
          const ArrowArray& iv = *inner_entries.children[1];
          if (!IsValid(iv, k)) continue;
          cs[std::string(StringAt(*inner_entries_schema.children[0], ik, k))] =
              std::string(StringAt(*inner_entries_schema.children[1], iv, k));
        }
      }
      out = std::move(s);
    }
  }
  if (!out) return Status::Internal("COPY stats: no row returned");
  return std::move(*out);
}

// ---- Statistics text → Iceberg bounds -------------------------------------------------------

template <typename T>
std::optional<T> ParseInteger(std::string_view text) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

// DuckDB renders TIMESTAMPTZ as "2020-01-01 00:00:00[.ffffff]+00"; Iceberg's text form wants
// "2020-01-01T00:00:00[.ffffff]+00:00".
std::string IsoTimestamp(std::string_view text) {
  std::string s(text);
  size_t space = s.find(' ');
  if (space != std::string::npos) s[space] = 'T';
  if (s.size() > 3 && (s[s.size() - 3] == '+' || s[s.size() - 3] == '-')) s += ":00";
  return s;
}

// A DuckDB value rendered as text (statistics or VARCHAR cast), as a literal of `type`.
std::optional<Literal> ParseValue(std::string_view text, const TypePtr& type) {
  switch (type->id()) {
    case TypeId::kBoolean:
      // Parquet statistics render booleans as 1/0; DuckDB's VARCHAR cast as true/false.
      if (text == "true" || text == "1") return Literal::Boolean(true);
      if (text == "false" || text == "0") return Literal::Boolean(false);
      return std::nullopt;
    case TypeId::kInt: {
      auto v = ParseInteger<int32_t>(text);
      if (!v) return std::nullopt;
      return Literal::Int(*v);
    }
    case TypeId::kLong: {
      auto v = ParseInteger<int64_t>(text);
      if (!v) return std::nullopt;
      return Literal::Long(*v);
    }
    case TypeId::kFloat:
    case TypeId::kDouble: {
      std::string s(text);
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size() || std::isnan(v)) return std::nullopt;
      return type->id() == TypeId::kFloat ? Literal::Float(static_cast<float>(v))
                                          : Literal::Double(v);
    }
    case TypeId::kDecimal:
    case TypeId::kDate: {
      auto v = Literal::String(std::string(text)).CastTo(type);
      if (!v.ok()) return std::nullopt;
      return *v;
    }
    case TypeId::kTimestampTz: {
      auto v = Literal::String(IsoTimestamp(text)).CastTo(type);
      if (!v.ok()) return std::nullopt;
      return *v;
    }
    case TypeId::kString:
      return Literal::String(std::string(text));
    default:
      return std::nullopt;
  }
}

// Bytes per value before compression, for the size estimate of fake files.
int64_t EstimatedWidth(TypeId id) {
  switch (id) {
    case TypeId::kBoolean:
      return 1;
    case TypeId::kInt:
    case TypeId::kDate:
    case TypeId::kFloat:
      return 4;
    case TypeId::kString:
      return 14;
    default:
      return 8;
  }
}

std::string ColumnStatsKey(const ColumnStats& s, std::string_view key) {
  auto it = s.find(std::string(key));
  return it == s.end() ? std::string() : it->second;
}

// Fills a data file's metrics from DuckDB's per-column statistics. DuckDB reports no min/max
// for BOOLEAN columns, so those get no bounds (bounds are optional in the spec).
Status FillMetrics(const CopyStats& stats, const std::vector<GeneratedColumn>& columns,
                   DataFile* file) {
  file->record_count = stats.count;
  file->file_size_in_bytes = stats.file_size_bytes;
  for (const GeneratedColumn& c : columns) {
    int id = c.field.id;
    auto it = stats.columns.find(c.field.name);
    if (it == stats.columns.end()) {
      return Status::Internal("COPY stats: no statistics for column '" + c.field.name + "'");
    }
    const ColumnStats& s = it->second;
    file->value_counts[id] = stats.count;
    if (auto v = ParseInteger<int64_t>(ColumnStatsKey(s, "column_size_bytes"))) {
      file->column_sizes[id] = *v;
    }
    if (auto v = ParseInteger<int64_t>(ColumnStatsKey(s, "null_count"))) {
      file->null_value_counts[id] = *v;
    }
    if (c.field.type->id() == TypeId::kFloat || c.field.type->id() == TypeId::kDouble) {
      // The generator never produces NaN; DuckDB reports has_nan when it sees one.
      std::string has_nan = ColumnStatsKey(s, "has_nan");
      if (has_nan.empty() || has_nan == "false") file->nan_value_counts[id] = 0;
    }
    auto min = s.find("min");
    auto max = s.find("max");
    if (min != s.end() && max != s.end()) {
      auto lo = ParseValue(min->second, c.field.type);
      auto hi = ParseValue(max->second, c.field.type);
      if (lo && hi) {
        file->lower_bounds[id] = lo->ToBinary();
        file->upper_bounds[id] = hi->ToBinary();
      }
    }
  }
  return Status::Ok();
}

std::string FieldIdsSql(const std::vector<GeneratedColumn>& columns) {
  std::string out = "{";
  for (size_t k = 0; k < columns.size(); ++k) {
    if (k) out += ", ";
    out +=
        engine::QuoteIdentifier(columns[k].field.name) + ": " + std::to_string(columns[k].field.id);
  }
  return out + "}";
}

std::string Pad(int64_t v, int width) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), '0');
  return s;
}

// The partition tuple of file `f` (every row of file f lies on day f).
Result<std::vector<std::optional<Literal>>> PartitionOf(const iceberg::PartitionSpec& spec,
                                                        const iceberg::Schema& schema, int64_t f) {
  std::vector<std::optional<Literal>> out;
  for (const iceberg::PartitionField& pf : spec.fields()) {
    const NestedField* source = schema.FindField(pf.source_id);
    if (source == nullptr) return Status::Internal("partition source column missing");
    std::optional<Literal> value;
    if (source->type->id() == TypeId::kTimestampTz) {
      value = Literal::TimestampTz(kBaseMicros + f * kMicrosPerDay);
    } else if (source->type->id() == TypeId::kDate) {
      value = Literal::Date(static_cast<int32_t>(kBaseDays + f));
    } else {
      return Status::Internal("unsupported partition source type");
    }
    SKADE_ASSIGN_OR_RETURN(auto transformed, pf.transform.Apply(value));
    out.push_back(std::move(transformed));
  }
  return out;
}

// Writes file `f` with DuckDB and returns its metrics.
Result<DataFile> WriteDataFile(engine::Database& db, const std::vector<GeneratedColumn>& columns,
                               const std::string& path, int64_t first_row, int64_t count) {
  std::string sql = "COPY (" + GeneratedRowsSql(columns, first_row, count) + ") TO " +
                    engine::QuoteString(path) + " (FORMAT parquet, FIELD_IDS " +
                    FieldIdsSql(columns) + ", COMPRESSION zstd, RETURN_STATS true)";
  SKADE_ASSIGN_OR_RETURN(arrow::StreamHandle stream, db.QueryArrow(sql));
  SKADE_ASSIGN_OR_RETURN(CopyStats stats, ReadCopyStats(stream).WithContext(path));
  if (stats.count != count) {
    return Status::Internal(path + ": COPY wrote " + std::to_string(stats.count) +
                            " rows, expected " + std::to_string(count));
  }
  DataFile file;
  file.file_path = path;
  SKADE_RETURN_IF_ERROR(FillMetrics(stats, columns, &file));
  return file;
}

// Metrics of fake files: one DuckDB query evaluates every column at evenly spaced sample rows
// of each file (first and last row included, so monotonic columns get exact bounds).
Result<std::vector<DataFile>> FakeDataFiles(engine::Database& db,
                                            const std::vector<GeneratedColumn>& columns,
                                            int64_t rows, int64_t rows_per_file, int64_t files) {
  std::string exprs, aggs;
  for (const GeneratedColumn& c : columns) {
    std::string name = engine::QuoteIdentifier(c.field.name);
    exprs += ", " + c.expression + " AS " + name;
    aggs += ", CAST(min(" + name + ") AS VARCHAR), CAST(max(" + name + ") AS VARCHAR), count(" +
            name + ")";
  }
  std::string n = std::to_string(rows), r = std::to_string(rows_per_file),
              s = std::to_string(kSampleRowsPerFakeFile);
  std::string sql = "WITH files AS (SELECT f, f * " + r + " AS a, least(f * " + r + " + " + r +
                    ", " + n + ") AS b FROM range(" + std::to_string(files) +
                    ") t(f)), samples AS (SELECT DISTINCT f, a + (s * (b - a - 1)) // " +
                    std::to_string(kSampleRowsPerFakeFile - 1) + " AS i FROM files, range(" + s +
                    ") u(s)) SELECT f, count(*)" + aggs + " FROM (SELECT f" + exprs +
                    " FROM samples) GROUP BY f ORDER BY f";
  SKADE_ASSIGN_OR_RETURN(auto result, db.QueryRows(sql));
  if (static_cast<int64_t>(result.size()) != files) {
    return Status::Internal("fake file statistics: wrong row count");
  }
  std::vector<DataFile> out;
  out.reserve(result.size());
  for (int64_t f = 0; f < files; ++f) {
    const engine::TextRow& row = result[static_cast<size_t>(f)];
    DataFile file;
    file.record_count = std::min(rows, (f + 1) * rows_per_file) - f * rows_per_file;
    auto sampled = ParseInteger<int64_t>(row[1].value_or(""));
    if (!sampled || *sampled <= 0)
      return Status::Internal("fake file statistics: bad sample count");
    int64_t bytes = 4096;  // footer
    for (size_t k = 0; k < columns.size(); ++k) {
      const GeneratedColumn& c = columns[k];
      int id = c.field.id;
      const auto& min = row[2 + 3 * k];
      const auto& max = row[3 + 3 * k];
      auto non_null = ParseInteger<int64_t>(row[4 + 3 * k].value_or(""));
      if (!non_null) return Status::Internal("fake file statistics: bad count");
      int64_t nulls = (*sampled - *non_null) * file.record_count / *sampled;
      // Compressed size: a rough half of the plain width.
      int64_t size =
          std::max<int64_t>(64, file.record_count * EstimatedWidth(c.field.type->id()) / 2);
      bytes += size;
      file.column_sizes[id] = size;
      file.value_counts[id] = file.record_count;
      file.null_value_counts[id] = nulls;
      if (c.field.type->id() == TypeId::kFloat || c.field.type->id() == TypeId::kDouble) {
        file.nan_value_counts[id] = 0;
      }
      if (min && max) {
        auto lo = ParseValue(*min, c.field.type);
        auto hi = ParseValue(*max, c.field.type);
        if (lo && hi) {
          file.lower_bounds[id] = lo->ToBinary();
          file.upper_bounds[id] = hi->ToBinary();
        }
      }
    }
    file.file_size_in_bytes = bytes;
    out.push_back(std::move(file));
  }
  return out;
}

int64_t PositiveId() {
  Uuid u = Uuid::NewV7();
  int64_t v = 0;
  for (int k = 8; k < 16; ++k) v = (v << 8) | u.bytes[k];
  v &= 0x3fffffffffffffff;
  return v == 0 ? 1 : v;
}

}  // namespace

int64_t RowsPerFile(int64_t rows, int files) {
  if (files <= 0) return rows;
  return (rows + files - 1) / files;
}

std::vector<GeneratedColumn> GeneratedColumns(int count, int64_t rows_per_file) {
  const std::string r = std::to_string(std::max<int64_t>(1, rows_per_file));
  const std::string step = std::to_string(kMicrosPerDay / std::max<int64_t>(1, rows_per_file));
  auto primitive = [](TypeId id) { return Type::Primitive(id); };
  auto field = [](int id, std::string name, bool required, TypePtr type) {
    NestedField f;
    f.id = id;
    f.name = std::move(name);
    f.required = required;
    f.type = std::move(type);
    return f;
  };
  std::vector<GeneratedColumn> all = {
      {field(1, "id", true, primitive(TypeId::kLong)), "BIGINT", "i"},
      {field(2, "qty", false, primitive(TypeId::kInt)), "INTEGER", "CAST(i % 1000 AS INTEGER)"},
      {field(3, "price", false, primitive(TypeId::kDouble)), "DOUBLE",
       "CAST((i * 7) % 10007 AS DOUBLE) * 0.25"},
      {field(4, "amount", false, Type::Decimal(18, 2)), "DECIMAL(18,2)",
       "CAST(((i * 37) % 100000000) * CAST(0.01 AS DECIMAL(18,2)) AS DECIMAL(18,2))"},
      {field(5, "customer", false, primitive(TypeId::kString)), "VARCHAR",
       "CASE WHEN i % 13 = 0 THEN NULL ELSE 'customer_' || CAST((i * 31) % 9973 AS VARCHAR) END"},
      {field(6, "event_date", false, primitive(TypeId::kDate)), "DATE",
       "DATE '2020-01-01' + CAST(i // " + r + " AS INTEGER)"},
      {field(7, "ts", false, primitive(TypeId::kTimestampTz)), "TIMESTAMP WITH TIME ZONE",
       "CAST(make_timestamp(" + std::to_string(kBaseMicros) + " + (i // " + r + ") * " +
           std::to_string(kMicrosPerDay) + " + (i % " + r + ") * " + step +
           ") AS TIMESTAMP WITH TIME ZONE)"},
      {field(8, "flag", false, primitive(TypeId::kBoolean)), "BOOLEAN", "i % 3 = 0"},
      {field(9, "score", false, primitive(TypeId::kFloat)), "FLOAT",
       "CASE WHEN i % 11 = 5 THEN NULL ELSE CAST((i % 1000) / 8 AS FLOAT) END"},
      {field(10, "big", false, primitive(TypeId::kLong)), "BIGINT",
       "(i * 2654435761) % 1000000007"},
  };
  std::vector<GeneratedColumn> out;
  for (int k = 0; k < count; ++k) {
    if (k < static_cast<int>(all.size())) {
      out.push_back(all[static_cast<size_t>(k)]);
    } else {
      int id = k + 1;
      out.push_back({field(id, "extra_" + std::to_string(id), false, primitive(TypeId::kLong)),
                     "BIGINT", "(i * " + std::to_string(id) + ") % 1000003"});
    }
  }
  return out;
}

iceberg::SchemaPtr GeneratedSchema(const std::vector<GeneratedColumn>& columns) {
  std::vector<NestedField> fields;
  for (const GeneratedColumn& c : columns) fields.push_back(c.field);
  return std::make_shared<const iceberg::Schema>(0, std::move(fields));
}

Result<iceberg::PartitionSpecPtr> GeneratedSpec(const iceberg::Schema& schema, PartitionMode mode) {
  std::vector<iceberg::PartitionField> fields;
  if (mode == PartitionMode::kDay) {
    if (schema.FindField(7) == nullptr) {
      return Status::InvalidArgument("day(ts) partitioning needs at least 7 columns");
    }
    fields.push_back({7, {}, 1000, "ts_day", iceberg::Transform::Day()});
  } else if (mode == PartitionMode::kIdentity) {
    if (schema.FindField(6) == nullptr) {
      return Status::InvalidArgument("identity(event_date) partitioning needs at least 6 columns");
    }
    fields.push_back({6, {}, 1000, "event_date", iceberg::Transform::Identity()});
  }
  return std::make_shared<const iceberg::PartitionSpec>(0, std::move(fields));
}

std::string GeneratedRowsSql(const std::vector<GeneratedColumn>& columns, int64_t first_row,
                             int64_t count) {
  std::string sql = "SELECT ";
  for (size_t k = 0; k < columns.size(); ++k) {
    if (k) sql += ", ";
    sql += columns[k].expression + " AS " + engine::QuoteIdentifier(columns[k].field.name);
  }
  sql += " FROM range(" + std::to_string(first_row) + ", " + std::to_string(first_row + count) +
         ") t(i)";
  return sql;
}

Result<GeneratedTable> GenerateTable(engine::Database& db, const GeneratorOptions& options) {
  if (options.out_dir.empty()) return Status::InvalidArgument("no output folder");
  if (options.rows < 1) return Status::InvalidArgument("rows must be positive");
  if (options.columns < 1 || options.columns > 64) {
    return Status::InvalidArgument("columns must be 1..64");
  }
  if (options.files < 1 || options.rows < options.files) {
    return Status::InvalidArgument("files must be 1..rows");
  }
  int64_t rows_per_file = RowsPerFile(options.rows, options.files);
  int64_t file_count = (options.rows + rows_per_file - 1) / rows_per_file;
  if (options.manifests < 1 || options.manifests > file_count) {
    return Status::InvalidArgument("manifests must be 1..files (" + std::to_string(file_count) +
                                   " non-empty files)");
  }
  if (options.snapshots < 1 || options.snapshots > options.manifests) {
    return Status::InvalidArgument("snapshots must be 1..manifests");
  }

  std::error_code ec;
  std::filesystem::path root = std::filesystem::absolute(options.out_dir, ec);
  if (ec) return Status::IoError("bad output folder '" + options.out_dir + "': " + ec.message());
  root = root.lexically_normal();
  std::string location = root.string();
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  if (std::filesystem::exists(root / "metadata", ec)) {
    return Status::AlreadyExists(location + " already holds a table");
  }
  std::filesystem::create_directories(root / "data", ec);
  if (ec) return Status::IoError("cannot create " + location + "/data: " + ec.message());

  auto columns = GeneratedColumns(options.columns, rows_per_file);
  iceberg::SchemaPtr schema = GeneratedSchema(columns);
  SKADE_ASSIGN_OR_RETURN(iceberg::PartitionSpecPtr spec, GeneratedSpec(*schema, options.partition));
  auto io = io::MakeLocalFileIO();

  // Data files, in row order.
  std::vector<DataFile> files;
  if (options.fake_data_files) {
    SKADE_ASSIGN_OR_RETURN(files,
                           FakeDataFiles(db, columns, options.rows, rows_per_file, file_count));
    for (int64_t f = 0; f < file_count; ++f) {
      files[static_cast<size_t>(f)].file_path =
          location + "/data/" + Pad(f, 6) + "-" + Uuid::NewV7().ToString() + ".parquet";
    }
  } else {
    for (int64_t f = 0; f < file_count; ++f) {
      int64_t first = f * rows_per_file;
      int64_t count = std::min(options.rows, first + rows_per_file) - first;
      std::string path =
          location + "/data/" + Pad(f, 6) + "-" + Uuid::NewV7().ToString() + ".parquet";
      SKADE_ASSIGN_OR_RETURN(DataFile file, WriteDataFile(db, columns, path, first, count));
      files.push_back(std::move(file));
    }
  }
  for (int64_t f = 0; f < file_count; ++f) {
    DataFile& file = files[static_cast<size_t>(f)];
    file.spec_id = spec->spec_id();
    SKADE_ASSIGN_OR_RETURN(file.partition, PartitionOf(*spec, *schema, f));
  }

  // Manifests (contiguous runs of files) and append snapshots (contiguous runs of manifests).
  iceberg::TableMetadata md;
  md.format_version = 2;
  md.table_uuid = Uuid::NewV7().ToString();
  md.location = location;
  md.last_column_id = schema->HighestFieldId();
  md.schemas = {schema};
  md.current_schema_id = schema->schema_id();
  md.partition_specs = {spec};
  md.default_spec_id = spec->spec_id();
  md.last_partition_id = spec->last_assigned_field_id();
  md.properties = {{"write.format.default", "parquet"},
                   {"write.parquet.compression-codec", "zstd"}};
  md.sort_orders = {iceberg::SortOrder{}};
  md.default_sort_order_id = 0;

  GeneratedTable out;
  out.rows = options.rows;
  out.data_files = file_count;
  out.manifests = options.manifests;
  std::vector<iceberg::ManifestFile> live_manifests;
  int64_t total_records = 0, total_files = 0, total_bytes = 0;
  std::optional<int64_t> parent;
  int64_t now_ms = NowMillis();
  for (int k = 0; k < options.snapshots; ++k) {
    int64_t snapshot_id = PositiveId();
    int64_t sequence_number = k + 1;
    int64_t timestamp_ms = now_ms - (options.snapshots - 1 - k);
    int first_manifest = static_cast<int>(int64_t{k} * options.manifests / options.snapshots);
    int end_manifest = static_cast<int>(int64_t{k + 1} * options.manifests / options.snapshots);
    int64_t added_records = 0, added_files = 0, added_bytes = 0;
    std::set<std::string> partitions;
    for (int m = first_manifest; m < end_manifest; ++m) {
      iceberg::ManifestWriterOptions wo;
      wo.format_version = 2;
      wo.snapshot_id = snapshot_id;
      wo.sequence_number = sequence_number;
      SKADE_ASSIGN_OR_RETURN(auto writer, iceberg::ManifestWriter::Create(schema, spec, wo));
      int64_t begin = int64_t{m} * file_count / options.manifests;
      int64_t end = int64_t{m + 1} * file_count / options.manifests;
      for (int64_t f = begin; f < end; ++f) {
        iceberg::ManifestEntry entry;
        entry.status = iceberg::ManifestEntryStatus::kAdded;
        entry.snapshot_id = snapshot_id;
        entry.data_file = files[static_cast<size_t>(f)];
        const DataFile& df = entry.data_file;
        added_records += df.record_count;
        added_bytes += df.file_size_in_bytes;
        ++added_files;
        std::string key;
        for (const auto& v : df.partition) key += v ? v->ToString() + "/" : "null/";
        partitions.insert(key);
        SKADE_RETURN_IF_ERROR(writer->Add(entry));
      }
      std::string path =
          location + "/metadata/" + Uuid::NewV7().ToString() + "-m" + std::to_string(m) + ".avro";
      SKADE_ASSIGN_OR_RETURN(auto finished, writer->Finish(path));
      SKADE_RETURN_IF_ERROR(io->CreateExclusive(path, finished.bytes));
      live_manifests.push_back(std::move(finished.manifest));
    }
    SKADE_ASSIGN_OR_RETURN(
        std::string list,
        iceberg::WriteManifestList(2, snapshot_id, parent, sequence_number, live_manifests));
    std::string list_path = location + "/metadata/snap-" + std::to_string(snapshot_id) + "-1-" +
                            Uuid::NewV7().ToString() + ".avro";
    SKADE_RETURN_IF_ERROR(io->CreateExclusive(list_path, list));

    total_records += added_records;
    total_files += added_files;
    total_bytes += added_bytes;
    iceberg::Snapshot snap;
    snap.snapshot_id = snapshot_id;
    snap.parent_snapshot_id = parent;
    snap.sequence_number = sequence_number;
    snap.timestamp_ms = timestamp_ms;
    snap.manifest_list = list_path;
    snap.schema_id = schema->schema_id();
    // Spec "Snapshot Summary" metrics.
    snap.summary = {{"operation", "append"},
                    {"added-data-files", std::to_string(added_files)},
                    {"added-records", std::to_string(added_records)},
                    {"added-files-size", std::to_string(added_bytes)},
                    {"changed-partition-count", std::to_string(partitions.size())},
                    {"total-records", std::to_string(total_records)},
                    {"total-files-size", std::to_string(total_bytes)},
                    {"total-data-files", std::to_string(total_files)},
                    {"total-delete-files", "0"},
                    {"total-position-deletes", "0"},
                    {"total-equality-deletes", "0"}};
    md.snapshots.push_back(std::move(snap));
    md.snapshot_log.push_back({timestamp_ms, snapshot_id});
    parent = snapshot_id;
  }
  md.last_sequence_number = options.snapshots;
  md.last_updated_ms = now_ms;
  md.current_snapshot_id = parent;
  iceberg::SnapshotRef main;
  main.snapshot_id = *parent;
  md.refs["main"] = main;

  out.metadata_file = location + "/metadata/v1.metadata.json";
  SKADE_RETURN_IF_ERROR(io->CreateExclusive(out.metadata_file, iceberg::TableMetadataToJson(md)));
  SKADE_RETURN_IF_ERROR(io->Overwrite(location + "/metadata/version-hint.text", "1"));
  out.data_bytes = total_bytes;
  for (const DataFile& f : files) out.data_paths.push_back(f.file_path);
  return out;
}

}  // namespace skade::bench
