// The SQL shell through a pseudo-terminal, as a person uses it: statements over several lines,
// history, Ctrl-C cancelling a running query and keeping the shell, dot commands, Ctrl-D; and
// `skade sql` reading scripts from a file, a pipe and the command line.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "tests/cli/lake_cli_fixture.h"

namespace skade::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// A child process on the slave side of a pseudo-terminal; the test types and reads on the
// master side.
class Pty {
 public:
  Pty(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    winsize size{};
    size.ws_row = 40;
    size.ws_col = 120;
    pid_ = forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      std::vector<char*> envp;
      for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
  }
  ~Pty() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  bool started() const { return pid_ > 0 && master_ >= 0; }

  // Reads up to a fresh prompt: one after output that ended its line (every keystroke redraws
  // the prompt too, after a carriage return only).
  std::string Prompt() { return ReadUntil("\n\rskade> "); }

  void Type(std::string_view keys) {
    while (!keys.empty()) {
      const ssize_t n = write(master_, keys.data(), keys.size());
      if (n <= 0) return;
      keys.remove_prefix(static_cast<size_t>(n));
    }
  }

  // Reads until what was read since the last call holds `needle` (then returns all of it) or
  // `timeout` passes (then fails the test and returns what came).
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (fresh_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ADD_FAILURE() << "no '" << needle << "' in the terminal's output:\n" << fresh_;
        break;
      }
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) {
        ADD_FAILURE() << "the terminal closed before '" << needle << "':\n" << fresh_;
        break;
      }
      fresh_.append(buf, static_cast<size_t>(n));
    }
    const size_t end = fresh_.find(needle);
    std::string got = end == std::string::npos ? fresh_ : fresh_.substr(0, end + needle.size());
    fresh_.erase(0, got.size());
    return got;
  }

  // The exit code, waiting up to `timeout`; -1 when it did not end.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      // Drain output so the child never blocks writing to the terminal.
      char buf[4096];
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 20) > 0 && read(master_, buf, sizeof buf) <= 0) {
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  std::string fresh_;
};

class SqlShellTest : public LakeCliTest {
 protected:
  void SetUp() override {
    LakeCliTest::SetUp();
    SkadeOk("ns create demo");
    SkadeOk("ingest demo.orders --create --sql " +
            testing::ShellQuote("SELECT range AS id, 'c' || (range % 3) AS customer FROM range(100)"));
  }

  std::unique_ptr<Pty> Shell() {
    auto pty = std::make_unique<Pty>(
        std::vector<std::string>{skade::testing::CliPath(), "--warehouse", warehouse_, "sql"},
        std::vector<std::string>{"TERM=xterm", "HOME=" + tmp_.Path(""), "SKADE_HISTORY=" + tmp_.Path("history"),
                                 "PATH=/usr/bin:/bin"});
    EXPECT_TRUE(pty->started());
    return pty;
  }
};

TEST_F(SqlShellTest, RunsStatementsOverSeveralLinesAndRecallsThem) {
  auto pty = Shell();
  pty->Prompt();
  pty->Type("SELECT count(*) AS n,\r");
  pty->ReadUntil("\n\r  ...> ");  // the statement goes on
  pty->Type("  max(id) AS top FROM demo.orders;\r");
  std::string out = pty->Prompt();
  EXPECT_THAT(out, ContainsRegex("│ +100 │ +99 │")) << out;
  EXPECT_THAT(out, HasSubstr("bigint"));
  EXPECT_THAT(out, HasSubstr("1 row"));

  // Up recalls the whole statement; Enter runs it again.
  pty->Type("\x1b[A\r");
  out = pty->Prompt();
  EXPECT_THAT(out, ContainsRegex("│ +100 │ +99 │")) << out;

  // Editing: typed text, moved over and corrected, then run.
  pty->Type("SELECT 41 + 1 AS answr;");
  pty->Type("\x1b[D\x1b[De\r");  // two left, insert the missing letter
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("answer")) << out;
  EXPECT_THAT(out, HasSubstr("42"));

  // A failing statement leaves the shell running.
  pty->Type("SELECT * FROM demo.ordres;\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("demo.orders")) << out;  // the suggestion

  pty->Type("\x04");  // Ctrl-D
  EXPECT_EQ(pty->Wait(), 0);
  std::ifstream history(tmp_.Path("history"));
  std::string text((std::istreambuf_iterator<char>(history)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("SELECT count(*) AS n,\\n  max(id) AS top FROM demo.orders;"));
}

TEST_F(SqlShellTest, CtrlCCancelsTheRunningQueryAndTheTypedText) {
  auto pty = Shell();
  pty->Prompt();
  // Ctrl-C on typed text drops it (and any lines of the statement before).
  pty->Type("SELECT 1,\r");
  pty->ReadUntil("\n\r  ...> ");
  pty->Type("2\x03");
  pty->Prompt();
  // A query that would run for minutes, cancelled.
  pty->Type("SELECT count(*) FROM range(1000000000000) a;\r");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  pty->Type("\x03");
  std::string out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("nterrupt")) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // The shell goes on.
  pty->Type("SELECT 7 AS seven;\r");
  out = pty->Prompt();
  EXPECT_THAT(out, ContainsRegex("│ +7 │")) << out;
  pty->Type(".quit\r");
  EXPECT_EQ(pty->Wait(), 0);
}

TEST_F(SqlShellTest, DotCommandsListAndDescribeTables) {
  SkadeOk("ingest demo.customers --create --sql " + testing::ShellQuote("SELECT 1 AS id, 'x' AS name"));
  auto pty = Shell();
  pty->Prompt();
  pty->Type(".tables\r");
  std::string out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("demo.customers"));
  EXPECT_THAT(out, HasSubstr("demo.orders"));
  pty->Type(".tables %cust%\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("demo.customers"));
  EXPECT_THAT(out, Not(HasSubstr("demo.orders")));
  pty->Type(".schema demo.orders\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("customer"));
  EXPECT_THAT(out, HasSubstr("VARCHAR"));
  pty->Type(".mode csv\r");
  pty->Prompt();
  pty->Type("SELECT id FROM demo.orders ORDER BY id LIMIT 2;\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("id\r\n0\r\n1\r\n"));
  pty->Type(".nonsense\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("unknown command .nonsense"));
  // A write from the shell commits.
  pty->Type(".mode table\r");
  pty->Prompt();
  pty->Type("INSERT INTO demo.customers VALUES (2, 'y');\r");
  out = pty->Prompt();
  EXPECT_THAT(out, HasSubstr("INSERT 1"));
  pty->Type(".exit\r");
  EXPECT_EQ(pty->Wait(), 0);
  EXPECT_EQ(SkadeOk("sql --format csv " + testing::ShellQuote("SELECT count(*) FROM demo.customers")), "count_star()\n2\n");
}

TEST_F(SqlShellTest, RunsScriptsFromAFileAPipeAndTheCommandLine) {
  const std::string script = tmp_.Path("script.sql");
  {
    std::ofstream f(script);
    f << "-- a script\n"
         "CREATE TABLE demo.t (id BIGINT, s VARCHAR);\n"
         "INSERT INTO demo.t VALUES (1, 'a;b'),\n"
         "  (2, 'c');\n"
         ".mode csv\n"
         "SELECT * FROM demo.t ORDER BY id;\n"
         "SELECT * FROM demo.missing;\n"
         "INSERT INTO demo.t VALUES (3, 'never');\n";
  }
  testing::ProcessResult r = Skade("sql -f " + testing::ShellQuote(script));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("CREATE 0"));
  EXPECT_THAT(r.out, HasSubstr("INSERT 2"));
  EXPECT_THAT(r.out, HasSubstr("id,s\n1,a;b\n2,c\n"));
  EXPECT_THAT(r.err, HasSubstr("line 7"));  // where the script stopped
  // The statement after the failing one did not run.
  EXPECT_EQ(SkadeOk("sql --format csv " + testing::ShellQuote("SELECT count(*) FROM demo.t")), "count_star()\n2\n");

  r = testing::RunProcess("printf 'SELECT 1 AS a;\\nSELECT 2 AS b' | " + std::string(skade::testing::CliPath()) +
                          " --warehouse " + testing::ShellQuote(warehouse_) + " sql --format csv");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a\n1\nb\n2\n");
  r = testing::RunProcess("echo 'SELECT 3 AS c;' | " + std::string(skade::testing::CliPath()) + " --warehouse " +
                          testing::ShellQuote(warehouse_) + " sql --format csv -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "c\n3\n");
  // On the command line, one statement only (a second one pasted into an argument never runs).
  r = Skade("sql " + testing::ShellQuote("SELECT 1 AS x; INSERT INTO demo.t VALUES (9, 'no')"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--file or standard input"));
  EXPECT_EQ(SkadeOk("sql --format csv " + testing::ShellQuote("SELECT 'y;z' AS y;")), "y\ny;z\n");
}

// USE ns (DuckDB's USE, or SET schema = 'ns'): unqualified names resolve there, for queries and
// writes; a namespace the lake lacks is an error that leaves the session where it was.
TEST_F(SqlShellTest, UseChoosesWhereUnqualifiedNamesResolve) {
  SkadeOk("ns create other.deep");
  SkadeOk("ns create Sales");
  const std::string script = tmp_.Path("use.sql");
  {
    std::ofstream f(script);
    f << ".mode csv\n"
         "USE demo;\n"
         "SELECT count(*) AS n FROM orders;\n"
         "CREATE TABLE notes (id BIGINT);\n"
         "INSERT INTO notes VALUES (7);\n"
         "SHOW TABLES;\n"
         "SET schema = 'other.deep';\n"
         "CREATE TABLE t AS SELECT 1 AS one;\n"
         "USE skade.demo;\n"
         "SELECT id FROM notes;\n"
         "USE \"Sales\";\n"
         "CREATE TABLE up (x INTEGER);\n"
         "USE nowhere;\n";
  }
  testing::ProcessResult r = Skade("sql -f " + testing::ShellQuote(script));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("n\n100\n"));
  EXPECT_THAT(r.out, HasSubstr("id\n7\n"));
  EXPECT_THAT(r.err, HasSubstr("namespace nowhere does not exist"));
  EXPECT_THAT(r.out, HasSubstr("name\nnotes\norders\n"));
  EXPECT_THAT(r.err, HasSubstr("line 13"));
  EXPECT_EQ(SkadeOk("sql --format csv " + testing::ShellQuote("SELECT id FROM demo.notes")), "id\n7\n");
  EXPECT_EQ(SkadeOk("sql --format csv " + testing::ShellQuote("SELECT one FROM \"other.deep\".t")), "one\n1\n");
  EXPECT_THAT(SkadeOk("tables"), HasSubstr("Sales.up"));
}

TEST_F(SqlShellTest, LargeResultsShowTheirEndsAndCount) {
  const std::string out =
      SkadeOk("sql " + testing::ShellQuote("SELECT range AS id, 'name_' || range AS name FROM range(1000)"));
  EXPECT_THAT(out, HasSubstr("1000 rows"));
  EXPECT_THAT(out, HasSubstr("(40 shown)"));
  EXPECT_THAT(out, ContainsRegex("│ +0 │ name_0 +│"));
  EXPECT_THAT(out, ContainsRegex("│ +999 │ name_999 +│"));
  EXPECT_THAT(out, Not(HasSubstr("name_500 ")));
  const std::string all = SkadeOk("sql --max-rows 0 " + testing::ShellQuote("SELECT range AS id FROM range(1000)"));
  EXPECT_THAT(all, ContainsRegex("│ +500 │"));
  EXPECT_THAT(all, Not(HasSubstr("shown")));
  const std::string scan = SkadeOk("scan demo.orders --max-rows 4");
  EXPECT_THAT(scan, HasSubstr("100 rows"));
  EXPECT_THAT(scan, HasSubstr("(4 shown)"));
}

TEST_F(SqlShellTest, IngestProgressMovesAndClearsItsLineBeforeTheSummary) {
  // At a terminal: a moving bar (no percentage from a query source: the time and a sweeping
  // block), cleared before the summary, which goes to stdout like "created table".
  Pty pty({skade::testing::CliPath(), "--warehouse", warehouse_, "ingest", "demo.big", "--create", "--sql",
           "SELECT range AS id, md5(range::VARCHAR) AS s FROM range(5000000)"},
          {"TERM=xterm", "HOME=" + tmp_.Path(""), "PATH=/usr/bin:/bin"});
  ASSERT_TRUE(pty.started());
  const std::string out = pty.ReadUntil("records/s");
  EXPECT_EQ(pty.Wait(), 0);
  EXPECT_THAT(out, HasSubstr("created table demo.big"));
  EXPECT_THAT(out, ContainsRegex("ingest demo.big \\[[.]*####[.]*\\] [0-9]+s"));
  EXPECT_THAT(out, Not(HasSubstr(" rows")));
  EXPECT_THAT(out, HasSubstr("\r\x1b[Kappend demo.big: +5000000 records"));  // on a cleared line
}

}  // namespace
}  // namespace skade::cli
