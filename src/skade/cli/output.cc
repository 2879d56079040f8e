#include "skade/cli/output.h"

#include <cstdio>
#include <ostream>

#include "skade/iceberg/literal.h"

namespace skade::cli {
namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatMillis(int64_t ms) {
  int64_t days = iceberg::FloorDiv(ms, 86400000);
  int64_t rem = ms - days * 86400000;
  int y;
  unsigned mo, d;
  iceberg::CivilFromDays(days, &y, &mo, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, mo, d,
                static_cast<int>(rem / 3600000), static_cast<int>(rem / 60000 % 60),
                static_cast<int>(rem / 1000 % 60), static_cast<int>(rem % 1000));
  return buf;
}

Result<int64_t> WriteQuery(engine::Database& db, const std::string& sql, OutputFormat format,
                           std::ostream& out) {
  return WriteQuery(db, sql, format, StdoutBoxOptions(), out);
}

Result<int64_t> WriteQuery(engine::Database& db, const std::string& sql, OutputFormat format,
                           const BoxOptions& box_options, std::ostream& out) {
  int64_t rows = 0;
  switch (format) {
    case OutputFormat::kTable: {
      ResultBox box(box_options);
      SKADE_RETURN_IF_ERROR(db.QueryTypedText(
          sql, [&](const std::vector<engine::ColumnType>& columns) { box.Header(columns); },
          [&](const engine::TextRow& row) {
            box.Row(row);
            return Status::Ok();
          }));
      box.Render(out);
      return box.rows();
    }
    case OutputFormat::kCsv: {
      SKADE_RETURN_IF_ERROR(db.QueryText(
          sql,
          [&](const std::vector<std::string>& names) {
            for (size_t i = 0; i < names.size(); ++i) out << (i ? "," : "") << CsvField(names[i]);
            out << "\n";
          },
          [&](const engine::TextRow& row) {
            ++rows;
            for (size_t i = 0; i < row.size(); ++i) {
              out << (i ? "," : "") << (row[i] ? CsvField(*row[i]) : "");
            }
            out << "\n";
            return Status::Ok();
          }));
      return rows;
    }
    case OutputFormat::kJson: {
      // DuckDB renders each row as a JSON object with typed values.
      std::string json_sql = "SELECT to_json(__skade_row) FROM (" + sql + "\n) __skade_row";
      // The header callback runs once the query has started: a query that fails to bind
      // leaves stdout empty.
      SKADE_RETURN_IF_ERROR(db.QueryText(
          json_sql, [&](const std::vector<std::string>&) { out << "["; },
          [&](const engine::TextRow& row) {
            out << (rows ? ",\n" : "\n") << row[0].value_or("null");
            ++rows;
            return Status::Ok();
          }));
      out << (rows ? "\n]\n" : "]\n");
      return rows;
    }
  }
  return rows;
}

}  // namespace skade::cli
