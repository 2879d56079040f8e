#include "skade/cli/lineage_command.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "skade/catalog/polled_log.h"
#include "skade/cli/messages.h"
#include "skade/events/watcher.h"
#include "skade/io/http_client.h"
#include "skade/table/failed_write_spool.h"
#include "skade/lineage/run_event.h"

namespace skade::cli {
namespace {

int Fail(const Status& status) {
  std::cerr << ErrorLine(status) << "\n";
  return 1;
}

lineage::LineageNaming NamingOf(const LineageArgs& args, const Lake& lake) {
  lineage::LineageNaming naming;
  naming.job_namespace = args.job_namespace;
  naming.dataset_namespace = args.dataset_namespace;
  naming.catalog_name = lake.catalog->name();
  naming.catalog_uri = io::RedactUrl(lake.catalog_uri);
  naming.warehouse = lake.warehouse;
  return naming;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct LineageShowArgs {
  std::string table;
  int64_t after = 0;
  int64_t limit = 1000;
  LineageArgs naming;  // its namespaces only
};

// The options naming jobs and datasets, shared by every lineage command.
void AddNamingOptions(CLI::App& cmd, LineageArgs* args) {
  cmd.add_option("--openlineage-namespace", args->job_namespace, "OpenLineage job namespace (default skade)");
  cmd.add_option("--openlineage-dataset-namespace", args->dataset_namespace,
                 "OpenLineage dataset namespace (default skade://HOST/WAREHOUSE)");
}

int RunShow(const LakeArgs& lake_args, const LineageShowArgs& args) {
  auto ident = catalog::TableIdent::Parse(args.table);
  if (!ident.ok()) return Fail(ident.status());
  auto lake = OpenLakeFor(lake_args, LakeOpenOptions::Use::kRead);
  if (!lake.ok()) return Fail(lake.status());
  // A table the catalog does not have is an error, unless the log still holds its commits (a
  // dropped table's history).
  auto state = lake->catalog->LoadTable(*ident);
  if (!state.ok() && state.status().code() != StatusCode::kNotFound) return Fail(state.status());
  const bool known = state.ok();
  const lineage::CommitEventBuilder builder(*lake->io, NamingOf(args.naming, *lake));
  int64_t after = args.after, shown = 0;
  while (shown < args.limit) {
    auto entries = lake->catalog->CommitsSince(after, 1000);
    if (!entries.ok()) return Fail(entries.status());
    if (entries->empty()) break;
    for (const catalog::CommitLogEntry& e : *entries) {
      after = e.commit_seq;
      if (!(e.table == *ident) || shown >= args.limit) continue;
      for (const std::string& event : builder.Build(e)) std::cout << event << "\n";
      ++shown;
    }
  }
  std::cout.flush();
  if (!known && shown == 0) {
    return Fail(Status::NotFound("table " + ident->ToString() +
                                 " does not exist and the commit log has no commits of it"));
  }
  return 0;
}

int RunFollow(const LakeArgs& lake_args, const LineageArgs& args) {
  if (!LineageWanted(args)) {
    return Fail(Status::InvalidArgument("no OpenLineage transport: give --openlineage-url, --openlineage-file, "
                                        "--openlineage-console or $OPENLINEAGE_URL"));
  }
  LakeOpenOptions open;
  open.use = LakeOpenOptions::Use::kWrite;  // the cursor is stored in the catalog
  open.commit_events = true;
  auto lake = OpenLake(lake_args, open);
  if (!lake.ok()) return Fail(lake.status());
  events::Bus bus;
  auto watcher = events::Watcher::Start(*lake->catalog, lake->catalog_uri, bus);
  if (!watcher.ok()) return Fail(watcher.status());
  auto emitter = StartLineage(args, *lake, bus);
  if (!emitter.ok()) return Fail(emitter.status());
  InstallStopHandlers();
  std::cerr << "skade lineage: following the catalog; stop with Ctrl-C" << std::endl;
  while (!StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*emitter)->Stop();
  const lineage::EmitterStats s = (*emitter)->stats();
  std::cerr << "skade lineage: delivered through commit " << s.delivered_seq << " (" << s.events_sent << " events, "
            << s.send_failures << " failed attempts, " << s.events_refused << " refused)" << std::endl;
  return 0;
}

}  // namespace

void AddLineageOptions(CLI::App& cmd, LineageArgs* args) {
  cmd.add_option("--openlineage-url", args->url,
                 "send OpenLineage events to this endpoint (Marquez: http://HOST:5000; else $OPENLINEAGE_URL; "
                 "token in $OPENLINEAGE_API_KEY)");
  cmd.add_option("--openlineage-file", args->file, "append OpenLineage events to this file (JSON lines, rotated)");
  cmd.add_flag("--openlineage-console", args->console, "print OpenLineage events on stdout");
  AddNamingOptions(cmd, args);
  cmd.add_option("--openlineage-state", args->state,
                 "cursor file when the catalog keeps no cursors (default ~/.local/state/skade/lineage-*.cursor)");
  cmd.add_flag("--openlineage-from-beginning", args->from_beginning,
               "without a stored cursor, send every commit in the log (default: only new ones)");
}

bool LineageWanted(const LineageArgs& args) {
  return !args.url.empty() || !args.file.empty() || args.console || !Env("OPENLINEAGE_URL").empty();
}

Result<std::unique_ptr<lineage::Emitter>> StartLineage(const LineageArgs& args, Lake& lake, events::Bus& bus) {
  if (!LineageWanted(args)) return std::unique_ptr<lineage::Emitter>();
  // $OPENLINEAGE_URL is the transport only when no flag names one.
  std::string url = args.url;
  if (url.empty() && args.file.empty() && !args.console) url = Env("OPENLINEAGE_URL");
  if ((!url.empty()) + (!args.file.empty()) + (args.console ? 1 : 0) > 1) {
    return Status::InvalidArgument("give one OpenLineage transport: --openlineage-url, --openlineage-file or "
                                   "--openlineage-console");
  }
  std::unique_ptr<lineage::Transport> transport;
  if (!url.empty()) {
    lineage::HttpTransportOptions o;
    o.url = url;
    o.api_key = Env("OPENLINEAGE_API_KEY");
    SKADE_ASSIGN_OR_RETURN(transport, lineage::MakeHttpTransport(o));
  } else if (!args.file.empty()) {
    lineage::FileTransportOptions o;
    o.path = args.file;
    SKADE_ASSIGN_OR_RETURN(transport, lineage::MakeFileTransport(o));
  } else {
    transport = lineage::MakeConsoleTransport(std::cout);
  }
  const std::string state =
      args.state.empty() ? catalog::DefaultStatePath(lake.catalog_uri, "lineage", ".cursor") : args.state;
  SKADE_ASSIGN_OR_RETURN(auto cursor, lineage::OpenCursorStore(*lake.catalog, "openlineage", state));
  lineage::EmitterOptions options;
  options.naming = NamingOf(args, lake);
  options.start_at_beginning = args.from_beginning;
  options.failure_spool = table::FailedWriteSpool::DefaultPath(lake.catalog_uri);
  return lineage::Emitter::Start(*lake.catalog, *lake.io, bus, std::move(transport), std::move(cursor),
                                 std::move(options));
}

void AddLineageCommand(CLI::App& app, const LakeArgs& lake, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("lineage", "OpenLineage events of the lake's commits");
  cmd->require_subcommand(1);
  auto run_args = std::make_shared<LineageArgs>();
  CLI::App* run = cmd->add_subcommand("run", "follow the catalog and send every commit's OpenLineage events");
  AddLineageOptions(*run, run_args.get());
  run->callback([&lake, run_args, exit_code] { *exit_code = RunFollow(lake, *run_args); });
  auto show_args = std::make_shared<LineageShowArgs>();
  CLI::App* show = cmd->add_subcommand("show", "print the OpenLineage events a table's commits produce (JSON lines)");
  show->add_option("table", show_args->table, "ns.table")->required();
  show->add_option("--after", show_args->after, "only commits after this commit_seq");
  show->add_option("--limit", show_args->limit, "at most this many commits")->check(CLI::PositiveNumber);
  AddNamingOptions(*show, &show_args->naming);
  show->callback([&lake, show_args, exit_code] { *exit_code = RunShow(lake, *show_args); });
}

}  // namespace skade::cli
