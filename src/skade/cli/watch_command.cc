// `skade watch`: print commit events as they land, from the lake's catalog (replay then tail,
// other processes' commits found by the watcher) or from a Commits gRPC server; and
// `skade events-serve`: serve the lake's commit stream over gRPC on 127.0.0.1.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/base64.h"
#include "skade/cli/lake.h"
#include "skade/cli/messages.h"
#include "skade/cli/output.h"
#include "skade/events/bus.h"
#include "skade/events/commit_client.h"
#include "skade/events/commit_service.h"
#include "skade/events/replay.h"
#include "skade/events/watcher.h"
#include "skade/flightsql/auth.h"
#include "skade/io/file_io.h"

namespace skade::cli {

namespace {

// Set by SIGINT/SIGTERM; the only state a signal handler may touch.
volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void OnStopSignal(int) { g_stop_requested = 1; }

}  // namespace

void InstallStopHandlers() {
  g_stop_requested = 0;
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool StopRequested() { return g_stop_requested != 0; }

namespace {

struct WatchArgs {
  std::optional<int64_t> after;  // replay after this commit_seq (0 = from the first); unset = from now
  std::vector<std::string> tables;
  std::string server;
  std::string user;  // basic auth against the server; the password comes from $SKADE_PASSWORD
  bool json = false;
  int64_t count = 0;  // stop after this many events (0 = run until interrupted)
};

struct ServeArgs {
  int port = 0;
};

int Fail(const Status& status) {
  std::cerr << ErrorLine(status) << "\n";
  return 1;
}

// How long `watch --server` waits for the server to answer before saying it cannot reach it.
constexpr std::chrono::milliseconds kConnectTimeout{5000};

void PrintEvent(const events::CommitEvent& event, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["commit_seq"] = event.commit_seq;
    j["table"] = event.table_name();
    j["namespace"] = event.table().ns.levels;
    j["name"] = event.table().name;
    j["snapshot_id"] = event.snapshot_id ? nlohmann::ordered_json(*event.snapshot_id) : nullptr;
    j["operation"] = event.operation();
    j["added_records"] = event.added_records;
    j["deleted_records"] = event.deleted_records;
    j["committed_at_us"] = event.committed_at_us;
    j["committed_at"] = FormatMillis(event.committed_at_us / 1000);
    j["metadata_location"] = event.metadata_location();
    std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else {
    std::cout << event.commit_seq << " " << event.table_name() << " " << event.operation()
              << " snapshot=" << (event.snapshot_id ? std::to_string(*event.snapshot_id) : "-")
              << " added=" << event.added_records << " deleted=" << event.deleted_records
              << " at=" << FormatMillis(event.committed_at_us / 1000) << " " << event.metadata_location() << "\n";
  }
  std::cout.flush();
}

Result<std::set<std::string>> ParseTables(const std::vector<std::string>& tables) {
  std::set<std::string> out;
  for (const std::string& name : tables) {
    SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(name));
    if (ident.ns.empty()) return Status::InvalidArgument("--table '" + name + "' must be ns.table");
    out.insert(ident.ToString());
  }
  return out;
}

// Each --table must name a table of the catalog: a misspelt one would wait forever.
Status CheckTablesExist(catalog::Catalog& catalog, const std::vector<std::string>& tables) {
  for (const std::string& name : tables) {
    SKADE_ASSIGN_OR_RETURN(catalog::TableIdent ident, catalog::TableIdent::Parse(name));
    Result<catalog::TableState> state = catalog.LoadTable(ident);
    if (state.ok()) continue;
    if (state.status().code() != StatusCode::kNotFound) return state.status();
    return Status::NotFound("--table " + name + ": no such table in the catalog (`skade tables` lists them)");
  }
  return Status::Ok();
}

int WatchLocal(const LakeArgs& lake_args, const WatchArgs& args) {
  Result<std::set<std::string>> tables = ParseTables(args.tables);
  if (!tables.ok()) return Fail(tables.status());
  LakeOpenOptions open;
  open.use = LakeOpenOptions::Use::kRead;
  open.commit_events = true;
  Result<Lake> lake = OpenLake(lake_args, open);
  if (!lake.ok()) return Fail(lake.status());
  if (Status exist = CheckTablesExist(*lake->catalog, args.tables); !exist.ok()) return Fail(exist);
  events::Bus bus;
  Result<std::unique_ptr<events::Watcher>> watcher =
      events::Watcher::Start(*lake->catalog, lake->catalog_uri, bus);
  if (!watcher.ok()) return Fail(watcher.status());
  Result<std::unique_ptr<events::ReplayThenTail>> stream =
      events::ReplayThenTail::Open(*lake->catalog, bus, args.after, {});
  if (!stream.ok()) return Fail(stream.status());
  int64_t printed = 0;
  while (!StopRequested() && (args.count == 0 || printed < args.count)) {
    Result<std::optional<events::CommitEvent>> next =
        (*stream)->Next(std::chrono::milliseconds(100));
    if (!next.ok()) return Fail(next.status());
    if (!next->has_value()) continue;
    const events::CommitEvent& event = **next;
    if (!tables->empty() && !tables->count(event.table_name())) continue;
    PrintEvent(event, args.json);
    ++printed;
  }
  return 0;
}

// Follows a server; on UNAVAILABLE (server restart) it reconnects and resumes after the last
// commit_seq it printed, so nothing is missed or repeated.
int WatchServer(const WatchArgs& args) {
  Result<std::set<std::string>> tables = ParseTables(args.tables);
  if (!tables.ok()) return Fail(tables.status());
  events::CommitClient::Options options;
  if (!args.user.empty()) {
    const char* password = std::getenv("SKADE_PASSWORD");
    options.authorization = "Basic " + EncodeBase64(args.user + ":" + (password ? password : ""));
  }
  Result<std::unique_ptr<events::CommitClient>> client = events::CommitClient::Connect(args.server, options);
  if (!client.ok()) return Fail(client.status());
  // A first call that must answer: an address nothing listens on is an error, not a wait.
  // (Later, a server that goes away is waited for: it is restarting.)
  Result<int64_t> reachable = (*client)->Latest(kConnectTimeout);
  if (!reachable.ok()) {
    const bool unreachable = reachable.status().code() == StatusCode::kUnavailable;
    return Fail(Status(reachable.status().code(), (unreachable ? "cannot reach the commit stream at " : "the commit stream at ") +
                                                      args.server + ": " + reachable.status().message()));
  }
  std::optional<int64_t> cursor = args.after;
  int64_t printed = 0;
  // The first call asks that each --table exist (a misspelt name is an error, not a wait that
  // never ends, as in a local watch); calls after a reconnect follow a table even if it was
  // dropped meanwhile.
  bool first_call = true;
  while (!StopRequested() && (args.count == 0 || printed < args.count)) {
    Result<std::unique_ptr<events::CommitClientStream>> stream =
        (*client)->Subscribe(cursor, args.tables, std::chrono::milliseconds(0), first_call);
    if (!stream.ok()) return Fail(stream.status());
    // Next blocks in gRPC; this thread turns a stop signal into a cancel.
    std::atomic<bool> done{false};
    std::thread canceller([&] {
      while (!done && !StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      (*stream)->Cancel();
    });
    Status ended;
    while (args.count == 0 || printed < args.count) {
      Result<std::optional<events::CommitEvent>> next = (*stream)->Next();
      if (!next.ok()) {
        ended = next.status();
        break;
      }
      if (!next->has_value()) break;
      first_call = false;  // the server has answered the check
      cursor = (*next)->commit_seq;
      PrintEvent(**next, args.json);
      ++printed;
    }
    done = true;
    canceller.join();
    if (StopRequested() || (args.count > 0 && printed >= args.count)) break;
    // A stream the server ended otherwise than by going away has answered the check too; one
    // cut before any answer asks again after the reconnect.
    if (!ended.ok() && ended.code() != StatusCode::kUnavailable) first_call = false;
    if (ended.code() == StatusCode::kNotFound) {
      return Fail(Status::NotFound(ended.message() + " at " + args.server + " (`skade tables` lists them)"));
    }
    if (!ended.ok() && ended.code() != StatusCode::kUnavailable) return Fail(ended);
    if (!cursor) {
      // "From now" must not skip what happened while reconnecting: pin the cursor.
      Result<int64_t> head = (*client)->Latest(std::chrono::milliseconds(1000));
      if (head.ok()) cursor = *head;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return 0;
}

int RunWatch(const LakeArgs& lake_args, const WatchArgs& args) {
  if (args.after && *args.after < 0) return Fail(Status::InvalidArgument("--after must be >= 0"));
  InstallStopHandlers();
  return args.server.empty() ? WatchLocal(lake_args, args) : WatchServer(args);
}

int RunEventsServe(const LakeArgs& lake_args, const ServeArgs& args) {
  InstallStopHandlers();
  LakeOpenOptions open;
  open.use = LakeOpenOptions::Use::kRead;
  open.commit_events = true;
  Result<Lake> lake = OpenLake(lake_args, open);
  if (!lake.ok()) return Fail(lake.status());
  events::Bus bus;
  Result<std::unique_ptr<events::Watcher>> watcher =
      events::Watcher::Start(*lake->catalog, lake->catalog_uri, bus);
  if (!watcher.ok()) return Fail(watcher.status());
  Result<std::unique_ptr<events::CommitServer>> server =
      events::CommitServer::Start(*lake->catalog, bus, "127.0.0.1", args.port);
  if (!server.ok()) return Fail(server.status());
  std::cout << "listening on 127.0.0.1:" << (*server)->port() << std::endl;
  while (!StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*server)->Shutdown();
  return 0;
}

}  // namespace

void AddWatchCommand(CLI::App& app, const LakeArgs& lake, int* exit_code) {
  const LakeArgs* lake_args = &lake;
  auto watch = std::make_shared<WatchArgs>();
  auto* watch_cmd = app.add_subcommand(
      "watch", "Print commit events as they land (replay after --after, then live)");
  watch_cmd->add_option("--after", watch->after,
                        "replay commits after this commit_seq (0 = from the first; default: from now)");
  watch_cmd->add_option("--table", watch->tables, "only this table (ns.table); repeatable")->allow_extra_args(false);
  watch_cmd->add_option("--server", watch->server, "follow a Commits gRPC server at HOST:PORT");
  watch_cmd->add_option("--user", watch->user, "basic auth user for --server (password from $SKADE_PASSWORD)");
  watch_cmd->add_flag("--json", watch->json, "one JSON object per line");
  watch_cmd->add_option("--count", watch->count, "stop after this many events")
      ->check(CLI::NonNegativeNumber);
  watch_cmd->callback([=] { *exit_code = RunWatch(*lake_args, *watch); });

  auto serve = std::make_shared<ServeArgs>();
  auto* serve_cmd = app.add_subcommand(
      "events-serve", "Serve the lake's commit stream (skade.v1.Commits gRPC) on 127.0.0.1");
  serve_cmd->add_option("--port", serve->port, "TCP port (0 = pick a free one)")
      ->check(CLI::Range(0, 65535));
  serve_cmd->callback([=] { *exit_code = RunEventsServe(*lake_args, *serve); });
}

}  // namespace skade::cli
