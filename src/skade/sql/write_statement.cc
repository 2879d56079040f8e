#include "skade/sql/write_statement.h"

#include <cctype>

namespace skade::sql {
namespace {

struct Token {
  enum class Type { kWord, kQuoted, kString, kSymbol, kEnd };
  Type type = Type::kEnd;
  std::string text;  // word upper-cased; quoted identifier unquoted; symbol as is
  std::string raw;   // the word as written
  size_t begin = 0;
  size_t end = 0;
};

// A small SQL lexer: words, "quoted identifiers", 'strings', symbols; skips whitespace and
// -- / /* */ comments.
class Lexer {
 public:
  explicit Lexer(std::string_view sql) : sql_(sql) {}

  Result<Token> Next() {
    SkipSpace();
    Token t;
    t.begin = pos_;
    if (pos_ >= sql_.size()) {
      t.end = pos_;
      return t;
    }
    char c = sql_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < sql_.size() && (std::isalnum(static_cast<unsigned char>(sql_[pos_])) || sql_[pos_] == '_' ||
                                    sql_[pos_] == '$')) {
        ++pos_;
      }
      t.type = Token::Type::kWord;
      t.raw = std::string(sql_.substr(t.begin, pos_ - t.begin));
      for (char ch : t.raw) t.text += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (c == '"' || c == '\'') {
      ++pos_;
      std::string text;
      while (true) {
        if (pos_ >= sql_.size()) return Status::InvalidArgument("unterminated quote in SQL");
        if (sql_[pos_] == c) {
          if (pos_ + 1 < sql_.size() && sql_[pos_ + 1] == c) {
            text += c;
            pos_ += 2;
            continue;
          }
          ++pos_;
          break;
        }
        text += sql_[pos_++];
      }
      t.type = c == '"' ? Token::Type::kQuoted : Token::Type::kString;
      t.text = text;
      t.raw = text;
    } else {
      ++pos_;
      t.type = Token::Type::kSymbol;
      t.text = std::string(1, c);
    }
    t.end = pos_;
    return t;
  }

  Result<Token> Peek() {
    size_t saved = pos_;
    auto t = Next();
    pos_ = saved;
    return t;
  }

  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }
  std::string_view sql() const { return sql_; }

 private:
  void SkipSpace() {
    while (pos_ < sql_.size()) {
      if (std::isspace(static_cast<unsigned char>(sql_[pos_]))) {
        ++pos_;
      } else if (sql_.substr(pos_, 2) == "--") {
        while (pos_ < sql_.size() && sql_[pos_] != '\n') ++pos_;
      } else if (sql_.substr(pos_, 2) == "/*") {
        size_t close = sql_.find("*/", pos_ + 2);
        pos_ = close == std::string_view::npos ? sql_.size() : close + 2;
      } else {
        break;
      }
    }
  }
  std::string_view sql_;
  size_t pos_ = 0;
};

bool IsWord(const Token& t, std::string_view w) { return t.type == Token::Type::kWord && t.text == w; }
bool IsSymbol(const Token& t, char c) { return t.type == Token::Type::kSymbol && t.text[0] == c; }

Status Expect(Lexer& lex, std::string_view word) {
  SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
  if (!IsWord(t, word)) return Status::InvalidArgument("expected " + std::string(word) + " in SQL");
  return Status::Ok();
}

// Consumes the optional words in order if present (e.g. IF NOT EXISTS).
Result<bool> Optional(Lexer& lex, std::initializer_list<std::string_view> words) {
  size_t saved = lex.pos();
  for (std::string_view w : words) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (!IsWord(t, w)) {
      lex.set_pos(saved);
      return false;
    }
  }
  return true;
}

// A dotted name of 1–3 identifiers.
Result<std::vector<std::string>> ParseName(Lexer& lex) {
  std::vector<std::string> parts;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (t.type == Token::Type::kWord) {
      parts.push_back(t.raw);
    } else if (t.type == Token::Type::kQuoted) {
      parts.push_back(t.text);
    } else {
      return Status::InvalidArgument("expected a table name in SQL");
    }
    SKADE_ASSIGN_OR_RETURN(Token dot, lex.Peek());
    if (!IsSymbol(dot, '.')) break;
    SKADE_RETURN_IF_ERROR(lex.Next().status());
  }
  if (parts.size() > 3) return Status::InvalidArgument("a table name has at most 3 parts (catalog.schema.table)");
  return parts;
}

// The text from the lexer's position to the end, without a trailing ';' and whitespace.
Result<std::string> Rest(Lexer& lex) {
  std::string_view rest = lex.sql().substr(lex.pos());
  // A second statement after ';' is refused: scan tokens for a top-level ';' before the end.
  Lexer scan(rest);
  size_t cut = rest.size();
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, scan.Next());
    if (t.type == Token::Type::kEnd) break;
    if (IsSymbol(t, ';')) {
      SKADE_ASSIGN_OR_RETURN(Token after, scan.Next());
      if (after.type != Token::Type::kEnd) return Status::InvalidArgument("only one SQL statement per request");
      cut = t.begin;
      break;
    }
  }
  std::string out(rest.substr(0, cut));
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  return out;
}

// Splits `text` at top-level occurrences of `sep` (outside parentheses and quotes).
Result<std::vector<std::string>> SplitTopLevel(std::string_view text, char sep) {
  std::vector<std::string> out;
  Lexer lex(text);
  int depth = 0;
  size_t start = 0;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (t.type == Token::Type::kEnd) break;
    if (IsSymbol(t, '(')) ++depth;
    if (IsSymbol(t, ')')) --depth;
    if (depth == 0 && IsSymbol(t, sep)) {
      out.emplace_back(text.substr(start, t.begin - start));
      start = t.end;
    }
  }
  out.emplace_back(text.substr(start));
  return out;
}

// Finds the top-level WHERE keyword in `text`; npos if none.
Result<std::pair<size_t, size_t>> FindTopLevelWhere(std::string_view text) {
  Lexer lex(text);
  int depth = 0;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (t.type == Token::Type::kEnd) return std::pair<size_t, size_t>{std::string_view::npos, 0};
    if (IsSymbol(t, '(')) ++depth;
    if (IsSymbol(t, ')')) --depth;
    if (depth == 0 && IsWord(t, "WHERE")) return std::pair<size_t, size_t>{t.begin, t.end};
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

Result<WriteStatement> ParseInsert(Lexer& lex) {
  WriteStatement w;
  w.kind = WriteStatement::Kind::kInsert;
  SKADE_RETURN_IF_ERROR(Expect(lex, "INTO"));
  SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
  SKADE_ASSIGN_OR_RETURN(Token t, lex.Peek());
  if (IsSymbol(t, '(')) {
    // A column list, unless the parenthesis opens the query itself: "(SELECT …)".
    size_t saved = lex.pos();
    SKADE_RETURN_IF_ERROR(lex.Next().status());
    SKADE_ASSIGN_OR_RETURN(Token first, lex.Peek());
    if (IsWord(first, "SELECT") || IsWord(first, "WITH") || IsWord(first, "VALUES") || IsWord(first, "FROM")) {
      lex.set_pos(saved);
    } else {
      while (true) {
        SKADE_ASSIGN_OR_RETURN(Token c, lex.Next());
        if (c.type != Token::Type::kWord && c.type != Token::Type::kQuoted) {
          return Status::InvalidArgument("expected a column name in the INSERT column list");
        }
        w.columns.push_back(c.type == Token::Type::kWord ? c.raw : c.text);
        SKADE_ASSIGN_OR_RETURN(Token sep, lex.Next());
        if (IsSymbol(sep, ')')) break;
        if (!IsSymbol(sep, ',')) return Status::InvalidArgument("expected ',' or ')' in the INSERT column list");
      }
    }
  }
  SKADE_ASSIGN_OR_RETURN(w.query, Rest(lex));
  if (w.query.empty()) return Status::InvalidArgument("INSERT needs a SELECT or VALUES source");
  return w;
}

Result<WriteStatement> ParseDelete(Lexer& lex) {
  WriteStatement w;
  w.kind = WriteStatement::Kind::kDelete;
  SKADE_RETURN_IF_ERROR(Expect(lex, "FROM"));
  SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
  SKADE_ASSIGN_OR_RETURN(std::string rest, Rest(lex));
  if (rest.empty()) return w;
  Lexer tail(rest);
  SKADE_ASSIGN_OR_RETURN(Token t, tail.Next());
  if (!IsWord(t, "WHERE")) return Status::InvalidArgument("expected WHERE after DELETE FROM <table>");
  w.where = Trim(rest.substr(t.end));
  if (w.where.empty()) return Status::InvalidArgument("empty WHERE clause");
  return w;
}

Result<WriteStatement> ParseUpdate(Lexer& lex) {
  WriteStatement w;
  w.kind = WriteStatement::Kind::kUpdate;
  SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
  SKADE_RETURN_IF_ERROR(Expect(lex, "SET"));
  SKADE_ASSIGN_OR_RETURN(std::string rest, Rest(lex));
  SKADE_ASSIGN_OR_RETURN(auto where, FindTopLevelWhere(rest));
  std::string sets = where.first == std::string_view::npos ? rest : rest.substr(0, where.first);
  if (where.first != std::string_view::npos) {
    w.where = Trim(rest.substr(where.second));
    if (w.where.empty()) return Status::InvalidArgument("empty WHERE clause");
  }
  SKADE_ASSIGN_OR_RETURN(auto items, SplitTopLevel(sets, ','));
  for (const std::string& item : items) {
    SKADE_ASSIGN_OR_RETURN(auto sides, SplitTopLevel(item, '='));
    if (sides.size() < 2) return Status::InvalidArgument("expected column = expression in UPDATE … SET");
    Lexer col(sides[0]);
    SKADE_ASSIGN_OR_RETURN(Token c, col.Next());
    SKADE_ASSIGN_OR_RETURN(Token end, col.Next());
    if ((c.type != Token::Type::kWord && c.type != Token::Type::kQuoted) || end.type != Token::Type::kEnd) {
      return Status::InvalidArgument("expected a column name before '=' in UPDATE … SET");
    }
    // The expression is everything after the first top-level '=' (it may compare with '=').
    size_t eq = item.find('=', sides[0].size());
    std::string expr = Trim(item.substr(eq + 1));
    if (expr.empty()) return Status::InvalidArgument("missing expression in UPDATE … SET");
    w.assignments.emplace_back(c.type == Token::Type::kWord ? c.raw : c.text, expr);
  }
  return w;
}

Result<WriteStatement> ParseCreate(Lexer& lex, bool or_replace) {
  SKADE_ASSIGN_OR_RETURN(Token what, lex.Next());
  WriteStatement w;
  w.or_replace = or_replace;
  if (IsWord(what, "SCHEMA")) {
    w.kind = WriteStatement::Kind::kCreateSchema;
    SKADE_ASSIGN_OR_RETURN(w.if_not_exists, Optional(lex, {"IF", "NOT", "EXISTS"}));
    SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
    SKADE_ASSIGN_OR_RETURN(std::string rest, Rest(lex));
    if (!rest.empty()) return Status::InvalidArgument("unexpected text after CREATE SCHEMA <name>");
    return w;
  }
  w.kind = WriteStatement::Kind::kCreateTable;
  SKADE_ASSIGN_OR_RETURN(w.if_not_exists, Optional(lex, {"IF", "NOT", "EXISTS"}));
  SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
  SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
  if (IsWord(t, "AS")) {
    SKADE_ASSIGN_OR_RETURN(w.query, Rest(lex));
    if (w.query.empty()) return Status::InvalidArgument("CREATE TABLE … AS needs a query");
    return w;
  }
  if (!IsSymbol(t, '(')) return Status::InvalidArgument("expected '(' or AS after CREATE TABLE <name>");
  SKADE_ASSIGN_OR_RETURN(std::string rest, Rest(lex));
  // The definitions end at the matching ')'.
  Lexer body(rest);
  int depth = 1;
  size_t close = std::string::npos;
  while (depth > 0) {
    SKADE_ASSIGN_OR_RETURN(Token b, body.Next());
    if (b.type == Token::Type::kEnd) return Status::InvalidArgument("unbalanced parentheses in CREATE TABLE");
    if (IsSymbol(b, '(')) ++depth;
    if (IsSymbol(b, ')') && --depth == 0) close = b.begin;
  }
  w.column_definitions = Trim(rest.substr(0, close));
  if (!Trim(rest.substr(close + 1)).empty()) {
    return Status::InvalidArgument("unexpected text after the CREATE TABLE column definitions");
  }
  return w;
}

Result<WriteStatement> ParseDrop(Lexer& lex) {
  SKADE_ASSIGN_OR_RETURN(Token what, lex.Next());
  WriteStatement w;
  w.kind = IsWord(what, "SCHEMA") ? WriteStatement::Kind::kDropSchema : WriteStatement::Kind::kDropTable;
  SKADE_ASSIGN_OR_RETURN(w.if_exists, Optional(lex, {"IF", "EXISTS"}));
  SKADE_ASSIGN_OR_RETURN(w.target, ParseName(lex));
  SKADE_ASSIGN_OR_RETURN(std::string rest, Rest(lex));
  if (!rest.empty()) return Status::InvalidArgument("unexpected text after DROP <name>");
  return w;
}

}  // namespace

Result<std::optional<WriteStatement>> ParseWriteStatement(std::string_view sql) {
  Lexer lex(sql);
  SKADE_ASSIGN_OR_RETURN(Token first, lex.Next());
  Result<WriteStatement> parsed = Status::Internal("unset");
  if (IsWord(first, "INSERT")) {
    parsed = ParseInsert(lex);
  } else if (IsWord(first, "DELETE")) {
    parsed = ParseDelete(lex);
  } else if (IsWord(first, "UPDATE")) {
    parsed = ParseUpdate(lex);
  } else if (IsWord(first, "CREATE") || IsWord(first, "DROP")) {
    bool create = IsWord(first, "CREATE");
    bool or_replace = false;
    if (create) {
      SKADE_ASSIGN_OR_RETURN(or_replace, Optional(lex, {"OR", "REPLACE"}));
    }
    SKADE_ASSIGN_OR_RETURN(Token what, lex.Peek());
    if (!IsWord(what, "TABLE") && !IsWord(what, "SCHEMA")) return std::optional<WriteStatement>();  // views, macros…: not ours
    parsed = create ? ParseCreate(lex, or_replace) : ParseDrop(lex);
  } else {
    return std::optional<WriteStatement>();
  }
  if (!parsed.ok()) return parsed.status();
  return std::optional<WriteStatement>(std::move(*parsed));
}

Result<int64_t> CountParameters(std::string_view sql) {
  Lexer lex(sql);
  int64_t n = 0;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (t.type == Token::Type::kEnd) return n;
    if (IsSymbol(t, '?')) ++n;
  }
}

Result<std::string> BindParameters(std::string_view sql, const std::vector<std::string>& literals) {
  Lexer lex(sql);
  std::string out;
  size_t copied = 0, used = 0;
  while (true) {
    SKADE_ASSIGN_OR_RETURN(Token t, lex.Next());
    if (t.type == Token::Type::kEnd) break;
    if (!IsSymbol(t, '?')) continue;
    if (used == literals.size()) return Status::InvalidArgument("more parameter markers than parameter values");
    out.append(sql.substr(copied, t.begin - copied));
    out += literals[used++];
    copied = t.end;
  }
  if (used != literals.size()) {
    return Status::InvalidArgument("the statement has " + std::to_string(used) + " parameters; got " +
                                   std::to_string(literals.size()) + " values");
  }
  out.append(sql.substr(copied));
  return out;
}

}  // namespace skade::sql
