#include "tests/testing/pg_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "tests/testing/build_paths.h"
#include "tests/testing/temp_dir.h"

namespace skade::testing {
namespace {

std::string ScriptPath() { return SourcePath("tests/testing/pg_cluster.sh"); }

// Runs the cluster script; on failure returns its combined output as the error.
Status RunScript(const std::string& args, const std::string& log_path) {
  std::string command = "SKADE_PG_TEMPLATE='" + std::string(BinaryDir()) +
                        "/pg-test-template/data' timeout 120 '" + ScriptPath() + "' " + args +
                        " >'" + log_path + "' 2>&1";
  int rc = std::system(command.c_str());
  if (rc == 0) return Status::Ok();
  std::ifstream in(log_path);
  std::stringstream output;
  output << in.rdbuf();
  return Status::Unavailable("pg_cluster.sh " + args + " failed (status " + std::to_string(rc) +
                             "): " + output.str());
}

std::string RandomSuffix() {
  std::random_device device;
  std::mt19937_64 random((static_cast<uint64_t>(device()) << 32) ^ device() ^
                         static_cast<uint64_t>(::getpid()));
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(random()));
  return buffer;
}

}  // namespace

int PickFreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

Result<PgTestCluster*> PgTestCluster::Shared() {
  // Destroyed at normal process exit, which stops the cluster.
  static std::unique_ptr<PgTestCluster> cluster;
  static Status start_error;
  if (cluster) return cluster.get();
  if (!start_error.ok()) return start_error;
  const char* base = std::getenv("TMPDIR");
  std::string dir = std::string(base && *base ? base : "/tmp") + "/skade-pg-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    start_error = Status::Unavailable("mkdtemp for the PostgreSQL cluster failed");
    return start_error;
  }
  // mkdtemp makes the folder 0700; as root the server runs as `postgres`, which must be able
  // to reach its data folder inside.
  ::chmod(dir.c_str(), 0755);
  std::string log = dir + ".log";
  Status status;
  // A port picked by bind(0) can be taken by someone else before postgres binds it: retry.
  for (int attempt = 0; attempt < 3; ++attempt) {
    int port = PickFreeLoopbackPort();
    if (port == 0) {
      status = Status::Unavailable("no free loopback port");
      continue;
    }
    std::string pg_dir = dir + "/pg";
    status = RunScript("start '" + pg_dir + "' " + std::to_string(port), log);
    if (status.ok()) {
      std::remove(log.c_str());
      cluster = std::make_unique<PgTestCluster>(Passkey{}, dir, port, static_cast<int>(::getpid()));
      return cluster.get();
    }
    (void)RunScript("stop '" + pg_dir + "' " + std::to_string(port), log);
  }
  std::remove(log.c_str());
  std::string rm = "rm -rf '" + dir + "'";
  (void)std::system(rm.c_str());
  start_error = status;
  return start_error;
}

PgTestCluster::~PgTestCluster() {
  if (static_cast<int>(::getpid()) != owner_pid_) return;
  std::string log = dir_ + ".log";
  (void)RunScript("stop '" + dir_ + "/pg' " + std::to_string(port_), log);
  std::remove(log.c_str());
  std::string rm = "rm -rf '" + dir_ + "'";
  (void)std::system(rm.c_str());
}

Result<std::string> PgTestCluster::CreateDatabase() {
  std::string name = "t_" + RandomSuffix();
  std::string log = dir_ + ".createdb.log";
  Status status =
      RunScript("createdb '" + dir_ + "/pg' " + std::to_string(port_) + " " + name, log);
  std::remove(log.c_str());
  if (!status.ok()) return status;
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + name;
}

}  // namespace skade::testing
