#include "skade/cli/line_editor.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <utility>

#include "skade/cli/result_box.h"

namespace skade::cli {
namespace {

bool IsWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

// The number of bytes of a UTF-8 sequence its lead byte announces (0 for no lead byte).
size_t SequenceLength(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

KeyPress Of(Key key) { return KeyPress{key, {}}; }

std::string EscapeEntry(std::string_view entry) {
  std::string out;
  for (char c : entry) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

std::string UnescapeEntry(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) {
      const char next = line[++i];
      out += next == 'n' ? '\n' : next == 'r' ? '\r' : next;
    } else {
      out += line[i];
    }
  }
  return out;
}

// Restores a terminal's settings when the read ends.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    // No echo, no line buffering, no signals from Ctrl-C/Ctrl-Z (they are keys here), no
    // flow control, CR not turned into NL; output processing stays (NL still returns).
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL | INLCR | BRKINT | ISTRIP);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    // TCSADRAIN keeps what was typed ahead or pasted (the next lines of a statement).
    active_ = tcsetattr(fd_, TCSADRAIN, &raw) == 0;
  }
  ~RawMode() {
    if (active_) tcsetattr(fd_, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

}  // namespace

std::optional<KeyPress> KeyDecoder::Feed(unsigned char byte) {
  if (pending_.empty()) {
    switch (byte) {
      case 0x1B: pending_ = "\x1b"; return std::nullopt;
      case '\r': case '\n': return Of(Key::kEnter);
      case 0x7F: case 0x08: return Of(Key::kBackspace);
      case 0x01: return Of(Key::kHome);
      case 0x05: return Of(Key::kEnd);
      case 0x02: return Of(Key::kLeft);
      case 0x06: return Of(Key::kRight);
      case 0x10: return Of(Key::kUp);
      case 0x0E: return Of(Key::kDown);
      case 0x0B: return Of(Key::kKillToEnd);
      case 0x15: return Of(Key::kKillToStart);
      case 0x17: return Of(Key::kKillWordBack);
      case 0x03: return Of(Key::kInterrupt);
      case 0x04: return Of(Key::kEndOfInput);
      case 0x0C: return Of(Key::kClearScreen);
      case '\t': return KeyPress{Key::kChar, "\t"};
      default: break;
    }
    if (byte < 0x20) return Of(Key::kIgnored);
    if (byte < 0x80) return KeyPress{Key::kChar, std::string(1, static_cast<char>(byte))};
    if (SequenceLength(byte) == 0) return Of(Key::kIgnored);
    pending_ = std::string(1, static_cast<char>(byte));
    return std::nullopt;
  }
  pending_ += static_cast<char>(byte);
  if (pending_[0] == '\x1b') return Escape();
  // A UTF-8 character.
  if ((byte & 0xC0) != 0x80) {
    pending_.clear();
    return Of(Key::kIgnored);
  }
  if (pending_.size() < SequenceLength(static_cast<unsigned char>(pending_[0]))) return std::nullopt;
  return KeyPress{Key::kChar, std::exchange(pending_, {})};
}

std::optional<KeyPress> KeyDecoder::Escape() {
  const std::string& p = pending_;
  const auto done = [this](Key key) {
    pending_.clear();
    return std::optional<KeyPress>(Of(key));
  };
  if (p.size() > 16) return done(Key::kIgnored);
  if (p.size() == 2) {
    switch (p[1]) {
      case '[': case 'O': return std::nullopt;
      case 'b': return done(Key::kWordLeft);
      case 'f': return done(Key::kWordRight);
      case 0x7F: case 0x08: return done(Key::kKillWordBack);
      default: return done(Key::kIgnored);
    }
  }
  const char last = p.back();
  if (p[1] == 'O') {
    switch (last) {
      case 'A': return done(Key::kUp);
      case 'B': return done(Key::kDown);
      case 'C': return done(Key::kRight);
      case 'D': return done(Key::kLeft);
      case 'H': return done(Key::kHome);
      case 'F': return done(Key::kEnd);
      default: return done(Key::kIgnored);
    }
  }
  // CSI: parameter bytes, then one final byte in 0x40–0x7E.
  if (static_cast<unsigned char>(last) < 0x40 || static_cast<unsigned char>(last) > 0x7E) return std::nullopt;
  const std::string params = p.substr(2, p.size() - 3);
  const bool modified = params.find(';') != std::string::npos;  // "1;5C": Ctrl- or Alt-arrow
  switch (last) {
    case 'A': return done(Key::kUp);
    case 'B': return done(Key::kDown);
    case 'C': return done(modified ? Key::kWordRight : Key::kRight);
    case 'D': return done(modified ? Key::kWordLeft : Key::kLeft);
    case 'H': return done(Key::kHome);
    case 'F': return done(Key::kEnd);
    case '~':
      if (params == "3") return done(Key::kDelete);
      if (params == "1" || params == "7") return done(Key::kHome);
      if (params == "4" || params == "8") return done(Key::kEnd);
      return done(Key::kIgnored);  // bracketed paste marks (200~, 201~) and the rest
    default: return done(Key::kIgnored);
  }
}

void EditLine::Set(std::string text) {
  text_ = std::move(text);
  cursor_ = text_.size();
}

size_t EditLine::PreviousBoundary(size_t at) const {
  if (at == 0) return 0;
  --at;
  while (at > 0 && (static_cast<unsigned char>(text_[at]) & 0xC0) == 0x80) --at;
  return at;
}

size_t EditLine::NextBoundary(size_t at) const {
  if (at >= text_.size()) return text_.size();
  ++at;
  while (at < text_.size() && (static_cast<unsigned char>(text_[at]) & 0xC0) == 0x80) ++at;
  return at;
}

size_t EditLine::WordStartBefore(size_t at) const {
  while (at > 0 && !IsWordByte(static_cast<unsigned char>(text_[at - 1]))) --at;
  while (at > 0 && IsWordByte(static_cast<unsigned char>(text_[at - 1]))) --at;
  return at;
}

size_t EditLine::WordEndAfter(size_t at) const {
  while (at < text_.size() && !IsWordByte(static_cast<unsigned char>(text_[at]))) ++at;
  while (at < text_.size() && IsWordByte(static_cast<unsigned char>(text_[at]))) ++at;
  return at;
}

void EditLine::Apply(const KeyPress& key) {
  switch (key.key) {
    case Key::kChar:
      text_.insert(cursor_, key.text);
      cursor_ += key.text.size();
      break;
    case Key::kBackspace: {
      const size_t from = PreviousBoundary(cursor_);
      text_.erase(from, cursor_ - from);
      cursor_ = from;
      break;
    }
    case Key::kDelete: text_.erase(cursor_, NextBoundary(cursor_) - cursor_); break;
    case Key::kLeft: cursor_ = PreviousBoundary(cursor_); break;
    case Key::kRight: cursor_ = NextBoundary(cursor_); break;
    case Key::kWordLeft: cursor_ = WordStartBefore(cursor_); break;
    case Key::kWordRight: cursor_ = WordEndAfter(cursor_); break;
    case Key::kHome: cursor_ = 0; break;
    case Key::kEnd: cursor_ = text_.size(); break;
    case Key::kKillToEnd: text_.erase(cursor_); break;
    case Key::kKillToStart:
      text_.erase(0, cursor_);
      cursor_ = 0;
      break;
    case Key::kKillWordBack: {
      const size_t from = WordStartBefore(cursor_);
      text_.erase(from, cursor_ - from);
      cursor_ = from;
      break;
    }
    default: break;
  }
}

Status History::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Ok();
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) entries_.push_back(UnescapeEntry(line));
  }
  if (entries_.size() > kMaxEntries) entries_.erase(entries_.begin(), entries_.end() - kMaxEntries);
  recall_ = entries_.size();
  return Status::Ok();
}

void History::Add(std::string_view entry, const std::string& path) {
  ResetRecall();
  if (entry.empty() || (!entries_.empty() && entries_.back() == entry)) return;
  entries_.emplace_back(entry);
  if (entries_.size() > kMaxEntries) entries_.erase(entries_.begin());
  recall_ = entries_.size();
  if (path.empty()) return;
  // Appended with O_APPEND: two shells writing one file interleave whole lines. A file grown
  // past twice the limit is rewritten with the newest entries.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;  // history is a convenience: a read-only home only loses it
  const std::string line = EscapeEntry(entry) + "\n";
  const ssize_t written = ::write(fd, line.data(), line.size());
  (void)written;
  ::close(fd);
}

std::optional<std::string> History::Older(const std::string& current) {
  if (recall_ == 0) return std::nullopt;
  if (recall_ == entries_.size()) typed_ = current;
  return entries_[--recall_];
}

std::optional<std::string> History::Newer() {
  if (recall_ >= entries_.size()) return std::nullopt;
  ++recall_;
  return recall_ == entries_.size() ? typed_ : entries_[recall_];
}

void History::ResetRecall() {
  recall_ = entries_.size();
  typed_.clear();
}

Result<std::unique_ptr<LineEditor>> LineEditor::Open(int in_fd, int out_fd, std::string history_path) {
  if (!isatty(in_fd)) return Status::InvalidArgument("the input is not a terminal");
  std::unique_ptr<LineEditor> editor(new LineEditor(in_fd, out_fd, std::move(history_path)));
  if (!editor->history_path_.empty()) SKADE_RETURN_IF_ERROR(editor->history_.Load(editor->history_path_));
  return editor;
}

LineEditor::LineEditor(int in_fd, int out_fd, std::string history_path)
    : in_fd_(in_fd), out_fd_(out_fd), history_path_(std::move(history_path)) {}

LineEditor::~LineEditor() = default;

void LineEditor::AddHistory(std::string_view entry) { history_.Add(entry, history_path_); }

size_t LineEditor::Columns() const {
  winsize size{};
  if (ioctl(out_fd_, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

void LineEditor::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(out_fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void LineEditor::Refresh(std::string_view prompt, const EditLine& line) {
  const size_t columns = Columns();
  const size_t prompt_width = DisplayWidth(prompt);
  const size_t room = columns > prompt_width + 1 ? columns - prompt_width - 1 : 1;
  // What the text shows (control characters visible), scrolled so the cursor stays in view.
  std::string before = TerminalText(std::string_view(line.text()).substr(0, line.cursor()));
  const std::string after = TerminalText(std::string_view(line.text()).substr(line.cursor()));
  while (DisplayWidth(before) > room) {
    size_t cut = 1;
    while (cut < before.size() && (static_cast<unsigned char>(before[cut]) & 0xC0) == 0x80) ++cut;
    before.erase(0, cut);
  }
  const size_t cursor_column = prompt_width + DisplayWidth(before);
  std::string out = "\r";
  out += prompt;
  out += before;
  out += PrefixOfWidth(after, room - DisplayWidth(before));
  out += "\x1b[0K\r";
  if (cursor_column > 0) out += "\x1b[" + std::to_string(cursor_column) + "C";
  Write(out);
}

LineEditor::Read LineEditor::ReadLine(std::string_view prompt) {
  RawMode raw(in_fd_);
  EditLine line;
  history_.ResetRecall();
  Refresh(prompt, line);
  while (true) {
    unsigned char byte = 0;
    const ssize_t n = ::read(in_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Write("\r\n");
      if (line.text().empty()) return Read{Outcome::kEnd, {}};
      return Read{Outcome::kLine, line.text()};
    }
    std::optional<KeyPress> key = decoder_.Feed(byte);
    if (!key) continue;
    switch (key->key) {
      case Key::kEnter:
        Write("\r\n");
        return Read{Outcome::kLine, line.text()};
      case Key::kInterrupt:
        Write("^C\r\n");
        return Read{Outcome::kInterrupted, {}};
      case Key::kEndOfInput:
        if (line.text().empty()) {
          Write("\r\n");
          return Read{Outcome::kEnd, {}};
        }
        line.Apply(Of(Key::kDelete));
        break;
      case Key::kUp:
        if (std::optional<std::string> older = history_.Older(line.text())) line.Set(std::move(*older));
        break;
      case Key::kDown:
        if (std::optional<std::string> newer = history_.Newer()) line.Set(std::move(*newer));
        break;
      case Key::kClearScreen:
        Write("\x1b[H\x1b[2J");
        break;
      default:
        line.Apply(*key);
        break;
    }
    Refresh(prompt, line);
  }
}

}  // namespace skade::cli
