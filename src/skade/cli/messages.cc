#include "skade/cli/messages.h"

#include <algorithm>
#include <cctype>

namespace skade::cli {
namespace {

constexpr std::string_view kInternalPrefix = "__skade_";

bool ShowsInternals(std::string_view line) {
  return line.find(kInternalPrefix) != std::string_view::npos || line.find("/*skade-") != std::string_view::npos;
}

bool IsCaretLine(std::string_view line) {
  return !line.empty() && line.find_first_not_of(" \t^") == std::string_view::npos;
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `line` with every internal name's qualifier ("__skade_src.id" → "id") removed; an internal
// name standing alone becomes "the input" (the rows skade wraps as __skade_src, __skade_input…).
std::string WithoutInternalNames(std::string_view line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    const bool starts_word = i == 0 || !IsIdentifierChar(line[i - 1]);
    if (!starts_word || line.substr(i, kInternalPrefix.size()) != kInternalPrefix) {
      out += line[i++];
      continue;
    }
    size_t end = i;
    while (end < line.size() && IsIdentifierChar(line[end])) ++end;
    if (end < line.size() && line[end] == '.') {
      i = end + 1;  // a qualifier: the column after it says it all
    } else {
      out += "the input";
      i = end;
    }
  }
  return out;
}

// "Candidate bindings: "a", "__skade_pos"" keeps the user's names; empty when none are left.
std::string CandidateBindings(std::string_view line) {
  constexpr std::string_view kLabel = "Candidate bindings: ";
  std::vector<std::string> kept;
  size_t pos = kLabel.size();
  while (pos < line.size()) {
    size_t comma = line.find(", ", pos);
    std::string_view item = line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!ShowsInternals(item) && !item.empty()) kept.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pos = comma + 2;
  }
  if (kept.empty()) return "";
  std::string out(kLabel);
  for (size_t i = 0; i < kept.size(); ++i) out += (i ? ", " : "") + kept[i];
  return out;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

}  // namespace

std::string PublicMessage(std::string_view message) {
  if (!ShowsInternals(message)) return std::string(message);
  const std::vector<std::string_view> lines = Lines(message);
  std::vector<std::string> kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.rfind("LINE ", 0) == 0 && ShowsInternals(line)) {
      if (i + 1 < lines.size() && IsCaretLine(lines[i + 1])) ++i;
      continue;
    }
    if (line.rfind("Candidate bindings: ", 0) == 0) {
      std::string candidates = CandidateBindings(line);
      if (!candidates.empty()) kept.push_back(std::move(candidates));
      continue;
    }
    kept.push_back(WithoutInternalNames(line));
  }
  while (!kept.empty() && kept.back().find_first_not_of(" \t") == std::string::npos) kept.pop_back();
  std::string out;
  for (size_t i = 0; i < kept.size(); ++i) out += (i ? "\n" : "") + kept[i];
  return out;
}

std::string ErrorLine(const Status& status) { return "skade: " + PublicMessage(status.ToString()); }

size_t EditDistance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a's first i and b's first j characters.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> NearestName(std::string_view word, const std::vector<std::string>& names) {
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& name : names) {
    const size_t distance = EditDistance(word, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace skade::cli
