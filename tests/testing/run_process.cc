#include "tests/testing/run_process.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace skade::testing {

ProcessResult RunProcess(const std::string& command) {
  ProcessResult result;
  TempDir tmp;
  std::string err_file = tmp.Path("stderr");
  // The braces make the redirection apply to the whole command line, pipelines included.
  std::string full = "{ " + command + "\n} 2>" + ShellQuote(err_file);
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) {
    result.err = "popen failed";
    return result;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
  int status = ::pclose(pipe);
  result.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  if (std::filesystem::exists(err_file)) result.err = ReadFileOrDie(err_file);
  return result;
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";  // close, escaped quote, reopen
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.emplace_back(line);
    start = nl + 1;
  }
  return lines;
}

}  // namespace skade::testing
