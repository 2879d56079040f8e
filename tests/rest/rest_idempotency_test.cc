// Issue 34, item 2: the REST spec's Idempotency-Key. A mutation carrying a key (a UUIDv7) is
// applied at most once per principal: a retry after a lost response, after a client timeout
// while the first still runs, or after the server was killed between its commit and its answer
// gets the first answer and commits nothing more; a key sent with another request is 400, a
// malformed one 400; the key is free again after the lifetime /v1/config advertises.
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "skade/base/uuid.h"
#include "skade/iceberg/table_metadata.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/child_process.h"
#include "tests/testing/pg_cluster.h"
#include "tests/testing/poll_until.h"

namespace skade::rest {
namespace {

using namespace std::chrono_literals;

std::string NewKey() { return Uuid::NewV7().ToString(); }

// An answer as sent: status, body text and ETag (replays are compared byte for byte).
struct Raw {
  int status = -1;  // -1: no answer (timeout, connection closed)
  std::string body;
  std::string etag;
  std::string retry_after;
  Json json() const { return Json::parse(body, nullptr, false); }
};

Raw RawOf(const httplib::Result& r) {
  Raw out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.etag = r->get_header_value("ETag");
  out.retry_after = r->get_header_value("Retry-After");
  return out;
}

std::string ErrorTypeOf(const Raw& r) {
  Json j = r.json();
  if (!j.is_object() || !j.contains("error")) return "<no error body>";
  return j["error"]["type"].get<std::string>();
}

// A catalog whose commits wait at a gate until the test opens it: a first request that is still
// running when its retry arrives. Everything else goes straight to the catalog it wraps.
class GatedCatalog final : public catalog::Catalog {
 public:
  explicit GatedCatalog(catalog::Catalog& inner) : inner_(inner) {}

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }

  const std::string& name() const override { return inner_.name(); }
  const std::string& warehouse() const override { return inner_.warehouse(); }
  Status CreateNamespace(const catalog::Namespace& ns, const std::map<std::string, std::string>& p) override {
    return inner_.CreateNamespace(ns, p);
  }
  Result<std::vector<catalog::Namespace>> ListNamespaces(const catalog::Namespace& parent) override {
    return inner_.ListNamespaces(parent);
  }
  Result<std::map<std::string, std::string>> LoadNamespaceProperties(const catalog::Namespace& ns) override {
    return inner_.LoadNamespaceProperties(ns);
  }
  Status UpdateNamespaceProperties(const catalog::Namespace& ns, const std::map<std::string, std::string>& u,
                                   const std::vector<std::string>& r) override {
    return inner_.UpdateNamespaceProperties(ns, u, r);
  }
  Status DropNamespace(const catalog::Namespace& ns) override { return inner_.DropNamespace(ns); }
  Result<bool> NamespaceExists(const catalog::Namespace& ns) override { return inner_.NamespaceExists(ns); }
  Result<std::vector<catalog::TableIdent>> ListTables(const catalog::Namespace& ns) override {
    return inner_.ListTables(ns);
  }
  Result<catalog::CommitResult> CreateTable(const catalog::TableIdent& ident,
                                            const catalog::CreateTableRequest& request) override {
    return inner_.CreateTable(ident, request);
  }
  Result<catalog::TableState> LoadTable(const catalog::TableIdent& ident) override { return inner_.LoadTable(ident); }
  Status DropTable(const catalog::TableIdent& ident, catalog::DropMode mode,
                   const std::optional<std::string>& if_metadata_location) override {
    return inner_.DropTable(ident, mode, if_metadata_location);
  }
  Status RenameTable(const catalog::TableIdent& from, const catalog::TableIdent& to) override {
    return inner_.RenameTable(from, to);
  }
  Result<catalog::CommitResult> RegisterTable(const catalog::TableIdent& ident, const std::string& location) override {
    return inner_.RegisterTable(ident, location);
  }
  Result<catalog::CommitResult> CommitTable(const catalog::TableCommit& commit) override {
    Pass();
    return inner_.CommitTable(commit);
  }
  Result<std::vector<catalog::CommitResult>> CommitTransaction(const std::vector<catalog::TableCommit>& c) override {
    Pass();
    return inner_.CommitTransaction(c);
  }
  Result<std::vector<catalog::CommitResult>> CommitTransactionWithRecord(
      const std::vector<catalog::TableCommit>& c, const catalog::IdempotencyRecord& record) override {
    Pass();
    return inner_.CommitTransactionWithRecord(c, record);
  }
  Result<std::optional<catalog::IdempotencyRecord>> LoadIdempotencyRecord(const std::string& scope,
                                                                         const std::string& key,
                                                                         int64_t now_us) override {
    return inner_.LoadIdempotencyRecord(scope, key, now_us);
  }
  Status StoreIdempotencyRecord(const catalog::IdempotencyRecord& record) override {
    return inner_.StoreIdempotencyRecord(record);
  }
  Result<int64_t> PurgeIdempotencyRecords(int64_t now_us) override { return inner_.PurgeIdempotencyRecords(now_us); }
  Result<std::vector<catalog::CommitLogEntry>> CommitsSince(int64_t after, int64_t limit) override {
    return inner_.CommitsSince(after, limit);
  }
  Result<int64_t> LatestCommitSeq() override { return inner_.LatestCommitSeq(); }

 private:
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.wait_for(lock, 60s, [this] { return open_; });
    --waiting_;
  }

  catalog::Catalog& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int waiting_ = 0;
};

class RestIdempotencyTest : public RestServerTest {
 protected:
  const std::string kTable = "/v1/namespaces/base/tables/facts";

  // Starts the server over `catalog` (the lake's own by default).
  void StartOn(catalog::Catalog& catalog, RestOptions options = {}) {
    options.port = 0;
    auto server = RestServer::Start(catalog, *io_, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(60, 0);
  }

  httplib::Headers KeyHeaders(const std::string& key) const {
    httplib::Headers h = Headers();
    h.emplace("Idempotency-Key", key);
    return h;
  }
  Raw PostKeyed(const std::string& path, const std::string& body, const std::string& key) {
    return RawOf(client_->Post(path, KeyHeaders(key), body, "application/json"));
  }
  Raw PostKeyed(const std::string& path, const Json& body, const std::string& key) {
    return PostKeyed(path, body.dump(), key);
  }
  Raw DeleteKeyed(const std::string& path, const std::string& key) {
    return RawOf(client_->Delete(path, KeyHeaders(key)));
  }

  iceberg::TableMetadata Current() {
    auto state = catalog_->LoadTable(Ident("facts"));
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? *state->metadata : iceberg::TableMetadata();
  }

  std::vector<catalog::CommitLogEntry> Log() {
    auto log = catalog_->CommitsSince(0, 100000);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? *log : std::vector<catalog::CommitLogEntry>();
  }

  // The log's commit_seqs run 1..n without a gap; returns n.
  size_t DenseLogSize() {
    std::vector<catalog::CommitLogEntry> log = Log();
    for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].commit_seq, static_cast<int64_t>(i) + 1);
    return log.size();
  }

  void CreateFacts() { ASSERT_EQ(CreateTable("base", "facts").status, 200); }

  // The scope of requests on a server without authentication (RestServer: the client address).
  static constexpr const char* kLoopbackScope = "address:127.0.0.1";
};

TEST_F(RestIdempotencyTest, ConfigAdvertisesTheKeyLifetime) {
  Start();
  EXPECT_EQ(Get("/v1/config").body["idempotency-key-lifetime"], "PT30M");
  server_.reset();
  RestOptions options;
  options.idempotency_key_lifetime = 5430s;
  Start(options);
  EXPECT_EQ(Get("/v1/config").body["idempotency-key-lifetime"], "PT1H30M30S");
  server_.reset();
  // Spec: "If absent, clients MUST assume idempotency is not supported."
  options.idempotency_key_lifetime = 0s;
  Start(options);
  Reply config = Get("/v1/config");
  ASSERT_EQ(config.status, 200);
  EXPECT_FALSE(config.body.contains("idempotency-key-lifetime"));
  // Keys are then ignored: a repeated create runs again.
  const std::string key = NewKey();
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, key).status, 200);
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, key).status, 409);
}

// The response was lost: the client sends the same commit with the same key again — also after
// other commits moved the branch, where the server would otherwise re-base the append and add its
// rows a second time.
TEST_F(RestIdempotencyTest, ARetriedAppendCommitsOnceAndGetsTheFirstAnswer) {
  Start();
  CreateFacts();
  const std::string body = AppendCommit(Current(), 0, 5, "once").dump();
  const std::string key = NewKey();
  Raw first = PostKeyed(kTable, body, key);
  ASSERT_EQ(first.status, 200) << first.body;
  const size_t logged = DenseLogSize();
  ASSERT_EQ(logged, 2u) << "create and the append";

  Raw again = PostKeyed(kTable, body, key);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.etag, first.etag);
  EXPECT_EQ(DenseLogSize(), logged);

  // Another writer appends: main moves on. The retry still gets the first answer, not a rebase.
  auto t = LoadTable(Ident("facts"));
  ASSERT_TRUE(t->Append({"SELECT range + 100 AS id, 'us' AS region FROM range(3)", nullptr}).ok());
  Raw late = PostKeyed(kTable, body, key);
  EXPECT_EQ(late.status, 200);
  EXPECT_EQ(late.body, first.body);
  EXPECT_EQ(DenseLogSize(), logged + 1);
  EXPECT_EQ(Count("base", "facts"), "8");
  EXPECT_EQ(server_->stats().commits, 1);

  // The record lives in the catalog, with the commit's metadata file.
  auto record = catalog_->LoadIdempotencyRecord(kLoopbackScope, key, NowMicros());
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  ASSERT_TRUE(record->has_value());
  EXPECT_EQ((*record)->metadata_location, first.json()["metadata-location"]);
  EXPECT_EQ((*record)->status, 200);

  // Without a key the same retry is a new commit, refused: its snapshot is in the table already.
  // A client reads that 409 as "the commit failed" and deletes the files the landed commit uses
  // (apache/iceberg#13867, the reason for the header).
  Reply refused = Post(kTable, body);
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(ErrorType(refused), "CommitFailedException");
  EXPECT_EQ(Count("base", "facts"), "8");
}

TEST_F(RestIdempotencyTest, ARetriedTransactionCommitsOnce) {
  Start();
  CreateFacts();
  const int64_t schema_id = Current().current_schema_id;
  Json change{{"identifier", {{"namespace", {"base"}}, {"name", "facts"}}},
              {"requirements", Json::array({Json{{"type", "assert-current-schema-id"}, {"current-schema-id", schema_id}}})},
              {"updates", Json::array({Json{{"action", "set-properties"}, {"updates", {{"v", "1"}}}}})}};
  const Json body{{"table-changes", Json::array({change})}};
  const std::string key = NewKey();
  Raw first = PostKeyed("/v1/transactions/commit", body, key);
  ASSERT_EQ(first.status, 204) << first.body;
  const size_t logged = DenseLogSize();
  Raw again = PostKeyed("/v1/transactions/commit", body, key);
  EXPECT_EQ(again.status, 204);
  EXPECT_EQ(again.body, "");
  EXPECT_EQ(DenseLogSize(), logged);
  EXPECT_EQ(Current().Property("v"), "1");
}

// Spec: finalized answers include "deterministic terminal 4xx (including 409 such as
// AlreadyExists, NamespaceNotEmpty, etc.)". Mutations that are no commits replay too.
TEST_F(RestIdempotencyTest, OtherMutationsAndTheirRefusalsReplay) {
  Start();
  CreateFacts();
  // A commit refused with 409 CommitFailedException replays that refusal.
  Json stale = AppendCommit(Current(), 0, 2, "stale");
  stale["requirements"] = Json::array({Json{{"type", "assert-table-uuid"}, {"uuid", "00000000-0000-0000-0000-000000000000"}}});
  const std::string failed = NewKey();
  Raw conflict = PostKeyed(kTable, stale, failed);
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(ErrorTypeOf(conflict), "CommitFailedException");
  EXPECT_EQ(PostKeyed(kTable, stale, failed).body, conflict.body);

  const std::string create_ns = NewKey();
  Raw created = PostKeyed("/v1/namespaces", Json{{"namespace", {"sales"}}, {"properties", {{"o", "a"}}}}, create_ns);
  ASSERT_EQ(created.status, 200);
  Raw recreated = PostKeyed("/v1/namespaces", Json{{"namespace", {"sales"}}, {"properties", {{"o", "a"}}}}, create_ns);
  EXPECT_EQ(recreated.status, 200) << "without the key: 409 AlreadyExists";
  EXPECT_EQ(recreated.body, created.body);

  const std::string rename = NewKey();
  const Json rename_body{{"source", {{"namespace", {"base"}}, {"name", "facts"}}},
                         {"destination", {{"namespace", {"sales"}}, {"name", "facts"}}}};
  EXPECT_EQ(PostKeyed("/v1/tables/rename", rename_body, rename).status, 204);
  EXPECT_EQ(PostKeyed("/v1/tables/rename", rename_body, rename).status, 204) << "without the key: 404";

  const std::string drop = NewKey();
  EXPECT_EQ(DeleteKeyed("/v1/namespaces/sales/tables/facts", drop).status, 204);
  EXPECT_EQ(DeleteKeyed("/v1/namespaces/sales/tables/facts", drop).status, 204) << "without the key: 404";

  // A refusal is final too: the namespace is not empty, and stays the answer once it is.
  ASSERT_EQ(CreateTable("sales", "other").status, 200);
  const std::string drop_ns = NewKey();
  Raw refused = DeleteKeyed("/v1/namespaces/sales", drop_ns);
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(ErrorTypeOf(refused), "NamespaceNotEmptyException");
  ASSERT_EQ(Delete("/v1/namespaces/sales/tables/other").status, 204);
  Raw still = DeleteKeyed("/v1/namespaces/sales", drop_ns);
  EXPECT_EQ(still.status, 409);
  EXPECT_EQ(still.body, refused.body);
  EXPECT_EQ(DeleteKeyed("/v1/namespaces/sales", NewKey()).status, 204) << "a new key runs";

}

TEST_F(RestIdempotencyTest, AKeySentWithAnotherRequestIsRefused) {
  Start();
  CreateFacts();
  const iceberg::TableMetadata base = Current();
  const std::string key = NewKey();
  ASSERT_EQ(PostKeyed(kTable, AppendCommit(base, 0, 5, "first"), key).status, 200);
  const size_t logged = DenseLogSize();
  // Another body, another path, another method: 400 (a status every mutation documents), nothing applied.
  Raw other_body = PostKeyed(kTable, AppendCommit(base, 10, 5, "second"), key);
  EXPECT_EQ(other_body.status, 400);
  EXPECT_EQ(ErrorTypeOf(other_body), "BadRequestException");
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"x"}}}, key).status, 400);
  EXPECT_EQ(DeleteKeyed(kTable, key).status, 400);
  EXPECT_EQ(DenseLogSize(), logged);
  EXPECT_EQ(Count("base", "facts"), "5");
  EXPECT_EQ(Get("/v1/namespaces/x").status, 404);
}

TEST_F(RestIdempotencyTest, AMalformedKeyIs400AndRunsNothing) {
  Start();
  for (const std::string& bad : {
           std::string("not-a-uuid"),
           std::string("0190b3c25a6e7f3b9c1d2e3f4a5b6c7d"),       // no dashes
           std::string("0190b3c2-5a6e-7f3b-9c1d-2e3f4a5b6c7g"),   // not hex
           std::string("{0190b3c2-5a6e-7f3b-9c1d-2e3f4a5b6c7}"),
       }) {
    Raw r = PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, bad);
    EXPECT_EQ(r.status, 400) << "'" << bad << "'";
    EXPECT_EQ(ErrorTypeOf(r), "BadRequestException");
  }
  EXPECT_EQ(Get("/v1/namespaces/n").status, 404);
  // The spec's own example is upper case: accepted, and the same key as its lower-case form.
  const std::string upper = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F";
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, upper).status, 200);
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f").status, 200);
  // The schema says `format: uuid`: a version-4 key (not the UUIDv7 clients are asked for) is
  // taken too, with the same at-most-once.
  const std::string v4 = "0190b3c2-5a6e-4f3b-9c1d-2e3f4a5b6c7d";
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"m"}}}, v4).status, 200);
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"m"}}}, v4).status, 200);  // replayed, not 409
}

TEST_F(RestIdempotencyTest, KeysBelongToTheirPrincipal) {
  RestOptions options;
  options.static_tokens = {"token-a", "token-b"};
  Start(options);
  const std::string key = NewKey();
  token_ = "token-a";
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, key).status, 200);
  // B's request with A's key is B's own: it runs (and finds the namespace there).
  token_ = "token-b";
  Raw other = PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, key);
  EXPECT_EQ(other.status, 409);
  EXPECT_EQ(ErrorTypeOf(other), "AlreadyExistsException");
  token_ = "token-a";
  EXPECT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"n"}}}, key).status, 200);
}

// Spec idempotency-key-lifetime: "Clients SHOULD NOT reuse an Idempotency-Key after this window
// elapses". Past it the key is free: a request with it runs again, and expired records are
// purged.
TEST_F(RestIdempotencyTest, AKeyIsFreeAgainAfterItsLifetime) {
  RestOptions options;
  options.idempotency_key_lifetime = 1s;
  Start(options);
  EXPECT_EQ(Get("/v1/config").body["idempotency-key-lifetime"], "PT1S");
  const std::string key = NewKey();
  const Json body{{"namespace", {"n"}}};
  ASSERT_EQ(PostKeyed("/v1/namespaces", body, key).status, 200);
  ASSERT_EQ(PostKeyed("/v1/namespaces", body, key).status, 200);
  std::this_thread::sleep_for(1200ms);
  // Another keyed request purges what expired (at most once per lifetime).
  ASSERT_EQ(PostKeyed("/v1/namespaces", Json{{"namespace", {"m"}}}, NewKey()).status, 200);
  auto kept = catalog_->LoadIdempotencyRecord(kLoopbackScope, key, 0);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_FALSE(kept->has_value()) << "the expired record was purged";
  Raw rerun = PostKeyed("/v1/namespaces", body, key);
  EXPECT_EQ(rerun.status, 409) << "the key is free: the create ran again";
  EXPECT_EQ(ErrorTypeOf(rerun), "AlreadyExistsException");
}

// The records of commits are in the catalog: a new server of the same catalog replays them.
TEST_F(RestIdempotencyTest, CommitRecordsOutliveTheServer) {
  Start();
  CreateFacts();
  const std::string body = AppendCommit(Current(), 0, 4, "restart").dump();
  const std::string key = NewKey();
  Raw first = PostKeyed(kTable, body, key);
  ASSERT_EQ(first.status, 200) << first.body;
  const size_t logged = DenseLogSize();
  server_.reset();
  Start();
  Raw again = PostKeyed(kTable, body, key);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.etag, first.etag);
  EXPECT_EQ(DenseLogSize(), logged);
  EXPECT_EQ(Count("base", "facts"), "4");
}

// The client gives up on a commit that is still running and retries: the retry waits for the
// first and gets its answer; one commit.
TEST_F(RestIdempotencyTest, ARetryWhileTheFirstStillRunsWaitsForItsAnswer) {
  GatedCatalog gated(*catalog_);
  StartOn(gated);
  CreateFacts();
  const std::string body = AppendCommit(Current(), 0, 5, "slow").dump();
  const std::string key = NewKey();
  gated.Close();
  httplib::Client impatient("127.0.0.1", server_->port());
  impatient.set_read_timeout(0, 300000);
  Raw gave_up = RawOf(impatient.Post(kTable, KeyHeaders(key), body, "application/json"));
  EXPECT_EQ(gave_up.status, -1) << "the client timed out";
  ASSERT_TRUE(testing::PollUntil([&] { return gated.waiting() == 1; }));

  auto retry = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    return RawOf(c.Post(kTable, KeyHeaders(key), body, "application/json"));
  });
  EXPECT_EQ(retry.wait_for(500ms), std::future_status::timeout) << "the retry waits for the first";
  EXPECT_EQ(gated.waiting(), 1) << "and does not commit itself";
  gated.Open();
  Raw answer = retry.get();
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(DenseLogSize(), 2u) << "create and one append";
  EXPECT_EQ(Count("base", "facts"), "5");
  auto state = catalog_->LoadTable(Ident("facts"));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(answer.json()["metadata-location"], state->metadata_location);
  EXPECT_EQ(PostKeyed(kTable, body, key).body, answer.body);
}

// Eight copies of one request at once (a client's retries racing each other): one commit, and
// every copy gets its answer.
TEST_F(RestIdempotencyTest, ConcurrentCopiesOfOneRequestCommitOnce) {
  Start();
  CreateFacts();
  const std::string body = AppendCommit(Current(), 0, 5, "copies").dump();
  const std::string key = NewKey();
  std::vector<std::future<Raw>> copies;
  for (int i = 0; i < 8; ++i) {
    copies.push_back(std::async(std::launch::async, [&] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(60, 0);
      return RawOf(c.Post(kTable, KeyHeaders(key), body, "application/json"));
    }));
  }
  std::vector<Raw> answers;
  for (auto& f : copies) answers.push_back(f.get());
  for (const Raw& a : answers) {
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.body, answers[0].body);
  }
  EXPECT_EQ(DenseLogSize(), 2u);
  EXPECT_EQ(Count("base", "facts"), "5");
  EXPECT_EQ(server_->stats().commits, 1);
}

// Past the wait the retry hears 503 with Retry-After (not final: nothing is kept), and a key
// sent with another request while the first runs is 400 at once.
TEST_F(RestIdempotencyTest, ARetryThatWaitedTooLongIs503) {
  GatedCatalog gated(*catalog_);
  RestOptions options;
  options.idempotency_wait = 1s;
  StartOn(gated, options);
  CreateFacts();
  const iceberg::TableMetadata base = Current();
  const std::string body = AppendCommit(base, 0, 5, "slow").dump();
  const std::string key = NewKey();
  gated.Close();
  httplib::Client impatient("127.0.0.1", server_->port());
  impatient.set_read_timeout(0, 200000);
  EXPECT_EQ(RawOf(impatient.Post(kTable, KeyHeaders(key), body, "application/json")).status, -1);
  ASSERT_TRUE(testing::PollUntil([&] { return gated.waiting() == 1; }));

  Raw busy = PostKeyed(kTable, body, key);
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(ErrorTypeOf(busy), "ServiceUnavailableException");
  EXPECT_EQ(busy.retry_after, "1");
  Raw other = PostKeyed(kTable, AppendCommit(base, 10, 1, "other").dump(), key);
  EXPECT_EQ(other.status, 400);

  gated.Open();
  Raw answer;
  ASSERT_TRUE(testing::PollUntil([&] {
    answer = PostKeyed(kTable, body, key);
    return answer.status != 503;
  }, 20s, 50ms));
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(DenseLogSize(), 2u);
  EXPECT_EQ(Count("base", "facts"), "5");
}

// ---- a server killed between its commit and its answer, SQLite and PostgreSQL ----

enum class Backend { kSqlite, kPostgres };

class RestKilledServerTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    auto db = engine::Database::Open({});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    warehouse_ = tmp_.Path("warehouse");
    if (GetParam() == Backend::kSqlite) {
      uri_ = "sqlite://" + tmp_.Path("catalog.db");
    } else {
      auto cluster = testing::PgTestCluster::Shared();
      ASSERT_TRUE(cluster.ok()) << "PostgreSQL test cluster did not start: " << cluster.status().ToString();
      auto database = (*cluster)->CreateDatabase();
      ASSERT_TRUE(database.ok()) << database.status().ToString();
      uri_ = *database;
    }
    catalog::SqlCatalogOptions o;
    o.uri = uri_;
    o.warehouse = warehouse_;
    auto cat = catalog::OpenSqlCatalog(o, *io_);
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
    ASSERT_TRUE(catalog_->CreateNamespace(*catalog::Namespace::Parse("base"), {}).ok());
    catalog::CreateTableRequest request;
    auto schema = iceberg::ParseSchemaJson(R"({"type":"struct","schema-id":0,"fields":[
      {"id":1,"name":"id","required":true,"type":"long"},
      {"id":2,"name":"region","required":false,"type":"string"}]})");
    ASSERT_TRUE(schema.ok()) << schema.status().ToString();
    request.schema = *schema;
    ASSERT_TRUE(catalog_->CreateTable(ident_, request).ok());
  }

  // Starts the server process; its port, or 0.
  int StartChild(const std::string& crash_point = "") {
    std::vector<std::string> argv = {testing::RestServerChildPath(), uri_, warehouse_};
    if (!crash_point.empty()) argv.push_back(crash_point);
    child_ = testing::ChildProcess::Start(argv, tmp_.Path("server.err"));
    if (child_ == nullptr) return 0;
    const std::string line = child_->ReadLine(30s);
    return line.rfind("port ", 0) == 0 ? std::atoi(line.c_str() + 5) : 0;
  }

  static Raw PostKeyed(int port, const std::string& path, const std::string& body, const std::string& key) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    return RawOf(c.Post(path, httplib::Headers{{"Idempotency-Key", key}}, body, "application/json"));
  }

  int64_t Rows() {
    auto t = table::Table::Load(*catalog_, *io_, *db_, ident_);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return -1;
    auto sql = (*t)->ReadSql({});
    EXPECT_TRUE(sql.ok()) << sql.status().ToString();
    if (!sql.ok()) return -1;
    auto rows = testing::QueryText(*db_, "WITH t AS (" + *sql + ") SELECT count(*) FROM t");
    return rows.empty() ? -1 : std::stoll(rows[0][0]);
  }

  std::vector<catalog::CommitLogEntry> Log() {
    auto log = catalog_->CommitsSince(0, 100000);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? *log : std::vector<catalog::CommitLogEntry>();
  }

  testing::TempDir tmp_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<engine::Database> db_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<testing::ChildProcess> child_;
  std::string uri_;
  std::string warehouse_;
  const catalog::TableIdent ident_ = *catalog::TableIdent::Parse("base.facts");
  const std::string kPath = "/v1/namespaces/base/tables/facts";
};

TEST_P(RestKilledServerTest, ARetryAfterTheServerDiedBetweenCommitAndAnswerFindsTheCommit) {
  auto base = catalog_->LoadTable(ident_);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const int64_t snapshot_id = 424242;
  auto commit = testing::WriteAppendCommit(*db_, *io_, *base->metadata,
                                           "SELECT range AS id, 'eu' AS region FROM range(0, 6)", "killed", snapshot_id);
  ASSERT_TRUE(commit.ok()) << commit.status().ToString();
  const std::string key = NewKey();

  // The server commits (catalog transaction committed, its log written) and is SIGKILLed before
  // it answers (base/crash_point.h "commit.after_log").
  const int port = StartChild("commit.after_log");
  ASSERT_GT(port, 0) << testing::ReadFileOrDie(tmp_.Path("server.err"));
  Raw lost = PostKeyed(port, kPath, commit->request_json, key);
  EXPECT_EQ(lost.status, -1) << "the server died before answering: " << lost.body;
  EXPECT_EQ(child_->Stop(0, 30s), -1) << "killed by its crash point";
  child_.reset();

  // The commit and its record landed together.
  std::vector<catalog::CommitLogEntry> log = Log();
  ASSERT_EQ(log.size(), 2u) << "create and the append";
  EXPECT_EQ(log[1].snapshot_id, std::optional<int64_t>(snapshot_id));
  auto record = catalog_->LoadIdempotencyRecord("address:127.0.0.1", key, NowMicros());
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  ASSERT_TRUE(record->has_value()) << "the key was stored with the commit";
  EXPECT_EQ((*record)->metadata_location, log[1].metadata_location);

  // The client retries against the restarted server: the first commit's answer, nothing new.
  const int again_port = StartChild();
  ASSERT_GT(again_port, 0) << testing::ReadFileOrDie(tmp_.Path("server.err"));
  Raw retried = PostKeyed(again_port, kPath, commit->request_json, key);
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(retried.json()["metadata-location"], log[1].metadata_location);
  EXPECT_EQ(retried.json()["metadata"]["current-snapshot-id"], snapshot_id);
  EXPECT_EQ(PostKeyed(again_port, kPath, commit->request_json, key).body, retried.body);
  log = Log();
  ASSERT_EQ(log.size(), 2u) << "no second commit";
  for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].commit_seq, static_cast<int64_t>(i) + 1);
  EXPECT_EQ(Rows(), 6);
  EXPECT_EQ(child_->Stop(SIGTERM, 30s), 0) << testing::ReadFileOrDie(tmp_.Path("server.err"));
}

INSTANTIATE_TEST_SUITE_P(Dialects, RestKilledServerTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

}  // namespace
}  // namespace skade::rest
