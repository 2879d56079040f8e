// Test helpers: run a command line through /bin/sh and capture its exit code, stdout and
// stderr; quote arguments for the shell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skade::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when the process did not exit normally (signal, popen failure)
  std::string out;
  std::string err;
};

// Runs `command` (shell syntax, arguments already quoted) with /bin/sh and waits for it.
// stdout is read through a pipe; stderr goes to a temporary file read afterwards.
ProcessResult RunProcess(const std::string& command);

// `s` as one single-quoted /bin/sh word.
std::string ShellQuote(std::string_view s);

// The non-empty lines of `text`, without their line breaks.
std::vector<std::string> Lines(std::string_view text);

}  // namespace skade::testing
