// `skade serve`'s Flight SQL registry limits as flags: listed by --help, checked (a bad value is
// a clear error and a non-zero exit before anything opens), and reported when the server starts
// together with where it keeps what cannot travel in a handle (a read-write SQL catalog: its
// database; --read-only: this instance only, the catalog database is never written).
#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "tests/cli/lake_cli_fixture.h"
#include "tests/testing/child_process.h"

namespace skade::cli {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ServeCliTest : public LakeCliTest {
 protected:
  // Starts `skade serve` on this test's warehouse with `flags` (a free Flight SQL port) and
  // returns the line saying where it keeps its Flight SQL server state ("" if none within 30 s);
  // the server is left in `*server`.
  std::string StartAndReadStateLine(const std::vector<std::string>& flags,
                                    std::unique_ptr<testing::ChildProcess>* server) {
    std::vector<std::string> argv = {skade::testing::CliPath(), "--warehouse", warehouse_, "serve", "--flight-port",
                                     "0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    *server = testing::ChildProcess::Start(argv, tmp_.Path("serve.err"));
    if (*server == nullptr) return "";
    for (int i = 0; i < 10; ++i) {
      std::string line = (*server)->ReadLine(30s);
      if (line.empty()) break;
      if (line.find("server state") != std::string::npos) return line;
    }
    return "";
  }
};

TEST_F(ServeCliTest, RegistryLimitsAreFlagsListedByHelp) {
  testing::ProcessResult r = Skade("serve --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--max-sessions", "--max-pending-tickets", "--max-prepared", "--handle-params-kb",
                           "--max-params-mb", "--max-params-per-user-mb", "--read-only"}) {
    EXPECT_THAT(r.out, HasSubstr(flag));
  }
  EXPECT_THAT(r.out, HasSubstr("never write the catalog database"));
}

TEST_F(ServeCliTest, BadLimitsAreRefusedBeforeAnythingOpens) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--max-params-mb", "0"},          {"--max-params-mb", "1025"},      {"--max-params-mb", "lots"},
      {"--max-params-per-user-mb", "0"}, {"--handle-params-kb", "-1"},    {"--handle-params-kb", "2048"},
      {"--max-pending-tickets", "0"},    {"--max-prepared", "-3"},        {"--max-sessions", "0"}};
  for (const auto& [flag, value] : bad) {
    testing::ProcessResult r = Skade("serve --flight-port 0 " + flag + " " + value);
    EXPECT_NE(r.exit_code, 0) << flag << " " << value;
    EXPECT_THAT(r.err, HasSubstr(flag)) << value;
  }
  // Each in range, but no binding this large could be kept for one user.
  testing::ProcessResult r = Skade("serve --flight-port 0 --max-params-mb 64 --max-params-per-user-mb 32");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--max-params-per-user-mb (32) is less than --max-params-mb (64)"));
  EXPECT_FALSE(fs::exists(warehouse_)) << "a refused serve made the lake";
}

TEST_F(ServeCliTest, TheServerReportsItsLimitsAndWhereItKeepsSharedState) {
  std::unique_ptr<testing::ChildProcess> server;
  std::string line = StartAndReadStateLine(
      {"--handle-params-kb", "8", "--max-params-mb", "32", "--max-params-per-user-mb", "64", "--max-prepared", "10"},
      &server);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(line, HasSubstr("shared through the catalog database"));
  EXPECT_THAT(line, HasSubstr("over 8 KiB up to 32 MiB a binding and 64 MiB a user"));
  EXPECT_EQ(server->Stop(SIGTERM, 20s), 0);

  // Read-only over the same catalog: nothing is written to its database, so closes, cancels and
  // large parameters stay on the instance, and it says so.
  line = StartAndReadStateLine({"--read-only"}, &server);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(line, HasSubstr("on this instance only (--read-only writes nothing to the catalog)"));
  EXPECT_THAT(line, HasSubstr("parameters over 64 KiB hold here only, up to 16 MiB a binding and 256 MiB a user"));
  EXPECT_EQ(server->Stop(SIGTERM, 20s), 0);
}

}  // namespace
}  // namespace skade::cli
