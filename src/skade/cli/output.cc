#include "skade/cli/output.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "skade/iceberg/literal.h"

namespace skade::cli {
namespace {

constexpr size_t kWidthSampleRows = 1000;
constexpr size_t kMaxCellWidth = 60;

// Display width in code points (close enough for a terminal table).
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Cell(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  std::string s = *v;
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (DisplayWidth(s) > kMaxCellWidth) {
    size_t cut = 0, width = 0;
    while (cut < s.size() && width < kMaxCellWidth - 1) {
      ++cut;
      while (cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) ++cut;
      ++width;
    }
    s = s.substr(0, cut) + "…";
  }
  return s;
}

class TableWriter {
 public:
  explicit TableWriter(std::ostream& out) : out_(out) {}
  void Header(const std::vector<std::string>& names) {
    names_ = names;
    widths_.assign(names.size(), 0);
    for (size_t i = 0; i < names.size(); ++i) widths_[i] = DisplayWidth(names[i]);
  }
  void Row(const engine::TextRow& row) {
    std::vector<std::string> cells;
    for (const auto& v : row) cells.push_back(Cell(v));
    if (!flushed_) {
      for (size_t i = 0; i < cells.size(); ++i) widths_[i] = std::max(widths_[i], DisplayWidth(cells[i]));
      buffered_.push_back(std::move(cells));
      if (buffered_.size() >= kWidthSampleRows) Flush();
      return;
    }
    Line(cells);
  }
  void Finish(int64_t rows) {
    Flush();
    Rule();
    out_ << rows << (rows == 1 ? " row" : " rows") << "\n";
  }

 private:
  void Flush() {
    if (flushed_) return;
    flushed_ = true;
    Rule();
    Line(names_);
    Rule();
    for (const auto& r : buffered_) Line(r);
    buffered_.clear();
  }
  void Rule() {
    out_ << "+";
    for (size_t w : widths_) out_ << std::string(w + 2, '-') << "+";
    out_ << "\n";
  }
  void Line(const std::vector<std::string>& cells) {
    out_ << "|";
    for (size_t i = 0; i < cells.size(); ++i) {
      size_t w = DisplayWidth(cells[i]);
      out_ << " " << cells[i] << std::string(widths_[i] > w ? widths_[i] - w : 0, ' ') << " |";
    }
    out_ << "\n";
  }

  std::ostream& out_;
  std::vector<std::string> names_;
  std::vector<size_t> widths_;
  std::vector<std::vector<std::string>> buffered_;
  bool flushed_ = false;
};

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
  int64_t rows = 0;
  switch (format) {
    case OutputFormat::kTable: {
      TableWriter w(out);
      SKADE_RETURN_IF_ERROR(db.QueryText(
          sql, [&](const std::vector<std::string>& names) { w.Header(names); },
          [&](const engine::TextRow& row) {
            ++rows;
            w.Row(row);
            return Status::Ok();
          }));
      w.Finish(rows);
      return rows;
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
