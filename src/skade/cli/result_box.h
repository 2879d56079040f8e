// Query results for a person at a terminal, the way DuckDB's CLI draws them: a box with each
// column's name and type, numbers right-aligned, the first and last rows of a long result and
// the total count, columns that do not fit the width elided in the middle.
#pragma once

#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "skade/engine/database.h"

namespace skade::cli {

// Columns a character takes at a terminal (0 for combining marks, 2 for wide East Asian and
// emoji code points) summed over `text`, which TerminalText has made safe.
size_t DisplayWidth(std::string_view text);

// The longest prefix of `text` that takes at most `width` columns (whole code points).
std::string_view PrefixOfWidth(std::string_view text, size_t width);

// `text` made safe to print on a terminal as one line: control characters (C0, DEL, C1 — an
// ESC would let a value move the cursor or retitle the window) and bytes that are not UTF-8
// shown as \xNN, newline and tab as \n and \t.
std::string TerminalText(std::string_view text);

// `text` of several lines made safe line by line (TerminalText), each ending in a newline.
std::string TerminalLines(std::string_view text);

struct BoxOptions {
  // Rows shown: when a result has more, its first and last halves with a gap between; 0 shows
  // all (held in memory until the end).
  int64_t max_rows = 40;
  // The box's total width in terminal columns (0 = no limit): middle columns that do not fit
  // are elided; a value wider than kMaxCellWidth is always cut with "…".
  size_t max_width = 0;
  static constexpr size_t kMaxCellWidth = 60;
};

// The options for a box printed to standard output: at most 40 rows, the terminal's width
// when standard output is a terminal.
BoxOptions StdoutBoxOptions();

// Collects a result and draws it. Holds at most max_rows rows. Thread-compatible.
class ResultBox {
 public:
  explicit ResultBox(BoxOptions options);

  void Header(const std::vector<engine::ColumnType>& columns);
  void Row(const engine::TextRow& row);
  // Draws the box (after the last row).
  void Render(std::ostream& out) const;

  int64_t rows() const { return total_; }

 private:
  using Cells = std::vector<std::string>;

  BoxOptions options_;
  std::vector<engine::ColumnType> columns_;
  std::vector<bool> right_aligned_;
  std::vector<Cells> head_;  // the first rows
  std::deque<Cells> tail_;   // the last rows after head_ (bounded: max_rows / 2)
  int64_t total_ = 0;
};

}  // namespace skade::cli
