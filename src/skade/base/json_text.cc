#include "skade/base/json_text.h"

#include <string>

namespace skade {

Status CheckJsonHasNoNul(std::string_view text, std::string_view what) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\0') return Status::InvalidArgument(std::string(what) + " contains a NUL byte");
    if (text[i] != '\\' || i + 1 >= text.size()) continue;
    if (text[i + 1] == 'u' && text.substr(i + 2, 4) == "0000") {
      return Status::InvalidArgument(std::string(what) + " contains a NUL character (\\u0000)");
    }
    ++i;  // the escaped character: "\\u0000" is a backslash and "u0000"
  }
  return Status::Ok();
}

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view t, size_t i) {
  while (i < t.size() && IsJsonSpace(t[i])) ++i;
  return i;
}

// The index after the string starting at t[i] == '"', or npos when it does not end.
size_t SkipString(std::string_view t, size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') {
      ++i;  // the escaped character, whatever it is
    } else if (t[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The index after the value starting at t[i], or npos. Containers are followed by counting
// brackets (no recursion, so no depth limit is needed here); scalars end at the next delimiter.
size_t SkipValue(std::string_view t, size_t i) {
  if (i >= t.size()) return std::string_view::npos;
  if (t[i] == '"') return SkipString(t, i);
  if (t[i] == '{' || t[i] == '[') {
    size_t depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = SkipString(t, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  const size_t start = i;
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !IsJsonSpace(t[i])) ++i;
  return i == start ? std::string_view::npos : i;
}

}  // namespace

std::optional<JsonMemberSplit> SplitJsonMember(std::string_view t, std::string_view key) {
  constexpr size_t npos = std::string_view::npos;
  size_t i = SkipSpace(t, 0);
  if (i >= t.size() || t[i] != '{') return std::nullopt;
  i = SkipSpace(t, i + 1);
  size_t value_begin = npos, value_end = npos;
  if (i < t.size() && t[i] == '}') return std::nullopt;  // empty: no such member
  while (true) {
    if (i >= t.size() || t[i] != '"') return std::nullopt;
    const size_t key_end = SkipString(t, i);
    if (key_end == npos) return std::nullopt;
    const bool match = t.substr(i + 1, key_end - i - 2) == key;
    i = SkipSpace(t, key_end);
    if (i >= t.size() || t[i] != ':') return std::nullopt;
    i = SkipSpace(t, i + 1);
    const size_t end = SkipValue(t, i);
    if (end == npos) return std::nullopt;
    if (match) {
      if (value_begin != npos) return std::nullopt;  // twice: which one a parser keeps is its own business
      value_begin = i;
      value_end = end;
    }
    i = SkipSpace(t, end);
    if (i >= t.size()) return std::nullopt;
    if (t[i] == '}') break;
    if (t[i] != ',') return std::nullopt;
    i = SkipSpace(t, i + 1);
  }
  if (SkipSpace(t, i + 1) != t.size() || value_begin == npos) return std::nullopt;
  JsonMemberSplit out;
  out.value = t.substr(value_begin, value_end - value_begin);
  out.rest.reserve(t.size() - out.value.size() + 4);
  out.rest.append(t.substr(0, value_begin)).append("null").append(t.substr(value_end));
  return out;
}

}  // namespace skade
