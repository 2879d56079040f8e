// Reading a line at a terminal with editing and history, for the SQL shell: the cursor keys,
// Home/End, word moves, kills (Ctrl-K/U/W), history (Up/Down, kept in a file), Ctrl-C to drop
// the line, Ctrl-D to end. The editing state and the key decoding are plain classes (tested
// without a terminal); LineEditor drives them on a terminal in raw mode.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::cli {

enum class Key {
  kChar,        // a printable character (KeyPress::text, one UTF-8 code point)
  kEnter,
  kBackspace,
  kDelete,      // the character under the cursor (Delete; Ctrl-D on a non-empty line)
  kLeft,
  kRight,
  kWordLeft,    // Alt-b, Ctrl-Left
  kWordRight,   // Alt-f, Ctrl-Right
  kHome,        // Home, Ctrl-A
  kEnd,         // End, Ctrl-E
  kUp,          // older history, Ctrl-P
  kDown,        // newer history, Ctrl-N
  kKillToEnd,   // Ctrl-K
  kKillToStart, // Ctrl-U
  kKillWordBack,// Ctrl-W, Alt-Backspace
  kInterrupt,   // Ctrl-C
  kEndOfInput,  // Ctrl-D
  kClearScreen, // Ctrl-L
  kIgnored,     // a key or sequence with no meaning here
};

struct KeyPress {
  Key key = Key::kIgnored;
  std::string text;  // for kChar
};

// Turns terminal bytes into keys: UTF-8 characters, control keys and the escape sequences of
// xterm-like terminals (CSI and SS3). Thread-compatible.
class KeyDecoder {
 public:
  // The key `byte` completes, if any.
  std::optional<KeyPress> Feed(unsigned char byte);
  // True when bytes of an unfinished sequence are held (a lone ESC waits for its next byte).
  bool pending() const { return !pending_.empty(); }

 private:
  std::optional<KeyPress> Escape();
  std::string pending_;
};

// A line being edited: UTF-8 text and a cursor between code points. Thread-compatible.
class EditLine {
 public:
  const std::string& text() const { return text_; }
  size_t cursor() const { return cursor_; }  // a byte offset into text()
  void Set(std::string text);                // cursor at the end
  void Apply(const KeyPress& key);           // the editing keys; others change nothing

 private:
  size_t PreviousBoundary(size_t at) const;
  size_t NextBoundary(size_t at) const;
  size_t WordStartBefore(size_t at) const;
  size_t WordEndAfter(size_t at) const;

  std::string text_;
  size_t cursor_ = 0;
};

// Entries recalled with Up/Down, oldest first, at most kMaxEntries. Thread-compatible.
class History {
 public:
  static constexpr size_t kMaxEntries = 1000;

  // Reads `path` (one entry per line, "\n" and "\\" escaped); a missing file is no history.
  Status Load(const std::string& path);
  // Adds `entry` (not when empty or equal to the newest) and appends it to `path` when not
  // empty (the file is created 0600: entries may hold literals worth keeping private).
  void Add(std::string_view entry, const std::string& path);
  // Recall: older/newer than the one shown; `current` is kept as the line being typed.
  std::optional<std::string> Older(const std::string& current);
  std::optional<std::string> Newer();
  void ResetRecall();
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;
  size_t recall_ = 0;      // entries_.size() = the line being typed
  std::string typed_;      // the line being typed when recall started
};

// A terminal line reader. Thread-compatible; one per terminal.
class LineEditor {
 public:
  // kInvalidArgument when `in_fd` is not a terminal.
  static Result<std::unique_ptr<LineEditor>> Open(int in_fd, int out_fd, std::string history_path);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  enum class Outcome { kLine, kInterrupted, kEnd };
  struct Read {
    Outcome outcome = Outcome::kEnd;
    std::string line;
  };
  // Shows `prompt` and reads one line; the terminal is in raw mode only meanwhile, so Ctrl-C
  // while a statement runs raises SIGINT as usual. kEnd at Ctrl-D on an empty line or at the
  // end of input.
  Read ReadLine(std::string_view prompt);
  void AddHistory(std::string_view entry);

 private:
  LineEditor(int in_fd, int out_fd, std::string history_path);
  void Refresh(std::string_view prompt, const EditLine& line);
  size_t Columns() const;
  void Write(std::string_view bytes);

  int in_fd_;
  int out_fd_;
  std::string history_path_;
  History history_;
  KeyDecoder decoder_;
};

}  // namespace skade::cli
