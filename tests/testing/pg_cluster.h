// Test helper: a throwaway PostgreSQL cluster per test process (tests/testing/pg_cluster.sh),
// started on first use on a free loopback port and stopped, with its folder removed, when the
// process exits. Each test gets its own database.
#pragma once

#include <string>
#include <utility>

#include "skade/base/status.h"

namespace skade::testing {

// Thread-compatible; use from the test's main thread.
class PgTestCluster {
 public:
  // The cluster of this process, started on the first call (initdb from a template cached under
  // the build dir, then pg_ctl start; about 1 s). kUnavailable with the script's output when it
  // can't start: callers must fail, not skip.
  static Result<PgTestCluster*> Shared();

  struct Passkey {};  // only Shared() constructs
  PgTestCluster(Passkey, std::string dir, int port, int owner_pid)
      : dir_(std::move(dir)), port_(port), owner_pid_(owner_pid) {}
  ~PgTestCluster();
  PgTestCluster(const PgTestCluster&) = delete;
  PgTestCluster& operator=(const PgTestCluster&) = delete;

  int port() const { return port_; }
  // Creates a fresh database t_<random> and returns its libpq URI
  // ("postgresql://postgres@127.0.0.1:<port>/t_<random>").
  Result<std::string> CreateDatabase();

 private:
  std::string dir_;
  int port_;
  int owner_pid_;  // forked children must not stop the parent's cluster
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0), or 0 on failure.
int PickFreeLoopbackPort();

}  // namespace skade::testing
