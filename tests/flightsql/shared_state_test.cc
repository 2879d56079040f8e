// Flight SQL state that cannot travel in a token, kept in the catalog's database so that any
// instance sharing it serves any call: bound parameters too large for a handle, closed prepared
// statements and sessions, cancelled tickets. Two registries, then two gRPC servers, each over its
// own catalog object on one database (a SQLite file; PostgreSQL, a throwaway cluster, which these
// cases need: they fail when it cannot start).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "skade/base/clock.h"
#include "skade/catalog/sql_catalog.h"
#include "skade/flightsql/registry_internal.h"
#include "skade/io/sealer.h"
#include "tests/flightsql/flight_server_test.h"
#include "tests/flightsql/param_sets.h"
#include "tests/testing/pg_cluster.h"
#include "tests/testing/temp_dir.h"

namespace skade::flightsql {
namespace {

namespace pb = testing::pb;
namespace pbsql = testing::pbsql;
using testing::Client;
using testing::FirstInt;
using testing::OneIntParam;

enum class Dialect { kSqlite, kPostgres };

std::string DialectName(const ::testing::TestParamInfo<Dialect>& info) {
  return info.param == Dialect::kSqlite ? "Sqlite" : "Postgres";
}

// A catalog database (a SQLite file or a fresh PostgreSQL database) and catalogs opened on it.
class SharedDatabase {
 public:
  Status Create(Dialect dialect) {
    io_ = io::MakeLocalFileIO();
    if (dialect == Dialect::kSqlite) {
      uri_ = "sqlite://" + dir_.Path("catalog.db");
      return Status::Ok();
    }
    SKADE_ASSIGN_OR_RETURN(skade::testing::PgTestCluster * cluster, skade::testing::PgTestCluster::Shared());
    SKADE_ASSIGN_OR_RETURN(uri_, cluster->CreateDatabase());
    return Status::Ok();
  }

  // Another catalog object on the database, as another process would open it.
  std::unique_ptr<catalog::Catalog> Open(catalog::SqlCatalogOptions::Access access =
                                             catalog::SqlCatalogOptions::Access::kReadWrite) {
    catalog::SqlCatalogOptions options;
    options.uri = uri_;
    options.warehouse = dir_.Path("warehouse");
    options.access = access;
    auto opened = catalog::OpenSqlCatalog(options, *io_);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(opened).value() : nullptr;
  }

  io::FileIO& io() { return *io_; }

 private:
  skade::testing::TempDir dir_;
  std::unique_ptr<io::FileIO> io_;
  std::string uri_;
};

std::shared_ptr<const io::Sealer> SharedKey() {
  auto key = io::Sealer::FromText(std::string(64, '7'));
  EXPECT_TRUE(key.ok());
  return *key;
}

Result<std::shared_ptr<const PreparedStatement>> Reprepare(const PreparedStatement& sealed) {
  auto p = std::make_shared<PreparedStatement>(sealed);
  p->parameter_count = 1;
  return std::shared_ptr<const PreparedStatement>(p);
}

std::shared_ptr<PreparedStatement> Statement(const std::string& principal) {
  auto p = std::make_shared<PreparedStatement>();
  p->principal = principal;
  p->sql = "SELECT ?";
  p->parameter_count = 1;
  return p;
}

// A token with one byte changed.
std::string Forge(std::string token) {
  char& c = token[token.size() / 2];
  c = static_cast<char>(c ^ 0x20);
  return token;
}

class SharedStateRegistryTest : public ::testing::TestWithParam<Dialect> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(db_.Create(GetParam()).ok());
    first_ = db_.Open();
    second_ = db_.Open();
    ASSERT_TRUE(first_ && second_);
  }

  // Every parameter set is larger than a handle may carry: it goes to the shared state.
  RegistryLimits Limits(catalog::Catalog* shared) {
    RegistryLimits limits;
    limits.sealer = key_;
    limits.shared_state = shared;
    limits.max_sealed_params_bytes = 16;
    return limits;
  }

  SharedDatabase db_;
  std::shared_ptr<const io::Sealer> key_ = SharedKey();
  std::unique_ptr<catalog::Catalog> first_;
  std::unique_ptr<catalog::Catalog> second_;
};

INSTANTIATE_TEST_SUITE_P(Dialects, SharedStateRegistryTest, ::testing::Values(Dialect::kSqlite, Dialect::kPostgres),
                         DialectName);

TEST_P(SharedStateRegistryTest, LargeParametersBoundOnOneInstanceServeAnother) {
  Registry one(Limits(first_.get()));
  Registry two(Limits(second_.get()));
  RegistryLimits other_key;  // a key of its own, the same database
  other_key.shared_state = second_.get();
  Registry stranger(other_key);
  two.set_reprepare(Reprepare);
  stranger.set_reprepare(Reprepare);
  std::string handle = one.AddPrepared(Statement("alice"));
  auto bound = one.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(42)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_NE(*bound, handle);
  ASSERT_TRUE(two.FindPrepared(*bound, "alice").ok());
  ASSERT_TRUE(two.Params(*bound));
  EXPECT_EQ(FirstInt(*two.Params(*bound)), 42);
  EXPECT_EQ(two.FindPrepared(*bound, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(two.FindPrepared(Forge(*bound), "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(stranger.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);

  // Bound again: the new handle has the new values everywhere.
  auto again = one.BindParams(*bound, "alice", std::make_shared<ParamSet>(OneIntParam(43)));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Registry three(Limits(second_.get()));
  three.set_reprepare(Reprepare);
  ASSERT_TRUE(three.FindPrepared(*again, "alice").ok());
  EXPECT_EQ(FirstInt(*three.Params(*again)), 43);
}

TEST_P(SharedStateRegistryTest, KeptParametersAreBoundedPerBindingAndPerPrincipal) {
  const size_t one_set = EncodeParams(OneIntParam(1), SIZE_MAX).size();
  ASSERT_GT(one_set, 16u);
  RegistryLimits limits = Limits(first_.get());
  limits.max_shared_params_bytes = one_set - 1;
  Registry tight(limits);
  std::string handle = tight.AddPrepared(Statement("alice"));
  EXPECT_EQ(tight.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(1))).status().code(),
            StatusCode::kInvalidArgument);

  limits.max_shared_params_bytes = one_set;
  limits.max_shared_params_bytes_per_principal = static_cast<int64_t>(one_set + one_set / 2);
  Registry r(limits);
  std::string a = r.AddPrepared(Statement("alice"));
  auto bound = r.BindParams(a, "alice", std::make_shared<ParamSet>(OneIntParam(1)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  // Binding the same statement again replaces its row: no more room needed.
  ASSERT_TRUE(r.BindParams(*bound, "alice", std::make_shared<ParamSet>(OneIntParam(2))).ok());
  std::string b = r.AddPrepared(Statement("alice"));
  EXPECT_EQ(r.BindParams(b, "alice", std::make_shared<ParamSet>(OneIntParam(3))).status().code(),
            StatusCode::kResourceExhausted);
  std::string theirs = r.AddPrepared(Statement("bob"));
  EXPECT_TRUE(r.BindParams(theirs, "bob", std::make_shared<ParamSet>(OneIntParam(4))).ok()) << "another user's room";
  // Closing the first statement frees its room.
  ASSERT_TRUE(r.ClosePrepared(*bound, "alice").ok());
  EXPECT_TRUE(r.BindParams(b, "alice", std::make_shared<ParamSet>(OneIntParam(3))).ok());
}

TEST_P(SharedStateRegistryTest, ClosesAndCancelsHoldOnEveryInstance) {
  Registry one(Limits(first_.get()));
  Registry two(Limits(second_.get()));
  one.set_reprepare(Reprepare);
  two.set_reprepare(Reprepare);

  // A prepared statement the second instance knows already, closed on the first: refused there,
  // by every handle of it; another user closes nothing.
  std::string handle = one.AddPrepared(Statement("alice"));
  auto bound = one.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(7)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  ASSERT_TRUE(two.FindPrepared(handle, "alice").ok());
  ASSERT_TRUE(two.FindPrepared(*bound, "alice").ok());
  EXPECT_EQ(two.ClosePrepared(*bound, "bob").code(), StatusCode::kNotFound);
  ASSERT_TRUE(two.FindPrepared(*bound, "alice").ok());
  ASSERT_TRUE(one.ClosePrepared(handle, "alice").ok());
  EXPECT_EQ(two.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(two.FindPrepared(handle, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(two.ClosePrepared(*bound, "alice").code(), StatusCode::kNotFound) << "closed already";

  // A session cookie, closed on the first instance: refused on the second.
  auto session = one.CreateSession("alice");
  session->set_schema("db");
  const std::string cookie = one.Reseal(session);
  ASSERT_TRUE(two.FindSession(cookie, "alice").ok());
  ASSERT_TRUE(one.CloseSession(session).ok());
  EXPECT_EQ(two.FindSession(cookie, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(two.FindSession(session->id, "alice").status().code(), StatusCode::kNotFound);

  // A ticket cancelled on the first instance: cancelled on the second; another user's cancel
  // does nothing.
  std::string ticket = one.AddQuery(PendingQuery{"alice", "SELECT 1", ""});
  ASSERT_TRUE(two.FindQuery(ticket, "alice").ok());
  EXPECT_EQ(one.Cancel(ticket, "bob").value(), CancelOutcome::kNotCancellable);
  ASSERT_TRUE(two.FindQuery(ticket, "alice").ok());
  EXPECT_EQ(one.Cancel(ticket, "alice").value(), CancelOutcome::kCancelled);
  EXPECT_EQ(two.FindQuery(ticket, "alice").status().code(), StatusCode::kCancelled);
  EXPECT_EQ(two.FindQuery(ticket, "bob").status().code(), StatusCode::kNotFound);

  // A ticket running on the second instance, cancelled on the first: interrupted there.
  std::string running = one.AddQuery(PendingQuery{"alice", "SELECT 2", ""});
  std::unique_ptr<Registry::Run> run = two.StartRun(running, "alice");
  ASSERT_TRUE(two.FindQuery(running, "alice").ok());
  ASSERT_EQ(run->Attach(nullptr), Registry::Run::Stop::kNone);
  EXPECT_EQ(one.Cancel(running, "alice").value(), CancelOutcome::kCancelled);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (run->stop() == Registry::Run::Stop::kNone && std::chrono::steady_clock::now() < until) {
    two.Reap(std::chrono::seconds(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(run->stop(), Registry::Run::Stop::kCancelled);
}

// Reaps `r` until `run` stops or `limit` passes: why it stopped.
Registry::Run::Stop ReapUntilStopped(Registry& r, const Registry::Run& run, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (run.stop() == Registry::Run::Stop::kNone && std::chrono::steady_clock::now() < until) {
    r.Reap(std::chrono::seconds(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return run.stop();
}

// A prepared statement running on the second instance, cancelled on the first: interrupted
// there (it polls about once a second). A cancel recorded before the run started, and another
// user's, leave it running; the statement itself stays usable.
TEST_P(SharedStateRegistryTest, APreparedRunIsInterruptedByACancelOnAnotherInstance) {
  using Stop = Registry::Run::Stop;
  Registry one(Limits(first_.get()));
  Registry two(Limits(second_.get()));
  one.set_reprepare(Reprepare);
  two.set_reprepare(Reprepare);
  const std::string handle = one.AddPrepared(Statement("alice"));
  // Nothing runs on the first instance: the cancel is recorded for the others.
  EXPECT_EQ(one.Cancel(handle, "alice").value(), CancelOutcome::kCancelling);
  EXPECT_EQ(two.Cancel(handle, "bob").value(), CancelOutcome::kNotCancellable);

  auto mark = two.CancelMark(handle, "alice");
  ASSERT_TRUE(mark.ok()) << mark.status().ToString();
  std::unique_ptr<Registry::Run> run = two.StartRun(handle, "alice");
  ASSERT_TRUE(two.FindPrepared(handle, "alice").ok());
  two.WatchCancels(*run, *mark);
  ASSERT_EQ(run->Attach(nullptr), Stop::kNone);
  EXPECT_EQ(ReapUntilStopped(two, *run, std::chrono::milliseconds(1500)), Stop::kNone) << "an older cancel";
  EXPECT_EQ(one.Cancel(handle, "bob").value(), CancelOutcome::kNotCancellable);
  EXPECT_EQ(ReapUntilStopped(two, *run, std::chrono::milliseconds(1500)), Stop::kNone) << "another user's cancel";
  EXPECT_EQ(one.Cancel(handle, "alice").value(), CancelOutcome::kCancelling);
  EXPECT_EQ(ReapUntilStopped(two, *run, std::chrono::seconds(10)), Stop::kCancelled);

  // The statement runs again, and only a new cancel stops that run.
  mark = two.CancelMark(handle, "alice");
  ASSERT_TRUE(mark.ok());
  std::unique_ptr<Registry::Run> again = two.StartRun(handle, "alice");
  ASSERT_TRUE(two.FindPrepared(handle, "alice").ok());
  two.WatchCancels(*again, *mark);
  EXPECT_EQ(ReapUntilStopped(two, *again, std::chrono::milliseconds(1500)), Stop::kNone);
  // A cancel on the instance running it answers cancelled at once.
  EXPECT_EQ(two.Cancel(handle, "alice").value(), CancelOutcome::kCancelled);
  EXPECT_EQ(again->stop(), Stop::kCancelled);

  // A cancel recorded on the first instance after the run started on the second, before that
  // run is watched (the moment a DoGet spends finding its statement): not missed.
  mark = two.CancelMark(handle, "alice");
  ASSERT_TRUE(mark.ok());
  std::unique_ptr<Registry::Run> racing = two.StartRun(handle, "alice");
  EXPECT_EQ(one.Cancel(handle, "alice").value(), CancelOutcome::kCancelling);
  ASSERT_TRUE(two.FindPrepared(handle, "alice").ok());
  two.WatchCancels(*racing, *mark);
  EXPECT_EQ(ReapUntilStopped(two, *racing, std::chrono::seconds(10)), Stop::kCancelled);
}

TEST_P(SharedStateRegistryTest, ExpiredStateIsRefusedAndPurged) {
  RegistryLimits limits = Limits(first_.get());
  limits.idle_lifetime = std::chrono::seconds(1);
  limits.prepared_lifetime = std::chrono::seconds(1);
  Registry one(limits);
  std::string handle = one.AddPrepared(Statement("alice"));
  auto bound = one.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(5)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  std::string closed = one.AddPrepared(Statement("alice"));
  ASSERT_TRUE(one.ClosePrepared(closed, "alice").ok());
  ASSERT_TRUE(one.Cancel(one.AddQuery(PendingQuery{"alice", "SELECT 1", ""}), "alice").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  Registry two(Limits(second_.get()));
  two.set_reprepare(Reprepare);
  EXPECT_EQ(two.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  // The first Reap purges what expired: nothing is left for a later purge.
  two.Reap(std::chrono::seconds(0));
  auto left = first_->PurgeServerState(NowMicros() + int64_t{86400} * 1000 * 1000);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(*left, 0);
}

// A catalog that keeps no server state (here a read-only one) leaves large parameters on the
// instance that received them, as before.
TEST_P(SharedStateRegistryTest, WithoutServerStateLargeParametersStayOnTheInstance) {
  auto reader = db_.Open(catalog::SqlCatalogOptions::Access::kReadOnly);
  ASSERT_NE(reader, nullptr);
  Registry r(Limits(reader.get()));
  std::string handle = r.AddPrepared(Statement("alice"));
  auto bound = r.BindParams(handle, "alice", std::make_shared<ParamSet>(OneIntParam(5)));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  ASSERT_TRUE(r.Params(*bound));
  EXPECT_EQ(FirstInt(*r.Params(*bound)), 5);
  // Another read-only instance refuses the handle: its parameters are not in the database.
  auto other_reader = db_.Open(catalog::SqlCatalogOptions::Access::kReadOnly);
  ASSERT_NE(other_reader, nullptr);
  Registry other(Limits(other_reader.get()));
  other.set_reprepare(Reprepare);
  EXPECT_EQ(other.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  // Nor does a read-write one find them there.
  Registry writer(Limits(first_.get()));
  writer.set_reprepare(Reprepare);
  EXPECT_EQ(writer.FindPrepared(*bound, "alice").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(writer.ClosePrepared(*bound, "alice").ok());
}

// ---- two gRPC servers over one catalog database

// A served instance: its own catalog object, DuckDB, LakeSql and server.
struct Instance {
  std::unique_ptr<catalog::Catalog> catalog;
  std::unique_ptr<engine::Database> db;
  std::unique_ptr<sql::LakeSql> lake;
  std::unique_ptr<FlightSqlServer> server;
};

class SharedStateServerTest : public ::testing::TestWithParam<Dialect> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(db_.Create(GetParam()).ok());
    Start(&a_);
    Start(&b_);
    ASSERT_TRUE(a_.server && b_.server);
    ASSERT_TRUE(a_.catalog->CreateNamespace(*catalog::Namespace::Parse("db"), {}).ok());
  }

  void Start(Instance* instance, const std::function<void(ServerOptions&)>& tweak = {},
             catalog::SqlCatalogOptions::Access access = catalog::SqlCatalogOptions::Access::kReadWrite) {
    instance->catalog = db_.Open(access);
    ASSERT_NE(instance->catalog, nullptr);
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    instance->db = std::move(db).value();
    auto lake = sql::LakeSql::Open(*instance->catalog, db_.io(), *instance->db, "skade");
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    instance->lake = std::move(lake).value();
    ServerOptions o;
    o.port = 0;
    o.sealer = key_;
    AuthOptions auth;
    auth.users = {{"alice", "pw"}, {"bob", "pw"}};
    auth.sealer = key_;
    o.authenticator = std::make_shared<Authenticator>(auth);
    if (tweak) tweak(o);
    auto server = FlightSqlServer::Start(*instance->lake, o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    instance->server = std::move(server).value();
  }

  // DoAction `type` with `body` as `user` (sending `cookie` when set): the call's status.
  static grpc::Status Act(const Instance& instance, const std::string& user, const std::string& cookie,
                          const std::string& type, const std::string& body, std::string* first_result = nullptr) {
    auto stub = pb::FlightService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(instance.server->port()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Basic " + EncodeBase64(user + ":pw"));
    if (!cookie.empty()) ctx.AddMetadata("cookie", cookie);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    pb::Action action;
    action.set_type(type);
    action.set_body(body);
    auto reader = stub->DoAction(&ctx, action);
    pb::Result result;
    bool first = true;
    while (reader->Read(&result)) {
      if (first && first_result != nullptr) *first_result = result.body();
      first = false;
    }
    return reader->Finish();
  }

  // A prepared query of `alice` on `instance`, bound there to a parameter of `bytes` bytes: the
  // handle the DoPut answered, or "" with the call's code in `*code`.
  static std::string Bind(const Instance& instance, size_t bytes, grpc::StatusCode* code) {
    Client alice(instance.server->port(), "alice");
    auto prepared = alice.CreatePrepared("SELECT length(CAST(? AS VARCHAR)) AS n");
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    if (!prepared.ok()) return "";
    std::vector<arrow::ArrayBuilder> columns;
    columns.emplace_back("p0", "u", true);
    auto builder = arrow::RecordBatchBuilder(std::move(columns));
    builder.AppendStruct();
    builder.child(0).AppendString(std::string(bytes, 'x'));
    testing::EncodedBatch param = testing::Encode(std::move(builder));
    pbsql::CommandPreparedStatementQuery command;
    command.set_prepared_statement_handle(prepared->prepared_statement_handle());
    pb::PutResult put;
    auto answered = alice.PutParameters(command, testing::View(param), &put);
    *code = answered.ok() ? grpc::StatusCode::OK : alice.code_of_last_failure();
    if (!answered.ok() || !*answered) return "";
    pbsql::DoPutPreparedStatementResult bound;
    EXPECT_TRUE(bound.ParseFromString(put.app_metadata()));
    return bound.prepared_statement_handle();
  }

  // A prepared query of `alice` on A, bound there to a parameter of 200,000 bytes (far more than
  // a handle carries): the handle the DoPut answered.
  std::string BindLargeOnA() {
    grpc::StatusCode code;
    std::string handle = Bind(a_, 200000, &code);
    EXPECT_EQ(code, grpc::StatusCode::OK);
    EXPECT_LT(handle.size(), size_t{16384}) << "the parameter did not travel in it";
    return handle;
  }

  // GetFlightInfo + DoGet of the prepared query `handle` on `instance` as `user`: its one BIGINT.
  static Result<int64_t> RunPrepared(const Instance& instance, const std::string& user, const std::string& handle,
                                     grpc::StatusCode* code) {
    Client client(instance.server->port(), user);
    pbsql::CommandPreparedStatementQuery command;
    command.set_prepared_statement_handle(handle);
    auto result = [&]() -> Result<int64_t> {
      SKADE_ASSIGN_OR_RETURN(pb::FlightInfo info, client.InfoFor(command));
      SKADE_ASSIGN_OR_RETURN(auto fetched, client.Get(info.endpoint(0).ticket()));
      if (fetched.batches.empty() || fetched.batches[0]->length != 1) return Status::Internal("not one row");
      const ArrowArray& column = *fetched.batches[0]->children[0];
      return static_cast<const int64_t*>(column.buffers[1])[column.offset];
    }();
    *code = result.ok() ? grpc::StatusCode::OK : client.code_of_last_failure();
    return result;
  }

  SharedDatabase db_;
  std::shared_ptr<const io::Sealer> key_ = SharedKey();
  Instance a_;
  Instance b_;
};

INSTANTIATE_TEST_SUITE_P(Dialects, SharedStateServerTest, ::testing::Values(Dialect::kSqlite, Dialect::kPostgres),
                         DialectName);

TEST_P(SharedStateServerTest, LargeParametersBoundOnOneServerRunOnTheOther) {
  const std::string handle = BindLargeOnA();
  ASSERT_FALSE(handle.empty());
  grpc::StatusCode code;
  auto n = RunPrepared(b_, "alice", handle, &code);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 200000);
  EXPECT_FALSE(RunPrepared(b_, "bob", handle, &code).ok());
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(RunPrepared(b_, "alice", Forge(handle), &code).ok());
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
}

// The registry's limits come from the server's options (`skade serve --handle-params-kb,
// --max-params-mb, --max-params-per-user-mb`).
TEST_P(SharedStateServerTest, KeptParametersAreBoundedByTheServerOptions) {
  Instance tight;
  Start(&tight, [](ServerOptions& o) {
    o.max_handle_params_bytes = 1024;
    o.max_shared_params_bytes = 100000;
    o.max_shared_params_bytes_per_principal = 150000;
  });
  ASSERT_TRUE(tight.server);
  grpc::StatusCode code;
  EXPECT_EQ(Bind(tight, 200000, &code), "");
  EXPECT_EQ(code, grpc::StatusCode::INVALID_ARGUMENT) << "one binding over max_shared_params_bytes";
  const std::string kept = Bind(tight, 80000, &code);
  ASSERT_EQ(code, grpc::StatusCode::OK);
  EXPECT_LT(kept.size(), size_t{4096}) << "over max_handle_params_bytes: kept in the database";
  EXPECT_EQ(RunPrepared(b_, "alice", kept, &code).ValueOr(-1), 80000);
  EXPECT_EQ(Bind(tight, 80000, &code), "");
  EXPECT_EQ(code, grpc::StatusCode::RESOURCE_EXHAUSTED) << "alice's kept parameters over the principal's limit";
  EXPECT_GT(Bind(tight, 500, &code).size(), size_t{0}) << "small ones still travel in the handle";

  ServerOptions inconsistent;
  inconsistent.port = 0;
  inconsistent.max_shared_params_bytes = 2000;
  inconsistent.max_shared_params_bytes_per_principal = 1000;
  EXPECT_EQ(FlightSqlServer::Start(*a_.lake, inconsistent).status().code(), StatusCode::kInvalidArgument);
  inconsistent.max_shared_params_bytes_per_principal = 4000;
  inconsistent.max_prepared = 0;
  EXPECT_EQ(FlightSqlServer::Start(*a_.lake, inconsistent).status().code(), StatusCode::kInvalidArgument);
}

// Read-only servers (`serve --read-only`) write nothing to the catalog database: what cannot
// travel in a handle stays on the server that received it, and the other one says so.
TEST_P(SharedStateServerTest, ReadOnlyServersKeepWhatCannotTravelToThemselves) {
  Instance one;
  Instance two;
  auto read_only = [](ServerOptions& o) { o.read_only = true; };
  Start(&one, read_only, catalog::SqlCatalogOptions::Access::kReadOnly);
  Start(&two, read_only, catalog::SqlCatalogOptions::Access::kReadOnly);
  ASSERT_TRUE(one.server && two.server);
  grpc::StatusCode code;
  const std::string large = Bind(one, 200000, &code);
  ASSERT_EQ(code, grpc::StatusCode::OK);
  EXPECT_EQ(RunPrepared(one, "alice", large, &code).ValueOr(-1), 200000);
  EXPECT_FALSE(RunPrepared(two, "alice", large, &code).ok());
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND) << "refused, not run without its parameter";
  const std::string small = Bind(one, 1000, &code);
  ASSERT_EQ(code, grpc::StatusCode::OK);
  EXPECT_EQ(RunPrepared(two, "alice", small, &code).ValueOr(-1), 1000) << "a small binding travels in the handle";

  // A cancel on a read-only server that runs nothing of it is recorded nowhere: not cancellable.
  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(small);
  auto info = Client(one.server->port(), "alice").InfoFor(command);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  pb::CancelFlightInfoRequest request;
  *request.mutable_info() = *info;
  std::string answer;
  ASSERT_TRUE(Act(two, "alice", "", "CancelFlightInfo", request.SerializeAsString(), &answer).ok());
  pb::CancelFlightInfoResult result;
  ASSERT_TRUE(result.ParseFromString(answer));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_NOT_CANCELLABLE);
}

TEST_P(SharedStateServerTest, ClosedOnOneServerIsRefusedOnTheOther) {
  const std::string handle = BindLargeOnA();
  ASSERT_FALSE(handle.empty());
  grpc::StatusCode code;
  ASSERT_TRUE(RunPrepared(b_, "alice", handle, &code).ok());  // B knows it now
  pbsql::ActionClosePreparedStatementRequest close;
  close.set_prepared_statement_handle(handle);
  google::protobuf::Any any;
  any.PackFrom(close);
  EXPECT_EQ(Act(b_, "bob", "", "ClosePreparedStatement", any.SerializeAsString()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(RunPrepared(a_, "alice", handle, &code).ok()) << "bob closed nothing";
  ASSERT_TRUE(Act(a_, "alice", "", "ClosePreparedStatement", any.SerializeAsString()).ok());
  EXPECT_FALSE(RunPrepared(b_, "alice", handle, &code).ok());
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);

  // A session: its cookie closed on A is refused on B.
  Client alice(a_.server->port(), "alice");
  ASSERT_TRUE(alice.SetSchema("db").ok());
  Client on_b(b_.server->port(), "alice");
  on_b.set_cookie(alice.cookie());
  ASSERT_TRUE(on_b.Rows("SELECT 1").ok());
  pb::CloseSessionRequest request;
  ASSERT_TRUE(Act(a_, "alice", alice.cookie(), "CloseSession", request.SerializeAsString()).ok());
  EXPECT_FALSE(on_b.Rows("SELECT 1").ok());
  EXPECT_EQ(on_b.code_of_last_failure(), grpc::StatusCode::NOT_FOUND);
}

TEST_P(SharedStateServerTest, CancelledOnOneServerIsCancelledOnTheOther) {
  Client alice(a_.server->port(), "alice");
  auto info = alice.Info("SELECT 42 AS n");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  pb::CancelFlightInfoRequest request;
  *request.mutable_info() = *info;
  Client on_b(b_.server->port(), "alice");
  std::string answer;
  ASSERT_TRUE(Act(a_, "alice", "", "CancelFlightInfo", request.SerializeAsString(), &answer).ok());
  pb::CancelFlightInfoResult result;
  ASSERT_TRUE(result.ParseFromString(answer));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_CANCELLED);
  EXPECT_FALSE(on_b.Get(info->endpoint(0).ticket()).ok());
  EXPECT_EQ(on_b.code_of_last_failure(), grpc::StatusCode::CANCELLED);

  // Another user's cancel leaves a ticket alone.
  auto other = alice.Info("SELECT 43 AS n");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  *request.mutable_info() = *other;
  ASSERT_TRUE(Act(b_, "bob", "", "CancelFlightInfo", request.SerializeAsString(), &answer).ok());
  ASSERT_TRUE(result.ParseFromString(answer));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_NOT_CANCELLABLE);
  EXPECT_TRUE(on_b.Get(other->endpoint(0).ticket()).ok());
}

// A query running on B is interrupted by a cancel sent to A (B polls the shared state about
// once a second).
TEST_P(SharedStateServerTest, ARunningQueryIsInterruptedByACancelOnTheOtherServer) {
  Client alice(a_.server->port(), "alice");
  auto info = alice.Info(
      "SELECT count(*) FROM range(1000000) a CROSS JOIN range(1000000) b WHERE (a.range + b.range) % 7 = 3");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  Client on_b(b_.server->port(), "alice");
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::chrono::steady_clock::time_point ended;
  std::thread get([&] {
    EXPECT_FALSE(on_b.Get(info->endpoint(0).ticket()).ok());
    code = on_b.code_of_last_failure();
    ended = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // B runs it by now
  pb::CancelFlightInfoRequest request;
  *request.mutable_info() = *info;
  std::string answer;
  const auto cancelled_at = std::chrono::steady_clock::now();
  grpc::Status st = Act(a_, "alice", "", "CancelFlightInfo", request.SerializeAsString(), &answer);
  get.join();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(code, grpc::StatusCode::CANCELLED);
  EXPECT_LT(ended - cancelled_at, std::chrono::seconds(10));
}

// A prepared query running on A is interrupted by a cancel sent to B, and only by its user's.
TEST_P(SharedStateServerTest, ARunningPreparedQueryIsInterruptedByACancelOnTheOtherServer) {
  Client alice(a_.server->port(), "alice");
  auto prepared = alice.CreatePrepared(
      "SELECT count(*) FROM range(1000000) a CROSS JOIN range(1000000) b WHERE (a.range + b.range) % 7 = 3");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  pbsql::CommandPreparedStatementQuery command;
  command.set_prepared_statement_handle(prepared->prepared_statement_handle());
  auto info = alice.InfoFor(command);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::atomic<bool> done{false};
  std::chrono::steady_clock::time_point ended;
  std::thread get([&] {
    EXPECT_FALSE(alice.Get(info->endpoint(0).ticket()).ok());
    code = alice.code_of_last_failure();
    ended = std::chrono::steady_clock::now();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // A runs it by now
  pb::CancelFlightInfoRequest request;
  *request.mutable_info() = *info;
  std::string answer;
  pb::CancelFlightInfoResult result;

  // Bob's cancel, through B, leaves it running (A would see a cancel within about a second).
  grpc::Status st = Act(b_, "bob", "", "CancelFlightInfo", request.SerializeAsString(), &answer);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(result.ParseFromString(answer));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_NOT_CANCELLABLE);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(done) << "another user's cancel stopped the query";

  // Alice's, through B, which does not run it: recorded (CANCELLING), and A stops its run.
  const auto cancelled_at = std::chrono::steady_clock::now();
  st = Act(b_, "alice", "", "CancelFlightInfo", request.SerializeAsString(), &answer);
  get.join();
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(result.ParseFromString(answer));
  EXPECT_EQ(result.status(), pb::CANCEL_STATUS_CANCELLING);
  EXPECT_EQ(code, grpc::StatusCode::CANCELLED);
  EXPECT_LT(ended - cancelled_at, std::chrono::seconds(10));

  // The cancel does not close the prepared statement.
  EXPECT_TRUE(Client(b_.server->port(), "alice").InfoFor(command).ok());
}

}  // namespace
}  // namespace skade::flightsql
