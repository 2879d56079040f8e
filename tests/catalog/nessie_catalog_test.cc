// The Nessie catalog connector against a loopback HTTP server that replays Nessie API v2
// answers (JSON bodies in tests/catalog/nessie/, written from Nessie's API documentation; no
// live Nessie server was involved). The server answers only the exact requests the connector
// should send (method, path, query parameters, POST body); any other request gets a Nessie
// 404 and fails the test. IcebergTable contents point at metadata files of real tables that
// skade's library wrote through a SQLite catalog in the test's temp warehouse.
#include "skade/catalog/nessie_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "skade/base/log.h"
#include "skade/catalog/open_catalog.h"
#include "tests/io/test_servers.h"
#include "tests/testing/lake_test.h"
#include "tests/testing/temp_dir.h"

namespace skade::catalog {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Params = std::map<std::string, std::string>;

// main is at 2e1cfa82… in the files; tag v1 and the older commit on main at kOldHash.
constexpr char kOldHash[] = "1122334455667788112233445566778811223344556677881122334455667788";
constexpr char kDeadbeefHash[] = "deadbeef00112233445566778899aabbccddeeff00112233445566778899aabb";

// The CEL filters the connector sends to learn about one namespace: the NAMESPACE contents
// beside it and every key below it.
constexpr char kSalesFilter[] =
    "(entry.namespace == '' && entry.contentType == 'NAMESPACE') || entry.namespace == 'sales' || "
    "entry.namespace.startsWith('sales.')";
constexpr char kSalesEuFilter[] =
    "(entry.namespace == 'sales' && entry.contentType == 'NAMESPACE') || entry.namespace == "
    "'sales.eu' || "
    "entry.namespace.startsWith('sales.eu.')";
constexpr char kMarketingFilter[] =
    "(entry.namespace == '' && entry.contentType == 'NAMESPACE') || entry.namespace == 'marketing' "
    "|| "
    "entry.namespace.startsWith('marketing.')";
constexpr char kNopeFilter[] =
    "(entry.namespace == '' && entry.contentType == 'NAMESPACE') || entry.namespace == 'nope' || "
    "entry.namespace.startsWith('nope.')";

// Replays Nessie answers for exact requests. Thread-safe (handlers run on server threads).
class NessieReplay {
 public:
  NessieReplay() {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
    server_.server().Get(".*", handle);
    server_.server().Post(".*", handle);
  }

  int Start() { return server_.Start(); }

  // Answers `method path?params` (and a POST with this JSON body) with tests/catalog/nessie/<file>.
  void Answer(const std::string& method, const std::string& path, const Params& params,
              const std::string& file, int status = 200, const std::string& body = "") {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[Key(method, path, params, body)] = Reply{file, status};
  }
  // Replaces `placeholder` in every file served from now on.
  void Substitute(const std::string& placeholder, const std::string& value) {
    std::lock_guard<std::mutex> lock(mu_);
    substitutions_[placeholder] = value;
  }
  int Hits(const std::string& method, const std::string& path, const Params& params = {},
           const std::string& body = "") const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = hits_.find(Key(method, path, params, body));
    return it == hits_.end() ? 0 : it->second;
  }
  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::string> unexpected() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unexpected_;
  }
  std::string last_authorization() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_authorization_;
  }

 private:
  struct Reply {
    std::string file;
    int status = 200;
  };

  static std::string Key(const std::string& method, const std::string& path, const Params& params,
                         const std::string& body) {
    std::string key = method + " " + path;
    char sep = '?';
    for (const auto& [k, v] : params) {
      key += sep + k + "=" + v;
      sep = '&';
    }
    if (!body.empty()) key += " " + nlohmann::json::parse(body, nullptr, false).dump();
    return key;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    Params params;
    for (const auto& [k, v] : req.params) params[k] = v;
    const std::string key = Key(req.method, req.path, params, req.method == "POST" ? req.body : "");
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
    ++hits_[key];
    last_authorization_ = req.get_header_value("Authorization");
    auto it = answers_.find(key);
    if (it == answers_.end()) {
      unexpected_.push_back(key);
      nlohmann::json error{{"status", 404},
                           {"reason", "Not Found"},
                           {"message", "the replay server has no answer for " + key},
                           {"errorCode", "CONTENT_NOT_FOUND"}};
      res.status = 404;
      res.set_content(error.dump(), "application/json");
      return;
    }
    std::ifstream in(skade::testing::SourcePath("tests/catalog/nessie/") + it->second.file,
                     std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string body = text.str();
    EXPECT_FALSE(body.empty()) << "missing fixture " << it->second.file;
    for (const auto& [placeholder, value] : substitutions_) {
      for (size_t at = body.find(placeholder); at != std::string::npos;
           at = body.find(placeholder, at + value.size())) {
        body.replace(at, placeholder.size(), value);
      }
    }
    res.status = it->second.status;
    res.set_content(body, "application/json");
  }

  mutable std::mutex mu_;
  std::map<std::string, Reply> answers_;
  std::map<std::string, std::string> substitutions_;
  std::map<std::string, int> hits_;
  std::vector<std::string> unexpected_;
  std::string last_authorization_;
  int requests_ = 0;
  // Last: stopped (joining its threads) before the maps above go away.
  skade::testing::HttplibServer server_;
};

// Collects what skade logs while alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    Logger().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = Logger().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() {
    Logger().flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

Namespace Ns(std::vector<std::string> levels) { return Namespace{std::move(levels)}; }

class NessieCatalogTest : public skade::testing::LakeTest {
 protected:
  NessieCatalogTest() : LakeTest("sales.eu") {}

  void SetUp() override {
    LakeTest::SetUp();
    replay_.Substitute("{{WAREHOUSE}}", tmp_.Path("warehouse"));
    replay_.Substitute("{{SNAPSHOT_V1}}", "0");
    replay_.Substitute("{{SNAPSHOT_V2}}", "0");
    // The tree at main's head (see the files for the keys).
    replay_.Answer("GET", "/api/v2/trees/main", {}, "trees-main.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {}, "entries-main-page1.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {{"page-token", "AAAB+/x="}},
                   "entries-main-page2.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {{"filter", kSalesFilter}},
                   "entries-main-sales.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {{"filter", kSalesEuFilter}},
                   "entries-main-sales.eu.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {{"filter", kMarketingFilter}},
                   "entries-main-top-namespaces.json");
    replay_.Answer("GET", "/api/v2/trees/main/entries", {{"filter", kNopeFilter}},
                   "entries-main-top-namespaces.json");
    replay_.Answer("GET", "/api/v2/trees/main/contents/sales", {}, "contents-sales.json");
    replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu", {},
                   "error-content-not-found.json", 404);
    replay_.Answer("GET", "/api/v2/trees/main/contents/nope", {}, "error-content-not-found.json",
                   404);
    replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.orders", {},
                   "contents-sales.eu.orders-v2.json");
    replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.nope", {},
                   "error-content-not-found.json", 404);
    replay_.Answer("GET", "/api/v2/trees/main/contents/sales.legacy", {},
                   "contents-sales.legacy.json");
    replay_.Answer("POST", "/api/v2/trees/main/contents", {}, "contents-multiple-percent.json", 200,
                   R"({"requestedKeys": [{"elements": ["sales", "p%q"]}]})");
    replay_.Answer("POST", "/api/v2/trees/main/contents", {}, "contents-multiple-empty.json", 200,
                   R"({"requestedKeys": [{"elements": ["sales", "x%y"]}]})");
    // Other references.
    replay_.Answer("GET", "/api/v2/trees/v1", {}, "trees-v1.json");
    replay_.Answer("GET", "/api/v2/trees/nope", {}, "error-reference-not-found.json", 404);
    replay_.Answer("GET", "/api/v2/trees/deadbeef", {}, "error-reference-not-found.json", 404);
    port_ = replay_.Start();
    ASSERT_GT(port_, 0);
  }

  void TearDown() override {
    EXPECT_THAT(replay_.unexpected(), IsEmpty()) << "requests the connector should not send";
  }

  std::string Uri(const std::string& query) const {
    return "nessie+http://127.0.0.1:" + std::to_string(port_) + "/api/v2" + query;
  }

  // Opens through the URI parser with a small retry policy.
  Result<std::unique_ptr<Catalog>> TryOpen(const std::string& query) {
    SKADE_ASSIGN_OR_RETURN(NessieCatalogOptions o, ParseNessieCatalogUri(Uri(query)));
    o.http.retry.max_attempts = 2;
    o.http.retry.initial_backoff = std::chrono::milliseconds(1);
    o.http.retry.max_backoff = std::chrono::milliseconds(2);
    return OpenNessieCatalog(std::move(o), *io_);
  }
  std::unique_ptr<Catalog> Open(const std::string& query) {
    auto c = TryOpen(query);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Writes sales.eu.orders through the SQLite catalog in two appends and leaves a copy of each
  // metadata file where the replayed IcebergTable contents point (v1: 10 rows, v2: 25 rows),
  // as a Nessie commit would have recorded them.
  void WriteOrders() {
    orders_ = CreateTable("orders", "id BIGINT, region VARCHAR, amount DOUBLE");
    ASSERT_NE(orders_, nullptr);
    // The copies sit beside the originals: skade's metadata may name its manifest lists
    // relative to the metadata file's folder.
    ASSERT_EQ(std::filesystem::path(orders_->metadata_location()).parent_path().string(),
              std::filesystem::path(Pointer(1)).parent_path().string())
        << "the replayed contents expect the table at <warehouse>/sales/eu/orders";
    const char* rows[] = {
        "SELECT range AS id, CASE WHEN range % 2 = 0 THEN 'north' ELSE 'south' END AS region, "
        "range * 1.5 AS amount FROM range(10)",
        "SELECT range AS id, 'west' AS region, range * 0.5 AS amount FROM range(10, 25)"};
    for (int v = 1; v <= 2; ++v) {
      auto appended = orders_->Append({rows[v - 1], nullptr});
      ASSERT_TRUE(appended.ok()) << appended.status().ToString();
      auto bytes = io_->Read(orders_->metadata_location());
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      ASSERT_TRUE(io_->CreateExclusive(Pointer(v), *bytes).ok());
      snapshots_[v] = orders_->metadata().current_snapshot_id.value();
      replay_.Substitute("{{SNAPSHOT_V" + std::to_string(v) + "}}", std::to_string(snapshots_[v]));
    }
  }
  std::string Pointer(int version) const {
    return tmp_.Path("warehouse") + "/sales/eu/orders/metadata/nessie-v" + std::to_string(version) +
           ".metadata.json";
  }
  const TableIdent orders_ident_{Ns({"sales", "eu"}), "orders"};

  NessieReplay replay_;
  std::unique_ptr<table::Table> orders_;
  std::map<int, int64_t> snapshots_;
  int port_ = 0;
};

TEST_F(NessieCatalogTest, OpensAtABranchThroughOpenCatalog) {
  EXPECT_EQ(CatalogKindOf(Uri("?ref=main")).value(), CatalogKind::kNessie);
  EXPECT_EQ(CatalogKindOf("nessie+https://nessie.example:19120/api/v2").value(),
            CatalogKind::kNessie);
  SqlCatalogOptions sql;
  sql.uri = Uri("?ref=main");
  sql.catalog_name = "lake";
  sql.warehouse = "/w";
  auto c = OpenCatalog(sql, *io_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->name(), "lake");
  EXPECT_EQ((*c)->warehouse(), "/w");
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/main"), 1)
      << "the reference is resolved once, at open";
  // Without ?ref= the default branch ("-") is resolved to its name, which later calls use.
  replay_.Answer("GET", "/api/v2/trees/-", {}, "trees-main.json");
  auto d = Open("");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->NamespaceExists(Ns({"sales"})).value());
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/main/entries", {{"filter", kSalesFilter}}), 1);
}

TEST_F(NessieCatalogTest, MissingReferenceOrCommitIsNotFoundAtOpen) {
  auto missing = TryOpen("?ref=nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
  replay_.Answer("GET", "/api/v2/trees/main@ffffffffffffffff/entries", {{"max-records", "1"}},
                 "error-commit-not-found.json", 404);
  auto commit = TryOpen("?ref=main@ffffffffffffffff");
  EXPECT_EQ(commit.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(commit.status().message(), HasSubstr("ffffffffffffffff"));
}

TEST_F(NessieCatalogTest, ParsesUris) {
  auto o = ParseNessieCatalogUri(
      "nessie+https://h:19120/api/v2/?ref=dev&token=t%2Bk&name=n&warehouse=s3%3A%2F%2Fb");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->uri, "https://h:19120/api/v2");
  EXPECT_EQ(o->ref, "dev");
  EXPECT_EQ(o->token, "t+k");
  EXPECT_EQ(o->name, "n");
  EXPECT_EQ(o->warehouse, "s3://b");
  EXPECT_EQ(ParseNessieCatalogUri("nessie+http://h/api/v2").value().ref, "-");
  EXPECT_EQ(ParseNessieCatalogUri("nessie+http://h/api/v2?ref=main@1122334455667788").value().ref,
            "main@1122334455667788");
  EXPECT_EQ(ParseNessieCatalogUri("nessie+http://h/api/v2?ref=feature/x").value().ref, "feature/x");
  for (const char* bad :
       {"rest+http://h/api/v2", "nessie+http://h/api/v1", "nessie+http://h/api/v2?reff=main",
        "nessie+http://h/api/v2?ref=main~3", "nessie+http://h/api/v2?ref=main@xyz",
        "nessie+http://h/api/v2?ref=a..b", "nessie+http://h/api/v2?ref=@"}) {
    EXPECT_EQ(ParseNessieCatalogUri(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // The token may come from the environment instead (each test runs in its own process).
  ::setenv("SKADE_NESSIE_TOKEN", "from-env", 1);
  EXPECT_EQ(ParseNessieCatalogUri("nessie+http://h/api/v2").value().token, "from-env");
  EXPECT_EQ(ParseNessieCatalogUri("nessie+http://h/api/v2?token=t").value().token, "t");
  ::unsetenv("SKADE_NESSIE_TOKEN");
}

TEST_F(NessieCatalogTest, ListsNamespacesAcrossPagesWithImpliedOnes) {
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  LogCapture log;
  // Two pages; the key ["odd.ns"] has a level skade cannot represent.
  EXPECT_EQ(c->ListNamespaces(Ns({})).value(),
            (std::vector<Namespace>{Ns({"marketing"}), Ns({"sales"})}));
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/main/entries"), 1);
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/main/entries", {{"page-token", "AAAB+/x="}}), 1);
  EXPECT_THAT(log.text(), HasSubstr(R"(["odd.ns"])"));
  // sales.eu exists only as the namespace of sales.eu.orders (implied); ["sales", "eu.old"] is
  // skipped with one log line.
  EXPECT_EQ(c->ListNamespaces(Ns({"sales"})).value(),
            (std::vector<Namespace>{Ns({"sales", "eu"})}));
  EXPECT_THAT(log.text(), HasSubstr(R"(["sales","eu.old"])"));
  EXPECT_THAT(c->ListNamespaces(Ns({"sales", "eu"})).value(), IsEmpty());
  EXPECT_THAT(c->ListNamespaces(Ns({"marketing"})).value(), IsEmpty());
  EXPECT_EQ(c->ListNamespaces(Ns({"nope"})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c->ListNamespaces(Ns({"a.b"})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ListNamespacesBelow(*c, Ns({})).value(),
            (std::vector<Namespace>{Ns({"marketing"}), Ns({"sales"}), Ns({"sales", "eu"})}));
}

TEST_F(NessieCatalogTest, ExplicitAndImpliedNamespacesExist) {
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->NamespaceExists(Ns({"sales"})).value());
  EXPECT_TRUE(c->NamespaceExists(Ns({"sales", "eu"})).value()) << "implied by sales.eu.orders";
  EXPECT_TRUE(c->NamespaceExists(Ns({"marketing"})).value()) << "explicit, empty";
  EXPECT_FALSE(c->NamespaceExists(Ns({"nope"})).value());
  EXPECT_EQ(c->LoadNamespaceProperties(Ns({"sales"})).value(),
            (std::map<std::string, std::string>{{"owner", "ana"}}));
  EXPECT_THAT(c->LoadNamespaceProperties(Ns({"sales", "eu"})).value(), IsEmpty());
  EXPECT_EQ(c->LoadNamespaceProperties(Ns({"nope"})).status().code(), StatusCode::kNotFound);
}

TEST_F(NessieCatalogTest, ListsIcebergTablesAndSkipsNamesSkadeCannotRepresent) {
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  LogCapture log;
  // Not listed: the Delta table, the view, and ["sales", "v1.2"] (logged).
  EXPECT_EQ(c->ListTables(Ns({"sales"})).value(),
            (std::vector<TableIdent>{{Ns({"sales"}), "p%q"}, {Ns({"sales"}), "returns"}}));
  EXPECT_THAT(log.text(), HasSubstr(R"(["sales","v1.2"])"));
  EXPECT_EQ(c->ListTables(Ns({"sales", "eu"})).value(), (std::vector<TableIdent>{orders_ident_}));
  EXPECT_THAT(c->ListTables(Ns({"marketing"})).value(), IsEmpty());
  EXPECT_EQ(c->ListTables(Ns({"nope"})).status().code(), StatusCode::kNotFound);
}

TEST_F(NessieCatalogTest, LoadsTablesAtABranchAndSeesItsNewCommits) {
  WriteOrders();
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.orders", {},
                 "contents-sales.eu.orders-v1.json");
  auto before = c->LoadTable(orders_ident_);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->ident, orders_ident_);
  EXPECT_EQ(before->metadata_location, Pointer(1));
  EXPECT_EQ(before->metadata->current_snapshot_id, snapshots_[1]);
  // A commit on main moves the table: the next load sees it.
  replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.orders", {},
                 "contents-sales.eu.orders-v2.json");
  auto after = c->LoadTable(orders_ident_);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->metadata_location, Pointer(2));
  EXPECT_EQ(after->metadata->current_snapshot_id, snapshots_[2]);
  EXPECT_EQ(after->metadata->table_uuid, orders_->metadata().table_uuid);
}

TEST_F(NessieCatalogTest, LoadsTablesAtATagAndAtACommit) {
  WriteOrders();
  const std::string key = "/contents/sales.eu.orders";
  auto expect_v1 = [&](const std::string& query, const std::string& tree) {
    replay_.Answer("GET", tree + key, {}, "contents-sales.eu.orders-v1.json");
    const int loads = replay_.Hits("GET", tree + key);
    auto c = Open(query);
    ASSERT_NE(c, nullptr) << query;
    auto t = c->LoadTable(orders_ident_);
    ASSERT_TRUE(t.ok()) << query << ": " << t.status().ToString();
    EXPECT_EQ(t->metadata_location, Pointer(1)) << query;
    EXPECT_EQ(t->metadata->current_snapshot_id, snapshots_[1]) << query;
    EXPECT_EQ(replay_.Hits("GET", tree + key), loads + 1) << query;
  };
  expect_v1("?ref=v1", "/api/v2/trees/v1");
  // name@hash: the branch is looked up, the commit checked by reading one entry at it.
  replay_.Answer("GET", std::string("/api/v2/trees/main@") + kOldHash + "/entries",
                 {{"max-records", "1"}}, "entries-main-at-old-probe.json");
  expect_v1(std::string("?ref=main@") + kOldHash, std::string("/api/v2/trees/main@") + kOldHash);
  // A bare hash that cannot be a reference name (it starts with a digit) is a detached commit.
  replay_.Answer("GET", std::string("/api/v2/trees/@") + kOldHash + "/entries",
                 {{"max-records", "1"}}, "entries-detached-old-probe.json");
  expect_v1(std::string("?ref=") + kOldHash, std::string("/api/v2/trees/@") + kOldHash);
  expect_v1(std::string("?ref=@") + kOldHash, std::string("/api/v2/trees/@") + kOldHash);
  // "deadbeef" could name a branch; no reference has that name, so it is an abbreviated hash,
  // pinned as the full hash the server answers.
  replay_.Answer("GET", "/api/v2/trees/@deadbeef/entries", {{"max-records", "1"}},
                 "entries-detached-deadbeef-probe.json");
  expect_v1("?ref=deadbeef", std::string("/api/v2/trees/@") + kDeadbeefHash);
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/deadbeef"), 1);
}

TEST_F(NessieCatalogTest, TableThatIsNotThereIsNotFound) {
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->LoadTable({Ns({"sales", "eu"}), "nope"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c->LoadTable({Ns({"sales"}), "legacy"}).status().code(), StatusCode::kNotFound)
      << "a Delta table";
  EXPECT_EQ(c->LoadTable({Ns({"sales"}), "x%y"}).status().code(), StatusCode::kNotFound);
  const int sent = replay_.requests();
  EXPECT_EQ(c->LoadTable({Ns({"sales"}), "v1.2"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(replay_.requests(), sent) << "refused before sending";
}

TEST_F(NessieCatalogTest, KeyWithPercentIsFetchedByPost) {
  WriteOrders();
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  auto t = c->LoadTable({Ns({"sales"}), "p%q"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->metadata_location, Pointer(1));
  EXPECT_EQ(replay_.Hits("POST", "/api/v2/trees/main/contents", {},
                         R"({"requestedKeys":[{"elements":["sales","p%q"]}]})"),
            1);
}

TEST_F(NessieCatalogTest, RefusesEveryChange) {
  SqlCatalogOptions sql;
  sql.uri = Uri("?ref=main");
  sql.access = SqlCatalogOptions::Access::kReadWrite;  // asked for, and still refused
  auto opened = OpenCatalog(sql, *io_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Catalog& c = **opened;
  const int sent = replay_.requests();
  CreateTableRequest create;
  TableCommit commit;
  commit.ident = orders_ident_;
  EXPECT_EQ(c.CreateNamespace(Ns({"x"}), {}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.UpdateNamespaceProperties(Ns({"sales"}), {{"k", "v"}}, {}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c.DropNamespace(Ns({"marketing"})).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.CreateTable(orders_ident_, create).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.DropTable(orders_ident_, DropMode::kPurge).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.RenameTable(orders_ident_, {Ns({"sales"}), "o"}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c.RegisterTable(orders_ident_, "/m.json").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c.CommitTable(commit).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.CommitTransaction({commit}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(replay_.requests(), sent) << "nothing is sent to Nessie";
  // No commit log either.
  EXPECT_EQ(c.CommitsSince(0, 10).status().code(), StatusCode::kNotImplemented);
  EXPECT_EQ(c.LatestCommitSeq().status().code(), StatusCode::kNotImplemented);
}

TEST_F(NessieCatalogTest, MalformedAnswersAreCorruption) {
  replay_.Answer("GET", "/api/v2/trees/garbled", {}, "trees-garbled.json");
  EXPECT_EQ(TryOpen("?ref=garbled").status().code(), StatusCode::kCorruption);
  replay_.Answer("GET", "/api/v2/trees/odd", {},
                 "contents-sales.json");  // JSON, but not a reference
  EXPECT_EQ(TryOpen("?ref=odd").status().code(), StatusCode::kCorruption);
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.orders", {},
                 "contents-sales.eu.orders-garbled.json");
  EXPECT_EQ(c->LoadTable(orders_ident_).status().code(), StatusCode::kCorruption);
  // The other calls keep working.
  EXPECT_TRUE(c->NamespaceExists(Ns({"sales"})).value());
}

TEST_F(NessieCatalogTest, ServerErrorsAreUnavailableAfterRetries) {
  replay_.Answer("GET", "/api/v2/trees/flaky", {}, "error-server.json", 500);
  EXPECT_EQ(TryOpen("?ref=flaky").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/flaky"), 2) << "sent again once (max_attempts 2)";
  auto c = Open("?ref=main");
  ASSERT_NE(c, nullptr);
  replay_.Answer("GET", "/api/v2/trees/main/contents/sales.eu.orders", {}, "error-server.json",
                 503);
  EXPECT_EQ(c->LoadTable(orders_ident_).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(replay_.Hits("GET", "/api/v2/trees/main/contents/sales.eu.orders"), 2);
}

TEST_F(NessieCatalogTest, SendsTheBearerTokenAndMapsRefusals) {
  auto c = Open("?ref=main&token=s3cret");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(replay_.last_authorization(), "Bearer s3cret");
  replay_.Answer("GET", "/api/v2/trees/locked", {}, "error-unauthorized.json", 401);
  EXPECT_EQ(TryOpen("?ref=locked").status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(replay_.last_authorization(), "");
}

TEST_F(NessieCatalogTest, RowsReadThroughNessieEqualRowsReadThroughTheSqlCatalog) {
  WriteOrders();
  const std::string query = "SELECT id, region, amount FROM t ORDER BY id";
  auto expected = Rows(*orders_, query);
  ASSERT_EQ(expected.size(), 25u);
  auto main = Open("?ref=main");
  ASSERT_NE(main, nullptr);
  auto t = table::Table::Load(*main, *io_, *db_, orders_ident_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Rows(**t, query), expected);
  // At the tag: the first append only, as the SQLite catalog's table reads at that snapshot.
  replay_.Answer("GET", "/api/v2/trees/v1/contents/sales.eu.orders", {},
                 "contents-sales.eu.orders-v1.json");
  auto tag = Open("?ref=v1");
  ASSERT_NE(tag, nullptr);
  auto at_tag = table::Table::Load(*tag, *io_, *db_, orders_ident_);
  ASSERT_TRUE(at_tag.ok()) << at_tag.status().ToString();
  table::ReadOptions first;
  first.snapshot.snapshot_id = snapshots_[1];
  auto expected_first = Rows(*orders_, query, first);
  ASSERT_EQ(expected_first.size(), 10u);
  EXPECT_EQ(Rows(**at_tag, query), expected_first);
  EXPECT_THAT(Rows(**at_tag, "SELECT count(*), sum(id) FROM t"),
              ElementsAre(ElementsAre("10", "45")));
}

}  // namespace
}  // namespace skade::catalog
