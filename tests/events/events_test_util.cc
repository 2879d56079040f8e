#include "tests/events/events_test_util.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "skade/catalog/sql_catalog.h"
#include "tests/testing/schemas.h"

namespace skade::events::testing {

namespace {

iceberg::SchemaPtr TestSchema() { return skade::testing::SchemaOf({{1, "id", iceberg::TypeId::kLong, true}}); }

constexpr const char* kChildUri = "SKADE_EVENTS_CHILD_URI";

}  // namespace

Status CreateTable(catalog::Catalog& catalog, const std::string& name) {
  catalog::Namespace ns{{"db"}};
  SKADE_ASSIGN_OR_RETURN(bool exists, catalog.NamespaceExists(ns));
  if (!exists) SKADE_RETURN_IF_ERROR(catalog.CreateNamespace(ns, {}));
  catalog::CreateTableRequest request;
  request.schema = TestSchema();
  return catalog.CreateTable(catalog::TableIdent{ns, name}, request).status();
}

Result<int64_t> PropertyCommit(catalog::Catalog& catalog, const std::string& table,
                               const std::string& value) {
  catalog::TableCommit commit;
  commit.ident = catalog::TableIdent{catalog::Namespace{{"db"}}, table};
  commit.updates.push_back(iceberg::TableUpdate::SetProperties({{"k", value}}));
  Status last;
  for (int attempt = 0; attempt < 50; ++attempt) {
    Result<catalog::CommitResult> result = catalog.CommitTable(commit);
    if (result.ok()) return result->commit_seq;
    last = result.status();
    if (last.code() != StatusCode::kConflict) break;
  }
  return last;
}

pid_t SpawnThisBinary(const std::string& test_filter, const std::vector<std::string>& extra_env) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_storage = extra_env;
  for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& entry : env_storage) env.push_back(entry.data());
  env.push_back(nullptr);
  std::string filter = "--gtest_filter=" + test_filter;
  const char* args[] = {"/proc/self/exe", filter.c_str(), nullptr};
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::execve("/proc/self/exe", const_cast<char* const*>(args), env.data());
  ::_exit(20);
}

pid_t SpawnCommitter(const std::string& uri, const std::string& warehouse, const std::string& table,
                     int count, double seconds) {
  return SpawnThisBinary(
      "EventsChildProcess.CommitsWhenSpawned",
      {std::string(kChildUri) + "=" + uri, "SKADE_EVENTS_CHILD_WAREHOUSE=" + warehouse,
       "SKADE_EVENTS_CHILD_TABLE=" + table, "SKADE_EVENTS_CHILD_COUNT=" + std::to_string(count),
       "SKADE_EVENTS_CHILD_SECONDS=" + std::to_string(seconds)});
}

int WaitChild(pid_t pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Runs only when spawned by SpawnCommitter; a no-op (pass) otherwise.
TEST(EventsChildProcess, CommitsWhenSpawned) {
  const char* uri = std::getenv(kChildUri);
  if (uri == nullptr) return;
  catalog::SqlCatalogOptions options;
  options.uri = uri;
  options.warehouse = std::getenv("SKADE_EVENTS_CHILD_WAREHOUSE");
  std::string table = std::getenv("SKADE_EVENTS_CHILD_TABLE");
  int count = std::atoi(std::getenv("SKADE_EVENTS_CHILD_COUNT"));
  double seconds = std::atof(std::getenv("SKADE_EVENTS_CHILD_SECONDS"));
  auto io = io::MakeLocalFileIO();
  auto catalog = catalog::OpenSqlCatalog(options, *io);
  if (!catalog.ok()) ::_exit(10);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  for (int j = 0; count > 0 ? j < count : std::chrono::steady_clock::now() < deadline; ++j) {
    Result<int64_t> seq = PropertyCommit(**catalog, table, "c" + std::to_string(j));
    if (!seq.ok()) {
      std::fprintf(stderr, "child commit failed: %s\n", seq.status().ToString().c_str());
      ::_exit(11);
    }
  }
  ::_exit(0);
}

}  // namespace skade::events::testing
