// The SQL shell's parts without a terminal: statements cut at their semicolons, keys decoded
// from terminal bytes, line editing, history and the result box.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "skade/cli/line_editor.h"
#include "skade/cli/result_box.h"
#include "skade/cli/sql_script.h"
#include "tests/testing/temp_dir.h"

namespace skade::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> Sqls(const std::vector<ScriptStatement>& statements) {
  std::vector<std::string> out;
  for (const auto& s : statements) out.push_back(s.sql);
  return out;
}

std::vector<std::string> SplitAll(std::string_view text, bool byte_by_byte = false) {
  StatementSplitter splitter;
  std::vector<ScriptStatement> all;
  if (byte_by_byte) {
    for (char c : text) {
      splitter.Add(std::string_view(&c, 1));
      for (auto& s : splitter.TakeComplete()) all.push_back(s);
    }
  } else {
    splitter.Add(text);
    all = splitter.TakeComplete();
  }
  if (ScriptStatement rest = splitter.TakeRest(); !rest.sql.empty()) all.push_back(rest);
  return Sqls(all);
}

TEST(StatementSplitterTest, CutsAtSemicolonsOutsideQuotesAndComments) {
  const std::string script =
      "SELECT 'a;b' AS s;\n"
      "SELECT \"x;y\" FROM t; -- a comment; with a semicolon\n"
      "/* block ; /* nested ; */ still ; */ SELECT 3;\n"
      "SELECT $$dollar ; quoted$$, $tag$ ; $$ ; $tag$;\n"
      "SELECT E'it\\'s;' ;\n"
      "SELECT 'it''s;';;;\n"
      "SELECT $1 + 1";
  const std::vector<std::string> expected = {
      "SELECT 'a;b' AS s",
      "SELECT \"x;y\" FROM t",
      "SELECT 3",
      "SELECT $$dollar ; quoted$$, $tag$ ; $$ ; $tag$",
      "SELECT E'it\\'s;'",
      "SELECT 'it''s;'",
      "SELECT $1 + 1"};
  EXPECT_EQ(SplitAll(script), expected);
  // The same when the text arrives one byte at a time (as typed, or read in blocks).
  EXPECT_EQ(SplitAll(script, true), expected);
}

TEST(StatementSplitterTest, KnowsWhenAStatementIsOpen) {
  StatementSplitter splitter;
  EXPECT_TRUE(splitter.Idle());
  splitter.Add("-- only a comment\n   \n");
  EXPECT_TRUE(splitter.Idle());
  splitter.Add("SELECT 'open;\n");
  EXPECT_FALSE(splitter.Idle());
  EXPECT_TRUE(splitter.InQuote());
  splitter.Add("still open' AS s\n");
  EXPECT_FALSE(splitter.InQuote());
  EXPECT_TRUE(splitter.TakeComplete().empty());
  splitter.Add(";\n");
  std::vector<ScriptStatement> done = splitter.TakeComplete();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].sql, "SELECT 'open;\nstill open' AS s");
  EXPECT_EQ(done[0].line, 3);  // after the comment and the blank line
  EXPECT_TRUE(splitter.Idle());
  splitter.Add("SELECT 1");
  splitter.Clear();
  EXPECT_TRUE(splitter.Idle());
}

TEST(StatementSplitterTest, NumbersTheLinesStatementsStartOn) {
  StatementSplitter splitter;
  splitter.Add("SELECT 1;\n\nSELECT\n2; SELECT 3;\n");
  std::vector<ScriptStatement> done = splitter.TakeComplete();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].line, 1);
  EXPECT_EQ(done[1].line, 3);
  EXPECT_EQ(done[2].line, 4);
}

std::vector<Key> Decode(std::string_view bytes) {
  KeyDecoder decoder;
  std::vector<Key> keys;
  for (char c : bytes) {
    if (auto k = decoder.Feed(static_cast<unsigned char>(c))) keys.push_back(k->key);
  }
  return keys;
}

TEST(KeyDecoderTest, DecodesControlKeysAndEscapeSequences) {
  EXPECT_THAT(Decode("\x1b[A\x1b[B\x1b[C\x1b[D"), ElementsAre(Key::kUp, Key::kDown, Key::kRight, Key::kLeft));
  EXPECT_THAT(Decode("\x1bOH\x1bOF\x1b[1~\x1b[4~\x1b[3~"),
              ElementsAre(Key::kHome, Key::kEnd, Key::kHome, Key::kEnd, Key::kDelete));
  EXPECT_THAT(Decode("\x1b[1;5C\x1b[1;5D\x1b" "b\x1b" "f"),
              ElementsAre(Key::kWordRight, Key::kWordLeft, Key::kWordLeft, Key::kWordRight));
  EXPECT_THAT(Decode("\x01\x05\x0b\x15\x17\x03\x04\r\x7f"),
              ElementsAre(Key::kHome, Key::kEnd, Key::kKillToEnd, Key::kKillToStart, Key::kKillWordBack,
                          Key::kInterrupt, Key::kEndOfInput, Key::kEnter, Key::kBackspace));
  // Bracketed paste marks and unknown sequences are ignored, not typed.
  EXPECT_THAT(Decode("\x1b[200~x\x1b[201~"), ElementsAre(Key::kIgnored, Key::kChar, Key::kIgnored));
}

TEST(KeyDecoderTest, AssemblesUtf8Characters) {
  KeyDecoder decoder;
  std::vector<std::string> chars;
  for (char c : std::string("aé€😀")) {
    if (auto k = decoder.Feed(static_cast<unsigned char>(c))) {
      ASSERT_EQ(k->key, Key::kChar);
      chars.push_back(k->text);
    }
  }
  EXPECT_THAT(chars, ElementsAre("a", "é", "€", "😀"));
  // A broken sequence yields no character.
  EXPECT_THAT(Decode("\xc3" "A"), ElementsAre(Key::kIgnored));
}

KeyPress Char(std::string text) { return KeyPress{Key::kChar, std::move(text)}; }
KeyPress Press(Key key) { return KeyPress{key, {}}; }

TEST(EditLineTest, EditsByCodePointsAndWords) {
  EditLine line;
  for (const char* c : {"S", "E", "L", " ", "é", "x"}) line.Apply(Char(c));
  EXPECT_EQ(line.text(), "SEL éx");
  line.Apply(Press(Key::kLeft));
  line.Apply(Press(Key::kBackspace));  // the é, both bytes
  EXPECT_EQ(line.text(), "SEL x");
  line.Apply(Press(Key::kHome));
  line.Apply(Press(Key::kDelete));
  EXPECT_EQ(line.text(), "EL x");
  line.Apply(Press(Key::kEnd));
  line.Apply(Press(Key::kWordLeft));
  EXPECT_EQ(line.cursor(), 3u);
  line.Apply(Press(Key::kKillToEnd));
  EXPECT_EQ(line.text(), "EL ");
  line.Set("SELECT a FROM t");
  line.Apply(Press(Key::kKillWordBack));
  EXPECT_EQ(line.text(), "SELECT a FROM ");
  line.Apply(Press(Key::kWordLeft));
  line.Apply(Press(Key::kKillToStart));
  EXPECT_EQ(line.text(), "FROM ");
  EXPECT_EQ(line.cursor(), 0u);
}

TEST(HistoryTest, RecallsAndKeepsEntriesInAPrivateFile) {
  testing::TempDir tmp;
  const std::string path = tmp.Path("history");
  History h;
  ASSERT_TRUE(h.Load(path).ok());  // none yet
  h.Add("SELECT 1;", path);
  h.Add("SELECT 'a\\b',\n  2;", path);  // a statement of two lines with a backslash
  h.Add("SELECT 'a\\b',\n  2;", path);  // the same again is not kept twice
  h.Add("", path);
  EXPECT_EQ(h.entries().size(), 2u);
  EXPECT_EQ(h.Older("typed"), "SELECT 'a\\b',\n  2;");
  EXPECT_EQ(h.Older(""), "SELECT 1;");
  EXPECT_EQ(h.Older(""), std::nullopt);
  EXPECT_EQ(h.Newer(), "SELECT 'a\\b',\n  2;");
  EXPECT_EQ(h.Newer(), "typed");  // back to what was being typed
  EXPECT_EQ(h.Newer(), std::nullopt);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  History again;
  ASSERT_TRUE(again.Load(path).ok());
  EXPECT_EQ(again.entries(), h.entries());
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string Draw(ResultBox& box) {
  std::ostringstream out;
  box.Render(out);
  return out.str();
}

TEST(ResultBoxTest, ShowsTypesAlignsNumbersAndKeepsBordersStraight) {
  ResultBox box(BoxOptions{});
  box.Header({{"id", "BIGINT"}, {"name", "VARCHAR"}, {"amount", "DECIMAL(18,2)"}});
  box.Row({"1", "ä wide 漢字", "1.50"});
  box.Row({"1000", std::nullopt, "-20.00"});
  const std::string text = Draw(box);
  std::vector<std::string> lines = Lines(text);
  ASSERT_GE(lines.size(), 8u);
  for (const std::string& l : lines) EXPECT_EQ(DisplayWidth(l), DisplayWidth(lines[0])) << text;
  EXPECT_THAT(text, HasSubstr("bigint"));
  EXPECT_THAT(text, HasSubstr("decimal(18,2)"));
  EXPECT_THAT(text, HasSubstr("│      1 │ ä wide 漢字 │          1.50 │"));  // numbers to the right
  EXPECT_THAT(text, HasSubstr("│ NULL"));
  EXPECT_THAT(text, HasSubstr("2 rows"));
}

TEST(ResultBoxTest, ShowsTheFirstAndLastRowsOfALongResult) {
  BoxOptions options;
  options.max_rows = 10;
  ResultBox box(options);
  box.Header({{"n", "INTEGER"}});
  for (int i = 0; i < 1000; ++i) box.Row({std::to_string(i)});
  const std::string text = Draw(box);
  EXPECT_THAT(text, HasSubstr("│ 1000 rows  │"));
  for (const char* shown : {"│ +0 │", "│ +4 │", "│ +995 │", "│ +999 │"}) {
    EXPECT_THAT(text, ContainsRegex(shown)) << text;
  }
  EXPECT_THAT(text, Not(HasSubstr(" 5 │")));
  EXPECT_THAT(text, Not(HasSubstr(" 994 │")));
  EXPECT_THAT(text, HasSubstr("│ (10 shown) │"));  // the footer wraps rather than widen the column
  EXPECT_THAT(text, HasSubstr("·"));
  std::vector<std::string> lines = Lines(text);
  for (const std::string& l : lines) EXPECT_EQ(DisplayWidth(l), DisplayWidth(lines[0])) << text;

  // Exactly max_rows rows: all shown, no gap.
  ResultBox exact(options);
  exact.Header({{"n", "INTEGER"}});
  for (int i = 0; i < 10; ++i) exact.Row({std::to_string(i)});
  EXPECT_THAT(Draw(exact), Not(HasSubstr("shown")));
  EXPECT_THAT(Draw(exact), Not(HasSubstr("·")));
}

TEST(ResultBoxTest, ElidesMiddleColumnsThatDoNotFitTheWidth) {
  BoxOptions options;
  options.max_width = 40;
  ResultBox box(options);
  std::vector<engine::ColumnType> columns;
  engine::TextRow row;
  for (int i = 0; i < 12; ++i) {
    columns.push_back({"column_" + std::to_string(i), "VARCHAR"});
    row.push_back("value_" + std::to_string(i));
  }
  box.Header(columns);
  box.Row(row);
  const std::string text = Draw(box);
  std::vector<std::string> lines = Lines(text);
  for (const std::string& l : lines) EXPECT_LE(DisplayWidth(l), 40u) << text;
  for (const std::string& l : lines) EXPECT_EQ(DisplayWidth(l), DisplayWidth(lines[0])) << text;
  EXPECT_THAT(text, HasSubstr("column_0"));
  EXPECT_THAT(text, HasSubstr("column_11"));
  EXPECT_THAT(text, Not(HasSubstr("column_5")));
  EXPECT_THAT(text, HasSubstr("12 columns"));
}

TEST(ResultBoxTest, ValuesCannotDriveTheTerminal) {
  // An escape sequence in a value (clear screen, retitle) is shown, not obeyed; so are bytes
  // that are not UTF-8 and C1 controls.
  EXPECT_EQ(TerminalText("a\x1b[2Jb"), "a\\x1B[2Jb");
  EXPECT_EQ(TerminalText("x\ny\tz\x07"), "x\\ny\\tz\\x07");
  EXPECT_EQ(TerminalText("\xff\xc3"), "\\xFF\\xC3");
  EXPECT_EQ(TerminalText("\xc2\x9b"), "\\xC2\\x9B");  // U+009B, the 8-bit CSI
  EXPECT_EQ(TerminalText("é漢😀"), "é漢😀");
  ResultBox box(BoxOptions{});
  box.Header({{"v\x1b]0;title\x07", "VARCHAR"}});
  box.Row({"\x1b[31mred"});
  const std::string text = Draw(box);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_EQ(DisplayWidth("漢字"), 4u);
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);  // e + combining acute
}

TEST(ResultBoxTest, CutsLongValues) {
  ResultBox box(BoxOptions{});
  box.Header({{"s", "VARCHAR"}});
  box.Row({std::string(500, 'x')});
  const std::string text = Draw(box);
  EXPECT_THAT(text, HasSubstr(std::string(BoxOptions::kMaxCellWidth - 1, 'x') + "…"));
  EXPECT_THAT(text, Not(HasSubstr(std::string(BoxOptions::kMaxCellWidth, 'x'))));
}

}  // namespace
}  // namespace skade::cli
