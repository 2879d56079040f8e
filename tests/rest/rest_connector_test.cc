// The REST catalog connector (catalog::RestCatalog) against skade's own REST server over real
// HTTP on loopback: every Catalog call a user of the library makes, a table's appends and reads
// through the connector, OAuth2 tokens that expire, the commit log read through the change
// feed (and a Watcher following it), and a server that is down or answers garbage.
#include <atomic>
#include <map>
#include <thread>

#include "skade/catalog/open_catalog.h"
#include "skade/catalog/rest_catalog.h"
#include "skade/events/bus.h"
#include "skade/events/watcher.h"
#include "tests/rest/rest_fixture.h"
#include "tests/testing/poll_until.h"

namespace skade::rest {
namespace {

using catalog::Namespace;
using ::testing::HasSubstr;

class RestConnectorTest : public RestServerTest {
 protected:
  std::unique_ptr<catalog::Catalog> Connect(catalog::RestCatalogOptions o = {}) {
    o.uri = "http://127.0.0.1:" + std::to_string(server_->port());
    auto c = catalog::OpenRestCatalog(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  static Namespace Ns(std::vector<std::string> levels) { return Namespace{std::move(levels)}; }
  static catalog::CreateTableRequest Request() {
    catalog::CreateTableRequest req;
    auto schema = engine::SchemaFromColumnDefinitions("id BIGINT NOT NULL, region VARCHAR");
    EXPECT_TRUE(schema.ok());
    req.schema = *schema;
    req.properties = {{"owner", "ana"}};
    return req;
  }
};

TEST_F(RestConnectorTest, NamespacesAndTablesThroughTheConnectorAreTheServersCatalog) {
  Start();
  auto rc = Connect();
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->warehouse(), catalog_->warehouse()) << "the server's warehouse, from /v1/config";
  ASSERT_TRUE(rc->CreateNamespace(Ns({"sales"}), {{"owner", "ana"}}).ok());
  ASSERT_TRUE(rc->CreateNamespace(Ns({"sales", "eu"}), {}).ok());
  EXPECT_EQ(rc->CreateNamespace(Ns({"sales"}), {}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(rc->CreateNamespace(Ns({"a.b"}), {}).code(), StatusCode::kInvalidArgument) << "refused before sending";
  EXPECT_EQ(rc->ListNamespaces(Ns({})).value(), (std::vector<Namespace>{Ns({"base"}), Ns({"sales"})}));
  EXPECT_EQ(rc->ListNamespaces(Ns({"sales"})).value(), (std::vector<Namespace>{Ns({"sales", "eu"})}));
  EXPECT_EQ(rc->ListNamespaces(Ns({"nope"})).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(rc->NamespaceExists(Ns({"sales", "eu"})).value());
  EXPECT_FALSE(rc->NamespaceExists(Ns({"sales", "us"})).value());
  ASSERT_TRUE(rc->UpdateNamespaceProperties(Ns({"sales"}), {{"k", "v"}}, {"owner"}).ok());
  auto props = rc->LoadNamespaceProperties(Ns({"sales"}));
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->count("owner"), 0u);
  EXPECT_EQ(props->at("k"), "v");
  EXPECT_EQ(catalog_->LoadNamespaceProperties(Ns({"sales"})).value().at("k"), "v") << "the server's catalog changed";

  // Tables: created through the connector, seen in the server's catalog, and back.
  const catalog::TableIdent t{Ns({"sales", "eu"}), "orders"};
  auto created = rc->CreateTable(t, Request());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto direct = catalog_->LoadTable(t);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(created->table.metadata_location, direct->metadata_location);
  EXPECT_EQ(created->table.metadata->table_uuid, direct->metadata->table_uuid);
  EXPECT_EQ(rc->CreateTable(t, Request()).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(rc->ListTables(Ns({"sales", "eu"})).value(), (std::vector<catalog::TableIdent>{t}));
  EXPECT_EQ(rc->DropNamespace(Ns({"sales", "eu"})).code(), StatusCode::kConflict) << "not empty";

  // Commits with requirements: a stale one is kConflict and changes nothing.
  catalog::TableCommit set;
  set.ident = t;
  set.requirements.push_back(iceberg::TableRequirement::AssertTableUuid(direct->metadata->table_uuid));
  set.updates.push_back(iceberg::TableUpdate::SetProperties({{"stage", "one"}}));
  auto committed = rc->CommitTable(set);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(committed->table.metadata->properties.at("stage"), "one");
  catalog::TableCommit stale = set;
  stale.requirements = {iceberg::TableRequirement::AssertTableUuid("00000000-0000-0000-0000-000000000000")};
  stale.updates = {iceberg::TableUpdate::SetProperties({{"stage", "two"}})};
  EXPECT_EQ(rc->CommitTable(stale).status().code(), StatusCode::kConflict);
  EXPECT_EQ(rc->LoadTable(t).value().metadata->properties.at("stage"), "one");
  // before_swap runs before the commit is sent: its error sends nothing.
  catalog::TableCommit held = set;
  held.updates = {iceberg::TableUpdate::SetProperties({{"stage", "held"}})};
  int held_calls = 0;
  held.before_swap = [&] {
    ++held_calls;
    return Status::IoError("injected: files not durable");
  };
  EXPECT_EQ(rc->CommitTable(held).status().code(), StatusCode::kIoError);
  EXPECT_EQ(held_calls, 1);
  EXPECT_EQ(catalog_->LoadTable(t).value().metadata->properties.at("stage"), "one");

  // A change made beside the connector is seen at the next load (the ETag no longer matches).
  ASSERT_TRUE(catalog_->CommitTable(catalog::TableCommit{t, {}, {iceberg::TableUpdate::SetProperties({{"stage", "x"}})}, {}}).ok());
  EXPECT_EQ(rc->LoadTable(t).value().metadata->properties.at("stage"), "x");
  EXPECT_EQ(rc->LoadTable(t).value().metadata->properties.at("stage"), "x");
  httplib::Client plain("127.0.0.1", server_->port());
  // The server counts a request once its response is written: poll briefly.
  std::string metrics;
  skade::testing::PollUntil([&] {
    auto got = plain.Get("/metrics");
    metrics = got ? got->body : "";
    return metrics.find("status=\"304\"") != std::string::npos;
  }, std::chrono::seconds(20), std::chrono::milliseconds(10));
  EXPECT_THAT(metrics, HasSubstr("status=\"304\"")) << "the repeated load was a 304";

  // Transactions, rename, register, drop.
  const catalog::TableIdent u{Ns({"sales"}), "items"};
  ASSERT_TRUE(rc->CreateTable(u, Request()).ok());
  int swaps = 0;
  auto count_swap = [&] {
    ++swaps;
    return Status::Ok();
  };
  auto both = rc->CommitTransaction({catalog::TableCommit{t, {}, {iceberg::TableUpdate::SetProperties({{"txn", "1"}})}, count_swap},
                                     catalog::TableCommit{u, {}, {iceberg::TableUpdate::SetProperties({{"txn", "1"}})}, count_swap}});
  EXPECT_EQ(swaps, 2);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[1].table.metadata->properties.at("txn"), "1");
  const catalog::TableIdent moved{Ns({"sales"}), "orders_eu"};
  ASSERT_TRUE(rc->RenameTable(t, moved).ok());
  EXPECT_EQ(rc->LoadTable(t).status().code(), StatusCode::kNotFound);
  const std::string location = rc->LoadTable(moved).value().metadata_location;
  ASSERT_TRUE(rc->DropTable(moved, catalog::DropMode::kKeepFiles).ok());
  auto registered = rc->RegisterTable(moved, location);
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_EQ(registered->table.metadata->properties.at("txn"), "1");
  // Unregister (the spec's route, which the server lists): only while the pointer is the one
  // given; the row goes, every file stays, and the table registers again from its last metadata.
  EXPECT_EQ(rc->UnregisterTable(moved, location + ".stale").code(), StatusCode::kConflict);
  ASSERT_TRUE(catalog_->LoadTable(moved).ok());
  const std::string last = rc->LoadTable(moved).value().metadata_location;
  ASSERT_TRUE(rc->UnregisterTable(moved, last).ok());
  EXPECT_EQ(catalog_->LoadTable(moved).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(io_->Stat(last).ok()) << "unregistering deletes no file";
  EXPECT_EQ(rc->UnregisterTable(moved, last).code(), StatusCode::kNotFound);
  ASSERT_TRUE(rc->RegisterTable(moved, last).ok());
  ASSERT_TRUE(rc->DropTable(moved, catalog::DropMode::kPurge).ok());
  EXPECT_EQ(rc->DropTable(moved, catalog::DropMode::kPurge).code(), StatusCode::kNotFound);
}

// skade's table layer over the connector: appends commit through REST and read back the same
// rows, and concurrent writers through two connectors lose nothing.
TEST_F(RestConnectorTest, TheTableLayerAppendsAndReadsThroughTheConnector) {
  Start();
  auto rc = Connect();
  ASSERT_NE(rc, nullptr);
  ASSERT_TRUE(rc->CreateTable(Ident("facts"), Request()).ok());
  auto table = table::Table::Load(*rc, *io_, *db_, Ident("facts"));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_TRUE((*table)->Append({"SELECT range AS id, 'eu' AS region FROM range(100)", nullptr}).ok());
  auto rc2 = Connect();
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      auto& cat = w % 2 ? *rc2 : *rc;
      auto db = engine::Database::Open({});
      if (!db.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 3; ++i) {
        auto t = table::Table::Load(cat, *io_, **db, Ident("facts"));
        if (!t.ok() || !(*t)->Append({"SELECT 1000 + range AS id, 'us' AS region FROM range(10)", nullptr}).ok()) ++failures;
      }
    });
  }
  for (auto& th : writers) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto reloaded = table::Table::Load(*rc, *io_, *db_, Ident("facts"));
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(Rows(**reloaded, "SELECT count(*), count(*) FILTER (region = 'us') FROM t")[0],
            (std::vector<std::string>{"220", "120"}));
  EXPECT_EQ(Count("base", "facts"), "220") << "the server's own view";
}

// A commit's answer is the table as it now stands: the connector keeps it under the answer's
// ETag, so the load that follows (the table layer loads before each append) is a 304 that
// moves no metadata, and gives the state the commit answered; a commit made beside the
// connector still shows at the next load.
TEST_F(RestConnectorTest, ALoadAfterACommitRevalidatesTheAnsweredState) {
  Start();
  auto rc = Connect();
  ASSERT_NE(rc, nullptr);
  const catalog::TableIdent t = Ident("kept");
  ASSERT_TRUE(rc->CreateTable(t, Request()).ok());
  httplib::Client plain("127.0.0.1", server_->port());
  // Requests answered 304 so far (the server counts a request once its answer is written).
  auto not_modified = [&]() -> long {
    auto got = plain.Get("/metrics");
    const std::string text = got ? got->body : "";
    const std::string tag = "method=\"GET\",status=\"304\"} ";
    const size_t at = text.find(tag);
    return at == std::string::npos ? 0 : std::atol(text.c_str() + at + tag.size());
  };
  auto committed = rc->CommitTable(catalog::TableCommit{t, {}, {iceberg::TableUpdate::SetProperties({{"stage", "one"}})}, {}});
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  const long before = not_modified();
  auto loaded = rc->LoadTable(t);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->metadata_location, committed->table.metadata_location);
  EXPECT_EQ(loaded->metadata->properties.at("stage"), "one");
  long after = before;
  skade::testing::PollUntil([&] { return (after = not_modified()) > before; }, std::chrono::seconds(20),
                            std::chrono::milliseconds(10));
  EXPECT_EQ(after, before + 1) << "the load after the commit was answered 304";
  // The state is the server's: its metadata file, parsed, is the one the connector holds.
  auto server_side = catalog_->LoadTable(t);
  ASSERT_TRUE(server_side.ok());
  EXPECT_EQ(server_side->metadata_location, loaded->metadata_location);
  EXPECT_EQ(iceberg::TableMetadataToJson(*server_side->metadata), iceberg::TableMetadataToJson(*loaded->metadata));
  // Someone else's commit: the tag no longer matches, the next load has it.
  ASSERT_TRUE(catalog_->CommitTable(catalog::TableCommit{t, {}, {iceberg::TableUpdate::SetProperties({{"stage", "two"}})}, {}}).ok());
  EXPECT_EQ(rc->LoadTable(t).value().metadata->properties.at("stage"), "two");
}

// The commit log through the change feed: the same entries as the server's catalog, and a
// Watcher on the connector publishes commits made on the server by anyone.
TEST_F(RestConnectorTest, TheCommitLogAndCommitEventsFollowTheServer) {
  Start();
  auto rc = Connect();
  ASSERT_NE(rc, nullptr);
  ASSERT_TRUE(rc->CreateTable(Ident("a"), Request()).ok());
  ASSERT_TRUE(catalog_->CreateTable(Ident("b"), Request()).ok());
  auto mine = rc->CommitsSince(0, 100);
  auto theirs = catalog_->CommitsSince(0, 100);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_EQ(mine->size(), theirs->size());
  for (size_t i = 0; i < mine->size(); ++i) {
    EXPECT_EQ((*mine)[i].commit_seq, (*theirs)[i].commit_seq);
    EXPECT_EQ((*mine)[i].table, (*theirs)[i].table);
    EXPECT_EQ((*mine)[i].operation, (*theirs)[i].operation);
    EXPECT_EQ((*mine)[i].metadata_location, (*theirs)[i].metadata_location);
  }
  EXPECT_EQ(rc->CommitsSince(1, 100).value().size(), 1u);
  EXPECT_EQ(rc->CommitsSince(0, 1).value().size(), 1u);
  EXPECT_EQ(rc->LatestCommitSeq().value(), 2);

  events::Bus bus;
  events::WatcherOptions wo;
  wo.remote_poll_interval = std::chrono::milliseconds(20);
  auto watcher = events::Watcher::Start(*rc, "rest+http://127.0.0.1:" + std::to_string(server_->port()), bus, wo);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  auto sub = bus.Subscribe();
  ASSERT_TRUE(catalog_->CreateTable(Ident("c"), Request()).ok());  // made beside the connector
  ASSERT_TRUE(rc->CreateTable(Ident("d"), Request()).ok());        // made through it
  std::vector<int64_t> seen;
  for (int i = 0; i < 400 && seen.size() < 2; ++i) {
    events::Received next = sub.receiver.Next(std::chrono::milliseconds(25));
    if (next.kind == events::Received::Kind::kEvent) seen.push_back(next.event.commit_seq);
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{3, 4}));
  watcher->reset();
}

TEST_F(RestConnectorTest, OAuth2TokensAreFetchedAndRenewed) {
  RestOptions options;
  options.clients = {{"spark", "s3cret"}};
  options.token_lifetime = std::chrono::seconds(1);
  Start(options);
  catalog::RestCatalogOptions o;
  o.credential = "spark:wrong";
  o.uri = "http://127.0.0.1:" + std::to_string(server_->port());
  EXPECT_EQ(catalog::OpenRestCatalog(o).status().code(), StatusCode::kUnauthorized);
  o.credential = "spark:s3cret";
  auto rc = Connect(o);
  ASSERT_NE(rc, nullptr);
  EXPECT_TRUE(rc->NamespaceExists(Ns({"base"})).value());
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // the first token has expired
  EXPECT_TRUE(rc->NamespaceExists(Ns({"base"})).value());
  // A static token the server does not know.
  catalog::RestCatalogOptions bad;
  bad.token = "forged";
  bad.uri = o.uri;
  EXPECT_EQ(catalog::OpenRestCatalog(bad).status().code(), StatusCode::kUnauthorized);
}

TEST_F(RestConnectorTest, ReadOnlyAndUrisAndUnreachableOrBrokenServers) {
  Start();
  const std::string uri = "rest+http://127.0.0.1:" + std::to_string(server_->port());
  auto parsed = catalog::ParseRestCatalogUri(uri + "/?warehouse=w%201&credential=a:b&scope=x");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->uri, "http://127.0.0.1:" + std::to_string(server_->port()) + "/");
  EXPECT_EQ(parsed->warehouse, "w 1");
  EXPECT_EQ(parsed->credential, "a:b");
  EXPECT_EQ(catalog::ParseRestCatalogUri(uri + "?nope=1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog::CatalogKindOf("ftp://x").status().code(), StatusCode::kInvalidArgument);

  catalog::SqlCatalogOptions open;
  open.uri = uri;
  open.access = catalog::SqlCatalogOptions::Access::kReadOnly;
  auto ro = catalog::OpenCatalog(open, *io_);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_EQ((*ro)->CreateNamespace(Ns({"x"}), {}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ((*ro)->CreateTable(Ident("x"), Request()).status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE((*ro)->NamespaceExists(Ns({"base"})).value());
  EXPECT_FALSE(catalog_->NamespaceExists(Ns({"x"})).value());

  // Nothing listening: kUnavailable. A server answering garbage: kCorruption.
  httplib::Server junk;
  junk.Get("/v1/config", [](const httplib::Request&, httplib::Response& res) { res.set_content("<html>", "text/html"); });
  junk.Get("/v1/namespaces", [](const httplib::Request&, httplib::Response& res) { res.set_content("{\"namespaces\": 3}", "application/json"); });
  const int port = junk.bind_to_any_port("127.0.0.1");
  std::thread loop([&] { junk.listen_after_bind(); });
  catalog::RestCatalogOptions o;
  o.uri = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(catalog::OpenRestCatalog(o).status().code(), StatusCode::kCorruption);
  junk.stop();
  loop.join();
  o.http.retry.max_attempts = 1;
  auto down = catalog::OpenRestCatalog(o);
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().ToString();
}

// Table answers of other servers, as the spec allows them: the metadata member spelt with an
// escape, or given twice (a JSON parser keeps the last), is read as a full parse reads it; a
// broken one is an error, never a guess. The connector cuts the metadata out of the answer's
// text only when the cut is unambiguous (SplitJsonMember) and parses the whole answer otherwise.
TEST_F(RestConnectorTest, TableAnswersTheMetadataSplitCannotVouchForAreParsedWhole) {
  Start();
  ASSERT_TRUE(catalog_->CreateTable(Ident("real"), Request()).ok());
  auto real = catalog_->LoadTable(Ident("real"));
  ASSERT_TRUE(real.ok());
  const std::string metadata = iceberg::TableMetadataToJson(*real->metadata);
  const std::string location = "\"metadata-location\":\"" + real->metadata_location + "\"";
  const std::map<std::string, std::string> answers = {
      {"plain", "{" + location + ",\"metadata\":" + metadata + "}"},
      {"escaped", "{" + location + ",\"metad\\u0061ta\":" + metadata + ",\"config\":{}}"},
      {"twice", "{" + location + ",\"metadata\":{\"format-version\":99},\"metadata\":" + metadata + "}"},
      {"broken", "{" + location + ",\"metadata\":{\"format-version\":2,\"table-uuid\":}}"},
      {"cut", "{" + location + ",\"metadata\":" + metadata.substr(0, metadata.size() / 2)},
  };
  httplib::Server other;
  other.Get("/v1/config", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"defaults":{},"overrides":{}})", "application/json");
  });
  other.Get(R"(/v1/namespaces/db/tables/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto it = answers.find(req.matches[1]);
    if (it == answers.end()) {
      res.status = 404;
      return;
    }
    res.set_content(it->second, "application/json");
  });
  const int port = other.bind_to_any_port("127.0.0.1");
  std::thread loop([&] { other.listen_after_bind(); });
  catalog::RestCatalogOptions o;
  o.uri = "http://127.0.0.1:" + std::to_string(port);
  auto rc = catalog::OpenRestCatalog(o);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  for (const char* name : {"plain", "escaped", "twice"}) {
    auto loaded = (*rc)->LoadTable(catalog::TableIdent{Ns({"db"}), name});
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.status().ToString();
    EXPECT_EQ(loaded->metadata_location, real->metadata_location) << name;
    EXPECT_EQ(iceberg::TableMetadataToJson(*loaded->metadata), metadata) << name;
  }
  for (const char* name : {"broken", "cut"}) {
    auto loaded = (*rc)->LoadTable(catalog::TableIdent{Ns({"db"}), name});
    EXPECT_FALSE(loaded.ok()) << name;
  }
  other.stop();
  loop.join();
}

}  // namespace
}  // namespace skade::rest
