#include "skade/cli/sql_script.h"

#include <utility>

namespace skade::cli {
namespace {

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (static_cast<unsigned char>(c) & 0x80) != 0;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r' || s[b] == '\f')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r' || s[e - 1] == '\f')) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

// The dollar-quote tag starting at s[i] ('$'): "$$" or "$name$" where name is an identifier
// not starting with a digit (a "$1" parameter is no tag). Empty when none is complete there.
std::string DollarTag(std::string_view s, size_t i) {
  size_t j = i + 1;
  if (j < s.size() && s[j] >= '0' && s[j] <= '9') return "";
  while (j < s.size() && IsIdentifierChar(s[j])) ++j;
  if (j < s.size() && s[j] == '$') return std::string(s.substr(i, j + 1 - i));
  return "";
}

}  // namespace

void StatementSplitter::Add(std::string_view text) {
  pending_.append(text);
  // A construct whose opening is split across two Adds ("-" then "-", "$ta" then "g$") is
  // re-read once the next text arrives: scanning stops before an ambiguous last character.
  while (scanned_ < pending_.size()) {
    const size_t i = scanned_;
    const char c = pending_[i];
    const bool last = i + 1 == pending_.size();
    switch (state_) {
      case State::kCode:
        if (c == '\'') {
          backslash_escapes_ = i > 0 && (pending_[i - 1] == 'e' || pending_[i - 1] == 'E') &&
                               (i < 2 || !IsIdentifierChar(pending_[i - 2]));
          state_ = State::kSingle;
          Begin();
        } else if (c == '"') {
          state_ = State::kDouble;
          Begin();
        } else if (c == '-' || c == '/') {
          if (last) return;
          if (c == '-' && pending_[i + 1] == '-') {
            state_ = State::kLineComment;
            ++scanned_;
          } else if (c == '/' && pending_[i + 1] == '*') {
            state_ = State::kBlockComment;
            block_depth_ = 1;
            ++scanned_;
          } else {
            Begin();
          }
        } else if (c == '$') {
          const std::string tag = DollarTag(pending_, i);
          if (tag.empty()) {
            // Maybe a tag whose end has not arrived yet.
            size_t j = i + 1;
            while (j < pending_.size() && IsIdentifierChar(pending_[j])) ++j;
            if (j == pending_.size() && !(i + 1 < pending_.size() && pending_[i + 1] >= '0' && pending_[i + 1] <= '9')) {
              return;
            }
            Begin();
          } else {
            Begin();
            dollar_tag_ = tag;
            state_ = State::kDollar;
            scanned_ += tag.size() - 1;
          }
        } else if (c == ';') {
          ++scanned_;
          Finish(i);
          continue;
        } else if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')) {
          Begin();
        }
        break;
      case State::kSingle:
        if (backslash_escapes_ && c == '\\') {
          if (last) return;
          ++scanned_;
          if (pending_[i + 1] == '\n') ++line_;
        } else if (c == '\'') {
          // '' inside a string is a quote; decide once the next character is known.
          if (last) return;
          if (pending_[i + 1] == '\'') {
            ++scanned_;
          } else {
            state_ = State::kCode;
          }
        }
        break;
      case State::kDouble:
        if (c == '"') {
          if (last) return;
          if (pending_[i + 1] == '"') {
            ++scanned_;
          } else {
            state_ = State::kCode;
          }
        }
        break;
      case State::kLineComment:
        if (c == '\n') state_ = State::kCode;
        break;
      case State::kBlockComment:
        if (last && (c == '*' || c == '/')) return;
        if (c == '*' && pending_[i + 1] == '/') {
          ++scanned_;
          if (--block_depth_ == 0) state_ = State::kCode;
        } else if (c == '/' && pending_[i + 1] == '*') {
          ++scanned_;
          ++block_depth_;
        }
        break;
      case State::kDollar:
        if (c == '$') {
          if (pending_.size() - i < dollar_tag_.size()) return;
          if (pending_.compare(i, dollar_tag_.size(), dollar_tag_) == 0) {
            scanned_ += dollar_tag_.size() - 1;
            state_ = State::kCode;
          }
        }
        break;
    }
    if (c == '\n') ++line_;
    ++scanned_;
  }
}

void StatementSplitter::Begin() {
  if (begun_) return;
  begun_ = true;
  start_line_ = line_;
  code_start_ = scanned_;
}

void StatementSplitter::Finish(size_t end) {
  // A lone ';' (or one after comments) ends nothing worth running.
  if (begun_) {
    std::string sql = Trim(std::string_view(pending_).substr(code_start_, end - code_start_));
    complete_.push_back(ScriptStatement{std::move(sql), start_line_});
  }
  pending_.erase(0, scanned_);
  scanned_ = 0;
  begun_ = false;
  code_start_ = 0;
  start_line_ = line_;
}

std::vector<ScriptStatement> StatementSplitter::TakeComplete() { return std::exchange(complete_, {}); }

bool StatementSplitter::Idle() const {
  if (begun_ || state_ == State::kSingle || state_ == State::kDouble || state_ == State::kDollar) return false;
  // Unscanned characters held back (a '-' that may open a comment) count as code unless blank.
  for (size_t i = scanned_; i < pending_.size(); ++i) {
    const char c = pending_[i];
    if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')) return false;
  }
  return true;
}

ScriptStatement StatementSplitter::TakeRest() {
  ScriptStatement rest;
  if (!Idle()) rest = ScriptStatement{Trim(std::string_view(pending_).substr(begun_ ? code_start_ : 0)), start_line_};
  Clear();
  return rest;
}

void StatementSplitter::Clear() {
  pending_.clear();
  scanned_ = 0;
  state_ = State::kCode;
  block_depth_ = 0;
  dollar_tag_.clear();
  begun_ = false;
  code_start_ = 0;
  start_line_ = line_;
}

}  // namespace skade::cli
