// `skade sql`: one statement (or a few, separated by ';') from the command line, a script from
// a file or standard input, or the interactive shell when standard input is a terminal.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "skade/cli/lake.h"
#include "skade/cli/line_editor.h"
#include "skade/cli/messages.h"
#include "skade/cli/sql_script.h"
#include "skade/cli/sql_session.h"
#include "skade/engine/user_sql.h"

#ifndef SKADE_VERSION
#define SKADE_VERSION "0.0.0"
#endif

namespace skade::cli {
namespace {

constexpr const char* kPrompt = "skade> ";
constexpr const char* kContinuation = "  ...> ";

int Fail(std::ostream& err, const Status& st) {
  err << ErrorLine(st) << "\n";
  return 1;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

// `line` when it is a dot command (".tables", …): the first non-blank character is a '.'.
std::optional<std::string> DotCommand(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && IsBlank(line[i])) ++i;
  if (i < line.size() && line[i] == '.') return line.substr(i);
  return std::nullopt;
}

std::string HistoryPath() {
  if (const char* path = std::getenv("SKADE_HISTORY")) return path;  // "" turns history off
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.skade_history" : "";
}

// While alive, SIGINT interrupts the session's running statement instead of ending the
// process: the handler only writes a byte to a pipe (what a signal handler may do), and a
// watcher thread turns it into SqlSession::Interrupt.
class SigintInterrupts {
 public:
  explicit SigintInterrupts(SqlSession& session) {
    if (pipe(fds_) != 0) return;
    write_fd_.store(fds_[1]);
    struct sigaction action {};
    action.sa_handler = &SigintInterrupts::OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    installed_ = sigaction(SIGINT, &action, &previous_) == 0;
    watcher_ = std::thread([this, &session] {
      char byte = 0;
      while (true) {
        const ssize_t n = read(fds_[0], &byte, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || byte == 0) return;  // a 0 byte: stop
        session.Interrupt();
      }
    });
  }
  ~SigintInterrupts() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
    write_fd_.store(-1);
    if (watcher_.joinable()) {
      const char stop = 0;
      while (write(fds_[1], &stop, 1) < 0 && errno == EINTR) {
      }
      watcher_.join();
    }
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  SigintInterrupts(const SigintInterrupts&) = delete;
  SigintInterrupts& operator=(const SigintInterrupts&) = delete;

 private:
  static void OnSignal(int) {
    const int fd = write_fd_.load();
    const char byte = 1;
    if (fd >= 0) {
      const ssize_t n = write(fd, &byte, 1);
      (void)n;
    }
  }

  static inline std::atomic<int> write_fd_{-1};
  int fds_[2] = {-1, -1};
  struct sigaction previous_ {};
  bool installed_ = false;
  std::thread watcher_;
};

class Runner {
 public:
  Runner(SqlSession& session, std::ostream& out, std::ostream& err) : session_(session), out_(out), err_(err) {}

  // Runs the statements and dot commands of a script; stops at the first failure (exit 1)
  // naming where it was.
  int Script(std::istream& in, const std::string& name, int depth = 0) {
    StatementSplitter splitter;
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      if (splitter.Idle()) {
        if (std::optional<std::string> dot = DotCommand(line)) {
          splitter.Add("\n");  // keeps the splitter's line count
          Status st = Dot(*dot, depth);
          if (quit_) return 0;
          if (!st.ok()) return Fail(err_, st.WithContext(name + " line " + std::to_string(line_number)));
          continue;
        }
      }
      splitter.Add(line);
      splitter.Add("\n");
      for (const ScriptStatement& s : splitter.TakeComplete()) {
        if (int rc = Statement(s, name); rc != 0) return rc;
      }
    }
    if (in.bad()) return Fail(err_, Status::IoError("cannot read " + name));
    ScriptStatement rest = splitter.TakeRest();
    if (!rest.sql.empty()) return Statement(rest, name);
    return 0;
  }

  // The interactive shell.
  int Shell(const std::string& warehouse) {
    auto editor = LineEditor::Open(STDIN_FILENO, STDOUT_FILENO, HistoryPath());
    if (!editor.ok()) return Fail(err_, editor.status());
    out_ << "skade " SKADE_VERSION " SQL shell on " << warehouse
         << "\nStatements end with ';'. \".help\" for the shell's commands, Ctrl-D to leave.\n"
         << std::flush;
    SigintInterrupts interrupts(session_);
    StatementSplitter splitter;
    std::string typed;  // the lines of the statement being typed, for the history
    while (!quit_) {
      LineEditor::Read read = (*editor)->ReadLine(splitter.Idle() ? kPrompt : kContinuation);
      if (read.outcome == LineEditor::Outcome::kEnd) break;
      if (read.outcome == LineEditor::Outcome::kInterrupted) {
        splitter.Clear();
        typed.clear();
        continue;
      }
      if (splitter.Idle()) {
        if (std::optional<std::string> dot = DotCommand(read.line)) {
          (*editor)->AddHistory(*dot);
          Status st = Dot(*dot, 0);
          out_.flush();
          if (!st.ok()) err_ << ErrorLine(st) << "\n" << std::flush;
          continue;
        }
      }
      typed += (typed.empty() ? "" : "\n") + read.line;
      splitter.Add(read.line);
      splitter.Add("\n");
      std::vector<ScriptStatement> statements = splitter.TakeComplete();
      if (statements.empty()) continue;
      (*editor)->AddHistory(typed);
      typed.clear();
      for (const ScriptStatement& s : statements) {
        Status st = session_.Run(s.sql, out_);
        out_.flush();
        if (!st.ok()) err_ << ErrorLine(st) << "\n" << std::flush;
      }
    }
    return 0;
  }

 private:
  int Statement(const ScriptStatement& s, const std::string& name) {
    Status st = session_.Run(s.sql, out_);
    out_.flush();
    if (st.ok()) return 0;
    return Fail(err_, st.WithContext(name + " line " + std::to_string(s.line)));
  }

  Status Dot(const std::string& line, int depth) {
    if (line.rfind(".read", 0) == 0 && (line.size() == 5 || IsBlank(line[5]))) {
      std::string path = line.substr(5);
      while (!path.empty() && IsBlank(path.front())) path.erase(path.begin());
      while (!path.empty() && IsBlank(path.back())) path.pop_back();
      if (path.empty()) return Status::InvalidArgument(".read takes a file");
      if (depth >= 8) return Status::InvalidArgument(".read nested more than 8 deep");
      std::ifstream file(path);
      if (!file) return Status::NotFound("cannot open " + path);
      if (Script(file, path, depth + 1) != 0) return Status::InvalidArgument("stopped in " + path);
      return Status::Ok();
    }
    SKADE_ASSIGN_OR_RETURN(bool go_on, session_.RunDotCommand(line, out_));
    quit_ = !go_on;
    return Status::Ok();
  }

  SqlSession& session_;
  std::ostream& out_;
  std::ostream& err_;
  bool quit_ = false;
};

SqlSessionOptions SessionOptions(const SqlArgs& args) {
  SqlSessionOptions options;
  options.format = args.format;
  options.pushdown = args.pushdown;
  options.box = StdoutBoxOptions();
  if (args.max_rows) options.box.max_rows = *args.max_rows;
  return options;
}

// A session that may write; over a lake this process may not change, one that reads.
Result<std::unique_ptr<SqlSession>> OpenWritableSession(const LakeArgs& lake_args, const SqlArgs& args) {
  auto session = SqlSession::Open(lake_args, LakeOpenOptions::Use::kWrite, SessionOptions(args));
  if (session.ok()) return session;
  auto reader = SqlSession::Open(lake_args, LakeOpenOptions::Use::kRead, SessionOptions(args));
  if (reader.ok()) return reader;
  return session.status();
}

}  // namespace

int RunSql(const LakeArgs& lake_args, const SqlArgs& args, std::ostream& out, std::ostream& err) {
  const bool from_stdin = args.sql == "-" || (args.sql.empty() && args.file.empty() && !isatty(STDIN_FILENO));
  if (!args.file.empty() && !args.sql.empty()) {
    return Fail(err, Status::InvalidArgument("give SQL text or --file, not both"));
  }
  if (!args.file.empty() || from_stdin) {
    auto session = OpenWritableSession(lake_args, args);
    if (!session.ok()) return Fail(err, session.status());
    Runner runner(**session, out, err);
    if (from_stdin) return runner.Script(std::cin, "<stdin>");
    std::ifstream file(args.file);
    if (!file) return Fail(err, Status::NotFound("cannot open " + args.file));
    return runner.Script(file, args.file);
  }
  if (args.sql.empty()) {
    auto session = OpenWritableSession(lake_args, args);
    if (!session.ok()) return Fail(err, session.status());
    return Runner(**session, out, err).Shell(lake_args.warehouse.empty() ? "the default lake" : lake_args.warehouse);
  }
  // Text on the command line is one statement (a second one pasted into a scripted argument
  // must not run): scripts come from --file or standard input. It opens the lake as that
  // statement needs (a query reads only, and runs on a lake this process may not write).
  StatementSplitter splitter;
  splitter.Add(args.sql);
  std::vector<ScriptStatement> statements = splitter.TakeComplete();
  if (ScriptStatement rest = splitter.TakeRest(); !rest.sql.empty()) statements.push_back(std::move(rest));
  if (statements.size() > 1) {
    return Fail(err, Status::InvalidArgument("the SQL text holds " + std::to_string(statements.size()) +
                                             " statements; it runs one (several run from --file or standard input)"));
  }
  if (statements.empty()) return Fail(err, Status::InvalidArgument("the SQL text holds no statement"));
  const std::string& sql = statements.front().sql;  // without a closing ';'
  auto statement = engine::ParseStatement(sql);
  if (!statement.ok()) return Fail(err, statement.status());
  auto session = SqlSession::Open(
      lake_args, statement->is_write() ? LakeOpenOptions::Use::kWrite : LakeOpenOptions::Use::kRead,
      SessionOptions(args));
  if (!session.ok()) return Fail(err, session.status());
  Status st = (*session)->Run(sql, out);
  if (!st.ok()) return Fail(err, st);
  return 0;
}

}  // namespace skade::cli
