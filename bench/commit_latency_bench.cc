// commit_latency_bench: how long one small commit takes, as a user feels it (issue 36 item 1).
// Commits run one after another on one table; each front is timed from the call to its
// acknowledgement, and the percentiles are printed beside the same-run baseline:
//   duckdb   DuckDB alone writing the same rows to a new Parquet file, then fsync of the file
//            (what any durable append must at least do)
//   library  Table::Append of the rows (a query) on the lake the CLI opens: SQLite catalog, and
//            PostgreSQL with --pg URI (or --pg auto: a throwaway cluster, tests/testing)
//   rest     the same append through skade's REST catalog client against a REST server
//            (skade serve's) in this process, on loopback
//   flight   a Flight SQL INSERT … SELECT (DoPut of CommandStatementUpdate) against a Flight SQL
//            server in this process, on loopback
//   cli      `skade sql "INSERT INTO …"`: a process per commit (start-up included)
// for commits of 1 row and of 1,000 rows.
//   commit_latency_bench [--commits 1000] [--cli-commits 200] [--pg URI|auto] [--only a,b]
//                        [--skade PATH] [--keep DIR]
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "flight.grpc.pb.h"
#include "flight_sql.pb.h"
#include "skade/catalog/rest_catalog.h"
#include "skade/cli/lake.h"
#include "skade/engine/database.h"
#include "skade/engine/schema_convert.h"
#include "skade/iceberg/partition_spec.h"
#include "skade/flightsql/server.h"
#include "skade/rest/server.h"
#include "skade/sql/lake_sql.h"
#include "skade/table/table.h"
#include "tests/testing/pg_cluster.h"

namespace skade::bench {
namespace {

namespace fs = std::filesystem;
namespace pb = ::arrow::flight::protocol;
namespace pbsql = ::arrow::flight::protocol::sql;

constexpr const char* kColumns = "id BIGINT, a BIGINT, s VARCHAR";

// The rows of commit `k`: `rows` rows with ids of their own.
std::string RowsQuery(int64_t k, int64_t rows) {
  const std::string first = std::to_string(k * rows);
  return "SELECT " + first + " + range AS id, range * 7 AS a, 'row ' || range AS s FROM range(" +
         std::to_string(rows) + ")";
}

struct Line {
  std::string front;
  int64_t rows = 0;
  std::vector<double> ms;
  double cpu_ms = 0;  // process CPU per commit (this process only: the cli line's child is not in it)
};

void Print(const Line& line, double baseline_p50) {
  std::cout << line.front << " | " << line.rows << " | " << line.ms.size() << " | " << Percentile(line.ms, 50)
            << " | " << Percentile(line.ms, 95) << " | " << Percentile(line.ms, 99) << " | "
            << *std::max_element(line.ms.begin(), line.ms.end()) << " | " << line.cpu_ms << " | "
            << Percentile(line.ms, 50) / baseline_p50 << std::endl;
}

// Runs `commit(k)` for k in [0, n) and times each.
template <typename Fn>
Result<Line> Measure(const std::string& front, int64_t rows, int n, Fn commit) {
  Line line{front, rows, {}, 0};
  line.ms.reserve(static_cast<size_t>(n));
  const double cpu_start = ProcessCpuSeconds();
  for (int k = 0; k < n; ++k) {
    const double start = NowSeconds();
    SKADE_RETURN_IF_ERROR(commit(k));
    line.ms.push_back((NowSeconds() - start) * 1e3);
  }
  line.cpu_ms = (ProcessCpuSeconds() - cpu_start) * 1e3 / n;
  return line;
}

Status FsyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status::IoError("fsync " + path);
}

Result<Line> DuckDbBaseline(engine::Database& db, const std::string& dir, int64_t rows, int n) {
  fs::create_directories(dir);
  return Measure("duckdb COPY + fsync", rows, n, [&](int k) -> Status {
    const std::string path = dir + "/f" + std::to_string(rows) + "-" + std::to_string(k) + ".parquet";
    SKADE_RETURN_IF_ERROR(db.Execute("COPY (" + RowsQuery(k, rows) + ") TO " + engine::QuoteString(path) +
                                     " (FORMAT parquet, COMPRESSION zstd)"));
    return FsyncFile(path);
  });
}

Result<catalog::TableIdent> CreateTable(catalog::Catalog& cat, const std::string& name) {
  SKADE_ASSIGN_OR_RETURN(catalog::Namespace ns, catalog::Namespace::Parse("bench"));
  if (!cat.NamespaceExists(ns).ValueOr(false)) SKADE_RETURN_IF_ERROR(cat.CreateNamespace(ns, {}));
  SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse("bench." + name));
  catalog::CreateTableRequest req;
  SKADE_ASSIGN_OR_RETURN(req.schema, engine::SchemaFromColumnDefinitions(kColumns));
  SKADE_ASSIGN_OR_RETURN(req.spec, iceberg::ParsePartitionSpec("", *req.schema, 0));
  req.properties["write.parquet.compression-codec"] = "zstd";
  SKADE_RETURN_IF_ERROR(cat.CreateTable(ident, req).status());
  return ident;
}

// Appends through `table` (one Table::Append per commit).
Result<Line> Appends(const std::string& front, table::Table& table, int64_t rows, int n) {
  return Measure(front, rows, n, [&](int k) -> Status {
    return table.Append({RowsQuery(k, rows), nullptr}).status();
  });
}

Result<cli::Lake> OpenLakeAt(const std::string& warehouse, const std::string& catalog_uri) {
  cli::LakeArgs args;
  args.warehouse = warehouse;
  args.catalog_uri = catalog_uri;
  args.quiet = true;
  cli::LakeOpenOptions open;
  open.use = cli::LakeOpenOptions::Use::kCreate;
  return cli::OpenLake(args, open);
}

Result<std::vector<Line>> Library(const std::string& label, const std::string& warehouse,
                                  const std::string& catalog_uri, int n) {
  SKADE_ASSIGN_OR_RETURN(cli::Lake lake, OpenLakeAt(warehouse, catalog_uri));
  std::vector<Line> lines;
  for (int64_t rows : {1, 1000}) {
    SKADE_ASSIGN_OR_RETURN(auto ident, CreateTable(*lake.catalog, "lib_" + std::to_string(rows)));
    SKADE_ASSIGN_OR_RETURN(auto table, cli::LoadLakeTable(lake, ident));
    SKADE_ASSIGN_OR_RETURN(Line line, Appends("library, " + label, *table, rows, n));
    lines.push_back(std::move(line));
  }
  return lines;
}

Result<std::vector<Line>> Rest(const std::string& warehouse, int n) {
  SKADE_ASSIGN_OR_RETURN(cli::Lake lake, OpenLakeAt(warehouse, ""));
  rest::RestOptions options;
  options.port = 0;
  SKADE_ASSIGN_OR_RETURN(auto server, rest::RestServer::Start(*lake.catalog, *lake.io, options));
  catalog::RestCatalogOptions client_options;
  client_options.uri = "http://127.0.0.1:" + std::to_string(server->port());
  SKADE_ASSIGN_OR_RETURN(auto client, catalog::OpenRestCatalog(client_options));
  std::vector<Line> lines;
  for (int64_t rows : {1, 1000}) {
    SKADE_ASSIGN_OR_RETURN(auto ident, CreateTable(*client, "rest_" + std::to_string(rows)));
    SKADE_ASSIGN_OR_RETURN(auto table, table::Table::Load(*client, *lake.io, *lake.db, ident));
    SKADE_ASSIGN_OR_RETURN(Line line, Appends("REST client → REST server, SQLite", *table, rows, n));
    lines.push_back(std::move(line));
  }
  return lines;
}

Result<std::vector<Line>> Flight(const std::string& warehouse, int n) {
  cli::LakeArgs args;
  args.warehouse = warehouse;
  args.quiet = true;
  cli::LakeOpenOptions open;
  open.use = cli::LakeOpenOptions::Use::kCreate;
  open.lock_down = true;  // as `skade serve` opens it for client SQL
  open.attach_in_memory = {"skade"};
  SKADE_ASSIGN_OR_RETURN(cli::Lake lake, cli::OpenLake(args, open));
  SKADE_ASSIGN_OR_RETURN(auto lake_sql, sql::LakeSql::Open(*lake.catalog, *lake.io, *lake.db, "skade"));
  flightsql::ServerOptions options;
  options.port = 0;
  SKADE_ASSIGN_OR_RETURN(auto server, flightsql::FlightSqlServer::Start(*lake_sql, options));
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), grpc::InsecureChannelCredentials());
  auto stub = pb::FlightService::NewStub(channel);
  auto update = [&](const std::string& sql) -> Status {
    pbsql::CommandStatementUpdate command;
    command.set_query(sql);
    google::protobuf::Any any;
    any.PackFrom(command);
    grpc::ClientContext ctx;
    auto stream = stub->DoPut(&ctx);
    pb::FlightData first;
    first.mutable_flight_descriptor()->set_type(pb::FlightDescriptor::CMD);
    first.mutable_flight_descriptor()->set_cmd(any.SerializeAsString());
    stream->Write(first);
    stream->WritesDone();
    pb::PutResult result;
    const bool answered = stream->Read(&result);
    const grpc::Status st = stream->Finish();
    if (!st.ok()) return Status::Internal("DoPut: " + st.error_message());
    if (!answered) return Status::Internal("DoPut: no update result");
    return Status::Ok();
  };
  std::vector<Line> lines;
  for (int64_t rows : {1, 1000}) {
    const std::string name = "flight_" + std::to_string(rows);
    SKADE_RETURN_IF_ERROR(CreateTable(*lake.catalog, name).status());
    SKADE_ASSIGN_OR_RETURN(Line line, Measure("Flight SQL INSERT, SQLite", rows, n, [&](int k) {
      return update("INSERT INTO skade.bench." + name + " " + RowsQuery(k, rows));
    }));
    lines.push_back(std::move(line));
  }
  return lines;
}

Status RunChild(const std::vector<std::string>& argv) {
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Internal("fork failed");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Status::Internal(argv[0] + " failed");
  return Status::Ok();
}

Result<std::vector<Line>> Cli(const std::string& skade, const std::string& warehouse, int n) {
  {
    SKADE_ASSIGN_OR_RETURN(cli::Lake lake, OpenLakeAt(warehouse, ""));
    for (int64_t rows : {1, 1000}) SKADE_RETURN_IF_ERROR(CreateTable(*lake.catalog, "cli_" + std::to_string(rows)).status());
  }
  std::vector<Line> lines;
  for (int64_t rows : {1, 1000}) {
    const std::string name = "bench.cli_" + std::to_string(rows);
    SKADE_ASSIGN_OR_RETURN(Line line, Measure("CLI `skade sql INSERT`, SQLite", rows, n, [&](int k) {
      return RunChild({skade, "--quiet", "--warehouse", warehouse, "sql", "INSERT INTO " + name + " " + RowsQuery(k, rows)});
    }));
    lines.push_back(std::move(line));
  }
  return lines;
}

bool Wanted(const std::string& only, const std::string& front) {
  if (only.empty()) return true;
  std::stringstream list(only);
  for (std::string item; std::getline(list, item, ',');) {
    if (item == front) return true;
  }
  return false;
}

Status Run(const std::string& dir, int n, int cli_n, const std::string& pg, const std::string& only,
           const std::string& skade) {
  SKADE_ASSIGN_OR_RETURN(auto db, engine::Database::Open({}));
  std::vector<Line> lines;
  std::map<int64_t, double> baseline;
  for (int64_t rows : {1, 1000}) {
    SKADE_ASSIGN_OR_RETURN(Line line, DuckDbBaseline(*db, dir + "/duckdb", rows, n));
    baseline[rows] = Percentile(line.ms, 50);
    lines.push_back(std::move(line));
  }
  auto add = [&](Result<std::vector<Line>> more) -> Status {
    if (!more.ok()) return more.status();
    for (auto& l : *more) lines.push_back(std::move(l));
    return Status::Ok();
  };
  if (Wanted(only, "library")) SKADE_RETURN_IF_ERROR(add(Library("SQLite", dir + "/sqlite", "", n)));
  if (!pg.empty() && Wanted(only, "library")) {
    std::string uri = pg;
    if (pg == "auto") {
      SKADE_ASSIGN_OR_RETURN(auto* cluster, testing::PgTestCluster::Shared());
      SKADE_ASSIGN_OR_RETURN(uri, cluster->CreateDatabase());
    }
    SKADE_RETURN_IF_ERROR(add(Library("PostgreSQL", dir + "/pg", uri, n)));
  }
  if (Wanted(only, "rest")) SKADE_RETURN_IF_ERROR(add(Rest(dir + "/rest", n)));
  if (Wanted(only, "flight")) SKADE_RETURN_IF_ERROR(add(Flight(dir + "/flight", n)));
  if (Wanted(only, "cli")) SKADE_RETURN_IF_ERROR(add(Cli(skade, dir + "/cli", cli_n)));
  std::cout << "\nfront | rows | commits | p50 ms | p95 ms | p99 ms | max ms | CPU ms/commit | p50 / DuckDB p50\n";
  for (const Line& l : lines) Print(l, baseline[l.rows]);
  return Status::Ok();
}

}  // namespace
}  // namespace skade::bench

int main(int argc, char** argv) {
  CLI::App app{"latency of one small commit, per front, against DuckDB writing the same file"};
  int commits = 1000, cli_commits = 200;
  std::string pg, only, keep;
  std::string skade = (std::filesystem::path(argv[0]).parent_path() / ".." / "src" / "skade").string();
  app.add_option("--commits", commits, "sequential commits per line")->capture_default_str();
  app.add_option("--cli-commits", cli_commits, "commits of the cli line (a process each)")->capture_default_str();
  app.add_option("--pg", pg, "PostgreSQL catalog URI for a second library line, or 'auto' (a throwaway cluster)");
  app.add_option("--only", only, "fronts to run besides the baseline: library,rest,flight,cli");
  app.add_option("--skade", skade, "the skade binary of the cli line")->capture_default_str();
  app.add_option("--keep", keep, "lake folder to write (kept); default a temp folder, removed");
  CLI11_PARSE(app, argc, argv);
  namespace fs = std::filesystem;
  std::string dir = keep;
  if (dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "skade-commit-latency.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return 1;
    dir = pattern;
  }
  skade::Status st = skade::bench::Run(dir, commits, cli_commits, pg, only, skade);
  if (keep.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  if (!st.ok()) {
    std::cerr << "commit_latency_bench: " << st.ToString() << "\n";
    return 1;
  }
  return 0;
}
