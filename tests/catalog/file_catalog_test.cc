// A folder of tables as a catalog: namespaces from the folders between the root and each table,
// the current metadata by version hint or highest version, odd layouts skipped, every change
// refused and no commit log.
#include "skade/catalog/file_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "skade/catalog/sql_catalog.h"
#include "tests/testing/schemas.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/poll_until.h"

namespace skade::catalog {
namespace {

class FileCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_ = io::MakeLocalFileIO();
    SqlCatalogOptions o;
    o.uri = "sqlite://" + tmp_.Path("catalog.db");
    o.warehouse = tmp_.Path("lake");
    auto c = OpenSqlCatalog(o, *io_);
    ASSERT_TRUE(c.ok());
    writer_ = std::move(*c);
    CreateTableRequest r;
    r.schema = testing::SchemaOf({{1, "id", iceberg::TypeId::kLong, true}});
    for (const char* name : {"sales.eu.orders", "sales.items", "ops.events"}) {
      ASSERT_TRUE(writer_->CreateNamespace(TableIdent::Parse(name)->ns, {}).ok() ||
                  writer_->NamespaceExists(TableIdent::Parse(name)->ns).value());
      ASSERT_TRUE(writer_->CreateTable(*TableIdent::Parse(name), r).ok()) << name;
    }
  }

  std::unique_ptr<Catalog> Open(const std::string& root) {
    auto c = OpenFileCatalog(FileCatalogOptions{root, "files", std::chrono::milliseconds(0)}, *io_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  testing::TempDir tmp_;
  std::unique_ptr<io::FileIO> io_;
  std::unique_ptr<Catalog> writer_;
};

TEST_F(FileCatalogTest, NamespacesAndTablesFollowTheFolders) {
  auto files = Open("file://" + tmp_.Path("lake"));
  ASSERT_NE(files, nullptr);
  EXPECT_EQ(files->ListNamespaces({}).value(), (std::vector<Namespace>{Namespace{{"ops"}}, Namespace{{"sales"}}}));
  EXPECT_EQ(files->ListNamespaces(Namespace{{"sales"}}).value(), (std::vector<Namespace>{Namespace{{"sales", "eu"}}}));
  EXPECT_EQ(files->ListTables(Namespace{{"sales"}}).value(), (std::vector<TableIdent>{*TableIdent::Parse("sales.items")}));
  EXPECT_TRUE(files->NamespaceExists(Namespace{{"sales", "eu"}}).value());
  EXPECT_FALSE(files->NamespaceExists(Namespace{{"nope"}}).value());
  EXPECT_EQ(files->ListTables(Namespace{{"nope"}}).status().code(), StatusCode::kNotFound);

  // The current metadata is the one the SQL catalog points at, after a commit too (once skade's
  // hint writer, which runs beside commits, has moved version-hint.text).
  const TableIdent orders = *TableIdent::Parse("sales.eu.orders");
  ASSERT_TRUE(writer_->CommitTable(TableCommit{orders, {}, {iceberg::TableUpdate::SetProperties({{"k", "v"}})}, {}}).ok());
  const std::string want = writer_->LoadTable(orders).value().metadata_location;
  Result<TableState> loaded = files->LoadTable(orders);
  skade::testing::PollUntil([&] {
    loaded = files->LoadTable(orders);
    return !loaded.ok() || loaded->metadata_location == want;
  }, std::chrono::seconds(20), std::chrono::milliseconds(10));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->metadata_location, want);
  EXPECT_EQ(loaded->metadata->properties.count("k"), 1u);
  EXPECT_EQ(files->LoadTable(*TableIdent::Parse("sales.nope")).status().code(), StatusCode::kNotFound);

  // Read-only, and no commit log of its own.
  EXPECT_EQ(files->CreateNamespace(Namespace{{"x"}}, {}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(files->CommitTable(TableCommit{orders, {}, {}, {}}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(files->DropTable(orders, DropMode::kPurge).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(files->LatestCommitSeq().status().code(), StatusCode::kNotImplemented);
  EXPECT_TRUE(std::filesystem::exists(tmp_.Path("lake/sales/eu/orders")));
}

TEST_F(FileCatalogTest, OddLayoutsAreSkippedAndAMissingRootIsNotFound) {
  // A table directly under the root, one inside another table's folder, and a level with '.'.
  namespace fs = std::filesystem;
  for (const char* dir : {"lake/loose/metadata", "lake/sales/items/inner/metadata", "lake/a.b/t/metadata"}) {
    fs::create_directories(tmp_.Path(dir));
    testing::WriteFileOrDie(tmp_.Path(std::string(dir) + "/version-hint.text"), "1");
  }
  auto files = Open(tmp_.Path("lake"));
  ASSERT_NE(files, nullptr);
  EXPECT_EQ(files->ListNamespaces({}).value(), (std::vector<Namespace>{Namespace{{"ops"}}, Namespace{{"sales"}}}));
  EXPECT_EQ(files->ListTables(Namespace{{"sales"}}).value(), (std::vector<TableIdent>{*TableIdent::Parse("sales.items")}));
  EXPECT_EQ(OpenFileCatalog(FileCatalogOptions{tmp_.Path("nothing-here")}, *io_).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace skade::catalog
