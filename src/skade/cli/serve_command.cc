// `skade serve`: the Arrow Flight SQL server and the Commits stream on one gRPC port, over the
// lake's catalog, until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "skade/base/forwarded.h"
#include "skade/catalog/catalog.h"
#include "skade/cli/lake.h"
#include "skade/cli/messages.h"
#include "skade/cli/lineage_command.h"
#include "skade/console/preview.h"
#include "skade/console/query.h"
#include "skade/console/static_files.h"
#include "skade/events/bus.h"
#include "skade/events/commit_service.h"
#include "skade/events/watcher.h"
#include "skade/flightsql/auth.h"
#include "skade/flightsql/server.h"
#include "skade/io/file_io.h"
#include "skade/io/s3_file_io.h"
#include "skade/io/sealer.h"
#include "skade/rest/server.h"
#include "skade/sql/client_query.h"
#include "skade/sql/lake_sql.h"

namespace skade::cli {
namespace {

struct ServeOptions {
  LineageArgs lineage;
  std::string host = "127.0.0.1";
  int flight_port = 31337;
  bool read_only = false;
  std::string auth = "none";
  std::string users_file;
  std::string tls_cert;
  std::string tls_key;
  int max_sessions = 256;
  int session_idle_timeout_s = 900;
  int query_timeout_s = 0;  // not given: sql::ClientStatementTimeout's default
  int token_lifetime_s = 3600;
  int max_streams_per_client = 16;
  int max_streams = 256;
  double stall_timeout_s = 60;
  int64_t buffer_budget_mb = 1024;
  int64_t manifest_cache_mb = 256;
  std::string query_memory = "4GB";
  int rest_port = -1;  // -1 = no REST catalog
  bool no_ui = false;  // the web console under /ui on the REST port
  std::string rest_prefix;
  std::string rest_auth = "none";
  std::string rest_clients_file;
  std::string rest_tokens_file;
  int rest_threads = 8;
  bool rest_rebase_commits = true;
  bool rest_remote_signing = false;
  int64_t rest_plan_page_tasks = 1000;
  int64_t rest_plan_async_manifests = 64;
  std::string catalog_name = "skade";
  std::vector<std::string> allow_dirs;
  std::string shared_key_file;
  int handle_lifetime_s = 86400;
  // Flight SQL registry limits (flightsql::ServerOptions).
  int max_pending_tickets = 1024;
  int max_prepared = 4096;
  int64_t handle_params_kb = 64;
  int64_t max_params_mb = 16;
  int64_t max_params_per_user_mb = 256;
  std::vector<std::string> trusted_proxies;
};

int Fail(const Status& st) {
  std::cerr << ErrorLine(st) << "\n";
  return 1;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "name:secret" lines of `text` (empty lines and # comments skipped); `what` names the source.
Result<std::map<std::string, std::string>> ParsePairs(const std::string& text, const std::string& what) {
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return Status::InvalidArgument(what + ": bad line (want name:secret)");
    out[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return out;
}

Result<std::map<std::string, std::string>> LoadPairs(const std::string& file) {
  SKADE_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  SKADE_ASSIGN_OR_RETURN(auto out, ParsePairs(text, file));
  if (out.empty()) return Status::InvalidArgument(file + " names no client");
  return out;
}

// --trusted-proxy addresses in canonical form; kInvalidArgument for one that is no IP address.
Result<std::vector<std::string>> TrustedProxies(const ServeOptions& o) {
  std::vector<std::string> out;
  for (const std::string& text : o.trusted_proxies) {
    std::optional<std::string> address = CanonicalIpAddress(text);
    if (!address) return Status::InvalidArgument("--trusted-proxy '" + text + "' is not an IP address");
    out.push_back(std::move(*address));
  }
  return out;
}

// The REST catalog's options from the command line.
Result<rest::RestOptions> RestOptionsOf(const ServeOptions& o) {
  rest::RestOptions r;
  r.host = o.host;
  r.port = o.rest_port;
  r.prefix = o.rest_prefix;
  r.read_only = o.read_only;
  r.allowed_directories = o.allow_dirs;
  r.threads = o.rest_threads;
  r.rebase_commits = o.rest_rebase_commits;
  if (o.rest_remote_signing) {
    // The store's settings as the lake's own S3 client reads them (AWS_* variables, profiles).
    SKADE_ASSIGN_OR_RETURN(io::S3Options s3, io::S3OptionsFromEnvironment());
    if (s3.access_key_id.empty()) {
      return Status::InvalidArgument(
          "--remote-signing signs with the object store's credentials, and none are set (AWS_ACCESS_KEY_ID and "
          "AWS_SECRET_ACCESS_KEY, or a profile)");
    }
    r.remote_signing = std::move(s3);
  }
  r.plan_page_tasks = static_cast<size_t>(o.rest_plan_page_tasks);
  r.plan_async_manifests = static_cast<size_t>(o.rest_plan_async_manifests);
  r.plan_manifest_cache_bytes = o.manifest_cache_mb << 20;
  r.token_lifetime = std::chrono::seconds(o.token_lifetime_s);
  r.tls_cert_file = o.tls_cert;
  r.tls_key_file = o.tls_key;
  r.access_log = true;
  if (o.rest_auth == "oauth2") {
    if (o.rest_clients_file.empty()) return Status::InvalidArgument("--rest-auth oauth2 needs --rest-clients-file");
    SKADE_ASSIGN_OR_RETURN(r.clients, LoadPairs(o.rest_clients_file));
  } else if (o.rest_auth == "bearer") {
    if (o.rest_tokens_file.empty()) return Status::InvalidArgument("--rest-auth bearer needs --rest-tokens-file");
    SKADE_ASSIGN_OR_RETURN(std::string text, ReadFile(o.rest_tokens_file));
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty() && line[0] != '#') r.static_tokens.push_back(line);
    }
    if (r.static_tokens.empty()) return Status::InvalidArgument(o.rest_tokens_file + " holds no token");
  } else if (o.rest_auth != "none") {
    return Status::InvalidArgument("--rest-auth must be none, bearer or oauth2");
  }
  return r;
}

// Users as "name:password" lines (a file) or comma-separated pairs ($SKADE_USERS).
// The key ring every server of a deployment shares (io/sealer.h): from --shared-key-file, else
// $SKADE_SHARED_KEYS, else null (a key of this process alone).
Result<std::shared_ptr<const io::Sealer>> LoadSharedKeys(const std::string& file) {
  if (!file.empty()) {
    SKADE_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
    auto sealer = io::Sealer::FromText(text);
    if (!sealer.ok()) return sealer.status().WithContext(file);
    return sealer;
  }
  if (const char* env = std::getenv("SKADE_SHARED_KEYS"); env != nullptr && *env != '\0') {
    auto sealer = io::Sealer::FromText(env);
    if (!sealer.ok()) return sealer.status().WithContext("$SKADE_SHARED_KEYS");
    return sealer;
  }
  return std::shared_ptr<const io::Sealer>();
}

Result<std::map<std::string, std::string>> LoadUsers(const std::string& file) {
  std::string text;
  if (!file.empty()) {
    SKADE_ASSIGN_OR_RETURN(text, ReadFile(file));
  } else if (const char* env = std::getenv("SKADE_USERS")) {
    text = env;
    for (char& c : text) {
      if (c == ',') c = '\n';
    }
  }
  SKADE_ASSIGN_OR_RETURN(auto users, ParsePairs(text, file.empty() ? "$SKADE_USERS" : file));
  if (users.empty()) return Status::InvalidArgument("--auth basic needs users (--users-file or $SKADE_USERS)");
  return users;
}

// Limits that bound each other, checked before anything opens (each flag's own range is
// checked by the parser).
Status CheckLimits(const ServeOptions& o) {
  if (o.max_params_per_user_mb < o.max_params_mb) {
    return Status::InvalidArgument("--max-params-per-user-mb (" + std::to_string(o.max_params_per_user_mb) +
                                   ") is less than --max-params-mb (" + std::to_string(o.max_params_mb) +
                                   "): no binding that large could ever be kept");
  }
  return Status::Ok();
}

// Where Flight SQL keeps what cannot travel in a handle (closes, cancels, large parameters), for
// the operator of several instances: the catalog database, or this instance only.
std::string ServerStateLine(const ServeOptions& o, const catalog::Catalog& catalog) {
  const std::string large = "parameters over " + std::to_string(o.handle_params_kb) + " KiB";
  const std::string bounds = " up to " + std::to_string(o.max_params_mb) + " MiB a binding and " +
                             std::to_string(o.max_params_per_user_mb) + " MiB a user";
  if (catalog.KeepsServerState()) {
    return "flight sql server state shared through the catalog database (closes, cancels, " + large + bounds + ")";
  }
  return std::string("flight sql server state on this instance only (") +
         (o.read_only ? "--read-only writes nothing to the catalog" : "the catalog keeps none") +
         "): closes, cancels and " + large + " hold here only," + bounds;
}

int RunServe(const LakeArgs& lake_args, const ServeOptions& o) {
  InstallStopHandlers();
  if (Status limits = CheckLimits(o); !limits.ok()) return Fail(limits);

  LakeOpenOptions open;
  // serve makes the lake it is pointed at, unless it only reads.
  open.use = o.read_only ? LakeOpenOptions::Use::kRead : LakeOpenOptions::Use::kCreate;
  open.commit_events = true;
  open.lock_down = true;
  open.attach_in_memory = {o.catalog_name};
  open.allowed_directories = o.allow_dirs;
  open.memory_limit = o.query_memory;
  Result<Lake> lake = OpenLake(lake_args, open);
  if (!lake.ok()) return Fail(lake.status());
  auto lake_sql = sql::LakeSql::Open(*lake->catalog, *lake->io, *lake->db, o.catalog_name, o.manifest_cache_mb << 20);
  if (!lake_sql.ok()) return Fail(lake_sql.status());
  (*lake_sql)->set_write_observer(lake->write_observer.get());

  events::Bus bus;
  auto watcher = events::Watcher::Start(*lake->catalog, lake->catalog_uri, bus);
  if (!watcher.ok() && watcher.status().code() != StatusCode::kNotImplemented) return Fail(watcher.status());
  if (!watcher.ok()) {
    // A catalog without a commit log (a REST catalog that serves no change feed): everything
    // but the commit stream works.
    std::cerr << "skade serve: no commit events: " << watcher.status().message() << std::endl;
  }
  // Lineage is one more subscriber of the commit events; it never holds a commit back.
  auto emitter = StartLineage(o.lineage, *lake, bus);
  if (!emitter.ok()) return Fail(emitter.status().WithContext("openlineage"));
  // One authentication for every service on the port (Flight SQL and the commit stream).
  auto shared_keys = LoadSharedKeys(o.shared_key_file);
  if (!shared_keys.ok()) return Fail(shared_keys.status());
  std::shared_ptr<flightsql::Authenticator> auth;
  if (o.auth == "basic") {
    auto users = LoadUsers(o.users_file);
    if (!users.ok()) return Fail(users.status());
    flightsql::AuthOptions auth_options;
    auth_options.users = *users;
    auth_options.token_lifetime = std::chrono::seconds(o.token_lifetime_s);
    auth_options.sealer = *shared_keys;
    auth = std::make_shared<flightsql::Authenticator>(std::move(auth_options));
  } else if (o.auth != "none") {
    return Fail(Status::InvalidArgument("--auth must be none or basic"));
  }
  events::CommitService::Options commit_options;
  if (auth) {
    commit_options.authorize = [auth](std::string_view authorization) {
      return auth->Check(authorization).status();
    };
  }
  events::CommitService commits(*lake->catalog, bus, commit_options);

  flightsql::ServerOptions options;
  options.authenticator = auth;
  for (const std::string& dir : o.allow_dirs) options.private_paths.emplace_back(dir, "<allowed-dir>");
  options.private_paths.emplace_back(lake->warehouse, "<warehouse>");
  options.host = o.host;
  options.port = o.flight_port;
  // A catalog skade does not write (Nessie, a folder of tables) is served read-only: every
  // write path is refused up front, session views included.
  options.read_only = o.read_only || !catalog::CatalogTakesWrites(lake->kind);
  options.max_sessions = o.max_sessions;
  options.session_idle_timeout = std::chrono::seconds(o.session_idle_timeout_s);
  options.query_timeout = sql::ClientStatementTimeout(o.query_timeout_s);
  options.sealer = *shared_keys;
  options.handle_lifetime = std::chrono::seconds(o.handle_lifetime_s);
  options.max_pending_queries = o.max_pending_tickets;
  options.max_prepared = o.max_prepared;
  options.max_handle_params_bytes = static_cast<size_t>(o.handle_params_kb) << 10;
  options.max_shared_params_bytes = static_cast<size_t>(o.max_params_mb) << 20;
  options.max_shared_params_bytes_per_principal = o.max_params_per_user_mb << 20;
  options.max_streams_per_client = o.max_streams_per_client;
  auto trusted = TrustedProxies(o);
  if (!trusted.ok()) return Fail(trusted.status());
  options.trusted_proxies = *trusted;
  options.max_streams = o.max_streams;
  options.stall_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.stall_timeout_s * 1000));
  options.buffer_budget_bytes = o.buffer_budget_mb << 20;
  options.extra_services = {commits.grpc_service()};
  if (!o.tls_cert.empty() || !o.tls_key.empty()) {
    auto cert = ReadFile(o.tls_cert);
    auto key = ReadFile(o.tls_key);
    if (!cert.ok()) return Fail(cert.status());
    if (!key.ok()) return Fail(key.status());
    options.tls_cert_pem = *cert;
    options.tls_key_pem = *key;
  }
  auto server = flightsql::FlightSqlServer::Start(**lake_sql, options);
  if (!server.ok()) return Fail(server.status());
  // The REST catalog shares the catalog (and so the commit log and event bus) with Flight SQL.
  // The web console's statements (timed, cancellable), data preview and SQL page; they outlive
  // rest_server.
  std::optional<console::RunningQueries> console_queries;
  std::optional<console::Preview> preview;
  std::optional<console::QueryRoute> query_route;
  std::unique_ptr<rest::RestServer> rest_server;
  if (o.rest_port >= 0) {
    auto rest_options = RestOptionsOf(o);
    if (!rest_options.ok()) return Fail(rest_options.status());
    rest_options->sealer = *shared_keys;
    rest_options->trusted_proxies = options.trusted_proxies;
    // The emitter's health (or that there is none) beside the catalog's metrics; the emitter
    // outlives rest_server.
    rest_options->more_metrics = [lineage = emitter->get()] { return lineage::EmitterMetricsText(lineage); };
    if (!o.no_ui) {
      // The console's pages are public files; what they show comes through the catalog's routes.
      static const console::StaticFiles kConsole(console::EmbeddedAssets());
      rest_options->public_files = [](std::string_view method, std::string_view path) {
        std::optional<console::StaticResponse> file = kConsole.Serve(method, path);
        if (!file) return std::optional<rest::PublicResponse>();
        return std::optional<rest::PublicResponse>(rest::PublicResponse{
            file->status, std::move(file->content_type), std::move(file->headers), std::move(file->body)});
      };
      // The data preview and the SQL page read with the catalog's authentication (not public
      // files), on the locked-down database, every statement under the timeout Flight SQL's
      // statements have too (sql::ClientStatementTimeout).
      console::RunningQueries::Limits limits;
      limits.timeout = sql::ClientStatementTimeout(o.query_timeout_s);
      console::RunningQueries* running = &console_queries.emplace(limits);
      console::QueryOptions query_options;
      query_options.private_paths = options.private_paths;
      std::stable_sort(query_options.private_paths.begin(), query_options.private_paths.end(),
                       [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
      const console::Preview* reader =
          &preview.emplace(*lake->catalog, *lake->io, *lake->db, running, query_options.private_paths,
                           *shared_keys);
      const console::QueryRoute* queries = &query_route.emplace(**lake_sql, *running, std::move(query_options));
      rest_options->extra_routes = [reader, queries](const rest::ExtraRequest& r) {
        std::optional<console::RouteAnswer> answer = reader->Serve(r.method, r.path, r.query);
        if (!answer) answer = queries->Serve(r.method, r.path, r.body, r.content_type, r.principal);
        if (!answer) return std::optional<rest::PublicResponse>();
        std::vector<std::pair<std::string, std::string>> headers = {{"Cache-Control", "no-store"}};
        for (auto& h : answer->headers) headers.push_back(std::move(h));
        return std::optional<rest::PublicResponse>(
            rest::PublicResponse{answer->status, "application/json", std::move(headers), std::move(answer->body)});
      };
    }
    auto started = rest::RestServer::Start(*lake->catalog, *lake->io, *rest_options, &bus);
    if (!started.ok()) return Fail(started.status());
    rest_server = std::move(*started);
  }
  std::cout << "flight sql listening on " << o.host << ":" << (*server)->port() << " (catalog '" << o.catalog_name
            << "', warehouse " << lake->warehouse << (options.read_only ? ", read-only" : "") << ")" << std::endl;
  std::cout << ServerStateLine(o, *lake->catalog) << std::endl;
  std::cout << "commit stream (skade.v1.Commits) on the same port" << std::endl;
  if (rest_server) {
    std::cout << "rest catalog listening on " << (o.tls_cert.empty() ? "http://" : "https://") << o.host << ":"
              << rest_server->port() << (o.rest_prefix.empty() ? "" : " (prefix '" + o.rest_prefix + "')") << std::endl;
    if (!o.no_ui) {
      std::cout << "web console on " << (o.tls_cert.empty() ? "http://" : "https://") << o.host << ":"
                << rest_server->port() << "/ui" << std::endl;
    }
  }
  while (!StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::cout << "shutting down" << std::endl;
  if (*emitter) (*emitter)->Stop();
  if (rest_server) rest_server->Shutdown();
  commits.Shutdown();
  (*server)->Shutdown();
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, const LakeArgs& lake, int* exit_code) {
  const LakeArgs* lake_args = &lake;
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the lake over Arrow Flight SQL (and the commit stream)");
  cmd->add_option("--host", o->host, "address to bind (default 127.0.0.1)");
  AddLineageOptions(*cmd, &o->lineage);
  cmd->add_option("--flight-port", o->flight_port, "Flight SQL gRPC port (0 = pick a free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_flag("--read-only", o->read_only,
                "refuse every write (updates, ingest, DDL) and never write the catalog database: Flight SQL's "
                "closes, cancels and parameters over --handle-params-kb then hold on this instance only");
  cmd->add_option("--auth", o->auth, "none | basic")->check(CLI::IsMember({"none", "basic"}));
  cmd->add_option("--users-file", o->users_file, "basic auth users, one name:password per line (else $SKADE_USERS)");
  cmd->add_option("--tls-cert", o->tls_cert, "PEM certificate (with --tls-key: serve TLS)");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key");
  cmd->add_option("--max-sessions", o->max_sessions, "client sessions at most")->check(CLI::PositiveNumber);
  cmd->add_option("--session-idle-timeout", o->session_idle_timeout_s, "seconds before an idle session closes");
  cmd->add_option("--token-lifetime", o->token_lifetime_s, "seconds a bearer token stays valid (then handshake again)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shared-key-file", o->shared_key_file,
                  "keys every server of a deployment shares (one 64-hex-digit key a line, the first seals; else "
                  "$SKADE_SHARED_KEYS): any server then serves the tickets, handles, cookies and tokens of another");
  cmd->add_option("--trusted-proxy", o->trusted_proxies,
                  "a load balancer's IP address: its X-Forwarded-For (REST) and x-forwarded-for (Flight SQL) name "
                  "the client whose per-client bounds a call counts against when there is no authentication "
                  "(repeat for several)");
  cmd->add_option("--handle-lifetime", o->handle_lifetime_s,
                  "seconds a prepared-statement handle stays valid (sessions: --session-idle-timeout)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-pending-tickets", o->max_pending_tickets,
                  "statement tickets of one user not yet fetched that a server keeps at hand (the least recently "
                  "used are forgotten, and adopted again from the ticket when it comes back)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-prepared", o->max_prepared,
                  "prepared statements of one user a server keeps at hand (the same rule)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--handle-params-kb", o->handle_params_kb,
                  "KiB of bound parameters (Arrow IPC) a prepared-statement handle carries; larger ones are kept in "
                  "the catalog database (a SQL catalog, not --read-only), else on the instance that received them "
                  "(0-1024, default 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--max-params-mb", o->max_params_mb,
                  "MiB of bound parameters one binding may keep (in the catalog database, or on this instance with "
                  "--read-only or no SQL catalog); larger ones are refused (1-1024, default 16)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--max-params-per-user-mb", o->max_params_per_user_mb,
                  "MiB of bound parameters one user may keep in all (in the catalog database, or on this instance); "
                  "past it bindings are refused until some expire or their statements close (at least "
                  "--max-params-mb, default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--query-timeout", o->query_timeout_s,
                  "seconds before a client's statement (Flight SQL queries and updates, the web console's queries) is "
                  "interrupted (default and 0: 60)");
  cmd->add_option("--max-streams-per-client", o->max_streams_per_client,
                  "concurrent DoGet/DoPut streams of one user (one address without auth)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-streams", o->max_streams, "concurrent DoGet/DoPut streams in all")->check(CLI::PositiveNumber);
  cmd->add_option("--stall-timeout", o->stall_timeout_s,
                  "seconds a stream may wait for its client to read or send before it is ended (0 = never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--buffer-budget-mb", o->buffer_budget_mb,
                  "MiB of client data buffered outside DuckDB (queued results, DoPut data, parameters)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--query-memory", o->query_memory, "DuckDB's memory limit for queries (e.g. 4GB)");
  cmd->add_option("--manifest-cache-mb", o->manifest_cache_mb,
                  "MiB of decoded manifests kept for planning, by Flight SQL and by REST planning each (0 = none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rest-port", o->rest_port, "Iceberg REST catalog HTTP port (0 = pick a free one; default: off)");
  cmd->add_flag("--no-ui", o->no_ui, "do not serve the web console under /ui on the REST port");
  cmd->add_option("--rest-prefix", o->rest_prefix, "the REST catalog's {prefix} path segment (default none)");
  cmd->add_option("--rest-auth", o->rest_auth, "none | bearer (--rest-tokens-file) | oauth2 (--rest-clients-file)")
      ->check(CLI::IsMember({"none", "bearer", "oauth2"}));
  cmd->add_option("--rest-clients-file", o->rest_clients_file, "OAuth2 clients, one client_id:secret per line");
  cmd->add_option("--rest-tokens-file", o->rest_tokens_file, "static bearer tokens, one per line");
  cmd->add_option("--rest-threads", o->rest_threads, "REST catalog worker threads")->check(CLI::PositiveNumber);
  cmd->add_flag("!--no-rest-rebase", o->rest_rebase_commits,
                "answer 409 to a commit whose branch moved (an append, property or statistics updates) instead of re-basing it on the table's current state");
  cmd->add_flag("--remote-signing", o->rest_remote_signing,
                "sign REST clients' requests to the S3 warehouse (the spec's remote signing) for the table's locations "
                "only, with this server's AWS credentials; clients then need no keys");
  cmd->add_option("--rest-plan-page-tasks", o->rest_plan_page_tasks,
                  "server-side scan planning: file scan tasks per page (more come as plan tasks)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rest-plan-async-manifests", o->rest_plan_async_manifests,
                  "server-side scan planning: plans over this many manifests run in the background (0 = never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--catalog-name", o->catalog_name, "SQL catalog name of the lake (default skade)");
  cmd->add_option("--allow-dir", o->allow_dirs,
                  "another folder queries may read (tables registered outside the warehouse); repeatable");
  cmd->callback([=] { *exit_code = RunServe(*lake_args, *o); });
}

}  // namespace skade::cli
