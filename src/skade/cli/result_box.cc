#include "skade/cli/result_box.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace skade::cli {
namespace {

// The code point starting at s[i] and its length in bytes; length 0 when the bytes there are
// not well-formed UTF-8 (overlong forms, surrogates and values past U+10FFFF included).
std::pair<char32_t, size_t> DecodeUtf8(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return {b0, 1};
  size_t len = b0 >= 0xF0 && b0 <= 0xF4 ? 4 : b0 >= 0xE0 ? (b0 <= 0xEF ? 3 : 0) : b0 >= 0xC2 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return {0, 0};
  char32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, len};
}

// Terminal columns of one printable code point (after Unicode's East Asian Width: wide and
// fullwidth take two; combining marks and zero-width characters none).
size_t CodePointWidth(char32_t cp) {
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
      cp == 0x200D || (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x20D0 && cp <= 0x20FF)) {
    return 0;
  }
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) || (cp >= 0x3041 && cp <= 0x33FF) ||
      (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xA000 && cp <= 0xA4CF) ||
      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
      (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
      (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD)) {
    return 2;
  }
  return 1;
}

std::string HexByte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", b);
  return buf;
}

// `text` cut to `width` columns with "…" when wider.
std::string Fit(const std::string& text, size_t width) {
  if (DisplayWidth(text) <= width) return text;
  if (width == 0) return "";
  return std::string(PrefixOfWidth(text, width - 1)) + "…";
}

std::string Repeat(std::string_view piece, size_t n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (size_t i = 0; i < n; ++i) out += piece;
  return out;
}

std::string Pad(const std::string& text, size_t width, char align) {
  const size_t w = DisplayWidth(text);
  const size_t space = width > w ? width - w : 0;
  if (align == 'r') return std::string(space, ' ') + text;
  if (align == 'c') return std::string(space / 2, ' ') + text + std::string(space - space / 2, ' ');
  return text + std::string(space, ' ');
}

bool IsNumericType(const std::string& type) {
  static const char* const kNumeric[] = {"TINYINT",  "SMALLINT",  "INTEGER",  "BIGINT", "HUGEINT", "UTINYINT",
                                         "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT",  "DOUBLE"};
  for (const char* n : kNumeric) {
    if (type == n) return true;
  }
  return type.rfind("DECIMAL(", 0) == 0;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

std::string_view PrefixOfWidth(std::string_view text, size_t width) {
  size_t used = 0, i = 0;
  while (i < text.size()) {
    auto [cp, len] = DecodeUtf8(text, i);
    if (len == 0) len = 1;
    const size_t w = CodePointWidth(cp);
    if (used + w > width) break;
    used += w;
    i += len;
  }
  return text.substr(0, i);
}

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    auto [cp, len] = DecodeUtf8(text, i);
    if (len == 0) {
      ++width;
      ++i;
      continue;
    }
    width += CodePointWidth(cp);
    i += len;
  }
  return width;
}

std::string TerminalLines(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    out += TerminalText(text.substr(at, end - at)) + "\n";
    at = end + 1;
  }
  return out;
}

std::string TerminalText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto [cp, len] = DecodeUtf8(text, i);
    if (len == 0) {
      out += HexByte(static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += HexByte(static_cast<unsigned char>(cp));
    } else if (cp >= 0x80 && cp <= 0x9F) {
      for (size_t k = 0; k < len; ++k) out += HexByte(static_cast<unsigned char>(text[i + k]));
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

BoxOptions StdoutBoxOptions() {
  BoxOptions options;
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    options.max_width = size.ws_col;
  }
  return options;
}

ResultBox::ResultBox(BoxOptions options) : options_(options) {}

void ResultBox::Header(const std::vector<engine::ColumnType>& columns) {
  columns_.clear();
  right_aligned_.clear();
  for (const engine::ColumnType& c : columns) {
    columns_.push_back(engine::ColumnType{TerminalText(c.name), TerminalText(Lower(c.type))});
    right_aligned_.push_back(IsNumericType(c.type));
  }
}

void ResultBox::Row(const engine::TextRow& row) {
  ++total_;
  Cells cells;
  cells.reserve(row.size());
  for (const auto& v : row) cells.push_back(v ? Fit(TerminalText(*v), BoxOptions::kMaxCellWidth) : "NULL");
  const size_t max_rows = static_cast<size_t>(std::max<int64_t>(options_.max_rows, 0));
  const size_t head_rows = max_rows - max_rows / 2;
  if (max_rows == 0 || head_.size() < head_rows) {
    head_.push_back(std::move(cells));
    return;
  }
  tail_.push_back(std::move(cells));
  if (tail_.size() > max_rows / 2) tail_.pop_front();
}

void ResultBox::Render(std::ostream& out) const {
  const size_t n = columns_.size();
  const bool gap = static_cast<size_t>(total_) > head_.size() + tail_.size();
  std::vector<size_t> widths(n, 1);
  for (size_t c = 0; c < n; ++c) {
    widths[c] = std::max({widths[c], DisplayWidth(columns_[c].name), DisplayWidth(columns_[c].type)});
    for (const Cells& r : head_) widths[c] = std::max(widths[c], DisplayWidth(r[c]));
    for (const Cells& r : tail_) widths[c] = std::max(widths[c], DisplayWidth(r[c]));
  }
  // Which columns fit: taken from both ends inwards; "…" stands for the ones left out.
  std::vector<size_t> shown;
  size_t elided_at = n;  // the "…" column goes before shown[elided_at]
  const auto box_width = [&](size_t sum_of_columns, size_t count) { return 1 + sum_of_columns + 3 * count; };
  size_t all = 0;
  for (size_t w : widths) all += w;
  if (options_.max_width == 0 || box_width(all, n) <= options_.max_width || n <= 1) {
    for (size_t c = 0; c < n; ++c) shown.push_back(c);
  } else {
    std::vector<size_t> left, right;
    size_t used = 1;  // the "…" column
    size_t lo = 0, hi = n;
    for (bool from_left = true; lo < hi; from_left = !from_left) {
      const size_t c = from_left ? lo : hi - 1;
      if (box_width(used + widths[c], left.size() + right.size() + 2) > options_.max_width) break;
      used += widths[c];
      if (from_left) {
        left.push_back(lo++);
      } else {
        right.push_back(--hi);
      }
    }
    if (left.empty()) left.push_back(0);  // at least one column, cut to fit below
    shown = left;
    elided_at = shown.size();
    shown.insert(shown.end(), right.rbegin(), right.rend());
  }
  const bool elided = shown.size() < n;
  // The layout: (column, width) with SIZE_MAX for the "…" column.
  std::vector<std::pair<size_t, size_t>> layout;
  for (size_t i = 0; i < shown.size(); ++i) {
    if (elided && i == elided_at) layout.emplace_back(SIZE_MAX, 1);
    layout.emplace_back(shown[i], widths[shown[i]]);
  }
  if (elided && elided_at == shown.size()) layout.emplace_back(SIZE_MAX, 1);
  if (options_.max_width > 0 && !layout.empty()) {
    // A single column wider than the terminal is cut.
    size_t total = 1;
    for (const auto& [c, w] : layout) total += w + 3;
    if (total > options_.max_width) {
      const size_t excess = total - options_.max_width;
      size_t& first = layout.front().second;
      first = first > excess + 1 ? first - excess : 1;
    }
  }
  // The footer: one line when it fits the box, else a line per part (the box widens only for
  // the longest part).
  std::vector<std::string> parts = {std::to_string(total_) + (total_ == 1 ? " row" : " rows")};
  if (gap) parts.push_back("(" + std::to_string(head_.size() + tail_.size()) + " shown)");
  if (elided) parts.push_back(std::to_string(n) + " columns (" + std::to_string(shown.size()) + " shown)");
  std::vector<std::string> footer;
  if (!layout.empty()) {
    size_t inner = 0;
    for (const auto& [c, w] : layout) inner += w + 3;
    inner -= 3;  // between the outer borders, less their padding
    std::string joined;
    for (const std::string& p : parts) joined += (joined.empty() ? "" : " ") + p;
    if (DisplayWidth(joined) <= inner) {
      footer.push_back(joined);
    } else {
      footer = parts;
      size_t longest = 0;
      for (const std::string& p : parts) longest = std::max(longest, DisplayWidth(p));
      if (longest > inner) layout.back().second += longest - inner;
    }
  }
  const auto rule = [&](const char* left, const char* mid, const char* right, bool joined) {
    std::string line = left;
    for (size_t i = 0; i < layout.size(); ++i) {
      line += Repeat("─", layout[i].second + 2);
      if (i + 1 < layout.size()) line += joined ? mid : "─";
    }
    return line + right + "\n";
  };
  const auto line = [&](const auto& cell_of) {
    std::string text = "│";
    for (const auto& [c, w] : layout) {
      auto [cell, align] = cell_of(c, w);
      text += " " + Pad(Fit(cell, w), w, align) + " │";
    }
    return text + "\n";
  };
  if (layout.empty()) {
    out << parts.front() << "\n";
    return;
  }
  out << rule("┌", "┬", "┐", true);
  out << line([&](size_t c, size_t) { return std::pair<std::string, char>(c == SIZE_MAX ? "…" : columns_[c].name, 'c'); });
  out << line([&](size_t c, size_t) { return std::pair<std::string, char>(c == SIZE_MAX ? "" : columns_[c].type, 'c'); });
  out << rule("├", "┼", "┤", true);
  const auto row_line = [&](const Cells& r) {
    return line([&](size_t c, size_t) {
      if (c == SIZE_MAX) return std::pair<std::string, char>("…", 'c');
      return std::pair<std::string, char>(r[c], right_aligned_[c] ? 'r' : 'l');
    });
  };
  for (const Cells& r : head_) out << row_line(r);
  if (gap) {
    for (int i = 0; i < 3; ++i) out << line([](size_t, size_t) { return std::pair<std::string, char>("·", 'c'); });
  }
  for (const Cells& r : tail_) out << row_line(r);
  out << rule("├", "┴", "┤", true);
  size_t inner = 0;
  for (const auto& [c, w] : layout) inner += w + 3;
  inner -= 3;
  for (const std::string& f : footer) out << "│ " << Pad(f, inner, 'l') << " │\n";
  out << rule("└", "─", "┘", false);
}

}  // namespace skade::cli
