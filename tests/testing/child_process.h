// Test helper: a child process started with posix_spawnp, its stdout on a pipe read line by
// line with a timeout, its stderr inherited or written to a file; stopped by a signal with a
// timeout, and killed (SIGKILL) if still running when destroyed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace skade::testing {

// Not thread-safe.
class ChildProcess {
 public:
  // Starts argv[0] (looked up in PATH) with `argv`; stderr goes to `stderr_file` when given.
  // Null when the process cannot be started.
  static std::unique_ptr<ChildProcess> Start(const std::vector<std::string>& argv,
                                             const std::string& stderr_file = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next stdout line (without its '\n'), or "" after `timeout` or at the end of stdout.
  std::string ReadLine(std::chrono::milliseconds timeout);
  // Sends `sig` (0: none, just waits) and waits up to `timeout`: the exit code, or -1 when it
  // did not exit in time or died of a signal.
  int Stop(int sig, std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

}  // namespace skade::testing
