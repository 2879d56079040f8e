// SqlCatalog against SQLite (a temp file) and PostgreSQL (a throwaway cluster per test
// process, tests/testing/pg_cluster.h): the same parameterised suite runs on both. PostgreSQL
// cases fail (never skip) when the cluster can't start.
#include "skade/catalog/sql_catalog.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sqlite3.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "skade/base/clock.h"
#include "skade/catalog/catalog.h"
#include "skade/io/delegating_file_io.h"
#include "skade/io/file_io.h"
#include "skade/io/location.h"
#include "tests/testing/pg_cluster.h"
#include "tests/testing/schemas.h"
#include "tests/testing/temp_dir.h"

namespace skade::catalog {
namespace {

using iceberg::TableRequirement;
using iceberg::TableUpdate;

enum class Backend { kSqlite, kPostgres };

iceberg::SchemaPtr TestSchema() {
  return testing::SchemaOf({{1, "id", iceberg::TypeId::kLong, true}, {2, "data", iceberg::TypeId::kString}});
}

CreateTableRequest TestTable() {
  CreateTableRequest request;
  request.schema = TestSchema();
  return request;
}

Namespace Ns(std::vector<std::string> levels) { return Namespace{std::move(levels)}; }
TableIdent Ident(std::vector<std::string> levels, std::string name) {
  return TableIdent{Ns(std::move(levels)), std::move(name)};
}

// A snapshot on top of `base` (no data files: a manifest-list path string is enough here).
iceberg::Snapshot NextSnapshot(const iceberg::TableMetadata& base, int64_t snapshot_id,
                               int64_t added_records) {
  iceberg::Snapshot snapshot;
  snapshot.snapshot_id = snapshot_id;
  snapshot.parent_snapshot_id = base.current_snapshot_id;
  snapshot.sequence_number = base.last_sequence_number + 1;
  snapshot.timestamp_ms = NowMillis();
  snapshot.manifest_list =
      base.location + "/metadata/snap-" + std::to_string(snapshot_id) + ".avro";
  snapshot.summary = {{"operation", "append"},
                      {"added-records", std::to_string(added_records)},
                      {"deleted-records", "0"}};
  snapshot.schema_id = base.current_schema_id;
  return snapshot;
}

// Appends a snapshot to `state` asserting main still points where it did.
TableCommit AppendCommit(const TableState& state, int64_t snapshot_id, int64_t added_records = 10) {
  TableCommit commit;
  commit.ident = state.ident;
  commit.requirements.push_back(
      TableRequirement::AssertRefSnapshotId("main", state.metadata->current_snapshot_id));
  commit.updates.push_back(
      TableUpdate::AddSnapshot(NextSnapshot(*state.metadata, snapshot_id, added_records)));
  commit.updates.push_back(TableUpdate::SetBranch("main", snapshot_id));
  return commit;
}

TableCommit PropertyCommit(const TableIdent& ident, std::string key, std::string value) {
  TableCommit commit;
  commit.ident = ident;
  commit.updates.push_back(TableUpdate::SetProperties({{std::move(key), std::move(value)}}));
  return commit;
}

// Checks commit_seq runs 1..n without gaps and returns n.
void ExpectDenseLog(Catalog& catalog, int64_t expected_count) {
  Result<std::vector<CommitLogEntry>> log = catalog.CommitsSince(0, 1000000);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(static_cast<int64_t>(log->size()), expected_count);
  for (size_t i = 0; i < log->size(); ++i) {
    ASSERT_EQ((*log)[i].commit_seq, static_cast<int64_t>(i) + 1);
  }
  Result<int64_t> latest = catalog.LatestCommitSeq();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(*latest, expected_count);
}

// Waits for a child process with a deadline; kills it when the deadline passes.
int WaitChild(pid_t pid, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
}

class SqlCatalogTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    warehouse_ = dir_.Path("warehouse");
    if (GetParam() == Backend::kSqlite) {
      uri_ = "sqlite://" + dir_.Path("catalog.db");
      return;
    }
    Result<testing::PgTestCluster*> cluster = testing::PgTestCluster::Shared();
    ASSERT_TRUE(cluster.ok()) << "PostgreSQL test cluster did not start: "
                              << cluster.status().ToString();
    Result<std::string> database = (*cluster)->CreateDatabase();
    ASSERT_TRUE(database.ok()) << database.status().ToString();
    uri_ = *database;
  }

  SqlCatalogOptions Options(bool group_commit = true) const {
    SqlCatalogOptions options;
    options.uri = uri_;
    options.warehouse = warehouse_;
    options.group_commit = group_commit;
    return options;
  }

  std::unique_ptr<Catalog> Open(bool group_commit = true) {
    Result<std::unique_ptr<Catalog>> catalog = OpenSqlCatalog(Options(group_commit), *io_);
    EXPECT_TRUE(catalog.ok()) << catalog.status().ToString();
    if (!catalog.ok()) return nullptr;
    return std::move(catalog).value();
  }

  // Commits a snapshot on `ident`, reloading and retrying on kConflict (as the table layer
  // would). Returns the snapshot id.
  static Status AppendWithRetry(Catalog& catalog, const TableIdent& ident, int64_t snapshot_id) {
    for (int attempt = 0; attempt < 200; ++attempt) {
      Result<TableState> state = catalog.LoadTable(ident);
      if (!state.ok()) return state.status();
      Result<CommitResult> result = catalog.CommitTable(AppendCommit(*state, snapshot_id));
      if (result.ok()) return Status::Ok();
      if (result.status().code() != StatusCode::kConflict) return result.status();
    }
    return Status::Conflict("append retries exhausted");
  }

  static Status CommitWithRetry(Catalog& catalog, const TableCommit& commit) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      Result<CommitResult> result = catalog.CommitTable(commit);
      if (result.ok()) return Status::Ok();
      if (result.status().code() != StatusCode::kConflict) return result.status();
    }
    return Status::Conflict("property retries exhausted");
  }

  std::vector<std::string> MetadataFiles(const std::string& table_location) {
    std::vector<std::string> out;
    Result<std::vector<io::FileInfo>> files =
        io_->List(io::JoinLocation(table_location, "metadata"));
    if (files.ok()) {
      for (const auto& f : *files) {
        if (f.location.size() > 14 && f.location.substr(f.location.size() - 14) == ".metadata.json") {
          out.push_back(f.location);
        }
      }
    }
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<io::FileIO> io_;
  std::string warehouse_;
  std::string uri_;
};

INSTANTIATE_TEST_SUITE_P(Dialects, SqlCatalogTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres), BackendName);

// The lineage emitter's cursor: per consumer, durable across catalog instances (another
// process or machine opening the same catalog sees it), overwritten by each store.
TEST_P(SqlCatalogTest, ConsumerCursorsAreDurableAndPerConsumer) {
  {
    std::unique_ptr<Catalog> catalog = Open();
    ASSERT_NE(catalog, nullptr);
    Result<std::optional<int64_t>> none = catalog->LoadConsumerCursor("openlineage");
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE(catalog->StoreConsumerCursor("openlineage", 41).ok());
    ASSERT_TRUE(catalog->StoreConsumerCursor("openlineage", 42).ok());
    ASSERT_TRUE(catalog->StoreConsumerCursor("other 'consumer'", 7).ok());
  }
  std::unique_ptr<Catalog> reopened = Open();
  ASSERT_NE(reopened, nullptr);
  Result<std::optional<int64_t>> lineage = reopened->LoadConsumerCursor("openlineage");
  ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
  EXPECT_EQ(lineage->value_or(-1), 42);
  Result<std::optional<int64_t>> other = reopened->LoadConsumerCursor("other 'consumer'");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->value_or(-1), 7);
}

TEST(NamespaceTest, ParsesAndValidates) {
  Result<Namespace> ns = Namespace::Parse("a.b.c");
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->levels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ns->ToString(), "a.b.c");
  EXPECT_TRUE(Namespace::Parse("").ok());
  EXPECT_TRUE(Namespace::Parse("").value().empty());
  EXPECT_EQ(Namespace::Parse("a..b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Namespace::Parse(".a").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Ns({"a.b"}).Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Ns({"a", ""}).Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Ns({}).Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Ns({"a", "b"}).Validate().ok());
  EXPECT_TRUE(Ns({"a"}).Contains(Ns({"a", "b"})));
  EXPECT_TRUE(Ns({"a"}).Contains(Ns({"a"})));
  EXPECT_FALSE(Ns({"a", "b"}).Contains(Ns({"a"})));
  EXPECT_FALSE(Ns({"a"}).Contains(Ns({"ab"})));
  EXPECT_TRUE(Ns({}).Contains(Ns({"x"})));

  Result<TableIdent> ident = TableIdent::Parse("a.b.t");
  ASSERT_TRUE(ident.ok());
  EXPECT_EQ(ident->ns, Ns({"a", "b"}));
  EXPECT_EQ(ident->name, "t");
  EXPECT_EQ(ident->ToString(), "a.b.t");
  EXPECT_EQ(TableIdent::Parse("t").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TableIdent::Parse("a.").status().code(), StatusCode::kInvalidArgument);
}

TEST_P(SqlCatalogTest, NamespaceCrud) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"a"}), {{"owner", "me"}}).ok());
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"a", "b"}), {}).ok());
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"x", "y", "z"}), {}).ok());
  EXPECT_EQ(catalog->CreateNamespace(Ns({"a"}), {}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog->CreateNamespace(Ns({"a.b"}), {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog->CreateNamespace(Ns({"a", ""}), {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog->CreateNamespace(Ns({}), {}).code(), StatusCode::kInvalidArgument);

  auto list = catalog->ListNamespaces(Ns({}));
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, (std::vector<Namespace>{Ns({"a"}), Ns({"x"})}));
  EXPECT_EQ(catalog->ListNamespaces(Ns({"a"})).value(), (std::vector<Namespace>{Ns({"a", "b"})}));
  EXPECT_EQ(catalog->ListNamespaces(Ns({"x"})).value(), (std::vector<Namespace>{Ns({"x", "y"})}));
  EXPECT_EQ(catalog->ListNamespaces(Ns({"x", "y"})).value(),
            (std::vector<Namespace>{Ns({"x", "y", "z"})}));
  EXPECT_TRUE(catalog->ListNamespaces(Ns({"x", "y", "z"})).value().empty());
  EXPECT_EQ(catalog->ListNamespaces(Ns({"nope"})).status().code(), StatusCode::kNotFound);

  // Implied parents exist (as in the JDBC catalog and PyIceberg).
  EXPECT_TRUE(catalog->NamespaceExists(Ns({"x"})).value());
  EXPECT_TRUE(catalog->NamespaceExists(Ns({"x", "y", "z"})).value());
  EXPECT_FALSE(catalog->NamespaceExists(Ns({"x", "y", "q"})).value());
  EXPECT_FALSE(catalog->NamespaceExists(Ns({"X"})).value());  // case-sensitive
  EXPECT_EQ(catalog->CreateNamespace(Ns({"x"}), {}).code(), StatusCode::kAlreadyExists);

  auto props = catalog->LoadNamespaceProperties(Ns({"a"}));
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  EXPECT_EQ(props->at("owner"), "me");
  EXPECT_EQ(props->at("exists"), "true");
  ASSERT_TRUE(
      catalog->UpdateNamespaceProperties(Ns({"a"}), {{"owner", "you"}, {"k", "v"}}, {"exists"})
          .ok());
  props = catalog->LoadNamespaceProperties(Ns({"a"}));
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(*props, (std::map<std::string, std::string>{{"owner", "you"}, {"k", "v"}}));
  EXPECT_EQ(catalog->UpdateNamespaceProperties(Ns({"a"}), {{"k", "v"}}, {"k"}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog->UpdateNamespaceProperties(Ns({"nope"}), {{"k", "v"}}, {}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(catalog->LoadNamespaceProperties(Ns({"nope"})).status().code(), StatusCode::kNotFound);

  EXPECT_EQ(catalog->DropNamespace(Ns({"a"})).code(), StatusCode::kConflict);  // child a.b
  ASSERT_TRUE(catalog->DropNamespace(Ns({"a", "b"})).ok());
  ASSERT_TRUE(catalog->DropNamespace(Ns({"a"})).ok());
  EXPECT_EQ(catalog->DropNamespace(Ns({"a"})).code(), StatusCode::kNotFound);
  EXPECT_FALSE(catalog->NamespaceExists(Ns({"a"})).value());
  EXPECT_EQ(catalog->ListNamespaces(Ns({})).value(), (std::vector<Namespace>{Ns({"x"})}));

  // Names with SQL wildcard characters are plain text.
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"p%", "q_"}), {}).ok());
  EXPECT_FALSE(catalog->NamespaceExists(Ns({"pa"})).value());
  EXPECT_TRUE(catalog->NamespaceExists(Ns({"p%"})).value());

  // Namespace ops do not write the commit log.
  EXPECT_EQ(catalog->LatestCommitSeq().value(), 0);
}

TEST_P(SqlCatalogTest, TableLifecycle) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db", "sales"}, "orders");
  EXPECT_EQ(catalog->CreateTable(t, TestTable()).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db", "sales"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->commit_seq, 1);
  std::string expected_location =
      io::JoinLocation(io::JoinLocation(io::JoinLocation(warehouse_, "db"), "sales"), "orders");
  EXPECT_EQ(created->table.metadata->location, expected_location);
  EXPECT_EQ(created->table.metadata_location.rfind(expected_location + "/metadata/00000-", 0), 0u)
      << created->table.metadata_location;
  EXPECT_EQ(MetadataFiles(expected_location).size(), 1u);
  EXPECT_EQ(catalog->CreateTable(t, TestTable()).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(MetadataFiles(expected_location).size(), 1u);  // no orphan from the failed create

  auto loaded = catalog->LoadTable(t);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->metadata_location, created->table.metadata_location);
  EXPECT_EQ(loaded->metadata->table_uuid, created->table.metadata->table_uuid);
  EXPECT_EQ(catalog->LoadTable(Ident({"db", "sales"}, "nope")).status().code(),
            StatusCode::kNotFound);

  CreateTableRequest elsewhere = TestTable();
  elsewhere.location = dir_.Path("custom/place");
  ASSERT_TRUE(catalog->CreateTable(Ident({"db", "sales"}, "custom"), elsewhere).ok());
  EXPECT_EQ(catalog->LoadTable(Ident({"db", "sales"}, "custom")).value().metadata->location,
            dir_.Path("custom/place"));
  EXPECT_EQ(catalog->ListTables(Ns({"db", "sales"})).value(),
            (std::vector<TableIdent>{Ident({"db", "sales"}, "custom"), t}));
  EXPECT_TRUE(catalog->ListTables(Ns({"db"})).value().empty());
  EXPECT_EQ(catalog->ListTables(Ns({"nope"})).status().code(), StatusCode::kNotFound);

  // Rename: target namespace must exist, target name must be free.
  TableIdent renamed = Ident({"other"}, "orders2");
  EXPECT_EQ(catalog->RenameTable(t, renamed).code(), StatusCode::kNotFound);
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"other"}), {}).ok());
  EXPECT_EQ(catalog->RenameTable(t, Ident({"db", "sales"}, "custom")).code(),
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(catalog->RenameTable(t, renamed).ok());
  EXPECT_EQ(catalog->LoadTable(t).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog->LoadTable(renamed).value().metadata_location,
            created->table.metadata_location);
  EXPECT_EQ(catalog->RenameTable(t, renamed).code(), StatusCode::kNotFound);

  // Namespace with tables can't be dropped.
  EXPECT_EQ(catalog->DropNamespace(Ns({"other"})).code(), StatusCode::kConflict);

  // The same metadata under a second name would be two tables in one folder: refused while
  // the first is registered (DESIGN §11), allowed once it is dropped with its files kept.
  TableIdent registered = Ident({"other"}, "again");
  EXPECT_EQ(catalog->RegisterTable(registered, created->table.metadata_location).status().code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(catalog->DropTable(renamed, DropMode::kKeepFiles).ok());
  EXPECT_EQ(catalog->LoadTable(renamed).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog->DropTable(renamed, DropMode::kKeepFiles).code(), StatusCode::kNotFound);
  EXPECT_EQ(MetadataFiles(expected_location).size(), 1u);
  auto reg = catalog->RegisterTable(registered, created->table.metadata_location);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(catalog->LoadTable(registered).value().metadata->table_uuid,
            created->table.metadata->table_uuid);
  EXPECT_EQ(catalog->RegisterTable(registered, created->table.metadata_location).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_FALSE(catalog->RegisterTable(Ident({"other"}, "bad"), dir_.Path("missing.json")).ok());

  // Drop with purge removes the files.
  ASSERT_TRUE(catalog->DropTable(registered, DropMode::kPurge).ok());
  EXPECT_TRUE(MetadataFiles(expected_location).empty());
  ASSERT_TRUE(catalog->DropNamespace(Ns({"other"})).ok());

  auto log = catalog->CommitsSince(0, 100);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<std::string> operations;
  for (const auto& e : *log) operations.push_back(e.operation);
  EXPECT_EQ(operations,
            (std::vector<std::string>{"create", "create", "rename", "drop", "register", "drop"}));
  ExpectDenseLog(*catalog, 6);
}

TEST_P(SqlCatalogTest, ADropNamingStaleMetadataIsAConflictAndKeepsEverything) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string location = created->table.metadata->location;
  // What a caller checked (the first metadata) is not what the table is after this commit.
  auto moved = catalog->CommitTable(PropertyCommit(t, "color", "blue"));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  for (DropMode mode : {DropMode::kPurge, DropMode::kKeepFiles}) {
    Status st = catalog->DropTable(t, mode, created->table.metadata_location);
    EXPECT_EQ(st.code(), StatusCode::kConflict) << st.ToString();
    EXPECT_NE(st.message().find(moved->table.metadata_location), std::string::npos) << st.ToString();
  }
  auto still = catalog->LoadTable(t);
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_EQ(still->metadata_location, moved->table.metadata_location);
  EXPECT_EQ(MetadataFiles(location).size(), 2u);
  // Naming the current metadata drops (and purges) it.
  ASSERT_TRUE(catalog->DropTable(t, DropMode::kPurge, moved->table.metadata_location).ok());
  EXPECT_EQ(catalog->LoadTable(t).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(MetadataFiles(location).empty());
  EXPECT_EQ(catalog->DropTable(t, DropMode::kKeepFiles, moved->table.metadata_location).code(),
            StatusCode::kNotFound);
}

iceberg::ViewVersion TestViewVersion(std::string sql, std::string dialect = "spark") {
  iceberg::ViewVersion v;
  v.timestamp_ms = 1;
  v.summary = {{"engine-name", "test"}};
  v.representations.push_back(iceberg::ViewRepresentation{std::move(sql), std::move(dialect)});
  v.default_namespace = {"db"};
  return v;
}

iceberg::ViewUpdate AddVersionUpdate(iceberg::ViewVersion v) {
  iceberg::ViewUpdate u;
  u.kind = iceberg::ViewUpdate::Kind::kAddViewVersion;
  v.schema_id = 0;  // the view's only schema
  u.version = std::move(v);
  return u;
}

iceberg::ViewUpdate SetCurrentUpdate(int id) {
  iceberg::ViewUpdate u;
  u.kind = iceberg::ViewUpdate::Kind::kSetCurrentViewVersion;
  u.version_id = id;
  return u;
}

// One query lists a namespace's tables with their current metadata files: what LoadTable gives,
// after commits and renames, views and other namespaces left out, sorted by name.
TEST_P(SqlCatalogTest, TablePointersAreEachTablesCurrentMetadataFile) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db", "inner"}), {}).ok());
  for (const char* name : {"b", "a", "c"}) ASSERT_TRUE(catalog->CreateTable(Ident({"db"}, name), TestTable()).ok());
  ASSERT_TRUE(catalog->CreateTable(Ident({"db", "inner"}, "z"), TestTable()).ok());
  ASSERT_TRUE(AppendWithRetry(*catalog, Ident({"db"}, "b"), 42).ok());
  ASSERT_TRUE(catalog->RenameTable(Ident({"db"}, "c"), Ident({"db"}, "d")).ok());
  CreateViewRequest view;
  view.schema = TestSchema();
  view.version = TestViewVersion("SELECT id, data FROM a");
  ASSERT_TRUE(catalog->CreateView(Ident({"db"}, "v"), view).ok());

  auto pointers = catalog->ListTablePointers(Ns({"db"}));
  ASSERT_TRUE(pointers.ok()) << pointers.status().ToString();
  std::vector<std::string> names;
  for (const TablePointer& p : *pointers) {
    names.push_back(p.ident.ToString());
    auto loaded = catalog->LoadTable(p.ident);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_EQ(p.metadata_location, loaded->metadata_location) << p.ident.ToString();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"db.a", "db.b", "db.d"}));
  // The appended table's pointer is its second file.
  EXPECT_NE((*pointers)[1].metadata_location.find("/00001-"), std::string::npos) << (*pointers)[1].metadata_location;
  // The default (load every table) agrees, through a catalog without the override.
  auto by_default = catalog->Catalog::ListTablePointers(Ns({"db"}));
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  ASSERT_EQ(by_default->size(), pointers->size());
  for (size_t i = 0; i < pointers->size(); ++i) {
    EXPECT_EQ((*by_default)[i].ident, (*pointers)[i].ident);
    EXPECT_EQ((*by_default)[i].metadata_location, (*pointers)[i].metadata_location);
  }
  EXPECT_EQ(catalog->ListTablePointers(Ns({"nope"})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog->ListTablePointers(Ns({"db", "inner"})).value().size(), 1u);
}

TEST_P(SqlCatalogTest, ViewsLiveBesideTablesWithTheirOwnVersions) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ASSERT_TRUE(catalog->SupportsViews());
  const TableIdent v = Ident({"db"}, "v");
  CreateViewRequest request;
  request.schema = TestSchema();
  request.version = TestViewVersion("SELECT id, data FROM t");
  EXPECT_EQ(catalog->CreateView(v, request).status().code(), StatusCode::kNotFound);  // no namespace
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateView(v, request);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->metadata->current_version_id, 1);
  const std::string location = created->metadata->location;
  EXPECT_TRUE(io::IsWithin(location, warehouse_)) << location;
  EXPECT_EQ(MetadataFiles(location).size(), 1u);
  // One name, one object: a table of the view's name, or a view of a table's, already exists.
  EXPECT_EQ(catalog->CreateTable(v, TestTable()).status().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(catalog->CreateTable(Ident({"db"}, "t"), TestTable()).ok());
  EXPECT_EQ(catalog->CreateView(Ident({"db"}, "t"), request).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog->LoadView(Ident({"db"}, "t")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog->LoadTable(v).status().code(), StatusCode::kNotFound);
  // Listings keep them apart; the log records tables only.
  EXPECT_EQ(*catalog->ListViews(Ns({"db"})), std::vector<TableIdent>{v});
  EXPECT_EQ(*catalog->ListTables(Ns({"db"})), std::vector<TableIdent>{Ident({"db"}, "t")});
  EXPECT_EQ(*catalog->LatestCommitSeq(), 1);

  // Replace: a new version becomes current; the uuid requirement guards against a recreated view.
  ViewCommit replace;
  replace.ident = v;
  replace.requirements.push_back(iceberg::ViewRequirement{created->metadata->view_uuid});
  replace.updates = {AddVersionUpdate(TestViewVersion("SELECT id FROM t")), SetCurrentUpdate(-1)};
  auto replaced = catalog->CommitView(replace);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(replaced->metadata->current_version_id, 2);
  EXPECT_EQ(replaced->metadata->versions.size(), 2u);
  EXPECT_NE(replaced->metadata_location, created->metadata_location);
  auto loaded = catalog->LoadView(v);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->metadata_location, replaced->metadata_location);
  EXPECT_EQ(loaded->metadata->CurrentVersion()->representations[0].sql, "SELECT id FROM t");
  ViewCommit stale = replace;
  stale.requirements[0].uuid = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(catalog->CommitView(stale).status().code(), StatusCode::kConflict);
  EXPECT_EQ(catalog->LoadView(v)->metadata_location, replaced->metadata_location);

  // Concurrent replaces all land, one after the other.
  std::vector<std::thread> writers;
  std::atomic<int> landed{0};
  for (int i = 0; i < 4; ++i) {
    writers.emplace_back([&, i] {
      ViewCommit c;
      c.ident = v;
      c.updates = {AddVersionUpdate(TestViewVersion("SELECT " + std::to_string(i) + " AS id, 'x' AS data")),
                   SetCurrentUpdate(-1)};
      if (catalog->CommitView(c).ok()) ++landed;
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(landed.load(), 4);
  EXPECT_EQ(catalog->LoadView(v)->metadata->version_log.size(), 6u);

  // A namespace holding a view is not empty.
  EXPECT_EQ(catalog->DropNamespace(Ns({"db"})).code(), StatusCode::kConflict);
  // Rename, register the same metadata under another name, drop: files stay.
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"other"}), {}).ok());
  EXPECT_EQ(catalog->RenameView(v, Ident({"db"}, "t")).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(catalog->RenameView(v, Ident({"other"}, "w")).ok());
  EXPECT_EQ(catalog->LoadView(v).status().code(), StatusCode::kNotFound);
  auto renamed = catalog->LoadView(Ident({"other"}, "w"));
  ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
  ASSERT_TRUE(catalog->DropView(Ident({"other"}, "w")).ok());
  EXPECT_EQ(catalog->DropView(Ident({"other"}, "w")).code(), StatusCode::kNotFound);
  EXPECT_EQ(MetadataFiles(location).size(), 6u);
  auto registered = catalog->RegisterView(Ident({"other"}, "again"), renamed->metadata_location);
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_EQ(registered->metadata->view_uuid, created->metadata->view_uuid);
  EXPECT_FALSE(catalog->RegisterView(Ident({"other"}, "bad"), dir_.Path("missing.json")).ok());
  EXPECT_EQ(*catalog->LatestCommitSeq(), 1);
}

TEST_P(SqlCatalogTest, CommitTableAppliesUpdatesAndLogs) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  auto props = catalog->CommitTable(PropertyCommit(t, "color", "blue"));
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  EXPECT_EQ(props->commit_seq, 2);
  EXPECT_EQ(props->table.metadata->Property("color"), "blue");

  auto appended = catalog->CommitTable(AppendCommit(props->table, 1001, 42));
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  EXPECT_EQ(appended->commit_seq, 3);

  auto loaded = catalog->LoadTable(t);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->metadata_location, appended->table.metadata_location);
  EXPECT_EQ(loaded->metadata->current_snapshot_id, std::optional<int64_t>(1001));
  EXPECT_EQ(loaded->metadata->Property("color"), "blue");
  EXPECT_EQ(loaded->metadata_location.find("/metadata/00002-") != std::string::npos, true)
      << loaded->metadata_location;

  auto log = catalog->CommitsSince(1, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 2u);
  EXPECT_EQ((*log)[0].operation, "update");
  EXPECT_EQ((*log)[0].previous_metadata_location, created->table.metadata_location);
  EXPECT_EQ((*log)[0].metadata_location, props->table.metadata_location);
  EXPECT_FALSE((*log)[0].snapshot_id.has_value());
  EXPECT_EQ((*log)[1].operation, "append");
  EXPECT_EQ((*log)[1].snapshot_id, std::optional<int64_t>(1001));
  EXPECT_EQ((*log)[1].added_records, 42);
  EXPECT_EQ((*log)[1].previous_metadata_location, props->table.metadata_location);
  EXPECT_EQ((*log)[1].table, t);
  EXPECT_GT((*log)[1].committed_at_us, 0);
  EXPECT_FALSE((*log)[1].txn_id.empty());
  EXPECT_NE((*log)[0].txn_id, (*log)[1].txn_id);
  EXPECT_EQ(catalog->CommitsSince(3, 10).value().size(), 0u);
  EXPECT_EQ(catalog->CommitsSince(0, 2).value().size(), 2u);
  ExpectDenseLog(*catalog, 3);

  // A reopened catalog sees the same state and continues the sequence.
  catalog.reset();
  catalog = Open();
  ASSERT_NE(catalog, nullptr);
  EXPECT_EQ(catalog->LoadTable(t).value().metadata_location, appended->table.metadata_location);
  auto more = catalog->CommitTable(PropertyCommit(t, "k", "v"));
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->commit_seq, 4);
  EXPECT_EQ(
      catalog->CommitTable(PropertyCommit(Ident({"db"}, "missing"), "k", "v")).status().code(),
      StatusCode::kNotFound);
}

IdempotencyRecord KeyRecord(std::string scope, std::string key, int64_t created_at_us, int64_t lifetime_us) {
  IdempotencyRecord record;
  record.scope = std::move(scope);
  record.key = std::move(key);
  record.request_hash = "hash-of-" + record.key;
  record.status = 200;
  record.response = R"({"headers":[],"body":"{}"})";
  record.created_at_us = created_at_us;
  record.expires_at_us = created_at_us + lifetime_us;
  return record;
}

// Idempotency records (the REST catalog's Idempotency-Key): per scope and key, refused twice
// while alive, free again once expired, purged by expiry; a read-only catalog keeps none.
TEST_P(SqlCatalogTest, IdempotencyRecordsArePerScopeAndExpire) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  const int64_t now = NowMicros();
  const int64_t hour = int64_t{3600} * 1000 * 1000;
  ASSERT_TRUE(catalog->StoreIdempotencyRecord(KeyRecord("client:a", "k1", now, hour)).ok());
  auto found = catalog->LoadIdempotencyRecord("client:a", "k1", now);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->request_hash, "hash-of-k1");
  EXPECT_EQ((*found)->status, 200);
  EXPECT_EQ((*found)->response, R"({"headers":[],"body":"{}"})");
  EXPECT_EQ((*found)->expires_at_us, now + hour);
  EXPECT_FALSE(catalog->LoadIdempotencyRecord("client:b", "k1", now).value().has_value());
  EXPECT_FALSE(catalog->LoadIdempotencyRecord("client:a", "k1", now + hour).value().has_value()) << "expired";
  EXPECT_EQ(catalog->StoreIdempotencyRecord(KeyRecord("client:a", "k1", now, hour)).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(catalog->StoreIdempotencyRecord(KeyRecord("client:b", "k1", now, hour)).ok());

  // An expired record is replaced by a new one with the key, and the purge removes the expired.
  ASSERT_TRUE(catalog->StoreIdempotencyRecord(KeyRecord("client:a", "old", now - 2 * hour, hour)).ok());
  ASSERT_TRUE(catalog->StoreIdempotencyRecord(KeyRecord("client:a", "gone", now - 2 * hour, hour)).ok());
  ASSERT_TRUE(catalog->StoreIdempotencyRecord(KeyRecord("client:a", "old", now, hour)).ok());
  EXPECT_EQ(catalog->LoadIdempotencyRecord("client:a", "old", now).value().value().created_at_us, now);
  EXPECT_TRUE(catalog->LoadIdempotencyRecord("client:a", "gone", 0).value().has_value()) << "kept until purged";
  auto purged = catalog->PurgeIdempotencyRecords(now);
  ASSERT_TRUE(purged.ok()) << purged.status().ToString();
  EXPECT_EQ(*purged, 1);
  EXPECT_FALSE(catalog->LoadIdempotencyRecord("client:a", "gone", 0).value().has_value());
  EXPECT_TRUE(catalog->LoadIdempotencyRecord("client:a", "k1", now).value().has_value());
  EXPECT_EQ(catalog->PurgeIdempotencyRecords(now + hour).value(), 3);
  ExpectDenseLog(*catalog, 0);

  SqlCatalogOptions read_only = Options();
  read_only.access = SqlCatalogOptions::Access::kReadOnly;
  auto reader = OpenSqlCatalog(read_only, *io_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->LoadIdempotencyRecord("client:a", "k1", now).status().code(), StatusCode::kNotImplemented);
}

ServerStateRecord StateRecord(std::string scope, std::string key, std::string value, int64_t expires_at_us) {
  ServerStateRecord record;
  record.kind = "test.params";
  record.scope = std::move(scope);
  record.key = std::move(key);
  record.value = std::move(value);
  record.expires_at_us = expires_at_us;
  return record;
}

// Server state (a Flight SQL server's bound parameters, closes, cancels): any bytes, seen by
// another catalog object on the same database, per kind, scope and key, gone once expired and
// purged, bounded per value and per scope; a read-only catalog keeps none.
TEST_P(SqlCatalogTest, ServerStateIsSharedPerScopeBoundedAndExpires) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  auto other = Open();
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(catalog->KeepsServerState());
  const int64_t now = NowMicros();
  const int64_t hour = int64_t{3600} * 1000 * 1000;
  const std::string bytes("\0\xff\x80 'quoted' \x01\n", 15);
  ASSERT_TRUE(catalog->PutServerState(StateRecord("alice", "k1", bytes, now + hour), 0).ok());
  auto found = other->GetServerState("test.params", "alice", "k1", now);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->value, bytes);
  EXPECT_EQ((*found)->expires_at_us, now + hour);
  EXPECT_FALSE(other->GetServerState("test.params", "bob", "k1", now).value().has_value()) << "another scope";
  EXPECT_FALSE(other->GetServerState("test.closed", "alice", "k1", now).value().has_value()) << "another kind";
  EXPECT_FALSE(other->GetServerState("test.params", "alice", "k1", now + hour).value().has_value()) << "expired";

  // Replacing a key does not count its old value against the scope's limit; a new key does.
  ASSERT_TRUE(catalog->PutServerState(StateRecord("alice", "k1", std::string(100, 'a'), now + hour), 150).ok());
  EXPECT_EQ(other->GetServerState("test.params", "alice", "k1", now).value()->value, std::string(100, 'a'));
  EXPECT_EQ(catalog->PutServerState(StateRecord("alice", "k2", std::string(51, 'b'), now + hour), 150).code(),
            StatusCode::kResourceExhausted);
  ASSERT_TRUE(catalog->PutServerState(StateRecord("bob", "k2", std::string(51, 'b'), now + hour), 150).ok());
  ASSERT_TRUE(catalog->PutServerState(StateRecord("alice", "k2", std::string(50, 'b'), now + hour), 150).ok());
  EXPECT_EQ(catalog->PutServerState(StateRecord("alice", "k3", std::string(kMaxServerStateBytes + 1, 'c'), now + hour),
                                    0)
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog->PutServerState(StateRecord("alice", std::string(129, 'k'), "v", now + hour), 0).code(),
            StatusCode::kInvalidArgument);

  // Deleted on one, gone on the other; expired rows are purged, live ones stay.
  ASSERT_TRUE(other->DeleteServerState("test.params", "alice", "k2").ok());
  EXPECT_FALSE(catalog->GetServerState("test.params", "alice", "k2", now).value().has_value());
  ASSERT_TRUE(catalog->PutServerState(StateRecord("alice", "old", "v", now - 1), 0).ok());
  EXPECT_TRUE(catalog->GetServerState("test.params", "alice", "old", now - 2).value().has_value());
  auto purged = other->PurgeServerState(now);
  ASSERT_TRUE(purged.ok()) << purged.status().ToString();
  EXPECT_EQ(*purged, 1);
  EXPECT_FALSE(catalog->GetServerState("test.params", "alice", "old", now - 2).value().has_value());
  EXPECT_TRUE(catalog->GetServerState("test.params", "alice", "k1", now).value().has_value());
  EXPECT_EQ(catalog->PurgeServerState(now + hour).value(), 2);
  ExpectDenseLog(*catalog, 0);

  SqlCatalogOptions read_only = Options();
  read_only.access = SqlCatalogOptions::Access::kReadOnly;
  auto reader = OpenSqlCatalog(read_only, *io_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_FALSE((*reader)->KeepsServerState());
  EXPECT_EQ((*reader)->GetServerState("test.params", "alice", "k1", now).status().code(), StatusCode::kNotImplemented);
}

// A commit's record lands in the commit's own transaction, naming its metadata file; a second
// commit with the key commits nothing and leaves no metadata file.
TEST_P(SqlCatalogTest, ACommitStoresItsIdempotencyRecordWithIt) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const int64_t now = NowMicros();
  const IdempotencyRecord record = KeyRecord("client:a", "k", now, int64_t{600} * 1000 * 1000);

  auto committed = catalog->CommitTransactionWithRecord({AppendCommit(created->table, 7, 3)}, record);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  auto stored = catalog->LoadIdempotencyRecord("client:a", "k", now);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ((*stored)->metadata_location, committed->at(0).table.metadata_location);
  ExpectDenseLog(*catalog, 2);

  const size_t files = MetadataFiles(created->table.metadata->location).size();
  auto again = catalog->CommitTransactionWithRecord({PropertyCommit(t, "k", "v")}, record);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog->LoadTable(t).value().metadata_location, committed->at(0).table.metadata_location);
  EXPECT_EQ(MetadataFiles(created->table.metadata->location).size(), files) << "the refused commit's file is gone";
  ExpectDenseLog(*catalog, 2);
  // Another scope's key is another key.
  ASSERT_TRUE(
      catalog->CommitTransactionWithRecord({PropertyCommit(t, "k", "v")}, KeyRecord("client:b", "k", now, 1000000)).ok());
  ExpectDenseLog(*catalog, 3);
}

TEST_P(SqlCatalogTest, ACommitAddingSeveralSnapshotsLogsEachWithItsOwnCommitSeq) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->first_commit_seq, created->commit_seq);

  // Three snapshots back to back in one commit (as coalesced appends are), plus a single one
  // in a multi-table transaction beside another table's property change.
  TableCommit three;
  three.ident = t;
  three.requirements.push_back(TableRequirement::AssertRefSnapshotId("main", std::nullopt));
  iceberg::TableMetadata chain = *created->table.metadata;
  for (int64_t id : {501, 502, 503}) {
    iceberg::Snapshot s = NextSnapshot(chain, id, id - 500);
    chain.snapshots.push_back(s);
    chain.current_snapshot_id = id;
    chain.last_sequence_number = s.sequence_number;
    three.updates.push_back(TableUpdate::AddSnapshot(s));
    three.updates.push_back(TableUpdate::SetBranch("main", id));
  }
  auto committed = catalog->CommitTable(three);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(committed->first_commit_seq, 2);
  EXPECT_EQ(committed->commit_seq, 4);
  EXPECT_EQ(committed->table.metadata->snapshot_log.size(), 3u);

  ASSERT_TRUE(catalog->CreateTable(Ident({"db"}, "u"), TestTable()).ok());  // 5
  auto txn = catalog->CommitTransaction({AppendCommit(committed->table, 504, 7), PropertyCommit(Ident({"db"}, "u"), "k", "v")});
  ASSERT_TRUE(txn.ok()) << txn.status().ToString();
  EXPECT_EQ((*txn)[0].first_commit_seq, 6);
  EXPECT_EQ((*txn)[0].commit_seq, 6);
  EXPECT_EQ((*txn)[1].first_commit_seq, 7);
  EXPECT_EQ((*txn)[1].commit_seq, 7);

  auto log = catalog->CommitsSince(1, 10);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->size(), 6u);
  for (int k = 0; k < 3; ++k) {
    const CommitLogEntry& e = (*log)[static_cast<size_t>(k)];
    EXPECT_EQ(e.commit_seq, 2 + k);
    EXPECT_EQ(e.snapshot_id, std::optional<int64_t>(501 + k));
    EXPECT_EQ(e.operation, "append");
    EXPECT_EQ(e.added_records, 1 + k);
    EXPECT_EQ(e.metadata_location, committed->table.metadata_location);
    EXPECT_EQ(e.previous_metadata_location, created->table.metadata_location);
    EXPECT_EQ(e.txn_id, (*log)[0].txn_id);
  }
  EXPECT_EQ((*log)[4].snapshot_id, std::optional<int64_t>(504));
  EXPECT_EQ((*log)[4].txn_id, (*log)[5].txn_id);
  EXPECT_EQ((*log)[5].operation, "update");
  ExpectDenseLog(*catalog, 7);
}

TEST_P(SqlCatalogTest, FailedRequirementIsConflictAndLeavesNoFile) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok());
  std::string location = created->table.metadata->location;

  TableCommit stale = AppendCommit(created->table, 7);
  stale.requirements = {TableRequirement::AssertRefSnapshotId("main", 12345)};
  EXPECT_EQ(catalog->CommitTable(stale).status().code(), StatusCode::kConflict);
  TableCommit wrong_uuid = PropertyCommit(t, "a", "b");
  wrong_uuid.requirements = {
      TableRequirement::AssertTableUuid("00000000-0000-0000-0000-000000000000")};
  EXPECT_EQ(catalog->CommitTable(wrong_uuid).status().code(), StatusCode::kConflict);
  TableCommit uuid_ok = PropertyCommit(t, "a", "b");
  uuid_ok.requirements = {TableRequirement::AssertTableUuid(created->table.metadata->table_uuid)};
  EXPECT_TRUE(catalog->CommitTable(uuid_ok).ok());

  EXPECT_EQ(MetadataFiles(location).size(), 2u);
  ExpectDenseLog(*catalog, 2);
}

// TableCommit::before_swap runs once the new metadata file is written and before the pointer
// moves; its error is the commit's, with no pointer moved, no log entry and no file left.
TEST_P(SqlCatalogTest, BeforeSwapRunsAfterTheMetadataWriteAndItsErrorCommitsNothing) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog->CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok());
  const std::string location = created->table.metadata->location;
  ASSERT_EQ(MetadataFiles(location).size(), 1u);

  int calls = 0;
  size_t files_seen = 0;
  TableCommit failing = PropertyCommit(t, "a", "b");
  failing.before_swap = [&] {
    ++calls;
    files_seen = MetadataFiles(location).size();
    return Status::IoError("injected: files not durable");
  };
  auto failed = catalog->CommitTable(failing);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError) << failed.status().ToString();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(files_seen, 2u) << "the new metadata file exists when before_swap runs";
  EXPECT_EQ(MetadataFiles(location).size(), 1u) << "the abandoned metadata file is removed";
  auto now = catalog->LoadTable(t);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->metadata_location, created->table.metadata_location);
  ExpectDenseLog(*catalog, 1);

  // Across the tables of one transaction: each runs, then all swap.
  TableIdent u = Ident({"db"}, "u");
  ASSERT_TRUE(catalog->CreateTable(u, TestTable()).ok());
  TableCommit a = PropertyCommit(t, "k", "1");
  TableCommit b = PropertyCommit(u, "k", "1");
  int ran = 0;
  a.before_swap = [&] {
    ++ran;
    return Status::Ok();
  };
  b.before_swap = a.before_swap;
  ASSERT_TRUE(catalog->CommitTransaction({a, b}).ok());
  EXPECT_EQ(ran, 2);
  ExpectDenseLog(*catalog, 4);
}

// The file writes and folder syncs that reach the file system, in order.
class RecordingFileIO final : public io::DelegatingFileIO {
 public:
  explicit RecordingFileIO(io::FileIO& base) : base_(base) {}
  Status CreateExclusive(std::string_view l, std::string_view data) override {
    Record("exclusive " + std::string(l));
    return base_.CreateExclusive(l, data);
  }
  Status CreateUnpublished(std::string_view l, std::string_view data) override {
    Record("unpublished " + std::string(l));
    return base_.CreateUnpublished(l, data);
  }
  Status SyncFolders(const std::vector<std::string>& locations) override {
    for (const std::string& l : locations) Record("sync folder of " + l);
    return base_.SyncFolders(locations);
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  Result<Target> Route(std::string_view l) override { return Target{&base_, std::string(l), nullptr}; }
  void Record(std::string event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }

  io::FileIO& base_;
  std::mutex mu_;
  std::vector<std::string> events_;
};

// A commit's metadata file is published whole (CreateExclusive: a temporary name, then the
// final one) before the writer's before_swap runs: readers without a version hint take the
// highest version in the folder and must never find a half-written file under a metadata name.
TEST_P(SqlCatalogTest, ACommitsMetadataFileIsPublishedWholeBeforeTheSwap) {
  RecordingFileIO recording(*io_);
  Result<std::unique_ptr<Catalog>> opened = OpenSqlCatalog(Options(), recording);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Catalog& catalog = **opened;
  TableIdent t = Ident({"db"}, "t");
  ASSERT_TRUE(catalog.CreateNamespace(Ns({"db"}), {}).ok());
  auto created = catalog.CreateTable(t, TestTable());
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  const size_t before = recording.events().size();
  TableCommit commit = PropertyCommit(t, "a", "b");
  std::vector<std::string> seen_at_swap;
  commit.before_swap = [&] {
    seen_at_swap = recording.events();
    return Status::Ok();
  };
  auto committed = catalog.CommitTable(commit);
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  const std::string written = committed->table.metadata_location;
  ASSERT_EQ(seen_at_swap.size(), before + 1);
  EXPECT_EQ(seen_at_swap.back(), "exclusive " + written);
  EXPECT_EQ(recording.events().size(), before + 1) << "one write per commit";
}

TEST_P(SqlCatalogTest, ConcurrentCommitsFromOneBaseExactlyOneWins) {
  for (bool group_commit : {true, false}) {
    auto catalog = Open(group_commit);
    ASSERT_NE(catalog, nullptr);
    TableIdent t = Ident({"db"}, group_commit ? "grouped" : "single");
    if (group_commit) {
      ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
    }
    ASSERT_TRUE(catalog->CreateTable(t, TestTable()).ok());
    for (int round = 0; round < 10; ++round) {
      auto base = catalog->LoadTable(t);
      ASSERT_TRUE(base.ok());
      std::atomic<int> ready{0};
      Result<CommitResult> results[2] = {Status::Internal("unset"), Status::Internal("unset")};
      std::vector<std::thread> threads;
      for (int i = 0; i < 2; ++i) {
        threads.emplace_back([&, i] {
          ready.fetch_add(1);
          while (ready.load() < 2) std::this_thread::yield();
          results[i] = catalog->CommitTable(AppendCommit(*base, 100 * (round + 1) + i));
        });
      }
      for (auto& thread : threads) thread.join();
      int wins = 0;
      for (auto& r : results) {
        if (r.ok()) {
          ++wins;
        } else {
          EXPECT_EQ(r.status().code(), StatusCode::kConflict) << r.status().ToString();
        }
      }
      EXPECT_EQ(wins, 1) << "round " << round << " group_commit " << group_commit;
    }
    // One metadata file per successful commit plus the first: losers' files were deleted.
    auto state = catalog->LoadTable(t);
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(MetadataFiles(state->metadata->location).size(), 11u);
    EXPECT_EQ(state->metadata->snapshots.size(), 10u);
  }
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ExpectDenseLog(*catalog, 22);
}

TEST_P(SqlCatalogTest, TransactionIsAllOrNothing) {
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
  TableIdent t1 = Ident({"db"}, "t1");
  TableIdent t2 = Ident({"db"}, "t2");
  auto s1 = catalog->CreateTable(t1, TestTable());
  auto s2 = catalog->CreateTable(t2, TestTable());
  ASSERT_TRUE(s1.ok() && s2.ok());

  TableCommit bad = AppendCommit(s2->table, 20);
  bad.requirements = {TableRequirement::AssertRefSnapshotId("main", 999)};
  auto failed = catalog->CommitTransaction({AppendCommit(s1->table, 10), bad});
  EXPECT_EQ(failed.status().code(), StatusCode::kConflict);
  EXPECT_EQ(catalog->LoadTable(t1).value().metadata_location, s1->table.metadata_location);
  EXPECT_EQ(catalog->LoadTable(t2).value().metadata_location, s2->table.metadata_location);
  EXPECT_EQ(MetadataFiles(s1->table.metadata->location).size(), 1u);

  // Another writer moves t2's main branch: a transaction still asserting the old main fails as
  // a whole, t1 included.
  ASSERT_TRUE(catalog->CommitTable(AppendCommit(s2->table, 30)).ok());
  EXPECT_EQ(catalog->CommitTransaction({AppendCommit(s1->table, 10), AppendCommit(s2->table, 20)})
                .status()
                .code(),
            StatusCode::kConflict);
  EXPECT_EQ(catalog->LoadTable(t1).value().metadata_location, s1->table.metadata_location);

  auto fresh2 = catalog->LoadTable(t2);
  ASSERT_TRUE(fresh2.ok());
  auto ok = catalog->CommitTransaction({AppendCommit(s1->table, 10), AppendCommit(*fresh2, 20)});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].commit_seq + 1, (*ok)[1].commit_seq);
  EXPECT_EQ(catalog->LoadTable(t1).value().metadata->current_snapshot_id,
            std::optional<int64_t>(10));
  EXPECT_EQ(catalog->LoadTable(t2).value().metadata->current_snapshot_id,
            std::optional<int64_t>(20));
  EXPECT_EQ(catalog->LoadTable(t2).value().metadata->snapshots.size(), 2u);
  auto log = catalog->CommitsSince((*ok)[0].commit_seq - 1, 10).value();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].txn_id, log[1].txn_id);
  EXPECT_EQ(log[0].table, t1);
  EXPECT_EQ(log[1].table, t2);
  EXPECT_EQ(catalog->CommitTransaction({PropertyCommit(t1, "a", "b"), PropertyCommit(t1, "c", "d")})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  ExpectDenseLog(*catalog, 5);
}

// 8 threads commit concurrently: half set properties on one shared table (server-side rebase),
// half append snapshots to their own tables (client retry on conflict). The log must be dense,
// and every acknowledged change present.
TEST_P(SqlCatalogTest, DenseLogUnderConcurrentCommits) {
  constexpr int kThreads = 8;
  constexpr int kCommitsPerThread = 15;
  int64_t expected = 0;
  for (bool group_commit : {true, false}) {
    SCOPED_TRACE(group_commit ? "group commit" : "no group commit");
    auto catalog = Open(group_commit);
    ASSERT_NE(catalog, nullptr);
    std::string suffix = group_commit ? "_g" : "_s";
    if (group_commit) {
      ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
    }
    TableIdent shared = Ident({"db"}, "shared" + suffix);
    ASSERT_TRUE(catalog->CreateTable(shared, TestTable()).ok());
    ++expected;
    for (int i = 1; i < kThreads; i += 2) {
      ASSERT_TRUE(
          catalog->CreateTable(Ident({"db"}, "own" + std::to_string(i) + suffix), TestTable())
              .ok());
      ++expected;
    }
    std::vector<Status> errors(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        for (int j = 0; j < kCommitsPerThread && errors[i].ok(); ++j) {
          if (i % 2 == 0) {
            errors[i] = CommitWithRetry(
                *catalog,
                PropertyCommit(shared, "t" + std::to_string(i) + "-" + std::to_string(j), "v"));
          } else {
            errors[i] = AppendWithRetry(*catalog, Ident({"db"}, "own" + std::to_string(i) + suffix),
                                        1000 * (i + 1) + j);
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int i = 0; i < kThreads; ++i) ASSERT_TRUE(errors[i].ok()) << errors[i].ToString();
    expected += kThreads * kCommitsPerThread;
    ExpectDenseLog(*catalog, expected);
    auto state = catalog->LoadTable(shared);
    ASSERT_TRUE(state.ok());
    for (int i = 0; i < kThreads; i += 2) {
      for (int j = 0; j < kCommitsPerThread; ++j) {
        EXPECT_EQ(state->metadata->Property("t" + std::to_string(i) + "-" + std::to_string(j)),
                  "v");
      }
    }
    for (int i = 1; i < kThreads; i += 2) {
      auto own = catalog->LoadTable(Ident({"db"}, "own" + std::to_string(i) + suffix));
      ASSERT_TRUE(own.ok());
      EXPECT_EQ(own->metadata->snapshots.size(), static_cast<size_t>(kCommitsPerThread));
    }
    // Log order is commit order: per table, each entry's previous location is the one before.
    auto log = catalog->CommitsSince(0, 1000000).value();
    std::map<TableIdent, std::string> last_location;
    for (const auto& entry : log) {
      if (entry.operation == "create") {
        last_location[entry.table] = entry.metadata_location;
        continue;
      }
      EXPECT_EQ(entry.previous_metadata_location, last_location[entry.table])
          << "seq " << entry.commit_seq;
      last_location[entry.table] = entry.metadata_location;
    }
  }
}

// Child processes are this test binary re-executed (fork + exec, so each child seeds its own
// UUID generator and starts with no inherited threads or connections), running
// ChildProcess.CommitsWhenSpawned with its job in the environment.
constexpr const char* kChildUri = "SKADE_CATALOG_CHILD_URI";

// Starts a child that commits `count` property updates `<key_prefix><j>`=v to `table`, writing
// "<j>\n" to `ack_fd` (-1: none) after each acknowledged commit. Exits 0 when all succeeded.
pid_t SpawnCommitter(const SqlCatalogOptions& options, const TableIdent& table,
                     const std::string& key_prefix, int count, int ack_fd) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setenv(kChildUri, options.uri.c_str(), 1);
  ::setenv("SKADE_CATALOG_CHILD_WAREHOUSE", options.warehouse.c_str(), 1);
  ::setenv("SKADE_CATALOG_CHILD_GROUP", options.group_commit ? "1" : "0", 1);
  ::setenv("SKADE_CATALOG_CHILD_TABLE", table.ToString().c_str(), 1);
  ::setenv("SKADE_CATALOG_CHILD_PREFIX", key_prefix.c_str(), 1);
  ::setenv("SKADE_CATALOG_CHILD_COUNT", std::to_string(count).c_str(), 1);
  ::setenv("SKADE_CATALOG_CHILD_ACK_FD", std::to_string(ack_fd).c_str(), 1);
  const char* args[] = {"/proc/self/exe", "--gtest_filter=ChildProcess.CommitsWhenSpawned",
                        nullptr};
  ::execv("/proc/self/exe", const_cast<char* const*>(args));
  ::_exit(20);
}

// Runs only when spawned by SpawnCommitter; a no-op (pass) otherwise.
TEST(ChildProcess, CommitsWhenSpawned) {
  const char* uri = std::getenv(kChildUri);
  if (uri == nullptr) return;
  SqlCatalogOptions options;
  options.uri = uri;
  options.warehouse = std::getenv("SKADE_CATALOG_CHILD_WAREHOUSE");
  options.group_commit = std::string(std::getenv("SKADE_CATALOG_CHILD_GROUP")) == "1";
  auto table = TableIdent::Parse(std::getenv("SKADE_CATALOG_CHILD_TABLE"));
  std::string prefix = std::getenv("SKADE_CATALOG_CHILD_PREFIX");
  int count = std::atoi(std::getenv("SKADE_CATALOG_CHILD_COUNT"));
  int ack_fd = std::atoi(std::getenv("SKADE_CATALOG_CHILD_ACK_FD"));
  auto io = io::MakeLocalFileIO();
  auto catalog = OpenSqlCatalog(options, *io);
  if (!table.ok() || !catalog.ok()) ::_exit(10);
  for (int j = 0; j < count; ++j) {
    Status status;
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto result =
          (*catalog)->CommitTable(PropertyCommit(*table, prefix + std::to_string(j), "v"));
      status = result.status();
      if (status.code() != StatusCode::kConflict) break;
    }
    if (!status.ok()) {
      std::fprintf(stderr, "child commit failed: %s\n", status.ToString().c_str());
      ::_exit(11);
    }
    if (ack_fd >= 0) {
      std::string line = std::to_string(j) + "\n";
      if (::write(ack_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        ::_exit(12);
      }
    }
  }
  ::_exit(0);
}

TEST_P(SqlCatalogTest, MultipleProcessesKeepLogDenseAndOrdered) {
  constexpr int kProcesses = 4;
  constexpr int kCommits = 20;
  TableIdent shared = Ident({"db"}, "shared");
  {
    auto catalog = Open();
    ASSERT_NE(catalog, nullptr);
    ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
    ASSERT_TRUE(catalog->CreateTable(shared, TestTable()).ok());
    for (int p = 0; p < kProcesses; ++p) {
      ASSERT_TRUE(catalog->CreateTable(Ident({"db"}, "p" + std::to_string(p)), TestTable()).ok());
    }
  }
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    // Even processes share one table, odd ones have their own; group commit on/off alternates.
    pid_t pid = SpawnCommitter(Options(p % 2 == 0),
                               p % 2 == 0 ? shared : Ident({"db"}, "p" + std::to_string(p)),
                               "p" + std::to_string(p) + "-", kCommits, -1);
    ASSERT_GE(pid, 0);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = WaitChild(pid, std::chrono::seconds(120));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto catalog = Open();
  ASSERT_NE(catalog, nullptr);
  ExpectDenseLog(*catalog, 1 + kProcesses + kProcesses * kCommits);
  for (int p = 0; p < kProcesses; ++p) {
    TableIdent table = p % 2 == 0 ? shared : Ident({"db"}, "p" + std::to_string(p));
    auto state = catalog->LoadTable(table);
    ASSERT_TRUE(state.ok());
    for (int j = 0; j < kCommits; ++j) {
      EXPECT_EQ(state->metadata->Property("p" + std::to_string(p) + "-" + std::to_string(j)), "v");
    }
  }
  auto log = catalog->CommitsSince(0, 100000).value();
  std::map<TableIdent, std::string> last_location;
  for (const auto& entry : log) {
    if (entry.operation != "create") {
      EXPECT_EQ(entry.previous_metadata_location, last_location[entry.table]);
    }
    last_location[entry.table] = entry.metadata_location;
  }
}

TEST_P(SqlCatalogTest, KilledCommitterLosesNoAcknowledgedCommit) {
  constexpr int kRounds = 20;
  TableIdent table = Ident({"db"}, "t");
  {
    auto catalog = Open();
    ASSERT_NE(catalog, nullptr);
    ASSERT_TRUE(catalog->CreateNamespace(Ns({"db"}), {}).ok());
    ASSERT_TRUE(catalog->CreateTable(table, TestTable()).ok());
  }
  std::mt19937 random(static_cast<unsigned>(::getpid()));
  std::set<std::string> acknowledged;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::string prefix = "r" + std::to_string(round) + "-";
    pid_t pid = SpawnCommitter(Options(round % 2 == 0), table, prefix, 100000, fds[1]);
    ASSERT_GE(pid, 0);
    ::close(fds[1]);
    // Wait for the child's first acknowledgement (a loaded machine starts it slowly), then kill
    // it at a random point of its later commits.
    std::string acks;
    char buffer[4096];
    ssize_t n = 0;
    struct pollfd ready = {fds[0], POLLIN, 0};
    while (acks.find('\n') == std::string::npos && ::poll(&ready, 1, 30000) > 0 &&
           (n = ::read(fds[0], buffer, sizeof(buffer))) > 0) {
      acks.append(buffer, static_cast<size_t>(n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 120));
    ::kill(pid, SIGKILL);
    int status = WaitChild(pid, std::chrono::seconds(30));
    ASSERT_TRUE(WIFSIGNALED(status)) << "child status " << status;
    while ((n = ::read(fds[0], buffer, sizeof(buffer))) > 0)
      acks.append(buffer, static_cast<size_t>(n));
    ::close(fds[0]);
    size_t start = 0;
    while (true) {
      size_t end = acks.find('\n', start);
      if (end == std::string::npos) break;  // a torn last line is not an acknowledgement
      acknowledged.insert(prefix + acks.substr(start, end - start));
      start = end + 1;
    }
    // The catalog opens, the table loads, every acknowledged commit is there, the log is dense.
    auto catalog = Open();
    ASSERT_NE(catalog, nullptr);
    auto state = catalog->LoadTable(table);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    for (const std::string& key : acknowledged) {
      ASSERT_EQ(state->metadata->Property(key), "v") << "lost acknowledged commit " << key;
    }
    auto latest = catalog->LatestCommitSeq();
    ASSERT_TRUE(latest.ok());
    ExpectDenseLog(*catalog, *latest);
    EXPECT_GE(*latest, static_cast<int64_t>(1 + acknowledged.size()));
    // Every logged metadata location of the table loads.
    auto log = catalog->CommitsSince(0, 1000000).value();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().metadata_location, state->metadata_location);
  }
  EXPECT_GT(acknowledged.size(), 0u);
}

// The tables carry the Iceberg JDBC catalog's exact names and columns.
TEST_P(SqlCatalogTest, UsesJdbcCatalogSchema) {
  {
    auto catalog = Open();
    ASSERT_NE(catalog, nullptr);
  }
  std::map<std::string, std::vector<std::string>> columns;
  if (GetParam() == Backend::kSqlite) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.Path("catalog.db").c_str(), &db), SQLITE_OK);
    for (std::string table :
         {"iceberg_tables", "iceberg_namespace_properties", "skade_commit_log", "skade_meta"}) {
      sqlite3_stmt* stmt = nullptr;
      std::string sql =
          "SELECT name, type, pk FROM pragma_table_info('" + table + "') ORDER BY cid";
      ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        std::string name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        std::string type = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
        int pk = sqlite3_column_int(stmt, 2);
        columns[table].push_back(name + " " + type + (pk ? " pk" + std::to_string(pk) : ""));
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    EXPECT_EQ(columns["iceberg_tables"],
              (std::vector<std::string>{
                  "catalog_name VARCHAR(255) pk1", "table_namespace VARCHAR(255) pk2",
                  "table_name VARCHAR(255) pk3", "metadata_location VARCHAR(1000)",
                  "previous_metadata_location VARCHAR(1000)", "iceberg_type VARCHAR(5)"}));
    EXPECT_EQ(columns["iceberg_namespace_properties"],
              (std::vector<std::string>{
                  "catalog_name VARCHAR(255) pk1", "namespace VARCHAR(255) pk2",
                  "property_key VARCHAR(255) pk3", "property_value VARCHAR(1000)"}));
  } else {
    PGconn* conn = PQconnectdb(uri_.c_str());
    ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
    for (std::string table :
         {"iceberg_tables", "iceberg_namespace_properties", "skade_commit_log", "skade_meta"}) {
      const char* values[1] = {table.c_str()};
      PGresult* result =
          PQexecParams(conn,
                       "SELECT column_name, data_type, COALESCE(character_maximum_length, 0) "
                       "FROM information_schema.columns WHERE table_schema = current_schema() AND "
                       "table_name = $1 ORDER BY ordinal_position",
                       1, nullptr, values, nullptr, nullptr, 0);
      ASSERT_EQ(PQresultStatus(result), PGRES_TUPLES_OK) << PQerrorMessage(conn);
      for (int r = 0; r < PQntuples(result); ++r) {
        std::string column = std::string(PQgetvalue(result, r, 0)) + " " + PQgetvalue(result, r, 1);
        if (std::string(PQgetvalue(result, r, 2)) != "0") {
          column += "(" + std::string(PQgetvalue(result, r, 2)) + ")";
        }
        columns[table].push_back(column);
      }
      PQclear(result);
    }
    PQfinish(conn);
    EXPECT_EQ(columns["iceberg_tables"],
              (std::vector<std::string>{
                  "catalog_name character varying(255)", "table_namespace character varying(255)",
                  "table_name character varying(255)", "metadata_location character varying(1000)",
                  "previous_metadata_location character varying(1000)",
                  "iceberg_type character varying(5)"}));
    EXPECT_EQ(
        columns["iceberg_namespace_properties"],
        (std::vector<std::string>{
            "catalog_name character varying(255)", "namespace character varying(255)",
            "property_key character varying(255)", "property_value character varying(1000)"}));
  }
  ASSERT_EQ(columns["skade_commit_log"].size(), 12u);
  std::vector<std::string> names;
  for (const std::string& c : columns["skade_commit_log"])
    names.push_back(c.substr(0, c.find(' ')));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "commit_seq", "catalog_name", "table_namespace", "table_name", "snapshot_id",
                       "metadata_location", "previous_metadata_location", "operation",
                       "added_records", "deleted_records", "committed_at_us", "txn_id"}));
  ASSERT_EQ(columns["skade_meta"].size(), 2u);
}

// Commits NOTIFY skade_commits with the batch's last commit_seq, delivered on COMMIT.
TEST(SqlCatalogPostgresTest, NotifiesCommitSeq) {
  Result<testing::PgTestCluster*> cluster = testing::PgTestCluster::Shared();
  ASSERT_TRUE(cluster.ok()) << "PostgreSQL test cluster did not start: "
                            << cluster.status().ToString();
  Result<std::string> uri = (*cluster)->CreateDatabase();
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  testing::TempDir dir;
  auto io = io::MakeLocalFileIO();
  SqlCatalogOptions options;
  options.uri = *uri;
  options.warehouse = dir.Path("wh");
  auto catalog = OpenSqlCatalog(options, *io);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();

  PGconn* listener = PQconnectdb(uri->c_str());
  ASSERT_EQ(PQstatus(listener), CONNECTION_OK) << PQerrorMessage(listener);
  PQclear(PQexec(listener, "LISTEN skade_commits"));
  ASSERT_TRUE((*catalog)->CreateNamespace(Ns({"db"}), {}).ok());
  ASSERT_TRUE((*catalog)->CreateTable(Ident({"db"}, "t"), TestTable()).ok());
  auto committed = (*catalog)->CommitTable(PropertyCommit(Ident({"db"}, "t"), "k", "v"));
  ASSERT_TRUE(committed.ok());

  std::vector<std::string> payloads;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (payloads.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(PQsocket(listener), &fds);
    timeval timeout{0, 100000};
    ::select(PQsocket(listener) + 1, &fds, nullptr, nullptr, &timeout);
    PQconsumeInput(listener);
    while (PGnotify* notify = PQnotifies(listener)) {
      payloads.push_back(notify->extra);
      PQfreemem(notify);
    }
  }
  PQfinish(listener);
  EXPECT_EQ(payloads, (std::vector<std::string>{"1", "2"}));
}

// A database written by an older JDBC catalog (no iceberg_type column; rows of other catalog
// names) opens: the column is added, NULL types count as tables, other catalogs are invisible.
TEST(SqlCatalogSqliteTest, OpensOlderJdbcCatalogDatabase) {
  testing::TempDir dir;
  auto io = io::MakeLocalFileIO();
  // First create a real table to get a valid metadata file.
  std::string metadata_location;
  {
    SqlCatalogOptions options;
    options.uri = dir.Path("first.db");
    options.warehouse = dir.Path("wh");
    auto catalog = OpenSqlCatalog(options, *io);
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    ASSERT_TRUE((*catalog)->CreateNamespace(Ns({"db"}), {}).ok());
    auto created = (*catalog)->CreateTable(Ident({"db"}, "t"), TestTable());
    ASSERT_TRUE(created.ok());
    metadata_location = created->table.metadata_location;
  }
  std::string path = dir.Path("old.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string sql =
      "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL, table_namespace "
      "VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), "
      "previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, "
      "table_name));"
      "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL, namespace "
      "VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), PRIMARY "
      "KEY (catalog_name, namespace, property_key));"
      "INSERT INTO iceberg_tables VALUES ('skade', 'legacy', 'old', '" +
      metadata_location +
      "', NULL);"
      "INSERT INTO iceberg_tables VALUES ('other', 'elsewhere', 'x', '" +
      metadata_location +
      "', NULL);"
      "INSERT INTO iceberg_namespace_properties VALUES ('skade', 'bad..name', 'exists', 'true');";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  SqlCatalogOptions options;
  options.uri = "sqlite://" + path;
  options.warehouse = dir.Path("wh");
  auto catalog = OpenSqlCatalog(options, *io);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  EXPECT_EQ((*catalog)->ListNamespaces(Ns({})).value(), (std::vector<Namespace>{Ns({"legacy"})}));
  EXPECT_EQ((*catalog)->ListTables(Ns({"legacy"})).value(),
            (std::vector<TableIdent>{Ident({"legacy"}, "old")}));
  EXPECT_TRUE((*catalog)->LoadTable(Ident({"legacy"}, "old")).ok());
  EXPECT_EQ((*catalog)->LoadTable(Ident({"elsewhere"}, "x")).status().code(),
            StatusCode::kNotFound);
  auto committed = (*catalog)->CommitTable(PropertyCommit(Ident({"legacy"}, "old"), "k", "v"));
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(committed->commit_seq, 1);
}

}  // namespace
}  // namespace skade::catalog
