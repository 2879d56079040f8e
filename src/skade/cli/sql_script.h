// SQL text cut into statements at the semicolons that end them: not those inside quoted
// strings or identifiers, comments or dollar-quoted strings. Feeds the SQL shell line by line
// (a statement may span lines) and runs scripts (`skade sql -f`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skade::cli {

struct ScriptStatement {
  std::string sql;  // the statement's text from its first code to before its ';', trimmed
  int line = 1;     // the line it starts on (1-based, over all text added)
};

// Thread-compatible.
class StatementSplitter {
 public:
  // Adds text (any amount: a line, a file); complete statements become available.
  void Add(std::string_view text);
  // The statements completed so far, in order; taken out.
  std::vector<ScriptStatement> TakeComplete();
  // True when what is left is only whitespace and comments (no statement begun).
  bool Idle() const;
  // True inside a quoted string, quoted identifier, block comment or dollar quote.
  bool InQuote() const { return state_ != State::kCode && state_ != State::kLineComment; }
  // What is left (a statement without its ';', e.g. at the end of a file), trimmed; "" when
  // Idle(). Clears it.
  ScriptStatement TakeRest();
  // Forgets what is left (Ctrl-C in the shell).
  void Clear();

 private:
  enum class State { kCode, kSingle, kDouble, kLineComment, kBlockComment, kDollar };

  void Begin();  // code starts here (the statement's line)
  void Finish(size_t end);

  std::string pending_;  // text after the last complete statement
  size_t scanned_ = 0;   // pending_[0, scanned_) is scanned
  State state_ = State::kCode;
  bool backslash_escapes_ = false;  // in an E'…' string
  int block_depth_ = 0;             // nested /* */ comments
  std::string dollar_tag_;          // "$tag$" of the current dollar quote
  bool begun_ = false;              // pending_ holds code, not just blanks and comments
  size_t code_start_ = 0;           // where in pending_ the code begins (comments before it are dropped)
  int line_ = 1;                    // the line at pending_[scanned_]
  int start_line_ = 1;              // the line the pending statement's code starts on
  std::vector<ScriptStatement> complete_;
};

}  // namespace skade::cli
