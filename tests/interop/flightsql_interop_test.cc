// Arrow Flight SQL served by `skade serve`, checked by an independent client: flightsql_test.mjs
// (Node.js; @grpc/grpc-js, @grpc/proto-loader with skade's .proto files, apache-arrow) starts the
// servers on 127.0.0.1 port 0 over a lake prepared here with the CLI and runs named cases per
// area; each TEST below is one area. node and node_modules are required (the setup script
// installs them), so a missing one fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/testing/build_paths.h"
#include "tests/testing/run_process.h"
#include "tests/testing/temp_dir.h"

namespace skade {
namespace {

namespace fs = std::filesystem;
using testing::Lines;
using testing::ProcessResult;
using testing::RunProcess;
using testing::ShellQuote;

const std::string kInteropDir = skade::testing::SourcePath("tests/interop");
const std::string kProtoDir = skade::testing::SourcePath("src/skade/flightsql");

class FlightSqlInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult node = RunProcess("node --version");
    ASSERT_EQ(node.exit_code, 0) << "node is required (scripts/setup.sh installs it): " << node.err;
    for (const char* pkg : {"@grpc/grpc-js", "@grpc/proto-loader", "protobufjs", "apache-arrow"}) {
      ASSERT_TRUE(fs::exists(kInteropDir + "/node_modules/" + pkg + "/package.json"))
          << pkg << " is missing from " << kInteropDir << "/node_modules (run scripts/setup.sh)";
    }
    for (const char* proto : {"flight.proto", "flight_sql.proto"}) {
      ASSERT_TRUE(fs::exists(kProtoDir + "/" + proto)) << proto;
    }
  }

  void SkadeOk(const std::string& args) {
    ProcessResult r = RunProcess(std::string(skade::testing::CliPath()) + " --warehouse " +
                                 ShellQuote(warehouse_) + " " + args);
    ASSERT_EQ(r.exit_code, 0) << "skade " << args << "\n" << r.out << r.err;
  }

  // The lake flightsql_test.mjs expects (its LAKE constant): namespaces of 1, 2 and 3 levels,
  // identifier fields (one and two columns), an empty table.
  void PrepareLake() {
    for (const char* ns : {"one", "a.b", "x.y.z"})
      ASSERT_NO_FATAL_FAILURE(SkadeOk("ns create " + std::string(ns)));
    ASSERT_NO_FATAL_FAILURE(
        SkadeOk("create one.items --schema 'id BIGINT NOT NULL, label VARCHAR'"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk(
        "ingest one.items --sql " +
        ShellQuote(
            "SELECT * FROM (VALUES (1::BIGINT, 'alpha'), (2, 'beta'), (3, NULL)) t(id, label)")));
    ASSERT_NO_FATAL_FAILURE(
        SkadeOk("create a.b.orders --schema 'id BIGINT NOT NULL, name VARCHAR, price "
                "DECIMAL(10,2), day DATE'"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk("alter a.b.orders identifier-fields id"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk(
        "ingest a.b.orders --sql " +
        ShellQuote(
            "SELECT * FROM (VALUES (1::BIGINT, 'apple', 1.50::DECIMAL(10,2), DATE '2024-01-02'), "
            "(2, 'pear', 0.75, DATE '2024-02-29'), (3, 'fig', NULL, NULL)) t(id, name, price, "
            "day)")));
    ASSERT_NO_FATAL_FAILURE(
        SkadeOk("create a.b.order_lines --schema 'order_id BIGINT NOT NULL, line INTEGER NOT NULL, "
                "qty INTEGER'"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk("alter a.b.order_lines identifier-fields order_id line"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk("ingest a.b.order_lines --sql " +
                                    ShellQuote("SELECT * FROM (VALUES (1::BIGINT, 1, 5), (1, 2, "
                                               "1), (2, 1, 3)) t(order_id, line, qty)")));
    ASSERT_NO_FATAL_FAILURE(SkadeOk("create a.b.empty_t --schema 'id BIGINT, note VARCHAR'"));
    ASSERT_NO_FATAL_FAILURE(SkadeOk("create x.y.z.deep --schema 'k INTEGER, v VARCHAR'"));
    ASSERT_NO_FATAL_FAILURE(
        SkadeOk("ingest x.y.z.deep --sql " +
                ShellQuote("SELECT * FROM (VALUES (10, 'ten'), (20, 'twenty')) t(k, v)")));
  }

  // Runs one group of flightsql_test.mjs twice, each time on a freshly prepared lake: with
  // clients that echo the session cookie, and with clients that send none (ADBC, pyarrow, Arrow
  // C++). Each failed case becomes its own test failure.
  // $SKADE_FLIGHTSQL_MODES (e.g. "cookies") narrows the modes: the sanitizer stage of
  // scripts/test.sh runs one, the main stage both.
  void RunGroup(const std::string& group) {
    const char* only = std::getenv("SKADE_FLIGHTSQL_MODES");
    for (const char* mode : {"cookies", "cookieless"}) {
      if (only != nullptr && *only != '\0' && std::string(only).find(mode) == std::string::npos) continue;
      SCOPED_TRACE(mode);
      warehouse_ = tmp_.Path(std::string("lake-") + mode);
      ASSERT_NO_FATAL_FAILURE(PrepareLake());
      std::string cmd = "node " + ShellQuote(kInteropDir + "/flightsql_test.mjs") + " --skade " +
                        ShellQuote(skade::testing::CliPath()) + " --proto-dir " + ShellQuote(kProtoDir) +
                        " --warehouse " + ShellQuote(warehouse_) + " --tmp " + ShellQuote(tmp_.path()) +
                        " --fixtures " + ShellQuote(skade::testing::FixturesDir()) + " --group " + ShellQuote(group) +
                        " --mode " + mode;
      ProcessResult r = RunProcess(cmd);
      int ok = 0;
      bool summary = false;
      for (const std::string& line : Lines(r.out)) {
        if (line.rfind("ok ", 0) == 0) ++ok;
        if (line.rfind("FAIL", 0) == 0) ADD_FAILURE() << line;
        if (line.rfind("summary: ", 0) == 0) summary = true;
      }
      EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.out << "\n" << r.err;
      EXPECT_TRUE(summary) << "no summary line:\n" << r.out << "\n" << r.err;
      // A group about sessions runs with cookies only: its cookie-less run has no case.
      if (std::string(mode) == "cookies" || group != "sessions") {
        EXPECT_GT(ok, 0) << r.out;
      }
    }
  }

  testing::TempDir tmp_;
  std::string warehouse_;
};

TEST_F(FlightSqlInteropTest, MetadataCommands) { RunGroup("metadata"); }

TEST_F(FlightSqlInteropTest, StatementQueries) {
  SKADE_SKIP_WITHOUT_FIXTURES();
  RunGroup("queries");
}

TEST_F(FlightSqlInteropTest, PreparedStatements) { RunGroup("prepared"); }

TEST_F(FlightSqlInteropTest, StatementAndPreparedUpdates) { RunGroup("updates"); }

TEST_F(FlightSqlInteropTest, StatementIngest) { RunGroup("ingest"); }

TEST_F(FlightSqlInteropTest, SessionsAndSessionLimit) { RunGroup("sessions"); }

TEST_F(FlightSqlInteropTest, Cancellation) { RunGroup("cancel"); }

TEST_F(FlightSqlInteropTest, ReadOnlyRefusesEveryWritePath) { RunGroup("readonly"); }

TEST_F(FlightSqlInteropTest, SqlCannotReachFilesOrNetwork) { RunGroup("lockdown"); }

TEST_F(FlightSqlInteropTest, BasicAuthAndBearerTokens) { RunGroup("auth"); }

TEST_F(FlightSqlInteropTest, Tls) {
  ProcessResult openssl = RunProcess("openssl version");
  ASSERT_EQ(openssl.exit_code, 0) << "openssl is required: " << openssl.err;
  RunGroup("tls");
}

TEST_F(FlightSqlInteropTest, CommitsByOtherProcessesAreVisible) { RunGroup("commits"); }

TEST_F(FlightSqlInteropTest, BadInputGetsStatusAndServerKeepsServing) { RunGroup("badinput"); }

}  // namespace
}  // namespace skade
