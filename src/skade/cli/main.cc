// The `skade` command line.
#include <iostream>

#include <CLI/CLI.hpp>

#include "skade/base/log.h"
#include "skade/cli/commands.h"

namespace {

// Parses OLD=NEW pairs given to --relocate.
bool ParseRelocations(const std::vector<std::string>& raw,
                      std::vector<std::pair<std::string, std::string>>* out) {
  for (const std::string& r : raw) {
    size_t eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) {
      std::cerr << "skade: --relocate expects OLD=NEW, got '" << r << "'\n";
      return false;
    }
    out->emplace_back(r.substr(0, eq), r.substr(eq + 1));
  }
  return true;
}

skade::cli::OutputFormat FormatOf(const std::string& name) {
  if (name == "csv") return skade::cli::OutputFormat::kCsv;
  if (name == "json") return skade::cli::OutputFormat::kJson;
  return skade::cli::OutputFormat::kTable;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"skade: an Apache Iceberg lakehouse engine"};
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level, "debug|info|warn|error|off");

  skade::cli::ScanArgs scan;
  std::vector<std::string> scan_relocate;
  std::string scan_format = "table";
  std::string columns;
  auto* scan_cmd = app.add_subcommand("scan", "Read rows of an Iceberg table");
  scan_cmd->add_option("table", scan.table, "table folder or *.metadata.json file")->required();
  auto* snap_opt = scan_cmd->add_option("--snapshot", scan.snapshot_id, "snapshot id");
  auto* ref_opt = scan_cmd->add_option("--ref", scan.ref, "branch or tag name");
  auto* asof_opt = scan_cmd->add_option("--as-of", scan.as_of,
                                        "time travel: epoch ms or ISO timestamp (UTC)");
  snap_opt->excludes(ref_opt)->excludes(asof_opt);
  ref_opt->excludes(asof_opt);
  scan_cmd->add_option("--columns", columns, "comma-separated column names");
  scan_cmd->add_option("--where", scan.where, "SQL boolean expression");
  scan_cmd->add_option("--limit", scan.limit, "maximum number of rows")->check(CLI::NonNegativeNumber);
  scan_cmd->add_flag("--count", scan.count, "print the row count only");
  scan_cmd->add_option("--format", scan_format, "table|csv|json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  scan_cmd->add_option("--relocate", scan_relocate, "OLD=NEW location prefix rewrite");
  scan_cmd->add_flag("-v,--verbose", scan.verbose, "print the plan and SQL to stderr");

  skade::cli::InspectArgs inspect;
  std::vector<std::string> inspect_relocate;
  auto* inspect_cmd = app.add_subcommand("inspect", "Show a table's metadata, manifests and files");
  inspect_cmd->add_option("table", inspect.table, "table folder or *.metadata.json file")->required();
  inspect_cmd->add_flag("--json", inspect.json, "machine-readable output");
  inspect_cmd->add_option("--snapshot", inspect.snapshot_id, "list manifests of this snapshot");
  inspect_cmd->add_option("--relocate", inspect_relocate, "OLD=NEW location prefix rewrite");

  CLI11_PARSE(app, argc, argv);
  if (!log_level.empty()) skade::SetLogLevel(skade::ParseLogLevel(log_level));

  if (*scan_cmd) {
    if (!ParseRelocations(scan_relocate, &scan.relocate)) return 2;
    scan.format = FormatOf(scan_format);
    size_t start = 0;
    while (!columns.empty() && start <= columns.size()) {
      size_t comma = columns.find(',', start);
      std::string c = columns.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!c.empty() && c.front() == ' ') c.erase(c.begin());
      while (!c.empty() && c.back() == ' ') c.pop_back();
      if (!c.empty()) scan.columns.push_back(c);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return skade::cli::RunScan(scan, std::cout, std::cerr);
  }
  if (*inspect_cmd) {
    if (!ParseRelocations(inspect_relocate, &inspect.relocate)) return 2;
    return skade::cli::RunInspect(inspect, std::cout, std::cerr);
  }
  return 2;
}
